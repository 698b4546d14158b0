//! The bounded top-k heap of a scan and the order of hits.
//!
//! **Invariant:** hits are ordered by score, highest first (IEEE total order, so even a NaN
//! score has a fixed place), and equal scores by ascending row number. The heap keeps the k best
//! candidates seen so far under that order, so the result of a scan does not depend on the
//! order in which rows are visited.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// One search result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Row number in the index.
    pub row: u32,
    /// Item id stored for the row.
    pub id: u64,
    /// Dot product of the query with the row, at the index's precision.
    pub score: f32,
}

/// A scored row; `Ord` puts the better candidate last (greater).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scored {
    pub(crate) score: f32,
    pub(crate) row: u32,
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.row.cmp(&self.row))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored {}

/// The k best candidates seen so far: a min-heap whose top is the worst one kept.
#[derive(Clone, Debug)]
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Scored>>,
}

impl TopK {
    /// An empty heap keeping at most `k` candidates.
    pub(crate) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.saturating_add(1).min(1 << 16)),
        }
    }

    /// A score below which a candidate cannot enter: the worst kept score once the heap is
    /// full, −∞ before. A candidate scoring exactly the floor may still enter (on its row).
    #[inline]
    pub(crate) fn floor(&self) -> f32 {
        match self.heap.peek() {
            Some(Reverse(worst)) if self.heap.len() >= self.k => worst.score,
            _ => f32::NEG_INFINITY,
        }
    }

    /// Whether a candidate scoring `score` may enter a heap whose [`TopK::floor`] is `floor`:
    /// `false` only when it certainly cannot (a NaN score is always offered, so the heap's total
    /// order places it).
    #[inline]
    pub(crate) fn may_enter(score: f32, floor: f32) -> bool {
        score >= floor || score.is_nan()
    }

    /// Offers a candidate; it stays if it beats the worst one kept (or the heap is not full).
    #[inline]
    pub(crate) fn push(&mut self, score: f32, row: u32) {
        let candidate = Scored { score, row };
        if self.heap.len() < self.k {
            self.heap.push(Reverse(candidate));
        } else if let Some(mut worst) = self.heap.peek_mut()
            && candidate > worst.0
        {
            *worst = Reverse(candidate);
        }
    }

    /// The kept candidates, best first.
    pub(crate) fn into_sorted(self) -> Vec<Scored> {
        // `into_sorted_vec` sorts ascending by `Reverse`, i.e. best first.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(s)| s)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn keeps_the_k_best_in_order(
            scores in proptest::collection::vec(prop_oneof![Just(0.5f32), -2.0f32..2.0], 0..200),
            k in 0usize..20,
        ) {
            let mut top = TopK::new(k);
            for (row, &s) in scores.iter().enumerate() {
                top.push(s, row as u32);
            }
            let mut all: Vec<Scored> =
                scores.iter().enumerate().map(|(r, &score)| Scored { score, row: r as u32 }).collect();
            all.sort_by(|a, b| b.cmp(a));
            all.truncate(k);
            let got: Vec<(u32, u32)> = top.into_sorted().iter().map(|s| (s.row, s.score.to_bits())).collect();
            let want: Vec<(u32, u32)> = all.iter().map(|s| (s.row, s.score.to_bits())).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn ties_go_to_the_lower_row() {
        let mut top = TopK::new(2);
        for row in [5, 3, 9, 1] {
            top.push(1.0, row);
        }
        let rows: Vec<u32> = top.into_sorted().iter().map(|s| s.row).collect();
        assert_eq!(rows, [1, 3]);
    }
}
