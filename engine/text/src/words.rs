//! Word-level text handling shared by the lexical index and node extraction.
//!
//! A *word* is a maximal run of Unicode alphanumerics (plus `_`), the `\w+` of the BM25 peer
//! (rank_bm25 over `re.findall(r"\w+", text.lower())`), so lexical scores compare with it. Words
//! are lowercased with full Unicode case mapping. Apostrophes split words (`caroline's` →
//! `caroline`, `s`), as `\w+` does.

/// The lowercased words of `text`, in order.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    spans(text).map(|(start, end)| text[start..end].to_lowercase())
}

/// Byte ranges of the words of `text`, in order (original case).
pub fn spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let start = loop {
            let (i, c) = chars.next()?;
            if is_word_char(c) {
                break i;
            }
        };
        let mut end = text.len();
        while let Some(&(i, c)) = chars.peek() {
            if !is_word_char(c) {
                end = i;
                break;
            }
            chars.next();
        }
        Some((start, end))
    })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// English function words and chat filler that never make a memory node on their own.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

// Sorted (checked by a test): binary search.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "actually",
    "after",
    "again",
    "against",
    "all",
    "also",
    "always",
    "am",
    "amazing",
    "an",
    "and",
    "any",
    "anything",
    "are",
    "around",
    "as",
    "at",
    "awesome",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cool",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "else",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "getting",
    "glad",
    "go",
    "going",
    "gonna",
    "good",
    "got",
    "great",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "like",
    "lot",
    "lots",
    "made",
    "make",
    "many",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "new",
    "nice",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "oh",
    "ok",
    "okay",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "pretty",
    "really",
    "right",
    "s",
    "said",
    "same",
    "say",
    "see",
    "she",
    "should",
    "so",
    "some",
    "something",
    "still",
    "such",
    "sure",
    "t",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "through",
    "to",
    "too",
    "totally",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "way",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "wow",
    "yeah",
    "yes",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn words_match_python_backslash_w() {
        let got: Vec<String> =
            words("[8 May, 2023] Caroline's pottery—class! Café_2 日本語").collect();
        assert_eq!(
            got,
            [
                "8",
                "may",
                "2023",
                "caroline",
                "s",
                "pottery",
                "class",
                "café_2",
                "日本語"
            ]
        );
        assert_eq!(words("").count(), 0);
        assert_eq!(words("  ,. ").count(), 0);
    }
}
