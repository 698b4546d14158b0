//! An encrypted store's files as sealed pages: the [`StorageIo`] every file operation of an
//! encrypted store goes through (SPEC.md §3.7).
//!
//! Every other module sees a file as 4096-byte pages. Here page `n` is stored in slot `n`, at
//! file offset `n × 4136`: the page's 4096 bytes encrypted under the file's subkey, then the
//! 40-byte tail (nonce, tag) whose associated data names the store, the file and `n`. A
//! segment's page 0 stays readable (magic, format, cipher): its plaintext is the slot's body and
//! the tag authenticates it. The catalog (redb, through [`CatalogBackend`](super::io::CatalogBackend))
//! and the segments go through the same code, so the fault-injecting `StorageIo` of the
//! reliability tests sits under this one and sees exactly the bytes that reach the disk.
//!
//! A write of whole pages seals each and writes them in one positioned write; a write covering
//! part of a page reads, opens, patches and reseals that page (segments append whole pages and
//! redb writes whole pages, so this is the exception). The one page rewritten in place while it
//! holds committed data, the catalog's page 0 (redb's header, whose torn write redb survives by
//! falling back to the commit before), is kept in two slots written alternately, each copy
//! numbered in its nonce: a torn write of one leaves the other, so the catalog's header page
//! reads as it was before the write, never as an error. A slot whose 4136 bytes are all zero was
//! never written: the catalog reads it as zeros, as redb expects of a file grown by `set_len`;
//! in a segment, where every page below the committed length was written, it is damage.
//! Lengths are kept in whole pages.
//!
//! Invariants: no plaintext but a segment's header page reaches the inner `StorageIo`; every
//! byte returned was in a slot whose tag verified; a file this io holds no key for is refused,
//! never written or read in plaintext.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use memdb_formats::segment::PAGE;

use super::io::{OpenMode, StorageIo};
use super::segment_file::OpenedCache;
use crate::crypto::{CryptoError, DataKey, PAGE_TAIL_BYTES, PageCipher};

/// Bytes a page takes on disk in a sealed file.
pub(crate) const SLOT: usize = PAGE + PAGE_TAIL_BYTES;

/// What a sealed file is, for the rules that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Catalog,
    Segment,
}

struct FileKey {
    cipher: PageCipher,
    role: Role,
    /// The catalog's: where its header page's next copy goes (see
    /// [`SealedIo::write_catalog_header`]); `None` until this io first writes it.
    header: Mutex<Option<HeaderTarget>>,
}

impl FileKey {
    fn new(cipher: PageCipher, role: Role) -> FileKey {
        FileKey {
            cipher,
            role,
            header: Mutex::new(None),
        }
    }
}

/// The slot the catalog's header page is written into until the next sync, and the
/// generation its next copy gets. The other slot holds the newest copy a sync made durable,
/// and is never written before a sync of this one: a crash at any point leaves it whole.
#[derive(Debug, Clone, Copy)]
struct HeaderTarget {
    slot: u64,
    generation: u64,
    /// Whether `slot` was written since the last sync (the sync makes it the durable one).
    written: bool,
}

/// The sealing [`StorageIo`] of an encrypted store (see the module documentation).
pub(crate) struct SealedIo {
    inner: Arc<dyn StorageIo>,
    data_key: DataKey,
    files: RwLock<HashMap<PathBuf, Arc<FileKey>>>,
    /// Ranges of the segments already opened (records, blobs), for the segments to share.
    opened: Arc<OpenedCache>,
}

/// Bytes of opened segment ranges an encrypted store keeps (as redb keeps catalog pages): what
/// a mapped plain store gets from the OS's page cache without opening anything.
const OPENED_CACHE_BYTES: usize = 64 << 20;

impl std::fmt::Debug for SealedIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedIo")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

fn tag_error(e: CryptoError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl SealedIo {
    /// Seals through `inner` with subkeys of `data_key`; the catalog at `catalog` is known
    /// from the start, segments once [`register_segment`](SealedIo::register_segment) names
    /// them.
    pub(crate) fn new(
        inner: Arc<dyn StorageIo>,
        data_key: DataKey,
        catalog: &Path,
    ) -> Result<SealedIo, CryptoError> {
        let cipher = data_key.catalog_cipher()?;
        let files = HashMap::from([(
            catalog.to_path_buf(),
            Arc::new(FileKey::new(cipher, Role::Catalog)),
        )]);
        Ok(SealedIo {
            inner,
            data_key,
            files: RwLock::new(files),
            opened: Arc::new(OpenedCache::new(OPENED_CACHE_BYTES)),
        })
    }

    /// Makes segment `id` at `path` readable and writable, under the subkey its `salt` (kept
    /// by the catalog) derives.
    pub(crate) fn register_segment(
        &self,
        path: &Path,
        id: u64,
        salt: &[u8; 32],
    ) -> Result<(), CryptoError> {
        let cipher = self.data_key.segment_cipher(id, salt)?;
        let key = Arc::new(FileKey::new(cipher, Role::Segment));
        if let Ok(mut files) = self.files.write() {
            files.insert(path.to_path_buf(), key);
        }
        Ok(())
    }

    /// The cache of opened segment ranges the store's segments share.
    pub(crate) fn opened_cache(&self) -> Arc<OpenedCache> {
        Arc::clone(&self.opened)
    }

    /// Drops the key of a file that is gone (a retired segment): from here on nothing in this
    /// process can read what is left of it.
    pub(crate) fn forget(&self, path: &Path) {
        if let Ok(mut files) = self.files.write() {
            files.remove(path);
        }
    }

    fn key(&self, path: &Path) -> io::Result<Arc<FileKey>> {
        self.files
            .read()
            .ok()
            .and_then(|files| files.get(path).cloned())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("no key for {} in this encrypted store", path.display()),
                )
            })
    }

    /// Opens `slot` (page `page` of a file keyed by `key`) in place: afterwards its first
    /// [`PAGE`] bytes are the page's plaintext.
    fn open_slot(key: &FileKey, page: u64, slot: &mut [u8]) -> io::Result<()> {
        if slot.iter().all(|&b| b == 0) {
            return match key.role {
                Role::Catalog => Ok(()),
                Role::Segment => Err(tag_error(CryptoError::Tag {
                    file: key.cipher.file_name(),
                    page,
                })),
            };
        }
        let (body, tail) = slot.split_at_mut(PAGE);
        let mut tail_bytes = [0u8; PAGE_TAIL_BYTES];
        tail_bytes.copy_from_slice(tail);
        if key.role == Role::Segment && page == 0 {
            key.cipher.open_readable(page, body, &tail_bytes)
        } else {
            key.cipher.open(page, body, &tail_bytes)
        }
        .map_err(tag_error)
    }

    /// Seals the page in `slot`'s first [`PAGE`] bytes and writes its tail after them.
    fn seal_slot(key: &FileKey, page: u64, slot: &mut [u8]) -> io::Result<()> {
        let (body, tail) = slot.split_at_mut(PAGE);
        let sealed = if key.role == Role::Segment && page == 0 {
            key.cipher.seal_readable(page, body)
        } else {
            key.cipher.seal(page, body)
        }
        .map_err(tag_error)?;
        tail.copy_from_slice(&sealed);
        Ok(())
    }
}

/// Pages `[first, last]` touched by `len` bytes at `offset` (`len` > 0).
fn page_span(offset: u64, len: usize) -> (u64, u64) {
    let page = PAGE as u64;
    (offset / page, (offset + len as u64 - 1) / page)
}

/// The slot page `page` of a file is stored in. The catalog's page 0 is kept in slots 0 and 1,
/// written alternately (see [`SealedIo::write_catalog_header`]); its page `n` ≥ 1 is in slot
/// `n + 1`. A segment's page `n` is in slot `n`.
fn slot_of(role: Role, page: u64) -> u64 {
    match role {
        Role::Catalog if page > 0 => page + 1,
        Role::Catalog | Role::Segment => page,
    }
}

/// Pages a file of `slots` whole slots on disk holds.
fn pages_in(role: Role, slots: u64) -> u64 {
    match role {
        Role::Catalog if slots == 0 => 0,
        Role::Catalog => (slots - 1).max(1),
        Role::Segment => slots,
    }
}

/// Slots a file of `pages` pages takes.
fn slots_for(role: Role, pages: u64) -> u64 {
    match role {
        Role::Catalog if pages == 0 => 0,
        Role::Catalog => pages + 1,
        Role::Segment => pages,
    }
}

impl SealedIo {
    /// The newest sound copy of the catalog's page 0, opened, with its generation and slot;
    /// `None` when neither slot was ever written. Read afresh each time: a read-only handle
    /// sees the writer's changes, and the writer chooses where to write next from what is on
    /// disk, not from what it remembers.
    fn catalog_header(
        &self,
        key: &FileKey,
        path: &Path,
        file: &File,
    ) -> io::Result<Option<(Vec<u8>, u64, u64)>> {
        let physical_len = self.inner.len(path, file)?;
        let mut newest: Option<(Vec<u8>, u64, u64)> = None;
        let mut damage = None;
        for slot in 0..2u64 {
            if (slot + 1) * SLOT as u64 > physical_len {
                continue;
            }
            let mut bytes = vec![0u8; SLOT];
            self.inner
                .read_at(path, file, &mut bytes, slot * SLOT as u64)?;
            if bytes.iter().all(|&b| b == 0) {
                continue;
            }
            let mut tail = [0u8; PAGE_TAIL_BYTES];
            tail.copy_from_slice(&bytes[PAGE..]);
            match key.cipher.open(0, &mut bytes[..PAGE], &tail) {
                Ok(()) => {
                    let generation = PageCipher::generation(&tail);
                    if newest.as_ref().is_none_or(|n| generation > n.1) {
                        bytes.truncate(PAGE);
                        newest = Some((bytes, generation, slot));
                    }
                }
                // A torn write of one copy: the other is the page as it was before.
                Err(e) => damage = Some(e),
            }
        }
        match (newest, damage) {
            (Some(found), _) => Ok(Some(found)),
            (None, Some(e)) => Err(tag_error(e)),
            (None, None) => Ok(None),
        }
    }

    /// Writes the catalog's page 0, one generation later than any copy before it, into the
    /// slot that does not hold the newest *durable* copy: a torn write leaves that copy, as
    /// redb expects of its header (a torn header falls back to the previous commit). Every
    /// write until the catalog's next sync goes to the same slot, so two header writes without
    /// a sync between them (redb makes some) never overwrite the durable copy. The first write
    /// of this io syncs the file first: whatever copy is newest on disk is then durable.
    fn write_catalog_header(
        &self,
        key: &FileKey,
        path: &Path,
        file: &File,
        page: &mut [u8],
    ) -> io::Result<()> {
        let mut target = key
            .header
            .lock()
            .map_err(|_| io::Error::other("the catalog header's state is poisoned"))?;
        let current = match *target {
            Some(current) => current,
            None => {
                self.inner.sync_data(path, file)?;
                match self.catalog_header(key, path, file)? {
                    Some((_, generation, slot)) => HeaderTarget {
                        slot: 1 - slot,
                        generation: generation + 1,
                        written: false,
                    },
                    None => HeaderTarget {
                        slot: 0,
                        generation: 1,
                        written: false,
                    },
                }
            }
        };
        let tail = key
            .cipher
            .seal_numbered(0, page, current.generation)
            .map_err(tag_error)?;
        let mut bytes = Vec::with_capacity(SLOT);
        bytes.extend_from_slice(page);
        bytes.extend_from_slice(&tail);
        // The generation is spent whether or not the write lands (a nonce is never reused).
        *target = Some(HeaderTarget {
            generation: current.generation + 1,
            written: true,
            ..current
        });
        self.inner
            .write_at(path, file, &bytes, current.slot * SLOT as u64)
    }

    /// After a sync of the catalog: the slot its header was written into is now the durable
    /// copy, so the next header write goes to the other one.
    fn catalog_synced(key: &FileKey) {
        if let Ok(mut target) = key.header.lock()
            && let Some(current) = target.as_mut()
            && current.written
        {
            current.slot = 1 - current.slot;
            current.written = false;
        }
    }

    /// Reads pages `first..=last` (contiguous slots; never the catalog's page 0) opened.
    fn read_pages(
        &self,
        key: &FileKey,
        path: &Path,
        file: &File,
        first: u64,
        last: u64,
    ) -> io::Result<Vec<u8>> {
        let count = usize::try_from(last - first + 1).map_err(io::Error::other)?;
        let mut slots = vec![0u8; count * SLOT];
        self.inner.read_at(
            path,
            file,
            &mut slots,
            slot_of(key.role, first) * SLOT as u64,
        )?;
        for (page, slot) in (first..).zip(slots.chunks_exact_mut(SLOT)) {
            Self::open_slot(key, page, slot)?;
        }
        Ok(slots)
    }
}

impl StorageIo for SealedIo {
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir(path)
    }

    fn open_file(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        // No key, no file: a file of the store this io does not know must not be written in
        // plaintext by accident.
        self.key(path)?;
        self.inner.open_file(path, mode)
    }

    fn read_at(&self, path: &Path, file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let key = self.key(path)?;
        let (mut first, last) = page_span(offset, buf.len());
        if offset + buf.len() as u64 > self.len(path, file)? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "a read of {} bytes at {offset} runs past the end of {}",
                    buf.len(),
                    path.display()
                ),
            ));
        }
        let end = offset + buf.len() as u64;
        let mut copy = |page: u64, plain: &[u8]| {
            let page_start = page * PAGE as u64;
            let from = offset.max(page_start);
            let to = end.min(page_start + PAGE as u64);
            buf[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&plain[(from - page_start) as usize..(to - page_start) as usize]);
        };
        if key.role == Role::Catalog && first == 0 {
            match self.catalog_header(&key, path, file)? {
                Some((plain, ..)) => copy(0, &plain),
                None => copy(0, &[0u8; PAGE]),
            }
            first = 1;
        }
        if first <= last {
            let slots = self.read_pages(&key, path, file, first, last)?;
            for (page, slot) in (first..).zip(slots.chunks_exact(SLOT)) {
                copy(page, &slot[..PAGE]);
            }
        }
        Ok(())
    }

    fn write_at(&self, path: &Path, file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let key = self.key(path)?;
        let (mut first, last) = page_span(offset, bytes.len());
        let physical_len = self.inner.len(path, file)?;
        let end = offset + bytes.len() as u64;
        // The part of `bytes` in page `page`, and where it goes in the page.
        let part = |page: u64| {
            let page_start = page * PAGE as u64;
            let from = offset.max(page_start);
            let to = end.min(page_start + PAGE as u64);
            (
                (from - page_start) as usize..(to - page_start) as usize,
                (from - offset) as usize..(to - offset) as usize,
            )
        };
        if key.role == Role::Catalog && first == 0 {
            let (in_page, in_bytes) = part(0);
            let mut page = match self.catalog_header(&key, path, file)? {
                Some((plain, ..)) => plain,
                None => vec![0u8; PAGE],
            };
            page[in_page].copy_from_slice(&bytes[in_bytes]);
            self.write_catalog_header(&key, path, file, &mut page)?;
            first = 1;
            if first > last {
                return Ok(());
            }
        }
        let count = usize::try_from(last - first + 1).map_err(io::Error::other)?;
        let mut slots = vec![0u8; count * SLOT];
        for (page, slot) in (first..).zip(slots.chunks_exact_mut(SLOT)) {
            let (in_page, in_bytes) = part(page);
            let partial = in_page.start > 0 || in_page.end < PAGE;
            let slot_at = slot_of(key.role, page) * SLOT as u64;
            if partial && slot_at + SLOT as u64 <= physical_len {
                // Read, open and patch the page as it is (a slot only partly on disk is the
                // torn end of an interrupted extension: nothing was committed there).
                self.inner.read_at(path, file, slot, slot_at)?;
                Self::open_slot(&key, page, slot)?;
            }
            slot[in_page].copy_from_slice(&bytes[in_bytes]);
            Self::seal_slot(&key, page, slot)?;
        }
        self.inner
            .write_at(path, file, &slots, slot_of(key.role, first) * SLOT as u64)
    }

    fn set_len(&self, path: &Path, file: &File, len: u64) -> io::Result<()> {
        let key = self.key(path)?;
        let pages = len.div_ceil(PAGE as u64);
        self.inner
            .set_len(path, file, slots_for(key.role, pages) * SLOT as u64)
    }

    fn len(&self, path: &Path, file: &File) -> io::Result<u64> {
        let key = self.key(path)?;
        let slots = self.inner.len(path, file)? / SLOT as u64;
        Ok(pages_in(key.role, slots) * PAGE as u64)
    }

    fn sync_data(&self, path: &Path, file: &File) -> io::Result<()> {
        self.inner.sync_data(path, file)?;
        if let Ok(key) = self.key(path)
            && key.role == Role::Catalog
        {
            Self::catalog_synced(&key);
        }
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)?;
        self.forget(path);
        Ok(())
    }

    fn seals_pages(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{KdfCost, Secret, create_key};
    use crate::io::OsIo;

    fn sealed_io(catalog: &Path) -> SealedIo {
        let cost = KdfCost {
            memory_kib: 64,
            iterations: 1,
            parallelism: 1,
        };
        let (_, key) = create_key(&Secret::passphrase("pw").unwrap(), cost).unwrap();
        SealedIo::new(Arc::new(OsIo), key, catalog).unwrap()
    }

    #[test]
    fn pages_round_trip_through_slots_and_no_plaintext_reaches_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let io = sealed_io(&path);
        let file = io.open_file(&path, OpenMode::CreateNew).unwrap();
        let text: Vec<u8> = b"a canary string "
            .iter()
            .copied()
            .cycle()
            .take(3 * PAGE)
            .collect();
        io.write_at(&path, &file, &text, 0).unwrap();
        // Page 0 in slot 0 (slot 1 is its second copy, not yet written), pages 1 and 2 after.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 * SLOT as u64);
        assert_eq!(io.len(&path, &file).unwrap(), 3 * PAGE as u64);
        let on_disk = std::fs::read(&path).unwrap();
        assert!(!on_disk.windows(8).any(|w| w == b"a canary"));

        // A read across a page boundary, and a partial write patching the middle of a page.
        let mut buf = vec![0u8; 100];
        io.read_at(&path, &file, &mut buf, PAGE as u64 - 50)
            .unwrap();
        assert_eq!(buf, text[PAGE - 50..PAGE + 50]);
        io.write_at(&path, &file, b"PATCH", PAGE as u64 + 10)
            .unwrap();
        let mut page = vec![0u8; PAGE];
        io.read_at(&path, &file, &mut page, PAGE as u64).unwrap();
        assert_eq!(&page[10..15], b"PATCH");
        assert_eq!(page[..10], text[PAGE..PAGE + 10]);
        assert_eq!(page[15..], text[PAGE + 15..2 * PAGE]);

        // Growth reads as zeros (redb's expectation of the catalog), and past the end fails.
        io.set_len(&path, &file, 5 * PAGE as u64).unwrap();
        io.read_at(&path, &file, &mut page, 4 * PAGE as u64)
            .unwrap();
        assert!(page.iter().all(|&b| b == 0));
        assert!(
            io.read_at(&path, &file, &mut page, 5 * PAGE as u64)
                .is_err()
        );
    }

    #[test]
    fn a_torn_write_of_the_catalogs_header_page_leaves_the_copy_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let io = sealed_io(&path);
        let file = io.open_file(&path, OpenMode::CreateNew).unwrap();
        let read0 = |io: &SealedIo| {
            let mut page = vec![0u8; PAGE];
            io.read_at(&path, &file, &mut page, 0).map(|()| page)
        };
        // Rounds 1 and 2 each synced: round 2 (slot 1) is the durable copy.
        for round in 1..=2u8 {
            io.write_at(&path, &file, &vec![round; PAGE], 0).unwrap();
            io.sync_data(&path, &file).unwrap();
            assert_eq!(read0(&io).unwrap(), vec![round; PAGE]);
        }
        // Rounds 3 and 4 without a sync between them (redb makes such pairs): both go to slot
        // 0, never over the durable copy.
        let durable = std::fs::read(&path).unwrap()[SLOT..2 * SLOT].to_vec();
        for round in 3..=4u8 {
            io.write_at(&path, &file, &vec![round; PAGE], 0).unwrap();
            assert_eq!(read0(&io).unwrap(), vec![round; PAGE]);
        }
        let written = std::fs::read(&path).unwrap();
        assert_eq!(
            written[SLOT..2 * SLOT],
            durable[..],
            "the durable copy was overwritten"
        );
        // A crash tears round 4's write (half a sector reached the disk): the page reads as
        // round 2, the durable copy, not as an error.
        let mut torn = written.clone();
        torn[1000..1512].fill(0xee);
        std::fs::write(&path, &torn).unwrap();
        assert_eq!(read0(&io).unwrap(), vec![2; PAGE]);
        // The next write goes over the torn copy and is the newest.
        io.write_at(&path, &file, &[9; 10], 5).unwrap();
        let mut expected = vec![2; PAGE];
        expected[5..15].fill(9);
        assert_eq!(read0(&io).unwrap(), expected);
        io.sync_data(&path, &file).unwrap();
        // Both copies damaged: an error naming the page.
        let mut both = std::fs::read(&path).unwrap();
        both[100] ^= 1;
        both[SLOT + 100] ^= 1;
        std::fs::write(&path, &both).unwrap();
        let err = read0(&io).unwrap_err();
        assert!(err.to_string().contains("catalog page 0"), "{err}");
    }

    #[test]
    fn a_flipped_byte_a_moved_page_or_an_unknown_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog.redb");
        let io = sealed_io(&catalog);
        let segment = dir.path().join("0000000000000007.seg");
        assert!(
            io.open_file(&segment, OpenMode::CreateNew).is_err(),
            "no key yet"
        );
        io.register_segment(&segment, 7, &[1; 32]).unwrap();
        let file = io.open_file(&segment, OpenMode::CreateNew).unwrap();
        let mut header = vec![0u8; PAGE];
        header[..8].copy_from_slice(b"MEMDBSEG");
        let body: Vec<u8> = (0..2 * PAGE).map(|i| (i % 251) as u8).collect();
        io.write_at(&segment, &file, &header, 0).unwrap();
        io.write_at(&segment, &file, &body, PAGE as u64).unwrap();
        let on_disk = std::fs::read(&segment).unwrap();
        assert_eq!(&on_disk[..8], b"MEMDBSEG", "the header page stays readable");

        let read = |bytes: &[u8], offset: u64| {
            std::fs::write(&segment, bytes).unwrap();
            let mut buf = vec![0u8; PAGE];
            io.read_at(&segment, &file, &mut buf, offset).map(|()| buf)
        };
        assert_eq!(read(&on_disk, PAGE as u64).unwrap(), body[..PAGE]);
        for at in [3, 100, SLOT - 1, SLOT + 5, 2 * SLOT - 20] {
            let mut flipped = on_disk.clone();
            flipped[at] ^= 4;
            let page = (at / SLOT) as u64 * PAGE as u64;
            let err = read(&flipped, page).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "byte {at}");
        }
        // Pages 1 and 2 swapped: each fails, naming its page.
        let mut swapped = on_disk.clone();
        swapped[SLOT..2 * SLOT].copy_from_slice(&on_disk[2 * SLOT..3 * SLOT]);
        swapped[2 * SLOT..3 * SLOT].copy_from_slice(&on_disk[SLOT..2 * SLOT]);
        let err = read(&swapped, PAGE as u64).unwrap_err();
        assert!(
            err.to_string().contains("segment 0000000000000007 page 1"),
            "{err}"
        );
        // A zeroed page of a segment is damage, not zeros.
        let mut zeroed = on_disk.clone();
        zeroed[SLOT..2 * SLOT].fill(0);
        assert!(read(&zeroed, PAGE as u64).is_err());
        // Once the segment's key is forgotten, nothing reads it.
        std::fs::write(&segment, &on_disk).unwrap();
        io.forget(&segment);
        let mut buf = vec![0u8; PAGE];
        assert!(io.read_at(&segment, &file, &mut buf, PAGE as u64).is_err());
    }
}
