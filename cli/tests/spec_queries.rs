//! Every example statement of SPEC.md §9.4 runs against a store built from the fixture and
//! ../shared/data/locomo/26.json, and its rows are checked against what the inputs say.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const NOW: &str = "2022-05-10T00:00:00Z";

fn memdb(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "memdb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn shared() -> Option<PathBuf> {
    let base = std::env::var_os("MEMDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let file = base.join("data/locomo/26.json");
    let model = memdb(&["model", "path", "--json"])["installed"] == true;
    if file.is_file() && model {
        return Some(file);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have {} and the encoder model",
        file.display()
    );
    eprintln!(
        "SKIPPED: {} or the encoder model is missing",
        file.display()
    );
    None
}

/// The statements in SPEC.md's ```query blocks.
fn spec_examples() -> Vec<String> {
    let spec =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../SPEC.md")).unwrap();
    let mut out = Vec::new();
    let mut inside = false;
    for line in spec.lines() {
        match (inside, line.trim()) {
            (false, "```query") => inside = true,
            (true, "```") => inside = false,
            (true, text) if !text.is_empty() => out.push(text.to_owned()),
            _ => {}
        }
    }
    out
}

/// What the LoCoMo file says: turns per session with their speaker, date and dia_id.
struct Turn {
    session: u32,
    speaker: String,
    dia_id: String,
    text: String,
}

fn locomo_turns(file: &Path) -> Vec<Turn> {
    let doc: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut sessions: Vec<(u32, &Vec<Value>)> = doc
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|s| s.0);
    sessions
        .into_iter()
        .flat_map(|(n, turns)| {
            turns.iter().map(move |t| Turn {
                session: n,
                speaker: t["speaker"].as_str().unwrap().to_owned(),
                dia_id: t["dia_id"].as_str().unwrap().to_owned(),
                text: t["text"].as_str().unwrap().to_owned(),
            })
        })
        .collect()
}

fn ext_ids(doc: &Value) -> Vec<String> {
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["external_id"].as_str().unwrap().to_owned())
        .collect()
}

fn stage<'v>(doc: &'v Value, name: &str) -> &'v Value {
    doc["plan"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == name)
        .unwrap_or_else(|| panic!("no stage {name} in {}", doc["plan"]))
}

#[test]
fn every_spec_example_returns_the_right_rows() {
    let Some(locomo) = shared() else { return };
    let turns = locomo_turns(&locomo);
    let conv = "26";
    let ext = |dia: &str| format!("{conv}/{dia}");

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/query-fixture.jsonl");
    memdb(&[
        "import",
        "--create",
        "jsonl",
        store,
        fixture.to_str().unwrap(),
        "--json",
    ]);
    // Memory 7: where I live, changed (an UPDATE: two versions, valid 2021-01-10 to
    // 2022-03-01 and from 2022-03-01).
    let first = memdb(&[
        "remember",
        store,
        "I live in Lisbon.",
        "--time",
        "2021-01-10",
        "--json",
    ]);
    let second = memdb(&[
        "remember",
        store,
        "I live in Porto.",
        "--time",
        "2022-03-01",
        "--json",
    ]);
    assert_eq!(
        (
            first["results"][0]["event"].as_str(),
            second["results"][0]["event"].as_str()
        ),
        (Some("ADD"), Some("UPDATE")),
        "{first} then {second}"
    );
    memdb(&[
        "import",
        "--create",
        "locomo",
        store,
        locomo.to_str().unwrap(),
        "--json",
    ]);
    memdb(&["embed", store, "--json"]);
    let composed = memdb(&["pages", store, "--json"]);
    let pages =
        composed["text_pages"].as_u64().unwrap() + composed["photo_pages"].as_u64().unwrap();
    assert!(pages > 10, "{composed}");

    type Check<'c> = Box<dyn Fn(&Value) + 'c>;
    let mut checks: BTreeMap<&str, Check> = BTreeMap::new();
    checks.insert(
        "RECALL 'When did Caroline go to the LGBTQ support group?' WHERE source = chat TOP 5",
        Box::new(|doc| {
            let rows = doc["rows"].as_array().unwrap();
            assert_eq!(rows.len(), 5);
            assert!(rows.iter().all(|r| r["source"] == "chat"));
            // LoCoMo's evidence for this question is D1:3.
            assert!(ext_ids(doc).contains(&ext("D1:3")), "{:?}", ext_ids(doc));
            let scores: Vec<f64> = rows.iter().map(|r| r["score"].as_f64().unwrap()).collect();
            assert!(
                scores.windows(2).all(|w| w[0] >= w[1]),
                "best first: {scores:?}"
            );
        }),
    );
    checks.insert(
        "RECALL 'photos of red roofs' WHERE NEAR(38.72, -9.14, 5km) TOP 3",
        Box::new(|doc| {
            // Two items lie within 5 km of that point: min(3, 2) rows, best match first.
            assert_eq!(ext_ids(doc), ["graca", "lisbon-hotel"]);
        }),
    );
    checks.insert(
        "PATHS MATCHING ('lgbtq', 'support group', 'caroline') MIN OVERLAP 2 TOP 3",
        Box::new(|doc| {
            let rows = doc["rows"].as_array().unwrap();
            assert_eq!(rows.len(), 3);
            let wanted = ["lgbtq", "support group", "caroline"];
            for row in rows {
                let nodes: BTreeSet<&str> = row["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_str().unwrap())
                    .collect();
                let held = wanted.iter().filter(|w| nodes.contains(*w)).count() as u64;
                assert_eq!(row["overlap"].as_u64(), Some(held), "{row}");
                assert!(held >= 2);
            }
            // Session 1 (8 May 2023) talks about the support group and holds all three.
            assert_eq!(rows[0]["overlap"], 3);
            assert!(rows.iter().any(|r| r["page"] == "2023-05-08"));
        }),
    );
    checks.insert(
        "ITEMS WHERE source = email AND time BETWEEN 2022-05-01 AND 2022-06-01 AND NEAR(38.72, -9.14, 25km)",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["lisbon-hotel"])),
    );
    checks.insert(
        "ITEMS WHERE NEAR('Porto', 10km)",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["porto"])),
    );
    let caroline_s1: Vec<String> = turns
        .iter()
        .filter(|t| t.session == 1 && t.speaker == "Caroline")
        .map(|t| ext(&t.dia_id))
        .collect();
    checks.insert(
        "ITEMS WHERE entity = 'Caroline' AND time ON 2023-05-08 ORDER BY time DESC TOP 3",
        Box::new(move |doc| {
            // One timestamp for the whole session: newest first means highest id first.
            let want: Vec<String> = caroline_s1.iter().rev().take(3).cloned().collect();
            assert_eq!(ext_ids(doc), want);
        }),
    );
    checks.insert(
        "ITEMS WHERE source IN (image, email) AND tag = 'travel'",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["lisbon-hotel", "graca", "porto"])),
    );
    checks.insert(
        "ITEMS WHERE time IN LAST 10 DAYS",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["lisbon-hotel", "graca", "porto"])),
    );
    checks.insert(
        "ITEMS WHERE tag = 'plans' AND CURRENT",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["plan-v3"])),
    );
    // A window in words: the 1st to the 7th of May 2022.
    checks.insert(
        "ITEMS WHERE time IN 'the first week of May 2022' ORDER BY time ASC",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["lisbon-hotel", "graca"])),
    );
    // The question's own time, read from the day it is asked: May 2022, a filter.
    checks.insert(
        "RECALL 'photos from last month' WHERE source = image ASKED ON 2022-06-15 TOP 5",
        Box::new(|doc| {
            let mut ids = ext_ids(doc);
            ids.sort();
            assert_eq!(ids, ["graca", "porto"]);
        }),
    );
    checks.insert(
        "ITEMS WHERE SUPERSEDES 1",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["plan-v2"])),
    );
    checks.insert(
        "HISTORY OF 2",
        Box::new(|doc| assert_eq!(ext_ids(doc), ["plan-v1", "plan-v2", "plan-v3"])),
    );
    // A memory's body is the fact as extracted (a sentence without its full stop).
    let texts = |doc: &Value| -> Vec<String> {
        doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["body"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    checks.insert(
        "HISTORY OF 7",
        Box::new(move |doc| {
            assert_eq!(texts(doc), ["I live in Lisbon", "I live in Porto"]);
            let rows = doc["rows"].as_array().unwrap();
            // The first version: valid from the day it was said until the move, replaced by
            // the update; the second: valid from the move on, current.
            assert!(
                rows[0]["valid_from"]
                    .as_str()
                    .unwrap()
                    .starts_with("2021-01-10")
            );
            assert!(
                rows[0]["valid_to"]
                    .as_str()
                    .unwrap()
                    .starts_with("2022-03-01")
            );
            assert!(rows[0]["replaced"].is_string());
            assert!(
                rows[1]["valid_from"]
                    .as_str()
                    .unwrap()
                    .starts_with("2022-03-01")
            );
            assert!(rows[1]["valid_to"].is_null() && rows[1]["replaced"].is_null());
        }),
    );
    checks.insert(
        "HISTORY OF 7 VALID AT 2021-06-01",
        Box::new(move |doc| assert_eq!(texts(doc), ["I live in Lisbon"])),
    );
    checks.insert(
        "ITEMS WHERE tag = 'memory' VALID AT 2021-06-01",
        Box::new(move |doc| {
            assert_eq!(texts(doc), ["I live in Lisbon"]);
            assert_eq!(doc["rows"][0]["id"], 7);
        }),
    );
    // plan-v2 (25 April) supersedes plan-v1 and plan-v3 (28 April) supersedes it: read as
    // updates, on 26 April only plan-v2 was the plan.
    checks.insert(
        "ITEMS WHERE tag = 'plans' VALID AT 2022-04-26",
        Box::new(|doc| {
            assert_eq!(ext_ids(doc), ["plan-v2"]);
            assert_eq!(doc["rows"][0]["valid_to"], "2022-04-28T08:00:00+00:00");
        }),
    );
    // memdb learned everything in this run: in 2020 it knew nothing.
    checks.insert(
        "ITEMS WHERE tag = 'memory' AS OF 2020-01-01",
        Box::new(move |doc| assert_eq!(texts(doc), Vec::<String>::new())),
    );
    checks.insert(
        "RECALL 'Where do I live?' WHERE tag = 'memory' VALID AT 2021-06-01 TOP 1",
        Box::new(move |doc| {
            // The earlier version, ranked by a fresh embedding of its text (the store holds the
            // current version's vector only) and BM25 over it.
            assert_eq!(texts(doc), ["I live in Lisbon"]);
            assert_eq!(doc["rows"][0]["id"], 7);
            assert!(doc["rows"][0]["replaced"].is_string());
            assert_eq!(doc["rows"][0]["why"]["dense_rank"], 1);
        }),
    );
    let chat_turns = turns.len() as u64;
    checks.insert(
        "SHOW STATS",
        Box::new(move |doc| {
            // The fixture's 6 items, memory 7 and the turns.
            assert_eq!(doc["items"], 7 + chat_turns);
            let by = &doc["items_by_source"];
            assert_eq!(
                (&by["chat"], &by["image"], &by["email"], &by["note"]),
                (&chat_turns.into(), &2.into(), &1.into(), &4.into())
            );
            assert_eq!(doc["vectors"]["items"], 7 + chat_turns);
            assert!(doc["graph_paths"].as_u64().unwrap() > 0);
        }),
    );
    checks.insert(
        "SHOW ITEM 3",
        Box::new(|doc| {
            let item = &doc["item"];
            assert_eq!(item["external_id"], "plan-v3");
            assert_eq!(item["supersedes"], 2);
            assert!(item["text"].as_str().unwrap().contains("back 10 May"));
        }),
    );
    checks.insert(
        "SHOW NODE 'Support Group'",
        Box::new(|doc| {
            assert_eq!(doc["node"]["phrase"], "support group");
            let paths = doc["paths"].as_array().unwrap();
            assert!(!paths.is_empty());
            for p in paths {
                assert!(
                    p["nodes"]
                        .as_array()
                        .unwrap()
                        .contains(&"support group".into())
                );
            }
        }),
    );
    let store_path = store.to_owned();
    checks.insert(
        "SHOW PATH 1",
        Box::new(move |doc| {
            let page = doc["path"]["page"].as_str().unwrap().to_owned();
            let rows = doc["rows"].as_array().unwrap();
            assert!(!rows.is_empty());
            // A path is one day: every item of it lies on its page.
            for row in rows {
                let id = row["id"].to_string();
                let item = memdb(&["get", &store_path, &id, "--json"]);
                assert!(
                    item["time"].as_str().unwrap().starts_with(&page),
                    "{} not on {page}",
                    item["time"]
                );
            }
        }),
    );
    let session_1: Vec<String> = turns
        .iter()
        .filter(|t| t.session == 1)
        .map(|t| ext(&t.dia_id))
        .collect();
    checks.insert(
        "SHOW PAGE 2023-05-08",
        Box::new(move |doc| {
            assert_eq!(ext_ids(doc), session_1);
            assert!(
                doc["paths"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|p| p["page"] == "2023-05-08")
            );
        }),
    );
    let session_2 = turns.iter().filter(|t| t.session == 2).count() as u64;
    checks.insert(
        "EXPLAIN ITEMS WHERE source = chat AND tag = 'session_2'",
        Box::new(move |doc| {
            let scan = stage(doc, "scan");
            assert!(scan["detail"].as_str().unwrap().contains("by_source"));
            assert_eq!(scan["actual"], chat_turns);
            assert!(scan["estimated"].is_u64());
            assert_eq!(stage(doc, "filter")["actual"], session_2);
            assert_eq!(doc["rows"].as_array().unwrap().len() as u64, session_2);
        }),
    );
    let charity: BTreeSet<String> = turns
        .iter()
        .filter(|t| t.text.to_lowercase().contains("charity race"))
        .map(|t| ext(&t.dia_id))
        .collect();
    checks.insert(
        "EXPLAIN RECALL 'charity race for mental health' WHERE time ON 2023-05-25 TOP 2",
        Box::new(move |doc| {
            let rows = doc["rows"].as_array().unwrap();
            assert_eq!(rows.len(), 2);
            assert!(
                rows.iter()
                    .all(|r| r["time"].as_str().unwrap().starts_with("2023-05-25"))
            );
            assert!(charity.contains(&ext_ids(doc)[0]), "{:?}", ext_ids(doc));
            assert!(
                stage(doc, "dense")["detail"]
                    .as_str()
                    .unwrap()
                    .contains("filtered")
            );
            for name in ["index", "encode", "lexical", "graph", "fuse"] {
                stage(doc, name);
            }
            // The total is the statement's wall time: never less than its stages together
            // (each is timed on its own, none twice).
            let plan = &doc["plan"];
            let stages: u64 = plan["stages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["us"].as_u64().unwrap())
                .sum();
            let total = plan["total_us"].as_u64().unwrap();
            assert!(stages <= total, "stages {stages} µs, total {total} µs");
        }),
    );
    checks.insert(
        "FORGET 'timed-gentle' AS OF 2030-01-01 DRY RUN",
        Box::new(move |doc| {
            assert_eq!(doc["kind"], "forget");
            assert_eq!(doc["dry_run"], true);
            let stages = doc["stages"].as_array().unwrap();
            let names: Vec<&str> = stages.iter().map(|s| s["name"].as_str().unwrap()).collect();
            assert_eq!(names, ["recent", "mid", "old"]);
            // Every page is from 2022–2023: more than 730 days old in 2030, so Old, where body
            // text (14 px at scale 0.6) fades; text-only pages hold no pixels to save, and the
            // item vectors are stored i8 from the start (the store's default), so Old's i8
            // leaves nothing to quantize: nothing is saved but nodes fade.
            assert_eq!(
                (stages[0]["pages"].as_u64(), stages[1]["pages"].as_u64()),
                (Some(0), Some(0))
            );
            assert_eq!(stages[2]["pages"].as_u64(), Some(pages));
            assert_eq!(stages[2]["pages_changed"].as_u64(), Some(pages));
            assert!(stages[2]["nodes_faded"].as_u64().unwrap() > 0);
            assert_eq!(stages[2]["vectors_quantized"].as_u64(), Some(0));
            assert_eq!(doc["bytes_saved"].as_u64(), Some(0));
        }),
    );

    let examples = spec_examples();
    let listed: BTreeSet<&str> = examples.iter().map(String::as_str).collect();
    let checked: BTreeSet<&str> = checks.keys().copied().collect();
    assert_eq!(
        listed, checked,
        "SPEC.md §9.4 examples and this test's checks differ"
    );
    for example in &examples {
        let doc = memdb(&["query", store, example, "--now", NOW, "--json"]);
        assert_eq!(
            doc["statement"],
            example.as_str(),
            "examples are written canonically"
        );
        checks[example.as_str()](&doc);
    }
    // FORGET … DRY RUN left every page as composed.
    let stats = memdb(&["stats", store, "--json"]);
    let stages = stats["pages_by_stage"].as_array().unwrap();
    assert_eq!(stages.len(), 1);
    assert_eq!(
        (stages[0]["stage"].as_u64(), stages[0]["pages"].as_u64()),
        (Some(0), Some(pages))
    );
}
