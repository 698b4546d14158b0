//! The MCP tool surface of `memdb mcp` is a public API: its `tools/list` answer (names,
//! descriptions, JSON schemas) is guarded by a golden file, and SPEC.md §11 must name every
//! tool and every argument. `UPDATE_GOLDEN=1 cargo test -p memdb-cli --test mcp_tools` rewrites
//! the golden file after a deliberate change (then update SPEC.md §11 and the changelog).
//!
//! The behaviour of the tools is tested with the official Python client
//! (python/tests/test_mcp.py); this test speaks raw JSON-RPC lines, as any client would.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const GOLDEN: &str = "tests/data/mcp-tools.json";

fn tools_list(store: &Path) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .arg("mcp")
        .arg(store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "golden", "version": "0"}}}),
    );
    let init: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "memdb", "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    // Closing stdin ends the session.
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "memdb mcp exited with {status} after stdin closed"
    );
    let mut tools = listed["result"]["tools"].as_array().unwrap().clone();
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Value::Array(tools)
}

#[test]
fn the_tool_list_matches_its_golden_file_and_spec() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.memdb");
    let init = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .arg("init")
        .arg(&store)
        .output()
        .unwrap();
    assert!(init.status.success());
    let tools = tools_list(&store);
    let text = format!("{}\n", serde_json::to_string_pretty(&tools).unwrap());
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    assert_eq!(
        text, want,
        "the MCP tool surface changed: if on purpose, rerun with UPDATE_GOLDEN=1 and update SPEC.md §11"
    );

    let spec =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../SPEC.md")).unwrap();
    let section = &spec[spec.find("## 11. Agent interfaces").expect("SPEC.md §11")..];
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert!(
            section.contains(&format!("`{name}`")),
            "SPEC.md §11 lacks tool {name}"
        );
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}`")))
            .unwrap_or_else(|| panic!("SPEC.md §11 has no table row for {name}"));
        for argument in tool["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
        {
            assert!(
                row.contains(&format!("`{argument}")),
                "SPEC.md §11's row for {name} lacks argument {argument}"
            );
        }
    }
}
