//! Real bad inputs of memdb's own record decoder (fuzz finds among them): each must give a
//! typed error, never a panic. A new crash found by `fuzz/run-ci.sh` is copied here.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb_formats::item::{decode_record, read_framed};

#[test]
fn every_bad_item_record_is_a_typed_error() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad/item_record");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(decode_record(&bytes).is_err(), "{} decoded", path.display());
        let _ = read_framed(&bytes);
        n += 1;
    }
    assert!(n > 0, "no inputs in {}", dir.display());
}
