//! `memdb ops eval`: a memory-operation decider scored on labelled scenarios
//! (`memdb::ops::eval`), as a table or, with `--json`, one JSON document.

use std::path::Path;
use std::time::{Duration, Instant};

use memdb::ops::eval::{EvalReport, ScenarioError, evaluate, parse_scenarios};
use memdb::ops::{Decider, ModelDecider, Operation, RuleDecider, RuleThresholds};
use memdb_encode::{Encoder, EncoderOptions, MiniLm};
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
        let confusion: serde_json::Map<String, Value> = Operation::ALL
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
        out.push_str("expected \\ decided |    ADD | UPDATE | DELETE |   NONE | accuracy\n");
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
        DeciderChoice::Rules => {
            let model_dir = crate::model::ensure_installed(verbose, crate::model::Download::Ask)?;
            let encoder = MiniLm::load(&model_dir, EncoderOptions::default())?;
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
