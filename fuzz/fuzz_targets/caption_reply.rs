//! Arbitrary text as a vision model's reply (memdb-formats `caption::parse_caption_reply`):
//! never panics, and what it accepts keeps the grammar's invariants — non-empty captions within
//! their bounds, at most `MAX_LIST_ITEMS` trimmed, non-empty, case-insensitively unique tags
//! and entities, no control characters outside the OCR text's newlines and tabs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::caption::{
    MAX_CAPTION_CHARS, MAX_LIST_ITEM_CHARS, MAX_LIST_ITEMS, MAX_SHORT_CAPTION_CHARS,
    parse_caption_reply,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(c) = parse_caption_reply(&text) else {
        return;
    };
    assert!(!c.caption.is_empty() && c.caption.chars().count() <= MAX_CAPTION_CHARS);
    assert!(!c.short_caption.is_empty());
    assert!(c.short_caption.chars().count() <= MAX_SHORT_CAPTION_CHARS);
    assert!(!c.caption.chars().any(char::is_control));
    if let Some(ocr) = &c.ocr_text {
        assert!(!ocr.is_empty());
        assert!(
            !ocr.chars()
                .any(|ch| ch.is_control() && ch != '\n' && ch != '\t')
        );
    }
    for list in [&c.tags, &c.entities] {
        assert!(list.len() <= MAX_LIST_ITEMS);
        for (i, word) in list.iter().enumerate() {
            assert!(!word.is_empty() && word.trim() == word);
            assert!(word.chars().count() <= MAX_LIST_ITEM_CHARS);
            assert!(!list[..i].iter().any(|w| w.eq_ignore_ascii_case(word)));
        }
    }
    assert_eq!(parse_caption_reply(&text), Ok(c));
});
