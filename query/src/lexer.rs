//! Tokens of the query language with their byte spans.
//!
//! The lexer never fails on its own: bytes it cannot read become [`Tok::Unknown`] and an
//! unterminated string becomes [`Tok::Unterminated`], so the parser reports every problem at its
//! exact position with the tokens it expected there.
//!
//! Invariant: spans are byte ranges of the input on `char` boundaries, in order, never empty
//! except for the final [`Tok::End`].

use std::ops::Range;

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// A keyword or name: letters, digits and `_`, starting with a letter or `_`.
    Word(String),
    /// A single-quoted string with `''` for a quote, unescaped.
    Str(String),
    /// A number as written (`25`, `-9.14`).
    Number(String),
    /// A date or instant as written (`2022-05-01`, `2022-05-01T10:00:00+01:00`).
    Date(String),
    /// One of `( ) , ; = < > <= >=`.
    Punct(&'static str),
    /// A string whose closing quote is missing.
    Unterminated,
    /// A character the language does not use.
    Unknown(char),
    /// End of input.
    End,
}

impl Tok {
    /// How the token reads in an error message.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Str(s) => format!("string '{}'", s.replace('\'', "''")),
            Tok::Number(n) => format!("number {n}"),
            Tok::Date(d) => format!("date {d}"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Unterminated => "an unterminated string".to_owned(),
            Tok::Unknown(c) => format!("`{}`", c.escape_default()),
            Tok::End => "end of input".to_owned(),
        }
    }
}

/// A token and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) span: Range<usize>,
}

const PUNCTS: [&str; 9] = ["<=", ">=", "(", ")", ",", ";", "=", "<", ">"];

/// Splits `text` into tokens, ending with [`Tok::End`]. Whitespace and `--` comments separate
/// tokens.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let Some(c) = rest.chars().next() else { break };
        if c.is_whitespace() {
            at += c.len_utf8();
            continue;
        }
        if rest.starts_with("--") {
            at += rest.find('\n').unwrap_or(rest.len());
            continue;
        }
        let (tok, len) = if c == '\'' {
            string(rest)
        } else if c.is_ascii_digit()
            || (c == '-' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            number_or_date(rest)
        } else if c.is_alphabetic() || c == '_' {
            let len = rest
                .find(|d: char| !(d.is_alphanumeric() || d == '_'))
                .unwrap_or(rest.len());
            (Tok::Word(rest[..len].to_owned()), len)
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            (Tok::Punct(p), p.len())
        } else {
            (Tok::Unknown(c), c.len_utf8())
        };
        out.push(Token {
            tok,
            span: at..at + len,
        });
        at += len;
    }
    out.push(Token {
        tok: Tok::End,
        span: text.len()..text.len(),
    });
    out
}

fn string(rest: &str) -> (Tok, usize) {
    let mut value = String::new();
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|&(_, n)| n == '\'') {
                chars.next();
                value.push('\'');
            } else {
                return (Tok::Str(value), i + 1);
            }
        } else {
            value.push(c);
        }
    }
    (Tok::Unterminated, rest.len())
}

fn number_or_date(rest: &str) -> (Tok, usize) {
    let bytes = rest.as_bytes();
    let digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    // A date: four digits and a dash; it runs over the characters an RFC 3339 instant uses.
    if digits(0) == 4 && bytes.get(4) == Some(&b'-') {
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '.' | '+')))
            .unwrap_or(rest.len());
        return (Tok::Date(rest[..len].to_owned()), len);
    }
    let mut len = usize::from(bytes[0] == b'-');
    len += digits(len);
    if bytes.get(len) == Some(&b'.') && bytes.get(len + 1).is_some_and(u8::is_ascii_digit) {
        len += 1 + digits(len + 1);
    }
    (Tok::Number(rest[..len].to_owned()), len)
}

/// 1-based line and column (in characters) of byte offset `at` of `text`.
pub(crate) fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        tokenize(text).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn splits_words_strings_numbers_dates_and_punctuation() {
        assert_eq!(
            toks("NEAR(38.72, -9.14, 25km) 'it''s' 2022-05-01T10:00+01:00 <= -- note\n;"),
            vec![
                Tok::Word("NEAR".into()),
                Tok::Punct("("),
                Tok::Number("38.72".into()),
                Tok::Punct(","),
                Tok::Number("-9.14".into()),
                Tok::Punct(","),
                Tok::Number("25".into()),
                Tok::Word("km".into()),
                Tok::Punct(")"),
                Tok::Str("it's".into()),
                Tok::Date("2022-05-01T10:00+01:00".into()),
                Tok::Punct("<="),
                Tok::Punct(";"),
                Tok::End,
            ]
        );
    }

    #[test]
    fn bad_bytes_become_tokens_not_failures() {
        assert_eq!(
            toks("'open"),
            vec![Tok::Unterminated, Tok::End],
            "an unterminated string"
        );
        assert_eq!(toks("@"), vec![Tok::Unknown('@'), Tok::End]);
        assert_eq!(
            toks("- x"),
            vec![Tok::Unknown('-'), Tok::Word("x".into()), Tok::End]
        );
    }

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "RECALL 'é'\n  TOP x";
        assert_eq!(line_column(text, text.find("x").unwrap()), (2, 7));
        assert_eq!(line_column(text, 0), (1, 1));
    }
}
