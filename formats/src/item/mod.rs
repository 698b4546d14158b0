//! Schema-Guided Memory (SGM) items: the typed fields of one memory and their record encoding.
//!
//! An item is what ATM-Bench calls an SGM record: a set of typed fields (time, place, source,
//! entities, tags, OCR, caption, summary, body, speaker/from/to, and for photos the camera, the
//! orientation and the provenance of their captions) rather than free text. This module owns
//! the types and the byte encoding of a stored record (SPEC.md §4): a version byte followed by
//! bincode 2.x (standard configuration) of the fields in a fixed order, framed in a segment by a
//! length and a CRC32C.
//!
//! Record versions: version 2 ([`RECORD_VERSION`]) is version 1's nineteen fields followed by
//! five more (the structured place, camera, orientation, short caption and caption
//! provenance). Version 3 ([`RECORD_VERSION_ZSTD`]) is version 2's fields in one zstd frame:
//! the writer picks it for a record whose fields are long enough that compression pays
//! ([`COMPRESS_MIN_BYTES`], and at least an eighth saved), version 2 for the rest. Version 4
//! ([`RECORD_VERSION_SCOPED`]) is version 2's fields followed by the item's [`Scope`] (whose
//! memory it is: user, agent, run), and version 5 ([`RECORD_VERSION_SCOPED_ZSTD`]) those in one
//! zstd frame; the writer uses them only for an item that has a scope, so every other record is
//! written exactly as before. Version 1 records are still read, with those five empty: stores
//! hold records of every version side by side, and a record is only rewritten when its item
//! changes.
//!
//! Invariants: a decoded record always satisfies [`ItemFields::validate`]; decoding never
//! allocates more than [`MAX_RECORD_BYTES`] whatever the input claims (a zstd frame must declare
//! its content size, at most that); encoding then decoding gives back the same record, whatever
//! version it was read from.

use std::fmt;
use std::str::FromStr;

use crate::FormatError;
use crate::bytes::{PutLe, Reader, crc32c};

mod place;
mod record;
mod time;

pub use place::*;
pub use record::*;
pub use time::*;

/// Version byte of an uncompressed record with fields 1–24 (SPEC.md §4.2).
pub const RECORD_VERSION: u8 = 2;
/// Version byte of a compressed record: version 2's fields in one zstd frame (SPEC.md §4.3).
pub const RECORD_VERSION_ZSTD: u8 = 3;
/// Fields shorter than this are stored as they are. A short record saves little (a chat line
/// or a LoCoMo turn has few repeats, and the frame has its header) and pays zstd's fixed cost
/// per frame (its entropy tables), which dominates at this size: with the threshold at 256,
/// the `ingest` bench's records of 200–480 bytes took 2.75 µs to read by id instead of 0.66 and
/// ingested at half the rate. Longer ones (mail, notes, OCR) are compressed when that saves at
/// least an eighth (e-mail bodies: about 55 %).
pub const COMPRESS_MIN_BYTES: usize = 512;
/// zstd's level for records: its default, whose speed (hundreds of MB/s) keeps compression
/// far below a commit's fsync; higher levels save a few percent more at several times the time.
const ZSTD_LEVEL: i32 = 3;
/// The first record version, still read (SPEC.md §4.2): fields 1–19 only.
pub const RECORD_VERSION_1: u8 = 1;
/// Version byte of an uncompressed record with fields 1–27: version 2's, then the scope
/// (SPEC.md §4.5). Written only for an item with a scope.
pub const RECORD_VERSION_SCOPED: u8 = 4;
/// Version byte of a compressed record with fields 1–27: version 4's fields in one zstd frame
/// (SPEC.md §4.5).
pub const RECORD_VERSION_SCOPED_ZSTD: u8 = 5;
/// The longest scope component (user, agent or run id), in bytes.
pub const MAX_SCOPE_ID_BYTES: usize = 256;
/// Largest encoded item record accepted by the decoder (and by the store).
pub const MAX_RECORD_BYTES: usize = 16 << 20;
/// Bytes of the frame (`len u32`, `crc32c u32`) in front of a record inside an item block.
pub const RECORD_FRAME_BYTES: usize = 8;
/// Largest UTC offset accepted, in minutes (±18 h, as RFC 9557 / ISO 8601 allow).
pub const MAX_OFFSET_MINUTES: i16 = 18 * 60;

/// English month names, lowercase, January first: what importers and node extraction read.
pub const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Where a memory came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Source {
    /// A photo (or other still image).
    Image = 1,
    /// A video.
    Video = 2,
    /// An e-mail message.
    Email = 3,
    /// A chat or dialogue turn.
    Chat = 4,
    /// A note written by the person.
    Note = 5,
}

impl Source {
    /// Every source, in code order.
    pub const ALL: [Source; 5] = [
        Source::Image,
        Source::Video,
        Source::Email,
        Source::Chat,
        Source::Note,
    ];

    /// Lowercase name used in JSONL, the CLI and the query language.
    pub fn name(self) -> &'static str {
        match self {
            Source::Image => "image",
            Source::Video => "video",
            Source::Email => "email",
            Source::Chat => "chat",
            Source::Note => "note",
        }
    }
}

/// For a `#[repr(u8)]` enum with an `ALL` list and a `name()`: `code` and `from_code` (the byte
/// stored on disk and back), `Display` as its name and `FromStr` from its name in any letter
/// case; `$what` and `$expected` word the refusal.
macro_rules! named {
    ($ty:ident, $what:literal, $expected:literal) => {
        impl $ty {
            /// The byte stored on disk for this value.
            pub fn code(self) -> u8 {
                self as u8
            }

            /// The value stored as `code`, if any.
            pub fn from_code(code: u8) -> Option<$ty> {
                $ty::ALL.into_iter().find(|v| v.code() == code)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL
                    .into_iter()
                    .find(|v| v.name().eq_ignore_ascii_case(s))
                    .ok_or_else(|| {
                        format!(
                            concat!("unknown ", $what, " `{}` (expected ", $expected, ")"),
                            s
                        )
                    })
            }
        }
    };
}

named!(Source, "source", "image, video, email, chat or note");

/// The camera a photo was taken with, as its EXIF says (Make, Model, LensModel).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Camera {
    /// The maker ("FUJIFILM", "Apple").
    pub make: Option<String>,
    /// The model ("FinePixS2Pro", "iPhone 6").
    pub model: Option<String>,
    /// The lens ("iPhone 6 back camera 4.15mm f/2.2", "EF24-105mm f/4L IS USM").
    pub lens: Option<String>,
}

impl Camera {
    /// "FUJIFILM FinePixS2Pro": make and model, the make left out when the model already starts
    /// with it ("Canon EOS 40D", not "Canon Canon EOS 40D"). Empty when neither is known.
    pub fn label(&self) -> String {
        match (self.make.as_deref(), self.model.as_deref()) {
            (Some(make), Some(model))
                if model
                    .get(..make.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(make)) =>
            {
                model.to_owned()
            }
            (Some(make), Some(model)) => format!("{make} {model}"),
            (Some(one), None) | (None, Some(one)) => one.to_owned(),
            (None, None) => String::new(),
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.make.is_none() && self.model.is_none() && self.lens.is_none() {
            return Err("camera: make, model and lens are all absent".to_owned());
        }
        for (what, value) in [
            ("make", &self.make),
            ("model", &self.model),
            ("lens", &self.lens),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(format!("camera: {what} is empty"));
            }
        }
        Ok(())
    }
}

/// Which way up a picture is, as it is shown (after its EXIF orientation is applied). Stored as
/// its [`code`](Orientation::code), 0 meaning unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Orientation {
    /// Wider than tall.
    Landscape = 1,
    /// Taller than wide.
    Portrait = 2,
    /// As wide as tall.
    Square = 3,
}

impl Orientation {
    /// Every orientation, in code order.
    pub const ALL: [Orientation; 3] = [
        Orientation::Landscape,
        Orientation::Portrait,
        Orientation::Square,
    ];

    /// The orientation of an upright picture `width` × `height` pixels.
    pub fn of(width: u32, height: u32) -> Orientation {
        match width.cmp(&height) {
            std::cmp::Ordering::Greater => Orientation::Landscape,
            std::cmp::Ordering::Less => Orientation::Portrait,
            std::cmp::Ordering::Equal => Orientation::Square,
        }
    }

    /// Lowercase name used in JSONL, JSON and item text.
    pub fn name(self) -> &'static str {
        match self {
            Orientation::Landscape => "landscape",
            Orientation::Portrait => "portrait",
            Orientation::Square => "square",
        }
    }
}

named!(Orientation, "orientation", "landscape, portrait or square");

/// Which model described an image, and when: the provenance of the caption, short caption and
/// OCR text a captioner filled (ATM-Bench's `model_used` and `processed_at`). A photo with a
/// provenance has been captioned, and is not sent to a captioner again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptionProvenance {
    /// The model, as its server names it ("Qwen3-VL-2B-Instruct").
    pub model: String,
    /// When it answered, UTC ms since the epoch.
    pub at_ms: i64,
}

/// Whose memory an item is: the ids mem0 names `user_id`, `agent_id` and `run_id`, each
/// optional. An item without any (an imported photo, mail or chat) has the empty scope: it is
/// the store owner's. Memory operations compare a fact only with memories of the same scope
/// (and speaker); a search given a scope sees only items whose scope has every component the
/// filter names (SPEC.md §4.5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    /// The person the memory is about or belongs to.
    pub user_id: Option<String>,
    /// The agent that made it.
    pub agent_id: Option<String>,
    /// The session or run it was made in.
    pub run_id: Option<String>,
}

impl Scope {
    /// A scope of the given components (an empty or blank string counts as absent).
    pub fn new(user_id: Option<String>, agent_id: Option<String>, run_id: Option<String>) -> Scope {
        let given = |id: Option<String>| id.filter(|s| !s.trim().is_empty());
        Scope {
            user_id: given(user_id),
            agent_id: given(agent_id),
            run_id: given(run_id),
        }
    }

    /// Whether no component is set (the store owner's items).
    pub fn is_empty(&self) -> bool {
        self.user_id.is_none() && self.agent_id.is_none() && self.run_id.is_none()
    }

    /// The components that are set, by name (`user_id`, `agent_id`, `run_id`).
    pub fn components(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        [
            ("user_id", &self.user_id),
            ("agent_id", &self.agent_id),
            ("run_id", &self.run_id),
        ]
        .into_iter()
        .filter_map(|(name, id)| id.as_deref().map(|id| (name, id)))
    }

    /// Whether an item of this scope passes `filter`: every component the filter sets is set
    /// here to the same id (components the filter leaves out match anything; the empty filter
    /// matches every item).
    pub fn within(&self, filter: &Scope) -> bool {
        let passes = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        };
        passes(&filter.user_id, &self.user_id)
            && passes(&filter.agent_id, &self.agent_id)
            && passes(&filter.run_id, &self.run_id)
    }

    /// Checks the ranges the format promises: each component set is not blank, has no control
    /// character and is at most [`MAX_SCOPE_ID_BYTES`] long.
    pub fn validate(&self) -> Result<(), String> {
        for (name, id) in self.components() {
            if id.trim().is_empty() {
                return Err(format!("scope: {name} is blank"));
            }
            if id.len() > MAX_SCOPE_ID_BYTES {
                return Err(format!(
                    "scope: {name} is {} bytes, at most {MAX_SCOPE_ID_BYTES}",
                    id.len()
                ));
            }
            if id.chars().any(char::is_control) {
                return Err(format!("scope: {name} holds a control character"));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(no scope)");
        }
        let parts: Vec<String> = self
            .components()
            .map(|(name, id)| format!("{name}={id}"))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// The typed fields of one memory, as an importer or an application gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemFields {
    /// The identifier the item has in its source (`D1:3`, a Message-ID, a file path). Unique
    /// within a store: importing the same external id again updates the item.
    pub external_id: Option<String>,
    /// What kind of memory this is.
    pub source: Source,
    /// When it happened.
    pub time: EventTime,
    /// Where it happened.
    pub location: Option<Location>,
    /// People, organisations and things it names.
    pub entities: Vec<String>,
    /// Free labels.
    pub tags: Vec<String>,
    /// Text read from the image.
    pub ocr: Option<String>,
    /// A caption of the image.
    pub caption: Option<String>,
    /// A short summary.
    pub summary: Option<String>,
    /// The main text (message body, what was said, the note).
    pub body: Option<String>,
    /// Who said it (chat).
    pub speaker: Option<String>,
    /// Sender (e-mail).
    pub from: Option<String>,
    /// Recipients (e-mail).
    pub to: Vec<String>,
    /// A one-line caption of the image (ATM-Bench's `short_caption`).
    pub short_caption: Option<String>,
    /// Which model wrote the caption, short caption and OCR text, and when; `None` when they
    /// were not written by a captioner (given by hand, imported) or are absent.
    pub caption_provenance: Option<CaptionProvenance>,
    /// The camera (photos).
    pub camera: Option<Camera>,
    /// Which way up the picture is shown (photos).
    pub orientation: Option<Orientation>,
    /// Whose memory it is (empty: the store owner's).
    pub scope: Scope,
}

impl ItemFields {
    /// Fields with only a source and a time set.
    pub fn new(source: Source, time: EventTime) -> ItemFields {
        ItemFields {
            external_id: None,
            source,
            time,
            location: None,
            entities: Vec::new(),
            tags: Vec::new(),
            ocr: None,
            caption: None,
            summary: None,
            body: None,
            speaker: None,
            from: None,
            to: Vec::new(),
            short_caption: None,
            caption_provenance: None,
            camera: None,
            orientation: None,
            scope: Scope::default(),
        }
    }

    /// Checks the value ranges the format promises: offset within ±18 h, an instant jiff can
    /// represent, finite in-range coordinates, a non-empty external id when one is given, a
    /// place with a city (and any other name it has non-empty, a two-letter country code), a
    /// camera with something known about it, a caption provenance naming its model at a time
    /// the calendar holds.
    pub fn validate(&self) -> Result<(), String> {
        self.time.validate()?;
        if let Some((_, why)) = self
            .location
            .as_ref()
            .and_then(|l| l.geo)
            .and_then(GeoPoint::out_of_range)
        {
            return Err(why);
        }
        if let Some(place) = self.location.as_ref().and_then(|l| l.place.as_ref()) {
            place.validate()?;
        }
        if self.external_id.as_deref() == Some("") {
            return Err("external id is empty".to_owned());
        }
        if let Some(camera) = &self.camera {
            camera.validate()?;
        }
        self.scope.validate()?;
        if let Some(p) = &self.caption_provenance {
            if p.model.trim().is_empty() {
                return Err("caption provenance: model is empty".to_owned());
            }
            if jiff::Timestamp::from_millisecond(p.at_ms).is_err() {
                return Err(format!(
                    "caption provenance: instant {} ms is outside years -9999..=9999",
                    p.at_ms
                ));
            }
        }
        Ok(())
    }
}

/// An item as an importer produces it: fields, plus the external id of an item it supersedes.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemDraft {
    /// The memory's fields.
    pub fields: ItemFields,
    /// External id of an earlier item this one replaces in meaning (an invoice superseding a
    /// booking). The store resolves it to an item id when the draft is committed.
    pub supersedes: Option<String>,
}

/// An item as stored: fields plus the identity and bookkeeping the store assigns.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRecord {
    /// Store-assigned id, stable for the item's life (updates keep it).
    pub id: u64,
    /// When the store committed this version of the item (UTC ms).
    pub ingest_time_ms: i64,
    /// The memory's fields.
    pub fields: ItemFields,
    /// Item id of the earlier item this one supersedes.
    pub supersedes: Option<u64>,
    /// Blob ids this item owns (photo original, attachments); deleted with the item.
    pub blobs: Vec<u64>,
}

/// An image item using every field of record version 2 (a photo in Madrid), for the tests of
/// this crate.
#[cfg(test)]
pub(crate) fn photo_fields() -> ItemFields {
    let mut f = ItemFields::new(
        Source::Image,
        EventTime {
            unix_ms: 1_428_689_543_000,
            offset_minutes: 120,
        },
    );
    f.external_id = Some("sha256:ab".into());
    f.location = Some(Location {
        name: Some("Madrid, Spain".into()),
        geo: Some(GeoPoint {
            lat: 40.446_972_222_222_22,
            lon: -3.724_752_777_777_778,
        }),
        place: Some(PlaceName {
            city: "Madrid".into(),
            locality: Some("Vallehermoso".into()),
            region: Some("Madrid".into()),
            country: Some("Spain".into()),
            country_code: Some("ES".into()),
            distance_m: Some(3_812),
            geonames_id: Some(3_117_735),
        }),
    });
    f.camera = Some(Camera {
        make: Some("Apple".into()),
        model: Some("iPhone 6".into()),
        lens: Some("iPhone 6 back camera 4.15mm f/2.2".into()),
    });
    f.orientation = Some(Orientation::Portrait);
    f.short_caption = Some("a street at dusk".into());
    f.caption_provenance = Some(CaptionProvenance {
        model: "Qwen3-VL-2B-Instruct".into(),
        at_ms: 1_760_000_000_123,
    });
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ItemRecord {
        let mut fields = ItemFields::new(
            Source::Chat,
            EventTime::parse("2023-05-08T13:56:00+02:00").unwrap(),
        );
        fields.external_id = Some("D1:3".into());
        fields.location = Some(Location {
            name: Some("Lisbon".into()),
            geo: Some(GeoPoint {
                lat: 38.72,
                lon: -9.14,
            }),
            place: None,
        });
        fields.entities = vec!["Caroline".into()];
        fields.body = Some("I went to a LGBTQ support group yesterday".into());
        fields.speaker = Some("Caroline".into());
        ItemRecord {
            id: 7,
            ingest_time_ms: 1_700_000_000_000,
            fields,
            supersedes: Some(3),
            blobs: vec![1, 2],
        }
    }

    #[test]
    fn record_round_trips() {
        let rec = sample();
        let bytes = encode_record(&rec).unwrap();
        assert_eq!(decode_record(&bytes).unwrap(), rec);
    }

    #[test]
    fn trailing_bytes_and_versions_are_rejected() {
        let mut bytes = encode_record(&sample()).unwrap();
        bytes.push(0);
        assert!(matches!(
            decode_record(&bytes),
            Err(FormatError::Invalid { .. })
        ));
        bytes.pop();
        // Version 3's body is a zstd frame: version 2's fields are not one.
        bytes[0] = RECORD_VERSION_ZSTD;
        assert!(matches!(
            decode_record(&bytes),
            Err(FormatError::Invalid { .. })
        ));
        // Version 4 needs the scope after version 2's fields: without it the record ends early.
        bytes[0] = RECORD_VERSION_SCOPED;
        assert!(matches!(
            decode_record(&bytes),
            Err(FormatError::Invalid { .. })
        ));
        bytes[0] = 6;
        assert!(matches!(
            decode_record(&bytes),
            Err(FormatError::UnsupportedVersion { found: 6, .. })
        ));
        bytes[0] = 0;
        assert!(matches!(
            decode_record(&bytes),
            Err(FormatError::UnsupportedVersion { found: 0, .. })
        ));
    }

    /// A record using every field of version 2.
    fn photo_sample() -> ItemRecord {
        let mut rec = sample();
        rec.fields = photo_fields();
        rec.fields.caption = Some("A street in Madrid at dusk, cars parked on both sides.".into());
        rec
    }

    #[test]
    fn version_2_fields_round_trip() {
        let rec = photo_sample();
        let bytes = encode_record(&rec).unwrap();
        assert_eq!(bytes[0], RECORD_VERSION);
        assert_eq!(decode_record(&bytes).unwrap(), rec);
        // A location that is only a place is kept (no name, no position).
        let mut only_place = rec.clone();
        if let Some(l) = &mut only_place.fields.location {
            l.geo = None;
        }
        let bytes = encode_record(&only_place).unwrap();
        assert_eq!(decode_record(&bytes).unwrap(), only_place);
    }

    #[test]
    fn a_version_1_record_reads_with_the_new_fields_empty() {
        // Version 1 is the version-2 record of an item without the new fields, cut after field
        // 19 (which ends with the blob list): five bytes of empty tail (four `None`s and
        // orientation 0).
        let rec = sample();
        let v2 = encode_record(&rec).unwrap();
        assert_eq!(&v2[v2.len() - 5..], &[0, 0, 0, 0, 0]);
        let mut v1 = v2[..v2.len() - 5].to_vec();
        v1[0] = RECORD_VERSION_1;
        assert_eq!(decode_record(&v1).unwrap(), rec);
        // A version-1 record followed by a tail is not version 1.
        let mut long = v2.clone();
        long[0] = RECORD_VERSION_1;
        assert!(matches!(
            decode_record(&long),
            Err(FormatError::Invalid { .. })
        ));
    }

    #[test]
    fn bad_version_2_values_are_rejected() {
        let bytes = encode_record(&photo_sample()).unwrap();
        // The orientation byte is the one before the short caption's `Some` (1) and length.
        let short = b"a street at dusk";
        let at = bytes.windows(short.len()).position(|w| w == short).unwrap();
        assert_eq!(bytes[at - 3], Orientation::Portrait.code());
        for bad in [4u8, 200] {
            let mut b = bytes.clone();
            b[at - 3] = bad;
            assert!(matches!(
                decode_record(&b),
                Err(FormatError::Invalid { .. })
            ));
        }
        type Breaks = fn(&mut ItemFields);
        let broken: [(&str, Breaks); 6] = [
            ("empty city", |f| {
                f.location.as_mut().unwrap().place.as_mut().unwrap().city = " ".into();
            }),
            ("country code", |f| {
                f.location
                    .as_mut()
                    .unwrap()
                    .place
                    .as_mut()
                    .unwrap()
                    .country_code = Some("es".into());
            }),
            ("empty region", |f| {
                f.location.as_mut().unwrap().place.as_mut().unwrap().region = Some(String::new());
            }),
            ("empty camera", |f| f.camera = Some(Camera::default())),
            ("empty lens", |f| {
                f.camera.as_mut().unwrap().lens = Some(String::new())
            }),
            ("caption model", |f| {
                f.caption_provenance.as_mut().unwrap().model = String::new();
            }),
        ];
        for (what, breaks) in broken {
            let mut rec = photo_sample();
            breaks(&mut rec.fields);
            assert!(rec.fields.validate().is_err(), "{what}");
        }
        let mut rec = photo_sample();
        rec.fields.caption_provenance.as_mut().unwrap().at_ms = i64::MAX;
        assert!(rec.fields.validate().is_err());
    }

    #[test]
    fn labels_read_as_people_write_places_and_cameras() {
        let rec = photo_sample();
        let place = rec.fields.location.unwrap().place.unwrap();
        assert_eq!(place.label(), "Madrid, Spain");
        assert_eq!(place.short_label(), "Madrid, Spain");
        let paris = PlaceName {
            city: "Paris".into(),
            region: Some("Île-de-France".into()),
            country: Some("France".into()),
            ..PlaceName::default()
        };
        assert_eq!(paris.label(), "Paris, Île-de-France, France");
        assert_eq!(paris.short_label(), "Paris, France");
        let camera = |make: Option<&str>, model: Option<&str>| Camera {
            make: make.map(Into::into),
            model: model.map(Into::into),
            lens: None,
        };
        assert_eq!(
            camera(Some("FUJIFILM"), Some("FinePixS2Pro")).label(),
            "FUJIFILM FinePixS2Pro"
        );
        assert_eq!(
            camera(Some("Canon"), Some("Canon EOS 40D")).label(),
            "Canon EOS 40D"
        );
        assert_eq!(camera(None, Some("R7plusf")).label(), "R7plusf");
        assert_eq!(camera(None, None).label(), "");
        assert_eq!(Orientation::of(4, 3), Orientation::Landscape);
        assert_eq!(Orientation::of(3, 4), Orientation::Portrait);
        assert_eq!(Orientation::of(5, 5), Orientation::Square);
        assert_eq!("Portrait".parse::<Orientation>(), Ok(Orientation::Portrait));
        assert!("upside down".parse::<Orientation>().is_err());
    }

    #[test]
    fn frame_detects_a_flipped_bit_anywhere() {
        let rec = encode_record(&sample()).unwrap();
        let mut framed = Vec::new();
        put_framed(&mut framed, &rec).unwrap();
        assert_eq!(read_framed(&framed).unwrap(), &rec[..]);
        for bit in 0..framed.len() * 8 {
            let mut bad = framed.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            match read_framed(&bad) {
                Err(_) => {}
                Ok(r) => panic!("bit {bit} flip not detected, got {} bytes", r.len()),
            }
        }
    }

    #[test]
    fn event_time_parses_offsets_and_dates() {
        let t = EventTime::parse("2023-05-08T13:56:00+02:00").unwrap();
        assert_eq!(t.offset_minutes, 120);
        assert_eq!(t.unix_ms, 1_683_546_960_000);
        assert_eq!(t.to_rfc3339(), "2023-05-08T13:56:00+02:00");
        assert_eq!(
            EventTime::parse("2023-05-08T11:56:00Z").unwrap().unix_ms,
            t.unix_ms
        );
        assert_eq!(
            EventTime::parse("2023-05-08").unwrap().unix_ms,
            1_683_504_000_000
        );
        assert_eq!(
            EventTime::parse("2001-01-01T00:00:00-05:30")
                .unwrap()
                .to_rfc3339(),
            "2001-01-01T00:00:00-05:30"
        );
        for bad in [
            "",
            "2023-05-08T13:56:00",
            "2023-05-08T13:56:00+2:00",
            "2023-13-08",
            "nonsense+00:00",
            "2023-05-08T13:56:00+19:00",
        ] {
            assert!(EventTime::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fuzz_regression_offset_i16_min_is_rejected_not_a_panic() {
        // Found by the item_record fuzz target: time_offset_minutes = i16::MIN made `abs()`
        // overflow. It must be a typed error.
        let bytes = [
            1, 0, 0, 0, 5, 1, 251, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert!(matches!(
            decode_record(&bytes),
            Err(FormatError::Invalid { .. })
        ));
        let time = EventTime {
            unix_ms: 0,
            offset_minutes: i16::MIN,
        };
        assert!(time.validate().is_err());
    }

    #[test]
    fn undated_items_round_trip_and_have_no_day() {
        let mut fields = ItemFields::new(Source::Image, EventTime::UNDATED);
        fields.validate().unwrap();
        assert!(fields.time.is_undated());
        assert_eq!(fields.time.local_date(), None);
        assert_eq!(fields.time.to_string(), "undated");
        let record = ItemRecord {
            id: 9,
            ingest_time_ms: 1,
            fields: fields.clone(),
            supersedes: None,
            blobs: Vec::new(),
        };
        assert_eq!(
            decode_record(&encode_record(&record).unwrap()).unwrap(),
            record
        );
        // Only offset 0 is undated; i64::MIN with an offset is out of range.
        fields.time.offset_minutes = 60;
        assert!(fields.validate().is_err());
    }

    #[test]
    fn the_local_day_is_the_instant_plus_its_own_offset() {
        // 19:36 at UTC−7 on 14 May 2001 is 02:36 UTC on the 15th: its day is the 14th.
        let t = EventTime::parse("2001-05-14T19:36:00-07:00").unwrap();
        assert_eq!(t.local_date().unwrap().to_string(), "2001-05-14");
        let t = EventTime::parse("2001-05-15T00:30:00+09:00").unwrap();
        assert_eq!(t.local_date().unwrap().to_string(), "2001-05-15");
        let t = EventTime::parse("1969-12-31T23:59:59Z").unwrap();
        assert_eq!(t.local_date().unwrap().to_string(), "1969-12-31");
    }

    /// An e-mail of `paragraphs` paragraphs of ordinary prose.
    fn mail_sample(paragraphs: usize) -> ItemRecord {
        let mut rec = sample();
        rec.fields.source = Source::Email;
        rec.fields.from = Some("Phillip K Allen <phillip.allen@enron.com>".into());
        rec.fields.to = vec!["Tim Belden <tim.belden@enron.com>".into()];
        rec.fields.summary = Some("Re: gas trading desk meeting".into());
        rec.fields.body = Some(
            (0..paragraphs)
                .map(|i| {
                    format!(
                        "Paragraph {i}: the west desk meets on Thursday at 10 to go over the \
                         forward curves, the storage position and the basis spreads for next \
                         month. Please send your numbers by Wednesday night."
                    )
                })
                .collect::<Vec<_>>()
                .join("\n\n"),
        );
        rec
    }

    #[test]
    fn long_fields_are_compressed_and_read_back() {
        let rec = mail_sample(8);
        let plain_len = {
            // The version-2 encoding, for comparison: the fields are what compression takes.
            let short = mail_sample(0);
            encode_record(&short).unwrap().len()
        };
        let bytes = encode_record(&rec).unwrap();
        assert_eq!(bytes[0], RECORD_VERSION_ZSTD);
        assert_eq!(
            &bytes[1..5],
            &[0x28, 0xB5, 0x2F, 0xFD],
            "a zstd frame's magic"
        );
        let body_len = rec.fields.body.as_ref().unwrap().len();
        assert!(
            bytes.len() < (plain_len + body_len) / 2,
            "{} bytes for {} of fields",
            bytes.len(),
            plain_len + body_len
        );
        assert_eq!(decode_record(&bytes).unwrap(), rec);
        // Short fields stay version 2: nothing to gain.
        let short = encode_record(&sample()).unwrap();
        assert!(short.len() < COMPRESS_MIN_BYTES);
        assert_eq!(short[0], RECORD_VERSION);
    }

    #[test]
    fn fields_that_compression_does_not_shrink_are_stored_as_they_are() {
        // Bytes with no repeats (a xorshift stream): zstd saves nothing, the record stays
        // version 2.
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let noise: Vec<u8> = (0..2000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        assert_eq!(compress_fields(&noise, RECORD_VERSION_ZSTD).unwrap(), None);
        let mut rec = sample();
        rec.blobs = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        let bytes = encode_record(&rec).unwrap();
        assert!(bytes.len() > COMPRESS_MIN_BYTES);
        assert_eq!(bytes[0], RECORD_VERSION);
        assert_eq!(decode_record(&bytes).unwrap(), rec);
    }

    #[test]
    fn bad_zstd_frames_are_typed_errors() {
        let rec = mail_sample(8);
        let good = encode_record(&rec).unwrap();
        assert_eq!(good[0], RECORD_VERSION_ZSTD);
        let invalid =
            |bytes: &[u8]| matches!(decode_record(bytes), Err(FormatError::Invalid { .. }));
        // Bytes after the frame.
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(invalid(&trailing));
        // The frame cut short, and one with a flipped byte in its blocks.
        assert!(invalid(&good[..good.len() - 3]));
        assert!(invalid(&good[..1]));
        let mut flipped = good.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0x55;
        assert!(invalid(&flipped) || decode_record(&flipped).is_ok_and(|r| r != rec));
        // A frame that does not declare its size.
        let fields = &encode_record(&mail_sample(0)).unwrap()[1..];
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
            .unwrap();
        let mut undeclared = vec![RECORD_VERSION_ZSTD];
        undeclared.extend(c.compress(fields).unwrap());
        assert!(invalid(&undeclared));
        // A frame that declares more than a record may hold is refused before any allocation.
        let mut huge = vec![RECORD_VERSION_ZSTD];
        huge.extend(zstd::bulk::compress(&vec![0u8; MAX_RECORD_BYTES + 1], 1).unwrap());
        match decode_record(&huge) {
            Err(FormatError::Invalid { reason, .. }) => {
                assert!(reason.contains("more than the"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        // Two frames, the second the record again: one frame per record.
        let mut two = good.clone();
        two.extend_from_slice(&good[1..]);
        assert!(invalid(&two));
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = decode_record(&bytes);
            let _ = read_framed(&bytes);
        }
    }
}
