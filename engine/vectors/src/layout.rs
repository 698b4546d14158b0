//! The byte layout of one flat-index block, the 64-byte-aligned buffer that owns a block, and
//! [`FlatView`], which reads a block in place from `&[u8]` (for example a mapped segment).
//!
//! A block is one contiguous run of bytes; every section starts on a 64-byte boundary, so with
//! the block itself 64-byte aligned every stored row is cache-line aligned for the SIMD kernels.
//! All integers and floats are little-endian.
//!
//! ```text
//! BLOCK := [HEADER 64 bytes][VECTORS][SCALES (i8, i4)][IDS][TIMES][SOURCES], each padded to 64
//! HEADER:
//!   8 bytes: magic "MDBVECS\x00"
//!   2 bytes: version (u16) = 1
//!   1 byte:  precision code (1 = f32, 2 = f16, 3 = i8, 4 = i4)
//!   1 byte:  reserved, 0
//!   4 bytes: dim (u32), 1..=65536
//!   8 bytes: rows (u64), at most u32::MAX
//!   4 bytes: row stride in bytes (u32) = the row's bytes (dim × bits per value / 8, rounded
//!            up to a byte), rounded up to 64
//!  36 bytes: reserved, 0
//! VECTORS: rows × stride bytes; row r at r × stride, its dim values then zero padding (i4: the
//!          packed nibbles of `crate::i4`, ⌈dim/2⌉ bytes)
//! SCALES:  rows × f32, the quantization scale of each i8 or i4 row (absent for f32 and f16)
//! IDS:     rows × u64, the item id of each row
//! TIMES:   rows × i64, the item's time in unix seconds
//! SOURCES: rows × u8, the item's source code
//! ```
//!
//! Deleted rows are not part of the block: a block is immutable once written, and deletions
//! live in a roaring bitmap beside it.
//!
//! **Invariant:** a [`FlatView`] exists only over bytes whose length equals the layout its
//! header describes and whose start is 64-byte aligned; typed sections are then cast with
//! `bytemuck` (which re-checks size and alignment) and never fail.

use bytemuck::{Pod, Zeroable};

use crate::VectorError;
use crate::kernels::{F16, Precision, f16_from_bits};

#[cfg(not(target_endian = "little"))]
compile_error!("vector blocks are read in place as little-endian arrays");

/// Block magic.
pub(crate) const MAGIC: [u8; 8] = *b"MDBVECS\x00";
/// Block format version this build writes and reads.
pub(crate) const VERSION: u16 = 1;
/// Alignment of the block and of each section.
pub(crate) const ALIGN: usize = 64;
/// Size of the header.
pub(crate) const HEADER_LEN: usize = 64;
/// Largest supported dimension.
pub(crate) const MAX_DIM: usize = 65_536;
/// Largest number of rows (row numbers are u32, to index roaring bitmaps).
pub(crate) const MAX_ROWS: u64 = u32::MAX as u64;

pub(crate) const MAGIC_OFFSET: usize = 0;
pub(crate) const VERSION_OFFSET: usize = MAGIC_OFFSET + MAGIC.len();
pub(crate) const PRECISION_OFFSET: usize = VERSION_OFFSET + size_of::<u16>();
pub(crate) const RESERVED_OFFSET: usize = PRECISION_OFFSET + size_of::<u8>();
pub(crate) const DIM_OFFSET: usize = RESERVED_OFFSET + size_of::<u8>();
pub(crate) const ROWS_OFFSET: usize = DIM_OFFSET + size_of::<u32>();
pub(crate) const STRIDE_OFFSET: usize = ROWS_OFFSET + size_of::<u64>();
pub(crate) const HEADER_USED: usize = STRIDE_OFFSET + size_of::<u32>();
const _: () = assert!(HEADER_USED <= HEADER_LEN);

/// Where each section of a block lies, derived from precision, dim and rows alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) precision: Precision,
    pub(crate) dim: usize,
    pub(crate) rows: usize,
    /// Bytes from one row's start to the next.
    pub(crate) stride: usize,
    pub(crate) vectors_at: usize,
    pub(crate) scales_at: usize,
    pub(crate) ids_at: usize,
    pub(crate) times_at: usize,
    pub(crate) sources_at: usize,
    /// Whole block length, a multiple of [`ALIGN`].
    pub(crate) block_len: usize,
}

fn round_up(value: usize) -> Option<usize> {
    value.checked_add(ALIGN - 1).map(|v| v / ALIGN * ALIGN)
}

impl Layout {
    /// The layout of `rows` vectors of `dim` values at `precision`.
    pub(crate) fn new(precision: Precision, dim: usize, rows: usize) -> Result<Self, VectorError> {
        if dim == 0 || dim > MAX_DIM {
            return Err(VectorError::BadDimension { dim, max: MAX_DIM });
        }
        if rows as u64 > MAX_ROWS {
            return Err(VectorError::TooManyRows { max: MAX_ROWS });
        }
        let overflow = || VectorError::SizeOverflow {
            rows: rows as u64,
            dim: dim as u32,
        };
        let section = |at: usize, bytes: Option<usize>| -> Result<usize, VectorError> {
            bytes
                .and_then(|b| at.checked_add(b))
                .and_then(round_up)
                .ok_or_else(overflow)
        };
        let stride = round_up(precision.row_bytes(dim)).ok_or_else(overflow)?;
        let vectors_at = HEADER_LEN;
        let scales_at = section(vectors_at, rows.checked_mul(stride))?;
        let scale_bytes = if precision.scaled() {
            rows.checked_mul(4)
        } else {
            Some(0)
        };
        let ids_at = section(scales_at, scale_bytes)?;
        let times_at = section(ids_at, rows.checked_mul(8))?;
        let sources_at = section(times_at, rows.checked_mul(8))?;
        let block_len = section(sources_at, Some(rows))?;
        Ok(Self {
            precision,
            dim,
            rows,
            stride,
            vectors_at,
            scales_at,
            ids_at,
            times_at,
            sources_at,
            block_len,
        })
    }

    /// The 64-byte header describing this layout.
    pub(crate) fn header(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[MAGIC_OFFSET..VERSION_OFFSET].copy_from_slice(&MAGIC);
        h[VERSION_OFFSET..PRECISION_OFFSET].copy_from_slice(&VERSION.to_le_bytes());
        h[PRECISION_OFFSET] = self.precision.code();
        h[DIM_OFFSET..ROWS_OFFSET].copy_from_slice(&(self.dim as u32).to_le_bytes());
        h[ROWS_OFFSET..STRIDE_OFFSET].copy_from_slice(&(self.rows as u64).to_le_bytes());
        h[STRIDE_OFFSET..HEADER_USED].copy_from_slice(&(self.stride as u32).to_le_bytes());
        h
    }

    /// Parses and checks a header; `bytes` is the whole block.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, VectorError> {
        let header = bytes.get(..HEADER_LEN).ok_or(VectorError::TooShort {
            len: bytes.len(),
            need: HEADER_LEN,
        })?;
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&header[MAGIC_OFFSET..VERSION_OFFSET]);
        if magic != MAGIC {
            return Err(VectorError::BadMagic { found: magic });
        }
        let version = u16::from_le_bytes([header[VERSION_OFFSET], header[VERSION_OFFSET + 1]]);
        if version != VERSION {
            return Err(VectorError::UnsupportedVersion {
                found: version,
                supported: VERSION,
            });
        }
        let code = header[PRECISION_OFFSET];
        let precision =
            Precision::try_from_code(code).ok_or(VectorError::UnknownPrecision { code })?;
        let dim = get_u32(header, DIM_OFFSET);
        let rows = get_u64(header, ROWS_OFFSET);
        let stride = get_u32(header, STRIDE_OFFSET);
        if header[RESERVED_OFFSET] != 0 || header[HEADER_USED..].iter().any(|&b| b != 0) {
            return Err(VectorError::BadHeader {
                field: "reserved",
                value: 0,
                why: "reserved header bytes must be zero",
            });
        }
        if rows > MAX_ROWS {
            return Err(VectorError::BadHeader {
                field: "rows",
                value: rows,
                why: "at most u32::MAX rows",
            });
        }
        let layout = Self::new(precision, dim as usize, rows as usize)?;
        if layout.stride != stride as usize {
            return Err(VectorError::BadHeader {
                field: "stride",
                value: u64::from(stride),
                why: "must be the row's bytes rounded up to 64",
            });
        }
        if bytes.len() != layout.block_len {
            return Err(VectorError::LengthMismatch {
                rows,
                dim,
                expected: layout.block_len,
                found: bytes.len(),
            });
        }
        Ok(layout)
    }

    /// Row stride in elements of the stored type (bytes for i4, whose rows are packed bytes).
    pub(crate) fn stride_values(&self) -> usize {
        self.stride / self.precision.bits_per_value().div_ceil(8)
    }
}

fn get_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn get_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// One cache line: the allocation unit of [`AlignedBuf`].
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u8; ALIGN]);

/// A zero-initialised byte buffer whose first byte is 64-byte aligned.
#[derive(Clone)]
pub(crate) struct AlignedBuf {
    lines: Vec<Line>,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes.
    pub(crate) fn zeroed(len: usize) -> Self {
        // Advise before the first write: a large allocation arrives as untouched pages, and
        // only pages first touched after the advice are faulted in as huge pages.
        let count = len.div_ceil(ALIGN);
        let mut lines: Vec<Line> = Vec::with_capacity(count);
        advise_huge_pages(lines.spare_capacity_mut().as_ptr() as usize, count * ALIGN);
        lines.resize(count, Line::zeroed());
        Self { lines, len }
    }

    /// The bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<Line, u8>(&self.lines)[..self.len]
    }

    /// The bytes, writable.
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut::<Line, u8>(&mut self.lines)[..self.len]
    }
}

/// Buffers at least this large ask for transparent huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks the kernel to back the 2 MiB-aligned interior of a large allocation (`len` bytes at
/// address `start`) with transparent huge
/// pages. A flat scan streams the whole buffer for every query: with 4 KiB pages a 1.5 GB block
/// costs ~375,000 TLB misses per query, with 2 MiB pages ~750. (numpy gives its large arrays the
/// same advice, so faiss's peer rows in the bench already have it.) Only advice: where THP is
/// off or the call fails, nothing changes but speed.
fn advise_huge_pages(start: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        if len < HUGE_PAGE_MIN_BYTES {
            return;
        }
        let first = start.next_multiple_of(HUGE_PAGE_BYTES);
        let end = (start + len) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        if end <= first {
            return;
        }
        #[allow(unsafe_code)]
        // SAFETY: `[first, end)` lies inside the caller's live allocation and starts on a
        // page boundary; MADV_HUGEPAGE changes only how the kernel backs those pages, never their
        // contents or validity, so no Rust reference observes a difference. The result is
        // ignored on purpose (advice).
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// The stored vectors of a block, typed: row `r` starts at `r × stride` values
/// (`FlatView::layout.stride_values()`) and holds `dim` values, then zero padding.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Vectors<'a> {
    /// f32 rows.
    F32(&'a [f32]),
    /// f16 rows (IEEE binary16 bits).
    F16(&'a [F16]),
    /// i8 rows; row `r`'s value `i` stands for `value × scales[r]`.
    I8(&'a [i8]),
    /// i4 rows, packed two values per byte (`crate::i4`); value `i` stands for
    /// `(nibble − 8) × scales[r]`.
    I4(&'a [u8]),
}

/// A read-only flat-index block viewed in place: vectors and per-row columns as typed slices
/// over the block's bytes, with no copy.
///
/// A view comes only from [`FlatView::from_bytes`] (or [`FlatIndex::view`](crate::FlatIndex::view)),
/// which checks the block, and its fields are private, so its slices always agree with its
/// layout: the scans index them without further checks. Outside this crate the columns are read
/// through [`ids`](Self::ids), [`times`](Self::times), [`sources`](Self::sources) and a row's
/// values through [`row_f32`](Self::row_f32).
#[derive(Clone, Copy, Debug)]
pub struct FlatView<'a> {
    /// The block's layout (dimension, rows, stride, section offsets).
    pub(crate) layout: Layout,
    /// The stored rows.
    pub(crate) vectors: Vectors<'a>,
    /// Per-row i8 or i4 scales; empty for f32 and f16.
    pub(crate) scales: &'a [f32],
    /// Per-row ids (the store's keys).
    pub(crate) ids: &'a [u64],
    /// Per-row times (the time filter's column).
    pub(crate) times: &'a [i64],
    /// Per-row source codes (the source filter's column).
    pub(crate) sources: &'a [u8],
}

impl<'a> FlatView<'a> {
    /// Views a block in place. The bytes must start on a 64-byte boundary and be exactly one
    /// block long; anything else is an error, never a panic.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, VectorError> {
        let layout = Layout::parse(bytes)?;
        let addr = bytes.as_ptr() as usize;
        if !addr.is_multiple_of(ALIGN) {
            return Err(VectorError::Misaligned { addr });
        }
        // Sections lie inside `bytes` (Layout::parse checked the length) and start on 64-byte
        // boundaries of an aligned block, so these casts cannot fail; map any failure to the
        // alignment error rather than panic.
        let misaligned = |_| VectorError::Misaligned { addr };
        let section = |at: usize, len: usize| &bytes[at..at + len];
        let vector_bytes = section(layout.vectors_at, layout.rows * layout.stride);
        let vectors = match layout.precision {
            Precision::F32 => {
                Vectors::F32(bytemuck::try_cast_slice(vector_bytes).map_err(misaligned)?)
            }
            Precision::F16 => Vectors::F16(f16_from_bits(
                bytemuck::try_cast_slice(vector_bytes).map_err(misaligned)?,
            )),
            Precision::I8 => Vectors::I8(bytemuck::cast_slice(vector_bytes)),
            Precision::I4 => Vectors::I4(vector_bytes),
        };
        let scale_rows = if layout.precision.scaled() {
            layout.rows
        } else {
            0
        };
        Ok(Self {
            layout,
            vectors,
            scales: bytemuck::try_cast_slice(section(layout.scales_at, scale_rows * 4))
                .map_err(misaligned)?,
            ids: bytemuck::try_cast_slice(section(layout.ids_at, layout.rows * 8))
                .map_err(misaligned)?,
            times: bytemuck::try_cast_slice(section(layout.times_at, layout.rows * 8))
                .map_err(misaligned)?,
            sources: section(layout.sources_at, layout.rows),
        })
    }

    /// Number of rows, deleted ones included.
    pub fn len(&self) -> usize {
        self.layout.rows
    }

    /// Whether the block has no rows.
    pub fn is_empty(&self) -> bool {
        self.layout.rows == 0
    }

    /// Values per vector.
    pub fn dim(&self) -> usize {
        self.layout.dim
    }

    /// Stored precision.
    pub fn precision(&self) -> Precision {
        self.layout.precision
    }

    /// Item id of `row`, if the row exists.
    pub fn id(&self, row: u32) -> Option<u64> {
        self.ids.get(row as usize).copied()
    }

    /// Time (unix seconds) of `row`, if the row exists.
    pub fn time(&self, row: u32) -> Option<i64> {
        self.times.get(row as usize).copied()
    }

    /// Source code of `row`, if the row exists.
    pub fn source(&self, row: u32) -> Option<u8> {
        self.sources.get(row as usize).copied()
    }

    /// Every row's id (the store's key), in row order.
    pub fn ids(&self) -> &'a [u64] {
        self.ids
    }

    /// Every row's time, in row order.
    pub fn times(&self) -> &'a [i64] {
        self.times
    }

    /// Every row's source code, in row order.
    pub fn sources(&self) -> &'a [u8] {
        self.sources
    }

    /// The values of `row` as f32, if the row exists: f32 rows as stored, f16 rows widened
    /// (exactly), i8 and i4 rows times their scale (the values their scores are computed from).
    pub fn row_f32(&self, row: u32) -> Option<Vec<f32>> {
        let row = row as usize;
        let dim = self.dim();
        let at = row.checked_mul(self.layout.stride_values())?;
        // Elements of the stored type: i4 rows are their packed bytes.
        let len = match self.vectors {
            Vectors::I4(_) => crate::i4::packed_len(dim),
            _ => dim,
        };
        let values = at..at.checked_add(len)?;
        Some(match self.vectors {
            Vectors::F32(v) => v.get(values)?.to_vec(),
            Vectors::F16(v) => v
                .get(values)?
                .iter()
                .map(|h| half::f16::from_bits(h.0).to_f32())
                .collect(),
            Vectors::I8(v) => {
                let scale = *self.scales.get(row)?;
                v.get(values)?
                    .iter()
                    .map(|&q| f32::from(q) * scale)
                    .collect()
            }
            Vectors::I4(v) => {
                let scale = *self.scales.get(row)?;
                crate::i4::unpack_i4(v.get(values)?, dim)
                    .map(|q| f32::from(q) * scale)
                    .collect()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_page_advice_keeps_a_large_buffer_zeroed_aligned_and_writable() {
        for len in [
            0,
            1,
            63,
            65,
            HUGE_PAGE_MIN_BYTES - 1,
            3 * HUGE_PAGE_BYTES + 100,
        ] {
            let mut buf = AlignedBuf::zeroed(len);
            assert_eq!(buf.as_bytes().len(), len);
            assert_eq!(buf.as_bytes().as_ptr() as usize % ALIGN, 0);
            assert!(buf.as_bytes().iter().all(|&b| b == 0), "len {len}");
            for (i, b) in buf.as_bytes_mut().iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            assert!(
                buf.as_bytes()
                    .iter()
                    .enumerate()
                    .all(|(i, &b)| b == (i % 251) as u8),
                "len {len}"
            );
        }
    }

    #[test]
    fn header_offsets_match_the_documented_layout() {
        assert_eq!(
            (
                VERSION_OFFSET,
                PRECISION_OFFSET,
                RESERVED_OFFSET,
                DIM_OFFSET
            ),
            (8, 10, 11, 12)
        );
        assert_eq!((ROWS_OFFSET, STRIDE_OFFSET, HEADER_USED), (16, 24, 28));
    }

    #[test]
    fn sections_are_aligned_and_sized() {
        for precision in [Precision::F32, Precision::F16, Precision::I8, Precision::I4] {
            for (dim, rows) in [(1, 0), (1, 1), (3, 5), (383, 7), (384, 100), (385, 3)] {
                let l = Layout::new(precision, dim, rows).unwrap();
                assert!(
                    l.stride >= (dim * precision.bits_per_value()).div_ceil(8)
                        && l.stride.is_multiple_of(ALIGN)
                );
                for at in [
                    l.vectors_at,
                    l.scales_at,
                    l.ids_at,
                    l.times_at,
                    l.sources_at,
                    l.block_len,
                ] {
                    assert_eq!(at % ALIGN, 0, "{precision} {dim}x{rows}");
                }
                assert!(l.scales_at >= l.vectors_at + rows * l.stride);
                assert!(l.ids_at >= l.scales_at + if precision.scaled() { rows * 4 } else { 0 });
                assert!(l.times_at >= l.ids_at + rows * 8 && l.sources_at >= l.times_at + rows * 8);
                assert!(l.block_len >= l.sources_at + rows);
                let mut buf = AlignedBuf::zeroed(l.block_len);
                buf.as_bytes_mut()[..HEADER_LEN].copy_from_slice(&l.header());
                assert_eq!(Layout::parse(buf.as_bytes()).unwrap(), l);
                let view = FlatView::from_bytes(buf.as_bytes()).unwrap();
                assert_eq!(
                    (view.len(), view.dim(), view.precision()),
                    (rows, dim, precision)
                );
            }
        }
        assert_eq!(Layout::new(Precision::F32, 384, 10).unwrap().stride, 1536);
        assert_eq!(Layout::new(Precision::I8, 384, 10).unwrap().stride, 384);
    }

    #[test]
    fn bad_blocks_are_typed_errors() {
        let l = Layout::new(Precision::F16, 8, 4).unwrap();
        let mut buf = AlignedBuf::zeroed(l.block_len + ALIGN);
        buf.as_bytes_mut()[..HEADER_LEN].copy_from_slice(&l.header());
        let good = &buf.as_bytes()[..l.block_len];
        assert!(FlatView::from_bytes(good).is_ok());
        assert!(matches!(
            FlatView::from_bytes(&good[..10]),
            Err(VectorError::TooShort { len: 10, .. })
        ));
        assert!(matches!(
            FlatView::from_bytes(&buf.as_bytes()[..l.block_len - 1]),
            Err(VectorError::LengthMismatch { .. })
        ));
        assert!(matches!(
            FlatView::from_bytes(buf.as_bytes()),
            Err(VectorError::LengthMismatch { .. })
        ));
        // Same block one byte later: length is right, alignment is not.
        let mut shifted = AlignedBuf::zeroed(l.block_len + 1);
        shifted.as_bytes_mut()[1..].copy_from_slice(good);
        assert!(matches!(
            FlatView::from_bytes(&shifted.as_bytes()[1..]),
            Err(VectorError::Misaligned { .. })
        ));
        let corrupt = |at: usize, value: u8| {
            let mut b = good.to_vec();
            b[at] = value;
            let mut a = AlignedBuf::zeroed(b.len());
            a.as_bytes_mut().copy_from_slice(&b);
            FlatView::from_bytes(a.as_bytes()).map(|_| ())
        };
        assert!(matches!(
            corrupt(0, b'X'),
            Err(VectorError::BadMagic { .. })
        ));
        assert!(matches!(
            corrupt(VERSION_OFFSET, 2),
            Err(VectorError::UnsupportedVersion { found: 2, .. })
        ));
        assert!(matches!(
            corrupt(PRECISION_OFFSET, 9),
            Err(VectorError::UnknownPrecision { code: 9 })
        ));
        assert!(matches!(
            corrupt(DIM_OFFSET, 0),
            Err(VectorError::BadDimension { dim: 0, .. })
        ));
        assert!(matches!(
            corrupt(STRIDE_OFFSET, 1),
            Err(VectorError::BadHeader {
                field: "stride",
                ..
            })
        ));
        assert!(matches!(
            corrupt(40, 1),
            Err(VectorError::BadHeader {
                field: "reserved",
                ..
            })
        ));
        assert!(matches!(
            corrupt(ROWS_OFFSET + 6, 1),
            Err(VectorError::BadHeader { field: "rows", .. })
        ));
        assert!(matches!(
            corrupt(ROWS_OFFSET, 5),
            Err(VectorError::LengthMismatch { .. })
        ));
    }
}
