//! The one extension point of the store: data a client derives from items and keeps inside the
//! store's own commits (the EM-Graph, the scrapbook pages), and per-store state a client caches.
//!
//! The store knows what it stores (items, versions, blobs, vectors, segments) and nothing of
//! what clients make of it. A client that keeps derived rows in the catalog registers a
//! [`DerivedData`] when the store is opened (the engine's `open` does, for the graph and the
//! pages); the store calls it wherever rows derived from an item must change in the same commit
//! as the item (a delete, a correction, a repair losing the item), and wherever damage took bytes
//! a client can draw again. A client's own writes travel in a batch as a [`DerivedWrite`],
//! applied inside the batch's commit through a [`DerivedCommit`].
//!
//! Architecture invariant: nothing under `store/` imports a client module (`graph`, `scrapbook`,
//! `recall`, `forget`). Clients reach the store through this module, the public API, and (for
//! forgetting and page rows) the crate-internal compaction (`compact_with`) and table helpers.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use super::catalog::{self, BlobKind};
use super::read::Snapshot;
use super::write::{StagedBlob, Tables};
use crate::error::{Error, Result};
use memdb_formats::item::ItemFields;

/// Rows a client derives from items and keeps in the catalog, maintained inside the store's
/// commits.
pub trait DerivedData: Send + Sync {
    /// Items deleted, lost, or changed by the commit under way: removes what was derived from
    /// them inside `txn` and returns the vectors (space, key) that go with it.
    fn forget_items(
        &self,
        txn: &redb::WriteTransaction,
        items: &[u64],
    ) -> Result<Vec<(&'static str, u64)>> {
        let _ = (txn, items);
        Ok(Vec::new())
    }

    /// The fields of a stand-in (an item whose record was lost), read again by the store from
    /// its surviving original as an import reads them (a photo's EXIF): the client fills in
    /// what it derives from such fields at ingest (the place a position is in).
    fn complete_stand_in(&self, fields: &mut ItemFields) {
        let _ = fields;
    }

    /// Blobs lost to damage (a repair is about to drop them): the bytes of those this client
    /// can stand in for, and the days whose derived rows should be made again.
    fn salvage_lost_blobs(&self, snapshot: &Snapshot, lost: &BTreeSet<u64>) -> Result<Salvage> {
        let _ = (snapshot, lost);
        Ok(Salvage::default())
    }
}

/// What a client stands in for after damage: replacement bytes by blob id, and days to mark
/// stale so the client derives them again.
#[derive(Default)]
pub struct Salvage {
    /// Bytes that stand in for a lost blob, by blob id.
    pub replacements: BTreeMap<u64, Vec<u8>>,
    /// Days (`YYYY-MM-DD`) whose derived rows are made again.
    pub stale_days: Vec<String>,
}

/// The clients registered with a store, in the order they are called.
pub type Clients = Vec<Arc<dyn DerivedData>>;

/// A client's write, staged in a batch and applied inside its commit.
pub trait DerivedWrite: Send {
    /// Applies the write. Runs inside the batch's catalog transaction, after the batch's item
    /// operations that precede it.
    fn apply(self: Box<Self>, commit: &mut DerivedCommit<'_, '_>) -> Result<()>;
}

/// What a [`DerivedWrite`] may do inside a commit: its own tables through the transaction, the
/// store's counters, blobs it owns, and the day-staleness marks it accounts for.
pub struct DerivedCommit<'a, 't> {
    pub(super) txn: &'t redb::WriteTransaction,
    pub(super) tables: &'a mut Tables<'t>,
    pub(super) new_blobs: &'a mut Vec<Option<StagedBlob>>,
}

impl<'t> DerivedCommit<'_, 't> {
    /// The commit's catalog transaction (a client opens its own tables in it).
    pub fn txn(&self) -> &redb::WriteTransaction {
        self.txn
    }

    /// The transaction and the store's counters table (a client keeps its id counters there,
    /// under its own keys).
    pub fn txn_and_counters(
        &mut self,
    ) -> (
        &'t redb::WriteTransaction,
        &mut redb::Table<'t, &'static str, u64>,
    ) {
        (self.txn, &mut self.tables.meta)
    }

    /// Stores `bytes` as a new blob of `kind` owned by no item, written with the batch; returns
    /// its id.
    pub fn add_blob(&mut self, kind: BlobKind, bytes: Vec<u8>) -> Result<u64> {
        let id = self.tables.take(catalog::KEY_NEXT_BLOB, 1)?;
        self.new_blobs.push(Some(StagedBlob {
            id,
            kind,
            bytes,
            owner: 0,
        }));
        Ok(id)
    }

    /// Removes a blob the client no longer references.
    pub fn remove_blob(&mut self, id: u64) -> Result<()> {
        self.tables.remove_blob(id)?;
        Ok(())
    }

    /// Clears a day's staleness marks: those in `handled` (item, op sequence), or all of them.
    pub fn clear_stale_day(&mut self, day: &str, handled: Option<&[(u64, u64)]>) -> Result<()> {
        self.tables.clear_stale_page(day, handled)
    }
}

/// Per-store state of clients (caches, update locks), one value per type, shared by every
/// clone of a store handle. The store keeps it without knowing what it is.
#[derive(Default)]
pub(crate) struct Extensions {
    values: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// The value of type `T`, made with `T::default()` on first use.
    pub(crate) fn get<T: Any + Send + Sync + Default>(&self) -> Result<Arc<T>> {
        let mut values = self.values.lock().map_err(|_| {
            Error::WriterPoisoned("a thread panicked holding store extensions".into())
        })?;
        let value = values
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()) as Arc<dyn Any + Send + Sync>);
        Arc::clone(value)
            .downcast::<T>()
            .map_err(|_| Error::Inconsistent("a store extension of another type".into()))
    }
}
