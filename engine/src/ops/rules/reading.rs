//! A text read into content words and values (`Reading`): stems through the general lexicon,
//! numbers in words and digits, ISO dates, names, preferences, abbreviations and clipped words.

use super::*;

/// One content word or value of a text, in the order of the text.
#[derive(Debug, Clone)]
pub(in crate::ops) struct Token {
    /// What it compares by: a stem, a number's digits, or an abbreviation lowercased.
    pub(in crate::ops) key: String,
    /// Whether it is written as an abbreviation ("F1", "VW", "BSc"): its letters are initials.
    pub(in crate::ops) abbreviation: bool,
    /// Its position among the text's words.
    pub(in crate::ops) at: usize,
}

/// What the rules read in a text.
#[derive(Debug, Default)]
pub(in crate::ops) struct Reading {
    /// Content words, stemmed and read through the lexicon (no function words, no retraction
    /// words, no values).
    pub(in crate::ops) content: BTreeSet<String>,
    /// Numbers (digits, leading zeros dropped; number words as digits) and capitalised names,
    /// lowercased.
    pub(in crate::ops) values: BTreeSet<String>,
    /// The content words and values in order.
    pub(in crate::ops) tokens: Vec<Token>,
    /// Whether it retracts something.
    pub(in crate::ops) retracts: bool,
    /// Whether it names a replacement.
    pub(in crate::ops) replaces: bool,
    /// Whether it says it is in addition to something.
    pub(in crate::ops) adds: bool,
    /// Whether a word hints it stands beside something stored ([`ADDITION_HINTS`]).
    pub(in crate::ops) addition_hint: bool,
    /// Whether a word hints it changes something ([`CHANGE_HINTS`]).
    pub(in crate::ops) change_hint: bool,
    /// Others it is about ("sister").
    pub(in crate::ops) others: BTreeSet<String>,
    /// The owner named by a leading possessive ("Rex" of "Rex's vet is …"), when not one of
    /// the others: the fact is about something of theirs.
    pub(in crate::ops) possessor: Option<String>,
    /// The one-valued slots it fills.
    pub(in crate::ops) slots: BTreeSet<&'static str>,
    /// The word qualifying a slot's word ("work" in "work email"), by slot.
    pub(in crate::ops) qualifiers: BTreeMap<&'static str, String>,
    /// Whether it says the person dislikes something ("hates", "can't stand", "doesn't like").
    pub(in crate::ops) dislikes: bool,
    /// Whether it says the person likes something.
    pub(in crate::ops) likes: bool,
    /// A preference of one thing over another ("prefers tea over coffee"): (preferred, other).
    pub(in crate::ops) preference: Option<(BTreeSet<String>, BTreeSet<String>)>,
    /// The text without its retraction words.
    pub(in crate::ops) stripped: String,
    /// Its words as written (lowercased), by position: what a token at `at` was.
    pub(in crate::ops) words: Vec<String>,
}

impl Reading {
    /// The words of the tokens whose keys are in `keys`, as written, in order.
    pub(super) fn words_of(&self, keys: &BTreeSet<String>) -> String {
        self.tokens
            .iter()
            .filter(|t| keys.contains(&t.key))
            .filter_map(|t| self.words.get(t.at).map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Reading {
    /// Whether `key` is one of its content words or values.
    pub(super) fn has(&self, key: &str) -> bool {
        self.content.contains(key) || self.values.contains(key)
    }
}

/// Whether `fact` and `old` fill one of the same one-valued slots ([`EXCLUSIVE_SLOTS`]: home,
/// work, phone…): a new filler of such a slot replaces the memory whole.
pub(in crate::ops) fn share_exclusive_slot(fact: &str, old: &str) -> bool {
    let stemmer = Stemmer::create(Algorithm::English);
    let (fact, old) = (read(&stemmer, fact), read(&stemmer, old));
    fact.slots
        .intersection(&old.slots)
        .any(|slot| EXCLUSIVE_SLOTS.contains(slot))
}

pub(super) fn stem(stemmer: &Stemmer, word: &str) -> String {
    stemmer.stem(word).into_owned()
}

/// The number a numeric word starts with, and what follows its digits: "07" → (7, ""), "50mg"
/// → (50, "mg"), "38k" → (38, "k"). "£24.99" is two words by the word rule ("24", "99").
pub(super) fn number_of(word: &str) -> Option<(u64, &str)> {
    let end = word
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(word.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    // More digits than a u64 holds (a long account number): the last 18 still tell it apart.
    let digits = &word[end.saturating_sub(18)..end];
    digits.parse().ok().map(|n| (n, &word[end..]))
}

/// `text` with the thousands separators of numbers removed ("€1,200" → "€1200"), so a number
/// is one word.
pub(super) fn joined_numbers(text: &str) -> String {
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

/// `text` with ISO dates spelled as "9 August 2024", so "2024-08-09" and "9 August 2024" name
/// the same day, month and year.
pub(super) fn spelled_iso_dates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    while i + 10 <= bytes.len() {
        let window = &bytes[i..i + 10];
        let shaped = window.iter().enumerate().all(|(k, b)| match k {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        });
        let alone = (i == 0 || !bytes[i - 1].is_ascii_digit())
            && bytes.get(i + 10).is_none_or(|b| !b.is_ascii_digit());
        let month = text
            .get(i + 5..i + 7)
            .and_then(|m| m.parse::<usize>().ok())
            .and_then(|m| m.checked_sub(1))
            .and_then(|m| MONTHS.get(m));
        match (
            shaped && alone,
            month,
            text.get(i + 8..i + 10),
            text.get(i..i + 4),
        ) {
            (true, Some(month), Some(day), Some(year)) => {
                out.push_str(&text[copied..i]);
                out.push_str(&format!("{day} {month} {year}"));
                i += 10;
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether `word` is written as an abbreviation: a capital, then more capitals or digits
/// ("F1", "VW", "BSc", "UK"), five characters at most.
pub(super) fn is_abbreviation(word: &str) -> bool {
    let mut chars = word.chars();
    let starts_capital = chars.next().is_some_and(char::is_uppercase);
    let count = word.chars().count();
    starts_capital
        && (2..=5).contains(&count)
        && chars.any(|c| c.is_uppercase() || c.is_ascii_digit())
        && word.chars().all(char::is_alphanumeric)
}

/// The value of the number words starting at `start` ("twelve hundred" → 1200, "twenty five"
/// → 25, "two thousand and fifty" → 2050) and the number of words read.
pub(super) fn number_words_at(lower: &[String], start: usize) -> Option<(u64, usize)> {
    let unit = |w: &str| NUMBER_WORDS.iter().find(|(n, _)| *n == w).map(|(_, v)| *v);
    let multiplier = |w: &str| MULTIPLIERS.iter().find(|(n, _)| *n == w).map(|(_, v)| *v);
    let (mut total, mut current, mut read) = (0u64, 0u64, 0usize);
    let mut i = start;
    while let Some(w) = lower.get(i) {
        if let Some(v) = unit(w) {
            current = current.saturating_add(v);
        } else if let Some(m) = multiplier(w) {
            if m == 100 {
                current = current.max(1).saturating_mul(m);
            } else {
                total = total.saturating_add(current.max(1).saturating_mul(m));
                current = 0;
            }
        } else if w == "and"
            && read > 0
            && lower
                .get(i + 1)
                .is_some_and(|n| unit(n).is_some() || multiplier(n).is_some())
        {
            // "two hundred and fifty": the "and" joins one number.
        } else {
            break;
        }
        read += 1;
        i += 1;
    }
    (read > 0).then_some((total.saturating_add(current), i - start))
}

pub(super) fn read(stemmer: &Stemmer, text: &str) -> Reading {
    let text = &spelled_iso_dates(&joined_numbers(text));
    let mut r = Reading::default();
    let spans: Vec<(usize, usize)> = memdb_text::spans(text).collect();
    let lower: Vec<String> = spans
        .iter()
        .map(|&(a, b)| fold(&text[a..b].to_lowercase()))
        .collect();
    let contracted_not = lower
        .windows(2)
        .any(|w| w[1] == "t" && NEGATED_AUXILIARIES.contains(&w[0].as_str()));
    let negated = contracted_not || lower.iter().any(|w| NEGATIONS.contains(&w.as_str()));
    // "doesn't like" and "can't stand" dislike; "hates" too.
    let negated_liking = lower.windows(3).any(|w| {
        let negation = NEGATIONS.contains(&w[0].as_str()) || w[0] == "t";
        negation && (LIKING.contains(&w[1].as_str()) || LIKING.contains(&w[2].as_str()))
    }) || lower.windows(2).any(|w| {
        (NEGATIONS.contains(&w[0].as_str()) || w[0] == "t") && LIKING.contains(&w[1].as_str())
    });
    r.dislikes = lower.iter().any(|w| DISLIKING.contains(&w.as_str()))
        || negated_liking
        || lower
            .windows(3)
            .any(|w| w[0] == "can" && w[1] == "t" && w[2] == "stand");
    r.likes = !negated_liking && lower.iter().any(|w| LIKING.contains(&w.as_str()));
    let pair = lower
        .windows(2)
        .any(|w| RETRACTING_PAIRS.contains(&(w[0].as_str(), w[1].as_str())));
    let ending = lower
        .iter()
        .any(|w| RETRACTING_WORDS.contains(&w.as_str()) && !NEGATIONS.contains(&w.as_str()));
    // "doesn't expire until 2034" dates a fact; a negation with "until" retracts nothing.
    let dated = lower.iter().any(|w| w == "until" || w == "till");
    r.retracts = pair || ending || (negated && !dated);
    r.replaces = lower.iter().enumerate().any(|(i, w)| {
        let out = lower
            .get(i + 1)
            .is_some_and(|next| next == "out" || next == "away");
        REPLACING_WORDS.contains(&w.as_str()) && !(w == "moved" && out)
    });
    r.adds = lower.iter().any(|w| ADDING_WORDS.contains(&w.as_str()));
    r.addition_hint = lower.iter().any(|w| ADDITION_HINTS.contains(&w.as_str()));
    r.change_hint = lower.iter().any(|w| CHANGE_HINTS.contains(&w.as_str()));
    // A leading possessive names whose the fact is: "Rex's vet" is about Rex's vet, not Rex.
    let leading_possessive = spans.len() > 1
        && lower[1] == "s"
        && text[spans[0].1..spans[1].0]
            .chars()
            .all(|c| c == '\'' || c == '’')
        && spans[0].1 < spans[1].0
        && lower[0] != "user"
        && !OTHERS.contains(&synonym(&lower[0]));
    if leading_possessive {
        r.possessor = Some(stem(stemmer, synonym(&lower[0])));
    }
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lower.len() {
        let w = lower[i].as_str();
        let in_pair = |j: usize, k: usize| {
            lower
                .get(j)
                .zip(lower.get(k))
                .is_some_and(|(a, b)| RETRACTING_PAIRS.contains(&(a.as_str(), b.as_str())))
        };
        let retraction = RETRACTING_WORDS.contains(&w)
            || (w == "t" && contracted_not)
            || NEGATED_AUXILIARIES.contains(&w)
            || in_pair(i, i + 1)
            || (i > 0 && in_pair(i - 1, i));
        if retraction && r.retracts {
            i += 1;
            continue;
        }
        kept.push(lower[i].clone());
        let (start, end) = spans[i];
        let original = &text[start..end];
        if OTHERS.contains(&w) || OTHERS.contains(&synonym(w)) {
            r.others.insert(synonym(w).to_owned());
        }
        let phrase = lower.get(i + 1).and_then(|next| {
            PHRASES
                .iter()
                .find(|(a, b, _)| *a == w && b == next)
                .map(|(_, _, read_as)| *read_as)
        });
        let slot_word = phrase.unwrap_or(w);
        if let Some((_, slot)) = ONE_VALUED.iter().find(|(word, _)| *word == slot_word) {
            r.slots.insert(slot);
            // The content word just before a slot's word qualifies it ("work email").
            let before = r.tokens.last().filter(|t| t.at + 1 == i && !t.abbreviation);
            let same_slot = |t: &&Token| {
                ONE_VALUED
                    .iter()
                    .any(|(word, s)| s == slot && stem(stemmer, synonym(word)) == t.key)
            };
            if let Some(token) = before.filter(|t| !same_slot(t)) {
                r.qualifiers.insert(slot, token.key.clone());
            }
        }
        let at = i;
        let push = |r: &mut Reading, key: String, value: bool, abbreviation: bool| {
            if value {
                r.values.insert(key.clone());
            } else {
                r.content.insert(key.clone());
            }
            r.tokens.push(Token {
                key,
                abbreviation,
                at,
            });
        };
        if let Some(read_as) = phrase {
            push(&mut r, stem(stemmer, read_as), false, false);
            if let Some(next) = lower.get(i + 1) {
                kept.push(next.clone());
            }
            i += 2;
            continue;
        }
        if let Some((mut number, rest)) = number_of(w) {
            let mut read_words = 1;
            if rest == "k" {
                number = number.saturating_mul(1_000);
            }
            if let Some((_, m)) = lower
                .get(i + 1)
                .and_then(|next| MULTIPLIERS.iter().find(|(n, _)| n == next))
            {
                number = number.saturating_mul(*m);
                read_words = 2;
            }
            // "2pm" and "2:30 pm" are 14 o'clock; the hour is the word before ":30pm".
            let pm = rest == "pm" || lower.get(i + 1).is_some_and(|n| n == "pm");
            let after_colon = start > 0 && text[..start].ends_with(':');
            if pm && after_colon {
                let hour = r.tokens.last().and_then(|t| t.key.parse::<u64>().ok());
                if let Some(hour) = hour.filter(|h| *h < 12) {
                    r.values.remove(&hour.to_string());
                    if let Some(last) = r.tokens.last_mut() {
                        last.key = (hour + 12).to_string();
                    }
                    r.values.insert((hour + 12).to_string());
                }
            } else if pm && number < 12 {
                number += 12;
            }
            push(&mut r, number.to_string(), true, false);
            i += read_words;
            continue;
        }
        if let Some((number, read_words)) = number_words_at(&lower, i) {
            push(&mut r, number.to_string(), true, false);
            for k in 1..read_words {
                if let Some(next) = lower.get(i + k) {
                    kept.push(next.clone());
                }
            }
            i += read_words;
            continue;
        }
        i += 1;
        let skipped = is_stopword(w) && !is_listed(w)
            || FILLER.contains(&w)
            || LIGHT_VERBS.contains(&w)
            || GRADING.contains(&w)
            || CURRENCIES.contains(&w)
            || NEGATED_AUXILIARIES.contains(&w)
            || NEGATIONS.contains(&w);
        let capitalised = original.chars().next().is_some_and(char::is_uppercase);
        if is_abbreviation(original) && !is_listed(w) {
            push(&mut r, w.to_owned(), true, true);
            continue;
        }
        if capitalised && i > 1 && !NOT_NAMES.contains(&original) && !is_listed(w) {
            push(&mut r, stem(stemmer, w), true, false);
            continue;
        }
        if skipped || w.chars().count() < 2 {
            continue;
        }
        push(&mut r, stem(stemmer, synonym(w)), false, false);
    }
    r.preference = preference_of(&lower, &r.tokens);
    r.stripped = kept.join(" ");
    r.words = lower;
    r
}

/// The two sides of "prefer X to/over/rather than Y", as content keys; none when either side
/// is empty ("prefers to be called Jo").
pub(super) fn preference_of(
    lower: &[String],
    tokens: &[Token],
) -> Option<(BTreeSet<String>, BTreeSet<String>)> {
    let verb = lower.iter().position(|w| w.starts_with("prefer"))?;
    let link = (verb + 2..lower.len()).find(|&i| PREFERENCE_LINKS.contains(&lower[i].as_str()))?;
    let side = |from: usize, to: usize| -> BTreeSet<String> {
        tokens
            .iter()
            .filter(|t| t.at > from && t.at < to)
            .map(|t| t.key.clone())
            .collect()
    };
    let (preferred, other) = (side(verb, link), side(link, lower.len()));
    (!preferred.is_empty() && !other.is_empty()).then_some((preferred, other))
}

/// Whether `a` and `b` are one word cut short ("barca" / "barcelona", "member" /
/// "membership", "studi" / "student"): they share a prefix of four letters or more that is at
/// least four fifths of the shorter one.
pub(super) fn clipped(a: &str, b: &str) -> bool {
    if a.chars().any(|c| c.is_ascii_digit()) || b.chars().any(|c| c.is_ascii_digit()) {
        return false;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    common >= 4 && 5 * common >= 4 * shorter
}

/// The tokens of `words` that the abbreviation `short` stands for: initials of consecutive
/// words with its digits as numbers ("f1" → "formula 1", "uk" → "united kingdom"), or the
/// letters of one longer word in order from its first ("vw" → "volkswagen").
pub(super) fn expansion<'a>(short: &Token, words: &'a [Token]) -> Option<Vec<&'a Token>> {
    let mut units: Vec<String> = Vec::new();
    for c in short.key.chars() {
        match units.last_mut() {
            Some(last) if c.is_ascii_digit() && last.chars().all(|d| d.is_ascii_digit()) => {
                last.push(c);
            }
            _ => units.push(c.to_string()),
        }
    }
    let unit_matches = |unit: &str, token: &Token| {
        if unit.chars().all(|c| c.is_ascii_digit()) {
            token.key == unit.trim_start_matches('0')
        } else {
            token.key.starts_with(unit) && !token.abbreviation
        }
    };
    if units.len() >= 2 {
        for window in words.windows(units.len()) {
            let consecutive = window.windows(2).all(|p| p[1].at <= p[0].at + 2);
            if consecutive && units.iter().zip(window).all(|(u, t)| unit_matches(u, t)) {
                return Some(window.iter().collect());
            }
        }
    }
    let letters: Vec<char> = short.key.chars().collect();
    if letters.iter().all(char::is_ascii_alphabetic) {
        for token in words.iter().filter(|t| !t.abbreviation) {
            let mut rest = token.key.chars();
            let first = rest.next();
            let in_order = letters[1..].iter().all(|l| rest.any(|c| c == *l));
            if first == letters.first().copied()
                && in_order
                && token.key.chars().count() > letters.len() + 2
            {
                return Some(vec![token]);
            }
        }
    }
    None
}
