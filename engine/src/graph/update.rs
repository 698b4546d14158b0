//! Incremental graph update: the items the graph has not seen become nodes (Algorithm 1: a
//! phrase joins its nearest node when their cosine reaches the merge threshold, else it is a
//! new canonical node), one EM-Path per page and update, and Q-matrix rows, committed in
//! chunks — each chunk one batch, so an interrupted update loses at most the chunk in flight
//! and the next run takes up where it stopped.

use crate::handle::Store;
use std::collections::{BTreeMap, HashMap};

use memdb_vectors::dot_f32;
use roaring::RoaringBitmap;

use super::{
    DEFAULT_MERGE_THRESHOLD, Embedder, GraphNode, GraphPath, GraphWrite, NODE_VECTORS, NodeDraft,
    NodeExtractor, NodeKind, RuleExtractor, bitmap_id, embed_checked,
};
use crate::error::Result;
use memdb_store::VectorScope;

/// How [`Store::update_graph`] works.
#[derive(Debug, Clone)]
pub struct GraphOptions {
    /// Cosine at or above which a new phrase becomes an alias of an existing node.
    pub merge_threshold: f32,
    /// Items per committed chunk.
    pub chunk_items: usize,
    /// Where nodes come from (default: the rule extractor).
    pub extractor: std::sync::Arc<dyn NodeExtractor>,
    /// The precision the node space ([`NODE_VECTORS`]) is made with, at a store's first node
    /// (default i4: a node vector only decides merges and matches query phrases against a
    /// threshold, and nodes outnumber items several times over; a space keeps the precision it
    /// was made with).
    pub node_vectors: memdb_vectors::Precision,
}

impl Default for GraphOptions {
    fn default() -> Self {
        GraphOptions {
            merge_threshold: DEFAULT_MERGE_THRESHOLD,
            chunk_items: 2_000,
            extractor: std::sync::Arc::new(RuleExtractor),
            node_vectors: memdb_vectors::Precision::I4,
        }
    }
}

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphReport {
    /// Items added to the graph.
    pub items: u64,
    /// New canonical nodes.
    pub new_nodes: u64,
    /// Phrases merged into an existing node as aliases (Algorithm 1).
    pub merged: u64,
    /// New EM-Paths.
    pub new_paths: u64,
}

/// An item of the chunk in flight, on its page.
struct PageItem {
    id: u64,
    time: i64,
    source: u8,
    nodes: Vec<NodeDraft>,
}

/// A node created by the chunk in flight: found by the merge step before it is committed.
struct Fresh {
    id: u64,
    vector: Vec<f32>,
    exact: bool,
}

/// Dates and amounts are their value: `2022-05-06` and `2022-05-10` embed almost alike but
/// are different facts (ScrapMem's Appendix B: exact dates are what recall loses first), so
/// they never merge by similarity, in either direction — only an identical phrase joins them.
/// So is any phrase with a digit in it, an identifier more than a word: a camera model
/// ("fujifilm finepixs2pro" is not "fujifilm finepixs1pro"), a room, a flight, "4th" and "5th".
fn exact_node(kind: NodeKind, phrase: &str) -> bool {
    matches!(kind, NodeKind::Date | NodeKind::Amount) || phrase.bytes().any(|b| b.is_ascii_digit())
}

impl Store {
    /// Adds every item the graph has not seen to the EM-Graph, in time order: extracts its
    /// nodes, merges them into canonical nodes, writes one EM-Path per page (day) and chunk,
    /// and updates the Q-matrix. `progress` gets (items done, items to do) after each chunk.
    /// Deleted items stay in the paths that name them; readers skip them.
    pub fn update_graph(
        &self,
        embedder: &dyn Embedder,
        options: &GraphOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GraphReport> {
        let update_lock = self.extension::<crate::graph::UpdateLock>()?;
        let _graph = update_lock.hold()?;
        let snapshot = self.snapshot()?;
        let seen = snapshot.graph().seen_items()?;
        let todo: Vec<u64> = snapshot
            .scan_ids(&memdb_store::ScanFilter::default())?
            .into_iter()
            .filter(|id| !seen.contains(id))
            .collect();
        drop(snapshot);
        let total = todo.len() as u64;
        let mut report = GraphReport::default();
        for chunk in todo.chunks(options.chunk_items.max(1)) {
            self.update_chunk(embedder, options, chunk, &mut report)?;
            report.items += chunk.len() as u64;
            progress(report.items, total);
        }
        Ok(report)
    }

    fn update_chunk(
        &self,
        embedder: &dyn Embedder,
        options: &GraphOptions,
        items: &[u64],
        report: &mut GraphReport,
    ) -> Result<()> {
        let snapshot = self.snapshot()?;
        let graph = snapshot.graph();
        let (mut next_node, mut next_path) = graph.next_ids()?;

        // Pages (days) of this chunk, each with its items and their nodes in order.
        let mut pages: BTreeMap<String, Vec<PageItem>> = BTreeMap::new();
        for &id in items {
            let Some(record) = snapshot.get(id)? else {
                continue;
            };
            let fields = &record.fields;
            let day = page_key(fields.time);
            pages.entry(day).or_default().push(PageItem {
                id,
                time: fields.time.unix_ms,
                source: fields.source.code(),
                nodes: options.extractor.item_nodes(fields)?,
            });
        }

        // Resolve each distinct phrase to a node: known phrase, else merge or create.
        let mut phrase_node: HashMap<String, u64> = HashMap::new();
        let mut unknown: Vec<(String, NodeDraft, i64, u8)> = Vec::new();
        for page in pages.values() {
            for PageItem {
                time,
                source,
                nodes,
                ..
            } in page
            {
                for node in nodes {
                    if phrase_node.contains_key(&node.phrase)
                        || unknown.iter().any(|(p, ..)| *p == node.phrase)
                    {
                        continue;
                    }
                    match graph.lookup(&node.phrase)? {
                        Some(id) => {
                            phrase_node.insert(node.phrase.clone(), id);
                        }
                        None => unknown.push((node.phrase.clone(), node.clone(), *time, *source)),
                    }
                }
            }
        }
        let texts: Vec<&str> = unknown.iter().map(|(p, ..)| p.as_str()).collect();
        let vectors = embed_checked(embedder, &texts)?;
        let stored = snapshot.vectors(NODE_VECTORS)?;
        let mut fresh: Vec<Fresh> = Vec::new();
        let mut batch = self.batch();
        if stored.is_none() {
            batch.define_vectors(NODE_VECTORS, options.node_vectors);
        }
        let mut aliases_added: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        let mut new_nodes: BTreeMap<u64, GraphNode> = BTreeMap::new();
        for ((phrase, draft, time, source), vector) in unknown.into_iter().zip(vectors) {
            // Nearest committed node through the node index, nearest fresh one by a scan of
            // this chunk's new nodes (at most one chunk's worth).
            let exact = exact_node(draft.kind, &phrase);
            let mut best: Option<(u64, f32)> = None;
            if !exact
                && let Some(stored) = &stored
                && let Some(hit) = stored.search(&vector, 1, &VectorScope::all())?.first()
                && !graph
                    .node(hit.key)?
                    .is_some_and(|n| exact_node(n.kind, &n.phrase))
            {
                best = Some((hit.key, hit.score));
            }
            for f in fresh.iter().filter(|f| !exact && !f.exact) {
                let score = dot_f32(&f.vector, &vector);
                if best.is_none_or(|(_, s)| score > s) {
                    best = Some((f.id, score));
                }
            }
            match best {
                Some((node, score)) if score >= options.merge_threshold => {
                    aliases_added.entry(node).or_default().push(phrase.clone());
                    batch.derived(GraphWrite::Alias {
                        phrase: phrase.clone(),
                        node,
                    });
                    phrase_node.insert(phrase, node);
                    report.merged += 1;
                }
                _ => {
                    let id = next_node;
                    next_node += 1;
                    bitmap_id(id, "node")?;
                    batch.put_vector(NODE_VECTORS, id, time, source, vector.clone());
                    new_nodes.insert(
                        id,
                        GraphNode {
                            id,
                            phrase: phrase.clone(),
                            kind: draft.kind,
                            aliases: Vec::new(),
                        },
                    );
                    batch.derived(GraphWrite::Alias {
                        phrase: phrase.clone(),
                        node: id,
                    });
                    fresh.push(Fresh { id, vector, exact });
                    phrase_node.insert(phrase, id);
                    report.new_nodes += 1;
                }
            }
        }
        // Aliases are recorded on their node too, so a node shows what it stands for.
        for (node, added) in aliases_added {
            if let Some(n) = new_nodes.get_mut(&node) {
                n.aliases.extend(added);
            } else if let Some(mut stored_node) = graph.node(node)? {
                stored_node.aliases.extend(added);
                batch.derived(GraphWrite::Node(stored_node));
            }
        }
        for node in new_nodes.into_values() {
            batch.derived(GraphWrite::Node(node));
        }

        // One path per page; Q-matrix rows both ways. The node rows are written in node order:
        // a hash map's order changes from run to run, and with it the catalog's B-tree pages
        // (the same rows took from 64 to 71 bytes per item in the footprint bench).
        let mut node_paths: BTreeMap<u64, RoaringBitmap> = BTreeMap::new();
        for (page, entries) in pages {
            let path = next_path;
            next_path += 1;
            let path_bit = bitmap_id(path, "path")?;
            let mut order: Vec<u64> = Vec::new();
            let mut item_ids = Vec::new();
            for PageItem {
                id: item, nodes, ..
            } in &entries
            {
                let mut ids: Vec<u64> = Vec::new();
                for n in nodes {
                    if let Some(&id) = phrase_node.get(&n.phrase)
                        && !ids.contains(&id)
                    {
                        ids.push(id);
                    }
                }
                for &id in &ids {
                    if !order.contains(&id) {
                        order.push(id);
                    }
                }
                item_ids.push(*item);
                batch.derived(GraphWrite::Item {
                    item: *item,
                    path,
                    nodes: ids,
                });
            }
            for &node in &order {
                let paths = match node_paths.entry(node) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(graph.node_paths(node)?)
                    }
                };
                paths.insert(path_bit);
            }
            batch.derived(GraphWrite::Path(GraphPath {
                id: path,
                page,
                nodes: order,
                items: item_ids,
            }));
            report.new_paths += 1;
        }
        for (node, paths) in node_paths {
            batch.derived(GraphWrite::NodePaths { node, paths });
        }
        batch.derived(GraphWrite::Counters {
            next_node,
            next_path,
        });
        drop(snapshot);
        batch.commit()?;
        Ok(())
    }
}

/// The page an item's path belongs to: its local calendar day, `YYYY-MM-DD`, or `undated`
/// for items without a time (SPEC.md §5.3).
pub(crate) fn page_key(time: memdb_formats::item::EventTime) -> String {
    time.local_date()
        .map_or_else(|| UNDATED_PAGE.to_owned(), |d| d.to_string())
}

/// The page key of the paths of undated items (they have no scrapbook page).
pub(crate) const UNDATED_PAGE: &str = "undated";
