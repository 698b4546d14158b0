//! Issue 18, item 6: an item has one JSON shape. `memdb get`, `ls`, `similar`, `recall` and the
//! rows of `memdb query` print it through one renderer (`memdb_query::item_json`), a row adding
//! only what the result says beside the item (`score`, `why`, `replaced`); and `memdb recall`
//! runs the `RECALL` statement, so both answer a question with the same hits.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;

mod common;

use common::{init, json, memdb, model_installed};
use serde_json::Value;

/// `value` without the members a result adds beside the item.
fn without(value: &Value, keys: &[&str]) -> Value {
    let mut value = value.clone();
    let object = value.as_object_mut().unwrap();
    for key in keys {
        object.remove(*key);
    }
    value
}

const ITEMS: &str = concat!(
    "{\"external_id\":\"hotel\",\"source\":\"email\",\"time\":\"2024-03-05T09:30:00+01:00\",\"from\":\"bookings@alfama.example\",\"to\":[\"me@example.org\"],\"summary\":\"Booking confirmed\",\"body\":\"Your booking at Hotel Alfama in Lisbon is confirmed for three nights.\",\"entities\":[\"Hotel Alfama\"],\"tags\":[\"travel\"],\"location\":{\"name\":\"Lisbon\",\"lat\":38.7139,\"lon\":-9.1335}}\n",
    "{\"external_id\":\"gift\",\"source\":\"chat\",\"time\":\"2024-04-20\",\"speaker\":\"Ana\",\"body\":\"I gave Mila a red bicycle for her seventh birthday.\",\"tags\":[\"family\"]}\n",
    "{\"external_id\":\"dentist\",\"source\":\"email\",\"time\":\"2024-04-02\",\"body\":\"Reminder: dental check-up on Tuesday at 9:30.\"}\n",
);

/// A new store in `dir` holding [`ITEMS`].
fn store_with_items(dir: &Path) -> String {
    let store = init(dir);
    let file = dir.join("items.jsonl");
    std::fs::write(&file, ITEMS).unwrap();
    json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &store,
        file.to_str().unwrap(),
    ]));
    store
}

/// The members of an item, as SPEC.md §9.5's table lists them.
fn spec_item_members() -> Vec<String> {
    let spec =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../SPEC.md")).unwrap();
    let section = spec.split("\n### 9.5 ").nth(1).unwrap();
    let section = section.split("\n#").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| l.split('`').next().unwrap().to_owned())
        .collect()
}

#[test]
fn get_ls_similar_recall_and_query_rows_print_one_item_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_items(dir.path());

    let listed = json(&memdb(&["--json", "ls", &store]));
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3);
    let hotel = listed
        .iter()
        .find(|i| i["external_id"] == "hotel")
        .unwrap()
        .clone();
    // Every member SPEC.md §9.5 lists, and no other.
    let keys: Vec<&String> = hotel.as_object().unwrap().keys().collect();
    let mut members = spec_item_members();
    assert_eq!(members.len(), 25, "{members:?}");
    members.sort_unstable();
    assert_eq!(keys, members.iter().collect::<Vec<_>>(), "{hotel}");
    assert_eq!(hotel["location"]["name"], "Lisbon");
    assert!(hotel["text"].as_str().unwrap().contains("Hotel Alfama"));
    let id = hotel["id"].as_u64().unwrap().to_string();

    let got = json(&memdb(&["--json", "get", &store, "--external", "hotel"]));
    assert_eq!(without(&got, &["dropped_blobs", "earlier_versions"]), hotel);
    let by_id = json(&memdb(&["--json", "get", &store, &id]));
    assert_eq!(by_id, got);

    let query = |statement: &str| json(&memdb(&["--json", "query", &store, statement]));
    let items = query("ITEMS WHERE tag = 'travel'");
    assert_eq!(items["rows"], Value::Array(vec![hotel.clone()]));
    let all = query("ITEMS");
    assert_eq!(all["rows"].as_array().unwrap(), listed);
    let shown = query(&format!("SHOW ITEM {id}"));
    assert_eq!(shown["item"], hotel);
    // A history row is the item with its valid time beside it (SPEC.md §9.5).
    let history = query(&format!("HISTORY OF {id}"));
    assert_eq!(
        without(&history["rows"][0], &["valid_from", "valid_to"]),
        hotel
    );
    assert_eq!(
        history["rows"][0]["valid_from"],
        "2024-03-05T08:30:00+00:00"
    );
    assert_eq!(history["rows"][0]["valid_to"], Value::Null);

    if !model_installed() {
        return;
    }
    json(&memdb(&["--json", "embed", &store]));
    let similar = json(&memdb(&[
        "--json",
        "similar",
        &store,
        "a hotel in Lisbon",
        "-k",
        "1",
    ]));
    let hit = &similar[0];
    assert!(hit["score"].as_f64().unwrap() > 0.0, "{similar}");
    assert_eq!(without(hit, &["score"]), hotel);

    let recall = json(&memdb(&[
        "--json",
        "recall",
        &store,
        "where did I stay in Lisbon?",
        "-k",
        "1",
    ]));
    let hit = &recall["hits"][0];
    assert!(hit["why"]["dense_rank"].is_number(), "{recall}");
    assert!(hit["why"]["dense_score"].is_number(), "{recall}");
    assert_eq!(without(hit, &["score", "why"]), hotel);
}

/// The hits of `memdb recall` and the rows of the `RECALL` statement with the same question
/// and filters: the same items, scores and explanations, printed alike.
#[test]
fn memdb_recall_and_the_recall_statement_give_the_same_hits() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_items(dir.path());
    json(&memdb(&["--json", "embed", &store]));

    let question = "What did I give Mila for her birthday?";
    let cases: [(&[&str], &str); 4] = [
        (&[], "TOP 10"),
        (&["-k", "2"], "TOP 2"),
        (
            &["-k", "2", "--source", "email"],
            "WHERE source = email TOP 2",
        ),
        (
            &["--from", "2024-04-01", "--to", "2024-04-20T23:00:00Z"],
            "WHERE time >= 2024-04-01 AND time <= 2024-04-20T23:00:00Z TOP 10",
        ),
    ];
    for (options, clauses) in cases {
        let mut args = vec!["--json", "recall", &store, question];
        args.extend_from_slice(options);
        let recall = json(&memdb(&args));
        let statement = format!("RECALL '{question}' {clauses}");
        let rows = json(&memdb(&["--json", "query", &store, &statement]));
        assert!(!rows["rows"].as_array().unwrap().is_empty(), "{statement}");
        assert_eq!(recall["hits"], rows["rows"], "{options:?} vs {statement}");
        assert_eq!(recall["query_nodes"], rows["query_nodes"], "{statement}");
    }
}
