//! `memdb caption` against a stub vision server on loopback: every photo of an import gets
//! ATM-Bench's fields with their provenance, `memdb get` shows them, a second run sends
//! nothing, and a server that is not on loopback is refused before any photo is read.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::{json, memdb};
use memdb_it::shared_data;

/// A server answering every chat completion with the same caption; keeps the image URLs it
/// was sent.
fn stub_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let content = serde_json::json!({
        "caption": "A test chart photographed in landscape.",
        "short_caption": "orientation test chart",
        "ocr_text": "",
        "tags": ["chart", "test"],
        "entities": [],
    })
    .to_string();
    let (url, requests) = common::stub_chat_server(move |_| content.clone());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let images = Arc::clone(&seen);
    // The image URLs of the requests, as they arrive.
    std::thread::spawn(move || {
        for request in requests {
            let image = request["messages"][0]["content"][1]["image_url"]["url"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            images.lock().unwrap().push(image);
        }
    });
    (url, seen)
}

#[test]
fn caption_fills_every_photo_once_and_get_shows_it() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let src = photos.join("exif-orientation-examples");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let files: Vec<String> = ["Landscape_0.jpg", "Landscape_6.jpg", "Portrait_3.jpg"]
        .iter()
        .map(|f| src.join(f).to_str().unwrap().to_owned())
        .collect();
    let mut args = vec!["import", "photos", store, "--create"];
    args.extend(files.iter().map(String::as_str));
    assert!(memdb(&args).status.success());

    let (url, seen) = stub_server();
    let report = json(&memdb(&[
        "--json",
        "caption",
        store,
        "--endpoint",
        &url,
        "--model",
        "stub-vl",
    ]));
    assert_eq!(report["captioned"], 3, "{report}");
    assert_eq!(report["failed"].as_array().unwrap().len(), 0);
    {
        let sent = seen.lock().unwrap();
        assert_eq!(sent.len(), 3);
        assert!(
            sent.iter()
                .all(|u| u.starts_with("data:image/jpeg;base64,"))
        );
    }
    let item = json(&memdb(&["--json", "get", store, "1"]));
    let text = item.to_string();
    assert!(text.contains("orientation test chart"), "{text}");
    assert!(text.contains("stub-vl"), "{text}");

    // Again: nothing is sent.
    let again = json(&memdb(&[
        "--json",
        "caption",
        store,
        "--endpoint",
        &url,
        "--model",
        "stub-vl",
    ]));
    assert_eq!(
        (again["captioned"].as_u64(), again["already"].as_u64()),
        (Some(0), Some(3))
    );
    assert_eq!(seen.lock().unwrap().len(), 3);

    // A server elsewhere is refused, naming the flag.
    let out = memdb(&[
        "caption",
        store,
        "--endpoint",
        "http://192.168.0.10:8080",
        "--model",
        "m",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--endpoint") && err.contains("loopback"),
        "{err}"
    );
}

#[test]
fn a_dead_server_fails_the_run_and_changes_nothing() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let file = photos.join("exif-orientation-examples/Landscape_1.jpg");
    assert!(
        memdb(&[
            "import",
            "photos",
            store,
            "--create",
            file.to_str().unwrap()
        ])
        .status
        .success()
    );
    // A port nothing listens on: bind one, note it, close it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = memdb(&[
        "caption",
        store,
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 failed"), "{text}");
    let item = json(&memdb(&["--json", "get", store, "1"]));
    for field in ["caption", "short_caption", "caption_provenance"] {
        assert!(item[field].is_null(), "{item}");
    }
    assert_eq!(item["earlier_versions"].as_array().map(Vec::len), Some(0));
}
