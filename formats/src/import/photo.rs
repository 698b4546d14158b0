//! Photos into image items (SPEC.md §8.4): a JPEG's capture time and UTC offset, GPS position
//! (no fix: none), camera (make, model, lens), and orientation (landscape or portrait as shown),
//! with the original file kept as the item's blob and the photo named
//! by its content ([`content_id`]), so the same picture imported from two folders, or twice, is
//! one item.
//!
//! What is refused, and only this: bytes that are not a JPEG (the reason names what they are,
//! through [`sniff`](super::sniff())), a JPEG whose header does not parse, and one whose width ×
//! height is over [`PhotoLimits::max_pixels`] — checked from the header before anything is
//! decoded, so a hostile header cannot make the importer allocate gigabytes. A JPEG whose
//! header parses but whose compressed data does not fully decode (truncated, a corrupt
//! stretch) is *kept*: it is still somebody's photo, its metadata still reads, and what decodes
//! still shows. [`Photo::damage`] and [`RgbPhoto::damage`] then say what failed, and the item
//! is tagged `image:damaged`.
//!
//! Decoding is `zune-jpeg`'s (pure Rust, fuzzed upstream). Integrity is judged by its strict
//! mode, which turns every "corrupt data" condition libjpeg only warns about into an error,
//! except stray bytes between header segments (real cameras write them; libjpeg and Pillow
//! skip them): those are dropped before the strict decode.
//! [`decode_rgb`] shows a damaged photo as zune-jpeg's lenient mode decodes it: the rows
//! before the damage, the rest mid-grey (128).
//!
//! Capture time, in order of preference: EXIF DateTimeOriginal (+ OffsetTimeOriginal), DateTime
//! (+ OffsetTime), DateTimeDigitized (+ OffsetTimeDigitized); the EXIF GPS date and time stamp
//! (UTC; tag `time:gps`); the XMP packet's exif:DateTimeOriginal, photoshop:DateCreated,
//! xmp:CreateDate, exif:DateTimeDigitized, exif:GPSTimeStamp (tag `time:xmp`); the IPTC IIM
//! DateCreated (2:55) with TimeCreated (2:60) of the Photoshop resource 0x0404 in APP13 (tag
//! `time:iptc`); otherwise [`EventTime::UNDATED`]. A file's modification time is never used:
//! copied files all carry the day they were copied. A zero or blank EXIF date
//! (`0000:00:00 00:00:00`) counts as absent; a time without an offset is taken as UTC.
//!
//! Invariants (fuzz target `photo_file`): no input panics; an accepted photo's pixel count is
//! within the limit; its draft validates; [`decode_rgb`] of an accepted photo returns exactly
//! width × height × 3 bytes.

use std::fmt::Write as _;
use std::io::Cursor;

use exif::{Exif, In, Tag, Value};
use jiff::civil::DateTime;
use sha2::{Digest, Sha256};
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use super::sniff::{FileKind, sniff};
use crate::ImportErrorKind;
use crate::item::{
    Camera, EventTime, GeoPoint, ItemDraft, ItemFields, Location, Orientation, Source,
};

/// What the photo importer takes, for refusals (`PNG image: memdb imports JPEG photos`).
pub const TAKES: &str = "memdb imports JPEG photos";

/// The tag of a photo kept although its image data does not fully decode.
pub const DAMAGED_TAG: &str = "image:damaged";

/// Grey level of the pixels a damaged photo's data does not reach.
const GREY: u8 = 128;

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
    /// The item (source `image`, external id [`content_id`]); its original bytes go in as a
    /// blob.
    pub draft: ItemDraft,
    /// Stored width in pixels (before orientation).
    pub width: u32,
    /// Stored height in pixels (before orientation).
    pub height: u32,
    /// EXIF orientation 1–8 (1 when absent or out of range).
    pub orientation: u8,
    /// Why the image data does not fully decode (`None`: it does). A damaged photo is kept,
    /// tagged [`DAMAGED_TAG`].
    pub damage: Option<String>,
}

fn syntax(what: impl Into<String>) -> ImportErrorKind {
    ImportErrorKind::Syntax(what.into())
}

/// The external id of a photo: `sha256:` and the 64 lowercase hex digits of the SHA-256 of its
/// bytes. Names the picture, not where it was found, so re-imports and copies find it.
pub fn content_id(bytes: &[u8]) -> String {
    let mut id = String::with_capacity(7 + 64);
    id.push_str("sha256:");
    for byte in Sha256::digest(bytes) {
        // Writing to a String cannot fail.
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// Reads one photo. `name` is the file's name, optionally after the name of its folder
/// (`Wedding 2019/handwritten-notes.jpg`): its last `/`-separated part becomes the tag
/// `file:<name>` (none when empty, as for standard input), the part before it the tag
/// `folder:<name>`; recall reads both as words of the photo.
pub fn parse(name: &str, bytes: &[u8], limits: PhotoLimits) -> Result<Photo, ImportErrorKind> {
    let header = header(bytes, limits)?;
    let damage = damage(bytes);
    let exif = read_exif(bytes);

    let mut tags = vec!["photo".to_owned()];
    let mut parts = name.rsplit('/');
    let base = parts.next().unwrap_or(name);
    if !base.is_empty() {
        tags.push(format!("file:{base}"));
    }
    if let Some(folder) = parts.next().filter(|f| !f.is_empty()) {
        tags.push(format!("folder:{folder}"));
    }
    let mut orientation = 1;
    let mut location = None;
    let mut camera = None;
    if let Some(exif) = &exif {
        location = gps(exif).map(|geo| Location {
            name: None,
            geo: Some(geo),
            place: None,
        });
        orientation = orientation_of(exif);
        camera = camera_of(exif);
    }
    let (time, time_tag) = capture_time(exif.as_ref(), &header);
    tags.extend(time_tag.map(str::to_owned));
    if damage.is_some() {
        tags.push(DAMAGED_TAG.to_owned());
    }
    let mut fields = ItemFields::new(Source::Image, time);
    fields.external_id = Some(content_id(bytes));
    fields.location = location;
    fields.tags = tags;
    fields.camera = camera;
    // Orientations 5–8 turn the picture a quarter: its stored width is its shown height.
    let (shown_w, shown_h) = if orientation >= 5 {
        (header.height, header.width)
    } else {
        (header.width, header.height)
    };
    fields.orientation = Some(Orientation::of(shown_w, shown_h));
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
        width: header.width,
        height: header.height,
        orientation,
        damage,
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
    /// Why only part of the image decoded (`None`: all of it). The pixels the data does not
    /// reach are mid-grey.
    pub damage: Option<String>,
}

/// Decodes a photo to upright RGB for page composition, under the same checks and limits as
/// [`parse`] (it refuses what `parse` refuses). Grayscale files come out gray; CMYK files the
/// decoder cannot convert come out as their luma. A damaged photo comes out as far as its data
/// decodes, the rest grey, with [`RgbPhoto::damage`] saying what failed.
pub fn decode_rgb(bytes: &[u8], limits: PhotoLimits) -> Result<RgbPhoto, ImportErrorKind> {
    let Header { width, height, .. } = header(bytes, limits)?;
    let want = usize::try_from(u64::from(width) * u64::from(height) * 3).unwrap_or(usize::MAX);
    let (mut rgb, mut damage) = match rgb_strict(bytes) {
        Ok(rgb) => (rgb, None),
        Err(e) => (
            rgb_lenient(bytes, want).unwrap_or_else(|| vec![GREY; want]),
            Some(e),
        ),
    };
    if rgb.len() != want {
        damage.get_or_insert_with(|| {
            format!(
                "decoded to {} bytes, not {want} for {width}×{height} RGB",
                rgb.len()
            )
        });
        rgb.resize(want, GREY);
    }
    let orientation = read_exif(bytes).as_ref().map_or(1, orientation_of);
    let mut photo = orient(width, height, rgb, orientation);
    photo.damage = damage;
    Ok(photo)
}

/// What the header pass of a JPEG found: the frame size and the metadata segments.
struct Header {
    width: u32,
    height: u32,
    /// The APP1 XMP packet (after its namespace prefix).
    xmp: Option<Vec<u8>>,
    /// The APP13 Photoshop image resources (after `Photoshop 3.0\0`).
    iptc: Option<Vec<u8>>,
}

/// What to call bytes that are not a JPEG in a refusal.
fn not_a_jpeg(kind: FileKind) -> String {
    match kind {
        FileKind::Empty => "empty file".to_owned(),
        FileKind::Unknown => "not an image".to_owned(),
        k if k.is_image() => k.name().to_owned(),
        k => format!("not an image ({k})"),
    }
}

/// Checks that `bytes` are a JPEG whose header (up to the first scan) parses and whose size is
/// within the limit; reads the frame size and metadata segments. Tolerates stray bytes between
/// segments, as libjpeg does.
fn header(bytes: &[u8], limits: PhotoLimits) -> Result<Header, ImportErrorKind> {
    let kind = sniff(bytes);
    if kind != FileKind::Jpeg {
        return Err(ImportErrorKind::Unsupported {
            found: not_a_jpeg(kind),
            expected: TAKES.to_owned(),
        });
    }
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(bytes), options(false, None));
    decoder
        .decode_headers()
        .map_err(|e| syntax(format!("JPEG header does not parse: {}", describe(&e))))?;
    let info = decoder
        .info()
        .ok_or_else(|| syntax("JPEG header does not parse: no frame"))?;
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
    Ok(Header {
        width,
        height,
        xmp: decoder.xmp().cloned(),
        iptc: decoder.iptc().cloned(),
    })
}

fn options(strict: bool, colorspace: Option<ColorSpace>) -> DecoderOptions {
    let options = DecoderOptions::default()
        .set_max_width(usize::from(u16::MAX))
        .set_max_height(usize::from(u16::MAX))
        .set_strict_mode(strict);
    match colorspace {
        Some(c) => options.jpeg_set_out_colorspace(c),
        None => options,
    }
}

/// A zune-jpeg error as one line of text.
fn describe(error: &zune_jpeg::errors::DecodeErrors) -> String {
    let text = format!("{error:?}");
    text.trim().trim_matches('"').trim().replace('\n', " ")
}

/// Decodes all of `bytes` to `colorspace` (`None`: the decoder's default, RGB).
fn decode(bytes: &[u8], strict: bool, colorspace: Option<ColorSpace>) -> Result<Vec<u8>, String> {
    JpegDecoder::new_with_options(ZCursor::new(bytes), options(strict, colorspace))
        .decode()
        .map_err(|e| describe(&e))
}

/// Decodes in strict mode, stray bytes between header segments dropped first.
fn decode_strict(bytes: &[u8], colorspace: Option<ColorSpace>) -> Result<Vec<u8>, String> {
    match decode(bytes, true, colorspace) {
        Err(e) if e.contains("Extra bytes between headers") => match without_stray_bytes(bytes) {
            Some(clean) => decode(&clean, true, colorspace),
            None => Err(e),
        },
        other => other,
    }
}

/// Whether a decode failed only because zune-jpeg cannot convert the stored colours to the
/// requested output (CMYK, YCCK), not because the data is bad.
fn colour_gap(error: &str) -> bool {
    error.contains("colorspace mapping")
}

/// Why the image data of a JPEG with a good header does not fully decode (`None`: it does).
/// Luma is the cheapest output; files that cannot go to luma are decoded as RGB.
fn damage(bytes: &[u8]) -> Option<String> {
    let error = match decode_strict(bytes, Some(ColorSpace::Luma)) {
        Ok(_) => return None,
        Err(e) if colour_gap(&e) => decode_strict(bytes, None).err()?,
        Err(e) => e,
    };
    Some(format!("JPEG data does not decode: {error}"))
}

/// The whole image as RGB in strict mode; luma spread to RGB for files that cannot go to RGB.
fn rgb_strict(bytes: &[u8]) -> Result<Vec<u8>, String> {
    match decode_strict(bytes, Some(ColorSpace::RGB)) {
        Err(e) if colour_gap(&e) => decode_strict(bytes, Some(ColorSpace::Luma))
            .map(|luma| luma_to_rgb(&luma))
            .map_err(|e| format!("JPEG data does not decode: {e}")),
        other => other.map_err(|e| format!("JPEG data does not decode: {e}")),
    }
}

/// What the lenient decoder makes of a damaged photo: the rows before the damage, the rest
/// grey (zune-jpeg fills them with 128); `None` when even that fails or has the wrong size.
fn rgb_lenient(bytes: &[u8], want: usize) -> Option<Vec<u8>> {
    match decode(bytes, false, Some(ColorSpace::RGB)) {
        Ok(rgb) => Some(rgb),
        Err(e) if colour_gap(&e) => decode(bytes, false, Some(ColorSpace::Luma))
            .ok()
            .map(|luma| luma_to_rgb(&luma)),
        Err(_) => None,
    }
    .filter(|rgb| rgb.len() == want)
}

fn luma_to_rgb(luma: &[u8]) -> Vec<u8> {
    luma.iter().flat_map(|&l| [l, l, l]).collect()
}

/// `bytes` without the stray bytes between the segments before the first scan (`None` when
/// there are none, or the segments cannot be walked: then the strict decoder's own error
/// stands). Markers may be preceded by fill bytes (`FF`), which are kept; any other byte where
/// a marker should start is dropped. Everything from the first SOS segment on is copied as is.
pub(crate) fn without_stray_bytes(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(bytes.get(..2)?);
    let mut pos = 2;
    let mut dropped = false;
    while pos < bytes.len() {
        if bytes[pos] != 0xFF {
            dropped = true;
            pos += 1;
            continue;
        }
        let mut at = pos;
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let marker = *bytes.get(at)?;
        if marker == 0x00 {
            // `FF 00` is byte stuffing, which has no place between segments.
            dropped = true;
            pos = at + 1;
            continue;
        }
        // Markers without a length: TEM, RSTn, SOI, EOI.
        if marker == 0x01 || (0xD0..=0xD9).contains(&marker) {
            out.extend_from_slice(&[0xFF, marker]);
            pos = at + 1;
            continue;
        }
        let length = usize::from(*bytes.get(at + 1)?) << 8 | usize::from(*bytes.get(at + 2)?);
        if length < 2 {
            return None;
        }
        let end = (at + 1 + length).min(bytes.len());
        out.push(0xFF);
        out.extend_from_slice(&bytes[at..end]);
        pos = end;
        if marker == 0xDA {
            out.extend_from_slice(&bytes[pos..]);
            break;
        }
    }
    dropped.then_some(out)
}

/// EXIF as far as it reads: cameras write broken entries, and an unreadable EXIF block only
/// loses the metadata, not the photo.
fn read_exif(bytes: &[u8]) -> Option<Exif> {
    exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(bytes))
        .or_else(|e| e.distill_partial_result(|_| {}))
        .ok()
}

fn orientation_of(exif: &Exif) -> u8 {
    exif.get_field(Tag::Orientation, In::PRIMARY)
        .and_then(|f| f.value.get_uint(0))
        .and_then(|o| u8::try_from(o).ok())
        .filter(|o| (1..=8).contains(o))
        .unwrap_or(1)
}

/// The capture time and the tag saying where it came from when that is not EXIF's own
/// date-time fields (see the module header for the order); undated when nothing gives one.
fn capture_time(exif: Option<&Exif>, header: &Header) -> (EventTime, Option<&'static str>) {
    if let Some(t) = exif.and_then(exif_time) {
        return (t, None);
    }
    if let Some(t) = exif.and_then(gps_time) {
        return (t, Some("time:gps"));
    }
    if let Some(t) = header.xmp.as_deref().and_then(xmp_time) {
        return (t, Some("time:xmp"));
    }
    if let Some(t) = header.iptc.as_deref().and_then(iptc_time) {
        return (t, Some("time:iptc"));
    }
    (EventTime::UNDATED, None)
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

/// EXIF DateTimeOriginal, DateTime, DateTimeDigitized, each with its offset tag.
fn exif_time(exif: &Exif) -> Option<EventTime> {
    let pairs = [
        (Tag::DateTimeOriginal, Tag::OffsetTimeOriginal),
        (Tag::DateTime, Tag::OffsetTime),
        (Tag::DateTimeDigitized, Tag::OffsetTimeDigitized),
    ];
    for (tag, offset_tag) in pairs {
        let Some(text) = ascii(exif, tag) else {
            continue;
        };
        let Ok(mut dt) = exif::DateTime::from_ascii(text.as_bytes()) else {
            continue;
        };
        if let Some(offset) = ascii(exif, offset_tag) {
            // An unreadable offset leaves the time as UTC rather than losing it.
            let _ = dt.parse_offset(offset.as_bytes());
        }
        if dt.year == 0 {
            continue;
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
        if let Ok(t) = EventTime::from_local(civil, dt.offset.unwrap_or(0)) {
            return Some(t);
        }
    }
    None
}

/// XMP namespaces of the date properties read, by URI (prefixes are only local names).
const NS_EXIF: &str = "http://ns.adobe.com/exif/1.0/";
const NS_PHOTOSHOP: &str = "http://ns.adobe.com/photoshop/1.0/";
const NS_XMP: &str = "http://ns.adobe.com/xap/1.0/";

/// XMP date properties, best first.
const XMP_DATES: [(&str, &str); 5] = [
    (NS_EXIF, "DateTimeOriginal"),
    (NS_PHOTOSHOP, "DateCreated"),
    (NS_XMP, "CreateDate"),
    (NS_EXIF, "DateTimeDigitized"),
    (NS_EXIF, "GPSTimeStamp"),
];

/// The best date of an XMP packet. Properties are read both as attributes
/// (`xmp:CreateDate="…"`, RDF's short form) and as elements (`<xmp:CreateDate>…</…>`);
/// namespaces are matched by URI. A packet that is not well-formed XML yields the dates read
/// before the error.
fn xmp_time(packet: &[u8]) -> Option<EventTime> {
    use xml::reader::{EventReader, ParserConfig, XmlEvent};
    let config = ParserConfig::new()
        .trim_whitespace(true)
        .ignore_comments(true);
    let mut found: [Option<EventTime>; XMP_DATES.len()] = [None; XMP_DATES.len()];
    let rank = |namespace: Option<&str>, local: &str| {
        XMP_DATES
            .iter()
            .position(|(ns, name)| namespace == Some(*ns) && local == *name)
    };
    // The element whose text is being read, by rank.
    let mut open: Option<usize> = None;
    for event in EventReader::new_with_config(packet, config) {
        match event {
            Ok(XmlEvent::StartElement {
                name, attributes, ..
            }) => {
                for attribute in &attributes {
                    let at = &attribute.name;
                    if let Some(i) = rank(at.namespace.as_deref(), &at.local_name) {
                        found[i] = found[i].or_else(|| xmp_date(&attribute.value));
                    }
                }
                open = rank(name.namespace.as_deref(), &name.local_name);
            }
            Ok(XmlEvent::Characters(text)) => {
                if let Some(i) = open.take() {
                    found[i] = found[i].or_else(|| xmp_date(&text));
                }
            }
            Ok(XmlEvent::EndElement { .. }) => open = None,
            Ok(XmlEvent::EndDocument) | Err(_) => break,
            Ok(_) => {}
        }
    }
    found.into_iter().flatten().next()
}

/// An XMP date (ISO 8601 as XMP profiles it): `YYYY-MM-DD`, or a date and time to the minute
/// or finer with an optional `Z`/`±hh:mm` (none: UTC). Year or month alone is too vague to
/// place on a day and reads as absent.
fn xmp_date(text: &str) -> Option<EventTime> {
    let text = text.trim();
    if text.len() < 10 || text.starts_with("0000") {
        return None;
    }
    EventTime::parse(text).ok().or_else(|| {
        let civil: DateTime = text.parse().ok()?;
        EventTime::from_local(civil, 0).ok()
    })
}

/// The IPTC IIM DateCreated (2:55, `CCYYMMDD`) and TimeCreated (2:60, `HHMMSS±HHMM`) of the
/// Photoshop image resources of APP13. A date without a time is midnight; a time without an
/// offset is UTC; a time without a date gives nothing.
fn iptc_time(resources: &[u8]) -> Option<EventTime> {
    let iim = photoshop_resource(resources, 0x0404)?;
    let (mut date, mut time) = (None, None);
    let mut pos = 0;
    // Each dataset: 0x1C, record, dataset number, a 2-byte big-endian length, the value. An
    // extended length (top bit set) is only used for large values, never for dates: stop there.
    while let Some(&[0x1C, record, dataset, hi, lo]) = iim.get(pos..pos + 5) {
        if hi & 0x80 != 0 {
            break;
        }
        let start = pos + 5;
        let end = start + (usize::from(hi) << 8 | usize::from(lo));
        let Some(value) = iim.get(start..end) else {
            break;
        };
        match (record, dataset) {
            (2, 55) => date = date.or(Some(value)),
            (2, 60) => time = time.or(Some(value)),
            _ => {}
        }
        pos = end;
    }
    let date = std::str::from_utf8(date?).ok()?.trim();
    let number = |s: &str, from: usize, to: usize| -> Option<i16> {
        let digits = s.get(from..to)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    if date.len() != 8 {
        return None;
    }
    let (year, month, day) = (
        number(date, 0, 4)?,
        number(date, 4, 6)?,
        number(date, 6, 8)?,
    );
    let (mut hour, mut minute, mut second, mut offset) = (0, 0, 0, 0);
    if let Some(text) = time
        .and_then(|t| std::str::from_utf8(t).ok())
        .map(str::trim)
        && text.len() >= 6
    {
        hour = number(text, 0, 2)?;
        minute = number(text, 2, 4)?;
        second = number(text, 4, 6)?;
        if text.len() == 11 {
            let sign = match text.as_bytes()[6] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            offset = sign * (number(text, 7, 9)? * 60 + number(text, 9, 11)?);
        }
    }
    if year == 0 {
        return None;
    }
    let civil = DateTime::new(
        year,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
        i8::try_from(hour).ok()?,
        i8::try_from(minute).ok()?,
        i8::try_from(second.min(59)).ok()?,
        0,
    )
    .ok()?;
    EventTime::from_local(civil, offset).ok()
}

/// The data of Photoshop image resource `id` (`8BIM`, id, a padded Pascal name, a 4-byte
/// length, data padded to even length), if present.
fn photoshop_resource(mut resources: &[u8], id: u16) -> Option<&[u8]> {
    let be = |bytes: &[u8]| bytes.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
    while resources.len() >= 12 && resources.starts_with(b"8BIM") {
        let this = be(resources.get(4..6)?);
        let name_len = usize::from(*resources.get(6)?);
        // The name's length byte and characters, padded to an even count.
        let name_total = (1 + name_len + 1) & !1;
        let size_at = 6 + name_total;
        let size = be(resources.get(size_at..size_at + 4)?);
        let data_at = size_at + 4;
        let data = resources.get(data_at..data_at.checked_add(size)?)?;
        if this == usize::from(id) {
            return Some(data);
        }
        let next = data_at + size + (size & 1);
        resources = resources.get(next..)?;
    }
    None
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

/// The GPS position, when the EXIF holds a fix. Not a fix: a missing or unreadable latitude or
/// longitude, GPSStatus `V` (the receiver says the measurement is void), and exactly (0, 0) —
/// what cameras and editors write into an empty GPS block, in the open sea off Africa where
/// nobody took the photo.
fn gps(exif: &Exif) -> Option<GeoPoint> {
    if ascii(exif, Tag::GPSStatus).is_some_and(|s| s.eq_ignore_ascii_case("v")) {
        return None;
    }
    let point = GeoPoint {
        lat: coordinate(exif, Tag::GPSLatitude, Tag::GPSLatitudeRef, b'S', 90.0)?,
        lon: coordinate(exif, Tag::GPSLongitude, Tag::GPSLongitudeRef, b'W', 180.0)?,
    };
    (point.lat != 0.0 || point.lon != 0.0).then_some(point)
}

/// EXIF Make, Model and LensModel, when any of them has text.
fn camera_of(exif: &Exif) -> Option<Camera> {
    let camera = Camera {
        make: ascii(exif, Tag::Make),
        model: ascii(exif, Tag::Model),
        lens: ascii(exif, Tag::LensModel),
    };
    (camera != Camera::default()).then_some(camera)
}

/// Turns stored pixels upright for EXIF orientation 1–8 (anything else is left as stored).
fn orient(width: u32, height: u32, rgb: Vec<u8>, orientation: u8) -> RgbPhoto {
    let (w, h) = (width as usize, height as usize);
    if !(2..=8).contains(&orientation) {
        return RgbPhoto {
            width,
            height,
            rgb,
            damage: None,
        };
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
        damage: None,
    }
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

    /// `jpeg` with a segment `FF marker` holding `payload` right after SOI.
    fn with_segment(jpeg: &[u8], marker: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() + 2;
        let mut out = vec![0xFF, 0xD8, 0xFF, marker, (len >> 8) as u8, len as u8];
        out.extend_from_slice(payload);
        out.extend_from_slice(&jpeg[2..]);
        out
    }

    fn xmp(body: &str) -> Vec<u8> {
        let mut payload = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
        payload.extend_from_slice(
            format!(
                "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF \
                 xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>{body}</rdf:RDF></x:xmpmeta>"
            )
            .as_bytes(),
        );
        payload
    }

    /// An APP13 payload with IPTC datasets 2:55 / 2:60 in resource 0x0404 (after an unrelated
    /// resource with an odd-length name and data, to exercise the padding).
    fn iptc(date: Option<&str>, time: Option<&str>) -> Vec<u8> {
        let mut iim = Vec::new();
        for (dataset, value) in [(55u8, date), (60, time)] {
            if let Some(v) = value {
                iim.extend_from_slice(&[0x1C, 2, dataset, 0, v.len() as u8]);
                iim.extend_from_slice(v.as_bytes());
            }
        }
        let mut out = b"Photoshop 3.0\0".to_vec();
        out.extend_from_slice(b"8BIM\x04\x25\x02ab\0\0\0\0\x03xyz\0");
        out.extend_from_slice(b"8BIM\x04\x04\0\0");
        out.extend_from_slice(&[0, 0, (iim.len() >> 8) as u8, iim.len() as u8]);
        out.extend_from_slice(&iim);
        out
    }

    fn time_and_tags(bytes: &[u8]) -> (String, Vec<String>) {
        let photo = parse("dir/a.jpg", bytes, PhotoLimits::default()).unwrap();
        let f = photo.draft.fields;
        (f.time.to_rfc3339(), f.tags)
    }

    #[test]
    fn a_jpeg_without_dates_is_undated_and_named_by_its_content() {
        let bytes = jpeg(64, 48);
        let photo = parse("holiday/a.jpg", &bytes, PhotoLimits::default()).unwrap();
        assert_eq!((photo.width, photo.height, photo.orientation), (64, 48, 1));
        assert_eq!(photo.draft.fields.time, EventTime::UNDATED);
        // The folder it was in is a word of it too.
        assert_eq!(
            photo.draft.fields.tags,
            ["photo", "file:a.jpg", "folder:holiday"]
        );
        assert_eq!(photo.damage, None);
        let id = photo.draft.fields.external_id.unwrap();
        assert_eq!(id, content_id(&bytes));
        assert!(id.starts_with("sha256:") && id.len() == 7 + 64, "{id}");
        assert_eq!(
            content_id(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // Standard input has no name: no `file:` tag.
        let photo = parse("", &bytes, PhotoLimits::default()).unwrap();
        assert_eq!(photo.draft.fields.tags, ["photo"]);
    }

    #[test]
    fn refusals_say_what_the_file_is() {
        let limits = PhotoLimits::default();
        let found = |bytes: &[u8]| match parse("x", bytes, limits) {
            Err(ImportErrorKind::Unsupported { found, expected }) => {
                assert_eq!(expected, TAKES);
                found
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(found(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), "PNG image");
        assert_eq!(found(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic"), "HEIC image");
        // An `ftyp` box cut short (the fuzzer's crash input, fuzz/seeds/photo_file).
        assert_eq!(
            found(b"\0\0\0\x18ftypic"),
            "not an image (MP4/QuickTime video)"
        );
        assert_eq!(found(b"GIF89a"), "GIF image");
        assert_eq!(found(b"hello, world\n"), "not an image (text)");
        assert_eq!(found(b"\0\x01\x02\x03"), "not an image");
        assert_eq!(found(b""), "empty file");
        let err = parse("x", b"\xff\xd8\xff\xe0\x00\x02junk", limits).unwrap_err();
        assert!(
            matches!(&err, ImportErrorKind::Syntax(m) if m.starts_with("JPEG header does not parse")),
            "{err:?}"
        );
        let small = PhotoLimits { max_pixels: 1000 };
        assert!(matches!(
            parse("x", &jpeg(32, 32), small),
            Err(ImportErrorKind::InvalidField { ref field, .. }) if field == "pixels"
        ));
        assert_eq!(
            decode_rgb(b"GIF89a", limits).unwrap_err(),
            parse("x", b"GIF89a", limits).unwrap_err()
        );
    }

    #[test]
    fn a_truncated_jpeg_is_kept_with_its_damage_and_shows_what_decodes() {
        let good = jpeg(64, 64);
        let truncated = &good[..good.len() * 2 / 3];
        let photo = parse("t.jpg", truncated, PhotoLimits::default()).unwrap();
        let damage = photo.damage.expect("damage reported");
        assert!(
            damage.starts_with("JPEG data does not decode: "),
            "{damage}"
        );
        assert_eq!(
            photo.draft.fields.tags,
            ["photo", "file:t.jpg", DAMAGED_TAG]
        );
        assert_eq!((photo.width, photo.height), (64, 64));

        let image = decode_rgb(truncated, PhotoLimits::default()).unwrap();
        assert!(image.damage.is_some());
        assert_eq!(image.rgb.len(), 64 * 64 * 3);
        let intact = decode_rgb(&good, PhotoLimits::default()).unwrap();
        assert_eq!(intact.damage, None);
        // The first rows decode as in the whole file; the last row is grey.
        let row = 64 * 3;
        assert_eq!(image.rgb[..row * 8], intact.rgb[..row * 8]);
        assert!(image.rgb[row * 63..].iter().all(|&b| b == GREY));
    }

    #[test]
    fn stray_bytes_between_segments_are_not_damage() {
        let good = jpeg(16, 16);
        // Insert junk after the first segment (APP0, whose length is at bytes 4..6).
        let app0_end = 4 + (usize::from(good[4]) << 8 | usize::from(good[5]));
        let mut stray = good[..app0_end].to_vec();
        stray.extend_from_slice(b"\0\0junk");
        stray.extend_from_slice(&good[app0_end..]);
        assert!(
            decode(&stray, true, None).is_err(),
            "strict mode refuses stray bytes"
        );
        assert_eq!(without_stray_bytes(&stray).as_deref(), Some(&good[..]));
        assert_eq!(without_stray_bytes(&good), None);
        let photo = parse("s.jpg", &stray, PhotoLimits::default()).unwrap();
        assert_eq!(photo.damage, None);
        assert_eq!(
            decode_rgb(&stray, PhotoLimits::default()).unwrap().damage,
            None
        );
        // The same file cut short is damaged.
        let cut = &stray[..stray.len() - 40];
        assert!(
            parse("s.jpg", cut, PhotoLimits::default())
                .unwrap()
                .damage
                .is_some()
        );
    }

    #[test]
    fn xmp_dates_by_namespace_in_attribute_or_element_form() {
        let base = jpeg(8, 8);
        let element = with_segment(
            &base,
            0xE1,
            &xmp(
                "<rdf:Description rdf:about='' xmlns:e='http://ns.adobe.com/exif/1.0/'>\
                  <e:GPSTimeStamp>2023-11-15T12:30:00Z</e:GPSTimeStamp></rdf:Description>",
            ),
        );
        assert_eq!(
            time_and_tags(&element),
            (
                "2023-11-15T12:30:00+00:00".into(),
                vec![
                    "photo".into(),
                    "file:a.jpg".into(),
                    "folder:dir".into(),
                    "time:xmp".into()
                ]
            )
        );
        // Attribute form; DateTimeOriginal beats CreateDate whatever the order; a local time
        // without an offset is UTC.
        let attributes = with_segment(
            &base,
            0xE1,
            &xmp(
                "<rdf:Description rdf:about='' xmlns:xmp='http://ns.adobe.com/xap/1.0/' \
                  xmlns:exif='http://ns.adobe.com/exif/1.0/' xmp:CreateDate='2020-01-01T00:00:00+01:00' \
                  exif:DateTimeOriginal='2019-07-04T18:30:15.25-04:00'/>\
                  <rdf:Description xmlns:photoshop='http://ns.adobe.com/photoshop/1.0/'>\
                  <photoshop:DateCreated>2018-02-03T04:05</photoshop:DateCreated></rdf:Description>",
            ),
        );
        assert_eq!(time_and_tags(&attributes).0, "2019-07-04T18:30:15-04:00");
        let local = with_segment(
            &base,
            0xE1,
            &xmp(
                "<rdf:Description xmlns:p='http://ns.adobe.com/photoshop/1.0/' p:DateCreated='2018-02-03T04:05'/>",
            ),
        );
        assert_eq!(time_and_tags(&local).0, "2018-02-03T04:05:00+00:00");
        // A property of another namespace with the same local name does not count.
        let other = with_segment(
            &base,
            0xE1,
            &xmp("<rdf:Description xmlns:q='urn:other' q:CreateDate='2018-02-03'/>"),
        );
        assert_eq!(time_and_tags(&other).0, "undated");
        let broken = with_segment(&base, 0xE1, b"http://ns.adobe.com/xap/1.0/\0<x:xmpmeta <<<");
        assert_eq!(time_and_tags(&broken).0, "undated");
    }

    #[test]
    fn iptc_date_created_with_time_created() {
        let base = jpeg(8, 8);
        let both = with_segment(&base, 0xED, &iptc(Some("20230508"), Some("135600+0200")));
        assert_eq!(
            time_and_tags(&both),
            (
                "2023-05-08T13:56:00+02:00".into(),
                vec![
                    "photo".into(),
                    "file:a.jpg".into(),
                    "folder:dir".into(),
                    "time:iptc".into()
                ]
            )
        );
        let date_only = with_segment(&base, 0xED, &iptc(Some("20230508"), None));
        assert_eq!(time_and_tags(&date_only).0, "2023-05-08T00:00:00+00:00");
        let no_offset = with_segment(&base, 0xED, &iptc(Some("20230508"), Some("135600")));
        assert_eq!(time_and_tags(&no_offset).0, "2023-05-08T13:56:00+00:00");
        // A time alone cannot be placed on a day; a bad date is absent.
        for (date, time) in [
            (None, Some("143000+0000")),
            (Some("20230231"), None),
            (Some("2023-5-8"), None),
            (Some("00000000"), None),
        ] {
            let bytes = with_segment(&base, 0xED, &iptc(date, time));
            assert_eq!(time_and_tags(&bytes).0, "undated", "{date:?} {time:?}");
        }
        // XMP comes before IPTC.
        let xmp_too = with_segment(
            &both,
            0xE1,
            &xmp(
                "<rdf:Description xmlns:xmp='http://ns.adobe.com/xap/1.0/' xmp:CreateDate='2001-01-01'/>",
            ),
        );
        assert_eq!(time_and_tags(&xmp_too).0, "2001-01-01T00:00:00+00:00");
    }

    #[test]
    fn photoshop_resources_are_walked_with_their_padding() {
        let payload = iptc(Some("20230508"), None);
        let resources = &payload[b"Photoshop 3.0\0".len()..];
        assert_eq!(photoshop_resource(resources, 0x0425), Some(&b"xyz"[..]));
        assert!(photoshop_resource(resources, 0x0404).is_some());
        assert_eq!(photoshop_resource(resources, 0x0001), None);
        assert_eq!(photoshop_resource(&resources[..20], 0x0404), None);
        // A length past the end is absent, not a panic.
        let mut long = resources.to_vec();
        long[10..14].copy_from_slice(&[0xFF; 4]);
        assert_eq!(photoshop_resource(&long, 0x0404), None);
    }
}
