//! Fact extraction on the device (Mem0's extract step, MemLoRA's "extract" expert without a
//! model): what a person said, sentence by sentence, as the facts it states — or skipped, with
//! the reason.
//!
//! A sentence (split at line breaks and at `.`, `!`, `?` or `;` before a new sentence) is read
//! in this order:
//! 1. leading fillers are dropped ("btw", "just so you know,", "oh and", "remember that");
//! 2. a question ("Do you like it?", "how are you") is skipped: it asks, it states nothing;
//! 3. small talk — greetings, thanks, acknowledgements, laughter, goodbyes ("hi", "lol ok",
//!    "Thanks, that's all for today") — is skipped;
//! 4. a reaction to someone else ("That sounds great, Mel!", "Congrats!", "Wow, that's
//!    amazing") with no word about the speaker is skipped;
//! 5. a sentence with no content word at all is skipped;
//! 6. everything else is a fact: likes and dislikes, diets, allergies, names, numbers and codes
//!    included ("I like tea.", "The wifi password at the cabin is bluefjord42."). A compound
//!    sentence of two clauses joined by "and", "but" or "then" is two facts, the second taking
//!    the first's subject when it has none of its own ("I quit Santander and now work at
//!    Farfetch" → "I quit Santander", "I now work at Farfetch"); a list of things ("I like tea
//!    and coffee") stays one fact.
//!
//! Invariant: every sentence of the input is accounted for — it yields at least one fact or a
//! reason it yields none — and a non-empty statement never yields nothing without a reason.

use super::remember::Message;
use crate::error::Result;

/// What one sentence (or, for a model, one message) gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The sentence as said.
    pub said: String,
    /// Who said it.
    pub speaker: Option<String>,
    /// The facts it states, in order (empty when skipped).
    pub facts: Vec<String>,
    /// Why it states none (`None` when it gave facts).
    pub skipped: Option<String>,
}

/// Turns input messages into facts (Mem0's extraction step).
pub trait FactExtractor: Send + Sync + std::fmt::Debug {
    /// What each sentence (or message) of `messages` gave, in order.
    fn extract(&self, messages: &[Message]) -> Result<Vec<Extracted>>;
}

/// The deterministic extractor of this module's rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct SentenceExtractor;

impl FactExtractor for SentenceExtractor {
    fn extract(&self, messages: &[Message]) -> Result<Vec<Extracted>> {
        let mut out = Vec::new();
        for message in messages {
            for sentence in joined(sentences(&message.text)) {
                let (facts, skipped) = match read_sentence(&sentence) {
                    Ok(facts) => (facts, None),
                    Err(why) => (Vec::new(), Some(why.to_owned())),
                };
                out.push(Extracted {
                    said: sentence,
                    speaker: message.speaker.clone(),
                    facts,
                    skipped,
                });
            }
        }
        Ok(out)
    }
}

/// Words that point back to what the sentence before named ("Bought a newer boat. She's called
/// Stormfågel."): a sentence opening with one continues the one before.
const BACK_REFERENCES: &[&str] = &[
    "he", "she", "it", "they", "his", "her", "its", "their", "he's", "she's", "it's", "they're",
    "him", "them",
];

/// The most words of a fragment ("Moved!", "Traded the van in") that says what happened without
/// what it is about: it is read with the sentence after it.
const FRAGMENT_WORDS: usize = 3;

/// `sentences` with a sentence that points back ("She's called Stormfågel") joined to the one
/// before it, and a short fragment ("Moved!") joined to the one after it, when those state facts:
/// each is one memory with the sentence it leans on, not a memory no question can find.
fn joined(sentences: Vec<String>) -> Vec<String> {
    let states = |s: &str| read_sentence(s).is_ok();
    let mut backward: Vec<String> = Vec::with_capacity(sentences.len());
    for sentence in sentences {
        let first = words_of(&sentence).first().map(|w| w.lower.clone());
        let points_back = first.is_some_and(|w| BACK_REFERENCES.contains(&w.as_str()));
        match backward.last_mut() {
            Some(before) if points_back && states(before) && states(&sentence) => {
                let before_text = before.trim_end_matches(['!', '.']).to_owned();
                *before = format!("{before_text}, {}", lower_first(&sentence));
            }
            _ => backward.push(sentence),
        }
    }
    let mut out: Vec<String> = Vec::with_capacity(backward.len());
    let mut fragment: Option<String> = None;
    for sentence in backward {
        let words = words_of(&sentence);
        let is_fragment = words.len() <= FRAGMENT_WORDS
            && !words
                .iter()
                .any(|w| w.lower.chars().any(|c| c.is_ascii_digit()))
            && states(&sentence);
        let sentence = match fragment.take() {
            Some(f) if states(&sentence) => {
                format!("{}: {sentence}", f.trim_end_matches(['!', '.']))
            }
            Some(f) => {
                out.push(f);
                sentence
            }
            None => sentence,
        };
        if is_fragment {
            fragment = Some(sentence);
        } else {
            out.push(sentence);
        }
    }
    out.extend(fragment);
    out
}

/// `text` with its first letter lower-case, unless it is "I" or starts a name-like word written
/// all in capitals.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if !text.starts_with("I ") && !text.starts_with("I'") => {
            c.to_lowercase().chain(chars).collect()
        }
        _ => text.to_owned(),
    }
}

/// Words written with a full stop that do not end a sentence ("Dr. Fujimoto", "St. Ives").
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "mx", "prof", "st", "jr", "sr", "mt", "ft", "no", "vs", "etc",
    "approx", "dept", "inc", "ltd", "co", "ave", "rd", "apt", "gen", "capt", "sgt", "rev", "fr",
    "e.g", "i.e",
];

/// The sentences of `text`: split at line breaks, and after `!`, `?` or `;` followed by white
/// space, and after `.` followed by white space and then a letter, a digit or the end — unless
/// the word before it is a title or abbreviation ("Dr. Fujimoto"), a single letter (an initial)
/// or holds a full stop itself ("U.S.", "e.g.") —; trimmed, without a final `.` or `;`. A sentence keeps a
/// final `?` or `!`, which [`read_sentence`] reads.
pub(crate) fn sentences(text: &str) -> Vec<String> {
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
                    && after_space.is_none_or(|n| n.is_alphanumeric() || !n.is_ascii())
                    && !abbreviated(&chars[..i])
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

/// Whether the word that ends `before` is an abbreviation or a single letter.
fn abbreviated(before: &[char]) -> bool {
    let start = before
        .iter()
        .rposition(|c| c.is_whitespace() || *c == '(')
        .map_or(0, |p| p + 1);
    let word: String = before[start..].iter().collect::<String>().to_lowercase();
    (word.chars().count() == 1 && word.chars().all(char::is_alphabetic))
        || ABBREVIATIONS.contains(&word.as_str())
        // "U.S.", "e.g.": a word with a full stop inside is an abbreviation.
        || word.trim_end_matches('.').contains('.')
}

fn push_sentence(out: &mut Vec<String>, current: &mut String) {
    let trimmed = current.trim().trim_end_matches(['.', ';']).trim();
    if !trimmed.is_empty() {
        out.push(trimmed.to_owned());
    }
    current.clear();
}

/// Leading words that frame a statement without being part of it, longest first.
const FILLERS: &[&[&str]] = &[
    &["just", "so", "you", "know"],
    &["just", "to", "let", "you", "know"],
    &["i", "wanted", "to", "let", "you", "know"],
    &["i", "want", "you", "to", "know"],
    &["please", "remember", "that"],
    &["please", "note", "that"],
    &["note", "to", "self"],
    &["for", "the", "record"],
    &["just", "a", "heads", "up"],
    &["heads", "up"],
    &["quick", "update"],
    &["by", "the", "way"],
    &["remember", "that"],
    &["oh", "and"],
    &["ok", "so"],
    &["okay", "so"],
    &["btw"],
    &["fyi"],
    &["oh"],
    &["so"],
    &["well"],
    &["anyway"],
    &["anyways"],
    &["and"],
    &["update"],
    &["hey"],
    &["hi"],
    &["hiya"],
    &["howya"],
    &["hello"],
    &["g'day"],
    &["hola"],
    &["mate"],
    &["morning"],
    &["um"],
    &["uh"],
];

/// Words of small talk: a sentence made of these alone states no fact.
const SMALL_TALK: &[&str] = &[
    "a",
    "adios",
    "afternoon",
    "again",
    "ah",
    "all",
    "alright",
    "and",
    "annoying",
    "are",
    "argh",
    "aw",
    "awesome",
    "aww",
    "boa",
    "bom",
    "bonjour",
    "buenas",
    "buenos",
    "bye",
    "catch",
    "chat",
    "cheers",
    "ciao",
    "cool",
    "damn",
    "danke",
    "day",
    "doing",
    "evening",
    "everything",
    "fine",
    "for",
    "g'day",
    "going",
    "good",
    "goodbye",
    "goodnight",
    "gracias",
    "grazie",
    "great",
    "guess",
    "gute",
    "gutted",
    "ha",
    "haha",
    "hahaha",
    "hallo",
    "hehe",
    "hej",
    "hello",
    "hey",
    "hi",
    "hiya",
    "hm",
    "hmm",
    "hola",
    "how",
    "howya",
    "i",
    "is",
    "it",
    "it's",
    "k",
    "kk",
    "later",
    "lmao",
    "lol",
    "m",
    "many",
    "mate",
    "me",
    "meh",
    "merci",
    "morning",
    "much",
    "nacht",
    "nice",
    "night",
    "no",
    "noche",
    "noches",
    "noite",
    "nope",
    "now",
    "obrigada",
    "obrigado",
    "of",
    "oh",
    "ok",
    "okay",
    "okey",
    "on",
    "oops",
    "phew",
    "please",
    "right",
    "rofl",
    "s",
    "salut",
    "see",
    "sigh",
    "so",
    "soon",
    "sounds",
    "sure",
    "talk",
    "tchau",
    "thank",
    "thanks",
    "that",
    "that's",
    "the",
    "there",
    "this",
    "thx",
    "to",
    "today",
    "tschuss",
    "tschüss",
    "ty",
    "u",
    "ugh",
    "uh",
    "um",
    "up",
    "ur",
    "very",
    "want",
    "was",
    "well",
    "what",
    "what's",
    "with",
    "wow",
    "x",
    "xo",
    "xx",
    "ya",
    "yay",
    "yeah",
    "yep",
    "yes",
    "you",
    "your",
    "yup",
];

/// Words that open a reaction to what someone else said.
const REACTION_OPENERS: &[&str] = &[
    "that",
    "that's",
    "thats",
    "this",
    "it",
    "it's",
    "sounds",
    "wow",
    "oh",
    "aw",
    "aww",
    "omg",
    "congrats",
    "congratulations",
    "good",
    "glad",
    "sorry",
    "awesome",
    "amazing",
    "great",
    "nice",
    "cool",
    "lovely",
    "what",
    "how",
    "so",
    "yay",
    "haha",
    "lol",
];

/// Words that judge something said, in a reaction.
const EVALUATIVE: &[&str] = &[
    "amazing",
    "awesome",
    "beautiful",
    "brave",
    "congrats",
    "congratulations",
    "cool",
    "crazy",
    "cute",
    "exciting",
    "fantastic",
    "fun",
    "funny",
    "glad",
    "good",
    "great",
    "happy",
    "hard",
    "impressive",
    "incredible",
    "inspiring",
    "interesting",
    "lovely",
    "luck",
    "nice",
    "proud",
    "rough",
    "sad",
    "scary",
    "sorry",
    "special",
    "stunning",
    "sweet",
    "terrible",
    "tough",
    "wonderful",
];

/// Verbs a reaction uses ("sounds great", "looks amazing").
const REACTION_VERBS: &[&str] = &["sounds", "sound", "looks", "look", "seems", "seem"];

/// Words that put the speaker in a sentence.
const FIRST_PERSON: &[&str] = &[
    "i", "me", "my", "mine", "we", "us", "our", "ours", "i'm", "i've",
];

/// Words that open a question.
const QUESTION_OPENERS: &[&str] = &[
    "who", "what", "when", "where", "why", "how", "which", "whose", "do", "does", "did", "can",
    "could", "would", "will", "is", "are", "am", "should", "shall", "have", "has", "may",
];

/// Subject words: a clause that starts with one has its own subject.
const SUBJECTS: &[&str] = &[
    "i", "we", "he", "she", "they", "you", "it", "my", "our", "his", "her", "their", "your", "i'm",
    "we're", "he's", "she's", "they're", "i've", "we've", "i'd", "we'd", "i'll", "we'll", "there",
];

/// Words that may stand before a clause's verb without being its subject.
const CLAUSE_ADVERBS: &[&str] = &[
    "now",
    "then",
    "also",
    "recently",
    "later",
    "just",
    "since",
    "currently",
    "finally",
    "today",
    "yesterday",
    "soon",
    "already",
    "eventually",
    "still",
    "instead",
    "actually",
    "meanwhile",
];

/// Common verbs in the forms a statement about a person's life uses. With the `-ed` rule in
/// [`is_verb`], what tells a clause ("… and moved to Porto") from a list ("… and coffee").
const VERBS: &[&str] = &[
    "am", "are", "ate", "be", "became", "become", "becomes", "began", "begin", "begins", "bought",
    "broke", "buy", "buys", "call", "calls", "came", "can", "cancel", "cancels", "come", "comes",
    "did", "do", "does", "drank", "drink", "drinks", "drive", "drives", "drove", "eat", "eats",
    "feel", "feels", "felt", "find", "finds", "flew", "fly", "flies", "found", "gave", "get",
    "gets", "give", "gives", "go", "goes", "going", "got", "gotten", "had", "has", "hate", "hates",
    "have", "is", "join", "joins", "keep", "keeps", "kept", "know", "knows", "leave", "leaves",
    "left", "like", "likes", "live", "lives", "lost", "love", "loves", "made", "make", "makes",
    "married", "marry", "meet", "meets", "met", "move", "moves", "need", "needs", "own", "owns",
    "paid", "pay", "pays", "plan", "plans", "play", "plays", "prefer", "prefers", "put", "quit",
    "quits", "ran", "rent", "rents", "run", "runs", "said", "sell", "sells", "sent", "sold",
    "spend", "spends", "spent", "start", "starts", "stay", "stays", "stop", "stops", "studies",
    "study", "switch", "switches", "take", "takes", "teach", "teaches", "took", "taught", "use",
    "uses", "visit", "visits", "want", "wants", "was", "went", "were", "will", "work", "works",
    "won", "wrote", "write", "writes",
];

/// Words ending in "-ed" that are not past tenses.
const NOT_VERBS_ED: &[&str] = &[
    "bed", "red", "shed", "wed", "need", "seed", "speed", "feed", "weed", "bread", "head", "dead",
    "lead", "thread", "shred", "sled", "hundred", "breed", "greed", "tweed", "reed", "deed",
];

/// Whether `word` (lowercased) reads as a verb here.
fn is_verb(word: &str) -> bool {
    VERBS.contains(&word)
        || (word.len() > 4
            && word.ends_with("ed")
            && word.chars().all(|c| c.is_ascii_alphabetic())
            && !NOT_VERBS_ED.contains(&word))
        || word.ends_with("'m")
        || word.ends_with("'ve")
        || word.ends_with("'s") && SUBJECTS.contains(&word)
}

/// One word of a sentence: its text and byte range.
#[derive(Debug, Clone)]
pub(super) struct Word {
    /// Lowercased, curly apostrophes straight.
    pub(super) lower: String,
    /// Where it starts in the text (bytes).
    pub(super) start: usize,
    /// Where it ends.
    pub(super) end: usize,
}

/// The words of `text` with their byte ranges; an apostrophe inside a word keeps it one word
/// ("don't", "I'm"), curly ones read as straight.
pub(super) fn words_of(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let apostrophe = (c == '\'' || c == '’')
            && start.is_some()
            && chars.get(k + 1).is_some_and(|&(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() || c == '_' || apostrophe {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push(word(text, s, i));
        }
    }
    if let Some(s) = start {
        out.push(word(text, s, text.len()));
    }
    out
}

fn word(text: &str, start: usize, end: usize) -> Word {
    Word {
        lower: text[start..end].to_lowercase().replace('’', "'"),
        start,
        end,
    }
}

/// The facts of one sentence, or why it has none.
fn read_sentence(sentence: &str) -> std::result::Result<Vec<String>, &'static str> {
    let question = sentence.trim_end().ends_with('?');
    let text = strip_fillers(sentence.trim().trim_end_matches(['!', '?', '.']).trim());
    let words = words_of(text);
    if words.is_empty() {
        return Err("no words, only punctuation or symbols");
    }
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    if question || (QUESTION_OPENERS.contains(&lower[0]) && lower.len() <= 5 && is_small(&lower)) {
        return Err("a question: it asks, it states no fact");
    }
    if lower.iter().all(|w| SMALL_TALK.contains(w)) {
        return Err("small talk (a greeting, thanks or acknowledgement): no fact");
    }
    if is_reaction(&lower) {
        return Err("a reaction to what someone else said: no fact about the speaker");
    }
    let content = lower
        .iter()
        .filter(|w| !memdb_text::is_stopword(w) && !SMALL_TALK.contains(w) && w.len() > 1)
        .count()
        + lower
            .iter()
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .count();
    if content == 0 {
        return Err("no content word: nothing to remember");
    }
    Ok(split_clauses(text, &words))
}

/// Whether every word is small talk or a question word (a short question without `?`: "how
/// are you", "what's up").
fn is_small(lower: &[&str]) -> bool {
    lower
        .iter()
        .all(|w| SMALL_TALK.contains(w) || QUESTION_OPENERS.contains(w))
}

/// Whether the sentence reacts to someone else's words: it opens as a reaction, judges
/// ("great", "amazing") or reacts ("sounds", "looks"), and says nothing of the speaker.
fn is_reaction(lower: &[&str]) -> bool {
    let opens = REACTION_OPENERS.contains(&lower[0])
        || lower.starts_with(&["good", "luck"])
        || lower.starts_with(&["well", "done"]);
    let judges = lower
        .iter()
        .any(|w| EVALUATIVE.contains(w) || REACTION_VERBS.contains(w));
    let about_speaker = lower.iter().any(|w| FIRST_PERSON.contains(w));
    let has_number = lower.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()));
    opens && judges && !about_speaker && !has_number && lower.len() <= 12
}

/// `text` without its leading fillers (and the comma after them).
fn strip_fillers(text: &str) -> &str {
    let mut rest = text;
    loop {
        let words = words_of(rest);
        let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
        let Some(filler) = FILLERS
            .iter()
            .find(|f| lower.len() > f.len() && lower.starts_with(f))
        else {
            return rest;
        };
        let end = words[filler.len() - 1].end;
        let next = words[filler.len()].start;
        // A filler is followed by a comma or a dash, or runs straight into the statement.
        let between = rest[end..next].trim();
        if !(between.is_empty() || between == "," || between == "-" || between == "—") {
            return rest;
        }
        rest = &rest[next..];
    }
}

/// Conjunctions that may join two clauses.
const CLAUSE_JOINS: &[&[&str]] = &[&["and", "then"], &["and"], &["but"], &["then"]];

/// Words that open a relative clause: a comma before one does not end a fact ("My passport,
/// which expires in 2030, …").
const RELATIVES: &[&str] = &["which", "who", "whom", "whose", "that", "where", "when"];

/// Words that place or relate a noun phrase ("developer at Santander"): an appositive after an
/// introduction ("I'm Inês, developer at Santander") holds one.
const PREPOSITIONS: &[&str] = &["at", "in", "for", "with", "from", "on", "of", "near", "by"];

/// Whether a comma stands between word `i - 1` and word `i` of `text`.
fn comma_before(text: &str, words: &[Word], i: usize) -> bool {
    i > 0 && text[words[i - 1].end..words[i].start].contains(',')
}

/// The clauses of a statement: split where "and", "but" or "then" is followed by a clause (a
/// subject, or a verb after optional adverbs) and preceded by one, and at a comma before a
/// clause, a participle ("…, living in Alfama") or, after an introduction ("I'm Inês, …"), a
/// noun phrase that places itself ("…, backend developer at Santander"); the second clause
/// takes the first's subject when it starts with its verb.
fn split_clauses(text: &str, words: &[Word]) -> Vec<String> {
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    let mut cuts: Vec<(usize, usize)> = Vec::new(); // (index of the join's first word, words in it)
    let mut i = 1;
    while i < lower.len() {
        let start_of_left = cuts.last().map_or(0, |(at, n)| at + n);
        let join = CLAUSE_JOINS
            .iter()
            .find(|j| lower[i..].starts_with(j) && i + j.len() < lower.len());
        let points_back = |at: usize| lower.get(at).is_some_and(|w| BACK_REFERENCES.contains(w));
        if let Some(join) = join {
            let after = i + join.len();
            if is_clause(&lower[after..])
                && has_verb(&lower[start_of_left..i])
                && !points_back(after)
            {
                cuts.push((i, join.len()));
                i = after;
                continue;
            }
        }
        if comma_before(text, words, i) && join.is_none() {
            // The segment after the comma, to the next comma or the end.
            let end = (i + 1..lower.len())
                .find(|&k| comma_before(text, words, k))
                .unwrap_or(lower.len());
            let right = &lower[i..end];
            let left = &lower[start_of_left..i];
            let participle = right[0].len() > 4 && right[0].ends_with("ing");
            // "I'm Inês, …", or a name alone ("Lena Fischer, compliance officer at UBS").
            let named = (start_of_left..i).all(|k| {
                text[words[k].start..]
                    .chars()
                    .next()
                    .is_some_and(char::is_uppercase)
            });
            let introduction = left.len() <= 3
                && (left.starts_with(&["i'm"])
                    || left.starts_with(&["i", "am"])
                    || left.starts_with(&["im"])
                    || named);
            let own_subject = SUBJECTS.contains(&right[0]) && is_clause(right);
            let placed = right.iter().take(4).any(|w| PREPOSITIONS.contains(w));
            let splits = right.len() >= 3
                && !RELATIVES.contains(&right[0])
                && !points_back(i)
                && ((has_verb(left) && is_clause(right))
                    || own_subject
                    || (left.len() >= 2 && participle)
                    || (introduction && placed));
            if splits {
                cuts.push((i, 0));
            }
        }
        i += 1;
    }
    if cuts.is_empty() {
        return vec![tidy(text)];
    }
    let mut out = Vec::new();
    let mut from = 0;
    let mut subject: Option<String> = None;
    for (k, &(at, n)) in cuts
        .iter()
        .chain(std::iter::once(&(lower.len(), 0)))
        .enumerate()
    {
        let clause_words = &words[from..at];
        let (Some(first), Some(last)) = (clause_words.first(), clause_words.last()) else {
            continue;
        };
        let clause = &text[first.start..last.end];
        let clause_lower: Vec<&str> = clause_words.iter().map(|w| w.lower.as_str()).collect();
        if k == 0 {
            subject = subject_of(text, clause_words);
            out.push(tidy(clause));
        } else {
            let starts_with_verb = !SUBJECTS.contains(&clause_lower[0])
                && clause_lower
                    .iter()
                    .take_while(|w| CLAUSE_ADVERBS.contains(w))
                    .count()
                    < clause_lower.len()
                && is_verb(
                    clause_lower
                        .iter()
                        .find(|w| !CLAUSE_ADVERBS.contains(w))
                        .copied()
                        .unwrap_or(""),
                );
            match (&subject, starts_with_verb) {
                (Some(s), true) => out.push(tidy(&format!("{s} {clause}"))),
                _ => {
                    if !starts_with_verb {
                        subject = subject_of(text, clause_words);
                    }
                    out.push(tidy(clause));
                }
            }
        }
        from = at + n;
    }
    out
}

/// Whether `lower` starts a clause: a subject word, or a verb after optional adverbs.
fn is_clause(lower: &[&str]) -> bool {
    let first = lower
        .iter()
        .find(|w| !CLAUSE_ADVERBS.contains(w))
        .copied()
        .unwrap_or("");
    lower.len() >= 2 && (SUBJECTS.contains(&first) || is_verb(first))
}

/// Whether `lower` holds a verb (the left side of a join is a clause, not a subject alone as in
/// "Me and my wife moved …").
fn has_verb(lower: &[&str]) -> bool {
    lower.len() >= 2 && lower.iter().any(|w| is_verb(w))
}

/// The subject of a clause of `text` whose words are `words`: the words before its first verb,
/// when they are few and start with a subject word ("I", "My sister"), as written.
fn subject_of(text: &str, words: &[Word]) -> Option<String> {
    let verb = words.iter().position(|w| is_verb(&w.lower))?;
    if verb == 0 || verb > 4 || !SUBJECTS.contains(&words[0].lower.as_str()) {
        return None;
    }
    let subject = text.get(words[0].start..words[verb - 1].end)?;
    // "I'm" and "We've" hold their verb: the subject is the pronoun alone.
    Some(match subject.find(['\'', '’']) {
        Some(cut) if verb == 1 => subject[..cut].to_owned(),
        _ => subject.to_owned(),
    })
}

/// A clause as a fact: trimmed of spaces and of the punctuation around it, its first letter
/// upper-case.
fn tidy(clause: &str) -> String {
    let t = clause.trim().trim_matches([',', ';', ':', '-', '—']).trim();
    let mut chars = t.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(text: &str) -> Vec<(Vec<String>, Option<String>)> {
        SentenceExtractor
            .extract(&[Message {
                speaker: None,
                text: text.into(),
            }])
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.facts, e.skipped))
            .collect()
    }

    fn only_facts(text: &str) -> Vec<String> {
        facts(text).into_iter().flat_map(|(f, _)| f).collect()
    }

    #[test]
    fn lower_case_sentences_split_and_abbreviations_do_not() {
        assert_eq!(
            sentences("I like tea. lol ok. we met at the U.S. embassy. e.g. in May"),
            [
                "I like tea",
                "lol ok",
                "we met at the U.S. embassy",
                "e.g. in May"
            ]
        );
    }

    #[test]
    fn titles_and_initials_do_not_end_a_sentence() {
        assert_eq!(
            sentences("My new GP is Dr. Fujimoto. She's great. J. R. Tolkien wrote it."),
            [
                "My new GP is Dr. Fujimoto",
                "She's great",
                "J. R. Tolkien wrote it"
            ]
        );
    }

    #[test]
    fn sentences_split_statements_and_keep_abbreviations() {
        assert_eq!(
            sentences(
                "Hi! I moved to Porto in March 2024. Do you like it? My sister lives in \
                 Lisbon; she works at the U.S. embassy.\nOk"
            ),
            [
                "Hi!",
                "I moved to Porto in March 2024",
                "Do you like it?",
                "My sister lives in Lisbon",
                "she works at the U.S. embassy",
                "Ok"
            ]
        );
    }

    #[test]
    fn every_sentence_is_a_fact_or_skipped_with_a_reason() {
        let got = facts(
            "Hi! I moved to Porto in March 2024. Do you like it? lol ok. Thanks, that's all \
             for today. That sounds great, Mel!",
        );
        assert_eq!(got.len(), 6, "{got:?}");
        assert_eq!(got[1].0, ["I moved to Porto in March 2024"]);
        for (i, (facts, skipped)) in got.iter().enumerate() {
            assert!(facts.is_empty() != skipped.is_none(), "{i}: {got:?}");
        }
        assert!(
            got[0]
                .1
                .as_deref()
                .is_some_and(|r| r.contains("small talk"))
        );
        assert!(got[2].1.as_deref().is_some_and(|r| r.contains("question")));
        assert!(
            got[3]
                .1
                .as_deref()
                .is_some_and(|r| r.contains("small talk"))
        );
        assert!(
            got[4]
                .1
                .as_deref()
                .is_some_and(|r| r.contains("small talk"))
        );
        assert!(got[5].1.as_deref().is_some_and(|r| r.contains("reaction")));
    }

    #[test]
    fn short_likes_diets_and_codes_are_facts() {
        for text in [
            "I like tea.",
            "I am vegetarian.",
            "I like coffee.",
            "The wifi password at the cabin is bluefjord42",
            "I'm allergic to peanuts",
            "My cat is called Miso",
            "Shoe size 42",
        ] {
            assert_eq!(only_facts(text).len(), 1, "{text}");
        }
        assert_eq!(only_facts("I like tea."), ["I like tea"]);
    }

    #[test]
    fn compound_sentences_become_one_fact_per_clause() {
        assert_eq!(
            only_facts("I quit Santander and now work at Farfetch."),
            ["I quit Santander", "I now work at Farfetch"]
        );
        assert_eq!(
            only_facts("We left Lisbon and moved to Porto in March."),
            ["We left Lisbon", "We moved to Porto in March"]
        );
        assert_eq!(
            only_facts("Sold the Golf and bought a Tesla Model 3"),
            ["Sold the Golf", "Bought a Tesla Model 3"]
        );
        assert_eq!(
            only_facts("My sister moved to Rome and works at FAO"),
            ["My sister moved to Rome", "My sister works at FAO"]
        );
        // A clause that points back ("she") stays with the one it points to.
        assert_eq!(
            only_facts("I asked Dana to marry me last night and she said YES"),
            ["I asked Dana to marry me last night and she said YES"]
        );
        assert_eq!(
            only_facts("My sister Marta lives in Rome now, she got a job at FAO"),
            ["My sister Marta lives in Rome now, she got a job at FAO"]
        );
        assert_eq!(
            only_facts("I have a dog and a cat"),
            ["I have a dog and a cat"]
        );
        assert_eq!(
            only_facts("I like tea and coffee"),
            ["I like tea and coffee"]
        );
        assert_eq!(
            only_facts("Me and my wife moved to Porto"),
            ["Me and my wife moved to Porto"]
        );
        assert_eq!(
            only_facts(
                "I'm Inês, backend developer at Banco Santander, living in Alfama in Lisbon."
            ),
            [
                "I'm Inês",
                "Backend developer at Banco Santander",
                "Living in Alfama in Lisbon"
            ]
        );
        assert_eq!(
            only_facts("Sofia, soprano, I teach voice at the conservatorio in Bologna"),
            [
                "Sofia, soprano",
                "I teach voice at the conservatorio in Bologna"
            ]
        );
        assert_eq!(
            only_facts("Lena Fischer, compliance officer at UBS in Zürich"),
            ["Lena Fischer", "Compliance officer at UBS in Zürich"]
        );
        assert_eq!(
            only_facts("My passport, which expires in 2030, is in the drawer"),
            ["My passport, which expires in 2030, is in the drawer"]
        );
        assert_eq!(
            only_facts("I like tea, coffee and cake"),
            ["I like tea, coffee and cake"]
        );
        assert_eq!(
            only_facts("I moved to Leeds, I work at the BBC now"),
            ["I moved to Leeds", "I work at the BBC now"]
        );
        assert_eq!(
            only_facts("I'm not allergic to peanuts anymore. I'm allergic to cashews."),
            [
                "I'm not allergic to peanuts anymore",
                "I'm allergic to cashews"
            ]
        );
    }

    #[test]
    fn sentences_that_lean_on_another_are_read_with_it() {
        assert_eq!(
            only_facts("Bought a newer boat. She's called Stormfågel."),
            ["Bought a newer boat, she's called Stormfågel"]
        );
        assert_eq!(
            only_facts("Moved! We're in Brunswick now. The animals hated the drive."),
            [
                "Moved: We're in Brunswick now",
                "The animals hated the drive"
            ]
        );
        assert_eq!(
            facts("Hiya, I'm Aisha. Annoying. Gutted.")
                .iter()
                .filter(|(f, _)| !f.is_empty())
                .count(),
            1
        );
        assert_eq!(only_facts("Hiya, I'm Aisha"), ["I'm Aisha"]);
    }

    #[test]
    fn fillers_go_and_the_statement_stays() {
        assert_eq!(
            only_facts("Morning! Just so you know, I switched to oat milk."),
            ["I switched to oat milk"]
        );
        assert_eq!(
            only_facts("btw my locker number is 117"),
            ["My locker number is 117"]
        );
        assert_eq!(
            only_facts("Oh and remember that the door code is 4471"),
            ["The door code is 4471"]
        );
    }

    #[test]
    fn reactions_with_the_speakers_own_news_keep_the_news() {
        assert_eq!(
            only_facts("Wow, that's amazing, Caroline! I've always wanted to try pottery."),
            ["I've always wanted to try pottery"]
        );
        // A judgement about the speaker's own life is a fact.
        assert_eq!(only_facts("My new job is great").len(), 1);
    }
}
