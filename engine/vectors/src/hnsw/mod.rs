//! Approximate vector search: an HNSW graph (Malkov & Yashunin, 2016) over the rows of an f32
//! [`FlatIndex`], scored by dot product.
//!
//! Owns: [`HnswIndex`] (the f32 flat block it was built from, compact traversal codes of every
//! row, and the frozen graph), its parameters and the frozen graph's layout; the work is split:
//! - `codes`: the compact traversal codes (f32 / f16 / i8 copies of the rows), the scores on
//!   them and the prefetch hint;
//! - `build`: the level draw, the neighbour heuristic and the parallel insert;
//! - `search`: routing (graph or flat), the filtered beam search and the f32 rerank;
//! - `persist`: the persisted form (SPEC.md §5.2): the index to and from the block whose bytes
//!   `memdb_formats::hnsw` encodes and checks.
//!
//! **Search.** The graph is walked with compact codes (i8 with one scale per row by default, see
//! [`Traversal`]), and the `ef` best rows found are reranked with the exact f32 rows, so reported
//! scores are exact and only membership in the top k is approximate. Below
//! [`FLAT_BELOW_ROWS`] rows, or when the filter leaves fewer than [`FLAT_BELOW_MATCH_FRACTION`]
//! of the rows, the exact flat scan over the allowed rows is used instead. A filter is applied to
//! results, not to traversal (rejected rows still route the walk), and the walk does not stop
//! until it holds `ef` matching rows or has visited [`FILTERED_VISIT_BUDGET`] of the graph; if it
//! then holds fewer than `k`, the search falls back to the flat scan.
//!
//! **Build.** Layer of each row from a seeded hash of its row number (`⌊-ln u · 1/ln M⌋`);
//! rows are inserted by `threads` scoped threads, each node's link lists behind its own mutex and
//! the entry point behind one global mutex (taken for the whole insert only by a node that raises
//! the top layer, as in hnswlib). Neighbours are chosen with the paper's heuristic (a candidate is
//! kept only if it is closer to the new node than to every neighbour already kept); an existing
//! node whose list overflows re-runs the heuristic over its list plus the new node. With one
//! thread the graph is a pure function of the rows and the parameters; with more, the insertion
//! interleaving varies between runs, so the graph does too (tests that need a fixed graph build
//! on one thread).
//!
//! **Invariants:**
//! - a search returns exactly `min(k, rows that match the filter and are not deleted)` hits, best
//!   first by exact f32 score (ties by ascending row), never a deleted or filtered-out row;
//! - every link names a row `< rows`, a node on layer `l` links only to nodes whose level is
//!   `≥ l`, lists hold at most `2·M` (layer 0) or `M` (upper layers) links, and the entry point has
//!   the top level: [`HnswIndex::from_bytes`] checks all of this, so a loaded graph can be walked
//!   without bounds surprises, and untrusted bytes give an error, never a panic.

mod build;
mod codes;
mod persist;
mod search;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::Mutex;

use memdb_formats::hnsw as hnsw_format;
use roaring::RoaringBitmap;

use crate::filter::Filter;
use crate::index::FlatIndex;
use crate::kernels::Precision;
use crate::layout::{FlatView, Vectors};
use crate::topk::{Hit, Scored};
use crate::{VectorError, VectorIndex};
use codes::Codes;
use search::Visited;

/// Below this many rows a search scans the flat block instead of walking the graph.
///
/// Measured with `vectors --crossover` (lowrank, d = 384, k = 10, one thread, ef = 128, 500
/// queries, AMD EPYC 2 cores): flat f32 vs graph QPS at 1k / 2k / 3k / 5k / 10k / 20k / 50k rows
/// was 30,587 vs 17,996 / 16,956 vs 13,502 / 11,507 vs 10,967 / 7,018 vs 9,228 / 3,070 vs
/// 7,422 / 1,019 vs 5,647 / 316 vs 3,326. The lines cross near 3,300 rows; up to 4,000 the
/// graph is at most ≈ 15 % faster while the flat scan is exact, so the switch sits at 4,000.
pub const FLAT_BELOW_ROWS: usize = 4_000;

/// When an estimated fewer than this fraction of the rows pass the filter, the search scans the
/// allowed rows flat instead of walking the graph.
///
/// A filtered walk must visit about `ef / fraction` rows to collect `ef` matches, while the flat
/// scan costs one f32 dot per match. Measured with `vectors --crossover` (lowrank 100k, k = 10,
/// ef = 128, one thread, a random allow-list reused by 500 queries): flat vs graph QPS at
/// 0.5 / 1 / 2 / 3 / 5 / 10 / 20 / 50 % allowed was 27,457 vs 199 / 18,432 vs 222 / 8,341 vs 262 /
/// 5,098 vs 262 / 2,192 vs 286 / 453 vs 354 / 218 vs 781 / 101 vs 1,422; the crossing lies near
/// 11 %. (The flat figures up to 5 % are flattered by the allowed rows staying in the 32 MiB L3
/// between queries; the crossing itself, at 11 MB of allowed rows, is past that.) The walk's
/// cost grows only with log N and the flat scan's with N, so at larger N the true crossing moves
/// lower: the fraction errs towards the exact scan.
pub const FLAT_BELOW_MATCH_FRACTION: f64 = 0.11;

/// A filtered walk that has visited this fraction of the rows without collecting `ef` matches
/// stops; with fewer than `k` matches it falls back to the flat scan.
const FILTERED_VISIT_BUDGET: f64 = 0.25;

/// Largest `ef` a build or a persisted index may carry (a search may ask for more): what the
/// persisted block allows, so every index built can be written.
const MAX_EF: usize = hnsw_format::MAX_EF as usize;

/// Highest layer a node can have (the level draw is capped here), as the persisted block allows.
const MAX_LEVEL: u8 = hnsw_format::MAX_TOP_LEVEL;

/// Which codes the graph is walked (and built) with; the final `ef` candidates are always
/// reranked with the exact f32 rows.
///
/// i8 is the default, by measurement (`vectors --traversals`, lowrank 100k, M = 16,
/// efC = 200, one query per call, ef = 128): i8 2,620 QPS at recall@10 0.957, built in 22 s;
/// f16 1,310 QPS at 0.956, 46 s; f32 1,716 QPS at 0.956, 39 s. Recall is the same because the
/// rerank repairs the order and i8 rounding barely moves which rows enter the beam; i8 wins on
/// speed because a visited row is 6 cache lines instead of 24 (f32) and its dot product is one
/// VNNI pass, while f16 pays a conversion per value on CPUs without AVX-512 FP16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Traversal {
    /// The f32 rows themselves (no extra memory; 4 bytes a value to fetch per visited row).
    F32,
    /// f16 copies (2 bytes a value).
    F16,
    /// i8 copies with one scale per row (1 byte a value, integer VNNI dot product).
    I8,
}

/// Rows up to which [`HnswParams::ef_search`] is used as it is.
const EF_SCALE_ROWS: usize = 100_000;

/// The `ef` a default search of a graph of `rows` rows uses: `ef_search` up to
/// [`EF_SCALE_ROWS`] rows, then doubled for every tenfold growth (`ef_search·(rows / 100,000)^
/// log₁₀2`).
///
/// Why: a fixed ef loses recall as the graph grows. On the bench's lowrank data ef = 128 gave
/// recall@10 0.957 at 100,000 rows but 0.863 at 1,000,000, where ef = 256 gave 0.955 (`vectors
/// --n 1000000 --ef 128,256,384`). The rule passes through both measured points; sizes between
/// them are interpolated, not measured.
fn default_ef(ef_search: usize, rows: usize) -> usize {
    if rows <= EF_SCALE_ROWS {
        return ef_search;
    }
    let growth = (rows as f64 / EF_SCALE_ROWS as f64).powf(std::f64::consts::LOG10_2);
    (ef_search as f64 * growth).round() as usize
}

/// Build and default search parameters of an [`HnswIndex`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HnswParams {
    /// Links per node on the upper layers (`M`); layer 0 keeps `2·M`.
    pub m: usize,
    /// Candidate list size while inserting (`efConstruction`).
    pub ef_construction: usize,
    /// Default candidate list size of a search (`ef`) at up to 100,000 rows; larger graphs
    /// raise it (doubled for every tenfold growth), and it is raised to `k` when smaller.
    pub ef_search: usize,
    /// Codes the graph is built and walked with.
    pub traversal: Traversal,
    /// Seed of the level draw.
    pub seed: u64,
    /// Build threads (0: one per available core).
    pub threads: usize,
}

impl Default for HnswParams {
    /// M = 16, efConstruction = 200 (hnswlib's usual setting), i8 traversal, ef = 128: of the
    /// ef values 64 / 96 / 128 / 160 the bench measured on lowrank 100k (recall@10 0.863 /
    /// 0.925 / 0.957 / 0.973), the smallest that reaches 0.95.
    fn default() -> Self {
        Self {
            m: 16,
            ef_construction: 200,
            ef_search: 128,
            traversal: Traversal::I8,
            seed: 0x5eed_4e55_1234_abcd,
            threads: 0,
        }
    }
}

/// How one search chooses between the graph and the flat scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Route {
    /// Flat below [`FLAT_BELOW_ROWS`] rows or [`FLAT_BELOW_MATCH_FRACTION`] matching rows, else
    /// the graph.
    #[default]
    Auto,
    /// The graph whatever the size and filter (still flat when the walk finds fewer than k).
    Graph,
    /// The exact flat scan.
    Flat,
}

/// The frozen graph: layer-0 lists in one array (`count` then `2·M` slots per node), upper lists
/// in a second array reached through a per-node offset.
#[derive(Clone, Debug, Default)]
struct Graph {
    m: usize,
    m0: usize,
    levels: Vec<u8>,
    layer0: Vec<u32>,
    /// Start of a node's upper lists in `upper`, `u32::MAX` for level-0 nodes.
    upper_at: Vec<u32>,
    upper: Vec<u32>,
    entry: u32,
    max_level: u8,
}

impl Graph {
    #[inline]
    fn neighbours(&self, node: u32, layer: u8) -> &[u32] {
        let node = node as usize;
        let (list, slots) = if layer == 0 {
            let at = node * (self.m0 + 1);
            (&self.layer0[at..at + self.m0 + 1], self.m0)
        } else {
            let at = self.upper_at[node] as usize + (usize::from(layer) - 1) * (self.m + 1);
            (&self.upper[at..at + self.m + 1], self.m)
        };
        let count = (list[0] as usize).min(slots);
        &list[1..1 + count]
    }

    /// Start and length in bytes of `node`'s layer-0 slots, for prefetching.
    #[inline]
    fn list_span(&self, node: u32) -> (*const u8, usize) {
        let at = node as usize * (self.m0 + 1);
        let slots = self.layer0.get(at..at + self.m0 + 1).unwrap_or(&[]);
        (slots.as_ptr().cast(), std::mem::size_of_val(slots))
    }

    fn bytes(&self) -> usize {
        self.levels.len() + (self.layer0.len() + self.upper_at.len() + self.upper.len()) * 4
    }

    /// Assembles the frozen graph from the layer-0 slots (`count` then `2·M` ids per node) and
    /// each node's upper lists (layers `1..=level`, at most `M` ids each).
    fn freeze(
        m: usize,
        levels: Vec<u8>,
        layer0: Vec<u32>,
        upper_lists: Vec<Vec<Vec<u32>>>,
        entry: u32,
    ) -> Self {
        let n = levels.len();
        let mut upper_at = vec![u32::MAX; n];
        let mut upper = Vec::new();
        for (node, lists) in upper_lists.into_iter().enumerate() {
            if lists.is_empty() {
                continue;
            }
            upper_at[node] = upper.len() as u32;
            for list in lists {
                let count = list.len().min(m);
                upper.push(count as u32);
                upper.extend_from_slice(&list[..count]);
                upper.resize(upper.len() + m - count, 0);
            }
        }
        let max_level = levels.get(entry as usize).copied().unwrap_or(0);
        Self {
            m,
            m0: 2 * m,
            levels,
            layer0,
            upper_at,
            upper,
            entry,
            max_level,
        }
    }
}

/// An approximate (HNSW) vector index over an f32 flat block; see the module docs.
pub struct HnswIndex {
    flat: FlatIndex,
    codes: Codes,
    graph: Graph,
    params: HnswParams,
    /// Visited-mark arrays reused across searches (one per concurrent search).
    pool: Mutex<Vec<Visited>>,
    /// Whether walks prefetch the codes of a node's neighbours before scoring them (off only
    /// in the test that checks prefetching changes nothing but timing).
    prefetch: bool,
}

impl std::fmt::Debug for HnswIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HnswIndex")
            .field("flat", &self.flat)
            .field("params", &self.params)
            .field("max_level", &self.graph.max_level)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock means another build thread panicked; its panic is re-raised at join, so
    // the data here is only read on the way out.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One step of the greedy descent through an upper layer: the best of `current` and the
/// `candidates` by `score` (in [`Scored`]'s order), or `None` when `current` stays best.
fn climb(current: Scored, candidates: &[u32], score: impl Fn(u32) -> f32) -> Option<Scored> {
    let (mut best, mut moved) = (current, false);
    for &row in candidates {
        let s = Scored {
            score: score(row),
            row,
        };
        if s > best {
            best = s;
            moved = true;
        }
    }
    moved.then_some(best)
}

/// The f32 rows of a flat view with their stride in values.
fn f32_rows<'a>(view: &FlatView<'a>) -> Result<(&'a [f32], usize), VectorError> {
    match view.vectors {
        Vectors::F32(rows) => Ok((rows, view.layout.stride_values())),
        _ => Err(VectorError::WrongPrecision {
            what: "an HNSW index",
            expected: Precision::F32,
            found: view.precision(),
        }),
    }
}

impl HnswIndex {
    /// Turns neighbour prefetching on or off (the test that it changes nothing but timing).
    #[cfg(test)]
    pub(crate) fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }

    /// The parameters the index was built with.
    pub fn params(&self) -> HnswParams {
        self.params
    }

    /// The f32 flat block underneath (exact rows, ids, times, sources, deleted rows).
    pub fn flat(&self) -> &FlatIndex {
        &self.flat
    }
}

impl VectorIndex for HnswIndex {
    fn dim(&self) -> usize {
        self.flat.dim()
    }

    fn len(&self) -> usize {
        self.graph.levels.len()
    }

    fn deleted(&self) -> &RoaringBitmap {
        self.flat.deleted()
    }

    /// The deleted row keeps routing walks; it is never returned.
    fn delete_row(&mut self, row: u32) -> bool {
        self.flat.delete_row(row)
    }

    /// The f32 block, the traversal codes and the graph.
    fn memory_bytes(&self) -> usize {
        self.flat.memory_bytes() + self.codes.bytes() + self.graph.bytes()
    }

    /// With the built-in `ef` scaled to the graph's size (`ef_search` up to 100,000 rows, then
    /// doubled for every tenfold growth) and automatic routing (see the module docs).
    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, VectorError> {
        let ef = default_ef(self.params.ef_search, self.len());
        self.search_with(query, k, filter, ef, Route::Auto)
    }

    /// Each query searched as by [`VectorIndex::search`].
    fn search_batch(
        &self,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError> {
        let ef = default_ef(self.params.ef_search, self.len());
        self.search_batch_with(queries, k, filter, ef, threads)
    }
}
