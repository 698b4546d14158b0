//! `memdb gate eval` keeps its interface (the keys scripts read), `memdb import --gate` tags or
//! drops as asked, a store keeps its lexicon versions, and `memdb gate check` is a dry run.
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
    assert_eq!(
        b["tags"],
        serde_json::json!(["gate:not-memorable", "gate:lexicon:builtin"])
    );
    let a = memdb(&["--json", "get", tagged.to_str().unwrap(), "--external", "a"]);
    assert!(
        a["tags"]
            .as_array()
            .unwrap()
            .contains(&"gate:memorable".into())
    );
}

/// Each item's keep-or-drop in a `gate check` document.
fn keeps(check: &Value) -> Vec<bool> {
    check["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["keep"].as_bool().unwrap())
        .collect()
}

const NOTES: &str = concat!(
    r#"{"external_id":"a","source":"note","time":"2024-05-01T10:00:00Z","body":"Booked the dentist for Friday."}"#,
    "\n",
    r#"{"external_id":"b","source":"note","time":"2024-05-01T10:05:00Z","body":"I'm heading home now"}"#,
    "\n",
    r#"{"external_id":"c","source":"note","time":"2024-05-01T10:06:00Z","body":"zzqx mango"}"#,
    "\n"
);

#[test]
fn a_stored_lexicon_is_versioned_and_used_by_import_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    assert!(common::memdb(&["init", store]).status.success());
    let input = dir.path().join("notes.jsonl");
    std::fs::write(&input, NOTES).unwrap();
    let input = input.to_str().unwrap();
    // No lexicon stored: the built-in scenes.
    let listed = memdb(&["--json", "gate", "lexicon", store]);
    assert_eq!(listed["versions"], serde_json::json!([]));
    let check = memdb(&["--json", "gate", "check", store, input]);
    assert_eq!(check["lexicon"], "builtin");
    let keeps = keeps(&check);
    // "home" is a word of the places scene; only the rule predicates void "heading home".
    assert_eq!(keeps, [true, true, false], "{check}");
    let ruled = memdb(&["--json", "gate", "check", store, input, "--rules"]);
    let b = &ruled["items"][1];
    assert_eq!(b["keep"], false, "{ruled}");
    assert!(
        b["reason"].as_str().unwrap().contains("heading home"),
        "{ruled}"
    );
    assert_eq!(
        (ruled["kept"].as_u64(), ruled["dropped"].as_u64()),
        (Some(1), Some(2))
    );

    // Two versions: the second (mangoes only) is current; the first stays readable.
    let lexicon = dir.path().join("fruit.toml");
    std::fs::write(
        &lexicon,
        "version = 1\n[[scene]]\nname = \"fruit\"\nwords = [\"mango\"]\n",
    )
    .unwrap();
    let v1 = memdb(&[
        "--json",
        "gate",
        "lexicon",
        store,
        "--install",
        lexicon.to_str().unwrap(),
    ]);
    assert_eq!(v1["installed"], 1);
    let v2 = memdb(&[
        "--json",
        "gate",
        "lexicon",
        store,
        "--install",
        lexicon.to_str().unwrap(),
    ]);
    assert_eq!(v2["installed"], 2);
    let listed = memdb(&["--json", "gate", "lexicon", store]);
    assert_eq!(listed["current"], 2);
    assert_eq!(listed["versions"].as_array().unwrap().len(), 2);
    let exported = memdb(&["--json", "gate", "lexicon", store, "--export", "1"]);
    assert!(exported["toml"].as_str().unwrap().contains("mango"));
    let check = memdb(&["--json", "gate", "check", store, input]);
    assert_eq!(check["lexicon"], "v2");
    assert_eq!(check["items"][2]["keep"], true, "{check}");
    assert_eq!(check["items"][0]["keep"], false, "{check}");
    // Nothing was written by the dry runs.
    assert_eq!(memdb(&["--json", "ls", store]), serde_json::json!([]));

    // Import with the store's lexicon: only the mango note is kept.
    let report = memdb(&["--json", "import", "jsonl", store, input, "--gate", "drop"]);
    assert_eq!(report["added"], 1, "{report}");
    let c = memdb(&["--json", "get", store, "--external", "c"]);
    assert_eq!(c["body"], "zzqx mango");
    // A correction of the kept note passes even though it no longer matches.
    let fix = dir.path().join("fix.jsonl");
    std::fs::write(
        &fix,
        r#"{"external_id":"c","source":"note","time":"2024-05-01T10:06:00Z","body":"zzqx papaya"}"#,
    )
    .unwrap();
    let check = memdb(&["--json", "gate", "check", store, fix.to_str().unwrap()]);
    assert_eq!(check["items"][0]["keep"], true, "{check}");
    assert!(
        check["items"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("corrects a stored item")
    );
    let report = memdb(&[
        "--json",
        "import",
        "jsonl",
        store,
        fix.to_str().unwrap(),
        "--gate",
        "drop",
    ]);
    assert_eq!(report["updated"], 1, "{report}");

    // Roll back to version 1; an unknown version is an error.
    memdb(&["--json", "gate", "lexicon", store, "--use", "1"]);
    assert_eq!(memdb(&["--json", "gate", "lexicon", store])["current"], 1);
    let out = common::memdb(&["gate", "lexicon", store, "--use", "9"]);
    assert!(!out.status.success());
    let why = common::stderr(&out);
    assert!(why.contains("no gate lexicon version 9"), "{why}");
}

#[test]
fn gate_learn_installs_into_a_store_and_eval_names_the_rule_predicates() {
    let Some(locomo) = memdb_it::shared_data("locomo") else {
        return;
    };
    let locomo = locomo.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    assert!(common::memdb(&["init", store]).status.success());
    let learned = memdb(&[
        "--json", "gate", "learn", "--locomo", locomo, "--store", store,
    ]);
    assert_eq!(learned["version"], 1, "{learned}");
    let listed = memdb(&["--json", "gate", "lexicon", store]);
    assert_eq!(listed["versions"][0]["words"], learned["words"]);
    assert!(
        listed["versions"][0]["origin"]
            .as_str()
            .unwrap()
            .contains("LoCoMo")
    );
    let plain = memdb(&["--json", "gate", "eval", "--locomo", locomo]);
    assert_eq!(plain["gate"], "GUM");
    let ruled = memdb(&["--json", "gate", "eval", "--locomo", locomo, "--rules"]);
    assert_eq!(ruled["gate"], "GUM + rule predicates");
    // Predicates only take hits away.
    assert!(ruled["memorable_kept"].as_f64() <= plain["memorable_kept"].as_f64());
    assert!(ruled["not_memorable_dropped"].as_f64() >= plain["not_memorable_dropped"].as_f64());
}

#[test]
fn role_play_grows_the_chosen_scenes_and_the_judge_decides_in_check() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::init(dir.path());
    // Role-play: each persona names a word of its own; one reply is not a word list.
    let (url, requests) = common::stub_chat_server(|request| {
        let system = request["messages"][0]["content"].as_str().unwrap_or("");
        if system.contains("retired teacher") {
            "no JSON here".to_owned()
        } else if system.contains("student") {
            r#"{"words": ["Vet bill", "zzqx"]}"#.to_owned()
        } else {
            r#"{"words": ["kibble"]}"#.to_owned()
        }
    });
    let out = dir.path().join("grown.toml");
    let doc = memdb(&[
        "--json",
        "gate",
        "generate",
        "--model",
        "play",
        "--endpoint",
        &url,
        "--scenes",
        "pets",
        "--out",
        out.to_str().unwrap(),
        "--store",
        &store,
    ]);
    assert_eq!(doc["personas"], 8);
    assert_eq!(doc["failures"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(
        doc["added"],
        serde_json::json!([{"scene": "pets", "words": ["vet bill", "zzqx", "kibble"]}])
    );
    assert_eq!(doc["version"], 1);
    assert_eq!(
        requests.try_iter().count(),
        8,
        "one request per persona for one scene"
    );
    let grown = std::fs::read_to_string(&out).unwrap();
    assert!(grown.contains("\"kibble\""), "{grown}");
    assert!(
        grown.contains("name = \"family\""),
        "other scenes kept: {grown}"
    );

    // The judge (a stub) overrules the GUM on what the GUM passes; the stored lexicon decides.
    let input = dir.path().join("notes.jsonl");
    std::fs::write(&input, NOTES).unwrap();
    let (judge_url, judged) = common::stub_chat_server(|request| {
        let user = request["messages"][1]["content"].as_str().unwrap_or("");
        if user.contains("dentist") {
            r#"{"memorable": true, "reason": "an appointment"}"#.to_owned()
        } else {
            r#"{"memorable": false, "reason": "small talk"}"#.to_owned()
        }
    });
    let check = memdb(&[
        "--json",
        "gate",
        "check",
        &store,
        input.to_str().unwrap(),
        "--judge",
        "j",
        "--endpoint",
        &judge_url,
    ]);
    assert_eq!(check["lexicon"], "v1");
    let keeps = keeps(&check);
    // dentist: GUM passes, judge keeps; heading home: GUM passes, judge drops; "zzqx mango":
    // the role-played word passes the GUM, the judge drops it.
    assert_eq!(keeps, [true, false, false], "{check}");
    assert!(
        check["items"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("small talk"),
        "{check}"
    );
    assert_eq!(judged.try_iter().count(), 3);
}
