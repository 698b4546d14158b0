//! Names as the geocoder compares them: lower-case ASCII letters and digits, one space between
//! words. "Saint-Étienne" and "saint etienne" are the same key, "München" is "munchen", "Łódź"
//! is "lodz", "St. Albans" is "st albans"; an apostrophe ends a word as any punctuation does
//! ("Hell's Kitchen" is "hell s kitchen"), so a possessive in a text ("São Paulo's") still holds
//! the name.

/// The comparison key of a name (empty when it has no letter or digit).
pub(crate) fn fold(name: &str) -> String {
    let ascii = if name.is_ascii() {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(deunicode::deunicode(name))
    };
    let mut out = String::with_capacity(ascii.len());
    let mut space = false;
    for c in ascii.chars() {
        if c.is_ascii_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c.to_ascii_lowercase());
        } else {
            space = true;
        }
    }
    out
}

/// One word of a free text: its byte range in the text, its key, and whether it starts with a
/// capital letter as written.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) key: String,
    pub(crate) capital: bool,
}

/// The words of `text`: runs of letters and digits, in order.
pub(crate) fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut push = |s: usize, e: usize| {
        let raw = &text[s..e];
        let key = fold(raw);
        if !key.is_empty() {
            let capital = raw.chars().next().is_some_and(char::is_uppercase);
            out.push(Word {
                start: s,
                end: e,
                key,
                capital,
            });
        }
    };
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push(s, text.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_accents_and_punctuation() {
        assert_eq!(fold("Saint-Étienne"), "saint etienne");
        assert_eq!(fold("  MÜNCHEN "), "munchen");
        assert_eq!(fold("Łódź"), "lodz");
        assert_eq!(fold("St. Albans"), "st albans");
        assert_eq!(fold("Hell's Kitchen"), "hell s kitchen");
        assert_eq!(fold("Paris 16 Passy"), "paris 16 passy");
        assert_eq!(fold("?!"), "");
    }

    #[test]
    fn words_keep_their_byte_ranges() {
        let text = "photos in Zürich, São Paulo's";
        let w = words(text);
        let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(keys, ["photos", "in", "zurich", "sao", "paulo", "s"]);
        assert_eq!(&text[w[2].start..w[2].end], "Zürich");
        assert!(w[2].capital && !w[1].capital);
    }
}
