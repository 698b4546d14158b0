//! Encryption at rest: the store's data key, how a passphrase or a key file unwraps it, the
//! subkey each file is sealed under, and sealing one page (SPEC.md §3.7).
//!
//! The cipher is XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`). Its 192-bit nonce is
//! drawn from the OS for every page written, so no nonce counter has to survive a crash: a
//! page written again after one (the uncommitted tail past a segment's committed length, a
//! catalog page redb reuses) simply gets a fresh nonce, and 2^96 pages per key keep the chance of
//! a repeat negligible. It is constant-time in software, which matters on phones without AES
//! instructions, where AES-GCM would fall back to table lookups.
//!
//! Keys: a random 32-byte data key, wrapped (XChaCha20-Poly1305) under a key-encryption key
//! derived from a passphrase by Argon2id or from a 32-byte key file by HKDF-SHA256; the wrap's
//! associated data is the whole key header before it, so a header whose costs or salt were
//! edited fails to unwrap instead of running a weaker KDF. Every file is sealed under its own
//! subkey, HKDF-SHA256 of the data key: a segment's with a random salt of the segment's, kept
//! in the catalog and (segment format 2) on the segment's own header page, so a rebuild can
//! read a segment without the catalog. The salt is not secret; a retired segment is gone with
//! its file (before format 2 its key went with its catalog row: crypto-shredding).
//!
//! Invariants: key material lives in [`Zeroizing`] buffers (or ciphers that zeroize on drop)
//! and is never formatted; a page's associated data binds it to its store, its file and its
//! page number, so a page moved, swapped or taken from another store fails its tag.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Key, Tag, XChaCha20Poly1305, XNonce};
use memdb_formats::FormatError;
use memdb_formats::key_header::{Kdf, KdfBounds, KeyHeader};
use zeroize::Zeroizing;

/// Bytes at the end of every sealed page: the nonce (24) then the tag (16).
pub(crate) const PAGE_TAIL_BYTES: usize = 40;
/// Version of the page sealing (its associated data's layout), bound into every page.
const PAGE_SEAL_VERSION: u32 = 1;

/// Why a key could not be made, unwrapped or used, or a page not opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CryptoError {
    /// The passphrase or key file does not unwrap the data key.
    #[error("the passphrase or key file does not open this store")]
    WrongKey,
    /// The key header is damaged, truncated or of an unknown version.
    #[error("key header: {0}")]
    Header(#[from] FormatError),
    /// A passphrase was given for a key-file store, or the other way round.
    #[error("this store is unlocked with {expected}, not {given}")]
    WrongSecretKind {
        /// What the store's header says unlocks it.
        expected: &'static str,
        /// What was given.
        given: &'static str,
    },
    /// A key file is not 32 bytes, or a passphrase is empty.
    #[error("{0}")]
    BadSecret(String),
    /// What was asked cannot be done to this store (rekeying a store that is not encrypted,
    /// rebuilding an encrypted one without its catalog).
    #[error("{0}")]
    Unsupported(String),
    /// Argon2id refused its parameters.
    #[error("Argon2id: {0}")]
    Kdf(String),
    /// The OS random source failed.
    #[error("the OS random source failed: {0}")]
    Random(String),
    /// A page's tag does not verify: it was changed, moved from another place or store, or
    /// damaged.
    #[error(
        "{file} page {page}: the authentication tag does not verify (damaged, tampered, moved or from another store)"
    )]
    Tag {
        /// The file the page belongs to (`segment 000000000000002a`, `catalog`).
        file: String,
        /// The page number.
        page: u64,
    },
}

/// What a person unlocks a store with.
pub enum Secret {
    /// A passphrase (its UTF-8 bytes, as typed).
    Passphrase(Zeroizing<Vec<u8>>),
    /// The 32 bytes of a key file.
    KeyFile(Zeroizing<[u8; 32]>),
}

impl Secret {
    /// A passphrase; an empty one is refused.
    pub fn passphrase(text: &str) -> Result<Secret, CryptoError> {
        if text.is_empty() {
            return Err(CryptoError::BadSecret("the passphrase is empty".into()));
        }
        Ok(Secret::Passphrase(Zeroizing::new(text.as_bytes().to_vec())))
    }

    /// A key file's bytes, which must be exactly 32.
    pub fn key_file(bytes: &[u8]) -> Result<Secret, CryptoError> {
        let key: [u8; 32] = bytes.try_into().map_err(|_| {
            CryptoError::BadSecret(format!(
                "a key file holds exactly 32 bytes, this one {}",
                bytes.len()
            ))
        })?;
        Ok(Secret::KeyFile(Zeroizing::new(key)))
    }

    fn kind(&self) -> &'static str {
        match self {
            Secret::Passphrase(_) => "a passphrase",
            Secret::KeyFile(_) => "a key file",
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({}, redacted)", self.kind())
    }
}

/// Argon2id's costs for a new passphrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfCost {
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes over the memory.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

impl Default for KdfCost {
    /// RFC 9106's second recommendation with one lane (64 MiB, 3 passes): a few tenths of a
    /// second on a laptop or phone, once per open.
    fn default() -> Self {
        KdfCost {
            memory_kib: 64 * 1024,
            iterations: 3,
            parallelism: 1,
        }
    }
}

/// The store's data key, unwrapped: what every file's subkey derives from.
pub(crate) struct DataKey {
    key: Zeroizing<[u8; 32]>,
    store_key_id: [u8; 16],
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey").finish_non_exhaustive()
    }
}

/// `n` bytes from the OS.
pub(crate) fn random<const N: usize>() -> Result<[u8; N], CryptoError> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|e| CryptoError::Random(e.to_string()))?;
    Ok(out)
}

/// A new data key wrapped under `secret`: the header to store, and the key.
pub(crate) fn create_key(
    secret: &Secret,
    cost: KdfCost,
) -> Result<(KeyHeader, DataKey), CryptoError> {
    let data_key = DataKey {
        key: Zeroizing::new(random()?),
        store_key_id: random()?,
    };
    let header = wrap(&data_key, secret, cost)?;
    Ok((header, data_key))
}

/// Unwraps the data key of `header` with `secret`; [`CryptoError::WrongKey`] when it is not
/// the store's.
pub(crate) fn unlock(header: &KeyHeader, secret: &Secret) -> Result<DataKey, CryptoError> {
    let kek = key_encryption_key(header.kdf, &header.salt, secret)?;
    let mut key = Zeroizing::new(header.wrapped_key);
    XChaCha20Poly1305::new(Key::from_slice(kek.as_slice()))
        .decrypt_in_place_detached(
            XNonce::from_slice(&header.wrap_nonce),
            &header.associated_data(),
            key.as_mut_slice(),
            Tag::from_slice(&header.wrap_tag),
        )
        .map_err(|_| CryptoError::WrongKey)?;
    Ok(DataKey {
        key,
        store_key_id: header.store_key_id,
    })
}

/// The header that unwraps the same data key with `new` (a passphrase change: only the wrap
/// changes, no page is rewritten). `old` must unlock `header`.
pub(crate) fn rewrap(
    header: &KeyHeader,
    old: &Secret,
    new: &Secret,
    cost: KdfCost,
) -> Result<KeyHeader, CryptoError> {
    let data_key = unlock(header, old)?;
    wrap(&data_key, new, cost)
}

fn wrap(data_key: &DataKey, secret: &Secret, cost: KdfCost) -> Result<KeyHeader, CryptoError> {
    let kdf = match secret {
        Secret::Passphrase(_) => Kdf::Argon2id {
            memory_kib: cost.memory_kib,
            iterations: cost.iterations,
            parallelism: cost.parallelism,
        },
        Secret::KeyFile(_) => Kdf::KeyFile,
    };
    if let Some(reason) = KdfBounds::violation(kdf) {
        return Err(CryptoError::Kdf(reason));
    }
    let mut header = KeyHeader {
        kdf,
        store_key_id: data_key.store_key_id,
        salt: random()?,
        wrap_nonce: random()?,
        wrapped_key: *data_key.key,
        wrap_tag: [0; 16],
    };
    let kek = key_encryption_key(kdf, &header.salt, secret)?;
    let tag = XChaCha20Poly1305::new(Key::from_slice(kek.as_slice()))
        .encrypt_in_place_detached(
            XNonce::from_slice(&header.wrap_nonce),
            &header.associated_data(),
            &mut header.wrapped_key,
        )
        .map_err(|_| CryptoError::Kdf("the data key could not be wrapped".into()))?;
    header.wrap_tag.copy_from_slice(&tag);
    Ok(header)
}

fn key_encryption_key(
    kdf: Kdf,
    salt: &[u8; 32],
    secret: &Secret,
) -> Result<Zeroizing<[u8; 32]>, CryptoError> {
    let mut kek = Zeroizing::new([0u8; 32]);
    match (kdf, secret) {
        (
            Kdf::Argon2id {
                memory_kib,
                iterations,
                parallelism,
            },
            Secret::Passphrase(passphrase),
        ) => {
            let params = argon2::Params::new(memory_kib, iterations, parallelism, Some(32))
                .map_err(|e| CryptoError::Kdf(e.to_string()))?;
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
                .hash_password_into(passphrase, salt, kek.as_mut_slice())
                .map_err(|e| CryptoError::Kdf(e.to_string()))?;
        }
        (Kdf::KeyFile, Secret::KeyFile(file)) => {
            hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), file.as_slice())
                .expand(b"memdb key file v1", kek.as_mut_slice())
                .map_err(|e| CryptoError::Kdf(e.to_string()))?;
        }
        (kdf, secret) => {
            return Err(CryptoError::WrongSecretKind {
                expected: match kdf {
                    Kdf::Argon2id { .. } => "a passphrase",
                    Kdf::KeyFile => "a key file",
                },
                given: secret.kind(),
            });
        }
    }
    Ok(kek)
}

/// The file a page cipher seals pages of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SealedFile {
    /// Segment `id`.
    Segment(u64),
    /// `catalog.redb`.
    Catalog,
}

impl SealedFile {
    fn code_and_id(self) -> (u8, u64) {
        match self {
            SealedFile::Segment(id) => (1, id),
            SealedFile::Catalog => (2, 0),
        }
    }

    fn name(self) -> String {
        match self {
            SealedFile::Segment(id) => format!("segment {id:016x}"),
            SealedFile::Catalog => "catalog".into(),
        }
    }
}

impl DataKey {
    /// The cipher of segment `id`, whose random `salt` the catalog keeps (and drops with the
    /// segment: without it the segment's key cannot be derived again).
    pub(crate) fn segment_cipher(
        &self,
        id: u64,
        salt: &[u8; 32],
    ) -> Result<PageCipher, CryptoError> {
        let mut info = b"memdb segment v1 ".to_vec();
        info.extend_from_slice(&id.to_le_bytes());
        self.page_cipher(SealedFile::Segment(id), salt, &info)
    }

    /// The cipher of `catalog.redb`.
    pub(crate) fn catalog_cipher(&self) -> Result<PageCipher, CryptoError> {
        let salt = self.store_key_id;
        self.page_cipher(SealedFile::Catalog, &salt, b"memdb catalog v1")
    }

    fn page_cipher(
        &self,
        file: SealedFile,
        salt: &[u8],
        info: &[u8],
    ) -> Result<PageCipher, CryptoError> {
        let mut subkey = Zeroizing::new([0u8; 32]);
        hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), self.key.as_slice())
            .expand(info, subkey.as_mut_slice())
            .map_err(|e| CryptoError::Kdf(e.to_string()))?;
        Ok(PageCipher {
            aead: XChaCha20Poly1305::new(Key::from_slice(subkey.as_slice())),
            store_key_id: self.store_key_id,
            file,
        })
    }
}

/// A page's tail as stored: the nonce, then the tag.
fn page_tail(nonce: &[u8; 24], tag: &Tag) -> [u8; PAGE_TAIL_BYTES] {
    let mut tail = [0u8; PAGE_TAIL_BYTES];
    tail[..24].copy_from_slice(nonce);
    tail[24..].copy_from_slice(tag);
    tail
}

/// Seals and opens the pages of one file under its subkey. The cipher zeroizes its key when
/// dropped.
pub(crate) struct PageCipher {
    aead: XChaCha20Poly1305,
    store_key_id: [u8; 16],
    file: SealedFile,
}

impl std::fmt::Debug for PageCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCipher")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl PageCipher {
    /// A page's associated data (48 bytes, SPEC.md §3.7): "MEMDBPAG", the sealing version,
    /// the cipher, the file kind, the store's key id, the file's id and the page number.
    fn associated_data(&self, page: u64) -> [u8; 48] {
        let (kind, id) = self.file.code_and_id();
        let mut ad = [0u8; 48];
        ad[..8].copy_from_slice(b"MEMDBPAG");
        ad[8..12].copy_from_slice(&PAGE_SEAL_VERSION.to_le_bytes());
        ad[12] = memdb_formats::key_header::CIPHER_XCHACHA20_POLY1305;
        ad[13] = kind;
        // 14: 1 for a readable page (see `seal_readable`), 0 for a sealed one; 15 reserved.
        ad[16..32].copy_from_slice(&self.store_key_id);
        ad[32..40].copy_from_slice(&id.to_le_bytes());
        ad[40..48].copy_from_slice(&page.to_le_bytes());
        ad
    }

    /// The file's name in errors (`segment 000000000000002a`, `catalog`).
    pub(crate) fn file_name(&self) -> String {
        self.file.name()
    }

    /// Authenticates `page_bytes` (page `page`, left readable: a segment's header page) and
    /// returns the tail to store after it. Its associated data differs from a sealed page's in
    /// one flag byte, so neither kind can pass for the other.
    pub(crate) fn seal_readable(
        &self,
        page: u64,
        page_bytes: &[u8],
    ) -> Result<[u8; PAGE_TAIL_BYTES], CryptoError> {
        let ad = self.readable_associated_data(page, page_bytes);
        self.encrypt(page, random()?, &ad, &mut [])
    }

    /// Checks a page sealed by [`seal_readable`](PageCipher::seal_readable).
    pub(crate) fn open_readable(
        &self,
        page: u64,
        page_bytes: &[u8],
        tail: &[u8; PAGE_TAIL_BYTES],
    ) -> Result<(), CryptoError> {
        let ad = self.readable_associated_data(page, page_bytes);
        self.decrypt(page, &ad, &mut [], tail)
    }

    fn readable_associated_data(&self, page: u64, page_bytes: &[u8]) -> Vec<u8> {
        let mut ad = self.associated_data(page).to_vec();
        ad[14] = 1; // readable
        ad.extend_from_slice(page_bytes);
        ad
    }

    /// Encrypts `page_bytes` (page `page` of this file) in place; returns the tail to store
    /// after it: a fresh random nonce, then the tag.
    pub(crate) fn seal(
        &self,
        page: u64,
        page_bytes: &mut [u8],
    ) -> Result<[u8; PAGE_TAIL_BYTES], CryptoError> {
        self.seal_with_nonce(page, page_bytes, random()?)
    }

    /// As [`seal`](PageCipher::seal), with `generation` in the nonce's last 8 bytes (the first
    /// 16 random): a page kept in two places, written alternately, tells the newer copy by it.
    /// 128 random bits keep nonces unique for as many writes as a store will ever make.
    pub(crate) fn seal_numbered(
        &self,
        page: u64,
        page_bytes: &mut [u8],
        generation: u64,
    ) -> Result<[u8; PAGE_TAIL_BYTES], CryptoError> {
        let mut nonce: [u8; 24] = random()?;
        nonce[16..].copy_from_slice(&generation.to_le_bytes());
        self.seal_with_nonce(page, page_bytes, nonce)
    }

    /// The generation [`seal_numbered`](PageCipher::seal_numbered) put in `tail` (only
    /// meaningful once the page opened: the nonce is authenticated by the tag).
    pub(crate) fn generation(tail: &[u8; PAGE_TAIL_BYTES]) -> u64 {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&tail[16..24]);
        u64::from_le_bytes(bytes)
    }

    fn seal_with_nonce(
        &self,
        page: u64,
        page_bytes: &mut [u8],
        nonce: [u8; 24],
    ) -> Result<[u8; PAGE_TAIL_BYTES], CryptoError> {
        let ad = self.associated_data(page);
        self.encrypt(page, nonce, &ad, page_bytes)
    }

    /// Encrypts `buf` in place under `nonce` and `ad`; the tail to store.
    fn encrypt(
        &self,
        page: u64,
        nonce: [u8; 24],
        ad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; PAGE_TAIL_BYTES], CryptoError> {
        let tag = self
            .aead
            .encrypt_in_place_detached(XNonce::from_slice(&nonce), ad, buf)
            .map_err(|_| self.tag_error(page))?;
        Ok(page_tail(&nonce, &tag))
    }

    /// Decrypts `buf` in place, checking `tail`'s tag against `ad`.
    fn decrypt(
        &self,
        page: u64,
        ad: &[u8],
        buf: &mut [u8],
        tail: &[u8; PAGE_TAIL_BYTES],
    ) -> Result<(), CryptoError> {
        self.aead
            .decrypt_in_place_detached(
                XNonce::from_slice(&tail[..24]),
                ad,
                buf,
                Tag::from_slice(&tail[24..]),
            )
            .map_err(|_| self.tag_error(page))
    }

    fn tag_error(&self, page: u64) -> CryptoError {
        CryptoError::Tag {
            file: self.file.name(),
            page,
        }
    }

    /// Decrypts `page_bytes` (page `page` of this file) in place, checking `tail`'s tag; on a
    /// mismatch the bytes are left undefined and [`CryptoError::Tag`] names the file and page.
    pub(crate) fn open(
        &self,
        page: u64,
        page_bytes: &mut [u8],
        tail: &[u8; PAGE_TAIL_BYTES],
    ) -> Result<(), CryptoError> {
        let ad = self.associated_data(page);
        self.decrypt(page, &ad, page_bytes, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Argon2id at its floor, so the tests run in milliseconds.
    const CHEAP: KdfCost = KdfCost {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };

    fn passphrase(text: &str) -> Secret {
        Secret::passphrase(text).unwrap()
    }

    #[test]
    fn the_right_passphrase_unwraps_the_key_and_any_other_is_refused() {
        let (header, key) = create_key(&passphrase("correct horse"), CHEAP).unwrap();
        let decoded = KeyHeader::decode(&header.encode()).unwrap();
        let again = unlock(&decoded, &passphrase("correct horse")).unwrap();
        assert_eq!(*again.key, *key.key);
        assert!(matches!(
            unlock(&decoded, &passphrase("correct horsf")),
            Err(CryptoError::WrongKey)
        ));
        assert!(matches!(
            unlock(&decoded, &Secret::key_file(&[7; 32]).unwrap()),
            Err(CryptoError::WrongSecretKind { .. })
        ));
        assert!(Secret::passphrase("").is_err());
        assert!(Secret::key_file(&[0; 31]).is_err());
        assert!(!format!("{:?}", passphrase("correct horse")).contains("horse"));
    }

    #[test]
    fn a_header_with_weakened_costs_does_not_unwrap() {
        let (header, _) = create_key(
            &passphrase("pw"),
            KdfCost {
                memory_kib: 128,
                ..CHEAP
            },
        )
        .unwrap();
        // An attacker lowers the memory cost (and fixes the CRC up): the costs are the wrap's
        // associated data, so the tag fails rather than a cheaper derivation succeeding.
        let weakened = KeyHeader {
            kdf: Kdf::Argon2id {
                memory_kib: 64,
                iterations: 1,
                parallelism: 1,
            },
            ..header
        };
        assert!(matches!(
            unlock(&weakened, &passphrase("pw")),
            Err(CryptoError::WrongKey)
        ));
    }

    #[test]
    fn key_files_unwrap_and_rekeying_keeps_the_data_key() {
        let file = Secret::key_file(&[9; 32]).unwrap();
        let (header, key) = create_key(&file, CHEAP).unwrap();
        let cipher = key.segment_cipher(5, &[1; 32]).unwrap();
        let mut page = vec![42u8; 4096 - PAGE_TAIL_BYTES];
        let tail = cipher.seal(3, &mut page).unwrap();

        let new = passphrase("new passphrase");
        let rekeyed = rewrap(&header, &file, &new, CHEAP).unwrap();
        assert_ne!(rekeyed.salt, header.salt);
        assert_eq!(rekeyed.store_key_id, header.store_key_id);
        assert!(matches!(
            unlock(&rekeyed, &file),
            Err(CryptoError::WrongSecretKind { .. })
        ));
        let unlocked = unlock(&rekeyed, &new).unwrap();
        // A page sealed before the passphrase changed opens after it.
        unlocked
            .segment_cipher(5, &[1; 32])
            .unwrap()
            .open(3, &mut page, &tail)
            .unwrap();
        assert!(page.iter().all(|&b| b == 42));
        assert!(matches!(
            rewrap(&header, &passphrase("guess"), &new, CHEAP),
            Err(CryptoError::WrongSecretKind { .. })
        ));
    }

    #[test]
    fn a_page_opens_only_in_its_own_place_and_every_flipped_bit_is_caught() {
        let (_, key) = create_key(&passphrase("pw"), CHEAP).unwrap();
        let (_, other_store) = create_key(&passphrase("pw"), CHEAP).unwrap();
        let plain: Vec<u8> = (0..4056u32).map(|i| (i * 7) as u8).collect();
        let cipher = key.segment_cipher(1, &[3; 32]).unwrap();
        let mut sealed = plain.clone();
        let tail = cipher.seal(2, &mut sealed).unwrap();
        assert_ne!(sealed, plain);

        // Two seals of the same page never share a nonce.
        let mut twice = plain.clone();
        let tail2 = cipher.seal(2, &mut twice).unwrap();
        assert_ne!(tail[..24], tail2[..24]);
        assert_ne!(twice, sealed);

        let opens = |c: &PageCipher, page: u64, bytes: &[u8], tail: &[u8; PAGE_TAIL_BYTES]| {
            let mut b = bytes.to_vec();
            c.open(page, &mut b, tail).map(|()| b)
        };
        assert_eq!(opens(&cipher, 2, &sealed, &tail).unwrap(), plain);
        // Another page number, another segment, another segment salt, the catalog, another
        // store: each refuses it, naming the file and page.
        let err = opens(&cipher, 3, &sealed, &tail).unwrap_err();
        assert_eq!(
            err.to_string(),
            "segment 0000000000000001 page 3: the authentication tag does not verify (damaged, tampered, moved or from another store)"
        );
        for wrong in [
            key.segment_cipher(2, &[3; 32]).unwrap(),
            key.segment_cipher(1, &[4; 32]).unwrap(),
            key.catalog_cipher().unwrap(),
            other_store.segment_cipher(1, &[3; 32]).unwrap(),
        ] {
            assert!(matches!(
                opens(&wrong, 2, &sealed, &tail),
                Err(CryptoError::Tag { page: 2, .. })
            ));
        }
        // Every bit of the ciphertext and the tail, one at a time (a sample of the ciphertext's
        // bits keeps the test quick; the tail's are all tried).
        for bit in (0..sealed.len() * 8).step_by(61) {
            let mut flipped = sealed.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(opens(&cipher, 2, &flipped, &tail).is_err(), "bit {bit}");
        }
        for bit in 0..PAGE_TAIL_BYTES * 8 {
            let mut flipped = tail;
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(
                opens(&cipher, 2, &sealed, &flipped).is_err(),
                "tail bit {bit}"
            );
        }
    }

    /// SPEC.md §3.7 by hand: each file's subkey (HKDF-SHA256 of the data key with the spec's
    /// salt and info), the 48 bytes of associated data, and the tail (nonce, then tag) are what
    /// an independent XChaCha20-Poly1305 needs to open a sealed page.
    #[test]
    fn sealed_pages_open_with_the_spec_s_subkeys_and_associated_data() {
        let key = DataKey {
            key: Zeroizing::new([0x5a; 32]),
            store_key_id: [0x11; 16],
        };
        let spec_ad = |kind: u8, readable: u8, id: u64, page: u64| {
            let mut ad = b"MEMDBPAG".to_vec();
            ad.extend_from_slice(&1u32.to_le_bytes());
            ad.extend_from_slice(&[1, kind, readable, 0]);
            ad.extend_from_slice(&[0x11; 16]);
            ad.extend_from_slice(&id.to_le_bytes());
            ad.extend_from_slice(&page.to_le_bytes());
            assert_eq!(ad.len(), 48);
            ad
        };
        let subkey = |salt: &[u8], info: &[u8]| {
            let mut out = [0u8; 32];
            hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), &[0x5a; 32])
                .expand(info, &mut out)
                .unwrap();
            XChaCha20Poly1305::new(Key::from_slice(&out))
        };
        let plain: Vec<u8> = (0..4096u32).map(|i| (i * 13) as u8).collect();
        let mut segment_info = b"memdb segment v1 ".to_vec();
        segment_info.extend_from_slice(&0x2au64.to_le_bytes());
        for (cipher, independent, kind, id) in [
            (
                key.segment_cipher(0x2a, &[0x77; 32]).unwrap(),
                subkey(&[0x77; 32], &segment_info),
                1,
                0x2a,
            ),
            (
                key.catalog_cipher().unwrap(),
                subkey(&[0x11; 16], b"memdb catalog v1"),
                2,
                0,
            ),
        ] {
            let mut sealed = plain.clone();
            let tail = cipher.seal(9, &mut sealed).unwrap();
            let mut opened = sealed.clone();
            independent
                .decrypt_in_place_detached(
                    XNonce::from_slice(&tail[..24]),
                    &spec_ad(kind, 0, id, 9),
                    &mut opened,
                    Tag::from_slice(&tail[24..]),
                )
                .unwrap();
            assert_eq!(opened, plain);
            // A page left readable: an empty message whose associated data is the 48 bytes
            // (readable = 1) followed by the page.
            let tail = cipher.seal_readable(0, &plain).unwrap();
            let mut ad = spec_ad(kind, 1, id, 0);
            ad.extend_from_slice(&plain);
            independent
                .decrypt_in_place_detached(
                    XNonce::from_slice(&tail[..24]),
                    &ad,
                    &mut [],
                    Tag::from_slice(&tail[24..]),
                )
                .unwrap();
        }
    }
}
