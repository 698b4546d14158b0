//! Golden test of the EM-Graph tables (SPEC.md §5.3, format version 3): a small store is built
//! with a deterministic embedder, closed, and its `graph_*` tables are read straight from
//! `catalog.redb` with the types the specification gives. Every row is checked against the
//! specification's rules (u64 LE lists, portable roaring bitmaps agreeing both ways, aliases
//! joined by U+001F) and the whole dump must equal `golden/graph-v3/tables.txt` (written when
//! missing). A change here is a format change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fmt::Write as _;
use std::path::PathBuf;

use memdb::{Embedder, EventTime, GraphOptions, ItemDraft, ItemFields, Options, Source, Store};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use roaring::RoaringBitmap;

const NODES: TableDefinition<u64, (&str, u8, &str)> = TableDefinition::new("graph_nodes");
const ALIASES: TableDefinition<&str, u64> = TableDefinition::new("graph_aliases");
const PATHS: TableDefinition<u64, (&str, &[u8], &[u8])> = TableDefinition::new("graph_paths");
const NODE_PATHS: TableDefinition<u64, &[u8]> = TableDefinition::new("graph_node_paths");
const PATH_NODES: TableDefinition<u64, &[u8]> = TableDefinition::new("graph_path_nodes");
const ITEMS: TableDefinition<u64, (u64, &[u8])> = TableDefinition::new("graph_items");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Letters to one-hot dimensions, so "pottery class" and "pottery classes" (same letters set
/// but for `e`) land close and everything else apart.
struct LetterEmbedder;

impl Embedder for LetterEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = [0f32; 27];
                for c in t.chars().filter(char::is_ascii_lowercase) {
                    v[(c as u8 - b'a') as usize] += 1.0;
                }
                v[26] = 0.1;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

fn item(time: &str, speaker: &str, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(Source::Chat, EventTime::parse(time).unwrap());
    f.speaker = Some(speaker.into());
    f.body = Some(body.into());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

fn u64s(bytes: &[u8]) -> Vec<u64> {
    assert_eq!(bytes.len() % 8, 0, "a u64 list is a multiple of 8 bytes");
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
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
    assert_eq!(meta.get("format_version").unwrap().unwrap().value(), 12);
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
        let bitmap = node_paths.get(id.value()).unwrap().unwrap();
        let paths = RoaringBitmap::deserialize_from(bitmap.value()).unwrap();
        writeln!(
            dump,
            "node {} {phrase:?} kind {kind} aliases {:?} paths {:?} bytes {}",
            id.value(),
            alias_list,
            paths.iter().collect::<Vec<_>>(),
            hex(bitmap.value())
        )
        .unwrap();
    }
    let paths = txn.open_table(PATHS).unwrap();
    let path_nodes = txn.open_table(PATH_NODES).unwrap();
    for (expect, row) in (1..next_path).zip(paths.iter().unwrap()) {
        let (id, value) = row.unwrap();
        let (page, node_bytes, item_bytes) = value.value();
        assert_eq!(id.value(), expect, "path ids are dense from 1");
        let listed = u64s(node_bytes);
        let bitmap = path_nodes.get(id.value()).unwrap().unwrap();
        let held = RoaringBitmap::deserialize_from(bitmap.value()).unwrap();
        let mut sorted: Vec<u32> = listed.iter().map(|&n| n as u32).collect();
        sorted.sort_unstable();
        assert_eq!(
            held.iter().collect::<Vec<_>>(),
            sorted,
            "path_nodes = the path's node list"
        );
        for n in &listed {
            let of_node =
                RoaringBitmap::deserialize_from(node_paths.get(*n).unwrap().unwrap().value())
                    .unwrap();
            assert!(
                of_node.contains(id.value() as u32),
                "Q-matrix agrees both ways"
            );
        }
        writeln!(
            dump,
            "path {} page {page} nodes {listed:?} items {:?} nodes_hex {} items_hex {} bitmap {}",
            id.value(),
            u64s(item_bytes),
            hex(node_bytes),
            hex(item_bytes),
            hex(bitmap.value())
        )
        .unwrap();
    }
    let items = txn.open_table(ITEMS).unwrap();
    for row in items.iter().unwrap() {
        let (id, value) = row.unwrap();
        let (path_id, node_bytes) = value.value();
        writeln!(
            dump,
            "item {} path {path_id} nodes {:?}",
            id.value(),
            u64s(node_bytes)
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

    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/graph-v3/tables.txt");
    if !golden.exists() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &dump).unwrap();
    }
    assert_eq!(
        dump,
        std::fs::read_to_string(&golden).unwrap(),
        "graph tables changed: a format change"
    );
}
