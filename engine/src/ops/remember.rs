//! The write-side pipeline of Mem0, on the device: new input → facts → for each fact the most
//! similar current memories → a decision → typed memory operations applied in one commit.
//!
//! A *memory* here is a fact item: source `note`, tag [`MEMORY_TAG`], the fact as its body.
//! Only memories are candidates, never the raw items (a chat turn, an e-mail, a photo): those
//! are evidence, and an UPDATE must not rewrite them.
//!
//! Invariants:
//! - one call is one commit ([`crate::Store::apply`]'s batch, with the facts' vectors): after a
//!   crash the store holds all of a call's operations or none;
//! - candidates are the top [`RememberOptions::candidates_per_fact`] current memories of each
//!   fact by cosine, most similar first (Mem0 takes the union over the facts; here each fact is
//!   decided against its own, which are in that union); a decider names its target by position
//!   in them, so no operation can name a memory it was not shown. A memory is found through its
//!   vector: `remember` writes each with its vector in the same commit, and one written by
//!   `Store::apply` without a vector is a candidate once `embed` has made it;
//! - two facts of one call never act on one memory: a later fact whose target an earlier
//!   fact already changes is added instead (and says so), so the commit is well-defined;
//! - a fact equal (after folding case and spaces) to an earlier fact of the same call is
//!   dropped before deciding.

use std::collections::HashMap;

use memdb_formats::item::{EventTime, ItemFields, Source};

use super::{Candidate, Decider, Decision, Operation};
use crate::error::Result;
use crate::graph::Embedder;
use crate::store::{
    AppliedOp, ITEM_VECTORS, MemoryOp, OpNote, Snapshot, Store, StoredVectors, Validity,
    VectorScope,
};

/// The tag every memory written by [`Store::remember`] carries.
pub const MEMORY_TAG: &str = "memory";

/// One message of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub speaker: Option<String>,
    /// What was said.
    pub text: String,
}

/// Turns input messages into facts (Mem0's extraction step).
pub trait FactExtractor: Send + Sync + std::fmt::Debug {
    /// The facts of `messages`, in order.
    fn extract(&self, messages: &[Message]) -> Result<Vec<String>>;
}

/// The deterministic extractor: every statement of a message (a sentence that is not a
/// question and names at least two words that are not stop words) is one fact.
#[derive(Debug, Clone, Copy, Default)]
pub struct SentenceExtractor;

impl FactExtractor for SentenceExtractor {
    fn extract(&self, messages: &[Message]) -> Result<Vec<String>> {
        let mut facts = Vec::new();
        for message in messages {
            for sentence in sentences(&message.text) {
                let content = crate::text::words(&sentence)
                    .filter(|w| !crate::text::is_stopword(w))
                    .count();
                if content >= 2 && !sentence.ends_with('?') {
                    facts.push(sentence);
                }
            }
        }
        Ok(facts)
    }
}

/// The sentences of `text`: split at line breaks, and after `!`, `?` or `;` followed by white
/// space, and after `.` followed by white space and then a capital, a digit or the end (so
/// "the U.S. embassy" stays one sentence); trimmed, without a final `.` or `;`.
fn sentences(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let after_space = chars[i + 1..].iter().find(|n| !n.is_whitespace()).copied();
        let ends = match c {
            '\n' | '\r' => true,
            '!' | '?' | ';' => next.is_none_or(char::is_whitespace),
            '.' => {
                next.is_none_or(char::is_whitespace)
                    && after_space.is_none_or(|n| n.is_uppercase() || n.is_ascii_digit())
            }
            _ => false,
        };
        if c != '\n' && c != '\r' {
            current.push(c);
        }
        if ends {
            push_sentence(&mut out, &mut current);
        }
    }
    push_sentence(&mut out, &mut current);
    out
}

fn push_sentence(out: &mut Vec<String>, current: &mut String) {
    let trimmed = current.trim().trim_end_matches(['.', ';']).trim();
    if !trimmed.is_empty() {
        out.push(trimmed.to_owned());
    }
    current.clear();
}

/// How [`Store::remember`] works.
pub struct RememberOptions<'a> {
    /// Extracts facts (MemLoRA's "extract" expert, or [`SentenceExtractor`]).
    pub extractor: &'a dyn FactExtractor,
    /// Decides each fact's operation (the "update" expert, or [`super::RuleDecider`]).
    pub decider: &'a dyn Decider,
    /// The store's encoder (candidates by cosine; the facts' vectors).
    pub embedder: &'a dyn Embedder,
    /// Candidates per fact (Mem0's code: 5).
    pub candidates_per_fact: usize,
    /// When the input was said (the facts' event time and the start of their validity);
    /// `None`: now.
    pub time: Option<EventTime>,
    /// Who acts (logged as the actor; a memory's speaker is its message's).
    pub actor: Option<String>,
    /// In what role (logged).
    pub role: Option<String>,
}

impl std::fmt::Debug for RememberOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RememberOptions")
            .field("extractor", &self.extractor)
            .field("decider", &self.decider)
            .field("candidates_per_fact", &self.candidates_per_fact)
            .field("time", &self.time)
            .finish_non_exhaustive()
    }
}

/// What [`Store::remember`] did with one fact.
#[derive(Debug, Clone, PartialEq)]
pub struct Remembered {
    /// The fact.
    pub fact: String,
    /// The decision as applied (an UPDATE or DELETE demoted to ADD says why in its reason).
    pub decision: Decision,
    /// The memory the decision named, by id (`None` for an ADD).
    pub target: Option<u64>,
    /// That memory's text as it was.
    pub target_text: Option<String>,
    /// What was logged.
    pub applied: AppliedOp,
}

impl Store {
    /// Remembers `messages`: extracts their facts, finds each fact's most similar current
    /// memories, decides ADD, UPDATE, DELETE or NONE, and applies every decision in one
    /// commit, returning what was done and why (see the module `ops::remember`).
    pub fn remember(
        &self,
        messages: &[Message],
        options: &RememberOptions<'_>,
    ) -> Result<Vec<Remembered>> {
        let mut facts: Vec<(String, Option<String>)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for message in messages {
            for fact in options.extractor.extract(std::slice::from_ref(message))? {
                let key = crate::text::words(&fact).collect::<Vec<_>>().join(" ");
                if seen.insert(key) {
                    facts.push((fact, message.speaker.clone()));
                }
            }
        }
        if facts.is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = facts.iter().map(|(f, _)| f.as_str()).collect();
        let vectors = options.embedder.embed(&texts)?;
        let snapshot = self.snapshot()?;

        let space = snapshot.vectors(ITEM_VECTORS)?;
        // Memory id → its text (`None`: a note that is not a memory), read once per call.
        let mut texts_of: HashMap<u64, Option<String>> = HashMap::new();

        let time = options.time.unwrap_or_else(|| EventTime {
            unix_ms: crate::store::now_ms(),
            offset_minutes: 0,
        });
        let mut ops = Vec::new();
        let mut vectors_of_ops = Vec::new();
        let mut done: Vec<(String, Decision, Option<u64>, Option<String>)> = Vec::new();
        let mut touched = std::collections::HashSet::new();
        for ((fact, speaker), vector) in facts.into_iter().zip(vectors) {
            let ids = match &space {
                Some(space) => similar_memories(
                    &snapshot,
                    space,
                    &vector,
                    options.candidates_per_fact,
                    &mut texts_of,
                )?,
                None => Vec::new(),
            };
            let candidates: Vec<Candidate> = ids
                .iter()
                .map(|id| Candidate {
                    text: texts_of.get(id).cloned().flatten().unwrap_or_default(),
                })
                .collect();
            let mut decision = options.decider.decide(&fact, &candidates)?;
            let mut target = decision.target.and_then(|i| ids.get(i).copied());
            if decision.op.has_target() && target.is_none() {
                return Err(crate::Error::Inconsistent(format!(
                    "the decider named candidate {:?} of {}",
                    decision.target,
                    ids.len()
                )));
            }
            if let Some(id) = target
                && decision.op != Operation::None
                && !touched.insert(id)
            {
                decision = Decision::add(format!(
                    "{} (memory {id} is already changed by an earlier fact of this input, so this one is added)",
                    decision.reason
                ));
                target = None;
            }
            let note = OpNote {
                reason: decision.reason.clone(),
                actor: options.actor.clone().or_else(|| speaker.clone()),
                role: options.role.clone(),
            };
            let target_text = target.and_then(|id| texts_of.get(&id).cloned().flatten());
            let op = match (decision.op, target) {
                (Operation::Update, Some(id)) => MemoryOp::Update {
                    id,
                    fields: memory_fields(&fact, speaker.as_deref(), time),
                    valid: Validity::default(),
                    note,
                },
                (Operation::Delete, Some(id)) => MemoryOp::Delete {
                    id,
                    valid_to_ms: (!time.is_undated()).then_some(time.unix_ms),
                    note,
                },
                (Operation::None, Some(id)) => MemoryOp::None { id, note },
                _ => MemoryOp::Add {
                    fields: memory_fields(&fact, speaker.as_deref(), time),
                    valid: Validity::default(),
                    note,
                },
            };
            let carries_text = matches!(op, MemoryOp::Add { .. } | MemoryOp::Update { .. });
            ops.push(op);
            vectors_of_ops.push(carries_text.then_some(vector));
            done.push((fact, decision, target, target_text));
        }
        let mut batch = self.batch();
        for (op, vector) in ops.into_iter().zip(vectors_of_ops) {
            batch.memory_with_vector(op, vector);
        }
        drop(snapshot);
        let receipt = batch.commit()?;
        Ok(done
            .into_iter()
            .zip(receipt.memory_ops)
            .map(
                |((fact, decision, target, target_text), applied)| Remembered {
                    fact,
                    decision,
                    target,
                    target_text,
                    applied,
                },
            )
            .collect())
    }
}

/// A memory's fields: a note of `fact`, said by `speaker` at `time`.
fn memory_fields(fact: &str, speaker: Option<&str>, time: EventTime) -> ItemFields {
    let mut fields = ItemFields::new(Source::Note, time);
    fields.body = Some(fact.to_owned());
    fields.speaker = speaker.map(str::to_owned);
    fields.tags = vec![MEMORY_TAG.to_owned()];
    fields
}

/// The current memories most similar to `vector`, most similar first, at most `k`: a search
/// over the note vectors, widened until it holds `k` memories or has seen every note. Texts
/// read are kept in `texts_of` for the rest of the call.
fn similar_memories(
    snapshot: &Snapshot,
    space: &StoredVectors,
    vector: &[f32],
    k: usize,
    texts_of: &mut HashMap<u64, Option<String>>,
) -> Result<Vec<u64>> {
    let scope = VectorScope::all().with_source(Source::Note.code());
    let mut want = k.max(1).saturating_mul(4);
    loop {
        let hits = space.search(vector, want, &scope)?;
        let mut found = Vec::new();
        for hit in &hits {
            let text = match texts_of.get(&hit.key) {
                Some(text) => text.clone(),
                None => {
                    let text = snapshot
                        .get(hit.key)?
                        .filter(|r| r.fields.tags.iter().any(|t| t == MEMORY_TAG))
                        .map(|r| r.fields.body.unwrap_or_default());
                    texts_of.insert(hit.key, text.clone());
                    text
                }
            };
            if text.is_some() {
                found.push(hit.key);
                if found.len() == k {
                    return Ok(found);
                }
            }
        }
        if hits.len() < want {
            return Ok(found);
        }
        want = want.saturating_mul(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_statements_and_drop_questions_and_small_talk() {
        let facts = SentenceExtractor
            .extract(&[Message {
                speaker: Some("Ana".into()),
                text: "Hi! I moved to Porto in March 2024. Do you like it? My sister lives in \
                       Lisbon; she works at the U.S. embassy.\nOk"
                    .into(),
            }])
            .unwrap_or_default();
        assert_eq!(
            facts,
            [
                "I moved to Porto in March 2024",
                "My sister lives in Lisbon",
                "she works at the U.S. embassy"
            ]
        );
    }
}
