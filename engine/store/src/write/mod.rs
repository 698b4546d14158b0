//! Writing: a batch of puts and deletes that becomes durable and visible in one commit.
//!
//! Commit order (SPEC.md §6): resolve ids and index changes inside a redb write transaction →
//! append the item block and blob entries to the open segment (sealing it and starting a new
//! one first if it is full) → fsync the segment (a new segment's directory entry was fsync'd
//! when it was created) → record the locations and the new committed length → redb commit.
//! Until that commit nothing of the batch is visible, and after a crash at any point before it
//! the catalog still describes the previous state exactly.
//!
//! Invariant: a failed commit leaves the store as it was. After a failed fsync or catalog
//! commit the writer refuses further batches until the store is reopened, so a write whose
//! durability is unknown is never reported as committed later.

mod commit;
mod put;
mod tables;

use super::Store;
use super::catalog::BlobKind;
use super::derived::DerivedWrite;
use super::versions::{AppliedOp, MemoryOp};
use crate::error::Result;
use memdb_formats::item::{ItemDraft, ItemFields, ItemRecord};

pub use commit::check_put;
use commit::commit_locked;
pub(crate) use put::StagedBlob;
pub use tables::Tables;

/// What a put did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutStatus {
    /// A new item.
    Added,
    /// An item with the same external id existed and was replaced.
    Updated,
    /// An item with the same external id and identical fields existed; nothing was written.
    Unchanged,
}

/// The outcome of one put of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutOutcome {
    /// The item's id.
    pub id: u64,
    /// What happened.
    pub status: PutStatus,
    /// Ids of the blobs stored with it, in the order given.
    pub blob_ids: Vec<u64>,
}

/// What a committed batch did, in the order of its operations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitReceipt {
    /// One per put, in order.
    pub puts: Vec<PutOutcome>,
    /// Ids of standalone blobs, one per `put_blob`, in order.
    pub blobs: Vec<u64>,
    /// Items deleted.
    pub deleted: u64,
    /// Things the batch asked for that could not be done and were skipped (deleting an item
    /// that does not exist, a `supersedes` naming an unknown external id).
    pub warnings: Vec<String>,
    /// One per memory operation ([`WriteBatch::memory`]), in order.
    pub memory_ops: Vec<AppliedOp>,
}

enum BatchOp {
    Put {
        draft: Box<ItemDraft>,
        blobs: Vec<(BlobKind, Vec<u8>)>,
        vector: Option<Vec<f32>>,
    },
    PutVector {
        space: String,
        key: u64,
        time_ms: i64,
        source: u8,
        vector: Vec<f32>,
    },
    DeleteVector {
        space: String,
        key: u64,
    },
    DefineVectors {
        space: String,
        precision: memdb_vectors::Precision,
    },
    RebuildVectors {
        space: String,
    },
    PutBlob {
        kind: BlobKind,
        bytes: Vec<u8>,
    },
    Delete {
        id: u64,
    },
    Purge {
        id: u64,
    },
    /// A typed memory operation (`Store::apply`).
    Memory {
        op: Box<MemoryOp>,
        /// The vector of the op's new version (ADD, UPDATE) in the item space.
        vector: Option<Vec<f32>>,
    },
    DeleteExternal {
        external_id: String,
    },
    DeleteBlob {
        id: u64,
    },
    /// A client's derived rows (the EM-Graph's, a day's page), applied inside the commit.
    Derived(Box<dyn DerivedWrite>),
    /// An item as it was in another store, with its own id, ingest time and blob ids
    /// (`Store::rebuild` salvaging a store whose catalog is damaged).
    Restore {
        record: Box<ItemRecord>,
        blobs: Vec<(u64, BlobKind, Vec<u8>)>,
        /// Blobs the item had that it no longer has: (id, kind, bytes, when, why), recorded in
        /// `dropped_blobs` so the item still says they existed.
        lost: Vec<super::rebuild::DroppedRecord>,
    },
    /// A change to item `id`'s fields, computed from its fields as they are when the batch
    /// commits (an enrichment pass: the place of a stored item).
    Amend {
        id: u64,
        amend: Box<dyn FnOnce(&mut ItemFields) + Send>,
    },
    /// A store-wide setting (`settings` table, SPEC.md §5).
    Setting {
        key: String,
        value: String,
    },
    /// Records the memory operations staged so far under a client's key (SPEC.md §5.6).
    RecordOps {
        key: String,
    },
}

/// Puts and deletes that commit together. Build it with [`Store::batch`], then
/// [`commit`](WriteBatch::commit).
#[must_use = "a batch does nothing until it is committed"]
pub struct WriteBatch<'s> {
    store: &'s Store,
    ops: Vec<BatchOp>,
}

impl<'s> WriteBatch<'s> {
    pub(crate) fn new(store: &'s Store) -> WriteBatch<'s> {
        WriteBatch {
            store,
            ops: Vec::new(),
        }
    }

    /// Adds an item, or updates the item with the same external id.
    pub fn put(&mut self, draft: ItemDraft) -> &mut Self {
        self.ops.push(BatchOp::Put {
            draft: Box::new(draft),
            blobs: Vec::new(),
            vector: None,
        });
        self
    }

    /// Like [`put_with_blobs`](Self::put_with_blobs), also setting the item's embedding in the
    /// item vector space ([`ITEM_VECTORS`]), filed under the item's time and source. An update
    /// without a vector keeps the old one unless the item's time or source changed.
    pub fn put_with_vector(
        &mut self,
        draft: ItemDraft,
        blobs: Vec<(BlobKind, Vec<u8>)>,
        vector: Vec<f32>,
    ) -> &mut Self {
        self.ops.push(BatchOp::Put {
            draft: Box::new(draft),
            blobs,
            vector: Some(vector),
        });
        self
    }

    /// Sets the vector of `key` in vector space `space` (replacing the key's earlier vector),
    /// with the time (unix ms) and source code that filters test. The first vector put into a
    /// space fixes its dimension.
    pub fn put_vector(
        &mut self,
        space: &str,
        key: u64,
        time_ms: i64,
        source: u8,
        vector: Vec<f32>,
    ) -> &mut Self {
        self.ops.push(BatchOp::PutVector {
            space: space.to_owned(),
            key,
            time_ms,
            source,
            vector,
        });
        self
    }

    /// Deletes the vector of `key` in `space` (nothing if it has none).
    pub fn delete_vector(&mut self, space: &str, key: u64) -> &mut Self {
        self.ops.push(BatchOp::DeleteVector {
            space: space.to_owned(),
            key,
        });
        self
    }

    /// Declares how `space` stores its vectors (f32 unless declared before its first vector).
    /// Declaring an existing space with another precision fails the batch.
    pub fn define_vectors(
        &mut self,
        space: &str,
        precision: memdb_vectors::Precision,
    ) -> &mut Self {
        self.ops.push(BatchOp::DefineVectors {
            space: space.to_owned(),
            precision,
        });
        self
    }

    /// Rewrites the live vectors of `space` into one block (see [`Store::compact_vectors`]).
    pub(crate) fn rebuild_vectors(&mut self, space: &str) -> &mut Self {
        self.ops.push(BatchOp::RebuildVectors {
            space: space.to_owned(),
        });
        self
    }

    /// Like [`put`](Self::put), storing `blobs` as blobs the item owns (replacing the blobs
    /// of an item it updates; a put without blobs keeps them).
    pub fn put_with_blobs(
        &mut self,
        draft: ItemDraft,
        blobs: Vec<(BlobKind, Vec<u8>)>,
    ) -> &mut Self {
        self.ops.push(BatchOp::Put {
            draft: Box::new(draft),
            blobs,
            vector: None,
        });
        self
    }

    /// Stores a blob no item owns.
    pub fn put_blob(&mut self, kind: BlobKind, bytes: Vec<u8>) -> &mut Self {
        self.ops.push(BatchOp::PutBlob { kind, bytes });
        self
    }

    /// Stages memory operation `op` (see [`Store::apply`](super::Store::apply)).
    pub fn memory(&mut self, op: MemoryOp) -> &mut Self {
        self.memory_with_vector(op, None)
    }

    /// Stages memory operation `op` with the vector of its new version (ignored for DELETE and
    /// NONE), so the memory is searchable from the same commit.
    pub fn memory_with_vector(&mut self, op: MemoryOp, vector: Option<Vec<f32>>) -> &mut Self {
        self.ops.push(BatchOp::Memory {
            op: Box::new(op),
            vector,
        });
        self
    }

    /// Removes item `id` physically with every earlier version and its op rows (see
    /// [`Store::purge`](super::Store::purge)).
    pub fn purge(&mut self, id: u64) -> &mut Self {
        self.ops.push(BatchOp::Purge { id });
        self
    }

    /// Deletes (retires) item `id`: it leaves the current view — its indexes, vector, graph
    /// rows, external id and blobs go — and its last version is kept in its history, closed at
    /// this commit in system and valid time (format 8; [`purge`](Self::purge) removes it
    /// physically). An item whose record cannot be read is removed.
    pub fn delete(&mut self, id: u64) -> &mut Self {
        self.ops.push(BatchOp::Delete { id });
        self
    }

    /// Deletes (retires, as [`delete`](Self::delete)) the item with external id `external_id`.
    pub fn delete_external(&mut self, external_id: impl Into<String>) -> &mut Self {
        self.ops.push(BatchOp::DeleteExternal {
            external_id: external_id.into(),
        });
        self
    }

    /// Deletes a standalone blob.
    pub fn delete_blob(&mut self, id: u64) -> &mut Self {
        self.ops.push(BatchOp::DeleteBlob { id });
        self
    }

    /// Stages a client's derived write (the graph update and page composition compute them),
    /// applied inside this batch's commit after the operations staged before it.
    pub fn derived(&mut self, write: impl DerivedWrite + 'static) -> &mut Self {
        self.ops.push(BatchOp::Derived(Box::new(write)));
        self
    }

    /// Stages an item exactly as it was (id, ingest time, fields, blob ids): a rebuild's copy.
    /// The id and blob ids must be unused.
    pub(crate) fn restore_with_lost(
        &mut self,
        record: ItemRecord,
        blobs: Vec<(u64, BlobKind, Vec<u8>)>,
        lost: Vec<super::rebuild::DroppedRecord>,
    ) -> &mut Self {
        self.ops.push(BatchOp::Restore {
            record: Box::new(record),
            blobs,
            lost,
        });
        self
    }

    /// Changes item `id`'s fields with `amend`, applied to the fields the item has when the
    /// batch commits (so a change committed after they were read is never lost). Like an
    /// update by external id it keeps the old version as history, makes what was derived from
    /// the item stale, and is `Unchanged` when `amend` changes nothing; it may not change the
    /// external id. An item that no longer exists is skipped with a warning.
    pub fn amend(
        &mut self,
        id: u64,
        amend: impl FnOnce(&mut ItemFields) + Send + 'static,
    ) -> &mut Self {
        self.ops.push(BatchOp::Amend {
            id,
            amend: Box::new(amend),
        });
        self
    }

    /// Sets the store-wide setting `key` (`settings`, SPEC.md §5) to `value` in this commit.
    pub fn set_setting(&mut self, key: impl Into<String>, value: String) -> &mut Self {
        self.ops.push(BatchOp::Setting {
            key: key.into(),
            value,
        });
        self
    }

    /// Records, under the client's `key`, the memory operations this batch stages before this
    /// call (SPEC.md §5.6, `settings` row `ops:<key>`): [`Snapshot::ops_recorded_as`] finds
    /// them, so a client that retries a call whose answer it lost can tell it was applied. A
    /// batch recording a key an earlier commit recorded fails with [`Error::KeyUsed`] and applies
    /// nothing.
    ///
    /// [`Snapshot::ops_recorded_as`]: super::Snapshot::ops_recorded_as
    /// [`Error::KeyUsed`]: crate::Error::KeyUsed
    pub fn record_ops_as(&mut self, key: impl Into<String>) -> &mut Self {
        self.ops.push(BatchOp::RecordOps { key: key.into() });
        self
    }

    /// Number of operations in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch has no operations.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Makes every operation durable and visible at once, or none of them.
    pub fn commit(self) -> Result<CommitReceipt> {
        if self.ops.is_empty() {
            return Ok(CommitReceipt::default());
        }
        let store = self.store;
        let mut writer = store.lock_writer()?;
        let result = commit_locked(store, &mut writer, self.ops);
        if result.is_err()
            && let Some(active) = writer.active.as_mut()
        {
            active.rollback();
        }
        result
    }
}
