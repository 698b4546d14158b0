//! What the query language costs on top of the engine: parse and plan time against the total
//! time of a `RECALL` on a LoCoMo store (issue: < 5 %), and the whole `store.query` path
//! against calling `Store::recall` directly with the same options (the peer here is memdb's
//! own API without the language).
//!
//! The store holds one LoCoMo conversation (items, f32 vectors, EM-Graph); the statements are
//! its questions, each run as `RECALL '<question>' TOP 10` and, to exercise the planner's
//! filter push-down, `RECALL '<question>' WHERE time >= 2023-01-01 AND entity = '<speaker A>'
//! TOP 10`. Each is run twice and the second run is timed, so both paths see warm caches.
//!
//! ```sh
//! cargo run --release -p memdb-benches --bin query -- [LOCOMO_FILE]
//! ```

use std::path::PathBuf;
use std::time::Instant;

use memdb::{Options, RecallOptions, Store};
use memdb_benches::shared_dir;
use memdb_encode::{Encoder, EncoderOptions, MiniLm, model};
use memdb_formats::import::locomo;
use memdb_query::{Query, QueryContext, Statement, StoreQuery, parse};

/// Makes a statement from a question.
type StatementForm = Box<dyn Fn(&str) -> String>;

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    v[((p / 100.0) * (v.len() - 1) as f64).round() as usize]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

#[derive(Default)]
struct Samples {
    parse_plan_us: Vec<f64>,
    total_us: Vec<f64>,
    share_pct: Vec<f64>,
    share_excl_encode_pct: Vec<f64>,
    query_wall_us: Vec<f64>,
    direct_wall_us: Vec<f64>,
}

fn main() {
    let file = std::env::args()
        .nth(1)
        .map_or_else(|| shared_dir().join("data/locomo/26.json"), PathBuf::from);
    let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let imported = locomo::parse(&file, &bytes).unwrap();
    let qa = locomo::parse_qa(&file, &bytes).unwrap();
    let encoder = MiniLm::load(
        &model::locate().unwrap_or_else(|e| panic!("{e}")),
        EncoderOptions {
            threads: Some(2),
            ..EncoderOptions::default()
        },
    )
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("store"), Options::default()).unwrap();
    store.bind_model(&encoder.model_id().to_string()).unwrap();
    // The engine's ingest: commit, embed every item's text, build the memory graph.
    let ingest = memdb::IngestOptions {
        pages: memdb::ingest::PageStage::Skip,
        ..memdb::IngestOptions::default()
    };
    let items_in = imported
        .items
        .iter()
        .map(|item| memdb::IngestItem::new(item.draft.clone()));
    let report = store
        .ingest_items(items_in, Some(&encoder), ingest, &mut |_, _, _| {})
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let speaker = imported.items[0]
        .draft
        .fields
        .speaker
        .clone()
        .unwrap_or_default();

    let entity = speaker.clone();
    let ctx = QueryContext {
        embedder: Some(&encoder),
        ..QueryContext::default()
    };
    let questions: Vec<String> = qa.into_iter().map(|q| q.question).collect();
    let quote = |q: &str| q.replace('\'', "''");
    let forms: [(&str, StatementForm); 2] = [
        (
            "RECALL '…' TOP 10",
            Box::new(move |q| format!("RECALL '{}' TOP 10", quote(q))),
        ),
        (
            "RECALL '…' WHERE time >= 2023-01-01 AND entity = … TOP 10",
            Box::new(move |q| {
                format!(
                    "RECALL '{}' WHERE time >= 2023-01-01 AND entity = '{}' TOP 10",
                    q.replace('\'', "''"),
                    speaker.replace('\'', "''")
                )
            }),
        ),
    ];

    println!(
        "query language overhead: {} ({} items), {} questions per form, each run twice, the second timed\n",
        file.display(),
        imported.items.len(),
        questions.len()
    );
    println!(
        "| statement form | parse+plan µs p50 / p99 | RECALL total ms p50 | (parse+plan)/total, mean / p99 | same, excluding encoding, mean / p99 | store.query / Store::recall wall time |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (name, form) in &forms {
        let mut s = Samples::default();
        for q in &questions {
            let statement = form(q);
            // The direct call gets exactly the options the planner derived.
            let Ok(Statement::Query(Query::Recall(parsed))) = parse(&statement) else {
                panic!("{statement}");
            };
            for round in 0..2 {
                let started = Instant::now();
                let out = store.query(&statement, &ctx).unwrap();
                let query_wall = started.elapsed().as_secs_f64() * 1e6;
                let started = Instant::now();
                let mut options = RecallOptions::default();
                let plan = &out.plan;
                // Replay what the plan did, through the engine alone.
                if !parsed.filters.is_empty() {
                    options.time = memdb::TimeWindow::from(memdb::time::TimeBound::Day(
                        jiff::civil::date(2023, 1, 1),
                    ))
                    .unwrap();
                    let allowed: memdb::recall::RoaringTreemap = store
                        .snapshot()
                        .unwrap()
                        .scan(&memdb::ScanFilter {
                            time: options.time,
                            ..memdb::ScanFilter::default()
                        })
                        .unwrap()
                        .into_iter()
                        .filter(|i| {
                            i.fields
                                .entities
                                .iter()
                                .any(|e| e.eq_ignore_ascii_case(&entity))
                        })
                        .map(|i| i.id)
                        .collect();
                    options.items = Some(allowed);
                }
                let direct = store.recall(q, &options, &encoder).unwrap();
                let direct_wall = started.elapsed().as_secs_f64() * 1e6;
                assert_eq!(
                    direct.hits.iter().map(|h| h.item).collect::<Vec<_>>(),
                    match &out.rows {
                        memdb_query::Rows::Items(rows) =>
                            rows.iter().map(|r| r.item.id).collect::<Vec<_>>(),
                        _ => unreachable!(),
                    },
                    "the language and the API agree: {statement}"
                );
                if round == 0 {
                    continue;
                }
                let parse_plan = (plan.parse_us + plan.plan_us) as f64;
                let total = plan.total_us() as f64;
                let encode = plan
                    .stages
                    .iter()
                    .find(|st| st.name == "encode")
                    .map_or(0, |st| st.micros) as f64;
                s.parse_plan_us.push(parse_plan);
                s.total_us.push(total);
                s.share_pct.push(100.0 * parse_plan / total);
                s.share_excl_encode_pct
                    .push(100.0 * parse_plan / (total - encode).max(1.0));
                s.query_wall_us.push(query_wall);
                s.direct_wall_us.push(direct_wall);
            }
        }
        println!(
            "| {name} | {:.1} / {:.1} | {:.2} | {:.3} % / {:.3} % | {:.2} % / {:.2} % | {:.3} |",
            percentile(&s.parse_plan_us, 50.0),
            percentile(&s.parse_plan_us, 99.0),
            percentile(&s.total_us, 50.0) / 1000.0,
            mean(&s.share_pct),
            percentile(&s.share_pct, 99.0),
            mean(&s.share_excl_encode_pct),
            percentile(&s.share_excl_encode_pct, 99.0),
            s.query_wall_us.iter().sum::<f64>() / s.direct_wall_us.iter().sum::<f64>(),
        );
    }
}
