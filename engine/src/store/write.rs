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

use std::collections::{BTreeSet, HashMap};

use memdb_formats::item::{ItemDraft, ItemFields, ItemRecord, encode_record, put_framed};
use memdb_formats::segment::{EntryKind, PAGE};
use redb::ReadableTable;

use super::catalog::{self, BlobKind, BlobLoc, ItemLoc, OpCode, SegmentRow, SegmentState};
use super::derived::{DerivedCommit, DerivedWrite};
use super::read::read_record;
use super::vector_space::{self, ITEM_VECTORS, StagedVector, StagedVectors};
use super::versions::{self, AppliedOp, MemoryOp, MemoryOpKind, OpNote};
use super::{OpenSegment, Store, Writer, now_ms};
use crate::error::{CatalogResult, Error, Result};

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
    pub(crate) fn memory_with_vector(
        &mut self,
        op: MemoryOp,
        vector: Option<Vec<f32>>,
    ) -> &mut Self {
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
    pub(crate) fn derived(&mut self, write: impl DerivedWrite + 'static) -> &mut Self {
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
    pub(crate) fn amend(
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
    pub(crate) fn set_setting(&mut self, key: impl Into<String>, value: String) -> &mut Self {
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
    pub(crate) fn record_ops_as(&mut self, key: impl Into<String>) -> &mut Self {
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

/// A record or blob staged for the append, with the index rows to write once it has a place.
struct Staged {
    records: Vec<Option<StagedRecord>>,
    blobs: Vec<Option<StagedBlob>>,
    /// Item id → index into `records` for items first written by this batch.
    pending_items: HashMap<u64, usize>,
    /// Vector changes, by space.
    vectors: StagedVectors,
    /// Committed items whose fields this batch changes: what was derived from their old text
    /// (graph nodes and paths) goes in the same commit, to be derived again.
    invalidated: Vec<u64>,
}

struct StagedRecord {
    /// The batch operation that staged it (what [`Error::InvalidItem`] names).
    op_index: usize,
    id: u64,
    bytes: Vec<u8>,
    time_ms: i64,
    source: u8,
    external_id: Option<String>,
    blobs: Vec<u64>,
}

pub(super) struct StagedBlob {
    pub(super) id: u64,
    pub(super) kind: BlobKind,
    pub(super) bytes: Vec<u8>,
    pub(super) owner: u64,
}

/// What taking an item out of the current view does with the blobs it owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OwnedBlobs {
    /// They go (dead bytes): the item is purged or replaced whole.
    Remove,
    /// They stay, owned by the retired item, until a purge or the retention window ends.
    Keep,
}

pub(crate) struct Tables<'t> {
    pub(super) meta: redb::Table<'t, &'static str, u64>,
    pub(super) segments: redb::Table<'t, u64, (u8, u64, u64)>,
    pub(super) items: redb::Table<'t, u64, (u64, u64, u32, i64, u8)>,
    pub(super) external: redb::Table<'t, &'static str, u64>,
    pub(super) by_source: redb::Table<'t, (u8, i64, u64), ()>,
    pub(super) blobs: redb::Table<'t, u64, (u64, u64, u64, u8, u64)>,
    pub(super) op_batches: redb::Table<'t, u64, (i64, &'static [u8])>,
    pub(super) vector_spaces: redb::Table<'t, &'static str, (u32, u8)>,
    pub(super) vector_blocks: redb::Table<'t, (&'static str, u64), (u32, u8, &'static [u8])>,
    /// Each space's key table (`vector_keys.<space>`), opened at its first use; see
    /// [`Tables::vector_keys`].
    vector_keys: HashMap<String, catalog::KeyTable<'t>>,
    txn: &'t redb::WriteTransaction,
    pub(super) history: redb::Table<'t, (u64, u64), (u64, u64, u32, i64)>,
    pub(super) dropped_blobs: redb::Table<'t, (u64, u64), (u8, u64, i64, &'static str)>,
    pub(super) stale_pages: redb::Table<'t, (&'static str, u64), u64>,
    pub(super) memory_ops: redb::Table<'t, (u64, u64), catalog::MemoryOpValue>,
    pub(super) valid_time: redb::Table<'t, (u64, u64), (i64, i64, i64)>,
    /// An encrypted store's segment salts; `None` in a store that is not encrypted.
    pub(super) segment_keys: Option<redb::Table<'t, u64, &'static [u8]>>,
    /// Counters read once per transaction and written back by `flush_deferred`.
    counters: HashMap<&'static str, u64>,
    /// Ops logged in this transaction, written to `op_batches` by `flush_deferred`.
    op_log: catalog::OpLogWriter,
    /// Time-index keys (`by_source`) this transaction files, written in key order by
    /// `flush_deferred`. Items come in any time order, so filing each as it is staged
    /// descends the B-tree to a random leaf per item; in key order the same leaves are visited
    /// once after another (the write of a batch of 10,000 is about a tenth faster). A key
    /// taken out again before the flush leaves the set; see [`Tables::unindex_time`].
    time_keys: BTreeSet<(u8, i64, u64)>,
}

impl<'t> Tables<'t> {
    /// Removes `key`'s vector from `space` (its row is marked deleted in its block).
    pub(crate) fn remove_vector(&mut self, space: &str, key: u64) -> Result<bool> {
        vector_space::remove_key(self, space, key)
    }

    pub(super) fn open(txn: &'t redb::WriteTransaction) -> Result<Tables<'t>> {
        let mut meta = txn.open_table(catalog::META).ctx("open meta")?;
        let encrypted = catalog::has_table(txn, redb::TableHandle::name(&catalog::SEGMENT_KEYS))?;
        let current = if encrypted {
            catalog::ENCRYPTED_FORMAT_VERSION
        } else {
            catalog::STORE_FORMAT_VERSION
        };
        // Opening the vector tables creates them in a format-1 store; the later tables are
        // created (and the version-10 changes made) here. Either way the store is then of the
        // current format.
        if catalog::meta_get(&meta, catalog::KEY_FORMAT_VERSION)? < current {
            meta.insert(catalog::KEY_FORMAT_VERSION, current)
                .ctx("upgrade format version")?;
            catalog::create_later_tables(txn)?;
        }
        Ok(Tables {
            meta,
            segments: txn.open_table(catalog::SEGMENTS).ctx("open segments")?,
            items: txn.open_table(catalog::ITEMS).ctx("open items")?,
            external: txn
                .open_table(catalog::EXTERNAL_IDS)
                .ctx("open external_ids")?,
            by_source: txn.open_table(catalog::BY_SOURCE).ctx("open by_source")?,
            blobs: txn.open_table(catalog::BLOBS).ctx("open blobs")?,
            op_batches: txn.open_table(catalog::OP_BATCHES).ctx("open op_batches")?,
            vector_spaces: txn
                .open_table(catalog::VECTOR_SPACES)
                .ctx("open vector_spaces")?,
            vector_blocks: txn
                .open_table(catalog::VECTOR_BLOCKS)
                .ctx("open vector_blocks")?,
            vector_keys: HashMap::new(),
            txn,
            history: txn.open_table(catalog::HISTORY).ctx("open history")?,
            dropped_blobs: txn
                .open_table(catalog::DROPPED_BLOBS)
                .ctx("open dropped_blobs")?,
            stale_pages: txn
                .open_table(catalog::STALE_PAGES)
                .ctx("open stale_pages")?,
            memory_ops: txn.open_table(catalog::MEMORY_OPS).ctx("open memory_ops")?,
            valid_time: txn.open_table(catalog::VALID_TIME).ctx("open valid_time")?,
            segment_keys: if encrypted {
                Some(
                    txn.open_table(catalog::SEGMENT_KEYS)
                        .ctx("open segment_keys")?,
                )
            } else {
                None
            },
            counters: HashMap::new(),
            op_log: catalog::OpLogWriter::default(),
            time_keys: BTreeSet::new(),
        })
    }

    /// Whether `space`'s key table is open in this transaction already.
    pub(super) fn vector_keys_open(&self, space: &str) -> bool {
        self.vector_keys.contains_key(space)
    }

    /// `space`'s key table (key → block, row), opened (and, for a new space, created) at its
    /// first use in this transaction and kept open for the rest of it.
    pub(super) fn vector_keys(&mut self, space: &str) -> Result<&mut catalog::KeyTable<'t>> {
        let txn = self.txn;
        match self.vector_keys.entry(space.to_owned()) {
            std::collections::hash_map::Entry::Occupied(open) => Ok(open.into_mut()),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let name = catalog::vector_key_table_name(space);
                let table = txn
                    .open_table(catalog::vector_key_table(&name))
                    .ctx("open a space's vector keys")?;
                Ok(slot.insert(table))
            }
        }
    }

    /// The value of counter `key` as this transaction sees it.
    fn counter(&self, key: &'static str) -> Result<u64> {
        match self.counters.get(key) {
            Some(v) => Ok(*v),
            None => catalog::meta_get(&self.meta, key),
        }
    }

    /// Takes `n` values of counter `key`, returning the first.
    pub(super) fn take(&mut self, key: &'static str, n: u64) -> Result<u64> {
        let first = self.counter(key)?;
        let next = first.checked_add(n).ok_or_else(|| Error::Overflow {
            what: key,
            value: format!("{first} + {n}"),
        })?;
        self.counters.insert(key, next);
        Ok(first)
    }

    /// The op sequence number as this transaction sees it (what a snapshot's `op_seq` reads
    /// once it commits): it changes with every put or delete.
    pub(crate) fn op_seq(&self) -> Result<u64> {
        self.counter(catalog::KEY_NEXT_OP)
    }

    /// Writes what this transaction deferred: the counters it took, the ops it logged and the
    /// time-index keys it filed; call before commit.
    pub(super) fn flush_deferred(&mut self) -> Result<()> {
        for (key, value) in self.counters.drain() {
            self.meta.insert(key, value).ctx("advance counter")?;
        }
        for key in std::mem::take(&mut self.time_keys) {
            self.by_source.insert(key, ()).ctx("write by_source")?;
        }
        self.op_log.flush(&mut self.op_batches)
    }

    /// Files item `id` in the time index (at the flush; see [`Tables::time_keys`]) and its
    /// external id, when it has one.
    pub(super) fn index_item(&mut self, id: u64, fields: &ItemFields) -> Result<()> {
        if let Some(ext) = &fields.external_id {
            self.external
                .insert(ext.as_str(), id)
                .ctx("write external_ids")?;
        }
        self.time_keys
            .insert((fields.source.code(), fields.time.unix_ms, id));
        Ok(())
    }

    /// Takes item `id` out of the time index it was filed in under `time_ms` and `source` (its
    /// external id stays): out of the keys this transaction has yet to write, and out of the
    /// table. A key is in one place only (every caller takes an item's old key out before
    /// filing a new one); removing it from both is right wherever it is, for one extra lookup
    /// when an item changes twice in a batch.
    pub(super) fn unindex_time(&mut self, id: u64, time_ms: i64, source: u8) -> Result<()> {
        let key = (source, time_ms, id);
        self.time_keys.remove(&key);
        self.by_source.remove(key).ctx("remove by_source")?;
        Ok(())
    }

    /// Appends an op to the log and to its memory's ops (with no reason; a memory operation
    /// annotates it); returns its sequence number.
    pub(super) fn log(&mut self, op: OpCode, item: u64, now: i64) -> Result<u64> {
        let seq = self.take(catalog::KEY_NEXT_OP, 1)?;
        self.op_log.push(seq, op as u8, item, now);
        self.memory_ops
            .insert((item, seq), (op as u8, now, i64::MIN, 0))
            .ctx("append memory_ops")?;
        Ok(seq)
    }

    /// Marks the page of `time`'s local day stale for item `id`, changed by op `seq` (undated
    /// items have no page).
    pub(crate) fn mark_page_stale(
        &mut self,
        time: memdb_formats::item::EventTime,
        id: u64,
        seq: u64,
    ) -> Result<()> {
        if let Some(day) = time.local_date() {
            self.stale_pages
                .insert((day.to_string().as_str(), id), seq)
                .ctx("write stale_pages")?;
        }
        Ok(())
    }

    /// Removes the stale marks of `day` a page write handled: each `(item, seq)` only while
    /// its mark still has that sequence (`None`: every mark of the day, for a removed page).
    pub(crate) fn clear_stale_page(
        &mut self,
        day: &str,
        handled: Option<&[(u64, u64)]>,
    ) -> Result<()> {
        let mut marks = Vec::new();
        for row in self
            .stale_pages
            .range((day, 0)..=(day, u64::MAX))
            .ctx("scan stale_pages")?
        {
            let (key, seq) = row.ctx("scan stale_pages")?;
            marks.push((key.value().1, seq.value()));
        }
        for (item, seq) in marks {
            if handled.is_none_or(|h| h.contains(&(item, seq))) {
                self.stale_pages
                    .remove((day, item))
                    .ctx("remove stale_pages")?;
            }
        }
        Ok(())
    }

    /// Records that item `owner`'s blob `blob` (of `kind`, `len` bytes) was dropped at `at_ms`,
    /// and why: the item keeps saying it existed.
    pub(crate) fn record_dropped_blob(
        &mut self,
        owner: u64,
        blob: u64,
        (kind, len): (BlobKind, u64),
        at_ms: i64,
        why: &str,
    ) -> Result<()> {
        self.dropped_blobs
            .insert((owner, blob), (kind as u8, len, at_ms, why))
            .ctx("write dropped_blobs")?;
        Ok(())
    }

    /// Removes item `id`'s records of blobs of `kinds` that a repair dropped (their `why`
    /// starts `repair`): a put brought files of those kinds back.
    pub(super) fn forget_repair_drops(&mut self, id: u64, kinds: &[BlobKind]) -> Result<()> {
        let mut gone = Vec::new();
        for row in self
            .dropped_blobs
            .range((id, 0)..=(id, u64::MAX))
            .ctx("scan dropped_blobs")?
        {
            let (key, value) = row.ctx("scan dropped_blobs")?;
            let (kind, _, _, why) = value.value();
            if why.starts_with("repair") && kinds.iter().any(|k| *k as u8 == kind) {
                gone.push(key.value());
            }
        }
        for key in gone {
            self.dropped_blobs.remove(key).ctx("remove dropped_blobs")?;
        }
        Ok(())
    }

    /// Removes the earlier versions of item `id` (its history) and its dropped-blob records:
    /// what a delete takes with the item. Their frames become dead bytes.
    pub(super) fn remove_history(&mut self, id: u64) -> Result<bool> {
        let mut versions = Vec::new();
        for row in self
            .history
            .range((id, 0)..=(id, u64::MAX))
            .ctx("scan history")?
        {
            let (key, value) = row.ctx("scan history")?;
            versions.push((key.value(), value.value()));
        }
        let found = !versions.is_empty();
        for (key, (segment, _, frame_len, _)) in versions {
            self.history.remove(key).ctx("remove history")?;
            self.add_dead(segment, u64::from(frame_len))?;
        }
        let mut dropped = Vec::new();
        for row in self
            .dropped_blobs
            .range((id, 0)..=(id, u64::MAX))
            .ctx("scan dropped_blobs")?
        {
            dropped.push(row.ctx("scan dropped_blobs")?.0.value());
        }
        for key in dropped {
            self.dropped_blobs.remove(key).ctx("remove dropped_blobs")?;
        }
        Ok(found)
    }

    /// Sets the state and committed length of `segment`, keeping its dead-byte count.
    pub(super) fn set_segment(
        &mut self,
        segment: u64,
        state: SegmentState,
        len: u64,
    ) -> Result<()> {
        let raw = self
            .segments
            .get(segment)
            .ctx("read segments")?
            .map(|v| v.value());
        let dead_bytes = raw.map_or(0, |r| r.2);
        self.segments
            .insert(
                segment,
                SegmentRow {
                    state,
                    len,
                    dead_bytes,
                }
                .encode(),
            )
            .ctx("write segments")?;
        Ok(())
    }

    /// Adds `bytes` to the dead-byte count of `segment`.
    pub(super) fn add_dead(&mut self, segment: u64, bytes: u64) -> Result<()> {
        let raw = self
            .segments
            .get(segment)
            .ctx("read segments")?
            .map(|v| v.value());
        if let Some(raw) = raw {
            let mut row = SegmentRow::decode(segment, raw)?;
            row.dead_bytes = row.dead_bytes.saturating_add(bytes);
            self.segments
                .insert(segment, row.encode())
                .ctx("write segments")?;
        }
        Ok(())
    }

    pub(super) fn remove_blob(&mut self, id: u64) -> Result<Option<BlobLoc>> {
        let Some(raw) = self.blobs.remove(id).ctx("remove blob")?.map(|v| v.value()) else {
            return Ok(None);
        };
        let loc = BlobLoc::decode(id, raw)?;
        self.add_dead(loc.segment, loc.entry_bytes())?;
        Ok(Some(loc))
    }

    /// Removes the blobs item `id` owns but its op notes (which go with its `memory_ops`
    /// rows): those a retired item kept. True when there were any.
    pub(super) fn remove_owned_blobs(&mut self, id: u64) -> Result<bool> {
        let mut owned = Vec::new();
        for row in self.blobs.iter().ctx("scan blobs")? {
            let (k, v) = row.ctx("scan blobs")?;
            let (owner, kind) = (v.value().4, v.value().3);
            if owner == id && kind != BlobKind::OpNote as u8 {
                owned.push(k.value());
            }
        }
        for blob in &owned {
            self.remove_blob(*blob)?;
        }
        Ok(!owned.is_empty())
    }

    /// Removes every catalog row of committed item `id` and its history; returns its record
    /// (when readable).
    pub(super) fn remove_item(
        &mut self,
        id: u64,
        segments: &super::segment_file::SegmentSet,
    ) -> Result<Option<(ItemLoc, Option<ItemRecord>)>> {
        let taken = self.take_current(id, segments, OwnedBlobs::Remove)?;
        if let Some((loc, _)) = &taken {
            self.add_dead(loc.segment, u64::from(loc.frame_len))?;
            self.remove_history(id)?;
        }
        Ok(taken)
    }

    /// Takes committed item `id` out of the current view: its row, indexes, external id and
    /// blobs go; its frame is left to the caller (dead, or kept as a version). Returns its
    /// location and record (when readable).
    pub(super) fn take_current(
        &mut self,
        id: u64,
        segments: &super::segment_file::SegmentSet,
        blobs: OwnedBlobs,
    ) -> Result<Option<(ItemLoc, Option<ItemRecord>)>> {
        let Some(raw) = self.items.remove(id).ctx("remove item")?.map(|v| v.value()) else {
            return Ok(None);
        };
        let loc = ItemLoc::decode(raw);
        self.unindex_time(id, loc.time_ms, loc.source)?;
        // The record names the external id and the owned blobs. If it cannot be read the
        // delete still goes through, finding them by scanning instead.
        let record = read_record(segments, &loc).ok();
        match &record {
            Some(rec) => {
                if let Some(ext) = &rec.fields.external_id {
                    self.external
                        .remove(ext.as_str())
                        .ctx("remove external id")?;
                }
                if blobs == OwnedBlobs::Remove {
                    for blob in &rec.blobs {
                        self.remove_blob(*blob)?;
                    }
                }
            }
            None => {
                let mut exts = Vec::new();
                for row in self.external.iter().ctx("scan external_ids")? {
                    let (k, v) = row.ctx("scan external_ids")?;
                    if v.value() == id {
                        exts.push(k.value().to_owned());
                    }
                }
                for ext in exts {
                    self.external
                        .remove(ext.as_str())
                        .ctx("remove external id")?;
                }
                // An unreadable record is kept as no version, so nothing could restore its
                // blobs: they go even on a retire. (An op note outlives a retire: it is
                // history; only a purge drops it.)
                self.remove_owned_blobs(id)?;
            }
        }
        Ok(Some((loc, record)))
    }
}

fn commit_locked(store: &Store, writer: &mut Writer, ops: Vec<BatchOp>) -> Result<CommitReceipt> {
    let inner = &store.inner;
    let segments = store.current_segments()?;
    let txn = inner.db.begin_write(&inner.paths)?;
    let mut batch = BatchState {
        segments: &segments,
        now: now_ms(),
        staged: Staged {
            records: Vec::new(),
            blobs: Vec::new(),
            pending_items: HashMap::new(),
            vectors: StagedVectors::new(),
            invalidated: Vec::new(),
        },
        receipt: CommitReceipt::default(),
        deleted_items: Vec::new(),
    };
    let mut new_segments = Vec::new();
    // Graphs built by this batch, cached once (and only if) it commits: a failed commit's blob
    // ids are handed out again.
    let new_graphs = {
        let mut t = Tables::open(&txn)?;
        for (index, op) in ops.into_iter().enumerate() {
            stage_op(&txn, &mut t, &mut batch, index, op)?;
        }
        forget_derived(store, &txn, &mut batch)?;
        let new_graphs = stage_vector_blocks(store, &txn, &mut t, &mut batch)?;
        append_staged(store, writer, &mut t, &batch, &mut new_segments)?;
        t.flush_deferred()?;
        new_graphs
    };
    commit_catalog(store, writer, txn, &new_segments)?;
    for (blob_id, graph) in new_graphs {
        inner.graphs.insert(blob_id, graph);
    }
    Ok(batch.receipt)
}

/// A batch's commit in progress: what it has staged so far and what it answers.
struct BatchState<'a> {
    /// The segments as the batch began.
    segments: &'a super::segment_file::SegmentSet,
    /// The commit's time (unix ms).
    now: i64,
    staged: Staged,
    receipt: CommitReceipt,
    /// Items the batch deletes: they leave the memory graph in the same commit.
    deleted_items: Vec<u64>,
}

/// Stages operation `index` of the batch.
fn stage_op<'t>(
    txn: &'t redb::WriteTransaction,
    t: &mut Tables<'t>,
    batch: &mut BatchState<'_>,
    index: usize,
    op: BatchOp,
) -> Result<()> {
    match op {
        BatchOp::Put {
            draft,
            blobs,
            vector,
        } => {
            check_put(index, &draft, &blobs)?;
            let outcome = stage_put(
                t,
                batch.segments,
                &mut batch.staged,
                &mut batch.receipt,
                index,
                *draft,
                blobs,
                vector,
                batch.now,
            )?;
            batch.receipt.puts.push(outcome);
        }
        BatchOp::PutVector {
            space,
            key,
            time_ms,
            source,
            vector,
        } => stage_vector_put(&mut batch.staged, &space, key, time_ms, source, vector)?,
        BatchOp::DeleteVector { space, key } => {
            vector_space::changes(&mut batch.staged.vectors, &space).remove(key);
        }
        BatchOp::DefineVectors { space, precision } => {
            vector_space::check_space_name(&space)?;
            vector_space::changes(&mut batch.staged.vectors, &space).precision = Some(precision);
        }
        BatchOp::RebuildVectors { space } => {
            vector_space::changes(&mut batch.staged.vectors, &space).rebuild = true;
        }
        BatchOp::PutBlob { kind, bytes } => stage_blob_put(t, batch, index, kind, bytes)?,
        BatchOp::Delete { id } => {
            if stage_retire(t, batch, id, None)?.is_none() {
                batch.receipt.warnings.push(format!("delete: no item {id}"));
            }
        }
        BatchOp::Purge { id } => {
            if !stage_purge(t, batch, id)? {
                batch.receipt.warnings.push(format!("purge: no item {id}"));
            }
        }
        BatchOp::Memory { op, vector } => stage_memory(t, batch, index, *op, vector)?,
        BatchOp::DeleteExternal { external_id } => stage_external_delete(t, batch, &external_id)?,
        BatchOp::DeleteBlob { id } => stage_blob_delete(t, batch, id)?,
        BatchOp::Derived(write) => write.apply(&mut DerivedCommit {
            txn,
            tables: t,
            new_blobs: &mut batch.staged.blobs,
        })?,
        BatchOp::Restore {
            record,
            blobs,
            lost,
        } => {
            let id = record.id;
            stage_restore(t, &mut batch.staged, index, *record, blobs, batch.now)?;
            for (blob, kind, len, at, why) in lost {
                t.record_dropped_blob(id, blob, (kind, len), at, &why)?;
            }
        }
        BatchOp::Amend { id, amend } => {
            match stage_amend(
                t,
                batch.segments,
                &mut batch.staged,
                index,
                id,
                amend,
                batch.now,
            )? {
                Ok(outcome) => batch.receipt.puts.push(outcome),
                Err(skipped) => batch.receipt.warnings.push(skipped),
            }
        }
        BatchOp::Setting { key, value } => {
            txn.open_table(catalog::SETTINGS)
                .ctx("open settings")?
                .insert(key.as_str(), value.as_str())
                .ctx("write settings")?;
        }
        BatchOp::RecordOps { key } => {
            let mut settings = txn.open_table(catalog::SETTINGS).ctx("open settings")?;
            let row = catalog::recorded_ops_key(&key);
            if settings.get(row.as_str()).ctx("read settings")?.is_some() {
                return Err(Error::KeyUsed { key });
            }
            let value = catalog::recorded_ops_value(
                batch.receipt.memory_ops.iter().map(|op| (op.seq, op.id)),
            );
            settings
                .insert(row.as_str(), value.as_str())
                .ctx("write settings")?;
        }
    }
    Ok(())
}

/// Stages `amend` applied to item `id`'s current fields (staged earlier in this batch, else
/// committed); `Ok(Err(why))` when it is skipped: there is no such item, or its record cannot
/// be read (a damaged record is `check`'s and `repair`'s to report, not an amendment's).
fn stage_amend(
    t: &mut Tables<'_>,
    segments: &super::segment_file::SegmentSet,
    staged: &mut Staged,
    index: usize,
    id: u64,
    amend: Box<dyn FnOnce(&mut ItemFields) + Send>,
    now: i64,
) -> Result<std::result::Result<PutOutcome, String>> {
    let invalid = |reason: String| Error::InvalidItem { index, reason };
    let current = match current_record(t, segments, staged, id)? {
        None => return Ok(Err(format!("amend: no item {id}"))),
        Some(Err(e)) => return Ok(Err(format!("amend: item {id} skipped: {e}"))),
        Some(Ok(current)) => current,
    };
    let mut fields = current.fields.clone();
    amend(&mut fields);
    if fields.external_id != current.fields.external_id {
        return Err(invalid(format!(
            "an amendment of item {id} may not change its external id"
        )));
    }
    // An amendment is a stage's, not a caller's item: one that would leave the item invalid
    // (its stored fields already were: an older build's record) is skipped like an unreadable
    // record, so one item never stops a pass over the store.
    if let Err(why) = fields.validate() {
        return Ok(Err(format!("amend: item {id} skipped: {why}")));
    }
    stage_fields(
        t,
        segments,
        staged,
        index,
        Staging::new(fields, current.supersedes, Some(id), None),
        now,
    )
    .map(|(outcome, _)| Ok(outcome))
}

/// Stages the vector of `key` in `space`.
fn stage_vector_put(
    staged: &mut Staged,
    space: &str,
    key: u64,
    time_ms: i64,
    source: u8,
    vector: Vec<f32>,
) -> Result<()> {
    vector_space::check_space_name(space)?;
    vector_space::changes(&mut staged.vectors, space).put(
        key,
        StagedVector {
            time_ms,
            source,
            vector,
            precision: None,
        },
    );
    Ok(())
}

/// Stages a standalone blob under a new id.
fn stage_blob_put(
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
    index: usize,
    kind: BlobKind,
    bytes: Vec<u8>,
) -> Result<()> {
    refuse_reserved_kinds(index, [kind])?;
    let id = t.take(catalog::KEY_NEXT_BLOB, 1)?;
    batch.staged.blobs.push(Some(StagedBlob {
        id,
        kind,
        bytes,
        owner: 0,
    }));
    batch.receipt.blobs.push(id);
    Ok(())
}

/// Purges item `id` (current or retired) and counts it; false if there is nothing of it.
fn stage_purge(t: &mut Tables<'_>, batch: &mut BatchState<'_>, id: u64) -> Result<bool> {
    let mut found = stage_remove(t, batch.segments, &mut batch.staged, id)?;
    // A retired item has no current row, only versions, and the originals it keeps.
    found |= t.remove_history(id)?;
    found |= t.remove_owned_blobs(id)?;
    found |= versions::remove_memory_rows(t, id)?;
    if !found {
        return Ok(false);
    }
    // Only the op log says it was purged: nothing of the memory is left to list by memory.
    let seq = t.log(OpCode::Purge, id, batch.now)?;
    t.memory_ops.remove((id, seq)).ctx("remove memory_ops")?;
    batch.deleted_items.push(id);
    batch.receipt.deleted += 1;
    Ok(true)
}

/// Retires item `id` (committed or staged in this batch): it leaves the current view, and its
/// committed version stays as history, closed now in system time and at `valid_to` (default:
/// now) in valid time. Returns the op's sequence, or `None` when there is no current item.
fn stage_retire(
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
    id: u64,
    valid_to: Option<i64>,
) -> Result<Option<u64>> {
    let now = batch.now;
    // Staged by this batch and not committed: there is no version of that to keep.
    let found = unstage(t, &mut batch.staged, id, OwnedBlobs::Keep)?;
    // A retired item keeps its originals until a purge, or a compaction once the store's
    // retention window has passed (`versions::expire_retired_blobs`): an undelete brings
    // them back.
    let taken = t.take_current(id, batch.segments, OwnedBlobs::Keep)?;
    if taken.is_none() && !found {
        return Ok(None);
    }
    let seq = t.log(OpCode::Delete, id, now)?;
    match taken {
        Some((loc, Some(record))) => {
            t.history
                .insert((id, seq), (loc.segment, loc.offset, loc.frame_len, now))
                .ctx("write history")?;
            versions::close_version(t, id, seq, loc.time_ms, valid_to.unwrap_or(now))?;
            t.mark_page_stale(record.fields.time, id, seq)?;
        }
        Some((loc, None)) => {
            // An unreadable record is not kept as a version.
            t.add_dead(loc.segment, u64::from(loc.frame_len))?;
            versions::set_current_validity(t, id, None)?;
        }
        None => versions::set_current_validity(t, id, None)?,
    }
    vector_space::changes(&mut batch.staged.vectors, ITEM_VECTORS).remove(id);
    batch.deleted_items.push(id);
    batch.receipt.deleted += 1;
    Ok(Some(seq))
}

/// Records what the caller said about op `seq` on memory `id` (its row was written by the
/// log): the note goes to a segment as a blob owned by the memory, the row names it.
fn annotate(
    t: &mut Tables<'_>,
    staged: &mut Staged,
    id: u64,
    seq: u64,
    valid_ms: Option<i64>,
    note: &OpNote,
) -> Result<()> {
    let note_blob = if note.is_empty() {
        0
    } else {
        let blob = t.take(catalog::KEY_NEXT_BLOB, 1)?;
        staged.blobs.push(Some(StagedBlob {
            id: blob,
            kind: BlobKind::OpNote,
            bytes: versions::encode_note(note),
            owner: id,
        }));
        blob
    };
    versions::annotate(t, id, seq, valid_ms, note_blob)
}

/// Stages memory operation `op`, operation `index` of the batch (see `Store::apply`).
fn stage_memory(
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
    index: usize,
    op: MemoryOp,
    vector: Option<Vec<f32>>,
) -> Result<()> {
    let now = batch.now;
    let name = op.name();
    let (kind, id, seq) = match op {
        MemoryOp::Add {
            fields,
            valid,
            note,
        } => {
            fields
                .validate()
                .map_err(|reason| Error::InvalidItem { index, reason })?;
            if let Some(ext) = &fields.external_id
                && let Some(owner) = t.external.get(ext.as_str()).ctx("read external_ids")?
            {
                return Err(Error::InvalidItem {
                    index,
                    reason: format!(
                        "external id `{ext}` already names memory {}: update it instead",
                        owner.value()
                    ),
                });
            }
            let stored = versions::memory_validity(&valid, &fields, now);
            let start = stored.0;
            let (outcome, seq) = stage_fields(
                t,
                batch.segments,
                &mut batch.staged,
                index,
                Staging {
                    vector,
                    ..Staging::new(fields, None, None, Some(stored))
                },
                now,
            )?;
            let seq = seq.ok_or_else(|| Error::Inconsistent("an add logged no op".into()))?;
            annotate(t, &mut batch.staged, outcome.id, seq, Some(start), &note)?;
            (MemoryOpKind::Add, outcome.id, seq)
        }
        MemoryOp::Update {
            id,
            mut fields,
            valid,
            note,
        } => {
            let current = current_record(t, batch.segments, &batch.staged, id)?
                .ok_or(Error::NoMemory {
                    index,
                    op: name,
                    id,
                })?
                .map_err(|reason| Error::InvalidItem { index, reason })?;
            match (&fields.external_id, &current.fields.external_id) {
                (None, Some(own)) => fields.external_id = Some(own.clone()),
                (Some(given), own) if own.as_ref() != Some(given) => {
                    return Err(Error::InvalidItem {
                        index,
                        reason: format!("an update of memory {id} may not change its external id"),
                    });
                }
                _ => {}
            }
            fields
                .validate()
                .map_err(|reason| Error::InvalidItem { index, reason })?;
            let stored = versions::memory_validity(&valid, &fields, now);
            let start = stored.0;
            // The memory already reads so (a vector would otherwise force a new version).
            let vector = if current.fields == fields {
                None
            } else {
                vector
            };
            let (outcome, seq) = stage_fields(
                t,
                batch.segments,
                &mut batch.staged,
                index,
                Staging {
                    vector,
                    ..Staging::new(fields, current.supersedes, Some(id), Some(stored))
                },
                now,
            )?;
            match seq {
                Some(seq) => {
                    annotate(t, &mut batch.staged, id, seq, Some(start), &note)?;
                    (MemoryOpKind::Update, outcome.id, seq)
                }
                // The memory already reads so: logged as NONE.
                None => {
                    let seq = t.log(OpCode::Keep, id, now)?;
                    annotate(t, &mut batch.staged, id, seq, None, &note)?;
                    (MemoryOpKind::None, id, seq)
                }
            }
        }
        MemoryOp::Delete {
            id,
            valid_to_ms,
            note,
        } => {
            let seq = stage_retire(t, batch, id, valid_to_ms)?.ok_or(Error::NoMemory {
                index,
                op: name,
                id,
            })?;
            annotate(
                t,
                &mut batch.staged,
                id,
                seq,
                Some(valid_to_ms.unwrap_or(now)),
                &note,
            )?;
            (MemoryOpKind::Delete, id, seq)
        }
        MemoryOp::Restore { id, note } => {
            let (seq, start) = stage_unretire(t, batch, index, id)?;
            annotate(t, &mut batch.staged, id, seq, Some(start), &note)?;
            (MemoryOpKind::Add, id, seq)
        }
        MemoryOp::None { id, note } => {
            if current_record(t, batch.segments, &batch.staged, id)?.is_none() {
                return Err(Error::NoMemory {
                    index,
                    op: name,
                    id,
                });
            }
            let seq = t.log(OpCode::Keep, id, now)?;
            annotate(t, &mut batch.staged, id, seq, None, &note)?;
            (MemoryOpKind::None, id, seq)
        }
    };
    batch.receipt.memory_ops.push(AppliedOp {
        kind,
        id,
        seq,
        system_ms: now,
    });
    Ok(())
}

/// Item `id`'s current record: staged earlier in this batch, else committed. `None`: there is
/// no such item; `Some(Err(why))`: its record cannot be read.
fn current_record(
    t: &Tables<'_>,
    segments: &super::segment_file::SegmentSet,
    staged: &Staged,
    id: u64,
) -> Result<Option<std::result::Result<ItemRecord, String>>> {
    Ok(match staged.pending_items.get(&id).copied() {
        Some(slot) => staged
            .records
            .get(slot)
            .and_then(Option::as_ref)
            .map(|record| {
                memdb_formats::item::decode_record(&record.bytes).map_err(|e| e.to_string())
            }),
        None => t.items.get(id).ctx("read items")?.map(|raw| {
            read_record(segments, &ItemLoc::decode(raw.value())).map_err(|e| e.to_string())
        }),
    })
}

/// Deletes the item with `external_id`, or warns that there is none.
fn stage_external_delete(
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
    external_id: &str,
) -> Result<()> {
    let id = t
        .external
        .get(external_id)
        .ctx("read external_ids")?
        .map(|v| v.value());
    let deleted = match id {
        Some(id) => stage_retire(t, batch, id, None)?.is_some(),
        None => false,
    };
    if !deleted {
        batch
            .receipt
            .warnings
            .push(format!("delete: no item with external id `{external_id}`"));
    }
    Ok(())
}

/// Deletes standalone blob `id` (committed or staged by this batch), or warns why not.
fn stage_blob_delete(t: &mut Tables<'_>, batch: &mut BatchState<'_>, id: u64) -> Result<()> {
    let owner = t.blobs.get(id).ctx("read blobs")?.map(|v| v.value().4);
    match owner {
        None => {
            let staged = batch
                .staged
                .blobs
                .iter_mut()
                .find(|b| b.as_ref().is_some_and(|b| b.id == id && b.owner == 0));
            match staged {
                Some(slot) => *slot = None,
                None => batch
                    .receipt
                    .warnings
                    .push(format!("delete blob: no blob {id}")),
            }
        }
        Some(0) => {
            t.remove_blob(id)?;
        }
        Some(owner) => batch.receipt.warnings.push(format!(
            "delete blob: blob {id} belongs to item {owner}; delete or update the item instead"
        )),
    }
    Ok(())
}

/// A deleted item leaves the memory graph in the same commit, and so does a changed one
/// (until the next graph update derives it again from its new text); nodes no item uses any
/// more go, with their vectors.
fn forget_derived(
    store: &Store,
    txn: &redb::WriteTransaction,
    batch: &mut BatchState<'_>,
) -> Result<()> {
    batch.deleted_items.append(&mut batch.staged.invalidated);
    for client in &store.inner.clients {
        for (space, key) in client.forget_items(txn, &batch.deleted_items)? {
            vector_space::changes(&mut batch.staged.vectors, space).remove(key);
        }
    }
    Ok(())
}

/// Builds the vector blocks of the staged vector changes and stages them as blobs; returns the
/// graphs they carry, by blob id, to cache once the batch commits.
fn stage_vector_blocks(
    store: &Store,
    txn: &redb::WriteTransaction,
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
) -> Result<Vec<(u64, std::sync::Arc<memdb_vectors::HnswIndex>)>> {
    let mut new_graphs = Vec::new();
    let mut changes = std::mem::take(&mut batch.staged.vectors);
    // The item space is made with the store's item precision: the one recorded at its
    // creation, else the options' (a put into an existing space takes the space's own).
    if let Some(items) = changes.get_mut(ITEM_VECTORS)
        && items.precision.is_none()
        && t.vector_spaces
            .get(ITEM_VECTORS)
            .ctx("read vector_spaces")?
            .is_none()
    {
        let settings = txn.open_table(catalog::SETTINGS).ctx("open settings")?;
        let recorded = settings
            .get(catalog::KEY_ITEM_VECTORS)
            .ctx("read settings")?
            .map(|v| v.value().to_owned());
        items.precision = Some(match recorded {
            None => store.inner.options.item_vector_precision,
            Some(name) => memdb_vectors::Precision::from_name(&name).ok_or_else(|| {
                Error::bad_row(
                    "settings",
                    catalog::KEY_ITEM_VECTORS,
                    format!("unknown precision `{name}`"),
                )
            })?,
        });
    }
    for block in vector_space::stage(t, batch.segments, &store.inner.graphs, changes)? {
        if let Some(graph) = block.graph {
            new_graphs.push((block.blob_id, graph));
        }
        batch.staged.blobs.push(Some(StagedBlob {
            id: block.blob_id,
            kind: BlobKind::Vectors,
            bytes: block.bytes,
            owner: 0,
        }));
    }
    Ok(new_graphs)
}

/// Appends the staged item block and blobs to the open segment (sealing it and starting a new
/// one first if it is full), fsyncs it, and records the locations and its new committed length
/// in the catalog. A segment this creates is pushed to `new_segments`.
fn append_staged(
    store: &Store,
    writer: &mut Writer,
    t: &mut Tables<'_>,
    batch: &BatchState<'_>,
    new_segments: &mut Vec<u64>,
) -> Result<()> {
    let inner = &store.inner;
    let records: Vec<&StagedRecord> = batch.staged.records.iter().flatten().collect();
    let blobs: Vec<&StagedBlob> = batch.staged.blobs.iter().flatten().collect();
    if records.is_empty() && blobs.is_empty() {
        return Ok(());
    }
    let mut block = Vec::new();
    let mut record_offsets = Vec::with_capacity(records.len());
    for rec in &records {
        record_offsets.push(block.len() as u64);
        put_framed(&mut block, &rec.bytes).map_err(|e| Error::InvalidItem {
            index: rec.op_index,
            reason: e.to_string(),
        })?;
    }
    let append_bytes = append_size(&block, &blobs);

    // Seal the open segment first if this batch would take it past its target.
    if let Some(active) = writer.active.as_mut()
        && active.len > PAGE as u64
        && active.len.saturating_add(append_bytes) > inner.options.segment_target_bytes
    {
        let sealed_len = active.seal()?;
        active.file.sync()?;
        t.set_segment(active.id(), SegmentState::Sealed, sealed_len)?;
        writer.active = None;
    }
    if writer.active.is_none() {
        let id = t.take(catalog::KEY_NEXT_SEGMENT, 1)?;
        let seg = OpenSegment::create(inner, t, id, batch.now)?;
        store.publish_segment(&seg.file)?;
        new_segments.push(id);
        writer.active = Some(seg);
    }
    let active = writer
        .active
        .as_mut()
        .ok_or_else(|| Error::Inconsistent("no open segment after creating one".into()))?;

    let result = (|| -> Result<()> {
        if !records.is_empty() {
            let payload_at = active.append(EntryKind::ItemBlock, &block)?;
            for (rec, off) in records.iter().zip(&record_offsets) {
                let loc = ItemLoc {
                    segment: active.id(),
                    offset: payload_at + off,
                    frame_len: u32::try_from(
                        rec.bytes.len() + memdb_formats::item::RECORD_FRAME_BYTES,
                    )
                    .unwrap_or(u32::MAX),
                    time_ms: rec.time_ms,
                    source: rec.source,
                };
                t.items.insert(rec.id, loc.encode()).ctx("write items")?;
            }
        }
        for blob in &blobs {
            let tag = memdb_formats::segment::BlobTag {
                id: blob.id,
                kind: blob.kind as u8,
                owner: blob.owner,
            };
            let offset = active.append_blob(tag, &blob.bytes)?;
            let loc = BlobLoc {
                segment: active.id(),
                offset,
                len: blob.bytes.len() as u64,
                kind: blob.kind,
                owner: blob.owner,
            };
            t.blobs.insert(blob.id, loc.encode()).ctx("write blobs")?;
        }
        active.file.sync()
    })();
    if let Err(e) = result {
        // A failed write or fsync leaves the page cache in an unknown state: never retry
        // it into a false success. The batch is uncommitted; reopen to write again.
        writer.poisoned = Some(format!("segment append failed: {e}"));
        writer.active = None;
        return Err(e);
    }
    t.set_segment(active.id(), SegmentState::Open, active.len)
}

/// The redb commit: the one point at which the batch becomes durable and visible. A failed
/// commit poisons the writer and abandons the segments the batch created.
fn commit_catalog(
    store: &Store,
    writer: &mut Writer,
    txn: redb::WriteTransaction,
    new_segments: &[u64],
) -> Result<()> {
    if let Err(e) = txn.commit() {
        writer.poisoned = Some(format!("catalog commit failed: {e}"));
        writer.active = None;
        if !new_segments.is_empty() {
            store.abandon_segments(new_segments)?;
        }
        return Err(Error::catalog("commit")(e.into()));
    }
    if let Some(active) = writer.active.as_mut() {
        active.mark_committed();
    }
    Ok(())
}

/// Whether the store takes a put of `draft` with `blobs` as batch operation `index`: the checks
/// that depend on the item alone (its fields, its blob kinds), run again when the batch stages
/// it. An ingest runs them before building its batch, so an item refused here costs no
/// transaction and the rest move into the batch without a copy.
pub(crate) fn check_put(
    index: usize,
    draft: &ItemDraft,
    blobs: &[(BlobKind, Vec<u8>)],
) -> Result<()> {
    refuse_reserved_kinds(index, blobs.iter().map(|(kind, _)| *kind))?;
    draft
        .fields
        .validate()
        .map_err(|reason| Error::InvalidItem { index, reason })
}

/// Blobs of kinds [`BlobKind::Vectors`] and [`BlobKind::OpNote`] are the store's own.
fn refuse_reserved_kinds(index: usize, kinds: impl IntoIterator<Item = BlobKind>) -> Result<()> {
    if let Some(kind) = kinds.into_iter().find(|k| k.is_reserved()) {
        return Err(Error::InvalidItem {
            index,
            reason: format!(
                "blob kind `{}` is reserved for the store's own blobs",
                kind.name()
            ),
        });
    }
    Ok(())
}

/// Bytes an append of `block` (if non-empty) and `blobs` takes, headers and padding included.
fn append_size(block: &[u8], blobs: &[&StagedBlob]) -> u64 {
    let page = PAGE as u64;
    let block_bytes = if block.is_empty() {
        0
    } else {
        memdb_formats::segment::pages_for(block.len() as u64) * page
    };
    blobs.iter().fold(block_bytes, |acc, b| {
        acc.saturating_add(memdb_formats::segment::pages_for(b.bytes.len() as u64) * page)
    })
}

#[allow(clippy::too_many_arguments)]
fn stage_put(
    t: &mut Tables<'_>,
    segments: &super::segment_file::SegmentSet,
    staged: &mut Staged,
    receipt: &mut CommitReceipt,
    index: usize,
    draft: ItemDraft,
    new_blobs: Vec<(BlobKind, Vec<u8>)>,
    vector: Option<Vec<f32>>,
    now: i64,
) -> Result<PutOutcome> {
    // `check_put` (in `stage_op`) validated the fields.
    let ItemDraft { fields, supersedes } = draft;
    let supersedes = match supersedes {
        None => None,
        Some(ext) => {
            let id = t
                .external
                .get(ext.as_str())
                .ctx("read external_ids")?
                .map(|v| v.value());
            if id.is_none() {
                receipt.warnings.push(format!(
                    "item #{index}: supersedes unknown external id `{ext}`; ignored"
                ));
            }
            id
        }
    };
    let existing = match &fields.external_id {
        Some(ext) => t
            .external
            .get(ext.as_str())
            .ctx("read external_ids")?
            .map(|v| v.value()),
        None => None,
    };
    stage_fields(
        t,
        segments,
        staged,
        index,
        Staging {
            new_blobs,
            vector,
            ..Staging::new(fields, supersedes, existing, None)
        },
        now,
    )
    .map(|(outcome, _)| outcome)
}

/// What [`stage_fields`] stages: an item's new fields, resolved.
struct Staging {
    fields: ItemFields,
    /// The item id it supersedes.
    supersedes: Option<u64>,
    /// The item it replaces (`None`: a new item).
    existing: Option<u64>,
    new_blobs: Vec<(BlobKind, Vec<u8>)>,
    vector: Option<Vec<f32>>,
    /// The new version's valid time as stored (`None`: the current version's, else the
    /// default).
    valid: Option<(i64, i64)>,
}

impl Staging {
    fn new(
        fields: ItemFields,
        supersedes: Option<u64>,
        existing: Option<u64>,
        valid: Option<(i64, i64)>,
    ) -> Staging {
        Staging {
            fields,
            supersedes,
            existing,
            new_blobs: Vec::new(),
            vector: None,
            valid,
        }
    }
}

/// Stages the new version of an item (or a new item): unchanged when its fields, supersedes,
/// blobs and vector are what is stored; else the old record goes to history (closed in system
/// and valid time), what was derived from it goes stale, and the new record is staged. Returns
/// the op's sequence too (`None`: unchanged, nothing logged).
fn stage_fields(
    t: &mut Tables<'_>,
    segments: &super::segment_file::SegmentSet,
    staged: &mut Staged,
    index: usize,
    staging: Staging,
    now: i64,
) -> Result<(PutOutcome, Option<u64>)> {
    let Staging {
        fields,
        supersedes,
        existing,
        new_blobs,
        vector,
        valid,
    } = staging;
    let mut kept_blobs = Vec::new();
    // The committed version this put replaces, kept as history (when its record is readable).
    let mut replaced: Option<ItemLoc> = None;
    // Whether what was derived from the item (vector, graph, page) no longer fits it.
    let mut derived_stale = false;
    // The time the replaced version was filed under: its day's page shows it.
    let mut old_time = None;
    let (id, status) = match existing {
        None => (t.take(catalog::KEY_NEXT_ITEM, 1)?, PutStatus::Added),
        Some(id) => {
            if let Some(slot) = staged.pending_items.get(&id).copied() {
                // Put twice in one batch: the later put replaces the staged record.
                if let Some(old) = staged.records[slot].take() {
                    t.unindex_time(id, old.time_ms, old.source)?;
                    if new_blobs.is_empty() {
                        kept_blobs = old.blobs;
                    } else {
                        drop_blobs(t, staged, &old.blobs)?;
                    }
                }
                (id, PutStatus::Updated)
            } else {
                let raw = t.items.get(id).ctx("read items")?.map(|v| v.value());
                let Some(raw) = raw else {
                    return Err(Error::bad_row(
                        "external_ids",
                        fields.external_id.as_deref().unwrap_or_default(),
                        format!("names missing item {id}"),
                    ));
                };
                let loc = ItemLoc::decode(raw);
                let old = read_record(segments, &loc).ok();
                if let Some(old) = &old
                    && vector.is_none()
                    && new_blobs.is_empty()
                    && old.fields == fields
                    && old.supersedes == supersedes
                {
                    return Ok((
                        PutOutcome {
                            id,
                            status: PutStatus::Unchanged,
                            blob_ids: old.blobs.clone(),
                        },
                        None,
                    ));
                }
                // The committed row goes now; the new location is written at append time. The
                // old record stays readable as history (an unreadable one is dead bytes).
                t.items.remove(id).ctx("remove item")?;
                t.unindex_time(id, loc.time_ms, loc.source)?;
                match &old {
                    Some(old) => {
                        replaced = Some(loc);
                        if old.fields != fields {
                            derived_stale = true;
                            old_time = Some(old.fields.time);
                        }
                    }
                    None => {
                        derived_stale = true;
                        t.add_dead(loc.segment, u64::from(loc.frame_len))?;
                    }
                }
                if derived_stale {
                    staged.invalidated.push(id);
                }
                let old_blobs = old.map(|o| o.blobs).unwrap_or_default();
                if new_blobs.is_empty() {
                    kept_blobs = old_blobs;
                } else {
                    for blob in old_blobs {
                        t.remove_blob(blob)?;
                    }
                    // Files a repair dropped (damage) that this put brings back: the item no
                    // longer says they are lost. What forgetting dropped stays recorded.
                    let kinds: Vec<BlobKind> = new_blobs.iter().map(|(kind, _)| *kind).collect();
                    t.forget_repair_drops(id, &kinds)?;
                }
                (id, PutStatus::Updated)
            }
        }
    };
    let seq = t.log(
        if status == PutStatus::Added {
            OpCode::Add
        } else {
            OpCode::Update
        },
        id,
        now,
    )?;
    // Without a valid time of its own, a new version keeps the current one's (an enrichment,
    // an import's correction); the default otherwise.
    let valid = match (valid, existing) {
        (None, Some(id)) => t
            .valid_time
            .get((id, 0))
            .ctx("read valid_time")?
            .map(|v| (v.value().0, v.value().1)),
        (valid, _) => valid,
    };
    if let Some(loc) = replaced {
        t.history
            .insert((id, seq), (loc.segment, loc.offset, loc.frame_len, now))
            .ctx("write history")?;
        let start = versions::new_version_start(valid, &fields, now);
        versions::close_version(t, id, seq, loc.time_ms, start)?;
    }
    versions::set_current_validity(t, id, valid)?;
    if status == PutStatus::Updated {
        if let Some(time) = old_time {
            t.mark_page_stale(time, id, seq)?;
        }
        t.mark_page_stale(fields.time, id, seq)?;
    }
    let first_blob = if new_blobs.is_empty() {
        0
    } else {
        t.take(catalog::KEY_NEXT_BLOB, new_blobs.len() as u64)?
    };
    let mut blob_ids = kept_blobs;
    for (i, (kind, bytes)) in new_blobs.into_iter().enumerate() {
        let blob_id = first_blob + i as u64;
        blob_ids.push(blob_id);
        staged.blobs.push(Some(StagedBlob {
            id: blob_id,
            kind,
            bytes,
            owner: id,
        }));
    }
    let time_ms = fields.time.unix_ms;
    let source = fields.source.code();
    let item_vectors = vector_space::changes(&mut staged.vectors, ITEM_VECTORS);
    match vector {
        Some(vector) => item_vectors.put(
            id,
            StagedVector {
                time_ms,
                source,
                vector,
                precision: None,
            },
        ),
        None => {
            if derived_stale {
                // Made from the old fields (and filed under their time and source): it goes in
                // this commit, and `embed` encodes the item again.
                item_vectors.remove(id);
            }
        }
    }
    t.index_item(id, &fields)?;
    stage_record(
        staged,
        index,
        &ItemRecord {
            id,
            ingest_time_ms: now,
            fields,
            supersedes,
            blobs: blob_ids.clone(),
        },
    )?;
    Ok((
        PutOutcome {
            id,
            status,
            blob_ids,
        },
        Some(seq),
    ))
}

/// Makes retired memory `id` current again as its last version read (an undelete): a new
/// record of the version's fields under the same id, with the version's blobs that are still
/// held (a retired item keeps its originals until the retention window passes), the version's
/// own valid time, filed in the indexes again, logged as an ADD. Returns the op's sequence
/// and where its valid time starts.
fn stage_unretire(
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
    index: usize,
    id: u64,
) -> Result<(u64, i64)> {
    let refuse = |reason: String| Error::InvalidItem { index, reason };
    if t.items.get(id).ctx("read items")?.is_some() || batch.staged.pending_items.contains_key(&id)
    {
        return Err(refuse(format!(
            "memory {id} is current: only a deleted memory can be restored"
        )));
    }
    let last = match t
        .history
        .range((id, 0)..=(id, u64::MAX))
        .ctx("scan history")?
        .next_back()
    {
        Some(row) => {
            let (key, value) = row.ctx("scan history")?;
            Some((key.value().1, value.value()))
        }
        None => None,
    };
    let Some((closed_by, raw)) = last else {
        return Err(Error::NoMemory {
            index,
            op: "restore",
            id,
        });
    };
    let (loc, _) = catalog::version_loc(raw);
    let old = read_record(batch.segments, &loc).map_err(|e| {
        refuse(format!(
            "the last version of memory {id} cannot be read ({e}); nothing to restore"
        ))
    })?;
    if let Some(ext) = &old.fields.external_id
        && let Some(other) = t
            .external
            .get(ext.as_str())
            .ctx("read external_ids")?
            .map(|v| v.value())
    {
        return Err(refuse(format!(
            "its external id {ext:?} names item {other} now"
        )));
    }
    // The version's blobs that are still held by this item (an id freed by an expiry may
    // since name another item's blob).
    let mut blobs = Vec::with_capacity(old.blobs.len());
    for blob in &old.blobs {
        if t.blobs
            .get(*blob)
            .ctx("read blobs")?
            .is_some_and(|row| row.value().4 == id)
        {
            blobs.push(*blob);
        }
    }
    let now = batch.now;
    let seq = t.log(OpCode::Add, id, now)?;
    let valid = t
        .valid_time
        .get((id, closed_by))
        .ctx("read valid_time")?
        .map(|v| {
            let (from, _closed_at, written_to) = v.value();
            (from, written_to)
        });
    versions::set_current_validity(t, id, valid)?;
    let start = versions::new_version_start(valid, &old.fields, now);
    t.mark_page_stale(old.fields.time, id, seq)?;
    t.index_item(id, &old.fields)?;
    stage_record(
        &mut batch.staged,
        index,
        &ItemRecord {
            id,
            ingest_time_ms: now,
            fields: old.fields,
            supersedes: old.supersedes,
            blobs,
        },
    )?;
    Ok((seq, start))
}

/// Encodes `record` (written by operation `index` of the batch) and stages it as its item's
/// pending record, the one the append writes and the commit files.
fn stage_record(staged: &mut Staged, index: usize, record: &ItemRecord) -> Result<()> {
    let bytes = encode_record(record).map_err(|e| Error::InvalidItem {
        index,
        reason: e.to_string(),
    })?;
    staged.pending_items.insert(record.id, staged.records.len());
    staged.records.push(Some(StagedRecord {
        op_index: index,
        id: record.id,
        bytes,
        time_ms: record.fields.time.unix_ms,
        source: record.fields.source.code(),
        external_id: record.fields.external_id.clone(),
        blobs: record.blobs.clone(),
    }));
    Ok(())
}

/// Stages a restored item under its own id and blob ids, moving the id counters past them.
fn stage_restore(
    t: &mut Tables<'_>,
    staged: &mut Staged,
    index: usize,
    record: ItemRecord,
    blobs: Vec<(u64, BlobKind, Vec<u8>)>,
    now: i64,
) -> Result<()> {
    let invalid = |reason: String| Error::InvalidItem { index, reason };
    record.fields.validate().map_err(invalid)?;
    let id = record.id;
    if id == 0
        || t.items.get(id).ctx("read items")?.is_some()
        || staged.pending_items.contains_key(&id)
    {
        return Err(invalid(format!("item id {id} is taken")));
    }
    for (blob, kind, _) in &blobs {
        if *blob == 0 || t.blobs.get(*blob).ctx("read blobs")?.is_some() {
            return Err(invalid(format!("blob id {blob} is taken")));
        }
        refuse_reserved_kinds(index, [*kind])?;
    }
    let next_item = t.take(catalog::KEY_NEXT_ITEM, 0)?;
    if id >= next_item {
        t.take(catalog::KEY_NEXT_ITEM, id + 1 - next_item)?;
    }
    if let Some(max) = blobs.iter().map(|b| b.0).max() {
        let next_blob = t.take(catalog::KEY_NEXT_BLOB, 0)?;
        if max >= next_blob {
            t.take(catalog::KEY_NEXT_BLOB, max + 1 - next_blob)?;
        }
    }
    let f = &record.fields;
    t.index_item(id, f)?;
    t.log(OpCode::Add, id, now)?;
    for (blob, kind, bytes) in blobs {
        staged.blobs.push(Some(StagedBlob {
            id: blob,
            kind,
            bytes,
            owner: id,
        }));
    }
    let bytes = encode_record(&record).map_err(|e| invalid(e.to_string()))?;
    staged.pending_items.insert(id, staged.records.len());
    staged.records.push(Some(StagedRecord {
        op_index: index,
        id,
        bytes,
        time_ms: f.time.unix_ms,
        source: f.source.code(),
        external_id: f.external_id.clone(),
        blobs: record.blobs.clone(),
    }));
    Ok(())
}

/// Removes item `id` (committed or staged in this batch) with its history, unlogged; false if
/// there is no such item.
fn stage_remove(
    t: &mut Tables<'_>,
    segments: &super::segment_file::SegmentSet,
    staged: &mut Staged,
    id: u64,
) -> Result<bool> {
    let mut found = unstage(t, staged, id, OwnedBlobs::Remove)?;
    if t.remove_item(id, segments)?.is_some() {
        found = true;
    }
    if found {
        vector_space::changes(&mut staged.vectors, ITEM_VECTORS).remove(id);
    }
    Ok(found)
}

/// Takes item `id` out of this batch when it staged it (its record, index rows, external id
/// and blobs); false when it did not.
fn unstage(
    t: &mut Tables<'_>,
    staged: &mut Staged,
    id: u64,
    committed: OwnedBlobs,
) -> Result<bool> {
    let Some(slot) = staged.pending_items.remove(&id) else {
        return Ok(false);
    };
    let Some(rec) = staged.records[slot].take() else {
        return Ok(false);
    };
    t.unindex_time(id, rec.time_ms, rec.source)?;
    if let Some(ext) = &rec.external_id {
        t.external.remove(ext.as_str()).ctx("remove external id")?;
    }
    match committed {
        OwnedBlobs::Remove => drop_blobs(t, staged, &rec.blobs)?,
        // A retire keeps the committed blobs the staged record carried (an update or undelete
        // earlier in this batch): they stay owned by the item, whose version the history
        // keeps. Only the blobs this batch staged go.
        OwnedBlobs::Keep => {
            for blob in &rec.blobs {
                if let Some(slot) = staged
                    .blobs
                    .iter_mut()
                    .find(|b| b.as_ref().is_some_and(|b| b.id == *blob))
                {
                    *slot = None;
                }
            }
        }
    }
    Ok(true)
}

/// Drops blobs `ids`: staged ones are unstaged, committed ones removed from the catalog.
fn drop_blobs(t: &mut Tables<'_>, staged: &mut Staged, ids: &[u64]) -> Result<()> {
    for &blob in ids {
        let slot = staged
            .blobs
            .iter_mut()
            .find(|b| b.as_ref().is_some_and(|b| b.id == blob));
        match slot {
            Some(slot) => *slot = None,
            None => {
                t.remove_blob(blob)?;
            }
        }
    }
    Ok(())
}
