//! Length-bucketed batching: which texts run together, and how results find their way back.
//!
//! Owns: the batch plan. Sequences are ordered by token count so that each batch pads to a
//! length close to all of its members (padding is wasted work: attention and every projection run
//! over it), then cut into batches of at most `batch_size`.
//!
//! Invariants:
//! - every input index appears in exactly one batch, once;
//! - within a batch, indices are sorted by descending length, so the first member's length is
//!   the batch's padded length;
//! - ties keep input order, so a plan is a pure function of the lengths.

/// Groups the indices of `lengths` into batches of at most `batch_size` (≥ 1) similar lengths.
pub(crate) fn plan(lengths: &[usize], batch_size: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    // Longest first: the first batch is the largest, so a memory problem shows up at once rather
    // than after most of the work is done.
    order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    order
        .chunks(batch_size.max(1))
        .map(<[usize]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_once_and_batches_sorted() {
        let lengths = [5, 2, 9, 2, 7, 3, 3, 10, 1];
        let batches = plan(&lengths, 4);
        assert_eq!(batches.len(), 3);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        for batch in &batches {
            assert!(batch.len() <= 4);
            assert!(batch.windows(2).all(|w| lengths[w[0]] >= lengths[w[1]]));
        }
        assert_eq!(batches[0], vec![7, 2, 4, 0]);
        // Ties keep input order.
        assert_eq!(batches[1], vec![5, 6, 1, 3]);
    }

    #[test]
    fn padding_is_less_than_unsorted_batching() {
        let lengths: Vec<usize> = (0..100).map(|i| (i * 37) % 61 + 2).collect();
        let padded = |batches: &[Vec<usize>]| -> usize {
            batches
                .iter()
                .map(|b| b.len() * b.iter().map(|&i| lengths[i]).max().unwrap_or(0))
                .sum()
        };
        let naive: Vec<Vec<usize>> = (0..100)
            .collect::<Vec<_>>()
            .chunks(8)
            .map(<[usize]>::to_vec)
            .collect();
        assert!(padded(&plan(&lengths, 8)) < padded(&naive));
    }

    #[test]
    fn empty_input_and_zero_batch_size() {
        assert!(plan(&[], 32).is_empty());
        assert_eq!(plan(&[1, 2], 0), vec![vec![1], vec![0]]);
    }
}
