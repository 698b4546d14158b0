//! Opening a store as the engine: the store with the engine's clients registered.
//!
//! The store (crate `memdb-store`) knows no client; the EM-Graph (`graph`) and the scrapbook pages
//! (`scrapbook`) keep rows derived from items inside its commits through
//! [`store::derived::DerivedData`](memdb_store::derived::DerivedData). This module is the one
//! place that wires them together, so every handle an application opens maintains both.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use memdb_store::derived::Clients;
use memdb_store::{Options, RebuildReport, RepairPhase, Repaired};

use crate::handle::Store;

/// The clients every store handle maintains, in the order the store calls them.
fn clients() -> Clients {
    vec![
        Arc::new(crate::graph::GraphRows),
        Arc::new(crate::place::PlaceFields),
        // Without `render` the pages are not maintained: a page is drawn again from its stale
        // marks (which the store keeps) by the next handle that renders.
        #[cfg(feature = "render")]
        Arc::new(crate::scrapbook::PageRows),
    ]
}

impl Store {
    /// Creates a new, empty store at `path` (the directory may exist but must be empty).
    pub fn create(path: impl AsRef<Path>, options: Options) -> Result<Store> {
        Ok(Store::with_clients(memdb_store::Store::create_with(
            path,
            options,
            clients(),
        )?))
    }

    /// Opens an existing store for reading and writing. Recovers from a crash: cuts the
    /// uncommitted tail of open segments and deletes segment files no commit references.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Store> {
        Ok(Store::with_clients(memdb_store::Store::open_with(
            path,
            options,
            clients(),
        )?))
    }

    /// Opens the store read-only, beside its writer if one is running (in this process or
    /// another): takes no LOCK, changes no file, and each [`snapshot`](Self::snapshot) sees the
    /// writer's latest commit. Writes fail with [`StoreError::ReadOnly`](crate::StoreError::ReadOnly).
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Store> {
        Ok(Store::with_clients(
            memdb_store::Store::open_read_only_with(path, options, clients())?,
        ))
    }

    /// Opens the store at `path`, creating it if the directory has no store yet.
    pub fn open_or_create(path: impl AsRef<Path>, options: Options) -> Result<Store> {
        if Store::exists_at(path.as_ref()) {
            Store::open(path, options)
        } else {
            Store::create(path, options)
        }
    }

    /// Whether the store at `path` is encrypted, without opening it.
    pub fn is_encrypted_at(path: impl AsRef<Path>) -> bool {
        memdb_store::Store::is_encrypted_at(path)
    }

    /// Whether `path` holds a store.
    pub fn exists_at(path: &Path) -> bool {
        memdb_store::Store::exists_at(path)
    }

    /// Changes what unlocks the encrypted store at `path` from `old` to `new`
    /// ([`memdb_store::Store::rekey`]): only the KEY file changes, atomically.
    pub fn rekey(
        path: impl AsRef<Path>,
        old: &memdb_store::crypto::Secret,
        new: &memdb_store::crypto::Secret,
        options: &Options,
    ) -> Result<()> {
        Ok(memdb_store::Store::rekey(path, old, new, options)?)
    }

    /// Rebuilds the store at `path` from its segment files when its catalog cannot be read
    /// (see `store/rebuild.rs`); `why` says what failed. The old directory is kept beside it as
    /// `<name>.damaged-<unix seconds>`. `progress` gets (items written, items to write). An
    /// encrypted store needs its secret in `options` (its segments are read through its key)
    /// and is rebuilt sealed under the same secret, with `options.kdf_cost`.
    pub fn rebuild(
        path: impl AsRef<Path>,
        options: Options,
        why: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<RebuildReport> {
        Ok(memdb_store::Store::rebuild_with(
            path,
            options,
            why,
            progress,
            clients(),
        )?)
    }

    /// Repairs the store at `path`: in place while its catalog reads and agrees with its
    /// segments ([`Store::repair`](memdb_store::Store::repair)), else by a rebuild from the segments ([`Store::rebuild`]).
    /// What `memdb repair` runs. `progress` gets the phase and (done, total) of it.
    pub fn repair_or_rebuild(
        path: impl AsRef<Path>,
        options: Options,
        progress: &mut dyn FnMut(RepairPhase, u64, u64),
    ) -> Result<Repaired> {
        Ok(memdb_store::Store::repair_or_rebuild_with(
            path.as_ref(),
            options,
            progress,
            clients,
        )?)
    }
}
