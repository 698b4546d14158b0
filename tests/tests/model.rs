//! Reliability R9: a model-based test. Random sequences of ingest, update, delete, compaction,
//! reopen, get, scan and filtered vector search run against the store and against an
//! in-memory model; after every operation the store must answer exactly as the model does —
//! including filtered top-k, which must equal filter-then-rank over all live items and return
//! exactly min(k, matches) hits. `MEMDB_MODEL_CASES` raises the case count (extended runs).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;

use memdb::{
    EventTime, ItemDraft, ItemFields, Options, ScanFilter, Source, Store,
    maintenance::CompactOptions, maintenance::KeepEverything, maintenance::Victims,
    vectors::ITEM_VECTORS, vectors::VectorScope,
};
use proptest::prelude::*;

const DIM: usize = 8;
const EXTS: u8 = 24;
const DAY_MS: i64 = 86_400_000;
const BASE_MS: i64 = 1_704_067_200_000; // 2024-01-01

#[derive(Debug, Clone)]
enum Op {
    /// Put (add or update) items in one batch: (external id, day, source, vector seed).
    Put(Vec<(u8, u8, u8, u32)>),
    Delete(Vec<u8>),
    Compact(bool),
    Reopen,
    Get(u8),
    Scan(Option<(u8, u8)>, Option<u8>),
    Search(u32, usize, Option<(u8, u8)>, Option<u8>),
}

fn op() -> impl Strategy<Value = Op> {
    let window = prop::option::of((0u8..30, 1u8..30));
    let source = prop::option::of(0u8..5);
    prop_oneof![
        4 => prop::collection::vec((0..EXTS, 0u8..30, 0u8..5, any::<u32>()), 1..5).prop_map(Op::Put),
        2 => prop::collection::vec(0..EXTS, 1..3).prop_map(Op::Delete),
        1 => any::<bool>().prop_map(Op::Compact),
        1 => Just(Op::Reopen),
        2 => (0..EXTS).prop_map(Op::Get),
        2 => (window.clone(), source.clone()).prop_map(|(w, s)| Op::Scan(w, s)),
        4 => (any::<u32>(), 1usize..12, window, source).prop_map(|(q, k, w, s)| Op::Search(q, k, w, s)),
    ]
}

fn vector(seed: u32) -> Vec<f32> {
    let mut x = u64::from(seed) | 1 << 40;
    let mut v: Vec<f32> = (0..DIM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-3);
    v.iter_mut().for_each(|a| *a /= n);
    v
}

#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: u64,
    time_ms: i64,
    source: Source,
    body: String,
    vector: Vec<f32>,
}

fn window_ms(w: Option<(u8, u8)>) -> (i64, i64) {
    w.map_or((i64::MIN, i64::MAX), |(from, len)| {
        let from = BASE_MS + i64::from(from) * DAY_MS;
        (from, from + i64::from(len) * DAY_MS)
    })
}

struct Harness {
    dir: tempfile::TempDir,
    /// What the store is opened with (an encrypted store's passphrase, or nothing).
    options: Options,
    store: Option<Store>,
    model: BTreeMap<u8, Row>,
}

impl Harness {
    fn store(&self) -> &Store {
        self.store.as_ref().unwrap()
    }

    fn apply(&mut self, op: &Op) {
        let store = self.store().clone();
        match op {
            Op::Put(puts) => {
                let mut batch = store.batch();
                for &(ext, day, source, seed) in puts {
                    let time =
                        EventTime::utc(BASE_MS + i64::from(day) * DAY_MS + i64::from(seed % 1000));
                    let mut f = ItemFields::new(Source::ALL[source as usize], time);
                    f.external_id = Some(format!("e{ext}"));
                    f.body = Some(format!("body {ext} {seed}"));
                    batch.put(ItemDraft {
                        fields: f,
                        supersedes: None,
                    });
                }
                let receipt = batch.commit().unwrap();
                // Vectors go in a second batch, keyed by the ids the first one gave.
                let mut batch = store.batch();
                for (&(ext, day, source, seed), put) in puts.iter().zip(&receipt.puts) {
                    let row = Row {
                        id: put.id,
                        time_ms: BASE_MS + i64::from(day) * DAY_MS + i64::from(seed % 1000),
                        source: Source::ALL[source as usize],
                        body: format!("body {ext} {seed}"),
                        vector: vector(seed),
                    };
                    if let Some(old) = self.model.get(&ext) {
                        assert_eq!(old.id, put.id, "an update keeps the id");
                    }
                    self.model.insert(ext, row);
                }
                for (ext, row) in &self.model {
                    if puts.iter().any(|p| p.0 == *ext) {
                        batch.put_vector(
                            ITEM_VECTORS,
                            row.id,
                            row.time_ms,
                            row.source.code(),
                            row.vector.clone(),
                        );
                    }
                }
                batch.commit().unwrap();
            }
            Op::Delete(exts) => {
                let mut batch = store.batch();
                for ext in exts {
                    batch.delete_external(format!("e{ext}"));
                    if let Some(row) = self.model.remove(ext) {
                        batch.delete_vector(ITEM_VECTORS, row.id);
                    }
                }
                batch.commit().unwrap();
            }
            Op::Compact(all) => {
                let victims = if *all {
                    Victims::All
                } else {
                    Victims::DeadRatio(0.25)
                };
                self.store()
                    .compact(&CompactOptions { victims }, &mut KeepEverything)
                    .unwrap();
                self.store().compact_vectors(*all).unwrap();
            }
            Op::Reopen => {
                // Every handle goes, so the writer lock is released as at process exit.
                drop(store);
                self.store = None;
                self.store =
                    Some(Store::open(self.dir.path().join("s"), self.options.clone()).unwrap());
            }
            Op::Get(ext) => {
                let got = self
                    .store()
                    .snapshot()
                    .unwrap()
                    .get_by_external_id(&format!("e{ext}"))
                    .unwrap();
                match (got, self.model.get(ext)) {
                    (None, None) => {}
                    (Some(item), Some(row)) => {
                        assert_eq!(item.id, row.id);
                        assert_eq!(item.fields.time.unix_ms, row.time_ms);
                        assert_eq!(item.fields.source, row.source);
                        assert_eq!(item.fields.body.as_deref(), Some(row.body.as_str()));
                    }
                    (got, want) => panic!("get e{ext}: store {got:?}, model {want:?}"),
                }
            }
            Op::Scan(window, source) => {
                let (from, to) = window_ms(*window);
                let filter = ScanFilter {
                    time: window.map_or(memdb::TimeWindow::ALL, |_| {
                        memdb::TimeWindow::utc_range(from, to)
                    }),
                    source: source.map(|s| Source::ALL[s as usize]),
                    limit: None,
                };
                let got: Vec<u64> = self
                    .store()
                    .snapshot()
                    .unwrap()
                    .scan(&filter)
                    .unwrap()
                    .iter()
                    .map(|i| i.id)
                    .collect();
                let mut want: Vec<(i64, u64)> = self
                    .model
                    .values()
                    .filter(|r| r.time_ms >= from && r.time_ms < to)
                    .filter(|r| source.is_none_or(|s| r.source == Source::ALL[s as usize]))
                    .map(|r| (r.time_ms, r.id))
                    .collect();
                want.sort();
                assert_eq!(got, want.into_iter().map(|w| w.1).collect::<Vec<_>>());
            }
            Op::Search(seed, k, window, source) => {
                let q = vector(*seed);
                let (from, to) = window_ms(*window);
                let mut scope = VectorScope::all();
                if window.is_some() {
                    scope = scope.with_time(from..to);
                }
                if let Some(s) = source {
                    scope = scope.with_source(Source::ALL[*s as usize].code());
                }
                let snapshot = self.store().snapshot().unwrap();
                let got = match snapshot.vectors(ITEM_VECTORS).unwrap() {
                    Some(space) => space.search(&q, *k, &scope).unwrap(),
                    None => Vec::new(),
                };
                let mut want: Vec<(f32, u64)> = self
                    .model
                    .values()
                    .filter(|r| r.time_ms >= from && r.time_ms < to)
                    .filter(|r| source.is_none_or(|s| r.source == Source::ALL[s as usize]))
                    .map(|r| {
                        (
                            r.vector.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>(),
                            r.id,
                        )
                    })
                    .collect();
                want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                assert_eq!(got.len(), want.len().min(*k), "exactly min(k, matches)");
                for (hit, (score, _)) in got.iter().zip(&want) {
                    assert!(
                        (hit.score - score).abs() < 1e-4,
                        "score {} vs {score}",
                        hit.score
                    );
                    let row = self
                        .model
                        .values()
                        .find(|r| r.id == hit.key)
                        .expect("a live item");
                    assert!(row.time_ms >= from && row.time_ms < to);
                }
            }
        }
    }
}

fn cases(variable: &str, default: u32) -> u32 {
    std::env::var(variable)
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default)
}

/// Runs `ops` against a store made with `options` and the model; the final check.
fn run_against_the_model(ops: &[Op], options: Options) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    // f32 item vectors (an option; the default is i8): the model scores them exactly.
    let options = Options {
        item_vector_precision: memdb::vectors::Precision::F32,
        ..options
    };
    let store = Store::create(dir.path().join("s"), options.clone()).unwrap();
    let mut h = Harness {
        dir,
        options,
        store: Some(store),
        model: BTreeMap::new(),
    };
    for op in ops {
        h.apply(op);
    }
    // Finally everything the model holds is in the store, and nothing else.
    let live = h.store().snapshot().unwrap().item_count().unwrap();
    prop_assert_eq!(live, h.model.len() as u64);
    prop_assert!(h.store().check().unwrap().problems.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases("MEMDB_MODEL_CASES", 40), max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_store_answers_as_the_model_does(ops in prop::collection::vec(op(), 500)) {
        run_against_the_model(&ops, Options::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases("MEMDB_MODEL_ENCRYPTED_CASES", 10), max_shrink_iters: 200, ..ProptestConfig::default() })]

    /// The same model test on an encrypted store (SPEC.md §3.7): every answer as the model's.
    #[test]
    fn an_encrypted_store_answers_as_the_model_does(ops in prop::collection::vec(op(), 500)) {
        run_against_the_model(&ops, memdb_it::store_options(true))?;
    }
}
