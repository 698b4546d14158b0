//! Arbitrary text into node extraction (engine `graph::extract`), which reads every question and
//! every item's text: never panics, and what it returns keeps the extractor's invariants — at
//! most `MAX_NODES` nodes, each lowercase, trimmed, non-empty, at most `MAX_NODE_CHARS`
//! characters, no duplicates, and the same output for the same input.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use memdb_text::{MAX_NODE_CHARS, MAX_NODES, query_nodes};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let nodes = query_nodes(&text);
    assert!(nodes.len() <= MAX_NODES);
    let mut seen = HashSet::new();
    for node in &nodes {
        assert!(!node.phrase.is_empty());
        assert_eq!(node.phrase.trim(), node.phrase);
        assert_eq!(node.phrase.to_lowercase(), node.phrase);
        assert!(node.phrase.chars().count() <= MAX_NODE_CHARS);
        assert!(
            seen.insert(node.phrase.clone()),
            "duplicate {}",
            node.phrase
        );
    }
    assert_eq!(query_nodes(&text), nodes);
});
