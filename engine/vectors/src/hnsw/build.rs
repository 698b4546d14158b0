//! Building an [`HnswIndex`]: each row's layer from a seeded hash of its row number, rows
//! inserted by scoped threads into shared link lists, the paper's neighbour-selection
//! heuristic, and the freeze into the compact [`Graph`].
//!
//! **Invariants:** every link names a row `< rows` and a node whose level is at least the
//! layer; lists hold at most `2·M` (layer 0) or `M` links; the entry point has the top level. With
//! one thread the graph is a pure function of the rows and the parameters; with more, the
//! insertion interleaving (and so the graph) varies between runs, never its invariants.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering as AtomicOrdering};

use memdb_formats::hnsw::{MAX_M, MIN_M};

use crate::VectorError;
use crate::index::FlatIndex;
use crate::parallel;
use crate::topk::Scored;

use super::codes::{Codes, Space, prefetch};
use super::search::Visited;
use super::{Graph, HnswIndex, HnswParams, MAX_EF, MAX_LEVEL, climb, f32_rows, lock};

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
                self.copy_links(current.row, layer, links);
                match climb(current, links, |nb| self.space.pair(node, nb)) {
                    Some(better) => current = better,
                    None => break,
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

impl HnswIndex {
    /// Builds the graph over every row of `flat` (an f32 index; its deleted rows are linked but
    /// never returned).
    pub fn build(flat: FlatIndex, params: HnswParams) -> Result<Self, VectorError> {
        if !(usize::from(MIN_M)..=usize::from(MAX_M)).contains(&params.m) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
