//! Arbitrary bytes as one message, as an mbox, and as a mail file told by its content
//! (formats `import::mail`): never panics, every item keeps the item invariants, the body stays
//! within `MAX_BODY_CHARS`, and one message yields exactly one outcome.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::mail::{MAX_BODY_CHARS, parse, parse_eml, parse_mbox, split_mbox};

fuzz_target!(|data: &[u8]| {
    let one = parse_eml(Path::new("fuzz.eml"), "1683554160.M1.host", data);
    assert_eq!(one.items.len() + one.errors.len(), 1);
    let mbox = parse_mbox(Path::new("fuzz.mbox"), "fuzz.mbox", data);
    let messages = split_mbox(data).len();
    assert_eq!(mbox.items.len() + mbox.errors.len(), messages.max(1));
    for report in [one, mbox, parse(Path::new("Inbox"), "Inbox", data)] {
        for item in &report.items {
            let fields = &item.draft.fields;
            assert!(fields.validate().is_ok());
            assert!(
                fields
                    .body
                    .as_ref()
                    .is_none_or(|b| b.chars().count() <= MAX_BODY_CHARS)
            );
        }
    }
});
