//! Taking things out of the EM-Graph: items deleted by a batch (reliability R12: a deleted
//! item's words do not outlive it in the catalog), and nodes faded by forgetting (ScrapMem
//! Algorithm 2).
//!
//! Deletion: for each deleted item the graph has seen, its `graph.items` row goes; its path
//! loses it and the path's node list is recomputed from the items that remain (order of first
//! mention kept), and the nodes' rows of the Q-matrix follow; a path left without items is
//! removed; a node left in no path is purged with its phrase, its aliases and its vector.
//!
//! Fading: nodes no longer legible leave their items' rows — which turn or photo showed them is
//! forgotten — but stay on their paths: the day keeps its gist (the Q-matrix row of its path,
//! the nodes' phrases and vectors), so a question about it still finds the day and, through the
//! path's score and the conversation context, its items. This departs from Algorithm 2, which
//! also clears the path's bits and prunes paths left incoherent: measured on LoCoMo with every
//! page Old (bench `footprint`, stress row), that lost 3.3 points of R@10 for 15 % of the
//! store, where keeping the gist loses none (issue 26). A path's nodes are then its items'
//! nodes plus its gist; deleting any of its items recomputes them from the items that remain,
//! so the gist goes with it (which item a gist node came from is not kept, and a deleted item's
//! words must not outlive it). A store forgotten by an earlier memdb was pruned the old way:
//! the items of its pruned paths sit on path 0, and what it purged stays lost.
//!
//! Known limit: an alias phrase contributed by a deleted item to a node that other items still
//! use stays (aliases do not record which item brought them).

use std::collections::{BTreeMap, BTreeSet};

use redb::{ReadableTable, TableHandle};
use roaring::RoaringBitmap;

use memdb_formats::id_list;

use super::{
    GRAPH_ALIASES, GRAPH_ITEMS, GRAPH_NODE_PATHS, GRAPH_NODES, GRAPH_PATHS, Lists, bitmap_id,
    bytes_to_u64s, id_set_bytes, read_bitmap,
};
use crate::error::Result;
use memdb_store::CatalogResult;

/// Which tables exist: a store that never built a graph has none and nothing to forget.
fn has_graph(txn: &redb::WriteTransaction) -> Result<bool> {
    Ok(memdb_store::catalog::has_table(txn, GRAPH_ITEMS.name())?)
}

/// The graph tables, open for writing.
struct GraphTables<'t> {
    items: redb::Table<'t, u64, (u64, &'static [u8])>,
    paths: redb::Table<'t, u64, (&'static str, &'static [u8], &'static [u8])>,
    node_paths: redb::Table<'t, u64, &'static [u8]>,
    nodes: redb::Table<'t, u64, (&'static str, u8, &'static str)>,
    aliases: redb::Table<'t, &'static str, u64>,
}

/// A path as stored: page, nodes, items.
type PathRow = (String, Vec<u64>, Vec<u64>);

impl<'t> GraphTables<'t> {
    fn open(txn: &'t redb::WriteTransaction) -> Result<GraphTables<'t>> {
        Ok(GraphTables {
            items: txn.open_table(GRAPH_ITEMS).ctx("open graph.items")?,
            paths: txn.open_table(GRAPH_PATHS).ctx("open graph.paths")?,
            node_paths: txn
                .open_table(GRAPH_NODE_PATHS)
                .ctx("open graph.node_paths")?,
            nodes: txn.open_table(GRAPH_NODES).ctx("open graph_nodes")?,
            aliases: txn.open_table(GRAPH_ALIASES).ctx("open graph_aliases")?,
        })
    }

    fn node_paths_of(&self, id: u64) -> Result<RoaringBitmap> {
        match self.node_paths.get(id).ctx("read graph.node_paths")? {
            None => Ok(RoaringBitmap::new()),
            Some(raw) => read_bitmap(Lists::Ids, raw.value(), "graph node paths", id),
        }
    }

    fn path(&self, id: u64) -> Result<Option<PathRow>> {
        let Some(row) = self.paths.get(id).ctx("read graph.paths")? else {
            return Ok(None);
        };
        let (page, nodes, items) = row.value();
        Ok(Some((
            page.to_owned(),
            bytes_to_u64s(nodes, "graph path nodes", id)?,
            bytes_to_u64s(items, "graph path items", id)?,
        )))
    }

    /// The nodes `items` still have, in order of first mention.
    fn nodes_of(&self, items: &[u64]) -> Result<Vec<u64>> {
        let mut out: Vec<u64> = Vec::new();
        for &item in items {
            if let Some(row) = self.items.get(item).ctx("read graph.items")? {
                for n in bytes_to_u64s(row.value().1, "graph item nodes", item)? {
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Rewrites path `id` (which held `old_nodes`) to hold `new` = (nodes, items), or removes
    /// it for `None`; clears its bit from every node that left it and adds those to `touched`.
    fn rewrite_path(
        &mut self,
        id: u64,
        page: &str,
        old_nodes: &[u64],
        new: Option<(&[u64], &[u64])>,
        touched: &mut BTreeSet<u64>,
    ) -> Result<()> {
        let path_bit = bitmap_id(id, "path")?;
        let kept: &[u64] = new.map_or(&[], |(nodes, _)| nodes);
        for &n in old_nodes.iter().filter(|n| !kept.contains(n)) {
            let mut row = self.node_paths_of(n)?;
            row.remove(path_bit);
            self.node_paths
                .insert(n, id_set_bytes(&row).as_slice())
                .ctx("write graph.node_paths")?;
            touched.insert(n);
        }
        match new {
            None => {
                self.paths.remove(id).ctx("remove graph.paths")?;
            }
            Some((nodes, items)) => {
                self.paths
                    .insert(
                        id,
                        (
                            page,
                            id_list::to_bytes(nodes).as_slice(),
                            id_list::to_bytes(items).as_slice(),
                        ),
                    )
                    .ctx("write graph.paths")?;
            }
        }
        Ok(())
    }

    /// Purges every node of `touched` left in no path, with its phrase and aliases; returns
    /// the ids purged (their vectors must go too).
    fn purge_orphans(&mut self, touched: BTreeSet<u64>) -> Result<Vec<u64>> {
        let mut purged = Vec::new();
        for n in touched {
            if !self.node_paths_of(n)?.is_empty() {
                continue;
            }
            self.node_paths.remove(n).ctx("remove graph.node_paths")?;
            let row = self.nodes.remove(n).ctx("remove graph_nodes")?.map(|r| {
                let (phrase, _, alias_list) = r.value();
                (phrase.to_owned(), alias_list.to_owned())
            });
            if let Some((phrase, alias_list)) = row {
                let names = std::iter::once(phrase.as_str()).chain(
                    alias_list
                        .split(super::ALIAS_SEPARATOR)
                        .filter(|a| !a.is_empty()),
                );
                for name in names {
                    let ours = self
                        .aliases
                        .get(name)
                        .ctx("read graph_aliases")?
                        .is_some_and(|v| v.value() == n);
                    if ours {
                        self.aliases.remove(name).ctx("remove graph_aliases")?;
                    }
                }
            }
            purged.push(n);
        }
        Ok(purged)
    }
}

/// Removes `items` from the graph; returns the node ids purged (their vectors must go too).
/// Each touched path's nodes are recomputed from its remaining items, which drops its gist.
pub(crate) fn remove_items(txn: &redb::WriteTransaction, items: &[u64]) -> Result<Vec<u64>> {
    if items.is_empty() || !has_graph(txn)? {
        return Ok(Vec::new());
    }
    let mut g = GraphTables::open(txn)?;
    let mut touched = BTreeSet::new();
    for &item in items {
        let Some(path_id) = g
            .items
            .remove(item)
            .ctx("remove graph.items")?
            .map(|row| row.value().0)
        else {
            continue;
        };
        let Some((page, old_nodes, path_items)) = g.path(path_id)? else {
            continue;
        };
        let remaining: Vec<u64> = path_items.into_iter().filter(|&i| i != item).collect();
        let new_nodes = g.nodes_of(&remaining)?;
        let new = (!remaining.is_empty()).then_some((new_nodes.as_slice(), remaining.as_slice()));
        g.rewrite_path(path_id, &page, &old_nodes, new, &mut touched)?;
    }
    g.purge_orphans(touched)
}

/// ScrapMem's Algorithm 2, with the day's gist kept: the nodes in `lost` (by item) are no
/// longer perceivable on their items' pages and leave those items' rows; their paths keep them.
/// Returns the (item, node) incidences removed. See the module header.
pub(crate) fn fade_nodes(
    txn: &redb::WriteTransaction,
    lost: &BTreeMap<u64, BTreeSet<u64>>,
) -> Result<u64> {
    let mut incidences = 0;
    if lost.is_empty() || !has_graph(txn)? {
        return Ok(incidences);
    }
    let mut g = GraphTables::open(txn)?;
    for (&item, gone) in lost {
        let Some((path, item_nodes)) = g
            .items
            .get(item)
            .ctx("read graph.items")?
            .map(|row| (row.value().0, row.value().1.to_vec()))
        else {
            continue;
        };
        let item_nodes = bytes_to_u64s(&item_nodes, "graph item nodes", item)?;
        let kept: Vec<u64> = item_nodes
            .iter()
            .copied()
            .filter(|n| !gone.contains(n))
            .collect();
        if kept.len() == item_nodes.len() {
            continue;
        }
        incidences += (item_nodes.len() - kept.len()) as u64;
        g.items
            .insert(item, (path, id_list::to_bytes(&kept).as_slice()))
            .ctx("write graph.items")?;
    }
    Ok(incidences)
}
