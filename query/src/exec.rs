//! Planning and running statements over a store: filters pushed into the index scans, typed
//! rows out, and a plan that records each stage's estimated and actual candidates and time.
//!
//! Invariants: a statement reads one snapshot (its rows come from one commit); a filtered query
//! returns exactly the items that pass every filter — the index takes what it can (time range,
//! one source) and the rest is applied to the index's candidates, never after a top-k cut.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant as Clock;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};
use memdb::graph::{GraphNode, GraphPath};
use memdb::{
    Embedder, Item, RecallOptions, ScanFilter, Snapshot, Source, Store, TimeWindow,
    maintenance::Stats, recall::Explanation, recall::RoaringTreemap, time::TimeBound,
};

use crate::ast::{
    Filter, History, Instant, Items, Order, Paths, Query, Recall, Show, Statement, TimeFilter,
    TimeTravel, Unit,
};
use crate::error::{QueryError, engine};

type Result<T> = std::result::Result<T, QueryError>;

/// What a statement runs with besides the store.
#[derive(Clone, Default)]
pub struct QueryContext<'a> {
    /// The store's encoder; `RECALL` needs it.
    pub embedder: Option<&'a dyn Embedder>,
    /// "Now" for relative times (`IN LAST 30 DAYS`), UTC ms; `None`: the system clock.
    pub now_ms: Option<i64>,
    /// Base options of `RECALL` (fusion weights, extractor, …); the statement sets `k` and
    /// the filters.
    pub recall: RecallOptions,
}

impl std::fmt::Debug for QueryContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryContext")
            .field("embedder", &self.embedder.is_some())
            .field("now_ms", &self.now_ms)
            .finish_non_exhaustive()
    }
}

/// One item in a result.
#[derive(Debug, Clone)]
pub struct ItemRow {
    /// The item.
    pub item: Item,
    /// Its fused recall score (`RECALL` only).
    pub score: Option<f64>,
    /// Why it was recalled (`RECALL` only).
    pub why: Option<Explanation>,
    /// For an earlier version of an item (`HISTORY`, `AS OF`, `VALID AT`): when an update
    /// replaced it or a delete retired it, UTC ms.
    pub replaced_ms: Option<i64>,
    /// The version's valid time (`HISTORY`, `AS OF`, `VALID AT`): from, until (exclusive),
    /// UTC ms; `None` is unbounded.
    pub valid: Option<(Option<i64>, Option<i64>)>,
}

impl ItemRow {
    /// An item selected by filters, not ranked.
    pub fn plain(item: Item) -> ItemRow {
        ItemRow {
            item,
            score: None,
            why: None,
            replaced_ms: None,
            valid: None,
        }
    }

    /// A version of a memory, with both its times.
    pub fn version(version: memdb::memory::MemoryVersion) -> ItemRow {
        ItemRow {
            replaced_ms: version.system_to_ms,
            valid: Some((version.valid_from_ms, version.valid_to_ms)),
            ..ItemRow::plain(version.record)
        }
    }
}

/// One EM-Path in a result.
#[derive(Debug, Clone)]
pub struct PathRow {
    /// Path id.
    pub path: u64,
    /// Its page (day).
    pub page: String,
    /// Weighted overlap with the query's nodes (`PATHS MATCHING` only).
    pub score: Option<f64>,
    /// Query nodes it holds (`PATHS MATCHING` only).
    pub overlap: Option<u32>,
    /// Phrases of its nodes, in order of first mention.
    pub nodes: Vec<String>,
    /// Items it points at.
    pub items: Vec<u64>,
}

/// `SHOW ITEM`.
#[derive(Debug, Clone)]
pub struct ItemDetail {
    /// The item.
    pub item: Item,
    /// Its path and page, if the graph has seen it.
    pub path: Option<(u64, String)>,
    /// Phrases of its nodes.
    pub nodes: Vec<String>,
}

/// `SHOW NODE`.
#[derive(Debug, Clone)]
pub struct NodeDetail {
    /// The node.
    pub node: GraphNode,
    /// The paths holding it.
    pub paths: Vec<PathRow>,
}

/// `SHOW STATS`.
#[derive(Debug, Clone)]
pub struct StatsRow {
    /// Items, blobs, segments and bytes.
    pub stats: Stats,
    /// Graph nodes.
    pub nodes: u64,
    /// EM-Paths.
    pub paths: u64,
    /// Vectors per space.
    pub vectors: Vec<(String, u64)>,
    /// The model that made the vectors.
    pub model: Option<String>,
}

/// A statement's rows, typed by what they are.
#[derive(Debug, Clone)]
pub enum Rows {
    /// Items (`RECALL`, `ITEMS`, `HISTORY`, and a page's items).
    Items(Vec<ItemRow>),
    /// EM-Paths (`PATHS MATCHING`).
    Paths(Vec<PathRow>),
    /// `SHOW ITEM`.
    Item(Box<ItemDetail>),
    /// `SHOW NODE`.
    Node(Box<NodeDetail>),
    /// `SHOW PATH`: the path and its items.
    Path(Box<PathRow>, Vec<ItemRow>),
    /// `SHOW PAGE`: the day's paths and items.
    Page(Date, Vec<PathRow>, Vec<ItemRow>),
    /// `SHOW STATS`.
    Stats(Box<StatsRow>),
    /// `FORGET`: what each stage gained, lost and saved.
    Forget(Box<memdb::forget::ForgetReport>),
}

impl Rows {
    /// Number of result rows (items or paths; 1 for a `SHOW` of one thing).
    pub fn len(&self) -> usize {
        match self {
            Rows::Items(r) => r.len(),
            Rows::Paths(r) => r.len(),
            Rows::Page(_, _, items) => items.len(),
            Rows::Path(_, items) => items.len(),
            Rows::Item(_) | Rows::Node(_) | Rows::Stats(_) => 1,
            Rows::Forget(r) => r.stages.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One stage of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// What it is (`scan by_source`, `dense`, …).
    pub name: String,
    /// Which index and which pushed-down conditions.
    pub detail: String,
    /// Candidates the planner expected (from counts and the time span), if it estimates.
    pub estimated: Option<u64>,
    /// Candidates the stage produced.
    pub actual: u64,
    /// Time it took, µs.
    pub micros: u64,
}

/// How a statement ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Parsing, µs.
    pub parse_us: u64,
    /// Planning (choosing indexes, pushing filters down), µs.
    pub plan_us: u64,
    /// The stages in order.
    pub stages: Vec<Stage>,
    /// Wall time of running the statement (planning, every stage and what lies between them),
    /// µs; parsing is before it.
    pub run_us: u64,
}

impl Plan {
    /// Total time, µs: parsing plus the run's wall time, so it is what a caller waited, never a
    /// sum of stages (which overlap nothing and miss the time between them).
    pub fn total_us(&self) -> u64 {
        self.parse_us + self.run_us
    }
}

/// A statement's result.
#[derive(Debug, Clone)]
pub struct Output {
    /// The statement as parsed.
    pub statement: Statement,
    /// Its rows.
    pub rows: Rows,
    /// How it ran (shown for `EXPLAIN`).
    pub plan: Plan,
    /// `RECALL`: the memory-graph nodes the question named (empty for other statements).
    pub query_nodes: Vec<String>,
    /// What the statement decided that its reader should know, said with its answer: the
    /// place an ambiguous name was taken for, and the others so named (`NEAR('Newcastle', …)`).
    pub notes: Vec<String>,
    /// `RECALL`: why no item matches the question well, when none does
    /// ([`memdb::Recall::no_good_match`]); its rows are then the nearest items, not an answer.
    pub no_good_match: Option<String>,
    /// What the statement could not read because its bytes are damaged: it answered from
    /// the rest (empty on a sound store; `memdb repair` mends it).
    pub skipped: memdb::maintenance::Skipped,
}

impl Output {
    /// Whether the statement asked for its plan.
    pub fn is_explain(&self) -> bool {
        matches!(self.statement, Statement::Explain(_))
    }
}

pub(crate) fn micros(since: Clock) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// How many of the places an ambiguous name may mean `NEAR('…')` weighs by the items near
/// them (the most populous first): enough for every everyday name ("Newcastle" has 11).
const PLACE_CHOICES: usize = 20;

/// Runs a parsed statement.
pub(crate) fn execute(
    store: &Store,
    statement: Statement,
    ctx: &QueryContext<'_>,
    parse_us: u64,
) -> Result<Output> {
    let started = Clock::now();
    let snapshot = store.snapshot().map_err(engine(statement.to_string()))?;
    let mut run = Run {
        store,
        snapshot: &snapshot,
        ctx,
        plan: Plan {
            parse_us,
            ..Plan::default()
        },
        statement: statement.to_string(),
        query_nodes: Vec::new(),
        skipped: memdb::maintenance::Skipped::default(),
        asked_on: None,
        no_good_match: None,
        notes: Vec::new(),
    };
    let rows = match &statement {
        Statement::Query(q) | Statement::Explain(q) => run.query(q)?,
        Statement::Show(s) => run.show(s)?,
        Statement::Forget(g) => run.forget(g)?,
    };
    run.plan.run_us = micros(started);
    Ok(Output {
        statement,
        rows,
        plan: run.plan,
        query_nodes: run.query_nodes,
        notes: run.notes,
        no_good_match: run.no_good_match,
        skipped: run.skipped,
    })
}

struct Run<'r> {
    store: &'r Store,
    snapshot: &'r Snapshot,
    ctx: &'r QueryContext<'r>,
    plan: Plan,
    statement: String,
    query_nodes: Vec<String>,
    skipped: memdb::maintenance::Skipped,
    /// A `RECALL`'s `ASKED ON` day: `time IN '…'` words are read from it.
    asked_on: Option<jiff::civil::Date>,
    no_good_match: Option<String>,
    notes: Vec<String>,
}

/// Filters split into what an index scan takes and what is checked on its candidates.
struct Pushdown {
    scan: ScanFilter,
    /// Set when the bounds exclude everything.
    empty: bool,
    residual: Vec<Filter>,
    detail: String,
    /// The places `NEAR('…')` named, resolved (the residual `NEAR` has their points).
    places: Vec<String>,
}

/// Rule-of-thumb share of candidates a residual filter keeps (the planner's estimate only;
/// EXPLAIN shows it next to the actual count).
fn selectivity(filter: &Filter) -> f64 {
    match filter {
        Filter::Source(s) => s.len() as f64 / Source::ALL.len() as f64,
        Filter::Current => 0.9,
        Filter::Supersedes(_) => 0.001,
        _ => 0.1,
    }
}

impl Run<'_> {
    fn err<E: Into<memdb::Error>>(&self) -> impl FnOnce(E) -> QueryError + use<E> {
        engine(self.statement.clone())
    }

    fn now_ms(&self) -> i64 {
        self.ctx
            .now_ms
            .unwrap_or_else(|| Timestamp::now().as_millisecond())
    }

    fn stage(
        &mut self,
        name: &str,
        detail: String,
        estimated: Option<u64>,
        actual: u64,
        started: Clock,
    ) {
        self.plan.stages.push(Stage {
            name: name.to_owned(),
            detail,
            estimated,
            actual,
            micros: micros(started),
        });
    }

    fn query(&mut self, query: &Query) -> Result<Rows> {
        match query {
            Query::Items(items) => self.items(items),
            Query::Recall(recall) => self.recall(recall),
            Query::Paths(paths) => self.paths(paths),
            Query::History(history) => self.history(history),
        }
    }

    /// The versions seen at `at` (one per memory: the newest of those seen), by memory id.
    fn versions_at(&mut self, at: &TimeTravel) -> Result<Vec<memdb::memory::MemoryVersion>> {
        let started = Clock::now();
        let travel = engine_travel(at);
        let mut versions = self.snapshot.versions_at(travel).map_err(self.err())?;
        // Sorted by memory, oldest first: keep each memory's last.
        versions.reverse();
        versions.dedup_by_key(|v| v.record.id);
        versions.reverse();
        self.stage(
            "versions",
            format!("every version of every memory, seen{at}"),
            None,
            versions.len() as u64,
            started,
        );
        Ok(versions)
    }

    /// Splits `filters` into the index scan (time window and one source) and residual checks.
    fn push_down(&self, filters: &[Filter]) -> Result<Pushdown> {
        let mut window = TimeWindow::ALL;
        let mut source = None;
        let mut residual = Vec::new();
        let mut places = Vec::new();
        for filter in filters {
            match filter {
                Filter::Time(t) => {
                    let w = time_window(t, self.now_ms(), self.asked_on).map_err(|source| {
                        QueryError::Time {
                            statement: self.statement.clone(),
                            source,
                        }
                    })?;
                    window = window.and(&w);
                }
                Filter::Source(s) if s.len() == 1 && source.is_none() => source = Some(s[0]),
                Filter::NearPlace { name, radius } => {
                    let candidates =
                        memdb_geo::candidates(name).map_err(|source| QueryError::Place {
                            statement: self.statement.clone(),
                            source,
                        })?;
                    let (place, said) = self.choose_place(name, &candidates, radius)?;
                    places.push(said);
                    residual.push(Filter::Near {
                        lat: place.lat(),
                        lon: place.lon(),
                        radius: *radius,
                    });
                }
                other => residual.push(other.clone()),
            }
        }
        let mut detail = match source {
            Some(s) => format!("index by_source, source = {s}"),
            None => "index by_source, every source merged in time order".to_owned(),
        };
        if let Some((from, to)) = window.candidate_ms().filter(|_| !window.is_all()) {
            detail.push_str(&format!(", time in [{}, {})", show_ms(from), show_ms(to)));
            if !window.is_utc_exact() {
                detail.push_str(", items near a day's edge checked on their own offset");
            }
        }
        Ok(Pushdown {
            scan: ScanFilter {
                time: window,
                source,
                limit: None,
            },
            empty: window.candidate_ms().is_none(),
            residual,
            detail,
            places,
        })
    }

    /// The place a person means by an ambiguous name (`candidates`, the likeliest first: the
    /// gazetteer's choice, then by population): the first with some of the store's items within
    /// `radius`, else the first (a store with no items there keeps the gazetteer's choice); and
    /// the choice in words, with the alternatives and their items. At most [`PLACE_CHOICES`]
    /// candidates are weighed.
    fn choose_place(
        &self,
        name: &str,
        candidates: &[&'static memdb_geo::Place],
        radius: &crate::ast::Distance,
    ) -> Result<(&'static memdb_geo::Place, String)> {
        let Some(&first) = candidates.first() else {
            return Err(QueryError::Place {
                statement: self.statement.clone(),
                source: memdb_geo::GeoError::UnknownPlace {
                    name: name.to_owned(),
                    suggestions: Vec::new(),
                },
            });
        };
        let at = |p: &memdb_geo::Place| format!("{p} at ({}, {})", p.lat(), p.lon());
        if candidates.len() == 1 {
            return Ok((
                first,
                format!("{} is {}", crate::ast::quote(name), at(first)),
            ));
        }
        // Where the store's items are: every current item with a position.
        let positions: Vec<(f64, f64)> = self
            .snapshot
            .scan(&ScanFilter::default())
            .map_err(self.err())?
            .iter()
            .filter_map(|i| i.fields.location.as_ref().and_then(|l| l.geo))
            .map(|g| (g.lat, g.lon))
            .collect();
        let weighed: Vec<(&'static memdb_geo::Place, usize)> = candidates
            .iter()
            .take(PLACE_CHOICES)
            .map(|&p| {
                let near = positions
                    .iter()
                    .filter(|(lat, lon)| {
                        haversine_m(p.lat(), p.lon(), *lat, *lon) <= radius.metres()
                    })
                    .count();
                (p, near)
            })
            .collect();
        // The first (the likeliest by name and population) that has items near it.
        let (chosen, items) = weighed
            .iter()
            .find(|(_, n)| *n > 0)
            .copied()
            .unwrap_or((first, 0));
        let others: Vec<String> = weighed
            .iter()
            .filter(|(p, _)| p.geoname_id() != chosen.geoname_id())
            .map(|(p, n)| format!("{p} ({n})"))
            .collect();
        let why = if items == 0 {
            "the most populous; no item lies within the distance of any place so named".to_owned()
        } else if chosen.geoname_id() == first.geoname_id() {
            format!("the likeliest so named, with {items} items within the distance")
        } else {
            format!("{items} items lie within the distance, and none near the likelier {first}")
        };
        let more = candidates.len().saturating_sub(weighed.len());
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        Ok((
            chosen,
            format!(
                "{} is {}: {why}; also so named, with their items: {}{tail}",
                crate::ast::quote(name),
                at(chosen),
                others.join("; ")
            ),
        ))
    }

    /// Candidates an index range should hold: items × the range's share of the store's time
    /// span × the source's share of items.
    fn estimate_scan(&self, scan: &ScanFilter) -> Result<u64> {
        let stats_items = self.snapshot.item_count().map_err(self.err())?;
        let mut share = 1.0;
        if let Some((first, last)) = self.snapshot.time_span().map_err(self.err())?
            && !scan.time.is_all()
            && let Some((from, to)) = scan.time.candidate_ms()
        {
            let lo = from.max(first);
            let hi = to.min(last.saturating_add(1));
            // i128: wide windows (a bound at the calendar's end) would overflow i64 differences.
            let span = (i128::from(last) - i128::from(first) + 1).max(1) as f64;
            share *= ((i128::from(hi) - i128::from(lo)).max(0) as f64 / span).clamp(0.0, 1.0);
        }
        if let Some(source) = scan.source {
            let counts = self.store.stats().map_err(self.err())?;
            let n = counts
                .items_by_source
                .iter()
                .find(|(s, _)| *s == source)
                .map_or(0, |(_, n)| *n);
            share *= n as f64 / stats_items.max(1) as f64;
        }
        Ok((stats_items as f64 * share).round() as u64)
    }

    /// Notes items left out of the answer because their records are damaged.
    fn skip_items(&mut self, ids: impl IntoIterator<Item = u64>) {
        for id in ids {
            if !self.skipped.items.contains(&id) {
                self.skipped.items.push(id);
            }
        }
    }

    /// Items passing `filters`, in event-time order: an index range scan, then the residual
    /// checks. Records its stages.
    fn select(&mut self, filters: &[Filter], limit: Option<usize>) -> Result<Vec<Item>> {
        let started = Clock::now();
        let mut push = self.push_down(filters)?;
        if push.residual.is_empty() {
            push.scan.limit = limit;
        }
        let estimated = self.estimate_scan(&push.scan)?;
        self.plan.plan_us += micros(started);
        for place in std::mem::take(&mut push.places) {
            self.notes.push(place.clone());
            self.stage("place", place, None, 1, started);
        }

        let started = Clock::now();
        let candidates = if push.empty {
            Vec::new()
        } else {
            // A damaged record costs its item, not the answer: skipped and named.
            let (items, unreadable) = self
                .snapshot
                .scan_readable(&push.scan)
                .map_err(self.err())?;
            self.skip_items(unreadable);
            items
        };
        let scanned = candidates.len() as u64;
        self.stage("scan", push.detail, Some(estimated), scanned, started);
        if push.residual.is_empty() {
            return Ok(candidates);
        }

        let started = Clock::now();
        let superseded = if push.residual.contains(&Filter::Current) {
            self.superseded_by()?
        } else {
            HashMap::new()
        };
        let mut kept: Vec<Item> = candidates
            .into_iter()
            .filter(|item| push.residual.iter().all(|f| passes(item, f, &superseded)))
            .collect();
        if let Some(limit) = limit {
            kept.truncate(limit);
        }
        let estimate = push
            .residual
            .iter()
            .fold(scanned as f64, |n, f| n * selectivity(f));
        let checks: Vec<String> = push.residual.iter().map(ToString::to_string).collect();
        self.stage(
            "filter",
            checks.join(" AND "),
            Some(estimate.round() as u64),
            kept.len() as u64,
            started,
        );
        Ok(kept)
    }

    /// Item id → the item that supersedes it (a full scan: supersession is not indexed).
    fn superseded_by(&mut self) -> Result<HashMap<u64, u64>> {
        let (items, unreadable) = self
            .snapshot
            .scan_readable(&ScanFilter::default())
            .map_err(self.err())?;
        self.skip_items(unreadable);
        Ok(items
            .into_iter()
            .filter_map(|i| i.supersedes.map(|old| (old, i.id)))
            .collect())
    }

    fn items(&mut self, query: &Items) -> Result<Rows> {
        let top = query.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let ascending = query.order != Some(Order::Desc);
        let mut rows: Vec<ItemRow> = if query.at.is_now() {
            let items = self.select(&query.filters, if ascending { top } else { None })?;
            items.into_iter().map(ItemRow::plain).collect()
        } else {
            let versions = self.select_versions(&query.filters, &query.at)?;
            versions.into_iter().map(ItemRow::version).collect()
        };
        if !ascending {
            rows.reverse();
        }
        if let Some(top) = top {
            rows.truncate(top);
        }
        Ok(Rows::Items(rows))
    }

    /// The versions seen at `at` that pass `filters`, in event-time order (time travel reads
    /// every version; no index applies).
    fn select_versions(
        &mut self,
        filters: &[Filter],
        at: &TimeTravel,
    ) -> Result<Vec<memdb::memory::MemoryVersion>> {
        let push = self.push_down(filters)?;
        let mut versions = if push.empty {
            Vec::new()
        } else {
            self.versions_at(at)?
        };
        let started = Clock::now();
        // Supersession among the versions seen, as `CURRENT` reads it now among items.
        let superseded: HashMap<u64, u64> = versions
            .iter()
            .filter_map(|v| v.record.supersedes.map(|old| (old, v.record.id)))
            .collect();
        versions.retain(|v| {
            let f = &v.record.fields;
            push.scan.time.contains(f.time)
                && push.scan.source.is_none_or(|s| s == f.source)
                && push
                    .residual
                    .iter()
                    .all(|filter| passes(&v.record, filter, &superseded))
        });
        versions.sort_by_key(|v| (v.record.fields.time.unix_ms, v.record.id));
        self.stage(
            "filter",
            filters
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" AND "),
            None,
            versions.len() as u64,
            started,
        );
        Ok(versions)
    }

    fn recall(&mut self, query: &Recall) -> Result<Rows> {
        let started = Clock::now();
        let embedder = self
            .ctx
            .embedder
            .ok_or_else(|| QueryError::NoEncoder(self.statement.clone()))?;
        let mut options = self.ctx.recall.clone();
        self.asked_on = query.asked_on;
        options.k = query
            .top
            .map_or(10, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let push = self.push_down(&query.filters)?;
        self.notes.extend(push.places.iter().cloned());
        self.plan.plan_us += micros(started);

        if push.empty {
            self.stage(
                "filter",
                "time bounds exclude everything".into(),
                Some(0),
                0,
                started,
            );
            return Ok(Rows::Items(Vec::new()));
        }
        options.time = push.scan.time;
        options.source = push.scan.source.map(Source::code);
        if let Some(day) = query.asked_on {
            options.asked_on = Some(day);
        }
        let mut seen: HashMap<u64, memdb::memory::MemoryVersion> = HashMap::new();
        let recall = if query.at.is_now() {
            if !push.residual.is_empty() {
                // Residual filters become the set of items every signal may return.
                let allowed = self.select(&query.filters, None)?;
                options.items = Some(allowed.iter().map(|i| i.id).collect::<RoaringTreemap>());
            }
            self.store.recall(&query.text, &options, embedder)
        } else {
            // The versions seen then, filtered, are what every signal ranks.
            let versions = self.select_versions(&query.filters, &query.at)?;
            options.items = Some(versions.iter().map(|v| v.record.id).collect());
            let recall = self
                .snapshot
                .recall_versions(&query.text, &options, embedder, &versions);
            seen = versions.into_iter().map(|v| (v.record.id, v)).collect();
            recall
        }
        .map_err(self.err())?;
        self.skip_items(recall.skipped.items.iter().copied());
        for block in &recall.skipped.vector_blocks {
            if !self.skipped.vector_blocks.contains(block) {
                self.skipped.vector_blocks.push(*block);
            }
        }
        let (c, t) = (recall.counts, recall.timings);
        let depth = options.depth.max(options.k) as u64;
        let pool = c.allowed.unwrap_or(c.items);
        let filtered = if c.allowed.is_some() {
            format!(" (filtered to {pool} items during the scan)")
        } else {
            String::new()
        };
        if let Some(time) = &recall.time {
            self.plan.stages.push(Stage {
                name: "time".to_owned(),
                detail: format!(
                    "'{}' → {} (asked on {}), used as {}",
                    time.phrase,
                    time.window,
                    time.asked_on,
                    time.used.describe()
                ),
                estimated: None,
                actual: time.items_in_window,
                micros: 0,
            });
        }
        let stages = [
            (
                "index",
                if t.index_us > 0 {
                    format!(
                        "{} items read into the recall index (BM25, times, places)",
                        c.items
                    )
                } else {
                    "the recall index of this commit, built before".to_owned()
                },
                None,
                c.items,
                t.index_us,
            ),
            (
                "encode",
                format!("question + {} nodes", recall.query_nodes.len()),
                None,
                1 + recall.query_nodes.len() as u64,
                t.encode_us,
            ),
            (
                "dense",
                format!(
                    "vector space `{}`, top {depth}{filtered}",
                    options.dense_space
                ),
                Some(depth.min(pool)),
                c.dense,
                t.dense_us,
            ),
            (
                "lexical",
                format!("BM25 over {} items, top {depth}", c.items),
                Some(depth.min(pool)),
                c.lexical,
                t.lexical_us,
            ),
            (
                "graph",
                format!(
                    "{} graph nodes matched; path overlap on the Q-matrix",
                    c.matched_nodes
                ),
                None,
                c.graph,
                t.graph_us,
            ),
            (
                "place",
                "places the question names vs the items' places".to_owned(),
                None,
                c.place,
                t.place_us,
            ),
            (
                "fuse",
                format!(
                    "RRF, weights {:?} and place {}, dense score {} (a question of {}), \
                     context share {}",
                    options.weights,
                    options.place_weight,
                    options.dense_score_weight_for(recall.form),
                    recall.form.name(),
                    options.context_share
                ),
                Some(options.k as u64),
                c.fused,
                t.fuse_us,
            ),
        ];
        for (name, detail, estimated, actual, us) in stages {
            self.plan.stages.push(Stage {
                name: name.to_owned(),
                detail,
                estimated,
                actual,
                micros: us,
            });
        }
        self.query_nodes = recall.query_nodes;
        self.no_good_match = recall.no_good_match;
        let started = Clock::now();
        let mut rows = Vec::with_capacity(recall.hits.len());
        for hit in recall.hits {
            let row = match seen.remove(&hit.item) {
                Some(version) => ItemRow::version(version),
                None => match self.snapshot.get(hit.item) {
                    Ok(Some(item)) => ItemRow::plain(item),
                    Ok(None) => continue,
                    // Damaged since the recall read it: skipped and named, as the rest.
                    Err(e) if e.is_damage() => {
                        self.skip_items([hit.item]);
                        continue;
                    }
                    Err(e) => return Err(self.err()(e)),
                },
            };
            rows.push(ItemRow {
                score: Some(hit.score),
                why: Some(hit.explanation),
                ..row
            });
        }
        self.stage(
            "fetch",
            "items by id".into(),
            Some(options.k as u64),
            rows.len() as u64,
            started,
        );
        Ok(Rows::Items(rows))
    }

    fn item(&self, id: u64) -> Result<Item> {
        self.snapshot
            .get(id)
            .map_err(self.err())?
            .ok_or_else(|| QueryError::NotFound(format!("no item {id}")))
    }

    fn paths(&mut self, query: &Paths) -> Result<Rows> {
        let started = Clock::now();
        let graph = self.snapshot.graph();
        let mut nodes = Vec::new();
        let mut df = 0;
        for phrase in &query.phrases {
            if let Some(node) = graph.find(phrase).map_err(self.err())? {
                df += graph.node_paths(node).map_err(self.err())?.len();
                nodes.push((node, 1.0));
            }
        }
        self.stage(
            "nodes",
            "phrase → node (graph_aliases)".into(),
            Some(query.phrases.len() as u64),
            nodes.len() as u64,
            started,
        );
        let started = Clock::now();
        let top = query
            .top
            .map_or(10, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let matched = graph
            .paths_matching(&nodes, query.min_overlap.unwrap_or(1), top)
            .map_err(self.err())?;
        let fallback = if matched.stats.fallback {
            "; bound failed, full scoring"
        } else {
            ""
        };
        self.stage(
            "overlap",
            format!(
                "Q-matrix rows of {} nodes, exact top {top}{fallback}",
                nodes.len()
            ),
            Some(df),
            matched.stats.scored,
            started,
        );
        let started = Clock::now();
        let mut rows = Vec::new();
        for m in matched.paths {
            let mut row = self.path_row(m.path)?;
            row.score = Some(m.score);
            row.overlap = Some(m.overlap);
            rows.push(row);
        }
        self.stage(
            "fetch",
            "paths by id".into(),
            None,
            rows.len() as u64,
            started,
        );
        Ok(Rows::Paths(rows))
    }

    fn path_row(&self, id: u64) -> Result<PathRow> {
        let graph = self.snapshot.graph();
        let path: GraphPath = graph
            .path(id)
            .map_err(self.err())?
            .ok_or_else(|| QueryError::NotFound(format!("no path {id}")))?;
        let mut nodes = Vec::with_capacity(path.nodes.len());
        for node in &path.nodes {
            if let Some(n) = graph.node(*node).map_err(self.err())? {
                nodes.push(n.phrase);
            }
        }
        Ok(PathRow {
            path: id,
            page: path.page,
            score: None,
            overlap: None,
            nodes,
            items: path.items,
        })
    }

    /// The versions of item `id`'s chain (what it supersedes and what supersedes it, or a
    /// retired memory alone), each with both times; with `AS OF`, those memdb had written by
    /// then; with `VALID AT`, those true then (as known at `AS OF`, or now).
    fn history(&mut self, query: &History) -> Result<Rows> {
        let started = Clock::now();
        let id = query.id;
        let mut chain = Vec::new();
        if let Some(item) = self.snapshot.get(id).map_err(self.err())? {
            let newer = self.superseded_by()?;
            chain.push(item);
            // Older items: follow `supersedes` back (a cycle cannot form, but stop on one).
            while let Some(old) = chain.last().and_then(|i| i.supersedes) {
                if chain.iter().any(|i| i.id == old) {
                    break;
                }
                match self.snapshot.get(old).map_err(self.err())? {
                    Some(item) => chain.push(item),
                    None => break,
                }
            }
            chain.reverse();
            let mut at = id;
            while let Some(&next) = newer.get(&at) {
                if chain.iter().any(|i| i.id == next) {
                    break;
                }
                chain.push(self.item(next)?);
                at = next;
            }
        }
        let mut ids: Vec<u64> = chain.iter().map(|i| i.id).collect();
        if ids.is_empty() {
            ids.push(id);
        }
        let travel = engine_travel(&query.at);
        let mut versions = Vec::new();
        for item in ids {
            versions.extend(self.snapshot.history(item).map_err(self.err())?.versions);
        }
        // Along the chain a supersedes link is an UPDATE in both times.
        memdb::memory::close_superseded(&mut versions);
        let mut rows = Vec::new();
        for version in versions {
            let keep = match (query.at.valid_at, travel.as_of_ms) {
                (None, None) => true,
                (None, Some(s)) => version.system_from_ms() <= s,
                (Some(_), _) => travel.sees(&version),
            };
            if keep {
                rows.push(ItemRow::version(version));
            }
        }
        if rows.is_empty() && query.at.is_now() {
            return Err(QueryError::NotFound(format!("no item {id}")));
        }
        self.stage(
            "history",
            format!(
                "supersedes links both ways, each item's versions{}",
                query.at
            ),
            None,
            rows.len() as u64,
            started,
        );
        Ok(Rows::Items(rows))
    }

    fn forget(&mut self, forget: &crate::ast::Forget) -> Result<Rows> {
        let started = Clock::now();
        let policy = memdb::forget::Policy::builtin(&forget.policy)
            .map_err(|e| (self.err())(memdb::Error::from(e)))?;
        let report = self
            .store
            .forget(
                &policy,
                forget.as_of,
                memdb::forget::ForgetOptions {
                    dry_run: forget.dry_run,
                    drop_originals: forget.drop_originals,
                    pages: memdb::scrapbook::PageOptions::default(),
                    progress: &mut |_, _| {},
                },
            )
            .map_err(self.err())?;
        let pages: u64 = report.stages.iter().map(|s| s.pages_changed).sum();
        let detail = format!("policy {} as of {}", report.policy, report.as_of);
        self.stage("forget", detail, None, pages, started);
        Ok(Rows::Forget(Box::new(report)))
    }

    fn show(&mut self, show: &Show) -> Result<Rows> {
        let started = Clock::now();
        let graph = self.snapshot.graph();
        let rows = match show {
            Show::Stats => {
                let stats = self.store.stats().map_err(self.err())?;
                let (nodes, paths) = graph.counts().map_err(self.err())?;
                let mut vectors = Vec::new();
                for space in self.snapshot.vector_spaces().map_err(self.err())? {
                    let n = self.snapshot.vector_keys(&space).map_err(self.err())?.len();
                    vectors.push((space, n));
                }
                Rows::Stats(Box::new(StatsRow {
                    stats,
                    nodes,
                    paths,
                    vectors,
                    model: self.store.model().map_err(self.err())?,
                }))
            }
            Show::Item(id) => {
                let item = self.item(*id)?;
                let (path, nodes) = match graph.item(*id).map_err(self.err())? {
                    Some((path, nodes)) => {
                        let page = graph.path(path).map_err(self.err())?.map(|p| p.page);
                        let mut phrases = Vec::new();
                        for n in nodes {
                            if let Some(node) = graph.node(n).map_err(self.err())? {
                                phrases.push(node.phrase);
                            }
                        }
                        (page.map(|p| (path, p)), phrases)
                    }
                    None => (None, Vec::new()),
                };
                Rows::Item(Box::new(ItemDetail { item, path, nodes }))
            }
            Show::Node(phrase) => {
                let id = graph.find(phrase).map_err(self.err())?.ok_or_else(|| {
                    QueryError::NotFound(format!("no graph node named '{phrase}'"))
                })?;
                let node = graph
                    .node(id)
                    .map_err(self.err())?
                    .ok_or_else(|| QueryError::NotFound(format!("no graph node {id}")))?;
                let mut paths = Vec::new();
                for path in graph.node_paths(id).map_err(self.err())? {
                    paths.push(self.path_row(u64::from(path))?);
                }
                Rows::Node(Box::new(NodeDetail { node, paths }))
            }
            Show::Path(id) => {
                let row = self.path_row(*id)?;
                let mut items = Vec::new();
                for &item in &row.items {
                    items.push(ItemRow::plain(self.item(item)?));
                }
                Rows::Path(Box::new(row), items)
            }
            Show::Page(day) => {
                let time = TimeWindow::on(*day).map_err(|source| QueryError::Time {
                    statement: self.statement.clone(),
                    source,
                })?;
                let (items, unreadable) = self
                    .snapshot
                    .scan_readable(&ScanFilter {
                        time,
                        ..ScanFilter::default()
                    })
                    .map_err(self.err())?;
                self.skip_items(unreadable);
                let mut paths: BTreeMap<u64, PathRow> = BTreeMap::new();
                for item in &items {
                    if let Some((path, _)) = graph.item(item.id).map_err(self.err())?
                        && !paths.contains_key(&path)
                    {
                        paths.insert(path, self.path_row(path)?);
                    }
                }
                let items = items.into_iter().map(ItemRow::plain).collect();
                Rows::Page(*day, paths.into_values().collect(), items)
            }
        };
        let n = rows.len() as u64;
        self.stage("show", show.to_string(), None, n, started);
        Ok(rows)
    }
}

/// The window of a time condition (SPEC.md §9.3): dates are the items' local days, instants
/// UTC; ranges include both ends.
/// The engine's point in the two times for a statement's clauses.
fn engine_travel(at: &TimeTravel) -> memdb::memory::TimeTravel {
    memdb::memory::TimeTravel {
        as_of_ms: at.as_of.map(instant_ms),
        valid_at_ms: at.valid_at.map(instant_ms),
    }
}

/// An instant in UTC ms; a date is the last millisecond of that UTC day.
fn instant_ms(at: Instant) -> i64 {
    match at {
        Instant::At(t) => t.as_millisecond(),
        Instant::Day(d) => d
            .to_zoned(TimeZone::UTC)
            .map_or(i64::MAX, |z| z.timestamp().as_millisecond())
            .saturating_add(86_400_000 - 1),
    }
}

pub(crate) fn time_window(
    filter: &TimeFilter,
    now_ms: i64,
    asked_on: Option<jiff::civil::Date>,
) -> std::result::Result<TimeWindow, memdb::time::TimeError> {
    let bound = |at: &Instant| match at {
        Instant::Day(d) => TimeBound::Day(*d),
        Instant::At(t) => TimeBound::Instant(t.as_millisecond()),
    };
    match filter {
        TimeFilter::Between(a, b) => TimeWindow::between(bound(a), bound(b)),
        TimeFilter::AtOrAfter(a) => TimeWindow::from(bound(a)),
        TimeFilter::After(a) => TimeWindow::after(bound(a)),
        TimeFilter::Before(a) => TimeWindow::before(bound(a)),
        TimeFilter::AtOrBefore(a) => TimeWindow::until(bound(a)),
        TimeFilter::On(d) => TimeWindow::on(*d),
        TimeFilter::Last(n, unit) => Ok(TimeWindow::utc_range(
            ago_ms(now_ms, *n, *unit),
            now_ms.saturating_add(1),
        )),
        TimeFilter::Words(words) => {
            let today = asked_on.unwrap_or_else(|| {
                Timestamp::from_millisecond(now_ms).map_or_else(
                    |_| jiff::Zoned::now().date(),
                    |t| t.to_zoned(TimeZone::system()).date(),
                )
            });
            let bad = |reason: &str| memdb::time::TimeError::BadText {
                text: words.clone(),
                reason: reason.to_owned(),
            };
            let phrases = memdb::time::time_phrases(words, today);
            let phrase = match phrases.as_slice() {
                [one] => one,
                [] => {
                    return Err(bad(
                        "it names no time (say a day, month, season, year or span: `May 2001`, \
                         `summer 2002`, `last month`, `between May and July 2001`)",
                    ));
                }
                _ => return Err(bad("it names more than one time; give one window")),
            };
            let day = |d: jiff::civil::Date| TimeBound::Day(d);
            match (phrase.first, phrase.last) {
                (Some(a), Some(b)) => TimeWindow::between(day(a), day(b)),
                (Some(a), None) => TimeWindow::from(day(a)),
                (None, Some(b)) => TimeWindow::until(day(b)),
                (None, None) => Ok(TimeWindow::ALL),
            }
        }
    }
}

fn ago_ms(now_ms: i64, n: u32, unit: Unit) -> i64 {
    let n = i64::from(n);
    let span = match unit {
        Unit::Hours => Span::new().try_hours(n),
        Unit::Days => Span::new().try_days(n),
        Unit::Weeks => Span::new().try_weeks(n),
        Unit::Months => Span::new().try_months(n),
        Unit::Years => Span::new().try_years(n),
    };
    Timestamp::from_millisecond(now_ms)
        .ok()
        .zip(span.ok())
        .and_then(|(now, span)| now.to_zoned(TimeZone::UTC).checked_sub(span).ok())
        .map_or(i64::MIN, |z| z.timestamp().as_millisecond())
}

fn show_ms(ms: i64) -> String {
    if ms == i64::MIN || ms == i64::MAX {
        return "∞".to_owned();
    }
    Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

/// Whether `item` passes a residual filter.
fn passes(item: &Item, filter: &Filter, superseded: &HashMap<u64, u64>) -> bool {
    let f = &item.fields;
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    match filter {
        Filter::Source(s) => s.contains(&f.source),
        Filter::Time(_) => true,
        Filter::Tag(t) => f.tags.iter().any(|x| same(x, t)),
        Filter::Entity(e) => {
            f.entities.iter().any(|x| same(x, e))
                || [&f.speaker, &f.from]
                    .into_iter()
                    .flatten()
                    .any(|x| same(x, e))
        }
        Filter::Near { lat, lon, radius } => f
            .location
            .as_ref()
            .and_then(|l| l.geo)
            .is_some_and(|g| haversine_m(*lat, *lon, g.lat, g.lon) <= radius.metres()),
        // `push_down` resolved it into a `Near`; an unresolved one passes nothing.
        Filter::NearPlace { .. } => false,
        Filter::Scope(field, id) => field.of(&f.scope) == Some(id.as_str()),
        Filter::Supersedes(id) => item.supersedes == Some(*id),
        Filter::Current => !superseded.contains_key(&item.id),
    }
}

/// Great-circle distance in metres (mean Earth radius, IUGG).
pub(crate) fn haversine_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    const EARTH_M: f64 = 6_371_008.8;
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_M * a.sqrt().min(1.0).asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haversine_matches_known_distances() {
        // Lisbon → Porto is about 274 km.
        let d = haversine_m(38.7223, -9.1393, 41.1579, -8.6291);
        assert!((d - 274_000.0).abs() < 3_000.0, "{d}");
        assert_eq!(haversine_m(10.0, 20.0, 10.0, 20.0), 0.0);
    }

    #[test]
    fn days_are_local_and_ranges_inclusive() {
        let day: Date = "2001-05-14".parse().unwrap();
        let on = time_window(&TimeFilter::On(day), 0, None).unwrap();
        let between = time_window(
            &TimeFilter::Between(Instant::Day(day), Instant::Day(day)),
            0,
            None,
        )
        .unwrap();
        assert_eq!(on, between);
        // Sent 19:36 at UTC−7: 02:36 UTC the next day, but its day (and page) is the 14th.
        let sent = memdb::EventTime::parse("2001-05-14T19:36:00-07:00").unwrap();
        assert!(on.contains(sent));
        let last_day: Date = "9999-12-31".parse().unwrap();
        let late = time_window(&TimeFilter::On(last_day), 0, None).unwrap();
        assert!(
            !late.contains(sent),
            "a filter out at the calendar's end is not dropped"
        );
    }

    #[test]
    fn last_n_units_counts_back_from_now() {
        let now = 1_700_000_000_000;
        assert_eq!(
            time_window(&TimeFilter::Last(30, Unit::Days), now, None)
                .unwrap()
                .candidate_ms()
                .unwrap()
                .0,
            now - 30 * 86_400_000
        );
        assert_eq!(
            time_window(&TimeFilter::Last(2, Unit::Hours), now, None)
                .unwrap()
                .candidate_ms()
                .unwrap()
                .0,
            now - 7_200_000
        );
    }
}
