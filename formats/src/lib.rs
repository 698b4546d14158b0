//! memdb's byte formats: bytes to typed values and back, with no I/O policy.
//!
//! This crate owns the byte layouts memdb writes into segments and catalog rows (segment pages,
//! entry headers, footers, trailers, SGM item records, lists of u64 ids, the op log's packed
//! runs, scrapbook page layouts,
//! HNSW graph blocks) and every parser of outside bytes it reads (JSONL items, LoCoMo
//! conversations, e-mail, JPEG photos, the encoder checkpoint's safetensors index, and the file
//! sniffing that names what an importer does not take). It does not own the flat vector block (SPEC.md §5.1): `memdb-vectors` reads that
//! in place as typed slices (`layout.rs`), and an HNSW block carries one as an opaque section;
//! deleted rows and the Q-matrix are roaring bitmaps in roaring's own portable format. SPEC.md is the normative description; the golden tests in `tests/golden.rs` (and the vector
//! crate's `hnsw_block_golden.rs`) build the expected bytes from SPEC.md independently of these
//! encoders.
//!
//! Architecture invariant: nothing here panics on any input. Every decoder takes `&[u8]` or
//! `&str`, bounds-checks every read and returns a typed [`FormatError`] or [`ImportError`].
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod bytes;
pub mod caption;
mod error;
pub mod export;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod hnsw;
pub mod id_list;
pub mod import;
pub mod item;
pub mod key_header;
pub mod op_batch;
pub mod page_layout;
pub mod safetensors;
pub mod segment;

pub use bytes::{crc32c, u64_list, u64_list_bytes};
pub use error::{FormatError, ImportError, ImportErrorKind};
