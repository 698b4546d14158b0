//! The syntax tree of a statement, and its canonical text.
//!
//! Invariant: `parse(&statement.to_string())` gives back `statement` (the round-trip property
//! test in `tests/roundtrip.rs`): the printer writes keywords in upper case, strings quoted
//! with `''` escapes, numbers in Rust's shortest round-trip form and instants in UTC.

use std::fmt;

use jiff::Timestamp;
use jiff::civil::Date;
use memdb::Source;

/// One statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// Run a query and return its rows.
    Query(Query),
    /// Run a query and return its plan with the estimated and actual candidates and the time
    /// of each stage (and its rows).
    Explain(Query),
    /// Show a part of the store.
    Show(Show),
    /// `FORGET 'policy' AS OF date [DRY RUN | DROP ORIGINALS]`: optical forgetting by a
    /// built-in policy.
    Forget(Forget),
}

/// `FORGET`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forget {
    /// A built-in policy's name (`timed-gentle`, …).
    pub policy: String,
    /// The day ages are counted to.
    pub as_of: Date,
    /// Report what would change; write nothing.
    pub dry_run: bool,
    /// Consent to dropping photo originals where the policy's stage does not keep them
    /// (without it a run that would drop any is refused).
    pub drop_originals: bool,
}

/// A statement that returns rows through a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// `RECALL 'question' [WHERE …] [AS OF t] [VALID AT t] [TOP n]`: dense + lexical +
    /// path-overlap recall.
    Recall(Recall),
    /// `PATHS MATCHING ('a', 'b') [MIN OVERLAP n] [TOP n]`: EM-Paths by node overlap.
    Paths(Paths),
    /// `ITEMS [WHERE …] [AS OF t] [VALID AT t] [ORDER BY time ASC|DESC] [TOP n]`: items by
    /// filters.
    Items(Items),
    /// `HISTORY OF n [AS OF t] [VALID AT t]`: the versions of item `n` (what it supersedes, and
    /// what supersedes it) in both times.
    History(History),
}

/// `AS OF t` and `VALID AT t`: which versions of the memories a statement reads (SPEC.md §5.6
/// and §9). Neither: the current memories. A date stands for the last millisecond of that UTC
/// day (what memdb knew, or what was true, by the end of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeTravel {
    /// `AS OF t`: what memdb knew then (system time).
    pub as_of: Option<Instant>,
    /// `VALID AT t`: what was true then (valid time).
    pub valid_at: Option<Instant>,
}

impl TimeTravel {
    /// Neither clause.
    pub fn is_now(&self) -> bool {
        self.as_of.is_none() && self.valid_at.is_none()
    }
}

/// `HISTORY OF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct History {
    /// The item.
    pub id: u64,
    /// Which versions: all of them, those memdb had written by `AS OF`, those true at
    /// `VALID AT`.
    pub at: TimeTravel,
}

/// `RECALL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Recall {
    /// The question.
    pub text: String,
    /// Filters every signal's scan honours.
    pub filters: Vec<Filter>,
    /// Which versions it ranks.
    pub at: TimeTravel,
    /// `ASKED ON`: the day the question is asked, that its time words ("last month", "two
    /// years ago") are read from (`None`: today).
    pub asked_on: Option<jiff::civil::Date>,
    /// Items to return (default 10).
    pub top: Option<u64>,
}

/// `PATHS MATCHING`.
#[derive(Debug, Clone, PartialEq)]
pub struct Paths {
    /// Node phrases (matched after lower-casing and collapsing spaces).
    pub phrases: Vec<String>,
    /// Fewest of the phrases' nodes a path must hold (default 1).
    pub min_overlap: Option<u32>,
    /// Paths to return (default 10).
    pub top: Option<u64>,
}

/// `ITEMS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Items {
    /// All must hold.
    pub filters: Vec<Filter>,
    /// Which versions it reads.
    pub at: TimeTravel,
    /// Event-time order (default ascending).
    pub order: Option<Order>,
    /// Items to return (default: all).
    pub top: Option<u64>,
}

/// Event-time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    Asc,
    /// Newest first.
    Desc,
}

/// One condition of a `WHERE`.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// `source = s` or `source IN (s, …)`.
    Source(Vec<Source>),
    /// `time …`.
    Time(TimeFilter),
    /// `tag = '…'` (exact, case-insensitive).
    Tag(String),
    /// `entity = '…'` (exact, case-insensitive; the speaker or sender counts).
    Entity(String),
    /// `user_id = '…'`, `agent_id = '…'` or `run_id = '…'`: items of that scope (exact).
    Scope(ScopeField, String),
    /// `NEAR(lat, lon, distance)`: items whose place lies within the distance.
    Near {
        /// Degrees north.
        lat: f64,
        /// Degrees east.
        lon: f64,
        /// Great-circle radius.
        radius: Distance,
    },
    /// `NEAR('place', distance)`: as `NEAR` at the point of the place the name resolves to
    /// (`memdb_geo::lookup`: "Paris" is Paris, France; "Paris, TX" the one in Texas), resolved
    /// when the statement runs.
    NearPlace {
        /// The place as written, qualifiers included.
        name: String,
        /// Great-circle radius.
        radius: Distance,
    },
    /// `SUPERSEDES n`: items that replace item `n`.
    Supersedes(u64),
    /// `CURRENT`: items no other item supersedes.
    Current,
}

/// A component of an item's scope (SPEC.md §4.5), as a filter names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeField {
    /// `user_id`.
    User,
    /// `agent_id`.
    Agent,
    /// `run_id`.
    Run,
}

impl ScopeField {
    /// Every component, in the order a scope lists them.
    pub const ALL: [ScopeField; 3] = [ScopeField::User, ScopeField::Agent, ScopeField::Run];

    /// Its name in the language (and in mem0): `user_id`, `agent_id`, `run_id`.
    pub fn name(self) -> &'static str {
        match self {
            ScopeField::User => "user_id",
            ScopeField::Agent => "agent_id",
            ScopeField::Run => "run_id",
        }
    }

    /// The component of `scope` it names.
    pub fn of(self, scope: &memdb::Scope) -> Option<&str> {
        match self {
            ScopeField::User => scope.user_id.as_deref(),
            ScopeField::Agent => scope.agent_id.as_deref(),
            ScopeField::Run => scope.run_id.as_deref(),
        }
    }

    /// The filters that keep the items of `scope`: one per component it sets.
    pub fn filters(scope: &memdb::Scope) -> Vec<Filter> {
        ScopeField::ALL
            .into_iter()
            .filter_map(|field| Some(Filter::Scope(field, field.of(scope)?.to_owned())))
            .collect()
    }
}

/// A time condition. Dates name whole UTC days.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeFilter {
    /// `BETWEEN a AND b`: from the start of `a` to the end of `b`, both included.
    Between(Instant, Instant),
    /// `>= a`.
    AtOrAfter(Instant),
    /// `> a`: after the end of `a`.
    After(Instant),
    /// `< a`.
    Before(Instant),
    /// `<= a`: up to the end of `a`.
    AtOrBefore(Instant),
    /// `ON d`: that day.
    On(Date),
    /// `IN LAST n unit`: from `now − n units` up to now.
    Last(u32, Unit),
    /// `IN '…'`: the window the words name ("May 2001", "last summer", "the first week of
    /// December 2001"; `memdb_text::time_phrases`), relative words read from the day the
    /// statement runs (a `RECALL`'s `ASKED ON` day when it has one).
    Words(String),
}

/// A point or a day in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instant {
    /// A whole day: each item's own local day (the day its page shows).
    Day(Date),
    /// An instant.
    At(Timestamp),
}

/// A unit of relative time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// 60 minutes.
    Hours,
    /// 24 hours.
    Days,
    /// 7 days.
    Weeks,
    /// A calendar month.
    Months,
    /// A calendar year.
    Years,
}

impl Unit {
    /// Every unit with its keyword (plural; the singular is accepted too).
    pub(crate) const ALL: [(Unit, &'static str); 5] = [
        (Unit::Hours, "HOURS"),
        (Unit::Days, "DAYS"),
        (Unit::Weeks, "WEEKS"),
        (Unit::Months, "MONTHS"),
        (Unit::Years, "YEARS"),
    ];

    fn keyword(self) -> &'static str {
        Unit::ALL
            .iter()
            .find(|(u, _)| *u == self)
            .map_or("DAYS", |(_, k)| k)
    }
}

/// A distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distance {
    /// How many units.
    pub value: f64,
    /// Which unit.
    pub unit: DistanceUnit,
}

/// A unit of distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistanceUnit {
    /// Metres.
    M,
    /// Kilometres.
    Km,
    /// Statute miles.
    Mi,
}

impl DistanceUnit {
    pub(crate) const ALL: [(DistanceUnit, &'static str, f64); 3] = [
        (DistanceUnit::M, "m", 1.0),
        (DistanceUnit::Km, "km", 1000.0),
        (DistanceUnit::Mi, "mi", 1609.344),
    ];

    fn entry(self) -> (&'static str, f64) {
        DistanceUnit::ALL
            .iter()
            .find(|(u, ..)| *u == self)
            .map_or(("m", 1.0), |(_, name, metres)| (name, *metres))
    }
}

impl Distance {
    /// The distance in metres.
    pub fn metres(&self) -> f64 {
        self.value * self.unit.entry().1
    }
}

/// `SHOW`.
#[derive(Debug, Clone, PartialEq)]
pub enum Show {
    /// `SHOW STATS`: counts and bytes.
    Stats,
    /// `SHOW ITEM n`: every field of an item, its path and nodes.
    Item(u64),
    /// `SHOW NODE 'phrase'`: a graph node, its aliases and paths.
    Node(String),
    /// `SHOW PATH n`: an EM-Path, its nodes and items.
    Path(u64),
    /// `SHOW PAGE d`: the day's paths and items.
    Page(Date),
}

/// Writes `text` as a quoted string literal.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Query(q) => write!(f, "{q}"),
            Statement::Explain(q) => write!(f, "EXPLAIN {q}"),
            Statement::Show(s) => write!(f, "{s}"),
            Statement::Forget(g) => write!(
                f,
                "FORGET {} AS OF {}{}{}",
                quote(&g.policy),
                g.as_of,
                if g.dry_run { " DRY RUN" } else { "" },
                if g.drop_originals {
                    " DROP ORIGINALS"
                } else {
                    ""
                }
            ),
        }
    }
}

fn write_filters(f: &mut fmt::Formatter<'_>, filters: &[Filter]) -> fmt::Result {
    for (i, filter) in filters.iter().enumerate() {
        f.write_str(if i == 0 { " WHERE " } else { " AND " })?;
        write!(f, "{filter}")?;
    }
    Ok(())
}

fn write_top(f: &mut fmt::Formatter<'_>, top: Option<u64>) -> fmt::Result {
    match top {
        Some(n) => write!(f, " TOP {n}"),
        None => Ok(()),
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::Recall(r) => {
                write!(f, "RECALL {}", quote(&r.text))?;
                write_filters(f, &r.filters)?;
                write!(f, "{}", r.at)?;
                if let Some(day) = r.asked_on {
                    write!(f, " ASKED ON {day}")?;
                }
                write_top(f, r.top)
            }
            Query::Paths(p) => {
                let phrases: Vec<String> = p.phrases.iter().map(|s| quote(s)).collect();
                write!(f, "PATHS MATCHING ({})", phrases.join(", "))?;
                if let Some(n) = p.min_overlap {
                    write!(f, " MIN OVERLAP {n}")?;
                }
                write_top(f, p.top)
            }
            Query::Items(i) => {
                f.write_str("ITEMS")?;
                write_filters(f, &i.filters)?;
                write!(f, "{}", i.at)?;
                match i.order {
                    Some(Order::Asc) => f.write_str(" ORDER BY time ASC")?,
                    Some(Order::Desc) => f.write_str(" ORDER BY time DESC")?,
                    None => {}
                }
                write_top(f, i.top)
            }
            Query::History(h) => write!(f, "HISTORY OF {}{}", h.id, h.at),
        }
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filter::Source(sources) if sources.len() == 1 => write!(f, "source = {}", sources[0]),
            Filter::Source(sources) => {
                let names: Vec<&str> = sources.iter().map(|s| s.name()).collect();
                write!(f, "source IN ({})", names.join(", "))
            }
            Filter::Time(t) => write!(f, "time {t}"),
            Filter::Tag(t) => write!(f, "tag = {}", quote(t)),
            Filter::Entity(e) => write!(f, "entity = {}", quote(e)),
            Filter::Scope(field, id) => write!(f, "{} = {}", field.name(), quote(id)),
            Filter::Near { lat, lon, radius } => {
                write!(
                    f,
                    "NEAR({lat}, {lon}, {}{})",
                    radius.value,
                    radius.unit.entry().0
                )
            }
            Filter::NearPlace { name, radius } => {
                write!(
                    f,
                    "NEAR({}, {}{})",
                    quote(name),
                    radius.value,
                    radius.unit.entry().0
                )
            }
            Filter::Supersedes(id) => write!(f, "SUPERSEDES {id}"),
            Filter::Current => f.write_str("CURRENT"),
        }
    }
}

impl fmt::Display for TimeFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeFilter::Between(a, b) => write!(f, "BETWEEN {a} AND {b}"),
            TimeFilter::AtOrAfter(a) => write!(f, ">= {a}"),
            TimeFilter::After(a) => write!(f, "> {a}"),
            TimeFilter::Before(a) => write!(f, "< {a}"),
            TimeFilter::AtOrBefore(a) => write!(f, "<= {a}"),
            TimeFilter::On(d) => write!(f, "ON {d}"),
            TimeFilter::Last(n, unit) => write!(f, "IN LAST {n} {}", unit.keyword()),
            TimeFilter::Words(words) => write!(f, "IN {}", quote(words)),
        }
    }
}

/// Each clause with a leading space (nothing for neither).
impl fmt::Display for TimeTravel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = self.as_of {
            write!(f, " AS OF {t}")?;
        }
        if let Some(t) = self.valid_at {
            write!(f, " VALID AT {t}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Instant::Day(d) => write!(f, "{d}"),
            Instant::At(t) => write!(f, "{t}"),
        }
    }
}

impl fmt::Display for Show {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Show::Stats => f.write_str("SHOW STATS"),
            Show::Item(id) => write!(f, "SHOW ITEM {id}"),
            Show::Node(n) => write!(f, "SHOW NODE {}", quote(n)),
            Show::Path(id) => write!(f, "SHOW PATH {id}"),
            Show::Page(d) => write!(f, "SHOW PAGE {d}"),
        }
    }
}
