//! memdb's vector indexes: exact flat (brute-force) indexes of f32, f16, i8 or i4 vectors and an
//! approximate HNSW index over an f32 block, all scored by dot product with SIMD kernels, with
//! filters (row allow-list, time range, sources) applied during the search.
//!
//! This crate owns the flat block's byte layout (SPEC.md §5.1; read in place, so it stays with
//! the scans), the indexes built on the blocks and every search over them. The HNSW graph
//! block's bytes (§5.2) are `memdb_formats::hnsw`'s, the one home of memdb's byte formats; this
//! crate turns them into an [`HnswIndex`] and back. It knows nothing of the store: the `memdb`
//! engine keeps the blocks in segment blobs and searches them in place through [`FlatView`]
//! and [`HnswIndex`].
//!
//! Code map:
//! - `kernels`: the dot-product kernels (simsimd, plus AVX-512 / AVX2 builds picked at run
//!   time) with their scalar references, and the f32 → f16 and f32 → i8 encoders.
//! - `i4`: 4-bit rows (two values per byte, one scale per row): the quantizer and packing, and
//!   the i8-query × i4-row integer dot with its AVX-512 VNNI, AVX2 and scalar kernels.
//! - `matmul`: the batched scan's step, a tile of queries against a block of rows as one matrix
//!   product (the gemm crate's, dispatched at run time; i8 widened exactly).
//! - `layout`: the byte layout of one flat block (header, vectors, columns) and the 64-byte
//!   aligned buffer that owns it; [`FlatView`] reads a block straight from `&[u8]` and gives its
//!   columns and rows through accessors.
//! - `filter`: [`Filter`] (row allow-list, time range, sources) and the candidate-row walk.
//! - `topk`: the bounded top-k heap and its deterministic order (score, then row number).
//! - `index`: [`FlatIndexWriter`], [`FlatIndex`] and the single and batched scans.
//! - `refine`: [`RefinedFlatIndex`], an i8 (or f16) scan of `k × factor` candidates reranked
//!   with exact f32 rows; and its exact search, which scans the i8 rows with a certified upper
//!   bound per row and reads an f32 row only where the bound can still reach the top k, giving
//!   the f32 scan's answer bit for bit from about a quarter of the bytes.
//! - `linear_i8`: [`QuantizedLinear`], a dense layer in 8-bit integers on `matmul`'s packed i8
//!   kernel (the encoder's projections).
//! - `parallel`: spreading a batch's queries over threads.
//! - `hnsw`: [`HnswIndex`], the approximate index over an f32 block: i8-code traversal, f32
//!   rerank, filtered search with a flat fallback, parallel build, and the conversion to and
//!   from its persisted block.
//! - `vector_index`: [`VectorIndex`], the trait the three indexes share (dimension, rows,
//!   deletes, memory, search).
//!
//! **Invariants:**
//! - a search returns exactly `min(k, rows that match the filter and are not deleted)` hits,
//!   best first; equal scores are ordered by ascending row number, so a flat search's results
//!   never depend on thread count, block size or the order of the candidate walk;
//! - the byte layouts are the on-disk format: they change only with a new format version, and
//!   the golden tests (`tests/*_golden.rs`) hold them byte for byte;
//! - bytes read back (a block, a graph) are checked before use: untrusted bytes give a
//!   [`VectorError`], never a panic.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod error;
mod filter;
mod hnsw;
mod i4;
mod index;
mod kernels;
mod layout;
mod linear_i8;
mod matmul;
mod parallel;
mod refine;
mod topk;
mod vector_index;

#[cfg(test)]
mod tests;

pub use error::VectorError;
pub use filter::Filter;
pub use hnsw::{
    FLAT_BELOW_MATCH_FRACTION, FLAT_BELOW_ROWS, HnswIndex, HnswParams, Route, Traversal,
};
pub use index::{FlatIndex, FlatIndexWriter};
pub use kernels::{Precision, dot_f32};
pub use layout::FlatView;
pub use linear_i8::QuantizedLinear;
pub use refine::{DEFAULT_REFINE_FACTOR, RefinedFlatIndex};
pub use topk::Hit;
pub use vector_index::VectorIndex;
