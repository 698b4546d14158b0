//! Errors of the query language: where a statement is wrong, and why it could not run.

use std::ops::Range;

use crate::lexer::line_column;

/// A statement that does not follow the grammar (SPEC.md §9), with its exact position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct ParseError {
    /// What is wrong (`expected TOP or end of statement, found `TPO``).
    pub message: String,
    /// 1-based line of the offending token.
    pub line: usize,
    /// 1-based column (in characters) of the offending token.
    pub column: usize,
    /// Byte range of the offending token in the statement text.
    pub span: Range<usize>,
    /// What the grammar accepts at that position.
    pub expected: Vec<String>,
    /// The nearest keyword, when the token looks like a misspelt one.
    pub suggestion: Option<String>,
    /// The input ended before the statement did (a shell reads another line).
    pub at_end: bool,
}

impl ParseError {
    pub(crate) fn new(text: &str, span: Range<usize>, message: String) -> ParseError {
        let (line, column) = line_column(text, span.start);
        ParseError {
            message,
            line,
            column,
            at_end: span.start >= text.len(),
            span,
            expected: Vec::new(),
            suggestion: None,
        }
    }

    /// The error as a person reads it: the message, the offending line with a caret under the
    /// token, and the suggestion.
    pub fn render(&self, text: &str) -> String {
        let source_line = text.lines().nth(self.line - 1).unwrap_or("");
        let width = text
            .get(self.span.clone())
            .map_or(1, |t| t.lines().next().map_or(1, |l| l.chars().count()))
            .max(1);
        let gutter = self.line.to_string();
        let pad = " ".repeat(gutter.len());
        let mut out = format!(
            "error: {} at line {}, column {}\n{pad} |\n{gutter} | {source_line}\n{pad} | {}{}",
            self.message,
            self.line,
            self.column,
            " ".repeat(self.column - 1),
            "^".repeat(width)
        );
        if let Some(s) = &self.suggestion {
            out.push_str(&format!("\n{pad} = help: did you mean `{s}`?"));
        }
        out
    }
}

/// Why a statement could not run.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The text is not a statement.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The engine failed while running `statement`.
    #[error("{statement}: {source}")]
    Engine {
        /// The statement (canonical text).
        statement: String,
        /// The engine's error.
        #[source]
        source: memdb::Error,
    },
    /// `RECALL` ran without the store's encoder.
    #[error("{0}: RECALL embeds its question, so it needs the store's encoder (none was given)")]
    NoEncoder(String),
    /// A `SHOW` named something the store does not hold.
    #[error("{0}")]
    NotFound(String),
    /// `NEAR('…')` names a place the gazetteer does not know (the error carries up to five
    /// places the name may have meant: `memdb_geo::GeoError::UnknownPlace`).
    #[error("{statement}: {source}")]
    Place {
        /// The statement (canonical text).
        statement: String,
        /// Why the name did not resolve.
        #[source]
        source: memdb_geo::GeoError,
    },
    /// A time filter names a time outside the calendar memdb can represent.
    #[error("{statement}: {source}")]
    Time {
        /// The statement (canonical text).
        statement: String,
        /// What is out of range.
        #[source]
        source: memdb::time::TimeError,
    },
}

/// Attaches the statement to an engine error.
pub(crate) fn engine<E: Into<memdb::Error>>(statement: String) -> impl FnOnce(E) -> QueryError {
    move |source| QueryError::Engine {
        statement,
        source: source.into(),
    }
}
