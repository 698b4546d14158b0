//! The store directory: its layout, owner-only permissions, the LOCK, and directory fsync.
//!
//! ```text
//! <store>/catalog.redb      the catalog (redb)
//! <store>/segments/         <16 hex digit id>.seg files
//! <store>/LOCK              held with an exclusive OS lock by the one writer
//! ```
//! Invariants: every directory memdb creates is mode 0700 and every file 0600, whatever the
//! umask; the LOCK is an advisory OS lock, so it dies with its process (a kill -9 never leaves a
//! stale lock behind).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub(crate) const CATALOG_FILE: &str = "catalog.redb";
pub(crate) const SEGMENTS_DIR: &str = "segments";
pub(crate) const LOCK_FILE: &str = "LOCK";
pub(crate) const SEGMENT_EXT: &str = "seg";

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `path` (and missing parents) as an owner-only directory.
pub(crate) fn create_private_dir(path: &Path) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(Error::io("create directory", path))?;
    // The mode given to mkdir is filtered by the umask but never widened; set it explicitly so
    // a pre-existing directory is tightened too.
    fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
        .map_err(Error::io("chmod", path))
}

/// Opens `path` for reading and writing, creating it owner-only if missing.
pub(crate) fn open_private_file(path: &Path, create_new: bool) -> Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).mode(FILE_MODE);
    if create_new {
        opts.create_new(true);
    } else {
        opts.create(true);
    }
    opts.open(path).map_err(Error::io("open", path))
}

/// fsyncs a directory so entries created or removed in it are durable.
pub(crate) fn sync_dir(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("fsync directory", path))
}

/// The held write lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Takes the exclusive lock without waiting: a second writer fails at once with `Locked`.
    pub(crate) fn acquire(store_dir: &Path) -> Result<StoreLock> {
        let path = store_dir.join(LOCK_FILE);
        let file = open_private_file(&path, false)?;
        match file.try_lock() {
            Ok(()) => Ok(StoreLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
                path: store_dir.to_path_buf(),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock", path)(e)),
        }
    }
}

/// File name of segment `id`.
pub(crate) fn segment_file_name(id: u64) -> String {
    format!("{id:016x}.{SEGMENT_EXT}")
}

/// Segment id of a file name, if it is one.
pub(crate) fn parse_segment_file_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".seg")?;
    if stem.len() != 16 {
        return None;
    }
    u64::from_str_radix(stem, 16).ok()
}

/// Paths of a store.
#[derive(Debug, Clone)]
pub(crate) struct StorePaths {
    pub(crate) root: PathBuf,
    pub(crate) segments: PathBuf,
    pub(crate) catalog: PathBuf,
}

impl StorePaths {
    pub(crate) fn new(root: &Path) -> StorePaths {
        StorePaths {
            root: root.to_path_buf(),
            segments: root.join(SEGMENTS_DIR),
            catalog: root.join(CATALOG_FILE),
        }
    }

    pub(crate) fn segment(&self, id: u64) -> PathBuf {
        self.segments.join(segment_file_name(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip() {
        assert_eq!(segment_file_name(0x2a), "000000000000002a.seg");
        assert_eq!(parse_segment_file_name("000000000000002a.seg"), Some(0x2a));
        assert_eq!(parse_segment_file_name("2a.seg"), None);
        assert_eq!(parse_segment_file_name("000000000000002a.tmp"), None);
    }

    #[test]
    fn second_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = StoreLock::acquire(dir.path()).unwrap();
        assert!(matches!(
            StoreLock::acquire(dir.path()),
            Err(Error::Locked { .. })
        ));
        drop(first);
        StoreLock::acquire(dir.path()).unwrap();
    }
}
