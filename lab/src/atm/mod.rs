//! ATM-Bench evaluation (SPEC.md §12): retrieval through the store for each question, and the
//! benchmark's three metrics, computed as its own code computes them.
//!
//! - **Recall@k** per question is |set(GT) ∩ top-k| / |set(GT)|, averaged over the questions
//!   with evidence; questions without evidence are counted apart and left out. recall@gt is the
//!   same with k = |GT|; hit@1 is whether the first item is evidence.
//! - **QS** per question: [`answer::exact_match`] for `number`, [`answer::list_jaccard`] for
//!   `list_recall`, a judge ([`Judge`]) for `open_end`, or *not scored* when there is no
//!   judge (never guessed). QS overall and per type is the mean over the scored questions.
//! - **Joint@k**, both forms, over the questions with evidence whose answer is scored: the
//!   paper's QS × Recall@k, and the benchmark code's `bool(QS) × Recall@k` (a partial Jaccard
//!   counts as correct); plus the code's strict form, 1 when correct and GT ⊆ top-k.
//!
//! [`evaluate`] is pure (rankings and answers in, figures out), so its figures can be checked by
//! hand; [`retrieve`] makes the rankings from a store. NIAH pools restrict a question's
//! retrieval to the pool's ids.

pub mod answer;

use std::collections::{BTreeMap, HashMap};

use memdb_formats::import::atm::{Prediction, Question, QuestionType};
use roaring::RoaringTreemap;

use memdb::recall::{RecallOptions, Signals};
use memdb::{Embedder, Store};

use crate::error::{Error, Result};

/// One question's retrieval: the benchmark ids of the items, best first, and their scores.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranking {
    /// Benchmark ids (the items' external ids), best first.
    pub ids: Vec<String>,
    /// The fused score of each.
    pub scores: Vec<f64>,
}

/// How the answer of one question was scored.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerScore {
    /// 0..=1 (1 or 0 for `number` and `open_end`; Jaccard for `list_recall`).
    pub score: f64,
    /// `em`, `jaccard` or `llm`.
    pub metric: &'static str,
    /// The prediction as the scorer read it.
    pub normalized_prediction: String,
    /// The judge's reason (`open_end`).
    pub explanation: Option<String>,
}

/// An `open_end` answer's judge: a local model asked whether the prediction matches.
pub trait Judge {
    /// Whether `prediction` answers `question` as `truth` does, and why.
    fn judge(&self, question: &str, truth: &str, prediction: &str) -> Result<(bool, String)>;
}

/// One question's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionResult {
    /// The question.
    pub question: Question,
    /// What retrieval returned.
    pub ranking: Ranking,
    /// Recall at each k asked for (`None` when the question has no evidence).
    pub recall: BTreeMap<usize, Option<f64>>,
    /// Recall at k = |GT|.
    pub recall_at_gt: Option<f64>,
    /// Whether the first item is evidence (`None` without evidence).
    pub hit_at_1: Option<bool>,
    /// The system's answer, when the predictions file has one.
    pub prediction: Option<String>,
    /// Its score (`None`: not scored, e.g. `open_end` without a judge).
    pub answer: Option<AnswerScore>,
}

/// Mean answer score of a group of questions.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AnswerSummary {
    /// Questions in the group.
    pub count: usize,
    /// Those whose answer was scored.
    pub scored: usize,
    /// Sum of their scores.
    pub correct: f64,
}

impl AnswerSummary {
    /// Mean score over the scored questions (`None` when none was scored).
    pub fn accuracy(&self) -> Option<f64> {
        (self.scored > 0).then(|| self.correct / self.scored as f64)
    }
}

/// Figures over a group of questions (all, or one type).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Questions in the group.
    pub questions: usize,
    /// Those with evidence (retrieval figures are over these).
    pub with_evidence: usize,
    /// Those without (left out of retrieval figures).
    pub empty_evidence: usize,
    /// Mean Recall@k.
    pub recall: BTreeMap<usize, f64>,
    /// Mean recall@gt.
    pub recall_at_gt: f64,
    /// Share of hit@1.
    pub hit_at_1: f64,
    /// Answer scores.
    pub qs: AnswerSummary,
    /// The paper's Joint@k: mean QS × Recall@k.
    pub joint: BTreeMap<usize, f64>,
    /// The benchmark code's Joint@k: mean bool(QS) × Recall@k.
    pub joint_bool: BTreeMap<usize, f64>,
    /// The benchmark code's strict Joint@k: correct and GT ⊆ top-k.
    pub joint_strict: BTreeMap<usize, f64>,
    /// Questions in the joint figures (with evidence and a scored answer).
    pub joint_count: usize,
}

/// The whole evaluation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// Every question, in file order.
    pub questions: Vec<QuestionResult>,
    /// Over all questions.
    pub overall: Summary,
    /// Per question type, for the types present.
    pub by_type: BTreeMap<&'static str, Summary>,
    /// Whether predictions were given (else no QS or joint figures).
    pub with_predictions: bool,
}

/// The retrieval of each question through `store`'s recall with `signals`, `k` items deep
/// (a NIAH question only among its pool's ids).
pub fn retrieve(
    store: &Store,
    questions: &[Question],
    k: usize,
    signals: Signals,
    embedder: &dyn Embedder,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<Ranking>> {
    let snapshot = store.snapshot()?;
    let mut external: HashMap<u64, String> = HashMap::new();
    let mut out = Vec::with_capacity(questions.len());
    for (done, question) in questions.iter().enumerate() {
        let items = match &question.pool {
            None => None,
            Some(pool) => {
                let mut allowed = RoaringTreemap::new();
                for id in pool {
                    if let Some(item) = snapshot.get_by_external_id(id)? {
                        allowed.insert(item.id);
                    }
                }
                Some(allowed)
            }
        };
        let options = RecallOptions {
            k,
            signals,
            items,
            ..RecallOptions::default()
        };
        let recall = store.recall(&question.question, &options, embedder)?;
        let mut ranking = Ranking::default();
        for hit in recall.hits {
            let id = match external.get(&hit.item) {
                Some(id) => id.clone(),
                None => {
                    let id = snapshot
                        .get(hit.item)?
                        .and_then(|item| item.fields.external_id)
                        .unwrap_or_else(|| format!("item:{}", hit.item));
                    external.insert(hit.item, id.clone());
                    id
                }
            };
            ranking.ids.push(id);
            ranking.scores.push(hit.score);
        }
        out.push(ranking);
        progress(done + 1);
    }
    Ok(out)
}

/// The share of `truth` among the first `k` of `ranked` (`None` for empty `truth`).
pub fn recall_at(truth: &[String], ranked: &[String], k: usize) -> Option<f64> {
    if truth.is_empty() {
        return None;
    }
    let top = &ranked[..k.min(ranked.len())];
    let found = truth.iter().filter(|t| top.contains(t)).count();
    Some(found as f64 / truth.len() as f64)
}

/// The figures of `questions` given their `rankings` (same order), the `predictions` (if any)
/// and a `judge` for open-ended answers (if any), at each of `ks`.
pub fn evaluate(
    questions: &[Question],
    rankings: &[Ranking],
    predictions: Option<&[Prediction]>,
    judge: Option<&dyn Judge>,
    ks: &[usize],
) -> Result<Report> {
    let answers: HashMap<&str, &str> = predictions
        .unwrap_or_default()
        .iter()
        .map(|p| (p.id.as_str(), p.answer.as_str()))
        .collect();
    let mut results = Vec::with_capacity(questions.len());
    let empty = Ranking::default();
    for (i, q) in questions.iter().enumerate() {
        let ranking = rankings.get(i).unwrap_or(&empty).clone();
        let truth = &q.evidence_ids;
        let recall = ks
            .iter()
            .map(|&k| (k, recall_at(truth, &ranking.ids, k)))
            .collect();
        let recall_at_gt = recall_at(truth, &ranking.ids, truth.len());
        let hit_at_1 =
            (!truth.is_empty()).then(|| ranking.ids.first().is_some_and(|f| truth.contains(f)));
        // A question the predictions file does not answer is answered with nothing, as the
        // benchmark's evaluator does.
        let prediction = predictions.map(|_| answers.get(q.id.as_str()).copied().unwrap_or(""));
        let answer = match prediction {
            None => None,
            Some(p) => score_answer(q, p, judge)?,
        };
        results.push(QuestionResult {
            question: q.clone(),
            ranking,
            recall,
            recall_at_gt,
            hit_at_1,
            prediction: prediction.map(str::to_owned),
            answer,
        });
    }
    let overall = summarize(results.iter(), ks);
    let mut by_type = BTreeMap::new();
    for qtype in QuestionType::ALL {
        let group: Vec<&QuestionResult> = results
            .iter()
            .filter(|r| r.question.qtype == qtype)
            .collect();
        if !group.is_empty() {
            by_type.insert(qtype.name(), summarize(group.into_iter(), ks));
        }
    }
    Ok(Report {
        questions: results,
        overall,
        by_type,
        with_predictions: predictions.is_some(),
    })
}

fn score_answer(
    q: &Question,
    prediction: &str,
    judge: Option<&dyn Judge>,
) -> Result<Option<AnswerScore>> {
    let scored = |j: answer::Judged, metric| AnswerScore {
        score: j.score,
        metric,
        normalized_prediction: j.normalized_prediction,
        explanation: None,
    };
    let defect = |e: answer::PatternError| Error::Scorer(e.to_string());
    Ok(match q.qtype {
        QuestionType::Number => Some(scored(
            answer::exact_match(&q.question, &q.answer, prediction).map_err(defect)?,
            "em",
        )),
        QuestionType::ListRecall => Some(scored(
            answer::list_jaccard(&q.answer, prediction).map_err(defect)?,
            "jaccard",
        )),
        QuestionType::OpenEnd => match judge {
            None => None,
            Some(judge) => {
                let (correct, why) = judge.judge(&q.question, &q.answer, prediction)?;
                Some(AnswerScore {
                    score: if correct { 1.0 } else { 0.0 },
                    metric: "llm",
                    normalized_prediction: prediction.trim().to_owned(),
                    explanation: Some(why),
                })
            }
        },
    })
}

fn summarize<'a>(results: impl Iterator<Item = &'a QuestionResult>, ks: &[usize]) -> Summary {
    let mut s = Summary::default();
    let mut sums: BTreeMap<usize, f64> = ks.iter().map(|&k| (k, 0.0)).collect();
    let mut joint = sums.clone();
    let mut joint_bool = sums.clone();
    let mut joint_strict = sums.clone();
    let (mut gt_sum, mut hits) = (0.0, 0usize);
    for r in results {
        s.questions += 1;
        s.qs.count += 1;
        if let Some(a) = &r.answer {
            s.qs.scored += 1;
            s.qs.correct += a.score;
        }
        if r.question.evidence_ids.is_empty() {
            s.empty_evidence += 1;
            continue;
        }
        s.with_evidence += 1;
        gt_sum += r.recall_at_gt.unwrap_or(0.0);
        hits += usize::from(r.hit_at_1 == Some(true));
        for &k in ks {
            let recall = r.recall.get(&k).copied().flatten().unwrap_or(0.0);
            *sums.entry(k).or_default() += recall;
            if let Some(a) = &r.answer {
                let correct = a.score > 0.0;
                *joint.entry(k).or_default() += a.score * recall;
                *joint_bool.entry(k).or_default() += if correct { recall } else { 0.0 };
                *joint_strict.entry(k).or_default() +=
                    if correct && recall >= 1.0 { 1.0 } else { 0.0 };
            }
        }
        if r.answer.is_some() {
            s.joint_count += 1;
        }
    }
    let mean = |total: f64, n: usize| if n == 0 { 0.0 } else { total / n as f64 };
    s.recall = sums
        .into_iter()
        .map(|(k, v)| (k, mean(v, s.with_evidence)))
        .collect();
    s.recall_at_gt = mean(gt_sum, s.with_evidence);
    s.hit_at_1 = mean(hits as f64, s.with_evidence);
    let per_joint = |m: BTreeMap<usize, f64>| {
        m.into_iter()
            .map(|(k, v)| (k, mean(v, s.joint_count)))
            .collect()
    };
    s.joint = per_joint(joint);
    s.joint_bool = per_joint(joint_bool);
    s.joint_strict = per_joint(joint_strict);
    s
}

/// The benchmark's judge prompt, in its words (an instruction list, then the three texts).
pub const JUDGE_PROMPT: &str = "You are an evaluator, and you are given a task to evaluate a model prediction \
with a given question. 1. Check whether the prediction really answers the question. 2. If it does, judge whether \
the prediction matches the ground truth answer: always assume the ground truth is correct; numbers, times and time \
ranges must match; a set of objects matches when the prediction covers most of them without many that are not in \
the ground truth; an \"I don't know\" ground truth matches only a prediction that implies the same; a reasonable \
prediction that conflicts with the ground truth does not match; extra information is allowed when it does not \
contradict the ground truth; when it is hard to decide, it does not match. Respond with only a single JSON object \
with an \"explanation\" field (your short reasoning, under 100 words) and an \"accuracy\" field, true or false.";

/// The judge's verdict in a model's reply: the JSON object in it with an `accuracy` member
/// (`true`/`false`, or the strings "true"/"false"), and its explanation. A reply without one is
/// an error, never a guess.
pub fn parse_verdict(reply: &str) -> std::result::Result<(bool, String), String> {
    let (Some(start), Some(end)) = (reply.find('{'), reply.rfind('}')) else {
        return Err(format!(
            "no JSON object in the judge's reply: {}",
            memdb_endpoint::snippet(reply)
        ));
    };
    if end < start {
        return Err("no JSON object in the judge's reply".to_owned());
    }
    let value: serde_json::Value = serde_json::from_str(&reply[start..=end])
        .map_err(|e| format!("the judge's reply is not JSON ({e})"))?;
    let accuracy = match value.get("accuracy") {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) if s.eq_ignore_ascii_case("true") => true,
        Some(serde_json::Value::String(s)) if s.eq_ignore_ascii_case("false") => false,
        other => {
            return Err(format!(
                "the judge's `accuracy` is {other:?}, not true or false"
            ));
        }
    };
    let explanation = value
        .get("explanation")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok((accuracy, explanation))
}

/// The judge on a local OpenAI-compatible server.
pub struct LlmJudge {
    chat: memdb_endpoint::LoopbackChat,
    model: String,
}

impl LlmJudge {
    /// A judge asking `model` at `base_url` (loopback only), each call bounded by `timeout`.
    pub fn new(
        base_url: &str,
        model: &str,
        timeout: std::time::Duration,
    ) -> std::result::Result<LlmJudge, memdb_endpoint::EndpointError> {
        Ok(LlmJudge {
            chat: memdb_endpoint::LoopbackChat::new(base_url, timeout)?,
            model: model.to_owned(),
        })
    }
}

impl Judge for LlmJudge {
    fn judge(&self, question: &str, truth: &str, prediction: &str) -> Result<(bool, String)> {
        let request = serde_json::json!({
            "model": self.model,
            "temperature": 0.0,
            "max_tokens": 600,
            "messages": [{"role": "user", "content": format!(
                "{JUDGE_PROMPT}\nQuestion: {question}\nGround truth: {truth}\nPrediction: {prediction}"
            )}],
        });
        let reply = self.chat.complete(&request).map_err(Error::Judge)?;
        parse_verdict(&reply).map_err(|why| {
            Error::Judge(memdb_endpoint::EndpointError::Reply {
                url: self.chat.url().to_owned(),
                why,
            })
        })
    }
}

#[cfg(test)]
mod tests;
