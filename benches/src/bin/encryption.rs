//! Bench `encryption`: an encrypted store (SPEC.md §3.7) against a plain one, in the same run,
//! on the same data, with the ratios the issue sets (≤ 1.3× the plain time for recall, ≤ 1.5×
//! for ingest).
//!
//! Data: the shared LoCoMo conversations (turns as chat items, with MiniLM vectors made before
//! the timed ingest so both stores get the same ones) and the first shared photos with their
//! originals. Per store:
//!
//! - ingest: items/s through `ingest_items` (batches of 256, each a durable commit, vectors
//!   given, pages composed at the end: the part of a commit encryption touches);
//! - get-by-id: µs per `Snapshot::get` of a random item, p50 and p99 over 20,000 reads;
//! - recall: ms per LoCoMo question (`Store::recall`, top 10) with the question vectors
//!   computed once before timing, so both stores are timed without the encoder;
//! - forget: s for `forget` with policy `timed-gentle` far in the future (every page re-encoded
//!   at its last stage, originals dropped), then a compaction of everything.
//!
//! Each figure is the median of `--rounds` rounds (default 3) that alternate the two stores.
//!
//! Run: `cargo run --release -p memdb-benches --bin encryption [-- --photos N] [-- --quick]
//! [-- --rounds N]`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memdb::crypto::{KdfCost, Secret};
use memdb::forget::{ForgetOptions, Policy};
use memdb::scrapbook::PageOptions;
use memdb::{BlobKind, Embedder, IngestItem, IngestOptions, Options, RecallOptions, Store};
use memdb_benches::{
    Memo, cpu_features, files_under, flag_value, minilm_two_threads, shared_dir, tree_bytes,
};
use memdb_formats::import::{locomo, photo};

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((p / 100.0) * (values.len() - 1) as f64).round() as usize]
}

struct Figures {
    ingest_items_per_s: f64,
    ingest_s: f64,
    get_p50_us: f64,
    get_p99_us: f64,
    recall_ms: f64,
    forget_s: f64,
    disk_bytes: u64,
}

impl Figures {
    /// Each figure's median over `runs`.
    fn median(runs: &[Figures]) -> Figures {
        let median = |f: &dyn Fn(&Figures) -> f64| {
            let mut values: Vec<f64> = runs.iter().map(f).collect();
            percentile(&mut values, 50.0)
        };
        let ingest_s = median(&|r| r.ingest_s);
        Figures {
            ingest_items_per_s: median(&|r| r.ingest_items_per_s),
            ingest_s,
            get_p50_us: median(&|r| r.get_p50_us),
            get_p99_us: median(&|r| r.get_p99_us),
            recall_ms: median(&|r| r.recall_ms),
            forget_s: median(&|r| r.forget_s),
            disk_bytes: median(&|r| r.disk_bytes as f64) as u64,
        }
    }
}

fn run(
    path: &Path,
    options: Options,
    items: &[IngestItem],
    questions: &[String],
    memo: &Memo<'_>,
) -> Figures {
    let store = Store::create(path, options).unwrap();
    let started = Instant::now();
    store
        .ingest_items(
            items.iter().cloned(),
            None,
            IngestOptions {
                batch_items: 256,
                ..IngestOptions::default()
            },
            &mut |_, _, _| {},
        )
        .unwrap();
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let ingest_s = started.elapsed().as_secs_f64();

    let snap = store.snapshot().unwrap();
    let ids = snap.item_ids().unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut gets = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = ids[(x % ids.len() as u64) as usize];
        let t = Instant::now();
        let item = snap.get(id).unwrap();
        gets.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(item.is_some());
    }
    drop(snap);

    let options = RecallOptions {
        k: 10,
        ..RecallOptions::default()
    };
    for q in questions {
        store.recall(q, &options, memo).unwrap(); // warm: the memo holds every vector after
    }
    let started = Instant::now();
    for q in questions {
        store.recall(q, &options, memo).unwrap();
    }
    let recall_ms = started.elapsed().as_secs_f64() * 1e3 / questions.len().max(1) as f64;

    let started = Instant::now();
    store
        .forget(
            &Policy::builtin("timed-gentle").unwrap(),
            "2040-01-01".parse().unwrap(),
            ForgetOptions {
                dry_run: false,
                drop_originals: true,
                pages: PageOptions::default(),
                progress: &mut |_, _| {},
            },
        )
        .unwrap();
    store
        .compact(
            &memdb::maintenance::CompactOptions {
                victims: memdb::maintenance::Victims::All,
            },
            &mut memdb::maintenance::KeepEverything,
        )
        .unwrap();
    let forget_s = started.elapsed().as_secs_f64();
    drop(store);
    Figures {
        ingest_items_per_s: items.len() as f64 / ingest_s,
        ingest_s,
        get_p50_us: percentile(&mut gets, 50.0),
        get_p99_us: percentile(&mut gets, 99.0),
        recall_ms,
        forget_s,
        disk_bytes: tree_bytes(path),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let photo_limit: usize =
        flag_value(&args, "--photos").map_or(if quick { 8 } else { 40 }, |v| v.parse().unwrap());
    let shared = shared_dir();
    let (encoder, _) = minilm_two_threads();
    let memo = Memo::new(&encoder);

    let mut items = Vec::new();
    let mut questions = Vec::new();
    let locomo_dir = shared.join("data/locomo");
    let files = if quick {
        vec!["26.json"]
    } else {
        vec!["26.json", "30.json", "41.json"]
    };
    for name in files {
        let file = locomo_dir.join(name);
        let bytes = std::fs::read(&file).unwrap();
        let parsed = locomo::parse(&file, &bytes).unwrap();
        let drafts: Vec<_> = parsed.items.into_iter().map(|i| i.draft).collect();
        let texts: Vec<String> = drafts
            .iter()
            .map(|d| {
                memdb::recall::item_text(&memdb::Item {
                    id: 0,
                    ingest_time_ms: 0,
                    fields: d.fields.clone(),
                    supersedes: None,
                    blobs: vec![],
                })
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = encoder.embed(&refs).unwrap();
        for (draft, vector) in drafts.into_iter().zip(vectors) {
            let mut item = IngestItem::new(draft);
            item.vector = Some(vector);
            items.push(item);
        }
        questions.extend(
            locomo::parse_qa(&file, &bytes)
                .unwrap()
                .into_iter()
                .map(|q| q.question),
        );
    }
    let photos_dir = shared.join("data/photos");
    let mut photos = 0;
    for path in files_under(&photos_dir) {
        if photos == photo_limit {
            break;
        }
        let bytes = std::fs::read(&path).unwrap();
        let name = path
            .strip_prefix(&photos_dir)
            .unwrap()
            .display()
            .to_string();
        if let Ok(p) = photo::parse(&name, &bytes, Default::default())
            && p.damage.is_none()
        {
            items.push(IngestItem {
                draft: p.draft,
                blobs: vec![(BlobKind::Original, bytes)],
                origin: name,
                vector: None,
            });
            photos += 1;
        }
    }

    // Rounds alternate plain and encrypted, and each figure is the median of its rounds: the
    // first store made in a process pays for warming up (allocator, page cache, the renderer's
    // first use), which would otherwise fall on whichever store runs first.
    let rounds: usize = flag_value(&args, "--rounds").map_or(3, |v| v.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let (mut plain_runs, mut sealed_runs) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        plain_runs.push(run(
            &dir.path().join(format!("plain-{round}")),
            Options::default(),
            &items,
            &questions,
            &memo,
        ));
        sealed_runs.push(run(
            &dir.path().join(format!("encrypted-{round}")),
            Options {
                secret: Some(Arc::new(Secret::passphrase("bench passphrase").unwrap())),
                kdf_cost: KdfCost::default(),
                ..Options::default()
            },
            &items,
            &questions,
            &memo,
        ));
    }
    let (plain, sealed) = (Figures::median(&plain_runs), Figures::median(&sealed_runs));

    println!(
        "encryption bench: {} items ({photos} photos with originals), {} questions, median of {rounds} \
         alternating rounds; cpu: {}",
        items.len(),
        questions.len(),
        cpu_features()
    );
    println!(
        "{:<28} {:>14} {:>14} {:>10} {:>8}",
        "measure", "plain", "encrypted", "ratio", "target"
    );
    let row = |what: &str, p: f64, e: f64, target: &str| {
        println!("{what:<28} {p:>14.2} {e:>14.2} {:>9.2}× {target:>8}", e / p);
    };
    row("ingest (s)", plain.ingest_s, sealed.ingest_s, "≤ 1.5×");
    println!(
        "{:<28} {:>14.0} {:>14.0}",
        "  items/s", plain.ingest_items_per_s, sealed.ingest_items_per_s
    );
    row(
        "get-by-id p50 (µs)",
        plain.get_p50_us,
        sealed.get_p50_us,
        "",
    );
    row(
        "get-by-id p99 (µs)",
        plain.get_p99_us,
        sealed.get_p99_us,
        "",
    );
    row(
        "recall (ms/question)",
        plain.recall_ms,
        sealed.recall_ms,
        "≤ 1.3×",
    );
    row("forget + compact (s)", plain.forget_s, sealed.forget_s, "");
    row(
        "on disk after (MB)",
        plain.disk_bytes as f64 / 1e6,
        sealed.disk_bytes as f64 / 1e6,
        "",
    );
}
