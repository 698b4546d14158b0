//! `memdb embed` and `memdb similar`: item embeddings with the on-device encoder, stored in the
//! store's item vector space, and exact semantic search over them.
//!
//! Embedding is incremental (only items without a vector are encoded), bounded in memory (a
//! window of items at a time, one commit per window, so an interrupted run keeps what it
//! committed) and bound to one model: the store records the encoder's id and weights hash and
//! refuses vectors of another model.

use std::time::Instant;

use memdb::{
    GraphReport, ITEM_VECTORS, IngestOptions, Item, PageStage, Store, VectorHit, VectorScope,
};
use memdb_encode::{Encoder, EncoderOptions, MiniLm};

/// Loads the encoder and binds the store to it. A model not installed yet is downloaded only
/// as `download` allows (see [`crate::model::Download`]).
pub(crate) fn encoder_for(
    store: &Store,
    verbose: bool,
    download: crate::model::Download,
) -> Result<MiniLm, String> {
    let model_dir = crate::model::ensure_installed(verbose, download)?;
    let encoder = MiniLm::load(&model_dir, EncoderOptions::default()).map_err(|e| e.to_string())?;
    store
        .bind_model(&encoder.model_id().to_string())
        .map_err(|e| e.to_string())?;
    Ok(encoder)
}

/// What `embed_missing` did.
pub(crate) struct EmbedReport {
    pub(crate) encoded: usize,
    pub(crate) already: u64,
    pub(crate) seconds: f64,
    pub(crate) model: String,
    pub(crate) threads: usize,
    pub(crate) graph: GraphReport,
    /// Pages composed again because their items changed.
    pub(crate) pages_refreshed: u64,
}

impl EmbedReport {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "encoded": self.encoded,
            "graph": {
                "items": self.graph.items, "new_nodes": self.graph.new_nodes,
                "merged_phrases": self.graph.merged, "new_paths": self.graph.new_paths,
            },
            "already_embedded": self.already,
            "pages_refreshed": self.pages_refreshed,
            "seconds": self.seconds,
            "model": self.model,
            "threads": self.threads,
        })
    }

    pub(crate) fn text(&self) -> String {
        let rate = if self.seconds > 0.0 {
            self.encoded as f64 / self.seconds
        } else {
            0.0
        };
        format!(
            "encoded {} items ({} already had a vector) with {} on {} thread(s) in {:.1} s ({rate:.0} items/s)\n\
             memory graph: {} items added, {} new nodes, {} phrases merged into existing nodes, {} new paths\n\
             pages of changed items brought up to date: {}",
            self.encoded,
            self.already,
            self.model,
            self.threads,
            self.seconds,
            self.graph.items,
            self.graph.new_nodes,
            self.graph.merged,
            self.graph.new_paths,
            self.pages_refreshed
        )
    }
}

/// The engine's ingest with no new items: every item without a vector is encoded (a window
/// per commit), the memory graph takes the items it has not seen, and the pages of changed
/// items are composed again (days that never had a page wait for `memdb pages`).
pub(crate) fn embed_missing(
    store: &Store,
    encoder: &MiniLm,
    progress: bool,
) -> Result<EmbedReport, String> {
    let started = Instant::now();
    let mut stages = crate::progress::Stages::new(progress);
    let options = IngestOptions {
        pages: PageStage::Stale,
        ..IngestOptions::default()
    };
    let report = store
        .ingest(options)
        .and_then(|ingest| ingest.finish(Some(encoder), &mut |s, d, t| stages.report(s, d, t)))
        .map_err(crate::output::engine_error)?;
    stages.finish();
    let embedded = report.embedded.unwrap_or_default();
    let pages = report.pages.unwrap_or_default();
    Ok(EmbedReport {
        pages_refreshed: pages.photo_pages + pages.text_pages + pages.blanked,
        graph: report.graph.unwrap_or_default(),
        encoded: embedded.encoded as usize,
        already: embedded.already,
        seconds: started.elapsed().as_secs_f64(),
        model: encoder.model_id().to_string(),
        threads: encoder.threads(),
    })
}

/// The `k` items nearest to `text` within `scope`, with their scores.
pub(crate) fn similar(
    store: &Store,
    encoder: &MiniLm,
    text: &str,
    k: usize,
    scope: &VectorScope,
) -> Result<Vec<(VectorHit, Item)>, String> {
    let query = encoder
        .encode(&[text])
        .map_err(|e| e.to_string())?
        .pop()
        .ok_or("the encoder returned no vector")?;
    let snapshot = store.snapshot().map_err(|e| e.to_string())?;
    let Some(vectors) = snapshot.vectors(ITEM_VECTORS).map_err(|e| e.to_string())? else {
        return Err("the store has no item vectors yet: run `memdb embed` first".into());
    };
    let mut found = Vec::new();
    for hit in vectors
        .search(&query, k, scope)
        .map_err(|e| e.to_string())?
    {
        if let Some(item) = snapshot.get(hit.key).map_err(|e| e.to_string())? {
            found.push((hit, item));
        }
    }
    Ok(found)
}

/// What recall cannot use in this store, in words: items without a vector are found by
/// keywords and the memory graph only, items the graph has not taken by the other two.
pub(crate) fn coverage_warnings(store: &Store) -> Result<Vec<String>, String> {
    let snapshot = store.snapshot().map_err(|e| e.to_string())?;
    let items = snapshot.item_count().map_err(|e| e.to_string())?;
    let vectors = snapshot
        .vector_keys(ITEM_VECTORS)
        .map_err(|e| e.to_string())?
        .len();
    let graph_items = snapshot.graph().seen_count().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    if vectors < items {
        out.push(if vectors == 0 {
            format!(
                "none of the {items} items has a vector: recall searches keywords and the memory graph only (run `memdb embed`)"
            )
        } else {
            format!(
                "{} of {items} items have no vector yet: those are found by keywords and the memory graph only (run `memdb embed`)",
                items - vectors
            )
        });
    }
    if graph_items < items {
        out.push(format!(
            "{} of {items} items are not in the memory graph yet (run `memdb embed`)",
            items - graph_items
        ));
    }
    Ok(out)
}

/// `memdb recall`: the items that answer `question` (dense, lexical and graph signals fused),
/// each with its item and explanation.
pub(crate) fn recall(
    store: &Store,
    encoder: &MiniLm,
    question: &str,
    options: &memdb::RecallOptions,
) -> Result<(memdb::Recall, Vec<Item>), String> {
    let recall = store
        .recall(question, options, encoder)
        .map_err(|e| e.to_string())?;
    let snapshot = store.snapshot().map_err(|e| e.to_string())?;
    let mut items = Vec::new();
    for hit in &recall.hits {
        if let Some(item) = snapshot.get(hit.item).map_err(|e| e.to_string())? {
            items.push(item);
        }
    }
    Ok((recall, items))
}
