//! Arbitrary bytes as a photo (formats `import::photo`: JPEG decode + EXIF): never panics,
//! never decodes past the pixel limit, and an accepted photo's item keeps the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::photo::{PhotoLimits, parse};
use memdb_formats::item::EventTime;

fuzz_target!(|data: &[u8]| {
    // A small limit keeps each execution fast and proves the limit holds.
    let limits = PhotoLimits {
        max_pixels: 1 << 20,
    };
    if let Ok(photo) = parse("fuzz.jpg", data, Some(EventTime::utc(0)), limits) {
        assert!(u64::from(photo.width) * u64::from(photo.height) <= limits.max_pixels);
        assert!((1..=8).contains(&photo.orientation));
        assert!(photo.draft.fields.validate().is_ok());
    }
});
