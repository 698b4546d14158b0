//! Compatibility goldens (issue 18): a whole store written by the last commit of each earlier
//! catalog format version (1–8, 10, 12, 14), checked in under `tests/compat/vN/store/`, with
//! what that version's engine said the store held in `tests/compat/vN/expected.json` (see
//! `tests/compat/README.md` for the commits and commands that made them).
//!
//! Each store is copied to a temporary directory (the checked-in copy is never opened) and
//! - opened read-only: every item, blob, item vector, graph count and page is what the old
//!   version recorded, `check` is clean, and no file changed;
//! - opened as the writer: the same again, still its old version until the first write;
//! - written to (a new note, an update of an old one): the catalog becomes the current version,
//!   the update keeps the old text as a version, and the store reopens clean with everything
//!   else as it was.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memdb::{
    EventTime, ItemDraft, ItemFields, Options, ScanFilter, Snapshot, Source, Store,
    vectors::ITEM_VECTORS, vectors::VectorScope,
};
use redb::{ReadableDatabase, TableDefinition};
use serde_json::{Value, json};

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The format version this build writes (`STORE_FORMAT_VERSION`).
const CURRENT_FORMAT_VERSION: u64 = 20;

fn golden(version: u64) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compat")
        .join(format!("v{version}"))
}

/// The catalog's `format_version`, read without writing (a writable redb open may rewrite the
/// header, which would hide whether the store's own read-only open wrote).
fn format_version(store: &Path) -> u64 {
    let db = redb::ReadOnlyDatabase::open(store.join("catalog.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    txn.open_table(META)
        .unwrap()
        .get("format_version")
        .unwrap()
        .unwrap()
        .value()
}

/// The catalog's tables, read without writing.
fn table_names(store: &Path) -> Vec<String> {
    use redb::TableHandle;
    let db = redb::ReadOnlyDatabase::open(store.join("catalog.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    txn.list_tables()
        .unwrap()
        .map(|t| t.name().to_owned())
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir`, relative path → bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &entry.path(), out);
            } else {
                let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(entry.path()).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn fnv64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What the store holds, in the shape the old versions' dumper wrote (`expected.json`'s
/// `dump`): items with their fields and blobs (kind, length, owner, a hash of the bytes), the
/// item vectors (keys, dimension, a hash of every value), the EM-graph counts and the pages.
fn dump(snap: &Snapshot) -> Value {
    let blob = |id: u64| -> Value {
        let info = snap.blob_info(id).unwrap().unwrap();
        let bytes = snap.blob(id).unwrap().unwrap();
        json!({"id": id, "kind": format!("{:?}", info.kind), "len": info.len,
               "owner": info.owner, "fnv64": fnv64(&bytes)})
    };
    let items: Vec<Value> = snap
        .scan(&ScanFilter::default())
        .unwrap()
        .iter()
        .map(|item| {
            let f = &item.fields;
            json!({
                "id": item.id,
                "ingest_time_ms": item.ingest_time_ms,
                "external_id": f.external_id,
                "source": f.source.name(),
                "time_unix_ms": f.time.unix_ms,
                "time_offset_minutes": f.time.offset_minutes,
                "location": f.location.as_ref().map(|l| json!({
                    "name": l.name, "lat": l.geo.map(|g| g.lat), "lon": l.geo.map(|g| g.lon)
                })),
                "entities": f.entities, "tags": f.tags, "ocr": f.ocr, "caption": f.caption,
                "summary": f.summary, "body": f.body, "speaker": f.speaker, "from": f.from,
                "to": f.to, "supersedes": item.supersedes,
                "blobs": item.blobs.iter().map(|b| blob(*b)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut out = json!({"item_count": snap.item_count().unwrap(), "items": items});
    let keys: Vec<u64> = snap.vector_keys(ITEM_VECTORS).unwrap().iter().collect();
    if let Some(stored) = snap.vectors(ITEM_VECTORS).unwrap() {
        let mut bits = Vec::new();
        for k in &keys {
            for x in stored.get(*k).unwrap() {
                bits.extend_from_slice(&x.to_le_bytes());
            }
        }
        out["item_vectors"] =
            json!({"keys": keys, "dim": stored.dim(), "len": stored.len(), "fnv64": fnv64(&bits)});
    } else {
        assert!(keys.is_empty());
    }
    let (nodes, edges) = snap.graph().counts().unwrap();
    if (nodes, edges) != (0, 0) {
        out["graph_counts"] = json!([nodes, edges]);
    }
    #[cfg(feature = "render")]
    add_pages(snap, &blob, &mut out);
    out
}

/// The scrapbook pages (API of the default `render` feature; without it they are not read).
#[cfg(feature = "render")]
fn add_pages(snap: &Snapshot, blob: &dyn Fn(u64) -> Value, out: &mut Value) {
    let pages = snap.pages().unwrap();
    if !pages.is_empty() {
        out["pages"] = json!(
            pages
                .iter()
                .map(|p| json!({
                    "day": p.day, "stage": p.stage, "quality": p.quality, "scale": p.scale,
                    "stored_bytes": p.stored_bytes,
                    "parts": p.parts.iter().map(|b| blob(*b)).collect::<Vec<_>>(),
                }))
                .collect::<Vec<_>>()
        );
    }
}

/// Compares field by field first, so a failure names what differs.
fn assert_dump_eq(version: u64, stage: &str, got: &Value, want: &Value) {
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(got),
        keys(want),
        "v{version} {stage}: what the store holds"
    );
    let (got_items, want_items) = (
        got["items"].as_array().unwrap(),
        want["items"].as_array().unwrap(),
    );
    assert_eq!(
        got_items.len(),
        want_items.len(),
        "v{version} {stage}: item count"
    );
    for (g, w) in got_items.iter().zip(want_items) {
        assert_eq!(g, w, "v{version} {stage}: item {}", w["external_id"]);
    }
    assert_eq!(got, want, "v{version} {stage}");
}

fn note(ext: &str, time: &str, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(Source::Note, EventTime::parse(time).unwrap());
    f.external_id = Some(ext.into());
    f.body = Some(body.into());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

/// The read checks both opens make: the dump, a clean check, and the indexes answering.
fn read_checks(version: u64, stage: &str, store: &Store, want: &Value) {
    let report = store.check().unwrap();
    assert!(report.is_clean(), "v{version} {stage}: check: {report:?}");
    let snap = store.snapshot().unwrap();
    assert_dump_eq(version, stage, &dump(&snap), want);
    for item in want["items"].as_array().unwrap() {
        let ext = item["external_id"].as_str().unwrap();
        let got = snap.get_by_external_id(ext).unwrap().unwrap();
        assert_eq!(
            got.id,
            item["id"].as_u64().unwrap(),
            "v{version} {stage}: {ext}"
        );
    }
    // Every item vector finds itself first.
    if let Some(stored) = snap.vectors(ITEM_VECTORS).unwrap() {
        for key in snap.vector_keys(ITEM_VECTORS).unwrap().iter() {
            let query = stored.get(key).unwrap();
            let hits = stored.search(&query, 1, &VectorScope::all()).unwrap();
            assert_eq!(hits[0].key, key, "v{version} {stage}: vector {key}");
        }
    }
    // Every item the graph knows is an item of the store.
    if want.get("graph_counts").is_some() {
        let mut linked = 0;
        for item in want["items"].as_array().unwrap() {
            if snap
                .graph()
                .item(item["id"].as_u64().unwrap())
                .unwrap()
                .is_some()
            {
                linked += 1;
            }
        }
        assert!(linked > 0, "v{version} {stage}: no item in the graph");
    }
}

/// The body of the note each golden store gets after its upgrade: written by the current
/// version, long enough that it is stored compressed.
fn upgrade_note_body() -> String {
    (1..=20)
        .map(|i| format!("Written by the current version, line {i} of 20.\n"))
        .collect()
}

fn open_and_upgrade(version: u64) {
    let golden = golden(version);
    let expected: Value =
        serde_json::from_slice(&std::fs::read(golden.join("expected.json")).unwrap()).unwrap();
    assert_eq!(expected["format_version"], json!(version));
    #[allow(unused_mut)]
    let mut want = expected["dump"].clone();
    assert!(!want["items"].as_array().unwrap().is_empty());
    for (key, since) in [("item_vectors", 2), ("graph_counts", 3), ("pages", 4)] {
        assert_eq!(
            want.get(key).is_some(),
            version >= since,
            "v{version}: golden has {key}"
        );
    }
    // Without `render` the engine has no page API: the pages are not compared.
    #[cfg(not(feature = "render"))]
    want.as_object_mut().unwrap().remove("pages");
    let want = &want;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    copy_dir(&golden.join("store"), &path);
    let before = files(&path);
    assert_eq!(format_version(&path), version);

    // Read-only: everything as recorded, nothing written.
    {
        let store = Store::open_read_only(&path, Options::default()).unwrap();
        read_checks(version, "read-only", &store, want);
    }
    assert_eq!(format_version(&path), version);
    let after = files(&path);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "v{version}: files after a read-only open"
    );
    for (name, bytes) in &before {
        assert!(
            after[name] == *bytes,
            "v{version}: {} changed by a read-only open",
            name.display()
        );
    }

    // The writer reads the same, and the store keeps its version until the first write.
    let first = want["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["source"] == "note")
        .unwrap();
    let first_ext = first["external_id"].as_str().unwrap();
    // Earlier versions the old store kept of that note (format 6 keeps them).
    let versions_before = {
        let store = Store::open(&path, Options::default()).unwrap();
        read_checks(version, "writer", &store, want);
        let snap = store.snapshot().unwrap();
        let id = snap.get_by_external_id(first_ext).unwrap().unwrap().id;
        snap.versions(id).unwrap().len()
    };
    assert_eq!(versions_before > 0, version >= 6, "v{version}: history");
    assert_eq!(format_version(&path), version);
    {
        let store = Store::open(&path, Options::default()).unwrap();
        let mut b = store.batch();
        // Long enough to be written compressed (record version 3, format 12), beside the old
        // store's uncompressed records.
        b.put(note(
            "compat-upgrade-note",
            "2024-08-01T10:00:00+02:00",
            &upgrade_note_body(),
        ));
        let mut update = note(
            first_ext,
            "2024-03-02T08:15:00+00:00",
            "Updated after upgrade",
        );
        update.fields.time = EventTime {
            unix_ms: first["time_unix_ms"].as_i64().unwrap(),
            offset_minutes: i16::try_from(first["time_offset_minutes"].as_i64().unwrap()).unwrap(),
        };
        b.put(update);
        b.commit().unwrap();
        let report = store.check().unwrap();
        assert!(report.is_clean(), "v{version} after the write: {report:?}");
    }
    assert_eq!(format_version(&path), CURRENT_FORMAT_VERSION);
    // Format 10 keeps the time index in `by_source` and the op log in `op_batches`.
    let tables = table_names(&path);
    assert!(
        !tables.contains(&"by_time".to_owned()) && !tables.contains(&"oplog".to_owned()),
        "v{version} upgraded: {tables:?}"
    );
    assert!(tables.contains(&"op_batches".to_owned()));
    // Format 12 keeps each space's vector keys in a table of its own.
    assert!(
        !tables.contains(&"vector_keys".to_owned()),
        "v{version} upgraded: {tables:?}"
    );
    assert_eq!(
        tables.contains(&"vector_keys.items".to_owned()),
        version >= 2,
        "v{version} upgraded: {tables:?}"
    );
    // Format 14 keeps the graph's lists as id lists in `graph.*` tables.
    for old in [
        "graph_paths",
        "graph_node_paths",
        "graph_path_nodes",
        "graph_items",
    ] {
        assert!(
            !tables.contains(&old.to_owned()),
            "v{version} upgraded: {tables:?}"
        );
    }
    for new in ["graph.paths", "graph.node_paths", "graph.items"] {
        assert!(
            tables.contains(&new.to_owned()),
            "v{version} upgraded: {tables:?}"
        );
    }

    // Reopened: clean, the new note and the update there, every other item as it was.
    for read_only in [false, true] {
        let store = if read_only {
            Store::open_read_only(&path, Options::default()).unwrap()
        } else {
            Store::open(&path, Options::default()).unwrap()
        };
        let report = store.check().unwrap();
        assert!(report.is_clean(), "v{version} upgraded: {report:?}");
        let snap = store.snapshot().unwrap();
        let got = dump(&snap);
        let want_count = want["item_count"].as_u64().unwrap();
        assert_eq!(
            got["item_count"],
            json!(want_count + 1),
            "v{version} upgraded"
        );
        let by_ext = |v: &Value| -> BTreeMap<String, Value> {
            v["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i["external_id"].as_str().unwrap().to_owned(), i.clone()))
                .collect()
        };
        let (got_items, want_items) = (by_ext(&got), by_ext(want));
        for (ext, item) in &want_items {
            if ext != first_ext {
                assert_eq!(&got_items[ext], item, "v{version} upgraded: {ext}");
            }
        }
        let updated = snap.get_by_external_id(first_ext).unwrap().unwrap();
        assert_eq!(updated.id, first["id"].as_u64().unwrap());
        assert_eq!(
            updated.fields.body.as_deref(),
            Some("Updated after upgrade")
        );
        // Oldest first: the version the update replaced is the last.
        let versions = snap.versions(updated.id).unwrap();
        assert_eq!(
            versions.len(),
            versions_before + 1,
            "v{version} upgraded: versions"
        );
        assert_eq!(
            Some(
                versions[versions_before]
                    .record
                    .fields
                    .body
                    .as_deref()
                    .unwrap()
            ),
            first["body"].as_str()
        );
        let added = snap
            .get_by_external_id("compat-upgrade-note")
            .unwrap()
            .unwrap();
        assert_eq!(
            added.fields.body.as_deref(),
            Some(upgrade_note_body().as_str())
        );
        // The indexes the old version built are still there.
        if let Some(v) = want.get("item_vectors") {
            let keys = snap.vector_keys(ITEM_VECTORS).unwrap();
            // The update took the item's vector out, as any update does until it is embedded
            // again; the others are there.
            let want_keys: Vec<u64> = v["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_u64().unwrap())
                .filter(|k| *k != updated.id)
                .collect();
            assert_eq!(
                keys.iter().collect::<Vec<_>>(),
                want_keys,
                "v{version}: vectors"
            );
        }
        if let Some(counts) = want.get("graph_counts") {
            // The update took the item's path (and the nodes only it named) out of the graph,
            // as any update does until the item is embedded again; the rest is as it was.
            let (nodes, paths) = snap.graph().counts().unwrap();
            assert_eq!(paths + 1, counts[1].as_u64().unwrap(), "v{version}: paths");
            assert!(nodes <= counts[0].as_u64().unwrap(), "v{version}: nodes");
            assert!(snap.graph().item(updated.id).unwrap().is_none());
        }
        #[cfg(feature = "render")]
        if let Some(pages) = want.get("pages") {
            let days: Vec<String> = snap.pages().unwrap().into_iter().map(|p| p.day).collect();
            let want_days: Vec<String> = pages
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["day"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(days, want_days, "v{version} upgraded: pages");
        }
    }
}

#[test]
fn a_version_1_store_opens_and_upgrades() {
    open_and_upgrade(1);
}

#[test]
fn a_version_2_store_opens_and_upgrades() {
    open_and_upgrade(2);
}

#[test]
fn a_version_3_store_opens_and_upgrades() {
    open_and_upgrade(3);
}

#[test]
fn a_version_4_store_opens_and_upgrades() {
    open_and_upgrade(4);
}

#[test]
fn a_version_5_store_opens_and_upgrades() {
    open_and_upgrade(5);
}

#[test]
fn a_version_6_store_opens_and_upgrades() {
    open_and_upgrade(6);
}

#[test]
fn a_version_7_store_opens_and_upgrades() {
    open_and_upgrade(7);
}

#[test]
fn a_version_8_store_opens_and_upgrades() {
    open_and_upgrade(8);
}

#[test]
fn a_version_10_store_opens_and_upgrades() {
    open_and_upgrade(10);
}

/// The version-7 store after its upgrade takes memory operations: its op log (copied into
/// `memory_ops` by the upgrade) lists the old deletes, and an UPDATE keeps the old version
/// with both times and its reason.
#[test]
fn a_version_12_store_opens_and_upgrades() {
    open_and_upgrade(12);
}

#[test]
fn a_version_14_store_opens_and_upgrades() {
    open_and_upgrade(14);
}

#[test]
fn a_version_7_store_takes_memory_operations_after_its_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    copy_dir(&golden(7).join("store"), &path);
    let store = Store::open(&path, Options::default()).unwrap();
    let before = store.snapshot().unwrap().op_log(None).unwrap();
    assert!(
        before
            .iter()
            .any(|op| op.kind == memdb::memory::MemoryOpKind::Delete),
        "the v7 deletes are logged"
    );
    let snap = store.snapshot().unwrap();
    let note = snap
        .scan(&ScanFilter::default())
        .unwrap()
        .into_iter()
        .find(|i| i.fields.source == Source::Note)
        .unwrap();
    drop(snap);
    let mut fields = note.fields.clone();
    fields.body = Some("Changed by a memory operation".into());
    store
        .apply(vec![memdb::memory::MemoryOp::Update {
            id: note.id,
            fields,
            valid: memdb::memory::Validity::default(),
            note: memdb::memory::OpNote {
                reason: "it changed".into(),
                ..memdb::memory::OpNote::default()
            },
        }])
        .unwrap();
    let history = store.snapshot().unwrap().history(note.id).unwrap();
    let last = history.versions.last().unwrap();
    assert!(last.is_current());
    assert_eq!(
        last.record.fields.body.as_deref(),
        Some("Changed by a memory operation")
    );
    let replaced = &history.versions[history.versions.len() - 2];
    assert_eq!(replaced.record.fields.body, note.fields.body);
    assert!(replaced.system_to_ms.is_some());
    assert_eq!(history.ops.last().unwrap().reason, "it changed");
    assert!(store.check().unwrap().is_clean());
    assert_eq!(
        store.snapshot().unwrap().op_log(None).unwrap().len(),
        before.len() + 1
    );
    drop(store);
    assert_eq!(format_version(&path), CURRENT_FORMAT_VERSION);
}

/// A store of format 6 holds items with positions and no places (records of version 1). The
/// next ingest — with no new item — places them (a pass over the stored items, once), keeps
/// their version-1 records as history (still read), names only those without a name of their
/// own, leaves every other item as it was, and the store checks clean.
#[test]
fn a_version_6_store_gets_its_places_at_the_next_ingest() {
    let golden = golden(6);
    let expected: Value =
        serde_json::from_slice(&std::fs::read(golden.join("expected.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    copy_dir(&golden.join("store"), &path);
    let store = Store::open(&path, Options::default()).unwrap();
    let report = store
        .ingest(memdb::IngestOptions::commit_only())
        .unwrap()
        .finish(None, &mut |_, _, _| {})
        .unwrap();
    let positioned: Vec<&Value> = expected["dump"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !i["location"]["lat"].is_null())
        .collect();
    assert_eq!(positioned.len(), 8);
    let places = report.places.unwrap();
    assert_eq!((places.placed, places.already), (8, 0), "{places:?}");
    assert!(store.check().unwrap().is_clean());

    let snap = store.snapshot().unwrap();
    for old in &positioned {
        let ext = old["external_id"].as_str().unwrap();
        let item = snap.get_by_external_id(ext).unwrap().unwrap();
        let location = item.fields.location.as_ref().unwrap();
        let place = location.place.as_ref().unwrap();
        let name = old["location"]["name"].as_str();
        match name {
            // Its own name stays.
            Some(own) => assert_eq!(location.name.as_deref(), Some(own), "{ext}"),
            None => assert_eq!(location.name, Some(place.label()), "{ext}"),
        }
        assert!(
            place.geonames_id.is_some() && place.distance_m.is_some(),
            "{ext}"
        );
        // The version-1 record it replaced is history, read as it was: no place.
        let versions = snap.versions(item.id).unwrap();
        let before = &versions.last().unwrap().record;
        assert!(before.fields.location.as_ref().unwrap().place.is_none());
        assert_eq!(
            before.fields.location.as_ref().unwrap().name.as_deref(),
            name,
            "{ext}"
        );
    }
    let city = |ext: &str| {
        snap.get_by_external_id(ext)
            .unwrap()
            .unwrap()
            .fields
            .location
            .unwrap()
            .place
            .unwrap()
            .city
    };
    assert_eq!(city("photo-2024-05-12-tram"), "Lisbon");
    assert_eq!(city("photo-2024-03-10-bike"), "Amsterdam");
    // Everything else is as it was.
    let unplaced: usize = expected["dump"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["location"]["lat"].is_null())
        .map(|i| {
            let item = snap
                .get_by_external_id(i["external_id"].as_str().unwrap())
                .unwrap()
                .unwrap();
            assert_eq!(item.ingest_time_ms, i["ingest_time_ms"].as_i64().unwrap());
        })
        .count();
    assert_eq!(
        unplaced + 8,
        expected["dump"]["items"].as_array().unwrap().len()
    );
    // The pass is recorded: the next ingest does not run it again.
    let again = store
        .ingest(memdb::IngestOptions::commit_only())
        .unwrap()
        .finish(None, &mut |_, _, _| {})
        .unwrap();
    assert_eq!(again.places, None);
    drop((snap, store));
    assert_eq!(format_version(&path), CURRENT_FORMAT_VERSION);
}

/// Vectors of 384 dimensions, each the text's length in the first coordinate (enough to tell
/// which text made a vector).
struct LengthEmbedder;

impl memdb::Embedder for LengthEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; 384];
                v[0] = 1.0;
                v[1] = t.len() as f32 / 1000.0;
                v
            })
            .collect())
    }
}

/// The item vectors of a format-6 store were made from recipe 1 of the item text. The next
/// embed drops those of photos and videos (whose text is SGM fields now) in one commit with the
/// setting `item_text`, and makes them again from the new text; every other item keeps its
/// vector, and a second run changes nothing.
#[test]
fn a_version_6_store_embeds_its_images_again_from_their_new_text() {
    let is_media = |source| matches!(source, Source::Image | Source::Video);
    let golden = golden(6);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    copy_dir(&golden.join("store"), &path);
    let store = Store::open(&path, Options::default()).unwrap();
    let before = store.snapshot().unwrap();
    let items = before.scan(&ScanFilter::default()).unwrap();
    let stored = before.vectors(ITEM_VECTORS).unwrap().unwrap();
    let with_vector = before.vector_keys(ITEM_VECTORS).unwrap();
    let images: Vec<u64> = items
        .iter()
        .filter(|i| is_media(i.fields.source) && with_vector.contains(i.id))
        .map(|i| i.id)
        .collect();
    assert!(images.len() >= 5, "{images:?}");
    let others: Vec<(u64, Vec<f32>)> = items
        .iter()
        .filter(|i| !is_media(i.fields.source) && with_vector.contains(i.id))
        .map(|i| (i.id, stored.get(i.id).unwrap()))
        .collect();
    drop((stored, before));

    let report = store
        .embed_missing(&LengthEmbedder, &mut |_, _| {})
        .unwrap();
    assert_eq!(report.stale, images.len() as u64);
    assert!(report.encoded >= images.len() as u64);
    let snap = store.snapshot().unwrap();
    let stored = snap.vectors(ITEM_VECTORS).unwrap().unwrap();
    for id in &images {
        let item = snap.get(*id).unwrap().unwrap();
        let text = memdb::recall::item_text(&item);
        assert!(
            text.starts_with("Type: image") || text.starts_with("Type: video"),
            "{text}"
        );
        let v = stored.get(*id).unwrap();
        assert_eq!(
            v[1],
            text.len() as f32 / 1000.0,
            "item {id} embedded from {text}"
        );
    }
    for (id, vector) in &others {
        assert_eq!(
            &stored.get(*id).unwrap(),
            vector,
            "item {id} kept its vector"
        );
    }
    drop((stored, snap));
    let again = store
        .embed_missing(&LengthEmbedder, &mut |_, _| {})
        .unwrap();
    assert_eq!((again.stale, again.encoded), (0, 0));
    assert!(store.check().unwrap().is_clean());
}

/// Choosing the descriptive style drops every item vector in the commit that records it; the
/// lexical index follows at once and the next embed makes every vector again from the
/// paragraphs; going back to SGM does the same the other way, and choosing the style a store
/// already has changes nothing.
#[test]
fn the_item_text_style_is_the_stores_and_its_vectors_follow_it() {
    use memdb::{IngestItem, IngestOptions, RecallOptions, recall::ItemTextStyle, recall::Signals};
    let dir = tempfile::tempdir().unwrap();
    // f32 item vectors: the test embedder writes text lengths into them, compared exactly.
    let options = Options {
        item_vector_precision: memdb::vectors::Precision::F32,
        ..Options::default()
    };
    let store = Store::create(dir.path().join("store"), options).unwrap();
    let drafts = [
        note("n1", "2024-03-01T09:00:00Z", "Booked the ferry to Naxos."),
        note(
            "n2",
            "2024-03-02T20:15:00Z",
            "Dinner with Lena at the harbour.",
        ),
        note(
            "n3",
            "2024-03-03T23:40:00Z",
            "Could not sleep, read about volcanoes.",
        ),
    ];
    store
        .ingest_items(
            drafts.iter().cloned().map(IngestItem::new),
            Some(&LengthEmbedder),
            IngestOptions::default(),
            &mut |_, _, _| {},
        )
        .unwrap();
    let text_lengths = |store: &Store| -> Vec<(f32, f32)> {
        let snap = store.snapshot().unwrap();
        let style = snap.item_text_style().unwrap();
        let stored = snap.vectors(ITEM_VECTORS).unwrap().unwrap();
        snap.scan(&ScanFilter::default())
            .unwrap()
            .iter()
            .map(|item| {
                let want = memdb::recall::item_text_in(item, style).len() as f32 / 1000.0;
                (stored.get(item.id).unwrap()[1], want)
            })
            .collect()
    };
    assert_eq!(
        store.snapshot().unwrap().item_text_style().unwrap(),
        ItemTextStyle::Sgm
    );
    assert!(text_lengths(&store).iter().all(|(got, want)| got == want));
    // A word only the descriptive text has ("night": n3 was written at 23:40) finds it by BM25
    // as soon as the style is chosen, before any vector is made again.
    let lexical = RecallOptions {
        signals: Signals {
            dense: false,
            lexical: true,
            graph: false,
            place: false,
        },
        ..RecallOptions::default()
    };
    let night = |store: &Store| -> Vec<u64> {
        store
            .recall("night", &lexical, &LengthEmbedder)
            .unwrap()
            .hits
            .iter()
            .map(|h| h.item)
            .collect()
    };
    assert!(night(&store).is_empty());

    assert_eq!(
        store
            .set_item_text_style(ItemTextStyle::Descriptive)
            .unwrap(),
        3
    );
    assert_eq!(
        store.snapshot().unwrap().item_text_style().unwrap(),
        ItemTextStyle::Descriptive
    );
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .vector_keys(ITEM_VECTORS)
            .unwrap()
            .len(),
        0
    );
    let n3 = store
        .snapshot()
        .unwrap()
        .get_by_external_id("n3")
        .unwrap()
        .unwrap()
        .id;
    assert_eq!(night(&store), [n3]);
    let report = store
        .embed_missing(&LengthEmbedder, &mut |_, _| {})
        .unwrap();
    assert_eq!((report.stale, report.encoded), (0, 3));
    assert!(text_lengths(&store).iter().all(|(got, want)| got == want));
    // The same style again: nothing dropped.
    assert_eq!(
        store
            .set_item_text_style(ItemTextStyle::Descriptive)
            .unwrap(),
        0
    );

    // Reopened, the store keeps its style; back to SGM, every vector is made again.
    drop(store);
    let store = Store::open(dir.path().join("store"), Options::default()).unwrap();
    assert_eq!(
        store.snapshot().unwrap().item_text_style().unwrap(),
        ItemTextStyle::Descriptive
    );
    assert_eq!(store.set_item_text_style(ItemTextStyle::Sgm).unwrap(), 3);
    let report = store
        .embed_missing(&LengthEmbedder, &mut |_, _| {})
        .unwrap();
    assert_eq!((report.stale, report.encoded), (0, 3));
    assert!(text_lengths(&store).iter().all(|(got, want)| got == want));
    assert!(night(&store).is_empty());
    assert!(store.check().unwrap().is_clean());
}
