//! The encoder checkpoint's safetensors index (`memdb_formats::safetensors`) is outside bytes,
//! parsed before the file's digest is known: parsing never panics, and an index that parses
//! describes only bytes inside the data, which the encoder's reads rely on.
//!
//! Input: 8 bytes (the data's length, little-endian, as a file's header length is spelled),
//! then the header's JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::safetensors::TensorIndex;

fuzz_target!(|data: &[u8]| {
    let Some((length, header)) = data.split_first_chunk::<8>() else {
        return;
    };
    let data_len = u64::from_le_bytes(*length);
    let _ = TensorIndex::header_len(*length, data_len);
    if let Ok(index) = TensorIndex::parse(header, data_len) {
        for (name, entry) in index.entries() {
            assert!(
                entry.data.start <= entry.data.end && entry.data.end <= data_len,
                "{name}: {:?} outside {data_len} bytes",
                entry.data
            );
        }
    }
});
