//! Arbitrary bytes as an `.eml` message and as an mbox (formats `import::mail`): never panics,
//! every item keeps the item invariants, and the body stays within `MAX_BODY_CHARS`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::mail::{MAX_BODY_CHARS, parse_eml, parse_mbox};
use memdb_formats::item::EventTime;

fuzz_target!(|data: &[u8]| {
    let fallback = Some(EventTime::utc(0));
    for report in [
        parse_eml(Path::new("fuzz.eml"), "fuzz.eml", data, fallback),
        parse_mbox(Path::new("fuzz.mbox"), "fuzz.mbox", data, None),
    ] {
        for item in &report.items {
            let fields = &item.draft.fields;
            assert!(fields.validate().is_ok());
            assert!(fields.body.as_ref().is_none_or(|b| b.chars().count() <= MAX_BODY_CHARS));
        }
    }
});
