//! `memdb mcp STORE`: the store as a Model Context Protocol server over stdio, for agents.
//!
//! Built on the official Rust SDK (`rmcp`) on a current-thread tokio runtime. The tools are a
//! superset of OpenMemory's (`add_memories`, `search_memory`, `list_memories`,
//! `delete_all_memories`) so prompts written for it work, plus `get_memory`,
//! `update_memory`, `delete_memories`, `memory_history`, memdb's query language (`query`) and
//! optical forgetting (`forget`). SPEC.md §12 lists every tool and argument.
//!
//! Invariants:
//! - Standard output carries the protocol and nothing else; every log line goes to stderr.
//! - The server holds the store as its writer for its whole life (the `LOCK`), so every write
//!   goes through the engine's one commit path and is durable when its tool answers; other
//!   processes still read it (read-only opens take no lock).
//! - A tool that fails answers an MCP tool error (`isError`) naming what was wrong; a call the
//!   protocol cannot take (unknown tool, missing or mistyped argument) gets a JSON-RPC error.
//!   Neither stops the server.
//! - After every write the derived stages (vectors, the memory graph, pages) are brought
//!   current through the ingest pipeline, which works from what the store says is missing, so a
//!   server killed between the commit and those stages loses nothing: the next write (or
//!   `memdb embed`) completes them.
//! - `query` runs read-only statements unless the server was started with `--allow-writes`.
//!
//! Calls run one at a time: the store has one writer, and the encoder is a CPU-bound model.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use base64::Engine as _;
use memdb::ops::{Message, RememberOptions, SentenceExtractor};
use memdb::{
    EventTime, IngestOptions, ItemFields, MemoryOp, OpNote, Scope, Source, Store, Validity,
};
use memdb_encode::MiniLm;
use memdb_query::reports::memory_text;
use memdb_query::{
    Distance, DistanceUnit, Filter, Instant, Query, QueryContext, Recall, Show, Statement,
    StoreQuery, TimeFilter, TimeTravel, item_json, item_row_json, parse_instant, parse_script,
    to_json,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

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

/// `memdb mcp STORE [--allow-writes]`: serves until the client closes standard input.
pub(crate) fn serve(dir: &Path, allow_writes: bool) -> Result<()> {
    let store = crate::open_store(dir)?;
    let server = MemoryServer {
        state: Arc::new(Mutex::new(State {
            store,
            encoder: None,
            allow_writes,
        })),
        tool_router: MemoryServer::tool_router(),
    };
    eprintln!(
        "memdb mcp: serving {} over stdio ({} tools; query statements {})",
        dir.display(),
        server.tool_router.list_all().len(),
        if allow_writes {
            "may write"
        } else {
            "read only"
        }
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Mcp(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| CliError::Mcp(format!("the client did not initialise: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| CliError::Mcp(format!("the session ended badly: {e}")))?;
        Ok::<(), CliError>(())
    })?;
    eprintln!("memdb mcp: client closed the session");
    Ok(())
}

/// What every call shares: the store (as its writer) and the encoder, loaded on first need.
struct State {
    store: Store,
    encoder: Option<MiniLm>,
    allow_writes: bool,
}

impl State {
    /// The store and the encoder, loading the encoder first if needed.
    fn with_encoder(&mut self) -> Result<(&Store, &MiniLm)> {
        self.encoder()?;
        match &self.encoder {
            Some(encoder) => Ok((&self.store, encoder)),
            None => Err(CliError::Mcp("the encoder did not load".to_owned())),
        }
    }

    fn encoder(&mut self) -> Result<&MiniLm> {
        if self.encoder.is_none() {
            eprintln!("memdb mcp: loading the encoder");
            let encoder =
                crate::embed::encoder_for(&self.store, false, crate::model::Download::Never)?;
            self.encoder = Some(encoder);
        }
        self.encoder
            .as_ref()
            .ok_or_else(|| CliError::Mcp("the encoder did not load".to_owned()))
    }

    /// Brings vectors, the memory graph and pages current after a write (the ingest
    /// pipeline's derived stages, from what the store says is missing).
    fn refresh(&mut self) -> Result<()> {
        let (store, encoder) = self.with_encoder()?;
        store.ingest_items(
            std::iter::empty(),
            Some(encoder),
            IngestOptions::default(),
            &mut |_, _, _| {},
        )?;
        Ok(())
    }

    /// [`State::refresh`] after a commit that already stands: a failure is the answer's warning,
    /// not the call's error (the client would retry a write that was made), and the next write
    /// or `memdb embed` completes what is missing.
    fn refresh_after_commit(&mut self) -> Vec<String> {
        match self.refresh() {
            Ok(()) => Vec::new(),
            Err(e) => vec![format!(
                "stored, but bringing vectors, the memory graph and pages current failed ({e}); \
                 the next write or `memdb embed` completes it"
            )],
        }
    }

    fn run_statement(&mut self, statement: &Statement) -> Result<memdb_query::Output> {
        if crate::shell::needs_encoder(statement) {
            self.encoder()?;
        }
        let ctx = QueryContext {
            embedder: self.encoder.as_ref().map(|e| e as &dyn memdb::Embedder),
            ..QueryContext::default()
        };
        let text = statement.to_string();
        self.store.query(&text, &ctx).map_err(|e| match e {
            memdb_query::QueryError::Parse(p) => CliError::Statement {
                rendered: p.render(&text),
            },
            other => CliError::Query(other),
        })
    }
}

/// The MCP server: the shared state and the tool table `#[tool_router]` builds.
#[derive(Clone)]
struct MemoryServer {
    state: Arc<Mutex<State>>,
    tool_router: ToolRouter<MemoryServer>,
}

fn default_true() -> bool {
    true
}

/// `add_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddMemories {
    /// The text to remember: a message, a note or a fact (at most 1 MiB of UTF-8).
    text: String,
    /// true (the default): extract the text's facts and decide for each whether it is new
    /// (ADD), changes a memory (UPDATE), contradicts one (DELETE) or is already known (NONE),
    /// Mem0's pipeline. false: store the text verbatim as one new memory.
    #[serde(default = "default_true")]
    infer: bool,
    /// When it was said or happened: YYYY-MM-DD or RFC 3339 (default: now).
    time: Option<String>,
    /// What kind of memory it is, for infer=false: note (default), chat, email, image or video.
    /// Inferred memories are notes.
    source: Option<String>,
    /// Who said it (a fact is decided only against memories of the same speaker).
    speaker: Option<String>,
    /// The user the memories belong to (a fact is decided only against memories of the same
    /// user_id, agent_id and run_id).
    user_id: Option<String>,
    /// The agent that makes them.
    agent_id: Option<String>,
    /// The session or run they are made in.
    run_id: Option<String>,
    /// A key for this call, chosen by the client: a retry with the same key (after an answer
    /// was lost) adds nothing and answers what the first call did (`replayed`: true).
    idempotency_key: Option<String>,
}

/// `search_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchMemory {
    /// The question or words to search for.
    query: String,
    /// How many hits to return (1 to 100, default 10).
    k: Option<u32>,
    /// Only memories at or after this time: YYYY-MM-DD (the memory's own local day) or RFC 3339.
    since: Option<String>,
    /// Only memories at or before this time (a day includes its end).
    until: Option<String>,
    /// Only memories of this source: note, chat, email, image or video.
    source: Option<String>,
    /// Only memories whose place lies near this place, by name ("Lisbon", "Paris, TX").
    near: Option<String>,
    /// The radius around `near` in kilometres (default 25).
    near_km: Option<f64>,
    /// Search what memdb held as current at this time (YYYY-MM-DD or RFC 3339): earlier versions
    /// of updated memories, memories deleted since.
    as_of: Option<String>,
    /// Only memories of this user (with agent_id and run_id: every one given must match).
    user_id: Option<String>,
    /// Only memories of this agent.
    agent_id: Option<String>,
    /// Only memories of this run.
    run_id: Option<String>,
}

/// `list_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ListMemories {
    /// At most this many memories (1 to 1000, default 50), in id order.
    limit: Option<u32>,
    /// Continue after this id: the `next_cursor` of the previous page.
    cursor: Option<u64>,
    /// Only memories of this user (with agent_id and run_id: every one given must match).
    user_id: Option<String>,
    /// Only memories of this agent.
    agent_id: Option<String>,
    /// Only memories of this run.
    run_id: Option<String>,
}

/// A memory by id.
#[derive(Debug, Deserialize, JsonSchema)]
struct MemoryId {
    /// The memory's id (as `search_memory` and `list_memories` give it).
    id: u64,
}

/// `update_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
struct UpdateMemory {
    /// The memory's id.
    id: u64,
    /// Its new text (at most 1 MiB). The old version is kept in its history.
    text: String,
}

/// `delete_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteMemories {
    /// The ids of the memories to delete (their versions stay in their history).
    ids: Vec<u64>,
    /// Only memories of this user: an id of another scope is listed in not_found.
    user_id: Option<String>,
    /// Only memories of this agent.
    agent_id: Option<String>,
    /// Only memories of this run.
    run_id: Option<String>,
}

/// `delete_all_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteAll {
    /// Must be true: every memory of the store (or of the scope given) is deleted.
    confirm: bool,
    /// Only memories of this user.
    user_id: Option<String>,
    /// Only memories of this agent.
    agent_id: Option<String>,
    /// Only memories of this run.
    run_id: Option<String>,
}

/// `query`.
#[derive(Debug, Deserialize, JsonSchema)]
struct QueryStatement {
    /// One statement of memdb's query language (SPEC.md §9), e.g. `ITEMS WHERE source = email
    /// TOP 5`, `RECALL 'where did I stay in Lisbon?' TOP 5`, `HISTORY OF 12`, `SHOW PAGE
    /// 2023-05-08` (returns the page image too), `SHOW STATS`.
    statement: String,
}

fn default_dry_run() -> bool {
    true
}

/// `forget`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ForgetCall {
    /// A built-in forgetting policy: timed-gentle, timed-steep, … (see `memdb forget --help`).
    policy: String,
    /// The day ages are counted to, YYYY-MM-DD.
    as_of: String,
    /// true (the default): report what would change and write nothing.
    #[serde(default = "default_dry_run")]
    dry_run: bool,
    /// Consent to dropping photo originals where the policy does not keep them.
    #[serde(default)]
    drop_originals: bool,
}

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

/// A memory as lists show it: every field, and `memory`, its text.
fn memory_json(item: &memdb::Item) -> Value {
    let mut json = item_json(item);
    json["memory"] = json!(memory_text(item));
    json
}

impl MemoryServer {
    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a call panicked half-way; the store itself is still
        // consistent (commits are atomic), so the next call goes on with it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        let scope = Scope::new(call.user_id, call.agent_id, call.run_id);
        scope
            .validate()
            .map_err(|reason| CliError::flag("user_id/agent_id/run_id", reason))?;
        let mut state = self.state();
        let report = if call.infer {
            if source.is_some_and(|s| s != Source::Note) {
                return Err(CliError::flag(
                    "source",
                    "inferred memories are notes; pass infer=false to store a text of another source",
                ));
            }
            let (store, encoder) = state.with_encoder()?;
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
            state.store.add_verbatim(
                fields,
                OpNote {
                    reason: "stored verbatim (add_memories, infer=false)".to_owned(),
                    actor: call.speaker,
                    role: Some("user".to_owned()),
                },
                call.idempotency_key,
            )?
        };
        let warnings = state.refresh_after_commit();
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
            top: Some(u64::from(k)),
        }));
        let mut state = self.state();
        let output = state.run_statement(&statement)?;
        let memdb_query::Rows::Items(rows) = output.rows else {
            return Err(CliError::NoRows {
                statement: statement.to_string(),
            });
        };
        let hits: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut hit = item_row_json(row);
                hit["memory"] = json!(memory_text(&row.item));
                hit
            })
            .collect();
        Ok(json!({ "results": hits, "query_nodes": output.query_nodes }))
    }

    fn list(&self, call: ListMemories) -> Result<Value> {
        let limit = call.limit.unwrap_or(50);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(CliError::flag(
                "limit",
                format!("must be 1 to {MAX_PAGE}, got {limit}"),
            ));
        }
        let scope = scope_of(call.user_id, call.agent_id, call.run_id)?;
        let state = self.state();
        let snapshot = state.store.snapshot()?;
        let mut ids = in_scope(&snapshot, snapshot.item_ids()?, &scope)?;
        ids.sort_unstable();
        let after = call.cursor.unwrap_or(0);
        let start = ids.partition_point(|&id| id <= after);
        let page: Vec<u64> = ids[start..].iter().take(limit as usize).copied().collect();
        let mut memories = Vec::with_capacity(page.len());
        for id in &page {
            // An item deleted since the id list was read is simply not listed.
            if let Some(item) = snapshot.get(*id)? {
                memories.push(memory_json(&item));
            }
        }
        let next = (start + page.len() < ids.len())
            .then(|| page.last().copied())
            .flatten();
        Ok(json!({ "memories": memories, "total": ids.len(), "next_cursor": next }))
    }

    fn get(&self, id: u64) -> Result<Value> {
        let state = self.state();
        let snapshot = state.store.snapshot()?;
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
        let item = state
            .store
            .snapshot()?
            .get(call.id)?
            .ok_or_else(|| CliError::NoItem {
                key: call.id.to_string(),
            })?;
        let old = memory_text(&item);
        let mut fields = item.fields;
        fields.body = Some(call.text.clone());
        let applied = state.store.apply(vec![MemoryOp::Update {
            id: call.id,
            fields,
            valid: Validity::default(),
            note: OpNote {
                reason: "update_memory".to_owned(),
                actor: None,
                role: Some("assistant".to_owned()),
            },
        }])?;
        let warnings = state.refresh_after_commit();
        let seq = applied.first().map(|a| a.seq);
        Ok(json!({
            "memory_id": call.id, "event": "UPDATE", "old_memory": old,
            "new_memory": call.text, "seq": seq, "warnings": warnings,
        }))
    }

    /// Deletes `ids` (those within `scope`) in windows of one commit each; ids that name no
    /// memory of the scope are reported, not fatal.
    fn delete(
        state: &mut State,
        ids: &[u64],
        scope: &Scope,
        reason: &str,
    ) -> Result<(Vec<u64>, Vec<u64>, Vec<String>)> {
        let snapshot = state.store.snapshot()?;
        let mut live = Vec::new();
        let mut missing = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &id in ids {
            if !seen.insert(id) {
                continue;
            }
            if snapshot
                .get(id)?
                .is_some_and(|item| item.fields.scope.within(scope))
            {
                live.push(id);
            } else {
                missing.push(id);
            }
        }
        drop(snapshot);
        for window in live.chunks(DELETE_WINDOW) {
            let ops = window
                .iter()
                .map(|&id| MemoryOp::Delete {
                    id,
                    valid_to_ms: None,
                    note: OpNote {
                        reason: reason.to_owned(),
                        actor: None,
                        role: Some("assistant".to_owned()),
                    },
                })
                .collect();
            state.store.apply(ops)?;
        }
        let warnings = if live.is_empty() {
            Vec::new()
        } else {
            state.refresh_after_commit()
        };
        Ok((live, missing, warnings))
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
        if crate::shell::writes(statement) && !state.allow_writes {
            return Err(CliError::flag(
                "statement",
                "writes to the store; this server runs read-only statements only (start it with \
                 `memdb mcp STORE --allow-writes`, or use the `forget` tool)",
            ));
        }
        let output = state.run_statement(statement)?;
        let mut content = vec![ContentBlock::text(to_json(&output).to_string())];
        if let Statement::Show(Show::Page(day)) = statement
            && let Some(page) = state.store.render_page(&day.to_string())?
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
        let statement = Statement::Forget(memdb_query::Forget {
            policy: call.policy,
            as_of,
            dry_run: call.dry_run,
            drop_originals: call.drop_originals,
        });
        let mut state = self.state();
        let output = state.run_statement(&statement)?;
        if !call.dry_run {
            state.store.shrink_catalog()?;
        }
        Ok(to_json(&output))
    }
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
        hit has its id, time, source, text (`memory`), score and why it was found. Filters: time \
        (since/until), source, near a place, and as_of (what memdb held then)."
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
        description = "One memory by id: every field, its earlier versions and the originals forgetting \
        dropped."
    )]
    async fn get_memory(&self, Parameters(call): Parameters<MemoryId>) -> CallToolResult {
        answer(self.get(call.id))
    }

    /// Update a memory's text.
    #[tool(
        description = "Replace a memory's text. The old version is kept: memory_history shows both."
    )]
    async fn update_memory(&self, Parameters(call): Parameters<UpdateMemory>) -> CallToolResult {
        answer(self.update(call))
    }

    /// Delete memories.
    #[tool(
        description = "Delete memories by id. They are no longer found; their versions stay in \
        memory_history. Ids that name no memory are listed in not_found."
    )]
    async fn delete_memories(
        &self,
        Parameters(call): Parameters<DeleteMemories>,
    ) -> CallToolResult {
        answer((|| {
            let scope = scope_of(call.user_id, call.agent_id, call.run_id)?;
            let mut state = self.state();
            let (deleted, not_found, warnings) =
                Self::delete(&mut state, &call.ids, &scope, "delete_memories")?;
            Ok(json!({ "deleted": deleted, "not_found": not_found, "warnings": warnings }))
        })())
    }

    /// Delete every memory.
    #[tool(
        description = "Delete every memory of the store, or of the scope given (user_id, agent_id, \
        run_id); confirm must be true. Their versions stay in memory_history."
    )]
    async fn delete_all_memories(&self, Parameters(call): Parameters<DeleteAll>) -> CallToolResult {
        if !call.confirm {
            return refuse(CliError::flag(
                "confirm",
                "must be true to delete every memory",
            ));
        }
        answer((|| {
            let scope = scope_of(call.user_id, call.agent_id, call.run_id)?;
            let mut state = self.state();
            let ids = state.store.snapshot()?.item_ids()?;
            let (deleted, _, warnings) =
                Self::delete(&mut state, &ids, &scope, "delete_all_memories")?;
            Ok(json!({ "deleted": deleted.len(), "warnings": warnings }))
        })())
    }

    /// A memory's history.
    #[tool(
        description = "A memory's history, oldest first: every ADD, UPDATE, DELETE and NONE with the \
        old and new text, when, who and why."
    )]
    async fn memory_history(&self, Parameters(call): Parameters<MemoryId>) -> CallToolResult {
        answer((|| {
            let state = self.state();
            let history = state.store.snapshot()?.history(call.id)?;
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
        returns the day's scrapbook page as an image. Statements that write are refused unless the \
        server was started with --allow-writes."
    )]
    async fn query(&self, Parameters(call): Parameters<QueryStatement>) -> CallToolResult {
        self.query_statement(&call.statement).unwrap_or_else(refuse)
    }

    /// Optical forgetting.
    #[tool(
        description = "Optical forgetting by a built-in policy as of a day: re-encode aging scrapbook \
        pages at lower quality and scale, quantize old vectors, prune the memory graph. dry_run \
        (default true) only reports what would change and the bytes saved."
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
                 user says, memory_history to see how a memory changed.",
            )
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}
