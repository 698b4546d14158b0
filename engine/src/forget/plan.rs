//! Planning a forgetting run ([`Store::plan_forget`]): what a policy does to the store as of a
//! day, computed from one snapshot and written nowhere. Every page gets its new stage, quality
//! and scale, and its changed parts are re-encoded in memory (a worker per core, fed through a
//! channel, progress reported); the plan also lists the photo originals to drop, the item
//! vectors to re-quantize, the (item, node) incidences to fade and the bytes all of that saves.
//!
//! A dry run is a plan rendered as its report; [`Store::apply_forget`] commits a plan in one
//! compaction, refusing it once the store has moved on from the plan's snapshot.

use crate::error::StoreError;
use crate::handle::{Snapshot, Store};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use memdb_formats::item::ItemRecord;
use memdb_vectors::Precision;

use super::{ForgetReport, OriginalDrop, Policy, StageReport, legible};
use crate::error::Result;
use crate::scrapbook::{PageLayout, reencode_jpeg};
use memdb_store::pages::PageRow;
use memdb_store::{BlobKind, ITEM_VECTORS};

/// A page's forgetting stage (index into the policy's stages), JPEG quality and scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageStep {
    /// The stage.
    pub stage: u8,
    /// JPEG quality of its parts.
    pub quality: u8,
    /// Scale as a fraction of the page's size at composition.
    pub scale: f32,
}

impl PageStep {
    fn of(row: &PageRow) -> PageStep {
        PageStep {
            stage: row.stage,
            quality: row.quality,
            scale: row.scale(),
        }
    }
}

/// One page a plan changes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedPage {
    /// The page's day, `YYYY-MM-DD`.
    pub day: String,
    /// Its stage, quality and scale now.
    pub from: PageStep,
    /// What the plan gives it.
    pub to: PageStep,
    /// Bytes of its parts now.
    pub bytes_before: u64,
    /// Bytes of its parts once applied (equal when no pixel changes).
    pub bytes_after: u64,
}

/// What forgetting by a policy as of a day does to the store, computed from one snapshot by
/// [`Store::plan_forget`] and committed by [`Store::apply_forget`]. It holds the re-encoded
/// parts, so applying it re-encodes nothing.
pub struct ForgetPlan {
    /// The plan as a dry run reports it.
    pub(super) report: ForgetReport,
    pub(super) pages: Vec<PlannedPage>,
    /// Each changed page's row: day, as planned from, as it becomes.
    pub(super) rows: Vec<(String, PageRow, PageRow)>,
    /// New bytes of re-encoded parts, by blob id.
    pub(super) replace: HashMap<u64, Vec<u8>>,
    pub(super) writes: PlannedWrites,
}

/// What a plan writes besides its pages' parts and rows, decided before any page is
/// re-encoded.
pub(super) struct PlannedWrites {
    /// The op sequence number of the snapshot the plan was made from.
    pub(super) op_seq: u64,
    /// Originals to drop, by blob id.
    pub(super) drop_blobs: BTreeSet<u64>,
    /// Item → nodes no longer legible on its page.
    pub(super) lost: BTreeMap<u64, BTreeSet<u64>>,
    /// Item → the precision its vector is re-quantized to.
    pub(super) quantize: BTreeMap<u64, Precision>,
    /// Segments the compaction rewrites.
    pub(super) victims: BTreeSet<u64>,
}

impl std::fmt::Debug for ForgetPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForgetPlan")
            .field("report", &self.report)
            .field("op_seq", &self.writes.op_seq)
            .field("pages", &self.pages)
            .field("quantize", &self.writes.quantize)
            .field("lost", &self.writes.lost)
            .field("victims", &self.writes.victims)
            .finish_non_exhaustive()
    }
}

impl ForgetPlan {
    /// The plan as a dry run reports it: per stage, pages changed and their bytes before and
    /// after, originals dropped, nodes faded, vectors re-quantized.
    pub fn report(&self) -> &ForgetReport {
        &self.report
    }

    /// The dry run's report.
    pub fn into_report(self) -> ForgetReport {
        self.report
    }

    /// The pages whose stage, quality or scale changes, in day order.
    pub fn pages(&self) -> &[PlannedPage] {
        &self.pages
    }

    /// The photo originals the plan drops (applying needs consent), in day order.
    pub fn originals(&self) -> &[OriginalDrop] {
        &self.report.originals
    }

    /// Item → the precision its vector is re-quantized to.
    pub fn quantize(&self) -> &BTreeMap<u64, Precision> {
        &self.writes.quantize
    }

    /// Item → the graph nodes its page no longer shows legibly, which fade.
    pub fn nodes_to_fade(&self) -> &BTreeMap<u64, BTreeSet<u64>> {
        &self.writes.lost
    }

    /// Bytes of pages, originals and item vectors the plan saves.
    pub fn bytes_saved(&self) -> u64 {
        self.report.bytes_saved()
    }

    /// The op sequence number of the snapshot the plan was made from: a store whose sequence
    /// has moved on refuses the plan.
    pub fn op_seq(&self) -> u64 {
        self.writes.op_seq
    }
}

/// A plan before any page is re-encoded: where consent is asked for.
pub(super) struct Decision {
    report: ForgetReport,
    snapshot: Snapshot,
    /// Each changed page: stage index, day, row now, new row.
    changes: Vec<(usize, String, PageRow, PageRow)>,
    writes: PlannedWrites,
}

impl Decision {
    /// The originals the plan drops.
    pub(super) fn originals(&self) -> &[OriginalDrop] {
        &self.report.originals
    }
}

impl Store {
    /// Plans forgetting by `policy` as of `as_of` (ages are counted in days from each page's
    /// day to it) from a snapshot, writing nothing: the pages already composed get their new
    /// stage, and their changed parts are re-encoded in memory, `progress` called with (pages
    /// re-encoded, pages to re-encode). Apply the plan with [`Store::apply_forget`].
    pub fn plan_forget(
        &self,
        policy: &Policy,
        as_of: jiff::civil::Date,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ForgetPlan> {
        self.decide_forget(policy, as_of)?.reencode(progress)
    }

    /// Decides every page's new stage, the originals to drop, the vectors to re-quantize and
    /// the nodes to fade.
    pub(super) fn decide_forget(
        &self,
        policy: &Policy,
        as_of: jiff::civil::Date,
    ) -> Result<Decision> {
        policy.validate()?;
        let store_bytes = self.stats()?.total_bytes();
        let mut report = ForgetReport {
            policy: policy.name.clone(),
            as_of: as_of.to_string(),
            dry_run: true,
            stages: policy
                .stages
                .iter()
                .map(|s| StageReport {
                    name: s.name.clone(),
                    ..StageReport::default()
                })
                .collect(),
            store_bytes_before: store_bytes,
            store_bytes_after: store_bytes,
            ..ForgetReport::default()
        };
        let snapshot = self.snapshot()?;
        let op_seq = snapshot.op_seq()?;
        let rows = snapshot.page_rows()?;
        let item_vectors = snapshot.vectors(ITEM_VECTORS)?;
        let precisions = item_vectors
            .as_ref()
            .map(|v| v.precisions())
            .unwrap_or_default();
        let dim = item_vectors.as_ref().map_or(0, |v| v.dim() as u64);
        let mut quantize: BTreeMap<u64, Precision> = BTreeMap::new();

        let mut changes = Vec::new();
        let mut drop_blobs: BTreeSet<u64> = BTreeSet::new();
        let mut lost: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        for (day, row) in &rows {
            let date: jiff::civil::Date = day
                .parse()
                .map_err(|e| StoreError::bad_row("pages", day, format!("not a day: {e}")))?;
            let age = (as_of - date).get_days().into();
            let target = policy.stage_for(age).max(usize::from(row.stage));
            let target = target.min(policy.stages.len() - 1);
            let rule = &policy.stages[target];
            let new = PageRow {
                stage: target as u8,
                quality: row.quality.min(rule.quality),
                scale_milli: row.scale_milli.min((rule.scale * 1000.0).round() as u16),
                parts: row.parts.clone(),
                layout: row.layout.clone(),
            };
            let stage = &mut report.stages[target];
            stage.pages += 1;
            let layout = PageLayout::decode(&row.layout)
                .map_err(|e| StoreError::bad_row("pages", day, format!("layout: {e}")))?;
            if !rule.keep_originals {
                for item in layout.items() {
                    let Some(record) = snapshot.get(item)? else {
                        continue;
                    };
                    let shown = (rule, day.as_str());
                    drop_originals(&snapshot, &record, shown, stage, &mut drop_blobs)?
                        .into_iter()
                        .for_each(|drop| report.originals.push(drop));
                }
            }
            for item in layout.items() {
                quantize_vector(item, rule, stage, (&precisions, dim), &mut quantize);
            }
            if new == *row {
                continue;
            }
            stage.pages_changed += 1;
            for block in &layout.blocks {
                for &(node, px) in &block.nodes {
                    if legible(px, row.scale(), row.quality)
                        && !legible(px, new.scale(), new.quality)
                    {
                        lost.entry(block.item).or_default().insert(node);
                        stage.nodes_faded += 1;
                    }
                }
            }
            changes.push((target, day.clone(), row.clone(), new));
        }

        // Undated items are on no page: they age from the day memdb stored them (their
        // record's ingest time, UTC), so their originals are not kept forever. The dry run
        // names each with that day.
        for item in snapshot.undated_ids()? {
            let Some(record) = snapshot.get(item)? else {
                continue;
            };
            let Ok(stored) = jiff::Timestamp::from_millisecond(record.ingest_time_ms) else {
                continue;
            };
            let stored = stored.to_zoned(jiff::tz::TimeZone::UTC).date();
            let age = (as_of - stored).get_days().into();
            let target = policy.stage_for(age).min(policy.stages.len() - 1);
            let rule = &policy.stages[target];
            let stage = &mut report.stages[target];
            if !rule.keep_originals {
                let shown = format!("undated, stored {stored}");
                drop_originals(&snapshot, &record, (rule, &shown), stage, &mut drop_blobs)?
                    .into_iter()
                    .for_each(|drop| report.originals.push(drop));
            }
            quantize_vector(item, rule, stage, (&precisions, dim), &mut quantize);
        }

        let mut victims = BTreeSet::new();
        for &blob in &drop_blobs {
            victims.extend(snapshot.blob_segment(blob)?);
        }
        if !quantize.is_empty()
            && let Some(vectors) = &item_vectors
        {
            // The space is rewritten; its old blocks' segments are compacted in the same run
            // so their bytes are freed now, not at some later compaction.
            for block in vectors.block_ids() {
                victims.extend(snapshot.blob_segment(block)?);
            }
        }
        drop(item_vectors);
        Ok(Decision {
            report,
            snapshot,
            changes,
            writes: PlannedWrites {
                op_seq,
                drop_blobs,
                lost,
                quantize,
                victims,
            },
        })
    }
}

impl Decision {
    /// Re-encodes the changed pages' parts and counts their bytes: the plan.
    pub(super) fn reencode(self, progress: &mut dyn FnMut(u64, u64)) -> Result<ForgetPlan> {
        let Decision {
            mut report,
            snapshot,
            changes,
            mut writes,
        } = self;
        let total = changes.iter().filter(|c| !c.2.parts.is_empty()).count() as u64;
        let mut jobs = Vec::new();
        for (target, day, old, new) in changes {
            let mut parts = Vec::new();
            if old.quality != new.quality || old.scale_milli != new.scale_milli {
                for id in &old.parts {
                    let blob = snapshot.blob(*id)?.ok_or_else(|| {
                        StoreError::bad_row("pages", &day, format!("part {id} is missing"))
                    })?;
                    parts.push(blob.to_vec());
                }
            }
            jobs.push((
                target,
                PageChange {
                    day,
                    old,
                    new,
                    parts,
                },
            ));
        }
        let done = reencode_all(jobs, progress, total)?;
        let mut replace = HashMap::new();
        let mut pages = Vec::new();
        let mut rows = Vec::new();
        for (target, change) in done {
            let (mut bytes_before, mut bytes_after) = (0, 0);
            for (id, bytes) in change.old.parts.iter().zip(&change.parts) {
                bytes_before += snapshot.blob_info(*id)?.map_or(0, |i| i.len);
                bytes_after += bytes.len() as u64;
                writes.victims.extend(snapshot.blob_segment(*id)?);
                replace.insert(*id, bytes.clone());
            }
            if change.parts.is_empty() {
                // Nothing re-encoded (same pixels): count the parts as they are.
                for id in &change.old.parts {
                    let len = snapshot.blob_info(*id)?.map_or(0, |i| i.len);
                    bytes_before += len;
                    bytes_after += len;
                }
            }
            let stage = &mut report.stages[target];
            stage.page_bytes_before += bytes_before;
            stage.page_bytes_after += bytes_after;
            pages.push(PlannedPage {
                day: change.day.clone(),
                from: PageStep::of(&change.old),
                to: PageStep::of(&change.new),
                bytes_before,
                bytes_after,
            });
            rows.push((change.day, change.old, change.new));
        }
        Ok(ForgetPlan {
            report,
            pages,
            rows,
            replace,
            writes,
        })
    }
}

/// One page's planned change.
struct PageChange {
    day: String,
    old: PageRow,
    new: PageRow,
    /// New bytes per part (empty for a page rendered on demand).
    parts: Vec<Vec<u8>>,
}

/// The blob ids of an item's photo originals.
/// Marks `record`'s originals for dropping by `rule` (the stage its page, or its stored day,
/// `shown`, falls in), counts them in `stage`, and returns what the report lists of each.
fn drop_originals(
    snapshot: &Snapshot,
    record: &ItemRecord,
    (rule, shown): (&super::policy::StageRule, &str),
    stage: &mut StageReport,
    drop_blobs: &mut BTreeSet<u64>,
) -> Result<Vec<OriginalDrop>> {
    let mut out = Vec::new();
    for blob in originals_of(snapshot, record)? {
        if let Some(info) = snapshot.blob_info(blob)?
            && drop_blobs.insert(blob)
        {
            stage.originals_dropped += 1;
            stage.original_bytes_dropped += info.len;
            out.push(OriginalDrop {
                item: record.id,
                external_id: record.fields.external_id.clone(),
                blob,
                bytes: info.len,
                day: shown.to_owned(),
                stage: rule.name.clone(),
            });
        }
    }
    Ok(out)
}

/// Marks `item`'s vector for re-quantizing at `rule`'s precision when that is coarser than
/// what it has now (`precisions`, of rows of `dim` values), counted in `stage`.
fn quantize_vector(
    item: u64,
    rule: &super::policy::StageRule,
    stage: &mut StageReport,
    (precisions, dim): (&HashMap<u64, Precision>, u64),
    quantize: &mut BTreeMap<u64, Precision>,
) {
    if let Some(&now) = precisions.get(&item)
        && rule.vectors.bits_per_value() < now.bits_per_value()
        && quantize.insert(item, rule.vectors).is_none()
    {
        stage.vectors_quantized += 1;
        stage.vector_bytes_saved +=
            (now.row_bytes(dim as usize) - rule.vectors.row_bytes(dim as usize)) as u64;
    }
}

fn originals_of(snapshot: &Snapshot, record: &ItemRecord) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for &blob in &record.blobs {
        if snapshot
            .blob_info(blob)?
            .is_some_and(|i| i.kind == BlobKind::Original)
        {
            out.push(blob);
        }
    }
    Ok(out)
}

/// Re-encodes a page's parts from their current pixels at the new quality and scale.
fn reencode(parts: &[Vec<u8>], old: &PageRow, new: &PageRow) -> Result<Vec<Vec<u8>>> {
    let factor = new.scale() / old.scale().max(f32::MIN_POSITIVE);
    parts
        .iter()
        .map(|bytes| reencode_jpeg(bytes, factor, new.quality))
        .collect()
}

/// Re-encodes every change's parts on worker threads; results come back in input order.
fn reencode_all(
    jobs: Vec<(usize, PageChange)>,
    progress: &mut dyn FnMut(u64, u64),
    total: u64,
) -> Result<Vec<(usize, PageChange)>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let count = jobs.len();
    let (job_tx, job_rx) = crossbeam_channel::unbounded::<(usize, usize, PageChange)>();
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<Result<(usize, usize, PageChange)>>();
    for (index, (target, change)) in jobs.into_iter().enumerate() {
        job_tx
            .send((index, target, change))
            .map_err(|_| StoreError::ThreadFailed("the re-encode queue"))?;
    }
    drop(job_tx);
    let mut out: Vec<Option<(usize, PageChange)>> = (0..count).map(|_| None).collect();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..workers {
            let (job_rx, done_tx) = (job_rx.clone(), done_tx.clone());
            scope.spawn(move || {
                for (index, target, mut change) in job_rx {
                    let result = if change.parts.is_empty() {
                        Ok((index, target, change))
                    } else {
                        reencode(&change.parts, &change.old, &change.new).map(|parts| {
                            change.parts = parts;
                            (index, target, change)
                        })
                    };
                    if done_tx.send(result).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let mut done = 0;
        for result in done_rx {
            let (index, target, change) = result?;
            if !change.old.parts.is_empty() {
                done += 1;
                progress(done, total);
            }
            out[index] = Some((target, change));
        }
        Ok(())
    })?;
    Ok(out.into_iter().flatten().collect())
}
