//! The engine's reports as JSON documents, turned into Python dicts by `convert::to_py`.
//!
//! Owns the shapes of `stats()`, `check()`, `get()`, `history()`, `remember()`, `delete()`,
//! `compact()` and the derived stages of an ingest. Where the `memdb` CLI prints the same
//! report it is the same function (`memdb_query::reports`); items always go through
//! `memdb_query::item_json`, the one renderer of an item.

use memdb::{IngestReport, maintenance::Stats};
use memdb_query::{ItemRow, item_row_json};
use serde_json::{Value, json};

pub(crate) use memdb_query::reports::{applied_json, check_json, item_detail_json, remember_json};

/// `memdb stats --json`, plus the encoder model the store is bound to.
pub(crate) fn stats_json(s: &Stats, model: Option<String>) -> Value {
    let mut json = memdb_query::reports::stats_json(s);
    json["model"] = json!(model);
    json
}
/// A memory's versions (oldest first, each as `HISTORY OF` shows it) and its operations.
pub(crate) fn history_json(id: u64, h: &memdb::memory::MemoryHistory) -> Value {
    json!({
        "id": id,
        "versions": h.versions.iter().map(|v| {
            let mut row = item_row_json(&ItemRow::version(v.clone()));
            row["current"] = json!(v.is_current());
            row
        }).collect::<Vec<_>>(),
        "ops": memdb_query::reports::history_ops_json(h),
    })
}

/// The derived stages of an ingest (vectors, memory graph, pages).
pub(crate) fn derived_json(r: &IngestReport) -> Value {
    let embedded = r.embedded.unwrap_or_default();
    let graph = r.graph.clone().unwrap_or_default();
    let pages = r.pages.clone().unwrap_or_default();
    json!({
        "encoded": embedded.encoded,
        "already_embedded": embedded.already,
        "remade": embedded.stale,
        "graph": {
            "items": graph.items, "new_nodes": graph.new_nodes,
            "merged_phrases": graph.merged, "new_paths": graph.new_paths,
        },
        "pages_refreshed": pages.photo_pages + pages.text_pages + pages.blanked,
    })
}

/// What `compact` did (as `memdb compact --json`).
pub(crate) fn compact_json(
    r: &memdb::maintenance::CompactReport,
    rebuilt: &[String],
    shrink: Option<&memdb::maintenance::CatalogShrink>,
) -> Value {
    json!({
        "segments_removed": r.segments_removed.len(), "segments_written": r.segments_written.len(),
        "bytes_before": r.bytes_before, "bytes_after": r.bytes_after,
        "items_kept": r.items_kept, "blobs_kept": r.blobs_kept,
        "vector_spaces_rebuilt": rebuilt,
        "catalog_bytes_before": shrink.map(|s| s.bytes_before),
        "catalog_bytes_after": shrink.map(|s| s.bytes_after),
    })
}
