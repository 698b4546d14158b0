//! Issue 23, "done when": `memdb import atm` then `memdb eval atm` end to end on the fixture of
//! tests/data/atm (a synthetic life in ATM-Bench's own file shapes, written by its
//! make_fixture.py): the import lands every record, keeps the pictures that are there, leaves a
//! clean store and changes nothing the second time; the evaluator's figures on the fixture's
//! fixed rankings and answers equal the ones the fixture's design gives (expected.json); and a
//! retrieval through the store writes its results in the benchmark's shapes.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::PathBuf;

use common::{json, json_with, memdb, model_installed};
use serde_json::Value;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/atm")
}

fn file(name: &str) -> String {
    fixture().join(name).to_str().unwrap().to_owned()
}

/// Every number in `want` equals the one at the same place in `got` (to 1e-6); every other
/// value is equal.
fn assert_figures(got: &Value, want: &Value, path: &str) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (key, w) in w {
                let g = g
                    .get(key)
                    .unwrap_or_else(|| panic!("{path}.{key} missing in {got}"));
                assert_figures(g, w, &format!("{path}.{key}"));
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            assert!(
                (g - w).abs() < 1e-6,
                "{path}: memdb says {g}, the fixture's design {w}"
            );
        }
        (g, w) => assert_eq!(g, w, "{path}"),
    }
}

#[test]
fn import_then_evaluate_the_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::init(dir.path());
    let first = json(&memdb(&[
        "--json",
        "import",
        "atm",
        &store,
        fixture().to_str().unwrap(),
    ]));
    assert_eq!(first["files"], 3, "{first}");
    assert_eq!(first["added"], 210 + 110 + 4, "{first}");
    assert_eq!(first["skipped"].as_array().unwrap().len(), 0, "{first}");
    let again = json(&memdb(&[
        "--json",
        "import",
        "atm",
        &store,
        fixture().to_str().unwrap(),
    ]));
    assert_eq!(
        (again["added"].as_u64(), again["updated"].as_u64()),
        (Some(0), Some(0)),
        "{again}"
    );
    assert_eq!(again["unchanged"], 324, "{again}");
    let check = json(&memdb(&["--json", "check", &store]));
    assert_eq!(check["clean"], true, "{check}");

    // The records are typed: an image with its picture, a video, an e-mail.
    let image = json(&memdb(&[
        "--json",
        "get",
        &store,
        "--external",
        "20210302_170055",
    ]));
    assert_eq!(image["source"], "image", "{image}");
    assert!(image.to_string().contains("Market Square"), "{image}");
    let blobs = image["blobs"].as_array().unwrap();
    assert_eq!(
        blobs.len(),
        1,
        "the picture is kept as the original: {image}"
    );
    let absent = json(&memdb(&[
        "--json",
        "get",
        &store,
        "--external",
        &image_id(40),
    ]));
    assert_eq!(absent["blobs"].as_array().unwrap().len(), 0, "{absent}");
    let video = json(&memdb(&[
        "--json",
        "get",
        &store,
        "--external",
        "20210917_080000",
    ]));
    assert_eq!(video["source"], "video", "{video}");

    // Fixed rankings: the figures the design gives.
    let expected: Value =
        serde_json::from_slice(&std::fs::read(file("expected.json")).unwrap()).unwrap();
    let report = json(&memdb(&[
        "--json",
        "eval",
        "atm",
        &store,
        &file("qa.json"),
        "--predictions",
        &file("predictions.jsonl"),
        "--rankings",
        &file("rankings.json"),
    ]));
    assert_figures(&report["overall"], &expected["overall"], "overall");
    assert_figures(&report["by_qtype"], &expected["by_qtype"], "by_qtype");
    println!("fixed rankings: {}", report["overall"]);
}

/// The id of the `n`-th image record of the fixture.
fn image_id(n: usize) -> String {
    let images: Value =
        serde_json::from_slice(&std::fs::read(file("image_batch_results.json")).unwrap()).unwrap();
    let path = images[n]["image_path"].as_str().unwrap();
    path.rsplit('/')
        .next()
        .unwrap()
        .trim_end_matches(".jpg")
        .to_owned()
}

#[test]
fn retrieval_through_the_store_writes_the_benchmarks_shapes() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = common::init(dir.path());
    json(&memdb(&[
        "--json",
        "import",
        "atm",
        &store,
        fixture().to_str().unwrap(),
    ]));
    let args = ["--json", "eval", "atm", &store, &file("qa.json")];
    let unembedded = memdb(&args);
    assert_eq!(unembedded.status.code(), Some(2));
    assert!(
        common::stderr(&unembedded).contains("memdb embed"),
        "{}",
        common::stderr(&unembedded)
    );
    json(&memdb(&["--json", "embed", &store]));
    let out = dir.path().join("results");
    let out_arg = out.to_str().unwrap();
    let with_answers = [
        "--predictions",
        &file("predictions.jsonl"),
        "--out",
        out_arg,
    ];
    for (retriever, report) in evaluate_each_retriever(&store, "sgm", &with_answers) {
        assert_eq!(report["overall"]["count"], 64, "{retriever}");
        assert_eq!(
            report["overall"]["qs"]["not_scored"], 16,
            "open_end without a judge"
        );
    }
    let details: Value =
        serde_json::from_slice(&std::fs::read(out.join("retrieval_recall_details.json")).unwrap())
            .unwrap();
    let rows = details.as_array().unwrap();
    assert_eq!(rows.len(), 64);
    for row in rows {
        for key in [
            "id",
            "question",
            "gt_evidence_ids",
            "retrieval_ids",
            "retrieval_scores",
            "retrieval_recall",
        ] {
            assert!(row.get(key).is_some(), "{key} missing: {row}");
        }
        // At most as deep as the largest k; fewer when fewer items match at all.
        let ids = row["retrieval_ids"].as_array().unwrap();
        assert!(ids.len() <= 10, "{row}");
        assert_eq!(ids.len(), row["retrieval_scores"].as_array().unwrap().len());
    }
    // The NIAH question retrieves from its pool only.
    let qa: Value = serde_json::from_slice(&std::fs::read(file("qa.json")).unwrap()).unwrap();
    let niah = qa["qas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q.get("niah_evidence_ids").is_some())
        .unwrap();
    let pool: Vec<&Value> = niah["niah_evidence_ids"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let row = rows.iter().find(|r| r["id"] == niah["id"]).unwrap();
    for id in row["retrieval_ids"].as_array().unwrap() {
        assert!(pool.contains(&id), "{id} is not in the pool");
    }
    let answers: Value =
        serde_json::from_slice(&std::fs::read(out.join("atm_results.json")).unwrap()).unwrap();
    assert_eq!(
        answers.as_array().unwrap().len(),
        48,
        "number and list_recall answers"
    );

    // The same store with descriptive item text (ATM-Bench's comparison): every vector is made
    // again, the evaluation names the style, and the store stays clean. The figures of both
    // styles are printed, not pinned (the closing note of issue 23 reports them).
    let items = json(&memdb(&["--json", "stats", &store]))["items"].clone();
    let embedded = json(&memdb(&[
        "--json",
        "embed",
        &store,
        "--item-text",
        "descriptive",
    ]));
    assert_eq!(embedded["item_text"], "descriptive");
    assert_eq!(embedded["remade"], items);
    assert_eq!(embedded["encoded"], items);
    evaluate_each_retriever(&store, "descriptive", &[]);
    let bad = memdb(&["embed", &store, "--item-text", "poetic"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(common::stderr(&bad).contains("sgm or descriptive"));
    let check = json(&memdb(&["--json", "check", &store]));
    assert_eq!(check["clean"], true, "{check}");
}

/// `memdb eval atm` of the fixture's questions with each retriever (and `extra` arguments) over
/// a store in the item-text `style`: the reports, by retriever, each naming the style.
fn evaluate_each_retriever(store: &str, style: &str, extra: &[&str]) -> Vec<(String, Value)> {
    let qa = file("qa.json");
    ["full", "lexical", "flat"]
        .into_iter()
        .map(|retriever| {
            let mut args = vec![
                "--json",
                "eval",
                "atm",
                store,
                &qa,
                "--retriever",
                retriever,
            ];
            args.extend_from_slice(extra);
            let report = json(&memdb(&args));
            assert_eq!(report["item_text"], style, "{retriever}");
            println!("{retriever}, {style}: {}", report["overall"]);
            (retriever.to_owned(), report)
        })
        .collect()
}

#[test]
fn bad_inputs_are_reported_and_the_rest_lands() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::init(dir.path());
    let data = dir.path().join("atm");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("emails.json"),
        r#"[{"id": "email1", "detail": "fine"}, {"detail": "no id"}, {"id": "email1", "detail": "again"},
            {"id": "email4", "timestamp": "not a time"}, {"id": "email5", "detail": "fine too"}, {"id": "email6", "det"#,
    )
    .unwrap();
    std::fs::write(
        data.join("image_batch_results.json"),
        r#"[{"image_path": "x/20220101_101010.jpg", "location": [123.0, 0.0]}, {"image_path": "x/20220101_101011.jpg", "tags": [1]},
            {"image_path": "x/20220101_101012.jpg", "caption": "ok"}]"#,
    )
    .unwrap();
    // A picture that is not a JPEG: the record lands without it.
    std::fs::write(
        data.join("20220101_101012.jpg"),
        b"\x89PNG\r\n\x1a\nnot really",
    )
    .unwrap();
    let out = memdb(&["--json", "import", "atm", &store, data.to_str().unwrap()]);
    let report = json(&out);
    assert_eq!(report["added"], 3, "{report}");
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), 6, "{skipped:?}");
    for s in &skipped {
        assert!(
            s.contains("emails.json:") || s.contains("image_batch_results.json:"),
            "{s}"
        );
    }
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("record 2") && s.contains("`id`")),
        "{skipped:?}"
    );
    assert!(
        skipped.iter().any(|s| s.contains("after record 5")),
        "{skipped:?}"
    );
    assert!(
        skipped.iter().any(|s| s.contains("latitude 123")),
        "{skipped:?}"
    );
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("PNG"), "{warnings}");
    // A folder without the benchmark's files imports nothing and says why.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let none = json_with(
        &memdb(&["--json", "import", "atm", &store, empty.to_str().unwrap()]),
        2,
    );
    assert!(
        none["skipped"][0]
            .as_str()
            .unwrap()
            .contains("holds no ATM-Bench memory file"),
        "{none}"
    );
    // A QA file that is not one is refused as a whole, naming it.
    let bad_qa = dir.path().join("qa.json");
    std::fs::write(&bad_qa, "[{\"id\": 1,").unwrap();
    let out = memdb(&[
        "eval",
        "atm",
        &store,
        bad_qa.to_str().unwrap(),
        "--rankings",
        &file("rankings.json"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("qa.json"),
        "{}",
        common::stderr(&out)
    );
}
