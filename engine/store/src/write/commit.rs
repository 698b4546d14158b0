//! The commit pipeline: a batch's operations staged in order inside one catalog transaction,
//! derived rows forgotten, vector blocks staged, records and blobs appended to the open
//! segment and fsync'd, then the catalog committed (SPEC.md §6).

use crate::catalog::{self, BlobKind, BlobLoc, ItemLoc, OpCode, SegmentState};
use crate::derived::DerivedCommit;
use crate::error::{CatalogResult, Error, Result};
use crate::read::read_record;
use crate::vector_space::{self, ITEM_VECTORS, StagedVector, StagedVectors};
use crate::versions::{self, AppliedOp, MemoryOp, MemoryOpKind, OpNote};
use crate::{OpenSegment, Store, Writer, now_ms};
use memdb_formats::item::{ItemDraft, ItemFields, ItemRecord, put_framed};
use memdb_formats::segment::{EntryKind, PAGE};
use redb::ReadableTable;
use std::collections::HashMap;

use super::put::*;
use super::tables::*;
use super::*;

pub(super) fn commit_locked(
    store: &Store,
    writer: &mut Writer,
    ops: Vec<BatchOp>,
) -> Result<CommitReceipt> {
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
pub(super) struct BatchState<'a> {
    /// The segments as the batch began.
    pub(super) segments: &'a crate::segment_file::SegmentSet,
    /// The commit's time (unix ms).
    pub(super) now: i64,
    pub(super) staged: Staged,
    pub(super) receipt: CommitReceipt,
    /// Items the batch deletes: they leave the memory graph in the same commit.
    pub(super) deleted_items: Vec<u64>,
}

/// Stages operation `index` of the batch.
pub(super) fn stage_op<'t>(
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
pub(super) fn stage_amend(
    t: &mut Tables<'_>,
    segments: &crate::segment_file::SegmentSet,
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
pub(super) fn stage_vector_put(
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
pub(super) fn stage_blob_put(
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
pub(super) fn stage_purge(t: &mut Tables<'_>, batch: &mut BatchState<'_>, id: u64) -> Result<bool> {
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
pub(super) fn stage_retire(
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
pub(super) fn annotate(
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
pub(super) fn stage_memory(
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
            let mut stored = versions::memory_validity(&valid, &fields, now);
            // A correction that keeps the memory's time (an agent's `update_memory` replaces the
            // text only) holds from this commit: the replaced version keeps its real valid
            // interval, up to now, instead of none at all (it would start and end at the same
            // instant, and `VALID AT` could never return it).
            // (An undated memory's versions already start at their commits.)
            if valid.from_ms.is_none()
                && !fields.time.is_undated()
                && stored.0 == versions::new_version_start(None, &current.fields, now)
            {
                stored.0 = now.max(stored.0.saturating_add(1));
            }
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
pub(super) fn current_record(
    t: &Tables<'_>,
    segments: &crate::segment_file::SegmentSet,
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
pub(super) fn stage_external_delete(
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
pub(super) fn stage_blob_delete(
    t: &mut Tables<'_>,
    batch: &mut BatchState<'_>,
    id: u64,
) -> Result<()> {
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
pub(super) fn forget_derived(
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
pub(super) fn stage_vector_blocks(
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
pub(super) fn append_staged(
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
pub(super) fn commit_catalog(
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
pub fn check_put(index: usize, draft: &ItemDraft, blobs: &[(BlobKind, Vec<u8>)]) -> Result<()> {
    refuse_reserved_kinds(index, blobs.iter().map(|(kind, _)| *kind))?;
    draft
        .fields
        .validate()
        .map_err(|reason| Error::InvalidItem { index, reason })
}

/// Blobs of kinds [`BlobKind::Vectors`] and [`BlobKind::OpNote`] are the store's own.
pub(super) fn refuse_reserved_kinds(
    index: usize,
    kinds: impl IntoIterator<Item = BlobKind>,
) -> Result<()> {
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
pub(super) fn append_size(block: &[u8], blobs: &[&StagedBlob]) -> u64 {
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
