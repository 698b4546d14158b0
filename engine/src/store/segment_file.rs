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
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryHeader, PAGE, SegmentHeader};

use crate::error::{Error, Result};
use crate::store::io::{OpenMode, StorageIo};

/// An open segment file shared by the writer and every snapshot that references it.
#[derive(Debug)]
pub(crate) struct SegmentFile {
    id: u64,
    path: PathBuf,
    io: Arc<dyn StorageIo>,
    file: File,
    map: RwLock<Option<Arc<memmap2::Mmap>>>,
    obsolete: AtomicBool,
}

impl SegmentFile {
    /// Creates segment `id` with its header page and fsyncs it. The caller fsyncs the
    /// directory before any commit references the segment.
    pub(crate) fn create(
        io: &Arc<dyn StorageIo>,
        path: PathBuf,
        id: u64,
        now_ms: i64,
    ) -> Result<SegmentFile> {
        let file = io
            .open_file(&path, OpenMode::CreateNew)
            .map_err(Error::io("create segment", &path))?;
        let header = SegmentHeader {
            segment_id: id,
            created_unix_ms: now_ms,
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
        }
    }

    /// Opens segment `id` and checks its header page.
    pub(crate) fn open(
        io: &Arc<dyn StorageIo>,
        path: PathBuf,
        id: u64,
        mode: OpenMode,
    ) -> Result<SegmentFile> {
        let file = io
            .open_file(&path, mode)
            .map_err(Error::io("open segment", &path))?;
        let mut page = vec![0u8; PAGE];
        io.read_at(&path, &file, &mut page, 0)
            .map_err(Error::io("read segment header", &path))?;
        let header =
            SegmentHeader::decode(&page).map_err(|source| Error::corruption(id, 0, source))?;
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
        if page[memdb_formats::segment::SEGMENT_HEADER_BYTES..]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(Error::corruption(
                id,
                memdb_formats::segment::SEGMENT_HEADER_BYTES as u64,
                memdb_formats::FormatError::Invalid {
                    what: "segment header page",
                    offset: memdb_formats::segment::SEGMENT_HEADER_BYTES as u64,
                    reason: "padding after the header is not zero".into(),
                },
            ));
        }
        Ok(SegmentFile::with_file(io, path, id, file))
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Current length of the file on disk.
    pub(crate) fn file_len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(Error::io("stat", &self.path))?
            .len())
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
        self.io
            .set_len(&self.path, &self.file, len)
            .map_err(Error::io("truncate", &self.path))?;
        self.sync()
    }

    /// A mapping that covers at least `[0, end)`.
    pub(crate) fn map_covering(&self, end: u64) -> Result<Arc<memmap2::Mmap>> {
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
        let map = self.map_covering(end)?;
        let header = EntryHeader::decode(&map[entry_offset as usize..end as usize], entry_offset)
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
        if self.obsolete.load(Ordering::SeqCst) {
            // Failure only leaves an unreferenced file, which the next open deletes.
            let _ = self.io.remove_file(&self.path);
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
        let io: Arc<dyn StorageIo> = Arc::new(crate::store::io::OsIo);
        let seg = Arc::new(SegmentFile::create(&io, path.clone(), 1, 0).unwrap());
        let first = seg.map_covering(4096).unwrap();
        assert_eq!(first.len(), 4096);
        let entry = memdb_formats::segment::encode_entry(
            memdb_formats::segment::EntryKind::Blob,
            1,
            b"payload",
        );
        seg.write_at(&entry, 4096).unwrap();
        let second = seg.map_covering(8192).unwrap();
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
        let io: Arc<dyn StorageIo> = Arc::new(crate::store::io::OsIo);
        drop(SegmentFile::create(&io, path.clone(), 5, 0).unwrap());
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
}
