//! A fact compared word by word with a memory (`Comparison`): what it adds, drops and changes.

use super::*;

/// How a new fact's words and values stand to a stored memory's.
#[derive(Debug, Default)]
pub(in crate::ops) struct Comparison {
    /// Content words of the fact the memory lacks.
    pub(in crate::ops) new_words: BTreeSet<String>,
    /// Content words of the memory the fact lacks.
    pub(in crate::ops) old_words: BTreeSet<String>,
    /// Values of the fact the memory lacks.
    pub(in crate::ops) new_values: BTreeSet<String>,
    /// Values of the memory the fact lacks.
    pub(in crate::ops) old_values: BTreeSet<String>,
    /// Content words the two share (a word and its synonym, clipping or abbreviation count),
    /// periods ("a month") aside.
    pub(in crate::ops) shared: usize,
    /// Values the two share.
    pub(in crate::ops) shared_values: usize,
}

/// Compares a fact with a memory: exact keys first, then clippings and abbreviations of the
/// keys left over.
pub(super) fn compare(new: &Reading, old: &Reading, periods: &BTreeSet<String>) -> Comparison {
    let mut c = Comparison::default();
    let mut matched_new: BTreeSet<&str> = BTreeSet::new();
    let mut matched_old: BTreeSet<&str> = BTreeSet::new();
    for token in &new.tokens {
        if old.has(&token.key) {
            matched_new.insert(&token.key);
            matched_old.insert(&token.key);
        }
    }
    let left = |tokens: &[Token], matched: &BTreeSet<&str>| -> Vec<Token> {
        tokens
            .iter()
            .filter(|t| !matched.contains(t.key.as_str()))
            .cloned()
            .collect()
    };
    let (new_left, old_left) = (
        left(&new.tokens, &matched_new),
        left(&old.tokens, &matched_old),
    );
    let mut soft_new: BTreeSet<String> = BTreeSet::new();
    let mut soft_old: BTreeSet<String> = BTreeSet::new();
    let mut soft = 0;
    for token in &new_left {
        if soft_new.contains(&token.key) {
            continue;
        }
        let found: Option<Vec<&Token>> = if token.abbreviation {
            expansion(token, &old_left)
        } else {
            old_left
                .iter()
                .find(|o| !soft_old.contains(&o.key) && clipped(&token.key, &o.key))
                .map(|o| vec![o])
        };
        if let Some(found) = found {
            soft_new.insert(token.key.clone());
            soft_old.extend(found.iter().map(|t| t.key.clone()));
            soft += 1;
        }
    }
    for token in old_left.iter().filter(|t| t.abbreviation) {
        if soft_old.contains(&token.key) {
            continue;
        }
        if let Some(found) = expansion(token, &new_left) {
            soft_old.insert(token.key.clone());
            soft_new.extend(found.iter().map(|t| t.key.clone()));
            soft += 1;
        }
    }
    let unmatched = |set: &BTreeSet<String>, other: &Reading, soft: &BTreeSet<String>| {
        set.iter()
            .filter(|k| !other.has(k) && !soft.contains(*k))
            .cloned()
            .collect::<BTreeSet<String>>()
    };
    c.new_words = unmatched(&new.content, old, &soft_new);
    c.old_words = unmatched(&old.content, new, &soft_old);
    c.new_values = unmatched(&new.values, old, &soft_new);
    c.old_values = unmatched(&old.values, new, &soft_old);
    c.shared = new
        .content
        .iter()
        .filter(|k| old.has(k) && !periods.contains(*k))
        .count()
        + soft;
    c.shared_values = new.values.iter().filter(|k| old.has(k)).count();
    c
}

pub(super) fn list(set: &BTreeSet<String>) -> String {
    set.iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
