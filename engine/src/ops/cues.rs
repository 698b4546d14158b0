//! Words that say how a fact stands to what is stored, not what the fact is: a correction
//! ("scratch that, …", "actually …", "…, not Thursday") and a retraction by reference
//! ("forget about the Toyota", "ignore what I said about the gym").
//!
//! The decider reads them to choose the operation; the memory a fact becomes is the fact
//! without them ([`memory_text`]), so "Scratch that, the dentist is on Friday, not Thursday"
//! is stored as "The dentist is on Friday".

/// Leading words that correct what was said before (longest first).
const CORRECTION_OPENERS: &[&[&str]] = &[
    &["scratch", "that"],
    &["no", "wait"],
    &["sorry", "i", "meant"],
    &["sorry", "i", "mean"],
    &["i", "meant"],
    &["i", "mean"],
    &["correction"],
    &["actually"],
    &["wait"],
    &["oops"],
    &["sorry"],
];

/// Leading words that retract a memory by naming it (longest first). What follows names the
/// memory ("the Toyota", "the gym").
const REFERENCE_OPENERS: &[&[&str]] = &[
    &["forget", "what", "i", "said", "about"],
    &["forget", "what", "i", "told", "you", "about"],
    &["ignore", "what", "i", "said", "about"],
    &["ignore", "what", "i", "told", "you", "about"],
    &["disregard", "what", "i", "said", "about"],
    &["never", "mind", "what", "i", "said", "about"],
    &["never", "mind", "about"],
    &["please", "forget", "about"],
    &["please", "forget"],
    &["forget", "about"],
    &["forget", "the", "thing", "about"],
    &["ignore", "the", "thing", "about"],
    &["ignore", "the", "bit", "about"],
    &["delete", "the", "memory", "about"],
    &["delete", "what", "you", "know", "about"],
    &["remove", "the", "memory", "about"],
    &["stop", "remembering"],
    &["forget"],
    &["disregard"],
    &["never", "mind"],
];

/// How a fact refers to what is stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Cues {
    /// It corrects something said before ("scratch that", "actually", "…, not Thursday").
    pub(crate) corrects: bool,
    /// It retracts the memory it names ("forget about the Toyota"): the words that name it.
    pub(crate) retracts_reference: Option<String>,
    /// The value a correction says it replaces (", not Thursday" → "Thursday").
    pub(crate) replaced: Option<String>,
    /// The fact without its cue words.
    pub(crate) rest: String,
}

/// The lowercased words of `text` with their byte ranges (an apostrophe inside a word keeps it
/// one word): the extractor's reading of words.
fn spans(text: &str) -> Vec<(String, usize, usize)> {
    super::extract::words_of(text)
        .into_iter()
        .map(|w| (w.lower, w.start, w.end))
        .collect()
}

/// The longest opener of `openers` that `words` start with (leaving at least one word after).
fn opener<'a>(words: &[(String, usize, usize)], openers: &[&'a [&'a str]]) -> Option<usize> {
    openers
        .iter()
        .filter(|o| {
            words.len() > o.len() && o.iter().zip(words).all(|(a, (w, _, _))| *a == w.as_str())
        })
        .map(|o| o.len())
        .max()
}

/// Reads the cues of `fact`.
pub(crate) fn read(fact: &str) -> Cues {
    let mut text = fact.trim();
    let mut cues = Cues::default();
    // Cues may stack: "Actually, forget about the Toyota".
    loop {
        let words = spans(text);
        if let Some(n) = opener(&words, CORRECTION_OPENERS) {
            cues.corrects = true;
            text = text[words[n].1..].trim();
            continue;
        }
        if let Some(n) = opener(&words, REFERENCE_OPENERS) {
            let named = text[words[n].1..].trim();
            // "forget it" names nothing a memory could be found by.
            if spans(named)
                .iter()
                .any(|(w, _, _)| !memdb_text::is_stopword(w))
            {
                cues.retracts_reference = Some(named.trim_end_matches(['.', '!']).to_owned());
                text = named;
            }
        }
        break;
    }
    // "…, not Thursday" / "…, not the 21st": a correction naming the value it replaces.
    if let Some((cut, replaced)) = trailing_not(text) {
        cues.corrects = true;
        cues.replaced = Some(replaced.to_owned());
        text = text[..cut].trim_end_matches([',', ' ', ';', '-', '—']);
    }
    cues.rest = text.to_owned();
    cues
}

/// Where a trailing ", not X" starts (a comma or dash, then "not" and at most four words to the
/// end), and X.
fn trailing_not(text: &str) -> Option<(usize, &str)> {
    let words = spans(text);
    let at = words.iter().rposition(|(w, _, _)| w == "not")?;
    let tail = words.len() - at - 1;
    let before = text[..words[at].1].trim_end();
    let mark = before
        .chars()
        .next_back()
        .filter(|c| [',', '—', '-'].contains(c))?;
    let replaced = text[words[at].2..].trim().trim_end_matches(['.', '!']);
    (1..=4)
        .contains(&tail)
        .then(|| (before.len() - mark.len_utf8(), replaced))
}

/// The memory `fact` becomes: the fact without its cue words, its first letter upper-case.
pub(crate) fn memory_text(fact: &str) -> String {
    let cues = read(fact);
    let rest = cues
        .rest
        .trim()
        .trim_start_matches([',', ':', '-', '—'])
        .trim();
    if rest.is_empty() {
        return fact.trim().to_owned();
    }
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => fact.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_and_references_are_read_and_cut_from_the_memory() {
        let c = read("Scratch that, the dentist is on Friday, not Thursday");
        assert!(c.corrects && c.retracts_reference.is_none(), "{c:?}");
        assert_eq!(c.replaced.as_deref(), Some("Thursday"));
        assert_eq!(
            memory_text("Scratch that, the dentist is on Friday, not Thursday"),
            "The dentist is on Friday"
        );
        let c = read("Forget about the Toyota");
        assert_eq!(c.retracts_reference.as_deref(), Some("the Toyota"));
        let c = read("Actually ignore what I told you about the promotion");
        assert!(c.corrects);
        assert_eq!(c.retracts_reference.as_deref(), Some("the promotion"));
        assert_eq!(
            memory_text("Actually my birthday is on the 12th, not the 21st"),
            "My birthday is on the 12th"
        );
        // Not cues: a plain negation, a name that starts like one.
        assert!(!read("I'm not vegetarian").corrects);
        assert_eq!(
            memory_text("The party is on the 3rd — not the 4th"),
            "The party is on the 3rd"
        );
        assert_eq!(read("Forget it").retracts_reference, None);
        assert_eq!(memory_text("I like tea"), "I like tea");
    }
}
