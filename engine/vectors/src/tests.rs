//! Tests of the flat index through its public surface: filtered top-k against a brute-force
//! model (filter every row, score every row, sort), batched against the same model, block bytes
//! round trips, and typed errors on bad input.

use proptest::prelude::*;
use roaring::RoaringBitmap;

use crate::kernels::{F16, dot_f16, dot_f32, dot_i8, encode_f16, quantize_i8, score_i8};
use crate::topk::Scored;
use crate::{
    Filter, FlatIndex, FlatIndexWriter, FlatView, Hit, Precision, VectorError, VectorIndex,
};

/// One generated database row.
#[derive(Clone, Debug)]
struct Row {
    vector: Vec<f32>,
    time: i64,
    source: u8,
}

/// Values drawn partly from a tiny set, so that many rows tie exactly.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        prop::sample::select(vec![-1.0f32, -0.5, 0.0, 0.5, 1.0]),
        -1.0f32..1.0,
    ]
}

fn precision() -> impl Strategy<Value = Precision> {
    prop::sample::select(vec![
        Precision::F32,
        Precision::F16,
        Precision::I8,
        Precision::I4,
    ])
}

#[derive(Clone, Debug)]
struct Case {
    precision: Precision,
    dim: usize,
    rows: Vec<Row>,
    queries: Vec<Vec<f32>>,
    deleted: Vec<u32>,
    allow: Option<Vec<u32>>,
    time: Option<(i64, i64)>,
    sources: Option<Vec<u8>>,
    k: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        precision(),
        prop_oneof![1usize..12, Just(383), Just(384), Just(385)],
        0usize..120,
    )
        .prop_flat_map(|(precision, dim, n)| {
            let n_rows = n as u32 + 5;
            (
                Just(precision),
                Just(dim),
                prop::collection::vec(
                    (prop::collection::vec(value(), dim), 0i64..50, 0u8..4).prop_map(
                        |(vector, time, source)| Row {
                            vector,
                            time,
                            source,
                        },
                    ),
                    n,
                ),
                prop::collection::vec(prop::collection::vec(value(), dim), 1..6),
                prop::collection::vec(0u32..n_rows, 0..20),
                prop::option::of(prop::collection::vec(0u32..n_rows, 0..60)),
                prop::option::of((0i64..50, 0i64..60)),
                prop::option::of(prop::collection::vec(0u8..6, 0..3)),
                0usize..30,
            )
        })
        .prop_map(
            |(precision, dim, rows, queries, deleted, allow, time, sources, k)| Case {
                precision,
                dim,
                rows,
                queries,
                deleted,
                allow,
                time,
                sources,
                k,
            },
        )
}

fn build(c: &Case) -> FlatIndex {
    let mut w = FlatIndexWriter::new(c.precision, c.dim).unwrap();
    for (i, r) in c.rows.iter().enumerate() {
        let row = w
            .push(1000 + i as u64, r.time, r.source, &r.vector)
            .unwrap();
        assert_eq!(row as usize, i);
    }
    let mut index = w.finish().unwrap();
    for &d in &c.deleted {
        index.delete_row(d);
    }
    index
}

fn filter(c: &Case) -> Filter {
    let mut f = Filter::new();
    if let Some(allow) = &c.allow {
        f = f.with_rows(allow.iter().copied().collect());
    }
    if let Some((start, end)) = c.time {
        f = f.with_time(start..end);
    }
    if let Some(sources) = &c.sources {
        for &s in sources {
            f = f.with_source(s);
        }
        if sources.is_empty() {
            // An empty source list is expressed as a source no row has.
            f = f.with_source(255);
        }
    }
    f
}

fn matches(c: &Case, deleted: &RoaringBitmap, row: usize) -> bool {
    let r = &c.rows[row];
    !deleted.contains(row as u32)
        && c.allow.as_ref().is_none_or(|a| a.contains(&(row as u32)))
        && c.time.is_none_or(|(s, e)| (s..e).contains(&r.time))
        && c.sources.as_ref().is_none_or(|s| s.contains(&r.source))
}

/// Score of `row` for `query` as the single-query scan computes it, independently of the index
/// (re-encoding both vectors).
fn model_score(precision: Precision, query: &[f32], row: &[f32]) -> f32 {
    let n = query.len();
    match precision {
        Precision::F32 => dot_f32(query, row),
        Precision::F16 => {
            let (mut q, mut r) = (vec![F16::ZERO; n], vec![F16::ZERO; n]);
            encode_f16(query, &mut q);
            encode_f16(row, &mut r);
            dot_f16(&q, &r)
        }
        Precision::I8 => {
            let (mut q, mut r) = (vec![0i8; n], vec![0i8; n]);
            let sq = quantize_i8(query, &mut q);
            let sr = quantize_i8(row, &mut r);
            score_i8(dot_i8(&q, &r), sq, sr)
        }
        Precision::I4 => {
            let mut packed = vec![0u8; crate::i4::packed_len(n)];
            let sr = crate::i4::quantize_i4(row, &mut packed);
            crate::i4::I4Query::new(query).score(&packed, sr)
        }
    }
}

/// The exact (f64) dot product of `query` and `row` as stored at `precision` (f16 rounding
/// applied; i8 is exact already and not asked here), and a bound on an f32 sum's rounding error
/// in any order: relative to `Σ |q_i·x_i|`.
fn exact_score(precision: Precision, query: &[f32], row: &[f32]) -> (f64, f64) {
    let stored = |v: &[f32]| -> Vec<f64> {
        match precision {
            Precision::F16 => v
                .iter()
                .map(|&x| f64::from(half::f16::from_f32(x).to_f32()))
                .collect(),
            _ => v.iter().map(|&x| f64::from(x)).collect(),
        }
    };
    let (q, r) = (stored(query), stored(row));
    let products = q.iter().zip(&r).map(|(a, b)| a * b);
    let magnitude: f64 = products.clone().map(f64::abs).sum();
    (products.sum(), 1e-5 * magnitude + 1e-6)
}

/// Filter every row, score every match, sort by (score desc, row asc), keep k.
fn brute_force(c: &Case, deleted: &RoaringBitmap, query: &[f32]) -> Vec<(u32, u32)> {
    let mut all: Vec<Scored> = (0..c.rows.len())
        .filter(|&row| matches(c, deleted, row))
        .map(|row| Scored {
            score: model_score(c.precision, query, &c.rows[row].vector),
            row: row as u32,
        })
        .collect();
    all.sort_by(|a, b| b.cmp(a));
    all.truncate(c.k);
    all.iter().map(|s| (s.row, s.score.to_bits())).collect()
}

/// An f32 or f16 batched result, whose sums run in the matrix product's order: as many hits as
/// rows match (up to k), ordered by their scores (ties by row), each a matching row scored within
/// the rounding bound of its exact score, and no row left out that beats a kept one by more than
/// the two rows' bounds.
fn check_near_top_k(
    c: &Case,
    deleted: &RoaringBitmap,
    query: &[f32],
    hits: &[Hit],
) -> Result<(), TestCaseError> {
    let matching: Vec<usize> = (0..c.rows.len())
        .filter(|&row| matches(c, deleted, row))
        .collect();
    prop_assert_eq!(hits.len(), c.k.min(matching.len()));
    let order: Vec<Scored> = hits
        .iter()
        .map(|h| Scored {
            score: h.score,
            row: h.row,
        })
        .collect();
    prop_assert!(
        order.windows(2).all(|w| w[0] > w[1]),
        "hits out of order: {:?}",
        hits
    );
    let exact = |row: usize| exact_score(c.precision, query, &c.rows[row].vector);
    let mut weakest_kept = f64::INFINITY;
    for h in hits {
        let row = h.row as usize;
        prop_assert!(matching.contains(&row), "row {} does not match", row);
        let (want, bound) = exact(row);
        prop_assert!(
            (f64::from(h.score) - want).abs() <= bound,
            "row {row}: {} vs {want}",
            h.score
        );
        // Any kept row's exact score is at most this much above its computed one.
        weakest_kept = weakest_kept.min(want + bound);
    }
    for &row in &matching {
        if hits.iter().all(|h| h.row as usize != row) {
            let (want, bound) = exact(row);
            // It scored no higher than every kept row: exact ≤ computed + bound ≤ kept's
            // computed + bound ≤ kept's exact + both bounds.
            prop_assert!(
                want <= weakest_kept + bound,
                "row {row} ({want}) left out, weakest kept {weakest_kept}"
            );
        }
    }
    Ok(())
}

fn summary(hits: &[Hit]) -> Vec<(u32, u32)> {
    hits.iter().map(|h| (h.row, h.score.to_bits())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn filtered_top_k_equals_brute_force(c in case()) {
        let index = build(&c);
        let f = filter(&c);
        let matching = (0..c.rows.len()).filter(|&r| matches(&c, index.deleted(), r)).count();
        for query in &c.queries {
            let hits = index.search(query, c.k, &f).unwrap();
            prop_assert_eq!(hits.len(), c.k.min(matching));
            prop_assert_eq!(summary(&hits), brute_force(&c, index.deleted(), query));
            for h in &hits {
                prop_assert_eq!(h.id, 1000 + u64::from(h.row));
            }
        }
    }

    #[test]
    fn batched_top_k_equals_brute_force(c in case(), threads in 1usize..4) {
        let index = build(&c);
        let f = filter(&c);
        let flat: Vec<f32> = c.queries.concat();
        let batch = index.search_batch(&flat, c.k, &f, threads).unwrap();
        prop_assert_eq!(batch.len(), c.queries.len());
        for (query, hits) in c.queries.iter().zip(&batch) {
            if c.precision.scaled() {
                // The matrix product sums exact integers (i4 blocks are scored by the single
                // scan's kernel): i8 and i4 scores equal the single scan's.
                prop_assert_eq!(summary(hits), brute_force(&c, index.deleted(), query));
            } else {
                check_near_top_k(&c, index.deleted(), query, hits)?;
            }
        }
    }

    #[test]
    fn block_bytes_round_trip(c in case()) {
        let index = build(&c);
        let copy = FlatIndex::from_bytes(index.as_bytes()).unwrap();
        prop_assert_eq!(copy.as_bytes(), index.as_bytes());
        let view = FlatView::from_bytes(index.as_bytes()).unwrap();
        let no_deletes = RoaringBitmap::new();
        for query in &c.queries {
            let a = view.search(&no_deletes, query, c.k, &Filter::new()).unwrap();
            let b = copy.search(query, c.k, &Filter::new()).unwrap();
            prop_assert_eq!(summary(&a), summary(&b));
        }
        for row in 0..c.rows.len() as u32 {
            prop_assert_eq!(view.id(row), Some(1000 + u64::from(row)));
            prop_assert_eq!(view.time(row), Some(c.rows[row as usize].time));
            prop_assert_eq!(view.source(row), Some(c.rows[row as usize].source));
        }
    }
}

/// i8 batches score exactly as single searches do on every path: the packed kernel (or the
/// widened product) below 1,040 dimensions, the integer kernel pair by pair above; unfiltered
/// (rows used in place) and filtered (rows gathered).
#[test]
fn i8_batches_equal_single_searches_at_every_dimension() {
    let mut next = unit_values(0x2545_f491_4f6c_dd1du64);
    for dim in [5, 384, 1100] {
        let rows: Vec<Vec<f32>> = (0..700)
            .map(|_| (0..dim).map(|_| next()).collect())
            .collect();
        let queries: Vec<f32> = (0..20 * dim).map(|_| next()).collect();
        let mut w = FlatIndexWriter::new(Precision::I8, dim).unwrap();
        for (i, r) in rows.iter().enumerate() {
            w.push(i as u64, (i % 100) as i64, (i % 3) as u8, r)
                .unwrap();
        }
        let index = w.finish().unwrap();
        for f in [Filter::new(), Filter::new().with_source(2)] {
            let batch = index.search_batch(&queries, 7, &f, 2).unwrap();
            for (qi, hits) in batch.iter().enumerate() {
                let single = index
                    .search(&queries[qi * dim..(qi + 1) * dim], 7, &f)
                    .unwrap();
                assert_eq!(summary(hits), summary(&single), "dim {dim}, query {qi}");
            }
        }
    }
}

#[test]
fn large_batch_crosses_blocks_and_tiles() {
    // More rows than one row block and more queries than one query tile, with a filter.
    let dim = 48;
    let mut next = unit_values(0x9e37_79b9_7f4a_7c15u64);
    let rows: Vec<Vec<f32>> = (0..3000)
        .map(|_| (0..dim).map(|_| next()).collect())
        .collect();
    let queries: Vec<f32> = (0..300 * dim).map(|_| next()).collect();
    for precision in [Precision::F32, Precision::F16, Precision::I8, Precision::I4] {
        let mut w = FlatIndexWriter::new(precision, dim).unwrap();
        for (i, r) in rows.iter().enumerate() {
            w.push(i as u64, (i % 100) as i64, (i % 3) as u8, r)
                .unwrap();
        }
        let mut index = w.finish().unwrap();
        index.delete_row(7);
        let f = Filter::new().with_time(10..90).with_source(1);
        let batch = index.search_batch(&queries, 10, &f, 2).unwrap();
        for (qi, hits) in batch.iter().enumerate() {
            let single = index
                .search(&queries[qi * dim..(qi + 1) * dim], 10, &f)
                .unwrap();
            assert_eq!(hits.len(), 10);
            for (b, s) in hits.iter().zip(&single) {
                // Batched and single kernels round differently; scores agree closely.
                assert!(
                    (b.score - s.score).abs() < 1e-4,
                    "{precision} q{qi}: {b:?} vs {s:?}"
                );
                assert!(f.columns_match(b.row as i64 % 100, (b.row % 3) as u8) && b.row != 7);
            }
        }
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let mut w = FlatIndexWriter::new(Precision::F32, 3).unwrap();
    assert_eq!(
        w.push(1, 0, 0, &[1.0, 2.0]),
        Err(VectorError::DimensionMismatch {
            what: "vector",
            expected: 3,
            found: 2
        })
    );
    assert_eq!(
        w.push(1, 0, 0, &[1.0, f32::NAN, 0.0]),
        Err(VectorError::NonFinite {
            what: "vector",
            index: 0,
            position: 1
        })
    );
    w.push(1, 0, 0, &[1.0, 0.0, 0.0]).unwrap();
    let mut index = w.finish().unwrap();
    assert!(matches!(
        index.search(&[1.0], 1, &Filter::new()),
        Err(VectorError::DimensionMismatch { what: "query", .. })
    ));
    assert!(matches!(
        index.search_batch(&[1.0, 0.0, 0.0, 1.0], 1, &Filter::new(), 1),
        Err(VectorError::DimensionMismatch {
            what: "query batch",
            ..
        })
    ));
    assert!(matches!(
        index.search(&[f32::INFINITY, 0.0, 0.0], 1, &Filter::new()),
        Err(VectorError::NonFinite { what: "query", .. })
    ));
    assert!(matches!(
        FlatIndexWriter::new(Precision::I8, 0),
        Err(VectorError::BadDimension { .. })
    ));
    assert!(!index.delete_row(1), "row 1 does not exist");
    assert!(index.delete_row(0));
    assert!(!index.delete_row(0), "already deleted");
    assert!(
        index
            .search(&[1.0, 0.0, 0.0], 5, &Filter::new())
            .unwrap()
            .is_empty()
    );
    assert!(
        index
            .search_batch(&[], 5, &Filter::new(), 0)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn empty_index_and_zero_k() {
    let index = FlatIndexWriter::new(Precision::I8, 4)
        .unwrap()
        .finish()
        .unwrap();
    assert!(
        index
            .search(&[0.0; 4], 3, &Filter::new())
            .unwrap()
            .is_empty()
    );
    let mut w = FlatIndexWriter::new(Precision::F16, 4).unwrap();
    w.push(9, 0, 0, &[1.0; 4]).unwrap();
    let index = w.finish().unwrap();
    assert!(
        index
            .search(&[1.0; 4], 0, &Filter::new())
            .unwrap()
            .is_empty()
    );
    let hits = index.search(&[1.0; 4], 3, &Filter::new()).unwrap();
    assert_eq!(
        hits,
        [Hit {
            row: 0,
            id: 9,
            score: 4.0
        }]
    );
}

/// A seeded xorshift64 stream for tests: the same values on every machine.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Values in −1..=1, in steps of 0.001, from [`xorshift`]`(seed)`.
pub(crate) fn unit_values(seed: u64) -> impl FnMut() -> f32 {
    let mut next = xorshift(seed);
    move || (next() % 2001) as f32 / 1000.0 - 1.0
}
