//! memdb's byte formats: bytes to typed values and back, with no I/O policy.
//!
//! This crate owns every byte layout memdb writes (segment pages, entry headers, footers,
//! trailers, SGM item records) and every parser of outside bytes it reads (JSONL items,
//! LoCoMo conversations, e-mail, JPEG photos, and the file sniffing that names what an
//! importer does not take). SPEC.md is the normative description; the golden tests in
//! `tests/golden.rs` build the expected bytes from SPEC.md independently of these encoders.
//!
//! Architecture invariant: nothing here panics on any input. Every decoder takes `&[u8]` or
//! `&str`, bounds-checks every read and returns a typed [`FormatError`] or [`ImportError`].
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod bytes;
mod error;
pub mod export;
pub mod import;
pub mod item;
pub mod segment;

pub use bytes::{crc32c, u64_list, u64_list_bytes};
pub use error::{FormatError, ImportError, ImportErrorKind};
