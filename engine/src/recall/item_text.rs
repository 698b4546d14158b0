//! The text of an item that the encoder embeds and BM25 indexes ([`item_text`]), in one of two
//! styles ([`ItemTextStyle`], the store's choice).
//!
//! **SGM** (the default), by source:
//! - photos and videos: the Schema-Guided Memory record as ATM-Bench renders it for its
//!   retriever, one field after another — `Type: image; Timestamp: Saturday 24 August 2002,
//!   13:59, afternoon, summer 2002; Location: Paris 16 Passy, Paris, Île-de-France, France;
//!   Camera: FUJIFILM FinePixS2Pro; Orientation: landscape; Tags: photo` — so a photo is found
//!   by its place, its time in words, its camera and what a captioner said of it. Tags the
//!   importers add for their own bookkeeping (`file:`, `time:`, `camera:`, `image:`,
//!   `duration:`) and the gate's decision (`gate:`) are left out (a video's duration is a field
//!   of its own);
//! - messages (chat turns, e-mails, notes): their fields in a fixed order,
//!   `[8 May 2023] Caroline: summary body [image: caption] ocr`, the form the LoCoMo figures
//!   were measured on (unchanged since recipe 1).
//!
//! **Descriptive**: the same information as a paragraph, the "Descriptive Memory" most memory
//! systems store and ATM-Bench compares SGM with — `On Saturday 24 August 2002 at 13:59, in the
//! afternoon, in summer 2002, at Paris 16 Passy, Paris, Île-de-France, France, I took a photo
//! with a FUJIFILM FinePixS2Pro, in landscape orientation. It is tagged photo.`
//!
//! Invariant: the text of an item depends on its fields and the style only. The recipe has a
//! version ([`ITEM_TEXT_VERSION`]); the store's `item_text` setting ([`Recipe`]) names the
//! version and style its item vectors were made from, and vectors made from another recipe are
//! made again for the sources whose text changed ([`changed_sources`]) by the embed stage.

use std::fmt::Write as _;

use jiff::civil::Weekday;
use memdb_formats::item::{ItemFields, ItemRecord, MONTH_NAMES, Source};

/// Version of the item-text recipe: 1 rendered every source as messages are today; 2 renders
/// images as SGM fields; 3 renders videos as SGM fields too and adds the descriptive style; 4
/// adds a photo's or video's file and folder names, in words.
pub(crate) const ITEM_TEXT_VERSION: u32 = 4;

/// Setting (`settings` table, SPEC.md §5) naming the recipe the item vectors were made from
/// and the store's style: [`Recipe`].
pub(crate) const ITEM_TEXT_SETTING: &str = "item_text";

/// How an item's text is written for the encoder and BM25: the store's choice, set with
/// [`Store::set_item_text_style`](crate::Store::set_item_text_style) (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ItemTextStyle {
    /// Schema-Guided Memory: media as `Name: value` fields, messages as dated fields.
    #[default]
    Sgm,
    /// A natural-language paragraph with the same information.
    Descriptive,
}

impl ItemTextStyle {
    /// Both styles.
    pub const ALL: [ItemTextStyle; 2] = [ItemTextStyle::Sgm, ItemTextStyle::Descriptive];

    /// `sgm` or `descriptive`: its name in the CLI, the setting and reports.
    pub fn name(self) -> &'static str {
        match self {
            ItemTextStyle::Sgm => "sgm",
            ItemTextStyle::Descriptive => "descriptive",
        }
    }

    /// The style named `name` (as [`name`](ItemTextStyle::name) writes it).
    pub fn from_name(name: &str) -> Option<ItemTextStyle> {
        ItemTextStyle::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What the `item_text` setting holds: the recipe version and style the item vectors were made
/// from, written `3` (SGM) or `3:descriptive`. Absent means version 1, SGM (a store made
/// before the setting); a value this build cannot read is taken as version 1 too, so the
/// vectors are made again — never wrong, only slower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recipe {
    pub(crate) version: u32,
    pub(crate) style: ItemTextStyle,
}

impl Recipe {
    /// This build's recipe in `style`.
    pub(crate) fn current(style: ItemTextStyle) -> Recipe {
        Recipe {
            version: ITEM_TEXT_VERSION,
            style,
        }
    }

    /// The recipe a setting value names (see the type's doc).
    pub(crate) fn from_setting(value: Option<&str>) -> Recipe {
        let oldest = Recipe {
            version: 1,
            style: ItemTextStyle::Sgm,
        };
        let Some(value) = value else {
            return oldest;
        };
        let (version, style) = match value.split_once(':') {
            Some((version, style)) => (version, ItemTextStyle::from_name(style)),
            None => (value, Some(ItemTextStyle::Sgm)),
        };
        match (version.parse::<u32>(), style) {
            (Ok(version), Some(style)) => Recipe { version, style },
            _ => oldest,
        }
    }

    /// The setting value naming this recipe.
    pub(crate) fn setting(self) -> String {
        match self.style {
            ItemTextStyle::Sgm => self.version.to_string(),
            style => format!("{}:{}", self.version, style.name()),
        }
    }
}

/// Serialises the changes of a store's recipe with the embeds that make vectors in it (a
/// store extension): an embed reads the style, then commits vectors window by window, and a
/// switch in between would leave vectors of the old style recorded as the new one.
#[derive(Default)]
pub(crate) struct RecipeLock(std::sync::Mutex<()>);

impl RecipeLock {
    /// Holds the lock until the guard drops.
    pub(crate) fn hold(&self) -> crate::error::Result<std::sync::MutexGuard<'_, ()>> {
        Ok(self.0.lock().map_err(|_| {
            crate::error::StoreError::WriterPoisoned("an embed or item-text switch panicked".into())
        })?)
    }
}

/// The sources whose text differs between recipes `from` and `to`. A version newer than this
/// build's (a store a newer memdb wrote) changed what this build cannot know: every source.
pub(crate) fn changed_sources(from: Recipe, to: Recipe) -> Vec<Source> {
    if from.style != to.style || from.version.max(to.version) > ITEM_TEXT_VERSION {
        return Source::ALL.to_vec();
    }
    let (low, high) = (from.version.min(to.version), from.version.max(to.version));
    // The versions that changed each source's text, SGM style (the descriptive style came
    // with version 3; version 4 added file and folder names to both styles' media).
    let changed_at = |source: Source| -> &'static [u32] {
        match source {
            Source::Image => &[2, 4],
            Source::Video => &[3, 4],
            _ => &[1],
        }
    };
    Source::ALL
        .into_iter()
        .filter(|s| changed_at(*s).iter().any(|v| (low + 1..=high).contains(v)))
        .collect()
}

/// Tag prefixes the importers write for their own bookkeeping, not as what a photo is about.
const INTERNAL_TAGS: [&str; 7] = [
    "file:",
    "folder:",
    "time:",
    "camera:",
    "image:",
    "duration:",
    "gate:",
];

/// The file and folder names an importer tagged (`file:`, `folder:`) in words: the extension
/// left out, `-`, `_` and `.` read as spaces ("handwritten-notes.jpg" is "handwritten notes").
fn file_words(f: &ItemFields) -> (Option<String>, Option<String>) {
    let words = |name: &str| {
        name.split(['-', '_', '.', ' '])
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let tagged = |prefix: &str| {
        f.tags
            .iter()
            .find_map(|t| t.strip_prefix(prefix))
            .filter(|n| !n.is_empty())
    };
    let file = tagged("file:").map(|name| {
        let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
        words(stem)
    });
    let folder = tagged("folder:").map(words);
    (
        file.filter(|w| !w.is_empty()),
        folder.filter(|w| !w.is_empty()),
    )
}

/// The text of an item that recall ranks, in the default style (SGM): for photos and videos
/// their SGM fields one after another; for messages date, who, and their text fields, the form
/// the LoCoMo benchmark measures (see the module doc).
pub fn item_text(item: &ItemRecord) -> String {
    item_text_in(item, ItemTextStyle::Sgm)
}

/// The text of an item in `style`.
pub fn item_text_in(item: &ItemRecord, style: ItemTextStyle) -> String {
    let f = &item.fields;
    match (style, f.source) {
        (ItemTextStyle::Descriptive, _) => descriptive_text(f),
        (ItemTextStyle::Sgm, Source::Image | Source::Video) => media_text(f),
        (ItemTextStyle::Sgm, _) => message_text(f),
    }
}

/// A message as `[date] who: summary body [image: caption] ocr` (recipe 1).
fn message_text(f: &ItemFields) -> String {
    let who = f
        .speaker
        .as_deref()
        .or(f.from.as_deref())
        .map(|w| format!(" {w}:"))
        .unwrap_or_default();
    // An undated item has no date to show (never a guessed one).
    let mut text = match memdb_text::display_date(f.time) {
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

/// The names of an item's place, most particular first: a name of its own, the place's
/// locality, the place's label ("Paris 16 Passy, Paris, Île-de-France, France").
fn location_names(f: &ItemFields) -> Option<String> {
    let location = f.location.as_ref()?;
    let mut names: Vec<String> = Vec::new();
    let label = location.place.as_ref().map(|p| p.label());
    // A name of the item's own comes first; one the place stage wrote is the label again.
    names.extend(location.name.clone().filter(|n| Some(n) != label.as_ref()));
    if let Some(place) = &location.place {
        names.extend(place.locality.clone());
    }
    names.extend(label);
    (!names.is_empty()).then(|| names.join(", "))
}

/// Its camera's make and model; a photo stored before the camera was a field of its own has it
/// as a `camera:` tag.
fn camera_name(f: &ItemFields) -> Option<String> {
    f.camera
        .as_ref()
        .map(|c| c.label())
        .filter(|c| !c.is_empty())
        .or_else(|| {
            f.tags
                .iter()
                .find_map(|t| t.strip_prefix("camera:").map(str::to_owned))
        })
}

/// A video's length as its importer tagged it (`duration:0:42`).
fn duration(f: &ItemFields) -> Option<&str> {
    f.tags.iter().find_map(|t| t.strip_prefix("duration:"))
}

/// Its tags without the importers' bookkeeping ones.
fn topic_tags(f: &ItemFields) -> Vec<&str> {
    f.tags
        .iter()
        .map(String::as_str)
        .filter(|t| !INTERNAL_TAGS.iter().any(|p| t.starts_with(p)))
        .collect()
}

/// A photo or video as ATM-Bench's SGM text: `Name: value` fields joined by `; `, absent ones
/// left out.
fn media_text(f: &ItemFields) -> String {
    let mut fields: Vec<(&str, String)> = vec![("Type", f.source.name().to_owned())];
    if let Some(when) = When::of(f) {
        fields.push(("Timestamp", when.sgm()));
    }
    fields.extend(location_names(f).map(|l| ("Location", l)));
    fields.extend(camera_name(f).map(|c| ("Camera", c)));
    fields.extend(
        f.camera
            .as_ref()
            .and_then(|c| c.lens.clone())
            .map(|l| ("Lens", l)),
    );
    fields.extend(f.orientation.map(|o| ("Orientation", o.name().to_owned())));
    fields.extend(duration(f).map(|d| ("Duration", d.to_owned())));
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
    let (file, folder) = file_words(f);
    fields.extend(file.map(|w| ("File", w)));
    fields.extend(folder.map(|w| ("Folder", w)));
    let tags = topic_tags(f);
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

/// An item as a paragraph: when, where, who did what, then what it shows or says — the same
/// fields as the SGM text (tags without the bookkeeping ones), in sentences.
fn descriptive_text(f: &ItemFields) -> String {
    let mut opening: Vec<String> = Vec::new();
    if let Some(when) = When::of(f) {
        opening.push(when.descriptive());
    }
    if let Some(place) = location_names(f) {
        opening.push(format!("at {place}"));
    }
    let camera = camera_name(f).map(|c| {
        let lens = f.camera.as_ref().and_then(|c| c.lens.as_deref());
        match lens {
            Some(lens) => format!(" with a {c} ({lens} lens)"),
            None => format!(" with a {c}"),
        }
    });
    let framing = f
        .orientation
        .map(|o| format!(", in {} orientation", o.name()))
        .unwrap_or_default();
    // Who said or wrote it, as the SGM text names them (the speaker, else the sender).
    let who = f.speaker.as_deref().or(f.from.as_deref());
    let someone = who.unwrap_or("someone");
    let act = match f.source {
        Source::Image => format!("I took a photo{}{framing}", camera.unwrap_or_default()),
        Source::Video => {
            let length = duration(f)
                .map(|d| format!(" lasting {d}"))
                .unwrap_or_default();
            format!(
                "I recorded a video{length}{}{framing}",
                camera.unwrap_or_default()
            )
        }
        Source::Email => {
            let to = if f.to.is_empty() {
                String::new()
            } else {
                format!(" to {}", f.to.join(", "))
            };
            format!("{someone} wrote an e-mail{to}")
        }
        Source::Chat => format!("{someone} said"),
        Source::Note => format!("{} wrote a note", who.unwrap_or("I")),
    };
    opening.push(act);
    let mut text = capitalised(&opening.join(", "));
    let mut sentences: Vec<String> = Vec::new();
    let chat = f.source == Source::Chat;
    match (&f.body, chat) {
        // What was said follows "said:" as it was written.
        (Some(body), true) => {
            text.push_str(": ");
            text.push_str(body);
        }
        _ => text.push('.'),
    }
    let summary_lead = if chat { "In short:" } else { "It is about" };
    sentences.extend(
        f.summary
            .as_ref()
            .map(|s| format!("{summary_lead} {}", full_stop(s))),
    );
    if !chat {
        sentences.extend(f.body.as_ref().map(|b| full_stop(b)));
    }
    sentences.extend(
        f.short_caption
            .as_ref()
            .map(|c| format!("It shows {}", full_stop(c))),
    );
    sentences.extend(f.caption.as_ref().map(|c| match f.source {
        Source::Image | Source::Video => full_stop(c),
        _ => format!("It comes with an image: {}", full_stop(c)),
    }));
    sentences.extend(
        f.ocr
            .as_ref()
            .map(|o| format!("The text in it reads: {}", full_stop(o))),
    );
    if !f.entities.is_empty() {
        sentences.push(format!("It involves {}.", f.entities.join(", ")));
    }
    match file_words(f) {
        (Some(file), Some(folder)) => {
            sentences.push(format!(
                "Its file is called {file}, in the folder {folder}."
            ));
        }
        (Some(file), None) => sentences.push(format!("Its file is called {file}.")),
        (None, Some(folder)) => sentences.push(format!("It is in the folder {folder}.")),
        (None, None) => {}
    }
    let tags = topic_tags(f);
    if !tags.is_empty() {
        sentences.push(format!("It is tagged {}.", tags.join(", ")));
    }
    for sentence in sentences {
        text.push(' ');
        text.push_str(&sentence);
    }
    text
}

/// `text` ending with a full stop (or the question or exclamation mark it has).
fn full_stop(text: &str) -> String {
    let trimmed = text.trim_end();
    if trimmed.ends_with(['.', '!', '?', '…']) {
        trimmed.to_owned()
    } else {
        format!("{trimmed}.")
    }
}

/// An item's local time in words: its day, time, part of the day and season (by the
/// hemisphere of the item's position, northern when it has none).
struct When {
    weekday: &'static str,
    day: i8,
    month: String,
    year: i16,
    hour: i8,
    minute: i8,
    part_of_day: &'static str,
    season: &'static str,
}

impl When {
    /// `None` when undated.
    fn of(f: &ItemFields) -> Option<When> {
        let local_ms = f.time.local_ms()?;
        let local =
            jiff::tz::Offset::UTC.to_datetime(jiff::Timestamp::from_millisecond(local_ms).ok()?);
        let month = usize::try_from(local.month() - 1).ok()?;
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
        Some(When {
            weekday,
            day: local.day(),
            month: capitalised(MONTH_NAMES.get(month)?),
            year: local.year(),
            hour: local.hour(),
            minute: local.minute(),
            part_of_day: part_of_day(local.hour()),
            season: season(local.month(), southern),
        })
    }

    /// "Saturday 24 August 2002, 13:59, afternoon, summer 2002".
    fn sgm(&self) -> String {
        format!(
            "{} {} {} {year}, {:02}:{:02}, {}, {} {year}",
            self.weekday,
            self.day,
            self.month,
            self.hour,
            self.minute,
            self.part_of_day,
            self.season,
            year = self.year,
        )
    }

    /// "on Saturday 24 August 2002 at 13:59, in the afternoon, in summer 2002".
    fn descriptive(&self) -> String {
        let part = match self.part_of_day {
            "night" => "at night".to_owned(),
            part => format!("in the {part}"),
        };
        format!(
            "on {} {} {} {year} at {:02}:{:02}, {part}, in {} {year}",
            self.weekday,
            self.day,
            self.month,
            self.hour,
            self.minute,
            self.season,
            year = self.year,
        )
    }
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
        let mut f = memdb_formats::fixtures::eiffel_photo();
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
             FinePixS2Pro; Orientation: landscape; File: FujiFilm FinePixS2Pro; Tags: photo, travel"
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
             Camera: Canon Canon EOS 40D; File: Canon 40D; Tags: photo"
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
    }

    #[test]
    fn recipes_name_the_sources_whose_text_changed() {
        let sgm = |version| Recipe {
            version,
            style: ItemTextStyle::Sgm,
        };
        let now = Recipe::current(ItemTextStyle::Sgm);
        assert_eq!(changed_sources(sgm(1), now), [Source::Image, Source::Video]);
        assert_eq!(changed_sources(sgm(2), sgm(3)), [Source::Video]);
        assert_eq!(changed_sources(sgm(3), now), [Source::Image, Source::Video]);
        assert!(changed_sources(now, now).is_empty());
        // Another style changes every source's text.
        let descriptive = Recipe::current(ItemTextStyle::Descriptive);
        assert_eq!(changed_sources(now, descriptive), Source::ALL);
        assert_eq!(changed_sources(sgm(1), descriptive), Source::ALL);
        // A recipe from a newer build: this one cannot know what changed.
        assert_eq!(
            changed_sources(sgm(ITEM_TEXT_VERSION + 1), now),
            Source::ALL
        );
        // The setting's values, both ways; what this build cannot read is the oldest recipe.
        for recipe in [sgm(1), sgm(2), now, descriptive] {
            assert_eq!(Recipe::from_setting(Some(&recipe.setting())), recipe);
        }
        assert_eq!(
            descriptive.setting(),
            format!("{ITEM_TEXT_VERSION}:descriptive")
        );
        assert_eq!(Recipe::from_setting(Some("2")), sgm(2));
        for unreadable in [None, Some(""), Some("x"), Some("3:poetic"), Some(":sgm")] {
            assert_eq!(Recipe::from_setting(unreadable), sgm(1), "{unreadable:?}");
        }
    }

    #[test]
    fn a_video_reads_as_its_sgm_fields_with_its_duration() {
        let mut f = ItemFields::new(
            Source::Video,
            EventTime::parse("2021-07-03T18:30:00+01:00").unwrap(),
        );
        f.camera = Some(memdb_formats::item::Camera {
            make: None,
            model: Some("Pixel 6".into()),
            lens: None,
        });
        f.caption = Some("Waves on a beach".into());
        f.tags = vec![
            "duration:0:42".into(),
            "file:20210703_183000.mp4".into(),
            "sea".into(),
        ];
        assert_eq!(
            item_text(&record(f.clone())),
            "Type: video; Timestamp: Saturday 3 July 2021, 18:30, evening, summer 2021; \
             Camera: Pixel 6; Duration: 0:42; Caption: Waves on a beach; File: 20210703 183000; Tags: sea"
        );
        assert_eq!(
            item_text_in(&record(f), ItemTextStyle::Descriptive),
            "On Saturday 3 July 2021 at 18:30, in the evening, in summer 2021, I recorded a \
             video lasting 0:42 with a Pixel 6. Waves on a beach. Its file is called 20210703 183000. It is tagged sea."
        );
    }

    #[test]
    fn the_descriptive_style_says_the_same_in_sentences() {
        let mut photo = memdb_formats::fixtures::eiffel_photo();
        photo.location.as_mut().unwrap().name = Some("Tour Eiffel".into());
        photo.camera.as_mut().unwrap().lens = Some("28mm".into());
        photo.short_caption = Some("the tower".into());
        photo.caption = Some("The Eiffel Tower from the Trocadéro".into());
        photo.ocr = Some("SORTIE".into());
        photo.entities = vec!["Eiffel Tower".into()];
        photo.tags = vec!["photo".into(), "time:gps".into()];
        assert_eq!(
            item_text_in(&record(photo), ItemTextStyle::Descriptive),
            "On Saturday 24 August 2002 at 13:59, in the afternoon, in summer 2002, at Tour \
             Eiffel, Paris 16 Passy, Paris, Île-de-France, France, I took a photo with a \
             FUJIFILM FinePixS2Pro (28mm lens), in landscape orientation. It shows the tower. \
             The Eiffel Tower from the Trocadéro. The text in it reads: SORTIE. It involves \
             Eiffel Tower. It is tagged photo."
        );

        let mut turn = ItemFields::new(
            Source::Chat,
            EventTime::parse("2023-05-08T22:56:00+00:00").unwrap(),
        );
        turn.speaker = Some("Caroline".into());
        turn.body = Some("I went to a support group.".into());
        turn.caption = Some("a poster".into());
        assert_eq!(
            item_text_in(&record(turn), ItemTextStyle::Descriptive),
            "On Monday 8 May 2023 at 22:56, at night, in spring 2023, Caroline said: I went to \
             a support group. It comes with an image: a poster."
        );

        let mut mail = ItemFields::new(Source::Email, EventTime::UNDATED);
        mail.from = Some("ana@example.org".into());
        mail.to = vec!["ben@example.org".into()];
        mail.summary = Some("Dinner on Friday?".into());
        mail.body = Some("Shall we try the new place".into());
        assert_eq!(
            item_text_in(&record(mail.clone()), ItemTextStyle::Descriptive),
            "Ana@example.org wrote an e-mail to ben@example.org. It is about Dinner on Friday? \
             Shall we try the new place."
        );
        // The SGM style of a message is recipe 1's.
        assert_eq!(
            item_text_in(&record(mail), ItemTextStyle::Sgm),
            "ana@example.org: Dinner on Friday? Shall we try the new place"
        );
        let mut note = ItemFields::new(Source::Note, EventTime::UNDATED);
        assert_eq!(
            item_text_in(&record(note.clone()), ItemTextStyle::Descriptive),
            "I wrote a note."
        );
        // A memory `remember` wrote names its speaker, as the SGM text does.
        note.speaker = Some("Caroline".into());
        note.body = Some("Caroline moved to Lisbon".into());
        assert_eq!(
            item_text_in(&record(note.clone()), ItemTextStyle::Descriptive),
            "Caroline wrote a note. Caroline moved to Lisbon."
        );
        assert_eq!(
            item_text_in(&record(note), ItemTextStyle::Sgm),
            "Caroline: Caroline moved to Lisbon"
        );
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
