//! `memdb ops eval`: a memory-operation decider scored on labelled scenarios
//! (`memdb_lab::decider`), as a table or, with `--json`, one JSON document.

use std::process::ExitCode;

use crate::args::OpsCommand;
use crate::output::Out;
use std::path::Path;
use std::time::{Duration, Instant};

use memdb::ops::learned::FitOptions;
use memdb::ops::{Decider, ModelDecider, Operation, RuleDecider, RuleThresholds};
use memdb_encode::{Encoder, MiniLm};
use memdb_lab::decider::{
    CrossValidation, EvalReport, ScenarioError, cross_validate, evaluate, featurize,
    parse_scenarios, weights_source,
};
use serde_json::{Value, json};

use crate::error::{CliError, Result};

/// What `memdb ops eval` measured.
pub(crate) struct EvalSummary {
    decider: String,
    report: EvalReport,
    refused: Vec<ScenarioError>,
    seconds: f64,
}

impl EvalSummary {
    pub(crate) fn json(&self) -> Value {
        let r = &self.report;
        let per_op: serde_json::Map<String, Value> = Operation::ALL
            .iter()
            .enumerate()
            .map(|(i, op)| {
                (
                    op.name().to_owned(),
                    json!({
                        "accuracy": r.op_accuracy(*op),
                        "correct": r.per_op[i].0,
                        "total": r.per_op[i].1,
                    }),
                )
            })
            .collect();
        let confusion = confusion_json(r);
        json!({
            "decider": self.decider,
            "scenarios": r.total,
            "correct": r.correct,
            "accuracy": r.accuracy(),
            "per_operation": per_op,
            "confusion": confusion,
            "wrong_target": r.wrong_target,
            "mistakes": r.mistakes.iter().map(|(line, expected, decided, reason)| json!({
                "line": line,
                "expected": expected.name(),
                "decided": decided.name(),
                "reason": reason,
            })).collect::<Vec<_>>(),
            "refused_lines": self.refused.iter().map(|e| json!({"line": e.line, "why": e.why})).collect::<Vec<_>>(),
            "failed": r.failed.iter().map(|(line, error)| json!({"line": line, "error": error})).collect::<Vec<_>>(),
            "seconds": self.seconds,
        })
    }

    pub(crate) fn text(&self) -> String {
        let r = &self.report;
        let mut out = format!(
            "decider {}: {}/{} right = {:.1} % ({} right operation on the wrong memory), {:.1} s\n\n",
            self.decider,
            r.correct,
            r.total,
            100.0 * r.accuracy(),
            r.wrong_target,
            self.seconds
        );
        out.push_str(&confusion_text(r));
        if !r.failed.is_empty() {
            out.push_str(&format!(
                "\n{} scenario(s) failed (counted wrong); the first: line {}: {}",
                r.failed.len(),
                r.failed[0].0,
                r.failed[0].1
            ));
        }
        for e in &self.refused {
            out.push_str(&format!("\nrefused: {e}"));
        }
        out
    }
}

/// Which decider `memdb ops eval` scores.
pub(crate) enum DeciderChoice {
    /// The on-device default (`memdb::ops::on_device_decider`) with the installed encoder.
    OnDevice,
    /// The deterministic rules with the installed encoder.
    Rules,
    /// A model served on loopback.
    Model {
        endpoint: String,
        model: String,
        timeout: u64,
    },
}

/// Scores a decider on the scenarios in `file`.
pub(crate) fn eval(file: &Path, choice: DeciderChoice, verbose: bool) -> Result<EvalSummary> {
    let text = std::fs::read_to_string(file).map_err(|e| CliError::io("read", file, e))?;
    let (scenarios, refused) = parse_scenarios(&text);
    if scenarios.is_empty() {
        return Err(CliError::flag(
            "--scenarios",
            format!(
                "{}: no scenario could be read ({} line(s) refused)",
                file.display(),
                refused.len()
            ),
        ));
    }
    let (decider_name, decider): (String, Box<dyn Decider>) = match choice {
        DeciderChoice::OnDevice => {
            let encoder = load_encoder(verbose)?;
            (
                format!(
                    "{} ({})",
                    memdb::ops::on_device_decider_name(),
                    encoder.model_id()
                ),
                memdb::ops::on_device_decider(encoder),
            )
        }
        DeciderChoice::Rules => {
            let encoder = load_encoder(verbose)?;
            (
                format!("rules ({})", encoder.model_id()),
                Box::new(RuleDecider::new(encoder, RuleThresholds::default())),
            )
        }
        DeciderChoice::Model {
            endpoint,
            model,
            timeout,
        } => {
            let decider = ModelDecider::new(&endpoint, &model, Duration::from_secs(timeout.max(1)))
                .map_err(|e| CliError::flag("--endpoint", e))?;
            (format!("model {model} at {endpoint}"), Box::new(decider))
        }
    };
    let started = Instant::now();
    let mut bar = crate::progress::bar(scenarios.len() as u64, "deciding", verbose);
    let report = evaluate(decider.as_ref(), &scenarios, &mut |done, _| {
        bar.set_position(done as u64)
    })?;
    bar.finish_and_clear();
    Ok(EvalSummary {
        decider: decider_name,
        report,
        refused,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn load_encoder(verbose: bool) -> Result<MiniLm> {
    crate::model::load_encoder(verbose, crate::model::Download::Ask)
}

/// What `memdb ops train` measured.
pub(crate) struct TrainSummary {
    files: Vec<(String, usize)>,
    refused: Vec<(String, ScenarioError)>,
    cv: CrossValidation,
    written: Option<String>,
    seconds: f64,
    /// Each file's scenarios (for listing the mistakes), by line.
    by_line: Vec<std::collections::HashMap<usize, memdb_lab::decider::Scenario>>,
    /// Whether the text lists the held-out mistakes.
    pub(crate) list_mistakes: bool,
}

fn report_json(r: &EvalReport) -> Value {
    let per_op: serde_json::Map<String, Value> = Operation::ALL
        .iter()
        .map(|op| (op.name().to_owned(), json!(r.op_accuracy(*op))))
        .collect();
    json!({
        "scenarios": r.total,
        "correct": r.correct,
        "accuracy": r.accuracy(),
        "per_operation": per_op,
        "confusion": confusion_json(r),
    })
}

fn confusion_json(r: &EvalReport) -> Value {
    let rows: serde_json::Map<String, Value> = Operation::ALL
        .iter()
        .enumerate()
        .map(|(e, op)| {
            let row: serde_json::Map<String, Value> = Operation::ALL
                .iter()
                .enumerate()
                .map(|(d, decided)| (decided.name().to_owned(), json!(r.confusion[e][d])))
                .collect();
            (op.name().to_owned(), Value::Object(row))
        })
        .collect();
    Value::Object(rows)
}

fn report_line(label: &str, r: &EvalReport) -> String {
    let per_op: Vec<String> = Operation::ALL
        .iter()
        .map(|op| format!("{:>6.1}", 100.0 * r.op_accuracy(*op)))
        .collect();
    format!(
        "{label:<34} {:>6.1} % {}  ({}/{})",
        100.0 * r.accuracy(),
        per_op.join(" "),
        r.correct,
        r.total
    )
}

fn confusion_text(r: &EvalReport) -> String {
    let mut out =
        String::from("expected \\ decided |    ADD | UPDATE | DELETE |   NONE | accuracy\n");
    out.push_str("-------------------|--------|--------|--------|--------|---------\n");
    for (e, op) in Operation::ALL.iter().enumerate() {
        out.push_str(&format!("{:>18} |", op.name()));
        for d in 0..4 {
            out.push_str(&format!(" {:>6} |", r.confusion[e][d]));
        }
        out.push_str(&format!(
            " {:>6.1} % ({}/{})\n",
            100.0 * r.op_accuracy(*op),
            r.per_op[e].0,
            r.per_op[e].1
        ));
    }
    out
}

impl TrainSummary {
    pub(crate) fn json(&self) -> Value {
        let cv = &self.cv;
        json!({
            "files": self.files.iter().map(|(f, n)| json!({"file": f, "scenarios": n})).collect::<Vec<_>>(),
            "refused_lines": self.refused.iter().map(|(f, e)| json!({"file": f, "line": e.line, "why": e.why})).collect::<Vec<_>>(),
            "model": {
                "fact_features": memdb::ops::learned::FACT_FEATURES,
                "pair_features": memdb::ops::learned::PAIR_FEATURES,
                "embedding": memdb::ops::learned::EMBEDDING,
                "settings_searched": cv.settings.len(),
                "settings": cv.settings.iter().zip(&cv.per_setting).map(|(s, a)| json!({
                    "name": s.name(), "l2": s.l2, "embedding_l2": s.embedding_l2,
                    "steps": s.steps, "rate": s.rate, "k_fold_accuracy": a,
                })).collect::<Vec<_>>(),
                "chosen_per_fold": cv.chosen_per_fold.iter().map(|&i| cv.settings[i].name()).collect::<Vec<_>>(),
                "shipped": cv.settings[cv.shipped_setting()].name(),
            },
            "folds": cv.folds,
            "rules": report_json(&cv.rules),
            "learned_cross_validated": report_json(&cv.learned),
            "held_out_files": cv.held_out_files.iter().map(|(file, rules, learned)| json!({
                "scored_on": self.files[*file].0,
                "fitted_on": "every other file",
                "rules": report_json(rules),
                "learned": report_json(learned),
            })).collect::<Vec<_>>(),
            "learned_wins": cv.learned_wins(),
            "written": self.written,
            "seconds": self.seconds,
        })
    }

    pub(crate) fn text(&self) -> String {
        let cv = &self.cv;
        let files: Vec<String> = self
            .files
            .iter()
            .map(|(f, n)| format!("{n} from {f}"))
            .collect();
        let first = cv.settings.first().copied().unwrap_or_default();
        let mut out = format!(
            "scenarios: {}; model: softmax regression over {} + 3 x {} hand-made features and \
             the encoder's {}-dimension embeddings, L2 {} ({} on embeddings), {} Adam steps of \
             {}; {:.1} s\n\n",
            files.join(", "),
            memdb::ops::learned::FACT_FEATURES,
            memdb::ops::learned::PAIR_FEATURES,
            memdb::ops::learned::EMBEDDING,
            first.l2,
            first.embedding_l2,
            first.steps,
            first.rate,
            self.seconds
        );
        out.push_str(&format!(
            "{} settings searched (nested: each outer fold chose by an inner {}-fold run on its \
             training part; chosen per fold: {}):\n",
            cv.settings.len(),
            cv.folds,
            cv.chosen_per_fold
                .iter()
                .map(|&i| cv.settings[i].name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for (s, a) in cv.settings.iter().zip(&cv.per_setting) {
            out.push_str(&format!(
                "  {:<46} {:>6.1} % by plain {}-fold (biased upward by the choice)\n",
                s.name(),
                100.0 * a,
                cv.folds
            ));
        }
        out.push_str(&format!(
            "  shipped: {}\n\n",
            cv.settings[cv.shipped_setting()].name()
        ));
        out.push_str(&format!(
            "{:<34} {:>8} {:>6} {:>6} {:>6} {:>6}\n",
            "decider", "accuracy", "ADD", "UPDATE", "DELETE", "NONE"
        ));
        out.push_str(&report_line("rules", &cv.rules));
        out.push('\n');
        out.push_str(&report_line(
            &format!("learned, nested {}-fold", cv.folds),
            &cv.learned,
        ));
        out.push('\n');
        for (file, rules, learned) in &cv.held_out_files {
            let name = |i: usize| {
                std::path::Path::new(&self.files[i].0)
                    .file_name()
                    .map_or_else(
                        || self.files[i].0.clone(),
                        |n| n.to_string_lossy().into_owned(),
                    )
            };
            out.push_str(&format!(
                "\n{} held out (fitted on the other files):\n",
                name(*file)
            ));
            out.push_str(&report_line("  rules", rules));
            out.push('\n');
            out.push_str(&report_line("  learned", learned));
            out.push('\n');
        }
        out.push_str(&format!(
            "\nthe learned decider {} the rules out of sample: the on-device default is {}\n",
            if cv.learned_wins() {
                "beats"
            } else {
                "does not beat"
            },
            if cv.learned_wins() {
                "the learned decider"
            } else {
                "the rules"
            }
        ));
        out.push_str("\nrules:\n");
        out.push_str(&confusion_text(&cv.rules));
        out.push_str(&format!("\nlearned ({}-fold):\n", cv.folds));
        out.push_str(&confusion_text(&cv.learned));
        if let Some(path) = &self.written {
            out.push_str(&format!(
                "\nweights fitted on every scenario written to {path}"
            ));
        }
        for (f, e) in &self.refused {
            out.push_str(&format!("\nrefused: {f}: {e}"));
        }
        if self.list_mistakes {
            for (file, _, learned) in &cv.held_out_files {
                out.push_str(&format!(
                    "\n\nmistakes on {} held out:",
                    self.files[*file].0
                ));
                for (line, expected, decided, _) in &learned.mistakes {
                    let Some(s) = self.by_line[*file].get(line) else {
                        continue;
                    };
                    let target = s
                        .target
                        .as_ref()
                        .and_then(|t| s.existing.iter().find(|(id, _)| id == t))
                        .map_or(String::new(), |(_, text)| format!(" | target {text:?}"));
                    out.push_str(&format!(
                        "\n  line {line}: {expected} decided {decided}: {:?}{target}",
                        s.new
                    ));
                }
            }
        }
        out
    }
}

/// Fits the learned decider on `files`' scenarios, cross-validates it against the rules, and
/// with `write` writes the weights fitted on every scenario (and the verdict) as Rust source.
pub(crate) fn train(
    files: &[std::path::PathBuf],
    folds: usize,
    write: Option<&Path>,
    verbose: bool,
) -> Result<TrainSummary> {
    let started = Instant::now();
    let mut scenarios = Vec::new();
    let mut counts = Vec::new();
    let mut refused = Vec::new();
    let mut by_line = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).map_err(|e| CliError::io("read", file, e))?;
        let (good, bad) = parse_scenarios(&text);
        by_line.push(good.iter().map(|s| (s.line, s.clone())).collect());
        let name = file.display().to_string();
        counts.push((name.clone(), good.len()));
        refused.extend(bad.into_iter().map(|e| (name.clone(), e)));
        scenarios.extend(good.into_iter().map(|s| (i, s)));
    }
    if scenarios.is_empty() {
        return Err(CliError::flag("--scenarios", "no scenario could be read"));
    }
    let encoder = load_encoder(verbose)?;
    let rules = RuleDecider::new(&encoder, RuleThresholds::default());
    let mut bar = crate::progress::bar(scenarios.len() as u64, "reading", verbose);
    let featured = featurize(&rules, &scenarios, &mut |done, _| {
        bar.set_position(done as u64)
    })?;
    bar.finish_and_clear();
    let cv = cross_validate(&featured, folds, &FitOptions::variants());
    let mut written = None;
    if let Some(path) = write {
        let all: Vec<memdb::ops::learned::Example> =
            featured.iter().map(|f| f.example.clone()).collect();
        let weights = memdb::ops::learned::fit(&all, cv.settings[cv.shipped_setting()]);
        let provenance = format!(
            "Fitted on {} ({} scenarios), setting: {}.\nNested {}-fold cross-validation (4 \
             settings searched): rules {:.1} %, learned {:.1} % out of sample; the learned \
             decider {}.",
            counts
                .iter()
                .map(|(f, n)| format!("{f}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            featured.len(),
            cv.settings[cv.shipped_setting()].name(),
            cv.folds,
            100.0 * cv.rules.accuracy(),
            100.0 * cv.learned.accuracy(),
            if cv.learned_wins() {
                "won"
            } else {
                "did not win"
            }
        );
        let source = weights_source(&weights, cv.learned_wins(), &provenance);
        std::fs::write(path, source).map_err(|e| CliError::io("write", path, e))?;
        written = Some(path.display().to_string());
    }
    Ok(TrainSummary {
        files: counts,
        refused,
        cv,
        written,
        seconds: started.elapsed().as_secs_f64(),
        by_line,
        list_mistakes: false,
    })
}

/// `memdb ops …`.
pub(crate) fn command(command: OpsCommand, out: &Out) -> Result<ExitCode> {
    match command {
        OpsCommand::Eval {
            scenarios,
            model,
            endpoint,
            timeout,
            rules,
        } => {
            let decider = match (model, rules) {
                (Some(model), _) => DeciderChoice::Model {
                    endpoint,
                    model,
                    timeout,
                },
                (None, true) => DeciderChoice::Rules,
                (None, false) => DeciderChoice::OnDevice,
            };
            let summary = eval(&scenarios, decider, !out.json)?;
            out.emit(summary.json(), || summary.text());
        }
        OpsCommand::Train {
            scenarios,
            folds,
            write,
            mistakes,
        } => {
            let mut summary = train(&scenarios, folds, write.as_deref(), !out.json)?;
            summary.list_mistakes = mistakes;
            out.emit(summary.json(), || summary.text());
        }
    }
    Ok(ExitCode::SUCCESS)
}
