//! Opens (or creates) the store at argv[1] as its writer, commits one item, prints `ready` and
//! then holds the store until killed: the other process of the R11 lock test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store};

fn main() {
    let path = std::env::args().nth(1).expect("usage: hold_store DIR");
    let store = Store::open_or_create(&path, Options::default()).unwrap();
    let mut fields = ItemFields::new(Source::Note, EventTime::utc(1_700_000_000_000));
    fields.external_id = Some(format!("held-{}", std::process::id()));
    fields.body = Some("written by the holder".to_owned());
    let mut batch = store.batch();
    batch.put(ItemDraft {
        fields,
        supersedes: None,
    });
    batch.commit().unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}
