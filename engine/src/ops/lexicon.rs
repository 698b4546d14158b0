//! A small general-purpose English lexicon for the rule decider: words that name the same thing
//! in everyday personal facts, written from common usage (US/UK vocabulary and spelling pairs,
//! everyday near-synonyms, month abbreviations, number words), not from any scenario file.
//!
//! Every entry maps a lowercased word (diacritics folded) to the word it is read as; the
//! decider stems the result, so one entry covers a word's inflections only where the stemmer
//! joins them ("movies" needs no entry of its own). The list is deliberately short: a wrong
//! synonym makes two different facts look alike, which costs more than a missed one.

/// Words read as another word: (word, read as).
const SYNONYMS: &[(&str, &str)] = &[
    // US / UK vocabulary.
    ("movie", "film"),
    ("movies", "film"),
    ("apartment", "flat"),
    ("vacation", "holiday"),
    ("vacations", "holiday"),
    ("cilantro", "coriander"),
    ("zucchini", "courgette"),
    ("eggplant", "aubergine"),
    ("soccer", "football"),
    ("cellphone", "mobile"),
    ("cell", "mobile"),
    ("elevator", "lift"),
    ("truck", "lorry"),
    ("sneakers", "trainers"),
    ("candy", "sweets"),
    ("math", "maths"),
    ("mom", "mother"),
    ("mum", "mother"),
    ("mommy", "mother"),
    ("mummy", "mother"),
    ("dad", "father"),
    ("daddy", "father"),
    ("grandma", "grandmother"),
    ("granny", "grandmother"),
    ("nan", "grandmother"),
    ("nana", "grandmother"),
    ("grandpa", "grandfather"),
    ("grandad", "grandfather"),
    ("granddad", "grandfather"),
    ("attorney", "lawyer"),
    ("solicitor", "lawyer"),
    ("physician", "doctor"),
    ("gp", "doctor"),
    ("dr", "doctor"),
    ("tv", "television"),
    ("telly", "television"),
    // US / UK spelling.
    ("color", "colour"),
    ("favorite", "favourite"),
    ("favorites", "favourite"),
    ("center", "centre"),
    ("theater", "theatre"),
    ("meter", "metre"),
    ("meters", "metre"),
    ("liter", "litre"),
    ("liters", "litre"),
    ("gray", "grey"),
    ("jewelry", "jewellery"),
    ("neighbor", "neighbour"),
    ("neighbors", "neighbour"),
    ("flavor", "flavour"),
    ("license", "licence"),
    ("mustache", "moustache"),
    ("pajamas", "pyjamas"),
    ("tire", "tyre"),
    ("tires", "tyre"),
    ("aluminum", "aluminium"),
    ("donut", "doughnut"),
    // Everyday near-synonyms.
    ("kid", "child"),
    ("kids", "child"),
    ("children", "child"),
    ("love", "like"),
    ("loves", "like"),
    ("loved", "like"),
    ("enjoy", "like"),
    ("enjoys", "like"),
    ("enjoyed", "like"),
    ("adore", "like"),
    ("adores", "like"),
    ("likes", "like"),
    ("liked", "like"),
    ("like", "like"),
    ("hate", "dislike"),
    ("hates", "dislike"),
    ("detest", "dislike"),
    ("detests", "dislike"),
    ("loathe", "dislike"),
    ("loathes", "dislike"),
    ("dislikes", "dislike"),
    ("afraid", "fear"),
    ("scared", "fear"),
    ("frightened", "fear"),
    ("fears", "fear"),
    ("phobia", "fear"),
    ("fan", "support"),
    ("fans", "support"),
    ("supporter", "support"),
    ("supports", "support"),
    ("reservation", "book"),
    ("reservations", "book"),
    ("reserved", "book"),
    ("booking", "book"),
    ("booked", "book"),
    ("office", "work"),
    ("workplace", "work"),
    ("job", "work"),
    ("purchased", "bought"),
    ("purchase", "buy"),
    ("automobile", "car"),
    ("bicycle", "bike"),
    ("photograph", "photo"),
    ("photographs", "photo"),
    ("picture", "photo"),
    ("pictures", "photo"),
    ("daily", "day"),
    ("nightly", "night"),
    ("annual", "year"),
    ("annually", "year"),
    ("yearly", "year"),
    ("fortnightly", "fortnight"),
    ("large", "big"),
    ("huge", "big"),
    ("little", "small"),
    ("tiny", "small"),
    ("begin", "start"),
    ("begins", "start"),
    ("began", "start"),
    ("commence", "start"),
    ("commences", "start"),
    ("spouse", "partner"),
    ("residence", "home"),
    // Month and weekday abbreviations.
    ("jan", "january"),
    ("feb", "february"),
    ("mar", "march"),
    ("apr", "april"),
    ("jun", "june"),
    ("jul", "july"),
    ("aug", "august"),
    ("sep", "september"),
    ("sept", "september"),
    ("oct", "october"),
    ("nov", "november"),
    ("dec", "december"),
    ("mon", "monday"),
    ("tue", "tuesday"),
    ("tues", "tuesday"),
    ("wed", "wednesday"),
    ("thu", "thursday"),
    ("thurs", "thursday"),
    ("fri", "friday"),
    ("sat", "saturday"),
    ("sun", "sunday"),
];

/// Two-word phrases read as one word: (first, second, read as).
pub(super) const PHRASES: &[(&str, &str, &str)] = &[
    ("help", "out", "volunteer"),
    ("helps", "out", "volunteer"),
    ("helping", "out", "volunteer"),
    ("work", "out", "exercise"),
    ("works", "out", "exercise"),
    ("working", "out", "exercise"),
    ("fond", "of", "like"),
    ("keen", "on", "like"),
    ("goes", "by", "called"),
    ("go", "by", "called"),
    ("known", "as", "called"),
    ("signed", "up", "enrolled"),
    ("sign", "up", "enrolled"),
    ("registered", "for", "enrolled"),
    ("mobile", "phone", "phone"),
    ("cell", "phone", "phone"),
];

/// Verbs that carry little meaning of their own in a personal fact ("takes the train", "gets to
/// work", "pays £900 in rent"): they are neither new nor lost content.
pub(super) const LIGHT_VERBS: &[&str] = &[
    "take", "takes", "took", "taking", "catch", "catches", "caught", "catching", "go", "goes",
    "went", "going", "get", "gets", "got", "getting", "make", "makes", "made", "making", "do",
    "does", "did", "doing", "have", "has", "had", "having", "pay", "pays", "paid", "paying",
    "cost", "costs", "costing", "spend", "spends", "spent", "spending", "keep", "keeps", "kept",
];

/// Words that grade or quantify without naming anything ("very", "at all", "every").
pub(super) const GRADING: &[&str] = &[
    "very",
    "really",
    "quite",
    "totally",
    "completely",
    "absolutely",
    "entirely",
    "fully",
    "extremely",
    "super",
    "truly",
    "definitely",
    "certainly",
    "every",
    "each",
    "per",
    "usually",
    "generally",
    "normally",
    "typically",
    "regularly",
    "around",
    "about",
    "approximately",
    "roughly",
    "some",
    "any",
    "all",
];

/// Names of currencies: the amount is the value; "euros" and "€" say the same.
pub(super) const CURRENCIES: &[&str] = &[
    "euro", "euros", "eur", "pound", "pounds", "gbp", "quid", "dollar", "dollars", "usd", "bucks",
    "yen", "francs", "chf",
];

/// Number words below a hundred, with their values.
pub(super) const NUMBER_WORDS: &[(&str, u64)] = &[
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("fourth", 4),
    ("fifth", 5),
    ("sixth", 6),
    ("seventh", 7),
    ("eighth", 8),
    ("ninth", 9),
    ("tenth", 10),
    ("eleventh", 11),
    ("twelfth", 12),
    ("single", 1),
    ("once", 1),
    ("twice", 2),
    ("pair", 2),
    ("dozen", 12),
    ("noon", 12),
    ("midday", 12),
];

/// Number words that multiply what comes before them ("twelve hundred", "2 thousand").
pub(super) const MULTIPLIERS: &[(&str, u64)] = &[
    ("hundred", 100),
    ("thousand", 1_000),
    ("million", 1_000_000),
    ("billion", 1_000_000_000),
];

/// Month names, in order (an ISO date's month is spelled with them).
pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Words that say a text is about someone other than the person: the people of their life by
/// relation ("my sister"), read by the decider and by recall's subject match.
pub(crate) const OTHERS: &[&str] = &[
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
    "partner",
    "fiance",
    "fiancee",
    "niece",
    "nephew",
    "grandson",
    "granddaughter",
    "stepmother",
    "stepfather",
    "stepson",
    "stepdaughter",
    "flatmate",
    "housemate",
];

/// The relation words of `text` ("sister", "mother" for "mum"), lowercased and read through
/// the lexicon.
pub(crate) fn relations_in(text: &str) -> std::collections::BTreeSet<&'static str> {
    memdb_text::words(text)
        .filter_map(|w| {
            let read = synonym(&w);
            OTHERS
                .iter()
                .find(|o| **o == read || **o == w.as_str())
                .copied()
        })
        .map(|o| {
            let read = synonym(o);
            OTHERS.iter().find(|x| **x == read).copied().unwrap_or(o)
        })
        .collect()
}

/// The word `word` is read as (itself when the lexicon has nothing for it).
pub(super) fn synonym(word: &str) -> &str {
    SYNONYMS
        .iter()
        .find(|(w, _)| *w == word)
        .map_or(word, |(_, read_as)| read_as)
}

/// Whether the lexicon reads `word` as something (even itself, as "like").
pub(super) fn is_listed(word: &str) -> bool {
    SYNONYMS.iter().any(|(w, _)| *w == word)
}

/// `word` with the diacritics of Latin letters removed ("barça" → "barca", "málaga" →
/// "malaga"), so a name spelled with or without them is one word.
pub(super) fn fold(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => out.push('a'),
            'ç' | 'ć' | 'č' => out.push('c'),
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' => out.push('e'),
            'ì' | 'í' | 'î' | 'ï' | 'ī' => out.push('i'),
            'ñ' | 'ń' => out.push('n'),
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' => out.push('o'),
            'ù' | 'ú' | 'û' | 'ü' | 'ū' => out.push('u'),
            'ý' | 'ÿ' => out.push('y'),
            'ł' => out.push('l'),
            'ś' | 'š' => out.push('s'),
            'ź' | 'ż' | 'ž' => out.push('z'),
            'ß' => out.push_str("ss"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_read_as_their_listed_synonym_or_themselves() {
        assert_eq!(synonym("movie"), "film");
        assert_eq!(synonym("cilantro"), "coriander");
        assert_eq!(synonym("giraffe"), "giraffe");
        assert!(is_listed("like") && !is_listed("giraffe"));
    }

    #[test]
    fn diacritics_fold_to_plain_letters() {
        assert_eq!(fold("barça"), "barca");
        assert_eq!(fold("málaga"), "malaga");
        assert_eq!(fold("straße"), "strasse");
        assert_eq!(fold("plain"), "plain");
    }

    #[test]
    fn no_word_is_listed_twice() {
        let mut words: Vec<&str> = SYNONYMS.iter().map(|(w, _)| *w).collect();
        words.sort_unstable();
        let before = words.len();
        words.dedup();
        assert_eq!(before, words.len());
    }
}
