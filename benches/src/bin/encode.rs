//! Bench `encode`: memdb's all-MiniLM-L6-v2 (burn) against sentence-transformers (torch CPU), in
//! the same run, on the same texts, with the same thread count.
//!
//! Texts: every dialogue turn of `shared/data/locomo/*.json` (2,760), as DESIGN.md §6 gives the
//! item text: `[<session date_time>] <speaker>: <text>`, plus ` [image: <blip_caption>]` when the
//! turn has one. Prints sentences/s at batch 32 and 128 (each after an untimed warm-up on 64
//! texts), the model load time (from a warm page cache, as the peer's), and the peak RSS (VmHWM)
//! while streaming 1,000 and then 10,000 texts (the turns repeated) through the encoder: if
//! memory is bounded by one batch, the two peaks are about the same. The peer (`benches/peers/encode_peer.py`) runs when `python3` can
//! import sentence_transformers; ratios are memdb/peer (> 1: memdb is faster, for throughput).
//! Where the peer's Python has onnxruntime, the peer script also exports the same weights with
//! `torch.onnx.export` and runs them through ONNX Runtime on the same threads and texts (a second
//! peer column). Last, the achieved GFLOP/s of each (the model's arithmetic on the texts' real
//! token counts, divided by the time) beside the sgemm rate this machine reaches, and the CPU
//! features the run had.
//!
//! memdb runs its default encoder: 8-bit projections where the CPU has the packed i8 kernel
//! (`EncoderOptions::int8`). Then the same model with f32 projections (the published model, the
//! one the parity test holds to the reference) runs on the same texts, and a table gives both
//! rates and the cosine between their vectors. `MEMDB_VECTORS_I8_KERNEL=none` measures the f32
//! path a CPU without the kernel takes.
//!
//! Run: `cargo run --release -p memdb-benches --bin encode [-- --threads 2] [--skip-peer]`.
//! Needs the installed model (`memdb model install`) and the shared folder (`MEMDB_SHARED_DIR`,
//! else `<repo>/../shared`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use memdb_benches::{
    PEER_PYTHON_ENV, cpu_features, locomo_texts, peer_python, proc_status_kib, reset_peak_rss,
    run_peer_json, sgemm_gflops, shared_dir,
};
use memdb_encode::{Encoder, EncoderOptions, MiniLm, cosine, encode_stream, model};

const BATCH_SIZES: [usize; 2] = [32, 128];
const WARMUP: usize = 64;
const STREAM_WINDOW: usize = 1024;

fn all_turns() -> Vec<String> {
    let dir = shared_dir().join("data/locomo");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e} (set MEMDB_SHARED_DIR)", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| locomo_texts(f).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Peak RSS (MiB) while streaming `n` texts (the turns repeated) through `encoder`.
fn peak_rss_streaming(encoder: &MiniLm, turns: &[String], n: usize) -> (f64, f64) {
    let reset = reset_peak_rss();
    assert!(reset, "cannot reset VmHWM through /proc/self/clear_refs");
    let before = proc_status_kib("VmRSS") as f64 / 1024.0;
    let texts = turns.iter().cycle().take(n).map(String::as_str);
    let mut count = 0;
    encode_stream(encoder, texts, STREAM_WINDOW, |_, v| {
        assert_eq!(v.len(), 384);
        count += 1;
        Ok::<(), memdb_encode::EncodeError>(())
    })
    .unwrap();
    assert_eq!(count, n);
    (before, proc_status_kib("VmHWM") as f64 / 1024.0)
}

/// Minimum and mean cosine between our vectors and the peer's, row by row.
fn agreement(ours: &[Vec<f32>], theirs: &[f32]) -> (f64, f64) {
    assert_eq!(
        theirs.len(),
        ours.len() * 384,
        "the peer wrote a different number of vectors"
    );
    let cosines: Vec<f64> = ours
        .iter()
        .zip(theirs.chunks_exact(384))
        .map(|(a, b)| cosine(a, b))
        .collect();
    let min = cosines.iter().copied().fold(f64::INFINITY, f64::min);
    (min, cosines.iter().sum::<f64>() / cosines.len() as f64)
}

struct Peer {
    /// The peer's vectors at the first batch size, row-major.
    vectors: Vec<f32>,
    cold_start_s: f64,
    load_s: f64,
    per_batch: Vec<(usize, f64)>,
    versions: String,
    /// ONNX Runtime on the same weights (exported in the peer script), or why it did not run.
    onnx: Result<OnnxPeer, String>,
}

/// The ONNX Runtime runs of the peer script.
struct OnnxPeer {
    version: String,
    export_s: f64,
    load_s: f64,
    min_cosine_vs_torch: f64,
    per_batch: Vec<(usize, f64)>,
}

/// `(batch size, sentences/s)` of each run in a peer's `runs` list.
fn runs_of(report: &serde_json::Value) -> Vec<(usize, f64)> {
    report["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["batch_size"].as_u64().unwrap_or(0) as usize,
                r["sentences_per_s"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

/// Floating-point operations all-MiniLM-L6-v2 does for one sequence of `tokens` tokens (the
/// multiply-adds of its matrix products, counted as two): per layer, the Q, K, V and output
/// projections (4 · 384²), the feed-forward pair (2 · 384 · 1536) per token, and the attention
/// scores and weighted sum (2 · tokens · 384) per token; six layers. Padding is not counted.
fn minilm_flops(tokens: usize) -> f64 {
    let (l, h, ff) = (tokens as f64, 384.0, 1536.0);
    6.0 * 2.0 * (l * (4.0 * h * h + 2.0 * h * ff) + 2.0 * l * l * h)
}

/// Runs the Python peer on the same texts, or says why it did not.
fn run_peer(texts: &[String], model_dir: &Path, threads: usize) -> Result<Peer, String> {
    let python = peer_python();
    let probe = Command::new(&python)
        .args(["-c", "import sentence_transformers"])
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        _ => {
            return Err(format!(
                "{python} cannot import sentence_transformers; install it with \
                 `python3 -m pip install sentence-transformers`, or name a Python that has it \
                 in {PEER_PYTHON_ENV}, to compare"
            ));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let texts_file = dir.path().join("texts.json");
    std::fs::write(&texts_file, serde_json::to_vec(texts).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/encode_peer.py");
    let vectors_file = dir.path().join("vectors.f32");
    let sizes: Vec<String> = BATCH_SIZES.iter().map(ToString::to_string).collect();
    let mut command = Command::new(&python);
    command
        .arg(&script)
        .arg("--texts")
        .arg(&texts_file)
        .arg("--model")
        .arg(model_dir)
        .args(["--threads", &threads.to_string()])
        .args(["--batch-sizes", &sizes.join(",")])
        .arg("--vectors-out")
        .arg(&vectors_file);
    let report = run_peer_json(command, &script)?;
    let per_batch = runs_of(&report);
    let onnx = match &report["onnx"] {
        serde_json::Value::Null => Err(report["onnx_skipped"]
            .as_str()
            .unwrap_or("the peer did not run it")
            .to_owned()),
        o => Ok(OnnxPeer {
            version: o["version"].as_str().unwrap_or("?").to_owned(),
            export_s: o["export_s"].as_f64().unwrap_or(f64::NAN),
            load_s: o["load_s"].as_f64().unwrap_or(f64::NAN),
            min_cosine_vs_torch: o["min_cosine_vs_torch"].as_f64().unwrap_or(f64::NAN),
            per_batch: runs_of(o),
        }),
    };
    let vectors = std::fs::read(&vectors_file)
        .map_err(|e| format!("reading the peer's vectors: {e}"))?
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let v = &report["versions"];
    Ok(Peer {
        vectors,
        cold_start_s: report["cold_start_s"].as_f64().unwrap(),
        load_s: report["load_s"].as_f64().unwrap(),
        per_batch,
        versions: format!(
            "sentence-transformers {}, torch {}, python {}, {} threads",
            v["sentence_transformers"].as_str().unwrap_or("?"),
            v["torch"].as_str().unwrap_or("?"),
            v["python"].as_str().unwrap_or("?"),
            report["threads"]
        ),
        onnx,
    })
}

/// `encoder`'s sentences/s on `refs` at each of [`BATCH_SIZES`] (each after an untimed
/// warm-up), and its vectors from the first.
fn rates(encoder: &mut MiniLm, refs: &[&str]) -> (Vec<(usize, f64)>, Vec<Vec<f32>>) {
    let mut runs = Vec::new();
    let mut first_vectors = Vec::new();
    for &batch_size in &BATCH_SIZES {
        encoder.set_batch_size(batch_size);
        encoder.encode(&refs[..WARMUP]).unwrap();
        let t = Instant::now();
        let vectors = encoder.encode(refs).unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(vectors.len(), refs.len());
        runs.push((batch_size, refs.len() as f64 / secs));
        if first_vectors.is_empty() {
            first_vectors = vectors;
        }
    }
    (runs, first_vectors)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .map_or(2, |t| t.parse().unwrap());
    let skip_peer = args.iter().any(|a| a == "--skip-peer");

    let turns = all_turns();
    let dir = model::locate().unwrap_or_else(|e| panic!("{e}"));
    // Both loads are timed from a warm page cache: the peer's runs after memdb's, which would
    // otherwise have paid for reading the files from disk alone.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::hint::black_box(std::fs::read(&path).unwrap());
        }
    }
    let t0 = Instant::now();
    let mut encoder = MiniLm::load(
        &dir,
        EncoderOptions {
            threads: Some(threads),
            ..EncoderOptions::default()
        },
    )
    .unwrap();
    let load_s = t0.elapsed().as_secs_f64();
    let rss_loaded = proc_status_kib("VmRSS") as f64 / 1024.0;

    let refs: Vec<&str> = turns.iter().map(String::as_str).collect();
    let (ours, first_vectors) = rates(&mut encoder, &refs);
    for (batch_size, sps) in &ours {
        eprintln!("memdb batch {batch_size}: {sps:.1} sentences/s");
    }

    encoder.set_batch_size(BATCH_SIZES[0]);
    let (rss_before_1k, peak_1k) = peak_rss_streaming(&encoder, &turns, 1_000);
    let (rss_before_10k, peak_10k) = peak_rss_streaming(&encoder, &turns, 10_000);

    // The same model with f32 projections, where the default ran them in 8 bits: its speed
    // and how far the 8-bit vectors are from its own.
    let f32_runs = encoder.int8().then(|| {
        let mut exact = MiniLm::load(
            &dir,
            EncoderOptions {
                threads: Some(threads),
                int8: false,
                ..EncoderOptions::default()
            },
        )
        .unwrap();
        let (runs, vectors) = rates(&mut exact, &refs);
        (runs, agreement(&first_vectors, &vectors.concat()))
    });

    let peer = if skip_peer {
        Err("--skip-peer given".to_string())
    } else {
        run_peer(&turns, dir.path(), threads)
    };

    println!();
    println!(
        "encode: all-MiniLM-L6-v2 on {} LoCoMo turns, {threads} threads, CPU ({} cores visible)",
        turns.len(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    match &peer {
        Ok(p) => {
            println!("peer: {}", p.versions);
            let (min, mean) = agreement(&first_vectors, &p.vectors);
            println!(
                "agreement with the peer on all {} texts (batch {}): min cosine {min:.6}, mean {mean:.7}",
                first_vectors.len(),
                BATCH_SIZES[0]
            );
        }
        Err(why) => println!("peer skipped: {why}"),
    }
    let onnx = peer.as_ref().ok().and_then(|p| p.onnx.as_ref().ok());
    match peer.as_ref().map(|p| &p.onnx) {
        Ok(Ok(o)) => println!(
            "ONNX Runtime {} (same weights, torch.onnx.export in {:.1} s; session load {:.2} s; \
             min cosine vs torch {:.6})",
            o.version, o.export_s, o.load_s, o.min_cosine_vs_torch
        ),
        Ok(Err(why)) => println!("ONNX Runtime skipped: {why}"),
        Err(_) => {}
    }
    let per = |runs: Option<&Vec<(usize, f64)>>, batch_size: usize| {
        runs.and_then(|r| r.iter().find(|(b, _)| *b == batch_size))
            .map(|(_, s)| *s)
    };
    let cell = |x: Option<f64>, digits: usize| x.map_or("-".into(), |v| format!("{v:.digits$}"));
    println!();
    println!(
        "| metric | memdb (burn, flex CPU; {} projections) | sentence-transformers | memdb/ST | ONNX Runtime | memdb/ORT |",
        if encoder.int8() { "int8" } else { "f32" }
    );
    println!("|---|---|---|---|---|---|");
    for &(batch_size, ours_sps) in &ours {
        let st = per(peer.as_ref().ok().map(|p| &p.per_batch), batch_size);
        let ort = per(onnx.map(|o| &o.per_batch), batch_size);
        println!(
            "| sentences/s, batch {batch_size} | {ours_sps:.1} | {} | {} | {} | {} |",
            cell(st, 1),
            cell(st.map(|s| ours_sps / s), 2),
            cell(ort, 1),
            cell(ort.map(|s| ours_sps / s), 2),
        );
    }
    match &peer {
        Ok(p) => {
            println!(
                "| model load, s (peer: import + load) | {load_s:.2} | {:.2} | {:.2} | - | - |",
                p.cold_start_s,
                load_s / p.cold_start_s
            );
            println!(
                "| model load, s (peer: load only; ORT: session from the exported file) | {load_s:.2} | {:.2} | {:.2} | {} | {} |",
                p.load_s,
                load_s / p.load_s,
                cell(onnx.map(|o| o.load_s), 2),
                cell(onnx.map(|o| load_s / o.load_s), 2),
            );
        }
        Err(_) => println!("| model load, s | {load_s:.2} | - | - | - | - |"),
    }
    match &f32_runs {
        Some((runs, (min, mean))) => {
            println!();
            println!(
                "int8 projections against f32 (same run; the f32 model is the published one): \
                 cosine of the vectors on all {} texts, min {min:.5}, mean {mean:.5}",
                refs.len()
            );
            println!(
                "| batch | int8 sentences/s | f32 sentences/s | int8/f32 |\n|---|---|---|---|"
            );
            for (&(batch_size, int8_sps), &(_, f32_sps)) in ours.iter().zip(runs) {
                println!(
                    "| {batch_size} | {int8_sps:.1} | {f32_sps:.1} | {:.2} |",
                    int8_sps / f32_sps
                );
            }
        }
        None => println!(
            "\nint8 projections: not on this CPU (no packed i8 kernel, or \
             MEMDB_VECTORS_I8_KERNEL=none): the encoder ran f32"
        ),
    }
    // Against the machine: the model's useful arithmetic (real token counts, padding not
    // counted) per second, next to the sgemm rate this machine reaches on the same threads.
    let flops: f64 = refs
        .iter()
        .map(|t| minilm_flops(encoder.token_ids(t).map_or(0, |ids| ids.len())))
        .sum();
    let ceiling = sgemm_gflops(threads);
    println!();
    println!(
        "CPU: {}; sgemm (gemm crate, in cache) {ceiling:.0} GFLOP/s on {threads} threads; the \
         model does {:.1} GFLOP for these {} texts (real token counts, no padding)",
        cpu_features(),
        flops / 1e9,
        refs.len()
    );
    if encoder.int8() {
        println!(
            "(memdb's projections ran in 8-bit integers: its rate counts their multiply-adds as \
             FLOPs, against the f32 sgemm ceiling)"
        );
    }
    println!(
        "| batch | memdb GFLOP/s | / sgemm | ST GFLOP/s | ORT GFLOP/s |\n|---|---|---|---|---|"
    );
    for &(batch_size, ours_sps) in &ours {
        let rate = |sps: f64| flops / 1e9 * sps / refs.len() as f64;
        let st = per(peer.as_ref().ok().map(|p| &p.per_batch), batch_size);
        let ort = per(onnx.map(|o| &o.per_batch), batch_size);
        println!(
            "| {batch_size} | {:.1} | {:.2} | {} | {} |",
            rate(ours_sps),
            rate(ours_sps) / ceiling,
            cell(st.map(rate), 1),
            cell(ort.map(rate), 1),
        );
    }
    println!();
    println!(
        "memory (memdb, batch {}, stream window {STREAM_WINDOW}):",
        BATCH_SIZES[0]
    );
    println!("  RSS after load: {rss_loaded:.0} MiB");
    println!("  streaming  1,000 texts: RSS before {rss_before_1k:.0} MiB, peak {peak_1k:.0} MiB");
    println!(
        "  streaming 10,000 texts: RSS before {rss_before_10k:.0} MiB, peak {peak_10k:.0} MiB"
    );
    println!(
        "  peak growth from 1,000 to 10,000 texts: {:+.0} MiB",
        peak_10k - peak_1k
    );
}
