//! A hand-written recursive-descent parser for the grammar of SPEC.md §9.
//!
//! Every function takes the tokens it can and otherwise records what it expected at the
//! current position; an error lists all of those alternatives, points at the token, and
//! suggests the nearest keyword. The parser never panics on any input (the `query_parse` fuzz
//! target) and never recurses deeper than the grammar's fixed nesting.

use std::str::FromStr;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use memdb::Source;

use crate::ast::{
    Distance, DistanceUnit, Filter, Forget, History, Instant, Items, Order, Paths, Query, Recall,
    ScopeField, Show, Statement, TimeFilter, TimeTravel, Unit,
};
use crate::error::ParseError;
use crate::lexer::{Tok, Token, tokenize};

/// Every keyword of the language (the shell completes these; typos are matched against them).
pub const KEYWORDS: &[&str] = &[
    "AGENT_ID",
    "AND",
    "AS",
    "ASC",
    "ASKED",
    "AT",
    "BETWEEN",
    "BY",
    "CURRENT",
    "DESC",
    "DROP",
    "DRY",
    "ENTITY",
    "EXPLAIN",
    "FORGET",
    "HISTORY",
    "IN",
    "ITEM",
    "ITEMS",
    "LAST",
    "MATCHING",
    "MIN",
    "NEAR",
    "NODE",
    "OF",
    "ON",
    "ORDER",
    "ORIGINALS",
    "OVERLAP",
    "PAGE",
    "PATH",
    "PATHS",
    "RECALL",
    "RUN",
    "RUN_ID",
    "SHOW",
    "SOURCE",
    "STATS",
    "SUPERSEDES",
    "TAG",
    "TIME",
    "TOP",
    "USER_ID",
    "VALID",
    "WHERE",
    "HOURS",
    "DAYS",
    "WEEKS",
    "MONTHS",
    "YEARS",
];

type Result<T> = std::result::Result<T, ParseError>;

/// Parses exactly one statement (a trailing `;` is allowed).
pub fn parse(text: &str) -> Result<Statement> {
    let mut p = Parser::new(text);
    let statement = p.statement()?;
    p.punct(";");
    p.end()?;
    Ok(statement)
}

/// Parses statements separated by `;` (a script or a shell buffer). Empty input is no
/// statement.
pub fn parse_script(text: &str) -> Result<Vec<Statement>> {
    let mut p = Parser::new(text);
    let mut out = Vec::new();
    loop {
        while p.punct(";") {}
        if p.at_end() {
            return Ok(out);
        }
        out.push(p.statement()?);
        if !p.punct(";") {
            p.end()?;
            return Ok(out);
        }
    }
}

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    pos: usize,
    /// What was tried at `pos` without success.
    expected: Vec<String>,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Parser<'t> {
        Parser {
            text,
            tokens: tokenize(text),
            pos: 0,
            expected: Vec::new(),
        }
    }

    fn peek(&self) -> &Token {
        // `tokenize` always ends with `End`, and `advance` never moves past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        self.expected.clear();
        token
    }

    fn at_end(&self) -> bool {
        self.peek().tok == Tok::End
    }

    fn expect(&mut self, what: &str) {
        if !self.expected.iter().any(|e| e == what) {
            self.expected.push(what.to_owned());
        }
    }

    /// Takes keyword `kw` (any case) if it is next.
    fn keyword(&mut self, kw: &'static str) -> bool {
        if matches!(&self.peek().tok, Tok::Word(w) if w.eq_ignore_ascii_case(kw)) {
            self.advance();
            true
        } else {
            self.expect(kw);
            false
        }
    }

    fn require(&mut self, kw: &'static str) -> Result<()> {
        if self.keyword(kw) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn punct(&mut self, p: &'static str) -> bool {
        if self.peek().tok == Tok::Punct(p) {
            self.advance();
            true
        } else {
            self.expect(&format!("`{p}`"));
            false
        }
    }

    fn require_punct(&mut self, p: &'static str) -> Result<()> {
        if self.punct(p) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn end(&mut self) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            self.expect("end of statement");
            Err(self.error())
        }
    }

    /// "expected A, B or C, found X" at the current token, with a keyword suggestion.
    fn error(&self) -> ParseError {
        let token = self.peek();
        let expected = match self.expected.as_slice() {
            [] => "something else".to_owned(),
            [one] => one.clone(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        };
        let mut error = ParseError::new(
            self.text,
            token.span.clone(),
            format!("expected {expected}, found {}", token.tok.describe()),
        );
        error.expected = self.expected.clone();
        if let Tok::Word(word) = &token.tok {
            error.suggestion = nearest(word, &self.expected);
        }
        error
    }

    /// An error about the token just taken (`at`), not about what was expected.
    fn error_at(&self, at: usize, message: String) -> ParseError {
        let span = self.tokens[at.min(self.tokens.len() - 1)].span.clone();
        ParseError::new(self.text, span, message)
    }

    fn statement(&mut self) -> Result<Statement> {
        if self.keyword("EXPLAIN") {
            return Ok(Statement::Explain(self.query()?));
        }
        if self.keyword("SHOW") {
            return Ok(Statement::Show(self.show()?));
        }
        if self.keyword("FORGET") {
            let policy = self.string()?;
            self.require("AS")?;
            self.require("OF")?;
            let as_of = self.date()?;
            let (mut dry_run, mut drop_originals) = (false, false);
            if self.keyword("DRY") {
                self.require("RUN")?;
                dry_run = true;
            } else if self.keyword("DROP") {
                self.require("ORIGINALS")?;
                drop_originals = true;
            }
            return Ok(Statement::Forget(Forget {
                policy,
                as_of,
                dry_run,
                drop_originals,
            }));
        }
        Ok(Statement::Query(self.query()?))
    }

    fn query(&mut self) -> Result<Query> {
        if self.keyword("RECALL") {
            let text = self.string()?;
            let filters = self.filters()?;
            let at = self.time_travel()?;
            let asked_on = if self.keyword("ASKED") {
                self.require("ON")?;
                Some(self.date()?)
            } else {
                None
            };
            let top = self.top()?;
            return Ok(Query::Recall(Recall {
                text,
                filters,
                at,
                asked_on,
                top,
            }));
        }
        if self.keyword("PATHS") {
            self.require("MATCHING")?;
            self.require_punct("(")?;
            let mut phrases = vec![self.string()?];
            while self.punct(",") {
                phrases.push(self.string()?);
            }
            self.require_punct(")")?;
            let min_overlap = if self.keyword("MIN") {
                self.require("OVERLAP")?;
                let at = self.pos;
                let n = self.integer()?;
                Some(u32::try_from(n).map_err(|_| {
                    self.error_at(at, format!("MIN OVERLAP {n} is more than {}", u32::MAX))
                })?)
            } else {
                None
            };
            let top = self.top()?;
            return Ok(Query::Paths(Paths {
                phrases,
                min_overlap,
                top,
            }));
        }
        if self.keyword("ITEMS") {
            let filters = self.filters()?;
            let at = self.time_travel()?;
            let order = if self.keyword("ORDER") {
                self.require("BY")?;
                self.require("TIME")?;
                if self.keyword("DESC") {
                    Some(Order::Desc)
                } else if self.keyword("ASC") {
                    Some(Order::Asc)
                } else {
                    return Err(self.error());
                }
            } else {
                None
            };
            let top = self.top()?;
            return Ok(Query::Items(Items {
                filters,
                at,
                order,
                top,
            }));
        }
        if self.keyword("HISTORY") {
            self.require("OF")?;
            let id = self.integer()?;
            let at = self.time_travel()?;
            return Ok(Query::History(History { id, at }));
        }
        Err(self.error())
    }

    fn show(&mut self) -> Result<Show> {
        if self.keyword("STATS") {
            return Ok(Show::Stats);
        }
        if self.keyword("ITEM") {
            return Ok(Show::Item(self.integer()?));
        }
        if self.keyword("NODE") {
            return Ok(Show::Node(self.string()?));
        }
        if self.keyword("PATH") {
            return Ok(Show::Path(self.integer()?));
        }
        if self.keyword("PAGE") {
            return Ok(Show::Page(self.date()?));
        }
        Err(self.error())
    }

    /// `[AS OF t] [VALID AT t]`, in that order.
    fn time_travel(&mut self) -> Result<TimeTravel> {
        let mut at = TimeTravel::default();
        if self.keyword("AS") {
            self.require("OF")?;
            at.as_of = Some(self.instant()?);
        }
        if self.keyword("VALID") {
            self.require("AT")?;
            at.valid_at = Some(self.instant()?);
        }
        Ok(at)
    }

    fn top(&mut self) -> Result<Option<u64>> {
        if self.keyword("TOP") {
            Ok(Some(self.integer()?))
        } else {
            Ok(None)
        }
    }

    fn filters(&mut self) -> Result<Vec<Filter>> {
        let mut out = Vec::new();
        if self.keyword("WHERE") {
            out.push(self.filter()?);
            while self.keyword("AND") {
                out.push(self.filter()?);
            }
        }
        Ok(out)
    }

    fn filter(&mut self) -> Result<Filter> {
        if self.keyword("SOURCE") {
            if self.keyword("IN") {
                self.require_punct("(")?;
                let mut sources = vec![self.source()?];
                while self.punct(",") {
                    sources.push(self.source()?);
                }
                self.require_punct(")")?;
                return Ok(Filter::Source(sources));
            }
            self.require_punct("=")?;
            return Ok(Filter::Source(vec![self.source()?]));
        }
        if self.keyword("TIME") {
            return Ok(Filter::Time(self.time_filter()?));
        }
        if self.keyword("TAG") {
            self.require_punct("=")?;
            return Ok(Filter::Tag(self.string()?));
        }
        if self.keyword("ENTITY") {
            self.require_punct("=")?;
            return Ok(Filter::Entity(self.string()?));
        }
        for field in ScopeField::ALL {
            if self.keyword(field.name()) {
                self.require_punct("=")?;
                let at = self.pos;
                let id = self.string()?;
                if id.trim().is_empty() {
                    return Err(self.error_at(at, format!("{} cannot be empty", field.name())));
                }
                return Ok(Filter::Scope(field, id));
            }
        }
        if self.keyword("NEAR") {
            self.require_punct("(")?;
            // A place by name, or a point.
            enum Center {
                Place(String),
                Point(f64, f64),
            }
            let center = if matches!(self.peek().tok, Tok::Str(_)) {
                let at = self.pos;
                let name = self.string()?;
                if name.trim().is_empty() {
                    return Err(self.error_at(at, "a place name cannot be empty".to_owned()));
                }
                Center::Place(name)
            } else {
                let lat = self.coordinate(90.0, "latitude")?;
                self.require_punct(",")?;
                Center::Point(lat, self.coordinate(180.0, "longitude")?)
            };
            self.require_punct(",")?;
            let at = self.pos;
            let value = self.number()?;
            if value < 0.0 {
                return Err(self.error_at(at, format!("a distance cannot be negative ({value})")));
            }
            let unit = self.distance_unit()?;
            self.require_punct(")")?;
            let radius = Distance { value, unit };
            return Ok(match center {
                Center::Place(name) => Filter::NearPlace { name, radius },
                Center::Point(lat, lon) => Filter::Near { lat, lon, radius },
            });
        }
        if self.keyword("SUPERSEDES") {
            return Ok(Filter::Supersedes(self.integer()?));
        }
        if self.keyword("CURRENT") {
            return Ok(Filter::Current);
        }
        Err(self.error())
    }

    fn time_filter(&mut self) -> Result<TimeFilter> {
        if self.keyword("BETWEEN") {
            let from = self.instant()?;
            self.require("AND")?;
            return Ok(TimeFilter::Between(from, self.instant()?));
        }
        if self.keyword("ON") {
            return Ok(TimeFilter::On(self.date()?));
        }
        if self.keyword("IN") {
            if matches!(self.peek().tok, Tok::Str(_)) {
                return Ok(TimeFilter::Words(self.string()?));
            }
            self.require("LAST")?;
            let at = self.pos;
            let n = self.integer()?;
            let n = u32::try_from(n)
                .map_err(|_| self.error_at(at, format!("LAST {n} is more than {}", u32::MAX)))?;
            for (unit, kw) in Unit::ALL {
                // The singular (`DAY`) reads better after 1 and is accepted anywhere.
                let singular = &kw[..kw.len() - 1];
                if matches!(&self.peek().tok, Tok::Word(w)
                    if w.eq_ignore_ascii_case(kw) || w.eq_ignore_ascii_case(singular))
                {
                    self.advance();
                    return Ok(TimeFilter::Last(n, unit));
                }
                self.expect(kw);
            }
            return Err(self.error());
        }
        let op = ["<=", ">=", "<", ">"]
            .into_iter()
            .find(|op| self.punct(op))
            .ok_or_else(|| self.error())?;
        let at = self.instant()?;
        Ok(match op {
            "<=" => TimeFilter::AtOrBefore(at),
            ">=" => TimeFilter::AtOrAfter(at),
            "<" => TimeFilter::Before(at),
            _ => TimeFilter::After(at),
        })
    }

    fn string(&mut self) -> Result<String> {
        if let Tok::Str(s) = &self.peek().tok {
            let s = s.clone();
            self.advance();
            return Ok(s);
        }
        self.expect("a string ('…')");
        if self.peek().tok == Tok::Unterminated {
            let mut e = self.error();
            e.message = "this string has no closing quote (`'`)".to_owned();
            e.at_end = true;
            return Err(e);
        }
        Err(self.error())
    }

    fn integer(&mut self) -> Result<u64> {
        if let Tok::Number(n) = &self.peek().tok
            && !n.contains(['.', '-'])
        {
            let n = n.clone();
            let at = self.pos;
            self.advance();
            return n
                .parse()
                .map_err(|_| self.error_at(at, format!("{n} is too large for an integer")));
        }
        self.expect("an integer");
        Err(self.error())
    }

    fn number(&mut self) -> Result<f64> {
        if let Tok::Number(n) = &self.peek().tok {
            let n = n.clone();
            let at = self.pos;
            self.advance();
            return n
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| self.error_at(at, format!("{n} is not a finite number")));
        }
        self.expect("a number");
        Err(self.error())
    }

    fn coordinate(&mut self, limit: f64, what: &str) -> Result<f64> {
        let at = self.pos;
        let value = self.number()?;
        if value.abs() > limit {
            return Err(self.error_at(
                at,
                format!("a {what} lies within ±{limit} degrees, not {value}"),
            ));
        }
        Ok(value)
    }

    fn distance_unit(&mut self) -> Result<DistanceUnit> {
        for (unit, name, _) in DistanceUnit::ALL {
            if matches!(&self.peek().tok, Tok::Word(w) if w.eq_ignore_ascii_case(name)) {
                self.advance();
                return Ok(unit);
            }
            self.expect(name);
        }
        Err(self.error())
    }

    fn source(&mut self) -> Result<Source> {
        if let Tok::Word(w) = &self.peek().tok
            && let Ok(source) = Source::from_str(w)
        {
            self.advance();
            return Ok(source);
        }
        for s in Source::ALL {
            self.expect(s.name());
        }
        Err(self.error())
    }

    fn date_token(&mut self) -> Result<(String, usize)> {
        if let Tok::Date(d) = &self.peek().tok {
            let d = d.clone();
            let at = self.pos;
            self.advance();
            return Ok((d, at));
        }
        self.expect("a date (YYYY-MM-DD)");
        Err(self.error())
    }

    fn date(&mut self) -> Result<Date> {
        let (text, at) = self.date_token()?;
        Date::from_str(&text).map_err(|e| self.error_at(at, format!("bad date `{text}`: {e}")))
    }

    fn instant(&mut self) -> Result<Instant> {
        let (text, at) = self.date_token()?;
        parse_instant(&text).map_err(|reason| self.error_at(at, reason))
    }
}

/// A day (`YYYY-MM-DD`) or an instant (RFC 3339; without an offset it is read as UTC), as
/// the statements' time literals read it; the error says which and why. Tool and binding
/// arguments (`since`, `as_of`) go through it, so they mean what a statement's times mean.
pub fn parse_instant(text: &str) -> std::result::Result<Instant, String> {
    if !text.contains(['T', 't']) {
        return Date::from_str(text)
            .map(Instant::Day)
            .map_err(|e| format!("bad date `{text}`: {e}"));
    }
    Timestamp::from_str(text)
        .or_else(|_| {
            DateTime::from_str(text)
                .and_then(|dt| dt.to_zoned(TimeZone::UTC))
                .map(|z| z.timestamp())
        })
        .map(Instant::At)
        .map_err(|e| format!("bad instant `{text}`: {e}"))
}

/// The expected keyword closest to `word`, if it is close enough to be a typo.
fn nearest(word: &str, expected: &[String]) -> Option<String> {
    let upper = word.to_uppercase();
    expected
        .iter()
        .filter(|e| e.chars().all(|c| c.is_ascii_alphabetic()))
        .map(|e| (strsim::damerau_levenshtein(&upper, &e.to_uppercase()), e))
        .filter(|(d, e)| *d > 0 && *d <= (e.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, e)| e.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ParseError {
        match parse(text) {
            Ok(s) => panic!("`{text}` parsed as {s:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn parses_the_design_sketch() {
        for text in [
            "RECALL 'the hotel I booked in lisbon' TOP 10",
            "PATHS MATCHING ('hotel booking', 'lisbon') MIN OVERLAP 2 TOP 10",
            "ITEMS WHERE source = email AND time BETWEEN 2022-05-01 AND 2022-06-01 AND NEAR(38.72, -9.14, 25km)",
            "ITEMS WHERE NEAR('Paris', 25km)",
            "RECALL 'the tower' WHERE NEAR('Paris, TX', 3.5mi) AND source = image",
            "ITEMS WHERE NEAR('Rock ''n'' Roll', 500m)",
            "EXPLAIN RECALL 'x'",
            "SHOW STATS",
            "SHOW PAGE 2022-05-07",
            "SHOW NODE 'lisbon'",
        ] {
            let statement = parse(text).unwrap();
            assert_eq!(statement.to_string(), text, "canonical text");
        }
    }

    #[test]
    fn keywords_are_case_insensitive() {
        assert_eq!(
            parse("recall 'x' where Source = CHAT top 3;").unwrap(),
            parse("RECALL 'x' WHERE source = chat TOP 3").unwrap()
        );
    }

    #[test]
    fn a_typo_points_at_the_token_and_suggests_the_keyword() {
        let e = err("RECALL 'x' TPO 5");
        assert_eq!((e.line, e.column), (1, 12));
        assert_eq!(e.suggestion.as_deref(), Some("TOP"));
        assert!(e.message.contains("WHERE"), "{}", e.message);
        let shown = e.render("RECALL 'x' TPO 5");
        assert!(
            shown.contains("1 | RECALL 'x' TPO 5\n  |            ^^^"),
            "{shown}"
        );
        assert!(shown.contains("did you mean `TOP`"), "{shown}");

        let e = err("RECAL 'x'");
        assert_eq!(e.suggestion.as_deref(), Some("RECALL"));
        let e = err("ITEMS WHERE source = emial");
        assert_eq!(e.suggestion.as_deref(), Some("email"));
    }

    #[test]
    fn errors_on_later_lines_count_lines() {
        let text = "ITEMS\nWHERE time BETWEEN 2022-05-01\n  AND 2022-13-01";
        let e = err(text);
        assert_eq!((e.line, e.column), (3, 7));
        assert!(e.message.contains("bad date"), "{}", e.message);
    }

    #[test]
    fn incomplete_input_is_marked_as_such() {
        assert!(err("RECALL 'x' WHERE").at_end);
        assert!(err("RECALL 'unclosed").at_end);
        assert!(!err("RECALL 'x' WHERE 5").at_end);
    }

    #[test]
    fn values_are_checked_where_they_are_written() {
        assert!(
            err("ITEMS WHERE NEAR(91, 0, 1km)")
                .message
                .contains("latitude")
        );
        assert!(
            err("ITEMS WHERE NEAR(0, 0, -1km)")
                .message
                .contains("negative")
        );
        assert!(
            err("ITEMS TOP 99999999999999999999")
                .message
                .contains("too large")
        );
        assert!(
            err("ITEMS WHERE NEAR(0, 0, 1 furlong)")
                .message
                .contains("km")
        );
        assert!(
            err("ITEMS WHERE NEAR(' ', 1km)")
                .message
                .contains("place name")
        );
        assert!(
            err("ITEMS WHERE NEAR('Paris', -1km)")
                .message
                .contains("negative")
        );
        // A place and a point together is neither form.
        let e = err("ITEMS WHERE NEAR('Paris', 48.85, 2.35, 1km)");
        assert!(e.message.contains("km"), "{}", e.message);
        assert_eq!(
            parse("ITEMS WHERE near('Lisboa',1KM)").unwrap().to_string(),
            "ITEMS WHERE NEAR('Lisboa', 1km)"
        );
    }

    #[test]
    fn scripts_split_on_semicolons() {
        let statements = parse_script("SHOW STATS; ;ITEMS TOP 1;\n-- done\n").unwrap();
        assert_eq!(statements.len(), 2);
        assert!(parse_script("  -- nothing\n").unwrap().is_empty());
        assert!(parse("SHOW STATS; SHOW STATS").is_err());
    }

    #[test]
    fn instants_with_and_without_offsets() {
        let a = parse("ITEMS WHERE time >= 2022-05-01T10:00+01:00").unwrap();
        let b = parse("ITEMS WHERE time >= 2022-05-01T09:00:00Z").unwrap();
        let c = parse("ITEMS WHERE time >= 2022-05-01T09:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(b, c);
    }
}
