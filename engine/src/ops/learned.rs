//! The learned decider (MemLoRA's per-operation expert, on the device): a small model that
//! decides ADD, UPDATE, DELETE or NONE over what the rules read of a fact and its candidates.
//!
//! For a fact with candidates `c₁ … cₙ`, the model scores `1 + 3n` choices — ADD, and UPDATE,
//! DELETE or NONE of each candidate — and takes the best (a softmax over them when fitted):
//! - ADD scores `w_add · a`, where `a` are [`FACT_FEATURES`] features of the fact and its
//!   candidates as a whole (the best cosine, whether the fact retracts or adds, what the rules
//!   decided, …);
//! - each operation on candidate `i` scores `w_op · p_i`, where `p_i` are [`PAIR_FEATURES`]
//!   features of the fact and that candidate: the encoder's cosines (of the texts and of the
//!   texts without their retraction words), the words and values each has that the other
//!   lacks, the one-valued slots they fill, whose they are, the cue words (a correction, a
//!   retraction by reference), and the rules' own decision on it.
//!
//! So the model reads the same evidence as the rules and learns how much each piece weighs,
//! where the rules apply fixed thresholds in a fixed order; the rules stay the fallback (where
//! the model is unsure and disagrees, for a retraction by reference and for a new value of a
//! one-valued slot: [`DeciderWeights::decide`]), give the reasons, and add what else a fact
//! closes (`RuleDecider::with_closures`). Weights are
//! fitted by [`fit`] (softmax regression, full-batch Adam, L2) on labelled scenarios that the
//! project wrote (`tests/data/ops-scenarios*.jsonl`); `memdb ops train` fits them,
//! cross-validates the model against the rules and writes `decider_weights.rs`, whose
//! [`SHIPPED`] weights and [`CHOSEN`] flag (whether the model beat the rules out of sample)
//! [`super::on_device_decider`] reads.
//!
//! Invariants: the features of a candidate depend on the fact and that candidate (and the best
//! cosine among them), never on the candidates' order, so a decision does not change when the
//! candidates are shuffled; a decision names a target within the candidates; deterministic.

use super::decider_weights;
use super::rules::{RuleDecider, Signals};
use super::{Candidate, Decider, Decision, Operation};
use crate::error::Result;
use crate::graph::Embedder;

/// Features of a fact and one candidate (see `pair_features`).
pub const PAIR_FEATURES: usize = 42;
/// Features of a fact and its candidates as a whole (see `fact_features`).
pub const FACT_FEATURES: usize = 11;

/// The fact feature that says the fact retracts a memory by reference ([`fact_features`]).
const REFERENCE_FEATURE: usize = 7;

/// The pair features that say the fact and the candidate fill one of the same one-valued slots
/// (home, work, phone…) and that each holds a value the other lacks ([`pair_features`]).
pub(super) const EXCLUSIVE_SLOT_FEATURE: usize = 16;
pub(super) const VALUES_APART_FEATURE: usize = 14;

/// The operations on a candidate, in the order of [`DeciderWeights::ops`].
const TARGETED: [Operation; 3] = [Operation::Update, Operation::Delete, Operation::None];

/// Dimensions of the encoder's embeddings the model reads (all-MiniLM-L6-v2's); with another
/// encoder the embedding features are zero.
pub const EMBEDDING: usize = 384;

/// A learned decider's weights.
#[derive(Debug, Clone, PartialEq)]
pub struct DeciderWeights {
    /// ADD's weights over the fact's features.
    pub add: [f64; FACT_FEATURES],
    /// UPDATE's, DELETE's and NONE's weights over a candidate's features.
    pub ops: [[f64; PAIR_FEATURES]; 3],
    /// ADD's, UPDATE's, DELETE's and NONE's weights over the fact's embedding (what kind of
    /// statement it is: an ending, a change, a restatement).
    pub fact_embedding: [[f64; EMBEDDING]; 4],
    /// UPDATE's, DELETE's and NONE's weights over the product of the fact's and the
    /// candidate's embeddings, dimension by dimension (in which respects the two agree).
    pub pair_embedding: [[f64; EMBEDDING]; 3],
}

/// The weights `memdb ops train` fitted on all the project's scenarios.
pub const SHIPPED: DeciderWeights = decider_weights::WEIGHTS;

/// Whether the learned decider beat the rules out of sample when the shipped weights were
/// fitted (`memdb ops train`'s cross-validation): the on-device default is the learned decider
/// when it did, the rules otherwise.
pub const CHOSEN: bool = decider_weights::LEARNED_BEATS_RULES;

/// One labelled decision, as features.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// The fact's features.
    pub fact: [f64; FACT_FEATURES],
    /// Each candidate's.
    pub pairs: Vec<[f64; PAIR_FEATURES]>,
    /// The fact's embedding times √[`EMBEDDING`] (components of order one; empty when the
    /// encoder's dimension is not [`EMBEDDING`]).
    pub fact_vector: Vec<f64>,
    /// Each candidate's embedding times the fact's, dimension by dimension, times
    /// [`EMBEDDING`] (empty likewise).
    pub pair_vectors: Vec<Vec<f64>>,
    /// The right choice: 0 for ADD, `1 + 3i + k` for operation `k` (UPDATE, DELETE, NONE) on
    /// candidate `i`.
    pub label: usize,
}

/// The choice index of `op` on `target` (see [`Example::label`]).
pub fn choice(op: Operation, target: Option<usize>) -> Option<usize> {
    match (op, target) {
        (Operation::Add, _) => Some(0),
        (op, Some(i)) => TARGETED
            .iter()
            .position(|o| *o == op)
            .map(|k| 1 + 3 * i + k),
        _ => None,
    }
}

fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}

fn capped(n: usize, cap: usize) -> f64 {
    n.min(cap) as f64 / cap as f64
}

/// The features of the fact and its candidates as a whole: 1 (bias); the best cosine; the
/// best cosine without retraction words; whether there is no candidate; whether the rules
/// decided ADD; whether the fact retracts, adds ("also"), or retracts by reference; the most
/// content words it shares with a candidate (÷ 4, at most 1); its values (÷ 3, at most 1);
/// whether the best cosine is at least 0.5.
pub(super) fn fact_features(s: &Signals, rule: &Decision) -> [f64; FACT_FEATURES] {
    let best = s.cosine.iter().copied().fold(f32::MIN, f32::max).max(0.0);
    let best_stripped = s.stripped.iter().copied().fold(f32::MIN, f32::max).max(0.0);
    let shared = s.facets.iter().map(|f| f.shared).max().unwrap_or(0);
    [
        1.0,
        f64::from(best),
        f64::from(best_stripped),
        flag(s.old.is_empty()),
        flag(rule.op == Operation::Add),
        flag(s.new.retracts && !s.new.replaces),
        flag(s.new.adds),
        flag(s.cues.retracts_reference.is_some()),
        capped(shared, 4),
        capped(s.new.values.len(), 3),
        flag(best >= 0.5),
    ]
}

/// The features of the fact and candidate `i`: 1 (bias); the cosine; the cosine without
/// retraction words; the fact's cosine to the candidate without them; whether it is the most
/// similar candidate, and its cosine less the best; content words and values shared, the
/// fact's the candidate lacks and the candidate's the fact lacks (each capped and scaled to at
/// most 1); whether the fact adds nothing, holds all of the candidate, or changes a value;
/// the slots (one-valued, exclusive, qualified apart); another person, another owner; a
/// preference turned round; a short memory repeated whole; the value a correction replaces;
/// the words a retraction by reference names; the fact's retraction, replacement, "also",
/// dislike of a liking, dislike repeated; the candidate's own retraction; the correction and
/// reference cues; the rules' UPDATE, DELETE and NONE of it; the retraction times the stripped
/// cosine; a cosine of at least 0.85; a liking repeated; a word that hints an addition ("a
/// second", "return") and one that hints a change ("now", "moved"); the cosine of what each
/// side says that the other does not, and whether both say something of their own.
pub(super) fn pair_features(s: &Signals, rule: &Decision, i: usize) -> [f64; PAIR_FEATURES] {
    let f = &s.facets[i];
    let (o, new) = (&s.old[i], &s.new);
    let best = s.cosine.iter().copied().fold(f32::MIN, f32::max);
    let cosine = s.cosine[i];
    let stripped = s.stripped[i];
    let retracts = new.retracts && !new.replaces;
    let rule_on = |op: Operation| flag(rule.op == op && rule.target == Some(i));
    [
        1.0,
        f64::from(cosine),
        f64::from(stripped),
        f64::from(s.to_stripped_candidate[i]),
        flag(cosine >= best),
        f64::from(cosine - best),
        capped(f.shared, 4),
        capped(f.shared_values, 3),
        capped(f.new_words.len(), 4),
        capped(f.old_words.len(), 4),
        capped(f.new_values.len(), 3),
        capped(f.old_values.len(), 3),
        flag(f.new_words.is_empty() && f.new_values.is_empty()),
        flag(f.old_words.is_empty() && f.old_values.is_empty()),
        flag(!f.new_values.is_empty() && !f.old_values.is_empty()),
        flag(f.same_slot),
        flag(f.same_exclusive_slot),
        flag(!f.qualified_apart.is_empty()),
        flag(f.others_differ),
        flag(f.owner_apart.is_some()),
        flag(f.turned_round),
        flag(f.contains_old),
        flag(f.holds_replaced),
        capped(f.referenced, 2),
        flag(retracts),
        flag(new.replaces),
        flag(new.adds),
        flag(new.dislikes && o.likes),
        flag(new.dislikes && o.dislikes),
        flag(o.retracts),
        flag(s.cues.corrects),
        flag(s.cues.retracts_reference.is_some()),
        rule_on(Operation::Update),
        rule_on(Operation::Delete),
        rule_on(Operation::None),
        flag(retracts) * f64::from(stripped),
        flag(cosine >= 0.85),
        flag(new.likes && o.likes),
        flag(new.addition_hint),
        flag(new.change_hint),
        f64::from(s.difference[i]),
        flag(s.difference[i] != 0.0),
    ]
}

fn dot<const N: usize>(w: &[f64; N], x: &[f64; N]) -> f64 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

impl DeciderWeights {
    /// All zeros (every choice equally likely).
    pub const ZERO: DeciderWeights = DeciderWeights {
        add: [0.0; FACT_FEATURES],
        ops: [[0.0; PAIR_FEATURES]; 3],
        fact_embedding: [[0.0; EMBEDDING]; 4],
        pair_embedding: [[0.0; EMBEDDING]; 3],
    };

    /// The score of every choice of `example` (its label aside), in choice order.
    pub fn scores(&self, example: &Example) -> Vec<f64> {
        self.scores_reading(example, true, true)
    }

    /// [`DeciderWeights::scores`], reading the embeddings only where asked (a fit that does
    /// not use them leaves their weights zero, and skips the work).
    fn scores_reading(
        &self,
        example: &Example,
        fact_embedding: bool,
        pair_embedding: bool,
    ) -> Vec<f64> {
        let priors: [f64; 4] = if fact_embedding {
            std::array::from_fn(|k| dot_slice(&self.fact_embedding[k], &example.fact_vector))
        } else {
            [0.0; 4]
        };
        let mut out = Vec::with_capacity(1 + 3 * example.pairs.len());
        out.push(dot(&self.add, &example.fact) + priors[0]);
        for (i, p) in example.pairs.iter().enumerate() {
            let product = example.pair_vectors.get(i).map_or(&[][..], Vec::as_slice);
            for (k, w) in self.ops.iter().enumerate() {
                let mut score = dot(w, p) + priors[k + 1];
                if pair_embedding {
                    score += dot_slice(&self.pair_embedding[k], product);
                }
                out.push(score);
            }
        }
        out
    }

    /// The decision on `example` given the rules' own choice `rules` (a [`choice`] index): the
    /// model's best choice, unless it differs from the rules' and the model is not sure of it
    /// (probability below 1/2) — then the rules' choice, which says why. A wrong UPDATE or
    /// DELETE loses a fact that was true; a wrong NONE or ADD leaves a stale memory current. A
    /// retraction by reference ("forget about the Toyota") and the rules' UPDATE of a one-valued
    /// slot with a new value ("I live in Porto" after "I live in Lisbon") are the rules' to
    /// decide.
    /// Returns the choice, the model's probability of it, and whether the model's choice
    /// stood.
    pub fn decide(&self, example: &Example, rules: usize) -> (usize, f64, bool) {
        let probabilities = softmax(&self.scores(example));
        // "Forget about the Toyota" is the person's command, not a fact to weigh: the rules
        // retire what it names.
        // A new value of a one-valued slot ("I live in Porto" against "I live in Lisbon") is
        // an UPDATE the rules read from the slot and the values; the person's home, job or
        // phone number left unchanged is the costliest stale answer there is.
        let slot_change = rules > 0 && (rules - 1).is_multiple_of(3) && {
            let pair = example.pairs.get((rules - 1) / 3);
            pair.is_some_and(|p| p[EXCLUSIVE_SLOT_FEATURE] > 0.5 && p[VALUES_APART_FEATURE] > 0.5)
        };
        if example.fact[REFERENCE_FEATURE] > 0.5 || slot_change {
            let kept = probabilities.get(rules).copied().unwrap_or(0.0);
            return (rules, kept, false);
        }
        let (best, p) = argmax(&probabilities);
        // Unsure (no choice holds half the probability) and against the rules: the rules'
        // decision stands. A model that keeps "I live in Porto" as NONE at p = 0.49 against the
        // rules' "changes lisbon to porto" leaves the old home current; the rules say why.
        if best != rules && p < 0.5 {
            let kept = probabilities.get(rules).copied().unwrap_or(0.0);
            return (rules, kept, false);
        }
        (best, p, true)
    }

    /// The best choice (the first of equal scores) and its softmax probability.
    pub fn choose(&self, example: &Example) -> (usize, f64) {
        argmax(&softmax(&self.scores(example)))
    }
}

/// The index of the largest value (the first of equal ones) and the value.
fn argmax(values: &[f64]) -> (usize, f64) {
    values.iter().copied().enumerate().fold(
        (0, f64::MIN),
        |best, (i, v)| if v > best.1 { (i, v) } else { best },
    )
}

/// `w · x` over the shorter of the two (an absent embedding scores 0).
fn dot_slice(w: &[f64], x: &[f64]) -> f64 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

fn softmax(scores: &[f64]) -> Vec<f64> {
    let max = scores.iter().copied().fold(f64::MIN, f64::max);
    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter()
        .map(|e| e / sum.max(f64::MIN_POSITIVE))
        .collect()
}

/// How [`fit`] runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// L2 penalty on every weight over the hand-made features but the biases.
    pub l2: f64,
    /// Whether the fact's embedding is read ([`DeciderWeights::fact_embedding`]).
    pub fact_embedding: bool,
    /// Whether the fact's and candidate's embeddings' product is read
    /// ([`DeciderWeights::pair_embedding`]).
    pub pair_embedding: bool,
    /// L2 penalty on the embedding weights.
    pub embedding_l2: f64,
    /// Whether the rules' own decision is read (the fact feature "the rules decided ADD" and
    /// the pair features "the rules decided UPDATE / DELETE / NONE of it"). Without it the
    /// model reads only what the rules read, not how they combined it: the rules were written
    /// against the first scenario file, so their decision is a feature tuned on part of the
    /// data it is scored on.
    pub rule_decisions: bool,
    /// Full-batch Adam steps.
    pub steps: usize,
    /// Adam's step size.
    pub rate: f64,
}

impl Default for FitOptions {
    /// Set before any fit was scored (a penalty that keeps weights of order one with features
    /// of order one, ten times that on the embeddings' hundreds of dimensions, and enough steps
    /// for the loss to settle on a few hundred scenarios); not searched.
    fn default() -> Self {
        FitOptions {
            l2: 0.01,
            fact_embedding: true,
            pair_embedding: true,
            embedding_l2: 0.1,
            rule_decisions: true,
            steps: 600,
            rate: 0.05,
        }
    }
}

impl FitOptions {
    /// The model's variants `memdb ops train` chooses among by cross-validation: the
    /// hand-made features alone or with the fact's embedding, each with and without the rules'
    /// own decision. (The product of the two embeddings, [`FitOptions::pair_embedding`], was
    /// tried and scored below these: it is left out of the search.)
    pub fn variants() -> [FitOptions; 4] {
        let base = FitOptions {
            pair_embedding: false,
            ..FitOptions::default()
        };
        [(false, true), (true, true), (false, false), (true, false)].map(|(fact, rules)| {
            FitOptions {
                fact_embedding: fact,
                rule_decisions: rules,
                ..base
            }
        })
    }

    /// The variant in words.
    pub fn name(&self) -> String {
        let mut name = String::from("features");
        if self.fact_embedding {
            name.push_str(" + fact embedding");
        }
        if self.pair_embedding {
            name.push_str(" + pair embedding");
        }
        if self.rule_decisions {
            name.push_str(" + rules' decision");
        }
        name
    }
}

/// The parameters that weigh the rules' own decision (see [`FitOptions::rule_decisions`]):
/// fact feature 4, and pair features 32 to 34 of each operation.
const RULE_DECISION_FEATURES: [usize; 10] = [
    ADD_AT + 4,
    OPS_AT + 32,
    OPS_AT + 33,
    OPS_AT + 34,
    OPS_AT + PAIR_FEATURES + 32,
    OPS_AT + PAIR_FEATURES + 33,
    OPS_AT + PAIR_FEATURES + 34,
    OPS_AT + 2 * PAIR_FEATURES + 32,
    OPS_AT + 2 * PAIR_FEATURES + 33,
    OPS_AT + 2 * PAIR_FEATURES + 34,
];

/// Where each group of weights sits in [`fit`]'s flat parameter vector.
const ADD_AT: usize = 0;
const OPS_AT: usize = FACT_FEATURES;
const FACT_EMBEDDING_AT: usize = OPS_AT + 3 * PAIR_FEATURES;
const PAIR_EMBEDDING_AT: usize = FACT_EMBEDDING_AT + 4 * EMBEDDING;
const PARAMETERS: usize = PAIR_EMBEDDING_AT + 3 * EMBEDDING;

/// Fits weights to `examples`: softmax regression over each example's choices, minimising the
/// mean cross-entropy plus `l2 / 2` times the squared weights (biases excepted; the embedding
/// weights by `embedding_l2`), by full-batch Adam from zero. Deterministic; no examples give
/// [`DeciderWeights::ZERO`].
pub fn fit(examples: &[Example], options: FitOptions) -> DeciderWeights {
    let mut w = DeciderWeights::ZERO;
    if examples.is_empty() {
        return w;
    }
    let n = examples.len() as f64;
    let mut params = flat(&w);
    let (mut m, mut v) = (vec![0.0; PARAMETERS], vec![0.0; PARAMETERS]);
    let (beta1, beta2, eps) = (0.9f64, 0.999f64, 1e-8);
    let add_to = |grad: &mut [f64], at: usize, err: f64, x: &[f64]| {
        for (g, x) in grad[at..at + x.len()].iter_mut().zip(x) {
            *g += err * x;
        }
    };
    for step in 1..=options.steps {
        let mut grad = vec![0.0; PARAMETERS];
        for e in examples {
            let p = softmax(&w.scores_reading(e, options.fact_embedding, options.pair_embedding));
            // The fact's embedding weighs in once per operation: its error summed over the
            // operation's choices.
            let mut per_op = [0.0; 4];
            for (c, pc) in p.iter().enumerate() {
                let err = pc - flag(c == e.label);
                // The choice's operation: 0 ADD, 1 UPDATE, 2 DELETE, 3 NONE.
                let op = if c == 0 { 0 } else { 1 + (c - 1) % 3 };
                per_op[op] += err;
                if c == 0 {
                    add_to(&mut grad, ADD_AT, err, &e.fact);
                } else {
                    let i = (c - 1) / 3;
                    add_to(
                        &mut grad,
                        OPS_AT + (op - 1) * PAIR_FEATURES,
                        err,
                        &e.pairs[i],
                    );
                    if options.pair_embedding
                        && let Some(product) = e.pair_vectors.get(i)
                    {
                        add_to(
                            &mut grad,
                            PAIR_EMBEDDING_AT + (op - 1) * EMBEDDING,
                            err,
                            product,
                        );
                    }
                }
            }
            if options.fact_embedding {
                for (op, err) in per_op.iter().enumerate() {
                    add_to(
                        &mut grad,
                        FACT_EMBEDDING_AT + op * EMBEDDING,
                        *err,
                        &e.fact_vector,
                    );
                }
            }
        }
        for j in 0..PARAMETERS {
            let unused = ((FACT_EMBEDDING_AT..PAIR_EMBEDDING_AT).contains(&j)
                && !options.fact_embedding)
                || (j >= PAIR_EMBEDDING_AT && !options.pair_embedding)
                || (!options.rule_decisions && RULE_DECISION_FEATURES.contains(&j));
            if unused {
                continue;
            }
            let bias = j == ADD_AT
                || (OPS_AT..FACT_EMBEDDING_AT).contains(&j)
                    && (j - OPS_AT).is_multiple_of(PAIR_FEATURES);
            let l2 = if j >= FACT_EMBEDDING_AT {
                options.embedding_l2
            } else {
                options.l2
            };
            let g = grad[j] / n + if bias { 0.0 } else { l2 * params[j] };
            m[j] = beta1 * m[j] + (1.0 - beta1) * g;
            v[j] = beta2 * v[j] + (1.0 - beta2) * g * g;
            let m_hat = m[j] / (1.0 - beta1.powi(step as i32));
            let v_hat = v[j] / (1.0 - beta2.powi(step as i32));
            params[j] -= options.rate * m_hat / (v_hat.sqrt() + eps);
        }
        w = unflat(&params);
    }
    w
}

fn flat(w: &DeciderWeights) -> Vec<f64> {
    let mut out = w.add.to_vec();
    for op in &w.ops {
        out.extend_from_slice(op);
    }
    for row in &w.fact_embedding {
        out.extend_from_slice(row);
    }
    for row in &w.pair_embedding {
        out.extend_from_slice(row);
    }
    out
}

fn unflat(v: &[f64]) -> DeciderWeights {
    let mut w = DeciderWeights::ZERO;
    w.add.copy_from_slice(&v[ADD_AT..OPS_AT]);
    for (k, op) in w.ops.iter_mut().enumerate() {
        let at = OPS_AT + k * PAIR_FEATURES;
        op.copy_from_slice(&v[at..at + PAIR_FEATURES]);
    }
    for (k, row) in w.fact_embedding.iter_mut().enumerate() {
        let at = FACT_EMBEDDING_AT + k * EMBEDDING;
        row.copy_from_slice(&v[at..at + EMBEDDING]);
    }
    for (k, row) in w.pair_embedding.iter_mut().enumerate() {
        let at = PAIR_EMBEDDING_AT + k * EMBEDDING;
        row.copy_from_slice(&v[at..at + EMBEDDING]);
    }
    w
}

/// The learned decider over the store's encoder: [`DeciderWeights`] over what a
/// [`RuleDecider`] reads, the rules giving the reasons and the closures.
pub struct LearnedDecider<E> {
    rules: RuleDecider<E>,
    weights: DeciderWeights,
}

impl<E: std::fmt::Debug> std::fmt::Debug for LearnedDecider<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LearnedDecider")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl<E: Embedder> LearnedDecider<E> {
    /// A decider with `weights` over what `rules` reads.
    pub fn new(rules: RuleDecider<E>, weights: DeciderWeights) -> LearnedDecider<E> {
        LearnedDecider { rules, weights }
    }

    /// The features of `fact` and `candidates`, and the rules' decision.
    pub fn example(&self, fact: &str, candidates: &[Candidate]) -> Result<(Example, Decision)> {
        example_of(&self.rules, fact, candidates)
    }
}

/// `rules`' reading of `fact` and `candidates` as features (label 0), with the rules' own
/// decision.
pub fn example_of<E: Embedder>(
    rules: &RuleDecider<E>,
    fact: &str,
    candidates: &[Candidate],
) -> Result<(Example, Decision)> {
    let signals = rules.signals(fact, candidates)?;
    let rule = rules.rule(&signals);
    let example = features(&signals, &rule);
    Ok((example, rules.with_closures(&signals, rule)))
}

/// The features of `s` (label 0), given the rules' decision `rule`.
fn features(s: &Signals, rule: &Decision) -> Example {
    let usable = s.fact_vector.len() == EMBEDDING;
    let scale = (EMBEDDING as f64).sqrt();
    Example {
        fact: fact_features(s, rule),
        pairs: (0..s.old.len())
            .map(|i| pair_features(s, rule, i))
            .collect(),
        fact_vector: if usable {
            s.fact_vector
                .iter()
                .map(|x| f64::from(*x) * scale)
                .collect()
        } else {
            Vec::new()
        },
        pair_vectors: s
            .candidate_vectors
            .iter()
            .map(|c| {
                if usable && c.len() == EMBEDDING {
                    c.iter()
                        .zip(&s.fact_vector)
                        .map(|(a, b)| f64::from(*a) * f64::from(*b) * EMBEDDING as f64)
                        .collect()
                } else {
                    Vec::new()
                }
            })
            .collect(),
        label: 0,
    }
}

impl<E: Embedder + Send + Sync + std::fmt::Debug> Decider for LearnedDecider<E> {
    fn decide(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision> {
        let signals = self.rules.signals(fact, candidates)?;
        let rule = self.rules.rule(&signals);
        let rules_choice = choice(rule.op, rule.target).unwrap_or(0);
        let (chosen, probability, model_stood) = self
            .weights
            .decide(&features(&signals, &rule), rules_choice);
        let (op, target) = match chosen {
            0 => (Operation::Add, None),
            c => (TARGETED[(c - 1) % 3], Some((c - 1) / 3)),
        };
        let decision = if op == rule.op && target == rule.target {
            let note = if model_stood {
                format!("the model agrees, p = {probability:.2}")
            } else {
                "the model was unsure of another change".to_owned()
            };
            Decision {
                reason: format!("{} ({note})", rule.reason),
                ..rule
            }
        } else {
            let said = format!(
                "the model decided (p = {probability:.2}); the rules said {}: {}",
                rule.op, rule.reason
            );
            match target {
                Some(i) => Decision::on(op, i, said),
                None => Decision::add(said),
            }
        };
        Ok(self.rules.with_closures(&signals, decision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(label: usize, signal: f64) -> Example {
        let mut pair = [0.0; PAIR_FEATURES];
        pair[0] = 1.0;
        pair[1] = signal;
        let mut fact = [0.0; FACT_FEATURES];
        fact[0] = 1.0;
        Example {
            fact,
            pairs: vec![pair],
            fact_vector: Vec::new(),
            pair_vectors: Vec::new(),
            label,
        }
    }

    #[test]
    fn a_new_value_of_a_one_valued_slot_is_the_rules_update() {
        let mut weights = DeciderWeights::ZERO;
        weights.ops[2][0] = 5.0; // NONE of any candidate, whatever it reads
        let mut e = example(0, 0.0);
        assert_eq!(weights.decide(&e, 1).0, 3, "the model keeps it as known");
        e.pairs[0][EXCLUSIVE_SLOT_FEATURE] = 1.0;
        assert_eq!(
            weights.decide(&e, 1).0,
            3,
            "same slot, no new value: the model's"
        );
        e.pairs[0][VALUES_APART_FEATURE] = 1.0;
        assert_eq!(weights.decide(&e, 1), (1, weights.decide(&e, 1).1, false));
        // Only the rules' UPDATE stands so: their ADD does not.
        assert_eq!(weights.decide(&e, 0).0, 3);
    }

    #[test]
    fn choices_number_add_then_each_candidates_operations() {
        assert_eq!(choice(Operation::Add, None), Some(0));
        assert_eq!(choice(Operation::Update, Some(0)), Some(1));
        assert_eq!(choice(Operation::None, Some(1)), Some(6));
        assert_eq!(choice(Operation::Delete, None), None);
    }

    #[test]
    fn a_fit_separates_what_a_feature_tells_apart() {
        // UPDATE of the candidate when the signal is high, ADD when it is low.
        let examples: Vec<Example> = (0..40)
            .map(|i| {
                let high = i % 2 == 0;
                example(if high { 1 } else { 0 }, if high { 0.9 } else { 0.1 })
            })
            .collect();
        let w = fit(&examples, FitOptions::default());
        for e in &examples {
            assert_eq!(w.choose(e).0, e.label);
        }
        assert_eq!(fit(&[], FitOptions::default()), DeciderWeights::ZERO);
        // Deterministic.
        assert_eq!(w, fit(&examples, FitOptions::default()));
    }

    #[test]
    fn scores_do_not_depend_on_the_candidates_order() {
        let w = DeciderWeights {
            add: [0.3; FACT_FEATURES],
            ops: [
                [0.1; PAIR_FEATURES],
                [0.2; PAIR_FEATURES],
                [-0.1; PAIR_FEATURES],
            ],
            ..DeciderWeights::ZERO
        };
        let a = example(0, 0.4);
        let b = example(0, 0.8);
        let both = |first: &Example, second: &Example| Example {
            pairs: vec![first.pairs[0], second.pairs[0]],
            ..a.clone()
        };
        let ab = w.scores(&both(&a, &b));
        let ba = w.scores(&both(&b, &a));
        assert_eq!(ab[1..4], ba[4..7]);
        assert_eq!(ab[0], ba[0]);
    }
}
