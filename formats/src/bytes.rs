//! The little-endian, varint and CRC32C helpers of the byte formats this crate owns.
//!
//! Every multi-byte integer of those formats is little-endian (fixed width) or an unsigned
//! LEB128 varint (7 bits a byte, low group first) and goes through these functions, so the byte
//! order lives in one place. Reads are bounds-checked and return `FormatError`. (The flat vector
//! block of `memdb-vectors`, read in place as typed slices, keeps its own header accessors.)

use crate::FormatError;

/// CRC32C (Castagnoli) of `bytes`, hardware-accelerated where the CPU has it.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// A list of u64 ids as stored in catalog rows (a page's parts, a graph path's items):
/// 8 little-endian bytes each, no header.
pub fn u64_list_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Reads a list written by [`u64_list_bytes`].
pub fn u64_list(what: &'static str, bytes: &[u8]) -> Result<Vec<u64>, FormatError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(FormatError::Invalid {
            what,
            offset: 0,
            reason: format!("{} bytes is not a list of u64", bytes.len()),
        });
    }
    let mut reader = Reader::new(what, bytes);
    (0..bytes.len() / 8).map(|_| reader.u64()).collect()
}

/// A bounds-checked little-endian reader over a byte slice.
pub(crate) struct Reader<'a> {
    what: &'static str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(what: &'static str, bytes: &'a [u8]) -> Self {
        Reader {
            what,
            bytes,
            pos: 0,
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let have = self.remaining();
        if n > have {
            return Err(FormatError::Truncated {
                what: self.what,
                offset: self.pos as u64,
                need: n as u64,
                have: have as u64,
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, FormatError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A length stored as u64, as `usize`; one beyond the address space is reported as what
    /// it is, a length the bytes cannot hold.
    pub(crate) fn take_u64(&mut self, n: u64) -> Result<&'a [u8], FormatError> {
        match usize::try_from(n) {
            Ok(n) => self.take(n),
            Err(_) => Err(FormatError::Truncated {
                what: self.what,
                offset: self.pos as u64,
                need: n,
                have: self.remaining() as u64,
            }),
        }
    }

    /// From here on, errors name `what` (a part of the structure the reader started with).
    pub(crate) fn enter(&mut self, what: &'static str) {
        self.what = what;
    }

    /// An unsigned LEB128 varint of at most 10 bytes whose value fits in 64 bits.
    pub(crate) fn varint(&mut self) -> Result<u64, FormatError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                // The tenth byte holds bit 63 only.
                if shift == 63 && b > 1 {
                    return Err(self.invalid(start, "varint overflows 64 bits".to_owned()));
                }
                return Ok(v);
            }
        }
        Err(self.invalid(start, "varint is longer than 10 bytes".to_owned()))
    }

    /// A varint count of items that take at least `min_bytes` each (`min_bytes` ≥ 1); a count
    /// the bytes left cannot hold is refused before anything is allocated for it.
    pub(crate) fn varint_count(
        &mut self,
        what: &str,
        min_bytes: u64,
    ) -> Result<usize, FormatError> {
        let start = self.pos;
        let count = self.varint()?;
        let room = self.remaining() as u64 / min_bytes.max(1);
        if count > room {
            return Err(self.invalid(
                start,
                format!("{what} {count} exceeds the {} bytes left", self.remaining()),
            ));
        }
        // `count` ≤ the bytes left, so it fits in usize.
        Ok(count as usize)
    }

    /// A varint that must fit in 32 bits; `field` names it in the error.
    pub(crate) fn varint_u32(&mut self, field: &str) -> Result<u32, FormatError> {
        let start = self.pos;
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.invalid(start, format!("{field} {v} is over 32 bits")))
    }

    /// An [`FormatError::Invalid`] of this reader's structure at `offset`.
    pub(crate) fn invalid(&self, offset: usize, reason: String) -> FormatError {
        FormatError::Invalid {
            what: self.what,
            offset: offset as u64,
            reason,
        }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }
}

/// Appends little-endian values to a byte vector.
pub(crate) trait PutLe {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_i64(&mut self, v: i64);
    /// An unsigned LEB128 varint, as [`Reader::varint`] reads it.
    fn put_varint(&mut self, v: u64);
}

impl PutLe for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_i64(&mut self, v: i64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.push(v as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_lists_round_trip_and_refuse_a_ragged_tail() {
        let values = [0, 1, u64::MAX, 0x0102_0304_0506_0708];
        let bytes = u64_list_bytes(&values);
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[24..], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(u64_list("t", &bytes).unwrap(), values);
        assert!(u64_list("t", &bytes[..31]).is_err());
        assert_eq!(u64_list("t", &[]).unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn varints_round_trip_and_refuse_overlong_or_overflowing_bytes() {
        for v in [
            0,
            1,
            0x7f,
            0x80,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut bytes = Vec::new();
            bytes.put_varint(v);
            assert!(bytes.len() <= 10);
            let mut r = Reader::new("t", &bytes);
            assert_eq!(r.varint().unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
        let mut max = Vec::new();
        max.put_varint(u64::MAX);
        assert_eq!(
            max,
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        // Bit 64 set in the tenth byte; an eleventh byte; a varint cut short.
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new("t", &overflow).varint().is_err());
        assert!(Reader::new("t", &[0x80; 11]).varint().is_err());
        assert!(matches!(
            Reader::new("t", &[0x80]).varint(),
            Err(FormatError::Truncated { .. })
        ));
        let mut big = Vec::new();
        big.put_varint(1 << 32);
        assert!(Reader::new("t", &big).varint_u32("w").is_err());
    }

    #[test]
    fn a_u64_length_beyond_the_bytes_is_truncation() {
        let mut r = Reader::new("t", &[1, 2, 3]);
        assert!(matches!(
            r.take_u64(u64::MAX),
            Err(FormatError::Truncated {
                need: u64::MAX,
                have: 3,
                ..
            })
        ));
        assert_eq!(r.take_u64(2).unwrap(), &[1, 2]);
    }
}
