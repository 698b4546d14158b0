//! Tests of the store's vector spaces: durability through reopen, deletes and updates, the
//! rebuild, errors, and a model-based property test of filtered search.

use std::collections::BTreeMap;

use memdb_vectors::Precision;
use proptest::prelude::*;
use roaring::RoaringTreemap;

use super::*;
use memdb_formats::item::{EventTime, ItemDraft, ItemFields, Source};

const T0: i64 = 1_700_000_000_000;

fn draft(ext: &str, minute: i64, source: Source) -> ItemDraft {
    let mut fields = ItemFields::new(source, EventTime::utc(T0 + minute * 60_000));
    fields.external_id = Some(ext.to_owned());
    fields.body = Some(format!("item {ext}"));
    ItemDraft {
        fields,
        supersedes: None,
    }
}

fn unit(values: &[f32]) -> Vec<f32> {
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    values.iter().map(|v| v / norm).collect()
}

fn run(store: &Store, build: impl FnOnce(&mut WriteBatch<'_>)) -> Result<CommitReceipt> {
    let mut batch = store.batch();
    build(&mut batch);
    batch.commit()
}

fn keys(hits: &[VectorHit]) -> Vec<u64> {
    hits.iter().map(|h| h.key).collect()
}

fn item_vectors(store: &Store) -> StoredVectors {
    store
        .snapshot()
        .unwrap()
        .vectors(ITEM_VECTORS)
        .unwrap()
        .unwrap()
}

#[test]
fn item_vectors_commit_with_their_items_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, Options::default()).unwrap();
    assert!(
        store
            .snapshot()
            .unwrap()
            .vectors(ITEM_VECTORS)
            .unwrap()
            .is_none()
    );
    let mut batch = store.batch();
    batch
        .put_with_vector(draft("a", 0, Source::Chat), vec![], unit(&[1.0, 0.0, 0.0]))
        .put_with_vector(draft("b", 1, Source::Email), vec![], unit(&[0.8, 0.6, 0.0]))
        .put_with_vector(draft("c", 2, Source::Chat), vec![], unit(&[0.0, 0.0, 1.0]));
    let ids: Vec<u64> = batch.commit().unwrap().puts.iter().map(|p| p.id).collect();

    let query = [1.0, 0.0, 0.0];
    let hits = item_vectors(&store)
        .search(&query, 2, &VectorScope::all())
        .unwrap();
    assert_eq!(keys(&hits), vec![ids[0], ids[1]]);
    assert!((hits[1].score - 0.8).abs() < 1e-6);
    drop(store);

    let store = Store::open(&path, Options::default()).unwrap();
    let vectors = item_vectors(&store);
    assert_eq!(vectors.len(), 3);
    assert_eq!(vectors.dim(), 3);
    assert_eq!(
        keys(&vectors.search(&query, 10, &VectorScope::all()).unwrap()),
        vec![ids[0], ids[1], ids[2]]
    );
    // Filters run during the scan: a mail-only search finds the one mail item.
    let mail = VectorScope::all().with_source(Source::Email.code());
    assert_eq!(
        keys(&vectors.search(&query, 10, &mail).unwrap()),
        vec![ids[1]]
    );
    let late = VectorScope::all().with_time(T0 + 60_000..T0 + 10 * 60_000);
    assert_eq!(
        keys(&vectors.search(&query, 10, &late).unwrap()),
        vec![ids[1], ids[2]]
    );
    let only_c: RoaringTreemap = [ids[2]].into_iter().collect();
    assert_eq!(
        keys(
            &vectors
                .search(&query, 10, &VectorScope::all().with_keys(only_c))
                .unwrap()
        ),
        vec![ids[2]]
    );
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn deletes_and_updates_retire_old_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut batch = store.batch();
    batch
        .put_with_vector(draft("a", 0, Source::Chat), vec![], unit(&[1.0, 0.0]))
        .put_with_vector(draft("b", 1, Source::Chat), vec![], unit(&[1.0, 1.0]))
        .put_with_vector(draft("c", 2, Source::Chat), vec![], unit(&[0.0, 1.0]));
    let ids: Vec<u64> = batch.commit().unwrap().puts.iter().map(|p| p.id).collect();

    // Deleting an item deletes its vector.
    run(&store, |b| {
        b.delete(ids[0]);
    })
    .unwrap();
    let vectors = item_vectors(&store);
    assert_eq!(vectors.len(), 2);
    assert_eq!(vectors.get(ids[0]), None);
    assert_eq!(
        keys(
            &vectors
                .search(&[1.0, 0.0], 10, &VectorScope::all())
                .unwrap()
        ),
        vec![ids[1], ids[2]]
    );

    // A new vector replaces the old one.
    run(&store, |b| {
        b.put_with_vector(draft("b", 1, Source::Chat), vec![], unit(&[-1.0, 0.0]));
    })
    .unwrap();
    let vectors = item_vectors(&store);
    assert_eq!(vectors.get(ids[1]), Some(unit(&[-1.0, 0.0])));
    assert_eq!(
        keys(&vectors.search(&[1.0, 0.0], 1, &VectorScope::all()).unwrap()),
        vec![ids[2]]
    );

    // Putting the same fields again changes nothing and keeps the vector; an update without a
    // new vector that changes the text (or moves the item in time) drops the vector made from
    // the old fields, so `embed` encodes the item again (issue 17: a correction must reach
    // its vector).
    run(&store, |b| {
        b.put(draft("c", 2, Source::Chat));
    })
    .unwrap();
    assert!(item_vectors(&store).get(ids[2]).is_some());
    let mut edited = draft("c", 2, Source::Chat);
    edited.fields.body = Some("edited".into());
    run(&store, |b| {
        b.put(edited);
    })
    .unwrap();
    let vectors = item_vectors(&store);
    assert_eq!(vectors.get(ids[2]), None);
    assert_eq!(vectors.len(), 1);
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn compact_vectors_rewrites_live_rows_into_one_block_and_compaction_reclaims_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut ids = Vec::new();
    for round in 0..5i64 {
        let mut batch = store.batch();
        for i in 0..20i64 {
            let n = round * 20 + i;
            let angle = n as f32 * 0.1;
            batch.put_with_vector(
                draft(&format!("x{n}"), n, Source::Note),
                vec![],
                vec![angle.cos(), angle.sin()],
            );
        }
        ids.extend(batch.commit().unwrap().puts.iter().map(|p| p.id));
    }
    let mut batch = store.batch();
    for id in ids.iter().step_by(3) {
        batch.delete(*id);
    }
    batch.commit().unwrap();
    let before = item_vectors(&store);
    assert_eq!(before.blocks(), 5);
    let query = [0.3f32, 0.7];
    let expected = before.search(&query, 15, &VectorScope::all()).unwrap();
    let live = before.len();
    drop(before);

    assert_eq!(
        store.compact_vectors(true).unwrap(),
        vec![ITEM_VECTORS.to_owned()]
    );
    let dead_before = {
        let stats = store.stats().unwrap();
        (stats.dead_bytes, stats.segment_bytes)
    };
    assert!(
        dead_before.0 > 0,
        "the rebuild left the old blocks as dead bytes"
    );
    let after = item_vectors(&store);
    assert_eq!(after.blocks(), 1);
    assert_eq!(after.len(), live);
    assert_eq!(
        after.search(&query, 15, &VectorScope::all()).unwrap(),
        expected
    );
    // Nothing left to do.
    assert!(store.compact_vectors(true).unwrap().is_empty());

    // The old blocks are dead bytes now; segment compaction reclaims them, and a hook that
    // drops every blob never sees the vector blocks.
    struct DropBlobs;
    impl CompactionHook for DropBlobs {
        fn rewrite_blob(&mut self, _: &BlobInfo, _: &[u8]) -> Result<BlobRewrite> {
            Ok(BlobRewrite::Drop)
        }
    }
    let options = CompactOptions {
        victims: Victims::All,
    };
    store.compact(&options, &mut DropBlobs).unwrap();
    let stats = store.stats().unwrap();
    assert_eq!(stats.dead_bytes, 0, "{stats:?}");
    assert!(stats.segment_bytes < dead_before.1, "{stats:?}");
    assert_eq!(
        item_vectors(&store)
            .search(&query, 15, &VectorScope::all())
            .unwrap(),
        expected
    );
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn bad_vectors_fail_the_batch_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    run(&store, |b| {
        b.put_vector("nodes", 1, T0, 0, vec![1.0, 0.0, 0.0]);
    })
    .unwrap();
    let err = run(&store, |b| {
        b.put_vector("nodes", 2, T0, 0, vec![1.0, 0.0]);
    })
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidVector { space, .. } if space == "nodes"),
        "{err}"
    );
    let err = run(&store, |b| {
        b.put_vector("nodes", 2, T0, 0, vec![f32::NAN, 0.0, 0.0]);
    })
    .unwrap_err();
    assert!(err.to_string().contains("not finite"), "{err}");
    let err = run(&store, |b| {
        b.define_vectors("nodes", Precision::I8);
    })
    .unwrap_err();
    assert!(err.to_string().contains("f32"), "{err}");
    let err = run(&store, |b| {
        b.put_vector("", 2, T0, 0, vec![1.0, 0.0, 0.0]);
    })
    .unwrap_err();
    assert!(matches!(err, Error::InvalidVector { .. }), "{err}");
    let err = run(&store, |b| {
        b.put_blob(BlobKind::Vectors, vec![0; 64]);
    })
    .unwrap_err();
    assert!(err.to_string().contains("reserved"), "{err}");
    let err = item_or_nodes(&store).search(&[1.0], 1, &VectorScope::all());
    assert!(matches!(err, Err(Error::InvalidVector { .. })));
    assert_eq!(item_or_nodes(&store).len(), 1);
    assert!(store.check().unwrap().is_clean());
}

fn item_or_nodes(store: &Store) -> StoredVectors {
    store.snapshot().unwrap().vectors("nodes").unwrap().unwrap()
}

#[test]
fn a_declared_precision_is_kept_through_rebuilds() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    run(&store, |b| {
        b.define_vectors("q", Precision::I8)
            .put_vector("q", 7, T0, 0, unit(&[1.0, 2.0, 3.0, 4.0]))
            .put_vector("q", 8, T0, 0, unit(&[4.0, 3.0, 2.0, 1.0]));
    })
    .unwrap();
    run(&store, |b| {
        b.delete_vector("q", 8);
    })
    .unwrap();
    store.compact_vectors(true).unwrap();
    let q = store.snapshot().unwrap().vectors("q").unwrap().unwrap();
    assert_eq!(q.precision(), Precision::I8);
    assert_eq!(q.len(), 1);
    let back = q.get(7).unwrap();
    for (a, b) in back.iter().zip(unit(&[1.0, 2.0, 3.0, 4.0])) {
        assert!((a - b).abs() < 0.01, "{back:?}");
    }
}

/// One step of the model-based test.
#[derive(Debug, Clone)]
enum Op {
    Put {
        key: u64,
        time: i64,
        source: u8,
        vector: Vec<i8>,
    },
    Delete {
        key: u64,
    },
    Rebuild,
    Search {
        query: Vec<i8>,
        k: usize,
        time: Option<(i64, i64)>,
        source: Option<u8>,
        keys: Option<Vec<u64>>,
    },
}

const DIM: usize = 4;

fn op() -> impl Strategy<Value = Op> {
    let vector = proptest::collection::vec(-3i8..=3, DIM);
    prop_oneof![
        5 => (0u64..30, 0i64..10, 0u8..3, vector.clone())
            .prop_map(|(key, time, source, vector)| Op::Put { key, time, source, vector }),
        2 => (0u64..30).prop_map(|key| Op::Delete { key }),
        1 => Just(Op::Rebuild),
        4 => (
            vector,
            0usize..12,
            proptest::option::of((0i64..10, 0i64..10)),
            proptest::option::of(0u8..3),
            proptest::option::of(proptest::collection::vec(0u64..30, 0..10)),
        )
            .prop_map(|(query, k, time, source, keys)| Op::Search { query, k, time, source, keys }),
    ]
}

fn floats(v: &[i8]) -> Vec<f32> {
    v.iter().map(|x| f32::from(*x)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Filtered search over the stored space equals filter-then-rank over a model of every live
    /// vector, and returns exactly min(k, matches) hits, through puts, deletes and rebuilds in
    /// batches of several operations. Small integer coordinates make every dot product exact, so
    /// the order (score, then key) is fully determined.
    #[test]
    fn filtered_search_equals_filter_then_rank(batches in proptest::collection::vec(proptest::collection::vec(op(), 1..6), 1..12)) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
        let mut model: BTreeMap<u64, (i64, u8, Vec<f32>)> = BTreeMap::new();
        for ops in batches {
            let mut batch = store.batch();
            let mut searches = Vec::new();
            for op in ops {
                match op {
                    Op::Put { key, time, source, vector } => {
                        batch.put_vector("m", key, time, source, floats(&vector));
                        model.insert(key, (time, source, floats(&vector)));
                    }
                    Op::Delete { key } => {
                        batch.delete_vector("m", key);
                        model.remove(&key);
                    }
                    Op::Rebuild => {
                        batch.rebuild_vectors("m");
                    }
                    search @ Op::Search { .. } => searches.push(search),
                }
            }
            batch.commit().unwrap();
            let Some(space) = store.snapshot().unwrap().vectors("m").unwrap() else {
                prop_assert!(model.is_empty());
                continue;
            };
            prop_assert_eq!(space.len(), model.len() as u64);
            for search in searches {
                let Op::Search { query, k, time, source, keys: allowed } = search else { continue };
                let mut scope = VectorScope::all();
                if let Some((a, b)) = time {
                    scope = scope.with_time(a.min(b)..a.max(b));
                }
                if let Some(s) = source {
                    scope = scope.with_source(s);
                }
                if let Some(allowed) = &allowed {
                    scope = scope.with_keys(allowed.iter().copied().collect());
                }
                let query = floats(&query);
                let mut expected: Vec<(f32, u64)> = model
                    .iter()
                    .filter(|(key, (t, s, _))| {
                        time.is_none_or(|(a, b)| (a.min(b)..a.max(b)).contains(t))
                            && source.is_none_or(|src| src == *s)
                            && allowed.as_ref().is_none_or(|list| list.contains(key))
                    })
                    // `+ 0.0` makes a −0.0 sum +0.0: the ranking treats both zeros as one score.
                    .map(|(key, (_, _, v))| {
                        (v.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>() + 0.0, *key)
                    })
                    .collect();
                expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                expected.truncate(k);
                let got: Vec<(f32, u64)> = space
                    .search(&query, k, &scope)
                    .unwrap()
                    .iter()
                    .map(|h| (h.score, h.key))
                    .collect();
                prop_assert_eq!(got, expected);
            }
        }
        prop_assert!(store.check().unwrap().is_clean());
    }
}

/// Low-rank vectors (8 latent dimensions in 32, plus noise), from a fixed seed: neighbourhoods
/// like real embeddings', unlike isotropic noise.
fn lowrank(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // Sum of uniforms: close enough to a Gaussian for this purpose.
        (0..4)
            .map(|i| ((state.rotate_left(i * 16) >> 40) as f32 / (1u64 << 24) as f32) - 0.5)
            .sum::<f32>()
    };
    let basis: Vec<Vec<f32>> = (0..8).map(|_| (0..32).map(|_| next()).collect()).collect();
    (0..n)
        .map(|_| {
            let z: Vec<f32> = (0..8).map(|_| next()).collect();
            let v: Vec<f32> = (0..32)
                .map(|d| z.iter().zip(&basis).map(|(zi, b)| zi * b[d]).sum::<f32>() + 0.05 * next())
                .collect();
            unit(&v)
        })
        .collect()
}

#[test]
fn a_large_space_gets_a_persisted_graph_that_respects_deletes_and_filters() {
    let n = vector_space::GRAPH_MIN_ROWS + 1000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, Options::default()).unwrap();
    let data = lowrank(n, 7);
    for chunk in (0..n).collect::<Vec<_>>().chunks(2000) {
        run(&store, |b| {
            for &i in chunk {
                b.put_vector("big", i as u64, i as i64, (i % 4) as u8, data[i].clone());
            }
        })
        .unwrap();
    }
    let space = || store.snapshot().unwrap().vectors("big").unwrap().unwrap();
    assert_eq!(space().graph_blocks(), 0);
    assert_eq!(
        store.compact_vectors(false).unwrap(),
        vec!["big".to_owned()]
    );
    assert_eq!((space().blocks(), space().graph_blocks()), (1, 1));

    let deleted: Vec<u64> = (0..n as u64).step_by(7).collect();
    run(&store, |b| {
        for key in &deleted {
            b.delete_vector("big", *key);
        }
    })
    .unwrap();
    let queries = lowrank(60, 99);
    let exact = |q: &[f32], allowed: &dyn Fn(u64) -> bool| -> Vec<u64> {
        let mut scored: Vec<(f32, u64)> = (0..n as u64)
            .filter(|k| k % 7 != 0 && allowed(*k))
            .map(|k| (data[k as usize].iter().zip(q).map(|(a, b)| a * b).sum(), k))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(10).map(|s| s.1).collect()
    };
    let check = |space: &StoredVectors| -> f64 {
        let mut found = 0;
        for q in &queries {
            let hits = keys(&space.search(q, 10, &VectorScope::all()).unwrap());
            assert_eq!(hits.len(), 10);
            assert!(hits.iter().all(|k| k % 7 != 0), "a deleted key came back");
            let truth = exact(q, &|_| true);
            found += hits.iter().filter(|k| truth.contains(k)).count();
            // A filter keeps exactly what it allows, and as many as asked for.
            let scope = VectorScope::all()
                .with_source(1)
                .with_time(0..(n as i64 / 2));
            let hits = keys(&space.search(q, 10, &scope).unwrap());
            assert_eq!(hits.len(), 10);
            assert!(
                hits.iter()
                    .all(|k| k % 4 == 1 && (*k as usize) < n / 2 && k % 7 != 0)
            );
        }
        found as f64 / (queries.len() * 10) as f64
    };
    let recall = check(&space());
    assert!(recall >= 0.9, "recall@10 {recall}");
    drop(store);

    // Reopened, the graph is read back from its blob and gives the same answers.
    let store = Store::open(&path, Options::default()).unwrap();
    let reopened = store.snapshot().unwrap().vectors("big").unwrap().unwrap();
    assert_eq!(reopened.graph_blocks(), 1);
    assert_eq!(check(&reopened), recall);
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn the_item_space_is_made_with_the_stores_item_precision_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let v = unit(&[0.3, -0.5, 0.2, 0.7]);
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    for (name, asked, want) in [
        ("default", None, Precision::I8),
        ("f32", Some(Precision::F32), Precision::F32),
        ("f16", Some(Precision::F16), Precision::F16),
    ] {
        let path = dir.path().join(name);
        let options = match asked {
            Some(p) => Options {
                item_vector_precision: p,
                ..Options::default()
            },
            None => Options::default(),
        };
        let store = Store::create(&path, options).unwrap();
        run(&store, |b| {
            b.put_with_vector(draft("a", 0, Source::Note), vec![], v.clone());
        })
        .unwrap();
        let stored = item_vectors(&store);
        assert_eq!(stored.precision(), want, "{name}");
        let hit = stored.search(&v, 1, &VectorScope::all()).unwrap()[0];
        // i8 keeps about two decimal digits per value, f16 three, f32 all.
        let tolerance = match want {
            Precision::I8 => 2e-2,
            Precision::F16 => 2e-3,
            _ => 1e-6,
        };
        assert!(
            (hit.score - dot(&v, &v)).abs() < tolerance,
            "{name}: {}",
            hit.score
        );
        drop(store);
        // Reopened with other options, the space keeps its precision and takes more vectors.
        let other = Options {
            item_vector_precision: if want == Precision::F32 {
                Precision::I8
            } else {
                Precision::F32
            },
            ..Options::default()
        };
        let store = Store::open(&path, other).unwrap();
        run(&store, |b| {
            b.put_with_vector(draft("b", 1, Source::Note), vec![], v.clone());
        })
        .unwrap();
        let stored = item_vectors(&store);
        assert_eq!((stored.precision(), stored.len()), (want, 2), "{name}");
        assert!(store.check().unwrap().is_clean());
    }
}

#[test]
fn the_item_precision_chosen_at_creation_holds_until_the_first_vector() {
    let dir = tempfile::tempdir().unwrap();
    let v = unit(&[0.3, -0.5, 0.2, 0.7]);
    let f32_options = || Options {
        item_vector_precision: Precision::F32,
        ..Options::default()
    };
    // Created for f32 items, the first vector put through a handle with the default options.
    let path = dir.path().join("recorded");
    drop(Store::create(&path, f32_options()).unwrap());
    let store = Store::open(&path, Options::default()).unwrap();
    run(&store, |b| {
        b.put_with_vector(draft("a", 0, Source::Note), vec![], v.clone());
    })
    .unwrap();
    assert_eq!(item_vectors(&store).precision(), Precision::F32);

    // A store created before the setting existed: the options it is opened with choose.
    let path = dir.path().join("older");
    {
        let store = Store::create(&path, Options::default()).unwrap();
        let txn = store.inner.db.begin_write(&store.inner.paths).unwrap();
        txn.open_table(catalog::SETTINGS)
            .unwrap()
            .remove(catalog::KEY_ITEM_VECTORS)
            .unwrap();
        txn.commit().unwrap();
    }
    let store = Store::open(&path, f32_options()).unwrap();
    run(&store, |b| {
        b.put_with_vector(draft("a", 0, Source::Note), vec![], v.clone());
    })
    .unwrap();
    assert_eq!(item_vectors(&store).precision(), Precision::F32);

    // A setting this build cannot read is an error, not a guess.
    let path = dir.path().join("unknown");
    let store = Store::create(&path, Options::default()).unwrap();
    run(&store, |b| {
        b.set_setting(catalog::KEY_ITEM_VECTORS, "f12".into());
    })
    .unwrap();
    let err = run(&store, |b| {
        b.put_with_vector(draft("a", 0, Source::Note), vec![], v.clone());
    })
    .unwrap_err();
    assert!(err.to_string().contains("unknown precision `f12`"), "{err}");
}
