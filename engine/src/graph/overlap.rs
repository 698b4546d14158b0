//! Path-overlap candidate generation over the Q-matrix: the EM-Paths sharing the most (weighted)
//! nodes with a query, exactly, without touching every path of every frequent node.
//!
//! A node's weight is `boost × ln(1 + P / df)` (P paths in the graph, df of them hold the node),
//! a path's score the sum of the weights of the query nodes it holds. Frequent nodes weigh
//! little, so the top paths are found among the paths of the rare nodes: the rare nodes'
//! bitmaps are unioned (up to [`CANDIDATE_CAP`] paths) and those candidates scored exactly by
//! probing every query node's bitmap; a path outside that union holds only the remaining
//! (frequent) nodes, so its score is at most their summed weight. When that bound is below the
//! k-th score found, the answer is exact and complete; otherwise every path of every node is
//! scored (the fallback, counted in [`PathOverlapStats`]).

use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::GraphReader;
use crate::error::Result;

/// Most candidate paths scored before the bound is checked.
pub const CANDIDATE_CAP: u64 = 16_384;

/// One path found by [`GraphReader::paths_matching`].
#[derive(Debug, Clone, PartialEq)]
pub struct PathMatch {
    /// Path id.
    pub path: u64,
    /// Summed weight of the query nodes it holds.
    pub score: f64,
    /// How many query nodes it holds.
    pub overlap: u32,
}

/// What [`GraphReader::paths_matching`] found.
#[derive(Debug, Clone, Default)]
pub struct PathsMatched {
    /// The best paths, best first.
    pub paths: Vec<PathMatch>,
    /// Each query node found in the graph with its weight (boost × idf over paths).
    pub node_weights: Vec<(u64, f64)>,
    /// How the search went.
    pub stats: PathOverlapStats,
}

/// How a [`GraphReader::paths_matching`] call went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathOverlapStats {
    /// Candidate paths scored.
    pub scored: u64,
    /// Whether the bound failed and every path of every node was scored.
    pub fallback: bool,
}

impl GraphReader<'_> {
    /// The `top` paths with the highest weighted overlap with `nodes` (node id, weight boost;
    /// 1.0 for an exact match), holding at least `min_overlap` of them; best first, ties by
    /// ascending path id.
    pub fn paths_matching(
        &self,
        nodes: &[(u64, f64)],
        min_overlap: u32,
        top: usize,
    ) -> Result<PathsMatched> {
        self.paths_matching_capped(nodes, min_overlap, top, CANDIDATE_CAP)
    }

    /// [`paths_matching`](Self::paths_matching) with the candidate cap as a parameter (tests
    /// use a small one to exercise both the bound and the fallback).
    pub(crate) fn paths_matching_capped(
        &self,
        nodes: &[(u64, f64)],
        min_overlap: u32,
        top: usize,
        cap: u64,
    ) -> Result<PathsMatched> {
        let total_paths = self.next_ids()?.1.saturating_sub(1).max(1) as f64;
        let mut weighted: Vec<(f64, RoaringBitmap)> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        let mut seen: HashMap<u64, usize> = HashMap::new();
        for &(node, boost) in nodes {
            if let Some(&at) = seen.get(&node) {
                // The same node twice counts once, at its best boost.
                weighted[at].0 = weighted[at].0.max(boost);
                continue;
            }
            let paths = self.node_paths(node)?;
            if paths.is_empty() {
                continue;
            }
            seen.insert(node, weighted.len());
            weighted.push((boost, paths));
            ids.push(node);
        }
        for (w, paths) in &mut weighted {
            *w *= (1.0 + total_paths / paths.len() as f64).ln();
        }
        let node_weights: Vec<(u64, f64)> = ids
            .into_iter()
            .zip(weighted.iter().map(|(w, _)| *w))
            .collect();
        // Heaviest (rarest) first; the order also fixes the summation order of every score.
        weighted.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.len().cmp(&b.1.len())));
        let mut stats = PathOverlapStats::default();
        if weighted.is_empty() || top == 0 {
            return Ok(PathsMatched {
                node_weights,
                ..PathsMatched::default()
            });
        }

        let mut candidates = RoaringBitmap::new();
        let mut taken = 0;
        for (_, paths) in &weighted {
            if taken > 0 && candidates.len() + paths.len() > cap {
                break;
            }
            candidates |= paths;
            taken += 1;
        }
        let rest_weight: f64 = weighted[taken..].iter().map(|(w, _)| w).sum();
        let rest_count = (weighted.len() - taken) as u32;
        let mut best = score_paths(&candidates, &weighted, min_overlap, top);
        stats.scored = candidates.len();
        let threshold = (best.len() == top).then(|| best[top - 1].score);
        let bounded = rest_count < min_overlap
            || rest_count == 0
            || threshold.is_some_and(|t| rest_weight < t);
        if !bounded {
            let mut all = RoaringBitmap::new();
            for (_, paths) in &weighted {
                all |= paths;
            }
            stats.scored = all.len();
            stats.fallback = true;
            best = score_paths(&all, &weighted, min_overlap, top);
        }
        Ok(PathsMatched {
            paths: best,
            node_weights,
            stats,
        })
    }
}

/// Scores each path of `paths` against every weighted bitmap, keeping the best `top`.
///
/// Node by node rather than path by path: `paths ∩ node` is a container-wise roaring AND, and
/// walking it alongside the sorted candidate list adds the node's weight without a lookup per
/// (path, node) pair — which measured as two thirds of the time at 1M paths.
fn score_paths(
    paths: &RoaringBitmap,
    weighted: &[(f64, RoaringBitmap)],
    min_overlap: u32,
    top: usize,
) -> Vec<PathMatch> {
    let ids: Vec<u32> = paths.iter().collect();
    let mut score = vec![0.0f64; ids.len()];
    let mut overlap = vec![0u32; ids.len()];
    for (w, bitmap) in weighted {
        let mut at = 0;
        for path in &(paths & bitmap) {
            // `path` is in `paths`, so the walk stops on it.
            while ids[at] < path {
                at += 1;
            }
            score[at] += w;
            overlap[at] += 1;
        }
    }
    let mut best: Vec<PathMatch> = Vec::with_capacity(top + 1);
    for (i, &path) in ids.iter().enumerate() {
        let (score, overlap) = (score[i], overlap[i]);
        if overlap < min_overlap.max(1) {
            continue;
        }
        // Ascending ids: an equal score never displaces an earlier path.
        if best.len() == top && best.last().is_some_and(|b| b.score >= score) {
            continue;
        }
        let at = best.partition_point(|b| b.score >= score);
        best.insert(
            at,
            PathMatch {
                path: u64::from(path),
                score,
                overlap,
            },
        );
        best.truncate(top);
    }
    best
}
