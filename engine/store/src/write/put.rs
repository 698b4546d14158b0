//! Staging puts: records and blobs staged for the append, a put's fields checked and filed
//! (updates, unchanged puts, restores), and what leaves the current view.

use crate::catalog::{self, BlobKind, ItemLoc, OpCode};
use crate::error::{CatalogResult, Error, Result};
use crate::read::read_record;
use crate::vector_space::{self, ITEM_VECTORS, StagedVector, StagedVectors};
use crate::versions::{self};
use memdb_formats::item::{ItemDraft, ItemFields, ItemRecord, encode_record};
use redb::ReadableTable;
use std::collections::HashMap;

use super::commit::*;
use super::tables::*;
use super::*;

/// A record or blob staged for the append, with the index rows to write once it has a place.
pub(super) struct Staged {
    pub(crate) records: Vec<Option<StagedRecord>>,
    pub(crate) blobs: Vec<Option<StagedBlob>>,
    /// Item id → index into `records` for items first written by this batch.
    pub(crate) pending_items: HashMap<u64, usize>,
    /// Vector changes, by space.
    pub(crate) vectors: StagedVectors,
    /// Committed items whose fields this batch changes: what was derived from their old text
    /// (graph nodes and paths) goes in the same commit, to be derived again.
    pub(crate) invalidated: Vec<u64>,
}

pub(super) struct StagedRecord {
    /// The batch operation that staged it (what [`Error::InvalidItem`] names).
    pub(crate) op_index: usize,
    pub(crate) id: u64,
    pub(crate) bytes: Vec<u8>,
    pub(crate) time_ms: i64,
    pub(crate) source: u8,
    pub(crate) external_id: Option<String>,
    pub(crate) blobs: Vec<u64>,
}

pub(crate) struct StagedBlob {
    pub(crate) id: u64,
    pub(crate) kind: BlobKind,
    pub(crate) bytes: Vec<u8>,
    pub(crate) owner: u64,
}

/// What taking an item out of the current view does with the blobs it owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnedBlobs {
    /// They go (dead bytes): the item is purged or replaced whole.
    Remove,
    /// They stay, owned by the retired item, until a purge or the retention window ends.
    Keep,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn stage_put(
    t: &mut Tables<'_>,
    segments: &crate::segment_file::SegmentSet,
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
pub(super) struct Staging {
    pub(crate) fields: ItemFields,
    /// The item id it supersedes.
    pub(crate) supersedes: Option<u64>,
    /// The item it replaces (`None`: a new item).
    pub(crate) existing: Option<u64>,
    pub(crate) new_blobs: Vec<(BlobKind, Vec<u8>)>,
    pub(crate) vector: Option<Vec<f32>>,
    /// The new version's valid time as stored (`None`: the current version's, else the
    /// default).
    pub(crate) valid: Option<(i64, i64)>,
}

impl Staging {
    pub(super) fn new(
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
pub(super) fn stage_fields(
    t: &mut Tables<'_>,
    segments: &crate::segment_file::SegmentSet,
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
pub(super) fn stage_unretire(
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
pub(super) fn stage_record(staged: &mut Staged, index: usize, record: &ItemRecord) -> Result<()> {
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
pub(super) fn stage_restore(
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
pub(super) fn stage_remove(
    t: &mut Tables<'_>,
    segments: &crate::segment_file::SegmentSet,
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
pub(super) fn unstage(
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
pub(super) fn drop_blobs(t: &mut Tables<'_>, staged: &mut Staged, ids: &[u64]) -> Result<()> {
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
