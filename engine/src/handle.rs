//! The engine's handles: [`Store`] and [`Snapshot`], the substrate's (crate `memdb-store`)
//! with the engine's clients registered and the memory model's operations on them.
//!
//! A `Store` here is a [`memdb_store::Store`] opened with the engine's derived-data clients
//! (the EM-Graph, places, the scrapbook pages; see `open.rs`), so every handle an application
//! holds maintains them inside the store's commits. The substrate's own operations (batches,
//! reads, check, compact, repair, settings) are reached through `Deref`; the memory model's
//! (ingest, recall, remember, forget, graph, pages) are inherent methods written in their
//! modules. A snapshot taken through this handle is the engine's [`Snapshot`], so recall and
//! the graph's reads work on it.
//!
//! Invariant: the only way to get an engine `Store` is `open.rs`'s constructors, so no handle
//! exists without its clients.

use std::ops::Deref;

use crate::error::Result;

/// An open memdb store. Cheap to clone; all clones share one writer.
#[derive(Clone, Debug)]
pub struct Store {
    store: memdb_store::Store,
}

impl Store {
    /// The engine's handle over a substrate handle opened with the engine's clients.
    pub(crate) fn with_clients(store: memdb_store::Store) -> Store {
        Store { store }
    }

    /// A consistent, point-in-time view of the store: every read through it sees the same
    /// commit, whatever is written meanwhile.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(Snapshot {
            snapshot: self.store.snapshot()?,
        })
    }
}

impl Store {
    /// Gives the catalog's free pages back to the file system
    /// ([`memdb_store::Store::shrink_catalog`]): needs the store to itself, no clone of this
    /// handle and no snapshot alive.
    pub fn shrink_catalog(&mut self) -> memdb_store::Result<memdb_store::CatalogShrink> {
        self.store.shrink_catalog()
    }
}

impl Deref for Store {
    type Target = memdb_store::Store;

    fn deref(&self) -> &memdb_store::Store {
        &self.store
    }
}

/// A consistent, point-in-time view of a store (see [`memdb_store::Snapshot`]), with the
/// memory model's reads (recall, the graph, the pages).
pub struct Snapshot {
    snapshot: memdb_store::Snapshot,
}

impl Deref for Snapshot {
    type Target = memdb_store::Snapshot;

    fn deref(&self) -> &memdb_store::Snapshot {
        &self.snapshot
    }
}
