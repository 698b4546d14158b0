//! Arbitrary text as a reply of one of the gate's model stages (`memdb::gate`): the judge's
//! `parse_verdict` (`{"memorable": bool, "reason": string}`) and role-play's `parse_words`
//! (`{"words": [string, …]}`). Neither panics, and what each accepts keeps its invariants: a
//! verdict's reason is trimmed; at most 60 words, each normalised, non-empty, of at most four
//! words, without duplicates.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb::gate::{normalise, parse_verdict};
use memdb_lab::gate::parse_words;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(verdict) = parse_verdict(&text) {
        assert_eq!(verdict.reason.trim(), verdict.reason);
        assert_eq!(parse_verdict(&text).ok(), Some(verdict));
    }
    if let Ok(words) = parse_words(&text) {
        assert!(words.len() <= 60);
        for (i, word) in words.iter().enumerate() {
            assert!(!word.is_empty());
            assert_eq!(&normalise(word), word);
            assert!(word.split(' ').count() <= 4);
            assert!(!words[..i].contains(word));
        }
    }
});
