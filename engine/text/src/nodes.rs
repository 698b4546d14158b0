//! Deterministic, on-device node extraction: the short lowercase phrases an item (or a
//! question) is about, after ScrapMem's extraction prompt (its Figure 5) — named entities,
//! objects, actions and events, concrete time mentions normalised to ISO dates, amounts with
//! their currency — drawn from an item's SGM fields.
//!
//! Invariants: the same input always gives the same nodes in the same order; every node is
//! lowercase, trimmed, at most [`MAX_NODE_CHARS`] characters; an item gives at most
//! [`MAX_NODES`] nodes, and at least [`MIN_NODES`] when its text has that many content words.

use std::collections::HashSet;

use jiff::ToSpan;
use jiff::civil::Date;
use memdb_formats::item::{ItemFields, MONTH_NAMES};

use crate::words::{is_stopword, spans};

/// Most nodes one item gives.
pub const MAX_NODES: usize = 10;
/// Fewest nodes an item gives when its text has that many content words.
pub const MIN_NODES: usize = 3;
/// Longest node phrase, in characters.
pub const MAX_NODE_CHARS: usize = 48;

/// What a node names; the order is the priority when an item has more than [`MAX_NODES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeKind {
    /// A person, organisation, place or named thing (a capitalised run, or the SGM speaker,
    /// sender, recipients, entities, location name, place names and camera).
    Entity = 0,
    /// A concrete day, `YYYY-MM-DD`, or a month `YYYY-MM`, or a year `YYYY`.
    Date = 1,
    /// A number with its currency, `50 usd`.
    Amount = 2,
    /// Two content words that stand together (`pottery class`).
    Phrase = 3,
    /// One content word (`adoption`).
    Word = 4,
}

impl NodeKind {
    /// The one-byte code stored in the catalog.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The kind of a stored code.
    pub fn from_code(code: u8) -> Option<NodeKind> {
        [
            NodeKind::Entity,
            NodeKind::Date,
            NodeKind::Amount,
            NodeKind::Phrase,
            NodeKind::Word,
        ]
        .into_iter()
        .find(|k| k.code() == code)
    }
}

/// One extracted node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeDraft {
    /// The phrase, lowercase.
    pub phrase: String,
    /// What it names.
    pub kind: NodeKind,
}

/// The nodes of an item, from its SGM fields.
pub fn item_nodes(fields: &ItemFields) -> Vec<NodeDraft> {
    let mut out = Candidates::default();
    let people = fields
        .speaker
        .iter()
        .chain(&fields.from)
        .chain(&fields.to)
        .chain(&fields.entities);
    for name in people {
        out.push(NodeKind::Entity, name);
    }
    if let Some(location) = &fields.location {
        // The place a position is in: its city, the neighbourhood or village it was nearest
        // and its country, each a node ("paris", "france"), so items of one city share a node
        // whatever their street. A name the place stage wrote ("Paris, Île-de-France,
        // France") says nothing more; a name of the item's own ("Tour Eiffel") does.
        let place = location.place.as_ref();
        let generated = place.map(memdb_formats::item::PlaceName::label);
        if let Some(name) = location
            .name
            .as_ref()
            .filter(|n| Some(*n) != generated.as_ref())
        {
            out.push(NodeKind::Entity, name);
        }
        if let Some(place) = place {
            for name in [
                Some(&place.city),
                place.locality.as_ref(),
                place.country.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                out.push(NodeKind::Entity, name);
            }
        }
    }
    if let Some(camera) = &fields.camera {
        // The camera and its lens are things a person names ("the Fuji", "the 50 mm"); the
        // orientation, the part of the day and the season are in the item text (BM25 and the
        // encoder see them) but not nodes: one node shared by every landscape photo, or every
        // evening, would join paths that have nothing else in common.
        out.push(NodeKind::Entity, &camera.label());
        if let Some(lens) = &camera.lens {
            out.push(NodeKind::Entity, lens);
        }
    }
    let day = fields.time.local_date();
    for text in [
        &fields.summary,
        &fields.body,
        &fields.short_caption,
        &fields.caption,
        &fields.ocr,
    ]
    .into_iter()
    .flatten()
    {
        scan_text(text, day, &mut out);
    }
    out.finish(MAX_NODES)
}

/// The nodes of a question: the same rules as an item's text, with relative dates left
/// unresolved (a question has no "today"), and no cap beyond [`MAX_NODES`].
pub fn query_nodes(question: &str) -> Vec<NodeDraft> {
    let mut out = Candidates::default();
    scan_text(question, None, &mut out);
    out.finish(MAX_NODES)
}

/// An item's local day as people write it, `8 May 2023` (none when undated).
pub fn display_date(time: memdb_formats::item::EventTime) -> Option<String> {
    let day = time.local_date()?;
    let name = MONTH_NAMES[usize::try_from(day.month() - 1).unwrap_or(0) % 12];
    let mut chars = name.chars();
    let month: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    Some(format!("{} {month} {}", day.day(), day.year()))
}

/// The form a node phrase is stored in: lowercase, inner whitespace collapsed to one space.
pub fn normalize_phrase(phrase: &str) -> String {
    phrase
        .trim()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Node phrases gathered from a text (by the rules here, or from a model's answer): each
/// normalised and kept once, the best chosen by [`Candidates::finish`].
#[derive(Default)]
pub struct Candidates {
    seen: HashSet<String>,
    nodes: Vec<NodeDraft>,
}

impl Candidates {
    /// Adds `phrase` as a node of `kind`, normalised; an empty, too long or repeated phrase
    /// adds nothing.
    pub fn push(&mut self, kind: NodeKind, phrase: &str) {
        let phrase = normalize_phrase(phrase);
        if phrase.is_empty() || phrase.chars().count() > MAX_NODE_CHARS {
            return;
        }
        if self.seen.insert(phrase.clone()) {
            self.nodes.push(NodeDraft { phrase, kind });
        }
    }

    /// The best `max` candidates: by kind, then first mention.
    pub fn finish(mut self, max: usize) -> Vec<NodeDraft> {
        // Stable: ties keep their order of first mention.
        self.nodes.sort_by_key(|n| n.kind);
        // Single words already inside a chosen phrase add nothing.
        let mut chosen: Vec<NodeDraft> = Vec::new();
        for node in self.nodes {
            if chosen.len() == max {
                break;
            }
            let covered = node.kind == NodeKind::Word
                && chosen
                    .iter()
                    .any(|c| c.phrase.split(' ').any(|w| w == node.phrase));
            if !covered || chosen.len() < MIN_NODES {
                chosen.push(node);
            }
        }
        chosen
    }
}

/// A word of the text with what the scanner needs to know about it.
pub(crate) struct Token<'a> {
    pub(crate) text: &'a str,
    /// Byte range in the text.
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) lower: String,
    pub(crate) capitalised: bool,
    /// First word of a sentence (after `.`, `!`, `?`, a line break or the start).
    pub(crate) sentence_start: bool,
    /// Characters between the previous word and this one.
    pub(crate) gap_before: &'a str,
}

pub(crate) fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut prev_end = 0;
    for (start, end) in spans(text) {
        let word = &text[start..end];
        let gap = &text[prev_end..start];
        let sentence_start =
            out.is_empty() || gap.contains(['.', '!', '?', '\n', ':', '[', ']', '"']);
        out.push(Token {
            text: word,
            start,
            end,
            lower: word.to_lowercase(),
            capitalised: word.chars().next().is_some_and(char::is_uppercase),
            sentence_start,
            gap_before: gap,
        });
        prev_end = end;
    }
    out
}

fn scan_text(text: &str, day: Option<Date>, out: &mut Candidates) {
    let toks = tokens(text);
    let mut i = 0;
    while i < toks.len() {
        if let Some((date, used)) = date_at(&toks, i, day) {
            out.push(NodeKind::Date, &date);
            i += used;
            continue;
        }
        if let Some((amount, used)) = amount_at(&toks, i) {
            out.push(NodeKind::Amount, &amount);
            i += used;
            continue;
        }
        if toks[i].capitalised && !is_stopword(&toks[i].lower) && month(&toks[i].lower).is_none() {
            // A run of capitalised words (allowing "of"/"the"/"de" inside) is a name.
            let mut j = i + 1;
            while j < toks.len()
                && toks[j].gap_before.trim().is_empty()
                && (toks[j].capitalised
                    || (matches!(toks[j].lower.as_str(), "of" | "de")
                        && toks.get(j + 1).is_some_and(|t| t.capitalised)))
            {
                j += 1;
            }
            // A lone capitalised word opening a sentence is usually just a sentence start.
            if j - i > 1 || !toks[i].sentence_start {
                let name: Vec<&str> = toks[i..j].iter().map(|t| t.text).collect();
                out.push(NodeKind::Entity, &name.join(" "));
                i = j;
                continue;
            }
        }
        i += 1;
    }
    // Content words and the pairs they form.
    let content: Vec<(usize, &Token<'_>)> = toks
        .iter()
        .enumerate()
        .filter(|(_, t)| is_content(&t.lower))
        .collect();
    for pair in content.windows(2) {
        let ((a, ta), (b, tb)) = (pair[0], pair[1]);
        if b == a + 1 && tb.gap_before.trim().is_empty() {
            out.push(NodeKind::Phrase, &format!("{} {}", ta.lower, tb.lower));
        }
    }
    for (_, t) in content {
        out.push(NodeKind::Word, &t.lower);
    }
}

fn is_content(word: &str) -> bool {
    word.chars().count() >= 3
        && !is_stopword(word)
        && !word.chars().all(|c| c.is_ascii_digit())
        && month(word).is_none()
}

pub(crate) fn month(word: &str) -> Option<i8> {
    MONTH_NAMES
        .iter()
        .position(|m| *m == word || (word.len() == 3 && m.starts_with(word) && word != "mar"))
        .or_else(|| (word == "mar").then_some(2))
        .and_then(|p| i8::try_from(p + 1).ok())
}

pub(crate) fn number(word: &str) -> Option<i64> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    if digits.is_empty() || digits.len() > 6 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub(crate) fn year(word: &str) -> Option<i16> {
    let n = number(word)?;
    ((1900..=2100).contains(&n) && word.len() == 4)
        .then(|| i16::try_from(n).ok())
        .flatten()
}

/// A date mention starting at token `i`: its ISO form and how many tokens it used.
fn date_at(toks: &[Token<'_>], i: usize, day: Option<Date>) -> Option<(String, usize)> {
    let w = |k: usize| toks.get(i + k).map(|t| t.lower.as_str());
    let w0 = w(0)?;
    // ISO 2023-05-08 arrives as three words joined by '-'.
    if let (Some(y), Some(m), Some(d)) = (year(w0), w(1).and_then(number), w(2).and_then(number))
        && toks[i + 1].gap_before == "-"
        && toks[i + 2].gap_before == "-"
        && let Ok(date) = Date::new(y, i8::try_from(m).ok()?, i8::try_from(d).ok()?)
    {
        return Some((date.to_string(), 3));
    }
    // "8 May 2023", "8 May, 2023", "8 May"
    if let (Some(d), Some(m)) = (number(w0), w(1).and_then(month)) {
        let y = w(2).and_then(year);
        return full_date(y, m, d, day).map(|s| (s, if y.is_some() { 3 } else { 2 }));
    }
    // "May 8, 2023", "May 8", "May 2023"
    if let Some(m) = month(w0)
        && toks[i].capitalised
    {
        if let Some(d) = w(1).and_then(number).filter(|d| (1..=31).contains(d)) {
            let y = w(2).and_then(year);
            return full_date(y, m, d, day).map(|s| (s, if y.is_some() { 3 } else { 2 }));
        }
        if let Some(y) = w(1).and_then(year) {
            return Some((format!("{y:04}-{m:02}"), 2));
        }
    }
    let day = day?;
    let shift = |span: jiff::Span| day.checked_add(span).ok().map(|d| d.to_string());
    match (w0, w(1)) {
        ("yesterday", _) => shift((-1).days()).map(|s| (s, 1)),
        ("today" | "tonight", _) => Some((day.to_string(), 1)),
        ("tomorrow", _) => shift(1.days()).map(|s| (s, 1)),
        ("last", Some("week")) => shift((-7).days()).map(|s| (s, 2)),
        ("next", Some("week")) => shift(7.days()).map(|s| (s, 2)),
        ("last", Some("month")) => day
            .checked_sub(1.month())
            .ok()
            .map(|d| (format!("{:04}-{:02}", d.year(), d.month()), 2)),
        ("last", Some("year")) => Some((format!("{:04}", day.year() - 1), 2)),
        ("last", Some("weekend")) => shift((-7).days()).map(|s| (s, 2)),
        _ => None,
    }
}

fn full_date(y: Option<i16>, m: i8, d: i64, day: Option<Date>) -> Option<String> {
    let y = y.or_else(|| day.map(|d| d.year()))?;
    let d = i8::try_from(d).ok()?;
    Date::new(y, m, d).ok().map(|date| date.to_string())
}

/// An amount starting at token `i`: `$50`, `50 dollars`, `€20`, `20 eur`.
fn amount_at(toks: &[Token<'_>], i: usize) -> Option<(String, usize)> {
    let t = &toks[i];
    let value = number(&t.lower).filter(|_| t.lower.chars().all(|c| c.is_ascii_digit()))?;
    let symbol = t.gap_before.trim_end().chars().last();
    let by_symbol = match symbol {
        Some('$') => Some("usd"),
        Some('€') => Some("eur"),
        Some('£') => Some("gbp"),
        Some('¥') => Some("jpy"),
        _ => None,
    };
    if let Some(cur) = by_symbol {
        return Some((format!("{value} {cur}"), 1));
    }
    let next = toks.get(i + 1)?.lower.as_str();
    let cur = match next {
        "dollars" | "dollar" | "usd" | "bucks" => "usd",
        "euros" | "euro" | "eur" => "eur",
        "pounds" | "gbp" => "gbp",
        "yen" | "jpy" => "jpy",
        _ => return None,
    };
    Some((format!("{value} {cur}"), 2))
}

#[cfg(test)]
mod tests {
    use memdb_formats::item::{EventTime, Source};

    use super::*;

    fn phrases(nodes: &[NodeDraft]) -> Vec<&str> {
        nodes.iter().map(|n| n.phrase.as_str()).collect()
    }

    fn chat(speaker: &str, body: &str) -> ItemFields {
        let mut f = ItemFields::new(
            Source::Chat,
            EventTime::parse("2023-05-08T13:56:00+00:00").unwrap(),
        );
        f.speaker = Some(speaker.into());
        f.body = Some(body.into());
        f
    }

    #[test]
    fn a_photo_gives_its_place_and_camera() {
        let mut f = memdb_formats::fixtures::eiffel_photo();
        assert_eq!(
            phrases(&item_nodes(&f)),
            ["paris", "paris 16 passy", "france", "fujifilm finepixs2pro"]
        );
        // A name of the item's own is a node too.
        if let Some(l) = f.location.as_mut() {
            l.name = Some("Tour Eiffel".into());
        }
        assert_eq!(phrases(&item_nodes(&f))[0], "tour eiffel");
        // The lens is a node; what a captioner said is read like any text.
        if let Some(c) = f.camera.as_mut() {
            c.lens = Some("XF 35mm F1.4 R".into());
        }
        f.short_caption = Some("Eiffel Tower at dusk".into());
        let nodes = item_nodes(&f);
        let got = phrases(&nodes);
        assert!(got.contains(&"xf 35mm f1.4 r"), "{got:?}");
        assert!(got.iter().any(|p| p.contains("eiffel tower")), "{got:?}");
        assert!(!got.contains(&"landscape"), "{got:?}");
    }

    #[test]
    fn an_item_gives_names_dates_amounts_and_content() {
        let nodes = item_nodes(&chat(
            "Caroline",
            "I went to the LGBTQ support group yesterday and paid $25 for the Pride Parade \
             tickets in San Francisco.",
        ));
        let got = phrases(&nodes);
        assert_eq!(got[0], "caroline");
        for want in [
            "lgbtq",
            "san francisco",
            "pride parade",
            "2023-05-07",
            "25 usd",
        ] {
            assert!(got.contains(&want), "{want} missing from {got:?}");
        }
        assert!(nodes.len() <= MAX_NODES && nodes.len() >= MIN_NODES);
        assert!(nodes.iter().all(|n| n.phrase == n.phrase.to_lowercase()));
    }

    #[test]
    fn explicit_dates_normalise_to_iso() {
        let q = query_nodes("What happened on 7 May 2023 and on June 3, 2022, or in July 2021?");
        let got = phrases(&q);
        for want in ["2023-05-07", "2022-06-03", "2021-07"] {
            assert!(got.contains(&want), "{want} missing from {got:?}");
        }
    }

    #[test]
    fn questions_give_their_topic_words() {
        let q = query_nodes("What did Caroline research about adoption agencies?");
        let got = phrases(&q);
        assert!(got.contains(&"caroline"), "{got:?}");
        assert!(got.contains(&"adoption agencies"), "{got:?}");
        // Relative dates in a question stay unresolved: no "today".
        assert!(
            query_nodes("what did I do yesterday?")
                .iter()
                .all(|n| n.kind != NodeKind::Date)
        );
    }

    #[test]
    fn extraction_is_deterministic_and_bounded_for_any_text() {
        let long =
            "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu. ".repeat(50);
        let a = item_nodes(&chat("Mel", &long));
        assert_eq!(a, item_nodes(&chat("Mel", &long)));
        assert!(a.len() <= MAX_NODES);
        assert!(query_nodes("").is_empty());
        assert!(query_nodes("?!").is_empty());
        // Odd inputs never panic: out-of-range dates, huge numbers, lone symbols.
        for odd in [
            "31 February 2023",
            "$99999999999999999999",
            "May 99",
            "2023-13-45",
            "€",
            "£ 5",
        ] {
            let _ = query_nodes(odd);
        }
    }

    #[test]
    fn kind_codes_round_trip() {
        for k in [
            NodeKind::Entity,
            NodeKind::Date,
            NodeKind::Amount,
            NodeKind::Phrase,
            NodeKind::Word,
        ] {
            assert_eq!(NodeKind::from_code(k.code()), Some(k));
        }
        assert_eq!(NodeKind::from_code(9), None);
    }
}
