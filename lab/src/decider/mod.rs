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

use memdb::Embedder;
use memdb::Result;
use memdb::ops::learned::{self, DeciderWeights, Example, FitOptions};
use memdb::ops::{Candidate, Decider, Decision, Operation, RuleDecider};

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

impl EvalReport {
    /// Scores `decision` on `s`.
    fn record(&mut self, s: &Scenario, decision: &Decision) {
        let decided_target = decision
            .target
            .and_then(|i| s.existing.get(i))
            .map(|(id, _)| id.clone());
        let (e, d) = (index(s.expected), index(decision.op));
        self.total += 1;
        self.confusion[e][d] += 1;
        self.per_op[e].1 += 1;
        let right_op = decision.op == s.expected;
        let right_target = !s.expected.has_target() || decided_target == s.target;
        if right_op && right_target {
            self.correct += 1;
            self.per_op[e].0 += 1;
        } else {
            if right_op {
                self.wrong_target += 1;
            }
            self.mistakes
                .push((s.line, s.expected, decision.op, decision.reason.clone()));
        }
    }

    /// Counts a scenario the decider failed on (wrong, outside the confusion matrix).
    fn failure(&mut self, s: &Scenario, error: String) {
        self.total += 1;
        self.per_op[index(s.expected)].1 += 1;
        self.failed.push((s.line, error));
    }

    /// The lowest accuracy of any operation (0 when one has no scenario).
    pub fn worst_op_accuracy(&self) -> f64 {
        Operation::ALL
            .iter()
            .map(|op| self.op_accuracy(*op))
            .fold(1.0, f64::min)
    }
}

/// The candidates a scenario shows its decider, in the file's order.
fn candidates(s: &Scenario) -> Vec<Candidate> {
    s.existing
        .iter()
        .map(|(_, text)| Candidate { text: text.clone() })
        .collect()
}

/// Runs `decider` on every scenario; `progress` gets (done, total).
pub fn evaluate(
    decider: &dyn Decider,
    scenarios: &[Scenario],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<EvalReport> {
    let mut report = EvalReport::default();
    for (done, s) in scenarios.iter().enumerate() {
        // A decider that fails on a scenario (a model's malformed answer) is wrong on it; the
        // failure is listed, and the rest are still scored.
        match decider.decide(&s.new, &candidates(s)) {
            Ok(decision) => report.record(s, &decision),
            Err(e) => report.failure(s, e.to_string()),
        }
        progress(done + 1, scenarios.len());
    }
    Ok(report)
}

/// A scenario as the learned decider reads it: its features (labelled with the right choice)
/// and the rules' decision on it.
#[derive(Debug, Clone)]
pub struct Featured {
    /// The scenario.
    pub scenario: Scenario,
    /// Which of the input files it came from (0 for the first).
    pub file: usize,
    /// Its features and the right choice.
    pub example: Example,
    /// What the rules decided.
    pub rules: Decision,
}

/// Reads every scenario with `rules` (one encoder call each); `progress` gets (done, total).
pub fn featurize<E: Embedder>(
    rules: &RuleDecider<E>,
    scenarios: &[(usize, Scenario)],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Featured>> {
    let mut out = Vec::with_capacity(scenarios.len());
    for (done, (file, s)) in scenarios.iter().enumerate() {
        let (mut example, rule) = learned::example_of(rules, &s.new, &candidates(s))?;
        let target = s
            .target
            .as_ref()
            .and_then(|t| s.existing.iter().position(|(id, _)| id == t));
        example.label = learned::choice(s.expected, target).unwrap_or(0);
        out.push(Featured {
            scenario: s.clone(),
            file: *file,
            example,
            rules: rule,
        });
        progress(done + 1, scenarios.len());
    }
    Ok(out)
}

/// The decision `weights` make on `f`.
fn learned_decision(weights: &DeciderWeights, f: &Featured) -> Decision {
    let rules = learned::choice(f.rules.op, f.rules.target).unwrap_or(0);
    let (choice, p, _) = weights.decide(&f.example, rules);
    let reason = format!("the model (p = {p:.2})");
    match choice {
        0 => Decision::add(reason),
        c => Decision::on(
            [Operation::Update, Operation::Delete, Operation::None][(c - 1) % 3],
            (c - 1) / 3,
            reason,
        ),
    }
}

/// The rules and the learned decider scored out of sample on the same scenarios.
#[derive(Debug, Clone, Default)]
pub struct CrossValidation {
    /// Folds of the k-fold run (and of the inner runs that choose a setting).
    pub folds: usize,
    /// The settings the learned decider chose among (the model's variants).
    pub settings: Vec<FitOptions>,
    /// The rules on every scenario (nothing of them is fitted to these scenarios by this run).
    pub rules: EvalReport,
    /// Each scenario decided by weights fitted on the other folds, with the setting an inner
    /// cross-validation on those folds chose.
    pub learned: EvalReport,
    /// The setting each outer fold chose (index into `settings`).
    pub chosen_per_fold: Vec<usize>,
    /// Each setting's accuracy by plain k-fold over every scenario (what chooses the shipped
    /// setting; biased upward by the choice, unlike `learned`).
    pub per_setting: Vec<f64>,
    /// For each file held out (fit on every other file, score on it): the file, the rules and
    /// the learned decider (its setting chosen by cross-validation on the other files) on it.
    /// With one file, none.
    pub held_out_files: Vec<(usize, EvalReport, EvalReport)>,
}

impl CrossValidation {
    /// Whether the learned decider beat the rules out of sample: higher accuracy in the k-fold
    /// run and in every run across files, and no operation's accuracy more than 5 points
    /// below the rules' worst.
    pub fn learned_wins(&self) -> bool {
        let kfold = self.learned.accuracy() > self.rules.accuracy()
            && self.learned.worst_op_accuracy() + 0.05 >= self.rules.worst_op_accuracy();
        let held_out = self
            .held_out_files
            .iter()
            .all(|(_, rules, learned)| learned.accuracy() > rules.accuracy());
        kfold && held_out
    }

    /// The setting to ship: the best by plain k-fold over every scenario.
    pub fn shipped_setting(&self) -> usize {
        self.per_setting
            .iter()
            .enumerate()
            .fold(
                (0, f64::MIN),
                |best, (i, a)| if *a > best.1 { (i, *a) } else { best },
            )
            .0
    }
}

/// Out-of-fold decisions of `setting` on `featured`: fold `f` holds every `folds`-th one. The
/// folds are fitted on the machine's cores.
fn out_of_fold(featured: &[&Featured], folds: usize, setting: FitOptions) -> Vec<Decision> {
    let fitted = parallel_map(folds, |fold| {
        let train: Vec<Example> = featured
            .iter()
            .enumerate()
            .filter(|(i, _)| i % folds != fold)
            .map(|(_, f)| f.example.clone())
            .collect();
        learned::fit(&train, setting)
    });
    featured
        .iter()
        .enumerate()
        .map(|(i, f)| learned_decision(&fitted[i % folds], f))
        .collect()
}

/// `job(0) … job(n − 1)` on the machine's cores, in order.
fn parallel_map<T: Send>(n: usize, job: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, n.max(1));
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    std::thread::scope(|scope| {
        let job = &job;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t..n)
                        .step_by(threads)
                        .map(|i| (i, job(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            // A job that panicked leaves its slots empty, done again below on this thread.
            if let Ok(done) = handle.join() {
                for (i, value) in done {
                    out[i] = Some(value);
                }
            }
        }
    });
    out.into_iter()
        .enumerate()
        .map(|(i, value)| value.unwrap_or_else(|| job(i)))
        .collect()
}

fn accuracy_of(featured: &[&Featured], decided: &[Decision]) -> f64 {
    let mut report = EvalReport::default();
    for (f, d) in featured.iter().zip(decided) {
        report.record(&f.scenario, d);
    }
    report.accuracy()
}

/// The setting of `settings` with the best `folds`-fold accuracy on `featured` (the first of
/// equal ones).
fn choose_setting(featured: &[&Featured], folds: usize, settings: &[FitOptions]) -> usize {
    if settings.len() < 2 {
        return 0;
    }
    settings
        .iter()
        .map(|s| accuracy_of(featured, &out_of_fold(featured, folds, *s)))
        .enumerate()
        .fold(
            (0, f64::MIN),
            |best, (i, a)| if a > best.1 { (i, a) } else { best },
        )
        .0
}

/// Cross-validates the learned decider against the rules: `folds`-fold over every scenario
/// (each fold every `folds`-th scenario in file order, so each file's kinds spread over the
/// folds), the setting of each outer fold chosen among `settings` by an inner `folds`-fold run
/// on its training scenarios (nested cross-validation); and, when there are several files,
/// each file held out: fitted on the others (the setting chosen on them), scored on it — the
/// estimate closest to scenarios another annotator writes.
pub fn cross_validate(
    featured: &[Featured],
    folds: usize,
    settings: &[FitOptions],
) -> CrossValidation {
    let folds = folds.max(2);
    let settings: Vec<FitOptions> = if settings.is_empty() {
        vec![FitOptions::default()]
    } else {
        settings.to_vec()
    };
    let mut cv = CrossValidation {
        folds,
        settings: settings.clone(),
        ..CrossValidation::default()
    };
    for f in featured {
        cv.rules.record(&f.scenario, &f.rules);
    }
    let all: Vec<&Featured> = featured.iter().collect();
    let mut decided: Vec<Option<Decision>> = vec![None; featured.len()];
    for fold in 0..folds {
        let train: Vec<&Featured> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| i % folds != fold)
            .map(|(_, f)| *f)
            .collect();
        let chosen = choose_setting(&train, folds, &settings);
        cv.chosen_per_fold.push(chosen);
        let examples: Vec<Example> = train.iter().map(|f| f.example.clone()).collect();
        let weights = learned::fit(&examples, settings[chosen]);
        for (i, f) in featured
            .iter()
            .enumerate()
            .filter(|(i, _)| i % folds == fold)
        {
            decided[i] = Some(learned_decision(&weights, f));
        }
    }
    for (f, d) in featured.iter().zip(&decided) {
        if let Some(d) = d {
            cv.learned.record(&f.scenario, d);
        }
    }
    cv.per_setting = settings
        .iter()
        .map(|s| accuracy_of(&all, &out_of_fold(&all, folds, *s)))
        .collect();
    let files = featured.iter().map(|f| f.file + 1).max().unwrap_or(0);
    if files > 1 {
        for held_out in 0..files {
            let train: Vec<&Featured> =
                all.iter().filter(|f| f.file != held_out).copied().collect();
            let chosen = choose_setting(&train, folds, &settings);
            let examples: Vec<Example> = train.iter().map(|f| f.example.clone()).collect();
            let weights = learned::fit(&examples, settings[chosen]);
            let (mut rules, mut model) = (EvalReport::default(), EvalReport::default());
            for f in featured.iter().filter(|f| f.file == held_out) {
                rules.record(&f.scenario, &f.rules);
                model.record(&f.scenario, &learned_decision(&weights, f));
            }
            cv.held_out_files.push((held_out, rules, model));
        }
    }
    cv
}

/// `weights` as the Rust source of `decider_weights.rs`, with `beats_rules` as its
/// `LEARNED_BEATS_RULES`; `provenance` is written in its header.
pub fn weights_source(weights: &DeciderWeights, beats_rules: bool, provenance: &str) -> String {
    let row = |w: &[f64]| {
        w.iter()
            .map(|x| format!("{x:.6}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rows = |name: &str, rows: &[&[f64]]| {
        let mut out = format!("    {name}: [\n");
        for r in rows {
            out.push_str(&format!("        [{}],\n", row(r)));
        }
        out.push_str("    ],\n");
        out
    };
    let mut out = String::new();
    out.push_str("//! The learned decider's shipped weights, written by `memdb ops train`\n");
    out.push_str("//! (`scripts/train-decider.sh`): do not edit by hand.\n//!\n");
    for line in provenance.lines() {
        out.push_str(&format!("//! {line}\n"));
    }
    out.push_str("\nuse super::learned::DeciderWeights;\n\n");
    out.push_str(
        "/// Whether the learned decider beat the rules out of sample in the run that wrote this file.\n",
    );
    out.push_str(&format!(
        "pub(super) const LEARNED_BEATS_RULES: bool = {beats_rules};\n\n"
    ));
    out.push_str("/// The weights fitted on every scenario of that run.\n");
    out.push_str("#[rustfmt::skip]\npub(super) const WEIGHTS: DeciderWeights = DeciderWeights {\n");
    out.push_str(&format!("    add: [{}],\n", row(&weights.add)));
    let ops: Vec<&[f64]> = weights.ops.iter().map(|r| &r[..]).collect();
    out.push_str(&rows("ops", &ops));
    let fact: Vec<&[f64]> = weights.fact_embedding.iter().map(|r| &r[..]).collect();
    out.push_str(&rows("fact_embedding", &fact));
    let pair: Vec<&[f64]> = weights.pair_embedding.iter().map(|r| &r[..]).collect();
    out.push_str(&rows("pair_embedding", &pair));
    out.push_str("};\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
                return Err(memdb::ops::DeciderError::UnknownId { id: "9".into() }.into());
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
