//! `Tables`: the catalog tables of one write transaction, and every change a commit makes
//! to them (index rows, counters, the op log, vector keys), written back in key order.

use crate::catalog::{self, BlobKind, BlobLoc, ItemLoc, OpCode, SegmentRow, SegmentState};
use crate::error::{CatalogResult, Error, Result};
use crate::read::read_record;
use crate::vector_space::{self};
use memdb_formats::item::{ItemFields, ItemRecord};
use redb::ReadableTable;
use std::collections::{BTreeSet, HashMap};

use super::put::*;

/// The store's tables opened in one commit's write transaction: what a compaction's `finish`
/// ([`FinishRows`](crate::FinishRows)) writes through.
pub struct Tables<'t> {
    pub(crate) meta: redb::Table<'t, &'static str, u64>,
    pub(crate) segments: redb::Table<'t, u64, (u8, u64, u64)>,
    pub(crate) items: redb::Table<'t, u64, (u64, u64, u32, i64, u8)>,
    pub(crate) external: redb::Table<'t, &'static str, u64>,
    pub(crate) by_source: redb::Table<'t, (u8, i64, u64), ()>,
    pub(crate) blobs: redb::Table<'t, u64, (u64, u64, u64, u8, u64)>,
    pub(crate) op_batches: redb::Table<'t, u64, (i64, &'static [u8])>,
    pub(crate) vector_spaces: redb::Table<'t, &'static str, (u32, u8)>,
    pub(crate) vector_blocks: redb::Table<'t, (&'static str, u64), (u32, u8, &'static [u8])>,
    /// Each space's key table (`vector_keys.<space>`), opened at its first use; see
    /// [`Tables::vector_keys`].
    pub(crate) vector_keys: HashMap<String, catalog::KeyTable<'t>>,
    pub(crate) txn: &'t redb::WriteTransaction,
    pub(crate) history: redb::Table<'t, (u64, u64), (u64, u64, u32, i64)>,
    pub(crate) dropped_blobs: redb::Table<'t, (u64, u64), (u8, u64, i64, &'static str)>,
    pub(crate) stale_pages: redb::Table<'t, (&'static str, u64), u64>,
    pub(crate) memory_ops: redb::Table<'t, (u64, u64), catalog::MemoryOpValue>,
    pub(crate) valid_time: redb::Table<'t, (u64, u64), (i64, i64, i64)>,
    /// An encrypted store's segment salts; `None` in a store that is not encrypted.
    pub(crate) segment_keys: Option<redb::Table<'t, u64, &'static [u8]>>,
    /// Counters read once per transaction and written back by `flush_deferred`.
    pub(crate) counters: HashMap<&'static str, u64>,
    /// Ops logged in this transaction, written to `op_batches` by `flush_deferred`.
    pub(crate) op_log: catalog::OpLogWriter,
    /// Time-index keys (`by_source`) this transaction files, written in key order by
    /// `flush_deferred`. Items come in any time order, so filing each as it is staged
    /// descends the B-tree to a random leaf per item; in key order the same leaves are visited
    /// once after another (the write of a batch of 10,000 is about a tenth faster). A key
    /// taken out again before the flush leaves the set; see [`Tables::unindex_time`].
    pub(crate) time_keys: BTreeSet<(u8, i64, u64)>,
}

impl<'t> Tables<'t> {
    /// Removes `key`'s vector from `space` (its row is marked deleted in its block).
    pub fn remove_vector(&mut self, space: &str, key: u64) -> Result<bool> {
        vector_space::remove_key(self, space, key)
    }

    pub(crate) fn open(txn: &'t redb::WriteTransaction) -> Result<Tables<'t>> {
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
    pub(crate) fn vector_keys_open(&self, space: &str) -> bool {
        self.vector_keys.contains_key(space)
    }

    /// `space`'s key table (key → block, row), opened (and, for a new space, created) at its
    /// first use in this transaction and kept open for the rest of it.
    pub(crate) fn vector_keys(&mut self, space: &str) -> Result<&mut catalog::KeyTable<'t>> {
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
    pub(crate) fn counter(&self, key: &'static str) -> Result<u64> {
        match self.counters.get(key) {
            Some(v) => Ok(*v),
            None => catalog::meta_get(&self.meta, key),
        }
    }

    /// Takes `n` values of counter `key`, returning the first.
    pub(crate) fn take(&mut self, key: &'static str, n: u64) -> Result<u64> {
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
    pub fn op_seq(&self) -> Result<u64> {
        self.counter(catalog::KEY_NEXT_OP)
    }

    /// Writes what this transaction deferred: the counters it took, the ops it logged and the
    /// time-index keys it filed; call before commit.
    pub(crate) fn flush_deferred(&mut self) -> Result<()> {
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
    pub(crate) fn index_item(&mut self, id: u64, fields: &ItemFields) -> Result<()> {
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
    pub(crate) fn unindex_time(&mut self, id: u64, time_ms: i64, source: u8) -> Result<()> {
        let key = (source, time_ms, id);
        self.time_keys.remove(&key);
        self.by_source.remove(key).ctx("remove by_source")?;
        Ok(())
    }

    /// Appends an op to the log and to its memory's ops (with no reason; a memory operation
    /// annotates it); returns its sequence number.
    pub(crate) fn log(&mut self, op: OpCode, item: u64, now: i64) -> Result<u64> {
        let seq = self.take(catalog::KEY_NEXT_OP, 1)?;
        self.op_log.push(seq, op as u8, item, now);
        self.memory_ops
            .insert((item, seq), (op as u8, now, i64::MIN, 0))
            .ctx("append memory_ops")?;
        Ok(seq)
    }

    /// Marks the page of `time`'s local day stale for item `id`, changed by op `seq` (undated
    /// items have no page).
    pub fn mark_page_stale(
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
    pub fn clear_stale_page(&mut self, day: &str, handled: Option<&[(u64, u64)]>) -> Result<()> {
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
    pub fn record_dropped_blob(
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
    pub(crate) fn forget_repair_drops(&mut self, id: u64, kinds: &[BlobKind]) -> Result<()> {
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
    pub(crate) fn remove_history(&mut self, id: u64) -> Result<bool> {
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
    pub(crate) fn set_segment(
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
    pub(crate) fn add_dead(&mut self, segment: u64, bytes: u64) -> Result<()> {
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

    pub(crate) fn remove_blob(&mut self, id: u64) -> Result<Option<BlobLoc>> {
        let Some(raw) = self.blobs.remove(id).ctx("remove blob")?.map(|v| v.value()) else {
            return Ok(None);
        };
        let loc = BlobLoc::decode(id, raw)?;
        self.add_dead(loc.segment, loc.entry_bytes())?;
        Ok(Some(loc))
    }

    /// Removes the blobs item `id` owns but its op notes (which go with its `memory_ops`
    /// rows): those a retired item kept. True when there were any.
    pub(crate) fn remove_owned_blobs(&mut self, id: u64) -> Result<bool> {
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
    pub(crate) fn remove_item(
        &mut self,
        id: u64,
        segments: &crate::segment_file::SegmentSet,
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
    pub(crate) fn take_current(
        &mut self,
        id: u64,
        segments: &crate::segment_file::SegmentSet,
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
