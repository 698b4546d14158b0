//! The op log's packed runs read back from the catalog (SPEC.md §5 `op_batches`) are untrusted
//! bytes: decoding never panics, and whatever decodes encodes back to the same bytes (the
//! format has one encoding per list of ops).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::op_batch;

fuzz_target!(|data: &[u8]| {
    if let Ok(ops) = op_batch::decode(data) {
        let mut again = Vec::new();
        op_batch::encode(ops.iter().copied(), &mut again);
        assert_eq!(again, data);
    }
});
