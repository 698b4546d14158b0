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
use rust_stemmers::{Algorithm, Stemmer};

use crate::graph::Embedder;
use crate::text::is_stopword;

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

/// Words that retract something stored on their own ("sold", "cancelled", "left").
const RETRACTING_WORDS: &[&str] = &[
    "anymore",
    "stopped",
    "quit",
    "sold",
    "cancelled",
    "canceled",
    "cancel",
    "cancelling",
    "canceling",
    "ended",
    "divorced",
    "died",
    "unsubscribed",
    "never",
    "not",
    "no",
    "left",
    "withdrew",
    "withdrawn",
    "lapse",
    "lapsed",
    "emptied",
    "closed",
];

/// Word pairs that retract something stored ("no longer", "called off", "moved out").
const RETRACTING_PAIRS: &[(&str, &str)] = &[
    ("no", "longer"),
    ("any", "more"),
    ("called", "off"),
    ("broke", "up"),
    ("passed", "away"),
    ("gave", "up"),
    ("gave", "away"),
    ("got", "rid"),
    ("moved", "out"),
    ("came", "off"),
    ("pulled", "out"),
    ("dropped", "out"),
];

/// Contractions that negate: `don't` splits into "don" + "t".
const NEGATED_AUXILIARIES: &[&str] = &[
    "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "haven", "hasn",
];

/// Words that name what replaced something: a retraction with one is a change (UPDATE).
const REPLACING_WORDS: &[&str] = &[
    "instead",
    "switched",
    "replaced",
    "joined",
    "bought",
    "changed",
    "moved",
    "became",
    "upgraded",
    "downgraded",
    "rescheduled",
    "postponed",
    "renamed",
];

/// Words that say the fact is in addition to what is stored ("also", "another").
const ADDING_WORDS: &[&str] = &["also", "another", "other", "too", "additionally"];

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
    "parents",
];

/// Words of a slot that holds one value at a time, with the slot they fill: a different filler
/// is a change.
const ONE_VALUED: &[(&str, &str)] = &[
    ("favorite", "favourite"),
    ("favourite", "favourite"),
    ("live", "home"),
    ("lives", "home"),
    ("living", "home"),
    ("moved", "home"),
    ("work", "work"),
    ("works", "work"),
    ("job", "work"),
    ("employer", "work"),
    ("name", "name"),
    ("named", "name"),
    ("called", "name"),
    ("surname", "name"),
    ("email", "email"),
    ("phone", "phone"),
    ("mobile", "phone"),
    ("number", "phone"),
    ("address", "address"),
    ("birthday", "birthday"),
    ("born", "birthday"),
    ("age", "age"),
    ("salary", "salary"),
    ("earns", "salary"),
    ("rent", "rent"),
    ("drives", "car"),
    ("car", "car"),
    ("plan", "plan"),
    ("subscription", "plan"),
    ("doctor", "doctor"),
    ("gp", "doctor"),
    ("dentist", "dentist"),
    ("married", "relationship"),
    ("engaged", "relationship"),
    ("dating", "relationship"),
    ("girlfriend", "relationship"),
    ("boyfriend", "relationship"),
    ("studies", "study"),
    ("studying", "study"),
    ("major", "study"),
    ("prefers", "preference"),
    ("prefer", "preference"),
    ("weighs", "weight"),
    ("weight", "weight"),
    ("provider", "provider"),
    ("bank", "bank"),
    ("school", "school"),
    ("manager", "manager"),
];

/// Words that say the person dislikes something (a stored liking of it is retracted).
const DISLIKING: &[&str] = &[
    "dislike", "dislikes", "hate", "hates", "detest", "detests", "loathe",
];
/// Words that say the person likes something.
const LIKING: &[&str] = &[
    "like", "likes", "love", "loves", "enjoy", "enjoys", "adore", "fan",
];

/// Words that carry no content for these rules, beyond the shared stopwords.
const FILLER: &[&str] = &[
    "user",
    "now",
    "currently",
    "these",
    "days",
    "also",
    "really",
    "very",
];

/// Number words, as the digits a value compares by.
const NUMBER_WORDS: &[(&str, &str)] = &[
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
    ("eleven", "11"),
    ("twelve", "12"),
    ("twenty", "20"),
    ("thirty", "30"),
    ("hundred", "100"),
    ("single", "1"),
    ("twice", "2"),
    ("once", "1"),
];

/// Capitalised words that are not names (days, months are values of their own).
const NOT_NAMES: &[&str] = &["I", "Mr", "Mrs", "Ms", "Dr", "St"];

/// What the rules read in a text.
#[derive(Debug, Default)]
struct Reading {
    /// Content words, stemmed (no function words, no retraction words, no values).
    content: BTreeSet<String>,
    /// Numbers (digits, leading zeros dropped; number words as digits) and capitalised names,
    /// lowercased.
    values: BTreeSet<String>,
    /// Whether it retracts something.
    retracts: bool,
    /// Whether it names a replacement.
    replaces: bool,
    /// Whether it says it is in addition to something.
    adds: bool,
    /// Others it is about ("sister").
    others: BTreeSet<String>,
    /// The one-valued slots it fills.
    slots: BTreeSet<&'static str>,
    /// Whether it says the person dislikes something ("hates", "can't stand").
    dislikes: bool,
    /// Whether it says the person likes something.
    likes: bool,
    /// The text without its retraction words.
    stripped: String,
}

fn stem(stemmer: &Stemmer, word: &str) -> String {
    stemmer.stem(word).into_owned()
}

/// The digits of a numeric word: "07" → "7", "50mg" → "50", "£24.99" stays split by the word
/// rule ("24", "99").
fn number_of(word: &str) -> Option<String> {
    let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    Some(if trimmed.is_empty() {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    })
}

/// `text` with the thousands separators of numbers removed ("€1,200" → "€1200"), so a number
/// is one word.
fn joined_numbers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let between_digits = i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c == ',' && between_digits {
            continue;
        }
        out.push(c);
    }
    out
}

fn read(stemmer: &Stemmer, text: &str) -> Reading {
    let text = &joined_numbers(text);
    let mut r = Reading::default();
    let spans: Vec<(usize, usize)> = crate::text::spans(text).collect();
    let lower: Vec<String> = spans
        .iter()
        .map(|&(a, b)| text[a..b].to_lowercase())
        .collect();
    let contracted_not = lower
        .windows(2)
        .any(|w| w[1] == "t" && NEGATED_AUXILIARIES.contains(&w[0].as_str()));
    // "can't stand" dislikes; it does not retract.
    r.dislikes = lower.iter().any(|w| DISLIKING.contains(&w.as_str()))
        || lower
            .windows(3)
            .any(|w| w[0] == "can" && w[1] == "t" && w[2] == "stand");
    r.likes = lower.iter().any(|w| LIKING.contains(&w.as_str()));
    let pair = lower
        .windows(2)
        .any(|w| RETRACTING_PAIRS.contains(&(w[0].as_str(), w[1].as_str())));
    let single = lower.iter().any(|w| RETRACTING_WORDS.contains(&w.as_str()));
    r.retracts = contracted_not || pair || single;
    r.replaces = lower.iter().any(|w| REPLACING_WORDS.contains(&w.as_str()))
        || lower
            .windows(2)
            .any(|w| w[0] == "moved" && matches!(w[1].as_str(), "to" | "into"));
    r.adds = lower.iter().any(|w| ADDING_WORDS.contains(&w.as_str()));
    let mut kept = Vec::new();
    for (i, w) in lower.iter().enumerate() {
        let in_pair = |j: usize, k: usize| {
            lower
                .get(j)
                .zip(lower.get(k))
                .is_some_and(|(a, b)| RETRACTING_PAIRS.contains(&(a.as_str(), b.as_str())))
        };
        let retraction = RETRACTING_WORDS.contains(&w.as_str())
            || (w == "t" && contracted_not)
            || NEGATED_AUXILIARIES.contains(&w.as_str())
            || in_pair(i, i + 1)
            || (i > 0 && in_pair(i - 1, i));
        if retraction && r.retracts {
            continue;
        }
        kept.push(w.clone());
        let (start, end) = spans[i];
        let original = &text[start..end];
        if OTHERS.contains(&w.as_str()) {
            r.others.insert(w.clone());
        }
        if let Some((_, slot)) = ONE_VALUED.iter().find(|(word, _)| word == w) {
            r.slots.insert(slot);
        }
        if let Some(number) = number_of(w) {
            r.values.insert(number);
            continue;
        }
        if let Some((_, digits)) = NUMBER_WORDS.iter().find(|(name, _)| name == w) {
            r.values.insert((*digits).to_owned());
            continue;
        }
        let capitalised = original.chars().next().is_some_and(char::is_uppercase);
        if capitalised && i > 0 && !NOT_NAMES.contains(&original) {
            r.values.insert(stem(stemmer, w));
            continue;
        }
        if is_stopword(w) || FILLER.contains(&w.as_str()) || w.chars().count() < 2 {
            continue;
        }
        r.content.insert(stem(stemmer, w));
    }
    r.stripped = kept.join(" ");
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
pub struct RuleDecider<E> {
    embedder: E,
    thresholds: RuleThresholds,
    stemmer: Stemmer,
    /// The stems of the one-valued slots' words.
    slot_stems: BTreeSet<String>,
}

impl<E: std::fmt::Debug> std::fmt::Debug for RuleDecider<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleDecider")
            .field("embedder", &self.embedder)
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

impl<E: Embedder> RuleDecider<E> {
    /// A decider using `embedder` (the store's encoder) with `thresholds`.
    pub fn new(embedder: E, thresholds: RuleThresholds) -> RuleDecider<E> {
        let stemmer = Stemmer::create(Algorithm::English);
        let slot_stems = ONE_VALUED
            .iter()
            .map(|(word, _)| stem(&stemmer, word))
            .collect();
        RuleDecider {
            embedder,
            thresholds,
            stemmer,
            slot_stems,
        }
    }

    fn decide_with(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision> {
        if candidates.is_empty() {
            return Ok(Decision::add("nothing similar is stored"));
        }
        let new = read(&self.stemmer, fact);
        let old: Vec<Reading> = candidates
            .iter()
            .map(|c| read(&self.stemmer, &c.text))
            .collect();
        let mut texts: Vec<&str> = vec![fact, &new.stripped];
        for (c, r) in candidates.iter().zip(&old) {
            texts.push(&c.text);
            texts.push(&r.stripped);
        }
        let vectors = self.embedder.embed(&texts)?;
        let vector = |i: usize| vectors.get(i).map(Vec::as_slice).unwrap_or(&[]);
        let t = &self.thresholds;
        let shared = |o: &Reading| new.content.intersection(&o.content).count();

        let (best, score) = (0..candidates.len())
            .map(|i| (i, cosine(vector(0), vector(2 + 2 * i))))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));

        // A dislike of what is stored as liked retracts it; a dislike stored is said again.
        if new.dislikes && !new.retracts {
            if old[best].dislikes && score >= t.refinement {
                return Ok(Decision::on(
                    Operation::None,
                    best,
                    format!("the same dislike is stored (similarity {score:.2})"),
                ));
            }
            if old[best].likes && score >= t.same_subject {
                return Ok(Decision::on(
                    Operation::Delete,
                    best,
                    "a dislike of what is stored as liked",
                ));
            }
        }
        // 1. A retraction retracts the memory its content matches best; saying a stored
        //    retraction again is nothing new.
        if new.retracts && !new.replaces {
            if old[best].retracts && score >= t.refinement {
                return Ok(Decision::on(
                    Operation::None,
                    best,
                    format!("the same retraction is stored (similarity {score:.2})"),
                ));
            }
            let target = (0..candidates.len())
                .filter(|&i| !old[i].retracts)
                .map(|i| (i, cosine(vector(1), vector(3 + 2 * i))))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((i, similarity)) = target {
                let overlap = shared(&old[i]) + new.values.intersection(&old[i].values).count();
                if similarity >= t.retract || (similarity >= t.weak && overlap >= 1) {
                    return Ok(Decision::on(
                        Operation::Delete,
                        i,
                        format!(
                            "retracts it (similarity {similarity:.2} without the retraction words)"
                        ),
                    ));
                }
            }
            return Ok(Decision::add("a retraction of nothing stored"));
        }

        let o = &old[best];
        let new_values: BTreeSet<&String> = new.values.difference(&o.values).collect();
        let old_values: BTreeSet<&String> = o.values.difference(&new.values).collect();
        // Slot words themselves ("phone" / "mobile", "GP" / "doctor") name the slot, not its
        // filler: they are not new or lost content.
        let slot_word = |w: &&String| !self.slot_stems.contains(*w);
        let new_words: BTreeSet<&String> = new
            .content
            .difference(&o.content)
            .filter(slot_word)
            .collect();
        let old_words: BTreeSet<&String> = o
            .content
            .difference(&new.content)
            .filter(slot_word)
            .collect();
        let overlap = shared(o);
        let same_slot = new.slots.intersection(&o.slots).next().is_some();
        // 2. Another subject: too far in meaning, unless it shares words and changes a value.
        let changes = (!new_values.is_empty() && !old_values.is_empty()) || new.replaces;
        let near = score >= t.same_subject || (score >= t.weak && overlap >= 1 && changes);
        if !near {
            return Ok(Decision::add(format!(
                "nothing stored is about this (best similarity {score:.2})"
            )));
        }
        if new.others != o.others {
            return Ok(Decision::add("about someone else than the stored memory"));
        }
        // A stored retraction taken back ("doesn't drink coffee" → "drinks coffee again").
        if o.retracts && !new.retracts && cosine(vector(0), vector(3 + 2 * best)) >= t.retract {
            return Ok(Decision::on(
                Operation::Update,
                best,
                "takes back a stored retraction",
            ));
        }
        // In addition to what is stored, not instead of it.
        if new.adds && score < t.paraphrase {
            return Ok(Decision::add("in addition to what is stored"));
        }
        // 3. A change: a replacement named, a changed value, or a one-valued slot refilled.
        if new.replaces {
            return Ok(Decision::on(
                Operation::Update,
                best,
                "names what replaced it",
            ));
        }
        if !new_values.is_empty() && !old_values.is_empty() {
            return Ok(Decision::on(
                Operation::Update,
                best,
                format!("changes {} to {}", list(&old_values), list(&new_values)),
            ));
        }
        if same_slot && !new_words.is_empty() && !old_words.is_empty() && score >= t.refinement {
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
        // 4. Nothing new: no value the memory lacks, and no new word or a paraphrase.
        if new_values.is_empty() && (new_words.is_empty() || score >= t.paraphrase) {
            return Ok(Decision::on(
                Operation::None,
                best,
                format!("adds nothing to it (similarity {score:.2})"),
            ));
        }
        // 5. A refinement: keeps most of what is stored and adds to it.
        let kept = o.content.len().saturating_sub(old_words.len());
        let keeps = old_values.is_empty() && 2 * kept >= o.content.len();
        if keeps && score >= t.weak {
            return Ok(Decision::on(
                Operation::Update,
                best,
                format!(
                    "adds {}",
                    list(&new_words.union(&new_values).copied().collect())
                ),
            ));
        }
        if new_values.is_empty() && !old_values.is_empty() && score >= t.refinement {
            return Ok(Decision::on(Operation::None, best, "says less than it"));
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
}
