//! Optical forgetting as compaction (ScrapMem §4.3, Algorithm 2): as pages age, a policy
//! re-encodes them at lower JPEG quality and scale, drops photo originals, and fades from the
//! EM-Graph's items the nodes a smaller page can no longer show (their day's path keeps them as
//! its gist: see `graph::remove`).
//!
//! Plan, then apply. [`Store::plan_forget`] reads a snapshot, decides every page's new stage
//! from its age on the `as_of` day and re-encodes the changed parts in parallel (crossbeam
//! workers, progress reported), writing nothing: the [`ForgetPlan`], which a dry run reports.
//! [`Store::apply_forget`] commits a plan in one compaction whose hook swaps in the new parts
//! and drops the originals (only with consent), and whose commit also writes the new page
//! rows, the graph pruning and the item vectors re-quantized to their page's stage precision:
//! the old state or the new one, never a mix, whatever the moment of a crash. A plan made
//! before the store changed (an item written, a page changed) is refused as stale.
//! [`Store::forget`] composes missing pages, plans and applies.
//!
//! Invariants (tested): monotone — a page's stage, quality and scale never go back up (each is
//! the minimum of what it has and what its stage asks); idempotent — a second run with the
//! same policy and day changes nothing; a dry run writes nothing.
//!
//! Legibility model: text drawn at `px` pixels at scale 1.0 is legible on a page at scale S
//! and quality Q while `px · S ≥ 9` (Q ≥ 50) or `≥ 10` (Q < 50). It is calibrated on
//! ScrapMem's Appendix B (at Q 40 and 60 % scale a page's date in body text was no longer
//! readable), not measured with an OCR engine here.

mod plan;
mod policy;

use crate::handle::Store;
use std::collections::{BTreeSet, HashMap};

use redb::ReadableTable;

pub use crate::error::{OriginalDrop, PolicyError};
use plan::PlannedWrites;
pub use plan::{ForgetPlan, PageStep, PlannedPage};
pub use policy::{BUILTIN_POLICIES, Policy, StageRule};

use crate::error::{Error, Result};
use crate::scrapbook::PageOptions;
use memdb_store::CatalogResult;
use memdb_store::catalog::PAGES;
use memdb_store::compact::{BlobRewrite, CompactOptions, CompactionHook, Victims};
use memdb_store::pages::{PageRow, replace_page_row};
use memdb_store::vector_space::changes as vector_space_changes;
use memdb_store::{BlobInfo, BlobKind, ITEM_VECTORS};

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

/// The compaction hook: new bytes for re-encoded parts, originals dropped.
struct ForgetHook {
    replace: HashMap<u64, Vec<u8>>,
    drop: BTreeSet<u64>,
}

impl CompactionHook for ForgetHook {
    fn rewrite_blob(&mut self, info: &BlobInfo, _bytes: &[u8]) -> memdb_store::Result<BlobRewrite> {
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

/// How often [`Store::forget`] plans again when a write lands between its plan and its apply.
const FORGET_ATTEMPTS: usize = 3;

/// The refusal of a run that would drop `originals` without consent.
fn consent_needed(originals: Vec<OriginalDrop>) -> Error {
    Error::OriginalsNeedConsent {
        count: originals.len() as u64,
        bytes: originals.iter().map(|o| o.bytes).sum(),
        originals,
    }
}

/// Refuses a plan made at op sequence `planned` when the store is at `now`: items were
/// written since.
fn check_op_seq(planned: u64, now: u64) -> Result<()> {
    if now != planned {
        return Err(Error::StalePlan {
            reason: format!("items were written since (op sequence {planned}, now {now})"),
        });
    }
    Ok(())
}

/// Refuses a plan made at op sequence `op_seq` unless the store is still at its snapshot: the
/// same sequence number `now` (no item written since) and every page it changes, `rows`,
/// still as it was planned from. Run inside
/// the forgetting commit, under the writer lock, this is exact.
fn check_fresh(
    txn: &redb::WriteTransaction,
    op_seq: u64,
    now: u64,
    rows: &[(String, PageRow, PageRow)],
) -> Result<()> {
    check_op_seq(op_seq, now)?;
    let pages = txn.open_table(PAGES).ctx("open pages")?;
    for (day, old, _) in rows {
        let current = pages
            .get(day.as_str())
            .ctx("read pages")?
            .map(|raw| PageRow::decode(day, raw.value()))
            .transpose()?;
        if current.as_ref() != Some(old) {
            return Err(Error::StalePlan {
                reason: format!("page {day} changed since"),
            });
        }
    }
    Ok(())
}

impl Store {
    /// Applies `plan` in one compaction: re-encoded parts swapped in, originals dropped (only
    /// with `drop_originals`, the caller's consent; [`Error::OriginalsNeedConsent`] otherwise),
    /// page rows, graph fading and re-quantized item vectors in the same commit. A plan the
    /// store has moved on from (an item written or a page changed since its snapshot) is
    /// refused with [`Error::StalePlan`] and nothing is written: plan again.
    pub fn apply_forget(&self, plan: ForgetPlan, drop_originals: bool) -> Result<ForgetReport> {
        // Graph updates read, then write: none may interleave with the pruning below.
        let update_lock = self.extension::<crate::graph::UpdateLock>()?;
        let _graph = update_lock.hold()?;
        self.apply_forget_locked(plan, drop_originals)
    }

    /// [`apply_forget`](Self::apply_forget), the graph update lock held.
    fn apply_forget_locked(&self, plan: ForgetPlan, drop_originals: bool) -> Result<ForgetReport> {
        let ForgetPlan {
            mut report,
            rows,
            replace,
            writes:
                PlannedWrites {
                    op_seq,
                    drop_blobs,
                    lost,
                    quantize,
                    victims,
                },
            ..
        } = plan;
        if !drop_originals && !report.originals.is_empty() {
            return Err(consent_needed(report.originals));
        }
        // Refused early when it is already stale; the commit checks again, exactly.
        check_op_seq(op_seq, self.snapshot()?.op_seq()?)?;
        report.dry_run = false;
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
            drop: drop_blobs,
        };
        let compact = CompactOptions {
            victims: Victims::Segments(victims.into_iter().collect()),
        };
        self.compact_with(
            &compact,
            &mut hook,
            &mut |txn, tables, staged| {
                check_fresh(txn, op_seq, tables.op_seq()?, &rows)?;
                for (day, _, new) in &rows {
                    replace_page_row(txn, day, Some(new))?;
                }
                let now = memdb_store::now_ms();
                for (drop, why) in &dropped {
                    tables.record_dropped_blob(
                        drop.item,
                        drop.blob,
                        (BlobKind::Original, drop.bytes),
                        now,
                        why,
                    )?;
                }
                let faded = crate::graph::fade_nodes(txn, &lost)?;
                vector_space_changes(staged, ITEM_VECTORS).quantize = quantize.clone();
                Ok(!rows.is_empty() || faded > 0 || !dropped.is_empty())
            },
            &mut |_, _| {},
        )?;
        report.store_bytes_after = store_bytes(self)?;
        Ok(report)
    }

    /// Forgets by `policy` as of `as_of` (ages are counted in days from each page's day to
    /// it): composes missing pages first so no original is dropped before a page shows it,
    /// then plans ([`Store::plan_forget`]) and, unless `options.dry_run`, applies the plan
    /// ([`Store::apply_forget`]). A dry run reports the plan. Consent to drop originals is
    /// asked for before any page is re-encoded; a plan a concurrent write made stale is made
    /// again.
    pub fn forget(
        &self,
        policy: &Policy,
        as_of: jiff::civil::Date,
        options: ForgetOptions<'_>,
    ) -> Result<ForgetReport> {
        policy.validate()?;
        let store_bytes_before = store_bytes(self)?;
        let mut pages_composed = 0;
        if !options.dry_run {
            let composed = self.compose_pages(options.pages, &mut |_, _| {})?;
            pages_composed = composed.photo_pages + composed.text_pages;
        }
        let update_lock = self.extension::<crate::graph::UpdateLock>()?;
        let _graph = update_lock.hold()?;
        let mut attempt = 1;
        let mut report = loop {
            let decision = self.decide_forget(policy, as_of)?;
            if !options.dry_run && !options.drop_originals && !decision.originals().is_empty() {
                return Err(consent_needed(decision.originals().to_vec()));
            }
            let mut plan = decision.reencode(options.progress)?;
            plan.report.store_bytes_before = store_bytes_before;
            if options.dry_run {
                plan.report.store_bytes_after = store_bytes_before;
                break plan.into_report();
            }
            match self.apply_forget_locked(plan, options.drop_originals) {
                Err(Error::StalePlan { .. }) if attempt < FORGET_ATTEMPTS => attempt += 1,
                result => break result?,
            }
        };
        report.pages_composed = pages_composed;
        Ok(report)
    }
}
