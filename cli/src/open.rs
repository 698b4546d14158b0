//! Opening stores for commands: as the writer (waiting for another writer's lock), for reading
//! (read-only where this process may not write), as a long-lived reader, and `memdb repair`.

use memdb::Store;

use crate::error::{CliError, Result};
use crate::keys;
use crate::output::Out;
use crate::progress;

/// How long a command that writes waits for another writer (an import, an MCP server's write,
/// a Python writer) to release the store before it gives up with the lock error.
pub(crate) const COMMAND_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The lock wait: `MEMDB_LOCK_WAIT` (seconds, `0`: fail at once) if set, else `default`.
pub(crate) fn lock_wait(default: std::time::Duration) -> std::time::Duration {
    std::env::var("MEMDB_LOCK_WAIT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .unwrap_or(default)
}

/// Opens an existing store as its writer, with the path in the error; waits for another
/// writer for up to [`lock_wait`] (`MEMDB_LOCK_WAIT`, default 10 s).
pub(crate) fn open_store(dir: &std::path::Path) -> Result<Store> {
    open_store_waiting(dir, lock_wait(COMMAND_LOCK_WAIT))
}

/// [`open_store`] waiting up to `wait` for the store's lock.
pub(crate) fn open_store_waiting(
    dir: &std::path::Path,
    wait: std::time::Duration,
) -> Result<Store> {
    let options = keys::options_for(dir)?;
    waiting_for_lock(dir, wait, || Store::open(dir, options.clone()))
        .map_err(|e| CliError::store(dir, e))
}

/// Runs `open` again while it fails because another process holds the store's lock, for up
/// to `wait` (saying so on stderr after a second): writers elsewhere hold it for one commit or
/// one import at a time.
pub(crate) fn waiting_for_lock<T>(
    dir: &std::path::Path,
    wait: std::time::Duration,
    mut open: impl FnMut() -> memdb::Result<T>,
) -> memdb::Result<T> {
    let start = std::time::Instant::now();
    let mut said = false;
    loop {
        match open() {
            Err(memdb::Error::Store(memdb::StoreError::Locked { .. }))
                if start.elapsed() < wait =>
            {
                if !said && start.elapsed() >= std::time::Duration::from_secs(1) {
                    eprintln!(
                        "memdb: {} is being written by another process; waiting up to {:.0} s \
                         (MEMDB_LOCK_WAIT)",
                        dir.display(),
                        wait.as_secs_f64()
                    );
                    said = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

/// Opens a store for a command that only reads: as its writer (which also finishes a crash
/// recovery), or read-only where it may not write — beside the process that holds it (an
/// application, another shell), on read-only media, without write permission — so reading
/// never waits for a writer and never needs to write.
pub(crate) fn open_for_reading(dir: &std::path::Path) -> Result<Store> {
    let options = keys::options_for(dir)?;
    match Store::open(dir, options.clone()) {
        Err(e) if e.is_no_write_access() => Store::open_read_only(dir, options),
        other => other,
    }
    .map_err(|e| CliError::store(dir, e))
}

/// Opens a store read-only for a long-lived reader (the shell): it takes no lock, so imports in
/// another terminal work while it reads. A catalog that still needs crash recovery is recovered
/// first by a brief writer open, when this process may write.
pub(crate) fn open_reader(dir: &std::path::Path) -> Result<Store> {
    let options = keys::options_for(dir)?;
    match Store::open_read_only(dir, options.clone()) {
        Ok(store) => Ok(store),
        Err(first) => {
            match Store::open(dir, options.clone()) {
                Ok(writer) => drop(writer),
                Err(_) => return Err(CliError::store(dir, first)),
            }
            Store::open_read_only(dir, options).map_err(|e| CliError::store(dir, e))
        }
    }
}

/// `memdb repair`: in place while the catalog reads and agrees with the segments, else a
/// rebuild from the segments (`Store::repair_or_rebuild`).
pub(crate) fn repair(dir: &std::path::Path, out: &Out) -> Result<memdb::maintenance::Repaired> {
    let options = keys::options_for(dir)?;
    let mut bar = progress::bar(0, "repairing (bytes)", !out.json);
    let mut rebuilding = false;
    let report = Store::repair_or_rebuild(dir, options, &mut |phase, done, total| {
        if phase == memdb::maintenance::RepairPhase::Rebuild && !rebuilding {
            rebuilding = true;
            bar.finish_and_clear();
            if !out.json {
                eprintln!(
                    "memdb: the catalog cannot be read or trusted; rebuilding the store from its segments"
                );
            }
            bar = progress::bar(0, "rebuilding items", !out.json);
        }
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    report.map_err(|e| CliError::store(dir, e))
}
