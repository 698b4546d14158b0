//! `memdb remember`, `memdb log` and `memdb ask` end to end with the installed encoder and the
//! on-device extractor and decider: the same fact twice, or a paraphrase, is a NONE (no new
//! memory, nothing deleted); a changed value is an UPDATE that keeps the old version; a
//! compound sentence is one fact per clause; facts of one call apply in order; a fact never
//! changes another subject's memory; every sentence is accounted for; an idempotency key makes
//! a retry a no-op; the log lists every operation with its reason; `ask` without a model prints
//! the evidence.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::{json, memdb};
use serde_json::Value;

/// `memdb --json remember STORE TEXT --time TIME` with `extra` flags: the whole answer.
fn remember_with(store: &str, text: &str, time: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "remember", store, text, "--time", time];
    args.extend_from_slice(extra);
    json(&memdb(&args))
}

/// The operations of a `remember` said by Ana.
fn remember(store: &str, text: &str, time: &str) -> Vec<Value> {
    let out = remember_with(store, text, time, &["--speaker", "Ana"]);
    out["results"].as_array().unwrap().clone()
}

fn new_store(dir: &tempfile::TempDir) -> String {
    let store = dir.path().join("s");
    let store = store.to_str().unwrap().to_owned();
    memdb(&["init", &store]);
    store
}

fn current_bodies(store: &str) -> Vec<String> {
    json(&memdb(&["--json", "ls", store]))
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn the_same_fact_twice_or_restated_is_none_and_a_change_keeps_the_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(&dir);
    let store = store.as_str();

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
    assert_eq!(current_bodies(store).len(), 1, "no new memory");

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

#[test]
fn a_compound_sentence_ends_one_job_and_starts_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(&dir);
    let store = store.as_str();
    remember(store, "I work at Santander as an analyst.", "2023-01-10");
    let done = remember(
        store,
        "I quit Santander and now work at Farfetch.",
        "2023-05-02",
    );
    let facts: Vec<&str> = done.iter().map(|r| r["fact"].as_str().unwrap()).collect();
    assert_eq!(
        facts,
        ["I quit Santander", "I now work at Farfetch"],
        "{done:?}"
    );
    assert_eq!(done[0]["event"], "DELETE", "{done:?}");
    let bodies = current_bodies(store);
    assert!(
        bodies.iter().any(|b| b.contains("Farfetch")),
        "the new employer is stored: {bodies:?}"
    );
    assert!(
        !bodies.iter().any(|b| b.contains("Santander")),
        "the old job is retired: {bodies:?}"
    );
    let ask = json(&memdb(&["--json", "ask", store, "Where do I work?"]));
    assert!(
        ask["evidence"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Farfetch"),
        "{ask}"
    );
}

#[test]
fn facts_of_one_call_apply_in_order_and_never_fail_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(&dir);
    let store = store.as_str();
    remember(store, "I'm allergic to peanuts.", "2023-01-10");
    // The second fact is decided against what the first left (the memory retired), so the two
    // never name one memory twice.
    let out = remember_with(
        store,
        "I'm not allergic to peanuts anymore. I'm allergic to peanuts.",
        "2024-02-01",
        &["--speaker", "Ana"],
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{out}");
    let bodies = current_bodies(store);
    assert_eq!(
        bodies
            .iter()
            .filter(|b| b.to_lowercase().contains("allergic to peanuts"))
            .count(),
        1,
        "{bodies:?}"
    );
}

#[test]
fn a_fact_never_changes_another_subjects_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(&dir);
    let store = store.as_str();
    let alice = remember_with(
        store,
        "I moved to Porto.",
        "2024-01-01",
        &["--user-id", "alice"],
    );
    let alice_id = alice["results"][0]["memory_id"].as_u64().unwrap();
    // The same words from another user, and from the same user through another speaker.
    for extra in [
        &["--user-id", "bob"][..],
        &["--user-id", "alice", "--speaker", "Bob"][..],
    ] {
        let other = remember_with(store, "I moved to Braga.", "2024-02-01", extra);
        assert_eq!(other["results"][0]["event"], "ADD", "{extra:?}: {other}");
        assert_ne!(other["results"][0]["memory_id"].as_u64(), Some(alice_id));
    }
    let item = json(&memdb(&["--json", "get", store, &alice_id.to_string()]));
    assert_eq!(item["body"], "I moved to Porto", "{item}");
    assert_eq!(item["user_id"], "alice", "{item}");
    // A search of one user's memories sees only theirs.
    let ask = json(&memdb(&[
        "--json",
        "ask",
        store,
        "Where did I move?",
        "--user-id",
        "bob",
    ]));
    let evidence = ask["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1, "{ask}");
    assert!(evidence[0]["text"].as_str().unwrap().contains("Braga"));
}

#[test]
fn every_sentence_is_accounted_for_and_a_retry_with_its_key_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(&dir);
    let store = store.as_str();
    let text = "Hi! I like tea. lol ok. The wifi password at the cabin is bluefjord42. Do you \
                like it?";
    let first = remember_with(store, text, "2024-06-01", &["--idempotency-key", "msg-1"]);
    assert_eq!(first["replayed"], false);
    let facts: Vec<&str> = first["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fact"].as_str().unwrap())
        .collect();
    assert_eq!(
        facts,
        [
            "I like tea",
            "The wifi password at the cabin is bluefjord42"
        ],
        "{first}"
    );
    let skipped: Vec<&str> = first["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["said"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["Hi!", "lol ok", "Do you like it?"], "{first}");
    for s in first["skipped"].as_array().unwrap() {
        assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
    }
    let log_before = json(&memdb(&["--json", "log", store]));
    let again = remember_with(store, text, "2024-06-01", &["--idempotency-key", "msg-1"]);
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(
        again["results"].as_array().unwrap().len(),
        2,
        "the first call's operations: {again}"
    );
    assert_eq!(json(&memdb(&["--json", "log", store])), log_before);
    assert_eq!(current_bodies(store).len(), 2);
}

#[test]
fn a_retraction_by_reference_retires_what_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(&dir);
    let store = store.as_str();
    remember(store, "I drive a Toyota Corolla.", "2023-01-10");
    remember(store, "My dog is called Rex.", "2023-01-11");
    let forgot = remember(store, "Forget about the Toyota.", "2023-06-01");
    assert_eq!(forgot.len(), 1, "{forgot:?}");
    assert_eq!(forgot[0]["event"], "DELETE", "{forgot:?}");
    assert!(forgot[0]["old_memory"].as_str().unwrap().contains("Toyota"));
    let bodies = current_bodies(store);
    assert_eq!(bodies, ["My dog is called Rex"], "{bodies:?}");
    // Nothing left to forget: no memory of "the Toyota" is made, and the sentence says why.
    let again = remember_with(
        store,
        "Forget about the Toyota.",
        "2023-06-02",
        &["--speaker", "Ana"],
    );
    assert_eq!(again["results"], serde_json::json!([]), "{again}");
    assert!(
        again["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("forget"),
        "{again}"
    );
    assert_eq!(current_bodies(store), ["My dog is called Rex"]);
}
