//! One segment file on disk: creation, positioned writes, fsync, and the shared mmap readers
//! use.
//!
//! Readers get byte slices straight out of a read-only shared mapping (zero copy). A segment
//! that is still open for appends grows; the mapping is replaced by a longer one when a read
//! reaches past it, and readers that hold the old mapping keep it alive through its `Arc`.
//!
//! Invariants: bytes below the catalog's committed length of a segment never change while the
//! file is mapped (appends only go past it; truncation happens at open, before any mapping);
//! a segment marked obsolete is unlinked when the last handle to it is dropped, so no file is
//! removed while a reader still maps it.

use std::fs::File;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryHeader, PAGE, SegmentHeader};

use crate::error::{Error, Result};
use crate::io::{OpenMode, StorageIo};

/// An open segment file shared by the writer and every snapshot that references it.
#[derive(Debug)]
pub(crate) struct SegmentFile {
    id: u64,
    path: PathBuf,
    io: Arc<dyn StorageIo>,
    file: File,
    map: RwLock<Option<Arc<memmap2::Mmap>>>,
    obsolete: AtomicBool,
    /// An encrypted store's cache of opened ranges (records, blobs), shared by its segments.
    opened: Option<Arc<OpenedCache>>,
}

impl SegmentFile {
    /// Creates segment `id` with its header page (carrying `key_salt` in an encrypted store)
    /// and fsyncs it. The caller fsyncs the directory before any commit references the segment.
    pub(crate) fn create(
        io: &Arc<dyn StorageIo>,
        path: PathBuf,
        id: u64,
        now_ms: i64,
        key_salt: Option<[u8; memdb_formats::segment::KEY_SALT_BYTES]>,
    ) -> Result<SegmentFile> {
        let file = io
            .open_file(&path, OpenMode::CreateNew)
            .map_err(Error::io("create segment", &path))?;
        let header = SegmentHeader {
            segment_id: id,
            created_unix_ms: now_ms,
            sealed: io.seals_pages(),
            key_salt,
        }
        .encode();
        io.write_at(&path, &file, &header, 0)
            .map_err(Error::io("write segment header", &path))?;
        io.sync_data(&path, &file)
            .map_err(Error::io("fdatasync", &path))?;
        Ok(SegmentFile::with_file(io, path, id, file))
    }

    fn with_file(io: &Arc<dyn StorageIo>, path: PathBuf, id: u64, file: File) -> SegmentFile {
        SegmentFile {
            id,
            path,
            io: Arc::clone(io),
            file,
            map: RwLock::new(None),
            obsolete: AtomicBool::new(false),
            opened: None,
        }
    }

    /// Serves this segment's [`cached_bytes`](SegmentFile::cached_bytes) from `cache` (an
    /// encrypted store's; a plain store reads its mapping and needs none).
    pub(crate) fn with_opened_cache(mut self, cache: Option<Arc<OpenedCache>>) -> SegmentFile {
        self.opened = cache;
        self
    }

    /// Opens segment `id` and checks its header page.
    pub(crate) fn open(
        io: &Arc<dyn StorageIo>,
        path: PathBuf,
        id: u64,
        mode: OpenMode,
    ) -> Result<SegmentFile> {
        let segment = SegmentFile::open_unchecked(io, path, id, mode)?;
        segment.verify_header()?;
        Ok(segment)
    }

    /// Opens segment `id` without reading its header page: its entries stand on their own
    /// checks, so a segment whose header page is damaged stays readable for a repair to copy.
    pub(crate) fn open_unchecked(
        io: &Arc<dyn StorageIo>,
        path: PathBuf,
        id: u64,
        mode: OpenMode,
    ) -> Result<SegmentFile> {
        let file = io
            .open_file(&path, mode)
            .map_err(Error::io("open segment", &path))?;
        Ok(SegmentFile::with_file(io, path, id, file))
    }

    /// Checks the header page: a damaged one is a `Corruption` at page 0 (an encrypted page
    /// whose tag fails too), a header of another segment or of the other kind of store
    /// `SegmentUnavailable`.
    pub(crate) fn verify_header(&self) -> Result<()> {
        let (io, path, id) = (&self.io, &self.path, self.id);
        let mut page = vec![0u8; PAGE];
        match io.read_at(path, &self.file, &mut page, 0) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(Error::corruption(
                    id,
                    0,
                    memdb_formats::FormatError::Invalid {
                        what: "segment header page",
                        offset: 0,
                        reason: e.to_string(),
                    },
                ));
            }
            Err(e) => return Err(Error::io("read segment header", path)(e)),
        }
        let header =
            SegmentHeader::decode(&page).map_err(|source| Error::corruption(id, 0, source))?;
        if header.sealed != io.seals_pages() {
            return Err(Error::SegmentUnavailable {
                segment: id,
                reason: format!(
                    "file {} is {}, the store is {}",
                    path.display(),
                    if header.sealed {
                        "encrypted"
                    } else {
                        "not encrypted"
                    },
                    if io.seals_pages() {
                        "encrypted"
                    } else {
                        "not encrypted"
                    },
                ),
            });
        }
        if header.segment_id != id {
            return Err(Error::SegmentUnavailable {
                segment: id,
                reason: format!(
                    "file {} holds segment {:016x}",
                    path.display(),
                    header.segment_id
                ),
            });
        }
        let padding = header.padding_start();
        if page[padding..].iter().any(|&b| b != 0) {
            return Err(Error::corruption(
                id,
                padding as u64,
                memdb_formats::FormatError::Invalid {
                    what: "segment header page",
                    offset: padding as u64,
                    reason: "padding after the header is not zero".into(),
                },
            ));
        }
        Ok(())
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Current length of the file (as the store sees it: an encrypted file is longer on disk).
    pub(crate) fn file_len(&self) -> Result<u64> {
        self.io
            .len(&self.path, &self.file)
            .map_err(Error::io("stat", &self.path))
    }

    /// The bytes `range` of the file: borrowed from the shared mapping, or for an encrypted
    /// store read, opened (every page's tag checked) and owned.
    pub(crate) fn bytes(&self, range: Range<u64>) -> Result<SegmentBytes> {
        let unavailable = |reason: String| Error::SegmentUnavailable {
            segment: self.id,
            reason,
        };
        let len = usize::try_from(range.end.saturating_sub(range.start))
            .map_err(|_| unavailable(format!("a read of {range:?} does not fit in memory")))?;
        if !self.io.seals_pages() {
            let map = self.map_covering(range.end)?;
            let range = range.start as usize..range.end as usize;
            return Ok(SegmentBytes::Mapped { map, range });
        }
        let mut opened = AlignedBytes::zeroed(len);
        match self
            .io
            .read_at(&self.path, &self.file, opened.as_mut_slice(), range.start)
        {
            Ok(()) => Ok(SegmentBytes::Opened(Arc::new(opened))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(unavailable(format!(
                "file is {} bytes, a read needs {}",
                self.file_len().unwrap_or(0),
                range.end
            ))),
            // A page whose tag fails is damage at that page, like a CRC mismatch.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(Error::corruption(
                self.id,
                range.start,
                memdb_formats::FormatError::Invalid {
                    what: "sealed page",
                    offset: range.start,
                    reason: e.to_string(),
                },
            )),
            Err(e) => Err(Error::io("read", &self.path)(e)),
        }
    }

    /// As [`bytes`](SegmentFile::bytes), but in an encrypted store a page whose tag fails
    /// reads as zeros and is listed (by page number) instead of failing the whole range: one
    /// bad page costs what it holds, so `check` walks the rest and names exactly that.
    pub(crate) fn bytes_by_page(&self, range: Range<u64>) -> Result<(SegmentBytes, Vec<u64>)> {
        match self.bytes(range.clone()) {
            Err(Error::Corruption { .. }) if self.io.seals_pages() => {}
            other => return other.map(|bytes| (bytes, Vec::new())),
        }
        let len = usize::try_from(range.end.saturating_sub(range.start)).map_err(|_| {
            Error::SegmentUnavailable {
                segment: self.id,
                reason: format!("a read of {range:?} does not fit in memory"),
            }
        })?;
        let mut opened = AlignedBytes::zeroed(len);
        let mut bad = Vec::new();
        let page = PAGE as u64;
        let mut at = range.start;
        while at < range.end {
            let page_end = ((at / page + 1) * page).min(range.end);
            let buf = &mut opened.as_mut_slice()
                [(at - range.start) as usize..(page_end - range.start) as usize];
            match self.io.read_at(&self.path, &self.file, buf, at) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    buf.fill(0);
                    bad.push(at / page);
                }
                Err(e) => return Err(Error::io("read", &self.path)(e)),
            }
            at = page_end;
        }
        Ok((SegmentBytes::Opened(Arc::new(opened)), bad))
    }

    /// As [`bytes`](SegmentFile::bytes), but an encrypted store's opened range is kept in its
    /// cache and shared by the reads of the same range that follow (a record, a blob: a vector
    /// block every search reads), instead of being read and opened again. Committed ranges of a
    /// segment never change, so a cached range is the range on disk until the segment goes;
    /// `check` empties the cache first, so that it reads the disk.
    pub(crate) fn cached_bytes(&self, range: Range<u64>) -> Result<SegmentBytes> {
        let Some(cache) = &self.opened else {
            return self.bytes(range);
        };
        let key = (self.id, range.start, range.end);
        if let Some(hit) = cache.get(key) {
            return Ok(SegmentBytes::Opened(hit));
        }
        let bytes = self.bytes(range)?;
        if let SegmentBytes::Opened(opened) = &bytes {
            cache.insert(key, Arc::clone(opened));
        }
        Ok(bytes)
    }

    pub(crate) fn write_at(&self, bytes: &[u8], offset: u64) -> Result<()> {
        self.io
            .write_at(&self.path, &self.file, bytes, offset)
            .map_err(Error::io("write", &self.path))
    }

    /// Makes appended bytes durable. fdatasync suffices: it also persists a changed file
    /// length (the metadata needed to read the data back), only skipping timestamps.
    pub(crate) fn sync(&self) -> Result<()> {
        self.io
            .sync_data(&self.path, &self.file)
            .map_err(Error::io("fdatasync", &self.path))
    }

    /// Cuts the file to `len`. Only at open, before any mapping exists.
    pub(crate) fn truncate(&self, len: u64) -> Result<()> {
        if let Some(cache) = &self.opened {
            cache.forget_segment(self.id);
        }
        self.io
            .set_len(&self.path, &self.file, len)
            .map_err(Error::io("truncate", &self.path))?;
        self.sync()
    }

    /// A mapping that covers at least `[0, end)` (a store whose pages are not sealed).
    fn map_covering(&self, end: u64) -> Result<Arc<memmap2::Mmap>> {
        if let Ok(guard) = self.map.read()
            && let Some(map) = guard.as_ref().filter(|m| m.len() as u64 >= end)
        {
            return Ok(Arc::clone(map));
        }
        let mut guard = self
            .map
            .write()
            .map_err(|_| Error::ThreadFailed("segment map lock"))?;
        if let Some(map) = guard.as_ref().filter(|m| m.len() as u64 >= end) {
            return Ok(Arc::clone(map));
        }
        // SAFETY: the mapping is read-only and shared. memdb never modifies bytes of a segment
        // below its committed length and never truncates a segment after the store is open, and
        // readers only form slices below the committed length of their snapshot, so the bytes
        // behind every slice stay unchanged while it lives. The LOCK keeps other memdb writers
        // out; a foreign process editing the file can only change bytes, which the checksums on
        // every read detect. Tested by the segment_file tests and the reader/compaction tests.
        #[allow(unsafe_code)]
        let map =
            unsafe { memmap2::Mmap::map(&self.file) }.map_err(Error::io("mmap", &self.path))?;
        if (map.len() as u64) < end {
            return Err(Error::SegmentUnavailable {
                segment: self.id,
                reason: format!("file is {} bytes, a read needs {end}", map.len()),
            });
        }
        let map = Arc::new(map);
        *guard = Some(Arc::clone(&map));
        Ok(map)
    }

    /// Reads and verifies the entry whose header starts at `entry_offset`; returns its header.
    pub(crate) fn read_entry_header(&self, entry_offset: u64) -> Result<EntryHeader> {
        let end = entry_offset + ENTRY_HEADER_BYTES as u64;
        let bytes = self.cached_bytes(entry_offset..end)?;
        let header = EntryHeader::decode(&bytes, entry_offset)
            .map_err(|e| Error::corruption(self.id, entry_offset, e))?;
        if header.segment_id != self.id {
            return Err(Error::corruption(
                self.id,
                entry_offset,
                memdb_formats::FormatError::Invalid {
                    what: "entry header",
                    offset: entry_offset,
                    reason: format!("entry belongs to segment {:016x}", header.segment_id),
                },
            ));
        }
        Ok(header)
    }

    /// Marks the file for deletion once the last handle is dropped.
    pub(crate) fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::SeqCst);
    }
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        // The plaintext of a segment that is gone (or no longer open here) leaves memory too.
        if let Some(cache) = &self.opened {
            cache.forget_segment(self.id);
        }
        if self.obsolete.load(Ordering::SeqCst) {
            // Failure only leaves an unreferenced file, which the next open deletes.
            let _ = self.io.remove_file(&self.path);
        }
    }
}

/// Bytes of a segment file: a range of its shared mapping (zero copy), or pages read and
/// opened from an encrypted store.
#[derive(Debug)]
pub(crate) enum SegmentBytes {
    /// A range of the mapping; holding it keeps the mapping alive.
    Mapped {
        map: Arc<memmap2::Mmap>,
        range: Range<usize>,
    },
    /// Opened pages, owned (shared with the store's cache of opened ranges).
    Opened(Arc<AlignedBytes>),
}

impl std::ops::Deref for SegmentBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            SegmentBytes::Mapped { map, range } => &map[range.clone()],
            SegmentBytes::Opened(bytes) => bytes.as_slice(),
        }
    }
}

/// Alignment of bytes opened from a sealed segment: what a mapped segment gives the blocks
/// that start at an entry's payload (a page boundary plus the 64-byte entry header), which
/// vector blocks require (`memdb-vectors` refuses a block whose start is not 64-byte aligned).
const OPENED_ALIGN: usize = 64;

/// An owned byte buffer whose first byte is [`OPENED_ALIGN`]-aligned: a `Vec` with room to
/// start at the first aligned address inside it (its heap block never moves, so neither does
/// the start).
#[derive(Debug)]
pub(crate) struct AlignedBytes {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBytes {
    fn zeroed(len: usize) -> AlignedBytes {
        let buf = vec![0u8; len + OPENED_ALIGN - 1];
        let start = (OPENED_ALIGN - buf.as_ptr().addr() % OPENED_ALIGN) % OPENED_ALIGN;
        AlignedBytes { buf, start, len }
    }

    fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

/// Ranges of an encrypted store's segments already read and opened, keyed by (segment,
/// start, end), least recently used first out once they pass the budget. Only reads of
/// committed ranges go through it (records and blobs), and a segment's entries leave with it.
#[derive(Debug)]
pub(crate) struct OpenedCache {
    budget: usize,
    state: std::sync::Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    entries: std::collections::HashMap<(u64, u64, u64), (Arc<AlignedBytes>, u64)>,
    bytes: usize,
    clock: u64,
}

impl OpenedCache {
    /// A cache of at most `budget` bytes of opened ranges.
    pub(crate) fn new(budget: usize) -> OpenedCache {
        OpenedCache {
            budget,
            state: std::sync::Mutex::new(CacheState::default()),
        }
    }

    fn get(&self, key: (u64, u64, u64)) -> Option<Arc<AlignedBytes>> {
        let mut state = self.state.lock().ok()?;
        state.clock += 1;
        let clock = state.clock;
        let (bytes, used) = state.entries.get_mut(&key)?;
        *used = clock;
        Some(Arc::clone(bytes))
    }

    fn insert(&self, key: (u64, u64, u64), bytes: Arc<AlignedBytes>) {
        // A range larger than a quarter of the budget would push out everything else.
        if bytes.len > self.budget / 4 {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.clock += 1;
        let (len, clock) = (bytes.len, state.clock);
        if let Some((old, _)) = state.entries.insert(key, (bytes, clock)) {
            state.bytes -= old.len;
        }
        state.bytes += len;
        if state.bytes > self.budget {
            // Out with the least recently used, down to three quarters of the budget: one
            // sort per many inserts, not one per insert.
            let mut by_use: Vec<((u64, u64, u64), u64)> = state
                .entries
                .iter()
                .map(|(k, (_, used))| (*k, *used))
                .collect();
            by_use.sort_unstable_by_key(|(_, used)| *used);
            for (key, _) in by_use {
                if state.bytes <= self.budget / 4 * 3 {
                    break;
                }
                if let Some((old, _)) = state.entries.remove(&key) {
                    state.bytes -= old.len;
                }
            }
        }
    }

    /// Drops every range of segment `id`.
    pub(crate) fn forget_segment(&self, id: u64) {
        if let Ok(mut state) = self.state.lock() {
            let mut freed = 0;
            state.entries.retain(|(segment, ..), (bytes, _)| {
                let keep = *segment != id;
                if !keep {
                    freed += bytes.len;
                }
                keep
            });
            state.bytes -= freed;
        }
    }

    /// Drops every range (`check` reads the disk, not what was read before).
    pub(crate) fn clear(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.entries.clear();
            state.bytes = 0;
        }
    }
}

/// The set of segment files a snapshot can read: every segment its catalog view references
/// (and possibly newer ones, which it never reads).
pub(crate) type SegmentSet = std::collections::BTreeMap<u64, Arc<SegmentFile>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_grows_and_obsolete_files_go_with_the_last_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0000000000000001.seg");
        let io: Arc<dyn StorageIo> = Arc::new(crate::io::OsIo);
        let seg = Arc::new(SegmentFile::create(&io, path.clone(), 1, 0, None).unwrap());
        let first = seg.bytes(0..4096).unwrap();
        assert_eq!(first.len(), 4096);
        let entry = memdb_formats::segment::encode_entry(
            memdb_formats::segment::EntryKind::Blob,
            1,
            b"payload",
        );
        seg.write_at(&entry, 4096).unwrap();
        let second = seg.bytes(0..8192).unwrap();
        assert_eq!(&second[4096 + 64..4096 + 71], b"payload");
        assert_eq!(seg.read_entry_header(4096).unwrap().payload_len, 7);
        // The old mapping is still valid and unchanged below its end.
        assert_eq!(&first[..8], b"MEMDBSEG");

        let reader = Arc::clone(&seg);
        seg.mark_obsolete();
        drop(seg);
        assert!(path.exists(), "a reader still holds it");
        drop((reader, first, second));
        assert!(!path.exists());
    }

    #[test]
    fn a_wrong_id_or_damaged_header_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.seg");
        let io: Arc<dyn StorageIo> = Arc::new(crate::io::OsIo);
        drop(SegmentFile::create(&io, path.clone(), 5, 0, None).unwrap());
        assert!(matches!(
            SegmentFile::open(&io, path.clone(), 6, OpenMode::ReadWrite),
            Err(Error::SegmentUnavailable { .. })
        ));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            SegmentFile::open(&io, path, 5, OpenMode::ReadWrite),
            Err(Error::Corruption { page: 0, .. })
        ));
    }

    #[test]
    fn opened_bytes_start_64_byte_aligned_whatever_their_length() {
        for len in [0, 1, 63, 64, 4096, 10_000] {
            let mut bytes = AlignedBytes::zeroed(len);
            assert_eq!(bytes.as_slice().len(), len);
            assert_eq!(
                bytes.as_slice().as_ptr() as usize % OPENED_ALIGN,
                0,
                "len {len}"
            );
            bytes.as_mut_slice().fill(7);
            assert!(bytes.as_slice().iter().all(|&b| b == 7));
        }
    }

    #[test]
    fn the_opened_cache_keeps_its_budget_drops_the_least_recently_used_and_forgets_segments() {
        let cache = OpenedCache::new(4000);
        let range = |len: usize| Arc::new(AlignedBytes::zeroed(len));
        for i in 0..10u64 {
            cache.insert((1, i * 1000, i * 1000 + 900), range(900));
            // Range 0 is used after every insert: it stays.
            assert!(cache.get((1, 0, 900)).is_some(), "after {i}");
        }
        let state = cache.state.lock().unwrap();
        assert!(state.bytes <= 4000, "{}", state.bytes);
        assert_eq!(state.bytes, state.entries.len() * 900);
        drop(state);
        assert!(
            cache.get((1, 1000, 1900)).is_none(),
            "the oldest unused range stayed"
        );
        assert!(cache.get((1, 9000, 9900)).is_some());
        // Too large for the cache: not kept.
        cache.insert((2, 0, 1100), range(1100));
        assert!(cache.get((2, 0, 1100)).is_none());
        cache.insert((2, 0, 100), range(100));
        cache.forget_segment(1);
        assert!(cache.get((1, 0, 900)).is_none());
        assert_eq!(cache.state.lock().unwrap().bytes, 100);
        cache.clear();
        assert!(cache.get((2, 0, 100)).is_none());
    }
}
