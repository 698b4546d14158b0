//! Through `store.query`, the library path applications use: for random filters, `ITEMS`
//! returns exactly the items an independent check over all items accepts, and a filtered
//! `RECALL` returns exactly min(TOP, matches) rows, all of them matching — the filters are
//! applied during the scans, never after a top-k cut.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;

use memdb::{
    Embedder, EventTime, Item, ItemDraft, ItemFields, Options, ScanFilter, Source, Store,
    graph::GraphOptions, item::GeoPoint, item::Location, vectors::ITEM_VECTORS,
};
use memdb_query::{QueryContext, Rows, StoreQuery};
use proptest::prelude::*;

/// Bag of words hashed into 32 dimensions: deterministic, no model needed.
struct HashEmbedder;

impl Embedder for HashEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = [0f32; 32];
                for w in t.split_whitespace() {
                    let h = w.to_lowercase().bytes().fold(2166136261u32, |h, b| {
                        (h ^ u32::from(b)).wrapping_mul(16777619)
                    });
                    v[(h % 32) as usize] += 1.0;
                }
                v[31] += 0.01;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

const WORDS: [&str; 8] = [
    "lisbon", "hotel", "dinner", "train", "beach", "museum", "rain", "gift",
];
const TAGS: [&str; 3] = ["travel", "family", "work"];
const PLACES: [(f64, f64); 3] = [(38.72, -9.14), (41.15, -8.61), (48.86, 2.35)];

fn build(seed: u64) -> (tempfile::TempDir, Store, Vec<Item>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut batch = store.batch();
    let mut x = seed | 1;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for i in 0..80 {
        let source = Source::ALL[next(5) as usize];
        let day = 1 + next(28);
        let time = EventTime::parse(&format!("2024-03-{day:02}T{:02}:00:00Z", next(24))).unwrap();
        let mut f = ItemFields::new(source, time);
        f.external_id = Some(format!("i{i}"));
        f.body = Some(format!(
            "{} {} {}",
            WORDS[next(8) as usize],
            WORDS[next(8) as usize],
            WORDS[next(8) as usize]
        ));
        f.tags = vec![TAGS[next(3) as usize].to_owned()];
        f.entities = vec![["Ana", "Rui", "Mila"][next(3) as usize].to_owned()];
        if next(3) > 0 {
            let (lat, lon) = PLACES[next(3) as usize];
            f.location = Some(Location {
                name: None,
                geo: Some(GeoPoint { lat, lon }),
                place: None,
            });
        }
        batch.put(ItemDraft {
            fields: f,
            supersedes: None,
        });
    }
    let receipt = batch.commit().unwrap();
    let items = store
        .snapshot()
        .unwrap()
        .scan(&ScanFilter::default())
        .unwrap();
    let mut batch = store.batch();
    for put in &receipt.puts {
        let item = items.iter().find(|i| i.id == put.id).unwrap();
        let v = HashEmbedder
            .embed(&[item.fields.body.as_deref().unwrap()])
            .unwrap()
            .remove(0);
        batch.put_vector(
            ITEM_VECTORS,
            item.id,
            item.fields.time.unix_ms,
            item.fields.source.code(),
            v,
        );
    }
    batch.commit().unwrap();
    store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    (dir, store, items)
}

#[derive(Debug, Clone)]
enum F {
    Source(Vec<Source>),
    Days(u8, u8),
    Tag(usize),
    Entity(usize),
    Near(usize, u32),
}

impl F {
    fn text(&self) -> String {
        match self {
            F::Source(s) if s.len() == 1 => format!("source = {}", s[0]),
            F::Source(s) => format!(
                "source IN ({})",
                s.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
            ),
            F::Days(a, b) => format!("time BETWEEN 2024-03-{a:02} AND 2024-03-{b:02}"),
            F::Tag(t) => format!("tag = '{}'", TAGS[*t].to_uppercase()),
            F::Entity(e) => format!("entity = '{}'", ["ana", "RUI", "Mila"][*e]),
            F::Near(p, km) => format!("NEAR({}, {}, {km}km)", PLACES[*p].0, PLACES[*p].1),
        }
    }

    /// The filter's meaning, checked independently of the planner.
    fn accepts(&self, item: &Item) -> bool {
        let f = &item.fields;
        match self {
            F::Source(s) => s.contains(&f.source),
            F::Days(a, b) => {
                let day = &f.time.to_rfc3339()[8..10];
                let day: u8 = day.parse().unwrap();
                *a <= day && day <= *b
            }
            F::Tag(t) => f.tags.contains(&TAGS[*t].to_owned()),
            F::Entity(e) => f.entities.contains(&["Ana", "Rui", "Mila"][*e].to_owned()),
            // The three places lie hundreds of km apart: any radius under 250 km keeps one.
            F::Near(p, _) => f
                .location
                .as_ref()
                .and_then(|l| l.geo)
                .is_some_and(|g| (g.lat, g.lon) == PLACES[*p]),
        }
    }
}

fn filter() -> impl Strategy<Value = F> {
    prop_oneof![
        prop::collection::vec(prop::sample::select(Source::ALL.to_vec()), 1..3).prop_map(F::Source),
        (1u8..=28, 0u8..10).prop_map(|(a, len)| F::Days(a, (a + len).min(28))),
        (0usize..3).prop_map(F::Tag),
        (0usize..3).prop_map(F::Entity),
        (0usize..3, 1u32..250).prop_map(|(p, km)| F::Near(p, km)),
    ]
}

fn ids(rows: &Rows) -> Vec<u64> {
    match rows {
        Rows::Items(rows) => rows.iter().map(|r| r.item.id).collect(),
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn filtered_queries_equal_filter_then_rank(
        seed in any::<u64>(),
        filters in prop::collection::vec(filter(), 1..4),
        top in 1u64..15,
    ) {
        let (_dir, store, items) = build(seed);
        let ctx = QueryContext { embedder: Some(&HashEmbedder), ..QueryContext::default() };
        let clause: Vec<String> = filters.iter().map(F::text).collect();
        let clause = clause.join(" AND ");
        let want: Vec<u64> = items
            .iter()
            .filter(|i| filters.iter().all(|f| f.accepts(i)))
            .map(|i| i.id)
            .collect();

        let all = store.query(&format!("ITEMS WHERE {clause}"), &ctx).unwrap();
        prop_assert_eq!(ids(&all.rows), want.clone(), "ITEMS WHERE {}", clause);

        let newest = store
            .query(&format!("ITEMS WHERE {clause} ORDER BY time DESC TOP {top}"), &ctx)
            .unwrap();
        let mut expect: Vec<u64> = want.iter().rev().copied().collect();
        expect.truncate(top as usize);
        prop_assert_eq!(ids(&newest.rows), expect);

        let recalled = store
            .query(&format!("RECALL 'hotel dinner in lisbon' WHERE {clause} TOP {top}"), &ctx)
            .unwrap();
        let got = ids(&recalled.rows);
        let allowed: BTreeSet<u64> = want.iter().copied().collect();
        prop_assert_eq!(got.len(), want.len().min(top as usize), "RECALL WHERE {}", clause);
        prop_assert!(got.iter().all(|id| allowed.contains(id)), "RECALL WHERE {}: {:?}", clause, got);
    }
}
