//! An encrypted store through the `memdb` binary as a script uses it (SPEC.md §3.7): `init
//! --encrypt`, the passphrase from `MEMDB_PASSPHRASE`, `--passphrase-fd` or `--key-file` (never
//! argv), `stats` saying the store is encrypted, a wrong or missing passphrase refused as a
//! one-line error that changes nothing, and `rekey`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Argon2id at 1 MiB and one pass: these tests are about the interface, not the KDF's cost.
const CHEAP_KDF: [&str; 4] = ["--kdf-memory-mib", "1", "--kdf-iterations", "1"];

/// Runs memdb with `env` set (and `MEMDB_PASSPHRASE` / `MEMDB_NEW_PASSPHRASE` otherwise unset),
/// `stdin` piped in.
fn memdb(args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memdb"));
    command
        .args(args)
        .env_remove("MEMDB_PASSPHRASE")
        .env_remove("MEMDB_NEW_PASSPHRASE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ok_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one-line error of a refused command.
fn refused(out: &Output) -> String {
    assert!(!out.status.success(), "expected a refusal");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.starts_with("memdb: "), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    stderr
}

/// Every file under `dir` but the LOCK (which holds the pid of the last writer, not data),
/// concatenated.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == "LOCK") {
            continue;
        }
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.extend(std::fs::read(&path).unwrap());
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

const CANARY: &str = "the canary's plaintext 7f3a9c";

fn notes_file(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("notes.jsonl");
    std::fs::write(
        &file,
        format!(
            "{{\"external_id\":\"ext-secret-1\",\"source\":\"note\",\"time\":\"2024-01-02T10:00:00Z\",\"body\":\"{CANARY}\"}}\n\
             {{\"external_id\":\"ext-secret-2\",\"source\":\"note\",\"time\":\"2024-01-03T10:00:00Z\",\"body\":\"a second note\"}}\n"
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_passphrase_store_from_the_environment_round_trips_and_leaves_no_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let file = notes_file(dir.path());
    let env = [("MEMDB_PASSPHRASE", "correct horse")];

    let mut init = vec!["--json", "init", "--encrypt", store];
    init.extend(CHEAP_KDF);
    let created = ok_json(&memdb(&init, &env, ""));
    assert_eq!(created["encrypted"], true);
    assert!(Path::new(store).join("KEY").exists());

    let import = ok_json(&memdb(
        &["--json", "import", "jsonl", store, file.to_str().unwrap()],
        &env,
        "",
    ));
    assert_eq!(import["added"], 2);
    let stats = ok_json(&memdb(&["--json", "stats", store], &env, ""));
    assert_eq!(stats["encrypted"], true);
    assert_eq!(stats["items"], 2);
    let item = ok_json(&memdb(
        &["--json", "get", "--external", store, "ext-secret-1"],
        &env,
        "",
    ));
    assert!(item.to_string().contains(CANARY), "{item}");
    let check = memdb(&["check", store], &env, "");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    let on_disk = all_bytes(Path::new(store));
    for needle in [CANARY.as_bytes(), b"ext-secret-1", b"a second note"] {
        assert!(
            !contains(&on_disk, needle),
            "{:?} is on disk in plaintext",
            String::from_utf8_lossy(needle)
        );
    }

    // The same passphrase through a descriptor (here standard input) instead of the environment.
    let stats = ok_json(&memdb(
        &["--json", "--passphrase-fd", "0", "stats", store],
        &[],
        "correct horse\n",
    ));
    assert_eq!(stats["items"], 2);
}

#[test]
fn a_wrong_or_missing_passphrase_is_a_one_line_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let file = notes_file(dir.path());
    let env = [("MEMDB_PASSPHRASE", "right")];
    let mut init = vec!["init", "--encrypt", store];
    init.extend(CHEAP_KDF);
    ok_status(&memdb(&init, &env, ""));
    let before = all_bytes(Path::new(store));

    let wrong = refused(&memdb(
        &["import", "jsonl", store, file.to_str().unwrap()],
        &[("MEMDB_PASSPHRASE", "wrong")],
        "",
    ));
    assert!(wrong.contains("passphrase"), "{wrong}");
    // Without a passphrase and without a terminal to ask on, the error says where to put one.
    let missing = refused(&memdb(&["stats", store], &[], ""));
    assert!(missing.contains("MEMDB_PASSPHRASE"), "{missing}");
    // A plain store's commands never ask.
    let plain = dir.path().join("plain");
    let plain = plain.to_str().unwrap();
    ok_status(&memdb(&["init", plain], &[], ""));
    assert_eq!(
        ok_json(&memdb(&["--json", "stats", plain], &[], ""))["encrypted"],
        false
    );

    assert_eq!(all_bytes(Path::new(store)), before, "a refused open wrote");
}

#[test]
fn rekey_changes_the_passphrase_and_a_key_file_store_opens_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let file = notes_file(dir.path());
    let old = [("MEMDB_PASSPHRASE", "old one")];
    let mut init = vec!["init", "--encrypt", store];
    init.extend(CHEAP_KDF);
    ok_status(&memdb(&init, &old, ""));
    ok_status(&memdb(
        &["import", "jsonl", store, file.to_str().unwrap()],
        &old,
        "",
    ));
    let mut rekey = vec!["rekey", store];
    rekey.extend(CHEAP_KDF);
    ok_status(&memdb(
        &rekey,
        &[
            ("MEMDB_PASSPHRASE", "old one"),
            ("MEMDB_NEW_PASSPHRASE", "new one"),
        ],
        "",
    ));
    refused(&memdb(&["stats", store], &old, ""));
    let stats = ok_json(&memdb(
        &["--json", "stats", store],
        &[("MEMDB_PASSPHRASE", "new one")],
        "",
    ));
    assert_eq!(stats["items"], 2);

    // From the passphrase to a key file: the file opens it, the passphrase no longer does.
    let key = dir.path().join("store.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    ok_status(&memdb(
        &["rekey", store, "--new-key-file", key.to_str().unwrap()],
        &[("MEMDB_PASSPHRASE", "new one")],
        "",
    ));
    let stats = ok_json(&memdb(
        &[
            "--json",
            "--key-file",
            key.to_str().unwrap(),
            "stats",
            store,
        ],
        &[],
        "",
    ));
    assert_eq!(stats["items"], 2);
    refused(&memdb(
        &["stats", store],
        &[("MEMDB_PASSPHRASE", "new one")],
        "",
    ));
    // A key file of the wrong size is refused before anything is tried.
    let short = dir.path().join("short.key");
    std::fs::write(&short, [7u8; 31]).unwrap();
    let error = refused(&memdb(
        &["--key-file", short.to_str().unwrap(), "stats", store],
        &[],
        "",
    ));
    assert!(error.contains("32 bytes"), "{error}");

    // Rekeying a plain store is refused.
    let plain = dir.path().join("plain");
    let plain = plain.to_str().unwrap();
    ok_status(&memdb(&["init", plain], &[], ""));
    refused(&memdb(
        &["rekey", plain],
        &[("MEMDB_NEW_PASSPHRASE", "x")],
        "",
    ));
}

fn ok_status(out: &Output) {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
