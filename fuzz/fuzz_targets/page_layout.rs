//! Page layouts read back from the catalog (SPEC.md §5.4) are untrusted bytes: decoding never
//! panics, and whatever decodes encodes back to the same bytes' meaning.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::page_layout::PageLayout;

fuzz_target!(|data: &[u8]| {
    if let Ok(layout) = PageLayout::decode(data) {
        let again = PageLayout::decode(&layout.encode()).expect("an encoded layout decodes");
        assert_eq!(again, layout);
    }
});
