//! Crash safety of `Store::remember`: a writer killed with SIGKILL at random moments of a loop
//! of remember calls (each one commit of several memory operations) leaves, every time, a store
//! that checks clean, holds every acknowledged call's operations and all or none of the call
//! in flight, and never half an UPDATE or DELETE: every op that closed a version has that
//! version in the history, and every version an op wrote is there. Each call runs under an
//! idempotency key; the next round retries the call in flight, which applies nothing when it
//! had committed (the op count would show a second copy).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;
use std::time::Duration;

use memdb::{Options, Store, memory::MemoryOpKind};
use memdb_it::Rng;

#[test]
fn a_killed_remember_leaves_all_or_none_of_its_operations() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("s");
    let log = dir.path().join("log");
    let rounds = memdb_it::env_u64("MEMDB_REMEMBER_KILL_ROUNDS", 8);
    let mut rng = Rng::new(0x5eed);
    let mut next_call = 0u64;
    let mut acked_ops = 0u64;
    for round in 0..rounds {
        let _ = std::fs::remove_file(&log);
        let mut child = Command::new(env!("CARGO_BIN_EXE_remember_writer"))
            .args([
                store_dir.to_str().unwrap(),
                log.to_str().unwrap(),
                &next_call.to_string(),
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.range(150, 900)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let mut in_flight = None;
        for line in text.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["I", n] => in_flight = Some(n.parse::<u64>().unwrap()),
                ["C", n, k] => {
                    acked_ops += k.parse::<u64>().unwrap();
                    in_flight = None;
                    next_call = n.parse::<u64>().unwrap() + 1;
                }
                _ => {} // a torn last line: its call was never acknowledged
            }
        }
        let store = Store::open(&store_dir, Options::default()).unwrap();
        let check = store.check().unwrap();
        assert!(check.is_clean(), "round {round}: {:?}", check.problems);
        let snap = store.snapshot().unwrap();
        let log_rows = snap.op_log(None).unwrap();
        let logged = log_rows.len() as u64;
        // The call in flight committed all of its operations (recorded under its key) or none.
        let flight = match in_flight {
            Some(n) => snap
                .ops_recorded_as(&format!("call-{n}"))
                .unwrap()
                .map_or(0, |ops| ops.len() as u64),
            None => 0,
        };
        assert_eq!(
            logged,
            acked_ops + flight,
            "round {round}: {logged} ops logged, {acked_ops} acknowledged, {flight} recorded in flight"
        );
        acked_ops += flight;
        if let Some(n) = in_flight {
            // Retried by the next round: a replay when it committed.
            next_call = n;
        }
        for row in &log_rows {
            let history = snap.history(row.memory_id).unwrap();
            match row.kind {
                MemoryOpKind::Update | MemoryOpKind::Delete => assert!(
                    history
                        .versions
                        .iter()
                        .any(|v| v.closed_by == Some(row.seq)),
                    "round {round}: op {} closed no version of memory {}",
                    row.seq,
                    row.memory_id
                ),
                _ => {}
            }
            if matches!(row.kind, MemoryOpKind::Add | MemoryOpKind::Update) {
                assert!(
                    history
                        .versions
                        .iter()
                        .any(|v| v.system_from_ms() == row.system_ms),
                    "round {round}: the version op {} wrote is missing",
                    row.seq
                );
            }
        }
        // Exactly the current memories have a vector (made in the same commit).
        let keys = snap.vector_keys(memdb::vectors::ITEM_VECTORS).unwrap();
        for id in snap.item_ids().unwrap() {
            assert!(
                keys.contains(id),
                "round {round}: memory {id} has no vector"
            );
        }
    }
    assert!(acked_ops > 0, "no call was acknowledged in {rounds} rounds");
}
