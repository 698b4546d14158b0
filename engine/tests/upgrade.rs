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
    // The first write makes it the current version (7 since item records of version 2).
    let (version, tables) = catalog_state(&path);
    assert_eq!(version, 7);
    assert!(ADDED_IN_6.iter().all(|t| tables.contains(&t.to_string())));
}
