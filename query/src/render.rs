//! Results as tables of text (for the shell) and as JSON (for scripts and `--json`).
//!
//! The shell decides how wide a table may be; this module only decides which columns a
//! result has and what each cell says.

use memdb::{Item, recall::item_text};
use serde_json::{Value, json};

use crate::ast::{Query, Statement};
use crate::exec::{ItemRow, Output, PathRow, Plan, Rows};

/// A titled table of text cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What the table shows (`None` for the main rows).
    pub title: Option<String>,
    /// Column names.
    pub header: Vec<String>,
    /// Cells, one `Vec` per row, as long as `header`.
    pub rows: Vec<Vec<String>>,
}

fn block(title: Option<&str>, header: &[&str], rows: Vec<Vec<String>>) -> Block {
    Block {
        title: title.map(str::to_owned),
        header: header.iter().map(|h| (*h).to_owned()).collect(),
        rows,
    }
}

/// Longest text shown in a table cell; JSON carries the whole text.
const CELL_CHARS: usize = 160;

fn clip(text: &str) -> String {
    if text.chars().count() <= CELL_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(CELL_CHARS - 1).collect();
    out.push('…');
    out
}

/// Which optional columns a table of item rows has: those some row fills.
#[derive(Clone, Copy)]
struct ItemColumns {
    version: bool,
    valid: bool,
    score: bool,
    why: bool,
}

fn item_cells(row: &ItemRow, columns: ItemColumns) -> Vec<String> {
    let item = &row.item;
    let mut cells = vec![
        item.id.to_string(),
        item.fields.time.to_rfc3339(),
        item.fields.source.to_string(),
        item.fields.external_id.clone().unwrap_or_default(),
    ];
    if columns.version {
        cells.push(row.replaced_ms.map_or_else(
            || "current".to_owned(),
            |ms| format!("replaced {}", memdb::EventTime::utc(ms)),
        ));
    }
    if columns.valid {
        cells.push(row.valid.map_or_else(String::new, |(from, to)| {
            let end = |ms: Option<i64>| {
                ms.map_or_else(
                    || "…".to_owned(),
                    |ms| memdb::EventTime::utc(ms).to_string(),
                )
            };
            format!("{} – {}", end(from), end(to))
        }));
    }
    if columns.score {
        cells.push(row.score.map_or_else(String::new, |s| format!("{s:.4}")));
    }
    if columns.why {
        cells.push(row.why.as_ref().map_or_else(String::new, why));
    }
    cells.push(clip(&item_text(item)));
    cells
}

fn why(e: &memdb::recall::Explanation) -> String {
    let mut parts = Vec::new();
    for (name, rank) in [
        ("dense", e.dense_rank),
        ("bm25", e.lexical_rank),
        ("graph", e.graph_rank),
        ("place", e.place_rank),
    ] {
        if let Some(r) = rank {
            parts.push(format!("{name} #{r}"));
        }
    }
    if let Some(place) = &e.place {
        parts.push(format!("at {place}"));
    }
    if e.in_question_time {
        parts.push("in the question's time".to_owned());
    }
    if let Some(old) = e.corrects {
        parts.push(format!("corrects #{old}"));
    }
    if !e.nodes.is_empty() {
        parts.push(format!("nodes: {}", e.nodes.join(", ")));
    }
    parts.join("; ")
}

/// Item rows as a table: id, time, source, external id, then the version, score and why
/// columns where some row has one, and the text recall indexes (clipped). The one table of
/// items every tool prints (`memdb ls`, `similar`, `recall` and the shell's rows).
pub fn items_block(title: Option<&str>, rows: &[ItemRow]) -> Block {
    let columns = ItemColumns {
        version: rows.iter().any(|r| r.replaced_ms.is_some()),
        valid: rows.iter().any(|r| r.valid.is_some()),
        score: rows.iter().any(|r| r.score.is_some()),
        why: rows.iter().any(|r| r.why.is_some()),
    };
    let mut header = vec!["id", "time", "source", "external id"];
    if columns.version {
        header.push("version");
    }
    if columns.valid {
        header.push("valid");
    }
    if columns.score {
        header.push("score");
    }
    if columns.why {
        header.push("why");
    }
    header.push("text");
    block(
        title,
        &header,
        rows.iter().map(|r| item_cells(r, columns)).collect(),
    )
}

fn paths_block(title: Option<&str>, rows: &[PathRow]) -> Block {
    let scored = rows.iter().any(|r| r.score.is_some());
    let header: &[&str] = if scored {
        &["path", "page", "score", "overlap", "items", "nodes"]
    } else {
        &["path", "page", "items", "nodes"]
    };
    let cells = rows
        .iter()
        .map(|r| {
            let mut c = vec![r.path.to_string(), r.page.clone()];
            if scored {
                c.push(r.score.map_or_else(String::new, |s| format!("{s:.3}")));
                c.push(r.overlap.map_or_else(String::new, |o| o.to_string()));
            }
            c.push(r.items.len().to_string());
            c.push(clip(&r.nodes.join(", ")));
            c
        })
        .collect();
    block(title, header, cells)
}

/// One item as a field/value table (fields it does not have left out), then `extra` rows: the
/// one table of a single item (`SHOW ITEM`, `memdb get`).
pub fn item_block(item: &Item, extra: Vec<(String, String)>) -> Block {
    let f = &item.fields;
    let mut rows = vec![
        ("id".to_owned(), item.id.to_string()),
        ("time".to_owned(), f.time.to_rfc3339()),
        ("source".to_owned(), f.source.to_string()),
        (
            "committed".to_owned(),
            memdb::EventTime::utc(item.ingest_time_ms).to_rfc3339(),
        ),
    ];
    let optional = [
        ("external id", f.external_id.clone()),
        ("speaker", f.speaker.clone()),
        ("from", f.from.clone()),
        ("to", (!f.to.is_empty()).then(|| f.to.join(", "))),
        ("summary", f.summary.clone()),
        ("body", f.body.clone()),
        ("caption", f.caption.clone()),
        ("short caption", f.short_caption.clone()),
        (
            "captioned by",
            f.caption_provenance
                .as_ref()
                .map(|p| format!("{} at {}", p.model, memdb::EventTime::utc(p.at_ms))),
        ),
        ("ocr", f.ocr.clone()),
        (
            "entities",
            (!f.entities.is_empty()).then(|| f.entities.join(", ")),
        ),
        ("tags", (!f.tags.is_empty()).then(|| f.tags.join(", "))),
        ("place", f.location.as_ref().map(place_cell)),
        (
            "camera",
            f.camera.as_ref().map(|c| {
                let lens = c.lens.as_deref().map(|l| format!(", lens {l}"));
                format!("{}{}", c.label(), lens.unwrap_or_default())
                    .trim_start_matches(", ")
                    .to_owned()
            }),
        ),
        ("orientation", f.orientation.map(|o| o.name().to_owned())),
        ("supersedes", item.supersedes.map(|s| s.to_string())),
        (
            "blobs",
            (!item.blobs.is_empty()).then(|| format!("{:?}", item.blobs)),
        ),
    ];
    rows.extend(
        optional
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))),
    );
    rows.extend(extra);
    block(
        None,
        &["field", "value"],
        rows.into_iter().map(|(k, v)| vec![k, v]).collect(),
    )
}

/// Where an item is, as one cell: its own name, the place its position is in ("Paris,
/// Île-de-France, France", with the neighbourhood it was nearest) and the coordinates —
/// `Tour Eiffel — Paris 16 Passy, Paris, Île-de-France, France (48.857833, 2.297)`.
fn place_cell(l: &memdb::item::Location) -> String {
    let label = l.place.as_ref().map(|p| {
        let mut label = p.label();
        if let Some(locality) = &p.locality {
            label = format!("{locality}, {label}");
        }
        label
    });
    // The place stage names an item without a name after its place: not said twice.
    let own = l
        .name
        .as_ref()
        .filter(|n| l.place.as_ref().is_none_or(|p| **n != p.label()));
    let mut cell = [own.cloned(), label]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" — ");
    if let Some(g) = l.geo {
        if !cell.is_empty() {
            cell.push(' ');
        }
        cell.push_str(&format!("({}, {})", g.lat, g.lon));
    }
    cell
}

/// The plan as a table: stage, detail, estimated and actual candidates, milliseconds.
pub(crate) fn plan_block(plan: &Plan) -> Block {
    let ms = |us: u64| format!("{:.3}", us as f64 / 1000.0);
    let mut rows = vec![
        vec![
            "parse".into(),
            String::new(),
            String::new(),
            String::new(),
            ms(plan.parse_us),
        ],
        vec![
            "plan".into(),
            String::new(),
            String::new(),
            String::new(),
            ms(plan.plan_us),
        ],
    ];
    rows.extend(plan.stages.iter().map(|s| {
        vec![
            s.name.clone(),
            s.detail.clone(),
            s.estimated
                .map_or_else(|| "-".to_owned(), |e| e.to_string()),
            s.actual.to_string(),
            ms(s.micros),
        ]
    }));
    rows.push(vec![
        "total".into(),
        String::new(),
        String::new(),
        String::new(),
        ms(plan.total_us()),
    ]);
    block(
        Some("plan"),
        &["stage", "detail", "estimated", "actual", "ms"],
        rows,
    )
}

/// The result as tables; an `EXPLAIN` starts with its plan.
pub fn to_blocks(out: &Output) -> Vec<Block> {
    let mut blocks = Vec::new();
    if out.is_explain() {
        blocks.push(plan_block(&out.plan));
    }
    if !out.notes.is_empty() {
        blocks.push(block(
            Some("notes"),
            &["note"],
            out.notes.iter().map(|n| vec![n.clone()]).collect(),
        ));
    }
    match &out.rows {
        Rows::Items(rows) if out.no_good_match.is_some() => {
            // Said before the rows, in the rows' title: they are the nearest, not an answer.
            let why = out.no_good_match.as_deref().unwrap_or_default();
            let title = format!("no item matches well ({why}); the nearest items");
            blocks.push(items_block(Some(&title), rows));
        }
        Rows::Items(rows) => blocks.push(items_block(None, rows)),
        Rows::Paths(rows) => blocks.push(paths_block(None, rows)),
        Rows::Item(d) => {
            let mut extra = Vec::new();
            if let Some((path, page)) = &d.path {
                extra.push(("path".to_owned(), format!("{path} (page {page})")));
            }
            if !d.nodes.is_empty() {
                extra.push(("nodes".to_owned(), d.nodes.join(", ")));
            }
            blocks.push(item_block(&d.item, extra));
        }
        Rows::Node(d) => {
            let n = &d.node;
            blocks.push(block(
                None,
                &["node", "phrase", "kind", "aliases", "paths"],
                vec![vec![
                    n.id.to_string(),
                    n.phrase.clone(),
                    format!("{:?}", n.kind).to_lowercase(),
                    n.aliases.join(", "),
                    d.paths.len().to_string(),
                ]],
            ));
            blocks.push(paths_block(Some("paths"), &d.paths));
        }
        Rows::Path(path, items) => {
            blocks.push(paths_block(None, std::slice::from_ref(path)));
            blocks.push(items_block(Some("items"), items));
        }
        Rows::Page(day, paths, items) => {
            blocks.push(paths_block(Some(&format!("paths of {day}")), paths));
            blocks.push(items_block(Some(&format!("items of {day}")), items));
        }
        Rows::Stats(s) => {
            let st = &s.stats;
            let mut rows = vec![vec!["items".to_owned(), st.items.to_string()]];
            for (source, n) in &st.items_by_source {
                rows.push(vec![format!("items: {source}"), n.to_string()]);
            }
            rows.push(vec!["blobs".into(), st.blobs().to_string()]);
            rows.push(vec!["graph nodes".into(), s.nodes.to_string()]);
            rows.push(vec!["graph paths".into(), s.paths.to_string()]);
            for (space, n) in &s.vectors {
                rows.push(vec![format!("vectors: {space}"), n.to_string()]);
            }
            if let Some(model) = &s.model {
                rows.push(vec!["model".into(), model.clone()]);
            }
            rows.push(vec!["segments".into(), st.segments.len().to_string()]);
            rows.push(vec!["segment bytes".into(), st.segment_bytes.to_string()]);
            rows.push(vec!["dead bytes".into(), st.dead_bytes.to_string()]);
            rows.push(vec!["catalog bytes".into(), st.catalog_bytes.to_string()]);
            blocks.push(block(None, &["what", "value"], rows));
        }
        Rows::Forget(r) => blocks.push(forget_block(r)),
    }
    blocks
}

/// An item as JSON: the one shape every tool prints an item in (`memdb get`, `ls`, `similar`,
/// `recall`, and the rows of `ITEMS`, `RECALL`, `HISTORY` and `SHOW`). Every stored field,
/// absent ones as `null` (or `[]`), and `text`: what recall indexes, as one line.
pub fn item_json(item: &Item) -> Value {
    let f = &item.fields;
    json!({
        "id": item.id,
        "external_id": f.external_id,
        "source": f.source.name(),
        "time": f.time.to_rfc3339(),
        "ingest_time_ms": item.ingest_time_ms,
        "location": f.location.as_ref().map(|l| json!({
            "name": l.name, "lat": l.geo.map(|g| g.lat), "lon": l.geo.map(|g| g.lon),
            "place": l.place.as_ref().map(|p| json!({
                "city": p.city, "locality": p.locality, "region": p.region,
                "country": p.country, "country_code": p.country_code,
                "distance_m": p.distance_m, "geonames_id": p.geonames_id,
            })),
        })),
        "entities": f.entities, "tags": f.tags, "ocr": f.ocr, "caption": f.caption,
        "short_caption": f.short_caption,
        "caption_provenance": f.caption_provenance.as_ref().map(|p| json!({
            "model": p.model, "at": memdb::EventTime::utc(p.at_ms).to_rfc3339(),
        })),
        "camera": f.camera.as_ref().map(|c| json!({
            "make": c.make, "model": c.model, "lens": c.lens,
        })),
        "orientation": f.orientation.map(|o| o.name()),
        "summary": f.summary, "body": f.body, "speaker": f.speaker, "from": f.from, "to": f.to,
        "supersedes": item.supersedes, "blobs": item.blobs,
        "user_id": f.scope.user_id, "agent_id": f.scope.agent_id, "run_id": f.scope.run_id,
        "text": item_text(item),
    })
}

/// A row of items as JSON: [`item_json`] with what the result adds about the item beside its
/// fields: `score` (ranked results), `why` (`RECALL`), `replaced` (an earlier version) and
/// `valid_from` / `valid_to` (a version's valid time; `null` is unbounded).
pub fn item_row_json(row: &ItemRow) -> Value {
    let mut v = item_json(&row.item);
    if let Some(score) = row.score {
        v["score"] = json!(score);
    }
    if let Some(ms) = row.replaced_ms {
        v["replaced"] = json!(memdb::EventTime::utc(ms).to_rfc3339());
    }
    if let Some((from, to)) = row.valid {
        let end = |ms: Option<i64>| ms.map(|ms| memdb::EventTime::utc(ms).to_rfc3339());
        v["valid_from"] = json!(end(from));
        v["valid_to"] = json!(end(to));
    }
    if let Some(e) = &row.why {
        v["why"] = json!({
            "dense_rank": e.dense_rank,
            "dense_score": e.dense_score,
            "lexical_rank": e.lexical_rank,
            "graph_rank": e.graph_rank,
            "place_rank": e.place_rank,
            "place": e.place,
            "nodes": e.nodes,
            "path": e.path.as_ref().map(|(id, page)| json!({"id": id, "page": page})),
        });
    }
    v
}

fn path_json(row: &PathRow) -> Value {
    json!({
        "path": row.path,
        "page": row.page,
        "score": row.score,
        "overlap": row.overlap,
        "nodes": row.nodes,
        "items": row.items,
    })
}

fn plan_json(plan: &Plan) -> Value {
    json!({
        "parse_us": plan.parse_us,
        "plan_us": plan.plan_us,
        "total_us": plan.total_us(),
        "stages": plan.stages.iter().map(|s| json!({
            "stage": s.name,
            "detail": s.detail,
            "estimated": s.estimated,
            "actual": s.actual,
            "us": s.micros,
        })).collect::<Vec<_>>(),
    })
}

/// The result as one JSON document: `{"statement", "kind", "rows" | …, "plan"}`, and for
/// `RECALL` its `query_nodes`.
pub fn to_json(out: &Output) -> Value {
    let items = |rows: &[ItemRow]| rows.iter().map(item_row_json).collect::<Vec<_>>();
    let paths = |rows: &[PathRow]| rows.iter().map(path_json).collect::<Vec<_>>();
    let (kind, body) = match &out.rows {
        Rows::Items(rows) => ("items", json!({ "rows": items(rows) })),
        Rows::Paths(rows) => ("paths", json!({ "rows": paths(rows) })),
        Rows::Item(d) => (
            "item",
            json!({
                "item": item_json(&d.item),
                "path": d.path.as_ref().map(|(id, page)| json!({"id": id, "page": page})),
                "nodes": d.nodes,
            }),
        ),
        Rows::Node(d) => (
            "node",
            json!({
                "node": {
                    "id": d.node.id,
                    "phrase": d.node.phrase,
                    "kind": format!("{:?}", d.node.kind).to_lowercase(),
                    "aliases": d.node.aliases,
                },
                "paths": paths(&d.paths),
            }),
        ),
        Rows::Path(p, rows) => ("path", json!({ "path": path_json(p), "rows": items(rows) })),
        Rows::Page(day, p, rows) => (
            "page",
            json!({ "page": day.to_string(), "paths": paths(p), "rows": items(rows) }),
        ),
        Rows::Stats(s) => (
            "stats",
            json!({
                "items": s.stats.items,
                "items_by_source": s.stats.items_by_source.iter()
                    .map(|(src, n)| (src.name().to_owned(), json!(n)))
                    .collect::<serde_json::Map<_, _>>(),
                "blobs": s.stats.blobs(),
                "graph_nodes": s.nodes,
                "graph_paths": s.paths,
                "vectors": s.vectors.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "model": s.model,
                "segment_bytes": s.stats.segment_bytes,
                "dead_bytes": s.stats.dead_bytes,
                "catalog_bytes": s.stats.catalog_bytes,
            }),
        ),
        Rows::Forget(r) => ("forget", forget_json(r)),
    };
    let mut doc = json!({ "statement": out.statement.to_string(), "kind": kind });
    if let (Value::Object(doc), Value::Object(body)) = (&mut doc, body) {
        doc.extend(body);
    }
    if let Statement::Query(Query::Recall(_)) | Statement::Explain(Query::Recall(_)) =
        &out.statement
    {
        doc["query_nodes"] = json!(out.query_nodes);
        doc["no_good_match"] = json!(out.no_good_match);
    }
    if !out.notes.is_empty() {
        doc["notes"] = json!(out.notes);
    }
    doc["plan"] = plan_json(&out.plan);
    // Only when something was: a sound store's answers are as they were.
    if let Some(warning) = out.skipped.describe() {
        doc["skipped"] = json!({
            "items": out.skipped.items,
            "vector_blocks": out.skipped.vector_blocks,
            "warning": warning,
        });
    }
    doc
}

/// The table of a forgetting run: one row per stage, titled with the bytes saved.
pub fn forget_block(r: &memdb::forget::ForgetReport) -> Block {
    let rows = r
        .stages
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.pages.to_string(),
                s.pages_changed.to_string(),
                s.page_bytes_before.to_string(),
                s.page_bytes_after.to_string(),
                s.originals_dropped.to_string(),
                s.original_bytes_dropped.to_string(),
                s.nodes_faded.to_string(),
                s.vectors_quantized.to_string(),
            ]
        })
        .collect();
    let title = format!(
        "{}policy {} as of {}: {} bytes of pages, originals and vectors {}",
        if r.dry_run { "dry run: " } else { "" },
        r.policy,
        r.as_of,
        r.bytes_saved(),
        if r.dry_run { "would be saved" } else { "saved" }
    );
    block(
        Some(&title),
        &[
            "stage",
            "pages",
            "changed",
            "page bytes before",
            "after",
            "originals dropped",
            "their bytes",
            "nodes faded",
            "vectors quantized",
        ],
        rows,
    )
}

/// A forgetting run as JSON.
pub fn forget_json(r: &memdb::forget::ForgetReport) -> Value {
    json!({
        "policy": r.policy, "as_of": r.as_of, "dry_run": r.dry_run,
        "pages_composed": r.pages_composed, "bytes_saved": r.bytes_saved(),
        "store_bytes_before": r.store_bytes_before, "store_bytes_after": r.store_bytes_after,
        "originals": r.originals.iter().map(|o| json!({
            "item": o.item, "external_id": o.external_id, "blob": o.blob, "bytes": o.bytes,
            "day": o.day, "stage": o.stage,
        })).collect::<Vec<_>>(),
        "stages": r.stages.iter().map(|s| json!({
            "name": s.name, "pages": s.pages, "pages_changed": s.pages_changed,
            "page_bytes_before": s.page_bytes_before, "page_bytes_after": s.page_bytes_after,
            "originals_dropped": s.originals_dropped,
            "original_bytes_dropped": s.original_bytes_dropped, "nodes_faded": s.nodes_faded,
            "vectors_quantized": s.vectors_quantized, "vector_bytes_saved": s.vector_bytes_saved,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use memdb::Item;

    use super::*;

    /// The Eiffel Tower photo as a JSONL line gives it, with every field of record version 2.
    fn photo() -> Item {
        let line = r#"{"source":"image","time":"2002-08-24T13:59:08+02:00",
            "location":{"name":"Paris, Île-de-France, France","lat":48.857833,"lon":2.297,
            "place":{"city":"Paris","locality":"Paris 16 Passy","region":"Île-de-France",
            "country":"France","country_code":"FR","distance_m":3800,"geonames_id":2988507}},
            "camera":{"make":"FUJIFILM","model":"FinePixS2Pro","lens":"28mm"},
            "orientation":"landscape","short_caption":"the tower",
            "caption_provenance":{"model":"vlm","at":"2023-11-14T22:13:20Z"}}"#
            .replace('\n', "");
        let report =
            memdb_formats::import::jsonl::parse(std::path::Path::new("p.jsonl"), line.as_bytes());
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        Item {
            id: 4,
            ingest_time_ms: 0,
            fields: report.items[0].draft.fields.clone(),
            supersedes: None,
            blobs: Vec::new(),
        }
    }

    #[test]
    fn an_item_shows_its_place_camera_and_caption_provenance() {
        let item = photo();
        let v = item_json(&item);
        assert_eq!(v["location"]["place"]["city"], "Paris");
        assert_eq!(v["location"]["place"]["geonames_id"], 2_988_507);
        assert_eq!(v["location"]["name"], "Paris, Île-de-France, France");
        assert_eq!(v["camera"]["model"], "FinePixS2Pro");
        assert_eq!(v["orientation"], "landscape");
        assert_eq!(v["short_caption"], "the tower");
        assert_eq!(v["caption_provenance"]["model"], "vlm");
        assert_eq!(v["caption_provenance"]["at"], "2023-11-14T22:13:20+00:00");

        let table = item_block(&item, Vec::new());
        let row = |field: &str| {
            table
                .rows
                .iter()
                .find(|r| r[0] == field)
                .map(|r| r[1].clone())
        };
        assert_eq!(
            row("place").as_deref(),
            Some("Paris 16 Passy, Paris, Île-de-France, France (48.857833, 2.297)")
        );
        assert_eq!(
            row("camera").as_deref(),
            Some("FUJIFILM FinePixS2Pro, lens 28mm")
        );
        assert_eq!(row("orientation").as_deref(), Some("landscape"));
        assert_eq!(
            row("captioned by").as_deref(),
            Some("vlm at 2023-11-14T22:13:20+00:00")
        );

        // A name of its own stays in front; an item without a place shows name and position.
        let mut own = item.clone();
        own.fields.location.as_mut().unwrap().name = Some("Tour Eiffel".into());
        let table = item_block(&own, Vec::new());
        assert!(table.rows.iter().any(|r| r[0] == "place"
            && r[1] == "Tour Eiffel — Paris 16 Passy, Paris, Île-de-France, France (48.857833, 2.297)"));
        let mut bare = item;
        bare.fields.location.as_mut().unwrap().place = None;
        bare.fields.camera = None;
        let v = item_json(&bare);
        assert!(v["location"]["place"].is_null() && v["camera"].is_null());
        let table = item_block(&bare, Vec::new());
        assert!(
            table
                .rows
                .iter()
                .any(|r| r[0] == "place"
                    && r[1] == "Paris, Île-de-France, France (48.857833, 2.297)")
        );
    }
}
