//! Tests of the approximate index ([`HnswIndex`]) and of the refined flat index
//! ([`RefinedFlatIndex`]) through their public surface: recall on a small lowrank set, filtered
//! and deleted rows against a filter-then-rank model, the persisted form under truncation, bit
//! flips and random bytes, and round trips.

use memdb_formats::FormatError;
use proptest::prelude::*;
use roaring::RoaringBitmap;

use super::default_ef;
use crate::kernels::dot_f32;
use crate::{
    Filter, FlatIndex, FlatIndexWriter, Hit, HnswIndex, HnswParams, Precision, RefinedFlatIndex,
    Route, Traversal, VectorError, VectorIndex,
};

/// splitmix64 + Box–Muller, as the bench's generator (seeded, machine-independent).
struct Rng(u64, Option<f64>);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        if let Some(s) = self.1.take() {
            return s;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let t = std::f64::consts::TAU * v;
        self.1 = Some(r * t.sin());
        r * t.cos()
    }
}

/// `rows + queries` lowrank vectors (shared/reference/vectors/README.md): normalise(z·B +
/// 0.25·g/√dim), z ~ N(0, I_rank), B a fixed Gaussian rank × dim matrix / √rank.
pub(crate) fn lowrank(seed: u64, dim: usize, rank: usize, count: usize) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed, None);
    let scale = 1.0 / (rank as f64).sqrt();
    let basis: Vec<f64> = (0..rank * dim).map(|_| rng.normal() * scale).collect();
    let noise = 0.25 / (dim as f64).sqrt();
    (0..count)
        .map(|_| {
            let mut x = vec![0.0f64; dim];
            for r in 0..rank {
                let z = rng.normal();
                for (v, b) in x.iter_mut().zip(&basis[r * dim..(r + 1) * dim]) {
                    *v += z * b;
                }
            }
            for v in x.iter_mut() {
                *v += noise * rng.normal();
            }
            let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            x.iter().map(|v| (v / norm) as f32).collect()
        })
        .collect()
}

/// An f32 flat index of `vectors`; row r has id 1000 + r, time r, source r % 4.
fn flat(vectors: &[Vec<f32>], dim: usize) -> FlatIndex {
    let mut w = FlatIndexWriter::new(Precision::F32, dim).unwrap();
    for (r, v) in vectors.iter().enumerate() {
        w.push(1000 + r as u64, r as i64, (r % 4) as u8, v).unwrap();
    }
    w.finish().unwrap()
}

fn params(threads: usize) -> HnswParams {
    HnswParams {
        threads,
        ..HnswParams::default()
    }
}

/// Filter-then-rank model: every allowed row scored exactly with the f32 kernel, best first,
/// ties by ascending row.
fn model(
    vectors: &[Vec<f32>],
    query: &[f32],
    k: usize,
    allowed: impl Fn(usize) -> bool,
) -> Vec<u32> {
    let mut scored: Vec<(f32, u32)> = vectors
        .iter()
        .enumerate()
        .filter(|(r, _)| allowed(*r))
        .map(|(r, v)| (dot_f32(query, v), r as u32))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, r)| r).collect()
}

fn rows(hits: &[Hit]) -> Vec<u32> {
    hits.iter().map(|h| h.row).collect()
}

fn recall(truth: &[Vec<u32>], got: &[Vec<u32>]) -> f64 {
    let found: usize = truth
        .iter()
        .zip(got)
        .map(|(t, g)| g.iter().filter(|r| t.contains(r)).count())
        .sum();
    found as f64 / truth.iter().map(Vec::len).sum::<usize>() as f64
}

#[test]
fn recall_on_lowrank_is_at_least_095() {
    let (dim, n, q) = (384, 5_000, 200);
    let all = lowrank(42, dim, 32, n + q);
    let (data, queries) = all.split_at(n);
    let index = HnswIndex::build(flat(data, dim), params(2)).unwrap();
    let filter = Filter::new();
    let mut truth = Vec::new();
    let mut got = Vec::new();
    for query in queries {
        truth.push(model(data, query, 10, |_| true));
        let ef = index.params().ef_search;
        got.push(rows(
            &index
                .search_with(query, 10, &filter, ef, Route::Graph)
                .unwrap(),
        ));
    }
    let r = recall(&truth, &got);
    assert!(r >= 0.95, "recall@10 {r}");
    // A narrow beam finds fewer true neighbours: the walk, not a fallback, produced the hits.
    let narrow: Vec<Vec<u32>> = queries
        .iter()
        .map(|query| {
            rows(
                &index
                    .search_with(query, 10, &filter, 10, Route::Graph)
                    .unwrap(),
            )
        })
        .collect();
    assert!(recall(&truth, &narrow) < r, "ef 10 should lose recall");
}

#[test]
fn one_thread_builds_are_reproducible() {
    let dim = 32;
    let data = lowrank(3, dim, 8, 1_500);
    let a = HnswIndex::build(flat(&data, dim), params(1)).unwrap();
    let b = HnswIndex::build(flat(&data, dim), params(1)).unwrap();
    assert_eq!(a.to_bytes(), b.to_bytes());
}

#[test]
fn selective_filter_falls_back_to_the_exact_scan() {
    let dim = 64;
    let all = lowrank(11, dim, 16, 6_050);
    let (data, queries) = all.split_at(6_000);
    let mut index = HnswIndex::build(flat(data, dim), params(2)).unwrap();
    for row in (0..6_000).step_by(7) {
        index.delete_row(row);
    }
    // 1 % of the rows through an allow-list, and a time window of 2 % with one source in four.
    let allowed: RoaringBitmap = (0..6_000u32).step_by(100).collect();
    let filters = [
        Filter::new().with_rows(allowed.clone()),
        Filter::new().with_time(1_000..1_120).with_source(2),
    ];
    for filter in &filters {
        for query in queries {
            let got = index.search(query, 10, filter).unwrap();
            let want = model(data, query, 10, |r| {
                r % 7 != 0
                    && match filter {
                        f if f == &filters[0] => allowed.contains(r as u32),
                        _ => (1_000..1_120).contains(&r) && r % 4 == 2,
                    }
            });
            assert_eq!(rows(&got), want);
            let flat_hits = index.flat().search(query, 10, filter).unwrap();
            assert_eq!(got, flat_hits, "auto route must equal the flat scan");
        }
    }
}

#[test]
fn unselective_filter_walks_the_graph_and_keeps_recall() {
    let dim = 64;
    let all = lowrank(12, dim, 16, 6_100);
    let (data, queries) = all.split_at(6_000);
    let mut index = HnswIndex::build(flat(data, dim), params(2)).unwrap();
    for row in (0..6_000).step_by(5) {
        index.delete_row(row);
    }
    let filter = Filter::new().with_source(1).with_source(3);
    let mut truth = Vec::new();
    let mut got = Vec::new();
    for query in queries {
        let hits = index
            .search_with(query, 10, &filter, 64, Route::Graph)
            .unwrap();
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|h| h.row % 5 != 0 && h.row % 2 == 1));
        truth.push(model(data, query, 10, |r| r % 5 != 0 && r % 2 == 1));
        got.push(rows(&hits));
    }
    assert!(recall(&truth, &got) >= 0.9, "{}", recall(&truth, &got));
}

#[derive(Clone, Debug)]
struct Case {
    dim: usize,
    vectors: Vec<Vec<f32>>,
    query: Vec<f32>,
    deleted: Vec<u32>,
    allow: Option<Vec<u32>>,
    time: Option<(i64, i64)>,
    source: Option<u8>,
    k: usize,
    route: Route,
    traversal: Traversal,
}

fn case() -> impl Strategy<Value = Case> {
    (2usize..12, 0usize..300).prop_flat_map(|(dim, n)| {
        let bound = n as u32 + 3;
        (
            Just(dim),
            prop::collection::vec(prop::collection::vec(-1.0f32..1.0, dim), n),
            prop::collection::vec(-1.0f32..1.0, dim),
            prop::collection::vec(0..bound, 0..80),
            prop::option::of(prop::collection::vec(0..bound, 0..200)),
            prop::option::of((0i64..300, 0i64..300)),
            prop::option::of(0u8..5),
            0usize..25,
            prop::sample::select(vec![Route::Auto, Route::Graph]),
            prop::sample::select(vec![Traversal::I8, Traversal::F16, Traversal::F32]),
        )
            .prop_map(
                |(dim, vectors, query, deleted, allow, time, source, k, route, traversal)| Case {
                    dim,
                    vectors,
                    query,
                    deleted,
                    allow,
                    time,
                    source,
                    k,
                    route,
                    traversal,
                },
            )
    })
}

fn case_filter(c: &Case) -> Filter {
    let mut f = Filter::new();
    if let Some(allow) = &c.allow {
        f = f.with_rows(allow.iter().copied().collect());
    }
    if let Some((a, b)) = c.time {
        f = f.with_time(a..b);
    }
    if let Some(s) = c.source {
        f = f.with_source(s);
    }
    f
}

fn case_matches(c: &Case, row: usize) -> bool {
    !c.deleted.contains(&(row as u32))
        && c.allow.as_ref().is_none_or(|a| a.contains(&(row as u32)))
        && c.time.is_none_or(|(a, b)| (a..b).contains(&(row as i64)))
        && c.source.is_none_or(|s| (row % 4) as u8 == s)
}

#[test]
fn default_ef_doubles_per_tenfold_rows_above_100k() {
    assert_eq!(default_ef(128, 10), 128);
    assert_eq!(default_ef(128, 100_000), 128);
    assert_eq!(default_ef(128, 1_000_000), 256);
    assert_eq!(default_ef(128, 10_000_000), 512);
    let efs: Vec<usize> = (1..=40).map(|i| default_ef(128, i * 50_000)).collect();
    assert!(efs.windows(2).all(|w| w[0] <= w[1]), "{efs:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn filtered_search_returns_exactly_min_k_matches(c in case()) {
        let mut index = HnswIndex::build(
            flat(&c.vectors, c.dim),
            HnswParams { m: 4, ef_construction: 16, ef_search: 8, traversal: c.traversal, threads: 1, ..HnswParams::default() },
        ).unwrap();
        for &row in &c.deleted {
            index.delete_row(row);
        }
        let filter = case_filter(&c);
        let matches = (0..c.vectors.len()).filter(|&r| case_matches(&c, r)).count();
        let hits = index.search_with(&c.query, c.k, &filter, 8, c.route).unwrap();
        prop_assert_eq!(hits.len(), c.k.min(matches));
        let mut seen = RoaringBitmap::new();
        for h in &hits {
            prop_assert!(case_matches(&c, h.row as usize), "row {} does not match", h.row);
            prop_assert!(seen.insert(h.row), "row {} twice", h.row);
            prop_assert_eq!(h.id, 1000 + u64::from(h.row));
            prop_assert_eq!(h.score.to_bits(), dot_f32(&c.query, &c.vectors[h.row as usize]).to_bits());
        }
        prop_assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        // The persisted form answers the same.
        let loaded = HnswIndex::from_bytes(&index.to_bytes()).unwrap();
        prop_assert_eq!(loaded.search_with(&c.query, c.k, &filter, 8, c.route).unwrap(), hits);
    }

    #[test]
    fn exact_search_through_i8_bounds_equals_the_f32_scan(mut c in case(), spread in any::<bool>()) {
        if spread {
            // Row norms from 0.001 to 1000: the bound must hold at every scale.
            for (r, v) in c.vectors.iter_mut().enumerate() {
                let m = 10f32.powi((r % 7) as i32 - 3);
                v.iter_mut().for_each(|x| *x *= m);
            }
        }
        let n = c.vectors.len();
        // Near-duplicates that i8 cannot tell apart (the bound's slack is all that separates
        // them), and exact ties, so the order by row is tested too.
        for r in (1..n).step_by(3) {
            let nudge = c.vectors[(r + 1) % n].clone();
            c.vectors[r] = c.vectors[r - 1].iter().zip(nudge).map(|(v, d)| v + 0.002 * d).collect();
        }
        for r in (5..n).step_by(5) {
            c.vectors[r] = c.vectors[r / 5].clone();
        }
        let mut exact = flat(&c.vectors, c.dim);
        for &row in &c.deleted {
            exact.delete_row(row);
        }
        let refined = RefinedFlatIndex::build(exact.clone(), Precision::I8, 1).unwrap();
        let filter = case_filter(&c);
        let want = exact.search(&c.query, c.k, &filter).unwrap();
        let got = refined.search_exact(&c.query, c.k, &filter).unwrap();
        let bits = |hits: &[Hit]| hits.iter().map(|h| (h.row, h.id, h.score.to_bits())).collect::<Vec<_>>();
        prop_assert_eq!(bits(&got), bits(&want));
        let batch = refined.search_exact_batch(&c.query, c.k, &filter, 2).unwrap();
        prop_assert_eq!(bits(&batch[0]), bits(&want));
    }

    #[test]
    fn refined_search_equals_exact_when_it_keeps_every_row(c in case()) {
        let mut exact = flat(&c.vectors, c.dim);
        for &row in &c.deleted {
            exact.delete_row(row);
        }
        let factor = c.vectors.len().max(1);
        let refined = RefinedFlatIndex::build(exact.clone(), Precision::I8, factor).unwrap();
        let filter = case_filter(&c);
        let got = refined.search(&c.query, c.k, &filter).unwrap();
        let want = exact.search(&c.query, c.k, &filter).unwrap();
        prop_assert_eq!(&got, &want);
        let batch = refined.search_batch(&c.query, c.k, &filter, 2).unwrap();
        prop_assert_eq!(&batch[0], &want);
        // A small factor still returns exactly min(k, matches) allowed rows.
        let small = RefinedFlatIndex::build(exact, Precision::I8, 1).unwrap();
        let matches = (0..c.vectors.len()).filter(|&r| case_matches(&c, r)).count();
        let hits = small.search(&c.query, c.k, &filter).unwrap();
        prop_assert_eq!(hits.len(), c.k.min(matches));
        prop_assert!(hits.iter().all(|h| case_matches(&c, h.row as usize)));
    }

    #[test]
    fn from_bytes_never_panics_on_mutated_bytes(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        fix_checksum in any::<bool>(),
    ) {
        let bytes = small_index_bytes();
        let mut b = bytes.clone();
        for (at, value) in &edits {
            let i = at.index(b.len());
            b[i] = *value;
        }
        if fix_checksum {
            // Re-seal the edited body so the structural checks, not the checksum, must catch it.
            let body = b.len() - 4;
            let sum = memdb_formats::crc32c(&b[..body]);
            b[body..].copy_from_slice(&sum.to_le_bytes());
        }
        match HnswIndex::from_bytes(&b) {
            Ok(index) => {
                // Only bytes re-sealed with a fresh checksum (or edits that changed nothing) can
                // load; whatever loads must be searchable without panics.
                prop_assert!(fix_checksum || b == bytes);
                let dim = index.flat().view().unwrap().dim();
                let q = vec![0.5f32; dim];
                let _ = index.search(&q, 5, &Filter::new());
                let _ = index.search_with(&q, 5, &Filter::new().with_time(0..60), 16, Route::Graph);
            }
            Err(_) => prop_assert!(b != bytes),
        }
        let cut = cut.index(bytes.len());
        prop_assert!(HnswIndex::from_bytes(&bytes[..cut]).is_err());
    }

    #[test]
    fn random_bytes_are_rejected(bytes in prop::collection::vec(any::<u8>(), 0..400), magic in any::<bool>()) {
        let mut b = bytes;
        if magic && b.len() >= 10 {
            b[..8].copy_from_slice(b"MDBHNSW\x00");
            b[8..10].copy_from_slice(&1u16.to_le_bytes());
        }
        prop_assert!(HnswIndex::from_bytes(&b).is_err());
    }
}

/// A persisted index of 120 rows of dimension 6 with a few deleted rows.
fn small_index_bytes() -> Vec<u8> {
    let data = lowrank(5, 6, 3, 120);
    let mut index = HnswIndex::build(
        flat(&data, 6),
        HnswParams {
            m: 4,
            threads: 1,
            ..HnswParams::default()
        },
    )
    .unwrap();
    for row in [3, 50, 119] {
        index.delete_row(row);
    }
    index.to_bytes()
}

#[test]
fn every_truncation_and_bit_flip_is_an_error() {
    let bytes = small_index_bytes();
    assert!(HnswIndex::from_bytes(&bytes).is_ok());
    for len in 0..bytes.len() {
        assert!(
            HnswIndex::from_bytes(&bytes[..len]).is_err(),
            "prefix {len}"
        );
    }
    for at in 0..bytes.len() {
        for bit in [0, 3, 7] {
            let mut b = bytes.clone();
            b[at] ^= 1 << bit;
            assert!(HnswIndex::from_bytes(&b).is_err(), "byte {at} bit {bit}");
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(HnswIndex::from_bytes(&longer).is_err());
}

#[test]
fn structural_errors_are_typed() {
    let bytes = small_index_bytes();
    let reseal = |mut b: Vec<u8>| {
        let body = b.len() - 4;
        let sum = memdb_formats::crc32c(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
        HnswIndex::from_bytes(&b).map(|_| ())
    };
    let mut flipped = bytes.clone();
    flipped[100] ^= 1;
    assert!(matches!(
        HnswIndex::from_bytes(&flipped),
        Err(VectorError::Format(FormatError::Checksum { .. }))
    ));
    let mut b = bytes.clone();
    b[0] = b'X';
    assert!(matches!(
        HnswIndex::from_bytes(&b),
        Err(VectorError::Format(FormatError::BadMagic { .. }))
    ));
    let mut b = bytes.clone();
    b[8] = 9;
    assert!(matches!(
        HnswIndex::from_bytes(&b),
        Err(VectorError::Format(FormatError::UnsupportedVersion {
            found: 9,
            ..
        }))
    ));
    // The last link of the last node names a row out of range.
    let mut b = bytes.clone();
    let last = b.len() - 12;
    b[last..last + 4].copy_from_slice(&10_000u32.to_le_bytes());
    assert!(matches!(
        reseal(b),
        Err(VectorError::Format(FormatError::Invalid { .. }))
    ));
    // Entry point out of range.
    let mut b = bytes.clone();
    b[14..18].copy_from_slice(&500u32.to_le_bytes());
    assert!(matches!(
        reseal(b),
        Err(VectorError::Format(FormatError::Invalid { .. }))
    ));
    // M of 1.
    let mut b = bytes.clone();
    b[12..14].copy_from_slice(&1u16.to_le_bytes());
    assert!(matches!(
        reseal(b),
        Err(VectorError::Format(FormatError::Invalid { offset: 12, .. }))
    ));
    // Graph section longer than the file.
    let mut b = bytes.clone();
    b[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        reseal(b),
        Err(VectorError::Format(FormatError::Truncated { .. }))
    ));
    // An unknown traversal code: the format carries it, this crate gives it its meaning.
    let mut b = bytes.clone();
    b[10] = 9;
    assert!(matches!(
        reseal(b),
        Err(VectorError::UnknownPrecision { code: 9 })
    ));
}

#[test]
fn round_trip_gives_identical_results() {
    let dim = 48;
    let all = lowrank(21, dim, 12, 3_050);
    let (data, queries) = all.split_at(3_000);
    for traversal in [Traversal::I8, Traversal::F16, Traversal::F32] {
        let mut index = HnswIndex::build(
            flat(data, dim),
            HnswParams {
                traversal,
                ..params(2)
            },
        )
        .unwrap();
        for row in (0..3_000).step_by(13) {
            index.delete_row(row);
        }
        let bytes = index.to_bytes();
        let loaded = HnswIndex::from_bytes(&bytes).unwrap();
        assert_eq!(loaded.to_bytes(), bytes);
        assert_eq!(loaded.params().traversal, traversal);
        let filter = Filter::new().with_time(0..2_000);
        for query in queries {
            for route in [Route::Graph, Route::Auto] {
                assert_eq!(
                    loaded.search_with(query, 10, &filter, 40, route).unwrap(),
                    index.search_with(query, 10, &filter, 40, route).unwrap()
                );
            }
        }
    }
}

#[test]
fn prefetch_is_a_pure_hint() {
    let dim = 384;
    let all = lowrank(8, dim, 32, 2_030);
    let (data, queries) = all.split_at(2_000);
    let mut index = HnswIndex::build(flat(data, dim), params(2)).unwrap();
    let filter = Filter::new();
    let with: Vec<Vec<Hit>> = queries
        .iter()
        .map(|q| index.search_with(q, 10, &filter, 64, Route::Graph).unwrap())
        .collect();
    index.set_prefetch(false);
    for (q, want) in queries.iter().zip(&with) {
        assert_eq!(
            &index.search_with(q, 10, &filter, 64, Route::Graph).unwrap(),
            want
        );
    }
}

#[test]
fn empty_tiny_and_bad_inputs() {
    let empty = HnswIndex::build(flat(&[], 4), params(1)).unwrap();
    assert!(empty.is_empty());
    for route in [Route::Auto, Route::Graph, Route::Flat] {
        assert!(
            empty
                .search_with(&[1.0; 4], 5, &Filter::new(), 8, route)
                .unwrap()
                .is_empty()
        );
    }
    let loaded = HnswIndex::from_bytes(&empty.to_bytes()).unwrap();
    assert!(loaded.is_empty());
    let one = HnswIndex::build(flat(&[vec![1.0, 0.0, 0.0, 0.0]], 4), params(1)).unwrap();
    let hits = one
        .search_with(&[1.0; 4], 5, &Filter::new(), 8, Route::Graph)
        .unwrap();
    assert_eq!(rows(&hits), [0]);
    assert!(matches!(
        one.search(&[1.0; 3], 5, &Filter::new()),
        Err(VectorError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        one.search(&[1.0, f32::NAN, 0.0, 0.0], 5, &Filter::new()),
        Err(VectorError::NonFinite { .. })
    ));
    assert!(matches!(
        HnswIndex::build(flat(&[], 4), HnswParams { m: 1, ..params(1) }),
        Err(VectorError::BadParameter { name: "m", .. })
    ));
    let half = FlatIndexWriter::new(Precision::F16, 4)
        .unwrap()
        .finish()
        .unwrap();
    assert!(matches!(
        HnswIndex::build(half.clone(), params(1)),
        Err(VectorError::WrongPrecision { .. })
    ));
    assert!(matches!(
        RefinedFlatIndex::build(half, Precision::I8, 4),
        Err(VectorError::WrongPrecision { .. })
    ));
    let a = flat(&[vec![1.0, 0.0, 0.0, 0.0]], 4);
    let b = flat(&[vec![1.0, 0.0, 0.0, 0.0], vec![0.0; 4]], 4);
    assert!(matches!(
        RefinedFlatIndex::new(a, b, 2),
        Err(VectorError::IndexMismatch { .. })
    ));
}
