//! Format version 6 (SPEC.md §10) added the `history`, `dropped_blobs` and `stale_pages`
//! tables. A version-5 store — the same catalog without them, `format_version` 5 — is read as
//! one with no history, nothing dropped and no stale page, changes nothing while only read,
//! and becomes version 6 at its first write, after which updates keep their old versions.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store};
use redb::{ReadableDatabase, TableDefinition, TableHandle};

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

#[test]
fn a_version_5_store_is_read_as_it_is_and_upgraded_at_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    {
        let store = Store::create(&path, Options::default()).unwrap();
        let mut b = store.batch();
        b.put(note("n1", "Dentist on Tuesday"));
        b.commit().unwrap();
    }
    // Make it the version-5 layout: no tables of version 6, version 5.
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
    // The first write makes it the current version (8 since memory operations).
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, 8);
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
                memdb::MemoryOpKind::Add,
                memdb::MemoryOpKind::Update,
                memdb::MemoryOpKind::Delete
            ]
        );
        assert!(store.check().unwrap().is_clean());
    }
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, 8);
    assert!(ADDED_IN_8.iter().all(|t| tables.contains(&t.to_string())));
}
