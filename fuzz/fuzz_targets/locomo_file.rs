//! Arbitrary bytes as a LoCoMo conversation file or `locomo10.json` array. Checks, beyond
//! "never panics": whole-file errors carry no location and fail `parse_qa` too; external ids
//! are unique and namespaced by the file stem (a conversation file) or by sample id (an
//! array, whose errors are located by element or by `<sample_id>/session_<N>`); every draft
//! validates; every evidence id names an imported turn.
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
    let array = data
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'[');
    let mut ids = HashSet::new();
    for item in &report.items {
        let fields = &item.draft.fields;
        fields.validate().expect("an imported turn validates");
        assert_eq!(fields.source, Source::Chat);
        let id = fields
            .external_id
            .as_deref()
            .expect("every turn has an external id");
        if array {
            let (sample, _) = id.split_once('/').expect("<sample_id>/<dia_id>");
            assert!(
                item.location.starts_with(&format!("{sample}/session_")),
                "{}",
                item.location
            );
        } else {
            assert!(id.starts_with("7/"), "{id}");
        }
        assert!(ids.insert(id), "external id {id} imported twice");
    }
    for error in &report.errors {
        let at = error.location.as_deref().unwrap_or_default();
        assert!(
            if array {
                at.starts_with('[') || at.contains("/session_")
            } else {
                at.starts_with("session_")
            },
            "{error}"
        );
    }
    if array {
        assert!(qa.is_err(), "parse_qa reads conversation files only");
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
