//! `memdb embed` and `memdb similar`: item embeddings with the on-device encoder, stored in the
//! store's item vector space, and exact semantic search over them.
//!
//! Embedding is incremental (only items without a vector are encoded), bounded in memory (a
//! window of items at a time, one commit per window, so an interrupted run keeps what it
//! committed) and bound to one model: the store records the encoder's id and weights hash and
//! refuses vectors of another model.

use std::process::ExitCode;

use crate::args::{RecallArgs, SimilarArgs};
use crate::error::{CliError, Result};
use crate::model;
use crate::open::open_for_reading;
use crate::output::{self, Out};
use memdb_query::item_row_json;
use std::time::Instant;

use memdb::{
    IngestOptions, Store, graph::GraphReport, ingest::PageStage, vectors::ITEM_VECTORS,
    vectors::VectorScope,
};
use memdb_encode::{Encoder, MiniLm};
use memdb_query::{ItemRow, Query, QueryContext, Rows, Statement, StoreQuery};

/// Loads the encoder and binds the store to it. A model not installed yet is downloaded only
/// as `download` allows (see [`crate::model::Download`]).
pub(crate) fn encoder_for(
    store: &Store,
    verbose: bool,
    download: crate::model::Download,
) -> Result<MiniLm> {
    let encoder = crate::model::load_encoder(verbose, download)?;
    store.bind_model(&encoder.model_id().to_string())?;
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
    /// The style the item text was written in.
    pub(crate) item_text: memdb::recall::ItemTextStyle,
    /// Vectors made again because their text changed (another style, or a newer recipe).
    pub(crate) remade: u64,
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
            "item_text": self.item_text.name(),
            "remade": self.remade,
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
            "encoded {} items ({} already had a vector; {} made again from new text, {} style) with {} on {} thread(s) in {:.1} s ({rate:.0} items/s)\n\
             memory graph: {} items added, {} new nodes, {} phrases merged into existing nodes, {} new paths\n\
             pages of changed items brought up to date: {}",
            self.encoded,
            self.already,
            self.remade,
            self.item_text.name(),
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
) -> Result<EmbedReport> {
    embed_in_style(store, encoder, None, progress)
}

/// [`embed_missing`], after choosing `style` for the store's item text when one is given: the
/// vectors made in the other style are dropped (in the commit that records the choice) and
/// made again here.
pub(crate) fn embed_in_style(
    store: &Store,
    encoder: &MiniLm,
    style: Option<memdb::recall::ItemTextStyle>,
    progress: bool,
) -> Result<EmbedReport> {
    let started = Instant::now();
    let dropped = match style {
        Some(style) => store.set_item_text_style(style)?,
        None => 0,
    };
    let mut stages = crate::progress::Stages::new(progress);
    let options = IngestOptions {
        pages: PageStage::Stale,
        ..IngestOptions::default()
    };
    let report = store
        .ingest(options)
        .and_then(|ingest| ingest.finish(Some(encoder), &mut |s, d, t| stages.report(s, d, t)))?;
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
        item_text: store.snapshot()?.item_text_style()?,
        remade: dropped + embedded.stale,
    })
}

/// The `k` items nearest to `text` within `scope`, best first, each with its cosine as its
/// score.
pub(crate) fn similar(
    store: &Store,
    encoder: &MiniLm,
    text: &str,
    k: usize,
    scope: &VectorScope,
) -> Result<Vec<ItemRow>> {
    let query = encoder.encode(&[text])?.pop().ok_or(CliError::NoVector)?;
    let snapshot = store.snapshot()?;
    // A damaged vector block or record costs what it holds, not the answer: both are skipped
    // and named on stderr.
    let (vectors, unreadable_blocks) = snapshot.readable_vectors(ITEM_VECTORS)?;
    let Some(vectors) = vectors else {
        return Err(CliError::NoVectors);
    };
    let mut skipped = memdb::maintenance::Skipped {
        items: Vec::new(),
        vector_blocks: unreadable_blocks,
    };
    let mut found = Vec::new();
    for hit in vectors.search(&query, k, scope)? {
        match snapshot.get(hit.key) {
            Ok(Some(item)) => found.push(ItemRow {
                score: Some(score(hit.score)),
                ..ItemRow::plain(item)
            }),
            Ok(None) => {}
            Err(e) if e.is_damage() => skipped.items.push(hit.key),
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(warning) = skipped.describe() {
        eprintln!("memdb: warning: {warning}");
    }
    Ok(found)
}

/// A cosine (f32) as the f64 of its shortest decimal, so JSON shows `0.8123`, not the f32's
/// binary expansion `0.8123000264167786`.
fn score(cosine: f32) -> f64 {
    cosine
        .to_string()
        .parse()
        .unwrap_or_else(|_| f64::from(cosine))
}

/// What recall cannot use in this store, in words: items without a vector are found by
/// keywords and the memory graph only, items the graph has not taken by the other two.
pub(crate) fn coverage_warnings(store: &Store) -> Result<Vec<String>> {
    let snapshot = store.snapshot()?;
    let items = snapshot.item_count()?;
    let vectors = snapshot.vector_keys(ITEM_VECTORS)?.len();
    let graph_items = snapshot.graph().seen_count()?;
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

/// `memdb recall` (and the demo's recall): the `RECALL` statement run through the query
/// language, the path `memdb query`, the shell and applications take, so the same question and
/// filters give the same hits whichever asks.
pub(crate) fn recall(
    store: &Store,
    encoder: &MiniLm,
    recall: memdb_query::Recall,
) -> Result<RecallAnswer> {
    let statement = Statement::Query(Query::Recall(recall));
    let shown = statement.to_string();
    let ctx = QueryContext {
        embedder: Some(encoder),
        ..QueryContext::default()
    };
    // The typed statement runs as it is: no text printed and parsed again.
    let output = store.run(statement, &ctx)?;
    let Rows::Items(rows) = output.rows else {
        return Err(CliError::NoRows { statement: shown });
    };
    let ms = |stages: &[&str]| {
        output
            .plan
            .stages
            .iter()
            .filter(|s| stages.contains(&s.name.as_str()))
            .map(|s| s.micros)
            .sum::<u64>() as f64
            / 1000.0
    };
    let time = output
        .plan
        .stages
        .iter()
        .find(|s| s.name == "time")
        .map(|s| (s.detail.clone(), s.actual));
    Ok(RecallAnswer {
        no_good_match: output.no_good_match.clone(),
        time,
        encode_ms: ms(&["encode"]),
        search_ms: ms(&["dense", "lexical", "graph", "fuse"]),
        query_nodes: output.query_nodes,
        rows,
        skipped: output.skipped,
    })
}

/// What a `RECALL` answered.
pub(crate) struct RecallAnswer {
    /// The hits, best first, each with its score and why.
    pub(crate) rows: Vec<ItemRow>,
    /// The memory-graph nodes the question named.
    pub(crate) query_nodes: Vec<String>,
    /// The time the question names, how it was used, and the items in its window.
    pub(crate) time: Option<(String, u64)>,
    /// Why no item matches well, when none does: the rows are the nearest items.
    pub(crate) no_good_match: Option<String>,
    /// Encoding the question and its nodes.
    pub(crate) encode_ms: f64,
    /// The dense, lexical and graph searches and their fusion.
    pub(crate) search_ms: f64,
    /// What the search could not read (damage): it answered from the rest.
    pub(crate) skipped: memdb::maintenance::Skipped,
}

/// `memdb similar`.
pub(crate) fn similar_command(args: SimilarArgs, out: &Out) -> Result<ExitCode> {
    let SimilarArgs {
        dir,
        text,
        k,
        window,
    } = args;
    let store = open_for_reading(&dir)?;
    let filter = window.parse()?;
    let mut scope = memdb::vectors::VectorScope::all();
    if !filter.time.is_all() {
        // Exactly the items the window holds (local days need each item's offset).
        let ids = store.snapshot()?.scan_ids(&filter)?;
        scope = scope.with_keys(ids.into_iter().collect());
    }
    if let Some(source) = filter.source {
        scope = scope.with_source(source.code());
    }
    let encoder = encoder_for(&store, !out.json, model::Download::Ask)?;
    let found = similar(&store, &encoder, &text, k, &scope)?;
    out.emit(
        serde_json::Value::Array(found.iter().map(item_row_json).collect()),
        || output::rows_table(&found),
    );
    Ok(ExitCode::SUCCESS)
}

/// `memdb recall`: the `RECALL` statement built from the arguments, run as a typed tree.
pub(crate) fn recall_command(args: RecallArgs, out: &Out) -> Result<ExitCode> {
    let RecallArgs {
        dir,
        question,
        k,
        window,
        as_of,
    } = args;
    let asked_on = as_of
        .map(|day| {
            day.parse::<jiff::civil::Date>()
                .map_err(|e| CliError::Flag {
                    flag: "--as-of".into(),
                    reason: format!("`{day}` is not a day YYYY-MM-DD: {e}"),
                })
        })
        .transpose()?;
    let store = open_for_reading(&dir)?;
    let statement = memdb_query::Recall {
        text: question.clone(),
        filters: window.filters()?,
        at: memdb_query::TimeTravel::default(),
        asked_on,
        top: Some(k as u64),
    };
    // The encoder loads (two threads: its tensors and their SHA-256) while this thread reads
    // the items into the recall index: a cold recall waits for the longer, not the sum.
    let (encoder, prepared) = std::thread::scope(|scope| {
        let loading = scope.spawn(|| {
            let started = Instant::now();
            encoder_for(&store, !out.json, model::Download::Ask).map(|e| (e, started.elapsed()))
        });
        let started = Instant::now();
        let prepared = store
            .prepare_recall(&question, &memdb::RecallOptions::default())
            .map(|_| started.elapsed());
        let encoder = loading.join().unwrap_or_else(|_| {
            Err(CliError::Encoder(memdb_encode::EncodeError::Backend {
                what: "loading the encoder",
                reason: "its thread panicked".into(),
            }))
        });
        (encoder, prepared)
    });
    let (encoder, load_time) = encoder?;
    let index_time = prepared?;
    let coverage = coverage_warnings(&store)?;
    if !out.json {
        for warning in &coverage {
            eprintln!("memdb: note: {warning}");
        }
    }
    let answer = recall(&store, &encoder, statement)?;
    let mut warnings = coverage;
    if let Some(skipped) = answer.skipped.describe() {
        if !out.json {
            eprintln!("memdb: warning: {skipped}");
        }
        warnings.push(skipped);
    }
    let json = serde_json::json!({
        "warnings": warnings,
        "skipped_items": answer.skipped.items,
        "query_nodes": answer.query_nodes,
        "matches_well": answer.no_good_match.is_none(),
        "no_good_match": answer.no_good_match,
        "time": answer.time.as_ref().map(|(detail, items)| serde_json::json!({
            "detail": detail, "items_in_window": items,
        })),
        "encode_ms": answer.encode_ms,
        "search_ms": answer.search_ms,
        "encoder_load_ms": load_time.as_secs_f64() * 1e3,
        "index_ms": index_time.as_secs_f64() * 1e3,
        "hits": answer.rows.iter().map(item_row_json).collect::<Vec<_>>(),
    });
    out.emit(json, || {
        let time = answer
            .time
            .as_ref()
            .map_or_else(String::new, |(detail, items)| {
                format!("time: {detail}; {items} items in the window\n")
            });
        let verdict = answer
            .no_good_match
            .as_ref()
            .map_or_else(String::new, |why| {
                format!("no item matches well: {why}. The nearest items:\n")
            });
        format!(
            "{verdict}{time}query nodes: {}\n{}\n(search {:.2} ms, encoding {:.2} ms)",
            answer.query_nodes.join(", "),
            output::rows_table(&answer.rows),
            answer.search_ms,
            answer.encode_ms
        )
    });
    Ok(ExitCode::SUCCESS)
}
