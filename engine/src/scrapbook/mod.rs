//! Scrapbook pages (ScrapMem §4.1): one page per local day composing that day's photos and the
//! text of its records, the raw evidence that forgetting later re-encodes at lower quality and
//! scale.
//!
//! A page is a row of the `pages` table (SPEC.md §5.4): its forgetting stage, JPEG quality and
//! scale, its layout, and the blob ids of its JPEG parts. Days with photos store pixels; a
//! text-only day stores only its layout and is rendered on demand from its records at the
//! page's quality and scale (the records are kept as text anyway, so pixels would store the
//! same words twice — the footprint bench measures what they would cost).
//!
//! Composing, pixels and JPEG, and text are crate `memdb-render`'s; here: a day's items as the
//! composer sees them, drawing and storing pages, and the page rows. The
//! layout's bytes are a format of their own, [`memdb_formats::page_layout`], whose types
//! ([`PageLayout`], [`Block`], [`BlockKind`]) this module re-exports.
//!
//! Invariants: a page at stage 0 (Recent) draws every photo with its long side at
//! `min(its own, PHOTO_LONG_SIDE)` and no text below `BODY_PX`; the layout lists every item
//! on the page and the size each of its graph nodes is drawn at; a page's parts and row
//! change in one commit.

use crate::error::StoreError;
use crate::handle::{Snapshot, Store};
use std::collections::{BTreeMap, BTreeSet};

use redb::ReadableTable;

use crate::error::Result;
use crate::graph::NodeKind;
pub use memdb_formats::page_layout::{Block, BlockKind, PageLayout};
pub(crate) use memdb_render::Canvas;
pub use memdb_render::{
    BODY_PX, HEADLINE_PX, MAX_PAGE_WIDTH, PART_HEIGHT, PHOTO_LONG_SIDE, PageOptions,
};
use memdb_render::{DayItem, Typeface};
use memdb_store::BlobKind;
use memdb_store::CatalogResult;
use memdb_store::pages::{PageRow, open_pages, replace_page_row};

/// A page as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Its local day, `YYYY-MM-DD`.
    pub day: String,
    /// Forgetting stage: 0 Recent (as composed), 1 Mid, 2 Old.
    pub stage: u8,
    /// JPEG quality of its pixels (or of its rendering, for a text-only page).
    pub quality: u8,
    /// Scale of its pixels relative to the composed page (1.0 at composition).
    pub scale: f64,
    /// Blob ids of its JPEG parts, top to bottom; empty for a page rendered on demand.
    pub parts: Vec<u64>,
    /// Bytes its parts take.
    pub stored_bytes: u64,
    /// Where everything sits, at scale 1.0.
    pub layout: PageLayout,
}

/// A change to a day's page, staged in a batch and applied inside its commit.
pub(crate) enum PageWrite {
    /// The day's page: its row, with `parts` stored as new page blobs replacing the old ones;
    /// `handled` are the day's stale marks (item, op sequence) the page accounts for.
    Put {
        day: String,
        row: PageRow,
        parts: Vec<Vec<u8>>,
        handled: Vec<(u64, u64)>,
    },
    /// Removes a day's page, its blobs and its stale marks.
    Delete { day: String },
    /// Removes stale marks of a day that need no page change (a forgotten page is kept).
    ClearStale {
        day: String,
        handled: Vec<(u64, u64)>,
    },
}

impl memdb_store::derived::DerivedWrite for PageWrite {
    fn apply(
        self: Box<Self>,
        commit: &mut memdb_store::derived::DerivedCommit<'_, '_>,
    ) -> memdb_store::Result<()> {
        match *self {
            PageWrite::Put {
                day,
                mut row,
                parts,
                handled,
            } => {
                commit.clear_stale_day(&day, Some(&handled))?;
                row.parts = parts
                    .into_iter()
                    .map(|bytes| commit.add_blob(BlobKind::Page, bytes))
                    .collect::<memdb_store::Result<_>>()?;
                for old in replace_page_row(commit.txn(), &day, Some(&row))? {
                    commit.remove_blob(old)?;
                }
            }
            PageWrite::Delete { day } => {
                commit.clear_stale_day(&day, None)?;
                for old in replace_page_row(commit.txn(), &day, None)? {
                    commit.remove_blob(old)?;
                }
            }
            PageWrite::ClearStale { day, handled } => {
                commit.clear_stale_day(&day, Some(&handled))?;
            }
        }
        Ok(())
    }
}

/// The pages as a client of the store: a page part lost to damage is stood in for by a grey
/// part of its size, and a Recent page with a lost part is made again from the originals.
pub(crate) struct PageRows;

impl memdb_store::derived::DerivedData for PageRows {
    fn salvage_lost_blobs(
        &self,
        snapshot: &memdb_store::Snapshot,
        lost: &BTreeSet<u64>,
    ) -> memdb_store::Result<memdb_store::derived::Salvage> {
        let mut salvage = memdb_store::derived::Salvage::default();
        for (day, row) in snapshot.page_rows()? {
            for (index, part) in row.parts.iter().enumerate() {
                if lost.contains(part) {
                    salvage.replacements.insert(*part, lost_part(&row, index)?);
                    if row.stage == 0 {
                        salvage.stale_days.push(day.clone());
                    }
                }
            }
        }
        Ok(salvage)
    }
}

impl Snapshot {
    fn page_from_row(&self, day: String, row: PageRow) -> Result<Page> {
        let mut stored_bytes = 0;
        for &part in &row.parts {
            stored_bytes += self.blob_info(part)?.map_or(0, |i| i.len);
        }
        Ok(Page {
            layout: PageLayout::decode(&row.layout)
                .map_err(|e| StoreError::bad_row("pages", &day, e))?,
            scale: f64::from(row.scale_milli) / 1000.0,
            day,
            stage: row.stage,
            quality: row.quality,
            parts: row.parts,
            stored_bytes,
        })
    }

    /// The page of a local day (`YYYY-MM-DD`), if one was composed.
    pub fn page(&self, day: &str) -> Result<Option<Page>> {
        let Some(table) = open_pages(self)? else {
            return Ok(None);
        };
        let row = table
            .get(day)
            .ctx("read pages")?
            .map(|raw| PageRow::decode(day, raw.value()))
            .transpose()?;
        row.map(|row| self.page_from_row(day.to_owned(), row))
            .transpose()
    }

    /// Every page, in day order.
    pub fn pages(&self) -> Result<Vec<Page>> {
        self.page_rows()?
            .into_iter()
            .map(|(day, row)| self.page_from_row(day, row))
            .collect()
    }

    /// Every dated item by its local day (undated items are on no page).
    pub(crate) fn items_by_day(
        &self,
    ) -> Result<BTreeMap<String, Vec<memdb_formats::item::ItemRecord>>> {
        let mut days: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for record in self.scan(&memdb_store::ScanFilter::default())? {
            if let Some(day) = record.fields.time.local_date() {
                days.entry(day.to_string()).or_default().push(record);
            }
        }
        Ok(days)
    }

    /// The stale page marks (SPEC.md §5.4): day → (item, op sequence) of items changed since
    /// their page was composed.
    pub(crate) fn stale_pages(&self) -> Result<BTreeMap<String, Vec<(u64, u64)>>> {
        let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        let Some(table) =
            memdb_store::catalog::open_optional(self.txn(), memdb_store::catalog::STALE_PAGES)?
        else {
            return Ok(out);
        };
        for row in table.iter().ctx("scan stale_pages")? {
            let (key, seq) = row.ctx("scan stale_pages")?;
            let (day, item) = key.value();
            out.entry(day.to_owned())
                .or_default()
                .push((item, seq.value()));
        }
        Ok(out)
    }

    /// The composer's view of a day's items: graph nodes with their phrases, and for photos
    /// the blob id of the original (read only when the day is composed).
    fn day_items(
        &self,
        records: &[memdb_formats::item::ItemRecord],
    ) -> Result<Vec<(DayItem, Option<u64>)>> {
        let graph = self.graph();
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            let mut nodes = Vec::new();
            if let Some((_, ids)) = graph.item(record.id)? {
                for id in ids {
                    if let Some(node) = graph.node(id)? {
                        let mut phrases = vec![node.phrase];
                        phrases.extend(node.aliases);
                        nodes.push((id, phrases, is_salient_kind(node.kind)));
                    }
                }
            }
            let original = self.original_of(record)?;
            out.push((
                DayItem {
                    id: record.id,
                    fields: record.fields.clone(),
                    photo: None,
                    nodes,
                },
                original,
            ));
        }
        Ok(out)
    }
}

/// A page as JPEG parts, top to bottom ([`Store::render_page`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderedPage {
    /// The parts.
    pub parts: Vec<Vec<u8>>,
    /// Parts whose stored bytes could not be read (index, why): shown as grey parts of their
    /// size.
    pub damaged: Vec<(usize, String)>,
}

/// What [`Store::compose_pages`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageReport {
    /// Days with items.
    pub days: u64,
    /// Pages composed (new or recomposed) with photos, stored as pixels.
    pub photo_pages: u64,
    /// Pages composed for text-only days (layout only; rendered on demand).
    pub text_pages: u64,
    /// Pages already up to date.
    pub unchanged: u64,
    /// Forgotten pages whose day changed; they are not recomposed (see SPEC.md §5.4).
    pub kept_forgotten: u64,
    /// Forgotten pages from which deleted items were blanked out.
    pub blanked: u64,
    /// Pages of days that no longer have items, removed.
    pub removed: u64,
    /// Bytes of the JPEG parts written.
    pub bytes_written: u64,
    /// Photos that could not be drawn (their original does not decode): item id and reason.
    pub photo_errors: Vec<(u64, String)>,
    /// Photos drawn as far as their damaged original decodes (the rest grey): item id and
    /// what failed.
    pub photos_partial: Vec<(u64, String)>,
}

/// One composed page, ready to commit.
struct Composed {
    day: String,
    row: PageRow,
    parts: Vec<Vec<u8>>,
    photo_errors: Vec<(u64, String)>,
    photos_partial: Vec<(u64, String)>,
    /// The day's stale marks the page accounts for.
    handled: Vec<(u64, u64)>,
}

/// Decodes a day's photos, plans and paints its page, and encodes the parts.
fn compose_day(
    face: &Typeface,
    day: String,
    items: Vec<(DayItem, Option<Vec<u8>>)>,
    options: PageOptions,
) -> Result<Composed> {
    let mut photo_errors = Vec::new();
    let mut photos_partial = Vec::new();
    let mut day_items = Vec::with_capacity(items.len());
    let mut photos = Vec::with_capacity(items.len());
    for (mut item, original) in items {
        let mut photo = None;
        if let Some(bytes) = original {
            match memdb_formats::import::photo::decode_rgb(&bytes, Default::default()) {
                Ok(rgb) => {
                    if let Some(damage) = &rgb.damage {
                        photos_partial.push((item.id, damage.clone()));
                    }
                    let (w, h) = memdb_render::photo_display_size(rgb.width, rgb.height);
                    let canvas = Canvas::from_rgb(rgb.width, rgb.height, rgb.rgb)?.resized(w, h)?;
                    item.photo = Some((rgb.width, rgb.height));
                    photo = Some(canvas);
                }
                Err(e) => photo_errors.push((item.id, e.to_string())),
            }
        }
        day_items.push(item);
        photos.push(photo);
    }
    let plan = memdb_render::plan(face, &day, &day_items, options);
    let has_photos = photos.iter().any(Option::is_some);
    let mut parts = Vec::new();
    if has_photos {
        for part in 0..memdb_render::part_count(plan.layout.height) {
            let canvas = memdb_render::paint_part(face, &plan, &photos, part)?;
            parts.push(canvas.encode_jpeg(options.quality)?);
        }
    }
    Ok(Composed {
        day,
        row: PageRow {
            stage: 0,
            quality: options.quality,
            scale_milli: 1000,
            parts: Vec::new(),
            layout: plan.layout.encode(),
        },
        parts,
        photo_errors,
        photos_partial,
        handled: Vec::new(),
    })
}

/// A forgotten page with the blocks of `gone` items painted white in its stored parts (at the
/// page's current scale) and removed from its layout; quality and scale stay.
fn blank_items(
    snapshot: &Snapshot,
    day: &str,
    row: &PageRow,
    mut layout: PageLayout,
    gone: &BTreeSet<u64>,
) -> Result<(PageRow, Vec<Vec<u8>>)> {
    let mut parts = Vec::with_capacity(row.parts.len());
    for (index, id) in row.parts.iter().enumerate() {
        let bytes = snapshot
            .blob(*id)?
            .ok_or_else(|| StoreError::bad_row("pages", day, format!("part {id} is missing")))?;
        let mut canvas = Canvas::decode_jpeg(&bytes)?;
        let top = index as u32 * PART_HEIGHT;
        let part_height = layout.height.saturating_sub(top).clamp(1, PART_HEIGHT);
        // Each part was scaled on its own: its own ratios place the rectangles.
        let sx = f64::from(canvas.width()) / f64::from(layout.width.max(1));
        let sy = f64::from(canvas.height()) / f64::from(part_height);
        for block in layout.blocks.iter().filter(|b| gone.contains(&b.item)) {
            let [x, y, w, h] = block.rect.map(f64::from);
            let y = y - f64::from(top);
            // One pixel more on every side: resampling spreads an edge.
            canvas.fill_white(
                (x * sx).floor() as i64 - 1,
                (y * sy).floor() as i64 - 1,
                (w * sx).ceil() as i64 + 2,
                (h * sy).ceil() as i64 + 2,
            );
        }
        parts.push(canvas.encode_jpeg(row.quality)?);
    }
    layout.blocks.retain(|b| !gone.contains(&b.item));
    let new_row = PageRow {
        layout: layout.encode(),
        parts: Vec::new(),
        ..row.clone()
    };
    Ok((new_row, parts))
}

/// Whether a stored page no longer shows its day as it is: other items, or other nodes.
fn is_stale(layout: &PageLayout, items: &[(DayItem, Option<u64>)]) -> bool {
    let on_page: BTreeSet<u64> = layout.items().into_iter().collect();
    let now: BTreeSet<u64> = items.iter().map(|(i, _)| i.id).collect();
    if on_page != now {
        return true;
    }
    items.iter().any(|(item, original)| {
        let text = layout
            .blocks
            .iter()
            .find(|b| b.item == item.id && b.kind == BlockKind::Text);
        let drawn: BTreeSet<u64> = text
            .map(|b| b.nodes.iter().map(|n| n.0).collect())
            .unwrap_or_default();
        let nodes: BTreeSet<u64> = item.nodes.iter().map(|n| n.0).collect();
        let has_photo_block = layout
            .blocks
            .iter()
            .any(|b| b.item == item.id && b.kind == BlockKind::Photo);
        drawn != nodes || (original.is_some() && !has_photo_block)
    })
}

/// Pages composed per commit.
const PAGES_PER_COMMIT: usize = 32;

/// Which days `compose_pages` looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ComposeScope {
    /// Every day with items or a page.
    All,
    /// Only days that have a page and stale marks (items changed since it was composed).
    Stale,
}

impl Store {
    /// Composes the page of every day whose items or graph nodes changed since its page was
    /// made (all days, the first time), in parallel, committing every few pages. Run it after
    /// `update_graph` so pages record their nodes. `progress` is called with (done, total).
    pub fn compose_pages(
        &self,
        options: PageOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<PageReport> {
        self.compose_scope(options, ComposeScope::All, progress)
    }

    /// Brings up to date only the pages whose items changed since they were composed (a
    /// correction re-imported): what `memdb embed` runs after re-deriving vectors and graph,
    /// so a changed text does not live on in its day's page. Days without a page stay without.
    pub fn refresh_stale_pages(
        &self,
        options: PageOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<PageReport> {
        self.compose_scope(options, ComposeScope::Stale, progress)
    }

    fn compose_scope(
        &self,
        options: PageOptions,
        scope: ComposeScope,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<PageReport> {
        let snapshot = self.snapshot()?;
        let rows = snapshot.page_rows()?;
        let stale = snapshot.stale_pages()?;
        let mut days = snapshot.items_by_day()?;
        if scope == ComposeScope::Stale {
            days.retain(|day, _| rows.contains_key(day) && stale.contains_key(day));
        }
        let mut report = PageReport {
            days: days.len() as u64,
            ..PageReport::default()
        };
        let mut batch = self.batch();
        let gone_days = rows
            .keys()
            .filter(|d| !days.contains_key(*d))
            .filter(|d| scope == ComposeScope::All || stale.contains_key(*d));
        for day in gone_days {
            batch.derived(PageWrite::Delete { day: day.clone() });
            report.removed += 1;
        }
        let mut work = Vec::new();
        for (day, records) in days {
            let items = snapshot.day_items(&records)?;
            let handled = stale.get(&day).cloned().unwrap_or_default();
            match rows.get(&day) {
                Some(row) => {
                    let layout = PageLayout::decode(&row.layout)
                        .map_err(|e| StoreError::bad_row("pages", &day, e))?;
                    if handled.is_empty() && !is_stale(&layout, &items) {
                        report.unchanged += 1;
                    } else if row.stage > 0 {
                        // A forgotten page is what is left of its day and is not recomposed;
                        // but an item deleted since, or changed since (its old text), must not
                        // live on in its pixels.
                        let now: BTreeSet<u64> = items.iter().map(|(i, _)| i.id).collect();
                        let changed: BTreeSet<u64> = handled.iter().map(|(i, _)| *i).collect();
                        let gone: BTreeSet<u64> = layout
                            .items()
                            .into_iter()
                            .filter(|i| !now.contains(i) || changed.contains(i))
                            .collect();
                        if gone.is_empty() {
                            report.kept_forgotten += 1;
                            if !handled.is_empty() {
                                batch.derived(PageWrite::ClearStale {
                                    day: day.clone(),
                                    handled,
                                });
                            }
                        } else {
                            let (new_row, parts) =
                                blank_items(&snapshot, &day, row, layout, &gone)?;
                            report.bytes_written +=
                                parts.iter().map(|p| p.len() as u64).sum::<u64>();
                            batch.derived(PageWrite::Put {
                                day: day.clone(),
                                row: new_row,
                                parts,
                                handled,
                            });
                            report.blanked += 1;
                        }
                    } else {
                        // A refresh keeps the page's own quality and key facts; a composition
                        // asked for takes the options it was given.
                        let options = match scope {
                            ComposeScope::Stale => PageOptions {
                                quality: row.quality,
                                salient_facts: layout.salient_facts,
                            },
                            ComposeScope::All => options,
                        };
                        work.push((day, items, handled, options));
                    }
                }
                None => work.push((day, items, handled, options)),
            }
        }
        let total = work.len() as u64;
        let face = Typeface::embedded()?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Jobs carry their place in `work`, so pages are committed in day order whichever
        // worker finishes first: the same store composes to the same catalog bytes.
        type Job = (
            u64,
            String,
            Vec<(DayItem, Option<Vec<u8>>)>,
            Vec<(u64, u64)>,
            PageOptions,
        );
        let (job_tx, job_rx) = crossbeam_channel::bounded::<Job>(workers);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<(u64, Result<Composed>)>(workers);
        std::thread::scope(|scope| -> Result<()> {
            for _ in 0..workers {
                let (job_rx, done_tx, face) = (job_rx.clone(), done_tx.clone(), face.clone());
                scope.spawn(move || {
                    for (at, day, items, handled, options) in job_rx {
                        let composed = compose_day(&face, day, items, options).map(|mut c| {
                            c.handled = handled;
                            c
                        });
                        if done_tx.send((at, composed)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop((job_rx, done_tx));
            // Originals are read here, a day at a time, so at most a few days' photos are in
            // memory however large the library.
            let snapshot = &snapshot;
            let feeder = scope.spawn(move || -> Result<()> {
                for (at, (day, items, handled, options)) in (0u64..).zip(work) {
                    let mut job = Vec::with_capacity(items.len());
                    for (item, original) in items {
                        let bytes = match original {
                            Some(blob) => snapshot.blob(blob)?.map(|b| b.to_vec()),
                            None => None,
                        };
                        job.push((item, bytes));
                    }
                    if job_tx.send((at, day, job, handled, options)).is_err() {
                        break;
                    }
                }
                Ok(())
            });
            let mut done = 0u64;
            let mut pending = 0usize;
            // Pages finished out of turn wait here for the ones before them: as many as the
            // other workers compose while one is on a slow page.
            let mut early: BTreeMap<u64, Result<Composed>> = BTreeMap::new();
            let mut next_at = 0u64;
            let in_order = done_rx.into_iter().flat_map(move |(at, composed)| {
                early.insert(at, composed);
                let mut ready = Vec::new();
                while let Some(next) = early.remove(&next_at) {
                    ready.push(next);
                    next_at += 1;
                }
                ready
            });
            for composed in in_order {
                let composed = composed?;
                if composed.parts.is_empty() {
                    report.text_pages += 1;
                } else {
                    report.photo_pages += 1;
                }
                report.bytes_written += composed.parts.iter().map(|p| p.len() as u64).sum::<u64>();
                report.photo_errors.extend(composed.photo_errors);
                report.photos_partial.extend(composed.photos_partial);
                batch.derived(PageWrite::Put {
                    day: composed.day,
                    row: composed.row,
                    parts: composed.parts,
                    handled: composed.handled,
                });
                pending += 1;
                if pending >= PAGES_PER_COMMIT {
                    std::mem::replace(&mut batch, self.batch()).commit()?;
                    pending = 0;
                }
                done += 1;
                progress(done, total);
            }
            feeder
                .join()
                .map_err(|_| StoreError::ThreadFailed("the page feeder"))?
        })?;
        batch.commit()?;
        Ok(report)
    }

    /// A page's JPEG parts: the stored ones, or for a text-only page a rendering from its
    /// records at the page's quality and scale. `None` when the day has no page. A stored part
    /// that cannot be read (damage) comes back as a grey part of its size, named in
    /// [`RenderedPage::damaged`]: one bad part never makes the whole page unreadable.
    pub fn render_page(&self, day: &str) -> Result<Option<RenderedPage>> {
        let snapshot = self.snapshot()?;
        let Some(row) = snapshot.page_rows()?.remove(day) else {
            return Ok(None);
        };
        let Some(page) = snapshot.page(day)? else {
            return Ok(None);
        };
        if !page.parts.is_empty() {
            let mut rendered = RenderedPage::default();
            for (index, id) in page.parts.iter().enumerate() {
                match snapshot.blob(*id) {
                    Ok(Some(blob)) => rendered.parts.push(blob.to_vec()),
                    Ok(None) => {
                        rendered
                            .damaged
                            .push((index, format!("part {id} is missing")));
                        rendered.parts.push(lost_part(&row, index)?);
                    }
                    Err(e) => {
                        rendered.damaged.push((index, e.to_string()));
                        rendered.parts.push(lost_part(&row, index)?);
                    }
                }
            }
            return Ok(Some(rendered));
        }
        let ids: BTreeSet<u64> = page.layout.items().into_iter().collect();
        let mut records = Vec::new();
        for id in &ids {
            records.extend(snapshot.get(*id)?);
        }
        records.sort_by_key(|r| (r.fields.time.unix_ms, r.id));
        let mut items: Vec<DayItem> = snapshot
            .day_items(&records)?
            .into_iter()
            .map(|(item, _)| item)
            .collect();
        // Draw the nodes the page was composed with, not ones the graph gained since.
        for item in &mut items {
            if let Some(block) = page
                .layout
                .blocks
                .iter()
                .find(|b| b.item == item.id && b.kind == BlockKind::Text)
            {
                let drawn: BTreeSet<u64> = block.nodes.iter().map(|n| n.0).collect();
                item.nodes.retain(|n| drawn.contains(&n.0));
            }
        }
        let face = Typeface::embedded()?;
        let options = PageOptions {
            quality: page.quality,
            salient_facts: page.layout.salient_facts,
        };
        let plan = memdb_render::plan(&face, day, &items, options);
        let photos = vec![None; items.len()];
        let mut rendered = RenderedPage::default();
        for part in 0..memdb_render::part_count(plan.layout.height) {
            let canvas = memdb_render::paint_part(&face, &plan, &photos, part)?;
            let scaled = scale_canvas(&canvas, page.scale as f32)?;
            rendered.parts.push(scaled.encode_jpeg(page.quality)?);
        }
        Ok(Some(rendered))
    }
}

/// A neutral grey JPEG the size part `index` of a page has at its current scale: what stands
/// in for a part whose bytes were lost to damage, so the rest of the page stays readable and
/// in place.
pub(crate) fn lost_part(row: &PageRow, index: usize) -> Result<Vec<u8>> {
    let layout = PageLayout::decode(&row.layout)
        .map_err(|e| StoreError::bad_row("pages", "(a page with a lost part)", e))?;
    let top = u32::try_from(index)
        .unwrap_or(u32::MAX)
        .saturating_mul(PART_HEIGHT);
    let height = layout.height.saturating_sub(top).clamp(1, PART_HEIGHT);
    let scale = row.scale();
    let w = ((layout.width.max(1) as f32) * scale).round().max(1.0) as u32;
    let h = ((height as f32) * scale).round().max(1.0) as u32;
    let grey = vec![0xC0u8; w as usize * h as usize * 3];
    Ok(Canvas::from_rgb(w, h, grey)?.encode_jpeg(row.quality)?)
}

/// Re-encodes a JPEG page part the way forgetting does: decoded, resized by `factor`
/// (Lanczos3; 1.0 keeps the size), encoded at `quality`.
pub fn reencode_jpeg(bytes: &[u8], factor: f32, quality: u8) -> Result<Vec<u8>> {
    let canvas = Canvas::decode_jpeg(bytes)?;
    Ok(scale_canvas(&canvas, factor)?.encode_jpeg(quality)?)
}

/// `canvas` at `scale` of its size (at least one pixel each way).
pub(crate) fn scale_canvas(canvas: &Canvas, scale: f32) -> Result<Canvas> {
    if scale >= 0.999 {
        return Ok(canvas.clone());
    }
    let w = (canvas.width() as f32 * scale).round().max(1.0) as u32;
    let h = (canvas.height() as f32 * scale).round().max(1.0) as u32;
    Ok(canvas.resized(w, h)?)
}

/// Kinds of node ScrapMem's failure analysis says are lost first: what the saliency-aware
/// layout sets large.
pub fn is_salient_kind(kind: NodeKind) -> bool {
    matches!(kind, NodeKind::Entity | NodeKind::Date | NodeKind::Amount)
}
