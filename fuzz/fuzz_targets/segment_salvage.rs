//! Arbitrary bytes as a damaged segment file into `memdb::maintenance::salvage_segment`, the reader `repair`
//! rebuilds a store with when its catalog is lost (engine/store/src/rebuild.rs). Beyond "never
//! panics": every record it returns is one the record decoder accepted (it encodes back to a
//! record that decodes to itself), every blob it names lies inside the file, and what it finds
//! in order stays in file order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::item::{decode_record, encode_record};

fuzz_target!(|data: &[u8]| {
    // The segment id the entries must name: the header page's own (bytes 16..24), so real
    // segment files are seeds and matching ids are reachable.
    let segment = data
        .get(16..24)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let found = memdb::maintenance::salvage_segment(segment, data);
    let mut last = 0;
    for (offset, record) in &found.records {
        assert!(*offset >= last && (*offset as usize) < data.len());
        last = *offset;
        let bytes = encode_record(record).expect("a salvaged record encodes");
        assert_eq!(&decode_record(&bytes).expect("and decodes"), record);
    }
    for (offset, len, _) in &found.blobs {
        assert!(
            offset
                .checked_add(*len)
                .is_some_and(|end| end as usize <= data.len())
        );
    }
});
