//! Upgrades of layouts made from a current store (SPEC.md §10), beside the compat goldens of
//! real old stores. Format version 6 added the `history`, `dropped_blobs` and `stale_pages`
//! tables: a version-5 store — the same catalog without them, `format_version` 5 — is read as
//! one with no history, nothing dropped and no stale page, changes nothing while only read,
//! and becomes current at its first write, after which updates keep their old versions.
//! Version 8 added `memory_ops`; version 10 dropped `by_time` and moved the one-row-per-op
//! `oplog` into `op_batches` (one row per batch); version 12 writes compressed item records
//! (version 3) beside version 2; version 14 keeps the graph's lists as varint id lists.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store};

use redb::{ReadableDatabase, TableDefinition, TableHandle};

mod common;
use common::LetterEmbedder;

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const ADDED_IN_6: [&str; 3] = ["history", "dropped_blobs", "stale_pages"];

fn note(ext: &str, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(
        Source::Note,
        EventTime::parse("2024-03-04T09:00:00+01:00").unwrap(),
    );
    f.external_id = Some(ext.into());
    f.body = Some(body.into());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

const OPLOG: TableDefinition<u64, (u8, u64, i64)> = TableDefinition::new("oplog");
const OP_BATCHES: TableDefinition<u64, (i64, &[u8])> = TableDefinition::new("op_batches");
const BY_TIME: TableDefinition<(i64, u64), ()> = TableDefinition::new("by_time");
const BY_SOURCE: TableDefinition<(u8, i64, u64), ()> = TableDefinition::new("by_source");
/// The format version this build writes.
const CURRENT: u64 = 20;

/// One logged op: (sequence, op code, item id).
type Op = (u64, u8, u64);

/// The ops of an `op_batches` row (SPEC.md §5: per op its code and LEB128 item id).
fn unpack_ops(first: u64, mut packed: &[u8]) -> Vec<Op> {
    let mut out = Vec::new();
    while let Some((&op, rest)) = packed.split_first() {
        let (mut item, mut shift, mut used) = (0u64, 0, 0);
        for &b in rest {
            used += 1;
            item |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        out.push((first + out.len() as u64, op, item));
        packed = &rest[used..];
    }
    out
}

/// Rewrites a current store's catalog in the version-8 layout (`by_time` beside `by_source`,
/// the op log one row per op in `oplog`), version 8.
fn make_version_8(path: &std::path::Path) {
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let batches = txn.open_table(OP_BATCHES).unwrap();
        let mut oplog = txn.open_table(OPLOG).unwrap();
        for row in redb::ReadableTable::iter(&batches).unwrap() {
            let (first, value) = row.unwrap();
            let (at, packed) = value.value();
            for (seq, op, item) in unpack_ops(first.value(), packed) {
                oplog.insert(seq, (op, item, at)).unwrap();
            }
        }
        let by_source = txn.open_table(BY_SOURCE).unwrap();
        let mut by_time = txn.open_table(BY_TIME).unwrap();
        for row in redb::ReadableTable::iter(&by_source).unwrap() {
            let (_, ms, id) = row.unwrap().0.value();
            by_time.insert((ms, id), ()).unwrap();
        }
    }
    assert!(txn.delete_table(OP_BATCHES).unwrap());
    txn.open_table(META)
        .unwrap()
        .insert("format_version", 8)
        .unwrap();
    txn.commit().unwrap();
}

fn catalog_state(path: &std::path::Path) -> (u64, Vec<String>) {
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let version = txn
        .open_table(META)
        .unwrap()
        .get("format_version")
        .unwrap()
        .unwrap()
        .value();
    let tables = txn
        .list_tables()
        .unwrap()
        .map(|t| t.name().to_owned())
        .collect();
    (version, tables)
}

/// A new store at `path` holding one note (`n1`), closed.
fn store_with_one_note(path: &std::path::Path) {
    let store = Store::create(path, Options::default()).unwrap();
    let mut b = store.batch();
    b.put(note("n1", "Dentist on Tuesday"));
    b.commit().unwrap();
}

#[test]
fn a_version_5_store_is_read_as_it_is_and_upgraded_at_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    store_with_one_note(&path);
    // Make it the version-5 layout: no tables of version 6, version 5.
    make_version_8(&path);
    {
        let db = redb::Database::open(path.join("catalog.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        for name in ADDED_IN_6 {
            let def: TableDefinition<&str, u64> = TableDefinition::new(name);
            assert!(txn.delete_table(def).is_ok());
        }
        txn.open_table(META)
            .unwrap()
            .insert("format_version", 5)
            .unwrap();
        txn.commit().unwrap();
    }
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, 5);
    assert!(ADDED_IN_6.iter().all(|t| !tables.contains(&t.to_string())));

    // Read-only: everything reads, nothing changes.
    {
        let store = Store::open_read_only(&path, Options::default()).unwrap();
        let snap = store.snapshot().unwrap();
        let item = snap.get_by_external_id("n1").unwrap().unwrap();
        assert!(snap.versions(item.id).unwrap().is_empty());
        assert!(snap.dropped_blobs(item.id).unwrap().is_empty());
        assert!(store.check().unwrap().is_clean());
    }
    assert_eq!(catalog_state(&path).0, 5);

    // The first write upgrades; the update it makes keeps the old version.
    {
        let store = Store::open(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(note("n1", "Cancelled the dentist; skiing in Chamonix"));
        b.commit().unwrap();
        let snap = store.snapshot().unwrap();
        let item = snap.get_by_external_id("n1").unwrap().unwrap();
        let versions = snap.versions(item.id).unwrap();
        assert_eq!(versions.len(), 1);
        assert_eq!(
            versions[0].record.fields.body.as_deref(),
            Some("Dentist on Tuesday")
        );
        assert!(store.check().unwrap().is_clean());
    }
    // The first write makes it the current version.
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, CURRENT);
    assert!(ADDED_IN_6.iter().all(|t| tables.contains(&t.to_string())));
}

const ADDED_IN_8: [&str; 2] = ["memory_ops", "valid_time"];
/// A `memory_ops` row (SPEC.md §5): op, system ms, valid ms, reason, actor, role.
type MemoryOpRow = (u8, i64, i64, &'static str, &'static str, &'static str);

#[test]
fn a_version_7_store_is_read_as_it_is_and_its_first_write_copies_the_op_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let first = {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(note("n1", "Dentist on Tuesday"));
        b.put(note("n2", "Lunch with Ana"));
        let id = b.commit().unwrap().puts[0].id;
        let mut b = store.batch();
        b.put(note("n1", "Dentist moved to Wednesday"));
        b.commit().unwrap();
        id
    };
    // Make it the version-7 layout: no tables of version 8, version 7.
    make_version_8(&path);
    {
        let db = redb::Database::open(path.join("catalog.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let memory_ops: TableDefinition<(u64, u64), MemoryOpRow> =
            TableDefinition::new(ADDED_IN_8[0]);
        assert!(txn.delete_table(memory_ops).is_ok());
        let valid_time: TableDefinition<(u64, u64), (i64, i64, i64)> =
            TableDefinition::new(ADDED_IN_8[1]);
        assert!(txn.delete_table(valid_time).is_ok());
        txn.open_table(META)
            .unwrap()
            .insert("format_version", 7)
            .unwrap();
        txn.commit().unwrap();
    }
    assert_eq!(catalog_state(&path).0, 7);

    // Read-only: the log reads from `oplog`, versions have default valid times.
    {
        let store = Store::open_read_only(&path, Options::default()).unwrap();
        let snap = store.snapshot().unwrap();
        let log = snap.op_log(None).unwrap();
        assert_eq!(log.len(), 3);
        let history = snap.history(first).unwrap();
        assert_eq!(history.versions.len(), 2);
        assert!(history.ops.is_empty(), "no memory_ops table yet");
        let old = &history.versions[0];
        assert_eq!(
            old.valid_to_ms, old.system_to_ms,
            "an earlier version ends when replaced"
        );
        assert!(store.check().unwrap().is_clean());
    }
    assert_eq!(catalog_state(&path).0, 7);

    // The first write upgrades and copies the log; the delete it makes keeps the versions.
    {
        let store = Store::open(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.delete(first);
        b.commit().unwrap();
        let snap = store.snapshot().unwrap();
        let history = snap.history(first).unwrap();
        assert_eq!(history.versions.len(), 2);
        assert!(history.versions.iter().all(|v| v.system_to_ms.is_some()));
        let kinds: Vec<_> = history.ops.iter().map(|o| o.kind).collect();
        assert_eq!(
            kinds,
            [
                memdb::memory::MemoryOpKind::Add,
                memdb::memory::MemoryOpKind::Update,
                memdb::memory::MemoryOpKind::Delete
            ]
        );
        assert!(store.check().unwrap().is_clean());
    }
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, CURRENT);
    assert!(ADDED_IN_8.iter().all(|t| tables.contains(&t.to_string())));
}

#[test]
fn a_version_8_store_is_read_through_its_old_indexes_and_slimmed_at_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    // The later item is in the source with the lower code (chat before note), so only a
    // merge of the sources' ranges puts the note first; a third item, purged, leaves no ops
    // by memory, which the upgrade must not bring back from `oplog`.
    let chat = |ext: &str, body: &str| {
        let mut d = note(ext, body);
        d.fields.source = Source::Chat;
        d.fields.time = EventTime::parse("2024-03-05T12:00:00+01:00").unwrap();
        d
    };
    let (dentist, lunch, purged) = {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(chat("n1", "Dentist on Tuesday"));
        b.put(note("n2", "Lunch with Ana"));
        b.put(note("n9", "A note to purge"));
        let puts = b.commit().unwrap().puts;
        let mut b = store.batch();
        b.put(chat("n1", "Dentist moved to Wednesday"));
        b.purge(puts[2].id);
        b.commit().unwrap();
        (puts[0].id, puts[1].id, puts[2].id)
    };
    make_version_8(&path);
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, 8);
    assert!(tables.contains(&"by_time".to_owned()) && tables.contains(&"oplog".to_owned()));
    assert!(!tables.contains(&"op_batches".to_owned()));

    let expect_reads = |store: &Store| {
        let snap = store.snapshot().unwrap();
        // Time order across sources (the chat item is a day earlier).
        let ids = snap.scan_ids(&memdb::ScanFilter::default()).unwrap();
        assert_eq!(ids, [lunch, dentist]);
        let first = memdb::ScanFilter {
            limit: Some(1),
            ..memdb::ScanFilter::default()
        };
        assert_eq!(snap.scan_ids(&first).unwrap(), [lunch]);
        assert!(snap.history(purged).unwrap().ops.is_empty());
        let (first, last) = snap.time_span().unwrap().unwrap();
        assert!(first < last);
        let log: Vec<(memdb::memory::MemoryOpKind, u64)> = snap
            .op_log(None)
            .unwrap()
            .iter()
            .map(|o| (o.kind, o.memory_id))
            .collect();
        assert_eq!(
            log,
            [
                (memdb::memory::MemoryOpKind::Add, dentist),
                (memdb::memory::MemoryOpKind::Add, lunch),
                (memdb::memory::MemoryOpKind::Add, purged),
                (memdb::memory::MemoryOpKind::Update, dentist),
                (memdb::memory::MemoryOpKind::Purge, purged),
            ]
        );
        assert!(store.check().unwrap().is_clean());
    };
    // Read-only: read through `by_source` and `oplog`; nothing changes.
    expect_reads(&Store::open_read_only(&path, Options::default()).unwrap());
    assert_eq!(catalog_state(&path).0, 8);

    // The first write moves the log and drops the old tables; everything reads the same.
    {
        let store = Store::open(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(note("n3", "Call the plumber"));
        let plumber = b.commit().unwrap().puts[0].id;
        drop(store);
        let store = Store::open(&path, Options::default()).unwrap();
        let snap = store.snapshot().unwrap();
        let ids = snap.scan_ids(&memdb::ScanFilter::default()).unwrap();
        assert_eq!(ids, [lunch, plumber, dentist]);
        assert_eq!(snap.op_log(None).unwrap().len(), 6);
        assert_eq!(snap.item_count().unwrap(), 3);
        // Purged before the upgrade: still no ops by memory after it.
        assert!(snap.history(purged).unwrap().ops.is_empty());
        assert!(store.check().unwrap().is_clean());
    }
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, CURRENT);
    assert!(!tables.contains(&"by_time".to_owned()) && !tables.contains(&"oplog".to_owned()));
    assert!(tables.contains(&"op_batches".to_owned()));
    // The moved log and the new op share `op_batches`, in order.
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let batches = txn.open_table(OP_BATCHES).unwrap();
    let mut seqs = Vec::new();
    for row in redb::ReadableTable::iter(&batches).unwrap() {
        let (first, value) = row.unwrap();
        seqs.extend(
            unpack_ops(first.value(), value.value().1)
                .iter()
                .map(|o| o.0),
        );
    }
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
}

const VECTOR_KEYS: TableDefinition<(&str, u64), (u64, u32)> = TableDefinition::new("vector_keys");

/// Rewrites a current store as version 10: every space's key table (`vector_keys.<space>`)
/// back into the one shared `vector_keys`, keyed by (space, key), and `format_version` 10.
fn make_version_10(path: &std::path::Path) {
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    let names: Vec<String> = txn
        .list_tables()
        .unwrap()
        .map(|t| t.name().to_owned())
        .filter(|n| n.starts_with("vector_keys."))
        .collect();
    {
        let mut shared = txn.open_table(VECTOR_KEYS).unwrap();
        for name in &names {
            let space = &name["vector_keys.".len()..];
            let table = txn
                .open_table(TableDefinition::<u64, (u64, u32)>::new(name))
                .unwrap();
            for row in redb::ReadableTable::iter(&table).unwrap() {
                let (key, at) = row.unwrap();
                shared.insert((space, key.value()), at.value()).unwrap();
            }
        }
    }
    for name in &names {
        assert!(
            txn.delete_table(TableDefinition::<u64, (u64, u32)>::new(name))
                .unwrap()
        );
    }
    txn.open_table(META)
        .unwrap()
        .insert("format_version", 10)
        .unwrap();
    txn.commit().unwrap();
}

/// Unit vector `i` (mod 4) of a 4-dimensional space.
fn unit(i: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; 4];
    v[i % 4] = 1.0;
    v
}

/// A version-10 store at `path`: two notes (n1 "Dentist on Tuesday", n2), each with an i8 item
/// vector, and nodes 1–3 with i4 vectors (node n is `unit(n)`), the keys of both spaces in
/// the shared `vector_keys`. Returns the notes' ids.
fn version_10_store_with_vectors(path: &std::path::Path) -> Vec<u64> {
    let ids = {
        let (store, ids) = store_of_two_notes(path);
        let mut b = store.batch();
        b.define_vectors("items", memdb::vectors::Precision::I8);
        b.define_vectors("graph.nodes", memdb::vectors::Precision::I4);
        for (i, &id) in ids.iter().enumerate() {
            b.put_vector("items", id, 0, 5, unit(i));
        }
        for node in 1..=3u64 {
            b.put_vector("graph.nodes", node, 0, 0, unit(node as usize));
        }
        b.commit().unwrap();
        ids
    };
    make_version_10(path);
    ids
}

/// Version 12 writes item records of version 3 (version 2's fields in a zstd frame) where that
/// saves, and keeps each vector space's keys in a table of its own. A version-10 store (every
/// record of version 2, the keys of both spaces in the shared `vector_keys`) is read as it is
/// and left at 10 while only read; its first write sets 12 and moves the keys, after which a
/// long record takes far fewer bytes than its text, every record reads back whole, and the
/// vectors are found by key and by search.
#[test]
fn a_version_10_store_is_read_as_it_is_and_compresses_long_records_after_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let short = version_10_store_with_vectors(&path)[0];
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, 10);
    assert!(tables.contains(&"vector_keys".to_owned()));
    assert!(!tables.iter().any(|t| t.starts_with("vector_keys.")));
    let expect_vectors = |store: &Store| {
        let snap = store.snapshot().unwrap();
        assert_eq!(snap.vector_keys("items").unwrap().len(), 2);
        assert_eq!(
            snap.vector_keys("graph.nodes")
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let nodes = snap.vectors("graph.nodes").unwrap().unwrap();
        let hits = nodes
            .search(&unit(2), 1, &memdb::vectors::VectorScope::all())
            .unwrap();
        assert_eq!(hits[0].key, 2);
        assert!(store.check().unwrap().is_clean());
    };
    {
        let store = Store::open_read_only(&path, Options::default()).unwrap();
        expect_vectors(&store);
    }
    let long_text: String = (0..60)
        .map(|i| format!("Item {i}: send the quarterly figures to Ana before the Friday call.\n"))
        .collect();
    let before = {
        let store = Store::open(&path, Options::default()).unwrap();
        let snap = store.snapshot().unwrap();
        assert_eq!(
            snap.get(short).unwrap().unwrap().fields.body.as_deref(),
            Some("Dentist on Tuesday")
        );
        store.stats().unwrap().item_bytes
    };
    assert_eq!(catalog_state(&path).0, 10, "a read changes nothing");
    let (long, grown) = {
        let store = Store::open(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(note("n3", &long_text));
        let long = b.commit().unwrap().puts[0].id;
        (long, store.stats().unwrap().item_bytes - before)
    };
    assert_eq!(catalog_state(&path).0, CURRENT);
    assert!(
        grown * 4 < long_text.len() as u64,
        "a {}-byte text took {grown} bytes",
        long_text.len()
    );
    let (_, tables) = catalog_state(&path);
    assert!(!tables.contains(&"vector_keys".to_owned()), "{tables:?}");
    assert!(
        tables.contains(&"vector_keys.items".to_owned()),
        "{tables:?}"
    );
    assert!(
        tables.contains(&"vector_keys.graph.nodes".to_owned()),
        "{tables:?}"
    );
    let store = Store::open(&path, Options::default()).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(
        snap.get(long).unwrap().unwrap().fields.body.as_deref(),
        Some(long_text.as_str())
    );
    assert_eq!(
        snap.get(short).unwrap().unwrap().fields.body.as_deref(),
        Some("Dentist on Tuesday")
    );
    expect_vectors(&store);
    // A key moved by the upgrade is replaced like any other.
    let mut b = store.batch();
    b.put_vector("graph.nodes", 2, 0, 0, unit(3));
    b.commit().unwrap();
    let snap = store.snapshot().unwrap();
    let nodes = snap.vectors("graph.nodes").unwrap().unwrap();
    let hits = nodes
        .search(&unit(2), 3, &memdb::vectors::VectorScope::all())
        .unwrap();
    assert!(hits.iter().all(|h| h.key != 2 || h.score < 0.5), "{hits:?}");
    assert!(store.check().unwrap().is_clean());
}

fn chat(ext: &str, time: &str, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(Source::Chat, EventTime::parse(time).unwrap());
    f.external_id = Some(ext.into());
    f.speaker = Some("Caroline".into());
    f.body = Some(body.into());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

/// A current store at `path` with three chats on two days and their EM-graph.
fn store_with_a_graph(path: &std::path::Path) -> Store {
    let store = Store::create(path, Options::default()).unwrap();
    let mut b = store.batch();
    b.put(chat(
        "c1",
        "2023-05-08T10:00:00+00:00",
        "I joined a pottery class in Lisbon.",
    ));
    b.put(chat(
        "c2",
        "2023-05-08T11:00:00+00:00",
        "Paid $25 for pottery classes with Mel.",
    ));
    b.put(chat(
        "c3",
        "2023-06-01T09:00:00+02:00",
        "Lisbon again on 3 June 2023.",
    ));
    b.commit().unwrap();
    store
        .update_graph(
            &LetterEmbedder,
            &memdb::graph::GraphOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
    store
}

/// Everything the graph API answers about nodes 1–30, paths 1–10 and items 1–10.
fn graph_dump(store: &Store) -> String {
    let snap = store.snapshot().unwrap();
    let g = snap.graph();
    let mut out = format!(
        "counts {:?} seen {}\n",
        g.counts().unwrap(),
        g.seen_count().unwrap()
    );
    for n in 1..=30 {
        if let Some(node) = g.node(n).unwrap() {
            let paths: Vec<u32> = g.node_paths(n).unwrap().iter().collect();
            out += &format!("node {n} {node:?} paths {paths:?}\n");
        }
    }
    for p in 1..=10 {
        if let Some(path) = g.path(p).unwrap() {
            let nodes: Vec<u32> = g.path_nodes(p).unwrap().iter().collect();
            out += &format!("path {path:?} set {nodes:?}\n");
        }
    }
    for i in 1..=10 {
        if let Some(item) = g.item(i).unwrap() {
            out += &format!("item {i} {item:?}\n");
        }
    }
    out
}

const PATHS: TableDefinition<u64, (&str, &[u8], &[u8])> = TableDefinition::new("graph.paths");
const NODE_PATHS: TableDefinition<u64, &[u8]> = TableDefinition::new("graph.node_paths");
const ITEMS: TableDefinition<u64, (u64, &[u8])> = TableDefinition::new("graph.items");
const OLD_PATHS: TableDefinition<u64, (&str, &[u8], &[u8])> = TableDefinition::new("graph_paths");
const OLD_NODE_PATHS: TableDefinition<u64, &[u8]> = TableDefinition::new("graph_node_paths");
const OLD_PATH_NODES: TableDefinition<u64, &[u8]> = TableDefinition::new("graph_path_nodes");
const OLD_ITEMS: TableDefinition<u64, (u64, &[u8])> = TableDefinition::new("graph_items");

/// An id list (SPEC.md §5.3) decoded here: a LEB128 count, then zigzag LEB128 differences.
fn id_list(bytes: &[u8]) -> Vec<u64> {
    let mut values = Vec::new();
    let (mut v, mut shift) = (0u64, 0);
    for &b in bytes {
        v |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            values.push(v);
            (v, shift) = (0, 0);
        }
    }
    assert_eq!(values.len() as u64, values[0] + 1, "{bytes:02x?}");
    let mut previous = 0u64;
    values[1..]
        .iter()
        .map(|&z| {
            let delta = if z & 1 == 0 { z >> 1 } else { !(z >> 1) };
            previous = previous.wrapping_add(delta);
            previous
        })
        .collect()
}

fn u64_le(ids: &[u64]) -> Vec<u8> {
    ids.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn roaring_bytes(ids: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let bits: roaring::RoaringBitmap = ids.into_iter().map(|v| v as u32).collect();
    let mut out = Vec::new();
    bits.serialize_into(&mut out).unwrap();
    out
}

/// Rewrites a current store's graph in the layout of versions 3 to 13: `graph_paths` and
/// `graph_items` with u64 LE lists, `graph_node_paths` and `graph_path_nodes` as portable
/// roaring bitmaps; `format_version` 12.
fn make_version_12(path: &std::path::Path) {
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let paths = txn.open_table(PATHS).unwrap();
        let mut old_paths = txn.open_table(OLD_PATHS).unwrap();
        let mut old_path_nodes = txn.open_table(OLD_PATH_NODES).unwrap();
        for row in redb::ReadableTable::iter(&paths).unwrap() {
            let (id, value) = row.unwrap();
            let (page, nodes, items) = value.value();
            let (nodes, items) = (id_list(nodes), id_list(items));
            old_paths
                .insert(
                    id.value(),
                    (page, u64_le(&nodes).as_slice(), u64_le(&items).as_slice()),
                )
                .unwrap();
            old_path_nodes
                .insert(id.value(), roaring_bytes(nodes).as_slice())
                .unwrap();
        }
        let node_paths = txn.open_table(NODE_PATHS).unwrap();
        let mut old_node_paths = txn.open_table(OLD_NODE_PATHS).unwrap();
        for row in redb::ReadableTable::iter(&node_paths).unwrap() {
            let (id, value) = row.unwrap();
            old_node_paths
                .insert(id.value(), roaring_bytes(id_list(value.value())).as_slice())
                .unwrap();
        }
        let items = txn.open_table(ITEMS).unwrap();
        let mut old_items = txn.open_table(OLD_ITEMS).unwrap();
        for row in redb::ReadableTable::iter(&items).unwrap() {
            let (id, value) = row.unwrap();
            let (path, nodes) = value.value();
            old_items
                .insert(id.value(), (path, u64_le(&id_list(nodes)).as_slice()))
                .unwrap();
        }
    }
    assert!(txn.delete_table(PATHS).unwrap());
    assert!(txn.delete_table(NODE_PATHS).unwrap());
    assert!(txn.delete_table(ITEMS).unwrap());
    txn.open_table(META)
        .unwrap()
        .insert("format_version", 12)
        .unwrap();
    txn.commit().unwrap();
}

/// Whether the catalog holds the graph tables of versions 3 to 13, and those of version 14.
fn graph_tables(path: &std::path::Path) -> (bool, bool) {
    let tables = catalog_state(path).1;
    let has = |n: &str| tables.contains(&n.to_owned());
    let present = |names: &[&str]| {
        let n = names.iter().filter(|n| has(n)).count();
        assert!(n == 0 || n == names.len(), "{tables:?}");
        n > 0
    };
    (
        present(&[
            "graph_paths",
            "graph_node_paths",
            "graph_path_nodes",
            "graph_items",
        ]),
        present(&["graph.paths", "graph.node_paths", "graph.items"]),
    )
}

/// Version 14 keeps the graph's lists as varint id lists. A version-12 store (u64 LE lists,
/// roaring bitmaps both ways) reads the same graph while only read and stays 12; its first
/// write rewrites the rows (the graph reads the same again) and sets 14; after that, a delete
/// takes the item out of the graph exactly as in a store that was never old.
#[test]
fn a_version_12_store_reads_its_graph_and_rewrites_its_lists_at_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let (old_path, fresh_path) = (dir.path().join("old"), dir.path().join("fresh"));
    let want = graph_dump(&store_with_a_graph(&old_path));
    let fresh = store_with_a_graph(&fresh_path);
    assert_eq!(graph_dump(&fresh), want);
    assert!(want.contains("paths [1, 2]"), "{want}");
    make_version_12(&old_path);
    assert_eq!(catalog_state(&old_path).0, 12);
    assert_eq!(graph_tables(&old_path), (true, false));
    {
        let store = Store::open_read_only(&old_path, Options::default()).unwrap();
        assert_eq!(graph_dump(&store), want);
        assert!(store.check().unwrap().is_clean());
    }
    {
        let store = Store::open(&old_path, Options::default()).unwrap();
        assert_eq!(graph_dump(&store), want);
    }
    assert_eq!(catalog_state(&old_path).0, 12, "a read changes nothing");
    {
        let store = Store::open(&old_path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(note("n1", "Dentist on Tuesday"));
        b.commit().unwrap();
        assert_eq!(graph_dump(&store), want);
    }
    assert_eq!(catalog_state(&old_path).0, CURRENT);
    assert_eq!(graph_tables(&old_path), (false, true));
    let store = Store::open(&old_path, Options::default()).unwrap();
    assert_eq!(graph_dump(&store), want);
    for s in [&store, &fresh] {
        let mut b = s.batch();
        b.delete_external("c2");
        b.commit().unwrap();
    }
    let after = graph_dump(&store);
    assert_eq!(after, graph_dump(&fresh));
    assert_ne!(after, want, "the delete changed the graph");
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn one_op_log_row_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut b = store.batch();
        for i in 0..300 {
            b.put(note(&format!("n{i}"), &format!("note {i}")));
        }
        b.commit().unwrap();
        let mut b = store.batch();
        b.put(note("n0", "note 0, changed"));
        b.delete_external("n1");
        b.commit().unwrap();
    }
    let db = redb::Database::open(path.join("catalog.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let batches = txn.open_table(OP_BATCHES).unwrap();
    let rows: Vec<(u64, Vec<Op>)> = redb::ReadableTable::iter(&batches)
        .unwrap()
        .map(|row| {
            let (first, value) = row.unwrap();
            (first.value(), unpack_ops(first.value(), value.value().1))
        })
        .collect();
    assert_eq!(rows.len(), 2, "one row per batch");
    assert_eq!(rows[0].1.len(), 300);
    assert_eq!(rows[0].1[299], (300, 1, 300), "seq 300 adds item 300");
    assert_eq!(
        rows[1].1,
        [(301, 2, 1), (302, 3, 2)],
        "an update, then a delete"
    );
}

/// Copies the old store at `base` once per file operation of its first write and fails that
/// operation (and every one after it, like a dead disk) while `write` runs; after each try the
/// store must reopen clean with `state` either `old` or (a commit that reached the disk before
/// its fsync failed) `new`, and once the write is acknowledged, `new`. Returns how many
/// operations failed the write (reliability R4 on the upgrade path). Needs `memdb::fault`
/// (feature `fault-injection`, on in the workspace's test build).
#[cfg(feature = "fault-injection")]
fn fail_each_operation_of_the_first_write<S: PartialEq + std::fmt::Debug>(
    base: &std::path::Path,
    write: impl Fn(&Store) -> bool,
    state: impl Fn(&std::path::Path) -> S,
    old: S,
    new: S,
) -> u64 {
    use memdb::fault::{FaultFs, FaultKind, Injection};
    use std::sync::Arc;
    let mut failed_at = 0;
    for at in 1.. {
        let path = base.with_file_name(format!("try-{at}"));
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(base)
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        let fs = Arc::new(FaultFs::new(&path));
        let options = Options {
            io: Arc::clone(&fs) as Arc<dyn memdb::io::StorageIo>,
            ..Options::default()
        };
        let written = match Store::open(&path, options) {
            Err(_) => false,
            Ok(store) => {
                fs.inject(Some(Injection {
                    at,
                    forever: true,
                    kind: FaultKind::Eio,
                }));
                write(&store)
            }
        };
        {
            let store = Store::open(&path, Options::default()).unwrap();
            assert!(store.check().unwrap().is_clean(), "failing at {at}");
        }
        let now = state(&path);
        if written {
            assert_eq!(now, new, "failing at {at}");
            break;
        }
        assert!(now == old || now == new, "failing at {at}: {now:?}");
        failed_at = at;
    }
    eprintln!("the upgrading write failed at each of its first {failed_at} file operations");
    failed_at
}

/// A new store at `path` holding two notes (n1, n2), and their ids.
fn store_of_two_notes(path: &std::path::Path) -> (Store, Vec<u64>) {
    let store = Store::create(path, Options::default()).unwrap();
    let mut b = store.batch();
    b.put(note("n1", "Dentist on Tuesday"));
    b.put(note("n2", "Lunch with Ana"));
    let ids = b.commit().unwrap().puts.iter().map(|p| p.id).collect();
    (store, ids)
}

/// The upgrade is part of the first write's one catalog transaction: a write that fails at any
/// file operation leaves a store that reopens as version 8 with what it held, and the write
/// that finally succeeds leaves the current version with the new item too; either way `check`
/// is clean.
#[cfg(feature = "fault-injection")]
#[test]
fn an_upgrade_that_fails_at_any_operation_leaves_the_version_8_store() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    store_of_two_notes(&base);
    make_version_8(&base);
    let state = |path: &std::path::Path| {
        let (count, log) = {
            let store = Store::open(path, Options::default()).unwrap();
            let snap = store.snapshot().unwrap();
            (snap.item_count().unwrap(), snap.op_log(None).unwrap().len())
        };
        (catalog_state(path).0, count, log)
    };
    let write = |store: &Store| {
        let mut b = store.batch();
        b.put(note("n3", "Call the plumber"));
        b.commit().is_ok()
    };
    let failed_at =
        fail_each_operation_of_the_first_write(&base, write, state, (8, 2, 2), (CURRENT, 3, 3));
    assert!(failed_at >= 3, "the write failed at {failed_at} operations");
}

/// The version-12 upgrade under the same faults: a version-10 store with item and node vectors
/// whose first write (a long note, stored compressed) fails at any file operation reopens as
/// version 10 with its keys in the shared `vector_keys`, or as version 12 whole, the keys moved
/// to their spaces' tables; never a mix, and `check` is clean either way.
#[cfg(feature = "fault-injection")]
#[test]
fn a_version_12_upgrade_that_fails_at_any_operation_leaves_the_version_10_store() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    version_10_store_with_vectors(&base);
    let long_text: String = (0..40)
        .map(|i| format!("Step {i}: call the plumber about the kitchen tap.\n"))
        .collect();
    let state = |path: &std::path::Path| {
        let (count, item_keys, node_keys) = {
            let store = Store::open(path, Options::default()).unwrap();
            let snap = store.snapshot().unwrap();
            (
                snap.item_count().unwrap(),
                snap.vector_keys("items").unwrap().len(),
                snap.vector_keys("graph.nodes").unwrap().len(),
            )
        };
        let (version, tables) = catalog_state(path);
        let shared = tables.contains(&"vector_keys".to_owned());
        (version, shared, count, item_keys, node_keys)
    };
    let write = |store: &Store| {
        let mut b = store.batch();
        b.put(note("n3", &long_text));
        b.commit().is_ok()
    };
    let failed_at = fail_each_operation_of_the_first_write(
        &base,
        write,
        state,
        (10, true, 2, 2, 3),
        (CURRENT, false, 3, 2, 3),
    );
    assert!(failed_at >= 3, "the write failed at {failed_at} operations");
}

/// The version-14 upgrade under the same faults: a version-12 store with a graph whose first
/// write fails at any file operation reopens as version 12 with the old graph tables, or as
/// version 14 with the new ones, the same graph either way.
#[cfg(feature = "fault-injection")]
#[test]
fn a_version_14_upgrade_that_fails_at_any_operation_leaves_the_version_12_store() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let want = graph_dump(&store_with_a_graph(&base));
    make_version_12(&base);
    let state = |path: &std::path::Path| {
        let (count, same) = {
            let store = Store::open(path, Options::default()).unwrap();
            let count = store.snapshot().unwrap().item_count().unwrap();
            (count, graph_dump(&store) == want)
        };
        (catalog_state(path).0, graph_tables(path), count, same)
    };
    let write = |store: &Store| {
        let mut b = store.batch();
        b.put(note("n1", "Dentist on Tuesday"));
        b.commit().is_ok()
    };
    let failed_at = fail_each_operation_of_the_first_write(
        &base,
        write,
        state,
        (12, (true, false), 3, true),
        (CURRENT, (false, true), 4, true),
    );
    assert!(failed_at >= 3, "the write failed at {failed_at} operations");
}

/// Version 16 writes item records of versions 4 and 5 (SPEC.md §4.5: the scope) for items that
/// have a scope. A version-14 store — the same catalog, `format_version` 14 — is read as it is,
/// and its first write makes it version 16, so a build that cannot read scoped records refuses
/// it; a scoped memory then reads back with its scope, and the store's older records keep
/// reading with none.
#[test]
fn a_version_14_store_takes_scoped_items_after_its_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    store_with_one_note(&path);
    {
        let db = redb::Database::open(path.join("catalog.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("format_version", 14)
            .unwrap();
        txn.commit().unwrap();
    }
    let store = Store::open(&path, Options::default()).unwrap();
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .get_by_external_id("n1")
            .unwrap()
            .unwrap()
            .fields
            .scope,
        memdb::Scope::default()
    );
    drop(store);
    assert_eq!(catalog_state(&path).0, 14, "reading changes nothing");
    let store = Store::open(&path, Options::default()).unwrap();
    let mut scoped = note("n2", "Prefers window seats");
    scoped.fields.scope = memdb::Scope::new(Some("ana".into()), Some("travel-bot".into()), None);
    let mut b = store.batch();
    b.put(scoped);
    b.commit().unwrap();
    drop(store);
    assert_eq!(catalog_state(&path).0, CURRENT);
    let store = Store::open(&path, Options::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let item = snap.get_by_external_id("n2").unwrap().unwrap();
    assert_eq!(item.fields.scope.user_id.as_deref(), Some("ana"));
    assert_eq!(item.fields.scope.agent_id.as_deref(), Some("travel-bot"));
    assert!(store.check().unwrap().is_clean());
}

/// Version 18 keeps a deleted item's blobs (SPEC.md §5.6: soft deletes, undelete). A version-16
/// store — the same catalog, `format_version` 16 — is read as it is; its first write makes it
/// version 18, so a build whose delete frees the blobs (and whose `check` calls a retired
/// item's blob an orphan) refuses it; a photo deleted after the upgrade keeps its original and
/// an undelete brings it back.
#[test]
fn a_version_16_store_keeps_a_deleted_photos_original_after_its_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let (id, blob) = {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put_with_blobs(
            note("p1", "The harbour at dusk"),
            vec![(memdb::BlobKind::Original, vec![42; 3_000])],
        );
        let receipt = b.commit().unwrap();
        (receipt.puts[0].id, receipt.puts[0].blob_ids[0])
    };
    {
        let db = redb::Database::open(path.join("catalog.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("format_version", 16)
            .unwrap();
        txn.commit().unwrap();
    }
    let store = Store::open(&path, Options::default()).unwrap();
    assert!(store.snapshot().unwrap().get(id).unwrap().is_some());
    drop(store);
    assert_eq!(catalog_state(&path).0, 16, "reading changes nothing");
    let store = Store::open(&path, Options::default()).unwrap();
    let mut b = store.batch();
    b.delete(id);
    b.commit().unwrap();
    drop(store);
    assert_eq!(catalog_state(&path).0, CURRENT);
    let store = Store::open(&path, Options::default()).unwrap();
    assert_eq!(
        &store.snapshot().unwrap().blob(blob).unwrap().unwrap()[..],
        &[42; 3_000][..]
    );
    assert!(store.check().unwrap().is_clean());
    store.restore(id, memdb::memory::OpNote::default()).unwrap();
    assert_eq!(
        store.snapshot().unwrap().get(id).unwrap().unwrap().blobs,
        vec![blob]
    );
    assert!(store.check().unwrap().is_clean());
}

/// Rewrites every segment of the store at `path` as segment format 1 wrote it (SPEC.md §3):
/// header version 1, blob entries without their tags, each header's CRC made again.
fn as_segment_format_1(path: &std::path::Path) {
    use memdb_formats::segment::{EntryHeader, PAGE};
    let crc = |bytes: &[u8]| memdb_formats::crc32c(bytes).to_le_bytes();
    for entry in std::fs::read_dir(path.join("segments")).unwrap() {
        let file = entry.unwrap().path();
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        let header_crc = crc(&bytes[..60]);
        bytes[60..64].copy_from_slice(&header_crc);
        let mut at = PAGE;
        while at + PAGE <= bytes.len() {
            let Ok(header) = EntryHeader::decode(&bytes[at..], at as u64) else {
                at += PAGE;
                continue;
            };
            bytes[at + 5] = 0;
            bytes[at + 32..at + 48].fill(0);
            let entry_crc = crc(&bytes[at..at + 60]);
            bytes[at + 60..at + 64].copy_from_slice(&entry_crc);
            at += header.pages() as usize * PAGE;
        }
        std::fs::write(&file, bytes).unwrap();
    }
}

/// Format 20 tags every blob entry with its blob, kind and owner (SPEC.md §3.2). A version-18
/// store — segments of format 1, untagged, `format_version` 18 — is read as it is; its first
/// write makes it version 20 and tags what it writes; after a compaction every blob is tagged,
/// and a rebuild from the segments alone keeps every original, old and new.
#[test]
fn a_version_18_store_tags_its_new_blobs_after_its_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let (old_id, old_blob) = {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put_with_blobs(
            note("p1", "The harbour at dusk"),
            vec![(memdb::BlobKind::Original, vec![42; 3_000])],
        );
        let receipt = b.commit().unwrap();
        (receipt.puts[0].id, receipt.puts[0].blob_ids[0])
    };
    as_segment_format_1(&path);
    {
        let db = redb::Database::open(path.join("catalog.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("format_version", 18)
            .unwrap();
        txn.commit().unwrap();
    }
    let store = Store::open(&path, Options::default()).unwrap();
    assert!(store.check().unwrap().is_clean());
    assert_eq!(
        &store.snapshot().unwrap().blob(old_blob).unwrap().unwrap()[..],
        &[42; 3_000][..]
    );
    drop(store);
    assert_eq!(catalog_state(&path).0, 18, "reading changes nothing");
    let store = Store::open(&path, Options::default()).unwrap();
    let mut b = store.batch();
    b.put_with_blobs(
        note("p2", "The lighthouse"),
        vec![(memdb::BlobKind::Original, vec![7; 5_000])],
    );
    let receipt = b.commit().unwrap();
    let (new_id, new_blob) = (receipt.puts[0].id, receipt.puts[0].blob_ids[0]);
    assert!(store.check().unwrap().is_clean());
    // A compaction copies the old original into a format-2 segment, tagged.
    store
        .compact(
            &memdb::maintenance::CompactOptions {
                victims: memdb::maintenance::Victims::All,
            },
            &mut memdb::maintenance::KeepEverything,
        )
        .unwrap();
    drop(store);
    assert_eq!(catalog_state(&path).0, CURRENT);
    // The catalog lost: both originals come back with their items, from the tags.
    std::fs::write(path.join("catalog.redb"), vec![0x5a; 8192]).unwrap();
    let repaired = Store::repair_or_rebuild(&path, Options::default(), &mut |_, _, _| {}).unwrap();
    assert!(
        matches!(repaired, memdb::maintenance::Repaired::Rebuilt(_)),
        "{repaired:?}"
    );
    let store = Store::open(&path, Options::default()).unwrap();
    let snap = store.snapshot().unwrap();
    for (id, blob, bytes) in [
        (old_id, old_blob, vec![42; 3_000]),
        (new_id, new_blob, vec![7; 5_000]),
    ] {
        assert_eq!(snap.get(id).unwrap().unwrap().blobs, vec![blob]);
        assert_eq!(&snap.blob(blob).unwrap().unwrap()[..], &bytes[..]);
    }
}
