//! The arguments of `memdb mcp`'s tools, as their JSON schemas show them to agents (each doc
//! comment is the property's description). OpenMemory's names are accepted where they differ
//! (`memory_ids`); SPEC.md §11 lists them all.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;

fn default_true() -> bool {
    true
}

fn default_dry_run() -> bool {
    true
}

/// `add_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct AddMemories {
    /// The text to remember: a message, a note or a fact (at most 1 MiB of UTF-8).
    pub(super) text: String,
    /// true (the default): extract the text's facts and decide for each whether it is new
    /// (ADD), changes a memory (UPDATE), contradicts one (DELETE) or is already known (NONE),
    /// Mem0's pipeline. false: store the text verbatim as one new memory.
    #[serde(default = "default_true")]
    pub(super) infer: bool,
    /// When it was said or happened: YYYY-MM-DD or RFC 3339 (default: now).
    pub(super) time: Option<String>,
    /// What kind of memory it is, for infer=false: note (default), chat, email, image or video.
    /// Inferred memories are notes.
    pub(super) source: Option<String>,
    /// Who said it (a fact is decided only against memories of the same speaker).
    pub(super) speaker: Option<String>,
    /// The user the memories belong to (a fact is decided only against memories of the same
    /// user_id, agent_id and run_id). Default: the server's --user-id.
    pub(super) user_id: Option<String>,
    /// The agent that makes them. Default: the server's --agent-id.
    pub(super) agent_id: Option<String>,
    /// The session or run they are made in.
    pub(super) run_id: Option<String>,
    /// A key for this call, chosen by the client: a retry with the same key (after an answer
    /// was lost) adds nothing and answers what the first call did (`replayed`: true).
    pub(super) idempotency_key: Option<String>,
}

/// `search_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SearchMemory {
    /// The question or words to search for.
    pub(super) query: String,
    /// How many hits to return (1 to 100, default 10).
    pub(super) k: Option<u32>,
    /// Each hit's text is cut to this many characters (20 to 100000, default 200); a cut hit
    /// says truncated: true, and get_memory gives the whole memory.
    pub(super) max_chars: Option<u32>,
    /// The whole answer is at most this many bytes of JSON (512 to 1048576, default 4096);
    /// hits that do not fit are counted in `omitted`.
    pub(super) max_bytes: Option<u32>,
    /// Only memories at or after this time: YYYY-MM-DD (the memory's own local day) or RFC 3339.
    pub(super) since: Option<String>,
    /// Only memories at or before this time (a day includes its end).
    pub(super) until: Option<String>,
    /// Only memories of this source: note, chat, email, image or video.
    pub(super) source: Option<String>,
    /// Only memories whose place lies near this place, by name ("Lisbon", "Paris, TX").
    pub(super) near: Option<String>,
    /// The radius around `near` in kilometres (default 25).
    pub(super) near_km: Option<f64>,
    /// Search what memdb held as current at this time (YYYY-MM-DD or RFC 3339): earlier versions
    /// of updated memories, memories deleted since.
    pub(super) as_of: Option<String>,
    /// Only memories of this user (with agent_id and run_id: every one given must match).
    pub(super) user_id: Option<String>,
    /// Only memories of this agent.
    pub(super) agent_id: Option<String>,
    /// Only memories of this run.
    pub(super) run_id: Option<String>,
}

/// `list_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ListMemories {
    /// At most this many memories (1 to 1000, default 50), in id order.
    pub(super) limit: Option<u32>,
    /// Continue after this id: the `next_cursor` of the previous page.
    pub(super) cursor: Option<u64>,
    /// Each memory's text is cut to this many characters (20 to 100000, default 200).
    pub(super) max_chars: Option<u32>,
    /// The whole answer is at most this many bytes of JSON (512 to 1048576, default 4096); the
    /// page ends where it is cut and next_cursor continues from there.
    pub(super) max_bytes: Option<u32>,
    /// Only memories of this user (with agent_id and run_id: every one given must match).
    pub(super) user_id: Option<String>,
    /// Only memories of this agent.
    pub(super) agent_id: Option<String>,
    /// Only memories of this run.
    pub(super) run_id: Option<String>,
}

/// A memory by id.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct MemoryId {
    /// The memory's id (as `search_memory` and `list_memories` give it).
    pub(super) id: u64,
}

/// A memory by id, within a scope.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ScopedId {
    /// The memory's id.
    pub(super) id: u64,
    /// Only a memory of this user (default: the server's --user-id).
    pub(super) user_id: Option<String>,
    /// Only a memory of this agent (default: the server's --agent-id).
    pub(super) agent_id: Option<String>,
    /// Only a memory of this run.
    pub(super) run_id: Option<String>,
}

/// `update_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct UpdateMemory {
    /// The memory's id.
    pub(super) id: u64,
    /// Its new text (at most 1 MiB). The old version is kept in its history.
    pub(super) text: String,
    /// Only a memory of this user (default: the server's --user-id).
    pub(super) user_id: Option<String>,
    /// Only a memory of this agent (default: the server's --agent-id).
    pub(super) agent_id: Option<String>,
    /// Only a memory of this run.
    pub(super) run_id: Option<String>,
}

/// `delete_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct DeleteMemories {
    /// The ids of the memories to delete (OpenMemory's name; `ids` is accepted too).
    #[serde(alias = "ids")]
    pub(super) memory_ids: Vec<u64>,
    /// Only memories of this user: an id of another scope is listed in not_found. Default: the
    /// server's --user-id.
    pub(super) user_id: Option<String>,
    /// Only memories of this agent (default: the server's --agent-id).
    pub(super) agent_id: Option<String>,
    /// Only memories of this run.
    pub(super) run_id: Option<String>,
}

impl DeleteMemories {
    pub(super) fn ids(&self) -> Result<Vec<u64>> {
        if self.memory_ids.is_empty() {
            return Err(crate::error::CliError::flag(
                "memory_ids",
                "is empty: name the memories to delete",
            ));
        }
        Ok(self.memory_ids.clone())
    }
}

/// `delete_all_memories` (OpenMemory calls it with no arguments).
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct DeleteAll {
    /// Optional; false refuses the call (kept for clients that confirm explicitly).
    pub(super) confirm: Option<bool>,
    /// Only memories of this user (default: the server's --user-id).
    pub(super) user_id: Option<String>,
    /// Only memories of this agent (default: the server's --agent-id).
    pub(super) agent_id: Option<String>,
    /// Only memories of this run.
    pub(super) run_id: Option<String>,
}

/// `query`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct QueryStatement {
    /// One statement of memdb's query language (SPEC.md §9), e.g. `ITEMS WHERE source = email
    /// TOP 5`, `RECALL 'where did I stay in Lisbon?' TOP 5`, `HISTORY OF 12`, `SHOW PAGE
    /// 2023-05-08` (returns the page image too), `SHOW STATS`.
    pub(super) statement: String,
}

/// `forget`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ForgetCall {
    /// A built-in forgetting policy: timed-gentle, timed-steep, … (see `memdb forget --help`).
    pub(super) policy: String,
    /// The day ages are counted to, YYYY-MM-DD.
    pub(super) as_of: String,
    /// true (the default): report what would change and write nothing.
    #[serde(default = "default_dry_run")]
    pub(super) dry_run: bool,
    /// Consent to dropping photo originals where the policy does not keep them.
    #[serde(default)]
    pub(super) drop_originals: bool,
}
