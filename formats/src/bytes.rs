//! The only little-endian read/write and CRC32C helpers of the on-disk formats.
//!
//! Every multi-byte integer memdb writes is little-endian and goes through these functions, so
//! the byte order lives in one place. Reads are bounds-checked and return `FormatError`.

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
        let have = self.bytes.len().saturating_sub(self.pos);
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

    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}

/// Appends little-endian values to a byte vector.
pub(crate) trait PutLe {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_i64(&mut self, v: i64);
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
}

#[cfg(test)]
mod u64_list_tests {
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
}
