//! What an UPDATE keeps of the memory it changes (Mem0's UPDATE writes the merged memory, not
//! the new fact alone).
//!
//! A memory told in one breath often holds several facts: "I make cooking videos on TikTok,
//! @dapurputri, around 120k followers". "Hit 250k followers" changes one of them; replacing the
//! whole text with the new fact would lose the others (what the videos are, the handle). So an
//! UPDATE of a memory of several clauses replaces the clause the new fact is closest to in
//! meaning (the encoder's cosine) and keeps the others before the fact: "I make cooking videos
//! on TikTok, @dapurputri; Hit 250k followers". The old text stays in the memory's history.
//!
//! What is not kept: a memory whose one-valued slot the fact fills again (home, work, phone…:
//! "Living in Soweto, Orlando West" moved to Midrand keeps nothing of Soweto); a clause holding
//! a number or code when the fact holds one (the new one replaces it: "SSID Pivnice, password
//! Kozel11" changed to "cmelak2023" keeps the SSID, not the old password); a clause whose
//! content words the fact all says again.
//!
//! Invariants: a memory of one clause is replaced whole (as before); the merged text is never
//! empty and always ends with the fact as stored.

use crate::Result;
use crate::graph::Embedder;

/// The text and vector an UPDATE stores in place of `old`, when `old` holds clauses the new
/// fact does not touch; `None` when the fact replaces it whole. `fact_vector` is the fact's
/// embedding (the cosines are taken against it).
pub(super) fn merged(
    old: &str,
    fact: &str,
    fact_vector: &[f32],
    embedder: &dyn Embedder,
) -> Result<Option<Merged>> {
    let parts = clauses(old);
    if parts.len() < 2 || super::rules::share_exclusive_slot(fact, old) {
        return Ok(None);
    }
    let fact_words: std::collections::HashSet<String> = content_words(fact).collect();
    let fact_has_number = has_number(fact);
    let vectors = crate::graph::embed_checked(embedder, &parts)?;
    let closeness: Vec<f32> = vectors.iter().map(|v| dot(v, fact_vector)).collect();
    let replaced = closeness
        .iter()
        .enumerate()
        .fold(
            (0, f32::MIN),
            |best, (i, &c)| if c > best.1 { (i, c) } else { best },
        )
        .0;
    let kept: Vec<&str> = parts
        .iter()
        .enumerate()
        .filter(|&(i, part)| {
            // A clause of nothing but words the fact says again adds nothing to it.
            i != replaced
                && !(fact_has_number && has_number(part))
                && content_words(part).any(|w| !fact_words.contains(&w))
        })
        .map(|(_, part)| *part)
        .collect();
    if kept.is_empty() {
        return Ok(None);
    }
    let text = format!("{}; {fact}", kept.join(", "));
    let vector = crate::graph::embed_checked(embedder, &[text.as_str()])?
        .into_iter()
        .next()
        .unwrap_or_default();
    Ok(Some(Merged {
        text,
        kept: kept.iter().map(|k| (*k).to_owned()).collect(),
        vector,
    }))
}

/// An UPDATE's merged memory.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Merged {
    /// The clauses kept, then the fact.
    pub(super) text: String,
    /// The clauses of the old memory kept.
    pub(super) kept: Vec<String>,
    /// The embedding of `text`.
    pub(super) vector: Vec<f32>,
}

/// The clauses of a memory's text: split at `,`, `;` and `:` (not inside a number such as
/// "1,500" or "6:30") and at a dash between spaces; trimmed, empty ones dropped.
fn clauses(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    for (k, &(at, c)) in chars.iter().enumerate() {
        let before = k.checked_sub(1).map(|b| chars[b].1);
        let after = chars.get(k + 1).map(|a| a.1);
        let digits_around =
            before.is_some_and(|b| b.is_ascii_digit()) && after.is_some_and(|a| a.is_ascii_digit());
        let splits = match c {
            ',' | ';' | ':' => !digits_around,
            '-' | '–' | '—' => before == Some(' ') && after == Some(' '),
            _ => false,
        };
        if splits {
            out.push(&text[start..at]);
            start = at + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(|c| {
            c.trim()
                .trim_matches(|c: char| c == '\'' || c == '"')
                .trim()
        })
        .filter(|c| content_words(c).next().is_some())
        .collect()
}

/// Whether a word of `text` holds a digit (a number, a code, a password, a phone number).
fn has_number(text: &str) -> bool {
    memdb_text::words(text).any(|w| w.chars().any(|c| c.is_ascii_digit()))
}

/// The words of `text` that are not stopwords.
fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    memdb_text::words(text).filter(|w| !memdb_text::is_stopword(w))
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One dimension per word of a small vocabulary: the cosine counts shared words.
    struct Words;

    const VOCABULARY: &[&str] = &["videos", "tiktok", "followers", "handle", "porto", "lisbon"];

    impl Embedder for Words {
        fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
            Ok(texts
                .iter()
                .map(|t| {
                    let lower = t.to_lowercase();
                    let v: Vec<f32> = VOCABULARY
                        .iter()
                        .map(|w| if lower.contains(w) { 1.0 } else { 0.0 })
                        .collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    v.iter().map(|x| x / norm).collect()
                })
                .collect())
        }
    }

    fn merge(old: &str, fact: &str) -> Option<String> {
        let vector = Words.embed(&[fact]).unwrap().remove(0);
        merged(old, fact, &vector, &Words).unwrap().map(|m| m.text)
    }

    #[test]
    fn the_clause_the_fact_changes_is_replaced_and_the_others_kept() {
        assert_eq!(
            merge(
                "I make cooking videos on TikTok, @dapurputri, around 120k followers",
                "Hit 250k followers"
            )
            .as_deref(),
            Some("I make cooking videos on TikTok, @dapurputri; Hit 250k followers")
        );
    }

    #[test]
    fn a_new_number_replaces_the_old_ones_and_a_slot_the_whole_memory() {
        assert_eq!(
            merge(
                "Cabin wifi: handle bluefjord, password Kozel11",
                "The handle password is now cmelak2023"
            )
            .as_deref(),
            Some("Cabin wifi; The handle password is now cmelak2023")
        );
        // Home is a one-valued slot: the move replaces the memory whole.
        assert_eq!(
            merge(
                "I live in Lisbon, near the river, with two cats",
                "I live in Porto now"
            ),
            None
        );
    }

    #[test]
    fn a_memory_of_one_clause_is_replaced_whole() {
        assert_eq!(merge("I live in Lisbon", "I live in Porto"), None);
        // Numbers keep their commas and colons.
        assert_eq!(merge("I earn 1,500 a month", "I earn 2,000 a month"), None);
        assert_eq!(
            merge("Gym at 6:30 on Mondays", "Gym at 7:00 on Mondays"),
            None
        );
    }

    #[test]
    fn a_clause_the_fact_says_again_is_not_kept() {
        // The fact is closest to both clauses alike: the first is replaced, and the second
        // says nothing the fact does not ("on" is a stopword).
        assert_eq!(
            merge("I post videos, on TikTok", "I post TikTok videos daily"),
            None
        );
        // A clause of other words is kept.
        assert_eq!(
            merge(
                "I post videos, on TikTok, every Sunday",
                "I post TikTok videos daily"
            )
            .as_deref(),
            Some("every Sunday; I post TikTok videos daily")
        );
    }

    #[test]
    fn clauses_split_at_punctuation_and_spaced_dashes_only() {
        assert_eq!(
            clauses("Three kids: Lily 9, Max 6 - Rosie 2; well-known"),
            ["Three kids", "Lily 9", "Max 6", "Rosie 2", "well-known"]
        );
        assert_eq!(
            clauses("Shop is open: 'Awana Rosa'"),
            ["Shop is open", "Awana Rosa"]
        );
        assert_eq!(clauses(", ; :"), Vec::<&str>::new());
        // Multi-byte text and punctuation at either end split on character boundaries.
        assert_eq!(
            clauses("—Café – Lisboa: 1,5 €,"),
            ["—Café", "Lisboa", "1,5 €"]
        );
    }
}
