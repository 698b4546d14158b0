//! Spreading the queries of a batch over threads.
//!
//! **Invariant:** results come back in query order, whatever the thread count; a worker's panic
//! is re-raised on the calling thread (it only happens on a bug), and the first error of any
//! query is returned.

use crate::VectorError;
use crate::topk::Hit;

/// `threads`, or one per available core when it is 0; at least 1.
pub(crate) fn thread_count(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Runs `search` on each of the `queries.len() / dim` queries stored back to back, the queries
/// split into contiguous shares over at most `threads` threads (0: one per core).
pub(crate) fn search_each(
    queries: &[f32],
    dim: usize,
    threads: usize,
    search: impl Fn(&[f32]) -> Result<Vec<Hit>, VectorError> + Sync,
) -> Result<Vec<Vec<Hit>>, VectorError> {
    let n_queries = queries.len() / dim.max(1);
    if n_queries == 0 {
        return Ok(Vec::new());
    }
    let per_thread = n_queries.div_ceil(thread_count(threads).clamp(1, n_queries));
    let search = &search;
    std::thread::scope(|scope| {
        let workers: Vec<_> = queries
            .chunks(per_thread * dim)
            .map(|share| {
                scope.spawn(move || {
                    share
                        .chunks_exact(dim)
                        .map(search)
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(n_queries);
        for worker in workers {
            match worker.join() {
                Ok(share) => out.extend(share?),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(out)
    })
}
