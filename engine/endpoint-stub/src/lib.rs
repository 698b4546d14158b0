//! A loopback HTTP server for tests of crates that talk to a model through `memdb-endpoint`:
//! answers each connection with the next canned reply (status, body, delay before answering)
//! and hands back the request bodies it was sent.
//!
//! Test support only (a dev-dependency): a panic here fails the test that uses it, which is
//! what a test wants, so it unwraps. A crate of its own, not a feature of `memdb-endpoint`: a
//! feature turned on by dev-dependencies would give the test build and the Python wheel two
//! builds of the endpoint and of everything above it.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// One canned answer.
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: String,
    /// How long to wait before answering.
    pub delay: Duration,
}

impl Reply {
    /// A 200 answer with `body`, at once.
    pub fn ok(body: impl Into<String>) -> Reply {
        Reply {
            status: 200,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }
}

/// A chat-completions body whose content is `content`.
pub fn completion(content: &str) -> String {
    serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
        .to_string()
}

/// Serves `replies` in order on 127.0.0.1; returns the base URL and a handle yielding the
/// requests' bodies once every reply has been given.
pub fn serve(replies: Vec<Reply>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut answering = Vec::new();
        for reply in replies {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut request = vec![0; length];
            reader.read_exact(&mut request).unwrap();
            seen.push(String::from_utf8(request).unwrap());
            // Answered on a thread of its own, so a slow reply holds up only its client.
            answering.push(std::thread::spawn(move || {
                std::thread::sleep(reply.delay);
                // The client may have given up (a slow reply): a failed write is expected.
                let _ = write!(
                    stream,
                    "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                    reply.status,
                    reply.body.len(),
                    reply.body
                );
            }));
        }
        for answer in answering {
            answer.join().unwrap();
        }
        seen
    });
    (url, handle)
}
