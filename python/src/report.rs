//! The engine's reports as JSON documents, turned into Python dicts by `convert::to_py`.
//!
//! Owns the shapes of `stats()`, `check()`, `get()`, `history()`, `remember()`, `delete()`,
//! `compact()` and the derived stages of an ingest. Where the `memdb` CLI prints the same
//! report its JSON has the same fields (cli/src/output.rs, cli/src/remember.rs: the CLI crate
//! is no library, so they are written here again); items always go through
//! `memdb_query::item_json`, the one renderer of an item.

use memdb::{CheckReport, IngestReport, Item, Stats};
use memdb_query::{ItemRow, item_json, item_row_json};
use serde_json::{Value, json};

/// UTC milliseconds as RFC 3339 text (`null` outside the calendar).
pub(crate) fn rfc3339(ms: i64) -> Value {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => json!(t.to_string()),
        Err(_) => Value::Null,
    }
}

/// `memdb stats --json`, plus the encoder model the store is bound to.
pub(crate) fn stats_json(s: &Stats, model: Option<String>) -> Value {
    json!({
        "items": s.items,
        "items_by_source": s.items_by_source.iter().map(|(src, n)| (src.name().to_owned(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "item_bytes": s.item_bytes,
        "blobs": s.blobs(),
        "blob_bytes": s.blob_bytes(),
        "blobs_by_kind": s.blobs_by_kind.iter().map(|(k, n, b)| (k.name().to_owned(), json!({"count": n, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
        "segments": s.segments.len(),
        "segment_bytes": s.segment_bytes,
        "live_bytes": s.live_bytes(),
        "dead_bytes": s.dead_bytes,
        "catalog_bytes": s.catalog_bytes,
        "total_bytes": s.total_bytes(),
        "pages_by_stage": s.pages_by_stage.iter().map(|(stage, pages, pixels, bytes)| json!({"stage": stage, "pages": pages, "with_pixels": pixels, "bytes": bytes})).collect::<Vec<_>>(),
        "model": model,
    })
}

/// `memdb check --json`.
pub(crate) fn check_json(r: &CheckReport) -> Value {
    let d = &r.damage;
    json!({
        "clean": r.is_clean(), "segments": r.segments, "entries": r.entries, "items": r.items,
        "blobs": r.blobs, "bytes": r.bytes, "catalog_damaged": r.catalog_damaged,
        "problems": r.problems.iter().map(|p| json!({
            "segment": p.segment.map(|s| format!("{s:016x}")), "page": p.page(), "offset": p.offset, "what": p.what
        })).collect::<Vec<_>>(),
        "lost": {
            "items": d.items,
            "versions": d.versions.iter().map(|(item, seq)| json!({"item": item, "version": seq})).collect::<Vec<_>>(),
            "blobs": d.blobs.iter().map(|b| json!({"blob": b.id, "kind": b.kind.name(), "bytes": b.len, "owner": b.owner})).collect::<Vec<_>>(),
            "vectors": d.vectors.iter().map(|(space, key)| json!({"space": space, "key": key})).collect::<Vec<_>>(),
            "pages": d.pages,
        },
    })
}

/// `memdb get --json`: the item, the blobs forgetting dropped, its earlier versions.
pub(crate) fn item_detail_json(
    item: &Item,
    dropped: &[memdb::DroppedBlob],
    versions: &[memdb::ItemVersion],
) -> Value {
    let mut json = item_json(item);
    json["dropped_blobs"] = dropped
        .iter()
        .map(|d| {
            json!({
                "blob": d.id, "kind": d.kind.name(), "bytes": d.len,
                "dropped": memdb::EventTime::utc(d.dropped_ms).to_rfc3339(), "why": d.why,
            })
        })
        .collect();
    json["earlier_versions"] = versions
        .iter()
        .map(|v| {
            item_row_json(&ItemRow {
                replaced_ms: Some(v.replaced_ms),
                ..ItemRow::plain(v.record.clone())
            })
        })
        .collect();
    json
}

/// One logged memory operation, in Mem0's history columns (as `memdb log --json`).
fn op_json(row: &memdb::MemoryOpRow) -> Value {
    json!({
        "id": row.seq,
        "memory_id": row.memory_id,
        "event": row.kind.name(),
        "created_at": rfc3339(row.system_ms),
        "valid_time": row.valid_ms.map(rfc3339),
        "is_deleted": matches!(row.kind, memdb::MemoryOpKind::Delete | memdb::MemoryOpKind::Purge),
        "actor_id": row.actor,
        "role": row.role,
        "reason": row.reason,
    })
}

/// A memory's versions (oldest first, each as `HISTORY OF` shows it) and its operations.
pub(crate) fn history_json(id: u64, h: &memdb::MemoryHistory) -> Value {
    json!({
        "id": id,
        "versions": h.versions.iter().map(|v| {
            let mut row = item_row_json(&ItemRow::version(v.clone()));
            row["current"] = json!(v.is_current());
            row
        }).collect::<Vec<_>>(),
        "ops": h.ops.iter().map(op_json).collect::<Vec<_>>(),
    })
}

/// What `Store::apply` logged for one operation.
pub(crate) fn applied_json(a: &memdb::AppliedOp) -> Value {
    json!({
        "event": a.kind.name(),
        "memory_id": a.id,
        "seq": a.seq,
        "created_at": rfc3339(a.system_ms),
    })
}

/// One fact of `remember` (as `memdb remember --json`).
pub(crate) fn remembered_json(r: &memdb::ops::Remembered) -> Value {
    json!({
        "fact": r.fact,
        "event": r.applied.kind.name(),
        "decided": r.decision.op.name(),
        "memory_id": r.applied.id,
        "target": r.target,
        "old_memory": r.target_text,
        "reason": r.decision.reason,
        "seq": r.applied.seq,
        "created_at": rfc3339(r.applied.system_ms),
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
        "graph": {
            "items": graph.items, "new_nodes": graph.new_nodes,
            "merged_phrases": graph.merged, "new_paths": graph.new_paths,
        },
        "pages_refreshed": pages.photo_pages + pages.text_pages + pages.blanked,
    })
}

/// What `compact` did (as `memdb compact --json`).
pub(crate) fn compact_json(
    r: &memdb::CompactReport,
    rebuilt: &[String],
    shrink: Option<&memdb::CatalogShrink>,
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
