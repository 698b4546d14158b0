//! Golden test of the EM-Graph tables (SPEC.md §5.3, format version 14): a small store is
//! built with a deterministic embedder, closed, and its graph tables are read straight from
//! `catalog.redb` with the types the specification gives. Every row is checked against the
//! specification's rules (id lists decoded here from §5.3's text, the Q-matrix agreeing both
//! ways, aliases joined by U+001F) and the whole dump, bytes included, must equal
//! `golden/graph-v14/tables.txt`. A change here is a format change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fmt::Write as _;
use std::path::PathBuf;

use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store, graph::GraphOptions};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

mod common;
use common::LetterEmbedder;

const NODES: TableDefinition<u64, (&str, u8, &str)> = TableDefinition::new("graph_nodes");
const ALIASES: TableDefinition<&str, u64> = TableDefinition::new("graph_aliases");
const PATHS: TableDefinition<u64, (&str, &[u8], &[u8])> = TableDefinition::new("graph.paths");
const NODE_PATHS: TableDefinition<u64, &[u8]> = TableDefinition::new("graph.node_paths");
const ITEMS: TableDefinition<u64, (u64, &[u8])> = TableDefinition::new("graph.items");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

fn item(time: &str, speaker: &str, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(Source::Chat, EventTime::parse(time).unwrap());
    f.speaker = Some(speaker.into());
    f.body = Some(body.into());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

/// An id list as SPEC.md §5.3 writes it: a LEB128 count, then each id's zigzag difference from
/// the one before (from 0) as LEB128, nothing after.
fn ids(bytes: &[u8]) -> Vec<u64> {
    let mut at = 0;
    let mut leb = || {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = bytes[at];
            at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    };
    let count = leb();
    let mut out = Vec::new();
    let mut previous = 0u64;
    for _ in 0..count {
        let z = leb();
        let delta = if z & 1 == 0 { z >> 1 } else { !(z >> 1) };
        previous = previous.wrapping_add(delta);
        out.push(previous);
    }
    assert_eq!(at, bytes.len(), "nothing after the last id");
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn graph_tables_match_the_spec_and_the_golden_dump() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut batch = store.batch();
        batch.put(item(
            "2023-05-08T10:00:00+00:00",
            "Caroline",
            "I joined a pottery class in Lisbon.",
        ));
        batch.put(item(
            "2023-05-08T11:00:00+00:00",
            "Mel",
            "Paid $25 for pottery classes.",
        ));
        batch.put(item(
            "2023-06-01T09:00:00+02:00",
            "Caroline",
            "Lisbon again on 3 June 2023.",
        ));
        batch.commit().unwrap();
        store
            .update_graph(&LetterEmbedder, &GraphOptions::default(), &mut |_, _| {})
            .unwrap();
    }
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    assert_eq!(meta.get("format_version").unwrap().unwrap().value(), 20);
    let tables: Vec<String> = txn
        .list_tables()
        .unwrap()
        .map(|t| redb::TableHandle::name(&t).to_owned())
        .collect();
    for old in [
        "graph_paths",
        "graph_node_paths",
        "graph_path_nodes",
        "graph_items",
    ] {
        assert!(!tables.contains(&old.to_owned()), "{old} in {tables:?}");
    }
    let next_node = meta.get("next_graph_node_id").unwrap().unwrap().value();
    let next_path = meta.get("next_graph_path_id").unwrap().unwrap().value();

    let mut dump = String::new();
    writeln!(
        dump,
        "next_graph_node_id {next_node}\nnext_graph_path_id {next_path}"
    )
    .unwrap();
    let nodes = txn.open_table(NODES).unwrap();
    let aliases = txn.open_table(ALIASES).unwrap();
    let node_paths = txn.open_table(NODE_PATHS).unwrap();
    for (expect, row) in (1..next_node).zip(nodes.iter().unwrap()) {
        let (id, value) = row.unwrap();
        let (phrase, kind, alias_list) = value.value();
        assert_eq!(id.value(), expect, "node ids are dense from 1");
        assert!(kind <= 4, "kind codes 0..=4");
        assert_eq!(phrase, phrase.to_lowercase());
        assert_eq!(aliases.get(phrase).unwrap().unwrap().value(), id.value());
        for alias in alias_list.split('\u{1f}').filter(|a| !a.is_empty()) {
            assert_eq!(
                aliases.get(alias).unwrap().unwrap().value(),
                id.value(),
                "{alias}"
            );
        }
        let row = node_paths.get(id.value()).unwrap().unwrap();
        let paths = ids(row.value());
        assert!(
            paths.windows(2).all(|w| w[0] < w[1]),
            "a node's paths increase"
        );
        writeln!(
            dump,
            "node {} {phrase:?} kind {kind} aliases {:?} paths {paths:?} bytes {}",
            id.value(),
            alias_list,
            hex(row.value())
        )
        .unwrap();
    }
    let paths = txn.open_table(PATHS).unwrap();
    for (expect, row) in (1..next_path).zip(paths.iter().unwrap()) {
        let (id, value) = row.unwrap();
        let (page, node_bytes, item_bytes) = value.value();
        assert_eq!(id.value(), expect, "path ids are dense from 1");
        let listed = ids(node_bytes);
        for n in &listed {
            let of_node = ids(node_paths.get(*n).unwrap().unwrap().value());
            assert!(of_node.contains(&id.value()), "Q-matrix agrees both ways");
        }
        writeln!(
            dump,
            "path {} page {page} nodes {listed:?} items {:?} nodes_hex {} items_hex {}",
            id.value(),
            ids(item_bytes),
            hex(node_bytes),
            hex(item_bytes),
        )
        .unwrap();
    }
    let items = txn.open_table(ITEMS).unwrap();
    for row in items.iter().unwrap() {
        let (id, value) = row.unwrap();
        let (path_id, node_bytes) = value.value();
        writeln!(
            dump,
            "item {} path {path_id} nodes {:?} bytes {}",
            id.value(),
            ids(node_bytes),
            hex(node_bytes)
        )
        .unwrap();
    }

    // The day of an item is its local day: the 2023-06-01T09:00+02:00 item is on 2023-06-01.
    assert!(
        dump.contains("page 2023-05-08") && dump.contains("page 2023-06-01"),
        "{dump}"
    );
    // Algorithm 1 merged the plural into the singular.
    assert!(dump.contains("aliases \"pottery classes\""), "{dump}");

    let golden =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/graph-v14/tables.txt");
    assert_eq!(
        dump,
        std::fs::read_to_string(&golden).unwrap(),
        "graph tables changed: a format change"
    );
}
