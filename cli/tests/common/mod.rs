//! What every CLI test file needs: the `memdb` binary run with arguments (and standard input),
//! its output read as JSON, a fresh store, and whether the encoder model is installed.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Runs `memdb ARGS`.
pub(crate) fn memdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs memdb with `input` on its standard input.
pub(crate) fn memdb_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON document on stdout of a run that exited with `code`.
pub(crate) fn json_with(out: &Output, code: i32) -> Value {
    assert_eq!(out.status.code(), Some(code), "stderr: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The JSON document on stdout of a successful run.
pub(crate) fn json(out: &Output) -> Value {
    json_with(out, 0)
}

/// A new, empty store `s` in `dir`.
pub(crate) fn init(dir: &Path) -> String {
    let store = dir.join("s");
    assert!(memdb(&["init", store.to_str().unwrap()]).status.success());
    store.to_str().unwrap().to_owned()
}

/// A new store in `dir` holding one note (`time`, `body`), imported from `dir/notes.jsonl`.
pub(crate) fn store_with_note(dir: &Path, time: &str, body: &str) -> String {
    let store = init(dir);
    let notes = dir.join("notes.jsonl");
    std::fs::write(
        &notes,
        format!("{{\"source\":\"note\",\"time\":\"{time}\",\"body\":\"{body}\"}}\n"),
    )
    .unwrap();
    json(&memdb(&[
        "--json",
        "import",
        "jsonl",
        &store,
        notes.to_str().unwrap(),
    ]));
    store
}

/// Whether the encoder model is installed (CI must have it; elsewhere a loud skip).
pub(crate) fn model_installed() -> bool {
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

/// A loopback OpenAI-compatible chat server for tests: answers every request with the
/// completion whose content `answer(request)` gives, and sends each request's JSON body on the
/// returned channel (before answering it).
pub(crate) fn stub_chat_server(
    answer: impl Fn(&Value) -> String + Send + 'static,
) -> (String, std::sync::mpsc::Receiver<Value>) {
    use std::io::{BufRead, BufReader, Read};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let content = answer(&request);
            let _ = sender.send(request);
            let reply =
                serde_json::json!({"choices": [{"message": {"content": content}}]}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, receiver)
}
