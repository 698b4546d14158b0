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
//!
//! Why a lock is retried for a moment before `Locked` is returned: an OS file lock belongs to the
//! open file description, and a child that another thread of this process forks shares every
//! descriptor until its `exec` closes them (they are all close-on-exec). A store closed and
//! reopened at that instant would find its own old lock still held by the child for the few
//! milliseconds until the exec. `LOCK_GRACE` absorbs that window; a lock really held by another
//! writer still fails well within 100 ms.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::store::io::{OpenMode, OsIo, StorageIo};

pub(crate) const CATALOG_FILE: &str = "catalog.redb";
pub(crate) const SEGMENTS_DIR: &str = "segments";
pub(crate) const LOCK_FILE: &str = "LOCK";
pub(crate) const SEGMENT_EXT: &str = "seg";

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `path` (and missing parents) as an owner-only directory.
pub(crate) fn create_private_dir(io: &dyn StorageIo, path: &Path) -> Result<()> {
    io.create_dir(path)
        .map_err(Error::io("create directory", path))
}

/// fsyncs a directory so entries created or removed in it are durable.
pub(crate) fn sync_dir(io: &dyn StorageIo, path: &Path) -> Result<()> {
    io.sync_dir(path)
        .map_err(Error::io("fsync directory", path))
}

/// How long a lock found held is retried before it counts as held by another writer.
pub(crate) const LOCK_GRACE: Duration = Duration::from_millis(40);

/// Runs `attempt` again while it fails with an error `is_held` calls a held lock, for at most
/// `LOCK_GRACE` (see the module header for why).
pub(crate) fn retry_held_lock<T, E>(
    mut attempt: impl FnMut() -> std::result::Result<T, E>,
    is_held: impl Fn(&E) -> bool,
) -> std::result::Result<T, E> {
    let deadline = Instant::now() + LOCK_GRACE;
    loop {
        match attempt() {
            Err(e) if is_held(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

/// The held write lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Takes the exclusive lock: a second writer fails with `Locked` after `LOCK_GRACE`.
    pub(crate) fn acquire(store_dir: &Path) -> Result<StoreLock> {
        let path = store_dir.join(LOCK_FILE);
        // The LOCK holds no data, so it is opened directly, never through a test's StorageIo.
        let file = OsIo
            .open_file(&path, OpenMode::Create)
            .map_err(Error::io("open", &path))?;
        let locked = retry_held_lock(
            || file.try_lock(),
            |e| matches!(e, std::fs::TryLockError::WouldBlock),
        );
        match locked {
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
