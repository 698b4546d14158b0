//! The deterministic decider: Mem0's update rules as checks a person could follow, over the
//! encoder's similarity and the values a text names.
//!
//! For a new fact and its most similar candidate (cosine of the store's encoder):
//! 1. a fact that retracts something ("no longer", "cancelled", "sold", "don't … anymore") is a
//!    DELETE of the candidate its retracted content matches, unless it names a replacement
//!    ("switched to", "now", "instead"), which is an UPDATE;
//! 2. a candidate below [`RuleThresholds::same_subject`], or about someone else ("my sister"),
//!    leaves the fact an ADD;
//! 3. a changed value — a date, an amount, a number, a name or place (capitalised), or the filler
//!    of a one-valued slot ("favourite", "lives in", "works at") — is an UPDATE;
//! 4. a fact that adds nothing (no word or value the candidate lacks), or a paraphrase (cosine at
//!    least [`RuleThresholds::paraphrase`] and no new value), is a NONE;
//! 5. a fact that keeps the candidate's content and adds to it (a refinement) is an UPDATE;
//! 6. anything else is an ADD (related, but a memory of its own).
//!
//! The thresholds were set from the encoder's behaviour (paraphrases of MiniLM sit above 0.85,
//! sentences on one subject above 0.5), before any labelled scenario existed; they are options,
//! not tuned constants.

use std::collections::BTreeSet;

use super::{Candidate, Decider, Decision, Operation};
use crate::error::Result;
use crate::graph::Embedder;
use crate::graph::extract::{NodeKind, query_nodes};
use crate::text::{is_stopword, words};

/// Cosine bounds of [`RuleDecider`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleThresholds {
    /// Below this the best candidate is about something else: ADD.
    pub same_subject: f32,
    /// At or above this, with no new value, the fact is the candidate again: NONE.
    pub paraphrase: f32,
    /// At or above this, a fact that adds words to the candidate refines it: UPDATE.
    pub refinement: f32,
    /// At or above this (the fact with its retraction words removed), a retraction retracts
    /// the candidate: DELETE.
    pub retract: f32,
}

impl Default for RuleThresholds {
    fn default() -> Self {
        RuleThresholds {
            same_subject: 0.5,
            paraphrase: 0.85,
            refinement: 0.6,
            retract: 0.5,
        }
    }
}

/// Words that retract what follows or precedes them.
const RETRACTIONS: &[&str] = &[
    "anymore",
    "longer",
    "stopped",
    "quit",
    "quitting",
    "sold",
    "cancelled",
    "canceled",
    "cancel",
    "cancelling",
    "canceling",
    "called",
    "ended",
    "broke",
    "divorced",
    "died",
    "passed",
    "lost",
    "gave",
    "dropped",
    "unsubscribed",
    "closed",
    "retired",
    "left",
    "never",
    "not",
    "no",
];

/// Words whose presence with a retraction names what replaced the retracted thing.
const REPLACEMENTS: &[&str] = &[
    "now", "instead", "switched", "replaced", "changed", "moved", "new", "became", "rather",
];

/// Words that say the fact is about someone other than the person.
const OTHERS: &[&str] = &[
    "sister",
    "brother",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "wife",
    "husband",
    "son",
    "daughter",
    "friend",
    "boss",
    "colleague",
    "partner",
    "girlfriend",
    "boyfriend",
    "aunt",
    "uncle",
    "cousin",
    "grandmother",
    "grandfather",
    "grandma",
    "grandpa",
    "neighbor",
    "neighbour",
    "roommate",
    "kids",
    "children",
    "parents",
];

/// Words of a slot that holds one value at a time: a different filler is a change.
const ONE_VALUED: &[&str] = &[
    "favorite",
    "favourite",
    "lives",
    "live",
    "living",
    "works",
    "work",
    "working",
    "job",
    "employer",
    "name",
    "named",
    "called",
    "email",
    "phone",
    "number",
    "address",
    "birthday",
    "born",
    "age",
    "salary",
    "rent",
    "drives",
    "car",
    "plan",
    "subscription",
    "doctor",
    "dentist",
    "married",
    "engaged",
    "dating",
    "studies",
    "studying",
    "major",
    "prefers",
    "preferred",
];

/// What the rules read in a text.
#[derive(Debug, Default)]
struct Reading {
    /// Content words (no function words, no retraction words), crudely singular.
    content: BTreeSet<String>,
    /// Dates, amounts, numbers, and capitalised names, lowercased.
    values: BTreeSet<String>,
    /// Whether it retracts something.
    retracts: bool,
    /// Whether it names a replacement.
    replaces: bool,
    /// Others it is about ("sister").
    others: BTreeSet<String>,
    /// One-valued slot words it has.
    slots: BTreeSet<String>,
    /// The text without its retraction words.
    stripped: String,
}

/// "dogs" → "dog", "classes" → "class"; enough to match a plural with its singular.
fn singular(word: &str) -> String {
    if word.len() > 4 && word.ends_with("ies") {
        format!("{}y", &word[..word.len() - 3])
    } else if word.len() > 4 && (word.ends_with("ses") || word.ends_with("xes")) {
        word[..word.len() - 2].to_owned()
    } else if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
        word[..word.len() - 1].to_owned()
    } else {
        word.to_owned()
    }
}

fn read(text: &str) -> Reading {
    let mut r = Reading::default();
    let lower: Vec<String> = words(text).collect();
    // "don't", "isn't" split into "don" + "t".
    let contracted_not = lower.windows(2).any(|w| {
        w[1] == "t"
            && matches!(
                w[0].as_str(),
                "don"
                    | "doesn"
                    | "didn"
                    | "isn"
                    | "aren"
                    | "wasn"
                    | "weren"
                    | "won"
                    | "can"
                    | "haven"
                    | "hasn"
            )
    });
    let phrase_retraction = lower.windows(2).any(|w| {
        matches!(
            (w[0].as_str(), w[1].as_str()),
            ("no", "longer")
                | ("any", "more")
                | ("called", "off")
                | ("broke", "up")
                | ("passed", "away")
                | ("gave", "up")
                | ("gave", "away")
        )
    });
    let single_retraction = lower.iter().any(|w| {
        matches!(
            w.as_str(),
            "anymore"
                | "stopped"
                | "quit"
                | "sold"
                | "cancelled"
                | "canceled"
                | "cancel"
                | "cancelling"
                | "canceling"
                | "ended"
                | "divorced"
                | "died"
                | "unsubscribed"
                | "never"
                | "not"
        )
    });
    r.retracts = contracted_not || phrase_retraction || single_retraction;
    r.replaces = lower.iter().any(|w| REPLACEMENTS.contains(&w.as_str()));
    let mut kept = Vec::new();
    for w in &lower {
        let retraction = RETRACTIONS.contains(&w.as_str())
            || (w == "t" && contracted_not)
            || matches!(w.as_str(), "off" | "up" | "away" | "any" | "more");
        if retraction && r.retracts {
            continue;
        }
        kept.push(w.clone());
        if OTHERS.contains(&w.as_str()) {
            r.others.insert(singular(w));
        }
        if ONE_VALUED.contains(&w.as_str()) {
            r.slots.insert(w.clone());
        }
        if w.chars().any(|c| c.is_ascii_digit()) {
            r.values.insert(w.clone());
        } else if !is_stopword(w) && w.chars().count() > 1 {
            r.content.insert(singular(w));
        }
    }
    r.stripped = kept.join(" ");
    for node in query_nodes(text) {
        match node.kind {
            NodeKind::Date | NodeKind::Amount | NodeKind::Entity => {
                r.values.insert(node.phrase);
            }
            NodeKind::Phrase | NodeKind::Word => {}
        }
    }
    // Capitalised words after the first are names and places ("Porto", "Dr Silva").
    let mut first = true;
    for (start, end) in crate::text::spans(text) {
        let word = &text[start..end];
        if !first && word != "I" && word.chars().next().is_some_and(char::is_uppercase) {
            r.values.insert(word.to_lowercase());
        }
        first = false;
    }
    // A value is not also a content word (a changed name is a changed value, not new words).
    let values = r.values.clone();
    r.content.retain(|w| !values.contains(w));
    r
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn list(set: &BTreeSet<&String>) -> String {
    set.iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The deterministic decider (see the module's rules).
#[derive(Debug)]
pub struct RuleDecider<E> {
    embedder: E,
    thresholds: RuleThresholds,
}

impl<E: Embedder> RuleDecider<E> {
    /// A decider using `embedder` (the store's encoder) with `thresholds`.
    pub fn new(embedder: E, thresholds: RuleThresholds) -> RuleDecider<E> {
        RuleDecider {
            embedder,
            thresholds,
        }
    }

    fn decide_with(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision> {
        if candidates.is_empty() {
            return Ok(Decision::add("nothing similar is stored"));
        }
        let new = read(fact);
        let old: Vec<Reading> = candidates.iter().map(|c| read(&c.text)).collect();
        let mut texts: Vec<&str> = vec![fact, &new.stripped];
        for (c, r) in candidates.iter().zip(&old) {
            texts.push(&c.text);
            texts.push(&r.stripped);
        }
        let vectors = self.embedder.embed(&texts)?;
        let vector = |i: usize| vectors.get(i).map(Vec::as_slice).unwrap_or(&[]);
        let t = &self.thresholds;

        // 1. A retraction retracts the candidate its content matches best.
        if new.retracts && !new.replaces {
            let best = (0..candidates.len())
                .filter(|&i| !old[i].retracts)
                .map(|i| (i, cosine(vector(1), vector(3 + 2 * i))))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((i, score)) = best
                && score >= t.retract
                && new.others == old[i].others
            {
                return Ok(Decision::on(
                    Operation::Delete,
                    i,
                    format!("retracts it (similarity {score:.2} without the retraction words)"),
                ));
            }
            return Ok(Decision::add("a retraction of nothing stored"));
        }

        let (best, score) = (0..candidates.len())
            .map(|i| (i, cosine(vector(0), vector(2 + 2 * i))))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        let o = &old[best];
        // 2. Another subject.
        if score < t.same_subject {
            return Ok(Decision::add(format!(
                "nothing stored is about this (best similarity {score:.2})"
            )));
        }
        if new.others != o.others {
            return Ok(Decision::add("about someone else than the stored memory"));
        }
        // A stored retraction taken back ("doesn't drink coffee" → "drinks coffee again").
        if o.retracts && !new.retracts {
            let back = cosine(vector(0), vector(3 + 2 * best));
            if back >= t.retract {
                return Ok(Decision::on(
                    Operation::Update,
                    best,
                    "takes back a stored retraction",
                ));
            }
        }
        let new_values: BTreeSet<&String> = new.values.difference(&o.values).collect();
        let old_values: BTreeSet<&String> = o.values.difference(&new.values).collect();
        let new_words: BTreeSet<&String> = new.content.difference(&o.content).collect();
        let old_words: BTreeSet<&String> = o.content.difference(&new.content).collect();
        // 3. A changed value.
        if !new_values.is_empty() && !old_values.is_empty() {
            return Ok(Decision::on(
                Operation::Update,
                best,
                format!("changes {} to {}", list(&old_values), list(&new_values)),
            ));
        }
        let shared_slot = new.slots.intersection(&o.slots).next().is_some();
        if shared_slot && !new_words.is_empty() && !old_words.is_empty() && score >= t.refinement {
            return Ok(Decision::on(
                Operation::Update,
                best,
                format!(
                    "one-valued: {} instead of {}",
                    list(&new_words),
                    list(&old_words)
                ),
            ));
        }
        // 4. Nothing new.
        if new_values.is_empty() && new_words.is_empty() {
            return Ok(Decision::on(Operation::None, best, "adds nothing to it"));
        }
        if new_values.is_empty() && score >= t.paraphrase {
            return Ok(Decision::on(
                Operation::None,
                best,
                format!("says it again (similarity {score:.2})"),
            ));
        }
        // 5. A refinement: keeps what is stored and adds to it.
        let keeps = old_words.len() <= 1 && old_values.is_empty();
        if keeps && score >= t.refinement {
            return Ok(Decision::on(
                Operation::Update,
                best,
                format!(
                    "adds {}",
                    list(&new_words.union(&new_values).copied().collect())
                ),
            ));
        }
        // 6.
        Ok(Decision::add(format!(
            "related (similarity {score:.2}) but a memory of its own"
        )))
    }
}

impl<E: Embedder + Send + Sync + std::fmt::Debug> Decider for RuleDecider<E> {
    fn decide(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision> {
        self.decide_with(fact, candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_finds_values_retractions_and_others() {
        let r = read("I no longer live in Lisbon since 2024-03-01");
        assert!(r.retracts && !r.replaces, "{r:?}");
        assert!(
            r.values.contains("lisbon") && r.values.contains("2024-03-01"),
            "{r:?}"
        );
        assert!(!r.stripped.contains("longer"), "{}", r.stripped);
        let r = read("My sister doesn't eat meat");
        assert!(r.retracts);
        assert!(r.others.contains("sister"));
        let r = read("Switched from Netflix to Disney+ now");
        assert!(!r.retracts && r.replaces);
        let r = read("Has two dogs");
        assert!(r.content.contains("dog"), "{r:?}");
    }
}
