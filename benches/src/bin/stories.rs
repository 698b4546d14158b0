//! Memory that stays right, measured the way a person relies on it (issue 46): life stories —
//! statements told over months, each one `Store::remember` call at its date, as `memdb
//! remember STORE TEXT --time DATE` makes it — then questions about what is true now, each
//! answered by the store's recall as `memdb ask` does.
//!
//! A question is answered right when the memory at rank 1 holds one of its `answer` strings and
//! none of its `stale` strings (a superseded or retracted fact); a fact is lost when no memory
//! of the top 5 holds an answer. The table prints both overall and per question kind, the stale
//! answers at rank 1, and the memory operations the stories caused.
//!
//! ```sh
//! cargo run --release -p memdb-benches --bin stories -- [FILE] [--decider default|rules|learned]
//!     [--cv] [--json OUT]
//! ```
//!
//! FILE defaults to `tests/data/life-stories.jsonl` (format: `tests/data/README-life-stories.md`).
//!
//! `--cv` cross-validates the fusion weights of remembered facts (`RecallOptions::
//! memory_weights`) over the stories: every setting of a small grid is scored on every story;
//! each of five folds of stories is scored with the setting best on the other four (mean of
//! rank-1 accuracy and found-in-top-5), and the pooled held-out figure prints beside the
//! number of settings searched and the defaults' figure. The stores are built once; each
//! question's vectors are computed once (only the fusion differs between settings).

use std::collections::BTreeMap;
use std::path::PathBuf;

use memdb::ops::{Message, RememberOptions, SentenceExtractor};
use memdb::{EventTime, Options, RecallOptions, Store, recall::FusionWeights};
use memdb_benches::{Memo, cpu_features, flag_value, minilm_two_threads};
use serde_json::{Value, json};

struct Question {
    text: String,
    answers: Vec<String>,
    stale: Vec<String>,
    kind: String,
}

struct Story {
    id: String,
    events: Vec<(String, String)>,
    questions: Vec<Question>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn parse(text: &str) -> Vec<Story> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {}: not JSON ({e})", n + 1));
            let events = v["events"]
                .as_array()
                .unwrap_or_else(|| panic!("line {}: no events", n + 1))
                .iter()
                .map(|e| {
                    (
                        e["time"].as_str().unwrap_or_default().to_owned(),
                        e["text"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let questions = v["questions"]
                .as_array()
                .unwrap_or_else(|| panic!("line {}: no questions", n + 1))
                .iter()
                .map(|q| Question {
                    text: q["question"].as_str().unwrap_or_default().to_owned(),
                    answers: strings(&q["answer"]),
                    stale: strings(&q["stale"]),
                    kind: q["kind"].as_str().unwrap_or("other").to_owned(),
                })
                .collect();
            Story {
                id: v["id"].as_str().unwrap_or_default().to_owned(),
                events,
                questions,
            }
        })
        .collect()
}

fn holds(text: &str, needles: &[String]) -> bool {
    let text = text.to_lowercase();
    needles.iter().any(|n| text.contains(&n.to_lowercase()))
}

/// How one question came out.
#[derive(Clone, Copy, Default)]
struct Outcome {
    right_at_1: bool,
    stale_at_1: bool,
    found_in_5: bool,
    /// No current memory holds an answer at all: remembering lost it (or never stored it).
    not_stored: bool,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    questions: usize,
    right: usize,
    stale: usize,
    found: usize,
    not_stored: usize,
}

impl Tally {
    fn add(&mut self, o: Outcome) {
        self.questions += 1;
        self.right += usize::from(o.right_at_1);
        self.stale += usize::from(o.stale_at_1);
        self.found += usize::from(o.found_in_5);
        self.not_stored += usize::from(o.not_stored);
    }

    fn pct(n: usize, of: usize) -> f64 {
        if of == 0 {
            0.0
        } else {
            100.0 * n as f64 / of as f64
        }
    }

    fn row(&self) -> String {
        format!(
            "{:>5} {:>7.1} {:>7.1} {:>7.1} {:>7.1}",
            self.questions,
            Self::pct(self.right, self.questions),
            Self::pct(self.stale, self.questions),
            Self::pct(self.found, self.questions),
            Self::pct(self.not_stored, self.questions),
        )
    }

    fn json(&self) -> Value {
        json!({
            "questions": self.questions,
            "right_at_1": Self::pct(self.right, self.questions),
            "stale_at_1": Self::pct(self.stale, self.questions),
            "found_in_5": Self::pct(self.found, self.questions),
            "not_stored": Self::pct(self.not_stored, self.questions),
        })
    }

    /// The objective the cross-validation maximises: rank-1 accuracy and found-in-5, equally.
    fn objective(&self) -> f64 {
        (self.right + self.found) as f64 / (2 * self.questions.max(1)) as f64
    }
}

/// Each question's outcome under `options`.
fn outcomes(
    stores: &[(Store, &Story)],
    options: &RecallOptions,
    embedder: &dyn memdb::Embedder,
) -> Vec<Vec<Outcome>> {
    stores
        .iter()
        .map(|(store, story)| {
            let snapshot = store.snapshot().unwrap();
            let current: Vec<String> = snapshot
                .scan(&memdb::ScanFilter::default())
                .unwrap()
                .into_iter()
                .map(|i| i.fields.body.unwrap_or_default())
                .collect();
            story
                .questions
                .iter()
                .map(|q| {
                    let recall = store.recall(&q.text, options, embedder).unwrap();
                    let texts: Vec<String> = recall
                        .hits
                        .iter()
                        .take(5)
                        .map(|h| {
                            snapshot
                                .get(h.item)
                                .unwrap()
                                .map(|i| memdb::recall::item_text(&i))
                                .unwrap_or_default()
                        })
                        .collect();
                    let first = texts.first().map(String::as_str).unwrap_or("");
                    Outcome {
                        right_at_1: holds(first, &q.answers) && !holds(first, &q.stale),
                        stale_at_1: holds(first, &q.stale),
                        found_in_5: texts.iter().any(|t| holds(t, &q.answers)),
                        not_stored: !current.iter().any(|t| holds(t, &q.answers)),
                    }
                })
                .collect()
        })
        .collect()
}

fn tally(outcomes: &[Vec<Outcome>], stories: impl Fn(usize) -> bool) -> Tally {
    let mut t = Tally::default();
    for (_, per) in outcomes.iter().enumerate().filter(|(i, _)| stories(*i)) {
        for o in per {
            t.add(*o);
        }
    }
    t
}

/// The settings `--cv` searches: the lexical rank's weight fixed at 1 (only the weights'
/// ratios order the fusion), the dense rank's, the dense score's, recency's, the subject
/// match's and the answer type's around it. The graph and place weights stay the chat turns' (remembered facts are in
/// the graph only after `embed`, and name few places).
fn grid() -> Vec<FusionWeights> {
    let mut out = Vec::new();
    for dense in [0.5, 1.5, 3.0, 6.0] {
        for dense_score in [0.05, 0.2, 0.5] {
            for recency in [0.0, 1.0] {
                for subject in [0.0, 3.0] {
                    for answer_type in [0.0, 3.0] {
                        out.push(FusionWeights {
                            dense,
                            lexical: 1.0,
                            graph: 0.9,
                            place: 1.5,
                            dense_score,
                            recency,
                            subject,
                            answer_type,
                        });
                    }
                }
            }
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let file = args
        .iter()
        .find(|a| {
            !a.starts_with("--")
                && Some(*a) != flag_value(&args, "--decider").as_ref()
                && Some(*a) != flag_value(&args, "--json").as_ref()
        })
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/life-stories.jsonl"),
            PathBuf::from,
        );
    let which = flag_value(&args, "--decider").unwrap_or_else(|| "default".to_owned());
    let cv = args.iter().any(|a| a == "--cv");
    let stories = parse(&std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!("{}: {e}", file.display());
    }));
    let (encoder, _) = minilm_two_threads();
    println!("cpu: {}", cpu_features());
    let rules = memdb::ops::RuleDecider::new(&encoder, memdb::ops::RuleThresholds::default());
    let decider: Box<dyn memdb::ops::Decider> = match which.as_str() {
        "rules" => Box::new(memdb::ops::RuleDecider::new(
            &encoder,
            memdb::ops::RuleThresholds::default(),
        )),
        "learned" => Box::new(memdb::ops::LearnedDecider::new(
            rules,
            memdb::ops::learned::SHIPPED,
        )),
        _ => memdb::ops::on_device_decider(&encoder),
    };
    let decider_name = match which.as_str() {
        "rules" | "learned" => which.clone(),
        _ => memdb::ops::on_device_decider_name().to_owned(),
    };
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let mut ops: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut skipped = 0usize;
    let mut stores = Vec::new();
    for story in &stories {
        let store = Store::create(dir.path().join(&story.id), Options::default()).unwrap();
        for (time, text) in &story.events {
            let mut options = RememberOptions::new(&SentenceExtractor, decider.as_ref(), &encoder);
            options.time = Some(EventTime::parse(time).unwrap());
            let report = store
                .remember(
                    &[Message {
                        speaker: None,
                        text: text.clone(),
                    }],
                    &options,
                )
                .unwrap_or_else(|e| panic!("{}: {text:?}: {e}", story.id));
            for r in &report.results {
                *ops.entry(r.event.name()).or_default() += 1;
            }
            skipped += report.skipped.len();
        }
        stores.push((store, story));
    }
    let remember_s = started.elapsed().as_secs_f64();
    let events: usize = stories.iter().map(|s| s.events.len()).sum();
    let memo = Memo::new(&encoder);
    let defaults = RecallOptions::default();
    let base = outcomes(&stores, &defaults, &memo);
    let overall = tally(&base, |_| true);
    println!(
        "{} stories, {} events remembered in {:.1} s ({:.0} ms each) with the {decider_name} decider",
        stories.len(),
        events,
        remember_s,
        1000.0 * remember_s / events.max(1) as f64
    );
    println!(
        "operations: {}; sentences skipped: {skipped}\n",
        ops.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{:<22} {:>5} {:>7} {:>7} {:>7} {:>7}",
        "questions", "n", "right@1", "stale@1", "found@5", "unkept"
    );
    println!("{:<22} {}", "all", overall.row());
    let mut kinds: BTreeMap<String, Tally> = BTreeMap::new();
    for (per, (_, story)) in base.iter().zip(&stores) {
        for (o, q) in per.iter().zip(&story.questions) {
            kinds.entry(q.kind.clone()).or_default().add(*o);
        }
    }
    for (kind, t) in &kinds {
        println!("{:<22} {}", kind, t.row());
    }
    if args.iter().any(|a| a == "--misses") {
        // Every question not answered right at rank 1, with the top three memories.
        for (per, (store, story)) in base.iter().zip(&stores) {
            let snapshot = store.snapshot().unwrap();
            for (o, q) in per.iter().zip(&story.questions) {
                if o.right_at_1 {
                    continue;
                }
                let hits = store.recall(&q.text, &defaults, &memo).unwrap().hits;
                println!(
                    "\n{} {:?} ({}) answer {:?} stale {:?}",
                    story.id, q.text, q.kind, q.answers, q.stale
                );
                for h in hits.iter().take(3) {
                    let text = snapshot
                        .get(h.item)
                        .unwrap()
                        .and_then(|i| i.fields.body)
                        .unwrap_or_default();
                    println!("   {:.3} {text}", h.score);
                }
                if o.not_stored {
                    // Which operation took the answer out of the current memories.
                    for row in snapshot.op_log(None).unwrap() {
                        let history = snapshot.history(row.memory_id).unwrap();
                        let (old, new) = history.versions_of(&row);
                        let body = |v: Option<&memdb::memory::MemoryVersion>| {
                            v.and_then(|v| v.record.fields.body.clone())
                                .unwrap_or_default()
                        };
                        let (old, new) = (body(old), body(new));
                        if holds(&old, &q.answers) && !holds(&new, &q.answers) {
                            println!(
                                "   lost by {} of {old:?} -> {new:?}: {}",
                                row.kind.name(),
                                row.reason
                            );
                        }
                    }
                }
            }
        }
    }
    let mut doc = json!({
        "file": file.display().to_string(),
        "decider": decider_name,
        "stories": stories.len(),
        "events": events,
        "remember_seconds": remember_s,
        "operations": ops,
        "skipped_sentences": skipped,
        "overall": overall.json(),
        "by_kind": kinds.iter().map(|(k, t)| (k.clone(), t.json())).collect::<serde_json::Map<_, _>>(),
    });
    if cv {
        let grid = grid();
        let runs: Vec<Vec<Vec<Outcome>>> = grid
            .iter()
            .map(|w| {
                // On the scale of the other items' weights, as the defaults are.
                let defaults = RecallOptions::default();
                let options = RecallOptions {
                    memory_weights: w.scaled_to(defaults.default_weights().total()),
                    ..defaults
                };
                outcomes(&stores, &options, &memo)
            })
            .collect();
        const FOLDS: usize = 5;
        let mut held_out = Tally::default();
        let mut chosen = Vec::new();
        for fold in 0..FOLDS {
            let best = (0..grid.len())
                .max_by(|&a, &b| {
                    let score = |g: usize| tally(&runs[g], |s| s % FOLDS != fold).objective();
                    score(a).total_cmp(&score(b)).then(b.cmp(&a))
                })
                .unwrap_or(0);
            chosen.push(best);
            let t = tally(&runs[best], |s| s % FOLDS == fold);
            held_out.questions += t.questions;
            held_out.right += t.right;
            held_out.stale += t.stale;
            held_out.found += t.found;
            held_out.not_stored += t.not_stored;
        }
        let best_all = (0..grid.len())
            .max_by(|&a, &b| {
                let score = |g: usize| tally(&runs[g], |_| true).objective();
                score(a).total_cmp(&score(b)).then(b.cmp(&a))
            })
            .unwrap_or(0);
        let show = |w: &FusionWeights| {
            format!(
                "dense {} lexical {} dense score {} recency {} subject {} answer type {}",
                w.dense, w.lexical, w.dense_score, w.recency, w.subject, w.answer_type
            )
        };
        println!(
            "\ncross-validation of the memory fusion weights: {} settings searched, {FOLDS} folds of stories",
            grid.len()
        );
        println!("{:<34} {}", "defaults (all stories)", overall.row());
        println!("{:<34} {}", "nested: held-out folds", held_out.row());
        for (fold, g) in chosen.iter().enumerate() {
            println!("  fold {fold} chose {}", show(&grid[*g]));
        }
        println!(
            "{:<34} {}  ({})",
            "best on all stories (biased)",
            tally(&runs[best_all], |_| true).row(),
            show(&grid[best_all])
        );
        doc["cv"] = json!({
            "settings_searched": grid.len(),
            "folds": FOLDS,
            "held_out": held_out.json(),
            "chosen_per_fold": chosen.iter().map(|g| show(&grid[*g])).collect::<Vec<_>>(),
            "best_on_all": {"weights": show(&grid[best_all]), "figures": tally(&runs[best_all], |_| true).json()},
        });
    }
    if let Some(out) = flag_value(&args, "--json") {
        std::fs::write(&out, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
