//! The graph's id lists read back from the catalog (SPEC.md §5.3: `graph.paths`,
//! `graph.node_paths`, `graph.items`) are untrusted bytes: decoding never panics, and whatever
//! decodes encodes back to the same bytes (the format has one encoding per list).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::id_list;

fuzz_target!(|data: &[u8]| {
    if let Ok(ids) = id_list::decode("fuzz", data) {
        assert_eq!(id_list::to_bytes(&ids), data);
    }
});
