//! Searching an [`HnswIndex`]: the choice between the graph and the exact flat scan, the walk
//! (greedy descent through the upper layers, then a beam search of layer 0 on the traversal
//! codes, with a filter applied to results, not to routing), and the rerank of the walk's
//! candidates with the exact f32 rows.
//!
//! **Invariants:** a search returns exactly `min(k, rows that match the filter and are not
//! deleted)` hits, best first by exact f32 score (ties by ascending row), never a deleted or
//! filtered-out row: a walk that ends with fewer than `k` matching rows falls back to the flat
//! scan. Prefetching is only a cache hint; walks with and without it return the same hits.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use roaring::RoaringBitmap;

use crate::filter::Filter;
use crate::index::check_vector;
use crate::kernels::{dot_f16, dot_f32, dot_i8, score_i8};
use crate::layout::FlatView;
use crate::parallel;
use crate::topk::{Hit, Scored, TopK};
use crate::{VectorError, VectorIndex};

use super::codes::{Codes, QueryCodes, Space, prefetch};
use super::{
    FILTERED_VISIT_BUDGET, FLAT_BELOW_MATCH_FRACTION, FLAT_BELOW_ROWS, HnswIndex, Route, climb,
    f32_rows, lock,
};

/// Generation-tagged visited marks: clearing is one increment, not a pass over the rows.
pub(super) struct Visited {
    marks: Vec<u16>,
    tag: u16,
}

impl Visited {
    pub(super) fn new(n: usize) -> Self {
        Self {
            marks: vec![0; n],
            tag: 0,
        }
    }

    /// Starts a new walk: every row unvisited.
    pub(super) fn reset(&mut self) {
        self.tag = self.tag.wrapping_add(1);
        if self.tag == 0 {
            self.marks.fill(0);
            self.tag = 1;
        }
    }

    /// Marks `row` visited; returns whether it was not yet.
    #[inline]
    pub(super) fn insert(&mut self, row: u32) -> bool {
        let mark = &mut self.marks[row as usize];
        let fresh = *mark != self.tag;
        *mark = self.tag;
        fresh
    }
}

impl HnswIndex {
    /// [`VectorIndex::search`](crate::VectorIndex::search) with an explicit `ef` (raised to `k`
    /// when smaller) and route.
    pub fn search_with(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
        ef: usize,
        route: Route,
    ) -> Result<Vec<Hit>, VectorError> {
        let view = self.flat.view()?;
        check_vector("query", 0, view.dim(), query)?;
        if k == 0 {
            return Ok(Vec::new());
        }
        let deleted = self.flat.deleted();
        let n = view.len();
        let graph = match route {
            Route::Flat => false,
            Route::Graph => n > 0,
            Route::Auto => {
                n >= FLAT_BELOW_ROWS
                    && (!filter.restricts() && deleted.is_empty()
                        || estimate_matches(&view, deleted, filter)
                            >= (n as f64 * FLAT_BELOW_MATCH_FRACTION).max(k as f64))
            }
        };
        if graph && let Some(hits) = self.walk(&view, deleted, query, k, filter, ef.max(k))? {
            return Ok(hits);
        }
        view.search(deleted, query, k, filter)
    }

    /// Walks the graph; `None` when it found fewer than `k` matching rows.
    fn walk(
        &self,
        view: &FlatView<'_>,
        deleted: &RoaringBitmap,
        query: &[f32],
        k: usize,
        filter: &Filter,
        ef: usize,
    ) -> Result<Option<Vec<Hit>>, VectorError> {
        let (rows, stride) = f32_rows(view)?;
        let space = Space {
            codes: &self.codes,
            rows,
            stride,
            dim: view.dim(),
        };
        let mut visited = lock(&self.pool)
            .pop()
            .unwrap_or_else(|| Visited::new(self.len()));
        let restricted = filter.restricts() || !deleted.is_empty();
        let allowed = filter.allowed_rows();
        let accept = |row: u32| {
            !deleted.contains(row)
                && allowed.is_none_or(|a| a.contains(row))
                && filter.row_matches(view, row as usize)
        };
        let budget = if restricted {
            ((self.len() as f64 * FILTERED_VISIT_BUDGET) as usize).max(ef)
        } else {
            usize::MAX
        };
        let found = match space.encode_query(query) {
            QueryCodes::F32(q) => self.walk_with(
                &space,
                |r| dot_f32(&q, space.f32_row(r)),
                restricted.then_some(&accept),
                ef,
                budget,
                &mut visited,
            ),
            QueryCodes::F16(q) => {
                let Codes::F16(codes) = &self.codes else {
                    return Ok(None);
                };
                let dim = space.dim;
                self.walk_with(
                    &space,
                    |r| dot_f16(&q, &codes[r as usize * dim..(r as usize + 1) * dim]),
                    restricted.then_some(&accept),
                    ef,
                    budget,
                    &mut visited,
                )
            }
            QueryCodes::I8 { values: q, scale } => {
                let Codes::I8 { values, scales } = &self.codes else {
                    return Ok(None);
                };
                let dim = space.dim;
                self.walk_with(
                    &space,
                    |r| {
                        let at = r as usize * dim;
                        score_i8(dot_i8(&q, &values[at..at + dim]), scale, scales[r as usize])
                    },
                    restricted.then_some(&accept),
                    ef,
                    budget,
                    &mut visited,
                )
            }
        };
        lock(&self.pool).push(visited);
        if found.len() < k {
            return Ok(None);
        }
        // Rerank the walk's candidates with the exact rows.
        let mut top = TopK::new(k);
        for s in &found {
            top.push(dot_f32(query, space.f32_row(s.row)), s.row);
        }
        Ok(Some(view.hits(top)))
    }

    /// Greedy descent through the upper layers, then the layer-0 beam search keeping the `ef`
    /// best rows that `accept` lets through (all rows when `None`).
    fn walk_with<S: Fn(u32) -> f32, A: Fn(u32) -> bool>(
        &self,
        space: &Space<'_>,
        score: S,
        accept: Option<&A>,
        ef: usize,
        budget: usize,
        visited: &mut Visited,
    ) -> Vec<Scored> {
        let g = &self.graph;
        let prefetching = self.prefetch;
        let mut current = Scored {
            score: score(g.entry),
            row: g.entry,
        };
        for layer in (1..=g.max_level).rev() {
            while let Some(better) = climb(current, g.neighbours(current.row, layer), &score) {
                current = better;
            }
        }
        visited.reset();
        visited.insert(current.row);
        let mut visits = 1usize;
        let mut fresh: Vec<u32> = Vec::with_capacity(g.m0);
        let mut candidates = BinaryHeap::with_capacity(ef.min(g.levels.len()) * 4);
        candidates.push(current);
        let mut results: BinaryHeap<Reverse<Scored>> =
            BinaryHeap::with_capacity(ef.min(g.levels.len()) + 1);
        let accepts = |r: u32| accept.is_none_or(|a| a(r));
        if accepts(current.row) {
            results.push(Reverse(current));
        }
        while let Some(c) = candidates.pop() {
            if results.len() >= ef
                && let Some(Reverse(worst)) = results.peek()
                && c < *worst
            {
                break;
            }
            // Mark the unvisited neighbours first and prefetch all their codes, so their
            // cache misses overlap instead of being paid one after another while scoring.
            fresh.clear();
            fresh.extend(
                g.neighbours(c.row, 0)
                    .iter()
                    .copied()
                    .filter(|&nb| visited.insert(nb)),
            );
            if prefetching {
                for &nb in &fresh {
                    prefetch(space.code_span(nb));
                }
            }
            visits += fresh.len();
            for &nb in &fresh {
                let s = Scored {
                    score: score(nb),
                    row: nb,
                };
                if results.len() < ef || results.peek().is_some_and(|Reverse(w)| s > *w) {
                    candidates.push(s);
                    if accepts(nb) {
                        results.push(Reverse(s));
                        if results.len() > ef {
                            results.pop();
                        }
                    }
                }
            }
            if prefetching && let Some(next) = candidates.peek() {
                prefetch(g.list_span(next.row));
            }
            if visits > budget {
                break;
            }
        }
        results
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(s)| s)
            .collect()
    }

    /// [`HnswIndex::search_with`] for `queries.len() / dim` queries stored back to back, spread
    /// over `threads` threads (0: one per available core), each with this `ef` and automatic
    /// routing; result `i` is query `i`'s hits.
    pub fn search_batch_with(
        &self,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        ef: usize,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError> {
        let dim = self.flat.view()?.dim();
        if !queries.len().is_multiple_of(dim) {
            return Err(VectorError::DimensionMismatch {
                what: "query batch",
                expected: dim,
                found: queries.len(),
            });
        }
        parallel::search_each(queries, dim, threads, |q| {
            self.search_with(q, k, filter, ef, Route::Auto)
        })
    }
}

/// Estimated rows that pass `filter` and are not deleted: exact for an allow-list alone,
/// sampled (up to 512 rows) when time or source tests apply.
fn estimate_matches(view: &FlatView<'_>, deleted: &RoaringBitmap, filter: &Filter) -> f64 {
    let n = view.len() as u32;
    let base = match filter.allowed_rows() {
        Some(rows) => rows
            .range_cardinality(0..n)
            .saturating_sub(rows.intersection_len(deleted)),
        None => u64::from(n).saturating_sub(deleted.range_cardinality(0..n)),
    };
    if !filter.tests_columns() || base == 0 {
        return base as f64;
    }
    const SAMPLE: u64 = 512;
    let step = (base / SAMPLE).max(1) as usize;
    let (mut seen, mut passed) = (0u32, 0u32);
    let mut test = |row: u32| {
        if !deleted.contains(row) {
            seen += 1;
            if filter.row_matches(view, row as usize) {
                passed += 1;
            }
        }
    };
    match filter.allowed_rows() {
        Some(rows) => rows
            .iter()
            .take_while(|&r| r < n)
            .step_by(step)
            .for_each(&mut test),
        None => (0..n).step_by(step).for_each(&mut test),
    }
    if seen == 0 {
        return 0.0;
    }
    base as f64 * f64::from(passed) / f64::from(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visited_marks_survive_tag_wrap() {
        let mut v = Visited::new(4);
        for _ in 0..70_000 {
            v.reset();
            assert!(v.insert(2));
            assert!(!v.insert(2));
            assert!(v.insert(3));
        }
    }
}
