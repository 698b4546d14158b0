//! Arbitrary bytes as a LoCoMo conversation file. Checks, beyond "never panics": whole-file
//! errors carry no location and fail `parse_qa` too; external ids are unique and namespaced by
//! the file stem; every draft validates; every evidence id names an imported turn.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::locomo;
use memdb_formats::item::Source;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("corpus/7.json");
    let parsed = locomo::parse(path, data);
    let qa = locomo::parse_qa(path, data);
    let report = match parsed {
        Err(e) => {
            assert!(
                e.location.is_none(),
                "whole-file error with a location: {e}"
            );
            assert!(qa.is_err(), "parse failed but parse_qa did not");
            return;
        }
        Ok(report) => report,
    };
    let mut ids = HashSet::new();
    for item in &report.items {
        let fields = &item.draft.fields;
        fields.validate().expect("an imported turn validates");
        assert_eq!(fields.source, Source::Chat);
        let id = fields
            .external_id
            .as_deref()
            .expect("every turn has an external id");
        assert!(id.starts_with("7/"), "{id}");
        assert!(ids.insert(id), "external id {id} imported twice");
    }
    for error in &report.errors {
        assert!(
            error
                .location
                .as_deref()
                .is_some_and(|l| l.starts_with("session_")),
            "{error}"
        );
    }
    if let Ok(entries) = qa {
        for entry in &entries {
            assert!((1..=5).contains(&entry.category));
            for id in &entry.evidence {
                assert!(
                    ids.contains(id.as_str()),
                    "evidence {id} names no imported turn"
                );
            }
        }
    }
});
