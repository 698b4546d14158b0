//! Optical forgetting as compaction (ScrapMem §4.3, Algorithm 2): as pages age, a policy
//! re-encodes them at lower JPEG quality and scale, drops photo originals, and fades from the
//! EM-Graph the nodes a smaller page can no longer show.
//!
//! [`Store::forget`] reads a snapshot, decides every page's new stage from its age on the
//! `as_of` day, re-encodes the changed parts in parallel (crossbeam workers, progress
//! reported), then runs one compaction whose hook swaps in the new parts and drops the
//! originals, and whose commit also writes the new page rows, the graph pruning and the item
//! vectors re-quantized to their page's stage precision: the old state or the new one, never a
//! mix, whatever the moment of a crash.
//!
//! Invariants (tested): monotone — a page's stage, quality and scale never go back up (each is
//! the minimum of what it has and what its stage asks); idempotent — a second run with the
//! same policy and day changes nothing; a dry run writes nothing.
//!
//! Legibility model: text drawn at `px` pixels at scale 1.0 is legible on a page at scale S
//! and quality Q while `px · S ≥ 9` (Q ≥ 50) or `≥ 10` (Q < 50). It is calibrated on
//! ScrapMem's Appendix B (at Q 40 and 60 % scale a page's date in body text was no longer
//! readable), not measured with an OCR engine here.

mod policy;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use memdb_formats::item::ItemRecord;
use memdb_vectors::Precision;

pub use crate::error::{OriginalDrop, PolicyError};
pub use policy::{BUILTIN_POLICIES, Policy, StageRule};

use crate::error::{Error, Result};
use crate::scrapbook::{PageLayout, PageOptions, reencode_jpeg};
use crate::store::compact::{BlobRewrite, CompactOptions, CompactionHook, Victims};
use crate::store::pages::{PageRow, replace_page_row};
use crate::store::vector_space::changes as vector_space_changes;
use crate::store::{BlobInfo, BlobKind, ITEM_VECTORS, Store};

/// Whether text drawn at `px` (scale 1.0) can still be read at `scale` and `quality`.
pub fn legible(px: u8, scale: f32, quality: u8) -> bool {
    let needed = if quality < 50 { 10.0 } else { 9.0 };
    f32::from(px) * scale >= needed
}

/// How to forget.
pub struct ForgetOptions<'a> {
    /// Report what would change without writing anything.
    pub dry_run: bool,
    /// Consent to drop photo originals where the policy's stage does not keep them. Without
    /// it, a run that would drop any fails with [`Error::OriginalsNeedConsent`] before writing
    /// anything (a dry run lists them in [`ForgetReport::originals`]).
    pub drop_originals: bool,
    /// How pages missing before forgetting are composed.
    pub pages: PageOptions,
    /// Called with (pages re-encoded, pages to re-encode).
    pub progress: &'a mut dyn FnMut(u64, u64),
}

/// What forgetting did (or, in a dry run, would do) in one stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageReport {
    /// The stage's name.
    pub name: String,
    /// Pages in the stage after the run.
    pub pages: u64,
    /// Pages that moved into the stage (re-encoded where they have pixels).
    pub pages_changed: u64,
    /// Bytes of the changed pages' parts before.
    pub page_bytes_before: u64,
    /// Bytes of the changed pages' parts after.
    pub page_bytes_after: u64,
    /// Photo originals dropped.
    pub originals_dropped: u64,
    /// Their bytes.
    pub original_bytes_dropped: u64,
    /// (item, node) incidences no longer legible.
    pub nodes_faded: u64,
    /// Item vectors re-quantized to the stage's precision.
    pub vectors_quantized: u64,
    /// Bytes their values shrink by.
    pub vector_bytes_saved: u64,
}

/// What [`Store::forget`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForgetReport {
    /// The policy's name.
    pub policy: String,
    /// The day ages were counted to.
    pub as_of: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// Pages composed first (days that had none).
    pub pages_composed: u64,
    /// Per stage, youngest first.
    pub stages: Vec<StageReport>,
    /// Every photo original dropped (or that would be), in day order.
    pub originals: Vec<OriginalDrop>,
    /// Paths pruned because they lost coherence (0 in a dry run).
    pub paths_pruned: u64,
    /// Nodes purged because no path held them any more (0 in a dry run).
    pub nodes_purged: u64,
    /// Store bytes (catalog and segments) before and after (equal in a dry run).
    pub store_bytes_before: u64,
    /// See `store_bytes_before`.
    pub store_bytes_after: u64,
}

impl ForgetReport {
    /// Bytes of pages, originals and item vectors the run saved (or would save).
    pub fn bytes_saved(&self) -> u64 {
        self.stages
            .iter()
            .map(|s| {
                s.page_bytes_before.saturating_sub(s.page_bytes_after)
                    + s.original_bytes_dropped
                    + s.vector_bytes_saved
            })
            .sum()
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

/// Re-encodes a page's parts from their current pixels at the new quality and scale.
fn reencode(parts: &[Vec<u8>], old: &PageRow, new: &PageRow) -> Result<Vec<Vec<u8>>> {
    let factor = new.scale() / old.scale().max(f32::MIN_POSITIVE);
    parts
        .iter()
        .map(|bytes| reencode_jpeg(bytes, factor, new.quality))
        .collect()
}

/// The compaction hook: new bytes for re-encoded parts, originals dropped.
struct ForgetHook {
    replace: HashMap<u64, Vec<u8>>,
    drop: BTreeSet<u64>,
}

impl CompactionHook for ForgetHook {
    fn rewrite_blob(&mut self, info: &BlobInfo, _bytes: &[u8]) -> Result<BlobRewrite> {
        if let Some(bytes) = self.replace.remove(&info.id) {
            return Ok(BlobRewrite::Replace(bytes));
        }
        Ok(if self.drop.contains(&info.id) {
            BlobRewrite::Drop
        } else {
            BlobRewrite::Keep
        })
    }
}

fn store_bytes(store: &Store) -> Result<u64> {
    Ok(store.stats()?.total_bytes())
}

impl Store {
    /// Forgets by `policy` as of `as_of` (ages are counted in days from each page's day to
    /// it). Composes missing pages first so no original is dropped before a page shows it.
    pub fn forget(
        &self,
        policy: &Policy,
        as_of: jiff::civil::Date,
        options: ForgetOptions<'_>,
    ) -> Result<ForgetReport> {
        policy.validate()?;
        let mut report = ForgetReport {
            policy: policy.name.clone(),
            as_of: as_of.to_string(),
            dry_run: options.dry_run,
            stages: policy
                .stages
                .iter()
                .map(|s| StageReport {
                    name: s.name.clone(),
                    ..StageReport::default()
                })
                .collect(),
            ..ForgetReport::default()
        };
        report.store_bytes_before = store_bytes(self)?;
        if !options.dry_run {
            let composed = self.compose_pages(options.pages, &mut |_, _| {})?;
            report.pages_composed = composed.photo_pages + composed.text_pages;
        }
        // Graph updates read, then write: none may interleave with the pruning below.
        let update_lock = self.extension::<crate::graph::UpdateLock>()?;
        let _graph = update_lock.hold()?;
        let snapshot = self.snapshot()?;
        let rows = snapshot.page_rows()?;
        let item_vectors = snapshot.vectors(ITEM_VECTORS)?;
        let precisions = item_vectors
            .as_ref()
            .map(|v| v.precisions())
            .unwrap_or_default();
        let dim = item_vectors.as_ref().map_or(0, |v| v.dim() as u64);
        let mut quantize: BTreeMap<u64, Precision> = BTreeMap::new();

        let mut changes = Vec::new();
        let mut drop_originals: BTreeSet<u64> = BTreeSet::new();
        let mut lost: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        for (day, row) in &rows {
            let date: jiff::civil::Date = day
                .parse()
                .map_err(|e| Error::Inconsistent(format!("page key `{day}`: {e}")))?;
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
                .map_err(|e| Error::Inconsistent(format!("page {day}: {e}")))?;
            if !rule.keep_originals {
                for item in layout.items() {
                    let Some(record) = snapshot.get(item)? else {
                        continue;
                    };
                    for blob in originals_of(&snapshot, &record)? {
                        if let Some(info) = snapshot.blob_info(blob)?
                            && drop_originals.insert(blob)
                        {
                            stage.originals_dropped += 1;
                            stage.original_bytes_dropped += info.len;
                            report.originals.push(OriginalDrop {
                                item,
                                external_id: record.fields.external_id.clone(),
                                blob,
                                bytes: info.len,
                                day: day.clone(),
                                stage: rule.name.clone(),
                            });
                        }
                    }
                }
            }
            for item in layout.items() {
                if let Some(&now) = precisions.get(&item)
                    && rule.vectors.bytes_per_value() < now.bytes_per_value()
                    && quantize.insert(item, rule.vectors).is_none()
                {
                    stage.vectors_quantized += 1;
                    stage.vector_bytes_saved +=
                        dim * (now.bytes_per_value() - rule.vectors.bytes_per_value()) as u64;
                }
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

        // Consent is asked for before any page is re-encoded.
        if !options.dry_run && !options.drop_originals && !report.originals.is_empty() {
            return Err(Error::OriginalsNeedConsent {
                count: report.originals.len() as u64,
                bytes: report.originals.iter().map(|o| o.bytes).sum(),
                originals: std::mem::take(&mut report.originals),
            });
        }

        // Re-encode in parallel; a worker per core, fed through a channel.
        let total = changes.iter().filter(|c| !c.2.parts.is_empty()).count() as u64;
        let mut jobs = Vec::new();
        for (target, day, old, new) in changes {
            let mut parts = Vec::new();
            if old.quality != new.quality || old.scale_milli != new.scale_milli {
                for id in &old.parts {
                    let blob = snapshot.blob(*id)?.ok_or_else(|| {
                        Error::Inconsistent(format!("page {day}: part {id} is missing"))
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
        let done = reencode_all(jobs, options.progress, total)?;
        let mut replace = HashMap::new();
        let mut victims = BTreeSet::new();
        let mut new_rows = Vec::new();
        for (target, change) in done {
            let stage = &mut report.stages[target];
            for (id, bytes) in change.old.parts.iter().zip(&change.parts) {
                let info = snapshot.blob_info(*id)?;
                stage.page_bytes_before += info.map_or(0, |i| i.len);
                stage.page_bytes_after += bytes.len() as u64;
                victims.extend(snapshot.blob_segment(*id)?);
                replace.insert(*id, bytes.clone());
            }
            if change.parts.is_empty() {
                // Nothing re-encoded (same pixels): count the parts as they are.
                for id in &change.old.parts {
                    let len = snapshot.blob_info(*id)?.map_or(0, |i| i.len);
                    stage.page_bytes_before += len;
                    stage.page_bytes_after += len;
                }
            }
            new_rows.push((change.day, change.old, change.new));
        }
        for &blob in &drop_originals {
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
        drop(snapshot);
        if options.dry_run {
            report.store_bytes_after = report.store_bytes_before;
            return Ok(report);
        }
        let why = |stage: &str| {
            format!(
                "forgetting: policy `{}` as of {}, stage `{stage}`",
                report.policy, report.as_of
            )
        };
        let dropped: Vec<(OriginalDrop, String)> = report
            .originals
            .iter()
            .map(|o| (o.clone(), why(&o.stage)))
            .collect();

        let mut hook = ForgetHook {
            replace,
            drop: drop_originals,
        };
        let compact = CompactOptions {
            victims: Victims::Segments(victims.into_iter().collect()),
        };
        let mut faded = crate::graph::Faded::default();
        self.compact_with(
            &compact,
            &mut hook,
            &mut |txn, tables, staged| {
                for (day, old, new) in &new_rows {
                    // The row must be the one the plan was made from: pages are only written by
                    // the writer, which this compaction holds, so a mismatch is a bug, not a race.
                    let was = replace_page_row(txn, day, Some(new))?;
                    if was != old.parts {
                        return Err(Error::Inconsistent(format!(
                            "page {day} changed while it was being forgotten"
                        )));
                    }
                }
                let now = crate::store::now_ms();
                for (drop, why) in &dropped {
                    tables.record_dropped_blob(
                        drop.item,
                        drop.blob,
                        (BlobKind::Original, drop.bytes),
                        now,
                        why,
                    )?;
                }
                faded = crate::graph::fade_nodes(txn, &lost)?;
                for &node in &faded.nodes_purged {
                    tables.remove_vector(crate::graph::NODE_VECTORS, node)?;
                }
                vector_space_changes(staged, ITEM_VECTORS).quantize = quantize.clone();
                Ok(!new_rows.is_empty() || faded.incidences > 0 || !dropped.is_empty())
            },
            &mut |_, _| {},
        )?;
        report.paths_pruned = faded.paths_pruned;
        report.nodes_purged = faded.nodes_purged.len() as u64;
        report.store_bytes_after = store_bytes(self)?;
        Ok(report)
    }
}

/// The blob ids of an item's photo originals.
fn originals_of(snapshot: &crate::store::Snapshot, record: &ItemRecord) -> Result<Vec<u64>> {
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
            .map_err(|_| Error::Inconsistent("re-encode queue closed".into()))?;
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
