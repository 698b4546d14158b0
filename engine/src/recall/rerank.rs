//! The first-rank reranker (issue 26): a logistic model over features of the fused candidates
//! that reorders the top [`RERANK_DEPTH`] (or `k`, when larger) of the fusion.
//!
//! Fusion by reciprocal rank and the context spread find the evidence deep (R@10) but often
//! put the turn that *asks* about a topic, or its neighbour, above the turn that answers: the
//! signals agree on the topic, not on which turn holds the answer. The reranker weighs what
//! the fusion cannot: how the signals agree on this item (each signal's rank, the fused
//! score against the best one, the fused position), the graph nodes it matched, whether the
//! question names the item's speaker, whether the item is itself a question, and its length.
//!
//! Invariants: the reranker only reorders the candidates the fusion ranked — it never adds or
//! drops one within the depth — and is deterministic (ties keep the fused order). Its features
//! are computed from the fused order, the order the model was learned on. It moves only chat
//! turns, among the ranks chat turns held: the only labelled data are conversations, and a
//! model fitted on them has not learned how a photo or a mail answers (a camera's name ranked
//! its photos below another item when it reordered everything).
//!
//! The shipped weights ([`Reranker::learned`]) were fitted by [`Reranker::fit`] on the five
//! labelled LoCoMo conversations of `../shared/data` (bench `locomo --cv`, which also reports
//! the estimate that matters: each conversation scored by a model fitted on the other four).

use memdb_formats::item::ItemFields;

/// Candidates the reranker reorders (at least; `k` when larger).
pub const RERANK_DEPTH: usize = 30;

/// Features per candidate, in this order: 1 (bias); the fused score ÷ the best fused score;
/// 1 ÷ the fused position (1-based); 1 ÷ the dense, lexical and graph ranks (0 when the signal
/// did not find it); 1 when the place signal found it; the graph nodes it matched ÷ 5 (at most
/// 1); 1 when the question names the item's speaker; 1 when the item's body has a question
/// mark; ln(1 + the body's characters) ÷ 6.
pub const FEATURES: usize = 11;

/// One candidate's features (see [`FEATURES`]).
pub type Features = [f64; FEATURES];

/// A logistic model over [`Features`]: the probability that a candidate is evidence for the
/// question is `σ(w · x)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reranker {
    /// One weight per feature, the bias first.
    pub weights: Features,
}

impl Reranker {
    /// The weights `locomo --cv` fitted on all five labelled LoCoMo conversations.
    pub fn learned() -> Reranker {
        Reranker {
            weights: LEARNED_WEIGHTS,
        }
    }

    /// `σ(w · x)`.
    pub fn probability(&self, features: &Features) -> f64 {
        let z: f64 = self.weights.iter().zip(features).map(|(w, x)| w * x).sum();
        1.0 / (1.0 + (-z).exp())
    }

    /// Fits a model to `(features, is evidence)` rows: logistic regression by full-batch
    /// gradient descent (a fixed 400 steps of 2.0), with a small L2 penalty on every weight
    /// but the bias. Deterministic; no rows give the zero model.
    pub fn fit(rows: &[(Features, bool)]) -> Reranker {
        let mut model = Reranker {
            weights: [0.0; FEATURES],
        };
        if rows.is_empty() {
            return model;
        }
        let n = rows.len() as f64;
        for _ in 0..FIT_STEPS {
            let mut gradient = [0.0; FEATURES];
            for (x, is_evidence) in rows {
                let error = model.probability(x) - f64::from(u8::from(*is_evidence));
                for (g, v) in gradient.iter_mut().zip(x) {
                    *g += error * v;
                }
            }
            for (i, (w, g)) in model.weights.iter_mut().zip(gradient).enumerate() {
                let penalty = if i == 0 { 0.0 } else { FIT_L2 * *w };
                *w -= FIT_STEP * (g / n + penalty);
            }
        }
        model
    }
}

const FIT_STEPS: usize = 400;
const FIT_STEP: f64 = 2.0;
const FIT_L2: f64 = 1e-3;

/// Printed by `locomo --cv` ("reranker weights fitted on all 5 conversations", under the
/// default fusion, with the encoder's default int8 projections): the bias, then the features
/// in [`FEATURES`]'s order. The place feature's 0 is LoCoMo's (no places).
const LEARNED_WEIGHTS: Features = [
    -3.6453620979665775,
    0.5921738603189413,
    1.308301739448996,
    0.5523334591891069,
    1.6810212672703562,
    1.0045883217776177,
    0.0,
    -0.08868589760718538,
    0.28396714851952676,
    -1.31781221857127,
    -0.8138586985736647,
];

/// What the reranker reads of an item, kept per item in the recall index.
#[derive(Debug, Clone, Default)]
pub(crate) struct ItemCues {
    /// The speaker, lowercase.
    speaker: Option<String>,
    /// Whether the body has a question mark.
    asks: bool,
    /// ln(1 + the body's characters) ÷ 6.
    length: f64,
}

impl ItemCues {
    pub(crate) fn of(fields: &ItemFields) -> ItemCues {
        let body = fields.body.as_deref().unwrap_or_default();
        ItemCues {
            speaker: fields.speaker.as_deref().map(str::to_lowercase),
            asks: body.contains('?'),
            length: (1.0 + body.chars().count() as f64).ln() / 6.0,
        }
    }
}

/// The question's words, lowercase, for [`features`]'s speaker match.
pub(crate) fn question_words(question: &str) -> std::collections::HashSet<String> {
    question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What the fusion says of one candidate.
pub(crate) struct Fused<'a> {
    /// Its fused score ÷ the best one.
    pub(crate) relative_score: f64,
    /// Its fused position, 1-based.
    pub(crate) position: usize,
    pub(crate) explanation: &'a super::Explanation,
    /// Graph nodes of the item that matched the question.
    pub(crate) matched_nodes: usize,
}

/// The features of a candidate (see [`FEATURES`]).
pub(crate) fn features(
    fused: &Fused<'_>,
    cues: Option<&ItemCues>,
    question_words: &std::collections::HashSet<String>,
) -> Features {
    let inverse = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / r.max(1) as f64);
    let flag = |b: bool| f64::from(u8::from(b));
    let e = fused.explanation;
    let default_cues = ItemCues::default();
    let cues = cues.unwrap_or(&default_cues);
    [
        1.0,
        fused.relative_score,
        1.0 / fused.position.max(1) as f64,
        inverse(e.dense_rank),
        inverse(e.lexical_rank),
        inverse(e.graph_rank),
        flag(e.place_rank.is_some()),
        (fused.matched_nodes as f64 / 5.0).min(1.0),
        flag(
            cues.speaker
                .as_ref()
                .is_some_and(|s| question_words.contains(s)),
        ),
        flag(cues.asks),
        cues.length,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(x: [f64; 2], is_evidence: bool) -> (Features, bool) {
        let mut f = [0.0; FEATURES];
        f[0] = 1.0;
        f[1] = x[0];
        f[9] = x[1];
        (f, is_evidence)
    }

    #[test]
    fn fit_learns_which_features_mark_evidence() {
        // Evidence has a high relative score and no question mark.
        let rows: Vec<(Features, bool)> = (0..200)
            .map(|i| {
                let score = f64::from(i % 10) / 10.0;
                let asks = i % 3 == 0;
                row([score, f64::from(u8::from(asks))], score > 0.5 && !asks)
            })
            .collect();
        let model = Reranker::fit(&rows);
        assert!(model.weights[1] > 0.5, "{:?}", model.weights);
        assert!(model.weights[9] < -0.5, "{:?}", model.weights);
        let good = row([0.9, 0.0], true).0;
        let asking = row([0.9, 1.0], false).0;
        let weak = row([0.1, 0.0], false).0;
        assert!(model.probability(&good) > model.probability(&asking));
        assert!(model.probability(&good) > model.probability(&weak));
        // Deterministic.
        assert_eq!(Reranker::fit(&rows), model);
    }

    #[test]
    fn no_rows_give_the_zero_model() {
        let model = Reranker::fit(&[]);
        assert_eq!(model.weights, [0.0; FEATURES]);
        assert_eq!(model.probability(&[1.0; FEATURES]), 0.5);
    }

    #[test]
    fn features_follow_the_documented_order() {
        let explanation = super::super::Explanation {
            dense_rank: Some(2),
            lexical_rank: None,
            graph_rank: Some(4),
            place_rank: Some(1),
            ..Default::default()
        };
        let mut fields = ItemFields::new(
            memdb_formats::item::Source::Chat,
            memdb_formats::item::EventTime {
                unix_ms: 0,
                offset_minutes: 0,
            },
        );
        fields.speaker = Some("Caroline".into());
        fields.body = Some("Did you go?".into());
        let cues = ItemCues::of(&fields);
        let words = question_words("What did Caroline research?");
        let f = features(
            &Fused {
                relative_score: 0.5,
                position: 4,
                explanation: &explanation,
                matched_nodes: 7,
            },
            Some(&cues),
            &words,
        );
        let want_length = (1.0f64 + 11.0).ln() / 6.0;
        assert_eq!(
            f,
            [
                1.0,
                0.5,
                0.25,
                0.5,
                0.0,
                0.25,
                1.0,
                1.0,
                1.0,
                1.0,
                want_length
            ]
        );
        // No cues (an item the index does not know): no speaker, no question, no length.
        let f = features(
            &Fused {
                relative_score: 1.0,
                position: 1,
                explanation: &explanation,
                matched_nodes: 0,
            },
            None,
            &words,
        );
        assert_eq!(&f[8..], &[0.0, 0.0, 0.0]);
    }
}
