//! [`VectorIndex`]: what the three indexes ([`FlatIndex`](crate::FlatIndex),
//! [`RefinedFlatIndex`](crate::RefinedFlatIndex), [`HnswIndex`](crate::HnswIndex)) have in
//! common, so a caller that sizes, deletes from or searches any of them treats them alike.
//! Each index keeps its own extra searches as inherent methods (`search_exact`, `search_with`).
//!
//! **Invariants** every implementation keeps: `search` returns exactly `min(k, rows that match
//! the filter and are not deleted)` hits, best first, equal scores by ascending row, never a
//! deleted row; `search_batch` returns one such list per query, in query order, whatever the
//! thread count; a query of the wrong dimension or with a non-finite value is an error.

use roaring::RoaringBitmap;

use crate::VectorError;
use crate::filter::Filter;
use crate::topk::Hit;

/// A searchable set of vectors (rows), scored by dot product.
pub trait VectorIndex {
    /// Values per vector.
    fn dim(&self) -> usize;

    /// Rows indexed, deleted ones included.
    fn len(&self) -> usize;

    /// Whether the index has no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The deleted rows.
    fn deleted(&self) -> &RoaringBitmap;

    /// Marks `row` deleted; returns whether it was a live row.
    fn delete_row(&mut self, row: u32) -> bool;

    /// Bytes held in memory.
    fn memory_bytes(&self) -> usize;

    /// The `k` rows with the highest dot product with `query` among the non-deleted rows that
    /// pass `filter`, best first.
    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, VectorError>;

    /// [`VectorIndex::search`] for `queries.len() / dim` queries stored back to back, spread
    /// over `threads` threads (0: one per available core); result `i` is query `i`'s hits.
    fn search_batch(
        &self,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError>;
}
