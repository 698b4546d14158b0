//! Issue 17 (4): one flipped bit never blocks maintenance for good. `check` names exactly what
//! damage makes unreadable; `repair` salvages every readable item, blob and vector into new
//! segments and lists exactly what it could not save; afterwards compaction, pages and every
//! read work again. Bits are flipped in open and sealed segments, in item blocks, photo
//! originals and vector blocks.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memdb::{
    BlobKind, Item, Options, Store, maintenance::CompactOptions, maintenance::KeepEverything,
    maintenance::Victims, vectors::ITEM_VECTORS,
};
use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryHeader, EntryKind, PAGE};
use memdb_it::{crash_batch_len, crash_external_id, crash_item};

/// Builds a store of `batches` crash-workload batches, each item with a 4-d vector; with
/// `seal`, every segment is sealed by a compaction. Returns every item by external id.
fn build(path: &Path, batches: u64, seal: bool) -> BTreeMap<String, Item> {
    let store = Store::create(path, Options::default()).unwrap();
    for batch in 0..batches {
        let mut wb = store.batch();
        for index in 0..crash_batch_len(batch) {
            let (draft, blobs) = crash_item(batch, index);
            let v = vec![1.0, batch as f32, index as f32, 0.5];
            wb.put_with_vector(draft, blobs, v);
        }
        wb.commit().unwrap();
    }
    if seal {
        memdb_it::compact_everything(&store);
    }
    let snap = store.snapshot().unwrap();
    let mut all = BTreeMap::new();
    for batch in 0..batches {
        for index in 0..crash_batch_len(batch) {
            let ext = crash_external_id(batch, index);
            let item = snap.get_by_external_id(&ext).unwrap().unwrap();
            all.insert(ext, item);
        }
    }
    assert!(store.check().unwrap().is_clean());
    all
}

/// Every entry of every segment file: (file, entry offset, kind, payload length).
fn entries(path: &Path) -> Vec<(PathBuf, u64, EntryKind, u64)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(path.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let mut at = PAGE as u64;
        while at + PAGE as u64 <= bytes.len() as u64 {
            match EntryHeader::decode(&bytes[at as usize..], at) {
                Ok(h) => {
                    out.push((file.clone(), at, h.kind, h.payload_len));
                    at += h.pages() * PAGE as u64;
                }
                Err(_) => at += PAGE as u64,
            }
        }
    }
    out
}

fn flip(file: &Path, offset: u64) {
    let mut bytes = std::fs::read(file).unwrap();
    bytes[offset as usize] ^= 0x10;
    std::fs::write(file, bytes).unwrap();
}

/// The middle byte of the payload of the `n`-th entry of `kind` (of those at least `min`
/// bytes long).
fn target(path: &Path, kind: EntryKind, n: usize, min: u64) -> (PathBuf, u64) {
    let (file, at, _, len) = entries(path)
        .into_iter()
        .filter(|e| e.2 == kind && e.3 >= min)
        .nth(n)
        .expect("such an entry");
    (file, at + ENTRY_HEADER_BYTES as u64 + len / 2)
}

/// After a repair: every item but `lost` reads back exactly as written; the store checks
/// clean; compaction of everything works.
fn assert_salvaged(path: &Path, all: &BTreeMap<String, Item>, lost: &[String]) {
    let mut store = Store::open(path, Options::default()).unwrap();
    let report = store.check().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let snap = store.snapshot().unwrap();
    for (ext, item) in all {
        let got = snap.get_by_external_id(ext).unwrap();
        if lost.contains(ext) {
            assert!(
                got.as_ref()
                    .is_none_or(|g| g.fields.tags == ["recovered"] && !g.blobs.is_empty()),
                "{ext} was lost: gone, or a stand-in that keeps its files: {got:?}"
            );
        } else {
            let got = got.unwrap_or_else(|| panic!("{ext} was not damaged but is gone"));
            assert_eq!(got.fields, item.fields, "{ext}");
        }
    }
    assert_eq!(
        snap.item_count().unwrap() as usize,
        all.len()
            - lost
                .iter()
                .filter(|e| snap.get_by_external_id(e).unwrap().is_none())
                .count()
    );
    drop(snap);
    store
        .compact(
            &CompactOptions {
                victims: Victims::All,
            },
            &mut KeepEverything,
        )
        .unwrap();
    store.shrink_catalog().unwrap();
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn a_flipped_bit_in_an_open_segment_loses_one_item_and_repair_saves_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let all = build(&path, 12, false);
    let (file, offset) = target(&path, EntryKind::ItemBlock, 5, 2000);
    flip(&file, offset);

    let store = Store::open(&path, Options::default()).unwrap();
    let report = store.check().unwrap();
    // Exactly one item is unreadable, and the report says so — not one problem per item
    // after the damage (the walk goes on past a damaged entry).
    assert_eq!(report.damage.items.len(), 1, "{:?}", report.damage);
    assert!(report.problems.len() <= 3, "{:#?}", report.problems);
    let lost_id = report.damage.items[0];
    let lost: Vec<String> = all
        .iter()
        .filter(|(_, i)| i.id == lost_id)
        .map(|(e, _)| e.clone())
        .collect();
    assert_eq!(lost.len(), 1);
    // A plain compaction leaves the damaged segment as it is until it is repaired (issue 48:
    // it no longer fails on it).
    let compacted = store
        .compact(
            &CompactOptions {
                victims: Victims::All,
            },
            &mut KeepEverything,
        )
        .unwrap();
    assert_eq!(compacted.segments_skipped_damaged.len(), 1, "{compacted:?}");
    let repaired = store.repair(&mut |_, _| {}).unwrap();
    assert_eq!(repaired.damage.items, vec![lost_id]);
    assert_eq!(repaired.remaining, 0, "{repaired:?}");
    assert_eq!(
        repaired.stand_ins.len() + repaired.items_lost.len(),
        1,
        "{repaired:?}"
    );
    drop(store);
    assert_salvaged(&path, &all, &lost);
}

#[test]
fn a_damaged_photo_original_in_a_sealed_segment_is_dropped_from_its_item_with_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let all = build(&path, 10, true);
    let (file, offset) = target(&path, EntryKind::Blob, 2, 8000);
    flip(&file, offset);
    let store = Store::open(&path, Options::default()).unwrap();
    let report = store.check().unwrap();
    assert!(report.damage.items.is_empty());
    assert_eq!(report.damage.blobs.len(), 1, "{:?}", report.damage);
    let blob = report.damage.blobs[0];
    let owner = match blob.kind {
        BlobKind::Original => blob.owner.unwrap(),
        other => panic!("the flip hit a {other:?} blob"),
    };
    let repaired = store.repair(&mut |_, _| {}).unwrap();
    assert_eq!(repaired.remaining, 0, "{repaired:?}");
    let snap = store.snapshot().unwrap();
    let item = snap.get(owner).unwrap().unwrap();
    assert!(!item.blobs.contains(&blob.id));
    let dropped = snap.dropped_blobs(owner).unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!((dropped[0].id, dropped[0].len), (blob.id, blob.len));
    assert!(dropped[0].why.starts_with("repair:"), "{}", dropped[0].why);
    drop(snap);
    drop(store);
    assert_salvaged(&path, &all, &[]);
}

#[test]
fn a_damaged_vector_block_loses_its_vectors_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let all = build(&path, 6, true);
    let store = Store::open(&path, Options::default()).unwrap();
    let keys_before = store
        .snapshot()
        .unwrap()
        .vector_keys(ITEM_VECTORS)
        .unwrap()
        .len();
    drop(store);
    // Vector blocks are blobs of kind 4 that hold `MDBVECS`.
    let (file, at, _, len) = entries(&path)
        .into_iter()
        .find(|(file, at, kind, _)| {
            *kind == EntryKind::Blob && {
                let bytes = std::fs::read(file).unwrap();
                let start = (*at as usize) + ENTRY_HEADER_BYTES;
                bytes[start..start + 7] == *b"MDBVECS"
            }
        })
        .unwrap();
    flip(&file, at + ENTRY_HEADER_BYTES as u64 + len / 2);
    let store = Store::open(&path, Options::default()).unwrap();
    let report = store.check().unwrap();
    assert!(report.damage.items.is_empty());
    assert!(!report.damage.vectors.is_empty(), "{:?}", report.damage);
    let lost_vectors = report.damage.vectors.len() as u64;
    let repaired = store.repair(&mut |_, _| {}).unwrap();
    assert_eq!(repaired.remaining, 0, "{repaired:?}");
    let keys_after = store
        .snapshot()
        .unwrap()
        .vector_keys(ITEM_VECTORS)
        .unwrap()
        .len();
    assert_eq!(keys_after, keys_before - lost_vectors);
    drop(store);
    assert_salvaged(&path, &all, &[]);
}

/// Items by external id, with the bytes of their blobs.
type Live = BTreeMap<String, (Item, Vec<Vec<u8>>)>;

/// Builds a store, deletes a few items (their bytes stay until compaction), and returns the
/// live items with their blob bytes.
fn build_with_deletes(path: &Path) -> (Live, Vec<String>) {
    let all = build(path, 12, false);
    let store = Store::open(path, Options::default()).unwrap();
    let deleted: Vec<String> = all.keys().step_by(7).take(3).cloned().collect();
    let mut b = store.batch();
    for ext in &deleted {
        b.delete_external(ext.clone());
    }
    b.commit().unwrap();
    let snap = store.snapshot().unwrap();
    let live = all
        .into_iter()
        .filter(|(e, _)| !deleted.contains(e))
        .map(|(e, item)| {
            let blobs = item
                .blobs
                .iter()
                .map(|b| snap.blob(*b).unwrap().unwrap().to_vec())
                .collect();
            (e, (item, blobs))
        })
        .collect();
    (live, deleted)
}

/// After a rebuild: every live item is back with its id, fields and ingest time; each of its
/// blobs is back byte for byte or listed as lost; deleted items come back only when the op
/// log could not say they were deleted.
fn assert_rebuilt(
    path: &Path,
    report: &memdb::maintenance::RebuildReport,
    live: &Live,
    deleted: &[String],
) {
    assert!(report.damaged_copy.is_dir());
    let store = Store::open(path, Options::default()).unwrap();
    assert!(store.check().unwrap().is_clean());
    let snap = store.snapshot().unwrap();
    for (ext, (item, blobs)) in live {
        let got = snap
            .get_by_external_id(ext)
            .unwrap()
            .unwrap_or_else(|| panic!("{ext} was not rebuilt"));
        assert_eq!(
            (got.id, got.ingest_time_ms, &got.fields),
            (item.id, item.ingest_time_ms, &item.fields),
            "{ext}"
        );
        for (blob, bytes) in item.blobs.iter().zip(blobs) {
            match snap.blob(*blob).unwrap() {
                Some(b) => assert_eq!(&*b, bytes.as_slice(), "{ext}: blob {blob}"),
                None => assert!(
                    report.blobs_lost.contains(blob),
                    "{ext}: blob {blob} vanished"
                ),
            }
        }
    }
    let resurrected = deleted
        .iter()
        .filter(|e| snap.get_by_external_id(e).unwrap().is_some())
        .count();
    if report.deletions_known {
        assert_eq!(resurrected, 0);
    }
    assert_eq!(
        snap.item_count().unwrap() as usize,
        live.len() + resurrected,
        "{report:?}"
    );
    assert_eq!(report.items as usize, live.len() + resurrected);
    assert!(report.items_lost.is_empty(), "{report:?}");
}

#[test]
fn a_catalog_that_does_not_open_is_rebuilt_from_the_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let (live, deleted) = build_with_deletes(&path);
    // Garbage over the catalog's first pages: redb's header is gone.
    let catalog = path.join("catalog.redb");
    let mut bytes = std::fs::read(&catalog).unwrap();
    for (i, b) in bytes.iter_mut().take(8192).enumerate() {
        *b = (i * 7 + 13) as u8;
    }
    std::fs::write(&catalog, bytes).unwrap();
    assert!(Store::open(&path, Options::default()).is_err());
    let report = Store::rebuild(
        &path,
        Options::default(),
        "test: catalog header destroyed",
        &mut |_, _| {},
    )
    .unwrap();
    // Without a catalog nothing says which items were deleted: the report says so.
    assert!(!report.deletions_known);
    assert_rebuilt(&path, &report, &live, &deleted);
}

#[test]
fn a_catalog_with_damaged_pages_is_rebuilt_keeping_every_readable_item() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let (live, deleted) = build_with_deletes(&path);
    // Find a catalog page holding live rows: flipped, the store still opens but reading its
    // tables fails (a page nothing reads, an old copy-on-write page, goes unnoticed). redb
    // walks every page's structure at open, so a broken header fails the open (the test
    // above), and a bit in a row's bytes may read as a wrong row instead (check reports it,
    // the catalog is not damaged). Each page is tried at a byte of its data and at byte 6, in
    // the first key's end offset where a leaf's keys have variable width (a redb leaf: type,
    // reserved, entry count u16, then the end offsets), which sends a read past the page.
    // Which pages and bytes fail depends on the catalog's layout.
    let catalog = path.join("catalog.redb");
    let pristine = std::fs::read(&catalog).unwrap();
    let mut why = None;
    // (Some pages make the catalog refuse to open at all — that case is the test above;
    // redb panics on some of those, which the open must turn into an error, not a crash.)
    'pages: for page in 2..pristine.len() / 4096 {
        for at in [100, 6] {
            let mut bytes = pristine.clone();
            bytes[page * 4096 + at] ^= 0x04;
            std::fs::write(&catalog, &bytes).unwrap();
            if let Ok(store) = Store::open(&path, Options::default()) {
                let report = store
                    .check()
                    .expect("check reports a damaged catalog, never fails");
                if report.catalog_damaged {
                    why = Some(report.problems[0].what.clone());
                    // `repair` says the catalog is beyond it: the store must be rebuilt.
                    assert!(matches!(
                        store.repair(&mut |_, _| {}),
                        Err(memdb::StoreError::CatalogDamaged { .. })
                    ));
                    break 'pages;
                }
            }
        }
    }
    let why = why.expect("some page of the catalog is read by check");
    let report = Store::rebuild(&path, Options::default(), &why, &mut |_, _| {}).unwrap();
    assert_rebuilt(&path, &report, &live, &deleted);
}

#[test]
fn a_photo_whose_record_is_lost_gets_its_fields_back_from_its_original() {
    let Some(photos) = memdb_it::shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let before: BTreeMap<u64, Item> = {
        let store = Store::create(&path, Options::default()).unwrap();
        memdb_it::import_photos(&store, &photos.join("exif-samples"), 12);
        let snap = store.snapshot().unwrap();
        snap.scan(&memdb::ScanFilter::default())
            .unwrap()
            .into_iter()
            .map(|i| (i.id, i))
            .collect()
    };
    let (file, offset) = target(&path, EntryKind::ItemBlock, 0, 200);
    flip(&file, offset);
    let store = Store::open(&path, Options::default()).unwrap();
    let report = store.repair(&mut |_, _| {}).unwrap();
    assert_eq!(report.damage.items.len(), 1, "{report:?}");
    let lost = report.damage.items[0];
    assert_eq!(report.stand_ins, vec![lost], "its original survived");
    assert_eq!(report.remaining, 0);
    let item = store.snapshot().unwrap().get(lost).unwrap().unwrap();
    let was = &before[&lost];
    assert_eq!(item.fields.time, was.fields.time, "EXIF time read again");
    assert_eq!(item.fields.location, was.fields.location);
    assert_eq!(item.fields.external_id, was.fields.external_id);
    assert_eq!(item.blobs, was.blobs);
    assert!(item.fields.tags.contains(&"recovered".to_owned()));
    assert_eq!(item.fields.camera, was.fields.camera);
    assert!(item.fields.camera.is_some(), "the camera read again");
}
