//! The captioner's reply grammar (SPEC.md §12) against the corpus of real bad answers in
//! tests/bad/caption_reply — what small vision models send when asked for JSON: prose, a
//! truncated object, chatter after it, Python quotes, the wrong types, runaway lists. Every
//! one is a typed error; none panics.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb_formats::caption::{CaptionReplyError, parse_caption_reply};

#[test]
fn every_bad_reply_is_refused_with_a_typed_error() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad/caption_reply");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let err: CaptionReplyError =
            parse_caption_reply(&text).expect_err(&format!("{} must be refused", path.display()));
        assert!(!err.to_string().is_empty());
        seen += 1;
    }
    assert!(seen >= 10, "{seen} bad replies");
}

#[test]
fn the_spec_example_reply_parses() {
    // SPEC.md §12's example, verbatim.
    let reply = r#"{"caption": "The Eiffel Tower seen from the Trocadéro on a clear afternoon.", "short_caption": "Eiffel Tower", "ocr_text": "", "tags": ["tower", "landmark", "sky"], "entities": ["Eiffel Tower"]}"#;
    let c = parse_caption_reply(reply).unwrap();
    assert_eq!(c.short_caption, "Eiffel Tower");
    assert_eq!(c.tags, ["tower", "landmark", "sky"]);
    assert_eq!(c.ocr_text, None);
}
