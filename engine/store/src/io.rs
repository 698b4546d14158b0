//! The file-system operations a store performs, behind one small trait.
//!
//! Every operation that changes what is on disk or makes it durable — creating a directory or
//! file, a positioned write, `set_len`, `fdatasync`, a directory fsync, an unlink — and every
//! positioned read of the catalog and of segment headers goes through [`StorageIo`]: the segment
//! files directly, the redb catalog through [`CatalogBackend`], redb's `StorageBackend`. The
//! default, [`OsIo`], calls the OS. Tests put a recording, failing implementation in its place
//! (`FaultFs`, behind the `fault-injection` feature) to build power-loss images, audit the order
//! of fsyncs and inject I/O errors.
//!
//! What does not go through it, and why: segment bytes are read through a shared mmap (a page
//! fault cannot return an error; the checksums on every read catch what a bad page would return),
//! and locks (the LOCK, redb's byte-range locks) are not data. memdb renames one file only, an
//! encrypted store's KEY when it is rekeyed: a segment becomes live by being referenced from a
//! catalog commit, not by a rename.
//!
//! Invariants: an implementation must either perform an operation completely and return `Ok`,
//! or return an error (it may have done part of it: a short write); it must never report a
//! failed `sync_data` as success. Files are created owner-only (0600), directories 0700.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::ops::Bound;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::BackendError;

/// Store directories are the owner's alone (private data).
pub(crate) const DIR_MODE: u32 = 0o700;
/// Store files are the owner's alone.
pub(crate) const FILE_MODE: u32 = 0o600;

/// How [`StorageIo::open_file`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create a new file (0600); fail if it exists.
    CreateNew,
    /// Open for reading and writing, creating the file (0600) if missing.
    Create,
    /// Open an existing file for reading and writing.
    ReadWrite,
    /// Open an existing file for reading only.
    ReadOnly,
}

/// The file-system operations of a store (see the module documentation).
///
/// `path` always names the file a `file` argument was opened from, so an implementation can
/// record or fail operations per file without keeping its own table of descriptors.
pub trait StorageIo: std::fmt::Debug + Send + Sync + 'static {
    /// Creates `path` and missing parents as owner-only directories (tightening an existing one).
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Opens or creates a file.
    fn open_file(&self, path: &Path, mode: OpenMode) -> io::Result<File>;
    /// Fills `buf` from `offset`; reading past the end is an error.
    fn read_at(&self, path: &Path, file: &File, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `bytes` at `offset`.
    fn write_at(&self, path: &Path, file: &File, bytes: &[u8], offset: u64) -> io::Result<()>;
    /// Cuts or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, path: &Path, file: &File, len: u64) -> io::Result<()>;
    /// Makes the file's data and length durable (`fdatasync`).
    fn sync_data(&self, path: &Path, file: &File) -> io::Result<()>;
    /// Makes the entries created in or removed from directory `path` durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Unlinks a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` over `to` (only an encrypted store's KEY file is ever renamed, by
    /// `rekey`); the caller fsyncs the directory.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    /// The file's length as the store sees it (an encrypted store's files are longer on disk).
    fn len(&self, _path: &Path, file: &File) -> io::Result<u64> {
        Ok(file.metadata()?.len())
    }
    /// Whether file bytes on disk are sealed pages rather than the store's bytes, so that
    /// segments must be read through [`read_at`](StorageIo::read_at), never mapped.
    fn seals_pages(&self) -> bool {
        false
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsIo;

impl StorageIo for OsIo {
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(path)?;
        // mkdir's mode is filtered by the umask but never widened; set it explicitly so a
        // pre-existing directory is tightened too.
        fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
    }

    fn open_file(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        let mut opts = OpenOptions::new();
        opts.read(true)
            .write(mode != OpenMode::ReadOnly)
            .mode(FILE_MODE);
        match mode {
            OpenMode::CreateNew => opts.create_new(true),
            OpenMode::Create => opts.create(true),
            OpenMode::ReadWrite | OpenMode::ReadOnly => &mut opts,
        };
        opts.open(path)
    }

    fn read_at(&self, _path: &Path, file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        file.read_exact_at(buf, offset)
    }

    fn write_at(&self, _path: &Path, file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
        file.write_all_at(bytes, offset)
    }

    fn set_len(&self, _path: &Path, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn sync_data(&self, _path: &Path, file: &File) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
}

/// The redb catalog's storage: its one file, every read and write through [`StorageIo`].
///
/// redb's multi-process locks (its `SingleWriter` mode: one writer process, any number of
/// read-only processes following its commits) are taken by redb's own `FileBackend` on a second
/// descriptor of the same file: they are byte-range locks of the file, not data, so they stay
/// out of the recorded I/O.
#[derive(Debug)]
pub(crate) struct CatalogBackend {
    io: Arc<dyn StorageIo>,
    path: PathBuf,
    file: File,
    locks: redb::backends::FileBackend,
}

impl CatalogBackend {
    pub(crate) fn open(io: Arc<dyn StorageIo>, path: &Path, mode: OpenMode) -> io::Result<Self> {
        let file = io.open_file(path, mode)?;
        let lock_mode = match mode {
            OpenMode::ReadOnly => OpenMode::ReadOnly,
            _ => OpenMode::ReadWrite,
        };
        let locks = redb::backends::FileBackend::new(OsIo.open_file(path, lock_mode)?)
            .map_err(io::Error::other)?;
        Ok(CatalogBackend {
            io,
            path: path.to_path_buf(),
            file,
            locks,
        })
    }
}

impl CatalogBackend {
    /// redb reports an I/O error without saying where: name the file and the operation, and
    /// keep the error's kind.
    fn context(&self, op: &'static str, offset: u64) -> impl FnOnce(io::Error) -> io::Error + '_ {
        move |e| {
            io::Error::new(
                e.kind(),
                format!("{} at offset {offset} of {}: {e}", op, self.path.display()),
            )
        }
    }
}

impl redb::StorageBackend for CatalogBackend {
    fn len(&self) -> io::Result<u64> {
        self.io
            .len(&self.path, &self.file)
            .map_err(self.context("stat", 0))
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.io
            .read_at(&self.path, &self.file, out, offset)
            .map_err(self.context("read", offset))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.io
            .set_len(&self.path, &self.file, len)
            .map_err(self.context("set_len", len))
    }

    fn sync_data(&self) -> io::Result<()> {
        self.io
            .sync_data(&self.path, &self.file)
            .map_err(self.context("fdatasync", 0))
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.io
            .write_at(&self.path, &self.file, data, offset)
            .map_err(self.context("write", offset))
    }

    fn close(&self) -> io::Result<()> {
        self.locks.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.locks.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.locks.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.locks.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.locks.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.locks.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.locks.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_io_creates_private_files_and_round_trips_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        OsIo.create_dir(&sub).unwrap();
        assert_eq!(
            fs::metadata(&sub).unwrap().permissions().mode() & 0o777,
            DIR_MODE
        );
        let path = sub.join("f");
        let file = OsIo.open_file(&path, OpenMode::CreateNew).unwrap();
        assert!(OsIo.open_file(&path, OpenMode::CreateNew).is_err());
        assert_eq!(
            file.metadata().unwrap().permissions().mode() & 0o777,
            FILE_MODE
        );
        OsIo.write_at(&path, &file, b"hello", 3).unwrap();
        OsIo.sync_data(&path, &file).unwrap();
        let mut buf = [0u8; 8];
        OsIo.read_at(&path, &file, &mut buf, 0).unwrap();
        assert_eq!(&buf, b"\0\0\0hello");
        assert!(
            OsIo.read_at(&path, &file, &mut buf, 1).is_err(),
            "past the end"
        );
        OsIo.set_len(&path, &file, 2).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 2);
        OsIo.sync_dir(&sub).unwrap();
        OsIo.remove_file(&path).unwrap();
        assert!(!path.exists());
    }
}
