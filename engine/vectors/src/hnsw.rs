//! Approximate vector search: an HNSW graph (Malkov & Yashunin, 2016) over the rows of an f32
//! [`FlatIndex`], scored by dot product.
//!
//! Owns: [`HnswIndex`] (the f32 flat block it was built from, compact traversal codes of every
//! row, and the frozen graph), its parallel builder, its filtered search and its persisted form.
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

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering as AtomicOrdering};

use roaring::RoaringBitmap;

use crate::VectorError;
use crate::filter::Filter;
use crate::index::FlatIndex;
use crate::kernels::{F16, Precision, dot_f16, dot_f32, dot_i8, encode_f16, quantize_i8, score_i8};
use crate::layout::{FlatView, Vectors};
use crate::parallel;
use crate::topk::{Hit, Scored, TopK};

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
pub(crate) const FILTERED_VISIT_BUDGET: f64 = 0.25;

/// Largest `ef` a build or a persisted index may carry (a search may ask for more).
const MAX_EF: usize = 1 << 16;

/// Highest layer a node can have (the level draw is capped here).
const MAX_LEVEL: u8 = 16;

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

impl Traversal {
    fn code(self) -> u8 {
        match self {
            Traversal::F32 => Precision::F32.code(),
            Traversal::F16 => Precision::F16.code(),
            Traversal::I8 => Precision::I8.code(),
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match Precision::try_from_code(code)? {
            Precision::F32 => Some(Traversal::F32),
            Precision::F16 => Some(Traversal::F16),
            Precision::I8 => Some(Traversal::I8),
        }
    }
}

/// Rows up to which [`HnswParams::ef_search`] is used as it is.
pub const EF_SCALE_ROWS: usize = 100_000;

/// The `ef` a default search of a graph of `rows` rows uses: `ef_search` up to
/// [`EF_SCALE_ROWS`] rows, then doubled for every tenfold growth (`ef_search·(rows / 100,000)^
/// log₁₀2`).
///
/// Why: a fixed ef loses recall as the graph grows. On the bench's lowrank data ef = 128 gave
/// recall@10 0.957 at 100,000 rows but 0.863 at 1,000,000, where ef = 256 gave 0.955 (`vectors
/// --n 1000000 --ef 128,256,384`). The rule passes through both measured points; sizes between
/// them are interpolated, not measured.
pub fn default_ef(ef_search: usize, rows: usize) -> usize {
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
    /// Default candidate list size of a search (`ef`) at up to [`EF_SCALE_ROWS`] rows; larger
    /// graphs raise it (see [`default_ef`]), and it is raised to `k` when smaller.
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

/// Compact copies of the rows, walked instead of the f32 rows.
enum Codes {
    F32,
    F16(Vec<F16>),
    I8 { values: Vec<i8>, scales: Vec<f32> },
}

impl Codes {
    fn encode(traversal: Traversal, rows: &[f32], stride: usize, dim: usize, n: usize) -> Self {
        let row = |r: usize| &rows[r * stride..r * stride + dim];
        match traversal {
            Traversal::F32 => Codes::F32,
            Traversal::F16 => {
                let mut out = vec![F16::ZERO; n * dim];
                for (r, chunk) in out.chunks_exact_mut(dim).enumerate() {
                    encode_f16(row(r), chunk);
                }
                Codes::F16(out)
            }
            Traversal::I8 => {
                let mut values = vec![0i8; n * dim];
                let scales = values
                    .chunks_exact_mut(dim)
                    .enumerate()
                    .map(|(r, chunk)| quantize_i8(row(r), chunk))
                    .collect();
                Codes::I8 { values, scales }
            }
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Codes::F32 => 0,
            Codes::F16(v) => v.len() * 2,
            Codes::I8 { values, scales } => values.len() + scales.len() * 4,
        }
    }
}

/// A query encoded like the traversal codes.
enum QueryCodes {
    F32(Vec<f32>),
    F16(Vec<F16>),
    I8 { values: Vec<i8>, scale: f32 },
}

/// Row-against-row and query-against-row scores on the traversal codes.
#[derive(Clone, Copy)]
struct Space<'a> {
    codes: &'a Codes,
    rows: &'a [f32],
    stride: usize,
    dim: usize,
}

impl<'a> Space<'a> {
    #[inline]
    fn f32_row(&self, r: u32) -> &'a [f32] {
        let at = r as usize * self.stride;
        &self.rows[at..at + self.dim]
    }

    /// Score of stored row `a` against stored row `b`.
    #[inline]
    fn pair(&self, a: u32, b: u32) -> f32 {
        let dim = self.dim;
        let (a, b) = (a as usize, b as usize);
        match self.codes {
            Codes::F32 => dot_f32(self.f32_row(a as u32), self.f32_row(b as u32)),
            Codes::F16(v) => dot_f16(&v[a * dim..(a + 1) * dim], &v[b * dim..(b + 1) * dim]),
            Codes::I8 { values, scales } => score_i8(
                dot_i8(
                    &values[a * dim..(a + 1) * dim],
                    &values[b * dim..(b + 1) * dim],
                ),
                scales[a],
                scales[b],
            ),
        }
    }

    fn encode_query(&self, query: &[f32]) -> QueryCodes {
        match self.codes {
            Codes::F32 => QueryCodes::F32(query.to_vec()),
            Codes::F16(_) => {
                let mut out = vec![F16::ZERO; query.len()];
                encode_f16(query, &mut out);
                QueryCodes::F16(out)
            }
            Codes::I8 { .. } => {
                let mut values = vec![0i8; query.len()];
                let scale = quantize_i8(query, &mut values);
                QueryCodes::I8 { values, scale }
            }
        }
    }

    /// Start and length in bytes of row `r`'s codes, for prefetching.
    #[inline]
    fn code_span(&self, r: u32) -> (*const u8, usize) {
        let (dim, r) = (self.dim, r as usize);
        match self.codes {
            Codes::F32 => (self.f32_row(r as u32).as_ptr().cast(), dim * 4),
            Codes::F16(v) => (v[r * dim..].as_ptr().cast(), dim * 2),
            Codes::I8 { values, .. } => (values[r * dim..].as_ptr().cast(), dim),
        }
    }
}

/// Generation-tagged visited marks: clearing is one increment, not a pass over the rows.
struct Visited {
    marks: Vec<u16>,
    tag: u16,
}

impl Visited {
    fn new(n: usize) -> Self {
        Self {
            marks: vec![0; n],
            tag: 0,
        }
    }

    /// Starts a new walk: every row unvisited.
    fn reset(&mut self) {
        self.tag = self.tag.wrapping_add(1);
        if self.tag == 0 {
            self.marks.fill(0);
            self.tag = 1;
        }
    }

    /// Marks `row` visited; returns whether it was not yet.
    #[inline]
    fn insert(&mut self, row: u32) -> bool {
        let mark = &mut self.marks[row as usize];
        let fresh = *mark != self.tag;
        *mark = self.tag;
        fresh
    }
}

/// Hints the CPU to fetch the first cache lines of `len` bytes at `start` (never faults).
#[inline]
fn prefetch((start, len): (*const u8, usize)) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // Up to eight cache lines: a whole i8 row of 384 values (six lines) or a layer-0 list
        // (two or three); longer rows get their first 512 bytes and the hardware prefetcher
        // follows the rest.
        for line in 0..len.div_ceil(64).min(8) {
            let at = start.wrapping_add(line * 64);
            #[allow(unsafe_code)]
            // SAFETY: `_mm_prefetch` is only a cache hint: it never faults, whatever the address,
            // and has no effect a program can observe other than timing. SSE, its only
            // requirement, is part of the x86_64 baseline. The test `prefetch_is_a_pure_hint`
            // compares walks with and without prefetching.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
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

/// splitmix64: the level draw's hash of (seed, row).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn draw_level(seed: u64, row: usize, m: usize) -> u8 {
    let u = ((mix(seed ^ mix(row as u64)) >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let level = -u.ln() / (m as f64).ln();
    level.min(f64::from(MAX_LEVEL)) as u8
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock means another build thread panicked; its panic is re-raised at join, so
    // the data here is only read on the way out.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The paper's neighbour-selection heuristic: walk `candidates` best first and keep one only if
/// it scores higher with the base node than with every neighbour kept so far.
fn select_neighbours(
    candidates: &[Scored],
    max: usize,
    pair: impl Fn(u32, u32) -> f32,
) -> Vec<u32> {
    if candidates.len() <= max {
        return candidates.iter().map(|c| c.row).collect();
    }
    let mut kept: Vec<u32> = Vec::with_capacity(max);
    for c in candidates {
        if kept.len() >= max {
            break;
        }
        if kept.iter().all(|&s| pair(c.row, s) <= c.score) {
            kept.push(c.row);
        }
    }
    kept
}

/// Build-time state shared by the insert threads.
///
/// Layer-0 lists live in one array of atomics (`count` then `2·M` slots per node), read without
/// a lock: a writer (holding the node's `writers` mutex) stores the ids before the count
/// (release), so a reader (acquire) sees only ids that were written, and every id ever written is
/// a valid row; a reader racing a rewrite may see a mix of the old and new list, which only
/// changes which valid neighbours one walk explores. Upper-layer lists (one node in 16) stay
/// behind a mutex.
struct Builder<'a> {
    space: Space<'a>,
    m: usize,
    ef_construction: usize,
    levels: &'a [u8],
    layer0: Vec<AtomicU32>,
    writers: Vec<Mutex<()>>,
    /// Per node, its lists on layers `1..=level`.
    upper: Vec<Mutex<Vec<Vec<u32>>>>,
    /// Entry node and the top level.
    entry: Mutex<(u32, u8)>,
}

impl Builder<'_> {
    fn slots(&self, node: u32) -> &[AtomicU32] {
        let at = node as usize * (2 * self.m + 1);
        &self.layer0[at..at + 2 * self.m + 1]
    }

    fn copy_links(&self, node: u32, layer: u8, out: &mut Vec<u32>) {
        out.clear();
        if layer == 0 {
            let slots = self.slots(node);
            let count = (slots[0].load(AtomicOrdering::Acquire) as usize).min(2 * self.m);
            out.extend(
                slots[1..1 + count]
                    .iter()
                    .map(|id| id.load(AtomicOrdering::Relaxed)),
            );
        } else {
            let lists = lock(&self.upper[node as usize]);
            if let Some(list) = lists.get(usize::from(layer) - 1) {
                out.extend_from_slice(list);
            }
        }
    }

    /// Replaces `node`'s layer-0 list; the caller holds `writers[node]`.
    fn store_layer0(&self, node: u32, list: &[u32]) {
        let slots = self.slots(node);
        let count = list.len().min(2 * self.m);
        for (slot, &id) in slots[1..].iter().zip(&list[..count]) {
            slot.store(id, AtomicOrdering::Relaxed);
        }
        slots[0].store(count as u32, AtomicOrdering::Release);
    }

    /// Sets `node`'s own list on `layer`.
    fn set_links(&self, node: u32, layer: u8, list: &[u32]) {
        if layer == 0 {
            let _writer = lock(&self.writers[node as usize]);
            self.store_layer0(node, list);
        } else if let Some(slot) = lock(&self.upper[node as usize]).get_mut(usize::from(layer) - 1)
        {
            slot.clear();
            slot.extend_from_slice(list);
        }
    }

    /// Best-first search of one layer from `start` for the `ef` rows that score highest with
    /// `node`; returns them best first.
    fn search_layer(
        &self,
        node: u32,
        start: Scored,
        ef: usize,
        layer: u8,
        visited: &mut Visited,
        links: &mut Vec<u32>,
    ) -> Vec<Scored> {
        visited.reset();
        visited.insert(node);
        visited.insert(start.row);
        let mut candidates = BinaryHeap::from([start]);
        let mut results = BinaryHeap::from([Reverse(start)]);
        while let Some(c) = candidates.pop() {
            if let Some(Reverse(worst)) = results.peek()
                && results.len() >= ef
                && c < *worst
            {
                break;
            }
            self.copy_links(c.row, layer, links);
            links.retain(|&nb| visited.insert(nb));
            for &nb in links.iter() {
                prefetch(self.space.code_span(nb));
            }
            for &nb in links.iter() {
                let s = Scored {
                    score: self.space.pair(node, nb),
                    row: nb,
                };
                let full = results.len() >= ef;
                if !full || results.peek().is_some_and(|Reverse(w)| s > *w) {
                    candidates.push(s);
                    results.push(Reverse(s));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
        results
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(s)| s)
            .collect()
    }

    /// Adds `node` to `target`'s list on `layer`, re-selecting when the list overflows.
    fn connect(&self, target: u32, node: u32, score: f32, layer: u8) {
        let max = if layer == 0 { 2 * self.m } else { self.m };
        let reselect = |list: &[u32]| {
            let mut candidates: Vec<Scored> = list
                .iter()
                .map(|&x| Scored {
                    score: self.space.pair(target, x),
                    row: x,
                })
                .collect();
            candidates.push(Scored { score, row: node });
            candidates.sort_by(|a, b| b.cmp(a));
            select_neighbours(&candidates, max, |a, b| self.space.pair(a, b))
        };
        if layer == 0 {
            let _writer = lock(&self.writers[target as usize]);
            let mut list = Vec::with_capacity(max + 1);
            self.copy_links(target, 0, &mut list);
            if list.contains(&node) {
                return;
            }
            if list.len() < max {
                list.push(node);
                self.store_layer0(target, &list);
            } else {
                self.store_layer0(target, &reselect(&list));
            }
            return;
        }
        let mut lists = lock(&self.upper[target as usize]);
        let Some(list) = lists.get_mut(usize::from(layer) - 1) else {
            return;
        };
        if list.contains(&node) {
            return;
        }
        if list.len() < max {
            list.push(node);
        } else {
            *list = reselect(list);
        }
    }

    fn insert(&self, node: u32, visited: &mut Visited, links: &mut Vec<u32>) {
        let level = self.levels[node as usize];
        let top = lock(&self.entry);
        let (entry, max_level) = *top;
        // Only a node that raises the top layer keeps the global lock for its whole insert.
        let raises = level > max_level;
        let top = if raises {
            Some(top)
        } else {
            drop(top);
            None
        };
        let mut current = Scored {
            score: self.space.pair(node, entry),
            row: entry,
        };
        for layer in (level.saturating_add(1)..=max_level).rev() {
            loop {
                let mut moved = false;
                self.copy_links(current.row, layer, links);
                for &nb in links.iter() {
                    let s = Scored {
                        score: self.space.pair(node, nb),
                        row: nb,
                    };
                    if s > current {
                        current = s;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        for layer in (0..=level.min(max_level)).rev() {
            let found =
                self.search_layer(node, current, self.ef_construction, layer, visited, links);
            let chosen = select_neighbours(&found, self.m, |a, b| self.space.pair(a, b));
            self.set_links(node, layer, &chosen);
            for &target in &chosen {
                let score = found
                    .iter()
                    .find(|s| s.row == target)
                    .map_or(f32::NEG_INFINITY, |s| s.score);
                self.connect(target, node, score, layer);
            }
            if let Some(best) = found.first() {
                current = *best;
            }
        }
        if let Some(mut top) = top {
            *top = (node, level);
        }
    }
}

fn check_query(
    dim: usize,
    query: &[f32],
    what: &'static str,
    index: usize,
) -> Result<(), VectorError> {
    if query.len() != dim {
        return Err(VectorError::DimensionMismatch {
            what,
            expected: dim,
            found: query.len(),
        });
    }
    match query.iter().position(|x| !x.is_finite()) {
        Some(position) => Err(VectorError::NonFinite {
            what,
            index,
            position,
        }),
        None => Ok(()),
    }
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
    /// Builds the graph over every row of `flat` (an f32 index; its deleted rows are linked but
    /// never returned).
    pub fn build(flat: FlatIndex, params: HnswParams) -> Result<Self, VectorError> {
        if !(2..=256).contains(&params.m) {
            return Err(VectorError::BadParameter {
                name: "m",
                value: params.m as u64,
                why: "must be 2..=256",
            });
        }
        for (name, ef) in [
            ("ef_construction", params.ef_construction),
            ("ef_search", params.ef_search),
        ] {
            if !(1..=MAX_EF).contains(&ef) {
                return Err(VectorError::BadParameter {
                    name,
                    value: ef as u64,
                    why: "must be 1..=65536",
                });
            }
        }
        let view = flat.view()?;
        let (rows, stride) = f32_rows(&view)?;
        let (n, dim) = (view.len(), view.dim());
        let codes = Codes::encode(params.traversal, rows, stride, dim, n);
        let levels: Vec<u8> = (0..n)
            .map(|r| draw_level(params.seed, r, params.m))
            .collect();
        let graph = if n == 0 {
            Graph {
                m: params.m,
                m0: 2 * params.m,
                ..Graph::default()
            }
        } else {
            let space = Space {
                codes: &codes,
                rows,
                stride,
                dim,
            };
            let builder = Builder {
                space,
                m: params.m,
                ef_construction: params.ef_construction,
                levels: &levels,
                layer0: (0..n * (2 * params.m + 1))
                    .map(|_| AtomicU32::new(0))
                    .collect(),
                writers: (0..n).map(|_| Mutex::new(())).collect(),
                upper: levels
                    .iter()
                    .map(|&l| Mutex::new(vec![Vec::new(); usize::from(l)]))
                    .collect(),
                entry: Mutex::new((0, levels[0])),
            };
            let threads = parallel::thread_count(params.threads).clamp(1, n);
            let next = AtomicUsize::new(1);
            std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let (builder, next) = (&builder, &next);
                        scope.spawn(move || {
                            let mut visited = Visited::new(n);
                            let mut links = Vec::new();
                            loop {
                                let node = next.fetch_add(1, AtomicOrdering::Relaxed);
                                if node >= n {
                                    break;
                                }
                                builder.insert(node as u32, &mut visited, &mut links);
                            }
                        })
                    })
                    .collect();
                for worker in workers {
                    if let Err(panic) = worker.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
            });
            let (entry, _) = *lock(&builder.entry);
            let layer0 = builder
                .layer0
                .into_iter()
                .map(AtomicU32::into_inner)
                .collect();
            let upper = builder
                .upper
                .into_iter()
                .map(|m| {
                    m.into_inner()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                })
                .collect();
            Graph::freeze(params.m, levels, layer0, upper, entry)
        };
        Ok(Self {
            flat,
            codes,
            graph,
            params,
            pool: Mutex::new(Vec::new()),
            prefetch: true,
        })
    }

    /// Turns neighbour prefetching on or off (the test that it changes nothing but timing).
    #[cfg(test)]
    pub(crate) fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }

    /// Rows indexed, deleted ones included.
    pub fn len(&self) -> usize {
        self.graph.levels.len()
    }

    /// Whether the index has no rows.
    pub fn is_empty(&self) -> bool {
        self.graph.levels.is_empty()
    }

    /// The parameters the index was built with.
    pub fn params(&self) -> HnswParams {
        self.params
    }

    /// The f32 flat block underneath (exact rows, ids, times, sources, deleted rows).
    pub fn flat(&self) -> &FlatIndex {
        &self.flat
    }

    /// Marks `row` deleted; returns whether it was a live row. The row keeps routing walks.
    pub fn delete_row(&mut self, row: u32) -> bool {
        self.flat.delete_row(row)
    }

    /// Bytes held in memory: the f32 block, the traversal codes and the graph.
    pub fn memory_bytes(&self) -> usize {
        self.flat.memory_bytes() + self.codes.bytes() + self.graph.bytes()
    }

    /// The `k` best rows for `query` among the non-deleted rows that pass `filter`, with the
    /// built-in `ef` scaled to the graph's size ([`default_ef`]) and automatic routing (see the
    /// module docs).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, VectorError> {
        let ef = default_ef(self.params.ef_search, self.len());
        self.search_with(query, k, filter, ef, Route::Auto)
    }

    /// [`HnswIndex::search`] with an explicit `ef` and route.
    pub fn search_with(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
        ef: usize,
        route: Route,
    ) -> Result<Vec<Hit>, VectorError> {
        let view = self.flat.view()?;
        check_query(view.dim(), query, "query", 0)?;
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
        Ok(Some(
            top.into_sorted()
                .into_iter()
                .map(|Scored { score, row }| Hit {
                    row,
                    id: view.ids[row as usize],
                    score,
                })
                .collect(),
        ))
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
            loop {
                let mut moved = false;
                for &nb in g.neighbours(current.row, layer) {
                    let s = Scored {
                        score: score(nb),
                        row: nb,
                    };
                    if s > current {
                        current = s;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
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

    /// [`HnswIndex::search`] for `queries.len() / dim` queries, spread over `threads` threads
    /// (0: one per available core), each query searched as by [`HnswIndex::search_with`].
    pub fn search_batch(
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

// ---------------------------------------------------------------------------------------------
// Persisted form.

/// Magic of a persisted HNSW index.
const MAGIC: [u8; 8] = *b"MDBHNSW\x00";
/// Persisted format version this build writes and reads.
const VERSION: u16 = 1;
const HEADER_LEN: usize = 64;
const TRAILER_LEN: usize = 4;
const WHAT: &str = "HNSW index bytes";

/// Checksum of the persisted form: CRC-32C (Castagnoli), as the segment format uses.
pub(crate) fn checksum(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// A bounds-checked reader over persisted bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, section: &'static str, need: u64) -> Result<&'a [u8], VectorError> {
        let have = self.bytes.len() - self.at;
        let too_short = || VectorError::Truncated {
            what: WHAT,
            section,
            at: self.at,
            need,
            have,
        };
        let len = usize::try_from(need).map_err(|_| too_short())?;
        if len > have {
            return Err(too_short());
        }
        let out = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(out)
    }

    fn u16(&mut self, section: &'static str) -> Result<u16, VectorError> {
        let b = self.take(section, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, section: &'static str) -> Result<u32, VectorError> {
        let b = self.take(section, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl HnswIndex {
    /// The persisted form (little-endian):
    ///
    /// ```text
    /// HEADER 64 bytes: 0..8 magic "MDBHNSW\0" | 8..10 version (u16) = 1
    ///   | 10 traversal code (1 f32, 2 f16, 3 i8) | 11 top level | 12..14 M (u16)
    ///   | 14..18 entry row (u32) | 18..22 ef_construction (u32) | 22..26 ef_search (u32)
    ///   | 26..32 zero | 32..40 flat length | 40..48 deleted length | 48..56 graph length
    ///   | 56..64 level seed
    /// FLAT:    the f32 flat block (layout.rs)
    /// DELETED: the deleted rows, roaring portable format
    /// GRAPH:   rows × u8 levels; then per node, per layer 0..=level: u16 count, count × u32 rows
    /// TRAILER: u32 CRC-32C of everything before it
    /// ```
    ///
    /// Traversal codes are not stored: they are re-encoded from the f32 rows on load (the
    /// encoders are deterministic), so they cannot disagree with the rows.
    pub fn to_bytes(&self) -> Vec<u8> {
        let flat = self.flat.as_bytes();
        let mut deleted = Vec::with_capacity(self.flat.deleted().serialized_size());
        // Writing into a Vec cannot fail.
        let _ = self.flat.deleted().serialize_into(&mut deleted);
        let g = &self.graph;
        let mut graph = Vec::with_capacity(g.levels.len() * (1 + 2 + g.m0 * 4));
        graph.extend_from_slice(&g.levels);
        for (node, &level) in g.levels.iter().enumerate() {
            for layer in 0..=level {
                let list = g.neighbours(node as u32, layer);
                graph.extend_from_slice(&(list.len() as u16).to_le_bytes());
                for id in list {
                    graph.extend_from_slice(&id.to_le_bytes());
                }
            }
        }
        let mut out =
            Vec::with_capacity(HEADER_LEN + flat.len() + deleted.len() + graph.len() + TRAILER_LEN);
        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(&MAGIC);
        header[8..10].copy_from_slice(&VERSION.to_le_bytes());
        header[10] = self.params.traversal.code();
        header[11] = g.max_level;
        header[12..14].copy_from_slice(&(self.params.m as u16).to_le_bytes());
        header[14..18].copy_from_slice(&g.entry.to_le_bytes());
        header[18..22].copy_from_slice(&(self.params.ef_construction as u32).to_le_bytes());
        header[22..26].copy_from_slice(&(self.params.ef_search as u32).to_le_bytes());
        header[32..40].copy_from_slice(&(flat.len() as u64).to_le_bytes());
        header[40..48].copy_from_slice(&(deleted.len() as u64).to_le_bytes());
        header[48..56].copy_from_slice(&(graph.len() as u64).to_le_bytes());
        header[56..64].copy_from_slice(&self.params.seed.to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(flat);
        out.extend_from_slice(&deleted);
        out.extend_from_slice(&graph);
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads the persisted form back, checking the checksum and every structural invariant of
    /// the module docs; any violation is an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, VectorError> {
        if bytes.len() < HEADER_LEN + TRAILER_LEN {
            return Err(VectorError::TooShort {
                len: bytes.len(),
                need: HEADER_LEN + TRAILER_LEN,
            });
        }
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&bytes[..8]);
        if magic != MAGIC {
            return Err(VectorError::BadMagic { found: magic });
        }
        let version = le_u16(bytes, 8);
        if version != VERSION {
            return Err(VectorError::UnsupportedVersion {
                found: version,
                supported: VERSION,
            });
        }
        let body_len = bytes.len() - TRAILER_LEN;
        let stored = le_u32(bytes, body_len);
        let computed = checksum(&bytes[..body_len]);
        if stored != computed {
            return Err(VectorError::ChecksumMismatch {
                what: WHAT,
                stored,
                computed,
            });
        }
        let header = &bytes[..HEADER_LEN];
        let traversal = Traversal::from_code(header[10])
            .ok_or(VectorError::UnknownPrecision { code: header[10] })?;
        let max_level = header[11];
        let m = usize::from(le_u16(header, 12));
        let entry = le_u32(header, 14);
        let ef_construction = le_u32(header, 18) as usize;
        let ef_search = le_u32(header, 22) as usize;
        if header[26..32].iter().any(|&b| b != 0) {
            return Err(VectorError::BadHeader {
                field: "reserved",
                value: 0,
                why: "reserved header bytes must be zero",
            });
        }
        let bad = |field: &'static str, value: u64, why: &'static str| VectorError::BadHeader {
            field,
            value,
            why,
        };
        if !(2..=256).contains(&m) {
            return Err(bad("m", m as u64, "must be 2..=256"));
        }
        if max_level > MAX_LEVEL {
            return Err(bad("top level", u64::from(max_level), "at most 16"));
        }
        for (field, ef) in [
            ("ef_construction", ef_construction),
            ("ef_search", ef_search),
        ] {
            if !(1..=MAX_EF).contains(&ef) {
                return Err(bad(field, ef as u64, "must be 1..=65536"));
            }
        }
        let mut reader = Reader {
            bytes: &bytes[..body_len],
            at: HEADER_LEN,
        };
        let flat_bytes = reader.take("flat block", le_u64(header, 32))?;
        let deleted_bytes = reader.take("deleted rows", le_u64(header, 40))?;
        let graph_len = le_u64(header, 48);
        let graph_bytes = reader.take("graph", graph_len)?;
        if reader.at != body_len {
            return Err(VectorError::LengthMismatch {
                rows: 0,
                dim: 0,
                expected: reader.at + TRAILER_LEN,
                found: bytes.len(),
            });
        }
        let mut flat = FlatIndex::from_bytes(flat_bytes)?;
        let view = flat.view()?;
        let (n, dim) = (view.len(), view.dim());
        let (rows, stride) = f32_rows(&view)?;
        let deleted = RoaringBitmap::deserialize_from(deleted_bytes)
            .map_err(|e| VectorError::BadDeleted { why: e.to_string() })?;
        if let Some(max) = deleted.max()
            && max as usize >= n
        {
            return Err(VectorError::BadDeleted {
                why: format!("row {max} is deleted but the block has {n} rows"),
            });
        }
        let graph = parse_graph(graph_bytes, n, m, entry, max_level)?;
        let codes = Codes::encode(traversal, rows, stride, dim, n);
        for row in &deleted {
            flat.delete_row(row);
        }
        Ok(Self {
            flat,
            codes,
            graph,
            params: HnswParams {
                m,
                ef_construction,
                ef_search,
                traversal,
                seed: le_u64(header, 56),
                threads: 0,
            },
            pool: Mutex::new(Vec::new()),
            prefetch: true,
        })
    }
}

/// Parses and validates the persisted graph of `n` rows.
fn parse_graph(
    bytes: &[u8],
    n: usize,
    m: usize,
    entry: u32,
    max_level: u8,
) -> Result<Graph, VectorError> {
    let bad = |node: usize, layer: u8, why: &'static str, value: u64| VectorError::BadGraph {
        node: node as u64,
        layer,
        why,
        value,
    };
    let mut reader = Reader { bytes, at: 0 };
    let levels = reader.take("graph levels", n as u64)?.to_vec();
    if n == 0 {
        if entry != 0 || max_level != 0 {
            return Err(bad(
                0,
                0,
                "an empty graph has entry 0 and top level 0",
                u64::from(entry),
            ));
        }
    } else {
        if entry as usize >= n {
            return Err(bad(
                entry as usize,
                0,
                "entry point out of range",
                u64::from(entry),
            ));
        }
        if let Some((node, &level)) = levels.iter().enumerate().find(|(_, l)| **l > max_level) {
            return Err(bad(
                node,
                level,
                "level above the top level",
                u64::from(level),
            ));
        }
        if levels[entry as usize] != max_level {
            return Err(bad(
                entry as usize,
                max_level,
                "entry point is not on the top level",
                u64::from(levels[entry as usize]),
            ));
        }
    }
    let m0 = 2 * m;
    let mut layer0 = vec![0u32; n * (m0 + 1)];
    let mut upper: Vec<Vec<Vec<u32>>> = Vec::with_capacity(n);
    for (node, &level) in levels.iter().enumerate() {
        let mut node_upper = Vec::with_capacity(usize::from(level));
        for layer in 0..=level {
            let cap = if layer == 0 { m0 } else { m };
            let count = usize::from(reader.u16("graph links")?);
            if count > cap {
                return Err(bad(
                    node,
                    layer,
                    "more links than the layer allows",
                    count as u64,
                ));
            }
            let mut list = Vec::with_capacity(count);
            for _ in 0..count {
                let id = reader.u32("graph links")?;
                if id as usize >= n {
                    return Err(bad(
                        node,
                        layer,
                        "link to a row out of range",
                        u64::from(id),
                    ));
                }
                if levels[id as usize] < layer {
                    return Err(bad(
                        node,
                        layer,
                        "link to a node below this layer",
                        u64::from(id),
                    ));
                }
                list.push(id);
            }
            if layer == 0 {
                let at = node * (m0 + 1);
                layer0[at] = count as u32;
                layer0[at + 1..at + 1 + count].copy_from_slice(&list);
            } else {
                node_upper.push(list);
            }
        }
        upper.push(node_upper);
    }
    if reader.at != bytes.len() {
        return Err(bad(
            n,
            0,
            "bytes left after the last node",
            (bytes.len() - reader.at) as u64,
        ));
    }
    let mut graph = Graph::freeze(m, levels, layer0, upper, entry);
    graph.max_level = max_level;
    Ok(graph)
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

    #[test]
    fn heuristic_drops_a_candidate_closer_to_a_kept_neighbour() {
        // Scores with the base: 0.9, 0.8, 0.7. Row 1 is more similar to row 0 (0.95) than to
        // the base (0.8), so it is pruned; row 2 is kept.
        let pair = |a: u32, b: u32| match (a.min(b), a.max(b)) {
            (0, 1) => 0.95,
            _ => 0.1,
        };
        let c = [
            Scored { score: 0.9, row: 0 },
            Scored { score: 0.8, row: 1 },
            Scored { score: 0.7, row: 2 },
        ];
        assert_eq!(select_neighbours(&c, 2, pair), vec![0, 2]);
        assert_eq!(select_neighbours(&c, 3, pair), vec![0, 1, 2]);
    }

    #[test]
    fn levels_follow_the_geometric_law() {
        let levels: Vec<u8> = (0..100_000).map(|r| draw_level(7, r, 16)).collect();
        let above0 = levels.iter().filter(|&&l| l > 0).count();
        // P(level ≥ 1) = 1/M = 6.25 %.
        assert!((5_500..7_000).contains(&above0), "{above0}");
        assert!(levels.iter().all(|&l| l <= MAX_LEVEL));
    }
}
