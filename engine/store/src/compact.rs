//! Compaction: rewrite the live entries of chosen segments into new sealed segments and swap
//! them in with one catalog commit.
//!
//! Every entry passes through a [`CompactionHook`] on its way, which may keep it, replace it or
//! drop it: this is how forgetting re-encodes pages and drops originals with the same crash
//! safety as a plain compaction.
//!
//! A plain compaction ([`Store::compact`]) first leaves out any victim whose bytes do not
//! verify — the damage is carried over untouched, for `repair` — and reports it; repair and
//! forgetting, which account for every entry of their victims, take them all.
//!
//! Order: read and verify every live entry of the victims → write the new segments (each
//! sealed, fsync'd, its directory entry fsync'd) → one redb commit that points every moved
//! item and blob at its new place and drops the victims from the manifest → retire the victims
//! (unlinked once no snapshot maps them). A crash before the commit leaves the old state (the
//! new files are orphans, deleted at the next open); after it, the new state (old files are
//! orphans).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use memdb_formats::item::{ItemFields, ItemRecord, encode_record, put_framed};
use memdb_formats::segment::{EntryKind, PAGE};
use redb::ReadableTable;

use super::catalog::{self, BlobKind, BlobLoc, ItemLoc, SegmentRow, SegmentState};
use super::read::{BlobInfo, blob_info, read_blob, read_record};
use super::vector_space::{self, ITEM_VECTORS, StagedVectors};
use super::versions;
use super::write::Tables;
use super::{Catalog, OpenSegment, Store, now_ms};
use crate::error::{CatalogResult, Error, Result};

/// What to do with an item during compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemRewrite {
    /// Keep it as it is.
    Keep,
    /// Replace its fields (the id, blobs and supersedes link stay).
    Replace(Box<ItemFields>),
    /// Delete it.
    Drop,
}

/// What to do with a blob during compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobRewrite {
    /// Keep its bytes.
    Keep,
    /// Replace its bytes (a page re-encoded at a lower quality, say).
    Replace(Vec<u8>),
    /// Delete it (and remove it from its owner's blob list).
    Drop,
}

/// Transforms entries while they are rewritten. The default methods keep everything.
pub trait CompactionHook {
    /// Called once for every live item that is rewritten.
    fn rewrite_item(&mut self, item: &ItemRecord) -> Result<ItemRewrite> {
        let _ = item;
        Ok(ItemRewrite::Keep)
    }

    /// Called once for every live blob that is rewritten, with its verified bytes.
    fn rewrite_blob(&mut self, info: &BlobInfo, bytes: &[u8]) -> Result<BlobRewrite> {
        let _ = (info, bytes);
        Ok(BlobRewrite::Keep)
    }

    /// Called for a live item whose record cannot be read (damage), with what the catalog
    /// still knows of it. Return a record to write in its place (same id) or `None` to drop
    /// the item. The default fails the compaction with `error`: only `repair` salvages.
    fn unreadable_item(
        &mut self,
        lost: &LostItem,
        error: crate::Error,
    ) -> Result<Option<ItemRecord>> {
        let _ = lost;
        Err(error)
    }

    /// Called for a live blob whose bytes cannot be read: `Drop` forgets it (and removes it
    /// from its owner's list), `Replace` writes other bytes in its place; `Keep` is an error.
    /// The default fails the compaction with `error`.
    fn unreadable_blob(&mut self, info: &BlobInfo, error: crate::Error) -> Result<BlobRewrite> {
        let _ = info;
        Err(error)
    }
}

/// What the catalog knows of an item whose record cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostItem {
    /// Its id.
    pub id: u64,
    /// The event time it is filed under (UTC ms; its offset was in the record).
    pub time_ms: i64,
    /// Its source code.
    pub source: u8,
    /// Its external id, if it had one.
    pub external_id: Option<String>,
    /// The blobs it owns that are still in the catalog.
    pub blobs: Vec<u64>,
}

/// A hook that keeps every entry: plain space reclamation.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepEverything;

impl CompactionHook for KeepEverything {}

/// Which segments a compaction rewrites.
#[derive(Debug, Clone, PartialEq)]
pub enum Victims {
    /// Every segment.
    All,
    /// Segments whose dead bytes are at least this fraction of their length, plus open
    /// segments that are not the writer's active one.
    DeadRatio(f64),
    /// Exactly these segments.
    Segments(Vec<u64>),
}

/// How to compact.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactOptions {
    /// Which segments to rewrite.
    pub victims: Victims,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            victims: Victims::DeadRatio(0.25),
        }
    }
}

/// What [`Store::shrink_catalog`] did: the catalog file's length before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CatalogShrink {
    /// Bytes before.
    pub bytes_before: u64,
    /// Bytes after.
    pub bytes_after: u64,
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Segments rewritten and removed.
    pub segments_removed: Vec<u64>,
    /// Segments written.
    pub segments_written: Vec<u64>,
    /// Bytes of the removed segments.
    pub bytes_before: u64,
    /// Bytes of the written segments.
    pub bytes_after: u64,
    /// Items copied unchanged.
    pub items_kept: u64,
    /// Items the hook replaced.
    pub items_replaced: u64,
    /// Items the hook dropped.
    pub items_dropped: u64,
    /// Blobs copied unchanged.
    pub blobs_kept: u64,
    /// Blobs the hook replaced.
    pub blobs_replaced: u64,
    /// Blobs the hook dropped.
    pub blobs_dropped: u64,
    /// Earlier item versions (history) moved.
    pub versions_kept: u64,
    /// Segments a plain compaction left as they are because their bytes do not verify: the
    /// damage is carried over untouched, for `memdb repair`, instead of failing the run.
    pub segments_skipped_damaged: Vec<u64>,
    /// Blobs of deleted items dropped because the store's retention window had passed.
    pub retired_blobs_expired: u64,
}

/// Item records are grouped into blocks of about this size in compacted segments.
const ITEM_BLOCK_TARGET: usize = 256 << 10;

/// The segments a compaction is writing.
struct Output<'a> {
    store: &'a Store,
    now: i64,
    current: Option<OpenSegment>,
    finished: Vec<(u64, u64)>,
    block: Vec<u8>,
    /// Each framed record in `block`: its offset in the block, frame length, and which catalog
    /// row points at it once the block has a place.
    block_items: Vec<(u64, u32, FrameRow)>,
}

/// The catalog row that locates a framed record a compaction moves.
#[derive(Debug, Clone, Copy)]
enum FrameRow {
    /// An item's current version: `items[id]`, filed under its time and source.
    Item { id: u64, time_ms: i64, source: u8 },
    /// An earlier version: `history[key]`, replaced at `replaced_ms`.
    History { key: (u64, u64), replaced_ms: i64 },
}

impl Output<'_> {
    fn segment_for(&mut self, t: &mut Tables<'_>, bytes: u64) -> Result<&mut OpenSegment> {
        let target = self.store.inner.options.segment_target_bytes;
        if let Some(cur) = self.current.as_mut()
            && cur.len > PAGE as u64
            && cur.len.saturating_add(bytes) > target
        {
            self.seal_current()?;
        }
        if self.current.is_none() {
            let id = t.take(catalog::KEY_NEXT_SEGMENT, 1)?;
            let seg = OpenSegment::create(&self.store.inner, t, id, self.now)?;
            self.store.publish_segment(&seg.file)?;
            self.current = Some(seg);
        }
        self.current
            .as_mut()
            .ok_or_else(|| Error::Inconsistent("no output segment".into()))
    }

    fn seal_current(&mut self) -> Result<()> {
        if let Some(mut cur) = self.current.take() {
            let len = cur.seal()?;
            cur.file.sync()?;
            self.finished.push((cur.id(), len));
        }
        Ok(())
    }

    fn add_blob(
        &mut self,
        t: &mut Tables<'_>,
        tag: memdb_formats::segment::BlobTag,
        bytes: &[u8],
    ) -> Result<(u64, u64)> {
        let need = memdb_formats::segment::pages_for(bytes.len() as u64) * PAGE as u64;
        let seg = self.segment_for(t, need)?;
        let offset = seg.append_blob(tag, bytes)?;
        Ok((seg.id(), offset))
    }

    fn add_record(&mut self, t: &mut Tables<'_>, row: FrameRow, record: &[u8]) -> Result<()> {
        let offset = self.block.len() as u64;
        put_framed(&mut self.block, record).map_err(|_| Error::Overflow {
            what: "record length",
            value: record.len().to_string(),
        })?;
        let frame_len = u32::try_from(self.block.len() as u64 - offset).unwrap_or(u32::MAX);
        self.block_items.push((offset, frame_len, row));
        if self.block.len() >= ITEM_BLOCK_TARGET {
            self.flush_block(t)?;
        }
        Ok(())
    }

    fn flush_block(&mut self, t: &mut Tables<'_>) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let block = std::mem::take(&mut self.block);
        let need = memdb_formats::segment::pages_for(block.len() as u64) * PAGE as u64;
        let seg = self.segment_for(t, need)?;
        let at = seg.append(EntryKind::ItemBlock, &block)?;
        let seg_id = seg.id();
        for (off, frame_len, row) in self.block_items.drain(..) {
            match row {
                FrameRow::Item {
                    id,
                    time_ms,
                    source,
                } => {
                    let loc = ItemLoc {
                        segment: seg_id,
                        offset: at + off,
                        frame_len,
                        time_ms,
                        source,
                    };
                    t.items.insert(id, loc.encode()).ctx("write items")?;
                }
                FrameRow::History { key, replaced_ms } => {
                    t.history
                        .insert(key, (seg_id, at + off, frame_len, replaced_ms))
                        .ctx("write history")?;
                }
            }
        }
        Ok(())
    }
}

impl Store {
    /// Rewrites the live entries of the chosen segments through `hook` into new sealed
    /// segments, swapping them in with one commit.
    pub fn compact(
        &self,
        options: &CompactOptions,
        hook: &mut dyn CompactionHook,
    ) -> Result<CompactReport> {
        self.compact_inner(
            options,
            hook,
            &mut |_, _, _| Ok(false),
            &mut |_, _| {},
            true,
        )
    }

    /// Gives the catalog's free pages back to the file system. A commit that frees catalog
    /// pages (forgetting, deletes, compaction) leaves them for later commits to reuse but
    /// never shortens the file, so after forgetting this is what makes the store smaller on
    /// disk. It needs the store to itself: no clone of this handle and no snapshot alive
    /// ([`Error::InUse`] otherwise). Crash-safe: the catalog's content does not change, and
    /// redb moves pages with ordinary durable commits.
    pub fn shrink_catalog(&mut self) -> Result<CatalogShrink> {
        let path = self.inner.paths.catalog.clone();
        let len = || -> Result<u64> {
            Ok(std::fs::metadata(&path)
                .map_err(Error::io("stat", &path))?
                .len())
        };
        let bytes_before = len()?;
        let inner = Arc::get_mut(&mut self.inner)
            .ok_or_else(|| Error::InUse("shrink the catalog".into()))?;
        let Catalog::Writer(db) = &mut inner.db else {
            return Err(Error::ReadOnly {
                path: inner.paths.root.clone(),
            });
        };
        match db.compact() {
            Ok(_) => {}
            Err(redb::CompactionError::TransactionInProgress) => {
                return Err(Error::InUse("shrink the catalog".into()));
            }
            Err(e) => return Err(Error::catalog("compact catalog")(e.into())),
        }
        Ok(CatalogShrink {
            bytes_before,
            bytes_after: len()?,
        })
    }

    /// [`compact`](Self::compact), with `finish` writing more catalog rows into the same
    /// commit (forgetting's page rows and graph pruning); it returns whether it changed
    /// anything, and the commit happens when it did even if no segment was rewritten.
    pub fn compact_with(
        &self,
        options: &CompactOptions,
        hook: &mut dyn CompactionHook,
        finish: &mut FinishRows<'_>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CompactReport> {
        self.compact_inner(options, hook, finish, progress, false)
    }

    /// The compaction; with `skip_damaged`, victims whose bytes do not verify are left out
    /// (and reported) instead of failing the run — a plain compaction's way; repair and
    /// forgetting, which must account for every entry of their victims, leave it off.
    fn compact_inner(
        &self,
        options: &CompactOptions,
        hook: &mut dyn CompactionHook,
        finish: &mut FinishRows<'_>,
        progress: &mut dyn FnMut(u64, u64),
        skip_damaged: bool,
    ) -> Result<CompactReport> {
        let mut writer = self.lock_writer()?;
        let segments = self.current_segments()?;
        let active_id = writer.active.as_ref().map(|a| a.id());
        let txn = self.inner.db.begin_write(&self.inner.paths)?;
        let mut report = CompactReport::default();
        let mut output = Output {
            store: self,
            now: now_ms(),
            current: None,
            finished: Vec::new(),
            block: Vec::new(),
            block_items: Vec::new(),
        };
        let mut finished_rows = false;
        let mut new_graphs = Vec::new();
        let retention_days = txn
            .open_table(catalog::SETTINGS)
            .ctx("open settings")?
            .get(versions::KEY_RETENTION_DAYS)
            .ctx("read settings")?
            .and_then(|v| v.value().parse().ok())
            .unwrap_or(versions::DEFAULT_RETENTION_DAYS);
        let result = (|| -> Result<()> {
            let mut t = Tables::open(&txn)?;
            // Deleted items past the retention window lose their originals first, so the
            // segments holding them count that space as dead below.
            report.retired_blobs_expired =
                versions::expire_retired_blobs(&mut t, output.now, retention_days)?;
            finished_rows |= report.retired_blobs_expired > 0;
            let rows = catalog::segment_rows(&t.segments)?;
            let mut victims = choose_victims(&options.victims, &rows, &segments, active_id);
            if skip_damaged {
                let mut sound = BTreeSet::new();
                for id in victims {
                    let ok = match (segments.get(&id), rows.get(&id)) {
                        (Some(file), Some(row)) => super::check::segment_is_sound(file, row)?,
                        _ => false,
                    };
                    if ok {
                        sound.insert(id);
                    } else {
                        report.segments_skipped_damaged.push(id);
                    }
                }
                victims = sound;
            }
            // `finish` first: a blob it drops is then not copied, and the vector blocks it
            // stages go straight into the output.
            let mut staged = StagedVectors::new();
            finished_rows |= finish(&txn, &mut t, &mut staged)?;
            new_graphs = self.write_vector_blocks(&mut t, &segments, &mut output, staged)?;
            finished_rows |= !new_graphs.is_empty();

            // A compaction with no victims only commits what `finish` did.
            if !victims.is_empty() {
                let mut pass = Pass {
                    segments: &segments,
                    victims: &victims,
                    // Progress in bytes of the victims read so far.
                    total: victims
                        .iter()
                        .map(|id| rows.get(id).map_or(0, |r| r.len))
                        .sum(),
                    done: 0,
                    progress: &mut *progress,
                };
                // Blobs first: dropping one changes its owner's record, rewritten below.
                let dropped_by_owner =
                    copy_blobs(&mut t, &mut pass, hook, &mut output, &mut report)?;
                copy_items(
                    &mut t,
                    &mut pass,
                    hook,
                    &mut output,
                    &mut report,
                    &dropped_by_owner,
                )?;
                copy_history(&mut t, &mut pass, &mut output, &mut report)?;
            }
            output.flush_block(&mut t)?;
            output.seal_current()?;
            write_segment_rows(&mut t, &rows, victims, &output.finished, &mut report)?;
            t.flush_deferred()
        })();
        let written: Vec<u64> = output
            .finished
            .iter()
            .map(|(id, _)| *id)
            .chain(output.current.as_ref().map(|c| c.id()))
            .collect();
        if let Err(e) = result {
            drop(txn);
            self.retire_segments(&written)?;
            return Err(e);
        }
        if report.segments_removed.is_empty() && !finished_rows {
            return Ok(report);
        }
        self.commit_compaction(&mut writer, txn, &written, active_id, &report)?;
        for (id, graph) in new_graphs {
            if let Some(graph) = graph {
                self.inner.graphs.insert(id, graph);
            }
        }
        self.retire_segments(&report.segments_removed)?;
        Ok(report)
    }

    /// Writes the vector blocks `finish` staged into the output and files them; returns each
    /// block written, by blob id, with the graph it carries (cached once the compaction
    /// commits).
    fn write_vector_blocks(
        &self,
        t: &mut Tables<'_>,
        segments: &super::segment_file::SegmentSet,
        output: &mut Output<'_>,
        staged: StagedVectors,
    ) -> Result<Vec<(u64, Option<Arc<memdb_vectors::HnswIndex>>)>> {
        let mut written = Vec::new();
        for block in vector_space::stage(t, segments, &self.inner.graphs, staged)? {
            let tag = memdb_formats::segment::BlobTag {
                id: block.blob_id,
                kind: BlobKind::Vectors as u8,
                owner: 0,
            };
            let (segment, offset) = output.add_blob(t, tag, &block.bytes)?;
            let loc = BlobLoc {
                segment,
                offset,
                len: block.bytes.len() as u64,
                kind: BlobKind::Vectors,
                owner: 0,
            };
            t.blobs
                .insert(block.blob_id, loc.encode())
                .ctx("write blobs")?;
            written.push((block.blob_id, block.graph));
        }
        Ok(written)
    }

    /// The redb commit that swaps the new segments in: the one point at which the compaction
    /// takes effect. A failed commit poisons the writer and abandons the segments written.
    fn commit_compaction(
        &self,
        writer: &mut super::Writer,
        txn: redb::WriteTransaction,
        written: &[u64],
        active_id: Option<u64>,
        report: &CompactReport,
    ) -> Result<()> {
        if let Err(e) = txn.commit() {
            writer.poisoned = Some(format!("catalog commit of a compaction failed: {e}"));
            self.abandon_segments(written)?;
            return Err(Error::catalog("commit compaction")(e.into()));
        }
        if active_id.is_some_and(|id| report.segments_removed.contains(&id)) {
            writer.active = None;
        }
        Ok(())
    }
}

/// What [`Store::compact_with`]'s `finish` is: it writes more rows into the compaction's
/// commit and says whether it changed anything.
pub type FinishRows<'a> =
    dyn FnMut(&redb::WriteTransaction, &mut Tables<'_>, &mut StagedVectors) -> Result<bool> + 'a;

/// The segments `victims` names among `rows`, the active one being `active`.
fn choose_victims(
    victims: &Victims,
    rows: &std::collections::BTreeMap<u64, SegmentRow>,
    segments: &super::segment_file::SegmentSet,
    active: Option<u64>,
) -> BTreeSet<u64> {
    rows.iter()
        .filter(|(id, row)| {
            // Named victims are rewritten even when they could not be opened (repair:
            // everything in them is then unreadable and goes through the hook).
            let named = matches!(victims, Victims::Segments(_));
            (named || segments.contains_key(id)) && is_victim(victims, **id, row, active)
        })
        .map(|(id, _)| *id)
        .collect()
}

/// A compaction's pass over its victims, reporting progress in bytes read.
struct Pass<'a> {
    segments: &'a super::segment_file::SegmentSet,
    victims: &'a BTreeSet<u64>,
    total: u64,
    done: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

impl Pass<'_> {
    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        (self.progress)(self.done.min(self.total), self.total);
    }
}

/// Copies the victims' live blobs through the hook; returns the blobs it dropped, by owner.
fn copy_blobs(
    t: &mut Tables<'_>,
    pass: &mut Pass<'_>,
    hook: &mut dyn CompactionHook,
    output: &mut Output<'_>,
    report: &mut CompactReport,
) -> Result<HashMap<u64, Vec<u64>>> {
    let mut blobs = Vec::new();
    for row in t.blobs.iter().ctx("scan blobs")? {
        let (id, raw) = row.ctx("scan blobs")?;
        let loc = BlobLoc::decode(id.value(), raw.value())?;
        if pass.victims.contains(&loc.segment) {
            blobs.push((id.value(), loc));
        }
    }
    blobs.sort_by_key(|(_, loc)| (loc.segment, loc.offset));
    let mut dropped_by_owner: HashMap<u64, Vec<u64>> = HashMap::new();
    for (id, loc) in blobs {
        pass.advance(loc.entry_bytes());
        let info = blob_info(id, &loc);
        let (bytes, rewrite) = match read_blob(pass.segments, id, &loc) {
            // Vector blocks and op notes belong to the store (vector rows are reclaimed by
            // `compact_vectors`, notes go with their memory's purge), so hooks never see them.
            Ok(bytes) if loc.kind.is_reserved() => (Some(bytes), BlobRewrite::Keep),
            // A deleted item's blob is kept as it is for an undelete (the retention window
            // dropped the expired ones before this pass): forgetting applies to current items.
            Ok(bytes) if loc.owner != 0 && t.items.get(loc.owner).ctx("read items")?.is_none() => {
                (Some(bytes), BlobRewrite::Keep)
            }
            Ok(bytes) => {
                let rewrite = hook.rewrite_blob(&info, &bytes)?;
                (Some(bytes), rewrite)
            }
            Err(e) if loc.kind == BlobKind::Vectors => return Err(e),
            // A damaged note is dropped: its op stays logged, read back as having lost its
            // note (`memory_ops` keeps the id).
            Err(_) if loc.kind == BlobKind::OpNote => (None, BlobRewrite::Drop),
            Err(e) => match hook.unreadable_blob(&info, e)? {
                BlobRewrite::Keep => {
                    return Err(Error::Hook(format!(
                        "blob {id} cannot be read, so it cannot be kept"
                    )));
                }
                other => (None, other),
            },
        };
        let bytes: &[u8] = bytes.as_deref().unwrap_or_default();
        let kept: Option<&[u8]> = match &rewrite {
            BlobRewrite::Keep => Some(bytes),
            BlobRewrite::Replace(new) => Some(new),
            BlobRewrite::Drop => None,
        };
        if let Some(kept) = kept {
            let (segment, offset) = output.add_blob(t, loc.tag(id), kept)?;
            let moved = BlobLoc {
                segment,
                offset,
                len: kept.len() as u64,
                ..loc
            };
            t.blobs.insert(id, moved.encode()).ctx("write blobs")?;
        }
        match rewrite {
            BlobRewrite::Keep => report.blobs_kept += 1,
            BlobRewrite::Replace(_) => report.blobs_replaced += 1,
            BlobRewrite::Drop => {
                t.blobs.remove(id).ctx("remove blob")?;
                if loc.owner != 0 && loc.kind != BlobKind::OpNote {
                    dropped_by_owner.entry(loc.owner).or_default().push(id);
                }
                report.blobs_dropped += 1;
            }
        }
    }
    Ok(dropped_by_owner)
}

/// Copies the victims' live items through the hook, and rewrites the records of items whose
/// blobs `dropped_by_owner` lists wherever they are.
fn copy_items(
    t: &mut Tables<'_>,
    pass: &mut Pass<'_>,
    hook: &mut dyn CompactionHook,
    output: &mut Output<'_>,
    report: &mut CompactReport,
    dropped_by_owner: &HashMap<u64, Vec<u64>>,
) -> Result<()> {
    let mut items = Vec::new();
    for row in t.items.iter().ctx("scan items")? {
        let (id, raw) = row.ctx("scan items")?;
        let loc = ItemLoc::decode(raw.value());
        if pass.victims.contains(&loc.segment) || dropped_by_owner.contains_key(&id.value()) {
            items.push((id.value(), loc));
        }
    }
    items.sort_by_key(|(_, loc)| (loc.segment, loc.offset));
    for (id, loc) in items {
        pass.advance(u64::from(loc.frame_len));
        let (mut record, mut changed) = match read_record(pass.segments, &loc) {
            Ok(record) => (record, false),
            Err(e) => {
                let lost = lost_item(t, id, &loc)?;
                match hook.unreadable_item(&lost, e)? {
                    Some(record) if record.id == id => {
                        reindex_lost(t, &loc, &record)?;
                        (record, true)
                    }
                    Some(record) => {
                        return Err(Error::Hook(format!(
                            "item {id} replaced by a record of item {}",
                            record.id
                        )));
                    }
                    None => {
                        // Its rows, owned blobs and history go (the record's
                        // bytes count as dead where they stay).
                        t.remove_item(id, pass.segments)?;
                        super::versions::remove_memory_rows(t, id)?;
                        let seq = t.log(catalog::OpCode::Purge, id, output.now)?;
                        t.memory_ops.remove((id, seq)).ctx("remove memory_ops")?;
                        report.items_dropped += 1;
                        continue;
                    }
                }
            }
        };
        if let Some(dropped) = dropped_by_owner.get(&id) {
            record.blobs.retain(|b| !dropped.contains(b));
            changed = true;
        }
        if !pass.victims.contains(&loc.segment) {
            t.add_dead(loc.segment, u64::from(loc.frame_len))?;
        }
        match hook.rewrite_item(&record)? {
            ItemRewrite::Keep => report.items_kept += 1,
            ItemRewrite::Replace(fields) => {
                fields
                    .validate()
                    .map_err(|reason| Error::Hook(format!("item {id}: {reason}")))?;
                reindex(t, id, &record.fields, &fields)?;
                record.fields = *fields;
                changed = true;
                report.items_replaced += 1;
            }
            ItemRewrite::Drop => {
                drop_item(t, id, &record, output.now)?;
                report.items_dropped += 1;
                continue;
            }
        }
        let bytes = if changed {
            encode_record(&record).map_err(|e| Error::Hook(format!("item {id}: {e}")))?
        } else {
            // Unchanged records are copied byte for byte (already verified).
            read_frame_payload(pass.segments, loc.segment, loc.offset, loc.frame_len)?
        };
        output.add_record(
            t,
            FrameRow::Item {
                id,
                time_ms: record.fields.time.unix_ms,
                source: record.fields.source.code(),
            },
            &bytes,
        )?;
    }
    Ok(())
}

/// Earlier versions move with their items, byte for byte (verified on the way).
fn copy_history(
    t: &mut Tables<'_>,
    pass: &mut Pass<'_>,
    output: &mut Output<'_>,
    report: &mut CompactReport,
) -> Result<()> {
    let mut versions = Vec::new();
    for row in t.history.iter().ctx("scan history")? {
        let (key, value) = row.ctx("scan history")?;
        let (segment, offset, frame_len, replaced_ms) = value.value();
        if pass.victims.contains(&segment) {
            versions.push((key.value(), segment, offset, frame_len, replaced_ms));
        }
    }
    versions.sort_by_key(|v| (v.1, v.2));
    for (key, segment, offset, frame_len, replaced_ms) in versions {
        pass.advance(u64::from(frame_len));
        let bytes = read_frame_payload(pass.segments, segment, offset, frame_len)?;
        output.add_record(t, FrameRow::History { key, replaced_ms }, &bytes)?;
        report.versions_kept += 1;
    }
    Ok(())
}

/// Drops the victims from the manifest and files the sealed segments written in their place.
fn write_segment_rows(
    t: &mut Tables<'_>,
    rows: &std::collections::BTreeMap<u64, SegmentRow>,
    victims: BTreeSet<u64>,
    finished: &[(u64, u64)],
    report: &mut CompactReport,
) -> Result<()> {
    for &id in &victims {
        t.segments.remove(id).ctx("remove segment")?;
        // The retired segment's salt goes with its row (a format-1 segment's key with it; a
        // format-2 segment carries its salt, and goes with its file).
        if let Some(keys) = t.segment_keys.as_mut() {
            keys.remove(id).ctx("remove segment key")?;
        }
        report.bytes_before += rows.get(&id).map_or(0, |r| r.len);
    }
    for &(id, len) in finished {
        t.segments
            .insert(
                id,
                SegmentRow {
                    state: SegmentState::Sealed,
                    len,
                    dead_bytes: 0,
                }
                .encode(),
            )
            .ctx("write segments")?;
        report.bytes_after += len;
        report.segments_written.push(id);
    }
    report.segments_removed = victims.into_iter().collect();
    Ok(())
}

/// What the catalog knows of item `id`, whose record at `loc` cannot be read.
fn lost_item(t: &mut Tables<'_>, id: u64, loc: &ItemLoc) -> Result<LostItem> {
    let mut external_id = None;
    for row in t.external.iter().ctx("scan external_ids")? {
        let (k, v) = row.ctx("scan external_ids")?;
        if v.value() == id {
            external_id = Some(k.value().to_owned());
            break;
        }
    }
    let mut blobs = Vec::new();
    for row in t.blobs.iter().ctx("scan blobs")? {
        let (k, v) = row.ctx("scan blobs")?;
        if v.value().4 == id {
            blobs.push(k.value());
        }
    }
    Ok(LostItem {
        id,
        time_ms: loc.time_ms,
        source: loc.source,
        external_id,
        blobs,
    })
}

/// Files a stand-in for an unreadable item under its own fields (time, source, external id),
/// where the lost record's index rows were.
fn reindex_lost(t: &mut Tables<'_>, loc: &ItemLoc, record: &ItemRecord) -> Result<()> {
    let id = record.id;
    t.unindex_time(id, loc.time_ms, loc.source)?;
    t.index_item(id, &record.fields)?;
    vector_space::remove_key(t, ITEM_VECTORS, id)?;
    Ok(())
}

/// The record bytes of the frame at `offset`, its checksum verified (compaction copies them
/// without decoding).
fn read_frame_payload(
    segments: &super::segment_file::SegmentSet,
    segment: u64,
    offset: u64,
    frame_len: u32,
) -> Result<Vec<u8>> {
    let unavailable = |reason: String| Error::SegmentUnavailable { segment, reason };
    let file = segments
        .get(&segment)
        .ok_or_else(|| unavailable("not open (missing or damaged at open)".into()))?;
    let end = offset + u64::from(frame_len);
    let frame = file.bytes(offset..end)?;
    memdb_formats::item::read_framed(&frame)
        .map(<[u8]>::to_vec)
        .map_err(|e| Error::corruption(segment, offset, e))
}

fn is_victim(victims: &Victims, id: u64, row: &SegmentRow, active: Option<u64>) -> bool {
    match victims {
        Victims::All => true,
        Victims::Segments(ids) => ids.contains(&id),
        Victims::DeadRatio(ratio) => {
            let dead = row.len > 0
                && row.dead_bytes as f64 >= ratio * row.len as f64
                && row.dead_bytes > 0;
            let stray_open = row.state == SegmentState::Open && Some(id) != active;
            dead || stray_open
        }
    }
}

/// Moves the index rows of item `id` from its old fields to its new ones.
fn reindex(t: &mut Tables<'_>, id: u64, old: &ItemFields, new: &ItemFields) -> Result<()> {
    t.unindex_time(id, old.time.unix_ms, old.source.code())?;
    if old.external_id != new.external_id
        && let Some(ext) = &old.external_id
    {
        t.external.remove(ext.as_str()).ctx("remove external id")?;
    }
    t.index_item(id, new)?;
    if (old.time.unix_ms, old.source) != (new.time.unix_ms, new.source) {
        // The item's vector is filed under its time and source: stale now, so it goes.
        vector_space::remove_key(t, ITEM_VECTORS, id)?;
    }
    Ok(())
}

/// Purges item `id`, which a compaction hook dropped; logged at the compaction's time `now`, so
/// that a compaction's purges share one op-log row.
fn drop_item(t: &mut Tables<'_>, id: u64, record: &ItemRecord, now: i64) -> Result<()> {
    t.items.remove(id).ctx("remove item")?;
    vector_space::remove_key(t, ITEM_VECTORS, id)?;
    let f = &record.fields;
    t.unindex_time(id, f.time.unix_ms, f.source.code())?;
    if let Some(ext) = &f.external_id {
        t.external.remove(ext.as_str()).ctx("remove external id")?;
    }
    for blob in &record.blobs {
        t.remove_blob(*blob)?;
    }
    t.remove_history(id)?;
    super::versions::remove_memory_rows(t, id)?;
    let seq = t.log(catalog::OpCode::Purge, id, now)?;
    t.memory_ops.remove((id, seq)).ctx("remove memory_ops")?;
    Ok(())
}
