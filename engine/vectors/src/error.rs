//! The vector index's error type: what was wrong, with the numbers needed to find it. The bytes
//! of a persisted HNSW block are read by `memdb-formats`; its errors arrive as
//! [`VectorError::Format`].

/// Everything that can go wrong building, reading or searching a flat vector index.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum VectorError {
    /// The block is shorter than its fixed header.
    #[error("vector block is {len} bytes, shorter than its {need}-byte header")]
    TooShort {
        /// Bytes given.
        len: usize,
        /// Header size.
        need: usize,
    },
    /// The block does not start with the vector-block magic.
    #[error("not a vector block: magic is {found:02x?}")]
    BadMagic {
        /// The first eight bytes found.
        found: [u8; 8],
    },
    /// The block was written by an incompatible version.
    #[error("vector block version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion {
        /// Version in the header.
        found: u16,
        /// Version this build reads.
        supported: u16,
    },
    /// The precision code in the header is unknown.
    #[error("unknown vector precision code {code} (known: 1 = f32, 2 = f16, 3 = i8)")]
    UnknownPrecision {
        /// The code found.
        code: u8,
    },
    /// A header field holds an impossible value.
    #[error("vector block header field `{field}` = {value} is invalid: {why}")]
    BadHeader {
        /// Field name.
        field: &'static str,
        /// Value found.
        value: u64,
        /// What it should be.
        why: &'static str,
    },
    /// The block's length does not match what its header describes.
    #[error(
        "vector block of {rows} rows x {dim} dims should be {expected} bytes, found {found} \
         (truncated or padded block)"
    )]
    LengthMismatch {
        /// Rows in the header.
        rows: u64,
        /// Dimension in the header.
        dim: u32,
        /// Length the layout needs.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// The block does not start on a 64-byte boundary.
    #[error(
        "vector block at address {addr:#x} is not 64-byte aligned: map the segment so blocks \
         start at 64-byte offsets, or copy the bytes with FlatIndex::from_bytes"
    )]
    Misaligned {
        /// Address of the first byte.
        addr: usize,
    },
    /// The dimension is zero or too large.
    #[error("vector dimension {dim} is invalid: must be 1..={max}")]
    BadDimension {
        /// Dimension asked for.
        dim: usize,
        /// Largest supported.
        max: usize,
    },
    /// A vector (stored or query) has the wrong number of values.
    #[error("{what} has {found} values, the index has dimension {expected}")]
    DimensionMismatch {
        /// Which vector (`vector`, `query`, `query batch`).
        what: &'static str,
        /// The index's dimension.
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// A vector holds NaN or an infinity, which has no place in a ranking.
    #[error("{what} {index} has a non-finite value at position {position}")]
    NonFinite {
        /// Which vector (`vector`, `query`).
        what: &'static str,
        /// Row or query number.
        index: usize,
        /// Position of the bad value.
        position: usize,
    },
    /// The index is full: row numbers are u32 (they index roaring bitmaps).
    #[error("a flat vector index holds at most {max} rows")]
    TooManyRows {
        /// The limit.
        max: u64,
    },
    /// The layout's size does not fit in memory addresses.
    #[error("a vector block of {rows} rows x {dim} dims does not fit in memory")]
    SizeOverflow {
        /// Rows.
        rows: u64,
        /// Dimension.
        dim: u32,
    },
    /// An index needs stored vectors of another precision.
    #[error("{what} needs {expected} vectors, found {found}")]
    WrongPrecision {
        /// Which index or part asked.
        what: &'static str,
        /// Precision it needs.
        expected: crate::Precision,
        /// Precision given.
        found: crate::Precision,
    },
    /// Two blocks that must describe the same rows do not.
    #[error("{what}: {why}")]
    IndexMismatch {
        /// Which pairing.
        what: &'static str,
        /// What differs.
        why: String,
    },
    /// A build or search parameter is out of range.
    #[error("parameter `{name}` = {value} is invalid: {why}")]
    BadParameter {
        /// Parameter name.
        name: &'static str,
        /// Value given.
        value: u64,
        /// Allowed range.
        why: &'static str,
    },
    /// A persisted HNSW block's bytes do not decode (SPEC.md §5.2: header, section lengths,
    /// checksum, graph structure), as `memdb-formats` reads them.
    #[error("persisted HNSW index: {0}")]
    Format(#[from] memdb_formats::FormatError),
    /// The persisted deleted-rows bitmap cannot be decoded or names rows out of range.
    #[error("deleted-rows bitmap is invalid: {why}")]
    BadDeleted {
        /// Decoder message or range problem.
        why: String,
    },
}
