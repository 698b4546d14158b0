//! The deterministic decider: Mem0's update rules as checks a person could follow, over the
//! encoder's similarity and the words and values a text names.
//!
//! A text is read into content words (stemmed, read through a small general lexicon of
//! synonyms and US/UK pairs, `lexicon.rs`; light verbs such as "takes", "gets", "pays",
//! grading words and currency names carry no content) and values (numbers, with number words
//! such as "twelve hundred", "38k", "2pm" and ISO dates such as "2024-08-09" read as the same
//! numbers, and capitalised names with diacritics folded). A fact and a memory are compared
//! word by word: a word matches the same key, a synonym, a word cut short ("Barça" /
//! "Barcelona", "member" / "membership"), or the words an abbreviation stands for ("F1" /
//! "Formula 1", "VW" / "Volkswagen").
//!
//! For a new fact and its most similar candidate (cosine of the store's encoder):
//! 1. a dislike ("hates", "can't stand", "doesn't like") of what is stored as a dislike is a
//!    NONE, of what is stored as liked a DELETE;
//! 2. a fact that retracts something ("no longer", "cancelled", "sold", "don't … anymore") is a
//!    NONE when a stored retraction says it already (similar without the retraction words, or
//!    repeating its words), else a DELETE of the candidate its retracted content matches,
//!    unless it names a replacement ("switched to", "moved to", "instead"), which is an UPDATE.
//!    A negation that only dates a fact ("doesn't expire until 2034") retracts nothing;
//! 3. a candidate below [`RuleThresholds::same_subject`] leaves the fact an ADD, unless it
//!    shares a word (periods such as "a year" aside) or a one-valued slot with the fact and a
//!    value changes, or the fact repeats all of a short memory ("Has a sister" → "My sister
//!    Nadia is a vet"); so does a memory about someone else ("my partner"), one whose owner
//!    differs ("Rex's vet" is not "Has a dog named Rex"), or a slot qualified otherwise ("work
//!    email" is not "personal email");
//! 4. a changed value — a date, an amount, a number, a name or place, the filler of a one-valued
//!    slot ("favourite", "lives in", "works at"), or a preference turned round ("prefers coffee
//!    to tea" after "prefers tea over coffee") — is an UPDATE;
//! 5. a fact that adds nothing (no word or value the candidate lacks), or a paraphrase (cosine at
//!    least [`RuleThresholds::paraphrase`] and no new value), is a NONE;
//! 6. a fact that keeps the candidate's content and adds to it (a refinement) is an UPDATE; one
//!    that drops its values and adds none says less (NONE);
//! 7. anything else is an ADD (related, but a memory of its own).
//!
//! The thresholds were set from the encoder's behaviour (paraphrases of MiniLM sit above 0.85,
//! sentences on one subject above 0.5), before any labelled scenario existed; they are options,
//! not tuned constants, and the lexical rules above left them unchanged.

use std::collections::{BTreeMap, BTreeSet};

use super::lexicon::{
    CURRENCIES, GRADING, LIGHT_VERBS, MONTHS, MULTIPLIERS, NUMBER_WORDS, OTHERS, PHRASES, fold,
    is_listed, synonym,
};
use super::{Candidate, Decider, Decision, Operation, cues};
use crate::error::Result;
use rust_stemmers::{Algorithm, Stemmer};

use crate::graph::Embedder;
use memdb_text::is_stopword;

mod compare;
mod reading;
mod words;

use compare::*;
pub(super) use reading::share_exclusive_slot;
use reading::*;
use words::*;

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
    /// At or above this, a fact that shares a word with the candidate and changes a value (or
    /// a retraction that shares one) is still about it.
    pub weak: f32,
}

impl Default for RuleThresholds {
    fn default() -> Self {
        RuleThresholds {
            same_subject: 0.5,
            paraphrase: 0.85,
            refinement: 0.6,
            retract: 0.5,
            weak: 0.3,
        }
    }
}

/// The deterministic decider (see the module's rules).
pub struct RuleDecider<E> {
    embedder: E,
    thresholds: RuleThresholds,
    stemmer: Stemmer,
    /// The keys of the one-valued slots' words.
    slot_stems: BTreeSet<String>,
    /// The keys of the period words.
    periods: BTreeSet<String>,
}

impl<E: std::fmt::Debug> std::fmt::Debug for RuleDecider<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleDecider")
            .field("embedder", &self.embedder)
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

/// Slots a person fills once at a time: a new filler closes every other current memory of the
/// slot, not only the most similar one (a move closes every residence).
const EXCLUSIVE_SLOTS: &[&str] = &[
    "home",
    "work",
    "relationship",
    "phone",
    "email",
    "address",
    "doctor",
    "dentist",
    "provider",
    "birthday",
    "age",
    "salary",
    "rent",
    "name",
];

/// How a fact stands to one candidate, as the rules read it.
#[derive(Debug, Default, Clone)]
pub(super) struct Facets {
    /// Content words of the fact the candidate lacks (slot words aside).
    pub(super) new_words: BTreeSet<String>,
    /// Content words of the candidate the fact lacks (slot words aside).
    pub(super) old_words: BTreeSet<String>,
    /// Values of the fact the candidate lacks.
    pub(super) new_values: BTreeSet<String>,
    /// Values of the candidate the fact lacks.
    pub(super) old_values: BTreeSet<String>,
    /// Content words the two share (synonyms, clippings and abbreviations count).
    pub(super) shared: usize,
    /// Values the two share.
    pub(super) shared_values: usize,
    /// Both fill a one-valued slot (not qualified apart).
    pub(super) same_slot: bool,
    /// Both fill an exclusive slot ([`EXCLUSIVE_SLOTS`]).
    pub(super) same_exclusive_slot: bool,
    /// Slots qualified otherwise on each side ("work email", "personal email").
    pub(super) qualified_apart: Vec<&'static str>,
    /// The two are about different people ("my sister" and "I") and share no name.
    pub(super) others_differ: bool,
    /// The fact is about something of someone the candidate is not about ("Rex's vet").
    pub(super) owner_apart: Option<String>,
    /// A preference turned round ("coffee over tea" after "tea over coffee").
    pub(super) turned_round: bool,
    /// The fact repeats every word of the candidate ("Has a sister" → "My sister Nadia …").
    pub(super) contains_old: bool,
    /// The candidate holds the value a correction says it replaces ("…, not Thursday").
    pub(super) holds_replaced: bool,
    /// Words (or values) of a retraction by reference the candidate holds ("the Toyota").
    pub(super) referenced: usize,
}

/// What the rules read of a fact and its candidates; the learned decider reads the same.
#[derive(Debug)]
pub(super) struct Signals {
    /// The fact's cue words (a correction, a retraction by reference).
    pub(super) cues: cues::Cues,
    /// The fact, read (without its cue words).
    pub(super) new: Reading,
    /// Each candidate, read.
    pub(super) old: Vec<Reading>,
    /// How the fact stands to each candidate.
    pub(super) facets: Vec<Facets>,
    /// The cosine of the fact and each candidate.
    pub(super) cosine: Vec<f32>,
    /// The same without either side's retraction words.
    pub(super) stripped: Vec<f32>,
    /// The fact's cosine to its reading without the retraction words and each candidate's
    /// (a stored retraction read back: "doesn't drink coffee" → "drinks coffee").
    pub(super) to_stripped_candidate: Vec<f32>,
    /// For each candidate, the cosine of what the fact says that it does not (its words and
    /// values the candidate lacks) and what it says that the fact does not; 0 when either side
    /// says nothing of its own. High when one value stands for another of its kind ("Porto" for
    /// "Lisbon", "coffee" for "tea"), low when the two speak of different things ("hotel" and
    /// "flight").
    pub(super) difference: Vec<f32>,
    /// The embedding of the fact as said, cue words included (empty without candidates).
    pub(super) fact_vector: Vec<f32>,
    /// Each candidate's embedding.
    pub(super) candidate_vectors: Vec<Vec<f32>>,
}

impl Signals {
    /// The candidate most similar to the fact, and its cosine.
    pub(super) fn best(&self) -> (usize, f32) {
        self.cosine
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0))
    }
}

impl<E: Embedder> RuleDecider<E> {
    /// A decider using `embedder` (the store's encoder) with `thresholds`.
    pub fn new(embedder: E, thresholds: RuleThresholds) -> RuleDecider<E> {
        let stemmer = Stemmer::create(Algorithm::English);
        let slot_stems = ONE_VALUED
            .iter()
            .map(|(word, _)| stem(&stemmer, synonym(word)))
            .collect();
        let periods = PERIODS.iter().map(|w| stem(&stemmer, w)).collect();
        RuleDecider {
            embedder,
            thresholds,
            stemmer,
            slot_stems,
            periods,
        }
    }

    /// Reads `fact` and `candidates` (one encoder call).
    pub(super) fn signals(&self, fact: &str, candidates: &[Candidate]) -> Result<Signals> {
        let cues = cues::read(fact);
        let new = read(&self.stemmer, &cues.rest);
        let old: Vec<Reading> = candidates
            .iter()
            .map(|c| read(&self.stemmer, &c.text))
            .collect();
        let mut texts: Vec<&str> = vec![&cues.rest, &new.stripped];
        for (c, r) in candidates.iter().zip(&old) {
            texts.push(&c.text);
            texts.push(&r.stripped);
        }
        // The fact as said, cue words and all ("forget about …", "actually …"): what kind of
        // statement it is, which the learned decider reads from its embedding.
        let as_said = (cues.rest != fact).then(|| {
            texts.push(fact);
            texts.len() - 1
        });
        let vectors = if candidates.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&texts)?
        };
        let vector = |i: usize| vectors.get(i).map(Vec::as_slice).unwrap_or(&[]);
        let dot = |a: usize, b: usize| memdb_vectors::dot_f32(vector(a), vector(b));
        let replaced = cues
            .replaced
            .as_deref()
            .map(|r| read(&self.stemmer, r))
            .unwrap_or_default();
        let reference = cues
            .retracts_reference
            .as_deref()
            .map(|r| read(&self.stemmer, r))
            .unwrap_or_default();
        let facets: Vec<Facets> = old
            .iter()
            .map(|o| self.facets(&new, o, &replaced, &reference))
            .collect();
        // What each side says that the other does not, embedded in a second encoder call.
        let sides: Vec<(String, String)> = facets
            .iter()
            .zip(&old)
            .map(|(f, o)| {
                let mine: BTreeSet<String> = f.new_words.union(&f.new_values).cloned().collect();
                let theirs: BTreeSet<String> = f.old_words.union(&f.old_values).cloned().collect();
                (new.words_of(&mine), o.words_of(&theirs))
            })
            .collect();
        let side_texts: Vec<&str> = sides
            .iter()
            .filter(|(a, b)| !a.is_empty() && !b.is_empty())
            .flat_map(|(a, b)| [a.as_str(), b.as_str()])
            .collect();
        let side_vectors = if side_texts.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&side_texts)?
        };
        let mut next = 0;
        let difference: Vec<f32> = sides
            .iter()
            .map(|(a, b)| {
                if a.is_empty() || b.is_empty() {
                    return 0.0;
                }
                let at = next;
                next += 2;
                match (side_vectors.get(at), side_vectors.get(at + 1)) {
                    (Some(x), Some(y)) => memdb_vectors::dot_f32(x, y),
                    _ => 0.0,
                }
            })
            .collect();
        Ok(Signals {
            difference,
            cosine: (0..candidates.len()).map(|i| dot(0, 2 + 2 * i)).collect(),
            stripped: (0..candidates.len()).map(|i| dot(1, 3 + 2 * i)).collect(),
            to_stripped_candidate: (0..candidates.len()).map(|i| dot(0, 3 + 2 * i)).collect(),
            fact_vector: vector(as_said.unwrap_or(0)).to_vec(),
            candidate_vectors: (0..candidates.len())
                .map(|i| vector(2 + 2 * i).to_vec())
                .collect(),
            cues,
            new,
            old,
            facets,
        })
    }

    fn facets(
        &self,
        new: &Reading,
        o: &Reading,
        replaced: &Reading,
        reference: &Reading,
    ) -> Facets {
        let c = compare(new, o, &self.periods);
        // Slot words themselves ("phone" / "mobile", "GP" / "doctor") name the slot, not its
        // filler: they are not new or lost content.
        let slot_word = |w: &&String| !self.slot_stems.contains(*w);
        let qualified_apart: Vec<&'static str> = new
            .qualifiers
            .iter()
            .filter(|(slot, q)| o.qualifiers.get(*slot).is_some_and(|other| other != *q))
            .map(|(slot, _)| *slot)
            .collect();
        let shared_slots: Vec<&'static str> = new
            .slots
            .intersection(&o.slots)
            .filter(|slot| !qualified_apart.contains(slot))
            .copied()
            .collect();
        let turned_round = match (&new.preference, &o.preference) {
            (Some((preferred, other)), Some((was_preferred, was_other))) => {
                !preferred.is_disjoint(was_other) && !other.is_disjoint(was_preferred)
            }
            _ => false,
        };
        // "Rex's vet" is about Rex's vet; it is about the memory only if that is about Rex.
        let owner_apart = new.possessor.as_ref().filter(|owner| {
            !(o.tokens.first().is_some_and(|t| &t.key == *owner)
                || o.possessor.as_ref() == Some(*owner))
        });
        // One name on both sides is one person, whatever relation each names ("Chloé is my
        // girlfriend", "Chloé dumped me").
        let shares_name = new
            .values
            .iter()
            .any(|v| o.values.contains(v) && v.chars().all(char::is_alphabetic));
        let holds = |r: &Reading| {
            r.content.iter().filter(|k| o.has(k)).count()
                + r.values.iter().filter(|k| o.has(k)).count()
        };
        Facets {
            new_words: c.new_words.iter().filter(slot_word).cloned().collect(),
            old_words: c.old_words.iter().filter(slot_word).cloned().collect(),
            new_values: c.new_values.clone(),
            old_values: c.old_values.clone(),
            shared: c.shared,
            shared_values: c.shared_values,
            same_slot: !shared_slots.is_empty(),
            same_exclusive_slot: shared_slots.iter().any(|s| EXCLUSIVE_SLOTS.contains(s)),
            qualified_apart,
            others_differ: new.others != o.others && !shares_name,
            owner_apart: owner_apart.cloned(),
            turned_round,
            contains_old: c.old_words.is_empty() && c.old_values.is_empty() && c.shared >= 1,
            holds_replaced: !replaced.values.is_empty() && holds(replaced) > 0,
            referenced: holds(reference),
        }
    }

    fn decide_with(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision> {
        if candidates.is_empty() {
            return Ok(Decision::add("nothing similar is stored"));
        }
        let signals = self.signals(fact, candidates)?;
        let decision = self.rule(&signals);
        Ok(self.with_closures(&signals, decision))
    }

    /// The rules' decision on `s` (its target only; see [`RuleDecider::with_closures`]).
    pub(super) fn rule(&self, s: &Signals) -> Decision {
        let t = &self.thresholds;
        let (new, old) = (&s.new, &s.old);
        if old.is_empty() {
            return Decision::add("nothing similar is stored");
        }
        // 0. A retraction by reference ("forget about the Toyota") retires what it names.
        if s.cues.retracts_reference.is_some() {
            let named = (0..old.len())
                .filter(|&i| s.facets[i].referenced > 0 || s.cosine[i] >= t.retract)
                .max_by(|&a, &b| {
                    (s.facets[a].referenced, s.cosine[a])
                        .partial_cmp(&(s.facets[b].referenced, s.cosine[b]))
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
            return match named {
                Some(i) => Decision::on(Operation::Delete, i, "asked to forget it"),
                None => Decision::add("asked to forget something no memory holds"),
            };
        }
        // 0'. A correction naming the value it replaces ("…, not Thursday") changes the memory
        // that holds it.
        if s.cues.corrects
            && let Some(i) = (0..old.len())
                .filter(|&i| s.facets[i].holds_replaced && s.cosine[i] >= t.weak)
                .max_by(|&a, &b| s.cosine[a].total_cmp(&s.cosine[b]))
        {
            return Decision::on(Operation::Update, i, "corrects it");
        }
        let (best, score) = s.best();
        let f = &s.facets[best];

        // A dislike stored is said again; a dislike of what is stored as liked retracts it.
        if new.dislikes {
            if old[best].dislikes && (score >= t.refinement || f.shared >= 1) {
                return Decision::on(
                    Operation::None,
                    best,
                    format!("the same dislike is stored (similarity {score:.2})"),
                );
            }
            if old[best].likes && score >= t.same_subject {
                return Decision::on(
                    Operation::Delete,
                    best,
                    "a dislike of what is stored as liked",
                );
            }
        }
        // 1. A retraction retracts the memory its content matches best; saying a stored
        //    retraction again ("I don't smoke" after "Quit smoking") is nothing new.
        if new.retracts && !new.replaces {
            let closest = (0..old.len())
                .max_by(|&a, &b| s.stripped[a].total_cmp(&s.stripped[b]))
                .unwrap_or(0);
            let closest_similarity = s.stripped[closest];
            if old[closest].retracts && closest_similarity >= t.refinement {
                return Decision::on(
                    Operation::None,
                    closest,
                    format!("the same retraction is stored (similarity {closest_similarity:.2})"),
                );
            }
            // A stored retraction whose words the fact repeats, adding none.
            let repeated = (0..old.len())
                .filter(|&i| {
                    let c = &s.facets[i];
                    old[i].retracts
                        && c.new_words.is_empty()
                        && c.new_values.is_empty()
                        && c.shared >= 1
                })
                .max_by(|&a, &b| s.stripped[a].total_cmp(&s.stripped[b]));
            if let Some(i) = repeated.filter(|&i| s.stripped[i] >= t.weak) {
                return Decision::on(
                    Operation::None,
                    i,
                    format!(
                        "repeats a stored retraction (similarity {:.2})",
                        s.stripped[i]
                    ),
                );
            }
            if old[best].retracts && score >= t.refinement {
                return Decision::on(
                    Operation::None,
                    best,
                    format!("the same retraction is stored (similarity {score:.2})"),
                );
            }
            let target = (0..old.len())
                .filter(|&i| !old[i].retracts)
                .max_by(|&a, &b| s.stripped[a].total_cmp(&s.stripped[b]));
            if let Some(i) = target {
                let similarity = s.stripped[i];
                let overlap = s.facets[i].shared + s.facets[i].shared_values;
                if similarity >= t.retract || (similarity >= t.weak && overlap >= 1) {
                    return Decision::on(
                        Operation::Delete,
                        i,
                        format!(
                            "retracts it (similarity {similarity:.2} without the retraction words)"
                        ),
                    );
                }
            }
            return Decision::add("a retraction of nothing stored");
        }

        let o = &old[best];
        let (new_words, old_words, new_values, old_values) =
            (&f.new_words, &f.old_words, &f.new_values, &f.old_values);
        // 2. Another subject: too far in meaning, unless it shares words (or a slot) and
        //    changes a value, or repeats a short memory whole.
        let changes = (!new_values.is_empty() && !old_values.is_empty()) || new.replaces;
        let near = score >= t.same_subject
            || (score >= t.weak && (f.shared >= 1 || f.same_slot) && changes)
            || (score >= t.weak && f.contains_old)
            || (s.cues.corrects && score >= t.weak && (f.shared >= 1 || f.same_slot));
        if !near {
            return Decision::add(format!(
                "nothing stored is about this (best similarity {score:.2})"
            ));
        }
        if f.others_differ {
            return Decision::add("about someone else than the stored memory");
        }
        if let Some(owner) = &f.owner_apart {
            return Decision::add(format!("about something of {owner}'s, not what is stored"));
        }
        if !f.qualified_apart.is_empty() && !f.same_slot {
            return Decision::add(format!(
                "another {} than the stored one",
                f.qualified_apart.join(", ")
            ));
        }
        // A stored retraction taken back ("doesn't drink coffee" → "drinks coffee again").
        if o.retracts && !new.retracts && s.to_stripped_candidate[best] >= t.retract {
            return Decision::on(Operation::Update, best, "takes back a stored retraction");
        }
        // In addition to what is stored, not instead of it.
        if new.adds && score < t.paraphrase {
            return Decision::add("in addition to what is stored");
        }
        // 3. A change: a correction, a replacement named, a preference turned round, a changed
        //    value, or a one-valued slot refilled.
        if s.cues.corrects && (!new_values.is_empty() || !new_words.is_empty()) {
            return Decision::on(Operation::Update, best, "corrects it");
        }
        if new.replaces {
            return Decision::on(Operation::Update, best, "names what replaced it");
        }
        if f.turned_round {
            return Decision::on(Operation::Update, best, "the preference is turned round");
        }
        if !new_values.is_empty() && !old_values.is_empty() {
            return Decision::on(
                Operation::Update,
                best,
                format!("changes {} to {}", list(old_values), list(new_values)),
            );
        }
        if f.same_slot && !new_words.is_empty() && !old_words.is_empty() && score >= t.refinement {
            return Decision::on(
                Operation::Update,
                best,
                format!(
                    "one-valued: {} instead of {}",
                    list(new_words),
                    list(old_words)
                ),
            );
        }
        // 4. Nothing new: no value the memory lacks, and no new word or a paraphrase.
        if new_values.is_empty() && (new_words.is_empty() || score >= t.paraphrase) {
            return Decision::on(
                Operation::None,
                best,
                format!("adds nothing to it (similarity {score:.2})"),
            );
        }
        // 5. A refinement: keeps most of what is stored and adds to it.
        let kept = o.content.len().saturating_sub(old_words.len());
        let keeps = old_values.is_empty() && 2 * kept >= o.content.len();
        if keeps && score >= t.weak {
            let added: BTreeSet<String> = new_words.union(new_values).cloned().collect();
            return Decision::on(Operation::Update, best, format!("adds {}", list(&added)));
        }
        if new_values.is_empty() && !old_values.is_empty() && score >= t.refinement {
            return Decision::on(Operation::None, best, "says less than it");
        }
        // 6.
        Decision::add(format!(
            "related (similarity {score:.2}) but a memory of its own"
        ))
    }

    /// `decision` with the other candidates the fact makes untrue: for a new filler of an
    /// exclusive slot (a move, a new job), every other memory of that slot about the same person
    /// that holds a value the fact does not; for a retraction by reference, every memory that
    /// holds what it names.
    pub(super) fn with_closures(&self, s: &Signals, decision: Decision) -> Decision {
        let t = &self.thresholds;
        let closes: Vec<(usize, String)> = match decision.op {
            Operation::Delete if s.cues.retracts_reference.is_some() => {
                let most = decision
                    .target
                    .and_then(|i| s.facets.get(i))
                    .map_or(0, |f| f.referenced);
                (0..s.old.len())
                    .filter(|&i| most > 0 && s.facets[i].referenced >= most)
                    .map(|i| (i, "asked to forget it".to_owned()))
                    .collect()
            }
            Operation::Update | Operation::Add if !s.new.adds && !s.new.retracts => {
                (0..s.old.len())
                    .filter(|&i| {
                        let f = &s.facets[i];
                        f.same_exclusive_slot
                            && !f.others_differ
                            && f.owner_apart.is_none()
                            && !f.old_values.is_empty()
                            && !f.new_values.is_empty()
                            && !s.old[i].retracts
                            && s.cosine[i] >= t.weak
                    })
                    .map(|i| {
                        (
                            i,
                            format!(
                                "superseded: one at a time, and this says {} instead of {}",
                                list(&s.facets[i].new_values),
                                list(&s.facets[i].old_values)
                            ),
                        )
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        decision.closing(closes)
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
        let stemmer = Stemmer::create(Algorithm::English);
        let r = read(&stemmer, "I no longer live in Lisbon since 2024-03-01");
        assert!(r.retracts && !r.replaces, "{r:?}");
        assert!(
            r.values.contains("lisbon") && r.values.contains("2024"),
            "{r:?}"
        );
        assert!(!r.stripped.contains("longer"), "{}", r.stripped);
        let r = read(&stemmer, "My sister doesn't eat meat");
        assert!(r.retracts);
        assert!(r.others.contains("sister"));
        let r = read(&stemmer, "Switched from Netflix to Disney+");
        assert!(!r.retracts && r.replaces);
        let r = read(&stemmer, "Has two dogs and catches the 07:42");
        assert!(r.content.contains("dog"), "{r:?}");
        assert!(r.values.contains("2") && r.values.contains("7"), "{r:?}");
    }

    #[test]
    fn numbers_are_read_from_words_suffixes_times_and_iso_dates() {
        let stemmer = Stemmer::create(Algorithm::English);
        let r = read(&stemmer, "Pays twelve hundred euros a month in rent");
        assert!(r.values.contains("1200"), "{r:?}");
        assert!(
            !r.content.contains("euro") && !r.content.contains("pay"),
            "{r:?}"
        );
        let r = read(
            &stemmer,
            "Earns about £38k, two thousand and fifty less than before",
        );
        assert!(
            r.values.contains("38000") && r.values.contains("2050"),
            "{r:?}"
        );
        let r = read(&stemmer, "Dinner at 2:30pm, lunch at 1pm");
        assert!(
            r.values.contains("14") && r.values.contains("13") && r.values.contains("30"),
            "{r:?}"
        );
        assert!(!r.values.contains("2") && !r.values.contains("1"), "{r:?}");
        assert_eq!(
            spelled_iso_dates("Haircut on 2024-08-09 at 14:30"),
            "Haircut on 09 August 2024 at 14:30"
        );
        assert_eq!(spelled_iso_dates("Code 12024-08-091"), "Code 12024-08-091");
        let iso = read(&stemmer, "Haircut on 2024-08-09");
        let spelled = read(&stemmer, "Haircut on 9 August 2024");
        assert_eq!(iso.values, spelled.values);
    }

    #[test]
    fn clippings_and_abbreviations_match_their_long_forms() {
        assert!(clipped("barca", "barcelona") && clipped("member", "membership"));
        assert!(!clipped("car", "card") && !clipped("dental", "dentist"));
        assert!(!clipped("2024", "20245"));
        let stemmer = Stemmer::create(Algorithm::English);
        let periods = BTreeSet::new();
        let c = compare(
            &read(&stemmer, "Watches F1"),
            &read(&stemmer, "Watches Formula 1"),
            &periods,
        );
        assert!(c.new_values.is_empty() && c.old_values.is_empty(), "{c:?}");
        assert!(c.old_words.is_empty(), "{c:?}");
        let c = compare(
            &read(&stemmer, "Drives a VW"),
            &read(&stemmer, "Drives a Volkswagen"),
            &periods,
        );
        assert!(c.new_values.is_empty() && c.old_values.is_empty(), "{c:?}");
        let c = compare(
            &read(&stemmer, "Drives a BMW"),
            &read(&stemmer, "Drives a Volkswagen"),
            &periods,
        );
        assert!(
            !c.new_values.is_empty() && !c.old_values.is_empty(),
            "{c:?}"
        );
    }

    #[test]
    fn a_reading_finds_owners_qualifiers_preferences_and_dated_negations() {
        let stemmer = Stemmer::create(Algorithm::English);
        let r = read(&stemmer, "Rex's vet is Dr. Jansen");
        assert_eq!(r.possessor.as_deref(), Some("rex"));
        assert!(
            read(&stemmer, "Mum's party is on Saturday")
                .possessor
                .is_none()
        );
        assert!(
            read(&stemmer, "User's daughter is Lily")
                .possessor
                .is_none()
        );
        let r = read(&stemmer, "Work email is m.lopez@fintrak.com");
        assert_eq!(r.qualifiers.get("email").map(String::as_str), Some("work"));
        let r = read(&stemmer, "Phone number is 0151 234 5678");
        assert!(r.qualifiers.is_empty(), "{r:?}");
        let r = read(&stemmer, "These days I prefer coffee to tea");
        let (preferred, other) = r.preference.clone().unwrap_or_default();
        assert!(
            preferred.contains("coffe") && other.contains("tea"),
            "{r:?}"
        );
        assert!(
            read(&stemmer, "Prefers to be called Jo")
                .preference
                .is_none()
        );
        let r = read(&stemmer, "My passport doesn't expire until 2034");
        assert!(!r.retracts && !r.content.contains("doesn"), "{r:?}");
        let r = read(&stemmer, "Doesn't like cilantro at all");
        assert!(
            r.dislikes && !r.likes && r.content.contains("coriand"),
            "{r:?}"
        );
        let r = read(&stemmer, "Ben moved out, there's no lodger now");
        assert!(r.retracts && !r.replaces, "{r:?}");
        let r = read(&stemmer, "My partner earns about £38k");
        assert!(r.others.contains("partner"), "{r:?}");
    }

    /// An encoder for which any two different texts of one call have the same cosine, so a
    /// test sees the lexical rules alone.
    #[derive(Debug)]
    struct Uniform(f32);

    impl Embedder for Uniform {
        fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
            let dimensions = texts.len() + 1;
            Ok((0..texts.len())
                .map(|i| {
                    let mut v = vec![0.0; dimensions];
                    v[0] = self.0.sqrt();
                    v[i + 1] = (1.0 - self.0).sqrt();
                    v
                })
                .collect())
        }
    }

    #[test]
    fn the_learned_deciders_slot_features_read_a_new_value_of_a_one_valued_slot() {
        use super::super::learned::{EXCLUSIVE_SLOT_FEATURE, VALUES_APART_FEATURE, pair_features};
        let decider = RuleDecider::new(Uniform(0.8), RuleThresholds::default());
        let read = |fact: &str, stored: &str| {
            let candidates = [Candidate {
                text: stored.to_owned(),
            }];
            let s = decider.signals(fact, &candidates).unwrap();
            let rule = decider.rule(&s);
            let pair = pair_features(&s, &rule, 0);
            (pair[EXCLUSIVE_SLOT_FEATURE], pair[VALUES_APART_FEATURE])
        };
        assert_eq!(read("I live in Porto", "I live in Lisbon"), (1.0, 1.0));
        assert_eq!(read("I live in Lisbon", "I live in Lisbon").1, 0.0);
        assert_eq!(read("I like tea", "I live in Lisbon").0, 0.0);
    }

    fn decide(similarity: f32, fact: &str, stored: &[&str]) -> (Operation, Option<usize>) {
        let decider = RuleDecider::new(Uniform(similarity), RuleThresholds::default());
        let candidates: Vec<Candidate> = stored
            .iter()
            .map(|text| Candidate {
                text: (*text).to_owned(),
            })
            .collect();
        match decider.decide(fact, &candidates) {
            Ok(d) => (d.op, d.target),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn restated_facts_are_known_whatever_their_words() {
        // Similar enough to be one subject, too far for the encoder alone to call a paraphrase.
        let s = 0.7;
        let none = (Operation::None, Some(0));
        assert_eq!(
            decide(
                s,
                "Pays twelve hundred euros a month in rent",
                &["Monthly rent is €1,200"]
            ),
            none
        );
        assert_eq!(
            decide(s, "Likes watching F1", &["Enjoys watching Formula 1"]),
            none
        );
        assert_eq!(
            decide(
                s,
                "Gets to the office by train",
                &["Commutes to work by train"]
            ),
            none
        );
        assert_eq!(
            decide(s, "Haircut on 2024-08-09", &["Haircut on 9 August 2024"]),
            none
        );
        assert_eq!(
            decide(s, "Doesn't like cilantro at all", &["Hates coriander"]),
            none
        );
        assert_eq!(decide(s, "I don't smoke", &["Quit smoking in 2019"]), none);
        // A dated negation retracts nothing: it says less than the stored renewal.
        assert_eq!(
            decide(
                s,
                "My passport doesn't expire until 2034",
                &["Renewed the passport in January 2024, valid until January 2034"]
            ),
            none
        );
    }

    #[test]
    fn other_owners_slots_and_periods_keep_a_fact_apart() {
        let s = 0.7;
        let add = (Operation::Add, None);
        assert_eq!(
            decide(s, "Rex's vet is Dr. Jansen", &["Has a dog named Rex"]),
            add
        );
        assert_eq!(
            decide(
                s,
                "Work email is m.lopez@fintrak.com",
                &["Personal email is maria.lopez@gmail.com"]
            ),
            add
        );
        assert_eq!(
            decide(s, "Has a cat named Mia", &["Has a dog named Rex"]),
            add
        );
        assert_eq!(
            decide(
                s,
                "My partner earns about £38k",
                &["Salary is £42,000 a year"]
            ),
            add
        );
        // Below one subject, sharing only "a year" does not make two amounts one.
        assert_eq!(
            decide(
                0.4,
                "Water rates are £520 a year",
                &["Pays council tax of £1,850 a year"]
            ),
            add
        );
    }

    #[test]
    fn preferences_turned_round_and_repeated_short_memories_are_updates() {
        let update = (Operation::Update, Some(0));
        assert_eq!(
            decide(
                0.9,
                "These days I prefer coffee to tea",
                &["Prefers tea over coffee"]
            ),
            update
        );
        assert_eq!(
            decide(0.9, "Prefers tea over coffee", &["Prefers tea over coffee"]).0,
            Operation::None
        );
        assert_eq!(
            decide(
                0.35,
                "My sister Nadia is a vet in Glasgow",
                &["Has a sister"]
            ),
            update
        );
        assert_eq!(
            decide(
                0.35,
                "My brother Tom is a vet in Glasgow",
                &["Has a sister"]
            )
            .0,
            Operation::Add
        );
    }
}
