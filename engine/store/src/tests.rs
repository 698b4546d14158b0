//! Store tests: the API contract and the invariants of DESIGN.md §3, one test each.

use std::os::unix::fs::PermissionsExt;

use super::*;
use memdb_formats::item::{EventTime, ItemDraft, ItemFields, Source};

fn draft(ext: &str, minute: i64, body: &str) -> ItemDraft {
    let mut fields = ItemFields::new(
        Source::Chat,
        EventTime::utc(1_700_000_000_000 + minute * 60_000),
    );
    fields.external_id = Some(ext.to_owned());
    fields.body = Some(body.to_owned());
    ItemDraft {
        fields,
        supersedes: None,
    }
}

fn small() -> Options {
    Options {
        segment_target_bytes: 64 << 10,
        ..Options::default()
    }
}

fn segment_files(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn put_get_update_delete_and_scan() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let mut batch = store.batch();
    batch
        .put(draft("a", 3, "third"))
        .put(draft("b", 1, "first"))
        .put(draft("c", 2, "second"));
    let receipt = batch.commit().unwrap();
    assert!(receipt.puts.iter().all(|p| p.status == PutStatus::Added));
    let ids: Vec<u64> = receipt.puts.iter().map(|p| p.id).collect();

    let snap = store.snapshot().unwrap();
    assert_eq!(
        snap.get(ids[0]).unwrap().unwrap().fields.body.as_deref(),
        Some("third")
    );
    assert_eq!(snap.get_by_external_id("b").unwrap().unwrap().id, ids[1]);
    let in_order: Vec<u64> = snap
        .scan(&ScanFilter::default())
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(in_order, vec![ids[1], ids[2], ids[0]]);
    let window = ScanFilter {
        time: crate::TimeWindow::utc_range(
            1_700_000_000_000 + 60_000,
            1_700_000_000_000 + 3 * 60_000,
        ),
        ..Default::default()
    };
    assert_eq!(snap.scan_ids(&window).unwrap(), vec![ids[1], ids[2]]);
    let other = ScanFilter {
        source: Some(Source::Email),
        ..Default::default()
    };
    assert!(snap.scan_ids(&other).unwrap().is_empty());
    let chats = ScanFilter {
        source: Some(Source::Chat),
        limit: Some(2),
        ..Default::default()
    };
    assert_eq!(snap.scan_ids(&chats).unwrap(), vec![ids[1], ids[2]]);

    // Same external id: update in place; identical: unchanged, nothing written.
    let mut batch = store.batch();
    batch
        .put(draft("a", 3, "third, edited"))
        .put(draft("b", 1, "first"));
    let receipt = batch.commit().unwrap();
    assert_eq!(
        receipt.puts[0],
        PutOutcome {
            id: ids[0],
            status: PutStatus::Updated,
            blob_ids: vec![]
        }
    );
    assert_eq!(receipt.puts[1].status, PutStatus::Unchanged);
    assert_eq!(store.snapshot().unwrap().item_count().unwrap(), 3);
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .get(ids[0])
            .unwrap()
            .unwrap()
            .fields
            .body
            .as_deref(),
        Some("third, edited")
    );

    // The old snapshot still sees the old version.
    assert_eq!(
        snap.get(ids[0]).unwrap().unwrap().fields.body.as_deref(),
        Some("third")
    );

    let mut batch = store.batch();
    batch.delete(ids[1]).delete_external("nope");
    let receipt = batch.commit().unwrap();
    assert_eq!(receipt.deleted, 1);
    assert_eq!(receipt.warnings.len(), 1);
    let snap = store.snapshot().unwrap();
    assert!(snap.get(ids[1]).unwrap().is_none());
    assert!(snap.get_by_external_id("b").unwrap().is_none());
    assert_eq!(
        snap.scan_ids(&ScanFilter::default()).unwrap(),
        vec![ids[2], ids[0]]
    );
    // A delete retires the item: its record stays as its last version (format 8).
    let retired = snap.history(ids[1]).unwrap();
    assert_eq!(retired.versions.len(), 1);
    assert_eq!(
        retired.versions[0].system_to_ms,
        Some(retired.ops[1].system_ms)
    );
    let stats = store.stats().unwrap();
    assert_eq!(stats.items, 2);
    assert!(store.check().unwrap().is_clean());
    // A purge removes it physically: its bytes are dead.
    assert!(store.purge(ids[1]).unwrap());
    assert!(
        store
            .snapshot()
            .unwrap()
            .history(ids[1])
            .unwrap()
            .versions
            .is_empty()
    );
    assert!(store.stats().unwrap().dead_bytes > 0);
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn invalid_items_reject_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let mut bad = draft("x", 0, "x");
    bad.fields.time.offset_minutes = 5000;
    let mut batch = store.batch();
    batch.put(draft("ok", 0, "fine")).put(bad);
    assert!(matches!(
        batch.commit(),
        Err(Error::InvalidItem { index: 1, .. })
    ));
    assert_eq!(store.snapshot().unwrap().item_count().unwrap(), 0);
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn blobs_are_zero_copy_owned_and_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let photo: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let mut batch = store.batch();
    batch.put_with_blobs(
        draft("p", 0, "photo"),
        vec![(BlobKind::Original, photo.clone())],
    );
    batch.put_blob(BlobKind::Other, b"loose".to_vec());
    let receipt = batch.commit().unwrap();
    let blob_id = receipt.puts[0].blob_ids[0];
    let snap = store.snapshot().unwrap();
    let blob = snap.blob(blob_id).unwrap().unwrap();
    assert_eq!(&blob[..], &photo[..]);
    assert_eq!(blob.info().owner, Some(receipt.puts[0].id));
    assert_eq!(
        blob.as_ptr() as usize % 64,
        0,
        "payloads are 64-byte aligned"
    );
    assert_eq!(&snap.blob(receipt.blobs[0]).unwrap().unwrap()[..], b"loose");

    // A delete is soft: the retired item keeps its original for an undelete; a purge frees it.
    let mut batch = store.batch();
    batch.delete(receipt.puts[0].id);
    batch.commit().unwrap();
    assert!(store.snapshot().unwrap().blob(blob_id).unwrap().is_some());
    store.purge(receipt.puts[0].id).unwrap();
    assert!(store.snapshot().unwrap().blob(blob_id).unwrap().is_none());
    let report = store
        .compact(
            &CompactOptions {
                victims: Victims::All,
            },
            &mut KeepEverything,
        )
        .unwrap();
    assert_eq!(report.blobs_kept, 1);
    assert!(store.check().unwrap().is_clean());
    assert_eq!(store.stats().unwrap().dead_bytes, 0);
    // The old snapshot keeps its segment mapped and readable (invariant 4).
    assert_eq!(&blob[..], &photo[..]);
}

fn compact_all(store: &Store) -> CompactReport {
    store
        .compact(
            &CompactOptions {
                victims: Victims::All,
            },
            &mut KeepEverything,
        )
        .unwrap()
}

fn retire(store: &Store, id: u64) {
    let mut batch = store.batch();
    batch.delete(id);
    batch.commit().unwrap();
}

fn restore_note() -> OpNote {
    OpNote {
        reason: "undo".to_owned(),
        actor: None,
        role: None,
    }
}

/// A deleted item keeps its original through compactions inside the retention window, and an
/// undelete brings back the item, its original and its external id, with the delete and the
/// restore in its history.
#[test]
fn an_undelete_restores_a_deleted_item_with_its_original() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    assert_eq!(store.retention_days().unwrap(), DEFAULT_RETENTION_DAYS);
    let photo: Vec<u8> = (0..10_000u32).map(|i| (i % 249) as u8).collect();
    let mut batch = store.batch();
    batch.put_with_blobs(
        draft("p", 0, "the photo of the harbour"),
        vec![(BlobKind::Original, photo.clone())],
    );
    let receipt = batch.commit().unwrap();
    let (id, blob) = (receipt.puts[0].id, receipt.puts[0].blob_ids[0]);
    let before = store.snapshot().unwrap().get(id).unwrap().unwrap();

    store
        .apply(vec![MemoryOp::Delete {
            id,
            valid_to_ms: None,
            note: OpNote::default(),
        }])
        .unwrap();
    let snap = store.snapshot().unwrap();
    assert!(snap.get(id).unwrap().is_none());
    assert!(snap.get_by_external_id("p").unwrap().is_none());
    drop(snap);
    let report = compact_all(&store);
    assert_eq!(report.retired_blobs_expired, 0);
    assert!(
        store.check().unwrap().is_clean(),
        "{:?}",
        store.check().unwrap()
    );

    let applied = store.restore(id, restore_note()).unwrap();
    assert_eq!((applied.kind, applied.id), (MemoryOpKind::Add, id));
    let snap = store.snapshot().unwrap();
    let after = snap.get(id).unwrap().unwrap();
    assert_eq!(after.fields, before.fields);
    assert_eq!(after.blobs, vec![blob]);
    assert_eq!(&snap.blob(blob).unwrap().unwrap()[..], &photo[..]);
    assert_eq!(
        snap.get_by_external_id("p").unwrap().map(|i| i.id),
        Some(id)
    );
    let kinds: Vec<_> = snap
        .history(id)
        .unwrap()
        .ops
        .iter()
        .map(|op| op.kind)
        .collect();
    assert_eq!(
        kinds,
        [MemoryOpKind::Add, MemoryOpKind::Delete, MemoryOpKind::Add]
    );
    drop(snap);
    assert!(store.check().unwrap().is_clean());
    // A current item cannot be restored; nothing of an unknown one can.
    assert!(matches!(
        store.restore(id, restore_note()),
        Err(Error::InvalidItem { .. })
    ));
    assert!(matches!(
        store.restore(9_999, restore_note()),
        Err(Error::NoMemory { .. })
    ));
}

/// Past the retention window a compaction drops a deleted item's original; an undelete then
/// brings the item back without it, and `check` stays clean throughout.
#[test]
fn the_retention_window_bounds_what_an_undelete_brings_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let mut batch = store.batch();
    batch.put_with_blobs(
        draft("p", 0, "photo"),
        vec![(BlobKind::Original, vec![7; 5_000])],
    );
    batch.put_with_blobs(
        draft("q", 1, "kept photo"),
        vec![(BlobKind::Original, vec![8; 5_000])],
    );
    let receipt = batch.commit().unwrap();
    let (id, blob) = (receipt.puts[0].id, receipt.puts[0].blob_ids[0]);
    retire(&store, id);
    store.set_retention_days(0).unwrap();
    assert_eq!(store.retention_days().unwrap(), 0);
    let report = compact_all(&store);
    assert_eq!(report.retired_blobs_expired, 1);
    assert!(store.snapshot().unwrap().blob(blob).unwrap().is_none());
    assert!(store.check().unwrap().is_clean());
    store.restore(id, restore_note()).unwrap();
    let item = store.snapshot().unwrap().get(id).unwrap().unwrap();
    assert_eq!(item.fields.body.as_deref(), Some("photo"));
    assert!(item.blobs.is_empty());
    assert!(store.check().unwrap().is_clean());
    // The current item's original was never at risk.
    let kept = receipt.puts[1].blob_ids[0];
    assert_eq!(
        &store.snapshot().unwrap().blob(kept).unwrap().unwrap()[..],
        &[8; 5_000][..]
    );
}

/// The retention window's expiry is committed even when no segment is worth rewriting (the
/// default `DeadRatio` victims of `memdb compact`): the expired original is gone after it.
#[test]
fn an_expired_original_goes_even_when_no_segment_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut batch = store.batch();
    for i in 0..50 {
        batch.put_with_blobs(
            draft(&format!("n{i}"), i, "a photo"),
            vec![(BlobKind::Original, vec![i as u8; 20_000])],
        );
    }
    batch.put_with_blobs(
        draft("small", 60, "small photo"),
        vec![(BlobKind::Original, vec![9; 100])],
    );
    let receipt = batch.commit().unwrap();
    let (id, blob) = (receipt.puts[50].id, receipt.puts[50].blob_ids[0]);
    retire(&store, id);
    store.set_retention_days(0).unwrap();
    let report = store
        .compact(
            &CompactOptions {
                victims: Victims::DeadRatio(0.25),
            },
            &mut KeepEverything,
        )
        .unwrap();
    assert_eq!(report.retired_blobs_expired, 1);
    assert!(report.segments_removed.is_empty(), "{report:?}");
    assert!(store.snapshot().unwrap().blob(blob).unwrap().is_none());
    assert!(store.check().unwrap().is_clean());
}

/// A delete in the same batch as an update or an undelete of the item is still soft: the
/// committed original stays owned by the retired item, and an undelete brings it back.
#[test]
fn a_delete_after_an_update_in_one_batch_keeps_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let photo = vec![5u8; 4_000];
    let mut batch = store.batch();
    batch.put_with_blobs(
        draft("p", 0, "photo"),
        vec![(BlobKind::Original, photo.clone())],
    );
    let receipt = batch.commit().unwrap();
    let (id, blob) = (receipt.puts[0].id, receipt.puts[0].blob_ids[0]);
    // Put again under its external id (an update), then deleted, in one batch.
    let mut batch = store.batch();
    batch.put(draft("p", 1, "photo, renamed"));
    batch.delete_external("p");
    batch.commit().unwrap();
    assert!(store.snapshot().unwrap().get(id).unwrap().is_none());
    assert_eq!(
        &store.snapshot().unwrap().blob(blob).unwrap().unwrap()[..],
        &photo[..]
    );
    assert!(store.check().unwrap().is_clean());
    // Restored and deleted again in one batch: still kept.
    store
        .apply(vec![
            MemoryOp::Restore {
                id,
                note: restore_note(),
            },
            MemoryOp::Delete {
                id,
                valid_to_ms: None,
                note: OpNote::default(),
            },
        ])
        .unwrap();
    assert!(store.snapshot().unwrap().get(id).unwrap().is_none());
    assert!(store.snapshot().unwrap().blob(blob).unwrap().is_some());
    store.restore(id, restore_note()).unwrap();
    assert_eq!(
        store.snapshot().unwrap().get(id).unwrap().unwrap().blobs,
        vec![blob]
    );
    assert!(store.check().unwrap().is_clean());
}

/// An undelete that would give an external id two items is refused: a new item took it.
#[test]
fn an_undelete_never_takes_an_external_id_another_item_holds() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let mut batch = store.batch();
    batch.put(draft("n", 0, "first"));
    let id = batch.commit().unwrap().puts[0].id;
    retire(&store, id);
    let mut batch = store.batch();
    batch.put(draft("n", 1, "second"));
    let other = batch.commit().unwrap().puts[0].id;
    assert_ne!(id, other);
    let refused = store.restore(id, restore_note()).unwrap_err();
    assert!(refused.to_string().contains("names item"), "{refused}");
    assert!(store.snapshot().unwrap().get(id).unwrap().is_none());
}

#[test]
fn segments_roll_and_seal_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, small()).unwrap();
    // Letters that do not repeat: a repeated phrase would be stored compressed (record version
    // 3) to a few dozen bytes, and the segments would not fill.
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    let mut letters = |n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    };
    for b in 0..30 {
        let mut batch = store.batch();
        for i in 0..20 {
            batch.put(draft(&format!("{b}-{i}"), b * 20 + i, &letters(600)));
        }
        batch.commit().unwrap();
    }
    let stats = store.stats().unwrap();
    assert!(
        stats.segments.iter().filter(|s| s.sealed).count() >= 2,
        "{stats:?}"
    );
    assert!(store.check().unwrap().is_clean());
    drop(store);
    let store = Store::open(&path, small()).unwrap();
    assert_eq!(store.snapshot().unwrap().item_count().unwrap(), 600);
    let report = store.check().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let mut batch = store.batch();
    batch.put(draft("after", 0, "after reopen"));
    batch.commit().unwrap();
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn compaction_hook_replaces_and_drops() {
    struct Forgetful;
    impl CompactionHook for Forgetful {
        fn rewrite_item(&mut self, item: &memdb_formats::item::ItemRecord) -> Result<ItemRewrite> {
            Ok(match item.fields.body.as_deref() {
                Some("drop me") => ItemRewrite::Drop,
                Some("shrink me") => {
                    let mut f = item.fields.clone();
                    f.body = Some("shrunk".into());
                    ItemRewrite::Replace(Box::new(f))
                }
                _ => ItemRewrite::Keep,
            })
        }
        fn rewrite_blob(&mut self, _: &BlobInfo, bytes: &[u8]) -> Result<BlobRewrite> {
            Ok(if bytes.len() > 100 {
                BlobRewrite::Replace(bytes[..100].to_vec())
            } else {
                BlobRewrite::Drop
            })
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let mut batch = store.batch();
    batch.put(draft("1", 0, "drop me"));
    batch.put_with_blobs(
        draft("2", 1, "shrink me"),
        vec![
            (BlobKind::Page, vec![7; 1000]),
            (BlobKind::Original, vec![1; 10]),
        ],
    );
    batch.put(draft("3", 2, "keep me"));
    let r = batch.commit().unwrap();
    let report = store
        .compact(
            &CompactOptions {
                victims: Victims::All,
            },
            &mut Forgetful,
        )
        .unwrap();
    assert_eq!(
        (
            report.items_dropped,
            report.items_replaced,
            report.items_kept
        ),
        (1, 1, 1)
    );
    assert_eq!((report.blobs_replaced, report.blobs_dropped), (1, 1));
    let snap = store.snapshot().unwrap();
    assert!(snap.get(r.puts[0].id).unwrap().is_none());
    let shrunk = snap.get(r.puts[1].id).unwrap().unwrap();
    assert_eq!(shrunk.fields.body.as_deref(), Some("shrunk"));
    assert_eq!(shrunk.blobs, vec![r.puts[1].blob_ids[0]]);
    assert_eq!(snap.blob(shrunk.blobs[0]).unwrap().unwrap().len(), 100);
    assert!(snap.blob(r.puts[1].blob_ids[1]).unwrap().is_none());
    let check = store.check().unwrap();
    assert!(check.is_clean(), "{:?}", check.problems);
}

#[test]
fn orphans_and_uncommitted_tails_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, small()).unwrap();
    let mut batch = store.batch();
    batch.put(draft("a", 0, "committed"));
    batch.commit().unwrap();
    let files = segment_files(&store);
    assert_eq!(files.len(), 1);
    let seg_path = path.join("segments").join(&files[0]);
    let committed_len = std::fs::metadata(&seg_path).unwrap().len();
    drop(store);
    // A crash mid-append leaves bytes past the committed length; a crash before a commit that
    // would have referenced a new segment leaves an orphan file.
    let mut bytes = std::fs::read(&seg_path).unwrap();
    bytes.extend_from_slice(&[0xAB; 5000]);
    std::fs::write(&seg_path, &bytes).unwrap();
    std::fs::write(
        path.join("segments").join("00000000000000ff.seg"),
        b"orphan",
    )
    .unwrap();
    std::fs::write(path.join("segments").join("x.tmp"), b"tmp").unwrap();
    let store = Store::open(&path, small()).unwrap();
    assert_eq!(segment_files(&store), files);
    assert_eq!(std::fs::metadata(&seg_path).unwrap().len(), committed_len);
    assert!(store.check().unwrap().is_clean());
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .get_by_external_id("a")
            .unwrap()
            .unwrap()
            .fields
            .body
            .as_deref(),
        Some("committed")
    );
}

#[test]
fn files_are_private_and_the_lock_is_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, small()).unwrap();
    let mut batch = store.batch();
    batch.put(draft("a", 0, "x"));
    batch.commit().unwrap();
    for entry in walk(&path) {
        let mode = std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777;
        let expected = if entry.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, expected, "{}", entry.display());
    }
    assert!(matches!(
        Store::open(&path, small()),
        Err(Error::Locked { .. })
    ));
    drop(store);
    Store::open(&path, small()).unwrap();
}

fn walk(path: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![path.to_path_buf()];
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            out.extend(walk(&e.unwrap().path()));
        }
    }
    out
}

#[test]
fn a_flipped_byte_is_reported_never_a_wrong_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, small()).unwrap();
    let mut batch = store.batch();
    batch.put(draft("a", 0, "the quick brown fox"));
    batch.put_blob(BlobKind::Other, vec![9; 3000]);
    let r = batch.commit().unwrap();
    let seg = path.join("segments").join(&segment_files(&store)[0]);
    drop(store);
    let clean = std::fs::read(&seg).unwrap();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..300 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let pos = (rng % clean.len() as u64) as usize;
        let mut bad = clean.clone();
        bad[pos] ^= 1 << (rng % 8);
        std::fs::write(&seg, &bad).unwrap();
        let store = match Store::open(&path, small()) {
            Ok(s) => s,
            Err(e) => panic!("open must tolerate a damaged segment: {e}"),
        };
        let report = store.check().unwrap();
        assert!(!report.is_clean(), "flip at {pos} not reported");
        let snap = store.snapshot().unwrap();
        match snap.get(r.puts[0].id) {
            Ok(Some(item)) => assert_eq!(item.fields.body.as_deref(), Some("the quick brown fox")),
            Ok(None) => panic!("item vanished"),
            Err(Error::Corruption { .. } | Error::SegmentUnavailable { .. }) => {}
            Err(e) => panic!("untyped error {e}"),
        }
        match snap.blob(r.blobs[0]) {
            Ok(Some(b)) => assert_eq!(&b[..], &[9; 3000][..]),
            Ok(None) => panic!("blob vanished"),
            Err(Error::Corruption { .. } | Error::SegmentUnavailable { .. }) => {}
            Err(e) => panic!("untyped error {e}"),
        }
    }
}

#[test]
fn a_store_never_mixes_encoder_models() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, small()).unwrap();
    assert_eq!(store.model().unwrap(), None);
    store.bind_model("all-MiniLM-L6-v2@53aa5117").unwrap();
    store.bind_model("all-MiniLM-L6-v2@53aa5117").unwrap();
    drop(store);
    let store = Store::open(&path, small()).unwrap();
    assert!(matches!(
        store.bind_model("other-model@0000"),
        Err(Error::ModelMismatch { .. })
    ));
    assert_eq!(
        store.model().unwrap().as_deref(),
        Some("all-MiniLM-L6-v2@53aa5117")
    );
}

#[test]
fn shrink_catalog_returns_freed_pages_and_refuses_while_shared() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut ids = Vec::new();
    for chunk in 0..20 {
        let mut batch = store.batch();
        for i in 0..500 {
            let minute = chunk * 500 + i;
            batch.put(draft(&format!("external id {minute:0>40}"), minute, "x"));
        }
        ids.extend(batch.commit().unwrap().puts.iter().map(|p| p.id));
    }
    let mut batch = store.batch();
    for id in &ids[..9_800] {
        batch.purge(*id);
    }
    batch.commit().unwrap();

    let clone = store.clone();
    assert!(matches!(store.shrink_catalog(), Err(Error::InUse(_))));
    drop(clone);
    let snapshot = store.snapshot().unwrap();
    assert!(matches!(store.shrink_catalog(), Err(Error::InUse(_))));
    drop(snapshot);

    let shrink = store.shrink_catalog().unwrap();
    assert!(
        shrink.bytes_after * 2 < shrink.bytes_before,
        "catalog {} -> {} bytes",
        shrink.bytes_before,
        shrink.bytes_after
    );
    assert_eq!(store.stats().unwrap().catalog_bytes, shrink.bytes_after);
    assert_eq!(store.snapshot().unwrap().item_count().unwrap(), 200);
    assert!(store.check().unwrap().is_clean());
    drop(store);
    let store = Store::open(dir.path().join("s"), Options::default()).unwrap();
    assert_eq!(store.snapshot().unwrap().item_count().unwrap(), 200);
    assert!(store.check().unwrap().is_clean());
}

/// An encrypted store of format 9 (version 8 sealed: `by_time` beside `by_source`, the op log
/// one row per op in `oplog`) is read through its old tables and becomes version 11 (version
/// 10 sealed) at its first write, which moves the log and drops the old tables.
#[test]
fn an_encrypted_version_9_store_becomes_version_11_at_its_first_write() {
    use redb::{ReadableTable, TableHandle};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let options = || Options {
        secret: Some(std::sync::Arc::new(
            crate::crypto::Secret::passphrase("pw").unwrap(),
        )),
        kdf_cost: crate::crypto::KdfCost {
            memory_kib: 64,
            iterations: 1,
            parallelism: 1,
        },
        ..Options::default()
    };
    let version = |store: &Store| {
        let txn = store.inner.db.begin_read().unwrap();
        let meta = txn.open_table(catalog::META).unwrap();
        catalog::meta_get(&meta, catalog::KEY_FORMAT_VERSION).unwrap()
    };
    let tables = |store: &Store| -> Vec<String> {
        let txn = store.inner.db.begin_read().unwrap();
        let names = txn.list_tables().unwrap();
        names.map(|t| t.name().to_owned()).collect()
    };
    {
        let store = Store::create(&path, options()).unwrap();
        let mut b = store.batch();
        b.put(draft("a", 2, "later"));
        b.put(draft("b", 1, "earlier"));
        b.commit().unwrap();
        assert_eq!(version(&store), catalog::ENCRYPTED_FORMAT_VERSION);
        // Rewrite its catalog in the version-9 layout, through the store's own (sealed) file.
        let txn = store.inner.db.begin_write(&store.inner.paths).unwrap();
        {
            let batches = txn.open_table(catalog::OP_BATCHES).unwrap();
            let mut oplog = txn.open_table(catalog::OPLOG).unwrap();
            for row in batches.iter().unwrap() {
                let (first, value) = row.unwrap();
                let (at, packed) = value.value();
                for (seq, op, item) in catalog::decode_op_batch(first.value(), packed).unwrap() {
                    oplog.insert(seq, (op, item, at)).unwrap();
                }
            }
            let by_source = txn.open_table(catalog::BY_SOURCE).unwrap();
            let mut by_time = txn.open_table(catalog::BY_TIME).unwrap();
            for row in by_source.iter().unwrap() {
                let (_, ms, id) = row.unwrap().0.value();
                by_time.insert((ms, id), ()).unwrap();
            }
            txn.open_table(catalog::META)
                .unwrap()
                .insert(catalog::KEY_FORMAT_VERSION, 9)
                .unwrap();
        }
        assert!(txn.delete_table(catalog::OP_BATCHES).unwrap());
        txn.commit().unwrap();
    }
    let store = Store::open(&path, options()).unwrap();
    assert_eq!(version(&store), 9);
    let read = |store: &Store| {
        let snap = store.snapshot().unwrap();
        let bodies: Vec<String> = snap
            .scan(&ScanFilter::default())
            .unwrap()
            .into_iter()
            .map(|i| i.fields.body.unwrap())
            .collect();
        (bodies, snap.op_log(None).unwrap().len())
    };
    assert_eq!(read(&store), (vec!["earlier".into(), "later".into()], 2));
    assert!(store.check().unwrap().is_clean());
    let mut b = store.batch();
    b.put(draft("c", 3, "latest"));
    b.commit().unwrap();
    drop(store);
    let store = Store::open(&path, options()).unwrap();
    assert_eq!(version(&store), catalog::ENCRYPTED_FORMAT_VERSION);
    let names = tables(&store);
    assert!(
        !names.iter().any(|t| t == "by_time" || t == "oplog"),
        "{names:?}"
    );
    assert!(names.iter().any(|t| t == "op_batches"), "{names:?}");
    assert!(names.iter().any(|t| t == "segment_keys"), "{names:?}");
    assert_eq!(
        read(&store),
        (vec!["earlier".into(), "later".into(), "latest".into()], 3)
    );
    assert!(store.check().unwrap().is_clean());
}

/// Every row of catalog table `def` as the last commit left it, mapped by `row`.
fn catalog_rows<K: redb::Key + 'static, V: redb::Value + 'static, T>(
    store: &Store,
    def: redb::TableDefinition<K, V>,
    row: impl for<'a> Fn(K::SelfType<'a>, V::SelfType<'a>) -> T,
) -> Vec<T> {
    use redb::ReadableTable;
    let txn = store.inner.db.begin_read().unwrap();
    let table = txn.open_table(def).unwrap();
    table
        .iter()
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            row(k.value(), v.value())
        })
        .collect()
}

/// One step of a batch, applied to whichever batch a test commits it in.
type BatchStep = Box<dyn Fn(&mut WriteBatch<'_>)>;

/// A batch files its time-index keys at its end, in key order (its external ids as it stages
/// each item); whatever it did to an item before then (put twice, moved and moved back,
/// deleted, deleted and put again), each current item is filed once, under its last time and
/// its external id, and nothing else is.
#[test]
fn the_indexes_file_each_item_once_under_its_last_time_whatever_the_batch_did() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let mut b = store.batch();
    b.put(draft("kept", 5, "committed"))
        .put(draft("gone", 6, "committed"));
    b.commit().unwrap();
    let mut b = store.batch();
    b.put(draft("new", 1, "first time"))
        .put(draft("new", 9, "second time"))
        .put(draft("kept", 7, "moved"))
        .put(draft("kept", 5, "moved back"))
        .put(draft("other", 2, "filed once"))
        .delete_external("gone")
        .put(draft("brief", 3, "put and deleted"))
        .delete_external("brief")
        .put(draft("again", 4, "deleted, then put again"));
    b.commit().unwrap();
    let mut b = store.batch();
    b.delete_external("again")
        .put(draft("again", 8, "put again"));
    let again = b.commit().unwrap().puts[0].id;

    let filed = catalog_rows(&store, catalog::BY_SOURCE, |key, ()| key);
    let snap = store.snapshot().unwrap();
    let mut current: Vec<(u8, i64, u64)> = snap
        .scan(&ScanFilter::default())
        .unwrap()
        .iter()
        .map(|i| (i.fields.source.code(), i.fields.time.unix_ms, i.id))
        .collect();
    current.sort_unstable();
    let minute = |m: i64| 1_700_000_000_000 + m * 60_000;
    assert_eq!(
        current.iter().map(|k| k.1).collect::<Vec<_>>(),
        [minute(2), minute(5), minute(8), minute(9)]
    );
    assert_eq!(filed, current);
    let named = catalog_rows(&store, catalog::EXTERNAL_IDS, |ext, id| {
        (ext.to_owned(), id)
    });
    let mut expected: Vec<(String, u64)> = snap
        .scan(&ScanFilter::default())
        .unwrap()
        .into_iter()
        .map(|i| (i.fields.external_id.unwrap(), i.id))
        .collect();
    expected.sort();
    assert_eq!(named, expected);
    assert!(expected.contains(&("again".to_owned(), again)));
    assert!(store.check().unwrap().is_clean());
}

/// One batch of many puts and memory operations leaves exactly one `memory_ops` row per op on
/// a memory, as the same ops committed one per batch do: a memory operation's note lands on
/// the row its put logged, and a purge takes the purged memory's rows (and its own) out.
#[test]
fn one_large_batch_files_each_memory_op_once_as_batches_of_one_do() {
    use crate::{MemoryOp, OpNote, Validity};
    let note = |reason: &str| OpNote {
        reason: reason.to_owned(),
        actor: Some("test".to_owned()),
        role: None,
    };
    const NEW_ITEMS: usize = 100;
    // The same ops, in one batch and in batches of one: the stores must read the same.
    let run = |per_batch: usize| {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), small()).unwrap();
        let mut b = store.batch();
        b.put(draft("old", 1, "committed"))
            .put(draft("purged", 2, "committed"));
        let ids: Vec<u64> = b.commit().unwrap().puts.iter().map(|p| p.id).collect();
        let (old, purged) = (ids[0], ids[1]);
        let mut ops: Vec<BatchStep> = Vec::new();
        for i in 0..NEW_ITEMS {
            ops.push(Box::new(move |b| {
                b.put(draft(&format!("n{i}"), 10 + i as i64, "new"));
            }));
        }
        let mut moved = draft("old", 3, "updated").fields;
        moved.external_id = None;
        ops.push(Box::new(move |b| {
            b.memory(MemoryOp::Update {
                id: old,
                fields: moved.clone(),
                valid: Validity::default(),
                note: note("moved"),
            });
        }));
        ops.push(Box::new(move |b| {
            b.memory(MemoryOp::None {
                id: old,
                note: note("known"),
            });
        }));
        ops.push(Box::new(move |b| {
            b.purge(purged);
        }));
        ops.push(Box::new(move |b| {
            b.memory(MemoryOp::Add {
                fields: draft("added", 4, "by an op").fields,
                valid: Validity::default(),
                note: note("new fact"),
            });
        }));
        for chunk in ops.chunks(per_batch) {
            let mut b = store.batch();
            for op in chunk {
                op(&mut b);
            }
            b.commit().unwrap();
        }
        // (memory, seq) → (op code, valid time, whether it has a note).
        let rows = catalog_rows(&store, catalog::MEMORY_OPS, |key, v| {
            (key, (v.0, v.2, v.3 != 0))
        });
        assert!(rows.iter().all(|((id, _), _)| *id != purged));
        let snap = store.snapshot().unwrap();
        let reasons: Vec<(MemoryOpKind, String)> = snap
            .history(old)
            .unwrap()
            .ops
            .into_iter()
            .map(|op| (op.kind, op.reason))
            .collect();
        assert!(store.check().unwrap().is_clean());
        // Sequence numbers and times differ between the runs; the rows, in order, do not.
        let rows: Vec<(u64, (u8, i64, bool))> =
            rows.into_iter().map(|((id, _), v)| (id, v)).collect();
        (rows, reasons)
    };
    let (one_batch, reasons) = run(usize::MAX);
    assert_eq!(
        reasons,
        [
            (MemoryOpKind::Add, String::new()),
            (MemoryOpKind::Update, "moved".to_owned()),
            (MemoryOpKind::None, "known".to_owned()),
        ]
    );
    // old's add, update and none; the new items' adds; the op's add (purged: none).
    assert_eq!(one_batch.len(), 3 + NEW_ITEMS + 1);
    assert_eq!(one_batch, run(1).0);
}

/// A correction that keeps the memory's time (an agent replacing its text) holds from the
/// commit, so the version it replaced keeps a real valid interval — not one that starts and
/// ends at the same instant, which `VALID AT` could never return (issue 50).
#[test]
fn a_correction_in_place_leaves_the_old_version_its_real_interval() {
    use crate::{MemoryOp, OpNote, Validity};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), small()).unwrap();
    let added = store
        .apply(vec![MemoryOp::Add {
            fields: draft("fact", 1, "my dentist is Dr Alvarez").fields,
            valid: Validity::default(),
            note: OpNote::default(),
        }])
        .unwrap();
    let id = added[0].id;
    let mut fields = store.snapshot().unwrap().get(id).unwrap().unwrap().fields;
    fields.body = Some("my dentist is Dr Okonkwo".into());
    let before = jiff::Timestamp::now().as_millisecond();
    store
        .apply(vec![MemoryOp::Update {
            id,
            fields,
            valid: Validity::default(),
            note: OpNote::default(),
        }])
        .unwrap();
    let history = store.snapshot().unwrap().history(id).unwrap();
    let [old, new] = history.versions.as_slice() else {
        panic!("two versions: {:?}", history.versions);
    };
    let start = 1_700_000_000_000 + 60_000;
    assert_eq!(old.valid_from_ms, Some(start));
    let end = old.valid_to_ms.unwrap();
    assert!(
        end >= before && end > start,
        "the old version ends at the correction: {end}"
    );
    assert_eq!(new.valid_from_ms, Some(end));
    // An update that moves the memory's time keeps that time as the boundary.
    let mut moved = new.record.fields.clone();
    moved.time = EventTime::utc(1_700_000_000_000 + 10 * 60_000);
    moved.body = Some("my dentist is Dr Chen".into());
    store
        .apply(vec![MemoryOp::Update {
            id,
            fields: moved,
            valid: Validity::default(),
            note: OpNote::default(),
        }])
        .unwrap();
    let history = store.snapshot().unwrap().history(id).unwrap();
    let last = history.versions.last().unwrap();
    assert_eq!(last.valid_from_ms, Some(1_700_000_000_000 + 10 * 60_000));
}
