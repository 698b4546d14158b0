//! Ingest: the one path from new items to a store whose vectors, memory graph and pages are
//! current. Applications, the CLI (`import`, `embed`, `pages`, `demo`) and the benches all go
//! through it; nobody assembles the sequence by hand.
//!
//! ```text
//! items ──► place ──► validate ──► commit ──► places of ──► embed ──► graph ──► pages
//!           GPS to     (a bad item  (one       stored items  items     items the days whose
//!           city,      is reported  durable    (once per     without   graph has items changed
//!           country    and skipped) commit per store)        a vector  not seen  (or all days)
//!                                   batch)
//! ```
//!
//! The place stage is pure and runs on each item just before it commits ([`crate::place`]): an
//! item with a position and no place gets the place it is in, from the gazetteer built into
//! the binary. Each stage after the commit works from what the store says is missing, never
//! from what this call added, so every stage is idempotent and resumable: a process killed
//! between two stages (or inside one: each commits in windows) leaves a store that the next
//! call — even one with no new items — completes. The derived stages need an [`Embedder`] (the
//! store's encoder); an ingest without one commits the items (with their places) and leaves
//! vectors, graph and pages to a later call.

use crate::error::StoreError;
use crate::handle::{Snapshot, Store};
use std::sync::Arc;

use memdb_formats::item::ItemDraft;

use crate::caption::{CaptionReport, Captioner};
use crate::error::{Error, Result};
use crate::graph::{Embedder, GraphOptions, GraphReport};
use crate::place::{PlaceOptions, PlaceReport, fill_place};
use memdb_store::{BlobKind, ITEM_VECTORS, PutStatus, check_put};

/// Items encoded and committed together by [`Store::embed_missing`].
const EMBED_WINDOW: usize = 256;

/// One item to ingest: its draft, the blobs it owns, and where it came from (a file and line,
/// shown when it is rejected).
#[derive(Debug, Clone)]
pub struct IngestItem {
    /// The item.
    pub draft: ItemDraft,
    /// Blobs it owns (a photo's original).
    pub blobs: Vec<(BlobKind, Vec<u8>)>,
    /// Where it came from, for reports (`photos/a.jpg`, `notes.jsonl:12`); may be empty.
    pub origin: String,
    /// Its vector in [`ITEM_VECTORS`], when the application embeds itself (the embed stage
    /// then passes it over); `None`: the embed stage encodes its text.
    pub vector: Option<Vec<f32>>,
}

impl IngestItem {
    /// An item without blobs.
    pub fn new(draft: ItemDraft) -> IngestItem {
        IngestItem {
            draft,
            blobs: Vec::new(),
            origin: String::new(),
            vector: None,
        }
    }
}

/// Which pages the page stage composes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStage {
    /// None: pages wait for a later ingest (or `compose_pages`).
    Skip,
    /// Only pages that exist and whose items changed since they were composed.
    Stale,
    /// Every day whose items changed, and every day without a page yet.
    All,
}

/// How [`Store::ingest`] works.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Items per commit.
    pub batch_items: usize,
    /// Blob bytes above which a batch commits before it is full.
    pub batch_blob_bytes: usize,
    /// The place stage (an item's position to the place it is in, before it commits; and, once
    /// per store, the stored items'); `None` skips it.
    pub places: Option<PlaceOptions>,
    /// The captioner stage (photos without a caption provenance described by a vision model,
    /// after the items commit and before they are embedded); `None`, the default, skips it.
    pub captioner: Option<Arc<dyn Captioner>>,
    /// Whether the derived stages run when an embedder is given: vectors of items without one.
    pub embed: bool,
    /// The graph update (after embedding); `None` skips it.
    pub graph: Option<GraphOptions>,
    /// Which pages to compose (after the graph, so pages record their nodes).
    pub pages: PageStage,
    /// The memorability gate before each commit; `None` (the default) stores everything.
    pub gate: Option<crate::gate::GateStage>,
    /// How pages are composed.
    #[cfg(feature = "render")]
    pub page_options: crate::scrapbook::PageOptions,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            batch_items: 1_000,
            batch_blob_bytes: 64 << 20,
            places: Some(PlaceOptions::default()),
            captioner: None,
            embed: true,
            graph: Some(GraphOptions::default()),
            pages: PageStage::All,
            gate: None,
            #[cfg(feature = "render")]
            page_options: crate::scrapbook::PageOptions::default(),
        }
    }
}

impl IngestOptions {
    /// Only the commit stage (with the places of the items, which are fields, not derived
    /// data): items land, nothing is derived.
    pub fn commit_only() -> IngestOptions {
        IngestOptions {
            embed: false,
            graph: None,
            pages: PageStage::Skip,
            ..IngestOptions::default()
        }
    }
}

/// A stage of an ingest, as progress reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestStage {
    /// Committing items.
    Commit,
    /// Placing stored items that have a position and no place.
    Places,
    /// Captioning photos.
    Captions,
    /// Encoding items without a vector.
    Embed,
    /// Adding items to the memory graph.
    Graph,
    /// Composing pages.
    Pages,
}

impl IngestStage {
    /// The stage in words, for progress lines.
    pub fn name(self) -> &'static str {
        match self {
            IngestStage::Commit => "committing items",
            IngestStage::Places => "placing items",
            IngestStage::Captions => "captioning photos",
            IngestStage::Embed => "embedding items",
            IngestStage::Graph => "memory graph",
            IngestStage::Pages => "composing pages",
        }
    }
}

/// An item the commit stage refused, with why; the rest of its batch landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// [`IngestItem::origin`].
    pub origin: String,
    /// Its external id, if it had one.
    pub external_id: Option<String>,
    /// Why.
    pub reason: String,
}

/// What [`Store::embed_missing`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbedReport {
    /// Items encoded now.
    pub encoded: u64,
    /// Items that already had a vector.
    pub already: u64,
    /// Vectors dropped first because they were made from an older recipe of the item text
    /// (and made again now).
    pub stale: u64,
}

/// What an ingest did, stage by stage.
#[derive(Debug, Clone, Default)]
pub struct IngestReport {
    /// Items added.
    pub added: u64,
    /// Items whose fields changed.
    pub updated: u64,
    /// Items put again as they were.
    pub unchanged: u64,
    /// Items put again whose files (a photo's original, an attachment) the store had lost to
    /// damage (a repair dropped them, or nothing says where they went): the files are back.
    pub restored: u64,
    /// Items refused, each with its reason.
    pub rejected: Vec<Rejected>,
    /// The store's warnings about puts and deletes.
    pub warnings: Vec<String>,
    /// Items the gate dropped (`GateMode::Drop`), each with why.
    pub gate_dropped: Vec<Rejected>,
    /// Items the gate tagged with its decision (`GateMode::Tag`).
    pub gate_tagged: u64,
    /// Items the gate found not memorable and stored all the same, because they correct an
    /// item already stored (same external id).
    pub gate_corrections: u64,
    /// Items the place stage gave a place before they committed.
    pub placed: u64,
    /// The pass over stored items (`None`: it did not run, or had run before).
    pub places: Option<PlaceReport>,
    /// The captioner stage (`None`: it did not run).
    pub captions: Option<CaptionReport>,
    /// The embed stage (`None`: it did not run).
    pub embedded: Option<EmbedReport>,
    /// The graph stage (`None`: it did not run).
    pub graph: Option<GraphReport>,
    /// The page stage (`None`: it did not run).
    #[cfg(feature = "render")]
    pub pages: Option<crate::scrapbook::PageReport>,
}

/// An ingest under way: items are added one at a time (committed in batches), then
/// [`finish`](Ingest::finish) commits the rest and runs the derived stages.
#[must_use = "an ingest commits its last batch and derives nothing until `finish`"]
pub struct Ingest<'s> {
    store: &'s Store,
    options: IngestOptions,
    pending: Vec<IngestItem>,
    pending_bytes: usize,
    snapshot: Snapshot,
    report: IngestReport,
    /// External ids of pending items whose put brings back files the stored item lost to
    /// damage (counted `restored`, not `updated`).
    restoring: std::collections::HashSet<String>,
}

impl Store {
    /// Starts an ingest into this store.
    pub fn ingest(&self, options: IngestOptions) -> Result<Ingest<'_>> {
        Ok(Ingest {
            store: self,
            options,
            pending: Vec::new(),
            pending_bytes: 0,
            snapshot: self.snapshot()?,
            report: IngestReport::default(),
            restoring: std::collections::HashSet::new(),
        })
    }

    /// Ingests `items` and runs the derived stages with `embedder` (see the module header).
    pub fn ingest_items(
        &self,
        items: impl IntoIterator<Item = IngestItem>,
        embedder: Option<&dyn Embedder>,
        options: IngestOptions,
        progress: &mut dyn FnMut(IngestStage, u64, u64),
    ) -> Result<IngestReport> {
        let mut ingest = self.ingest(options)?;
        for item in items {
            ingest.add(item)?;
        }
        ingest.finish(embedder, progress)
    }

    /// Encodes every item that has no vector yet with `embedder` and stores the vectors in
    /// [`ITEM_VECTORS`], a window of items per commit (an interrupted run keeps what it
    /// committed). `progress` gets (items encoded, items to encode).
    ///
    /// Vectors made from another recipe of the item text (the store's `item_text` setting,
    /// SPEC.md §5: an older version, or another style) are dropped first for the sources whose
    /// text changed — in one commit with the new setting, so the items are then simply missing
    /// their vector and an interrupted run loses nothing.
    pub fn embed_missing(
        &self,
        embedder: &dyn Embedder,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<EmbedReport> {
        // No style switch between choosing the text and committing its vectors.
        let recipe_lock = self.extension::<crate::recall::RecipeLock>()?;
        let _recipe = recipe_lock.hold()?;
        let style = self.snapshot()?.item_text_style()?;
        let stale = self.remake_recipe(crate::recall::Recipe::current(style))?;
        let snapshot = self.snapshot()?;
        let done = snapshot.vector_keys(ITEM_VECTORS)?;
        let todo: Vec<u64> = snapshot
            .item_ids()?
            .into_iter()
            .filter(|id| !done.contains(*id))
            .collect();
        let total = todo.len() as u64;
        let mut report = EmbedReport {
            encoded: 0,
            already: done.len(),
            stale,
        };
        progress(0, total);
        for (window_index, window) in todo.chunks(EMBED_WINDOW).enumerate() {
            let mut items = Vec::with_capacity(window.len());
            for id in window {
                // An item deleted since the snapshot is simply skipped.
                if let Some(item) = snapshot.get(*id)? {
                    items.push(item);
                }
            }
            let texts: Vec<String> = items
                .iter()
                .map(|i| crate::recall::item_text_in(i, style))
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = crate::graph::embed_checked(embedder, &refs)?;
            let mut batch = self.batch();
            for (item, vector) in items.iter().zip(vectors) {
                batch.put_vector(
                    ITEM_VECTORS,
                    item.id,
                    item.fields.time.unix_ms,
                    item.fields.source.code(),
                    vector,
                );
            }
            batch.commit()?;
            report.encoded += items.len() as u64;
            progress(
                ((window_index + 1) * EMBED_WINDOW).min(todo.len()) as u64,
                total,
            );
        }
        Ok(report)
    }

    /// Chooses the style the store writes its items' text in for the encoder and BM25: the
    /// lexical index follows at once; the item vectors made in the other style are dropped in
    /// the same commit and made again by the next [`embed_missing`](Store::embed_missing)
    /// (`memdb embed --item-text`). Returns how many vectors it dropped (0 when the store
    /// already has `style`).
    pub fn set_item_text_style(&self, style: crate::recall::ItemTextStyle) -> Result<u64> {
        // Waits for an embed in progress: its vectors are of the style it started with.
        let recipe_lock = self.extension::<crate::recall::RecipeLock>()?;
        let _recipe = recipe_lock.hold()?;
        self.remake_recipe(crate::recall::Recipe::current(style))
    }

    /// Makes `to` the store's item-text recipe: in one commit, drops the item vectors of the
    /// sources whose text differs between the recorded recipe and `to`, and records `to`. The
    /// caller holds the [`RecipeLock`](crate::recall::RecipeLock).
    fn remake_recipe(&self, to: crate::recall::Recipe) -> Result<u64> {
        let snapshot = self.snapshot()?;
        let from = crate::recall::Recipe::from_setting(
            snapshot
                .setting(crate::recall::ITEM_TEXT_SETTING)?
                .as_deref(),
        );
        if from == to {
            return Ok(0);
        }
        let with_vector = snapshot.vector_keys(ITEM_VECTORS)?;
        let mut batch = self.batch();
        let mut dropped = 0;
        for source in crate::recall::changed_sources(from, to) {
            let filter = memdb_store::ScanFilter {
                source: Some(source),
                ..memdb_store::ScanFilter::default()
            };
            for item in snapshot.scan(&filter)? {
                if with_vector.contains(item.id) {
                    batch.delete_vector(ITEM_VECTORS, item.id);
                    dropped += 1;
                }
            }
        }
        batch.set_setting(crate::recall::ITEM_TEXT_SETTING, to.setting());
        batch.commit()?;
        Ok(dropped)
    }
}

impl Ingest<'_> {
    /// Adds an item; a full batch commits now. Returns whether it did (the store then has
    /// every item added so far, and [`snapshot`](Ingest::snapshot) shows them).
    pub fn add(&mut self, mut item: IngestItem) -> Result<bool> {
        self.drop_stored_blobs(&mut item)?;
        self.pending_bytes += item.blobs.iter().map(|(_, b)| b.len()).sum::<usize>();
        self.pending.push(item);
        if self.pending.len() >= self.options.batch_items.max(1)
            || self.pending_bytes >= self.options.batch_blob_bytes
        {
            self.commit()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Takes out of `item` the blobs its stored version already holds, byte for byte: a put
    /// without them keeps the stored ones, so ingesting the same item again changes nothing
    /// (it is `unchanged`, and adds no bytes). A file the stored item no longer has comes back
    /// with the put when damage took it (a repair dropped it, or the store has no record of
    /// its going), and the item is counted `restored`; one that forgetting dropped stays
    /// dropped (the person's policy said so).
    fn drop_stored_blobs(&mut self, item: &mut IngestItem) -> Result<()> {
        if item.blobs.is_empty() {
            return Ok(());
        }
        let Some(id) = item.draft.fields.external_id.clone() else {
            return Ok(());
        };
        let Some(stored) = self.snapshot.get_by_external_id(&id)? else {
            return Ok(());
        };
        let mut held = Vec::with_capacity(stored.blobs.len());
        for &blob in &stored.blobs {
            if let Some(info) = self.snapshot.blob_info(blob)? {
                held.push((blob, info));
            }
        }
        // Which of the item's blobs the stored version holds, byte for byte (a held blob that
        // damage made unreadable is not held: the put brings it back).
        let mut is_held = Vec::with_capacity(item.blobs.len());
        for (kind, bytes) in &item.blobs {
            let mut found = false;
            for (blob, info) in &held {
                if info.kind == *kind
                    && info.len == bytes.len() as u64
                    && self
                        .snapshot
                        .blob(*blob)
                        .ok()
                        .flatten()
                        .is_some_and(|stored| *stored == **bytes)
                {
                    found = true;
                    break;
                }
            }
            is_held.push(found);
        }
        // Only when every blob is held already: a put with blobs replaces them all.
        if is_held.iter().all(|h| *h) {
            item.blobs.clear();
            return Ok(());
        }
        let dropped = self.snapshot.dropped_blobs(stored.id)?;
        let dropped_by = |kind: BlobKind, cause: &str| {
            dropped
                .iter()
                .any(|d| d.kind == kind && d.why.starts_with(cause))
        };
        // What forgetting dropped stays dropped (the person's policy said so): the put carries
        // the other blobs — held ones and those it brings back — and leaves those out.
        let mut keep = is_held.iter();
        let mut brings = Vec::new();
        item.blobs.retain(|(kind, _)| {
            let held = keep.next().copied().unwrap_or(false);
            if held {
                return true;
            }
            if dropped_by(*kind, "forgetting") {
                return false;
            }
            brings.push(*kind);
            true
        });
        if brings.is_empty() {
            item.blobs.clear();
            return Ok(());
        }
        // Restored: what it brings back is what damage took (a repair's record, or none at all
        // of a kind the stored item no longer has); anything else is an update.
        let restores = brings.iter().all(|kind| {
            dropped_by(*kind, "repair")
                || (!held.iter().any(|(_, info)| info.kind == *kind)
                    && !dropped.iter().any(|d| d.kind == *kind))
        });
        if restores {
            self.restoring.insert(id);
        }
        Ok(())
    }

    /// The store as of this ingest's last commit (what "already stored" means to an importer
    /// deciding what to add).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Items added and not committed yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The `index`th item added since the last commit, to amend before it commits (an
    /// importer merging a second file of the same photo into it).
    pub fn pending_item_mut(&mut self, index: usize) -> Option<&mut IngestItem> {
        self.pending.get_mut(index)
    }

    /// What the commits so far did.
    pub fn report(&self) -> &IngestReport {
        &self.report
    }

    /// Commits the items added so far. An item the store refuses is reported in
    /// [`IngestReport::rejected`] and the rest of the batch commits without it; any other
    /// failure fails the call, with every earlier batch kept.
    pub fn commit(&mut self) -> Result<()> {
        self.pending_bytes = 0;
        let mut batch = self.store.batch();
        // Who each put of the batch is, for the report.
        let mut puts: Vec<(String, Option<String>)> = Vec::with_capacity(self.pending.len());
        // Read once per commit, and only when the gate finds an item not memorable.
        let mut snapshot: Option<Snapshot> = None;
        for mut item in std::mem::take(&mut self.pending) {
            if let Some(places) = &self.options.places
                && fill_place(&mut item.draft.fields, places)
            {
                self.report.placed += 1;
            }
            if let Some(gate) = &self.options.gate {
                let decision = gate.apply(&mut item.draft.fields);
                if let Some(why) = decision.judge_failed {
                    self.report.warnings.push(format!(
                        "{}: kept without the gate's judge: {why}",
                        item.origin
                    ));
                }
                if !decision.keep && gate.mode == crate::gate::GateMode::Drop {
                    // A correction of a stored item passes: dropping it would leave the old
                    // text current (SPEC.md §8.7).
                    let stored = match &item.draft.fields.external_id {
                        Some(external) => {
                            if snapshot.is_none() {
                                snapshot = Some(self.store.snapshot()?);
                            }
                            puts.iter().any(|(_, e)| e.as_ref() == Some(external))
                                || match &snapshot {
                                    Some(snap) => snap.get_by_external_id(external)?.is_some(),
                                    None => false,
                                }
                        }
                        None => false,
                    };
                    if !stored {
                        // What was dropped, in the person's words, so a report names the line.
                        let said = crate::gate::excerpt(&item.draft.fields, 60);
                        self.report.gate_dropped.push(Rejected {
                            origin: item.origin,
                            external_id: item.draft.fields.external_id,
                            reason: format!("{} ({said:?})", decision.reason),
                        });
                        continue;
                    }
                    self.report.gate_corrections += 1;
                }
                if gate.mode == crate::gate::GateMode::Tag {
                    self.report.gate_tagged += 1;
                }
            }
            // What the store would refuse is set aside first: the rest then moves into the
            // batch without a copy, and a bad item costs no transaction.
            if let Err(e) = check_put(puts.len(), &item.draft, &item.blobs) {
                self.report.rejected.push(Rejected {
                    origin: item.origin,
                    external_id: item.draft.fields.external_id,
                    reason: invalid_reason(crate::Error::from(e)),
                });
                continue;
            }
            puts.push((item.origin, item.draft.fields.external_id.clone()));
            match item.vector {
                Some(vector) => batch.put_with_vector(item.draft, item.blobs, vector),
                None => batch.put_with_blobs(item.draft, item.blobs),
            };
        }
        match batch.commit() {
            Ok(receipt) => {
                for (put, (_, external)) in receipt.puts.iter().zip(&puts) {
                    let restored = external
                        .as_ref()
                        .is_some_and(|e| self.restoring.contains(e));
                    match put.status {
                        PutStatus::Added => self.report.added += 1,
                        PutStatus::Updated if restored => self.report.restored += 1,
                        PutStatus::Updated => self.report.updated += 1,
                        PutStatus::Unchanged => self.report.unchanged += 1,
                    }
                }
                self.restoring.clear();
                self.report.warnings.extend(receipt.warnings);
            }
            // An item `check_put` passed and staging still refused (a record too long to
            // frame): nothing of this batch landed, and every item of it is reported so, the
            // refused one with its reason.
            Err(StoreError::InvalidItem { index, reason }) => {
                let culprit = puts
                    .get(index)
                    .map_or_else(|| format!("#{index}"), |(origin, _)| origin.clone());
                for (at, (origin, external_id)) in puts.into_iter().enumerate() {
                    let reason = if at == index {
                        reason.clone()
                    } else {
                        format!("not committed: its batch failed on {culprit} ({reason})")
                    };
                    self.report.rejected.push(Rejected {
                        origin,
                        external_id,
                        reason,
                    });
                }
            }
            Err(e) => return Err(crate::Error::from(e)),
        }
        self.snapshot = self.store.snapshot()?;
        Ok(())
    }

    /// Commits the rest, then runs the derived stages the options ask for with `embedder`
    /// (embedding and the graph need one; pages do not). `progress` gets (stage, done, total).
    pub fn finish(
        mut self,
        embedder: Option<&dyn Embedder>,
        progress: &mut dyn FnMut(IngestStage, u64, u64),
    ) -> Result<IngestReport> {
        self.commit()?;
        let store = self.store;
        let mut report = self.report;
        if let Some(places) = &self.options.places
            && !store.places_filled()?
        {
            report.places = Some(store.fill_places(places, &mut |done, total| {
                progress(IngestStage::Places, done, total)
            })?);
        }
        if let Some(captioner) = &self.options.captioner {
            report.captions = Some(
                store.caption_photos(captioner.as_ref(), &mut |done, total| {
                    progress(IngestStage::Captions, done, total)
                })?,
            );
        }
        if let Some(embedder) = embedder {
            if self.options.embed {
                report.embedded = Some(store.embed_missing(embedder, &mut |done, total| {
                    progress(IngestStage::Embed, done, total)
                })?);
            }
            if let Some(graph) = &self.options.graph {
                report.graph = Some(store.update_graph(embedder, graph, &mut |done, total| {
                    progress(IngestStage::Graph, done, total)
                })?);
            }
        }
        #[cfg(feature = "render")]
        {
            let mut pages = |done, total| progress(IngestStage::Pages, done, total);
            report.pages = match self.options.pages {
                PageStage::Skip => None,
                PageStage::Stale => {
                    Some(store.refresh_stale_pages(self.options.page_options, &mut pages)?)
                }
                PageStage::All => Some(store.compose_pages(self.options.page_options, &mut pages)?),
            };
        }
        Ok(report)
    }
}
/// The reason an item was refused, without the batch position `InvalidItem` carries.
fn invalid_reason(e: Error) -> String {
    match e {
        Error::Store(StoreError::InvalidItem { reason, .. }) => reason,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventTime, ItemFields, Options, Source};

    fn item(ext: &str, minute: i64) -> IngestItem {
        let mut fields = ItemFields::new(
            Source::Note,
            EventTime::utc(1_700_000_000_000 + minute * 60_000),
        );
        fields.external_id = Some(ext.to_owned());
        fields.body = Some(format!("note {ext}"));
        IngestItem {
            origin: format!("notes.jsonl:{minute}"),
            ..IngestItem::new(ItemDraft {
                fields,
                supersedes: None,
            })
        }
    }

    /// Refused items of one batch are each reported with their origin and reason, and the
    /// rest of the batch lands (blobs included) in one commit.
    #[test]
    fn refused_items_are_reported_and_the_rest_of_the_batch_lands() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
        let mut ingest = store.ingest(IngestOptions::commit_only()).unwrap();
        let mut far = item("far", 1);
        far.draft.fields.location = Some(memdb_formats::item::Location {
            name: None,
            geo: Some(memdb_formats::item::GeoPoint {
                lat: 91.0,
                lon: 0.0,
            }),
            place: None,
        });
        let mut reserved = item("reserved", 2);
        reserved.blobs.push((BlobKind::Vectors, vec![1, 2, 3]));
        let mut photo = item("photo", 3);
        photo.blobs.push((BlobKind::Original, vec![7; 1000]));
        let mut empty_id = item("x", 4);
        empty_id.draft.fields.external_id = Some(String::new());
        for it in [item("a", 0), far, reserved, photo, empty_id, item("b", 5)] {
            ingest.add(it).unwrap();
        }
        let report = ingest.finish(None, &mut |_, _, _| {}).unwrap();
        assert_eq!(report.added, 3, "{report:?}");
        let rejected: Vec<(&str, &str)> = report
            .rejected
            .iter()
            .map(|r| (r.origin.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(rejected.len(), 3, "{rejected:?}");
        assert_eq!(rejected[0].0, "notes.jsonl:1");
        assert!(rejected[0].1.contains("latitude 91"), "{rejected:?}");
        assert_eq!(rejected[1].0, "notes.jsonl:2");
        assert!(rejected[1].1.contains("reserved"), "{rejected:?}");
        assert_eq!(rejected[2].0, "notes.jsonl:4");
        let snapshot = store.snapshot().unwrap();
        assert_eq!(snapshot.item_count().unwrap(), 3);
        let photo = snapshot.get_by_external_id("photo").unwrap().unwrap();
        assert_eq!(photo.blobs.len(), 1);
        let bytes = snapshot.blob(photo.blobs[0]).unwrap().unwrap();
        assert!(bytes.iter().eq([7u8; 1000].iter()));
    }
}
