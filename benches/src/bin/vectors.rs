//! Bench `vectors`: memdb's exact flat index (f32, f16, i8, i8 + f32 refine) and its HNSW index
//! against faiss-cpu `IndexFlatIP`, hnswlib and USearch, in the same run, on the same vectors.
//!
//! Data (`--data`):
//! - `lowrank` (default): the set of `shared/reference/vectors/README.md`: x = normalise(z·B +
//!   0.25·g/√384) with z ~ N(0, I₃₂), B a fixed 32 × 384 Gaussian matrix divided by √32 and
//!   g ~ N(0, I₃₈₄); queries drawn the same way, from a fixed seed.
//! - `real`: all-MiniLM-L6-v2 embeddings (memdb_encode) of every LoCoMo turn and of the
//!   sentences of the Enron mails in `shared/data/mail` (bodies split crudely at `.`, `!`, `?`),
//!   deduplicated, shuffled with a fixed seed; the first `--queries` are the held-out queries,
//!   the rest (up to `--n`) the database. Encoded once and cached as .fvecs under the target
//!   folder.
//!
//! The vectors are written as .fvecs into a temporary folder, which the peer
//! (`benches/peers/vectors_peer.py`) reads.
//!
//! Per engine: QPS with one query per call on one thread; QPS of all queries (memdb: one batched
//! call on all cores; faiss: its batched call on all cores; hnswlib: `knn_query` on all cores;
//! USearch: `search` with every thread); at each HNSW peer's recall, memdb's fastest HNSW setting
//! that reaches it;
//! recall@10 against exact f32 (memdb's f32 flat single-query results); bytes held; build time;
//! peak RSS growth during build and search (VmHWM after resetting it through
//! `/proc/self/clear_refs`, minus the RSS at the reset). hnswlib is built only up to
//! `--hnswlib-max` rows (it does not finish 1M in 10 minutes on 2 cores); above that its insert
//! rate is measured on the first 100,000 rows and its build time extrapolated, and labelled so.
//! Last, the limits the scans are reported against, measured on this machine: its read
//! bandwidth (one thread and all) for single-query scans, and the rate the gemm crate's sgemm
//! reaches on in-cache operands for batched scans; and the CPU features the run had.
//! The flat f32 scan is timed a second time right after the peer, so the two memdb figures
//! bracket faiss's in time (this machine's memory bandwidth drifts between minutes).
//! `flat f32 exact via i8 bounds` is [`RefinedFlatIndex::search_exact`]: it must return the f32
//! scan's ids exactly (asserted), from the i8 rows and certified per-row bounds.
//!
//! `--crossover` instead measures where flat and HNSW search cross: unfiltered QPS at several
//! sizes, and filtered QPS at several filter selectivities (the measurements behind
//! `FLAT_BELOW_ROWS` and `FLAT_BELOW_MATCH_FRACTION`).
//!
//! Run: `cargo run --release -p memdb-benches --bin vectors [-- --n 1000000] [--queries 1000]
//! [--k 10] [--seed 42] [--data lowrank|real] [--ef 64,96,128,192,256] [--refine 2,4]
//! [--traversals] [--crossover] [--skip-peer] [--hnswlib-max 200000]`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use memdb_benches::{
    PEER_PYTHON_ENV, cpu_features, locomo_texts, peer_python, proc_status_kib, read_bandwidth_gbs,
    reset_peak_rss, run_peer_json, sgemm_gflops, shared_dir,
};
use memdb_vectors::{
    FLAT_BELOW_MATCH_FRACTION, FLAT_BELOW_ROWS, Filter, FlatIndex, FlatIndexWriter, Hit, HnswIndex,
    HnswParams, Precision, RefinedFlatIndex, Route, Traversal, VectorIndex,
};
use serde_json::Value;

const DIM: usize = 384;
const RANK: usize = 32;
const NOISE: f64 = 0.25;
/// Most texts the `real` data set encodes (LoCoMo turns and mail sentences, shuffled).
const REAL_MAX_TEXTS: usize = 40_000;

#[derive(Clone, Copy, PartialEq)]
enum Data {
    Lowrank,
    Real,
}

struct Args {
    n: usize,
    queries: usize,
    k: usize,
    seed: u64,
    data: Data,
    efs: Vec<usize>,
    refine: Vec<usize>,
    traversals: bool,
    crossover: bool,
    skip_peer: bool,
    hnswlib_max: usize,
}

fn list(v: &str) -> Vec<usize> {
    v.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse().unwrap())
        .collect()
}

fn args() -> Args {
    let mut a = Args {
        n: 100_000,
        queries: 1_000,
        k: 10,
        seed: 42,
        data: Data::Lowrank,
        efs: vec![64, 96, 128, 192, 256],
        refine: vec![2, 4],
        traversals: false,
        crossover: false,
        skip_peer: false,
        hnswlib_max: 200_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--n" => a.n = value().parse().unwrap(),
            "--queries" => a.queries = value().parse().unwrap(),
            "--k" => a.k = value().parse().unwrap(),
            "--seed" => a.seed = value().parse().unwrap(),
            "--data" => {
                a.data = match value().as_str() {
                    "lowrank" => Data::Lowrank,
                    "real" => Data::Real,
                    other => panic!("--data {other}: expected lowrank or real"),
                }
            }
            "--ef" => a.efs = list(&value()),
            "--refine" => a.refine = list(&value()),
            "--traversals" => a.traversals = true,
            "--crossover" => a.crossover = true,
            "--skip-peer" => a.skip_peer = true,
            "--hnswlib-max" => a.hnswlib_max = value().parse().unwrap(),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// splitmix64 with Box–Muller normals: small, seeded, and the same on every machine.
struct Rng {
    state: u64,
    spare: Option<f64>,
}

impl Rng {
    fn new(seed: u64) -> Self {
        Self {
            state: seed,
            spare: None,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        if let Some(s) = self.spare.take() {
            return s;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let t = std::f64::consts::TAU * v;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }
}

/// `count` lowrank vectors (row-major) from `rng`, using the shared basis `basis` (RANK × DIM).
fn lowrank(rng: &mut Rng, basis: &[f64], count: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(count * DIM);
    let mut x = vec![0.0f64; DIM];
    let noise = NOISE / (DIM as f64).sqrt();
    for _ in 0..count {
        x.iter_mut().for_each(|v| *v = 0.0);
        for r in 0..RANK {
            let z = rng.normal();
            for (v, b) in x.iter_mut().zip(&basis[r * DIM..(r + 1) * DIM]) {
                *v += z * b;
            }
        }
        for v in x.iter_mut() {
            *v += noise * rng.normal();
        }
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        out.extend(x.iter().map(|v| (v / norm) as f32));
    }
    out
}

fn write_fvecs(path: &Path, data: &[f32]) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for v in data.chunks_exact(DIM) {
        w.write_all(&(DIM as i32).to_le_bytes()).unwrap();
        for x in v {
            w.write_all(&x.to_le_bytes()).unwrap();
        }
    }
    w.flush().unwrap();
}

fn read_fvecs(path: &Path) -> Option<Vec<f32>> {
    let bytes = std::fs::read(path).ok()?;
    let mut out = Vec::with_capacity(bytes.len() / 4);
    for v in bytes.chunks_exact(4 + DIM * 4) {
        if i32::from_le_bytes(v[..4].try_into().unwrap()) != DIM as i32 {
            return None;
        }
        out.extend(
            v[4..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
        );
    }
    Some(out)
}

/// The sentences of the Enron mail bodies: headers dropped (everything before the first blank
/// line), quoted and forwarded-header lines dropped, the rest split at `.`, `!` or `?` followed
/// by a space; sentences of 4 to 60 words kept.
fn mail_sentences() -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![shared_dir().join("data/mail/enron")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
            if entry.is_dir() {
                stack.push(entry);
            } else if entry.extension().is_some_and(|e| e == "eml") {
                files.push(entry);
            }
        }
    }
    files.sort();
    let skip = [
        "from:", "to:", "sent:", "subject:", "cc:", "bcc:", "date:", "-----", "_____", "<<",
    ];
    let mut out = Vec::new();
    for file in files {
        let raw = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        let body = raw.split_once("\n\n").map_or("", |(_, b)| b);
        let mut text = String::new();
        for line in body.lines() {
            let l = line.trim();
            let lower = l.to_ascii_lowercase();
            if l.starts_with('>') || skip.iter().any(|s| lower.starts_with(s)) {
                continue;
            }
            text.push_str(l);
            text.push(' ');
        }
        let mut sentence = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            sentence.push(c);
            if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
                let s = sentence.split_whitespace().collect::<Vec<_>>();
                if (4..=60).contains(&s.len()) {
                    out.push(s.join(" "));
                }
                sentence.clear();
            }
        }
    }
    out
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Real embeddings: (database, queries), encoded once and cached.
fn real_vectors(a: &Args) -> (Vec<f32>, Vec<f32>, String) {
    let cache = target_dir().join(format!("vectors-real-minilm-{REAL_MAX_TEXTS}.fvecs"));
    let all = match read_fvecs(&cache) {
        Some(v) => {
            eprintln!("real vectors: cached {}", cache.display());
            v
        }
        None => {
            let dir = shared_dir().join("data/locomo");
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("reading {}: {e} (set MEMDB_SHARED_DIR)", dir.display()))
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            files.sort();
            let mut texts: Vec<String> = files
                .iter()
                .flat_map(|f| locomo_texts(f).unwrap())
                .collect();
            let turns = texts.len();
            texts.extend(mail_sentences());
            let mut seen = std::collections::HashSet::new();
            texts.retain(|t| seen.insert(t.clone()));
            let available = texts.len();
            // Shuffle (Fisher–Yates, fixed seed) so held-out queries mix turns and mail.
            let mut rng = Rng::new(7);
            for i in (1..texts.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                texts.swap(i, j);
            }
            // Encoding runs at a few hundred texts/s on 2 cores: cap the set (the cache file
            // name carries the cap, so a different cap encodes afresh).
            texts.truncate(REAL_MAX_TEXTS);
            eprintln!(
                "real vectors: {available} distinct texts, encoding {}",
                texts.len()
            );
            eprintln!(
                "real vectors: encoding {} texts ({turns} LoCoMo turns, the rest mail sentences)",
                texts.len()
            );
            use memdb_encode::{Encoder, EncoderOptions, MiniLm, model};
            let dir = model::locate().unwrap_or_else(|e| panic!("{e}"));
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let encoder = MiniLm::load(
                &dir,
                EncoderOptions {
                    threads: Some(threads),
                    ..EncoderOptions::default()
                },
            )
            .unwrap();
            let start = Instant::now();
            let mut out = Vec::with_capacity(texts.len() * DIM);
            for (i, chunk) in texts.chunks(512).enumerate() {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                for v in encoder.encode(&refs).unwrap() {
                    out.extend(v);
                }
                eprintln!(
                    "  {} / {} texts, {:.0} s",
                    (i + 1) * 512,
                    texts.len(),
                    start.elapsed().as_secs_f64()
                );
            }
            std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
            write_fvecs(&cache, &out);
            out
        }
    };
    let total = all.len() / DIM;
    assert!(total > a.queries, "only {total} real vectors");
    let queries = all[..a.queries * DIM].to_vec();
    let n = a.n.min(total - a.queries);
    let data = all[a.queries * DIM..(a.queries + n) * DIM].to_vec();
    let label =
        format!("real (all-MiniLM-L6-v2 of LoCoMo turns + Enron mail sentences, {total} vectors)");
    (data, queries, label)
}

fn read_ids(path: &Path, queries: usize, k: usize) -> Vec<Vec<u64>> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len(), queries * k * 8, "{}", path.display());
    bytes
        .chunks_exact(k * 8)
        .map(|q| {
            q.chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                .filter(|&id| id >= 0)
                .map(|id| id as u64)
                .collect()
        })
        .collect()
}

fn recall(truth: &[Vec<u64>], got: &[Vec<u64>], k: usize) -> f64 {
    let hits: usize = truth
        .iter()
        .zip(got)
        .map(|(t, g)| {
            g.iter()
                .take(k)
                .filter(|id| t.iter().take(k).any(|x| x == *id))
                .count()
        })
        .sum();
    hits as f64 / (truth.len() * k) as f64
}

struct Row {
    engine: String,
    qps_single: f64,
    qps_batch: f64,
    recall: f64,
    bytes: usize,
    build_s: f64,
    peak_mib: f64,
}

/// Peak-RSS probe: reset at creation, read as growth over the RSS at the reset.
struct Peak(f64);

impl Peak {
    fn start() -> Self {
        assert!(
            reset_peak_rss(),
            "cannot reset VmHWM via /proc/self/clear_refs"
        );
        Peak(proc_status_kib("VmRSS") as f64 / 1024.0)
    }

    fn growth_mib(&self) -> f64 {
        proc_status_kib("VmHWM") as f64 / 1024.0 - self.0
    }
}

fn build_flat(precision: Precision, data: &[f32]) -> (FlatIndex, f64) {
    let start = Instant::now();
    let mut w = FlatIndexWriter::new(precision, DIM).unwrap();
    w.reserve(data.len() / DIM);
    for (i, v) in data.chunks_exact(DIM).enumerate() {
        w.push(i as u64, 0, 0, v).unwrap();
    }
    let index = w.finish().unwrap();
    (index, start.elapsed().as_secs_f64())
}

fn ids(hits: &[Hit]) -> Vec<u64> {
    hits.iter().map(|h| h.id).collect()
}

/// Each query's hit ids, and queries per second.
type Timed = (Vec<Vec<u64>>, f64);

/// Runs `search` on every query once (after 3 warm-up calls); returns ids and QPS.
fn time_single(queries: &[f32], mut search: impl FnMut(&[f32]) -> Vec<Hit>) -> Timed {
    for q in queries.chunks_exact(DIM).take(3) {
        search(q);
    }
    let start = Instant::now();
    let out: Vec<Vec<u64>> = queries.chunks_exact(DIM).map(|q| ids(&search(q))).collect();
    (
        out,
        (queries.len() / DIM) as f64 / start.elapsed().as_secs_f64(),
    )
}

fn time_batch(queries: &[f32], search: impl FnOnce(&[f32]) -> Vec<Vec<Hit>>) -> Timed {
    let start = Instant::now();
    let out = search(queries);
    let qps = (queries.len() / DIM) as f64 / start.elapsed().as_secs_f64();
    (out.iter().map(|h| ids(h)).collect(), qps)
}

/// [`time_single`] and [`time_batch`] of `index`'s own searches.
fn time_index(
    index: &impl VectorIndex,
    queries: &[f32],
    k: usize,
    filter: &Filter,
) -> (Timed, Timed) {
    (
        time_single(queries, |q| index.search(q, k, filter).unwrap()),
        time_batch(queries, |q| index.search_batch(q, k, filter, 0).unwrap()),
    )
}

fn hnsw_params(traversal: Traversal) -> HnswParams {
    HnswParams {
        traversal,
        ..HnswParams::default()
    }
}

fn main() {
    let a = args();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (data, queries, label) = match a.data {
        Data::Lowrank => {
            eprintln!(
                "generating lowrank data: {} x {DIM}, {} queries, seed {}",
                a.n, a.queries, a.seed
            );
            let mut rng = Rng::new(a.seed);
            let scale = 1.0 / (RANK as f64).sqrt();
            let basis: Vec<f64> = (0..RANK * DIM).map(|_| rng.normal() * scale).collect();
            let data = lowrank(&mut rng, &basis, a.n);
            let queries = lowrank(&mut rng, &basis, a.queries);
            (data, queries, "lowrank".to_owned())
        }
        Data::Real => real_vectors(&a),
    };
    let n = data.len() / DIM;
    let n_queries = queries.len() / DIM;
    if a.crossover {
        crossover(&a, &data, &queries);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (data_path, query_path) = (
        dir.path().join("data.fvecs"),
        dir.path().join("queries.fvecs"),
    );
    write_fvecs(&data_path, &data);
    write_fvecs(&query_path, &queries);

    let filter = Filter::new();
    let mut rows = Vec::new();
    let mut truth: Vec<Vec<u64>> = Vec::new();
    let mut flat_qps = Vec::new();
    for precision in [Precision::F32, Precision::F16, Precision::I8] {
        let peak = Peak::start();
        let (index, build_s) = build_flat(precision, &data);
        let ((single, qps_single), (batch, qps_batch)) = time_index(&index, &queries, a.k, &filter);
        if precision == Precision::F32 {
            truth = single.clone();
        }
        let r = recall(&truth, &single, a.k).min(recall(&truth, &batch, a.k));
        eprintln!("memdb flat {precision}: {qps_single:.1} / {qps_batch:.1} QPS, recall {r:.4}");
        flat_qps.push((format!("flat {precision}"), qps_single, qps_batch));
        rows.push(Row {
            engine: format!("memdb flat {precision}"),
            qps_single,
            qps_batch,
            recall: r,
            bytes: index.memory_bytes(),
            build_s,
            peak_mib: peak.growth_mib(),
        });
    }
    {
        // Exact f32 answers from the i8 scan plus certified bounds (f32 rows read only where a
        // bound reaches the running k-th best): must equal the plain f32 scan's, id for id.
        let peak = Peak::start();
        let start = Instant::now();
        let (exact, _) = build_flat(Precision::F32, &data);
        let index = RefinedFlatIndex::build(exact, Precision::I8, 1).unwrap();
        let build_s = start.elapsed().as_secs_f64();
        let (single, qps_single) =
            time_single(&queries, |q| index.search_exact(q, a.k, &filter).unwrap());
        let (batch, qps_batch) = time_batch(&queries, |q| {
            index.search_exact_batch(q, a.k, &filter, 0).unwrap()
        });
        assert_eq!(
            single, truth,
            "the bounded exact scan differs from the f32 scan"
        );
        assert_eq!(
            batch, truth,
            "the bounded exact batch differs from the f32 scan"
        );
        eprintln!("memdb f32 exact via i8 bounds: {qps_single:.1} / {qps_batch:.1} QPS");
        flat_qps.push((
            "flat f32 exact via i8 bounds".to_owned(),
            qps_single,
            qps_batch,
        ));
        rows.push(Row {
            engine:
                "memdb flat f32 exact via i8 bounds (same ids as f32 scan; bytes incl. i8 copy)"
                    .to_owned(),
            qps_single,
            qps_batch,
            recall: recall(&truth, &single, a.k),
            bytes: index.memory_bytes(),
            build_s,
            peak_mib: peak.growth_mib(),
        });
    }
    for &factor in &a.refine {
        let peak = Peak::start();
        let start = Instant::now();
        let (exact, _) = build_flat(Precision::F32, &data);
        let index = RefinedFlatIndex::build(exact, Precision::I8, factor).unwrap();
        let build_s = start.elapsed().as_secs_f64();
        let ((single, qps_single), (batch, qps_batch)) = time_index(&index, &queries, a.k, &filter);
        let r = recall(&truth, &single, a.k).min(recall(&truth, &batch, a.k));
        eprintln!("memdb i8+refine x{factor}: {qps_single:.1} / {qps_batch:.1} QPS, recall {r:.4}");
        flat_qps.push((
            format!("flat i8 + f32 refine x{factor}"),
            qps_single,
            qps_batch,
        ));
        rows.push(Row {
            engine: format!("memdb flat i8 + f32 refine (k x {factor}; bytes incl. f32 copy)"),
            qps_single,
            qps_batch,
            recall: r,
            bytes: index.memory_bytes(),
            build_s,
            peak_mib: peak.growth_mib(),
        });
    }

    let traversals: &[Traversal] = if a.traversals {
        &[Traversal::I8, Traversal::F16, Traversal::F32]
    } else {
        &[Traversal::I8]
    };
    let mut hnsw_qps: Vec<(String, f64, f64, f64)> = Vec::new();
    let mut hnsw_build_s = f64::NAN;
    // `--ef ''` measures the flat indexes only.
    let traversals = if a.efs.is_empty() {
        &[][..]
    } else {
        traversals
    };
    for &traversal in traversals {
        let peak = Peak::start();
        let start = Instant::now();
        let (flat, _) = build_flat(Precision::F32, &data);
        let index = HnswIndex::build(flat, hnsw_params(traversal)).unwrap();
        let build_s = start.elapsed().as_secs_f64();
        if traversal == Traversal::I8 {
            hnsw_build_s = build_s;
        }
        eprintln!(
            "memdb HNSW ({traversal:?} traversal) built in {build_s:.1} s ({:.0} inserts/s)",
            n as f64 / build_s
        );
        let build_peak = peak.growth_mib();
        for &ef in &a.efs {
            let (single, qps_single) = time_single(&queries, |q| {
                index.search_with(q, a.k, &filter, ef, Route::Auto).unwrap()
            });
            let (batch, qps_batch) = time_batch(&queries, |q| {
                index.search_batch_with(q, a.k, &filter, ef, 0).unwrap()
            });
            let r = recall(&truth, &single, a.k).min(recall(&truth, &batch, a.k));
            eprintln!(
                "memdb HNSW {traversal:?} ef {ef}: {qps_single:.1} / {qps_batch:.1} QPS, recall {r:.4}"
            );
            let name = format!(
                "memdb HNSW M=16 efC=200, {} traversal + f32 rerank, ef={ef}",
                format!("{traversal:?}").to_lowercase()
            );
            hnsw_qps.push((name.clone(), qps_single, qps_batch, r));
            rows.push(Row {
                engine: name,
                qps_single,
                qps_batch,
                recall: r,
                bytes: index.memory_bytes(),
                build_s,
                peak_mib: build_peak.max(peak.growth_mib()),
            });
        }
    }

    let peer = if a.skip_peer {
        Err("--skip-peer given".to_owned())
    } else {
        run_peer(&a, dir.path(), &data_path, &query_path)
    };
    let mut faiss: Option<(f64, f64)> = None;
    let mut graph_peers: Vec<GraphPeer> = Vec::new();
    match &peer {
        Ok(v) => {
            let single = read_ids(&dir.path().join("faiss_single.i64"), n_queries, a.k);
            let batch = read_ids(&dir.path().join("faiss_batch.i64"), n_queries, a.k);
            let (qs, qb) = (
                v["qps_single"].as_f64().unwrap(),
                v["qps_batch"].as_f64().unwrap(),
            );
            faiss = Some((qs, qb));
            rows.push(Row {
                engine: format!(
                    "faiss {} IndexFlatIP (1 thread / {} threads)",
                    v["faiss_version"].as_str().unwrap_or("?"),
                    v["batch_threads"]
                ),
                qps_single: qs,
                qps_batch: qb,
                recall: recall(&truth, &single, a.k).min(recall(&truth, &batch, a.k)),
                bytes: v["bytes"].as_u64().unwrap_or(0) as usize,
                build_s: v["build_s"].as_f64().unwrap_or(f64::NAN),
                peak_mib: v["peak_mib"].as_f64().unwrap_or(f64::NAN),
            });
            for name in ["hnswlib", "usearch"] {
                let run = GraphRun {
                    a: &a,
                    dir: dir.path(),
                    truth: &truth,
                    n,
                    n_queries,
                    threads,
                };
                match v.get(name).filter(|h| !h.is_null()) {
                    Some(h) => graph_peers.push(run.read(name, h, &mut rows)),
                    None => println!("{name} skipped: the peer's Python does not have it\n"),
                }
            }
        }
        Err(why) => println!("peer skipped: {why}\n"),
    }
    // The host's memory bandwidth drifts over minutes (faiss's single-query rate on 1M rows
    // ranged 15.9–18.6 QPS between runs), so the f32 scan is timed again right after faiss: the
    // two memdb figures bracket the peer's in time, and both ratios are printed.
    if faiss.is_some() {
        let (index, _) = build_flat(Precision::F32, &data);
        let (again, qps_single) = time_single(&queries, |q| index.search(q, a.k, &filter).unwrap());
        assert_eq!(
            again, truth,
            "the f32 scan answered differently the second time"
        );
        eprintln!("memdb flat f32 after the peer: {qps_single:.1} QPS");
        flat_qps.push((
            "flat f32, timed again after the peer".to_owned(),
            qps_single,
            f64::NAN,
        ));
        rows.push(Row {
            engine: "memdb flat f32, timed again after the peer (single only)".to_owned(),
            qps_single,
            qps_batch: f64::NAN,
            recall: 1.0,
            bytes: index.memory_bytes(),
            build_s: f64::NAN,
            peak_mib: f64::NAN,
        });
    }
    drop(data);

    println!(
        "{label}, N = {n}, d = {DIM}, {n_queries} queries, k = {}; single: 1 query per call, 1 \
         thread; batch: all queries, {threads} threads; peak MiB: growth of VmHWM over the RSS \
         before the build (includes build temporaries)\n",
        a.k
    );
    println!(
        "| engine | QPS, 1 query/call | QPS, batch of {n_queries} | recall@{} vs exact f32 | bytes in memory | build s | peak MiB |",
        a.k
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in &rows {
        println!(
            "| {} | {:.1} | {:.1} | {:.4} | {} | {:.2} | {:.0} |",
            r.engine, r.qps_single, r.qps_batch, r.recall, r.bytes, r.build_s, r.peak_mib
        );
    }
    for peer in &graph_peers {
        if !peer.note.is_empty() {
            println!("\n{}", peer.note);
        }
    }
    if hnsw_build_s.is_finite() {
        println!(
            "\nmemdb HNSW build: {n} rows in {hnsw_build_s:.1} s = {:.0} inserts/s on {threads} threads",
            n as f64 / hnsw_build_s
        );
    }
    for peer in &graph_peers {
        if peer.inserts_per_s.is_finite() && hnsw_build_s.is_finite() {
            println!(
                "memdb/{} insert rate: {:.2}",
                peer.name,
                n as f64 / hnsw_build_s / peer.inserts_per_s
            );
        }
    }
    if let Some((fs, fb)) = faiss {
        println!("\n| memdb/faiss flat | single | batch |\n| --- | ---: | ---: |");
        for (name, s, b) in &flat_qps {
            println!("| {name} | {:.2} | {:.2} |", s / fs, b / fb);
        }
    }
    for peer in graph_peers.iter().filter(|p| !p.runs.is_empty()) {
        println!(
            "\n| memdb HNSW / {0} | recall memdb | recall {0} | single | batch |\n| --- | ---: | ---: | ---: | ---: |",
            peer.name
        );
        for (name, s, b, r) in &hnsw_qps {
            for (ef, hs, hb, hr) in &peer.runs {
                println!(
                    "| {name} / {} ef={ef} | {r:.4} | {hr:.4} | {:.2} | {:.2} |",
                    peer.name,
                    s / hs,
                    b / hb
                );
            }
        }
        // The comparison that matters: at the peer's recall, memdb's fastest setting that
        // reaches it (single and batch chosen separately, each from the runs that reach it).
        println!(
            "\n| at {0}'s recall | {0} recall | {0} single / batch QPS | memdb best single / batch QPS at ≥ that recall | ratio single | ratio batch |\n| --- | ---: | ---: | ---: | ---: | ---: |",
            peer.name
        );
        for (ef, hs, hb, hr) in &peer.runs {
            let reaching: Vec<_> = hnsw_qps.iter().filter(|(_, _, _, r)| r >= hr).collect();
            if reaching.is_empty() {
                println!(
                    "| {} ef={ef} | {hr:.4} | {hs:.1} / {hb:.1} | no memdb HNSW run reaches it | — | — |",
                    peer.name
                );
                continue;
            }
            let best_single = reaching.iter().map(|x| x.1).fold(0.0, f64::max);
            let best_batch = reaching.iter().map(|x| x.2).fold(0.0, f64::max);
            println!(
                "| {} ef={ef} | {hr:.4} | {hs:.1} / {hb:.1} | {best_single:.1} / {best_batch:.1} | {:.2} | {:.2} |",
                peer.name,
                best_single / hs,
                best_batch / hb
            );
        }
    }
    // Against the machine's limits, measured now that the scans are done: single-query scans
    // stream the rows (bytes scanned per second vs one thread's read bandwidth); batched scans
    // are matrix products (GFLOP/s vs the sgemm rate this machine reaches on every core).
    let (bandwidth_1, bandwidth_all) = (read_bandwidth_gbs(1), read_bandwidth_gbs(threads));
    let gemm_all = sgemm_gflops(threads);
    println!(
        "\nCPU: {}; read bandwidth {bandwidth_1:.1} GB/s on 1 thread, {bandwidth_all:.1} GB/s on \
         {threads}; sgemm (gemm crate, 256 x 384 x 512, in cache) {gemm_all:.0} GFLOP/s on {threads} \
         threads",
        cpu_features()
    );
    println!(
        "\n| memdb flat vs the limit | single: GB/s scanned | / 1-thread bandwidth | batch: GFLOP/s | / sgemm |\n| --- | ---: | ---: | ---: | ---: |"
    );
    for ((name, single, batch), precision) in
        flat_qps
            .iter()
            .zip([Precision::F32, Precision::F16, Precision::I8])
    {
        let bytes_per_query = (n * precision.row_bytes(DIM)) as f64;
        let scanned = single * bytes_per_query / 1e9;
        let gflops = batch * (n * DIM * 2) as f64 / 1e9;
        println!(
            "| {name} | {scanned:.2} | {:.2} | {gflops:.1} | {:.2} |",
            scanned / bandwidth_1,
            gflops / gemm_all
        );
    }
    let f32_single = flat_qps[0].1;
    println!("\n| memdb vs memdb flat f32 | single | batch |\n| --- | ---: | ---: |");
    for (name, s, b) in &flat_qps[1..] {
        println!(
            "| {name} / f32 | {:.2} | {:.2} |",
            s / f32_single,
            b / flat_qps[0].2
        );
    }
    for (name, s, b, _) in &hnsw_qps {
        println!(
            "| {name} / f32 | {:.2} | {:.2} |",
            s / f32_single,
            b / flat_qps[0].2
        );
    }
}

/// An HNSW peer's results: per ef (ef, single QPS, batch QPS, recall), its insert rate, and a
/// note when it was not built on every row.
struct GraphPeer {
    name: &'static str,
    runs: Vec<(usize, f64, f64, f64)>,
    inserts_per_s: f64,
    note: String,
}

/// What reading an HNSW peer's runs needs from the bench.
struct GraphRun<'a> {
    a: &'a Args,
    dir: &'a Path,
    truth: &'a [Vec<u64>],
    n: usize,
    n_queries: usize,
    threads: usize,
}

impl GraphRun<'_> {
    /// Reads peer `name`'s JSON `h` and id files, adding its rows to the table.
    fn read(&self, name: &'static str, h: &Value, rows: &mut Vec<Row>) -> GraphPeer {
        let (a, n, threads) = (self.a, self.n, self.threads);
        let mut peer = GraphPeer {
            name,
            runs: Vec::new(),
            inserts_per_s: h["inserts_per_s"].as_f64().unwrap_or(f64::NAN),
            note: String::new(),
        };
        if h["searched"].as_bool() != Some(true) {
            peer.note = format!(
                "{name} not built on all {n} rows (N > --hnswlib-max {}: the HNSW peers are built \
                 only up to it, as hnswlib does not finish 1M in 10 minutes on 2 cores); its insert rate was measured building the first \
                 {} rows: {:.0} inserts/s on {threads} threads, so {n} rows would take ≈ {:.0} s \
                 (extrapolated, and optimistic: inserts slow down as the graph grows)",
                a.hnswlib_max,
                h["rows_built"],
                peer.inserts_per_s,
                n as f64 / peer.inserts_per_s
            );
            return peer;
        }
        for run in h["runs"].as_array().into_iter().flatten() {
            let ef = run["ef"].as_u64().unwrap() as usize;
            let ids = |mode: &str| {
                read_ids(
                    &self.dir.join(format!("{name}_{mode}_{ef}.i64")),
                    self.n_queries,
                    a.k,
                )
            };
            let r =
                recall(self.truth, &ids("single"), a.k).min(recall(self.truth, &ids("batch"), a.k));
            let (qs, qb) = (
                run["qps_single"].as_f64().unwrap(),
                run["qps_batch"].as_f64().unwrap(),
            );
            peer.runs.push((ef, qs, qb, r));
            rows.push(Row {
                engine: format!(
                    "{name} {} M=16 efC=200, ef={ef} (1 thread / {threads} threads)",
                    h["version"].as_str().unwrap_or("?")
                ),
                qps_single: qs,
                qps_batch: qb,
                recall: r,
                bytes: h["bytes"].as_u64().unwrap_or(0) as usize,
                build_s: h["build_s"].as_f64().unwrap_or(f64::NAN),
                peak_mib: h["peak_mib"].as_f64().unwrap_or(f64::NAN),
            });
        }
        peer
    }
}

/// Flat vs graph QPS at several sizes (unfiltered) and several filter selectivities.
fn crossover(a: &Args, data: &[f32], queries: &[f32]) {
    let n = data.len() / DIM;
    let q = &queries[..queries.len().min(500 * DIM)];
    let filter = Filter::new();
    let ef = HnswParams::default().ef_search;
    println!(
        "crossover: flat f32 vs HNSW (i8 traversal + f32 rerank, ef = {ef}), k = {}, 1 thread, {} queries; \
         current FLAT_BELOW_ROWS = {FLAT_BELOW_ROWS}, FLAT_BELOW_MATCH_FRACTION = {FLAT_BELOW_MATCH_FRACTION}\n",
        a.k,
        q.len() / DIM
    );
    println!(
        "| rows | flat QPS | HNSW QPS | HNSW recall@{} | HNSW/flat |\n| ---: | ---: | ---: | ---: | ---: |",
        a.k
    );
    for size in [1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 50_000] {
        if size > n {
            break;
        }
        let (flat, _) = build_flat(Precision::F32, &data[..size * DIM]);
        let index = HnswIndex::build(flat, HnswParams::default()).unwrap();
        let (truth, flat_qps) = time_single(q, |x| {
            index.search_with(x, a.k, &filter, ef, Route::Flat).unwrap()
        });
        let (got, graph_qps) = time_single(q, |x| {
            index
                .search_with(x, a.k, &filter, ef, Route::Graph)
                .unwrap()
        });
        println!(
            "| {size} | {flat_qps:.0} | {graph_qps:.0} | {:.4} | {:.2} |",
            recall(&truth, &got, a.k),
            graph_qps / flat_qps
        );
    }
    let (flat, _) = build_flat(Precision::F32, data);
    let index = HnswIndex::build(flat, HnswParams::default()).unwrap();
    println!(
        "\nfiltered, N = {n} (allow-list of a random fraction of rows)\n\n| allowed | flat QPS | HNSW QPS | HNSW recall@{} | HNSW/flat |\n| ---: | ---: | ---: | ---: | ---: |",
        a.k
    );
    for fraction in [0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5] {
        let mut rng = Rng::new(99);
        let allowed: roaring::RoaringBitmap =
            (0..n as u32).filter(|_| rng.uniform() < fraction).collect();
        let filter = Filter::new().with_rows(allowed);
        let (truth, flat_qps) = time_single(q, |x| {
            index.search_with(x, a.k, &filter, ef, Route::Flat).unwrap()
        });
        let (got, graph_qps) = time_single(q, |x| {
            index
                .search_with(x, a.k, &filter, ef, Route::Graph)
                .unwrap()
        });
        println!(
            "| {:.1} % | {flat_qps:.0} | {graph_qps:.0} | {:.4} | {:.2} |",
            fraction * 100.0,
            recall(&truth, &got, a.k),
            graph_qps / flat_qps
        );
    }
}

fn run_peer(a: &Args, out: &Path, data: &Path, queries: &Path) -> Result<Value, String> {
    let python = peer_python();
    let probe = Command::new(&python)
        .args(["-c", "import faiss, numpy, hnswlib"])
        .output()
        .map_err(|e| format!("cannot run {python} ({e}); set {PEER_PYTHON_ENV}"))?;
    if !probe.status.success() {
        let err = String::from_utf8_lossy(&probe.stderr);
        return Err(format!(
            "{python} cannot import faiss, numpy and hnswlib ({}); set {PEER_PYTHON_ENV} to a \
             Python with faiss-cpu and hnswlib",
            err.lines().last().unwrap_or("").trim()
        ));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/vectors_peer.py");
    eprintln!("running peer: {python} {}", script.display());
    let mut command = Command::new(&python);
    command
        .arg(&script)
        .args([
            "--data",
            &data.display().to_string(),
            "--queries",
            &queries.display().to_string(),
        ])
        .args(["--k", &a.k.to_string(), "--out", &out.display().to_string()])
        .args(["--hnswlib-max", &a.hnswlib_max.to_string()])
        .stderr(std::process::Stdio::inherit());
    run_peer_json(command, &script)
}
