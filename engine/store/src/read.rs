//! Reading: snapshots, item lookups and scans, zero-copy blobs.
//!
//! A [`Snapshot`] pairs a redb read transaction with the set of segment files mapped when it
//! began, so every location its catalog view holds can be read for as long as it lives, even
//! if a compaction retires those segments meanwhile.
//!
//! Invariant: every record and blob is checked against its CRC32C on every read; a mismatch is
//! an [`Error::Corruption`](crate::Error::Corruption) naming segment, page and offset, never a
//! wrong answer.

use std::ops::{Bound, Deref};
use std::sync::Arc;

use memdb_formats::item::{ItemRecord, Source, decode_record, read_framed};
use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryKind};
use redb::{ReadableTable, ReadableTableMetadata};

use super::catalog::{self, BlobKind, BlobLoc, ItemLoc};
use super::segment_file::SegmentSet;
use crate::error::{CatalogResult, Error, Result};
use crate::time::TimeWindow;

/// A consistent read-only view of the store.
pub struct Snapshot {
    txn: redb::ReadTransaction,
    segments: Arc<SegmentSet>,
    graphs: Arc<super::vector_space::GraphCache>,
    /// The items table, opened at its first use and kept: a point read then costs one B-tree
    /// lookup, as in redb alone, instead of a table open and the lookup.
    items: std::sync::OnceLock<ItemsTable>,
}

/// The catalog's items table as a snapshot reads it.
type ItemsTable = redb::ReadOnlyTable<u64, (u64, u64, u32, i64, u8)>;

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("segments", &self.segments.len())
            .finish_non_exhaustive()
    }
}

/// Which items a scan returns.
#[derive(Debug, Clone, Default)]
pub struct ScanFilter {
    /// Only items in this window (days are the items' local days; see [`TimeWindow`]).
    pub time: TimeWindow,
    /// Only items of this source.
    pub source: Option<Source>,
    /// At most this many items (in time order).
    pub limit: Option<usize>,
}

/// What a search left out because its bytes are damaged: it answered from the rest. Empty
/// on a sound store; `memdb repair` mends what it lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Items whose records could not be read.
    pub items: Vec<u64>,
    /// Vector blocks (blob ids) that could not be read: their rows' vectors were not searched.
    pub vector_blocks: Vec<u64>,
}

impl Skipped {
    /// Whether nothing was skipped.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.vector_blocks.is_empty()
    }

    /// One line for a person: what was skipped and what mends it; `None` when nothing was.
    pub fn describe(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if !self.items.is_empty() {
            let ids: Vec<String> = self.items.iter().take(5).map(u64::to_string).collect();
            let more = if self.items.len() > 5 { ", …" } else { "" };
            parts.push(format!(
                "{} item(s) unreadable ({}{more})",
                self.items.len(),
                ids.join(", ")
            ));
        }
        if !self.vector_blocks.is_empty() {
            parts.push(format!(
                "{} vector block(s) unreadable",
                self.vector_blocks.len()
            ));
        }
        Some(format!(
            "{}: skipped; run `memdb repair`",
            parts.join(" and ")
        ))
    }
}

/// Where a blob is and what it is, without its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobInfo {
    /// Blob id.
    pub id: u64,
    /// What it holds.
    pub kind: BlobKind,
    /// Its length in bytes.
    pub len: u64,
    /// The item that owns it, if any.
    pub owner: Option<u64>,
}

/// An earlier version of an item: what it was until an update replaced it.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemVersion {
    /// The record as it was (its `ingest_time_ms` is when that version was committed).
    pub record: ItemRecord,
    /// When the update that replaced it was committed (UTC ms).
    pub replaced_ms: i64,
    /// The op-log sequence number of that update.
    pub seq: u64,
}

/// A blob an item owned that forgetting dropped: the item still says it existed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedBlob {
    /// The blob's id (no longer readable).
    pub id: u64,
    /// What it held.
    pub kind: BlobKind,
    /// Its length in bytes.
    pub len: u64,
    /// When it was dropped (UTC ms).
    pub dropped_ms: i64,
    /// Why: the policy, its stage and the day ages were counted to.
    pub why: String,
}

/// A blob's bytes, borrowed zero-copy from a mapped segment (holding it keeps the segment
/// mapped), or in an encrypted store opened into memory.
pub struct Blob {
    info: BlobInfo,
    bytes: super::segment_file::SegmentBytes,
}

impl Blob {
    /// The blob's id, kind, length and owner.
    pub fn info(&self) -> BlobInfo {
        self.info
    }
}

impl Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blob")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Snapshot {
    pub(crate) fn new(
        txn: redb::ReadTransaction,
        segments: Arc<SegmentSet>,
        graphs: Arc<super::vector_space::GraphCache>,
    ) -> Snapshot {
        Snapshot {
            txn,
            segments,
            graphs,
            items: std::sync::OnceLock::new(),
        }
    }

    /// The items table of this snapshot (opened once).
    fn items(&self) -> Result<&ItemsTable> {
        if let Some(table) = self.items.get() {
            return Ok(table);
        }
        let opened = self.txn.open_table(catalog::ITEMS).ctx("open items")?;
        Ok(self.items.get_or_init(|| opened))
    }

    pub(super) fn segment_set(&self) -> &SegmentSet {
        &self.segments
    }

    pub(crate) fn graphs(&self) -> &super::vector_space::GraphCache {
        &self.graphs
    }

    /// The op sequence number of this snapshot: it changes with every committed put or delete.
    pub fn op_seq(&self) -> Result<u64> {
        let meta = self.txn.open_table(catalog::META).ctx("open meta")?;
        catalog::meta_get(&meta, catalog::KEY_NEXT_OP)
    }

    /// The item with store id `id`.
    pub fn get(&self, id: u64) -> Result<Option<ItemRecord>> {
        let items = self.items()?;
        let Some(raw) = items.get(id).ctx("read items")? else {
            return Ok(None);
        };
        let record = read_record(&self.segments, &ItemLoc::decode(raw.value()))?;
        check_id(id, &record)?;
        Ok(Some(record))
    }

    /// The item imported with external id `external_id`.
    pub fn get_by_external_id(&self, external_id: &str) -> Result<Option<ItemRecord>> {
        let ids = self
            .txn
            .open_table(catalog::EXTERNAL_IDS)
            .ctx("open external_ids")?;
        let Some(id) = ids
            .get(external_id)
            .ctx("read external_ids")?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        self.get(id)?.map(Some).ok_or_else(|| {
            Error::bad_row(
                "external_ids",
                external_id,
                format!("names item {id}, which the items table lacks"),
            )
        })
    }

    /// Ids of the items matching `filter`, in event-time order (ties by id; undated items
    /// first).
    pub fn scan_ids(&self, filter: &ScanFilter) -> Result<Vec<u64>> {
        let limit = filter.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let Some((lo, hi)) = filter.time.candidate_ms() else {
            return Ok(out);
        };
        // Items near a day bound are checked against their own offset (read from the record);
        // the rest pass on their instant alone.
        let items = self.items()?;
        let keep = |id: u64, ms: i64| -> Result<bool> {
            if filter.time.is_utc_exact() || !filter.time.needs_offset_check(ms) {
                return Ok(true);
            }
            let raw = items.get(id).ctx("read items")?.ok_or_else(|| {
                Error::bad_row("by_source", id, "names an item the items table lacks")
            })?;
            match read_record(&self.segments, &ItemLoc::decode(raw.value())) {
                Ok(record) => Ok(filter.time.contains(record.fields.time)),
                // Kept, so the caller's read of it meets the damage (and a readable scan
                // names it) rather than the scan failing here.
                Err(e) if e.is_damage() => Ok(true),
                Err(e) => Err(e),
            }
        };
        let table = self
            .txn
            .open_table(catalog::BY_SOURCE)
            .ctx("open by_source")?;
        // The time index is per source: a scan of every source merges their ranges in
        // (time, id) order.
        let codes: Vec<u8> = match filter.source {
            Some(source) => vec![source.code()],
            None => Source::ALL.iter().map(|s| s.code()).collect(),
        };
        let mut ranges = Vec::with_capacity(codes.len());
        for code in codes {
            let end = if hi == i64::MAX {
                Bound::Included((code, i64::MAX, u64::MAX))
            } else {
                Bound::Excluded((code, hi, 0))
            };
            ranges.push(
                table
                    .range::<(u8, i64, u64)>((Bound::Included((code, lo, 0)), end))
                    .ctx("scan by_source")?
                    .peekable(),
            );
        }
        while out.len() < limit {
            // The range whose next row comes first (a failed read is taken at once).
            let mut next: Option<(usize, (i64, u64))> = None;
            for (i, range) in ranges.iter_mut().enumerate() {
                let head = match range.peek() {
                    None => continue,
                    Some(Err(_)) => (i64::MIN, 0),
                    Some(Ok((key, _))) => {
                        let (_, ms, id) = key.value();
                        (ms, id)
                    }
                };
                if next.is_none_or(|(_, best)| head < best) {
                    next = Some((i, head));
                }
            }
            let Some((i, _)) = next else { break };
            let Some(row) = ranges[i].next() else { break };
            let (_, ms, id) = row.ctx("scan by_source")?.0.value();
            if keep(id, ms)? {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// The items matching `filter`, in event-time order.
    pub fn scan(&self, filter: &ScanFilter) -> Result<Vec<ItemRecord>> {
        let items = self.items()?;
        let mut out = Vec::new();
        for id in self.scan_ids(filter)? {
            let raw = items.get(id).ctx("read items")?.ok_or_else(|| {
                Error::bad_row("by_source", id, "names an item the items table lacks")
            })?;
            let record = read_record(&self.segments, &ItemLoc::decode(raw.value()))?;
            check_id(id, &record)?;
            out.push(record);
        }
        Ok(out)
    }

    /// As [`scan`](Snapshot::scan), but an item whose record cannot be read (damage: a
    /// checksum that fails, a segment that is gone) is skipped and its id listed second,
    /// instead of failing the scan: what searches answer from, saying what they skipped.
    pub fn scan_readable(&self, filter: &ScanFilter) -> Result<(Vec<ItemRecord>, Vec<u64>)> {
        let items = self.items()?;
        let (mut out, mut unreadable) = (Vec::new(), Vec::new());
        for id in self.scan_ids(filter)? {
            let raw = items.get(id).ctx("read items")?.ok_or_else(|| {
                Error::bad_row("by_source", id, "names an item the items table lacks")
            })?;
            match read_record(&self.segments, &ItemLoc::decode(raw.value())) {
                Ok(record) => {
                    check_id(id, &record)?;
                    out.push(record);
                }
                Err(e) if e.is_damage() => unreadable.push(id),
                Err(e) => return Err(e),
            }
        }
        Ok((out, unreadable))
    }

    /// Number of live items.
    pub fn item_count(&self) -> Result<u64> {
        let items = self.items()?;
        items.len().ctx("count items")
    }

    /// Ids of the undated items (filed at `i64::MIN`, on no day and no page), by source.
    pub fn undated_ids(&self) -> Result<Vec<u64>> {
        let table = self
            .txn
            .open_table(catalog::BY_SOURCE)
            .ctx("open by_source")?;
        let undated = memdb_formats::item::UNDATED_MS;
        let mut out = Vec::new();
        for source in Source::ALL {
            let code = source.code();
            for row in table
                .range::<(u8, i64, u64)>((code, undated, 0)..=(code, undated, u64::MAX))
                .ctx("read by_source")?
            {
                out.push(row.ctx("read by_source")?.0.value().2);
            }
        }
        Ok(out)
    }

    /// Event times (UTC ms) of the oldest and the newest dated item, if any: what a query
    /// planner scales its estimates by.
    pub fn time_span(&self) -> Result<Option<(i64, i64)>> {
        let table = self
            .txn
            .open_table(catalog::BY_SOURCE)
            .ctx("open by_source")?;
        let mut span: Option<(i64, i64)> = None;
        for source in Source::ALL {
            let code = source.code();
            // Undated items (filed at `i64::MIN`) have no place on the time line.
            let dated = (code, memdb_formats::item::UNDATED_MS + 1, 0)..=(code, i64::MAX, u64::MAX);
            let mut range = table.range::<(u8, i64, u64)>(dated).ctx("read by_source")?;
            let first = range.next().transpose().ctx("read by_source")?;
            let last = range.next_back().transpose().ctx("read by_source")?;
            let Some(first) = first else { continue };
            let first_ms = first.0.value().1;
            let last_ms = last.map_or(first_ms, |l| l.0.value().1);
            span = Some(match span {
                None => (first_ms, last_ms),
                Some((lo, hi)) => (lo.min(first_ms), hi.max(last_ms)),
            });
        }
        Ok(span)
    }

    /// All live item ids, ascending.
    pub fn item_ids(&self) -> Result<Vec<u64>> {
        let items = self.items()?;
        let mut out = Vec::new();
        for row in items.iter().ctx("scan items")? {
            out.push(row.ctx("scan items")?.0.value());
        }
        Ok(out)
    }

    /// The earlier versions of item `id`, oldest first (empty for an item never updated, and
    /// for one that does not exist).
    pub fn versions(&self, id: u64) -> Result<Vec<ItemVersion>> {
        let Some(table) = catalog::open_optional(&self.txn, catalog::HISTORY)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for row in table.range((id, 0)..=(id, u64::MAX)).ctx("scan history")? {
            let (key, value) = row.ctx("scan history")?;
            let (loc, replaced_ms) = catalog::version_loc(value.value());
            let record = read_record(&self.segments, &loc)?;
            check_id(id, &record)?;
            out.push(ItemVersion {
                record,
                replaced_ms,
                seq: key.value().1,
            });
        }
        Ok(out)
    }

    /// The blobs item `id` owned that forgetting dropped, in blob id order.
    pub fn dropped_blobs(&self, id: u64) -> Result<Vec<DroppedBlob>> {
        let Some(table) = catalog::open_optional(&self.txn, catalog::DROPPED_BLOBS)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for row in table
            .range((id, 0)..=(id, u64::MAX))
            .ctx("scan dropped_blobs")?
        {
            let (key, value) = row.ctx("scan dropped_blobs")?;
            let (kind, len, dropped_ms, why) = value.value();
            let blob = key.value().1;
            out.push(DroppedBlob {
                id: blob,
                kind: BlobKind::from_code(kind).ok_or_else(|| {
                    Error::bad_row("dropped_blobs", blob, format!("unknown blob kind {kind}"))
                })?,
                len,
                dropped_ms,
                why: why.to_owned(),
            });
        }
        Ok(out)
    }

    /// The first of `item`'s blobs that is a photo original (what pages draw and the
    /// captioner describes), if it still has one.
    pub fn original_of(&self, item: &ItemRecord) -> Result<Option<u64>> {
        for &blob in &item.blobs {
            if self
                .blob_info(blob)?
                .is_some_and(|i| i.kind == BlobKind::Original)
            {
                return Ok(Some(blob));
            }
        }
        Ok(None)
    }

    /// What blob `id` is, without reading it.
    pub fn blob_info(&self, id: u64) -> Result<Option<BlobInfo>> {
        let blobs = self.txn.open_table(catalog::BLOBS).ctx("open blobs")?;
        let Some(raw) = blobs.get(id).ctx("read blobs")? else {
            return Ok(None);
        };
        let loc = BlobLoc::decode(id, raw.value())?;
        Ok(Some(blob_info(id, &loc)))
    }

    /// The segment blob `id` lives in.
    pub fn blob_segment(&self, id: u64) -> Result<Option<u64>> {
        let blobs = self.txn.open_table(catalog::BLOBS).ctx("open blobs")?;
        let Some(raw) = blobs.get(id).ctx("read blobs")? else {
            return Ok(None);
        };
        Ok(Some(BlobLoc::decode(id, raw.value())?.segment))
    }

    /// Blob `id`, checksum-verified, as a zero-copy slice of its segment.
    pub fn blob(&self, id: u64) -> Result<Option<Blob>> {
        let blobs = self.txn.open_table(catalog::BLOBS).ctx("open blobs")?;
        let Some(raw) = blobs.get(id).ctx("read blobs")? else {
            return Ok(None);
        };
        let loc = BlobLoc::decode(id, raw.value())?;
        read_blob(&self.segments, id, &loc).map(Some)
    }

    /// The catalog read transaction this snapshot reads through (clients read their own
    /// tables in it).
    pub fn txn(&self) -> &redb::ReadTransaction {
        &self.txn
    }

    /// The store-wide setting `key` (`settings`, SPEC.md §5) as of this snapshot.
    /// The memory operations a batch recorded under the client's `key` (`WriteBatch::
    /// record_ops_as`), as (op sequence, memory id) in the order they were applied; `None`
    /// when no commit recorded that key.
    pub fn ops_recorded_as(&self, key: &str) -> Result<Option<Vec<(u64, u64)>>> {
        let row = super::catalog::recorded_ops_key(key);
        let Some(value) = self.setting(&row)? else {
            return Ok(None);
        };
        super::catalog::parse_recorded_ops(&value)
            .map(Some)
            .map_err(|reason| crate::Error::BadRow {
                table: "settings",
                row,
                reason,
            })
    }

    /// The value of setting `key`, if set.
    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        let settings = self
            .txn
            .open_table(super::catalog::SETTINGS)
            .ctx("open settings")?;
        Ok(settings
            .get(key)
            .ctx("read settings")?
            .map(|v| v.value().to_owned()))
    }

    pub(crate) fn segments(&self) -> &Arc<SegmentSet> {
        &self.segments
    }
}

fn check_id(id: u64, record: &ItemRecord) -> Result<()> {
    if record.id != id {
        return Err(Error::bad_row(
            "items",
            id,
            format!("points at the record of item {}", record.id),
        ));
    }
    Ok(())
}

pub(crate) fn blob_info(id: u64, loc: &BlobLoc) -> BlobInfo {
    BlobInfo {
        id,
        kind: loc.kind,
        len: loc.len,
        owner: (loc.owner != 0).then_some(loc.owner),
    }
}

fn open_segment(segments: &SegmentSet, id: u64) -> Result<&super::segment_file::SegmentFile> {
    segments
        .get(&id)
        .map(AsRef::as_ref)
        .ok_or_else(|| Error::SegmentUnavailable {
            segment: id,
            reason: "not open (missing or damaged at open; see `memdb check`)".into(),
        })
}

/// Reads, checksums and decodes the record at `loc`.
pub(crate) fn read_record(segments: &SegmentSet, loc: &ItemLoc) -> Result<ItemRecord> {
    let file = open_segment(segments, loc.segment)?;
    let end = loc.offset + u64::from(loc.frame_len);
    let frame = file.cached_bytes(loc.offset..end)?;
    let frame = &frame[..];
    let record = read_framed(frame).map_err(|e| Error::corruption(loc.segment, loc.offset, e))?;
    if record.len() + memdb_formats::item::RECORD_FRAME_BYTES != frame.len() {
        return Err(Error::bad_row(
            "items",
            format!("at segment {:016x} offset {}", loc.segment, loc.offset),
            format!(
                "the record is {} bytes, the catalog says {}",
                record.len() + memdb_formats::item::RECORD_FRAME_BYTES,
                frame.len()
            ),
        ));
    }
    decode_record(record).map_err(|e| Error::corruption(loc.segment, loc.offset, e))
}

/// Reads blob `id` at `loc`, verifying its entry header and payload checksum.
pub(crate) fn read_blob(segments: &SegmentSet, id: u64, loc: &BlobLoc) -> Result<Blob> {
    let file = open_segment(segments, loc.segment)?;
    let entry_offset = loc
        .offset
        .checked_sub(ENTRY_HEADER_BYTES as u64)
        .ok_or_else(|| {
            Error::bad_row(
                "blobs",
                id,
                format!("offset {} inside a header page", loc.offset),
            )
        })?;
    let header = file.read_entry_header(entry_offset)?;
    if header.kind != EntryKind::Blob || header.payload_len != loc.len {
        return Err(Error::bad_row(
            "blobs",
            id,
            format!(
                "the entry at segment {:016x} offset {entry_offset} is a {} of {} bytes, the catalog says a blob of {}",
                loc.segment,
                header.kind.name(),
                header.payload_len,
                loc.len
            ),
        ));
    }
    let bytes = file.cached_bytes(loc.offset..loc.offset + loc.len)?;
    header
        .verify_payload(&bytes, loc.offset)
        .map_err(|e| Error::corruption(loc.segment, loc.offset, e))?;
    Ok(Blob {
        info: blob_info(id, loc),
        bytes,
    })
}
