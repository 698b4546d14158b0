//! `memdb ops eval --scenarios FILE.jsonl --json`, the interface scripts call, with a model
//! decider served by a stub on loopback: the report's accuracy, per-operation figures and
//! confusion matrix, refused lines, and answers the model gets wrong or malformed.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::{json, memdb, stub_chat_server};
use serde_json::Value;

#[test]
fn a_model_decider_is_scored_with_its_confusion_matrix() {
    // The stub answers UPDATE of memory 0 when the fact mentions Porto, ADD when it mentions
    // tennis, and prose otherwise.
    let (url, _requests) = stub_chat_server(|request: &Value| {
        let user = request["messages"][1]["content"].as_str().unwrap_or("");
        if user.contains("Porto") {
            r#"{"memory": [{"id": "0", "text": "Lives in Porto", "event": "UPDATE"}]}"#.into()
        } else if user.contains("tennis") {
            r#"{"memory": [{"id": "5", "text": "Plays tennis", "event": "ADD"}]}"#.into()
        } else {
            "I am not sure.".into()
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(
        &file,
        [
            r#"{"existing": [{"id": "a", "text": "Lives in Lisbon", "time": "2024-03-01"}], "new": "Moved to Porto", "time": "2024-05-02", "expected": "UPDATE", "target": "a"}"#,
            r#"{"existing": [{"id": "a", "text": "Lives in Lisbon", "time": "2024-03-01"}], "new": "Plays tennis", "time": "2024-05-02", "expected": "ADD"}"#,
            r#"{"existing": [{"id": "a", "text": "Has a dog", "time": "2024-03-01"}], "new": "No longer has a dog", "time": "2024-05-02", "expected": "DELETE", "target": "a"}"#,
            r#"{"existing": [{"id": "a", "text": "Has a dog", "time": "2024-03-01"}], "new": "Has a cat", "time": "2024-05-02", "expected": "NONE"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let report = json(&memdb(&[
        "--json",
        "ops",
        "eval",
        "--scenarios",
        file.to_str().unwrap(),
        "--model",
        "update-adapter",
        "--endpoint",
        &url,
    ]));
    assert_eq!(report["scenarios"], 3, "{report}");
    assert_eq!(report["correct"], 2);
    assert_eq!(report["per_operation"]["UPDATE"]["accuracy"], 1.0);
    assert_eq!(report["per_operation"]["DELETE"]["correct"], 0);
    assert_eq!(report["confusion"]["ADD"]["ADD"], 1);
    assert_eq!(report["failed"].as_array().unwrap().len(), 1);
    assert_eq!(report["refused_lines"][0]["line"], 4);
    assert!(
        report["decider"]
            .as_str()
            .unwrap()
            .contains("update-adapter")
    );
}
