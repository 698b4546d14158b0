//! Photos into image items (SPEC.md §8.4): a JPEG's EXIF capture time and UTC offset, GPS
//! position, orientation and camera, with the original file kept as the item's blob.
//!
//! A file is accepted only if it is a JPEG that decodes completely (a truncated or corrupt
//! file is reported and skipped: a scrapbook page could not show it) and whose pixel count is
//! within [`PhotoLimits::max_pixels`], checked from the header before anything is decoded, so
//! a hostile header cannot make the importer allocate gigabytes. Decoding is `zune-jpeg`'s
//! (pure Rust, fuzzed upstream; like Pillow and unlike Debian's TurboJPEG 2.1 API it recovers
//! from the harmless "extraneous bytes before marker" warnings real cameras produce). EXIF is
//! read by `kamadak-exif`; an unreadable EXIF block only loses the metadata, not the photo.
//!
//! Capture time, in order of preference: DateTimeOriginal (+ OffsetTimeOriginal), DateTime
//! (+ OffsetTime), DateTimeDigitized, the GPS date and time stamp (UTC), then the time the
//! caller supplies (the file's modification time), tagged `time:file`. A zero or blank EXIF
//! date (`0000:00:00 00:00:00`) counts as absent.

use std::io::Cursor;

use exif::{Exif, In, Tag, Value};
use jiff::civil::DateTime;
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use crate::ImportErrorKind;
use crate::item::{EventTime, GeoPoint, ItemDraft, ItemFields, Location, Source};

/// Bounds on what a photo may cost to import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhotoLimits {
    /// Largest width × height accepted (default 100 megapixels).
    pub max_pixels: u64,
}

impl Default for PhotoLimits {
    fn default() -> Self {
        PhotoLimits {
            max_pixels: 100_000_000,
        }
    }
}

/// A photo that imported: its item and what the page composer needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Photo {
    /// The item (source `image`); its original bytes go in as a blob.
    pub draft: ItemDraft,
    /// Stored width in pixels (before orientation).
    pub width: u32,
    /// Stored height in pixels (before orientation).
    pub height: u32,
    /// EXIF orientation 1–8 (1 when absent or out of range).
    pub orientation: u8,
}

fn syntax(what: impl Into<String>) -> ImportErrorKind {
    ImportErrorKind::Syntax(what.into())
}

/// Reads one photo. `name` becomes its external id (its path within the imported folder);
/// `file_time` is used when the file carries no capture time.
pub fn parse(
    name: &str,
    bytes: &[u8],
    file_time: Option<EventTime>,
    limits: PhotoLimits,
) -> Result<Photo, ImportErrorKind> {
    if !bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        let head: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Err(syntax(format!(
            "not a JPEG file (starts with {}, not ff d8 ff)",
            if head.is_empty() {
                "nothing".to_owned()
            } else {
                head.join(" ")
            }
        )));
    }
    let (width, height) = decode_checked(bytes, limits)?;

    // Keep whatever EXIF reads when some entries are broken (cameras write odd ones).
    let exif = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(bytes))
        .or_else(|e| e.distill_partial_result(|_| {}))
        .ok();
    let mut tags = vec!["photo".to_owned()];
    let time = match exif.as_ref().and_then(capture_time) {
        Some(t) => t,
        None => {
            tags.push("time:file".to_owned());
            file_time.ok_or_else(|| ImportErrorKind::MissingField("DateTimeOriginal".to_owned()))?
        }
    };
    let mut fields = ItemFields::new(Source::Image, time);
    fields.external_id = Some(name.to_owned());
    let mut orientation = 1;
    if let Some(exif) = &exif {
        if let Some(geo) = gps(exif) {
            fields.location = Some(Location {
                name: None,
                geo: Some(geo),
            });
        }
        orientation = exif
            .get_field(Tag::Orientation, In::PRIMARY)
            .and_then(|f| f.value.get_uint(0))
            .and_then(|o| u8::try_from(o).ok())
            .filter(|o| (1..=8).contains(o))
            .unwrap_or(1);
        let camera: Vec<String> = [Tag::Make, Tag::Model]
            .into_iter()
            .filter_map(|t| ascii(exif, t))
            .collect();
        if !camera.is_empty() {
            tags.push(format!("camera:{}", camera.join(" ")));
        }
    }
    fields.tags = tags;
    fields
        .validate()
        .map_err(|reason| ImportErrorKind::InvalidField {
            field: "photo".to_owned(),
            reason,
        })?;
    Ok(Photo {
        draft: ItemDraft {
            fields,
            supersedes: None,
        },
        width,
        height,
        orientation,
    })
}

/// A decoded photo, upright: EXIF orientation applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbPhoto {
    /// Width in pixels, after orientation.
    pub width: u32,
    /// Height in pixels, after orientation.
    pub height: u32,
    /// Row-major RGB, 3 bytes per pixel.
    pub rgb: Vec<u8>,
}

/// Decodes a photo to upright RGB for page composition, under the same checks and limits as
/// [`parse`]. Grayscale files come out gray; CMYK files the decoder cannot convert come out as
/// their luma.
pub fn decode_rgb(bytes: &[u8], limits: PhotoLimits) -> Result<RgbPhoto, ImportErrorKind> {
    let (width, height, rgb) = match decode_with(bytes, limits, ColorSpace::RGB) {
        Ok(decoded) => decoded,
        Err(_) => {
            let (w, h, luma) = decode_with(bytes, limits, ColorSpace::Luma)?;
            (w, h, luma.iter().flat_map(|&l| [l, l, l]).collect())
        }
    };
    let want = usize::try_from(u64::from(width) * u64::from(height) * 3).unwrap_or(usize::MAX);
    if rgb.len() != want {
        return Err(syntax(format!(
            "JPEG decoded to {} bytes, not {want} for {width}×{height} RGB",
            rgb.len()
        )));
    }
    let orientation = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(bytes))
        .or_else(|e| e.distill_partial_result(|_| {}))
        .ok()
        .and_then(|exif| {
            exif.get_field(Tag::Orientation, In::PRIMARY)
                .and_then(|f| f.value.get_uint(0))
        })
        .and_then(|o| u8::try_from(o).ok())
        .unwrap_or(1);
    Ok(orient(width, height, rgb, orientation))
}

/// Turns stored pixels upright for EXIF orientation 1–8 (anything else is left as stored).
fn orient(width: u32, height: u32, rgb: Vec<u8>, orientation: u8) -> RgbPhoto {
    let (w, h) = (width as usize, height as usize);
    if !(2..=8).contains(&orientation) {
        return RgbPhoto { width, height, rgb };
    }
    let transposed = orientation >= 5;
    let (out_w, out_h) = if transposed { (h, w) } else { (w, h) };
    let mut out = vec![0u8; rgb.len()];
    for y in 0..out_h {
        for x in 0..out_w {
            // The stored pixel shown at (x, y) of the upright image.
            let (sx, sy) = match orientation {
                2 => (w - 1 - x, y),
                3 => (w - 1 - x, h - 1 - y),
                4 => (x, h - 1 - y),
                5 => (y, x),
                6 => (y, h - 1 - x),
                7 => (w - 1 - y, h - 1 - x),
                _ => (w - 1 - y, x), // 8
            };
            let (src, dst) = ((sy * w + sx) * 3, (y * out_w + x) * 3);
            out[dst..dst + 3].copy_from_slice(&rgb[src..src + 3]);
        }
    }
    RgbPhoto {
        width: out_w as u32,
        height: out_h as u32,
        rgb: out,
    }
}

/// Decodes the whole image (to luma, the cheapest output) after checking its size from the
/// header; returns its stored width and height.
fn decode_checked(bytes: &[u8], limits: PhotoLimits) -> Result<(u32, u32), ImportErrorKind> {
    match decode_with(bytes, limits, ColorSpace::Luma) {
        Ok((w, h, _)) => Ok((w, h)),
        Err(e @ ImportErrorKind::InvalidField { .. }) => Err(e),
        Err(_) => {
            // CMYK and YCCK files cannot go straight to luma: decode them as they are stored.
            let (w, h, _) = decode_with(bytes, limits, ColorSpace::Unknown)?;
            Ok((w, h))
        }
    }
}

/// Decodes to `colorspace` (`Unknown`: as stored) after checking the size from the header.
fn decode_with(
    bytes: &[u8],
    limits: PhotoLimits,
    colorspace: ColorSpace,
) -> Result<(u32, u32, Vec<u8>), ImportErrorKind> {
    let options = DecoderOptions::default()
        .set_max_width(usize::from(u16::MAX))
        .set_max_height(usize::from(u16::MAX))
        .set_strict_mode(true);
    let with_colorspace = |o: DecoderOptions| {
        if colorspace == ColorSpace::Unknown {
            o
        } else {
            o.jpeg_set_out_colorspace(colorspace)
        }
    };
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(bytes), with_colorspace(options));
    if let Err(e) = decoder.decode_headers() {
        // Strict mode also refuses stray bytes between segments, which libjpeg and Pillow
        // only warn about; everything else it refuses (truncation, bad codes) stays refused.
        if !format!("{e:?}").contains("Extra bytes between headers") {
            return Err(syntax(format!("JPEG header: {e:?}")));
        }
        decoder = JpegDecoder::new_with_options(
            ZCursor::new(bytes),
            with_colorspace(options.set_strict_mode(false)),
        );
        decoder
            .decode_headers()
            .map_err(|e| syntax(format!("JPEG header: {e:?}")))?;
    }
    let info = decoder
        .info()
        .ok_or_else(|| syntax("JPEG header: no frame"))?;
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    let pixels = u64::from(width) * u64::from(height);
    if pixels > limits.max_pixels {
        return Err(ImportErrorKind::InvalidField {
            field: "pixels".to_owned(),
            reason: format!(
                "{width}×{height} = {pixels} pixels is over the limit of {}",
                limits.max_pixels
            ),
        });
    }
    let pixels = decoder
        .decode()
        .map_err(|e| syntax(format!("JPEG data does not decode: {e:?}")))?;
    Ok((width, height, pixels))
}

/// The first ASCII value of `tag`, trimmed of NULs and spaces, if it has printable text.
fn ascii(exif: &Exif, tag: Tag) -> Option<String> {
    let field = exif.get_field(tag, In::PRIMARY)?;
    let Value::Ascii(values) = &field.value else {
        return None;
    };
    let text = String::from_utf8_lossy(values.first()?);
    let text: String = text
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim()
        .to_owned();
    (!text.is_empty()).then_some(text)
}

fn capture_time(exif: &Exif) -> Option<EventTime> {
    let pairs = [
        (Tag::DateTimeOriginal, Some(Tag::OffsetTimeOriginal)),
        (Tag::DateTime, Some(Tag::OffsetTime)),
        (Tag::DateTimeDigitized, Some(Tag::OffsetTimeDigitized)),
    ];
    for (tag, offset_tag) in pairs {
        let Some(text) = ascii(exif, tag) else {
            continue;
        };
        let Ok(mut dt) = exif::DateTime::from_ascii(text.as_bytes()) else {
            continue;
        };
        if let Some(offset) = offset_tag.and_then(|t| ascii(exif, t)) {
            // An unreadable offset leaves the time as UTC rather than losing it.
            let _ = dt.parse_offset(offset.as_bytes());
        }
        let Ok(civil) = DateTime::new(
            i16::try_from(dt.year).ok()?,
            dt.month as i8,
            dt.day as i8,
            dt.hour as i8,
            dt.minute as i8,
            dt.second as i8,
            0,
        ) else {
            continue;
        };
        if dt.year == 0 {
            continue;
        }
        if let Ok(t) = EventTime::from_local(civil, dt.offset.unwrap_or(0)) {
            return Some(t);
        }
    }
    gps_time(exif)
}

/// GPSDateStamp (`YYYY:MM:DD`) + GPSTimeStamp (three rationals), in UTC.
fn gps_time(exif: &Exif) -> Option<EventTime> {
    let date = ascii(exif, Tag::GPSDateStamp)?;
    let mut parts = date.split(':').map(|p| p.trim().parse::<i32>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    let hms = rationals(&exif.get_field(Tag::GPSTimeStamp, In::PRIMARY)?.value)?;
    let part = |i: usize| hms.get(i).copied();
    let (h, min, s) = (part(0)?, part(1)?, part(2)?);
    let civil = DateTime::new(
        i16::try_from(y).ok()?,
        i8::try_from(m).ok()?,
        i8::try_from(d).ok()?,
        h as i8,
        min as i8,
        s as i8,
        0,
    )
    .ok()?;
    (y > 0)
        .then(|| EventTime::from_local(civil, 0).ok())
        .flatten()
}

/// The finite values of a rational field; some writers (Nokia) use signed rationals where
/// EXIF says unsigned.
fn rationals(value: &Value) -> Option<Vec<f64>> {
    let values: Vec<f64> = match value {
        Value::Rational(v) => v.iter().map(|r| r.to_f64()).collect(),
        Value::SRational(v) => v.iter().map(|r| r.to_f64()).collect(),
        _ => return None,
    };
    values.iter().all(|v| v.is_finite()).then_some(values)
}

/// Decimal degrees from three rationals and a hemisphere letter.
fn coordinate(exif: &Exif, tag: Tag, reference: Tag, negative: u8, limit: f64) -> Option<f64> {
    let dms = rationals(&exif.get_field(tag, In::PRIMARY)?.value)?;
    let part = |i: usize| dms.get(i).copied();
    let value = part(0)? + part(1).unwrap_or(0.0) / 60.0 + part(2).unwrap_or(0.0) / 3600.0;
    // A missing hemisphere reads as north / east, as other EXIF readers do.
    let sign = match ascii(exif, reference).and_then(|r| r.bytes().next()) {
        Some(b) if b.eq_ignore_ascii_case(&negative) => -1.0,
        _ => 1.0,
    };
    let value = sign * value;
    (value.abs() <= limit).then_some(value)
}

fn gps(exif: &Exif) -> Option<GeoPoint> {
    Some(GeoPoint {
        lat: coordinate(exif, Tag::GPSLatitude, Tag::GPSLatitudeRef, b'S', 90.0)?,
        lon: coordinate(exif, Tag::GPSLongitude, Tag::GPSLongitudeRef, b'W', 180.0)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small real JPEG (a gradient), written by the `jpeg-encoder` crate.
    fn jpeg(width: usize, height: usize) -> Vec<u8> {
        let pixels: Vec<u8> = (0..width * height * 3).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, 80)
            .encode(
                &pixels,
                width as u16,
                height as u16,
                jpeg_encoder::ColorType::Rgb,
            )
            .unwrap();
        out
    }

    #[test]
    fn a_jpeg_without_exif_takes_the_file_time() {
        let file_time = EventTime::parse("2024-05-01T10:00:00Z").unwrap();
        let photo = parse(
            "a.jpg",
            &jpeg(64, 48),
            Some(file_time),
            PhotoLimits::default(),
        )
        .unwrap();
        assert_eq!((photo.width, photo.height, photo.orientation), (64, 48, 1));
        assert_eq!(photo.draft.fields.time, file_time);
        assert_eq!(photo.draft.fields.tags, ["photo", "time:file"]);
        let err = parse("a.jpg", &jpeg(8, 8), None, PhotoLimits::default()).unwrap_err();
        assert_eq!(
            err,
            ImportErrorKind::MissingField("DateTimeOriginal".into())
        );
    }

    #[test]
    fn broken_and_oversized_files_are_typed_errors() {
        let t = Some(EventTime::utc(0));
        let limits = PhotoLimits::default();
        assert!(matches!(
            parse("x", b"GIF89a", t, limits),
            Err(ImportErrorKind::Syntax(_))
        ));
        assert!(matches!(
            parse("x", b"", t, limits),
            Err(ImportErrorKind::Syntax(_))
        ));
        let good = jpeg(32, 32);
        let truncated = &good[..good.len() / 2];
        assert!(matches!(
            parse("x", truncated, t, limits),
            Err(ImportErrorKind::Syntax(_))
        ));
        let small = PhotoLimits { max_pixels: 1000 };
        assert!(matches!(
            parse("x", &good, t, small),
            Err(ImportErrorKind::InvalidField { ref field, .. }) if field == "pixels"
        ));
    }
}
