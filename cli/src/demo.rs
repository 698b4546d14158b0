//! `memdb demo`: memdb's main job end to end on its embedded defaults.
//!
//! Builds a store from the sample corpus shipped with memdb (`cli/sample/memories.jsonl`,
//! written for memdb), optionally adds the full corpora from a shared data folder, and shows
//! what the store holds: stats, lookups by external id, time and source, an update, a delete,
//! a compaction and a full check.

use std::path::{Path, PathBuf};

use memdb::{CompactOptions, KeepEverything, Options, ScanFilter, Source, Store, Victims};

use crate::output::{Out, check_text, compact_text, item_table, list_table, stats_table};
use crate::{ImportFormat, import};

const SAMPLE: &str = include_str!("../sample/memories.jsonl");

pub(crate) fn run(
    store_dir: Option<PathBuf>,
    full: Option<PathBuf>,
    out: &Out,
) -> Result<(), String> {
    let temp;
    let dir = match store_dir {
        Some(d) => d,
        None => {
            temp = std::env::temp_dir().join(format!("memdb-demo-{}", std::process::id()));
            temp
        }
    };
    let store = Store::open_or_create(&dir, Options::default()).map_err(|e| e.to_string())?;
    let sample_path = dir.join("sample-memories.jsonl");
    std::fs::write(&sample_path, SAMPLE).map_err(|e| format!("{}: {e}", sample_path.display()))?;
    let mut files = vec![sample_path.clone()];
    let summary = import::import_files(&store, ImportFormat::Jsonl, &files, 1000, false)?;
    std::fs::remove_file(&sample_path).map_err(|e| format!("{}: {e}", sample_path.display()))?;
    let step = |title: &str, body: String| {
        if !out.json {
            println!("\n== {title}\n{body}");
        }
    };
    step(&format!("store {}", dir.display()), summary.text());

    if let Some(shared) = &full {
        files = locomo_files(shared)?;
        let s = import::import_files(&store, ImportFormat::Locomo, &files, 1000, !out.json)?;
        step("full corpora: LoCoMo conversations", s.text());
    }

    let snap = store.snapshot().map_err(|e| e.to_string())?;
    let invoice = snap
        .get_by_external_id("mail-2024-04-29-invoice")
        .map_err(|e| e.to_string())?;
    if let Some(item) = &invoice {
        step(
            "get --external mail-2024-04-29-invoice (it supersedes the booking)",
            item_table(item),
        );
    }
    let may = ScanFilter {
        from_ms: memdb::EventTime::parse("2024-05-01")
            .ok()
            .map(|t| t.unix_ms),
        to_ms: memdb::EventTime::parse("2024-06-01")
            .ok()
            .map(|t| t.unix_ms),
        ..ScanFilter::default()
    };
    step(
        "ls --from 2024-05-01 --to 2024-06-01",
        list_table(&snap.scan(&may).map_err(|e| e.to_string())?),
    );
    let photos = ScanFilter {
        source: Some(Source::Image),
        ..ScanFilter::default()
    };
    step(
        "ls --source image",
        list_table(&snap.scan(&photos).map_err(|e| e.to_string())?),
    );
    drop(snap);

    // A person corrects a note and deletes another: both leave dead bytes that compaction
    // reclaims.
    let mut batch = store.batch();
    batch.delete_external("mail-2024-06-01-newsletter");
    batch.commit().map_err(|e| e.to_string())?;
    let report = store
        .compact(
            &CompactOptions {
                victims: Victims::All,
            },
            &mut KeepEverything,
        )
        .map_err(|e| e.to_string())?;
    step("delete the newsletter, then compact", compact_text(&report));
    semantic_lookups(&store, out, &step)?;

    let stats = store.stats().map_err(|e| e.to_string())?;
    step("stats", stats_table(&stats));
    let check = store.check().map_err(|e| e.to_string())?;
    step("check", check_text(&check));
    out.emit(
        serde_json::json!({"store": dir, "stats": crate::output::stats_json(&stats), "check_clean": check.is_clean()}),
        || format!("\nDone. Explore it with: memdb ls {}", dir.display()),
    );
    if !check.is_clean() {
        return Err("check found problems".into());
    }
    Ok(())
}

/// What the encoder reads of an item: date, who, and every text field.
fn item_text(item: &memdb::Item) -> String {
    let f = &item.fields;
    let date = f.time.to_rfc3339();
    let who = f
        .speaker
        .as_deref()
        .or(f.from.as_deref())
        .map(|w| format!(" {w}:"))
        .unwrap_or_default();
    let parts: Vec<&str> = [&f.summary, &f.body, &f.caption, &f.ocr]
        .into_iter()
        .filter_map(|p| p.as_deref())
        .collect();
    format!("[{}]{who} {}", &date[..10], parts.join(" "))
}

/// Encodes every item on the device and answers a few questions by exact cosine similarity.
/// (Vectors are not stored yet: the vector index is a later capability.)
fn semantic_lookups(store: &Store, out: &Out, step: &dyn Fn(&str, String)) -> Result<(), String> {
    use memdb_encode::{Encoder, EncoderOptions, MiniLm};
    let model_dir = crate::model::ensure_installed(!out.json)?;
    let started = std::time::Instant::now();
    let encoder = MiniLm::load(&model_dir, EncoderOptions::default()).map_err(|e| e.to_string())?;
    store
        .bind_model(&encoder.model_id().to_string())
        .map_err(|e| e.to_string())?;
    let items = store
        .snapshot()
        .and_then(|s| s.scan(&ScanFilter::default()))
        .map_err(|e| e.to_string())?;
    let texts: Vec<String> = items.iter().map(item_text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = encoder.encode(&refs).map_err(|e| e.to_string())?;
    let mut body = format!(
        "encoded {} items with {} on {} thread(s) in {:.1} s",
        items.len(),
        encoder.model_id(),
        encoder.threads(),
        started.elapsed().as_secs_f64()
    );
    for question in [
        "where did I stay in Lisbon?",
        "what did I give Mila for her birthday?",
    ] {
        let q = encoder.encode(&[question]).map_err(|e| e.to_string())?;
        let mut scored: Vec<(f32, &memdb::Item)> = vectors
            .iter()
            .zip(&items)
            .map(|(v, item)| (v.iter().zip(&q[0]).map(|(a, b)| a * b).sum(), item))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        body.push_str(&format!("\n\n\"{question}\""));
        for (score, item) in scored.iter().take(3) {
            let ext = item.fields.external_id.as_deref().unwrap_or("");
            body.push_str(&format!("\n  {score:.3}  {ext}"));
        }
    }
    step(
        "semantic recall on the device (exact cosine, all-MiniLM-L6-v2)",
        body,
    );
    Ok(())
}

fn locomo_files(shared: &Path) -> Result<Vec<PathBuf>, String> {
    let folder = shared.join("locomo");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map_err(|e| {
            format!(
                "{}: {e} (point --full at the shared data folder)",
                folder.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}
