//! `memdb remember`, `memdb log` and `memdb ask` end to end with the installed encoder and the
//! deterministic extractor and decider: the same fact twice, or a paraphrase, is a NONE (no new
//! memory, nothing deleted); a changed value is an UPDATE that keeps the old version; a
//! retraction is a DELETE; the log lists every operation with its reason; `ask` without a model
//! prints the evidence.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::{json, memdb};
use serde_json::Value;

fn remember(store: &str, text: &str, time: &str) -> Vec<Value> {
    let out = json(&memdb(&[
        "--json",
        "remember",
        store,
        text,
        "--speaker",
        "Ana",
        "--time",
        time,
    ]));
    out.as_array().unwrap().clone()
}

#[test]
fn the_same_fact_twice_or_restated_is_none_and_a_change_keeps_the_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    memdb(&["init", store]);

    let first = remember(store, "I live in Lisbon with my partner.", "2024-03-01");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["event"], "ADD", "{first:?}");
    let id = first[0]["memory_id"].as_u64().unwrap();

    for again in [
        "I live in Lisbon with my partner.",
        "i live in lisbon with my partner",
    ] {
        let second = remember(store, again, "2024-04-01");
        assert_eq!(second[0]["event"], "NONE", "{again}: {second:?}");
        assert_eq!(second[0]["memory_id"], id);
    }
    let items = json(&memdb(&["--json", "ls", store]));
    assert_eq!(items.as_array().unwrap().len(), 1, "no new memory: {items}");

    let moved = remember(store, "I live in Porto with my partner.", "2024-05-02");
    assert_eq!(moved[0]["event"], "UPDATE", "{moved:?}");
    assert_eq!(moved[0]["memory_id"], id);

    let log = json(&memdb(&["--json", "log", store]));
    let events: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["ADD", "NONE", "NONE", "UPDATE"], "{log}");
    let update = &log[3];
    assert!(
        update["old_memory"].as_str().unwrap().contains("Lisbon"),
        "{update}"
    );
    assert!(
        update["new_memory"].as_str().unwrap().contains("Porto"),
        "{update}"
    );
    assert_eq!(update["actor_id"], "Ana");
    assert!(!update["reason"].as_str().unwrap().is_empty());

    let ask = json(&memdb(&["--json", "ask", store, "Where do I live?"]));
    assert_eq!(ask["answer"], Value::Null);
    assert!(
        ask["evidence"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Porto"),
        "{ask}"
    );
}
