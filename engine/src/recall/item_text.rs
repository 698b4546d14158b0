//! The text of an item that the encoder embeds and BM25 indexes ([`item_text`]).
//!
//! Two recipes, by source:
//! - every source but images: `[8 May 2023] Caroline: summary body [image: caption] ocr`, the
//!   form the LoCoMo figures were measured on (unchanged since recipe 1);
//! - images: the SGM record as ATM-Bench renders it for its retriever, one field after another
//!   — `Type: image; Timestamp: Saturday 24 August 2002, 13:59, afternoon, summer 2002;
//!   Location: Paris 16 Passy, Paris, Île-de-France, France; Camera: FUJIFILM FinePixS2Pro;
//!   Orientation: landscape; Tags: photo` — so a photo is found by its place, its time in words,
//!   its camera and what a captioner said of it. Tags the importers add for their own
//!   bookkeeping (`file:`, `time:`, `camera:`, `image:`) and the gate's decision (`gate:`)
//!   are left out.
//!
//! Invariant: the text of an item depends on its fields only. The recipe has a version
//! ([`ITEM_TEXT_VERSION`]); vectors made with an older recipe are made again for the sources
//! whose text changed since ([`changed_sources`]), which the embed stage does by the store's
//! setting [`ITEM_TEXT_SETTING`].

use std::fmt::Write as _;

use jiff::civil::Weekday;
use memdb_formats::item::{ItemFields, ItemRecord, MONTH_NAMES, Source};

/// Version of the item-text recipe: 1 rendered every source as text does today; 2 renders
/// images as SGM fields.
pub(crate) const ITEM_TEXT_VERSION: u32 = 2;

/// Setting (`settings` table, SPEC.md §5) naming the recipe version the item vectors were made
/// from (absent: 1).
pub(crate) const ITEM_TEXT_SETTING: &str = "item_text";

/// The sources whose text changed between recipe `from` and [`ITEM_TEXT_VERSION`].
pub(crate) fn changed_sources(from: u32) -> Vec<Source> {
    if from < 2 {
        vec![Source::Image]
    } else {
        Vec::new()
    }
}

/// Tag prefixes the importers write for their own bookkeeping, not as what a photo is about.
const INTERNAL_TAGS: [&str; 5] = ["file:", "time:", "camera:", "image:", "gate:"];

/// The text of an item that recall ranks: for images, its SGM fields one after another; for
/// every other source date, who, and its text fields, the form the LoCoMo benchmark measures
/// (see the module doc).
pub fn item_text(item: &ItemRecord) -> String {
    let f = &item.fields;
    if f.source == Source::Image {
        return image_text(f);
    }
    let who = f
        .speaker
        .as_deref()
        .or(f.from.as_deref())
        .map(|w| format!(" {w}:"))
        .unwrap_or_default();
    // An undated item has no date to show (never a guessed one).
    let mut text = match crate::graph::extract::display_date(f.time) {
        Some(date) => format!("[{date}]{who}"),
        None => who.trim_start().to_owned(),
    };
    for part in [&f.summary, &f.body].into_iter().flatten() {
        text.push(' ');
        text.push_str(part);
    }
    if let Some(caption) = &f.caption {
        text.push_str(&format!(" [image: {caption}]"));
    }
    if let Some(ocr) = &f.ocr {
        text.push(' ');
        text.push_str(ocr);
    }
    text
}

/// An image as ATM-Bench's SGM text: `Name: value` fields joined by `; `, absent ones left out.
fn image_text(f: &ItemFields) -> String {
    let mut fields: Vec<(&str, String)> = vec![("Type", "image".to_owned())];
    if let Some(when) = timestamp(f) {
        fields.push(("Timestamp", when));
    }
    if let Some(location) = &f.location {
        let mut names: Vec<String> = Vec::new();
        let label = location.place.as_ref().map(|p| p.label());
        // A name of the item's own comes first; one the place stage wrote is the label again.
        names.extend(location.name.clone().filter(|n| Some(n) != label.as_ref()));
        if let Some(place) = &location.place {
            names.extend(place.locality.clone());
        }
        names.extend(label);
        if !names.is_empty() {
            fields.push(("Location", names.join(", ")));
        }
    }
    let camera = f
        .camera
        .as_ref()
        .map(|c| c.label())
        .filter(|c| !c.is_empty());
    // Photos stored before the camera was a field of its own have it as a tag.
    let camera = camera.or_else(|| {
        f.tags
            .iter()
            .find_map(|t| t.strip_prefix("camera:").map(str::to_owned))
    });
    fields.extend(camera.map(|c| ("Camera", c)));
    fields.extend(
        f.camera
            .as_ref()
            .and_then(|c| c.lens.clone())
            .map(|l| ("Lens", l)),
    );
    fields.extend(f.orientation.map(|o| ("Orientation", o.name().to_owned())));
    for (name, value) in [
        ("Short caption", &f.short_caption),
        ("Caption", &f.caption),
        ("OCR", &f.ocr),
        ("Summary", &f.summary),
        ("Body", &f.body),
    ] {
        fields.extend(value.clone().map(|v| (name, v)));
    }
    if !f.entities.is_empty() {
        fields.push(("Entities", f.entities.join(", ")));
    }
    let tags: Vec<&str> = f
        .tags
        .iter()
        .map(String::as_str)
        .filter(|t| !INTERNAL_TAGS.iter().any(|p| t.starts_with(p)))
        .collect();
    if !tags.is_empty() {
        fields.push(("Tags", tags.join(", ")));
    }
    let mut text = String::new();
    for (name, value) in fields {
        if !text.is_empty() {
            text.push_str("; ");
        }
        // Writing to a String cannot fail.
        let _ = write!(text, "{name}: {value}");
    }
    text
}

/// "Saturday 24 August 2002, 13:59, afternoon, summer 2002": the local day and time, the part
/// of the day and the season in words (by the hemisphere of the item's position, northern when
/// it has none). `None` when undated.
fn timestamp(f: &ItemFields) -> Option<String> {
    let local_ms = f.time.local_ms()?;
    let local =
        jiff::tz::Offset::UTC.to_datetime(jiff::Timestamp::from_millisecond(local_ms).ok()?);
    let month = usize::try_from(local.month() - 1).ok()?;
    let month_name = capitalised(MONTH_NAMES.get(month)?);
    let weekday = match local.weekday() {
        Weekday::Monday => "Monday",
        Weekday::Tuesday => "Tuesday",
        Weekday::Wednesday => "Wednesday",
        Weekday::Thursday => "Thursday",
        Weekday::Friday => "Friday",
        Weekday::Saturday => "Saturday",
        Weekday::Sunday => "Sunday",
    };
    let southern = f
        .location
        .as_ref()
        .and_then(|l| l.geo)
        .is_some_and(|g| g.lat < 0.0);
    Some(format!(
        "{weekday} {} {month_name} {year}, {:02}:{:02}, {}, {} {year}",
        local.day(),
        local.hour(),
        local.minute(),
        part_of_day(local.hour()),
        season(local.month(), southern),
        year = local.year(),
    ))
}

/// Morning from 5:00, afternoon from 12:00, evening from 17:00, night from 21:00.
fn part_of_day(hour: i8) -> &'static str {
    match hour {
        5..=11 => "morning",
        12..=16 => "afternoon",
        17..=20 => "evening",
        _ => "night",
    }
}

/// The meteorological season of a month: winter is December to February in the north, June to
/// August in the south. It is named with the calendar year of the day ("winter 2002" is
/// January 2002 and December 2002 alike), as a person dates a photo.
fn season(month: i8, southern: bool) -> &'static str {
    const NORTH: [&str; 4] = ["winter", "spring", "summer", "autumn"];
    let quarter = usize::try_from((month % 12) / 3).unwrap_or(0);
    if southern {
        NORTH[(quarter + 2) % 4]
    } else {
        NORTH[quarter]
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect()
}

#[cfg(test)]
mod tests {
    use memdb_formats::item::{EventTime, Location};

    use super::*;

    fn record(fields: ItemFields) -> ItemRecord {
        ItemRecord {
            id: 1,
            ingest_time_ms: 0,
            fields,
            supersedes: None,
            blobs: Vec::new(),
        }
    }

    #[test]
    fn a_photo_reads_as_its_sgm_fields() {
        let mut f = crate::fixtures::eiffel_photo();
        f.tags = vec![
            "photo".into(),
            "file:FujiFilm_FinePixS2Pro.jpg".into(),
            "time:gps".into(),
            "travel".into(),
        ];
        assert_eq!(
            item_text(&record(f.clone())),
            "Type: image; Timestamp: Saturday 24 August 2002, 13:59, afternoon, summer 2002; \
             Location: Paris 16 Passy, Paris, Île-de-France, France; Camera: FUJIFILM \
             FinePixS2Pro; Orientation: landscape; Tags: photo, travel"
        );
        // A name of its own, a caption and a lens; an undated photo has no timestamp.
        f.time = EventTime::UNDATED;
        f.location.as_mut().unwrap().name = Some("Tour Eiffel".into());
        f.camera.as_mut().unwrap().lens = Some("28mm".into());
        f.short_caption = Some("the tower".into());
        f.caption = Some("The Eiffel Tower from the Trocadéro.".into());
        f.ocr = Some("SORTIE".into());
        f.tags.clear();
        assert_eq!(
            item_text(&record(f)),
            "Type: image; Location: Tour Eiffel, Paris 16 Passy, Paris, Île-de-France, France; \
             Camera: FUJIFILM FinePixS2Pro; Lens: 28mm; Orientation: landscape; Short caption: \
             the tower; Caption: The Eiffel Tower from the Trocadéro.; OCR: SORTIE"
        );
    }

    #[test]
    fn a_photo_stored_before_cameras_were_fields_reads_its_camera_tag() {
        let mut f = ItemFields::new(
            Source::Image,
            EventTime::parse("2008-05-30T15:56:01+00:00").unwrap(),
        );
        f.tags = vec![
            "photo".into(),
            "file:Canon_40D.jpg".into(),
            "camera:Canon Canon EOS 40D".into(),
        ];
        assert_eq!(
            item_text(&record(f)),
            "Type: image; Timestamp: Friday 30 May 2008, 15:56, afternoon, spring 2008; \
             Camera: Canon Canon EOS 40D; Tags: photo"
        );
    }

    #[test]
    fn parts_of_the_day_and_seasons() {
        let words: Vec<&str> = [0, 4, 5, 11, 12, 16, 17, 20, 21, 23]
            .into_iter()
            .map(part_of_day)
            .collect();
        assert_eq!(
            words,
            [
                "night",
                "night",
                "morning",
                "morning",
                "afternoon",
                "afternoon",
                "evening",
                "evening",
                "night",
                "night"
            ]
        );
        assert_eq!(season(8, false), "summer");
        assert_eq!(season(8, true), "winter");
        assert_eq!(season(12, false), "winter");
        assert_eq!(season(12, true), "summer");
        assert_eq!(season(2, false), "winter");
        assert_eq!(season(3, false), "spring");
        assert_eq!(season(10, false), "autumn");
        assert_eq!(season(10, true), "spring");
    }

    #[test]
    fn other_sources_read_as_in_recipe_1() {
        let mut f = ItemFields::new(
            Source::Chat,
            EventTime::parse("2023-05-08T13:56:00+00:00").unwrap(),
        );
        f.speaker = Some("Caroline".into());
        f.body = Some("I went to a support group.".into());
        f.caption = Some("a poster".into());
        f.location = Some(Location {
            name: Some("Lisbon".into()),
            geo: None,
            place: None,
        });
        assert_eq!(
            item_text(&record(f)),
            "[8 May 2023] Caroline: I went to a support group. [image: a poster]"
        );
        assert_eq!(changed_sources(1), [Source::Image]);
        assert!(changed_sources(ITEM_TEXT_VERSION).is_empty());
    }

    /// A new store starts at the current recipe: its first embed keeps the vectors an
    /// application supplied (nothing in it was made from an older recipe).
    #[test]
    fn a_new_store_starts_at_the_current_recipe() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::create(dir.path().join("s"), crate::Options::default()).unwrap();
        let recipe = store
            .snapshot()
            .unwrap()
            .setting(ITEM_TEXT_SETTING)
            .unwrap();
        assert_eq!(recipe, Some(ITEM_TEXT_VERSION.to_string()));
    }
}
