//! The vector index's error type: what was wrong, with the numbers needed to find it.

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
    /// Persisted index bytes end before a section they announce.
    #[error("{what}: section `{section}` needs {need} bytes at offset {at}, only {have} remain")]
    Truncated {
        /// Which persisted form.
        what: &'static str,
        /// Section being read.
        section: &'static str,
        /// Offset of the section.
        at: usize,
        /// Bytes the section needs.
        need: u64,
        /// Bytes left.
        have: usize,
    },
    /// Persisted index bytes do not match their checksum (bit rot or a torn write).
    #[error("{what}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch {
        /// Which persisted form.
        what: &'static str,
        /// Checksum in the trailer.
        stored: u32,
        /// Checksum of the bytes.
        computed: u32,
    },
    /// A persisted graph is structurally invalid.
    #[error("HNSW graph node {node}, layer {layer}: {why} (value {value})")]
    BadGraph {
        /// Node (row) whose links are wrong.
        node: u64,
        /// Layer of the link list.
        layer: u8,
        /// What is wrong.
        why: &'static str,
        /// The offending value.
        value: u64,
    },
    /// The persisted deleted-rows bitmap cannot be decoded or names rows out of range.
    #[error("deleted-rows bitmap is invalid: {why}")]
    BadDeleted {
        /// Decoder message or range problem.
        why: String,
    },
}
