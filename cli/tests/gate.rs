//! `memdb gate eval` keeps its interface (the keys scripts read), and `memdb import --gate`
//! tags or drops as asked.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use serde_json::Value;

/// `memdb ARGS`, which must succeed, as JSON.
fn memdb(args: &[&str]) -> Value {
    common::json(&common::memdb(args))
}

#[test]
fn gate_eval_prints_the_figures_scripts_read() {
    let Some(dir) = memdb_it::shared_data("locomo") else {
        return;
    };
    let dir = dir.to_str().unwrap();
    let doc = memdb(&["gate", "eval", "--locomo", dir, "--json"]);
    for key in [
        "texts",
        "memorable",
        "memorable_kept",
        "not_memorable_dropped",
        "accuracy",
        "weighted_f1",
        "us_per_text",
    ] {
        assert!(doc[key].is_number(), "{key} in {doc}");
    }
    let texts = doc["texts"].as_u64().unwrap();
    let memorable = doc["memorable"].as_u64().unwrap();
    // About a quarter of LoCoMo's turns are cited as evidence.
    assert!(
        texts > 1000 && memorable * 5 > texts && memorable * 3 < texts,
        "{doc}"
    );
    let cv = memdb(&[
        "gate",
        "eval",
        "--locomo",
        dir,
        "--cross-validate",
        "--json",
    ]);
    let folds = cv["folds"].as_array().unwrap();
    assert!(folds.len() >= 2);
    let fold_texts: u64 = folds.iter().map(|f| f["texts"].as_u64().unwrap()).sum();
    assert_eq!(fold_texts, texts, "every turn scored once");
}

#[test]
fn import_with_the_gate_drops_or_tags() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("notes.jsonl");
    std::fs::write(
        &input,
        concat!(
            r#"{"external_id":"a","source":"note","time":"2024-05-01T10:00:00Z","body":"My sister got married in Lisbon."}"#,
            "\n",
            r#"{"external_id":"b","source":"note","time":"2024-05-01T10:05:00Z","body":"haha ok"}"#,
            "\n"
        ),
    )
    .unwrap();
    let input = input.to_str().unwrap();
    let dropped = dir.path().join("dropped");
    let report = memdb(&[
        "--json",
        "import",
        "--create",
        "jsonl",
        dropped.to_str().unwrap(),
        input,
        "--gate",
        "drop",
    ]);
    assert_eq!(report["added"], 1, "{report}");
    assert_eq!(report["gate_dropped"].as_array().unwrap().len(), 1);
    let listed = memdb(&["--json", "ls", dropped.to_str().unwrap()]);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["external_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a"]);

    let tagged = dir.path().join("tagged");
    let report = memdb(&[
        "--json",
        "import",
        "--create",
        "jsonl",
        tagged.to_str().unwrap(),
        input,
        "--gate",
        "tag",
    ]);
    assert_eq!(
        (report["added"].as_u64(), report["gate_tagged"].as_u64()),
        (Some(2), Some(2))
    );
    let b = memdb(&["--json", "get", tagged.to_str().unwrap(), "--external", "b"]);
    assert_eq!(b["tags"], serde_json::json!(["gate:not-memorable"]));
    let a = memdb(&["--json", "get", tagged.to_str().unwrap(), "--external", "a"]);
    assert!(
        a["tags"]
            .as_array()
            .unwrap()
            .contains(&"gate:memorable".into())
    );
}
