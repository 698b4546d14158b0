//! Path-overlap candidate generation on a generated store of many EM-Paths (default 1,000,000):
//! p50/p99 latency of `GraphReader::paths_matching` (top 10, min overlap 1), and how often the
//! exact candidate bound held.
//!
//! The store is built the way a real one is: items (one per day, so one path each) committed in
//! batches, then `Store::update_graph` extracts their nodes and writes paths and the Q-matrix.
//! Item text: 4–8 words drawn from a Zipf(1.0) vocabulary of 50,000 words plus one of 2,000
//! names, separated by commas (so every word is one node). The embedder is a deterministic
//! feature hash (this bench measures the Q-matrix, not the encoder). Queries: 3–5 nodes of a
//! random existing path (so frequent nodes are queried as often as they occur), read from its
//! node list.
//!
//! ```sh
//! cargo run --release -p memdb-benches --bin paths -- [--paths N] [--queries Q] [--store DIR]
//! ```
//! With `--store DIR` an existing generated store is reused (built there first if missing).

use std::path::PathBuf;
use std::time::Instant;

use memdb::{
    Embedder, EventTime, ItemDraft, ItemFields, Options, Source, Store, graph::GraphOptions,
};
use memdb_benches::flag_value;
use rand::{Rng, SeedableRng, rngs::StdRng};

const VOCABULARY: usize = 50_000;
const NAMES: usize = 2_000;
const BATCH: usize = 10_000;
const DAY_MS: i64 = 86_400_000;

/// Feature-hashed bag of words in 64 dimensions: distinct words are near-orthogonal, so the
/// Algorithm-1 merge leaves them distinct.
struct HashEmbedder;

impl Embedder for HashEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                let h = t.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
                for k in 0..4 {
                    let bits = h.rotate_left(16 * k);
                    let sign = if bits & 1 == 0 { 1.0 } else { -1.0 };
                    v[(bits >> 1) as usize % 64] += sign;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

/// Zipf(1.0) sampler over 0..n by inverse CDF on precomputed cumulative weights.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut acc = 0.0;
        let cdf = (1..=n)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        Zipf { cdf }
    }
    fn sample(&self, rng: &mut StdRng) -> usize {
        let total = self.cdf[self.cdf.len() - 1];
        let x = rng.random::<f64>() * total;
        self.cdf.partition_point(|&c| c < x)
    }
}

fn word(i: usize) -> String {
    // Letters only, so the extractor takes each as one content word.
    let mut s = String::from("w");
    let mut i = i;
    loop {
        s.push(char::from(b'a' + (i % 26) as u8));
        i /= 26;
        if i == 0 {
            break;
        }
    }
    s.push('x');
    s
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| flag_value(&args, flag);
    let n_paths: usize = value("--paths").map_or(1_000_000, |v| v.parse().unwrap());
    let n_queries: usize = value("--queries").map_or(1_000, |v| v.parse().unwrap());
    let temp = tempfile::tempdir().unwrap();
    let dir = value("--store").map_or_else(|| temp.path().join("paths-store"), PathBuf::from);

    let store = if dir.exists() {
        Store::open(&dir, Options::default()).unwrap()
    } else {
        build(&dir, n_paths)
    };
    let snapshot = store.snapshot().unwrap();
    let graph = snapshot.graph();
    let (nodes, paths) = graph.counts().unwrap();
    println!("store: {nodes} nodes, {paths} paths ({})", dir.display());

    let mut rng = StdRng::seed_from_u64(7);
    let mut latencies = Vec::with_capacity(n_queries);
    let (mut fallbacks, mut scored, mut found) = (0u64, 0u64, 0usize);
    for _ in 0..n_queries {
        let path = graph.path(rng.random_range(1..=paths)).unwrap().unwrap();
        let want = rng.random_range(3..=5).min(path.nodes.len());
        let mut query: Vec<(u64, f64)> = Vec::new();
        while query.len() < want {
            let n = path.nodes[rng.random_range(0..path.nodes.len())];
            if !query.iter().any(|q| q.0 == n) {
                query.push((n, 1.0));
            }
        }
        let started = Instant::now();
        let matched = graph.paths_matching(&query, 1, 10).unwrap();
        latencies.push(started.elapsed().as_secs_f64() * 1e3);
        fallbacks += u64::from(matched.stats.fallback);
        scored += matched.stats.scored;
        found += matched.paths.len();
    }
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((p / 100.0) * (latencies.len() - 1) as f64).round() as usize];
    println!(
        "\n| paths | queries | p50 ms | p99 ms | max ms | bound held | mean paths scored | mean hits |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {paths} | {n_queries} | {:.3} | {:.3} | {:.3} | {:.1} % | {:.0} | {:.1} |",
        pct(50.0),
        pct(99.0),
        latencies[latencies.len() - 1],
        100.0 * (n_queries as u64 - fallbacks) as f64 / n_queries as f64,
        scored as f64 / n_queries as f64,
        found as f64 / n_queries as f64
    );
}

fn build(dir: &std::path::Path, n_paths: usize) -> Store {
    let store = Store::create(dir, Options::default()).unwrap();
    let zipf = Zipf::new(VOCABULARY);
    let mut rng = StdRng::seed_from_u64(42);
    let started = Instant::now();
    for first in (0..n_paths).step_by(BATCH) {
        let mut batch = store.batch();
        for day in first..(first + BATCH).min(n_paths) {
            let words: Vec<String> = (0..rng.random_range(4..=8))
                .map(|_| word(zipf.sample(&mut rng)))
                .collect();
            let mut fields = ItemFields::new(Source::Note, EventTime::utc(day as i64 * DAY_MS));
            let name = word(VOCABULARY + rng.random_range(0..NAMES));
            fields.body = Some(format!("{}, {}", capitalise(&name), words.join(", ")));
            batch.put(ItemDraft {
                fields,
                supersedes: None,
            });
        }
        batch.commit().unwrap();
    }
    eprintln!(
        "items: {n_paths} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let options = GraphOptions {
        chunk_items: 20_000,
        ..GraphOptions::default()
    };
    // The engine's ingest with no new items and only its graph stage.
    let ingest = memdb::IngestOptions {
        embed: false,
        graph: Some(options),
        pages: memdb::ingest::PageStage::Skip,
        ..memdb::IngestOptions::default()
    };
    let report = store
        .ingest(ingest)
        .unwrap()
        .finish(Some(&HashEmbedder), &mut |_, done, total| {
            if done % 100_000 < 20_000 {
                eprintln!(
                    "graph: {done}/{total} items, {:.0} s",
                    started.elapsed().as_secs_f64()
                );
            }
        })
        .unwrap()
        .graph
        .unwrap();
    eprintln!(
        "graph: {} items, {} nodes, {} merged, {} paths in {:.1} s",
        report.items,
        report.new_nodes,
        report.merged,
        report.new_paths,
        started.elapsed().as_secs_f64()
    );
    store
}

fn capitalise(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
