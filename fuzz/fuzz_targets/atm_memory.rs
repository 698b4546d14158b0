//! Arbitrary bytes as each of ATM-Bench's memory files (`emails.json`, the image and video
//! `batch_results.json`). Checks, beyond "never panics": each record has exactly one outcome
//! and the outcomes are in record order; every draft validates, has the right source and an
//! external id without whitespace; ids are unique within a file; a cut-short file's error comes
//! last.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::atm::{self, MemoryFile};
use memdb_formats::item::Source;

fuzz_target!(|data: &[u8]| {
    for kind in MemoryFile::ALL {
        let report = atm::parse(kind, Path::new(kind.file_name()), data);
        let mut ids = HashSet::new();
        let mut numbers = Vec::new();
        for item in &report.items {
            let fields = &item.draft.fields;
            fields.validate().expect("an imported record validates");
            let want = match kind {
                MemoryFile::Emails => Source::Email,
                MemoryFile::Images => Source::Image,
                MemoryFile::Videos => Source::Video,
            };
            assert_eq!(fields.source, want);
            let id = fields.external_id.as_deref().expect("every record has an id");
            assert!(!id.is_empty() && !id.chars().any(char::is_whitespace), "{id:?}");
            assert!(ids.insert(id.to_owned()), "id {id} imported twice");
            numbers.push(record_number(&item.location));
        }
        let mut cut = false;
        for error in &report.errors {
            let at = error.location.as_deref().expect("every error is located");
            assert!(!cut, "an error after the cut: {error}");
            if at.starts_with("record ") {
                numbers.push(record_number(at));
            } else {
                assert!(at == "the file" || at.starts_with("after record "), "{error}");
                cut = true;
            }
        }
        numbers.sort_unstable();
        let expected: Vec<usize> = (1..=numbers.len()).collect();
        assert_eq!(numbers, expected, "one outcome per record");
    }
});

/// `N` of `record N` or `record N (id)`.
fn record_number(location: &str) -> usize {
    location
        .strip_prefix("record ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a record location: {location}"))
}
