//! Reliability R14, the open/close half: 10,000 open/close cycles of a store return the
//! process's file descriptors and threads to their baseline. The one test in its binary, so
//! the counts of `/proc/self` are this test's alone.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn ten_thousand_open_close_cycles_return_fds_and_threads_to_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    drop(memdb::Store::create(&path, memdb::Options::default()).unwrap());
    // One cycle first: lazily created process-wide state is not a leak.
    drop(memdb::Store::open(&path, memdb::Options::default()).unwrap());
    let (fds, threads) = (count("/proc/self/fd"), count("/proc/self/task"));
    for cycle in 0..10_000 {
        let store = memdb::Store::open(&path, memdb::Options::default())
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        drop(store);
    }
    assert_eq!(count("/proc/self/fd"), fds, "file descriptors leaked");
    assert_eq!(count("/proc/self/task"), threads, "threads leaked");
}
