//! Arbitrary bytes as a photo (formats `import::photo`: file sniffing, JPEG header and decode,
//! EXIF, XMP and IPTC dates): never panics, never decodes past the pixel limit, an accepted
//! photo's item keeps the invariants and says whether it is damaged, and `decode_rgb` accepts
//! exactly what `parse` accepts, with a full-size image.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::photo::{DAMAGED_TAG, PhotoLimits, content_id, decode_rgb, parse};

fuzz_target!(|data: &[u8]| {
    // A small limit keeps each execution fast and proves the limit holds.
    let limits = PhotoLimits {
        max_pixels: 1 << 20,
    };
    let parsed = parse("dir/fuzz.jpg", data, limits);
    let decoded = decode_rgb(data, limits);
    match (&parsed, &decoded) {
        (Ok(photo), Ok(image)) => {
            assert!(u64::from(photo.width) * u64::from(photo.height) <= limits.max_pixels);
            assert!((1..=8).contains(&photo.orientation));
            let fields = &photo.draft.fields;
            assert!(fields.validate().is_ok());
            assert_eq!(
                fields.external_id.as_deref(),
                Some(content_id(data).as_str())
            );
            assert_eq!(fields.tags[..2], ["photo", "file:fuzz.jpg"]);
            assert_eq!(
                fields.tags.iter().any(|t| t == DAMAGED_TAG),
                photo.damage.is_some()
            );
            assert_eq!(
                u64::from(image.width) * u64::from(image.height),
                u64::from(photo.width) * u64::from(photo.height)
            );
            assert_eq!(
                image.rgb.len() as u64,
                u64::from(image.width) * u64::from(image.height) * 3
            );
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!(
            "parse and decode_rgb disagree: {parsed:?} vs {:?}",
            decoded.as_ref().map(|i| &i.damage)
        ),
    }
});
