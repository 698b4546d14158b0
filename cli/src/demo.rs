//! `memdb demo`: memdb's main job end to end on its embedded defaults.
//!
//! Builds a store from the sample corpus shipped with memdb (`cli/sample/memories.jsonl`,
//! written for memdb), optionally adds the full corpora from a shared data folder, and shows
//! what the store holds: stats, lookups by external id, time and source, an update, a delete,
//! a compaction and a full check.

use crate::error::{CliError, Result};
use std::path::{Path, PathBuf};

use memdb::{
    ScanFilter, Source, Store, maintenance::CompactOptions, maintenance::KeepEverything,
    maintenance::Victims, vectors::VectorScope,
};

use crate::args::ImportFormat;
use crate::import;
use crate::output::{Out, check_text, compact_text, item_table, list_table, stats_table};

const SAMPLE: &str = include_str!("../sample/memories.jsonl");

pub(crate) fn run(store_dir: Option<PathBuf>, full: Option<PathBuf>, out: &Out) -> Result<()> {
    let temp;
    let dir = match store_dir {
        Some(d) => d,
        None => {
            temp = std::env::temp_dir().join(format!("memdb-demo-{}", std::process::id()));
            temp
        }
    };
    let store = Store::open_or_create(&dir, crate::keys::options_for(&dir)?)?;
    let sample_path = dir.join("sample-memories.jsonl");
    std::fs::write(&sample_path, SAMPLE).map_err(|e| CliError::io("write", &sample_path, e))?;
    let mut files = vec![sample_path.clone()];
    let summary = import::import_files(&store, ImportFormat::Jsonl, &files, 1000, false, None)?;
    std::fs::remove_file(&sample_path).map_err(|e| CliError::io("remove", &sample_path, e))?;
    let step = |title: &str, body: String| {
        if !out.json {
            crate::output::say(&format!("\n== {title}\n{body}"));
        }
    };
    step(&format!("store {}", dir.display()), summary.text());

    if let Some(shared) = &full {
        files = locomo_files(shared)?;
        let s = import::import_files(&store, ImportFormat::Locomo, &files, 1000, !out.json, None)?;
        step("full corpora: LoCoMo conversations", s.text());
    }

    let snap = store.snapshot()?;
    let invoice = snap.get_by_external_id("mail-2024-04-29-invoice")?;
    if let Some(item) = &invoice {
        step(
            "get --external mail-2024-04-29-invoice (it supersedes the booking)",
            item_table(item),
        );
    }
    let may_days = memdb::TimeWindow::between(
        memdb::time::TimeBound::Day(jiff::civil::date(2024, 5, 1)),
        memdb::time::TimeBound::Day(jiff::civil::date(2024, 5, 31)),
    );
    let may = ScanFilter {
        time: may_days.map_err(|source| CliError::Time {
            flag: "--from 2024-05-01 --to 2024-05-31",
            source,
        })?,
        ..ScanFilter::default()
    };
    step(
        "ls --from 2024-05-01 --to 2024-05-31",
        list_table(&snap.scan(&may)?),
    );
    let photos = ScanFilter {
        source: Some(Source::Image),
        ..ScanFilter::default()
    };
    step("ls --source image", list_table(&snap.scan(&photos)?));
    drop(snap);

    // A person corrects a note and deletes another: both leave dead bytes that compaction
    // reclaims.
    let mut batch = store.batch();
    batch.delete_external("mail-2024-06-01-newsletter");
    batch.commit()?;
    let report = store.compact(
        &CompactOptions {
            victims: Victims::All,
        },
        &mut KeepEverything,
    )?;
    step("delete the newsletter, then compact", compact_text(&report));
    semantic_lookups(&store, out, &step)?;

    let stats = store.stats()?;
    step("stats", stats_table(&stats));
    let check = store.check()?;
    step("check", check_text(&check));
    out.emit(
        serde_json::json!({"store": dir, "stats": crate::output::stats_json(&stats), "check_clean": check.is_clean()}),
        || format!("\nDone. Explore it with: memdb ls {}", dir.display()),
    );
    if !check.is_clean() {
        return Err(CliError::CheckFailed);
    }
    Ok(())
}

fn semantic_lookups(store: &Store, out: &Out, step: &dyn Fn(&str, String)) -> Result<()> {
    let encoder = crate::embed::encoder_for(store, !out.json, crate::model::Download::Allowed)?;
    let report = crate::embed::embed_missing(store, &encoder, !out.json)?;
    let mut body = report.text();
    let searches = [
        ("where did I stay in Lisbon?", VectorScope::all(), ""),
        (
            "what did I give Mila for her birthday?",
            VectorScope::all(),
            "",
        ),
        (
            "how much did it cost?",
            VectorScope::all().with_source(Source::Email.code()),
            " (mail only)",
        ),
    ];
    for (question, scope, note) in searches {
        body.push_str(&format!("\n\n\"{question}\"{note}"));
        for row in crate::embed::similar(store, &encoder, question, 3, &scope)? {
            let ext = row.item.fields.external_id.as_deref().unwrap_or("");
            body.push_str(&format!("\n  {:.3}  {ext}", row.score.unwrap_or_default()));
        }
    }
    step(
        "memdb embed, then memdb similar (exact cosine over the stored item vectors)",
        body,
    );

    // Full recall: dense + BM25 + memory-graph path overlap, each hit explained.
    let question = "what did I give Mila for her birthday?";
    let answer = crate::embed::recall(
        store,
        &encoder,
        memdb_query::Recall {
            text: question.to_owned(),
            filters: Vec::new(),
            at: memdb_query::TimeTravel::default(),
            asked_on: None,
            top: Some(3),
        },
    )?;
    let mut body = format!(
        "\"{question}\"  query nodes: {}",
        answer.query_nodes.join(", ")
    );
    let rank = |r: Option<usize>| r.map_or("-".to_owned(), |r| r.to_string());
    for row in &answer.rows {
        let ext = row.item.fields.external_id.as_deref().unwrap_or("");
        let why = row.why.clone().unwrap_or_default();
        body.push_str(&format!(
            "\n  {ext}  dense #{} lexical #{} graph #{}  nodes: {}",
            rank(why.dense_rank),
            rank(why.lexical_rank),
            rank(why.graph_rank),
            why.nodes.join(", ")
        ));
    }
    body.push_str(&format!(
        "\n  (search {:.2} ms, encoding {:.2} ms)",
        answer.search_ms, answer.encode_ms
    ));
    step(
        "memdb recall (dense + BM25 + memory graph, explained)",
        body,
    );
    Ok(())
}

fn locomo_files(shared: &Path) -> Result<Vec<PathBuf>> {
    let folder = shared.join("locomo");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map_err(|source| CliError::Io {
            op: "list",
            path: folder.clone(),
            source,
            hint: " (point --full at the shared data folder)",
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}
