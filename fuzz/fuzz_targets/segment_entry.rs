//! Arbitrary bytes into every segment decoder: header page, entry header and payload, footer,
//! trailer. Beyond "never panics", each decoder must be canonical: whatever it accepts, the
//! encoder writes back byte for byte (reserved bytes are checked to be zero, and every
//! structure is covered by its CRC32C, so two different byte strings cannot decode alike).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::segment::{
    ENTRY_HEADER_BYTES, EntryHeader, EntryKind, PAGE_SIZE, SEGMENT_HEADER_BYTES, SegmentHeader,
    TRAILER_BYTES, Trailer, decode_footer, encode_footer,
};

/// A file offset for the decoders to report errors at: page 3, as a real entry could be.
const OFFSET: u64 = 3 * PAGE_SIZE as u64;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = SegmentHeader::decode(data) {
        assert_eq!(
            header.encode()[..SEGMENT_HEADER_BYTES],
            data[..SEGMENT_HEADER_BYTES]
        );
    }

    if let Ok(entry) = EntryHeader::decode(data, OFFSET) {
        assert_eq!(entry.encode()[..], data[..ENTRY_HEADER_BYTES]);
        assert!(entry.pages() >= 1);
        // The payload as a reader would slice it: what the header claims, cut at the end of
        // the buffer (a truncated file), never more.
        let rest = &data[ENTRY_HEADER_BYTES..];
        let len = usize::try_from(entry.payload_len)
            .unwrap_or(usize::MAX)
            .min(rest.len());
        let payload = &rest[..len];
        let verified = entry.verify_payload(payload, OFFSET + ENTRY_HEADER_BYTES as u64);
        if verified.is_ok() && entry.kind == EntryKind::Footer {
            footer(payload);
        }
    }

    footer(data);

    if let Ok(trailer) = Trailer::decode(data, OFFSET) {
        assert_eq!(trailer.encode()[..TRAILER_BYTES], data[..TRAILER_BYTES]);
    }
});

fn footer(payload: &[u8]) {
    if let Ok(records) = decode_footer(payload) {
        let again = encode_footer(&records).expect("decoded footer re-encodes");
        assert_eq!(again, payload);
    }
}
