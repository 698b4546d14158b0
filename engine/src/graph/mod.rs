//! The EM-Graph (ScrapMem §4.2, Algorithm 1): canonical nodes with their aliases, EM-Paths (one
//! per page and update: the ordered nodes of that day's new items, pointing at those items as
//! evidence) and the Q-matrix, the node–path incidence: by node, each node's paths; by path,
//! each path's node list.
//!
//! Everything lives in the store's `graph_*` and `graph.*` catalog tables (SPEC.md §5.3;
//! a store older than format 14 is read through its `graph_paths`, `graph_node_paths` and
//! `graph_items` until its first write rewrites them) and node vectors in
//! the vector space [`NODE_VECTORS`], so the graph commits with the store, is read lazily (a
//! recall reads only the rows of the nodes and paths it touches) and grows incrementally:
//! [`Store::update_graph`](crate::Store::update_graph) takes the items the graph has not seen yet.
//!
//! Invariants (checked by tests): every phrase maps to exactly one node (canonical or alias);
//! `node_paths[n]` holds `p` exactly when path `p` lists `n`; a node's vector is in
//! [`NODE_VECTORS`] under its id; a new phrase joins the nearest existing node when their
//! cosine is at least the merge threshold, found through the node vector index, never by a
//! loop over all nodes.

#[cfg(feature = "llm")]
mod llm;
mod overlap;
mod remove;
mod update;

#[cfg(test)]
mod tests;

use crate::error::StoreError;
use crate::handle::Snapshot;
use std::collections::BTreeSet;

use redb::{ReadableTable, ReadableTableMetadata, TableDefinition};
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use memdb_formats::id_list;
use memdb_store::CatalogResult;
use memdb_store::catalog::{
    self, GRAPH_ALIASES, GRAPH_ITEMS, GRAPH_NODE_PATHS, GRAPH_NODES, GRAPH_PATHS,
    LEGACY_GRAPH_ITEMS, LEGACY_GRAPH_NODE_PATHS, LEGACY_GRAPH_PATHS,
};

#[cfg(feature = "llm")]
pub use llm::LlmExtractor;
pub use memdb_text::{NodeDraft, NodeKind, item_nodes, query_nodes};
pub use overlap::{CANDIDATE_CAP, PathMatch, PathOverlapStats, PathsMatched};
pub(crate) use remove::{fade_nodes, remove_items};
pub use update::{GraphOptions, GraphReport};

/// The vector space of node embeddings, keyed by node id.
pub const NODE_VECTORS: &str = "graph.nodes";

/// Default cosine at or above which a new phrase becomes an alias of an existing node.
pub const DEFAULT_MERGE_THRESHOLD: f32 = 0.90;

/// Turns texts into unit vectors: the store's encoder, seen from the engine (which does not
/// link a model). `memdb-encode`'s encoders implement it.
pub trait Embedder {
    /// One unit-length vector per text, in order.
    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError>;
}

/// A borrowed embedder embeds (one loaded model serves recall and a decider at once).
impl<E: Embedder + ?Sized> Embedder for &E {
    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
        (**self).embed(texts)
    }
}

/// Turns items and questions into graph nodes. [`RuleExtractor`] is the default; an
/// `LlmExtractor` (feature `llm`) asks a local model server.
pub trait NodeExtractor: Send + Sync + std::fmt::Debug {
    /// The nodes of an item.
    fn item_nodes(&self, fields: &memdb_formats::item::ItemFields) -> Result<Vec<NodeDraft>>;
    /// The nodes of a question.
    fn query_nodes(&self, question: &str) -> Result<Vec<NodeDraft>>;
}

/// The deterministic on-device extractor of `extract`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleExtractor;

impl NodeExtractor for RuleExtractor {
    fn item_nodes(&self, fields: &memdb_formats::item::ItemFields) -> Result<Vec<NodeDraft>> {
        Ok(item_nodes(fields))
    }

    fn query_nodes(&self, question: &str) -> Result<Vec<NodeDraft>> {
        Ok(query_nodes(question))
    }
}

/// Calls `embed` and checks it kept its promise of one vector per text.
pub(crate) fn embed_checked(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vectors = embedder.embed(texts)?;
    if vectors.len() != texts.len() {
        return Err(Error::Embed(crate::EmbedError::Count {
            vectors: vectors.len(),
            texts: texts.len(),
        }));
    }
    Ok(vectors)
}

/// A graph node as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphNode {
    /// Node id.
    pub id: u64,
    /// The canonical phrase (the first one seen).
    pub phrase: String,
    /// What it names.
    pub kind: NodeKind,
    /// Other phrases merged into it.
    pub aliases: Vec<String>,
}

/// An EM-Path as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphPath {
    /// Path id.
    pub id: u64,
    /// The page it belongs to (a day, `YYYY-MM-DD`).
    pub page: String,
    /// Its nodes, in order of first mention.
    pub nodes: Vec<u64>,
    /// The items it points at as evidence.
    pub items: Vec<u64>,
}

/// A write to the graph tables, computed by [`Store::update_graph`] and applied inside the
/// batch's catalog transaction.
#[derive(Debug, Clone)]
pub(crate) enum GraphWrite {
    Node(GraphNode),
    Alias {
        phrase: String,
        node: u64,
    },
    Path(GraphPath),
    NodePaths {
        node: u64,
        paths: RoaringBitmap,
    },
    Item {
        item: u64,
        path: u64,
        nodes: Vec<u64>,
    },
    Counters {
        next_node: u64,
        next_path: u64,
    },
}

const ALIAS_SEPARATOR: char = '\u{1f}';

impl memdb_store::derived::DerivedWrite for GraphWrite {
    fn apply(
        self: Box<Self>,
        commit: &mut memdb_store::derived::DerivedCommit<'_, '_>,
    ) -> memdb_store::Result<()> {
        let (txn, counters) = commit.txn_and_counters();
        Ok(apply(txn, counters, *self)?)
    }
}

/// The graph as a client of the store: a commit that deletes, changes or loses items takes
/// their graph rows with it (paths, and nodes no item uses any more, with their vectors).
pub(crate) struct GraphRows;

impl memdb_store::derived::DerivedData for GraphRows {
    fn forget_items(
        &self,
        txn: &redb::WriteTransaction,
        items: &[u64],
    ) -> memdb_store::Result<Vec<(&'static str, u64)>> {
        Ok(remove_items(txn, items)?
            .into_iter()
            .map(|node| (NODE_VECTORS, node))
            .collect())
    }
}

/// Serialises EM-Graph updates, which read the graph, then commit what they derived (kept per
/// store as a store extension).
#[derive(Default)]
pub(crate) struct UpdateLock(std::sync::Mutex<()>);

impl UpdateLock {
    /// Holds the lock until the guard drops.
    pub(crate) fn hold(&self) -> Result<std::sync::MutexGuard<'_, ()>> {
        Ok(self
            .0
            .lock()
            .map_err(|_| StoreError::WriterPoisoned("a graph update thread panicked".into()))?)
    }
}

/// Applies one graph write in the batch's transaction.
pub(crate) fn apply(
    txn: &redb::WriteTransaction,
    meta: &mut redb::Table<'_, &'static str, u64>,
    write: GraphWrite,
) -> Result<()> {
    match write {
        GraphWrite::Node(node) => {
            let aliases = node.aliases.join(&ALIAS_SEPARATOR.to_string());
            txn.open_table(GRAPH_NODES)
                .ctx("open graph_nodes")?
                .insert(
                    node.id,
                    (node.phrase.as_str(), node.kind.code(), aliases.as_str()),
                )
                .ctx("write graph_nodes")?;
        }
        GraphWrite::Alias { phrase, node } => {
            txn.open_table(GRAPH_ALIASES)
                .ctx("open graph_aliases")?
                .insert(phrase.as_str(), node)
                .ctx("write graph_aliases")?;
        }
        GraphWrite::Path(path) => {
            let nodes = id_list::to_bytes(&path.nodes);
            let items = id_list::to_bytes(&path.items);
            txn.open_table(GRAPH_PATHS)
                .ctx("open graph.paths")?
                .insert(
                    path.id,
                    (path.page.as_str(), nodes.as_slice(), items.as_slice()),
                )
                .ctx("write graph.paths")?;
        }
        GraphWrite::NodePaths { node, paths } => {
            txn.open_table(GRAPH_NODE_PATHS)
                .ctx("open graph.node_paths")?
                .insert(node, id_set_bytes(&paths).as_slice())
                .ctx("write graph.node_paths")?;
        }
        GraphWrite::Item { item, path, nodes } => {
            let nodes = id_list::to_bytes(&nodes);
            txn.open_table(GRAPH_ITEMS)
                .ctx("open graph.items")?
                .insert(item, (path, nodes.as_slice()))
                .ctx("write graph.items")?;
        }
        GraphWrite::Counters {
            next_node,
            next_path,
        } => {
            meta.insert(catalog::KEY_NEXT_NODE, next_node)
                .ctx("write meta")?;
            meta.insert(catalog::KEY_NEXT_PATH, next_path)
                .ctx("write meta")?;
        }
    }
    Ok(())
}

/// A set of ids (a node's paths) as an id list, in increasing order.
fn id_set_bytes(bitmap: &RoaringBitmap) -> Vec<u8> {
    let ids: Vec<u64> = bitmap.iter().map(u64::from).collect();
    id_list::to_bytes(&ids)
}

/// How a graph table's lists are written: format 14's id lists, or an older store's u64 LE
/// lists and roaring bitmaps (read until its first write rewrites them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lists {
    Ids,
    Legacy,
}

/// The list of ids of row `id` (`what` names the table and column).
fn bytes_to_u64s(bytes: &[u8], what: &'static str, id: u64) -> Result<Vec<u64>> {
    read_list(Lists::Ids, bytes, what, id)
}

fn read_list(lists: Lists, bytes: &[u8], what: &'static str, id: u64) -> Result<Vec<u64>> {
    Ok(match lists {
        Lists::Ids => id_list::decode(what, bytes),
        Lists::Legacy => memdb_formats::u64_list(what, bytes),
    }
    .map_err(|e| StoreError::bad_row(what, id, e))?)
}

/// A set of ids as a bitmap; every id must fit it (u32).
fn read_bitmap(lists: Lists, bytes: &[u8], what: &'static str, id: u64) -> Result<RoaringBitmap> {
    match lists {
        Lists::Ids => {
            let mut bits = RoaringBitmap::new();
            for member in read_list(lists, bytes, what, id)? {
                bits.insert(bitmap_id(member, what)?);
            }
            Ok(bits)
        }
        Lists::Legacy => {
            Ok(RoaringBitmap::deserialize_from(bytes)
                .map_err(|e| StoreError::bad_row(what, id, e))?)
        }
    }
}

/// A graph id that must fit the Q-matrix bitmaps (u32).
pub(crate) fn bitmap_id(id: u64, what: &'static str) -> Result<u32> {
    Ok(u32::try_from(id).map_err(|_| StoreError::Overflow {
        what,
        value: id.to_string(),
    })?)
}

/// Read access to the graph of one snapshot. Tables missing (a store older than format 3) read
/// as an empty graph.
pub struct GraphReader<'s> {
    snapshot: &'s Snapshot,
}

impl Snapshot {
    /// The EM-Graph as of this snapshot.
    pub fn graph(&self) -> GraphReader<'_> {
        GraphReader { snapshot: self }
    }
}

impl GraphReader<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'static, K, V>,
    ) -> Result<Option<redb::ReadOnlyTable<K, V>>> {
        Ok(memdb_store::catalog::open_optional(
            self.snapshot.txn(),
            def,
        )?)
    }

    /// A table of lists: format 14's (`current`), else an older store's (`legacy`).
    fn lists_table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        current: TableDefinition<'static, K, V>,
        legacy: TableDefinition<'static, K, V>,
    ) -> Result<Option<(redb::ReadOnlyTable<K, V>, Lists)>> {
        if let Some(t) = self.table(current)? {
            return Ok(Some((t, Lists::Ids)));
        }
        Ok(self.table(legacy)?.map(|t| (t, Lists::Legacy)))
    }

    /// The node a phrase (canonical or alias) names.
    pub fn lookup(&self, phrase: &str) -> Result<Option<u64>> {
        let Some(t) = self.table(GRAPH_ALIASES)? else {
            return Ok(None);
        };
        Ok(t.get(phrase).ctx("read graph_aliases")?.map(|v| v.value()))
    }

    /// The node `text` names after normalization ([`memdb_text::normalize_phrase`]): how a
    /// person's spelling (`'Lisbon '`) finds the stored phrase (`lisbon`).
    pub fn find(&self, text: &str) -> Result<Option<u64>> {
        self.lookup(&memdb_text::normalize_phrase(text))
    }

    /// Up to `limit` stored phrases (canonical or alias) starting with `prefix`, in order.
    pub fn phrases_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        let Some(t) = self.table(GRAPH_ALIASES)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for row in t.range(prefix..).ctx("scan graph_aliases")? {
            let (phrase, _) = row.ctx("scan graph_aliases")?;
            let phrase = phrase.value();
            if !phrase.starts_with(prefix) || out.len() >= limit {
                break;
            }
            out.push(phrase.to_owned());
        }
        Ok(out)
    }

    /// Node `id`.
    pub fn node(&self, id: u64) -> Result<Option<GraphNode>> {
        let Some(t) = self.table(GRAPH_NODES)? else {
            return Ok(None);
        };
        let Some(row) = t.get(id).ctx("read graph_nodes")? else {
            return Ok(None);
        };
        let (phrase, kind, aliases) = row.value();
        let kind = NodeKind::from_code(kind)
            .ok_or_else(|| StoreError::bad_row("graph_nodes", id, format!("kind code {kind}")))?;
        Ok(Some(GraphNode {
            id,
            phrase: phrase.to_owned(),
            kind,
            aliases: aliases
                .split(ALIAS_SEPARATOR)
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect(),
        }))
    }

    /// EM-Path `id`.
    pub fn path(&self, id: u64) -> Result<Option<GraphPath>> {
        let Some((t, lists)) = self.lists_table(GRAPH_PATHS, LEGACY_GRAPH_PATHS)? else {
            return Ok(None);
        };
        let Some(row) = t.get(id).ctx("read graph.paths")? else {
            return Ok(None);
        };
        let (page, nodes, items) = row.value();
        Ok(Some(GraphPath {
            id,
            page: page.to_owned(),
            nodes: read_list(lists, nodes, "graph path nodes", id)?,
            items: read_list(lists, items, "graph path items", id)?,
        }))
    }

    /// The paths holding node `id` (a row of the Q-matrix by node).
    pub fn node_paths(&self, id: u64) -> Result<RoaringBitmap> {
        let Some((t, lists)) = self.lists_table(GRAPH_NODE_PATHS, LEGACY_GRAPH_NODE_PATHS)? else {
            return Ok(RoaringBitmap::new());
        };
        match t.get(id).ctx("read graph.node_paths")? {
            None => Ok(RoaringBitmap::new()),
            Some(raw) => read_bitmap(lists, raw.value(), "graph node paths", id),
        }
    }

    /// The nodes of path `id` (a row of the Q-matrix by path): the set of its node list.
    pub fn path_nodes(&self, id: u64) -> Result<RoaringBitmap> {
        let mut bits = RoaringBitmap::new();
        if let Some(path) = self.path(id)? {
            for node in path.nodes {
                bits.insert(bitmap_id(node, "graph path nodes")?);
            }
        }
        Ok(bits)
    }

    /// The path an item belongs to and its nodes, if the graph has seen it.
    pub fn item(&self, item: u64) -> Result<Option<(u64, Vec<u64>)>> {
        let Some((t, lists)) = self.lists_table(GRAPH_ITEMS, LEGACY_GRAPH_ITEMS)? else {
            return Ok(None);
        };
        let Some(row) = t.get(item).ctx("read graph.items")? else {
            return Ok(None);
        };
        let (path, nodes) = row.value();
        Ok(Some((
            path,
            read_list(lists, nodes, "graph item nodes", item)?,
        )))
    }

    /// The items the graph has seen.
    pub(crate) fn seen_items(&self) -> Result<BTreeSet<u64>> {
        let Some((t, _)) = self.lists_table(GRAPH_ITEMS, LEGACY_GRAPH_ITEMS)? else {
            return Ok(BTreeSet::new());
        };
        let mut out = BTreeSet::new();
        for row in t.iter().ctx("scan graph.items")? {
            out.insert(row.ctx("scan graph.items")?.0.value());
        }
        Ok(out)
    }

    /// Number of items the graph has taken (on a path or, after forgetting, on none).
    pub fn seen_count(&self) -> Result<u64> {
        let Some((t, _)) = self.lists_table(GRAPH_ITEMS, LEGACY_GRAPH_ITEMS)? else {
            return Ok(0);
        };
        Ok(t.len().ctx("count graph.items")?)
    }

    /// Number of nodes and of paths.
    pub fn counts(&self) -> Result<(u64, u64)> {
        let nodes = match self.table(GRAPH_NODES)? {
            Some(t) => t.len().ctx("count graph_nodes")?,
            None => 0,
        };
        let paths = match self.lists_table(GRAPH_PATHS, LEGACY_GRAPH_PATHS)? {
            Some((t, _)) => t.len().ctx("count graph.paths")?,
            None => 0,
        };
        Ok((nodes, paths))
    }

    /// The next node and path ids to hand out.
    pub(crate) fn next_ids(&self) -> Result<(u64, u64)> {
        let meta = self
            .snapshot
            .txn()
            .open_table(catalog::META)
            .ctx("open meta")?;
        let get = |key: &str| -> Result<u64> {
            Ok(meta.get(key).ctx("read meta")?.map_or(1, |v| v.value()))
        };
        Ok((get(catalog::KEY_NEXT_NODE)?, get(catalog::KEY_NEXT_PATH)?))
    }
}
