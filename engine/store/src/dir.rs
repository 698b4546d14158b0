//! The store directory: its layout, owner-only permissions, the LOCK, and directory fsync.
//!
//! ```text
//! <store>/catalog.redb      the catalog (redb)
//! <store>/segments/         <16 hex digit id>.seg files
//! <store>/LOCK              held with an exclusive OS lock by the one writer; holds its pid
//! ```
//! Invariants: every directory memdb creates is mode 0700 and every file 0600, whatever the
//! umask; the LOCK is an advisory OS lock, so it dies with its process (a kill -9 never leaves a
//! stale lock behind).
//!
//! Why a lock is retried for a moment before `Locked` is returned: an OS file lock belongs to the
//! open file description, and a child that another thread of this process forks shares every
//! descriptor until its `exec` closes them (they are all close-on-exec). A store closed and
//! reopened at that instant would find its own old lock still held by the child until the exec —
//! milliseconds, or much longer on a loaded machine. So a writer writes its pid into the LOCK,
//! and this process keeps a list of the LOCKs it holds: a LOCK held by a handle of this process
//! fails at once, one that names this process but is not held by a handle of it can only be a
//! forked child's and is waited out (`CATALOG_LOCK_GRACE`), and any other is retried for
//! `LOCK_GRACE`, so a lock really held by another writer still fails well within 100 ms.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::io::{OpenMode, OsIo, StorageIo};

pub(crate) const CATALOG_FILE: &str = "catalog.redb";
pub(crate) const SEGMENTS_DIR: &str = "segments";
pub(crate) const LOCK_FILE: &str = "LOCK";
pub(crate) const SEGMENT_EXT: &str = "seg";

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

/// How long a lock only this process's own forked children can hold is retried — the catalog's
/// once the LOCK is ours, the LOCK when it names this process: a loaded machine may not
/// schedule a forked child to its exec for a while, and waiting costs no other writer anything.
pub(crate) const CATALOG_LOCK_GRACE: Duration = Duration::from_secs(2);

/// Runs `attempt` again while it fails with an error `is_held` calls a held lock, for at most
/// `grace` (see the module header for why).
pub(crate) fn retry_held_lock<T, E>(
    grace: Duration,
    mut attempt: impl FnMut() -> std::result::Result<T, E>,
    is_held: impl Fn(&E) -> bool,
) -> std::result::Result<T, E> {
    let deadline = Instant::now() + grace;
    loop {
        match attempt() {
            Err(e) if is_held(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

/// The LOCKs this process holds, by (device, inode): a second writer in the same process is
/// refused at once, and a LOCK found held while it is not listed here but names this process
/// can only be held by a child forked from a handle since closed.
static HELD_HERE: Mutex<BTreeSet<(u64, u64)>> = Mutex::new(BTreeSet::new());

fn held_here() -> MutexGuard<'static, BTreeSet<(u64, u64)>> {
    HELD_HERE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The held write lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
    key: (u64, u64),
}

impl StoreLock {
    /// Takes the exclusive lock. A writer in another process is reported as `Locked` after
    /// `LOCK_GRACE`, one in this process at once; a lock left with a forked child of this
    /// process (the LOCK names our pid) is waited out for up to `CATALOG_LOCK_GRACE`.
    pub(crate) fn acquire(store_dir: &Path) -> Result<StoreLock> {
        let path = store_dir.join(LOCK_FILE);
        let locked_error = || Error::Locked {
            path: store_dir.to_path_buf(),
        };
        // The LOCK holds no data, so it is opened directly, never through a test's StorageIo.
        let file = OsIo
            .open_file(&path, OpenMode::Create)
            .map_err(Error::io("open", &path))?;
        let meta = file.metadata().map_err(Error::io("stat", &path))?;
        let key = (meta.dev(), meta.ino());
        if held_here().contains(&key) {
            return Err(locked_error());
        }
        let is_held = |e: &std::fs::TryLockError| matches!(e, std::fs::TryLockError::WouldBlock);
        let mut locked = retry_held_lock(LOCK_GRACE, || file.try_lock(), is_held);
        if locked.as_ref().is_err_and(is_held) && names_this_process(&path) {
            locked = retry_held_lock(CATALOG_LOCK_GRACE, || file.try_lock(), is_held);
        }
        match locked {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(locked_error()),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", path)(e)),
        }
        // Informational, and what tells a later open of ours that a lock it finds held is a
        // fork's: the holder's pid. Not synced, and best effort: a full disk must not keep the
        // writer (who could free space) out; a missing or stale pid only costs a wait.
        let _ = file
            .set_len(0)
            .and_then(|()| file.write_all_at(std::process::id().to_string().as_bytes(), 0));
        held_here().insert(key);
        Ok(StoreLock { _file: file, key })
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // The OS lock goes with the descriptor, right after this.
        held_here().remove(&self.key);
    }
}

/// Whether the LOCK at `path` names this process as its last holder.
fn names_this_process(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|pid| pid.trim() == std::process::id().to_string())
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
