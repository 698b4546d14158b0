//! memdb's query language (SPEC.md §9): `RECALL`, `PATHS MATCHING`, `ITEMS`, `HISTORY`, `SHOW`
//! and `EXPLAIN`, parsed by a hand-written parser with exact error positions, planned with
//! filters pushed into the engine's index scans, and run into typed rows.
//!
//! Applications and the `memdb` shell share one path: [`StoreQuery::query`].
//!
//! ```no_run
//! use memdb::{Options, Store};
//! use memdb_query::{QueryContext, Rows, StoreQuery};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Store::open("my.memdb", Options::default())?;
//! let out = store.query("ITEMS WHERE source = email AND time IN LAST 30 DAYS TOP 5", &QueryContext::default())?;
//! if let Rows::Items(rows) = &out.rows {
//!     for row in rows {
//!         println!("{} {}", row.item.id, memdb::recall::item_text(&row.item));
//!     }
//! }
//! # Ok(()) }
//! ```
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod ast;
mod error;
mod exec;
mod lexer;
mod parser;
mod render;
pub mod reports;

use std::time::Instant as Clock;

pub use ast::{
    Distance, DistanceUnit, Filter, Forget, History, Instant, Items, Order, Paths, Query, Recall,
    ScopeField, Show, Statement, TimeFilter, TimeTravel, Unit,
};
pub use error::{ParseError, QueryError};
pub use exec::{
    ItemDetail, ItemRow, NodeDetail, Output, PathRow, Plan, QueryContext, Rows, Stage, StatsRow,
};
pub use parser::{KEYWORDS, parse, parse_instant, parse_script};
pub use render::{
    Block, forget_block, forget_json, item_block, item_json, item_row_json, items_block, to_blocks,
    to_json,
};

/// Running statements of the query language against a store.
pub trait StoreQuery {
    /// Parses and runs one statement.
    fn query(&self, statement: &str, ctx: &QueryContext<'_>) -> Result<Output, QueryError>;

    /// Runs a statement built in code (the typed tree [`parse`] returns), with no text to
    /// parse: what a program that assembles its statement from its own arguments calls.
    fn run(&self, statement: Statement, ctx: &QueryContext<'_>) -> Result<Output, QueryError>;

    /// Parses every statement of `script` (separated by `;`) before running any, then runs
    /// them in order, stopping at the first error.
    fn query_script(&self, script: &str, ctx: &QueryContext<'_>)
    -> Result<Vec<Output>, QueryError>;
}

impl StoreQuery for memdb::Store {
    fn query(&self, statement: &str, ctx: &QueryContext<'_>) -> Result<Output, QueryError> {
        let started = Clock::now();
        let parsed = parse(statement)?;
        exec::execute(self, parsed, ctx, exec::micros(started))
    }

    fn run(&self, statement: Statement, ctx: &QueryContext<'_>) -> Result<Output, QueryError> {
        exec::execute(self, statement, ctx, 0)
    }

    fn query_script(
        &self,
        script: &str,
        ctx: &QueryContext<'_>,
    ) -> Result<Vec<Output>, QueryError> {
        let started = Clock::now();
        let statements = parse_script(script)?;
        let parse_us = exec::micros(started) / statements.len().max(1) as u64;
        statements
            .into_iter()
            .map(|s| exec::execute(self, s, ctx, parse_us))
            .collect()
    }
}
