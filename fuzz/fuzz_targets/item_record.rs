//! Arbitrary bytes into the item record decoder, framed and unframed. A record that decodes
//! must satisfy the field invariants, re-encode, and decode again to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::item::{decode_record, encode_record, put_framed, read_framed};

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = read_framed(data) {
        check(record);
    }
    check(data);
});

fn check(bytes: &[u8]) {
    let Ok(record) = decode_record(bytes) else {
        return;
    };
    record
        .fields
        .validate()
        .expect("a decoded record satisfies validate()");
    let encoded = encode_record(&record).expect("a decoded record re-encodes");
    let again = decode_record(&encoded).expect("a re-encoded record decodes");
    assert_eq!(again, record);
    let mut framed = Vec::new();
    put_framed(&mut framed, &encoded).expect("a record that encoded fits a frame");
    assert_eq!(
        read_framed(&framed).expect("a fresh frame reads back"),
        &encoded[..]
    );
}
