//! Bench `ingest`: memdb against redb alone, in the same run, on the same items.
//!
//! memdb: `Store` with items in segments and the redb catalog. Peer: a redb database with one
//! table `u64 → bytes` holding the same bincode item records, written in the same batches (one
//! write transaction per batch, default durability). Prints items/s per batch size and get-by-id
//! latency (p50/p99, one snapshot / one read transaction, record decoded in both), with
//! memdb/redb ratios (> 1 means memdb is faster).
//!
//! Then a diagnostic, not a peer: the same batches written as memdb's catalog rows alone —
//! redb configured as memdb's catalog is (multi-process `SingleWriter` mode, 64 MiB cache), per
//! item the external-id lookup and the four rows memdb's write path inserts (`items`,
//! `external_ids`, `by_source` in key order, `memory_ops`), no record, no segment, one thread.
//! What it prints bounds what any write path that keeps those rows in redb, written in the
//! commit, can reach against redb alone.
//!
//! `--locomo` instead measures LoCoMo end to end, the figure a person importing a chat history
//! sees: every turn of `shared/data/locomo/*.json` parsed (as `memdb import locomo` does),
//! committed, embedded with all-MiniLM-L6-v2 on two threads and added to the memory graph,
//! through `Store::ingest_items` with the default options (places, embed, graph; pages are left
//! for later, as `memdb import` leaves them). Prints items/s and the seconds of each stage;
//! then the same with the encoder's f32 projections (where the default ran them in 8 bits) and
//! the ratio of the two.
//!
//! Run: `cargo run --release -p memdb-benches --bin ingest [-- --quick | --locomo]`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use memdb::{
    EventTime, IngestItem, IngestOptions, ItemDraft, ItemFields, Options, Source, Store,
    ingest::PageStage,
};
use memdb_formats::item::{ItemRecord, decode_record, encode_record};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};

const TABLE: TableDefinition<u64, &[u8]> = TableDefinition::new("items");

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const WORDS: &[&str] = &[
    "lisbon",
    "hotel",
    "booked",
    "dinner",
    "with",
    "ana",
    "the",
    "tram",
    "photo",
    "receipt",
    "birthday",
    "mila",
    "microscope",
    "running",
    "park",
    "invoice",
    "meeting",
    "train",
    "coffee",
    "book",
];

/// A chat/e-mail-like item of about 150–400 bytes, deterministic in `i`.
fn item(i: u64) -> ItemDraft {
    let mut rng = Lcg(i.wrapping_mul(0x9E37_79B9));
    let source = Source::ALL[(rng.next() % 5) as usize];
    let mut f = ItemFields::new(
        source,
        EventTime {
            unix_ms: 1_600_000_000_000 + (rng.next() % 100_000_000) as i64 * 1000,
            offset_minutes: 60,
        },
    );
    f.external_id = Some(format!("ext-{i}"));
    let n = 20 + rng.next() % 50;
    f.body = Some(
        (0..n)
            .map(|_| WORDS[(rng.next() % WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" "),
    );
    f.speaker = Some(["Ana", "Sam", "Me"][(rng.next() % 3) as usize].into());
    f.tags = vec!["bench".into()];
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

/// Item `id`'s record, taking the draft's fields (no copy, as memdb's put takes them).
fn record(id: u64, draft: ItemDraft) -> Vec<u8> {
    encode_record(&ItemRecord {
        id,
        ingest_time_ms: 0,
        fields: draft.fields,
        supersedes: None,
        blobs: vec![],
    })
    .unwrap()
}

// Both sides take the drafts by value from one iterator, `batch` at a time: the loops around
// the timed writes cost the same, and nothing is copied (an earlier `Vec::split_off` loop moved
// every remaining draft on each of memdb's batches, a cost of the harness, not of memdb).
fn ingest_memdb(dir: &std::path::Path, n: u64, batch: u64) -> Duration {
    let store = Store::create(dir, Options::default()).unwrap();
    let drafts: Vec<ItemDraft> = (0..n).map(item).collect();
    let start = Instant::now();
    let mut drafts = drafts.into_iter().peekable();
    while drafts.peek().is_some() {
        let mut b = store.batch();
        for d in drafts.by_ref().take(batch as usize) {
            b.put(d);
        }
        b.commit().unwrap();
    }
    start.elapsed()
}

fn ingest_redb(path: &std::path::Path, n: u64, batch: u64) -> Duration {
    let db = redb::Database::create(path).unwrap();
    let drafts: Vec<ItemDraft> = (0..n).map(item).collect();
    let start = Instant::now();
    // The peer encodes inside the timed loop too, as memdb does.
    let mut drafts = drafts.into_iter().zip(1u64..).peekable();
    while drafts.peek().is_some() {
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(TABLE).unwrap();
            for (d, id) in drafts.by_ref().take(batch as usize) {
                t.insert(id, record(id, d).as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    start.elapsed()
}

// memdb's catalog tables as `engine/store/src/catalog.rs` defines them (same key and value
// types; the engine keeps its definitions crate-private, so a change there must be copied
// here); the rows-only diagnostic writes them.
const CATALOG_ITEMS: TableDefinition<u64, (u64, u64, u32, i64, u8)> = TableDefinition::new("items");
const CATALOG_EXTERNAL_IDS: TableDefinition<&str, u64> = TableDefinition::new("external_ids");
const CATALOG_BY_SOURCE: TableDefinition<(u8, i64, u64), ()> = TableDefinition::new("by_source");
const CATALOG_MEMORY_OPS: TableDefinition<(u64, u64), (u8, i64, i64, u64)> =
    TableDefinition::new("memory_ops");

/// The rows-only diagnostic (see the module header): memdb's four catalog rows per item in
/// redb configured as memdb's catalog, nothing else.
fn ingest_catalog_rows(path: &std::path::Path, n: u64, batch: u64) -> Duration {
    let db = redb::Builder::new()
        .set_cache_size(Options::default().catalog_cache_bytes)
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(path)
        .unwrap();
    let drafts: Vec<ItemDraft> = (0..n).map(item).collect();
    let start = Instant::now();
    let mut drafts = drafts.into_iter().zip(1u64..).peekable();
    let mut offset = 0u64;
    while drafts.peek().is_some() {
        let txn = db.begin_write().unwrap();
        {
            let mut items = txn.open_table(CATALOG_ITEMS).unwrap();
            let mut external = txn.open_table(CATALOG_EXTERNAL_IDS).unwrap();
            let mut by_source = txn.open_table(CATALOG_BY_SOURCE).unwrap();
            let mut memory_ops = txn.open_table(CATALOG_MEMORY_OPS).unwrap();
            let mut time_keys = std::collections::BTreeSet::new();
            for (d, id) in drafts.by_ref().take(batch as usize) {
                let f = &d.fields;
                let ext = f.external_id.as_deref().unwrap();
                assert!(external.get(ext).unwrap().is_none());
                external.insert(ext, id).unwrap();
                memory_ops.insert((id, id), (1, 0, i64::MIN, 0)).unwrap();
                let (source, time) = (f.source.code(), f.time.unix_ms);
                time_keys.insert((source, time, id));
                items.insert(id, (1, offset, 300, time, source)).unwrap();
                offset += 300;
            }
            for key in time_keys {
                by_source.insert(key, ()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    start.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// LoCoMo end to end (see the module header).
/// LoCoMo end to end with the default encoder, then (where that one ran 8-bit projections)
/// with f32 projections: the rate before the int8 path, measured in the same run.
fn locomo_end_to_end() {
    let default_rate = locomo_end_to_end_with(memdb_encode::EncoderOptions::default().int8);
    if let Some(rate) = default_rate
        && let Some(f32_rate) = locomo_end_to_end_with(false)
    {
        println!(
            "\nLoCoMo end to end, int8 projections ÷ f32 projections (same run): {rate:.0} ÷ \
             {f32_rate:.0} items/s = {:.2}",
            rate / f32_rate
        );
    }
}

/// One end-to-end run; its items/s, or `None` where `int8` was asked for and the CPU has no
/// packed i8 kernel (the run was f32: the comparison would be of f32 with itself).
fn locomo_end_to_end_with(int8: bool) -> Option<f64> {
    let dir = memdb_benches::shared_dir().join("data/locomo");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e} (set MEMDB_SHARED_DIR)", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let started = Instant::now();
    let mut items = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let report = memdb_formats::import::locomo::parse(file, &bytes).unwrap();
        assert!(
            report.errors.is_empty(),
            "{}: {:?}",
            file.display(),
            report.errors
        );
        items.extend(report.items.into_iter().map(|i| IngestItem::new(i.draft)));
    }
    let parse_s = started.elapsed().as_secs_f64();
    let n = items.len();
    let (encoder, _) = memdb_benches::minilm_two_threads_with(int8);
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path().join("store"), Options::default()).unwrap();
    // Seconds per stage: the time from a stage's first progress report to the next stage's.
    let mut stages: Vec<(String, f64)> = Vec::new();
    let mut current: Option<(String, Instant)> = None;
    let started = Instant::now();
    let report = store
        .ingest_items(
            items,
            Some(&encoder),
            IngestOptions {
                pages: PageStage::Skip,
                ..IngestOptions::default()
            },
            &mut |stage, _, _| {
                let name = format!("{stage:?}");
                if current.as_ref().is_none_or(|(c, _)| *c != name) {
                    if let Some((previous, since)) = current.take() {
                        stages.push((previous, since.elapsed().as_secs_f64()));
                    }
                    current = Some((name, Instant::now()));
                }
            },
        )
        .unwrap();
    let total_s = started.elapsed().as_secs_f64();
    if let Some((previous, since)) = current.take() {
        stages.push((previous, since.elapsed().as_secs_f64()));
    }
    assert_eq!(report.embedded.map(|e| e.encoded), Some(n as u64));
    println!(
        "\nLoCoMo end to end ({} projections): {n} turns from {} files; parse {parse_s:.2} s, \
         then ingest (commit, places, embed on 2 threads, graph) {total_s:.1} s = {:.0} items/s; \
         CPU: {}",
        if encoder.int8() { "int8" } else { "f32" },
        files.len(),
        n as f64 / total_s,
        memdb_benches::cpu_features()
    );
    println!("| stage | seconds | share |\n|---|---|---|");
    // Items commit while they are added, before the first stage reports.
    let before_stages = total_s - stages.iter().map(|(_, s)| s).sum::<f64>();
    println!(
        "| Commit (before the first report) | {before_stages:.2} | {:.0} % |",
        100.0 * before_stages / total_s
    );
    for (stage, secs) in &stages {
        println!("| {stage} | {secs:.2} | {:.0} % |", 100.0 * secs / total_s);
    }
    (encoder.int8() == int8).then_some(n as f64 / total_s)
}

fn main() {
    if std::env::args().any(|a| a == "--locomo") {
        locomo_end_to_end();
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let dir = tempfile::tempdir().unwrap();
    println!(
        "ingest: memdb vs redb alone (same bincode records, same batches); ratio = memdb items/s ÷ redb items/s; CPU: {}",
        memdb_benches::cpu_features()
    );
    println!("| batch | items | memdb items/s | redb items/s | ratio |");
    println!("|---|---|---|---|---|");
    let plans: &[(u64, u64)] = if quick {
        &[(1, 100), (100, 5_000), (10_000, 20_000)]
    } else {
        &[(1, 500), (100, 20_000), (10_000, 100_000)]
    };
    let mut rows_only = Vec::new();
    for (k, &(batch, n)) in plans.iter().enumerate() {
        let m = ingest_memdb(&dir.path().join(format!("m{k}")), n, batch);
        let r = ingest_redb(&dir.path().join(format!("r{k}.redb")), n, batch);
        let c = ingest_catalog_rows(&dir.path().join(format!("c{k}.redb")), n, batch);
        let (mr, rr) = (n as f64 / m.as_secs_f64(), n as f64 / r.as_secs_f64());
        rows_only.push((batch, n, mr, rr, n as f64 / c.as_secs_f64()));
        println!("| {batch} | {n} | {mr:.0} | {rr:.0} | {:.2} |", mr / rr);
    }
    println!(
        "\nthe catalog rows alone (diagnostic, not a peer): redb as memdb's catalog, per item the \
         external-id lookup and memdb's four rows, no record or segment, same batches, same run"
    );
    println!("| batch | items | rows-only items/s | rows-only ÷ redb alone | memdb ÷ rows-only |");
    println!("|---|---|---|---|---|");
    for (batch, n, mr, rr, cr) in rows_only {
        println!(
            "| {batch} | {n} | {cr:.0} | {:.2} | {:.2} |",
            cr / rr,
            mr / cr
        );
    }

    // Get by id on the largest stores.
    let (_, n) = plans[2];
    let k = plans.len() - 1;
    let store = Store::open(dir.path().join(format!("m{k}")), Options::default()).unwrap();
    let db = redb::Database::open(dir.path().join(format!("r{k}.redb"))).unwrap();
    let mut rng = Lcg(7);
    let ids: Vec<u64> = (0..20_000).map(|_| rng.next() % n + 1).collect();
    let snap = store.snapshot().unwrap();
    let mut m_lat = Vec::with_capacity(ids.len());
    for &id in &ids {
        let t = Instant::now();
        let item = snap.get(id).unwrap().unwrap();
        m_lat.push(t.elapsed());
        std::hint::black_box(item);
    }
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(TABLE).unwrap();
    let mut r_lat = Vec::with_capacity(ids.len());
    for &id in &ids {
        let t = Instant::now();
        let raw = table.get(id).unwrap().unwrap();
        let item = decode_record(raw.value()).unwrap();
        r_lat.push(t.elapsed());
        std::hint::black_box(item);
    }
    m_lat.sort();
    r_lat.sort();
    println!(
        "\nget by id ({} random gets over {n} items, record decoded; ratio = redb time ÷ memdb time)",
        ids.len()
    );
    println!("| percentile | memdb µs | redb µs | ratio |");
    println!("|---|---|---|---|");
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (m, r) = (percentile(&m_lat, p), percentile(&r_lat, p));
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} |",
            m.as_secs_f64() * 1e6,
            r.as_secs_f64() * 1e6,
            r.as_secs_f64() / m.as_secs_f64()
        );
    }
    let ms = store.stats().unwrap();
    let rb = std::fs::metadata(dir.path().join(format!("r{k}.redb")))
        .unwrap()
        .len();
    println!(
        "\non disk for {n} items: memdb {} bytes (segments {} + catalog {}), redb alone {rb} bytes",
        ms.total_bytes(),
        ms.segment_bytes,
        ms.catalog_bytes
    );
    // What the catalog file holds per item, table by table (B-tree pages, leaves and branches).
    let per_item: Vec<String> = ms
        .catalog_tables
        .iter()
        .filter(|t| t.rows > 0)
        .map(|t| {
            format!(
                "{} {:.0} B ({:.2} rows)",
                t.name,
                t.page_bytes as f64 / n as f64,
                t.rows as f64 / n as f64
            )
        })
        .collect();
    println!(
        "catalog per item: {:.0} B of file; tables: {}",
        ms.catalog_bytes as f64 / n as f64,
        per_item.join(", ")
    );
}
