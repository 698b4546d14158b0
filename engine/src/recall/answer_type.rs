//! What kind of answer a question asks for, and whether a remembered fact holds one: "Where do
//! I live?" is answered by a fact that names a place, "When is the dentist?" by one that names
//! a day or a time, "How many cats…?" by a number, "Who is my GP?" by a name. A fusion signal
//! for remembered facts (`FusionWeights::answer_type`): short statements on one subject are
//! alike to the encoder, and the one that holds the kind of thing asked for is the answer more
//! often than the one that merely shares its words.
//!
//! The reading is by the question's first question words and a fact's words: places through the
//! offline gazetteer (`memdb_geo::places_in_text`, the same reading as the place signal), times
//! by month and day names, clock times and dates, numbers by digits and number words, names by
//! capitalised words that are not the sentence's first, a month, a day or a place.

use memdb_formats::item::MONTH_NAMES;

/// What a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wants {
    /// Where …?
    Place,
    /// When …? What time …? What day …?
    Time,
    /// How many …? How much …? How old …?
    Number,
    /// Who …? Whose …? What is X's name / called?
    Name,
}

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

const NUMBER_WORDS: [&str; 20] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "dozen", "twice",
];

/// What `question` asks for, if it is one of the kinds read here.
pub(crate) fn wants(question: &str) -> Option<Wants> {
    let words: Vec<String> = memdb_text::words(question).collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    let pair = |a: &str, b: &str| words.windows(2).any(|p| p[0] == a && p[1] == b);
    if has("where") {
        return Some(Wants::Place);
    }
    if has("when") || pair("what", "time") || pair("what", "day") || pair("which", "day") {
        return Some(Wants::Time);
    }
    if pair("how", "many") || pair("how", "much") || pair("how", "old") || pair("how", "long") {
        return Some(Wants::Number);
    }
    if has("who") || has("whose") || has("name") || has("called") {
        return Some(Wants::Name);
    }
    None
}

/// Whether `text` holds an answer of kind `want`.
pub(crate) fn offers(text: &str, want: Wants) -> bool {
    let spans: Vec<(usize, usize)> = memdb_text::spans(text).collect();
    let lower: Vec<String> = spans
        .iter()
        .map(|&(a, b)| text[a..b].to_lowercase())
        .collect();
    let digit = |w: &str| w.chars().any(|c| c.is_ascii_digit());
    match want {
        Wants::Place => memdb_geo::places_in_text(text).is_ok_and(|p| !p.is_empty()),
        Wants::Time => {
            lower.iter().any(|w| {
                MONTH_NAMES.contains(&w.as_str())
                    || WEEKDAYS.contains(&w.as_str())
                    || w == "am"
                    || w == "pm"
                    || w.ends_with("am") && digit(w)
                    || w.ends_with("pm") && digit(w)
                    || w == "tomorrow"
                    || w == "tonight"
            }) || text.contains(':') && lower.iter().any(|w| digit(w))
        }
        Wants::Number => lower
            .iter()
            .any(|w| digit(w) || NUMBER_WORDS.contains(&w.as_str())),
        Wants::Name => spans.iter().enumerate().skip(1).any(|(i, &(a, b))| {
            let word = &text[a..b];
            word.chars().next().is_some_and(char::is_uppercase)
                && word != "I"
                && !MONTH_NAMES.contains(&lower[i].as_str())
                && !WEEKDAYS.contains(&lower[i].as_str())
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_say_what_they_ask_for_and_facts_what_they_hold() {
        assert_eq!(wants("Where do I live?"), Some(Wants::Place));
        assert_eq!(wants("When is my dentist appointment?"), Some(Wants::Time));
        assert_eq!(wants("How many cats do I have?"), Some(Wants::Number));
        assert_eq!(wants("Who is my GP?"), Some(Wants::Name));
        assert_eq!(wants("What's my dog called?"), Some(Wants::Name));
        assert_eq!(wants("Am I vegetarian?"), None);
        assert!(offers("We moved to Porto in March", Wants::Place));
        assert!(!offers("Doing long distance now, hard", Wants::Place));
        assert!(offers("Dentist moved to Friday 10 March", Wants::Time));
        assert!(offers("Check-up at 4.15pm", Wants::Time));
        assert!(!offers("I like tea", Wants::Time));
        assert!(offers("Three cats now", Wants::Number));
        assert!(offers("My new GP is Dr Fujimoto", Wants::Name));
        assert!(!offers("I love my job", Wants::Name));
    }
}
