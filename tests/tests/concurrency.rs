//! Reliability R10: one writer, many readers. Eight reader threads take snapshots and read
//! everything while the writer ingests and compacts. Each commit adds batch `b` and deletes
//! batch `b − 5`, so a snapshot from one commit shows exactly five consecutive batches, each
//! complete; a reader that ever sees a mix of two commits, a wrong byte, or a blob whose
//! segment was unlinked under it, fails. Runs 120 s under `CI` (2 minutes, as R10 asks), 10 s
//! otherwise; `MEMDB_CONCURRENCY_SECS` overrides.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memdb::{
    Options, ScanFilter, Store, maintenance::CompactOptions, maintenance::KeepEverything,
    maintenance::Victims,
};
use memdb_it::{crash_batch_len, crash_external_id, crash_item};

const LIVE_BATCHES: u64 = 5;
const READERS: usize = 8;

fn seconds() -> u64 {
    std::env::var("MEMDB_CONCURRENCY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if std::env::var_os("CI").is_some() {
            120
        } else {
            10
        })
}

/// Checks one snapshot; returns the number of items it verified.
fn verify_snapshot(store: &Store) -> u64 {
    let snap = store.snapshot().unwrap();
    let items = snap.scan(&ScanFilter::default()).unwrap();
    let mut by_batch: BTreeMap<u64, u64> = BTreeMap::new();
    for item in &items {
        let tag = &item.fields.tags[0];
        let batch: u64 = tag.strip_prefix("batch-").unwrap().parse().unwrap();
        let ext = item.fields.external_id.as_deref().unwrap();
        let index: u64 = ext.rsplit("-i").next().unwrap().parse().unwrap();
        assert_eq!(ext, crash_external_id(batch, index));
        let (draft, blobs) = crash_item(batch, index);
        assert_eq!(item.fields, draft.fields, "{ext}: wrong bytes");
        for (id, (_, bytes)) in item.blobs.iter().zip(&blobs) {
            let blob = snap
                .blob(*id)
                .unwrap_or_else(|e| panic!("{ext}: blob {id} unreadable from its snapshot: {e}"))
                .unwrap_or_else(|| panic!("{ext}: blob {id} missing"));
            assert_eq!(&blob[..], &bytes[..], "{ext}: wrong blob bytes");
        }
        *by_batch.entry(batch).or_default() += 1;
    }
    if let (Some((&lo, _)), Some((&hi, _))) =
        (by_batch.first_key_value(), by_batch.last_key_value())
    {
        assert_eq!(
            lo,
            hi.saturating_sub(LIVE_BATCHES - 1),
            "batches {lo}..={hi}: not one commit's view"
        );
        for b in lo..=hi {
            assert_eq!(
                by_batch.get(&b).copied().unwrap_or(0),
                crash_batch_len(b),
                "batch {b} seen incomplete (of {by_batch:?})"
            );
        }
    }
    items.len() as u64
}

#[test]
fn readers_see_one_commit_at_a_time_while_the_writer_ingests_and_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        segment_target_bytes: 256 << 10,
        ..Options::default()
    };
    let store = Store::create(dir.path().join("s"), options).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (store, stop, checks) = (store.clone(), stop.clone(), checks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    verify_snapshot(&store);
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(seconds());
    let (mut batch, mut compactions) = (0u64, 0u64);
    while Instant::now() < deadline {
        let mut wb = store.batch();
        for index in 0..crash_batch_len(batch) {
            let (draft, blobs) = crash_item(batch, index);
            wb.put_with_blobs(draft, blobs);
        }
        if let Some(old) = batch.checked_sub(LIVE_BATCHES) {
            for index in 0..crash_batch_len(old) {
                wb.delete_external(crash_external_id(old, index));
            }
        }
        wb.commit().unwrap();
        batch += 1;
        if batch.is_multiple_of(10) {
            store
                .compact(
                    &CompactOptions {
                        victims: Victims::DeadRatio(0.2),
                    },
                    &mut KeepEverything,
                )
                .unwrap();
            compactions += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("a reader failed");
    }
    let verified = verify_snapshot(&store);
    assert!(verified > 0);
    assert!(store.check().unwrap().is_clean());
    let snapshots = checks.load(Ordering::Relaxed);
    println!(
        "{batch} commits, {compactions} compactions, {snapshots} reader snapshots fully verified by {READERS} readers"
    );
    assert!(snapshots > READERS as u64 && compactions > 0);
}
