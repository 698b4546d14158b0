//! ATM-Bench's answer score (QS) for the questions that are scored without a judge: `number`
//! questions by exact match after normalisation, `list_recall` questions by Jaccard overlap.
//!
//! The rules are the benchmark's own evaluator's (`memqa/utils/evaluator`, MIT), reimplemented
//! from its behaviour so that memdb's QS and the benchmark's agree on the same answers:
//!
//! - both texts are read against the question's "Today is …" date (`today`, `tomorrow`,
//!   `yesterday` become that day), trimmed of parentheticals, currency breakdowns, "between",
//!   leading articles and unit words after numbers;
//! - an abstention ("unknown", "no information", …) matches only an abstention;
//! - codes (letters and digits, 4+ long), dates (ISO, compact, "May 3", "3 May", ranges), times
//!   (24 h, am/pm, ranges, noon), currency amounts and plain numbers in the ground truth must
//!   all be in the prediction (a date without a year matches any year);
//! - then a list ground truth needs every item in the prediction; yes/no must agree; otherwise
//!   containment either way, every content word of the ground truth, or 80 % of its longer
//!   content words (with dates, times and amounts agreeing) is a match.
//!
//! A `list_recall` answer is the set of memory ids the prediction names (`YYYYMMDD_HHMMSS`,
//! `email…`), or else its items split on `,` `;` `and` `/`; the score is the Jaccard overlap
//! with the ground truth's items (both empty: 1; ground truth empty: 0).
//!
//! Invariant: scoring is a pure function of (question, ground truth, prediction).

use std::collections::{BTreeMap, HashSet};
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Phrases that make an answer an abstention (the benchmark's list, typo included).
const ABSTENTIONS: [&str; 7] = [
    "unknown",
    "abstention",
    "no information",
    "not available",
    "no evidence",
    "no evidnece",
    "insufficient information",
];

const MONTHS: [(&str, u32); 24] = [
    ("january", 1),
    ("jan", 1),
    ("february", 2),
    ("feb", 2),
    ("march", 3),
    ("mar", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("june", 6),
    ("jun", 6),
    ("july", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("october", 10),
    ("oct", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
    ("dec", 12),
];

fn month_number(name: &str) -> Option<u32> {
    let lower = name.to_lowercase();
    MONTHS.iter().find(|(n, _)| *n == lower).map(|(_, m)| *m)
}

const STOPWORDS: [&str; 21] = [
    "the", "a", "an", "of", "in", "at", "on", "for", "to", "and", "or", "by", "from", "with",
    "into", "is", "was", "were", "be", "been", "being",
];

const ADDRESS_WORDS: [&str; 29] = [
    "street",
    "st",
    "road",
    "rd",
    "lane",
    "ln",
    "avenue",
    "ave",
    "drive",
    "dr",
    "place",
    "pl",
    "square",
    "sq",
    "close",
    "court",
    "ct",
    "way",
    "high",
    "highstreet",
    "boulevard",
    "blvd",
    "city",
    "town",
    "village",
    "county",
    "country",
    "oxford",
    "cambridge",
];

const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// Every pattern the scorer uses, compiled once.
struct Patterns {
    iso_date: Regex,
    compact_date: Regex,
    month_day: Regex,
    day_month: Regex,
    month_range: Regex,
    time_range: Regex,
    time_ampm: Regex,
    time_24h: Regex,
    time_ampm_dots: Regex,
    currency_symbol: Regex,
    currency_code: Regex,
    currency_words: Regex,
    number: Regex,
    code: Regex,
    ordinal_code: Regex,
    amount_prefix: Regex,
    amount_suffix: Regex,
    list_split: Regex,
    token: Regex,
    whitespace: Regex,
    ordinal: Regex,
    parenthetical: Regex,
    digit_comma: Regex,
    unit_words: Regex,
    totaling: Regex,
    comprising: Regex,
    per_minute_session: Regex,
    between: Regex,
    and_word: Regex,
    leading_article: Regex,
    context: Vec<Regex>,
    day_name: Regex,
    media_id: Regex,
    email_id: Regex,
    label_prefix: Regex,
    number_word: Regex,
}

impl Patterns {
    fn compile() -> Result<Patterns, regex::Error> {
        let months = "january|jan|february|feb|march|mar|april|apr|may|june|jun|july|jul|august|aug|september|sep|sept|october|oct|november|nov|december|dec";
        let r = Regex::new;
        let day_names = "monday|mon|tuesday|tue|tues|wednesday|wed|thursday|thu|thurs|friday|fri|saturday|sat|sunday|sun";
        Ok(Patterns {
            iso_date: r(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")?,
            compact_date: r(r"\b((?:19|20)\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])\b")?,
            month_day: r(&format!(
                r"(?i)\b({months})\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s*(\d{{4}}))?\b"
            ))?,
            day_month: r(&format!(
                r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({months})(?:,?\s*(\d{{4}}))?\b"
            ))?,
            month_range: r(&format!(
                r"(?i)\b({months})\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*(?:-|to|–)\s*(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s*(\d{{4}}))?\b"
            ))?,
            time_range: r(
                r"(?i)\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\s*(?:-|to|–|and)\s*(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b",
            )?,
            time_ampm: r(r"(?i)\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b")?,
            time_24h: r(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")?,
            time_ampm_dots: r(r"(?i)\b(\d{1,2})(?::(\d{2}))?\s*(a\.m\.|p\.m\.)")?,
            currency_symbol: r(r"[£$€]")?,
            currency_code: r(r"(?i)\b(USD|GBP|EUR|AUD|JOD)\b")?,
            currency_words: r(r"(?i)\b(dollars?|usd|pounds?|gbp|euros?|eur)\b")?,
            number: r(r"\b\d{1,3}(?:,\d{3})*(?:\.\d+)?\b")?,
            code: r(r"(?i)\b[A-Z0-9]{4,}\b")?,
            ordinal_code: r(r"^\d{1,2}(ST|ND|RD|TH)$")?,
            amount_prefix: r(r"([£$€])\s*(\d{1,3}(?:,\d{3})*(?:\.\d+)?)")?,
            amount_suffix: r(
                r"(?i)(\d{1,3}(?:,\d{3})*(?:\.\d+)?)\s*(USD|GBP|EUR|AUD|JOD|dollars?|pounds?|euros?)\b",
            )?,
            list_split: r(r"(?i)\s*(?:,|;|\band\b|/)\s*")?,
            token: r(r"(?i)[a-z0-9]+")?,
            whitespace: r(r"\s+")?,
            ordinal: r(r"\b(\d+)(st|nd|rd|th)\b")?,
            parenthetical: r(r"\([^)]+\)")?,
            digit_comma: r(r"(\d),(\d)")?,
            unit_words: r(r"(?i)\b(\d+)\s+(spots?|hours?|sessions?|days?)\b")?,
            totaling: r(r"(?i),?\s*totaling\s+[£$€]\d+(?:\.\d+)?\s+for\s+\w+\s+sessions?")?,
            comprising: r(r"(?i),?\s*comprising\s+.*$")?,
            per_minute_session: r(r"(?i)per\s+\d+[- ]minute\s+session")?,
            between: r(r"(?i)\bbetween\s+")?,
            and_word: r(r"(?i)\s+and\s+")?,
            leading_article: r(r"(?i)^\s*(a|an|the)\s+")?,
            context: [
                r"\bit happened on\b",
                r"\bstarting at\b",
                r"\bfrom\s+\d",
                r"\bonwards\b",
                r"\btotaling\b",
                r"\bcomprising\b",
                r"\bwith pre-drinks at\b",
                r"\bwith pre-\w+\b",
                r"\band dinner at\b",
                r"\bdress code is\b",
                r"\bthe total cost was\b",
                r"\bcode:\s*",
                r"\bexpires?\s*",
            ]
            .iter()
            .map(|p| r(&format!("(?i){p}")))
            .collect::<Result<_, _>>()?,
            day_name: r(&format!(r"(?i)\b({day_names})\b"))?,
            media_id: r(r"\b(\d{8}_\d{6})\b")?,
            email_id: r(r"(?i)\b(email\d+)\b")?,
            label_prefix: r(r"\b(?:CODE|ID|REFERENCE|REF|NUMBER|NUM|LABEL):\s*")?,
            number_word: r(&format!(r"(?i)\b({})\b", NUMBER_WORDS.join("|")))?,
        })
    }
}

static PATTERNS: LazyLock<Result<Patterns, String>> =
    LazyLock::new(|| Patterns::compile().map_err(|e| e.to_string()));

/// The scorer's patterns did not compile (a build defect; the unit tests compile them).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the answer scorer's patterns did not compile: {0}")]
pub struct PatternError(String);

fn patterns() -> Result<&'static Patterns, PatternError> {
    PATTERNS.as_ref().map_err(|e| PatternError(e.clone()))
}

/// How a `number` answer was judged, and the prediction as the scorer saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// 1.0 when correct (exact match), else 0.0; for lists, the Jaccard overlap.
    pub score: f64,
    /// The prediction after normalisation (lists: the items, comma-separated).
    pub normalized_prediction: String,
}

/// Scores a `number` question's answer: 1.0 or 0.0.
pub fn exact_match(question: &str, truth: &str, prediction: &str) -> Result<Judged, PatternError> {
    let p = patterns()?;
    let (correct, normalized) = exact(p, question, truth, prediction);
    Ok(Judged {
        score: if correct { 1.0 } else { 0.0 },
        normalized_prediction: normalized,
    })
}

/// Scores a `list_recall` question's answer: the Jaccard overlap of the items.
pub fn list_jaccard(truth: &str, prediction: &str) -> Result<Judged, PatternError> {
    let p = patterns()?;
    let truth: HashSet<String> = split_items(p, truth).into_iter().collect();
    let predicted = prediction_items(p, prediction);
    let predicted_set: HashSet<&String> = predicted.iter().collect();
    let score = if truth.is_empty() && predicted_set.is_empty() {
        1.0
    } else if truth.is_empty() {
        0.0
    } else {
        let both = truth.iter().filter(|t| predicted_set.contains(t)).count();
        let union = truth.len() + predicted_set.len() - both;
        both as f64 / union as f64
    };
    Ok(Judged {
        score,
        normalized_prediction: predicted.join(", "),
    })
}

/// Memory ids a text names, media ids first, each once (e-mail ids lowercased).
pub fn memory_ids_in(text: &str) -> Result<Vec<String>, PatternError> {
    let p = patterns()?;
    Ok(ids_in(p, text))
}

fn ids_in(p: &Patterns, text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let media = p.media_id.captures_iter(text).map(|c| c[1].to_owned());
    let mail = p.email_id.captures_iter(text).map(|c| c[1].to_lowercase());
    for id in media.chain(mail) {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

fn prediction_items(p: &Patterns, prediction: &str) -> Vec<String> {
    let ids = ids_in(p, prediction);
    if ids.is_empty() {
        split_items(p, prediction)
    } else {
        ids
    }
}

fn split_items(p: &Patterns, text: &str) -> Vec<String> {
    p.list_split
        .split(text)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| normalize(p, s))
        .filter(|s| !s.is_empty())
        .collect()
}

fn collapse(p: &Patterns, text: &str) -> String {
    p.whitespace.replace_all(text, " ").trim().to_owned()
}

/// Lowercase, ordinals and parentheticals dropped, digits' commas dropped, outer punctuation
/// trimmed.
fn normalize(p: &Patterns, text: &str) -> String {
    let lower = collapse(p, &text.trim().to_lowercase());
    let s = p.ordinal.replace_all(&lower, "$1");
    let s = p.parenthetical.replace_all(&s, "");
    let s = collapse(p, &s);
    let s = p.digit_comma.replace_all(&s, "$1$2");
    s.trim_matches(|c: char| "\t\n\r \"'`.,;:!?()[]{}".contains(c))
        .to_owned()
}

fn is_abstention(p: &Patterns, text: &str) -> bool {
    let n = normalize(p, text);
    ABSTENTIONS.iter().any(|a| n.contains(a))
}

fn tokens(p: &Patterns, text: &str) -> Vec<String> {
    p.token
        .find_iter(text)
        .map(|m| m.as_str().to_lowercase())
        .collect()
}

fn dedup<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn format_date(year: Option<i32>, month: u32, day: u32) -> String {
    match year {
        Some(y) => format!("{y:04}{month:02}{day:02}"),
        None => format!("{month:02}{day:02}"),
    }
}

fn num<T: std::str::FromStr>(c: &Captures<'_>, i: usize) -> Option<T> {
    c.get(i).and_then(|m| m.as_str().parse().ok())
}

/// Dates as `YYYYMMDD`, `MMDD` or `START-END`, in order of kind, each once.
fn dates(p: &Patterns, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for c in p.iso_date.captures_iter(text) {
        if let (Some(y), Some(m), Some(d)) = (num::<i32>(&c, 1), num(&c, 2), num(&c, 3)) {
            out.push(format_date(Some(y), m, d));
        }
    }
    for c in p.compact_date.captures_iter(text) {
        if let (Some(y), Some(m), Some(d)) = (num::<i32>(&c, 1), num(&c, 2), num(&c, 3)) {
            out.push(format_date(Some(y), m, d));
        }
    }
    for c in p.month_range.captures_iter(text) {
        let Some(month) = month_number(&c[1]) else {
            continue;
        };
        if let (Some(a), Some(b)) = (num(&c, 2), num(&c, 3)) {
            let year = num::<i32>(&c, 4);
            out.push(format!(
                "{}-{}",
                format_date(year, month, a),
                format_date(year, month, b)
            ));
        }
    }
    let without_ranges = p.month_range.replace_all(text, " ");
    for c in p.month_day.captures_iter(&without_ranges) {
        if let (Some(month), Some(day)) = (month_number(&c[1]), num(&c, 2)) {
            out.push(format_date(num(&c, 3), month, day));
        }
    }
    for c in p.day_month.captures_iter(&without_ranges) {
        if let (Some(day), Some(month)) = (num(&c, 1), month_number(&c[2])) {
            out.push(format_date(num(&c, 3), month, day));
        }
    }
    dedup(out)
}

fn clock(hour: u32, minute: u32, ampm: Option<&str>) -> String {
    let mut hour = hour;
    if let Some(half) = ampm {
        if hour == 12 {
            hour = 0;
        }
        if half.eq_ignore_ascii_case("pm") {
            hour += 12;
        }
    }
    format!("{hour:02}:{minute:02}")
}

/// Times as `HH:MM` or `HH:MM-HH:MM`, each once.
fn times(p: &Patterns, text: &str) -> Vec<String> {
    let mut s = text.to_lowercase();
    for (from, to) in [
        ("noon", "12:00"),
        ("midday", "12:00"),
        ("midnight", "00:00"),
        ("a.m.", "am"),
        ("p.m.", "pm"),
        ("a. m.", "am"),
        ("p. m.", "pm"),
    ] {
        s = s.replace(from, to);
    }
    let s = p
        .time_ampm_dots
        .replace_all(&s, |c: &Captures<'_>| {
            format!(
                "{}:{}{}m",
                &c[1],
                c.get(2).map_or("00", |m| m.as_str()),
                &c[3][..1]
            )
        })
        .into_owned();
    let mut out = Vec::new();
    for c in p.time_range.captures_iter(&s) {
        let (Some(h1), Some(h2)) = (num(&c, 1), num(&c, 4)) else {
            continue;
        };
        let end_half = c.get(6).map(|m| m.as_str());
        let start_half = c.get(3).map(|m| m.as_str()).or(end_half);
        out.push(format!(
            "{}-{}",
            clock(h1, num(&c, 2).unwrap_or(0), start_half),
            clock(h2, num(&c, 5).unwrap_or(0), end_half)
        ));
    }
    let rest = p.time_range.replace_all(&s, " ");
    for c in p.time_24h.captures_iter(&rest) {
        if let (Some(h), Some(m)) = (num(&c, 1), num(&c, 2)) {
            out.push(clock(h, m, None));
        }
    }
    for c in p.time_ampm.captures_iter(&rest) {
        if let Some(h) = num(&c, 1) {
            out.push(clock(
                h,
                num(&c, 2).unwrap_or(0),
                c.get(3).map(|m| m.as_str()),
            ));
        }
    }
    dedup(out)
}

fn remove_dates_and_times(p: &Patterns, text: &str) -> String {
    let mut s = text.to_owned();
    for re in [
        &p.iso_date,
        &p.compact_date,
        &p.month_range,
        &p.month_day,
        &p.day_month,
        &p.time_range,
        &p.time_24h,
        &p.time_ampm,
        &p.time_ampm_dots,
    ] {
        s = re.replace_all(&s, " ").into_owned();
    }
    for word in [
        "noon", "midday", "midnight", "a.m.", "p.m.", "a. m.", "p. m.",
    ] {
        s = s.replace(word, " ");
    }
    s
}

/// A decimal number in one spelling: no grouping commas, no leading zeros, no trailing
/// fractional zeros ("12.50" and "12.5" are one number).
fn canonical_number(text: &str) -> String {
    let plain: String = text.chars().filter(|c| *c != ',').collect();
    let (int, frac) = plain.split_once('.').unwrap_or((&plain, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    if frac.is_empty() {
        int.to_owned()
    } else {
        format!("{int}.{frac}")
    }
}

fn number_words_as_digits(p: &Patterns, text: &str) -> String {
    p.number_word
        .replace_all(text, |c: &Captures<'_>| {
            let word = c[1].to_lowercase();
            NUMBER_WORDS
                .iter()
                .position(|w| *w == word)
                .map_or_else(|| c[1].to_owned(), |n| n.to_string())
        })
        .into_owned()
}

fn currency_amounts(p: &Patterns, text: &str) -> Vec<String> {
    let s = number_words_as_digits(p, text);
    let s = p.digit_comma.replace_all(&s, "$1$2");
    let mut out: Vec<String> = p
        .amount_prefix
        .captures_iter(&s)
        .map(|c| canonical_number(&c[2]))
        .collect();
    out.extend(
        p.amount_suffix
            .captures_iter(&s)
            .map(|c| canonical_number(&c[1])),
    );
    dedup(out)
}

fn currency_of(word: &str) -> String {
    let upper = word.to_uppercase();
    match upper.as_str() {
        "£" | "GBP" | "POUND" | "POUNDS" => "GBP".to_owned(),
        "$" | "USD" | "DOLLAR" | "DOLLARS" => "USD".to_owned(),
        "€" | "EUR" | "EURO" | "EUROS" => "EUR".to_owned(),
        _ => upper,
    }
}

/// The numbers of a text (number words read as digits) and the currencies it names.
fn numbers(p: &Patterns, text: &str) -> (Vec<String>, Vec<String>) {
    let mut currencies: Vec<String> = p
        .currency_code
        .captures_iter(text)
        .map(|c| c[1].to_uppercase())
        .collect();
    currencies.extend(
        p.currency_words
            .captures_iter(text)
            .map(|c| currency_of(&c[1])),
    );
    currencies.extend(
        p.currency_symbol
            .find_iter(text)
            .map(|m| currency_of(m.as_str())),
    );
    let s = number_words_as_digits(p, text);
    let values = p
        .number
        .find_iter(&s)
        .map(|m| canonical_number(m.as_str()))
        .collect();
    (values, currencies)
}

fn codes(p: &Patterns, text: &str) -> Vec<String> {
    let out = p
        .code
        .find_iter(text)
        .map(|m| m.as_str().to_uppercase())
        .filter(|v| !p.ordinal_code.is_match(v))
        .filter(|v| v.chars().any(char::is_alphabetic) && v.chars().any(|c| c.is_ascii_digit()))
        .collect();
    dedup(out)
}

/// Same items, same counts.
fn same_multiset(a: &[String], b: &[String]) -> bool {
    let count = |v: &[String]| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for x in v {
            *m.entry(x.clone()).or_default() += 1;
        }
        m
    };
    count(a) == count(b)
}

fn sorted_unique(currencies: &[String]) -> Vec<String> {
    let mut v: Vec<String> = currencies.iter().map(|c| currency_of(c)).collect();
    v.sort();
    v.dedup();
    v
}

/// A date token without a year (4 digits) matches one with a year on month and day.
fn date_part_matches(truth: &str, predicted: &str) -> bool {
    if truth.len() == 4 || predicted.len() == 4 {
        truth.get(truth.len().saturating_sub(4)..)
            == predicted.get(predicted.len().saturating_sub(4)..)
    } else {
        truth == predicted
    }
}

fn date_matches(truth: &str, predicted: &str) -> bool {
    match (truth.split_once('-'), predicted.split_once('-')) {
        (Some((a1, a2)), Some((b1, b2))) => date_part_matches(a1, b1) && date_part_matches(a2, b2),
        (Some(_), None) => false,
        _ => date_part_matches(truth, predicted),
    }
}

/// Every ground-truth date finds its own predicted date.
fn all_dates_found(truth: &[String], predicted: &[String]) -> bool {
    let mut left: Vec<&String> = predicted.iter().collect();
    for t in truth {
        match left.iter().position(|p| date_matches(t, p)) {
            Some(i) => {
                left.remove(i);
            }
            None => return false,
        }
    }
    true
}

fn token_subset(p: &Patterns, truth: &str, predicted: &str) -> bool {
    let wanted: Vec<String> = tokens(p, truth)
        .into_iter()
        .filter(|t| !STOPWORDS.contains(&t.as_str()))
        .collect();
    let have: HashSet<String> = tokens(p, predicted).into_iter().collect();
    wanted.iter().all(|t| have.contains(t))
}

fn location_match(p: &Patterns, truth: &str, predicted: &str) -> bool {
    let words = tokens(p, truth);
    if !words.iter().any(|t| ADDRESS_WORDS.contains(&t.as_str())) {
        return false;
    }
    let wanted: Vec<&String> = words
        .iter()
        .filter(|t| !STOPWORDS.contains(&t.as_str()) && !t.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let have: HashSet<String> = tokens(p, predicted).into_iter().collect();
    !wanted.is_empty() && wanted.iter().all(|t| have.contains(*t))
}

fn semantic_match(p: &Patterns, truth: &str, predicted: &str) -> bool {
    let (td, pd) = (dates(p, truth), dates(p, predicted));
    if !td.is_empty() {
        let tail = |d: &String| d.get(d.len().saturating_sub(4)..).map(str::to_owned);
        if pd.is_empty() || !td.iter().any(|a| pd.iter().any(|b| tail(a) == tail(b))) {
            return false;
        }
    }
    let (tt, pt) = (times(p, truth), times(p, predicted));
    if !tt.is_empty() && !pt.is_empty() && !tt.iter().any(|t| pt.contains(t)) {
        return false;
    }
    let (ta, pa) = (currency_amounts(p, truth), currency_amounts(p, predicted));
    if !ta.is_empty() {
        let ts: HashSet<&String> = ta.iter().collect();
        let ps: HashSet<&String> = pa.iter().collect();
        if pa.is_empty() || ts != ps {
            return false;
        }
    }
    let content = |text: &str| -> HashSet<String> {
        tokens(p, text)
            .into_iter()
            .filter(|t| !STOPWORDS.contains(&t.as_str()) && t.chars().count() > 2)
            .collect()
    };
    let (tc, pc) = (content(truth), content(predicted));
    if tc.is_empty() {
        return true;
    }
    let overlap = tc.intersection(&pc).count();
    overlap as f64 / tc.len() as f64 >= 0.8
}

/// The day a question's "Today is …" names: its first full date.
fn reference_date(p: &Patterns, question: &str) -> Option<jiff::civil::Date> {
    dates(p, question).into_iter().find_map(|d| {
        if d.len() != 8 {
            return None;
        }
        let y: i16 = d.get(0..4)?.parse().ok()?;
        let m: i8 = d.get(4..6)?.parse().ok()?;
        let day: i8 = d.get(6..8)?.parse().ok()?;
        jiff::civil::Date::new(y, m, day).ok()
    })
}

/// `today`, `tonight`, `tomorrow` and `yesterday` as the days they are from `reference`,
/// written "January 09".
fn resolve_relative(text: &str, reference: Option<jiff::civil::Date>) -> String {
    let Some(day) = reference else {
        return text.to_owned();
    };
    let mut out = text.to_owned();
    for (word, offset) in [
        ("today", 0),
        ("tonight", 0),
        ("tomorrow", 1),
        ("yesterday", -1),
    ] {
        if !out.to_lowercase().contains(word) {
            continue;
        }
        let Ok(date) = day.checked_add(jiff::Span::new().days(offset)) else {
            continue;
        };
        let written = date.strftime("%B %d").to_string();
        let mut capital = word.to_owned();
        capital[..1].make_ascii_uppercase();
        for form in [word.to_owned(), capital, word.to_uppercase()] {
            if out.contains(&form) {
                out = out.replace(&form, &written);
                break;
            }
        }
    }
    out
}

fn prepare(p: &Patterns, text: &str, reference: Option<jiff::civil::Date>) -> String {
    let s = resolve_relative(text, reference);
    // Trailing full stops, grouping commas, and unit words after numbers.
    let s = s.trim_end_matches('.');
    let s = p.digit_comma.replace_all(s, "$1$2");
    let s = p.unit_words.replace_all(&s, "$1");
    let s = p.parenthetical.replace_all(&s, "");
    let s = collapse(p, &s);
    let s = p.totaling.replace_all(&s, "");
    let s = p.comprising.replace_all(&s, "");
    let s = p.per_minute_session.replace_all(&s, "per session");
    let s = collapse(p, &s);
    let s = p.between.replace_all(&s, "");
    let s = p.and_word.replace_all(&s, " to ");
    p.leading_article.replace_all(&s, "").into_owned()
}

fn strip_context(p: &Patterns, text: &str) -> String {
    let mut s = text.to_lowercase();
    for re in &p.context {
        s = re.replace_all(&s, " ").into_owned();
    }
    let s = p.day_name.replace_all(&s, " ");
    collapse(p, &s)
}

/// The exact-match cascade (see the module doc): whether `prediction` answers as `truth` does,
/// and the prediction normalised.
fn exact(p: &Patterns, question: &str, truth: &str, prediction: &str) -> (bool, String) {
    let truth_abstains = is_abstention(p, truth);
    let prediction_abstains = is_abstention(p, prediction);
    let reference = reference_date(p, question);
    let t = prepare(p, truth, reference);
    let pr = prepare(p, prediction, reference);
    let t_norm = normalize(p, &t);
    let p_norm = normalize(p, &pr);
    let verdict = |ok: bool| (ok, p_norm.clone());
    if truth_abstains || prediction_abstains {
        return verdict(truth_abstains && prediction_abstains);
    }
    let truth_codes = codes(p, &t);
    if !truth_codes.is_empty() {
        let upper = pr.to_uppercase();
        let stripped = p.label_prefix.replace_all(&upper, "");
        if !truth_codes.iter().all(|c| stripped.contains(c.as_str())) {
            return verdict(false);
        }
    }
    let (t_dates, p_dates) = (dates(p, &t), dates(p, &pr));
    if !t_dates.is_empty() && (p_dates.is_empty() || !all_dates_found(&t_dates, &p_dates)) {
        return verdict(false);
    }
    let (t_times, p_times) = (times(p, &t), times(p, &pr));
    if !t_times.is_empty() && !p_times.is_empty() && !same_multiset(&t_times, &p_times) {
        return verdict(false);
    }
    if !t_dates.is_empty() || !t_times.is_empty() {
        let t_rest = strip_context(p, &normalize(p, &remove_dates_and_times(p, &t)));
        let p_rest = strip_context(p, &normalize(p, &remove_dates_and_times(p, &pr)));
        if t_rest.is_empty() || token_subset(p, &t_rest, &p_rest) {
            return verdict(true);
        }
    }
    let t_clean = remove_dates_and_times(p, &t);
    let p_clean = remove_dates_and_times(p, &pr);
    let (mut t_numbers, t_currencies) = numbers(p, &t_clean);
    let (mut p_numbers, p_currencies) = numbers(p, &p_clean);
    let t_amounts = currency_amounts(p, &t_clean);
    let p_amounts = currency_amounts(p, &p_clean);
    if !t_currencies.is_empty() {
        let (a, b) = (sorted_unique(&t_currencies), sorted_unique(&p_currencies));
        if !b.is_empty() && a != b {
            return verdict(false);
        }
    }
    if !t_amounts.is_empty() {
        if p_amounts.is_empty() || !same_multiset(&t_amounts, &p_amounts) {
            return verdict(false);
        }
        t_numbers.retain(|n| !t_amounts.contains(n));
        p_numbers.retain(|n| !p_amounts.contains(n));
    }
    if !t_numbers.is_empty() && (p_numbers.is_empty() || !same_multiset(&t_numbers, &p_numbers)) {
        return verdict(false);
    }
    let items = split_items(p, &t);
    if items.len() >= 2 {
        return verdict(items.iter().all(|item| p_norm.contains(item.as_str())));
    }
    if (t_norm.starts_with("yes") || t_norm.starts_with("no"))
        && (p_norm == "yes" || p_norm == "no")
    {
        return verdict(t_norm.starts_with(p_norm.as_str()));
    }
    if location_match(p, &t, &pr)
        || (t_norm.chars().count() >= 3 && p_norm.contains(t_norm.as_str()))
        || (p_norm.chars().count() >= 3 && t_norm.contains(p_norm.as_str()))
        || token_subset(p, &t, &pr)
        || semantic_match(p, &t, &pr)
    {
        return verdict(true);
    }
    verdict(t_norm == p_norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn em(question: &str, truth: &str, prediction: &str) -> bool {
        exact_match(question, truth, prediction).unwrap().score == 1.0
    }

    #[test]
    fn the_patterns_compile() {
        assert!(patterns().is_ok());
    }

    #[test]
    fn numbers_and_amounts_must_agree() {
        assert!(em("How many?", "3", "There were 3."));
        // The benchmark reads number words in both texts, but a ground truth written in words
        // still needs its words in the prediction: "3" for "three" is wrong there, "three"
        // for "3" right. memdb scores as the benchmark does.
        assert!(em("How many?", "3", "three"));
        assert!(!em("How many?", "three", "3"));
        assert!(!em("How many?", "3", "4"));
        assert!(em("How much?", "£12.85", "It cost £12.85 (with railcard)."));
        assert!(em("How much?", "£12.50", "12.5 pounds"));
        assert!(!em("How much?", "£12.85", "$12.85"));
        assert!(!em("How much?", "£12.85", "£13"));
        assert!(em("How much?", "1,200", "1200"));
        assert!(!em("How many?", "3", ""));
    }

    #[test]
    fn dates_and_times_are_read_in_any_spelling() {
        assert!(em("When?", "2024-01-09", "9 January 2024"));
        assert!(em("When?", "January 9", "On 2024-01-09."));
        assert!(!em("When?", "2024-01-09", "2024-01-10"));
        assert!(em("When?", "10:15", "at 10:15 am"));
        assert!(em("When?", "2 pm", "14:00"));
        // "2:30 pm" also reads as 02:30 (the 24-hour pattern), so it matches only itself: the
        // benchmark's quirk, kept.
        assert!(em("When?", "2:30 pm", "at 2:30 pm"));
        assert!(!em("When?", "2:30 pm", "14:30"));
        assert!(!em("When?", "2:30 pm", "2:30 am"));
        assert!(em("When?", "noon", "12:00"));
        assert!(em("When?", "May 3-5", "May 3 to 5"));
    }

    #[test]
    fn relative_days_are_read_against_today() {
        let q = "Today is 2024-01-08. When is my dentist appointment?";
        assert!(em(q, "January 9", "Tomorrow"));
        assert!(em(q, "Tomorrow at 10:15", "January 9 at 10:15 am"));
        assert!(!em(q, "January 9", "Yesterday"));
        assert!(!em("When is it?", "January 9", "Tomorrow"));
    }

    #[test]
    fn abstentions_match_only_abstentions() {
        assert!(em("Q?", "Unknown", "There is no information about that."));
        assert!(!em("Q?", "Unknown", "3"));
        assert!(!em("Q?", "3", "unknown"));
    }

    #[test]
    fn codes_words_and_yes_no() {
        assert!(em("Code?", "AB12CD", "The code: ab12cd"));
        assert!(!em("Code?", "AB12CD", "AB12CE"));
        assert!(em(
            "Where?",
            "The Eagle pub",
            "the eagle pub on Bene't Street"
        ));
        assert!(em("Did I?", "Yes", "yes"));
        // A ground truth with a comma is a list: every item must be there.
        assert!(!em("Did I?", "Yes, twice", "yes"));
        assert!(!em("Did I?", "No", "yes"));
        assert!(em("Who?", "Alice and Bob", "Bob and Alice came"));
        assert!(!em("Who?", "Alice and Bob", "Alice came"));
    }

    #[test]
    fn lists_are_jaccard_over_ids_or_items() {
        let j = |t: &str, p: &str| list_jaccard(t, p).unwrap().score;
        assert_eq!(
            j(
                "20220430_132212, email1",
                "I found 20220430_132212 and EMAIL1."
            ),
            1.0
        );
        assert_eq!(j("20220430_132212, email1", "20220430_132212"), 0.5);
        assert_eq!(j("a, b, c", "b; c; d"), 0.5);
        assert_eq!(j("", ""), 1.0);
        assert_eq!(j("", "a"), 0.0);
        assert_eq!(j("a", ""), 0.0);
        assert_eq!(
            memory_ids_in("see 20220101_101010, email7 and 20220101_101010").unwrap(),
            ["20220101_101010", "email7"]
        );
    }

    #[test]
    fn canonical_numbers() {
        for (a, b) in [
            ("012.50", "12.5"),
            ("1,000", "1000"),
            ("0.0", "0"),
            ("7", "7"),
        ] {
            assert_eq!(canonical_number(a), b);
        }
    }
}
