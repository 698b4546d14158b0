//! Arbitrary bytes as an ATM-Bench QA file and as a predictions file. Checks, beyond "never
//! panics": whole-file QA errors carry no location; question ids are unique and evidence ids
//! are unique and non-empty; prediction ids are unique; every bad line is located.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::atm;

fuzz_target!(|data: &[u8]| {
    match atm::parse_qa(Path::new("qa.json"), data) {
        Err(e) => assert!(e.location.is_none(), "whole-file error with a location: {e}"),
        Ok(qa) => {
            let mut ids = HashSet::new();
            for q in &qa.questions {
                assert!(!q.id.is_empty());
                assert!(ids.insert(q.id.as_str()), "question {} twice", q.id);
                let evidence: HashSet<&str> = q.evidence_ids.iter().map(String::as_str).collect();
                assert_eq!(evidence.len(), q.evidence_ids.len(), "evidence ids repeat");
                assert!(q.evidence_ids.iter().all(|id| !id.is_empty()));
            }
            for e in &qa.errors {
                assert!(e.location.as_deref().is_some_and(|l| l.starts_with("question ")), "{e}");
            }
        }
    }
    let (predictions, errors) = atm::parse_predictions(Path::new("p.jsonl"), data);
    let mut ids = HashSet::new();
    for p in &predictions {
        assert!(ids.insert(p.id.as_str()), "prediction {} twice", p.id);
    }
    for e in &errors {
        assert!(e.location.as_deref().is_some_and(|l| l.starts_with("line ")), "{e}");
    }
});
