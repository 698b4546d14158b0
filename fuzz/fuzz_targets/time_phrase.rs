//! Arbitrary text and reference day into the time-phrase parser (`memdb_text::time_phrases`),
//! which reads every recall question and `WHERE time IN '…'`: never panics, and what it returns
//! keeps its invariants — phrases in text order, not overlapping, on character boundaries inside
//! the text, each window's first day not after its last, the same output for the same input.
#![no_main]

use jiff::ToSpan;
use jiff::civil::Date;
use libfuzzer_sys::fuzz_target;
use memdb_text::time_phrases;

fuzz_target!(|data: &[u8]| {
    let (day, text) = match data.split_first_chunk::<2>() {
        Some((head, rest)) => (i16::from_le_bytes(*head), rest),
        None => (0, data),
    };
    let text = String::from_utf8_lossy(text);
    // Any day of 1910–2090: the reference a question may be asked on.
    let Ok(today) = Date::constant(2000, 1, 1).checked_add(i64::from(day).days()) else {
        return;
    };
    let phrases = time_phrases(&text, today);
    let mut end = 0;
    for p in &phrases {
        assert!(p.start >= end && p.start < p.end && p.end <= text.len());
        assert!(text.is_char_boundary(p.start) && text.is_char_boundary(p.end));
        if let (Some(a), Some(b)) = (p.first, p.last) {
            assert!(a <= b, "{p:?}");
        }
        end = p.end;
    }
    assert_eq!(time_phrases(&text, today), phrases);
});
