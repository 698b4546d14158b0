//! Time named in a question: "in May 2001", "summer 2002", "on 14 May", "the first week of
//! December 2001", "last Christmas", "two years ago", "since March" — each read into a window of
//! whole local days, relative to the day the question is asked where it needs one.
//!
//! The phrasings (English), tried at each word, the longest that matches taken:
//!
//! - a day: `2001-05-14`, `14 May 2001`, `14th of May`, `May 14, 2001`, `May 14`; `today`,
//!   `yesterday`, `the day before yesterday`, `N days ago`, a weekday (`on Friday`,
//!   `last Friday`: the latest before the day asked);
//! - a week: `this week`, `last week` (Monday to Sunday), `N weeks ago`, `the first` …
//!   `fourth` / `last week of` a month;
//! - a month: `May 2001`, `May of 2001`, `2001-05`, `in May` (the latest May that has begun),
//!   `this month`, `last month`, `N months ago`; `early` (1–10), `mid` (11–20), `late` (21–end)
//!   a month; `the beginning` / `the end of` a month (its first / last 10 days);
//! - a season (northern hemisphere, meteorological): `summer 2002`, `the summer of 2002`,
//!   `this spring`, `last summer`, `in the autumn`; spring is March–May, summer June–August,
//!   autumn (fall) September–November, winter December to February (`winter 2001` begins in
//!   December 2001);
//! - a year: `2014`, `in 2014`, `this year`, `last year`, `N years ago`; `early` / `late` a
//!   year (its first / last four months);
//! - a holiday: `Christmas` (24–26 December), `New Year's Eve`, `New Year` (31 December to
//!   1 January), `Easter` (Good Friday to Easter Monday, Gregorian computus), `Halloween`,
//!   `Valentine's Day`, `Thanksgiving` (US: the fourth Thursday of November) — with a year, or
//!   `last` / `this` one, or alone (the latest that has begun);
//! - a span: `between` / `from` X `and` / `to` / `until` Y (X may take Y's year: "between May
//!   and July 2001"), `since` X (to the day asked), `before` X, `after` X, `until` X,
//!   `in the last` / `past N` days, weeks, months or years.
//!
//! Numbers may be words up to twelve ("two years ago", "a week ago"). A month alone, or a season
//! alone, is the latest one that has begun by the day asked. "May" and "March" are words too
//! ("may I", "march on"): they are months only beside a day, a year or a time word ("in",
//! "early", "last", …).
//!
//! Each phrase says whether it is **cued**: introduced by "in", "on", "during", "from", "since",
//! "before", "after", "until", "between", "around", "over" or "of", or relative by nature
//! ("yesterday", "last month", "two years ago", "this spring"). A cued phrase says *when* the
//! question is about; an uncued one ("the 2002 budget", "Christmas party plans") may be what it
//! is about, so recall reads it as a ranking signal, not a filter.
//!
//! Never a panic: any text gives phrases or none. A day that does not exist is not one ("30
//! February 2001" reads as what remains, February 2001); a year outside 1900–2100 is a number.

use jiff::ToSpan;
use jiff::civil::{Date, Weekday};

use crate::nodes::{Token, month, number, tokens, year};

/// A time a text names, as a window of whole local days.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimePhrase {
    /// Byte range of the phrase in the text.
    pub start: usize,
    /// End of the byte range (exclusive).
    pub end: usize,
    /// The first day of the window (`None`: from the beginning, "before 2002").
    pub first: Option<Date>,
    /// The last day of the window, included (`None`: without end, "after May 2001").
    pub last: Option<Date>,
    /// Introduced by a time word, or relative by nature: the question is about that time.
    pub cued: bool,
}

impl TimePhrase {
    /// The window in words: "2001-05-01 to 2001-05-31", "from 2001-06-01", "until 2001-12-31".
    pub fn describe(&self) -> String {
        match (self.first, self.last) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (Some(a), Some(b)) => format!("{a} to {b}"),
            (Some(a), None) => format!("from {a}"),
            (None, Some(b)) => format!("until {b}"),
            (None, None) => "any time".to_owned(),
        }
    }
}

/// The times `text` names, in text order, read relative to `today` (the day the question is
/// asked). Phrases do not overlap.
pub fn time_phrases(text: &str, today: Date) -> Vec<TimePhrase> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match phrase_at(&toks, i, today) {
            Some((window, used)) => {
                let cue = i > 0 && CUES.contains(&toks[i - 1].lower.as_str());
                let (first, last) = window.bounds;
                out.push(TimePhrase {
                    start: toks[i].start,
                    end: toks[i + used - 1].end,
                    first,
                    last,
                    cued: cue || window.cued,
                });
                i += used;
            }
            None => i += 1,
        }
    }
    out
}

/// Words before a phrase that make it the question's time.
const CUES: &[&str] = &[
    "in",
    "on",
    "during",
    "from",
    "since",
    "before",
    "after",
    "until",
    "till",
    "between",
    "around",
    "over",
    "of",
    "throughout",
    "within",
];

/// A matched window: its bounds and whether its own words cue it (relative to the day asked,
/// or a span: "last month", "between May and July").
struct Window {
    bounds: (Option<Date>, Option<Date>),
    cued: bool,
}

impl Window {
    fn days(first: Date, last: Date) -> Window {
        Window {
            bounds: (Some(first), Some(last)),
            cued: false,
        }
    }

    fn cued(mut self) -> Window {
        self.cued = true;
        self
    }
}

/// A calendar unit a relative phrase counts in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

fn unit(word: &str) -> Option<Unit> {
    match word {
        "day" | "days" => Some(Unit::Day),
        "week" | "weeks" => Some(Unit::Week),
        "month" | "months" => Some(Unit::Month),
        "year" | "years" => Some(Unit::Year),
        _ => None,
    }
}

/// A count: digits, or a word up to twelve, or "a"/"an"/"one".
fn count(word: &str) -> Option<i64> {
    if let Some(n) = number(word).filter(|_| word.chars().all(|c| c.is_ascii_digit())) {
        return (n <= 10_000).then_some(n);
    }
    let words = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match word {
        "a" | "an" => Some(1),
        "couple" => Some(2),
        w => words.iter().position(|x| *x == w).map(|p| p as i64 + 1),
    }
}

fn weekday(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" => Weekday::Monday,
        "tuesday" => Weekday::Tuesday,
        "wednesday" => Weekday::Wednesday,
        "thursday" => Weekday::Thursday,
        "friday" => Weekday::Friday,
        "saturday" => Weekday::Saturday,
        "sunday" => Weekday::Sunday,
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Season {
    Spring,
    Summer,
    Autumn,
    Winter,
}

fn season(word: &str) -> Option<Season> {
    match word {
        "spring" => Some(Season::Spring),
        "summer" => Some(Season::Summer),
        "autumn" | "fall" => Some(Season::Autumn),
        "winter" => Some(Season::Winter),
        _ => None,
    }
}

/// The season beginning in `year`.
fn season_days(s: Season, year: i16) -> Option<(Date, Date)> {
    let (m, months) = match s {
        Season::Spring => (3, 3),
        Season::Summer => (6, 3),
        Season::Autumn => (9, 3),
        Season::Winter => (12, 3),
    };
    let first = Date::new(year, m, 1).ok()?;
    let last = first.checked_add(months.months()).ok()?.yesterday().ok()?;
    Some((first, last))
}

fn month_days(year: i16, m: i8) -> Option<(Date, Date)> {
    let first = Date::new(year, m, 1).ok()?;
    Some((first, first.last_of_month()))
}

fn year_days(year: i16) -> Option<(Date, Date)> {
    Some((Date::new(year, 1, 1).ok()?, Date::new(year, 12, 31).ok()?))
}

/// The latest window of `make(year)` that has begun by `today` (this year's, else last year's).
fn latest(today: Date, make: impl Fn(i16) -> Option<(Date, Date)>) -> Option<(Date, Date)> {
    match make(today.year()) {
        Some(w) if w.0 <= today => Some(w),
        _ => make(today.year().checked_sub(1)?),
    }
}

/// The one before the latest ("last summer" when it is summer now: last year's).
fn previous(today: Date, make: impl Fn(i16) -> Option<(Date, Date)>) -> Option<(Date, Date)> {
    let (first, _) = latest(today, &make)?;
    // The latest ended before today: it is "last"; else the one a year before it.
    match make(first.year()) {
        Some(w) if w.1 < today => Some(w),
        _ => make(first.year().checked_sub(1)?),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Holiday {
    Christmas,
    NewYearsEve,
    NewYear,
    Easter,
    Halloween,
    Valentines,
    Thanksgiving,
}

/// A holiday named at token `i`, and the tokens it used.
fn holiday_at(toks: &[Token<'_>], i: usize) -> Option<(Holiday, usize)> {
    let s = |k: usize| toks.get(i + k).map(|t| t.lower.as_str());
    Some(match (s(0)?, s(1), s(2), s(3)) {
        ("christmas" | "xmas", _, _, _) => (Holiday::Christmas, 1),
        ("new", Some("year"), Some("s"), Some("eve")) => (Holiday::NewYearsEve, 4),
        ("new", Some("years"), Some("eve"), _) => (Holiday::NewYearsEve, 3),
        ("new", Some("year"), Some("s"), _) => (Holiday::NewYear, 3),
        ("new", Some("year" | "years"), _, _) => (Holiday::NewYear, 2),
        ("easter", _, _, _) => (Holiday::Easter, 1),
        ("halloween", _, _, _) => (Holiday::Halloween, 1),
        ("valentine", Some("s"), Some("day"), _) => (Holiday::Valentines, 3),
        ("valentine", Some("s"), _, _) => (Holiday::Valentines, 2),
        ("valentines", Some("day"), _, _) => (Holiday::Valentines, 2),
        ("thanksgiving", _, _, _) => (Holiday::Thanksgiving, 1),
        _ => return None,
    })
}

/// Easter Sunday of `year` (Gregorian; the anonymous computus).
fn easter(year: i16) -> Option<Date> {
    let y = i32::from(year);
    let a = y % 19;
    let b = y / 100;
    let c = y % 100;
    let d = b / 4;
    let e = b % 4;
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let i = c / 4;
    let k = c % 4;
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = ((h + l - 7 * m + 114) % 31) + 1;
    Date::new(year, i8::try_from(month).ok()?, i8::try_from(day).ok()?).ok()
}

fn holiday_days(h: Holiday, year: i16) -> Option<(Date, Date)> {
    let d = |m: i8, day: i8| Date::new(year, m, day).ok();
    Some(match h {
        Holiday::Christmas => (d(12, 24)?, d(12, 26)?),
        Holiday::NewYearsEve => (d(12, 31)?, d(12, 31)?),
        // "New Year 2002" is the night into 2002.
        Holiday::NewYear => (Date::new(year.checked_sub(1)?, 12, 31).ok()?, d(1, 1)?),
        Holiday::Easter => {
            let sunday = easter(year)?;
            (
                sunday.checked_sub(2.days()).ok()?,
                sunday.checked_add(1.day()).ok()?,
            )
        }
        Holiday::Halloween => (d(10, 31)?, d(10, 31)?),
        Holiday::Valentines => (d(2, 14)?, d(2, 14)?),
        Holiday::Thanksgiving => {
            let day = d(11, 1)?.nth_weekday_of_month(4, Weekday::Thursday).ok()?;
            (day, day)
        }
    })
}

/// The window a phrase starting at token `i` names, and how many tokens it used.
fn phrase_at(toks: &[Token<'_>], i: usize, today: Date) -> Option<(Window, usize)> {
    let w = |k: usize| toks.get(k).map(|t| t.lower.as_str());
    let w0 = w(i)?;
    // Spans first: they hold calendar phrases.
    match w0 {
        "between" | "from" => {
            let a = calendar_at(toks, i + 1, today, true)?;
            let used_a = a.used;
            let joiner = w(i + 1 + used_a)?;
            if !matches!(joiner, "and" | "to" | "until" | "till" | "through") {
                return None;
            }
            let b = calendar_at(toks, i + 2 + used_a, today, true)?;
            let used_b = b.used;
            let (mut a_first, b_last) = (a.first, b.last);
            // "between May and July 2001": the first takes the second's year.
            if !a.has_year && b.has_year && a.month.is_some() {
                a_first = Date::new(b.first.year(), a_first.month(), a_first.day()).ok()?;
            }
            if a_first > b_last {
                return None;
            }
            return Some((Window::days(a_first, b_last).cued(), 2 + used_a + used_b));
        }
        "since" | "after" | "before" | "until" | "till" => {
            let (c, used) = calendar_at(toks, i + 1, today, true)
                .map(|c| {
                    let used = c.used;
                    (c, used)
                })
                .or_else(|| relative_at(toks, i + 1, today).map(|(w, n)| (w.into(), n)))?;
            let bounds = match w0 {
                "since" => (Some(c.first), Some(today.max(c.first))),
                "after" => (Some(c.last.tomorrow().ok()?), None),
                "before" => (None, Some(c.first.yesterday().ok()?)),
                _ => (None, Some(c.last)),
            };
            return Some((Window { bounds, cued: true }, 1 + used));
        }
        _ => {}
    }
    // "in the last 3 months", "over the past two weeks", "the past year", "last 30 days".
    let mut k = i;
    if matches!(w0, "in" | "over" | "during" | "within") && w(i + 1) == Some("the") {
        k = i + 2;
    } else if w0 == "the" {
        k = i + 1;
    }
    if matches!(w(k), Some("last" | "past")) {
        let (n, at) = match w(k + 1).and_then(count) {
            // "the last 0 days" is no window.
            Some(0) => return None,
            Some(n) if w(k + 1) != Some("a") => (n, k + 2),
            _ => (1, k + 1),
        };
        if let Some(u) = w(at).and_then(unit)
            && (n > 1 || k > i || w(k) == Some("past"))
            && w(at + 1) != Some("of")
        {
            let first = match u {
                Unit::Day => today.checked_sub((n - 1).days()).ok()?,
                Unit::Week => today.checked_sub((7 * n - 1).days()).ok()?,
                Unit::Month => today.checked_sub(n.months()).ok()?.tomorrow().ok()?,
                Unit::Year => today.checked_sub(n.years()).ok()?.tomorrow().ok()?,
            };
            return Some((Window::days(first, today).cued(), at + 1 - i));
        }
    }
    if let Some((window, used)) = relative_at(toks, i, today) {
        return Some((window, used));
    }
    calendar_at(toks, i, today, false).map(|c| {
        let used = c.used;
        (
            Window {
                bounds: (Some(c.first), Some(c.last)),
                cued: c.cued,
            },
            used,
        )
    })
}

/// A calendar phrase: its days, whether it named a year and a month, and its length.
struct Calendar {
    first: Date,
    last: Date,
    has_year: bool,
    month: Option<i8>,
    /// Cued by its own words (see [`Window`]).
    cued: bool,
    used: usize,
}

impl From<Window> for Calendar {
    fn from(w: Window) -> Calendar {
        let (first, last) = (
            w.bounds.0.unwrap_or(Date::MIN),
            w.bounds.1.unwrap_or(Date::MAX),
        );
        Calendar {
            first,
            last,
            has_year: true,
            month: None,
            cued: true,
            used: 0,
        }
    }
}

/// Phrases relative to `today` by nature: "yesterday", "last month", "two years ago", "this
/// spring", "last Christmas", "last Friday".
fn relative_at(toks: &[Token<'_>], i: usize, today: Date) -> Option<(Window, usize)> {
    let w = |k: usize| toks.get(k).map(|t| t.lower.as_str());
    let day = |d: Date| Window::days(d, d).cued();
    match (w(i)?, w(i + 1), w(i + 2), w(i + 3)) {
        ("today" | "tonight", ..) => return Some((day(today), 1)),
        ("the", Some("day"), Some("before"), Some("yesterday")) => {
            return Some((day(today.checked_sub(2.days()).ok()?), 4));
        }
        ("yesterday", ..) => return Some((day(today.yesterday().ok()?), 1)),
        _ => {}
    }
    // "N units ago"
    if let (Some(n), Some(u), Some("ago")) =
        (w(i).and_then(count), w(i + 1).and_then(unit), w(i + 2))
    {
        let window = match u {
            Unit::Day => {
                let d = today.checked_sub(n.days()).ok()?;
                (d, d)
            }
            Unit::Week => week_of(today.checked_sub((7 * n).days()).ok()?)?,
            Unit::Month => {
                let d = today.checked_sub(n.months()).ok()?;
                month_days(d.year(), d.month())?
            }
            Unit::Year => year_days(today.year().checked_sub(i16::try_from(n).ok()?)?)?,
        };
        return Some((Window::days(window.0, window.1).cued(), 3));
    }
    let which = w(i)?;
    if !matches!(which, "last" | "this" | "previous") {
        return None;
    }
    let last = which != "this";
    let next = w(i + 1)?;
    let window = if let Some(u) = unit(next) {
        match (u, last) {
            (Unit::Day, _) => return None,
            (Unit::Week, false) => week_of(today)?,
            (Unit::Week, true) => week_of(today.checked_sub(7.days()).ok()?)?,
            (Unit::Month, false) => month_days(today.year(), today.month())?,
            (Unit::Month, true) => {
                let d = today.checked_sub(1.month()).ok()?;
                month_days(d.year(), d.month())?
            }
            (Unit::Year, false) => year_days(today.year())?,
            (Unit::Year, true) => year_days(today.year().checked_sub(1)?)?,
        }
    } else if next == "weekend" {
        let (monday, _) = week_of(if last {
            today.checked_sub(7.days()).ok()?
        } else {
            today
        })?;
        (
            monday.checked_add(5.days()).ok()?,
            monday.checked_add(6.days()).ok()?,
        )
    } else if let Some(s) = season(next) {
        let make = |y: i16| season_days(s, y);
        if last {
            previous(today, make)?
        } else {
            latest(today, make)?
        }
    } else if let Some(m) = month(next).filter(|_| next.len() > 3 || next == "may") {
        let make = |y: i16| month_days(y, m);
        if last {
            previous(today, make)?
        } else {
            latest(today, make)?
        }
    } else if let Some(d) = weekday(next) {
        // The latest such weekday before today ("last Friday"), or this week's ("this
        // Friday").
        let day = if last {
            today.nth_weekday(-1, d).ok()?
        } else {
            week_of(today)?
                .0
                .checked_add(i64::from(d.to_monday_zero_offset()).days())
                .ok()?
        };
        (day, day)
    } else if let Some((h, used)) = holiday_at(toks, i + 1) {
        let make = |y: i16| holiday_days(h, y);
        let window = if last {
            previous(today, make)?
        } else {
            latest(today, make)?
        };
        return Some((Window::days(window.0, window.1).cued(), 1 + used));
    } else {
        return None;
    };
    Some((Window::days(window.0, window.1).cued(), 2))
}

/// Monday to Sunday of the week holding `day`.
fn week_of(day: Date) -> Option<(Date, Date)> {
    let monday = day
        .checked_sub(i64::from(day.weekday().to_monday_zero_offset()).days())
        .ok()?;
    Some((monday, monday.checked_add(6.days()).ok()?))
}

/// A calendar phrase at token `i` (see the module doc). `cued` says a span word came before
/// (then "May" and "March" are months without more).
fn calendar_at(toks: &[Token<'_>], i: usize, today: Date, cued: bool) -> Option<Calendar> {
    let w = |k: usize| toks.get(k).map(|t| t.lower.as_str());
    let gap = |k: usize| toks.get(k).map_or("", |t| t.gap_before);
    let cue_before = cued || (i > 0 && CUES.contains(&toks[i - 1].lower.as_str()));
    let mut at = i;
    // "the" opens several phrases ("the summer of 2002", "the first week of May").
    if w(at) == Some("the") {
        at += 1;
    }
    let make = |first: Date, last: Date, has_year: bool, month: Option<i8>, end: usize| {
        (first <= last).then_some(Calendar {
            first,
            last,
            has_year,
            month,
            cued: false,
            used: end - i,
        })
    };
    let w0 = w(at)?;
    // "the" is part of a season, a week, a part or a day phrase, not of a year, a month or a
    // holiday ("the 2002 budget" names 2002).
    let the = at > i;

    // ISO: 2001-05-14 or 2001-05 (words joined by '-').
    if let Some(y) = year(w0).filter(|_| !the) {
        if let Some(m) = w(at + 1)
            .filter(|_| gap(at + 1) == "-")
            .and_then(number)
            .and_then(|m| i8::try_from(m).ok())
            .filter(|m| (1..=12).contains(m))
        {
            if let Some(d) = w(at + 2)
                .filter(|_| gap(at + 2) == "-")
                .and_then(number)
                .and_then(|d| i8::try_from(d).ok())
            {
                let day = Date::new(y, m, d).ok()?;
                return make(day, day, true, Some(m), at + 3);
            }
            let (a, b) = month_days(y, m)?;
            return make(a, b, true, Some(m), at + 2);
        }
        // A year alone: four digits, 1900–2100, not part of a longer number or an amount.
        if !gap(at).trim_end().ends_with(['$', '€', '£', '#']) {
            let (a, b) = year_days(y)?;
            return make(a, b, true, None, at + 1);
        }
        return None;
    }

    // "early/mid/late/the beginning of/the end of" + month or year.
    let part = match (w0, w(at + 1), w(at + 2)) {
        ("early", ..) => Some((Part::Early, 1)),
        ("mid" | "middle", Some("of"), _) => Some((Part::Mid, 2)),
        ("mid" | "middle", ..) => Some((Part::Mid, 1)),
        ("late", ..) => Some((Part::Late, 1)),
        ("beginning" | "start", Some("of"), _) => Some((Part::Early, 2)),
        ("end", Some("of"), _) => Some((Part::Late, 2)),
        _ => None,
    };
    if let Some((part, used)) = part
        && let Some(inner) = calendar_at(toks, at + used, today, true)
        && (inner.month.is_some() || inner.first.month() == 1 && inner.last.month() == 12)
    {
        let (a, b) = part.of(inner.first, inner.last)?;
        return make(a, b, inner.has_year, inner.month, at + used + inner.used);
    }

    // "the first/second/third/fourth/last week of" + month [year].
    let nth = match w0 {
        "first" => Some(1),
        "second" => Some(2),
        "third" => Some(3),
        "fourth" => Some(4),
        "last" => Some(-1),
        _ => None,
    };
    if let (Some(n), Some("week"), Some("of")) = (nth, w(at + 1), w(at + 2))
        && let Some(inner) = calendar_at(toks, at + 3, today, true)
        && inner.month.is_some()
    {
        let (a, b) = if n > 0 {
            let a = inner.first.checked_add((7 * (n - 1)).days()).ok()?;
            (a, a.checked_add(6.days()).ok()?.min(inner.last))
        } else {
            (inner.last.checked_sub(6.days()).ok()?, inner.last)
        };
        return make(a, b, inner.has_year, inner.month, at + 3 + inner.used);
    }

    // Seasons: "summer 2002", "the summer of 2002", "summer" (cued).
    if let Some(s) = season(w0) {
        let of = usize::from(w(at + 1) == Some("of"));
        if let Some(y) = w(at + 1 + of).and_then(year) {
            let (a, b) = season_days(s, y)?;
            return make(a, b, true, None, at + 2 + of);
        }
        if cue_before || at > i {
            let (a, b) = latest(today, |y| season_days(s, y))?;
            return make(a, b, false, None, at + 1);
        }
        return None;
    }

    // Holidays: "Christmas 2001", "Easter", "New Year's Eve".
    if let Some((h, used)) = holiday_at(toks, at).filter(|_| !the) {
        if let Some(y) = w(at + used).and_then(year) {
            let (a, b) = holiday_days(h, y)?;
            return make(a, b, true, None, at + used + 1);
        }
        let (a, b) = latest(today, |y| holiday_days(h, y))?;
        return make(a, b, false, None, at + used);
    }

    // A weekday after a cue: "on Friday" (the latest Friday, today included).
    if let Some(d) = weekday(w0).filter(|_| cue_before) {
        let day = if today.weekday() == d {
            today
        } else {
            today.nth_weekday(-1, d).ok()?
        };
        let mut c = make(day, day, false, None, at + 1)?;
        c.cued = true;
        return Some(c);
    }

    // A day first: "14 May 2001", "14th of May", "the 14th of May".
    if let Some(d) = number(w0).filter(|d| (1..=31).contains(d)) {
        let of = usize::from(w(at + 1) == Some("of"));
        if let Some(m) = w(at + 1 + of).and_then(month) {
            let d = i8::try_from(d).ok()?;
            let end = at + 2 + of;
            if let Some(y) = w(end).and_then(year) {
                let day = Date::new(y, m, d).ok()?;
                return make(day, day, true, Some(m), end + 1);
            }
            let (day, _) = latest(today, |y| Date::new(y, m, d).ok().map(|x| (x, x)))?;
            return make(day, day, false, Some(m), end);
        }
        return None;
    }

    // A month first: "May 14, 2001", "May 14", "May 2001", "May of 2001", "in May".
    let m = month(w0).filter(|_| !the)?;
    let abbreviated = (w0.len() <= 3 && w0 != "may") || w0 == "sept";
    let ambiguous = matches!(w0, "may" | "march") || abbreviated;
    if let Some(d) = w(at + 1)
        .and_then(number)
        .filter(|d| (1..=31).contains(d))
        .filter(|_| w(at + 1).is_some_and(|x| x.len() <= 4))
    {
        let d = i8::try_from(d).ok()?;
        if let Some(y) = w(at + 2).and_then(year) {
            let day = Date::new(y, m, d).ok()?;
            return make(day, day, true, Some(m), at + 3);
        }
        let (day, _) = latest(today, |y| Date::new(y, m, d).ok().map(|x| (x, x)))?;
        return make(day, day, false, Some(m), at + 2);
    }
    let of = usize::from(w(at + 1) == Some("of"));
    if let Some(y) = w(at + 1 + of).and_then(year) {
        let (a, b) = month_days(y, m)?;
        return make(a, b, true, Some(m), at + 2 + of);
    }
    if (ambiguous && !cue_before) || abbreviated {
        return None;
    }
    let (a, b) = latest(today, |y| month_days(y, m))?;
    make(a, b, false, Some(m), at + 1)
}

/// A part of a month or a year.
#[derive(Clone, Copy)]
enum Part {
    Early,
    Mid,
    Late,
}

impl Part {
    /// Days 1–10, 11–20 or 21–end of a month; the first or last four months of a year (its
    /// middle four for `Mid`).
    fn of(self, first: Date, last: Date) -> Option<(Date, Date)> {
        if first.month() == last.month() {
            let d = |n: i8| Date::new(first.year(), first.month(), n).ok();
            return Some(match self {
                Part::Early => (first, d(10)?),
                Part::Mid => (d(11)?, d(20)?),
                Part::Late => (d(21)?, last),
            });
        }
        let y = first.year();
        Some(match self {
            Part::Early => month_span(y, 1, 4)?,
            Part::Mid => month_span(y, 5, 8)?,
            Part::Late => month_span(y, 9, 12)?,
        })
    }
}

fn month_span(year: i16, from: i8, to: i8) -> Option<(Date, Date)> {
    Some((month_days(year, from)?.0, month_days(year, to)?.1))
}

#[cfg(test)]
mod tests;
