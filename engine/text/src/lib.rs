//! memdb-text: text analysis the engine shares, pure over strings and item fields.
//!
//! Owns what a *word* is (`words.rs`: the `\w+` of the BM25 peer, lowercased, and the
//! stopwords) and node extraction (`nodes.rs`: the short lowercase phrases an item or a
//! question is about, after ScrapMem's extraction prompt, as EM-Graph nodes). The engine's
//! lexical index, memory-operation rules, graph and recall read text through it; it knows no
//! store.
//!
//! Invariants (tested here): words match Python's `re.findall(r"\w+", text.lower())`; the same
//! input always gives the same nodes in the same order, every node lowercase, trimmed and
//! bounded in length and count.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod nodes;
mod when;
mod words;

pub use nodes::{
    Candidates, MAX_NODE_CHARS, MAX_NODES, MIN_NODES, NodeDraft, NodeKind, display_date,
    item_nodes, normalize_phrase, query_nodes,
};
pub use when::{TimePhrase, time_phrases};
pub use words::{is_stopword, spans, words};
