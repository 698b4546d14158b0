//! `memdb mcp STORE`: the store as a Model Context Protocol server, for agents.
//!
//! Built on the official Rust SDK (`rmcp`) on a current-thread tokio runtime, over stdio or
//! (`--http 127.0.0.1:PORT`) Streamable HTTP on loopback. The tools are a superset of
//! OpenMemory's (`add_memories`, `search_memory`, `list_memories`, `delete_all_memories`, with
//! its argument names) so its clients work, plus `get_memory`, `update_memory`,
//! `delete_memories`, `undelete_memory`, `purge_memory`, `memory_history`, memdb's query
//! language (`query`) and optical forgetting (`forget`). SPEC.md §11 lists every tool, argument
//! and answer shape.
//!
//! Invariants:
//! - Capabilities, not trust (`ops::access`, SPEC.md §11.1): without `--allow delete` a call
//!   retires or updates only the memories agents make (remembered facts) within its scope;
//!   real forgetting needs `--allow forget`, purging `--allow purge`. A refusal names the flag
//!   and is checked before anything is written.
//! - No lock while idle: the server opens the store read-only for each read and as its writer
//!   for each write, for that call only, so imports, CLI writes, Python writers and other
//!   servers work beside it. A write waits for another writer's commit (`MEMDB_LOCK_WAIT`,
//!   default 60 s here) and is durable when its tool answers.
//! - Answers are bounded: hits and list entries are compact (no null field, text cut to
//!   `max_chars`) and a whole answer is at most `max_bytes` of JSON, saying what it left out.
//! - Standard output carries the protocol and nothing else (stdio); every log line goes to
//!   stderr.
//! - A tool that fails answers an MCP tool error (`isError`) naming what was wrong; a call the
//!   protocol cannot take (unknown tool, missing or mistyped argument) gets a JSON-RPC error.
//!   Neither stops the server.
//! - After every write the derived stages (vectors, the memory graph, pages) are brought
//!   current through the ingest pipeline, which works from what the store says is missing, so a
//!   server killed between the commit and those stages loses nothing: the next write (or
//!   `memdb embed`) completes them.
//!
//! Calls run one at a time: the encoder is a CPU-bound model and writes share one writer.

mod answer;

use std::process::ExitCode;

use crate::args::McpArgs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use memdb::ops::access::{Capabilities, Capability, Change, Refusal, check_change};
use memdb::ops::{Message, RememberOptions, SentenceExtractor};
use memdb::{
    EventTime, IngestOptions, ItemFields, Scope, Source, Store, memory::MemoryOp, memory::OpNote,
    memory::Validity,
};
use memdb_encode::{Encoder as _, MiniLm};
use memdb_query::reports::memory_text;
use memdb_query::{
    Distance, DistanceUnit, Filter, Instant, Query, QueryContext, Recall, Show, Statement,
    StoreQuery, TimeFilter, TimeTravel, parse_instant, parse_script, to_json,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Map, Value, json};

use crate::error::{CliError, Result};

/// The longest text one `add_memories` or `update_memory` call takes (1 MiB): a memory is a
/// message or a note, and a larger text is almost always a mistake (a file pasted whole) that
/// would cost seconds of encoding while holding the store.
pub(crate) const MAX_TEXT_BYTES: usize = 1 << 20;

/// The most hits one `search_memory` call returns, and the most items one `list_memories` page
/// holds.
const MAX_K: u32 = 100;
const MAX_PAGE: u32 = 1_000;

/// Items deleted per commit by `delete_all_memories`.
const DELETE_WINDOW: usize = 1_000;

/// How long a write call waits for another writer (an import, a second server) to commit,
/// unless `MEMDB_LOCK_WAIT` says otherwise.
const WRITE_WAIT: Duration = Duration::from_secs(60);

/// How `memdb mcp` was started: what it may do, for whom, and where it listens.
pub(crate) struct ServeOptions {
    /// The capabilities the person starting the server granted (`--allow`).
    pub(crate) granted: Capabilities,
    /// The scope a call that names none acts in (`--user-id`, `--agent-id`): its adds are
    /// stamped with it, its deletes stay within it.
    pub(crate) default_scope: Scope,
    /// Serve Streamable HTTP on this loopback address instead of stdio.
    pub(crate) http: Option<std::net::SocketAddr>,
}

/// `memdb mcp STORE [--allow …] [--user-id …] [--http ADDR]`: serves until the client closes
/// standard input (stdio) or the process is stopped (HTTP).
pub(crate) fn serve(dir: &Path, options: ServeOptions) -> Result<()> {
    // Fail now, not at the first call, on a missing store or a wrong passphrase.
    drop(crate::open::open_reader(dir)?);
    options
        .default_scope
        .validate()
        .map_err(|reason| CliError::flag("--user-id/--agent-id", reason))?;
    let state = Arc::new(Mutex::new(State {
        dir: dir.to_path_buf(),
        encoder: None,
        granted: options.granted,
        default_scope: options.default_scope,
    }));
    let tools = MemoryServer::portable_tools();
    let transport = match options.http {
        Some(addr) => format!("Streamable HTTP on http://{addr}/mcp"),
        None => "stdio".to_owned(),
    };
    eprintln!(
        "memdb mcp: serving {} over {transport} ({} tools; capabilities: {}; the store is opened \
         per call, so other writers work beside it)",
        dir.display(),
        tools.list_all().len(),
        options.granted,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Mcp(format!("cannot start the runtime: {e}")))?;
    match options.http {
        Some(addr) => runtime.block_on(http::serve(addr, state, tools))?,
        None => runtime.block_on(async move {
            let server = MemoryServer {
                state,
                tool_router: tools,
            };
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| CliError::Mcp(format!("the client did not initialise: {e}")))?;
            running
                .waiting()
                .await
                .map_err(|e| CliError::Mcp(format!("the session ended badly: {e}")))?;
            eprintln!("memdb mcp: client closed the session");
            Ok::<(), CliError>(())
        })?,
    }
    Ok(())
}

/// What every call shares: where the store is, what the caller may do, and the encoder,
/// loaded on first need. The store itself is opened per call.
pub(crate) struct State {
    dir: PathBuf,
    encoder: Option<MiniLm>,
    granted: Capabilities,
    default_scope: Scope,
}

impl State {
    /// The store, read-only, for a call that reads (no lock: never waits for a writer).
    fn reader(&self) -> Result<Store> {
        crate::open::open_reader(&self.dir)
    }

    /// The store as its writer, for this call only; waits for another writer's commit.
    fn writer(&self) -> Result<Store> {
        crate::open::open_store_waiting(&self.dir, crate::open::lock_wait(WRITE_WAIT))
    }

    /// The encoder, loading it first if needed (bound to `store`'s model either way).
    fn encoder(&mut self, store: &Store) -> Result<&MiniLm> {
        if self.encoder.is_none() {
            eprintln!("memdb mcp: loading the encoder");
            let encoder = crate::embed::encoder_for(store, false, crate::model::Download::Never)?;
            self.encoder = Some(encoder);
        }
        let encoder = self
            .encoder
            .as_ref()
            .ok_or_else(|| CliError::Mcp("the encoder did not load".to_owned()))?;
        store.bind_model(&encoder.model_id().to_string())?;
        Ok(encoder)
    }

    /// The scope a call acts in: the one it names, else the server's default.
    fn scope(&self, named: Scope) -> Scope {
        if named.is_empty() {
            self.default_scope.clone()
        } else {
            named
        }
    }

    /// Brings vectors, the memory graph and pages current after a write (the ingest
    /// pipeline's derived stages, from what the store says is missing). A failure is the
    /// answer's warning, not the call's error (the client would retry a write that was made),
    /// and the next write or `memdb embed` completes what is missing.
    fn refresh_after_commit(&mut self, store: &Store) -> Vec<String> {
        let refreshed = self.encoder(store).and_then(|encoder| {
            store
                .ingest_items(
                    std::iter::empty(),
                    Some(encoder),
                    IngestOptions::default(),
                    &mut |_, _, _| {},
                )
                .map_err(CliError::from)
        });
        match refreshed {
            Ok(_) => Vec::new(),
            Err(e) => vec![format!(
                "stored, but bringing vectors, the memory graph and pages current failed ({e}); \
                 the next write or `memdb embed` completes it"
            )],
        }
    }

    fn run_statement(
        &mut self,
        store: &Store,
        statement: &Statement,
    ) -> Result<memdb_query::Output> {
        let embedder = if crate::shell::needs_encoder(statement) {
            Some(self.encoder(store)? as &dyn memdb::Embedder)
        } else {
            None
        };
        let ctx = QueryContext {
            embedder,
            ..QueryContext::default()
        };
        let text = statement.to_string();
        store.query(&text, &ctx).map_err(|e| match e {
            memdb_query::QueryError::Parse(p) => CliError::Statement {
                rendered: p.render(&text),
            },
            other => CliError::Query(other),
        })
    }

    /// The refusal of an action `capability` would allow, naming the flag.
    fn require(&self, capability: Capability, action: impl Into<String>) -> Result<()> {
        self.granted
            .require(capability, action)
            .map_err(refusal_error)
    }
}

/// A refusal as the error a tool answers, naming the flag that would allow it.
fn refusal_error(refusal: Refusal) -> CliError {
    match refusal.capability() {
        Some(capability) => CliError::flag(
            "--allow",
            format!(
                "{refusal}: the person running the server may grant it with `memdb mcp STORE \
                 --allow {capability}`"
            ),
        ),
        None => CliError::Mcp(refusal.to_string()),
    }
}

/// The MCP server: the shared state and the tool table `#[tool_router]` builds.
#[derive(Clone)]
pub(crate) struct MemoryServer {
    state: Arc<Mutex<State>>,
    tool_router: ToolRouter<MemoryServer>,
}

mod args;
mod http;

use args::*;

/// A tool's answer: its JSON as text, or the error as an MCP tool error.
fn answer(result: Result<Value>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        Err(e) => refuse(e),
    }
}

fn refuse(e: CliError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("memdb: {e}"))])
}

fn checked_text(text: &str, argument: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(CliError::flag(argument, "is empty"));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(CliError::flag(
            argument,
            format!(
                "is {} bytes; a memory takes at most {MAX_TEXT_BYTES} bytes (split it, or import \
                 the file with `memdb import`)",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// The scope a call names (components left out match anything), checked.
fn scope_of(
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
) -> Result<Scope> {
    let scope = Scope::new(user_id, agent_id, run_id);
    scope
        .validate()
        .map_err(|reason| CliError::flag("user_id/agent_id/run_id", reason))?;
    Ok(scope)
}

/// The items of `ids` within `scope` (all of them for the empty scope).
fn in_scope(snapshot: &memdb::Snapshot, ids: Vec<u64>, scope: &Scope) -> Result<Vec<u64>> {
    if scope.is_empty() {
        return Ok(ids);
    }
    let mut out = Vec::new();
    for id in ids {
        if snapshot
            .get(id)?
            .is_some_and(|item| item.fields.scope.within(scope))
        {
            out.push(id);
        }
    }
    Ok(out)
}

fn instant(argument: &str, text: &str) -> Result<Instant> {
    parse_instant(text).map_err(|reason| CliError::flag(argument, reason))
}

fn source(text: &str) -> Result<Source> {
    text.parse::<Source>()
        .map_err(|reason| CliError::flag("source", reason))
}

/// `max_chars` and `max_bytes` of a call, checked, with their defaults.
fn bounds(max_chars: Option<u32>, max_bytes: Option<u32>) -> Result<(usize, usize)> {
    let max_chars = max_chars.map_or(answer::DEFAULT_MAX_CHARS, |n| n as usize);
    if !answer::MAX_CHARS_RANGE.contains(&max_chars) {
        return Err(CliError::flag(
            "max_chars",
            format!(
                "must be {} to {}, got {max_chars}",
                answer::MAX_CHARS_RANGE.start(),
                answer::MAX_CHARS_RANGE.end()
            ),
        ));
    }
    let max_bytes = max_bytes.map_or(answer::DEFAULT_MAX_BYTES, |n| n as usize);
    if !answer::MAX_BYTES_RANGE.contains(&max_bytes) {
        return Err(CliError::flag(
            "max_bytes",
            format!(
                "must be {} to {}, got {max_bytes}",
                answer::MAX_BYTES_RANGE.start(),
                answer::MAX_BYTES_RANGE.end()
            ),
        ));
    }
    Ok((max_chars, max_bytes))
}

fn note(reason: &str) -> OpNote {
    OpNote {
        reason: reason.to_owned(),
        actor: None,
        role: Some("assistant".to_owned()),
    }
}

impl MemoryServer {
    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a call panicked half-way; the store itself is still
        // consistent (commits are atomic), so the next call goes on with it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The tool table with every input schema made portable (no type arrays).
    fn portable_tools() -> ToolRouter<MemoryServer> {
        let mut router = MemoryServer::tool_router();
        for route in router.map.values_mut() {
            let mut schema = Value::Object((*route.attr.input_schema).clone());
            answer::portable_schema(&mut schema);
            if let Value::Object(map) = schema {
                route.attr.input_schema = Arc::new(map);
            }
        }
        router
    }

    fn add(&self, call: AddMemories) -> Result<Value> {
        checked_text(&call.text, "text")?;
        let time = call
            .time
            .as_deref()
            .map(EventTime::parse)
            .transpose()
            .map_err(|reason| CliError::flag("time", reason))?;
        let source = call.source.as_deref().map(source).transpose()?;
        let mut state = self.state();
        let scope = state.scope(scope_of(call.user_id, call.agent_id, call.run_id)?);
        let store = state.writer()?;
        let report = if call.infer {
            if source.is_some_and(|s| s != Source::Note) {
                return Err(CliError::flag(
                    "source",
                    "inferred memories are notes; pass infer=false to store a text of another source",
                ));
            }
            let encoder = state.encoder(&store)?;
            let decider = memdb::ops::on_device_decider(encoder);
            let mut options = RememberOptions::new(&SentenceExtractor, decider.as_ref(), encoder);
            options.time = time;
            options.actor = call.speaker.clone();
            options.scope = scope;
            options.idempotency_key = call.idempotency_key;
            store.remember(
                &[Message {
                    speaker: call.speaker,
                    text: call.text,
                }],
                &options,
            )?
        } else {
            let time = time.unwrap_or_else(|| EventTime::utc(now_ms()));
            let mut fields = ItemFields::new(source.unwrap_or(Source::Note), time);
            fields.body = Some(call.text.clone());
            fields.speaker = call.speaker.clone();
            fields.scope = scope;
            // A memory the agent made, as an inferred one is: later adds are decided against it.
            fields.tags = vec![memdb::ops::MEMORY_TAG.to_owned()];
            fields
                .validate()
                .map_err(|reason| CliError::flag("text", reason))?;
            store.add_verbatim(
                fields,
                OpNote {
                    reason: "stored verbatim (add_memories, infer=false)".to_owned(),
                    actor: call.speaker,
                    role: Some("user".to_owned()),
                },
                call.idempotency_key,
            )?
        };
        let warnings = state.refresh_after_commit(&store);
        Ok(memdb_query::reports::remember_json(&report, &warnings))
    }

    fn search(&self, call: SearchMemory) -> Result<Value> {
        if call.query.trim().is_empty() {
            return Err(CliError::flag("query", "is empty"));
        }
        let k = call.k.unwrap_or(10);
        if !(1..=MAX_K).contains(&k) {
            return Err(CliError::flag(
                "k",
                format!("must be 1 to {MAX_K}, got {k}"),
            ));
        }
        let (max_chars, max_bytes) = bounds(call.max_chars, call.max_bytes)?;
        let mut filters = Vec::new();
        if let Some(s) = &call.source {
            filters.push(Filter::Source(vec![source(s)?]));
        }
        let since = call
            .since
            .as_deref()
            .map(|t| instant("since", t))
            .transpose()?;
        let until = call
            .until
            .as_deref()
            .map(|t| instant("until", t))
            .transpose()?;
        match (since, until) {
            (Some(a), Some(b)) => filters.push(Filter::Time(TimeFilter::Between(a, b))),
            (Some(a), None) => filters.push(Filter::Time(TimeFilter::AtOrAfter(a))),
            (None, Some(b)) => filters.push(Filter::Time(TimeFilter::AtOrBefore(b))),
            (None, None) => {}
        }
        match (&call.near, call.near_km) {
            (Some(name), km) => {
                let km = km.unwrap_or(25.0);
                if !(km.is_finite() && km > 0.0) {
                    return Err(CliError::flag(
                        "near_km",
                        format!("must be a positive number, got {km}"),
                    ));
                }
                filters.push(Filter::NearPlace {
                    name: name.clone(),
                    radius: Distance {
                        value: km,
                        unit: DistanceUnit::Km,
                    },
                });
            }
            (None, Some(_)) => return Err(CliError::flag("near_km", "needs `near`, the place")),
            (None, None) => {}
        }
        let scope = scope_of(call.user_id, call.agent_id, call.run_id)?;
        filters.extend(memdb_query::ScopeField::filters(&scope));
        let at = TimeTravel {
            as_of: call
                .as_of
                .as_deref()
                .map(|t| instant("as_of", t))
                .transpose()?,
            valid_at: None,
        };
        let statement = Statement::Query(Query::Recall(Recall {
            text: call.query,
            filters,
            at,
            asked_on: None,
            top: Some(u64::from(k)),
        }));
        let mut state = self.state();
        let store = state.reader()?;
        let output = state.run_statement(&store, &statement)?;
        let memdb_query::Rows::Items(rows) = output.rows else {
            return Err(CliError::NoRows {
                statement: statement.to_string(),
            });
        };
        let hits: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut hit = answer::compact_memory(&row.item, max_chars);
                if let Some(score) = row.score {
                    hit.insert("score".into(), json!((score * 1e4).round() / 1e4));
                }
                if let Some(ms) = row.replaced_ms {
                    hit.insert("replaced".into(), json!(EventTime::utc(ms).to_rfc3339()));
                }
                if let Some(why) = &row.why {
                    hit.insert("why".into(), json!(answer::why_line(why)));
                }
                Value::Object(hit)
            })
            .collect();
        // Said before the results: they are the nearest memories, not an answer.
        let mut rest = Map::new();
        if let Some(why) = &output.no_good_match {
            rest.insert("no_good_match".into(), json!(why));
        }
        Ok(answer::bounded("results", hits, rest, max_bytes))
    }

    fn list(&self, call: ListMemories) -> Result<Value> {
        let limit = call.limit.unwrap_or(50);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(CliError::flag(
                "limit",
                format!("must be 1 to {MAX_PAGE}, got {limit}"),
            ));
        }
        let (max_chars, max_bytes) = bounds(call.max_chars, call.max_bytes)?;
        let scope = scope_of(call.user_id, call.agent_id, call.run_id)?;
        let state = self.state();
        let store = state.reader()?;
        let snapshot = store.snapshot()?;
        let mut ids = in_scope(&snapshot, snapshot.item_ids()?, &scope)?;
        ids.sort_unstable();
        let after = call.cursor.unwrap_or(0);
        let start = ids.partition_point(|&id| id <= after);
        let page: Vec<u64> = ids[start..].iter().take(limit as usize).copied().collect();
        let mut memories = Vec::with_capacity(page.len());
        for id in &page {
            // An item deleted since the id list was read is simply not listed.
            if let Some(item) = snapshot.get(*id)? {
                memories.push(Value::Object(answer::compact_memory(&item, max_chars)));
            }
        }
        let mut rest = Map::new();
        rest.insert("total".into(), json!(ids.len()));
        // The cursor's widest value holds its place while the page is cut to the cap.
        rest.insert("next_cursor".into(), json!(u64::MAX));
        let mut doc = answer::bounded("memories", memories, rest, max_bytes);
        // The next page starts after the last memory this answer holds (a cut answer goes on
        // where it was cut).
        let shown = doc["memories"].as_array().map_or(0, Vec::len);
        if shown == 0 && start < ids.len() {
            return Err(CliError::flag(
                "max_bytes",
                format!(
                    "is too small for memory {} at max_chars {max_chars}: raise max_bytes or \
                     lower max_chars",
                    ids[start]
                ),
            ));
        }
        let next = (shown > 0 && start + shown < ids.len()).then(|| ids[start + shown - 1]);
        doc["next_cursor"] = json!(next);
        Ok(doc)
    }

    fn get(&self, id: u64) -> Result<Value> {
        let state = self.state();
        let store = state.reader()?;
        let snapshot = store.snapshot()?;
        let item = snapshot.get(id)?.ok_or_else(|| CliError::NoItem {
            key: id.to_string(),
        })?;
        let dropped = snapshot.dropped_blobs(id)?;
        let versions = snapshot.versions(id)?;
        let mut json = crate::output::item_detail_json(&item, &dropped, &versions);
        json["memory"] = json!(memory_text(&item));
        Ok(json)
    }

    fn update(&self, call: UpdateMemory) -> Result<Value> {
        checked_text(&call.text, "text")?;
        let mut state = self.state();
        let scope = state.scope(scope_of(call.user_id, call.agent_id, call.run_id)?);
        let store = state.writer()?;
        let item = store
            .snapshot()?
            .get(call.id)?
            .ok_or_else(|| CliError::NoItem {
                key: call.id.to_string(),
            })?;
        check_change(item.id, &item.fields, &scope, state.granted, Change::Update).map_err(
            |refusal| match refusal {
                Refusal::OutOfScope { .. } => CliError::NoItem {
                    key: call.id.to_string(),
                },
                other => refusal_error(other),
            },
        )?;
        let old = memory_text(&item);
        let mut fields = item.fields;
        fields.body = Some(call.text.clone());
        let applied = store.apply(vec![MemoryOp::Update {
            id: call.id,
            fields,
            valid: Validity::default(),
            note: note("update_memory"),
        }])?;
        let warnings = state.refresh_after_commit(&store);
        let seq = applied.first().map(|a| a.seq);
        Ok(json!({
            "memory_id": call.id, "event": "UPDATE", "old_memory": old,
            "new_memory": call.text, "seq": seq, "warnings": warnings,
        }))
    }

    /// Retires `ids` within `scope` in windows of one commit each. Every id is checked first:
    /// one the caller may not retire fails the whole call (nothing is deleted); ids that name
    /// no current memory of the scope are reported, not fatal.
    fn delete(
        state: &mut State,
        ids: &[u64],
        scope: &Scope,
        reason: &str,
    ) -> Result<(Vec<u64>, Vec<u64>, Vec<String>)> {
        let store = state.writer()?;
        let snapshot = store.snapshot()?;
        let mut live = Vec::new();
        let mut missing = Vec::new();
        let mut refused = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &id in ids {
            if !seen.insert(id) {
                continue;
            }
            let Some(item) = snapshot.get(id)? else {
                missing.push(id);
                continue;
            };
            match check_change(id, &item.fields, scope, state.granted, Change::Retire) {
                Ok(()) => live.push(id),
                Err(Refusal::OutOfScope { .. }) => missing.push(id),
                Err(refusal) => refused.push((id, refusal)),
            }
        }
        drop(snapshot);
        if let Some((_, first)) = refused.first() {
            let ids: Vec<String> = refused.iter().map(|(id, _)| id.to_string()).collect();
            return Err(CliError::flag(
                "--allow",
                format!(
                    "nothing deleted: {} of the ids ({}) {}; {first}: the person running the \
                     server may grant it with `memdb mcp STORE --allow delete`",
                    refused.len(),
                    ids.join(", "),
                    if refused.len() == 1 {
                        "is not a memory an agent made"
                    } else {
                        "are not memories an agent made"
                    },
                ),
            ));
        }
        for window in live.chunks(DELETE_WINDOW) {
            let ops = window
                .iter()
                .map(|&id| MemoryOp::Delete {
                    id,
                    valid_to_ms: None,
                    note: note(reason),
                })
                .collect();
            store.apply(ops)?;
        }
        let warnings = if live.is_empty() {
            Vec::new()
        } else {
            state.refresh_after_commit(&store)
        };
        Ok((live, missing, warnings))
    }

    fn delete_all(&self, call: DeleteAll) -> Result<Value> {
        if call.confirm == Some(false) {
            return Err(CliError::flag(
                "confirm",
                "is false: nothing deleted (leave it out or pass true)",
            ));
        }
        let mut state = self.state();
        state.require(
            Capability::Delete,
            "deleting every memory of a scope (delete_all_memories)",
        )?;
        let scope = state.scope(scope_of(call.user_id, call.agent_id, call.run_id)?);
        // Only memories agents make are "all memories": imported photos, mail and chats are
        // deleted by id (delete_memories), never wholesale.
        let ids = {
            let store = state.reader()?;
            let snapshot = store.snapshot()?;
            let mut ids = Vec::new();
            for id in snapshot.item_ids()? {
                if let Some(item) = snapshot.get(id)?
                    && item.fields.scope.within(&scope)
                    && memdb::recall::is_remembered_fact(&item.fields)
                {
                    ids.push(id);
                }
            }
            ids
        };
        let (deleted, _, warnings) = Self::delete(&mut state, &ids, &scope, "delete_all_memories")?;
        Ok(json!({
            "deleted": deleted.len(),
            "scope": scope_json(&scope),
            "undo": "undelete_memory restores each by id until it is purged or compacted past the retention window",
            "warnings": warnings,
        }))
    }

    fn undelete(&self, call: ScopedId) -> Result<Value> {
        let mut state = self.state();
        let scope = state.scope(scope_of(call.user_id, call.agent_id, call.run_id)?);
        let store = state.writer()?;
        let snapshot = store.snapshot()?;
        if snapshot.get(call.id)?.is_some() {
            return Err(CliError::flag(
                "id",
                format!("memory {} is not deleted", call.id),
            ));
        }
        let last = snapshot.history(call.id)?.versions.pop();
        drop(snapshot);
        let version = last.ok_or_else(|| CliError::NoItem {
            key: call.id.to_string(),
        })?;
        // The same rule as a delete: what the caller could not delete it may not bring back.
        check_change(
            call.id,
            &version.record.fields,
            &scope,
            state.granted,
            Change::Retire,
        )
        .map_err(|refusal| match refusal {
            Refusal::OutOfScope { .. } => CliError::NoItem {
                key: call.id.to_string(),
            },
            other => refusal_error(other),
        })?;
        let applied = store.restore(call.id, note("undelete_memory"))?;
        let warnings = state.refresh_after_commit(&store);
        Ok(json!({
            "memory_id": applied.id, "event": "UNDELETE", "seq": applied.seq,
            "memory": memory_text(&version.record), "warnings": warnings,
        }))
    }

    fn purge(&self, call: ScopedId) -> Result<Value> {
        let state = self.state();
        state.require(
            Capability::Purge,
            format!("purging memory {} (no undo)", call.id),
        )?;
        let scope = state.scope(scope_of(call.user_id, call.agent_id, call.run_id)?);
        let store = state.writer()?;
        let snapshot = store.snapshot()?;
        let fields = match snapshot.get(call.id)? {
            Some(item) => item.fields,
            None => snapshot
                .history(call.id)?
                .versions
                .pop()
                .map(|v| v.record.fields)
                .ok_or_else(|| CliError::NoItem {
                    key: call.id.to_string(),
                })?,
        };
        drop(snapshot);
        if !fields.scope.within(&scope) {
            return Err(CliError::NoItem {
                key: call.id.to_string(),
            });
        }
        let purged = store.purge(call.id)?;
        Ok(json!({ "memory_id": call.id, "purged": purged }))
    }

    fn query_statement(&self, text: &str) -> Result<CallToolResult> {
        let statements = parse_script(text).map_err(|e| CliError::Statement {
            rendered: e.render(text),
        })?;
        let [statement] = statements.as_slice() else {
            return Err(CliError::flag(
                "statement",
                format!("takes one statement, got {}", statements.len()),
            ));
        };
        let mut state = self.state();
        let writes = crate::shell::writes(statement);
        if writes {
            state.require(
                Capability::Forget,
                "a FORGET statement that is not a dry run",
            )?;
        }
        let store = if writes {
            state.writer()?
        } else {
            state.reader()?
        };
        let output = state.run_statement(&store, statement)?;
        let mut content = vec![ContentBlock::text(to_json(&output).to_string())];
        if let Statement::Show(Show::Page(day)) = statement
            && let Some(page) = store.render_page(&day.to_string())?
        {
            for part in &page.parts {
                content.push(ContentBlock::image(
                    base64::engine::general_purpose::STANDARD.encode(part),
                    "image/jpeg",
                ));
            }
        }
        Ok(CallToolResult::success(content))
    }

    fn run_forget(&self, call: ForgetCall) -> Result<Value> {
        let as_of = call
            .as_of
            .parse::<jiff::civil::Date>()
            .map_err(|e| CliError::flag("as_of", format!("not a YYYY-MM-DD date ({e})")))?;
        let mut state = self.state();
        if !call.dry_run {
            state.require(
                Capability::Forget,
                if call.drop_originals {
                    "forgetting that drops photo originals"
                } else {
                    "forgetting (not a dry run)"
                },
            )?;
        }
        let statement = Statement::Forget(memdb_query::Forget {
            policy: call.policy,
            as_of,
            dry_run: call.dry_run,
            // A dry run drops nothing (the grammar takes one of the two); its plan lists the
            // originals a real run would need consent for.
            drop_originals: call.drop_originals && !call.dry_run,
        });
        let mut store = if call.dry_run {
            state.reader()?
        } else {
            state.writer()?
        };
        let output = state.run_statement(&store, &statement)?;
        if !call.dry_run {
            store.shrink_catalog()?;
        }
        Ok(to_json(&output))
    }
}

/// The start of `text` on one line, at most `max_chars` characters (`…` when cut).
pub(crate) fn preview(text: &str, max_chars: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match answer::cut(&line, max_chars) {
        (shown, true) => format!("{shown}…"),
        (shown, false) => shown.to_owned(),
    }
}

fn scope_json(scope: &Scope) -> Value {
    Value::Object(
        scope
            .components()
            .map(|(name, id)| (name.to_owned(), json!(id)))
            .collect(),
    )
}

#[tool_router]
impl MemoryServer {
    /// Remember a text.
    #[tool(
        description = "Remember a text. With infer=true (default) memdb extracts its facts and, for each, \
        adds a new memory, updates or deletes the memory it changes, or notes it is already known \
        (returns each decision with its reason and the memory id). With infer=false the text is \
        stored verbatim as one new memory."
    )]
    async fn add_memories(&self, Parameters(call): Parameters<AddMemories>) -> CallToolResult {
        answer(self.add(call))
    }

    /// Search memories.
    #[tool(
        description = "Search the memories: dense, lexical, memory-graph and place signals fused. Each \
        hit has its id, text (`memory`, cut to max_chars), time, source, score and why it was \
        found; the answer stays within max_bytes. Filters: time (since/until), source, near a \
        place, scope, and as_of (what memdb held then). A time the query names (\"in May 2001\", \
        \"last summer\") filters or ranks. When no memory matches well (the query names a place \
        or a time no memory has), no_good_match says why and the results are only the nearest."
    )]
    async fn search_memory(&self, Parameters(call): Parameters<SearchMemory>) -> CallToolResult {
        answer(self.search(call))
    }

    /// List memories.
    #[tool(
        description = "List the memories in id order, a page at a time: pass the previous page's \
        next_cursor as cursor to continue (null when there is no more)."
    )]
    async fn list_memories(&self, Parameters(call): Parameters<ListMemories>) -> CallToolResult {
        answer(self.list(call))
    }

    /// One memory.
    #[tool(
        description = "One memory by id, whole: every field, its earlier versions and the originals \
        forgetting dropped."
    )]
    async fn get_memory(&self, Parameters(call): Parameters<MemoryId>) -> CallToolResult {
        answer(self.get(call.id))
    }

    /// Update a memory's text.
    #[tool(
        description = "Replace a memory's text. The old version is kept: memory_history shows both. \
        Only memories agents made, unless the server was started with --allow delete."
    )]
    async fn update_memory(&self, Parameters(call): Parameters<UpdateMemory>) -> CallToolResult {
        answer(self.update(call))
    }

    /// Delete memories.
    #[tool(
        description = "Delete memories by id (memory_ids). A delete retires a memory: it is no longer \
        found, its versions stay in memory_history, and undelete_memory brings it back. Only \
        memories agents made, unless the server was started with --allow delete. Ids that name \
        no memory are listed in not_found."
    )]
    async fn delete_memories(
        &self,
        Parameters(call): Parameters<DeleteMemories>,
    ) -> CallToolResult {
        answer((|| {
            let ids = call.ids()?;
            let mut state = self.state();
            let scope = state.scope(scope_of(call.user_id, call.agent_id, call.run_id)?);
            let (deleted, not_found, warnings) =
                Self::delete(&mut state, &ids, &scope, "delete_memories")?;
            Ok(json!({ "deleted": deleted, "not_found": not_found, "warnings": warnings }))
        })())
    }

    /// Delete every memory of a scope.
    #[tool(
        description = "Delete every memory agents made in the caller's scope (user_id, agent_id, \
        run_id; default: the server's). Needs the server started with --allow delete. Imported \
        photos, mail and chats are never deleted by it. Each deleted memory can be undeleted."
    )]
    async fn delete_all_memories(&self, Parameters(call): Parameters<DeleteAll>) -> CallToolResult {
        answer(self.delete_all(call))
    }

    /// Undo a delete.
    #[tool(
        description = "Bring a deleted memory back as it was when deleted (its history is kept), until \
        it is purged or compacted past the store's retention window."
    )]
    async fn undelete_memory(&self, Parameters(call): Parameters<ScopedId>) -> CallToolResult {
        answer(self.undelete(call))
    }

    /// Purge a memory.
    #[tool(
        description = "Remove a memory and its whole history for good (no undo). Needs the server \
        started with --allow purge."
    )]
    async fn purge_memory(&self, Parameters(call): Parameters<ScopedId>) -> CallToolResult {
        answer(self.purge(call))
    }

    /// A memory's history.
    #[tool(
        description = "A memory's history, oldest first: every ADD, UPDATE, DELETE and NONE with the \
        old and new text, when, who and why."
    )]
    async fn memory_history(&self, Parameters(call): Parameters<MemoryId>) -> CallToolResult {
        answer((|| {
            let state = self.state();
            let history = state.reader()?.snapshot()?.history(call.id)?;
            if history.versions.is_empty() && history.ops.is_empty() {
                return Err(CliError::NoItem {
                    key: call.id.to_string(),
                });
            }
            Ok(json!({
                "memory_id": call.id,
                "history": memdb_query::reports::history_ops_json(&history),
            }))
        })())
    }

    /// Run a statement of the query language.
    #[tool(
        description = "Run one statement of memdb's query language (RECALL, ITEMS, PATHS MATCHING, \
        HISTORY OF, SHOW, EXPLAIN, FORGET … DRY RUN) and return its rows as JSON. SHOW PAGE also \
        returns the day's scrapbook page as an image. A FORGET that is not a dry run needs the \
        server started with --allow forget."
    )]
    async fn query(&self, Parameters(call): Parameters<QueryStatement>) -> CallToolResult {
        self.query_statement(&call.statement).unwrap_or_else(refuse)
    }

    /// Optical forgetting.
    #[tool(
        description = "Optical forgetting by a built-in policy as of a day: re-encode aging scrapbook \
        pages at lower quality and scale, quantize old vectors, prune the memory graph. dry_run \
        (default true) only reports what would change and the bytes saved; a real run needs the \
        server started with --allow forget."
    )]
    async fn forget(&self, Parameters(call): Parameters<ForgetCall>) -> CallToolResult {
        answer(self.run_forget(call))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memdb", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "memdb: a person's long-term memory (notes, chats, e-mail, photos). Use \
                 search_memory before answering from memory, add_memories to remember what the \
                 user says, memory_history to see how a memory changed, get_memory for a whole \
                 memory when a hit was cut.",
            )
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// `memdb mcp`: the server, with the capabilities its flags grant.
pub(crate) fn command(args: McpArgs) -> Result<ExitCode> {
    let McpArgs {
        dir,
        allow,
        allow_writes,
        user_id,
        agent_id,
        http,
    } = args;
    let mut granted = match allow.as_deref() {
        Some(list) => memdb::ops::access::Capabilities::parse_list(list)
            .map_err(|reason| CliError::flag("--allow", reason))?,
        None => memdb::ops::access::Capabilities::NONE,
    };
    if allow_writes {
        eprintln!("memdb mcp: --allow-writes is --allow forget now");
        granted = granted.with(memdb::ops::access::Capability::Forget);
    }
    serve(
        &dir,
        ServeOptions {
            granted,
            default_scope: memdb::Scope::new(user_id, agent_id, None),
            http,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
