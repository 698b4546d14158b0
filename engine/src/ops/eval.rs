//! Scoring a [`Decider`] on labelled scenarios (`memdb ops eval --scenarios FILE.jsonl`).
//!
//! A scenario file is outside bytes: one JSON object per line,
//! `{"existing": [{"id": "0", "text": "…", "time": "2024-03-01"}], "new": "…",
//! "time": "2024-05-02", "expected": "ADD|UPDATE|DELETE|NONE", "target": "0"}` (`target` only
//! for UPDATE, DELETE and NONE; other keys are ignored). A line that is not such an object is a
//! typed [`ScenarioError`] naming its line; [`parse_scenarios`] reports each bad line and keeps
//! the rest, so one typo does not hide the score of the others.
//!
//! A decision is right when its operation is the expected one and, for UPDATE, DELETE and NONE,
//! its target is the expected memory. The report has accuracy overall and per expected
//! operation, and the confusion matrix (expected × decided operation; a right operation on the
//! wrong memory is counted in [`EvalReport::wrong_target`]).

use serde_json::Value;

use super::{Candidate, Decider, Operation};
use crate::error::Result;

/// One labelled case.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Line number in its file (1-based).
    pub line: usize,
    /// The stored memories: (id, text).
    pub existing: Vec<(String, String)>,
    /// The new fact.
    pub new: String,
    /// The right operation.
    pub expected: Operation,
    /// The id it refers to (UPDATE, DELETE, NONE).
    pub target: Option<String>,
}

/// Why a scenario line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct ScenarioError {
    /// Line number (1-based).
    pub line: usize,
    /// What is wrong.
    pub why: String,
}

fn text_of<'a>(object: &'a Value, key: &str) -> std::result::Result<&'a str, String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{key}` must be a string"))
}

fn parse_line(line: &str) -> std::result::Result<Scenario, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    if !value.is_object() {
        return Err("not a JSON object".to_owned());
    }
    let new = text_of(&value, "new")?.to_owned();
    let expected_name = text_of(&value, "expected")?;
    let expected = Operation::from_name(expected_name).ok_or_else(|| {
        format!("`expected` is {expected_name:?}, not ADD, UPDATE, DELETE or NONE")
    })?;
    let mut existing = Vec::new();
    for (i, memory) in value
        .get("existing")
        .and_then(Value::as_array)
        .ok_or("`existing` must be an array")?
        .iter()
        .enumerate()
    {
        let id = match memory.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(format!("existing[{i}] has no string `id`")),
        };
        let text = text_of(memory, "text").map_err(|e| format!("existing[{i}]: {e}"))?;
        if existing.iter().any(|(other, _)| *other == id) {
            return Err(format!("existing id {id:?} appears twice"));
        }
        existing.push((id, text.to_owned()));
    }
    let target = match value.get("target") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err("`target` must be a string id".to_owned()),
    };
    match (&target, expected.has_target()) {
        (None, true) => return Err(format!("{expected} needs a `target`")),
        (Some(t), true) if !existing.iter().any(|(id, _)| id == t) => {
            return Err(format!("`target` {t:?} is not an existing id"));
        }
        _ => {}
    }
    Ok(Scenario {
        line: 0,
        existing,
        new,
        expected,
        target: if expected.has_target() { target } else { None },
    })
}

/// The scenarios of a JSONL text, and the lines refused (blank lines are skipped).
pub fn parse_scenarios(text: &str) -> (Vec<Scenario>, Vec<ScenarioError>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(mut scenario) => {
                scenario.line = index + 1;
                good.push(scenario);
            }
            Err(why) => bad.push(ScenarioError {
                line: index + 1,
                why,
            }),
        }
    }
    (good, bad)
}

/// A decider's score on scenarios.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvalReport {
    /// Scenarios scored.
    pub total: usize,
    /// Decided right (operation and target).
    pub correct: usize,
    /// `confusion[expected][decided]`, in [`Operation::ALL`] order.
    pub confusion: [[usize; 4]; 4],
    /// Right operation, wrong memory.
    pub wrong_target: usize,
    /// Per expected operation: (right, total).
    pub per_op: [(usize, usize); 4],
    /// The scenarios decided wrong: (line, expected, decided, reason).
    pub mistakes: Vec<(usize, Operation, Operation, String)>,
    /// The scenarios the decider failed on (counted wrong, not in the confusion matrix):
    /// (line, error).
    pub failed: Vec<(usize, String)>,
}

impl EvalReport {
    /// Share decided right.
    pub fn accuracy(&self) -> f64 {
        ratio(self.correct, self.total)
    }

    /// Share of the scenarios expecting `op` decided right.
    pub fn op_accuracy(&self, op: Operation) -> f64 {
        let (right, total) = self.per_op[index(op)];
        ratio(right, total)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

fn index(op: Operation) -> usize {
    Operation::ALL.iter().position(|o| *o == op).unwrap_or(0)
}

/// Runs `decider` on every scenario; `progress` gets (done, total).
pub fn evaluate(
    decider: &dyn Decider,
    scenarios: &[Scenario],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<EvalReport> {
    let mut report = EvalReport {
        total: scenarios.len(),
        ..EvalReport::default()
    };
    for (done, s) in scenarios.iter().enumerate() {
        let candidates: Vec<Candidate> = s
            .existing
            .iter()
            .map(|(_, text)| Candidate { text: text.clone() })
            .collect();
        // A decider that fails on a scenario (a model's malformed answer) is wrong on it; the
        // failure is listed, and the rest are still scored.
        let decision = match decider.decide(&s.new, &candidates) {
            Ok(decision) => decision,
            Err(e) => {
                report.per_op[index(s.expected)].1 += 1;
                report.failed.push((s.line, e.to_string()));
                progress(done + 1, scenarios.len());
                continue;
            }
        };
        let decided_target = decision
            .target
            .and_then(|i| s.existing.get(i))
            .map(|(id, _)| id.clone());
        let (e, d) = (index(s.expected), index(decision.op));
        report.confusion[e][d] += 1;
        report.per_op[e].1 += 1;
        let right_op = decision.op == s.expected;
        let right_target = !s.expected.has_target() || decided_target == s.target;
        if right_op && right_target {
            report.correct += 1;
            report.per_op[e].0 += 1;
        } else {
            if right_op {
                report.wrong_target += 1;
            }
            report
                .mistakes
                .push((s.line, s.expected, decision.op, decision.reason));
        }
        progress(done + 1, scenarios.len());
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Decision;

    #[test]
    fn lines_are_checked_and_bad_ones_reported_with_their_number() {
        let text = concat!(
            r#"{"existing": [{"id": "0", "text": "Lives in Lisbon", "time": "2024-03-01"}], "new": "Lives in Porto", "time": "2024-05-02", "expected": "UPDATE", "target": "0"}"#,
            "\n\n",
            r#"{"existing": [], "new": "Has a cat", "expected": "add"}"#,
            "\n",
            r#"{"existing": [], "new": "x", "expected": "MERGE"}"#,
            "\n",
            r#"{"existing": [{"id": "0", "text": "a"}], "new": "b", "expected": "DELETE", "target": "7"}"#,
            "\n",
            r#"{"existing": [{"id": "0", "text": "a"}], "new": "b", "expected": "NONE"}"#,
            "\nnot json\n",
        );
        let (good, bad) = parse_scenarios(text);
        assert_eq!(good.len(), 2);
        assert_eq!((good[0].line, good[1].line), (1, 3));
        assert_eq!(good[1].expected, Operation::Add);
        let lines: Vec<usize> = bad.iter().map(|e| e.line).collect();
        assert_eq!(lines, [4, 5, 6, 7], "{bad:?}");
        assert!(bad[1].why.contains("not an existing id"), "{bad:?}");
    }

    /// A decider that always says UPDATE of the first memory (ADD when there is none).
    #[derive(Debug)]
    struct First;
    impl Decider for First {
        fn decide(&self, _: &str, candidates: &[Candidate]) -> Result<Decision> {
            Ok(if candidates.is_empty() {
                Decision::add("empty")
            } else {
                Decision::on(Operation::Update, 0, "first")
            })
        }
    }

    /// A decider that fails on every fact mentioning "fail".
    #[derive(Debug)]
    struct Fails;
    impl Decider for Fails {
        fn decide(&self, fact: &str, _: &[Candidate]) -> Result<Decision> {
            if fact.contains("fail") {
                return Err(crate::ops::DeciderError::UnknownId { id: "9".into() }.into());
            }
            Ok(Decision::add("ok"))
        }
    }

    #[test]
    fn a_failing_decision_is_counted_wrong_and_the_rest_scored() {
        let text = [
            r#"{"existing": [], "new": "fail here", "expected": "ADD"}"#,
            r#"{"existing": [], "new": "fine", "expected": "ADD"}"#,
        ]
        .join("\n");
        let (scenarios, _) = parse_scenarios(&text);
        let report = evaluate(&Fails, &scenarios, &mut |_, _| {}).unwrap();
        assert_eq!((report.total, report.correct), (2, 1));
        assert_eq!(report.failed.len(), 1);
        assert_eq!(report.failed[0].0, 1);
        assert_eq!(report.op_accuracy(Operation::Add), 0.5);
        assert_eq!(report.confusion[0].iter().sum::<usize>(), 1);
    }

    #[test]
    fn the_report_counts_operations_targets_and_confusion() {
        let text = [
            r#"{"existing": [{"id": "a", "text": "x"}], "new": "y", "expected": "UPDATE", "target": "a"}"#,
            r#"{"existing": [{"id": "a", "text": "x"}, {"id": "b", "text": "z"}], "new": "y", "expected": "UPDATE", "target": "b"}"#,
            r#"{"existing": [{"id": "a", "text": "x"}], "new": "y", "expected": "DELETE", "target": "a"}"#,
            r#"{"existing": [], "new": "y", "expected": "ADD"}"#,
        ]
        .join("\n");
        let (scenarios, bad) = parse_scenarios(&text);
        assert!(bad.is_empty());
        let report = evaluate(&First, &scenarios, &mut |_, _| {}).unwrap();
        assert_eq!(
            (report.total, report.correct, report.wrong_target),
            (4, 2, 1)
        );
        assert_eq!(report.op_accuracy(Operation::Update), 0.5);
        assert_eq!(report.op_accuracy(Operation::Add), 1.0);
        assert_eq!(report.confusion[2][1], 1, "DELETE decided as UPDATE");
        assert_eq!(report.mistakes.len(), 2);
        assert_eq!(report.accuracy(), 0.5);
    }
}
