//! `memdb eval atm`: ATM-Bench's evaluation of a store (SPEC.md §12). Reads the benchmark's QA
//! file, retrieves for each question through the store (or reads rankings made elsewhere with
//! `--rankings`), scores the predictions file if one is given, and prints Recall@k, recall@gt,
//! hit@1, QS and Joint@k overall and per question type; `--out DIR` also writes the results in
//! the benchmark's own shapes (`retrieval_recall_details.json`, `atm_results.json`) and the
//! summary (`summary.json`), so the benchmark's tools can read memdb's results.

use std::process::ExitCode;

use crate::args::EvalCommand;
use crate::output::Out;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use memdb_formats::import::atm::Prediction;
use memdb_lab::atm::{self, Judge, Ranking, Report, Summary};
use serde_json::{Value, json};

use crate::args::Retriever;
use crate::error::{CliError, Result};

/// What `memdb eval atm` was asked.
pub(crate) struct AtmArgs {
    pub(crate) dir: PathBuf,
    pub(crate) qa: PathBuf,
    pub(crate) predictions: Option<PathBuf>,
    pub(crate) ks: String,
    pub(crate) retriever: Retriever,
    pub(crate) rankings: Option<PathBuf>,
    pub(crate) out: Option<PathBuf>,
    pub(crate) judge: Option<(String, String, u64)>,
    pub(crate) verbose: bool,
}

/// `--k 1,5,10`: distinct positive cut-offs, ascending.
fn parse_ks(text: &str) -> Result<Vec<usize>> {
    let mut ks = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let k: usize = part.parse().map_err(|_| CliError::Flag {
            flag: format!("--k {text}"),
            reason: format!("`{part}` is not a whole number"),
        })?;
        if k == 0 || k > 1000 {
            return Err(CliError::Flag {
                flag: format!("--k {text}"),
                reason: "each k is from 1 to 1000".to_owned(),
            });
        }
        ks.push(k);
    }
    ks.sort_unstable();
    ks.dedup();
    if ks.is_empty() {
        return Err(CliError::Flag {
            flag: format!("--k {text}"),
            reason: "give at least one k".to_owned(),
        });
    }
    Ok(ks)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| CliError::io("read", path, e))
}

/// Rankings from a `retrieval_recall_details.json` (ours or the benchmark's): by question id.
fn read_rankings(path: &Path) -> Result<HashMap<String, Ranking>> {
    let bad = |reason: String| CliError::Flag {
        flag: format!("--rankings {}", path.display()),
        reason,
    };
    let value: Value =
        serde_json::from_slice(&read(path)?).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Value::Array(rows) = value else {
        return Err(bad(
            "expected a JSON list of {id, retrieval_ids, …}".to_owned()
        ));
    };
    let mut out = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        let id = match row.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad(format!("entry {}: no `id`", i + 1))),
        };
        let ids: Vec<String> = match row.get("retrieval_ids") {
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    bad(format!(
                        "entry {}: `retrieval_ids` holds a non-string",
                        i + 1
                    ))
                })?,
            _ => return Err(bad(format!("entry {}: no `retrieval_ids` list", i + 1))),
        };
        let scores: Vec<f64> = match row.get("retrieval_scores") {
            Some(Value::Array(s)) => s.iter().map(|v| v.as_f64().unwrap_or(0.0)).collect(),
            _ => vec![0.0; ids.len()],
        };
        out.insert(id, Ranking { ids, scores });
    }
    Ok(out)
}

/// The judge of open-ended answers on a local server.
fn judge(spec: &Option<(String, String, u64)>) -> Result<Option<atm::LlmJudge>> {
    spec.as_ref()
        .map(|(endpoint, model, timeout)| {
            atm::LlmJudge::new(endpoint, model, std::time::Duration::from_secs(*timeout)).map_err(
                |e| CliError::Flag {
                    flag: "--judge-endpoint".to_owned(),
                    reason: e.to_string(),
                },
            )
        })
        .transpose()
}

/// Runs the evaluation; returns its JSON document and its text.
pub(crate) fn atm(args: AtmArgs) -> Result<(Value, String)> {
    let ks = parse_ks(&args.ks)?;
    let qa = memdb_formats::import::atm::parse_qa(&args.qa, &read(&args.qa)?)?;
    let mut warnings: Vec<String> = qa.errors.iter().map(ToString::to_string).collect();
    let predictions: Option<Vec<Prediction>> = match &args.predictions {
        None => None,
        Some(path) => {
            let (predictions, errors) =
                memdb_formats::import::atm::parse_predictions(path, &read(path)?);
            warnings.extend(errors.iter().map(ToString::to_string));
            let known: std::collections::HashSet<&str> =
                qa.questions.iter().map(|q| q.id.as_str()).collect();
            let unknown = predictions
                .iter()
                .filter(|p| !known.contains(p.id.as_str()))
                .count();
            if unknown > 0 {
                warnings.push(format!(
                    "{}: {unknown} prediction(s) answer no question of {}",
                    path.display(),
                    args.qa.display()
                ));
            }
            Some(predictions)
        }
    };
    for w in &warnings {
        eprintln!("memdb: skipped {w}");
    }
    let questions = &qa.questions;
    // The store's item-text style when the store retrieves.
    let (rankings, item_text): (Vec<Ranking>, Option<memdb::recall::ItemTextStyle>) = match &args
        .rankings
    {
        Some(path) => {
            let mut by_id = read_rankings(path)?;
            let rankings = questions
                .iter()
                .map(|q| by_id.remove(&q.id).unwrap_or_default())
                .collect();
            (rankings, None)
        }
        None => {
            let store = crate::open::open_for_reading(&args.dir)?;
            // Dense retrieval over a store nobody embedded would score every question 0.
            let signals = args.retriever.signals();
            if signals.dense {
                let snapshot = store.snapshot()?;
                if snapshot.vectors(memdb::vectors::ITEM_VECTORS)?.is_none() {
                    return Err(CliError::NoVectors);
                }
                // Half-embedded (a style switch or an embed cut short): the rest would never
                // be found by the dense signal, and the figures would say nothing of the style.
                let items = snapshot.item_count()?;
                let embedded = snapshot.vector_keys(memdb::vectors::ITEM_VECTORS)?.len();
                if embedded < items {
                    return Err(CliError::MissingVectors {
                        missing: items - embedded,
                        items,
                    });
                }
            }
            let encoder =
                crate::embed::encoder_for(&store, args.verbose, crate::model::Download::Ask)?;
            // Deep enough for every k and for recall@gt.
            let depth = questions
                .iter()
                .map(|q| q.evidence_ids.len())
                .chain(ks.iter().copied())
                .max()
                .unwrap_or(10)
                .max(10);
            let mut bar = crate::progress::bar(questions.len() as u64, "retrieving", args.verbose);
            let rankings =
                atm::retrieve(&store, questions, depth, signals, &encoder, &mut |done| {
                    bar.set_position(done as u64)
                })?;
            bar.finish_and_clear();
            (rankings, Some(store.snapshot()?.item_text_style()?))
        }
    };
    let judge = judge(&args.judge)?;
    let report = atm::evaluate(
        questions,
        &rankings,
        predictions.as_deref(),
        judge.as_ref().map(|j| j as &dyn Judge),
        &ks,
    )?;
    let doc = document(&report, &ks, &args, item_text, &warnings);
    if let Some(dir) = &args.out {
        write_outputs(dir, &report, &ks, &doc)?;
    }
    let text = text(&report, &ks, &args, item_text, warnings.len());
    Ok((doc, text))
}

fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn summary_json(s: &Summary, ks: &[usize], with_predictions: bool) -> Value {
    let by_k = |m: &BTreeMap<usize, f64>, prefix: &str| -> Value {
        ks.iter()
            .map(|k| {
                (
                    format!("{prefix}@{k}"),
                    json!(round(m.get(k).copied().unwrap_or(0.0))),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let mut doc = json!({
        "count": s.questions,
        "with_evidence": s.with_evidence,
        "empty_evidence": s.empty_evidence,
        "recall": by_k(&s.recall, "R"),
        "recall@gt": round(s.recall_at_gt),
        "hit@1": round(s.hit_at_1),
    });
    if with_predictions {
        doc["qs"] = json!({
            "count": s.qs.count,
            "scored": s.qs.scored,
            "not_scored": s.qs.count - s.qs.scored,
            "correct": round(s.qs.correct),
            "accuracy": s.qs.accuracy().map(round),
        });
        doc["joint"] = by_k(&s.joint, "Joint");
        doc["joint_bool"] = by_k(&s.joint_bool, "Joint");
        doc["joint_strict"] = by_k(&s.joint_strict, "Joint");
        doc["joint_count"] = json!(s.joint_count);
    }
    doc
}

fn document(
    report: &Report,
    ks: &[usize],
    args: &AtmArgs,
    item_text: Option<memdb::recall::ItemTextStyle>,
    warnings: &[String],
) -> Value {
    let by_type: serde_json::Map<String, Value> = report
        .by_type
        .iter()
        .map(|(t, s)| {
            (
                (*t).to_owned(),
                summary_json(s, ks, report.with_predictions),
            )
        })
        .collect();
    json!({
        "qa": args.qa,
        "predictions": args.predictions,
        "retriever": match &args.rankings {
            Some(path) => format!("rankings from {}", path.display()),
            None => args.retriever.name().to_owned(),
        },
        "item_text": item_text.map(memdb::recall::ItemTextStyle::name),
        "judge": args.judge.as_ref().map(|(_, model, _)| model),
        "k": ks,
        "overall": summary_json(&report.overall, ks, report.with_predictions),
        "by_qtype": by_type,
        "skipped": warnings,
    })
}

/// The benchmark's shapes: `retrieval_recall_details.json` (its retrieval evaluator's rows)
/// and `atm_results.json` (its ATM evaluator's rows), and our summary.
fn write_outputs(dir: &Path, report: &Report, ks: &[usize], doc: &Value) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::io("create", dir, e))?;
    let details: Vec<Value> = report
        .questions
        .iter()
        .map(|r| {
            let recall: serde_json::Map<String, Value> = ks
                .iter()
                .map(|k| {
                    let v = r.recall.get(k).copied().flatten();
                    (format!("R@{k}"), json!(v.map(round)))
                })
                .collect();
            json!({
                "id": r.question.id,
                "question": r.question.question,
                "gt_evidence_ids": r.question.evidence_ids,
                "retrieval_ids": r.ranking.ids,
                "retrieval_scores": r.ranking.scores,
                "retrieval_recall": recall,
            })
        })
        .collect();
    let answers: Vec<Value> = report
        .questions
        .iter()
        .filter_map(|r| {
            let a = r.answer.as_ref()?;
            Some(json!({
                "id": r.question.id,
                "question": r.question.question,
                "ground_truth": r.question.answer,
                "prediction": r.prediction,
                "normalized_prediction": a.normalized_prediction,
                "qtype": r.question.qtype.name(),
                "metric": a.metric,
                "accuracy": a.score,
                "explanation": a.explanation,
            }))
        })
        .collect();
    for (name, value) in [
        ("retrieval_recall_details.json", Value::Array(details)),
        ("atm_results.json", Value::Array(answers)),
        ("summary.json", doc.clone()),
    ] {
        let path = dir.join(name);
        // A `Value` always serialises; `Value`'s Display is the same JSON, compact.
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
        std::fs::write(&path, text + "\n").map_err(|e| CliError::io("write", &path, e))?;
    }
    Ok(())
}

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

fn text(
    report: &Report,
    ks: &[usize],
    args: &AtmArgs,
    item_text: Option<memdb::recall::ItemTextStyle>,
    skipped: usize,
) -> String {
    let mut header: Vec<String> = vec!["questions".into(), "evidence".into()];
    header.extend(ks.iter().map(|k| format!("R@{k}")));
    header.extend(["R@gt".to_owned(), "hit@1".to_owned()]);
    if report.with_predictions {
        header.push("QS".to_owned());
        header.extend(ks.iter().map(|k| format!("Joint@{k}")));
        header.extend(ks.iter().map(|k| format!("Joint@{k} (bool)")));
    }
    let mut names = vec![""];
    names.extend(header.iter().map(String::as_str));
    let mut table = crate::output::table(&names);
    let mut row = |name: &str, s: &Summary| {
        let mut cells = vec![
            name.to_owned(),
            s.questions.to_string(),
            format!("{} ({} none)", s.with_evidence, s.empty_evidence),
        ];
        cells.extend(
            ks.iter()
                .map(|k| pct(s.recall.get(k).copied().unwrap_or(0.0))),
        );
        cells.extend([pct(s.recall_at_gt), pct(s.hit_at_1)]);
        if report.with_predictions {
            cells.push(match s.qs.accuracy() {
                Some(a) if s.qs.scored == s.qs.count => pct(a),
                Some(a) => format!("{} ({} of {} scored)", pct(a), s.qs.scored, s.qs.count),
                None => "not scored".to_owned(),
            });
            cells.extend(
                ks.iter()
                    .map(|k| pct(s.joint.get(k).copied().unwrap_or(0.0))),
            );
            cells.extend(
                ks.iter()
                    .map(|k| pct(s.joint_bool.get(k).copied().unwrap_or(0.0))),
            );
        }
        table.add_row(cells);
    };
    row("overall", &report.overall);
    for (t, s) in &report.by_type {
        row(t, s);
    }
    let source = match &args.rankings {
        Some(path) => format!("rankings from {}", path.display()),
        None => format!(
            "retriever {}, item text {}",
            args.retriever.name(),
            item_text.unwrap_or_default().name()
        ),
    };
    let mut out = format!(
        "ATM-Bench evaluation of {} ({source})\n{table}",
        args.qa.display()
    );
    if skipped > 0 {
        out.push_str(&format!(
            "\n{skipped} input record(s) skipped (reasons above)"
        ));
    }
    if report.with_predictions && report.by_type.contains_key("open_end") && args.judge.is_none() {
        out.push_str("\nopen_end answers are not scored: give --judge MODEL (a local server)");
    }
    out
}

/// `memdb eval …`.
pub(crate) fn command(command: EvalCommand, out: &Out) -> Result<ExitCode> {
    match command {
        EvalCommand::Atm {
            dir,
            qa,
            predictions,
            k,
            retriever,
            rankings,
            out: out_dir,
            judge,
            judge_endpoint,
            judge_timeout,
        } => {
            let (doc, text) = atm(AtmArgs {
                dir,
                qa,
                predictions,
                ks: k,
                retriever,
                rankings,
                out: out_dir,
                judge: judge.map(|model| (judge_endpoint, model, judge_timeout)),
                verbose: !out.json,
            })?;
            out.emit(doc, || text);
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_are_distinct_positive_and_sorted() {
        assert_eq!(parse_ks("10, 1,5,5").unwrap(), [1, 5, 10]);
        for bad in ["", "0", "a", "1,,x", "5000"] {
            assert!(parse_ks(bad).is_err(), "{bad}");
        }
    }
}
