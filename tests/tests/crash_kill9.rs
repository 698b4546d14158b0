//! R2: a writer process is killed with SIGKILL at random moments while it ingests, deletes,
//! undeletes and compacts; after every kill the store must open, `check()` must be clean, every
//! acknowledged batch must be intact byte for byte (an undeleted item with its original blobs),
//! and the batch in flight must be all there or not at all.
//!
//! Seeded and reproducible: `MEMDB_CRASH_SEED` (default 1) and `MEMDB_CRASH_KILLS` (default
//! 200). The figures are printed at the end.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use memdb::{Options, Store};
use memdb_it::{
    Rng, apply_crash_batch, crash_batch_len, crash_external_id, crash_item, env_u64, read_crash_log,
};

#[test]
fn kill9_loop_loses_no_committed_item() {
    let kills = env_u64("MEMDB_CRASH_KILLS", 200);
    let seed = env_u64("MEMDB_CRASH_SEED", 1);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    // expected: external id → batch that wrote it (content follows from it); absent = deleted.
    let mut expected: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut acked_batches, mut in_flight_committed, mut in_flight_lost, mut verified_items) =
        (0u64, 0u64, 0u64, 0u64);
    let mut undeletes = 0u64;
    let options = Options {
        segment_target_bytes: 256 << 10,
        ..Options::default()
    };
    for run in 0..kills {
        let log_path = dir.path().join(format!("log-{run}"));
        let first_batch = run * 100_000;
        let mut child = Command::new(env!("CARGO_BIN_EXE_crash_writer"))
            .args([
                store_dir.to_str().unwrap(),
                log_path.to_str().unwrap(),
                &first_batch.to_string(),
                &rng.next_u64().to_string(),
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.range(5, 150)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let log = read_crash_log(&std::fs::read_to_string(&log_path).unwrap_or_default());
        let store = Store::open(&store_dir, options.clone())
            .unwrap_or_else(|e| panic!("run {run}: store does not open after kill: {e}"));
        let report = store.check().unwrap();
        assert!(
            report.is_clean(),
            "run {run}: check found {:?}",
            report.problems
        );
        let snap = store.snapshot().unwrap();
        let apply =
            |expected: &mut BTreeMap<String, (u64, u64)>, batch: u64, entries: &[String]| {
                apply_crash_batch(expected, batch, entries)
            };
        for (batch, deletes) in &log.committed {
            apply(&mut expected, *batch, deletes);
            acked_batches += 1;
            undeletes += deletes.iter().filter(|e| e.starts_with('+')).count() as u64;
        }
        if let Some((batch, deletes)) = &log.in_flight {
            // All or nothing: the first item tells which, every other must agree.
            let present: BTreeSet<bool> = (0..crash_batch_len(*batch))
                .map(|i| {
                    snap.get_by_external_id(&crash_external_id(*batch, i))
                        .unwrap()
                        .is_some()
                })
                .collect();
            assert_eq!(
                present.len(),
                1,
                "run {run}: batch {batch} is half committed"
            );
            if present.contains(&true) {
                apply(&mut expected, *batch, deletes);
                in_flight_committed += 1;
            } else {
                in_flight_lost += 1;
            }
        }
        assert_eq!(
            snap.item_count().unwrap(),
            expected.len() as u64,
            "run {run}: item count"
        );
        for (ext, (batch, index)) in &expected {
            let item = snap
                .get_by_external_id(ext)
                .unwrap()
                .unwrap_or_else(|| panic!("run {run}: acknowledged item {ext} lost"));
            let (draft, blobs) = crash_item(*batch, *index);
            assert_eq!(item.fields, draft.fields, "run {run}: item {ext} changed");
            assert_eq!(item.blobs.len(), blobs.len());
            for (blob_id, (_, bytes)) in item.blobs.iter().zip(&blobs) {
                assert_eq!(
                    &snap.blob(*blob_id).unwrap().unwrap()[..],
                    &bytes[..],
                    "run {run}: blob of {ext} changed"
                );
            }
            verified_items += 1;
        }
    }
    println!(
        "kill -9 loop: {kills} kills (seed {seed}), {acked_batches} acknowledged batches ({undeletes} undeletes), in-flight batches found committed {in_flight_committed} / absent {in_flight_lost}, {verified_items} item verifications, 0 lost, 0 check failures"
    );
}
