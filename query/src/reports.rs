//! The engine's reports as JSON documents: the one shape the `memdb` CLI (`--json`), the MCP
//! server and the Python package give of a store's statistics, a check, an item with its past,
//! and memory operations (in Mem0's history columns). Items inside them go through
//! [`crate::item_json`], the one renderer of an item.

use memdb::{
    Item, maintenance::CheckReport, maintenance::Stats, memory::MemoryHistory,
    memory::MemoryOpKind, memory::MemoryOpRow, memory::MemoryVersion,
};
use serde_json::{Value, json};

use crate::{ItemRow, item_json, item_row_json};

/// UTC milliseconds as RFC 3339 text (`null` outside the calendar).
pub fn rfc3339(ms: i64) -> Value {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => json!(t.to_string()),
        Err(_) => Value::Null,
    }
}

/// A store's statistics (`memdb stats --json`).
pub fn stats_json(s: &Stats) -> Value {
    json!({
        "encrypted": s.encrypted,
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
    })
}

/// A full check (`memdb check --json`).
pub fn check_json(r: &CheckReport) -> Value {
    json!({
        "clean": r.is_clean(), "segments": r.segments, "entries": r.entries, "items": r.items,
        "blobs": r.blobs, "bytes": r.bytes, "catalog_damaged": r.catalog_damaged,
        "problems": r.problems.iter().map(|p| json!({
            "segment": p.segment.map(|s| format!("{s:016x}")), "page": p.page(), "offset": p.offset, "what": p.what
        })).collect::<Vec<_>>(),
        "lost": damage_json(&r.damage),
    })
}

/// What damage makes unreadable.
pub fn damage_json(d: &memdb::maintenance::Damage) -> Value {
    json!({
        "items": d.items,
        "versions": d.versions.iter().map(|(item, seq)| json!({"item": item, "version": seq})).collect::<Vec<_>>(),
        "blobs": d.blobs.iter().map(|b| json!({"blob": b.id, "kind": b.kind.name(), "bytes": b.len, "owner": b.owner})).collect::<Vec<_>>(),
        "vectors": d.vectors.iter().map(|(space, key)| json!({"space": space, "key": key})).collect::<Vec<_>>(),
        "pages": d.pages,
    })
}

/// An item with what the store knows about its past (`memdb get --json`): the blobs
/// forgetting dropped (when, by which policy) and its earlier versions (each as `HISTORY`
/// shows it, with `replaced`).
pub fn item_detail_json(
    item: &Item,
    dropped: &[memdb::maintenance::DroppedBlob],
    versions: &[memdb::memory::ItemVersion],
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

/// A memory's text as Mem0's columns show it: its body (a note's or a message's words, as
/// written), else its text in the SGM style (a photo's fields; what it is searched by unless the
/// store chose descriptive text).
pub fn memory_text(item: &Item) -> String {
    match &item.fields.body {
        Some(body) => body.clone(),
        None => memdb::recall::item_text(item),
    }
}

/// What `Store::apply` logged for one operation.
pub fn applied_json(a: &memdb::memory::AppliedOp) -> Value {
    json!({
        "event": a.kind.name(),
        "memory_id": a.id,
        "seq": a.seq,
        "created_at": rfc3339(a.system_ms),
    })
}

/// One operation of `Store::remember`: what was decided and done on which memory, and why.
pub fn remembered_json(r: &memdb::ops::Remembered) -> Value {
    json!({
        "fact": r.fact,
        "said": r.said,
        "event": r.event.name(),
        "decided": r.decision.op.name(),
        "memory_id": r.memory_id,
        "target": if r.event == memdb::ops::Operation::Add { None } else { r.memory_id },
        "old_memory": r.old_text,
        "reason": r.decision.reason,
        "seq": r.applied.as_ref().map(|a| a.seq),
        "created_at": r.applied.as_ref().map(|a| rfc3339(a.system_ms)),
    })
}

/// What `Store::remember` did (`memdb remember --json`, MCP `add_memories`, Python
/// `remember`): `results` (one per operation, [`remembered_json`]), `skipped` (each sentence
/// that gave no fact, with why), `replayed` (an idempotency key named an earlier call: nothing
/// was applied now) and `warnings` (a stage after the commit that failed: the commit stands).
pub fn remember_json(report: &memdb::ops::RememberReport, warnings: &[String]) -> Value {
    json!({
        "results": report.results.iter().map(remembered_json).collect::<Vec<_>>(),
        "skipped": report.skipped.iter().map(|s| json!({"said": s.said, "reason": s.reason})).collect::<Vec<_>>(),
        "replayed": report.replayed,
        "warnings": warnings,
    })
}

/// [`remember_json`] as lines a person reads: one per operation, then one per skipped
/// sentence.
pub fn remember_text(report: &memdb::ops::RememberReport) -> String {
    let mut lines: Vec<String> = Vec::new();
    if report.replayed {
        lines.push("already applied under this idempotency key; nothing done now:".to_owned());
    }
    for r in &report.results {
        let target = match (r.event, &r.old_text) {
            (memdb::ops::Operation::Add, _) | (_, None) => String::new(),
            (_, Some(text)) => format!(" ({text:?})"),
        };
        let memory = match r.memory_id {
            Some(id) => format!("memory {id}{target}"),
            None => format!("a memory of this input{target}, not stored"),
        };
        lines.push(format!(
            "{} {:?} → {}: {}",
            r.event, r.fact, memory, r.decision.reason
        ));
    }
    for s in &report.skipped {
        lines.push(format!("skipped {:?}: {}", s.said, s.reason));
    }
    if lines.is_empty() {
        return "nothing said".to_owned();
    }
    lines.join("\n")
}

/// One op of the log in Mem0's history columns (`memdb log --json`), with the texts of the
/// version it closed (`old`) and of the one it wrote (`new`).
pub fn op_row_json(row: &MemoryOpRow, old: Option<&str>, new: Option<&str>) -> Value {
    json!({
        "id": row.seq,
        "memory_id": row.memory_id,
        "old_memory": old,
        "new_memory": new,
        "event": row.kind.name(),
        "created_at": rfc3339(row.system_ms),
        "valid_time": row.valid_ms.map(rfc3339),
        "is_deleted": matches!(row.kind, MemoryOpKind::Delete | MemoryOpKind::Purge),
        "actor_id": row.actor,
        "role": row.role,
        "reason": row.reason,
    })
}

/// A memory's ops, oldest first, each as [`op_row_json`] with its texts.
pub fn history_ops_json(history: &MemoryHistory) -> Vec<Value> {
    history
        .ops
        .iter()
        .map(|row| {
            let (old, new) = texts_of(history, row);
            op_row_json(row, old.as_deref(), new.as_deref())
        })
        .collect()
}

/// The text of the version op `row` closed and of the one it wrote (when still stored), from
/// its memory's `history`.
pub fn texts_of(history: &MemoryHistory, row: &MemoryOpRow) -> (Option<String>, Option<String>) {
    let text = |v: &MemoryVersion| memory_text(&v.record);
    let (old, new) = history.versions_of(row);
    (old.map(text), new.map(text))
}
