//! Reliability R11, the writer lock across processes: while another process holds a store, an
//! open fails with the typed `Locked` error within 100 ms (after a 40 ms grace); after the holder is
//! killed with SIGKILL the next open succeeds at once (the OS lock died with it) and finds the
//! holder's committed item. And the read-only half: read-only opens follow a running writer
//! process, every snapshot one of its committed states.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memdb::{Options, Store};

#[test]
fn a_second_writer_is_refused_at_once_and_a_killed_holder_leaves_no_stale_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    for round in 0..5 {
        let mut holder = Command::new(env!("CARGO_BIN_EXE_hold_store"))
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "round {round}");

        let mut slowest = Duration::ZERO;
        for _ in 0..20 {
            let started = Instant::now();
            let result = Store::open(&path, Options::default());
            slowest = slowest.max(started.elapsed());
            assert!(
                matches!(
                    result,
                    Err(memdb::Error::Store(memdb::StoreError::Locked { .. }))
                ),
                "round {round}: {result:?}"
            );
        }
        assert!(
            slowest < Duration::from_millis(100),
            "Locked took {slowest:?}"
        );

        holder.kill().unwrap(); // SIGKILL
        holder.wait().unwrap();
        let store = Store::open(&path, Options::default()).expect("no stale lock after kill -9");
        let snap = store.snapshot().unwrap();
        let held = format!("held-{}", holder.id());
        assert!(snap.get_by_external_id(&held).unwrap().is_some(), "{held}");
        assert_eq!(snap.item_count().unwrap(), round + 1);
        assert!(store.check().unwrap().is_clean());
    }
}

/// A child forked by another thread shares this process's descriptors, the store's locks
/// included, until its exec closes them. Closing and reopening a store in that window must not
/// report the store as locked by someone else (it did, on CI, before `LOCK_GRACE`).
#[test]
fn reopening_while_another_thread_spawns_children_never_reports_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    drop(Store::create(&path, Options::default()).unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spawner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut spawned = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                Command::new("true").status().unwrap();
                spawned += 1;
            }
            spawned
        })
    };
    let cycles = memdb_it::env_u64("MEMDB_REOPEN_CYCLES", 2_000);
    for cycle in 0..cycles {
        let store =
            Store::open(&path, Options::default()).unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        drop(store);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let spawned = spawner.join().unwrap();
    assert!(spawned > 0, "the spawner thread never ran");
}

/// R11, the read-only half: while a writer process ingests, deletes and compacts (the crash
/// test's `crash_writer`), this process opens the store read-only again and again and takes
/// snapshots. Every snapshot must be exactly one committed state of the writer — the items of
/// its first p batches for some p between the batches acknowledged before the snapshot and
/// those begun after it — with every item and blob byte for byte; writes through a read-only
/// handle are refused with `ReadOnly`; and the writer never notices the readers.
#[test]
fn read_only_opens_follow_a_running_writer_in_another_process() {
    use memdb_it::{crash_item, read_crash_log};
    use std::collections::BTreeMap;

    let seconds = memdb_it::env_u64("MEMDB_READER_SECONDS", 6);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let log_path = dir.path().join("log");
    drop(Store::create(&store_dir, Options::default()).unwrap());
    let mut writer = Command::new(env!("CARGO_BIN_EXE_crash_writer"))
        .args([
            store_dir.to_str().unwrap(),
            log_path.to_str().unwrap(),
            "0",
            "7",
        ])
        .spawn()
        .unwrap();
    let read_log = || read_crash_log(&std::fs::read_to_string(&log_path).unwrap_or_default());
    let mut reader = Store::open_read_only(&store_dir, Options::default()).unwrap();
    assert!(matches!(
        reader.batch().commit(),
        Ok(_) | Err(memdb::StoreError::ReadOnly { .. })
    ));
    let mut refused = reader.batch();
    refused.delete(1);
    assert!(matches!(
        refused.commit(),
        Err(memdb::StoreError::ReadOnly { .. })
    ));

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut snapshots, mut reopens, mut items_verified) = (0u64, 0u64, 0u64);
    let mut prefixes = std::collections::BTreeSet::new();
    while Instant::now() < deadline {
        if snapshots % 8 == 7 {
            reader = Store::open_read_only(&store_dir, Options::default()).unwrap();
            reopens += 1;
        }
        let before = read_log().committed.len();
        let snap = reader.snapshot().unwrap();
        let after = read_log();
        let mut batches = after.committed.clone();
        batches.extend(after.in_flight.clone());
        let found: BTreeMap<String, memdb::Item> = snap
            .scan(&memdb::ScanFilter::default())
            .unwrap()
            .into_iter()
            .map(|item| (item.fields.external_id.clone().unwrap(), item))
            .collect();
        // The state after the first p batches, for every p the snapshot may show.
        let mut expected: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut matched = None;
        for p in 0..=batches.len() {
            if p >= before
                && expected.len() == found.len()
                && expected.keys().all(|ext| found.contains_key(ext))
            {
                matched = Some(p);
                break;
            }
            if let Some((batch, entries)) = batches.get(p) {
                memdb_it::apply_crash_batch(&mut expected, *batch, entries);
            }
        }
        let p = matched.unwrap_or_else(|| {
            panic!(
                "snapshot {snapshots}: {} items are no committed state between batch {before} and {}",
                found.len(),
                batches.len()
            )
        });
        prefixes.insert(p);
        // Byte for byte: the newest batch's items and a spread of the others.
        for (n, (ext, (batch, index))) in expected.iter().enumerate() {
            if n % 17 != 0 && *batch != batches[p.saturating_sub(1)].0 {
                continue;
            }
            let item = &found[ext];
            let (draft, blobs) = crash_item(*batch, *index);
            assert_eq!(item.fields, draft.fields, "{ext}");
            for (id, (_, bytes)) in item.blobs.iter().zip(&blobs) {
                assert_eq!(&snap.blob(*id).unwrap().unwrap()[..], &bytes[..], "{ext}");
            }
            items_verified += 1;
        }
        snapshots += 1;
    }
    let still_running = writer.try_wait().unwrap().is_none();
    writer.kill().unwrap();
    writer.wait().unwrap();
    assert!(still_running, "the writer failed beside the readers");
    assert!(
        prefixes.len() >= 3,
        "the readers saw too few commits: {prefixes:?}"
    );
    let check = Store::open(&store_dir, Options::default())
        .unwrap()
        .check()
        .unwrap();
    assert!(check.is_clean(), "{:?}", check.problems);
    println!(
        "read-only beside a writer: {snapshots} snapshots ({reopens} fresh read-only opens) showed {} distinct committed states, {items_verified} items verified byte for byte",
        prefixes.len()
    );
}
