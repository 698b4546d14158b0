//! An encrypted store's KEY file (SPEC.md §3.7) is untrusted bytes: decoding never panics, any
//! Argon2id cost it accepts is within the bounds an open can afford, and what decodes encodes
//! back to exactly the same bytes (the format has one spelling of each header).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::key_header::{KdfBounds, KeyHeader};

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = KeyHeader::decode(data) {
        assert!(KdfBounds::violation(header.kdf).is_none());
        assert_eq!(header.encode().as_slice(), data);
    }
});
