//! The writer child of the `remember` kill -9 test: remembers one message per call, forever,
//! with the deterministic extractor and decider over a hashing embedder, each call under the
//! idempotency key `call-<n>`.
//!
//! Usage: `remember_writer STORE LOG FIRST_CALL`. Before each call it appends `I <n>` to LOG
//! and after it returns `C <n> <ops>` (the operations it logged; 0 when the key named a call
//! already applied), each fsync'd.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::ops::{Message, RememberOptions, RuleDecider, RuleThresholds, SentenceExtractor};
use memdb::{Options, Store};
use memdb_it::{HashEmbedder, remember_message};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (store_dir, log_path) = (&args[1], &args[2]);
    let first: u64 = args[3].parse().unwrap();
    let store = Store::open_or_create(store_dir, Options::default()).unwrap();
    let decider = RuleDecider::new(HashEmbedder, RuleThresholds::default());
    let mut line = memdb_it::ack_log(log_path);
    for n in first.. {
        let mut options = RememberOptions::new(&SentenceExtractor, &decider, &HashEmbedder);
        options.actor = Some("crash-test".into());
        options.idempotency_key = Some(format!("call-{n}"));
        let message = Message {
            speaker: Some("me".into()),
            text: remember_message(n),
        };
        line(format!("I {n}\n"));
        let report = store.remember(&[message], &options).unwrap();
        let ops = if report.replayed {
            0
        } else {
            report
                .results
                .iter()
                .filter(|r| r.applied.is_some())
                .count()
        };
        line(format!("C {n} {ops}\n"));
    }
}
