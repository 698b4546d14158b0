//! Deleting items from the EM-Graph inside the batch that deletes them, so a deleted item's
//! words do not outlive it in the catalog (reliability R12).
//!
//! For each deleted item the graph has seen: its `graph_items` row goes; its path loses it and
//! the path's node list is recomputed from the items that remain (order of first mention kept),
//! and both Q-matrix rows follow; a path left without items is removed; a node left in no path
//! is purged with its phrase, its aliases and its vector.
//!
//! Known limit: an alias phrase contributed by a deleted item to a node that other items still
//! use stays (aliases do not record which item brought them); forgetting's graph pruning
//! (Algorithm 2) is where provenance would be kept.

use std::collections::BTreeSet;

use redb::{ReadableTable, TableHandle};
use roaring::RoaringBitmap;

use super::{
    GRAPH_ALIASES, GRAPH_ITEMS, GRAPH_NODE_PATHS, GRAPH_NODES, GRAPH_PATH_NODES, GRAPH_PATHS,
    bitmap_bytes, bitmap_id, bytes_to_u64s, u64s_to_bytes,
};
use crate::error::{CatalogResult, Error, Result};

/// Which tables exist: a store that never built a graph has none and nothing to forget.
fn has_graph(txn: &redb::WriteTransaction) -> Result<bool> {
    let tables: Vec<String> = txn
        .list_tables()
        .ctx("list tables")?
        .map(|t| t.name().to_owned())
        .collect();
    Ok(tables.iter().any(|t| t == GRAPH_ITEMS.name()))
}

fn read_bitmap(
    table: &redb::Table<'_, u64, &'static [u8]>,
    id: u64,
    what: &str,
) -> Result<RoaringBitmap> {
    match table.get(id).ctx("read a graph bitmap")? {
        None => Ok(RoaringBitmap::new()),
        Some(raw) => RoaringBitmap::deserialize_from(raw.value())
            .map_err(|e| Error::Inconsistent(format!("{what}[{id}]: {e}"))),
    }
}

/// Removes `items` from the graph; returns the node ids purged (their vectors must go too).
pub(crate) fn forget_items(txn: &redb::WriteTransaction, items: &[u64]) -> Result<Vec<u64>> {
    if items.is_empty() || !has_graph(txn)? {
        return Ok(Vec::new());
    }
    let mut graph_items = txn.open_table(GRAPH_ITEMS).ctx("open graph_items")?;
    let mut paths = txn.open_table(GRAPH_PATHS).ctx("open graph_paths")?;
    let mut path_nodes = txn
        .open_table(GRAPH_PATH_NODES)
        .ctx("open graph_path_nodes")?;
    let mut node_paths = txn
        .open_table(GRAPH_NODE_PATHS)
        .ctx("open graph_node_paths")?;
    let mut nodes = txn.open_table(GRAPH_NODES).ctx("open graph_nodes")?;
    let mut aliases = txn.open_table(GRAPH_ALIASES).ctx("open graph_aliases")?;

    let mut touched_nodes: BTreeSet<u64> = BTreeSet::new();
    for &item in items {
        let Some(path_id) = graph_items
            .remove(item)
            .ctx("remove graph_items")?
            .map(|row| row.value().0)
        else {
            continue;
        };
        let Some((page, old_nodes, path_items)) =
            paths.get(path_id).ctx("read graph_paths")?.map(|row| {
                let (page, n, i) = row.value();
                (page.to_owned(), n.to_vec(), i.to_vec())
            })
        else {
            continue;
        };
        let old_nodes = bytes_to_u64s(&old_nodes, "graph path nodes")?;
        let remaining: Vec<u64> = bytes_to_u64s(&path_items, "graph path items")?
            .into_iter()
            .filter(|&i| i != item)
            .collect();
        // The path's nodes are those of its remaining items, in order of first mention.
        let mut new_nodes: Vec<u64> = Vec::new();
        for &other in &remaining {
            if let Some(row) = graph_items.get(other).ctx("read graph_items")? {
                for n in bytes_to_u64s(row.value().1, "graph item nodes")? {
                    if !new_nodes.contains(&n) {
                        new_nodes.push(n);
                    }
                }
            }
        }
        let path_bit = bitmap_id(path_id, "path")?;
        for &n in old_nodes.iter().filter(|n| !new_nodes.contains(n)) {
            let mut row = read_bitmap(&node_paths, n, "graph_node_paths")?;
            row.remove(path_bit);
            node_paths
                .insert(n, bitmap_bytes(&row)?.as_slice())
                .ctx("write graph_node_paths")?;
            touched_nodes.insert(n);
        }
        if remaining.is_empty() {
            paths.remove(path_id).ctx("remove graph_paths")?;
            path_nodes.remove(path_id).ctx("remove graph_path_nodes")?;
        } else {
            paths
                .insert(
                    path_id,
                    (
                        page.as_str(),
                        u64s_to_bytes(&new_nodes).as_slice(),
                        u64s_to_bytes(&remaining).as_slice(),
                    ),
                )
                .ctx("write graph_paths")?;
            let mut bits = RoaringBitmap::new();
            for &n in &new_nodes {
                bits.insert(bitmap_id(n, "node")?);
            }
            path_nodes
                .insert(path_id, bitmap_bytes(&bits)?.as_slice())
                .ctx("write graph_path_nodes")?;
        }
    }

    let mut purged = Vec::new();
    for n in touched_nodes {
        if !read_bitmap(&node_paths, n, "graph_node_paths")?.is_empty() {
            continue;
        }
        node_paths.remove(n).ctx("remove graph_node_paths")?;
        let row = nodes.remove(n).ctx("remove graph_nodes")?.map(|r| {
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
                let ours = aliases
                    .get(name)
                    .ctx("read graph_aliases")?
                    .is_some_and(|v| v.value() == n);
                if ours {
                    aliases.remove(name).ctx("remove graph_aliases")?;
                }
            }
        }
        purged.push(n);
    }
    Ok(purged)
}
