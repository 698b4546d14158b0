//! Human tables and JSON documents for the commands' results.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use memdb::{Item, maintenance::CheckReport, maintenance::CompactReport, maintenance::Stats};
use memdb_query::{Block, ItemRow, item_block, items_block};
use serde_json::{Value, json};

pub(crate) use memdb_query::reports::{check_json, damage_json, item_detail_json, stats_json};

/// Where results go: tables for people, JSON for scripts.
pub(crate) struct Out {
    pub(crate) json: bool,
}

impl Out {
    pub(crate) fn emit(&self, json: Value, text: impl FnOnce() -> String) {
        if self.json {
            say(&json.to_string());
        } else {
            say(&text());
        }
    }
}

/// Prints a line on stdout. A closed stdout (`memdb ls … | head`) ends the process quietly
/// instead of panicking, as Unix tools do; the store is already consistent, since every
/// command prints only after its work is committed or read.
pub(crate) fn say(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header.to_vec());
    if let Some((w, _)) = terminal_width() {
        t.set_width(w);
    }
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    t
}

fn terminal_width() -> Option<(u16, u16)> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .map(|w| (w, 0))
}

/// A block of a result as a table that fits the terminal, its title (if any) above it.
pub(crate) fn block_text(block: Block) -> String {
    let header: Vec<&str> = block.header.iter().map(String::as_str).collect();
    let mut t = table(&header);
    for row in block.rows {
        t.add_row(row);
    }
    match block.title {
        Some(title) => format!("{title}\n{t}"),
        None => t.to_string(),
    }
}

/// `item_detail_json` as the item's field/value table (earlier versions summarised:
/// `HISTORY OF id` shows them whole).
pub(crate) fn item_detail_table(
    item: &Item,
    dropped: &[memdb::maintenance::DroppedBlob],
    versions: &[memdb::memory::ItemVersion],
) -> String {
    let mut extra: Vec<(String, String)> = dropped
        .iter()
        .map(|d| {
            (
                format!("{} dropped", d.kind.name()),
                format!(
                    "blob {} ({} bytes) dropped {} by {}",
                    d.id,
                    d.len,
                    memdb::EventTime::utc(d.dropped_ms).to_rfc3339(),
                    d.why
                ),
            )
        })
        .collect();
    if !versions.is_empty() {
        extra.push((
            "earlier versions".to_owned(),
            format!(
                "{} (replaced {}; see HISTORY OF {})",
                versions.len(),
                versions
                    .iter()
                    .map(|v| memdb::EventTime::utc(v.replaced_ms).to_rfc3339())
                    .collect::<Vec<_>>()
                    .join(", "),
                item.id
            ),
        ));
    }
    block_text(item_block(item, extra))
}

pub(crate) fn item_table(item: &Item) -> String {
    block_text(item_block(item, Vec::new()))
}

/// Item rows as the one table of items, with their count.
pub(crate) fn rows_table(rows: &[ItemRow]) -> String {
    format!(
        "{}\n{} item(s)",
        block_text(items_block(None, rows)),
        rows.len()
    )
}

/// Items (not ranked) as the one table of items, with their count.
pub(crate) fn list_table(items: &[Item]) -> String {
    let rows: Vec<ItemRow> = items.iter().cloned().map(ItemRow::plain).collect();
    rows_table(&rows)
}

pub(crate) fn stats_table(s: &Stats) -> String {
    let mut t = table(&["what", "count", "bytes"]);
    t.add_row(vec![
        format!(
            "encrypted: {}",
            if s.encrypted {
                "yes (XChaCha20-Poly1305)"
            } else {
                "no"
            }
        ),
        String::new(),
        String::new(),
    ]);
    t.add_row(vec![
        "items".to_owned(),
        s.items.to_string(),
        s.item_bytes.to_string(),
    ]);
    for (src, n) in &s.items_by_source {
        if *n > 0 {
            t.add_row(vec![format!("  {src}"), n.to_string(), String::new()]);
        }
    }
    t.add_row(vec![
        "blobs".to_owned(),
        s.blobs().to_string(),
        s.blob_bytes().to_string(),
    ]);
    for (kind, n, b) in &s.blobs_by_kind {
        if *n > 0 {
            t.add_row(vec![
                format!("  {}", kind.name()),
                n.to_string(),
                b.to_string(),
            ]);
        }
    }
    let sealed = s.segments.iter().filter(|x| x.sealed).count();
    t.add_row(vec![
        format!("segments ({sealed} sealed)"),
        s.segments.len().to_string(),
        s.segment_bytes.to_string(),
    ]);
    t.add_row(vec![
        "  live".to_owned(),
        String::new(),
        s.live_bytes().to_string(),
    ]);
    t.add_row(vec![
        "  dead (reclaimable)".to_owned(),
        String::new(),
        s.dead_bytes.to_string(),
    ]);
    t.add_row(vec![
        "catalog".to_owned(),
        String::new(),
        s.catalog_bytes.to_string(),
    ]);
    t.add_row(vec![
        "total on disk".to_owned(),
        String::new(),
        s.total_bytes().to_string(),
    ]);
    for (stage, pages, pixels, bytes) in &s.pages_by_stage {
        t.add_row(vec![
            format!("pages at stage {stage} ({pixels} with pixels)"),
            pages.to_string(),
            bytes.to_string(),
        ]);
    }
    t.to_string()
}

/// What damage makes unreadable, in a few lines (empty when nothing is).
pub(crate) fn damage_text(d: &memdb::maintenance::Damage) -> String {
    if d.is_empty() {
        return String::new();
    }
    let ids = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(", ");
    let mut text = String::from("\nunreadable because of the damage:");
    if !d.items.is_empty() {
        text.push_str(&format!(
            "\n  {} item(s): {}",
            d.items.len(),
            ids(&mut d.items.iter().map(u64::to_string))
        ));
    }
    if !d.versions.is_empty() {
        text.push_str(&format!(
            "\n  {} earlier version(s) of items {}",
            d.versions.len(),
            ids(&mut d.versions.iter().map(|(i, _)| i.to_string()))
        ));
    }
    if !d.blobs.is_empty() {
        text.push_str(&format!(
            "\n  {} blob(s): {}",
            d.blobs.len(),
            ids(&mut d.blobs.iter().map(|b| match b.owner {
                Some(owner) => format!("{} ({} of item {owner})", b.id, b.kind.name()),
                None => format!("{} ({})", b.id, b.kind.name()),
            }))
        ));
    }
    if !d.vectors.is_empty() {
        let mut by_space: std::collections::BTreeMap<&str, usize> = Default::default();
        for (space, _) in &d.vectors {
            *by_space.entry(space).or_default() += 1;
        }
        text.push_str(&format!(
            "\n  vectors: {}",
            ids(&mut by_space.iter().map(|(s, n)| format!("{n} in `{s}`")))
        ));
    }
    if !d.pages.is_empty() {
        text.push_str(&format!(
            "\n  pages with a lost part: {}",
            d.pages.join(", ")
        ));
    }
    text.push_str("\nrun `memdb repair` to salvage everything else into new segments");
    text
}

pub(crate) fn check_text(r: &CheckReport) -> String {
    let mut text = format!(
        "checked {} segments ({} bytes), {} entries, {} items, {} blobs: ",
        r.segments, r.bytes, r.entries, r.items, r.blobs
    );
    if r.is_clean() {
        text.push_str("clean");
    } else {
        text.push_str(&format!("{} problem(s)", r.problems.len()));
        for p in &r.problems {
            text.push_str(&format!("\n  {p}"));
        }
        text.push_str(&damage_text(&r.damage));
    }
    text
}

pub(crate) fn repair_json(r: &memdb::maintenance::RepairReport) -> Value {
    json!({
        "clean_before": r.was_clean(), "problems_before": r.problems, "problems_after": r.remaining,
        "lost": damage_json(&r.damage),
        "items_dropped": r.items_lost.iter().map(|(id, ext)| json!({"item": id, "external_id": ext})).collect::<Vec<_>>(),
        "stand_ins": r.stand_ins,
        "segments_rewritten": r.compaction.segments_removed.len(),
        "items_kept": r.compaction.items_kept + r.compaction.items_replaced,
        "blobs_kept": r.compaction.blobs_kept + r.compaction.blobs_replaced,
        "versions_kept": r.compaction.versions_kept,
    })
}

pub(crate) fn repair_text(r: &memdb::maintenance::RepairReport) -> String {
    if r.was_clean() {
        return "nothing to repair: the store checks clean".to_owned();
    }
    let mut text = format!(
        "repaired: {} problem(s) found; {} segment(s) rewritten, keeping {} item(s), {} blob(s) and {} earlier version(s) that verified",
        r.problems,
        r.compaction.segments_removed.len(),
        r.compaction.items_kept + r.compaction.items_replaced,
        r.compaction.blobs_kept + r.compaction.blobs_replaced,
        r.compaction.versions_kept,
    );
    if r.damage.is_empty() {
        text.push_str("\nnothing was lost");
    } else {
        text.push_str(&damage_text(&r.damage).replace(
            "\nrun `memdb repair` to salvage everything else into new segments",
            "",
        ));
        text = text.replacen(
            "unreadable because of the damage:",
            "lost (could not be saved):",
            1,
        );
    }
    for (id, ext) in &r.items_lost {
        text.push_str(&format!(
            "\n  item {id} dropped{}",
            ext.as_deref()
                .map(|e| format!(" (external id {e})"))
                .unwrap_or_default()
        ));
    }
    for id in &r.stand_ins {
        text.push_str(&format!(
            "\n  item {id} kept as a stand-in (tag `recovered`): its record was lost, its files saved"
        ));
    }
    if !r.damage.vectors.is_empty() || !r.stand_ins.is_empty() {
        text.push_str("\nrun `memdb embed` to encode the items whose vectors were lost");
    }
    if !r.damage.pages.is_empty() {
        text.push_str(
            "\nrun `memdb pages` to compose the damaged Recent pages again from their originals",
        );
    }
    if r.remaining > 0 {
        text.push_str(&format!(
            "\n{} problem(s) remain: run `memdb check` for details",
            r.remaining
        ));
    }
    text
}

pub(crate) fn compact_json(r: &CompactReport) -> Value {
    json!({
        "segments_removed": r.segments_removed.len(), "segments_written": r.segments_written.len(),
        "bytes_before": r.bytes_before, "bytes_after": r.bytes_after,
        "items_kept": r.items_kept, "blobs_kept": r.blobs_kept,
        "segments_skipped_damaged": r.segments_skipped_damaged,
    })
}

pub(crate) fn compact_text(r: &CompactReport) -> String {
    let mut text = if r.segments_removed.is_empty() {
        "nothing to compact".to_owned()
    } else {
        format!(
            "rewrote {} segment(s) of {} bytes into {} of {} bytes ({} items, {} blobs moved)",
            r.segments_removed.len(),
            r.bytes_before,
            r.segments_written.len(),
            r.bytes_after,
            r.items_kept,
            r.blobs_kept
        )
    };
    if !r.segments_skipped_damaged.is_empty() {
        text.push_str(&format!(
            "\nwarning: {} damaged segment(s) left as they are: run `memdb repair`",
            r.segments_skipped_damaged.len()
        ));
    }
    text
}

pub(crate) fn rebuild_json(r: &memdb::maintenance::RebuildReport) -> Value {
    json!({
        "rebuilt": true, "catalog_error": r.catalog_error, "damaged_copy": r.damaged_copy,
        "items": r.items, "blobs": r.blobs, "items_lost": r.items_lost, "blobs_lost": r.blobs_lost,
        "items_from_segments_only": r.from_segments_only, "deletions_known": r.deletions_known,
        "pages_listed": r.pages_listed, "forgotten_pages_lost": r.forgotten_pages_lost,
        "stand_ins": r.stand_ins, "segments_unreadable": r.segments_unreadable,
        "versions_not_carried": r.versions_not_carried,
        "deleted_items_not_carried": r.deleted_items_not_carried,
    })
}

pub(crate) fn rebuild_text(r: &memdb::maintenance::RebuildReport) -> String {
    let mut text = format!(
        "rebuilt from the segments: {} item(s) with {} blob(s); the damaged store is kept at {} (delete it once you are satisfied)",
        r.items,
        r.blobs,
        r.damaged_copy.display()
    );
    let list = |ids: &[u64]| {
        ids.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !r.items_lost.is_empty() {
        text.push_str(&format!(
            "\nlost: {} item(s) whose record could not be read: {}",
            r.items_lost.len(),
            list(&r.items_lost)
        ));
    }
    if !r.blobs_lost.is_empty() {
        text.push_str(&format!(
            "\nlost: {} blob(s) (originals or attachments) that could not be found or read: {}",
            r.blobs_lost.len(),
            list(&r.blobs_lost)
        ));
    }
    if r.from_segments_only > 0 {
        text.push_str(&format!(
            "\n{} item(s) were taken from the segments alone (newest version){}",
            r.from_segments_only,
            if r.deletions_known {
                ""
            } else {
                "; the op log could not be read whole, so some may be items deleted before the damage"
            }
        ));
    }
    if !r.stand_ins.is_empty() {
        text.push_str(&format!(
            "\n{} item(s) whose records were lost kept their files, as stand-ins tagged `recovered`: {}",
            r.stand_ins.len(),
            list(&r.stand_ins)
        ));
    }
    if !r.segments_unreadable.is_empty() {
        text.push_str(&format!(
            "\nlost: {} segment file(s) that could not be read at all (an encrypted segment whose key was only in the catalog): {}",
            r.segments_unreadable.len(),
            list(&r.segments_unreadable)
        ));
    }
    if r.forgotten_pages_lost > 0 {
        text.push_str(&format!(
            "\nlost: {} forgotten page(s) of {} (their re-encoded pixels were listed only in the catalog)",
            r.forgotten_pages_lost, r.pages_listed
        ));
    }
    if r.versions_not_carried > 0 || r.deleted_items_not_carried > 0 {
        text.push_str(&format!(
            "\nnot carried over: {} earlier version(s) with the op log, {} deleted item(s) kept for an undelete (the damaged copy still holds them)",
            r.versions_not_carried, r.deleted_items_not_carried
        ));
    }
    text.push_str(
        "\nnext: `memdb embed` (vectors and memory graph) and `memdb pages` (scrapbook pages)",
    );
    text
}
