//! Runs the engine's ingest of one LoCoMo file and some photos into the store at argv[1]
//! (created if missing), with the hash embedder, printing `stage NAME` when each stage starts
//! and `done` at the end: the process the ingest kill -9 test kills between stages.
//!
//! Usage: ingest_stages STORE LOCOMO_FILE PHOTOS_DIR PHOTO_LIMIT
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;

use memdb::{Options, Store, ingest::IngestStage};
use memdb_it::{HashEmbedder, ingest_corpus, small_ingest_options};

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, store, locomo, photos, limit] = args.as_slice() else {
        panic!("usage: ingest_stages STORE LOCOMO_FILE PHOTOS_DIR PHOTO_LIMIT");
    };
    let store = Store::open_or_create(store, Options::default()).unwrap();
    let items = ingest_corpus(
        Path::new(locomo),
        Some(Path::new(photos)),
        limit.parse().unwrap(),
    );
    let mut ingest = store.ingest(small_ingest_options()).unwrap();
    say("stage commit");
    for item in items {
        if ingest.add(item).unwrap() {
            say("committed");
        }
    }
    let mut last = None;
    ingest
        .finish(Some(&HashEmbedder), &mut |stage, _, _| {
            if last != Some(stage) {
                last = Some(stage);
                say(match stage {
                    IngestStage::Commit => "stage commit",
                    IngestStage::Places => "stage places",
                    IngestStage::Captions => "stage captions",
                    IngestStage::Embed => "stage embed",
                    IngestStage::Graph => "stage graph",
                    IngestStage::Pages => "stage pages",
                });
            }
        })
        .unwrap();
    say("done");
}
