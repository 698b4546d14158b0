//! Two-stage exact-ish flat search: a compact (i8 or f16) flat scan keeps `k × factor`
//! candidates, which are reranked with the exact f32 rows kept alongside (faiss's `IndexRefine`).
//!
//! Why: at 1M lowrank rows a pure i8 scan reaches recall@10 ≈ 0.988 against exact f32, and the
//! loss comes from quantising the *rows* (symmetric i8 0.9895, f32 query × i8 rows 0.988,
//! per-dimension scales 0.986, measured in numpy), so no kernel change fixes it. The true top 10
//! almost always sits inside the i8 top 40, and reranking 40 rows costs 40 f32 dot products,
//! nothing next to the scan. The price is memory: the f32 copy is 4× the i8 block.
//!
//! [`RefinedFlatIndex::search_exact`] uses the same two blocks for a different promise: the f32
//! answer itself, bit for bit what [`FlatIndex::search`] on the exact block returns, from a scan
//! that reads the i8 block (a quarter of the bytes) and touches an f32 row only when the row's
//! certified upper bound reaches the current k-th best exact score. See [`RowBounds`] for the
//! bound and why it holds.
//!
//! **Invariant:** returns exactly `min(k, rows that match the filter and are not deleted)` hits,
//! best first by exact f32 score (ties by ascending row): the compact stage returns
//! `min(k·factor, matches) ≥ min(k, matches)` allowed rows and the rerank keeps k of them.
//! Both blocks hold the same rows (same count, dimension and ids, checked at construction) and
//! the same deleted rows (deletes go to both).

use roaring::RoaringBitmap;

use crate::filter::Filter;
use crate::index::{FlatIndex, FlatIndexWriter};
use crate::kernels::{Precision, dot_f32, dot_i8, quantize_i8, score_i8};
use crate::layout::Vectors;
use crate::parallel;
use crate::topk::{Hit, TopK};
use crate::{VectorError, VectorIndex};

/// Candidates the compact scan keeps per result when none is given.
///
/// Measured with `vectors` (k = 10, one query per call): recall@10 against exact f32 of i8
/// alone / i8 with refine ×2 / ×4 was 0.9882 / 1.0000 / 1.0000 on lowrank 1M (64.5 / 67.8 /
/// 65.1 QPS, f32 flat 16.8), 0.9915 / 1.0000 / 1.0000 on lowrank 100k, and 0.9929 / 1.0000 /
/// 1.0000 on the real MiniLM set. ×2 already recovers every miss; ×4 is the default for margin on
/// data with flatter score tails, at no measurable cost (20 more f32 dot products per query).
pub const DEFAULT_REFINE_FACTOR: usize = 4;

/// A compact flat index plus the exact f32 rows that rerank its candidates.
#[derive(Clone, Debug)]
pub struct RefinedFlatIndex {
    coarse: FlatIndex,
    exact: FlatIndex,
    factor: usize,
    /// Per-row bound terms for [`RefinedFlatIndex::search_exact`]; empty unless `coarse` is i8.
    bounds: RowBounds,
}

/// What bounds an exact f32 score from an i8 one, per row.
///
/// With `x` a row, `x̂ = s·c` its i8 form, `q` the query and `q̂` its i8 form:
/// `q·x = q̂·x̂ + (q − q̂)·x̂ + q·(x − x̂)`, so by Cauchy–Schwarz
/// `q·x ≤ q̂·x̂ + ‖q − q̂‖·‖x̂‖ + ‖q‖·‖x − x̂‖`. `q̂·x̂` is the i8 score (the integer dot is exact; its
/// two f32 multiplies add a relative error of a few units in the last place), and the f32
/// kernel's own result differs from the real `q·x` by at most `dim·u·‖q‖·‖x‖` (u = 2⁻²⁴, the
/// worst case of any summation order). [`RowBounds::upper`] adds all of these, each rounded up
/// with a margin far above the rounding of the bound's own arithmetic, so the bound is never
/// below what [`dot_f32`] returns for the row. The norms `‖x̂‖` and `‖x − x̂‖` are computed once,
/// in f64, and stored rounded up.
#[derive(Clone, Debug, Default)]
struct RowBounds {
    /// `‖x̂‖` per row, rounded up.
    coded_norm: Vec<f32>,
    /// `‖x − x̂‖` per row, rounded up.
    residual_norm: Vec<f32>,
}

/// Relative margin on the i8 score and on the bound's own f32 arithmetic (≈ 17 units in the
/// last place, where a handful suffice).
const BOUND_MARGIN: f32 = 1e-6;
/// Absolute margin, so scores near zero (where relative margins vanish) stay covered.
const BOUND_FLOOR: f32 = 1e-30;

/// `v` rounded up to an f32 with a relative margin: an upper bound for the real value `v`.
fn f32_above(v: f64) -> f32 {
    ((v * (1.0 + 1e-9)) as f32).next_up()
}

/// The per-query factors of [`RowBounds::upper`].
#[derive(Clone, Copy, Debug)]
struct QueryBound {
    /// Multiplies `‖x̂‖`: `‖q − q̂‖ + γ‖q‖`.
    coded: f32,
    /// Multiplies `‖x − x̂‖`: `‖q‖(1 + γ)`.
    residual: f32,
}

impl RowBounds {
    /// The norms of every row of an i8 block `codes`/`scales` against the f32 rows `exact`.
    fn new(
        codes: &[i8],
        scales: &[f32],
        exact: &[f32],
        dim: usize,
        strides: (usize, usize),
    ) -> Self {
        let rows = scales.len();
        let mut out = Self {
            coded_norm: Vec::with_capacity(rows),
            residual_norm: Vec::with_capacity(rows),
        };
        for (row, &scale) in scales.iter().enumerate() {
            let c = &codes[row * strides.0..row * strides.0 + dim];
            let x = &exact[row * strides.1..row * strides.1 + dim];
            let (mut coded, mut residual) = (0.0f64, 0.0f64);
            for (&c, &x) in c.iter().zip(x) {
                let decoded = f64::from(scale) * f64::from(c);
                coded += decoded * decoded;
                residual += (f64::from(x) - decoded).powi(2);
            }
            out.coded_norm.push(f32_above(coded.sqrt()));
            out.residual_norm.push(f32_above(residual.sqrt()));
        }
        out
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        (self.coded_norm.len() + self.residual_norm.len()) * std::mem::size_of::<f32>()
    }

    /// The factors for `query` (f32) and its i8 form `codes`·`scale`.
    fn query(query: &[f32], codes: &[i8], scale: f32) -> QueryBound {
        let (mut norm, mut residual) = (0.0f64, 0.0f64);
        for (&q, &c) in query.iter().zip(codes) {
            norm += f64::from(q).powi(2);
            residual += (f64::from(q) - f64::from(scale) * f64::from(c)).powi(2);
        }
        let (norm, residual) = (norm.sqrt(), residual.sqrt());
        // Worst-case relative error of an f32 sum of `dim` products in any order (with room).
        let gamma = query.len() as f64 * f64::from(f32::EPSILON) / 2.0 * 1.01;
        QueryBound {
            coded: f32_above(residual + gamma * norm),
            residual: f32_above(norm * (1.0 + gamma)),
        }
    }

    /// An upper bound on the f32 score of `row` whose i8 score is `coarse`.
    #[inline]
    fn upper(&self, q: QueryBound, row: usize, coarse: f32) -> f32 {
        let slack = self.coded_norm[row] * q.coded + self.residual_norm[row] * q.residual;
        coarse + (coarse.abs() + slack) * BOUND_MARGIN + slack + BOUND_FLOOR
    }
}

impl RefinedFlatIndex {
    /// Pairs `exact` (an f32 index) with a compact copy of its rows at `coarse` precision,
    /// encoded here; the candidates per result are `factor` (≥ 1).
    pub fn build(exact: FlatIndex, coarse: Precision, factor: usize) -> Result<Self, VectorError> {
        let view = exact.view()?;
        let Vectors::F32(rows) = view.vectors else {
            return Err(VectorError::WrongPrecision {
                what: "the exact rows of a refined index",
                expected: Precision::F32,
                found: view.precision(),
            });
        };
        let (dim, stride) = (view.dim(), view.layout.stride_values());
        let mut writer = FlatIndexWriter::new(coarse, dim)?;
        writer.reserve(view.len());
        for row in 0..view.len() {
            writer.push(
                view.ids[row],
                view.times[row],
                view.sources[row],
                &rows[row * stride..row * stride + dim],
            )?;
        }
        let mut compact = writer.finish()?;
        for row in exact.deleted() {
            compact.delete_row(row);
        }
        Self::new(compact, exact, factor)
    }

    /// Pairs two blocks of the same rows: `coarse` is scanned, `exact` (f32) reranks.
    pub fn new(coarse: FlatIndex, exact: FlatIndex, factor: usize) -> Result<Self, VectorError> {
        if factor == 0 {
            return Err(VectorError::BadParameter {
                name: "factor",
                value: 0,
                why: "the refine factor must be at least 1",
            });
        }
        let (c, e) = (coarse.view()?, exact.view()?);
        if e.precision() != Precision::F32 {
            return Err(VectorError::WrongPrecision {
                what: "the exact rows of a refined index",
                expected: Precision::F32,
                found: e.precision(),
            });
        }
        let mismatch = |why: String| VectorError::IndexMismatch {
            what: "refined flat index",
            why,
        };
        if (c.len(), c.dim()) != (e.len(), e.dim()) {
            return Err(mismatch(format!(
                "coarse block is {} x {}, exact block {} x {}",
                c.len(),
                c.dim(),
                e.len(),
                e.dim()
            )));
        }
        if c.ids != e.ids || c.times != e.times || c.sources != e.sources {
            return Err(mismatch(
                "the blocks' ids, times or sources differ".to_owned(),
            ));
        }
        if coarse.deleted() != exact.deleted() {
            return Err(mismatch("the blocks' deleted rows differ".to_owned()));
        }
        let bounds = match (c.vectors, e.vectors) {
            (Vectors::I8(codes), Vectors::F32(rows)) => RowBounds::new(
                codes,
                c.scales,
                rows,
                c.dim(),
                (c.layout.stride_values(), e.layout.stride_values()),
            ),
            _ => RowBounds::default(),
        };
        Ok(Self {
            coarse,
            exact,
            factor,
            bounds,
        })
    }

    /// Candidates kept per result.
    pub fn factor(&self) -> usize {
        self.factor
    }

    /// Sets the candidates kept per result (≥ 1; 0 is taken as 1).
    pub fn set_factor(&mut self, factor: usize) {
        self.factor = factor.max(1);
    }

    /// The scanned compact block.
    pub fn coarse(&self) -> &FlatIndex {
        &self.coarse
    }

    /// The `k` best rows for `query` among the non-deleted rows passing `filter` by exact f32
    /// score: the same hits, scores and order as [`FlatIndex::search`] on the exact block.
    ///
    /// Every candidate row is scored in i8; its f32 row is read and scored only if the row's
    /// certified upper bound (`RowBounds`) is at least the k-th best exact score found so far.
    /// A row skipped that way scores below the final k-th best, so it could not have been a hit.
    /// With an f16 coarse block (no bound) this is the plain f32 scan.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, VectorError> {
        Ok(self.search_exact_counted(query, k, filter)?.0)
    }

    /// [`RefinedFlatIndex::search_exact`] for `queries.len() / dim` queries stored back to back,
    /// split over `threads` threads (0: one per available core). Result `i` is query `i`'s hits.
    pub fn search_exact_batch(
        &self,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError> {
        let view = self.exact.view()?;
        view.check_queries(queries, "query batch")?;
        parallel::search_each(queries, view.dim(), threads, |q| {
            self.search_exact(q, k, filter)
        })
    }

    /// [`RefinedFlatIndex::search_exact`], also returning how many f32 rows it read.
    pub(crate) fn search_exact_counted(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<(Vec<Hit>, usize), VectorError> {
        let (coarse, exact) = (self.coarse.view()?, self.exact.view()?);
        let (Vectors::I8(codes), Vectors::F32(rows)) = (coarse.vectors, exact.vectors) else {
            let hits = self.exact.search(query, k, filter)?;
            return Ok((hits, exact.len()));
        };
        if query.len() != exact.dim() || k == 0 || query.iter().any(|v| !v.is_finite()) {
            // The plain scan reports the mismatch or bad value (or returns nothing for k = 0).
            return Ok((self.exact.search(query, k, filter)?, 0));
        }
        let dim = exact.dim();
        let (code_stride, row_stride) =
            (coarse.layout.stride_values(), exact.layout.stride_values());
        let mut query_codes = vec![0i8; dim];
        let query_scale = quantize_i8(query, &mut query_codes);
        let bound = RowBounds::query(query, &query_codes, query_scale);
        let mut top = TopK::new(k);
        let (mut floor, mut rescored) = (top.floor(), 0);
        let candidates = filter.candidates(coarse.len(), self.coarse.deleted());
        candidates.for_each(&coarse, filter, |row| {
            let at = row * code_stride;
            let dot = dot_i8(&query_codes, &codes[at..at + dim]);
            let estimate = score_i8(dot, query_scale, coarse.scales[row]);
            if TopK::may_enter(self.bounds.upper(bound, row, estimate), floor) {
                let at = row * row_stride;
                top.push(dot_f32(query, &rows[at..at + dim]), row as u32);
                floor = top.floor();
                rescored += 1;
            }
        });
        Ok((exact.hits(top), rescored))
    }

    fn rerank(&self, query: &[f32], candidates: &[Hit], k: usize) -> Result<Vec<Hit>, VectorError> {
        let view = self.exact.view()?;
        let Vectors::F32(rows) = view.vectors else {
            return Ok(Vec::new());
        };
        let (dim, stride) = (view.dim(), view.layout.stride_values());
        let mut top = TopK::new(k);
        for hit in candidates {
            let at = hit.row as usize * stride;
            top.push(dot_f32(query, &rows[at..at + dim]), hit.row);
        }
        Ok(view.hits(top))
    }
}

impl VectorIndex for RefinedFlatIndex {
    fn dim(&self) -> usize {
        self.exact.dim()
    }

    fn len(&self) -> usize {
        self.exact.len()
    }

    fn deleted(&self) -> &RoaringBitmap {
        self.coarse.deleted()
    }

    /// Deletes the row in both blocks.
    fn delete_row(&mut self, row: u32) -> bool {
        let live = self.coarse.delete_row(row);
        self.exact.delete_row(row);
        live
    }

    /// Both blocks and the per-row bound terms.
    fn memory_bytes(&self) -> usize {
        self.coarse.memory_bytes() + self.exact.memory_bytes() + self.bounds.bytes()
    }

    /// The compact scan's `k × factor` best rows, reranked by exact f32 score (see the module
    /// docs).
    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, VectorError> {
        let candidates = self
            .coarse
            .search(query, k.saturating_mul(self.factor), filter)?;
        self.rerank(query, &candidates, k)
    }

    /// The compact scan batched, then each query's candidates reranked.
    fn search_batch(
        &self,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError> {
        let batch =
            self.coarse
                .search_batch(queries, k.saturating_mul(self.factor), filter, threads)?;
        let dim = self.exact.view()?.dim();
        batch
            .iter()
            .zip(queries.chunks_exact(dim))
            .map(|(candidates, q)| self.rerank(q, candidates, k))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hnsw::tests::lowrank;

    fn index(vectors: &[Vec<f32>], dim: usize) -> FlatIndex {
        let mut w = FlatIndexWriter::new(Precision::F32, dim).unwrap();
        for (i, v) in vectors.iter().enumerate() {
            w.push(i as u64, 0, 0, v).unwrap();
        }
        w.finish().unwrap()
    }

    /// The certificate itself, row by row, at the embedding size the bench uses.
    #[test]
    fn the_bound_is_never_below_the_f32_score() {
        let dim = 384;
        let mut vectors = lowrank(7, dim, 32, 3_020);
        let queries = vectors.split_off(3_000);
        let refined = RefinedFlatIndex::build(index(&vectors, dim), Precision::I8, 1).unwrap();
        let coarse = refined.coarse.view().unwrap();
        let Vectors::I8(codes) = coarse.vectors else {
            panic!("coarse block is not i8");
        };
        let stride = coarse.layout.stride_values();
        for (scale, query) in [1e-3f32, 1.0, 1e3]
            .iter()
            .flat_map(|s| queries.iter().map(move |q| (*s, q)))
        {
            let query: Vec<f32> = query.iter().map(|v| v * scale).collect();
            let mut qc = vec![0i8; dim];
            let qs = quantize_i8(&query, &mut qc);
            let bound = RowBounds::query(&query, &qc, qs);
            for (row, x) in vectors.iter().enumerate() {
                let dot = dot_i8(&qc, &codes[row * stride..row * stride + dim]);
                let upper = refined
                    .bounds
                    .upper(bound, row, score_i8(dot, qs, coarse.scales[row]));
                let exact = dot_f32(&query, x);
                assert!(
                    upper >= exact,
                    "row {row}: bound {upper} below score {exact}"
                );
                // And not uselessly loose: within a few percent of the norms' product.
                assert!(
                    upper - exact < 0.05 * scale,
                    "row {row}: bound {upper} vs {exact}"
                );
            }
        }
    }

    /// The point of the bound: on embedding-like data the scan reads few f32 rows.
    #[test]
    fn the_exact_scan_reads_few_f32_rows() {
        let dim = 384;
        let mut vectors = lowrank(9, dim, 32, 20_010);
        let queries = vectors.split_off(20_000);
        let exact = index(&vectors, dim);
        let refined = RefinedFlatIndex::build(exact.clone(), Precision::I8, 1).unwrap();
        let filter = Filter::new();
        for query in queries {
            let (hits, rescored) = refined.search_exact_counted(&query, 10, &filter).unwrap();
            assert_eq!(hits, exact.search(&query, 10, &filter).unwrap());
            assert!(
                rescored < vectors.len() / 20,
                "{rescored} of {} rows rescored",
                vectors.len()
            );
        }
    }

    /// Rows i8 cannot tell apart: only the bound's slack sends them to exact scoring, and a
    /// scan that trusted the i8 scores would keep the wrong ones.
    #[test]
    fn near_duplicates_are_ranked_by_their_exact_scores() {
        for dim in [8, 384] {
            let mut vectors = lowrank(11, dim, 4, 2_001);
            let base = vectors.pop().unwrap();
            for (i, v) in vectors.iter_mut().enumerate() {
                for (x, b) in v.iter_mut().zip(&base) {
                    *x = b + 1e-3 * *x * ((i % 5) as f32 - 2.0);
                }
            }
            let exact = index(&vectors, dim);
            let refined = RefinedFlatIndex::build(exact.clone(), Precision::I8, 1).unwrap();
            for k in [1, 10, 50] {
                let want = exact.search(&base, k, &Filter::new()).unwrap();
                let got = refined.search_exact(&base, k, &Filter::new()).unwrap();
                assert_eq!(got, want, "dim {dim}, k {k}");
            }
        }
    }
}
