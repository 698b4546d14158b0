//! Repair: salvage everything readable from a damaged store, and say exactly what was lost
//! (SQLite's `.recover` is the model).
//!
//! [`Store::repair`] works in place when the catalog reads and agrees with the segments
//! ([`Store::check`] sets `catalog_inconsistent` when a row disagrees with sound bytes: then it
//! touches nothing and fails with `CatalogDamaged`): `check` names what damage made
//! unreadable, then one compaction rewrites every segment with a problem into new segments,
//! keeping every entry that verifies. `Store::repair_or_rebuild` (what `memdb repair` runs)
//! rebuilds from the segments (`rebuild.rs`) when the catalog is damaged. What it cannot read goes, recorded:
//! - an item whose record is unreadable but whose files survive stays, as a stand-in record
//!   tagged `recovered`: a photo's fields are read again from its original (EXIF time, place,
//!   camera; the importer's own parser, then the ingest's place stage), anything else keeps what the catalog still knows — id,
//!   time, source, external id; one with nothing left is dropped, with its graph rows and
//!   vector;
//! - an unreadable blob is dropped from its owner (recorded in `dropped_blobs` with the reason),
//!   a lost page part is replaced by a grey part of its size (the rest of the page stays in
//!   place; a Recent page is marked stale, so `compose_pages` draws it again from the
//!   originals), a lost vector block takes its rows' vectors (`embed` encodes those items
//!   again), an unreadable earlier version leaves the history.
//!
//! It is one compaction: crash-safe like any other (the old state or the repaired one).

use std::collections::{BTreeMap, BTreeSet};

use memdb_formats::item::{EventTime, ItemFields, ItemRecord, Source, UNDATED_MS};
use redb::ReadableTable;

use super::Store;
use super::catalog::{self, BlobKind};
use super::check::Damage;
use super::compact::{
    BlobRewrite, CompactOptions, CompactReport, CompactionHook, LostItem, Victims,
};
use super::read::BlobInfo;
use super::vector_space::ITEM_VECTORS;
use crate::error::{CatalogResult, Error, Result};

/// What [`Store::repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// What `check` found unreadable before the repair.
    pub damage: Damage,
    /// Every problem `check` reported before the repair.
    pub problems: usize,
    /// Unreadable items kept as stand-ins because their files survived.
    pub stand_ins: Vec<u64>,
    /// Unreadable items dropped, with their external ids where the catalog still had them.
    pub items_lost: Vec<(u64, Option<String>)>,
    /// The compaction that rewrote the damaged segments.
    pub compaction: CompactReport,
    /// Problems `check` still reports after the repair (empty when it succeeded).
    pub remaining: usize,
}

impl RepairReport {
    /// Whether the store had nothing to repair.
    pub fn was_clean(&self) -> bool {
        self.problems == 0
    }
}

/// What [`Store::repair_or_rebuild`](crate::Store::repair_or_rebuild) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repaired {
    /// The catalog read and agreed with the segments: the damaged segments were rewritten in
    /// place.
    InPlace(RepairReport),
    /// It did not: the store was rebuilt from its segments.
    Rebuilt(super::RebuildReport),
}

/// Which part of [`Store::repair_or_rebuild`](crate::Store::repair_or_rebuild) a progress call
/// is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairPhase {
    /// The repair in place: bytes of the damaged segments read, of all.
    InPlace,
    /// The rebuild from the segments (the catalog could not be read or trusted): items
    /// written, of all. Its first call comes before anything is written.
    Rebuild,
}

impl Store {
    /// Repairs the store at `path` in place while its catalog reads and agrees with the
    /// segments, else rebuilds it from its segments ([`Store::rebuild`]): `memdb repair`.
    /// Only damage to the catalog ([`Error::is_catalog_damage`]) leads to a rebuild: a store
    /// that is locked, of an unknown version, whose secret is missing or wrong, or whose files
    /// fail to read for another reason (an I/O error) is left as it is, with that error.
    pub fn repair_or_rebuild_with(
        path: &std::path::Path,
        options: super::Options,
        progress: &mut dyn FnMut(RepairPhase, u64, u64),
        clients: impl Fn() -> super::derived::Clients,
    ) -> Result<Repaired> {
        // Only damage to the catalog calls for a rebuild (which cannot carry everything, see
        // `RebuildReport`); a failing disk, a lock or a wrong secret is the caller's to fix.
        let why = match Store::open_with(path, options.clone(), clients()) {
            Ok(store) => {
                match store.repair(&mut |done, total| progress(RepairPhase::InPlace, done, total)) {
                    Ok(report) => return Ok(Repaired::InPlace(report)),
                    Err(e) if e.is_catalog_damage() => e.to_string(),
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.is_catalog_damage() && path.join("segments").is_dir() => e.to_string(),
            Err(e) => return Err(e),
        };
        progress(RepairPhase::Rebuild, 0, 0);
        Store::rebuild_with(
            path,
            options,
            &why,
            &mut |done, total| progress(RepairPhase::Rebuild, done, total),
            clients(),
        )
        .map(Repaired::Rebuilt)
    }
}

/// The compaction hook of a repair: stand-ins for unreadable items that still own files,
/// grey parts for lost page parts, lost blobs dropped.
struct Salvage {
    /// Lost page part blob id → its replacement bytes.
    grey_parts: BTreeMap<u64, Vec<u8>>,
    /// Lost items whose original survives → its bytes (a photo's fields are read again from
    /// them).
    originals: BTreeMap<u64, Vec<u8>>,
    stand_ins: Vec<u64>,
    lost: Vec<(u64, Option<String>)>,
    /// The store's clients, which complete a stand-in's fields.
    clients: super::derived::Clients,
}

impl CompactionHook for Salvage {
    fn unreadable_item(&mut self, lost: &LostItem, _error: Error) -> Result<Option<ItemRecord>> {
        if lost.blobs.is_empty() {
            self.lost.push((lost.id, lost.external_id.clone()));
            return Ok(None);
        }
        self.stand_ins.push(lost.id);
        let original = self.originals.remove(&lost.id);
        Ok(Some(stand_in_for(lost, original.as_deref(), &self.clients)))
    }

    fn unreadable_blob(&mut self, info: &BlobInfo, _error: Error) -> Result<BlobRewrite> {
        Ok(match self.grey_parts.remove(&info.id) {
            Some(bytes) => BlobRewrite::Replace(bytes),
            None => BlobRewrite::Drop,
        })
    }
}

/// The record kept for item `lost`, whose own record is lost but whose files survive: what the
/// catalog still knows, and for a photo the fields read again from its `original` (EXIF time,
/// place, camera), as an import would have stored them. The item keeps the external id the
/// catalog knew it by.
pub(super) fn stand_in_for(
    lost: &LostItem,
    original: Option<&[u8]>,
    clients: &super::derived::Clients,
) -> ItemRecord {
    let mut record = stand_in(lost);
    if let Some(mut fields) = original.and_then(reread_photo) {
        for client in clients {
            client.complete_stand_in(&mut fields);
        }
        let external_id = record
            .fields
            .external_id
            .take()
            .or(fields.external_id.clone());
        record.fields = fields;
        record.fields.external_id = external_id;
        record.fields.tags.push("recovered".to_owned());
    }
    record
}

/// A photo's fields read again from its original (the clients add what they derive, such as
/// the place its GPS is in).
fn reread_photo(bytes: &[u8]) -> Option<ItemFields> {
    let photo = memdb_formats::import::photo::parse(
        "",
        bytes,
        memdb_formats::import::photo::PhotoLimits::default(),
    )
    .ok()?;
    Some(photo.draft.fields)
}

/// The record kept for an item whose own record is lost but whose files survive.
fn stand_in(lost: &LostItem) -> ItemRecord {
    let source = Source::from_code(lost.source).unwrap_or(Source::Note);
    let time = if lost.time_ms == UNDATED_MS {
        EventTime::UNDATED
    } else {
        EventTime::utc(lost.time_ms)
    };
    let mut fields = ItemFields::new(source, time);
    fields.external_id = lost.external_id.clone();
    fields.tags = vec!["recovered".to_owned()];
    fields.body = Some(format!(
        "memdb repair: the record of item {} was damaged and could not be read; its time \
         (UTC), source, external id and files were saved. Import it again to restore the rest.",
        lost.id
    ));
    ItemRecord {
        id: lost.id,
        ingest_time_ms: super::now_ms(),
        fields,
        supersedes: None,
        blobs: lost.blobs.clone(),
    }
}

impl Store {
    /// Salvages every readable item, version, blob and vector of a damaged store into new
    /// segments, in place (see the module header), and reports exactly what was lost. A clean
    /// store is left as it is. `progress` gets (bytes read, bytes to read) of the damaged
    /// segments being rewritten. Needs the catalog to read: when it does not, see
    /// [`Store::rebuild`].
    pub fn repair(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<RepairReport> {
        let before = self.check()?;
        if before.catalog_damaged || before.catalog_inconsistent {
            // Rows that damage changed would steer the compaction (and it deletes the old
            // segments): nothing is touched, and the caller rebuilds from the segments.
            let message = if before.catalog_damaged {
                before.problems.first().map(|p| p.what.clone())
            } else {
                before
                    .problems
                    .iter()
                    .find(|p| p.segment.is_none() || p.what.contains("catalog"))
                    .or(before.problems.first())
                    .map(|p| format!("catalog rows disagree with the segments: {}", p.what))
            };
            return Err(Error::CatalogDamaged {
                op: "repair",
                message: message.unwrap_or_default(),
            });
        }
        let mut report = RepairReport {
            problems: before.problems.len(),
            damage: before.damage.clone(),
            ..RepairReport::default()
        };
        if before.is_clean() {
            return Ok(report);
        }
        let snapshot = self.snapshot()?;
        // Every segment with a problem is rewritten, and every one holding something lost.
        let mut victims: BTreeSet<u64> = before.problems.iter().filter_map(|p| p.segment).collect();
        let listed = catalog::segment_rows(
            &snapshot
                .txn()
                .open_table(catalog::SEGMENTS)
                .ctx("open segments")?,
        )?;
        victims.retain(|id| listed.contains_key(id));
        let lost_blobs: BTreeMap<u64, BlobInfo> =
            before.damage.blobs.iter().map(|b| (b.id, *b)).collect();
        // Clients stand in for the lost blobs they can draw again (a grey page part) and name
        // the days to derive again.
        let lost_ids: BTreeSet<u64> = lost_blobs.keys().copied().collect();
        let mut grey_parts = BTreeMap::new();
        let mut stale_days = Vec::new();
        for client in self.clients() {
            let salvage = client.salvage_lost_blobs(&snapshot, &lost_ids)?;
            grey_parts.extend(salvage.replacements);
            stale_days.extend(salvage.stale_days);
        }
        // A lost photo's fields come back from its original, where that survives.
        let mut originals = BTreeMap::new();
        if !before.damage.items.is_empty() {
            let lost: BTreeSet<u64> = before.damage.items.iter().copied().collect();
            let blobs = snapshot
                .txn()
                .open_table(catalog::BLOBS)
                .ctx("open blobs")?;
            for row in blobs.iter().ctx("scan blobs")? {
                let (id, raw) = row.ctx("scan blobs")?;
                let (owner, kind) = (raw.value().4, raw.value().3);
                if !lost.contains(&owner)
                    || kind != BlobKind::Original as u8
                    || originals.contains_key(&owner)
                {
                    continue;
                }
                if let Ok(Some(bytes)) = snapshot.blob(id.value()) {
                    originals.insert(owner, bytes.to_vec());
                }
            }
        }
        drop(snapshot);
        let lost_items: Vec<u64> = before.damage.items.clone();
        let lost_versions = before.damage.versions.clone();
        let why = |info: &BlobInfo| {
            format!(
                "repair: its bytes were damaged and could not be read ({} of {} bytes)",
                info.kind.name(),
                info.len
            )
        };
        let mut hook = Salvage {
            grey_parts,
            originals,
            stand_ins: Vec::new(),
            clients: self.clients().clone(),
            lost: Vec::new(),
        };
        let options = CompactOptions {
            victims: Victims::Segments(victims.into_iter().collect()),
        };
        let now = super::now_ms();
        report.compaction = self.compact_with(
            &options,
            &mut hook,
            &mut |txn, t, _staged| {
                // What was derived from a lost item goes now; a stand-in is derived again.
                for client in self.clients() {
                    for (space, key) in client.forget_items(txn, &lost_items)? {
                        t.remove_vector(space, key)?;
                    }
                }
                for &item in &lost_items {
                    t.remove_vector(ITEM_VECTORS, item)?;
                }
                for &(item, seq) in &lost_versions {
                    t.history.remove((item, seq)).ctx("remove history")?;
                }
                // A deleted item whose last version was lost cannot be restored: the blobs it
                // kept for an undelete go with it (SPEC.md §5.6).
                for &(item, _) in &lost_versions {
                    let retired = t.items.get(item).ctx("read items")?.is_none();
                    let versions_left = t
                        .history
                        .range((item, 0)..=(item, u64::MAX))
                        .ctx("scan history")?
                        .next()
                        .is_some();
                    if retired && !versions_left {
                        t.remove_owned_blobs(item)?;
                    }
                }
                for info in lost_blobs.values() {
                    match info.kind {
                        BlobKind::Vectors => drop_vector_block(t, info.id)?,
                        // Its op stays logged and reads as having lost its note.
                        BlobKind::OpNote => {}
                        _ => {
                            if let Some(owner) = info.owner {
                                t.record_dropped_blob(
                                    owner,
                                    info.id,
                                    (info.kind, info.len),
                                    now,
                                    &why(info),
                                )?;
                            }
                        }
                    }
                }
                for day in &stale_days {
                    t.stale_pages
                        .insert((day.as_str(), 0), 0)
                        .ctx("write stale_pages")?;
                }
                Ok(true)
            },
            progress,
        )?;
        report.stand_ins = hook.stand_ins;
        report.items_lost = hook.lost;
        let after = self.check()?;
        report.remaining = after.problems.len();
        Ok(report)
    }
}

/// Removes a vector block that cannot be read: its keys (their vectors are lost), its row and
/// its blob row.
fn drop_vector_block(t: &mut super::write::Tables<'_>, block: u64) -> Result<()> {
    let mut spaces = Vec::new();
    for row in t.vector_blocks.iter().ctx("scan vector_blocks")? {
        let (key, _) = row.ctx("scan vector_blocks")?;
        let (space, id) = key.value();
        if id == block {
            spaces.push(space.to_owned());
        }
    }
    for space in spaces {
        t.vector_keys(&space)?
            .retain(|_, (at_block, _)| at_block != block)
            .ctx("remove vector keys")?;
        t.vector_blocks
            .remove((space.as_str(), block))
            .ctx("remove vector_blocks")?;
    }
    t.remove_blob(block)?;
    Ok(())
}
