//! The key header of an encrypted store (`<store>/KEY`, SPEC.md §3.7): the bytes that say how
//! a passphrase or key file unwraps the store's data key. No cryptography happens here; this
//! module owns the layout, its bounds and its checksum, so the engine's key code and the fuzz
//! target read the same bytes the same way.
//!
//! Invariants: a decoded header's KDF parameters are within [`KdfBounds`] (a copied or damaged
//! header cannot make an open allocate gigabytes or spin for minutes); every reserved byte is
//! zero; the CRC covers every byte before it, so damage is told apart from a wrong passphrase
//! (which only the wrap's AEAD tag can tell).

use crate::FormatError;
use crate::bytes::{PutLe, Reader, crc32c};

/// Magic at byte 0 of the key header.
pub const KEY_MAGIC: [u8; 8] = *b"MEMDBKEY";
/// The key header version this build writes and reads.
pub const KEY_HEADER_VERSION: u32 = 1;
/// Bytes in a key header.
pub const KEY_HEADER_BYTES: usize = 160;
/// Cipher code of XChaCha20-Poly1305 (the only one of version 1).
pub const CIPHER_XCHACHA20_POLY1305: u8 = 1;
/// Offset of the wrap nonce: the bytes before it are the wrap's associated data.
pub const WRAP_AD_BYTES: usize = 80;

const CRC_AT: usize = KEY_HEADER_BYTES - 4;

/// How the key-encryption key is derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kdf {
    /// A passphrase through Argon2id (RFC 9106, version 0x13) with these costs.
    Argon2id {
        /// Memory in KiB.
        memory_kib: u32,
        /// Passes over the memory.
        iterations: u32,
        /// Lanes.
        parallelism: u32,
    },
    /// A 32-byte key file through HKDF-SHA256 (the file is already uniformly random).
    KeyFile,
}

impl Kdf {
    fn code(self) -> u8 {
        match self {
            Kdf::Argon2id { .. } => 1,
            Kdf::KeyFile => 2,
        }
    }
}

/// The Argon2id costs a header may name: RFC 9106's floor (8 KiB per lane) and ceilings a
/// phone can meet (4 GiB, 64 passes, 16 lanes).
#[derive(Debug, Clone, Copy)]
pub struct KdfBounds;

impl KdfBounds {
    /// Most memory a header may ask for, in KiB (4 GiB).
    pub const MAX_MEMORY_KIB: u32 = 4 << 20;
    /// Most passes.
    pub const MAX_ITERATIONS: u32 = 64;
    /// Most lanes.
    pub const MAX_PARALLELISM: u32 = 16;

    /// Why `kdf` is out of bounds, or `None`.
    pub fn violation(kdf: Kdf) -> Option<String> {
        let Kdf::Argon2id {
            memory_kib,
            iterations,
            parallelism,
        } = kdf
        else {
            return None;
        };
        if !(1..=Self::MAX_PARALLELISM).contains(&parallelism) {
            return Some(format!(
                "Argon2id lanes {parallelism} (1 to {})",
                Self::MAX_PARALLELISM
            ));
        }
        if !(1..=Self::MAX_ITERATIONS).contains(&iterations) {
            return Some(format!(
                "Argon2id passes {iterations} (1 to {})",
                Self::MAX_ITERATIONS
            ));
        }
        if memory_kib < 8 * parallelism || memory_kib > Self::MAX_MEMORY_KIB {
            return Some(format!(
                "Argon2id memory {memory_kib} KiB ({} to {} KiB with {parallelism} lanes)",
                8 * parallelism,
                Self::MAX_MEMORY_KIB
            ));
        }
        None
    }
}

/// A decoded key header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHeader {
    /// How the key-encryption key is derived from what the person holds.
    pub kdf: Kdf,
    /// The store's key id: random, bound into every sealed page's associated data, so a page
    /// of another store never opens here even under the same passphrase.
    pub store_key_id: [u8; 16],
    /// The KDF's salt.
    pub salt: [u8; 32],
    /// The nonce the data key was wrapped with.
    pub wrap_nonce: [u8; 24],
    /// The data key, encrypted under the key-encryption key.
    pub wrapped_key: [u8; 32],
    /// The wrap's Poly1305 tag (associated data: bytes 0..80 of the header).
    pub wrap_tag: [u8; 16],
}

impl KeyHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; KEY_HEADER_BYTES] {
        let mut out = self.associated_data().to_vec();
        out.extend_from_slice(&self.wrap_nonce);
        out.extend_from_slice(&self.wrapped_key);
        out.extend_from_slice(&self.wrap_tag);
        out.put_u32(0); // reserved
        let crc = crc32c(&out[..CRC_AT]);
        out.put_u32(crc);
        let mut header = [0u8; KEY_HEADER_BYTES];
        header.copy_from_slice(&out);
        header
    }

    /// Bytes 0..80: everything the wrap authenticates besides the key itself (magic, version,
    /// cipher, KDF and its costs, key id, salt). Changing a cost or the salt makes a passphrase
    /// derive another key-encryption key, and the unwrap fails rather than running a weaker KDF.
    pub fn associated_data(&self) -> [u8; WRAP_AD_BYTES] {
        let mut out = Vec::with_capacity(WRAP_AD_BYTES);
        out.extend_from_slice(&KEY_MAGIC);
        out.put_u32(KEY_HEADER_VERSION);
        out.put_u8(CIPHER_XCHACHA20_POLY1305);
        out.put_u8(self.kdf.code());
        out.put_u16(0); // reserved
        let (memory_kib, iterations, parallelism) = match self.kdf {
            Kdf::Argon2id {
                memory_kib,
                iterations,
                parallelism,
            } => (memory_kib, iterations, parallelism),
            Kdf::KeyFile => (0, 0, 0),
        };
        out.put_u32(memory_kib);
        out.put_u32(iterations);
        out.put_u32(parallelism);
        out.put_u32(0); // reserved
        out.extend_from_slice(&self.store_key_id);
        out.extend_from_slice(&self.salt);
        let mut ad = [0u8; WRAP_AD_BYTES];
        ad.copy_from_slice(&out);
        ad
    }

    /// Reads a key header: exactly [`KEY_HEADER_BYTES`] bytes.
    pub fn decode(bytes: &[u8]) -> Result<KeyHeader, FormatError> {
        const WHAT: &str = "key header";
        let invalid = |offset: usize, reason: String| FormatError::Invalid {
            what: WHAT,
            offset: offset as u64,
            reason,
        };
        let mut r = Reader::new(WHAT, bytes);
        let head = r.take(KEY_HEADER_BYTES)?;
        if r.remaining() != 0 {
            return Err(invalid(
                KEY_HEADER_BYTES,
                format!("{} bytes after the header", r.remaining()),
            ));
        }
        if head[..8] != KEY_MAGIC {
            return Err(FormatError::BadMagic {
                what: WHAT,
                offset: 0,
                found: head[..8].to_vec(),
            });
        }
        let stored = Reader::new(WHAT, &head[CRC_AT..]).u32()?;
        FormatError::check_crc(WHAT, 0, stored, &head[..CRC_AT])?;
        let mut f = Reader::new(WHAT, &head[8..]);
        FormatError::check_version(WHAT, f.u32()?, KEY_HEADER_VERSION)?;
        let cipher = f.u8()?;
        if cipher != CIPHER_XCHACHA20_POLY1305 {
            return Err(invalid(
                12,
                format!("cipher {cipher} (version 1 knows 1, XChaCha20-Poly1305)"),
            ));
        }
        let kdf_code = f.u8()?;
        let reserved0 = f.u16()?;
        let (memory_kib, iterations, parallelism) = (f.u32()?, f.u32()?, f.u32()?);
        let reserved1 = f.u32()?;
        if reserved0 != 0 || reserved1 != 0 {
            return Err(invalid(14, "reserved bytes are not zero".into()));
        }
        let kdf = match kdf_code {
            1 => Kdf::Argon2id {
                memory_kib,
                iterations,
                parallelism,
            },
            2 if (memory_kib, iterations, parallelism) == (0, 0, 0) => Kdf::KeyFile,
            2 => {
                return Err(invalid(16, "a key-file header has Argon2id costs".into()));
            }
            other => return Err(invalid(13, format!("KDF {other} (1 Argon2id, 2 key file)"))),
        };
        if let Some(reason) = KdfBounds::violation(kdf) {
            return Err(invalid(16, reason));
        }
        let store_key_id = f.array()?;
        let salt = f.array()?;
        let wrap_nonce = f.array()?;
        let wrapped_key = f.array()?;
        let wrap_tag = f.array()?;
        if f.u32()? != 0 {
            return Err(invalid(152, "reserved bytes are not zero".into()));
        }
        Ok(KeyHeader {
            kdf,
            store_key_id,
            salt,
            wrap_nonce,
            wrapped_key,
            wrap_tag,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kdf: Kdf) -> KeyHeader {
        KeyHeader {
            kdf,
            store_key_id: [1; 16],
            salt: [2; 32],
            wrap_nonce: [3; 24],
            wrapped_key: [4; 32],
            wrap_tag: [5; 16],
        }
    }

    #[test]
    fn headers_round_trip_and_the_wrap_covers_everything_before_the_nonce() {
        for kdf in [
            Kdf::KeyFile,
            Kdf::Argon2id {
                memory_kib: 65536,
                iterations: 3,
                parallelism: 1,
            },
        ] {
            let h = header(kdf);
            let bytes = h.encode();
            assert_eq!(KeyHeader::decode(&bytes).unwrap(), h);
            assert_eq!(bytes[..WRAP_AD_BYTES], h.associated_data());
            assert_eq!(bytes[WRAP_AD_BYTES..WRAP_AD_BYTES + 24], [3; 24]);
        }
    }

    #[test]
    fn damage_truncation_and_out_of_bounds_costs_are_typed_errors() {
        let bytes = header(Kdf::KeyFile).encode();
        assert!(matches!(
            KeyHeader::decode(&bytes[..100]),
            Err(FormatError::Truncated { .. })
        ));
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(KeyHeader::decode(&longer).is_err());
        for at in [0, 9, 40, 90, 120, 150, 157] {
            let mut flipped = bytes;
            flipped[at] ^= 0x10;
            assert!(KeyHeader::decode(&flipped).is_err(), "flip at {at}");
        }
        // A header whose CRC was fixed up after raising the memory cost past the bound.
        let mut greedy = header(Kdf::Argon2id {
            memory_kib: KdfBounds::MAX_MEMORY_KIB + 1,
            iterations: 1,
            parallelism: 1,
        })
        .encode();
        assert!(matches!(
            KeyHeader::decode(&greedy),
            Err(FormatError::Invalid { offset: 16, .. })
        ));
        greedy[0] = b'X';
        assert!(matches!(
            KeyHeader::decode(&greedy),
            Err(FormatError::BadMagic { .. })
        ));
    }
}
