//! The `memdb` binary as a script would use it: exit codes, `--json` output, one-line errors.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Output};

use memdb_it::shared_data;

fn memdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn shared_locomo() -> Option<PathBuf> {
    shared_data("locomo")
}

#[test]
fn jsonl_import_stats_get_ls_check_compact() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let file = dir.path().join("items.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"external_id\":\"n1\",\"source\":\"note\",\"time\":\"2024-01-02T10:00:00+01:00\",\"body\":\"first\"}\n",
            "{\"external_id\":\"n2\",\"source\":\"email\",\"time\":\"2024-02-02T10:00:00Z\",\"body\":\"second\"}\n",
            "{\"source\":\"nonsense\",\"time\":\"2024-02-02\"}\n",
            "{\"external_id\":\"n3\",\"source\":\"chat\",\"time\":\"2024-03-02\",\"body\":\"third\"}\n",
        ),
    )
    .unwrap();
    assert!(memdb(&["init", store]).status.success());
    let out = memdb(&["init", store]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("memdb: "));

    let import = json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        store,
        file.to_str().unwrap(),
    ]));
    assert_eq!(import["added"], 3);
    assert_eq!(import["skipped"].as_array().unwrap().len(), 1);
    assert!(
        import["skipped"][0].as_str().unwrap().contains("line 3"),
        "{import}"
    );
    let again = json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        store,
        file.to_str().unwrap(),
    ]));
    assert_eq!(
        (again["added"].as_u64(), again["unchanged"].as_u64()),
        (Some(0), Some(3))
    );

    let stats = json(&memdb(&["--json", "stats", store]));
    assert_eq!(stats["items"], 3);
    assert_eq!(stats["items_by_source"]["email"], 1);

    let item = json(&memdb(&["--json", "get", store, "--external", "n2"]));
    assert_eq!(item["body"], "second");
    assert_eq!(item["time"], "2024-02-02T10:00:00+00:00");
    let missing = memdb(&["get", store, "999"]);
    assert_eq!(missing.status.code(), Some(2));

    let listed = json(&memdb(&[
        "--json",
        "ls",
        store,
        "--from",
        "2024-02-01",
        "--source",
        "email",
    ]));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let bad = memdb(&["ls", store, "--source", "fax"]);
    assert_eq!(bad.status.code(), Some(2));

    let check = json(&memdb(&["--json", "check", store]));
    assert_eq!(check["clean"], true);
    assert!(
        json(&memdb(&["--json", "compact", store, "--all"]))["segments_written"]
            .as_u64()
            .unwrap()
            >= 1
    );
    assert_eq!(json(&memdb(&["--json", "stats", store]))["dead_bytes"], 0);
}

#[test]
fn check_exits_non_zero_on_a_damaged_segment() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let file = dir.path().join("items.jsonl");
    std::fs::write(
        &file,
        "{\"source\":\"note\",\"time\":\"2024-01-02\",\"body\":\"x\"}\n",
    )
    .unwrap();
    json(&memdb(&[
        "--json",
        "import",
        "--create",
        "jsonl",
        store.to_str().unwrap(),
        file.to_str().unwrap(),
    ]));
    let seg = std::fs::read_dir(store.join("segments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[4096 + 70] ^= 0x10;
    std::fs::write(&seg, bytes).unwrap();
    let out = memdb(&["--json", "check", store.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["clean"], false);
    assert_eq!(report["problems"][0]["page"], 1);
}

#[test]
fn all_locomo_files_import_with_counts_equal_to_turns() {
    let Some(locomo) = shared_locomo() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let mut files: Vec<String> = std::fs::read_dir(&locomo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.to_str().unwrap().to_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 5);
    let mut args = vec![
        "--json",
        "import",
        "--create",
        "locomo",
        store.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let first = json(&memdb(&args));
    assert_eq!(first["added"], 2760);
    assert_eq!(first["skipped"].as_array().unwrap().len(), 0);
    let second = json(&memdb(&args));
    assert_eq!(second["unchanged"], 2760);
    let stats = json(&memdb(&["--json", "stats", store.to_str().unwrap()]));
    assert_eq!(stats["items"], 2760);
    assert_eq!(stats["items_by_source"]["chat"], 2760);
    assert_eq!(
        json(&memdb(&["--json", "check", store.to_str().unwrap()]))["clean"],
        true
    );
}

/// Whether the encoder's weights are installed; in CI they must be (scripts/test.sh installs
/// them), elsewhere a test that needs them is skipped loudly.
fn model_installed() -> bool {
    let installed = json(&memdb(&["model", "path", "--json"]))["installed"] == true;
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the encoder model installed (scripts/install-model.sh)"
        );
        eprintln!("SKIPPED: the encoder model is not installed (run `memdb model install`)");
    }
    installed
}

#[test]
fn embed_is_incremental_and_similar_finds_by_meaning_within_filters() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let file = dir.path().join("items.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"external_id\":\"hotel\",\"source\":\"email\",\"time\":\"2024-03-05\",\"body\":\"Your booking at Hotel Alfama in Lisbon is confirmed for three nights.\"}\n",
            "{\"external_id\":\"gift\",\"source\":\"chat\",\"time\":\"2024-04-20\",\"body\":\"I gave Mila a red bicycle for her seventh birthday.\"}\n",
            "{\"external_id\":\"dentist\",\"source\":\"email\",\"time\":\"2024-04-02\",\"body\":\"Reminder: dental check-up on Tuesday at 9:30.\"}\n",
        ),
    )
    .unwrap();
    json(&memdb(&[
        "import",
        "--create",
        "jsonl",
        store,
        file.to_str().unwrap(),
        "--json",
    ]));
    let first = json(&memdb(&["embed", store, "--json"]));
    assert_eq!(first["encoded"], 3);
    let second = json(&memdb(&["embed", store, "--json"]));
    assert_eq!(
        (
            second["encoded"].clone(),
            second["already_embedded"].clone()
        ),
        (0.into(), 3.into())
    );

    let ext = |hits: &serde_json::Value| -> Vec<String> {
        hits.as_array()
            .unwrap()
            .iter()
            .map(|h| h["external_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let hits = json(&memdb(&[
        "similar",
        store,
        "where did I stay in Lisbon?",
        "-k",
        "1",
        "--json",
    ]));
    assert_eq!(ext(&hits), vec!["hotel"]);
    let hits = json(&memdb(&[
        "similar",
        store,
        "a present for a child",
        "-k",
        "1",
        "--json",
    ]));
    assert_eq!(ext(&hits), vec!["gift"]);
    // The filter runs inside the search: asking for the gift among e-mails returns e-mails only,
    // and exactly as many as asked for.
    let hits = json(&memdb(&[
        "similar",
        store,
        "a present for a child",
        "-k",
        "2",
        "--source",
        "email",
        "--json",
    ]));
    let mut found = ext(&hits);
    found.sort();
    assert_eq!(found, vec!["dentist", "hotel"]);
    let hits = json(&memdb(&[
        "similar",
        store,
        "Lisbon",
        "--from",
        "2024-04-01",
        "--json",
    ]));
    assert!(!ext(&hits).contains(&"hotel".to_owned()));

    // Vectors survive compaction and stay consistent.
    json(&memdb(&["compact", store, "--all", "--json"]));
    let hits = json(&memdb(&[
        "similar",
        store,
        "where did I stay in Lisbon?",
        "-k",
        "1",
        "--json",
    ]));
    assert_eq!(ext(&hits), vec!["hotel"]);
    assert!(memdb(&["check", store]).status.success());

    // `memdb embed` also built the memory graph; recall fuses it with dense and BM25, explains
    // each hit, and applies filters inside every signal.
    assert_eq!(first["graph"]["items"], 3);
    assert!(
        first["graph"]["new_paths"].as_u64().unwrap() >= 3,
        "{first}"
    );
    let recall = json(&memdb(&[
        "recall",
        store,
        "What did I give Mila?",
        "-k",
        "2",
        "--json",
    ]));
    let hits = recall["hits"].as_array().unwrap();
    assert_eq!(hits[0]["external_id"], "gift", "{recall}");
    let why = &hits[0]["why"];
    assert!(why["lexical_rank"].is_number() && why["dense_rank"].is_number());
    assert!(
        why["nodes"].as_array().unwrap().iter().any(|n| n == "mila"),
        "{recall}"
    );
    assert!(
        recall["query_nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mila")
    );
    let recall = json(&memdb(&[
        "recall",
        store,
        "What did I give Mila?",
        "--source",
        "email",
        "--json",
    ]));
    assert!(
        recall["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["source"] == "email"),
        "{recall}"
    );
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    assert!(memdb(&["init", store.to_str().unwrap()]).status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["stats", store.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn photos_and_mail_import_from_folders_report_bad_files_and_reimport_idempotently() {
    let (Some(photos), Some(mail)) = (shared_data("photos"), shared_data("mail")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    // 18 orientation examples (all good) and a folder of 98 fuzzed files (many broken).
    let orient = photos.join("exif-orientation-examples");
    let broken = photos.join("metadata-extractor-images/ImageTestSuite");
    let out = memdb(&[
        "import",
        "--create",
        "photos",
        store,
        orient.to_str().unwrap(),
        broken.to_str().unwrap(),
        "--json",
    ]);
    let report = json(&out);
    let skipped = report["skipped"].as_array().unwrap();
    let warnings = report["warnings"].as_array().unwrap();
    assert!(!skipped.is_empty());
    assert!(
        skipped
            .iter()
            .all(|s| s.as_str().unwrap().contains(".jpg: ")),
        "each skipped file says which and why: {skipped:?}"
    );
    // Damaged photos are kept, each with a warning; every file is accounted for.
    let damaged: Vec<&str> = warnings
        .iter()
        .map(|w| w.as_str().unwrap())
        .filter(|w| w.contains("kept, but damaged"))
        .collect();
    assert!(!damaged.is_empty(), "{warnings:?}");
    let added = report["added"].as_u64().unwrap();
    assert_eq!(added + skipped.len() as u64, 18 + 98, "{report}");
    // The originals are kept byte for byte, named by content, the file name a tag.
    let landscape = std::fs::read(orient.join("Landscape_3.jpg")).unwrap();
    let id = memdb_formats::import::photo::content_id(&landscape);
    let got = json(&memdb(&["get", store, "--external", &id, "--json"]));
    assert_eq!(got["source"], "image");
    assert_eq!(got["blobs"].as_array().unwrap().len(), 1);
    assert!(
        got["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "file:Landscape_3.jpg"),
        "{got}"
    );

    let mbox = mail.join("mbox/mimekit");
    let first = json(&memdb(&[
        "import",
        "mail",
        store,
        mbox.to_str().unwrap(),
        "--json",
    ]));
    let again = json(&memdb(&[
        "import",
        "mail",
        store,
        mbox.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(first["added"], 38, "{first}");
    assert_eq!(first["skipped"].as_array().unwrap().len(), 0, "{first}");
    assert_eq!(again["added"], 0);
    assert_eq!(again["unchanged"], first["added"]);
    let emails = json(&memdb(&[
        "query",
        store,
        "ITEMS WHERE source = email",
        "--json",
    ]));
    assert_eq!(
        emails["rows"].as_array().unwrap().len() as u64,
        first["added"].as_u64().unwrap()
    );
    assert!(memdb(&["check", store]).status.success());
}

/// R12: under umask 000 every file memdb creates is still 0600 and every directory 0700.
#[test]
fn files_stay_private_under_umask_000() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let file = dir.path().join("items.jsonl");
    std::fs::write(
        &file,
        "{\"source\":\"note\",\"time\":\"2024-01-02\",\"body\":\"private words\"}\n",
    )
    .unwrap();
    let script = format!(
        "umask 000 && \"$0\" import --create jsonl '{}' '{}' && \"$0\" compact '{}' --all",
        store.display(),
        file.display(),
        store.display()
    );
    let status = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_memdb")])
        .status()
        .unwrap();
    assert!(status.success());
    let mut stack = vec![store.clone()];
    let mut seen = 0;
    while let Some(path) = stack.pop() {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        if path.is_dir() {
            assert_eq!(mode, 0o700, "{}", path.display());
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            assert_eq!(mode, 0o600, "{}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 4, "store dir, segments dir, catalog, a segment");
}

/// The scrapbook and forgetting commands as a person uses them: compose pages, look at one,
/// dry-run a policy, forget, and see the stages in `stats`.
#[test]
fn pages_forget_and_show_page_from_the_command_line() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    // Five photos with capture times and four without (undated: no day of their own).
    let nature = photos.join("immich-test-assets/albums/nature");
    memdb(&[
        "import",
        "--create",
        "photos",
        store,
        nature.to_str().unwrap(),
    ]);
    let composed = json(&memdb(&["pages", store, "--json"]));
    assert_eq!(
        composed["photo_pages"].as_u64().unwrap(),
        composed["days"].as_u64().unwrap()
    );
    // redb shrinks its file at the first reopen after a write: settle it before comparing.
    memdb(&["stats", store]);
    let stats = json(&memdb(&["stats", store, "--json"]));
    let page_day = {
        let items = json(&memdb(&["ls", store, "--json"]));
        let times: Vec<&str> = items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["time"].as_str().unwrap())
            .collect();
        assert_eq!(
            times.iter().filter(|t| **t == "undated").count(),
            4,
            "{times:?}"
        );
        times.iter().find(|t| **t != "undated").unwrap()[..10].to_owned()
    };
    let image = dir.path().join("page.jpg");
    let shown = json(&memdb(&[
        "show",
        "page",
        store,
        &page_day,
        "--out",
        image.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(shown["stage"], 0);
    assert_eq!(shown["quality"], 95);
    // A tall page comes out as page.jpg, page-2.jpg, …: together its stored bytes.
    let written = shown["written"].as_array().unwrap();
    assert_eq!(written.len(), shown["parts"].as_array().unwrap().len());
    assert_eq!(written[0].as_str().unwrap(), image.to_str().unwrap());
    let mut total = 0;
    for path in written {
        let jpeg = std::fs::read(path.as_str().unwrap()).unwrap();
        assert!(jpeg.starts_with(&[0xff, 0xd8, 0xff]));
        total += jpeg.len() as u64;
    }
    assert_eq!(shown["stored_bytes"].as_u64().unwrap(), total);

    let dry = json(&memdb(&[
        "forget",
        store,
        "--policy",
        "timed-gentle",
        "--as-of",
        "2040-01-01",
        "--dry-run",
        "--json",
    ]));
    assert!(dry["bytes_saved"].as_u64().unwrap() > 0);
    assert_eq!(
        json(&memdb(&["stats", store, "--json"])),
        stats,
        "a dry run wrote"
    );
    let real = json(&memdb(&[
        "forget",
        store,
        "--policy",
        "timed-gentle",
        "--as-of",
        "2040-01-01",
        "--yes",
        "--json",
    ]));
    assert_eq!(real["bytes_saved"], dry["bytes_saved"]);
    assert!(
        real["store_bytes_after"].as_u64().unwrap() < real["store_bytes_before"].as_u64().unwrap()
    );
    let after = json(&memdb(&["stats", store, "--json"]));
    let stages = after["pages_by_stage"].as_array().unwrap();
    assert_eq!(stages.len(), 1);
    assert_eq!(stages[0]["stage"], 2);
    let shown = json(&memdb(&["show", "page", store, &page_day, "--json"]));
    assert_eq!(
        (shown["quality"].as_u64(), shown["scale"].as_f64()),
        (Some(40), Some(0.6))
    );
    // A policy file, and its errors.
    let policy = dir.path().join("bad.toml");
    std::fs::write(
        &policy,
        "name = \"x\"\n[[stage]]\nname = \"a\"\nquality = 120\nscale = 1.0\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args([
            "forget",
            store,
            "--policy",
            policy.to_str().unwrap(),
            "--as-of",
            "2040-01-01",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("quality 120 is not in 1..=100"), "{err}");
    let check = memdb(&["check", store]);
    assert!(check.status.success());
}

/// While another process holds a store as its writer (here a `memdb import` reading its
/// standard input), the commands that only read open it read-only beside it and work; a
/// command that writes waits for the lock (`MEMDB_LOCK_WAIT`, default 10 s): with no wait it is
/// refused with the lock error at once, and one that waits goes through when the writer ends.
#[test]
fn reading_commands_work_beside_a_running_writer() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let jsonl = dir.path().join("items.jsonl");
    std::fs::write(
        &jsonl,
        "{\"source\":\"note\",\"time\":\"2024-05-01T09:30:00Z\",\"body\":\"hotel in Lisbon\",\"external_id\":\"n1\"}\n",
    )
    .unwrap();
    assert!(
        memdb(&[
            "import",
            "--create",
            "jsonl",
            store,
            jsonl.to_str().unwrap()
        ])
        .status
        .success()
    );
    // A writer that keeps the store: an import reading its standard input, still open. (The
    // shell no longer serves: it reads without the lock.)
    let mut writer = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["import", "jsonl", store, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // It holds the lock once LOCK names it (the writer writes its pid there).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let lock = std::path::Path::new(store).join("LOCK");
    while std::fs::read_to_string(&lock).unwrap_or_default().trim() != writer.id().to_string() {
        assert!(
            std::time::Instant::now() < deadline,
            "the import never took the store"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let stats = json(&memdb(&["--json", "stats", store]));
    assert_eq!(stats["items"], 1, "{stats}");
    let got = json(&memdb(&["--json", "get", store, "--external", "n1"]));
    assert_eq!(got["body"], "hotel in Lisbon", "{got}");
    assert!(memdb(&["check", store]).status.success());
    let compact = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["compact", store])
        .env("MEMDB_LOCK_WAIT", "0")
        .output()
        .unwrap();
    assert!(!compact.status.success());
    assert!(
        String::from_utf8_lossy(&compact.stderr).contains("locked"),
        "{}",
        String::from_utf8_lossy(&compact.stderr)
    );
    // A writer that waits: it says so, and goes through once the import ends.
    let waiting = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["compact", store])
        .env("MEMDB_LOCK_WAIT", "120")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let mut input = writer.stdin.take().unwrap();
    input
        .write_all(b"{\"source\":\"note\",\"time\":\"2024-05-02\",\"body\":\"more\"}\n")
        .unwrap();
    drop(input);
    assert!(writer.wait().unwrap().success());
    let waited = waiting.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&waited.stderr);
    assert!(waited.status.success(), "{said}");
    assert!(said.contains("waiting up to 120 s"), "{said}");
}

/// Every refusal is one `memdb: …` line naming what it concerns (the flag, the key, the path),
/// with exit status 2; the typed errors behind them keep that wording.
#[test]
fn errors_name_the_flag_key_or_path_they_concern() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    assert!(memdb(&["init", store]).status.success());
    let missing = dir.path().join("nowhere");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["ls", store, "--from", "2024-13-40"],
            "--from: bad date `2024-13-40`",
        ),
        (
            &["ls", store, "--to", "yesterday"],
            "--to: bad date `yesterday`",
        ),
        (&["ls", store, "--source", "fax"], "--source: "),
        (&["get", store, "abc"], "`abc` is not an item id"),
        (&["get", store, "42"], "no item `42`"),
        (&["get", store, "--external", "x"], "no item `x`"),
        (&["query", store, "ITEMS WHER"], "ITEMS WHER"),
        (
            &["query", store, "-f", missing],
            &format!("read {missing}: "),
        ),
        (&["stats", missing], &format!("{missing}: ")),
        (
            &["pages", store, "--quality", "0"],
            "--quality: 0 is not in 1..=100",
        ),
        (
            &[
                "forget",
                store,
                "--policy",
                "no-such-policy",
                "--as-of",
                "2024-01-01",
            ],
            "no-such-policy",
        ),
        (
            &["forget", store, "--policy", "no-forget", "--as-of", "soon"],
            "--as-of soon: not a YYYY-MM-DD date",
        ),
    ];
    for (args, expected) in cases {
        let out = memdb(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("memdb: "), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `memdb init --item-vectors` records the precision the first embed makes the item space
/// with; a name it does not know is a usage error.
#[test]
fn init_records_the_item_vector_precision() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let out = memdb(&["init", "--item-vectors", "f32", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let opened = memdb::Store::open(&store, memdb::Options::default()).unwrap();
    let mut fields = memdb::ItemFields::new(
        memdb::Source::Note,
        memdb::EventTime::parse("2024-03-04T09:00:00Z").unwrap(),
    );
    fields.body = Some("a note".into());
    let mut batch = opened.batch();
    batch.put_with_vector(
        memdb::ItemDraft {
            fields,
            supersedes: None,
        },
        vec![],
        vec![0.6, 0.8],
    );
    batch.commit().unwrap();
    let snap = opened.snapshot().unwrap();
    let space = snap.vectors(memdb::vectors::ITEM_VECTORS).unwrap().unwrap();
    assert_eq!(space.precision(), memdb::vectors::Precision::F32);

    let out = memdb(&[
        "init",
        "--item-vectors",
        "f12",
        dir.path().join("t").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("f32, f16, i8 or i4"));
}
