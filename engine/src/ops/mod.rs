//! Memory operations (Mem0's update step, MemLoRA's "update" expert): given a new fact and the
//! stored memories most similar to it, decide whether the fact is new (ADD), changes one of
//! them (UPDATE), retracts one (DELETE) or is already known (NONE).
//!
//! This module owns the decision, not the write: a [`Decider`] looks at texts and returns a
//! [`Decision`] naming its target by position in the candidates it was given, so it can never
//! name a memory it was not shown (the hallucinated-id failure of model deciders is a typed
//! error at their parse, never a write). [`RuleDecider`] is the deterministic on-device
//! default; `memdb_lab::decider` scores any decider on labelled scenarios (`memdb ops eval`).
//!
//! Invariant: a decision for UPDATE, DELETE or NONE always has a target within the candidates;
//! an ADD never has one.

pub mod access;
mod cues;
mod decider_weights;
#[cfg(feature = "llm")]
mod experts;
mod extract;
pub mod learned;
pub(crate) mod lexicon;
mod merge;
#[cfg(feature = "llm")]
mod model;
mod remember;
mod rules;

#[cfg(feature = "llm")]
pub use experts::{
    Answer, MAX_FACT_CHARS, MAX_FACTS, ModelAnswerer, ModelExtractor, parse_answer_reply,
    parse_facts_reply,
};
pub use extract::{Extracted, FactExtractor, SentenceExtractor};
pub use learned::LearnedDecider;
#[cfg(feature = "llm")]
pub use model::{ModelDecider, parse_update_reply};
pub use remember::{
    MAX_IDEMPOTENCY_KEY_BYTES, MEMORY_TAG, Message, RememberOptions, RememberReport, Remembered,
    Skipped, is_remembered_fact,
};
pub use rules::{RuleDecider, RuleThresholds};

pub use crate::error::DeciderError;
use crate::error::Result;
pub use memdb_endpoint::EndpointError;

/// What to do with a new fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// A memory of its own.
    Add,
    /// Replaces (changes or refines) the target memory.
    Update,
    /// Retracts the target memory.
    Delete,
    /// Already known as the target memory: nothing is written.
    None,
}

impl Operation {
    /// Every operation, in the order reports list them.
    pub const ALL: [Operation; 4] = [
        Operation::Add,
        Operation::Update,
        Operation::Delete,
        Operation::None,
    ];

    /// The name Mem0 and the scenario files use: `ADD`, `UPDATE`, `DELETE`, `NONE`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Add => "ADD",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::None => "NONE",
        }
    }

    /// The operation named `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL
            .into_iter()
            .find(|op| op.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether the operation refers to a stored memory.
    pub fn has_target(self) -> bool {
        self != Operation::Add
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A stored memory shown to a decider.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its text.
    pub text: String,
}

/// What a decider decided, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The operation.
    pub op: Operation,
    /// The candidate it refers to, by position (`None` for ADD).
    pub target: Option<usize>,
    /// Why, in words (shown by `memdb remember` and logged with the operation).
    pub reason: String,
    /// Other candidates the fact makes untrue besides the target, by position, each with why:
    /// a move closes every current residence of the person, not only the most similar one;
    /// "forget about the Toyota" retires every memory of it. Each is retired (a DELETE) in the
    /// same commit. Never the target, never twice.
    pub closes: Vec<(usize, String)>,
}

impl Decision {
    /// An ADD.
    pub fn add(reason: impl Into<String>) -> Decision {
        Decision {
            op: Operation::Add,
            target: None,
            reason: reason.into(),
            closes: Vec::new(),
        }
    }

    /// `op` on candidate `target`.
    pub fn on(op: Operation, target: usize, reason: impl Into<String>) -> Decision {
        Decision {
            op,
            target: Some(target),
            reason: reason.into(),
            closes: Vec::new(),
        }
    }

    /// This decision, also closing `closes` (the target and repeats left out).
    pub fn closing(mut self, closes: impl IntoIterator<Item = (usize, String)>) -> Decision {
        for (at, why) in closes {
            if Some(at) != self.target && !self.closes.iter().any(|(c, _)| *c == at) {
                self.closes.push((at, why));
            }
        }
        self
    }
}

/// Decides the operation for a new fact against the most similar stored memories.
pub trait Decider: Send + Sync + std::fmt::Debug {
    /// The decision for `fact` given `candidates` (most similar first; possibly none).
    fn decide(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision>;
}

/// The decider memdb runs on the device when no model is named, over `embedder` (the store's
/// encoder): the learned decider with its shipped weights when it beat the rules out of sample
/// in the run that fitted them ([`learned::CHOSEN`]), the rules otherwise (SPEC.md §5.7, "The
/// on-device decider").
pub fn on_device_decider<'e, E>(embedder: E) -> Box<dyn Decider + 'e>
where
    E: crate::graph::Embedder + Send + Sync + std::fmt::Debug + 'e,
{
    let rules = RuleDecider::new(embedder, RuleThresholds::default());
    if learned::CHOSEN {
        Box::new(LearnedDecider::new(rules, learned::SHIPPED))
    } else {
        Box::new(rules)
    }
}

/// The name of the decider [`on_device_decider`] runs: `learned` or `rules`.
pub fn on_device_decider_name() -> &'static str {
    if learned::CHOSEN { "learned" } else { "rules" }
}
