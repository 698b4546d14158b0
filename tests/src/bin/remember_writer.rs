//! The writer child of the `remember` kill -9 test: remembers one message per call, forever,
//! with the deterministic extractor and decider over a hashing embedder.
//!
//! Usage: `remember_writer STORE LOG FIRST_CALL`. Before each call it appends `I <n> <facts>`
//! to LOG and after it returns `C <n>`, each fsync'd.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::ops::{
    FactExtractor, Message, RememberOptions, RuleDecider, RuleThresholds, SentenceExtractor,
};
use memdb::{Options, Store};
use memdb_it::{HashEmbedder, remember_message};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (store_dir, log_path) = (&args[1], &args[2]);
    let first: u64 = args[3].parse().unwrap();
    let store = Store::open_or_create(store_dir, Options::default()).unwrap();
    let decider = RuleDecider::new(HashEmbedder, RuleThresholds::default());
    let options = RememberOptions {
        extractor: &SentenceExtractor,
        decider: &decider,
        embedder: &HashEmbedder,
        candidates_per_fact: 5,
        time: None,
        actor: Some("crash-test".into()),
        role: Some("user".into()),
    };
    let mut line = memdb_it::ack_log(log_path);
    for n in first.. {
        let message = Message {
            speaker: Some("me".into()),
            text: remember_message(n),
        };
        let facts = SentenceExtractor
            .extract(std::slice::from_ref(&message))
            .unwrap()
            .len();
        line(format!("I {n} {facts}\n"));
        let done = store.remember(&[message], &options).unwrap();
        assert_eq!(done.len(), facts);
        line(format!("C {n}\n"));
    }
}
