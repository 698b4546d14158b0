//! ATM-Bench's files (SPEC.md §8.6): its memory files into items keyed by the benchmark's own
//! ids, and its question and prediction files for the evaluator (`memdb eval atm`).
//!
//! Memory files, each a JSON array of records (field names from the benchmark's code):
//! - `emails.json`: `{id, timestamp, short_summary, detail, subject?, sender?, location?}`, an
//!   e-mail item whose external id is `id` (`email202401010001`);
//! - `image_batch_results.json` and `video_batch_results.json`: `{image_path | video_path,
//!   timestamp, location: [lat, lon], location_name, city, caption, short_caption, ocr_text,
//!   tags, entities: [{entity, type}], model_used, processed_at, …}`, an image or video item whose
//!   external id is the file stem (`20220430_132212`).
//!
//! Members this importer does not use (`file_size`, `camera_settings`, `codec`, …) are ignored,
//! as the benchmark's own readers ignore them; members it uses are type-checked, and a record
//! with a wrong type, a missing id, an absurd coordinate or more than [`MAX_RECORD_JSON_BYTES`]
//! of JSON is reported (file and record) and skipped while the rest of the file lands. A file cut
//! short keeps every record before the cut and reports the cut. A time without a UTC offset (the
//! benchmark's are naive local times) is taken as UTC, as the photo importer does, so its local
//! day is the day written.
//!
//! Invariants (checked by the fuzz targets `atm_memory` and `atm_qa`): no input panics; every
//! draft satisfies [`ItemFields::validate`]; each record yields exactly one outcome, an item or
//! an error, in file order; duplicate ids within a file keep the first record and report the
//! others.

use std::collections::HashMap;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::jsonl::{invalid, optional_number, optional_string, string, strings};
use super::{ImportReport, Imported, Object, describe_json_error, error, wrong_type};
use crate::item::{
    CaptionProvenance, EventTime, GeoPoint, ItemDraft, ItemFields, Location, Orientation, Source,
};
use crate::{ImportError, ImportErrorKind};

/// The largest record read, as JSON text. The benchmark's records are a few kilobytes; a bigger
/// one is refused rather than stored (a 10 MB "caption" is not a memory).
pub const MAX_RECORD_JSON_BYTES: usize = 1 << 20;

/// The longest id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 200;

/// Which of the benchmark's memory files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryFile {
    /// `emails.json`.
    Emails,
    /// `image_batch_results.json`.
    Images,
    /// `video_batch_results.json`.
    Videos,
}

impl MemoryFile {
    /// Every memory file, in the order `memdb import atm` reads them.
    pub const ALL: [MemoryFile; 3] = [MemoryFile::Emails, MemoryFile::Images, MemoryFile::Videos];

    /// The file's name in the benchmark's data folder.
    pub fn file_name(self) -> &'static str {
        match self {
            MemoryFile::Emails => "emails.json",
            MemoryFile::Images => "image_batch_results.json",
            MemoryFile::Videos => "video_batch_results.json",
        }
    }

    /// The member naming a media record's file.
    fn path_field(self) -> &'static str {
        match self {
            MemoryFile::Videos => "video_path",
            _ => "image_path",
        }
    }
}

/// Parses one memory file held in memory. Never fails as a whole: a file that is not a JSON
/// array, or is cut short, is one error (after the records read before the cut).
pub fn parse(kind: MemoryFile, file: &Path, bytes: &[u8]) -> ImportReport {
    let mut report = ImportReport::default();
    let (records, cut) = array_records(bytes);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, raw) in records.iter().enumerate() {
        let number = index + 1;
        let outcome = record(kind, raw.get());
        let id = outcome
            .as_ref()
            .ok()
            .and_then(|d| d.fields.external_id.clone());
        let location = match &id {
            Some(id) => format!("record {number} ({id})"),
            None => format!("record {number}"),
        };
        match (outcome, id) {
            (Ok(draft), Some(id)) => {
                if let Some(first) = seen.get(&id) {
                    report.errors.push(error(
                        file,
                        Some(location),
                        invalid(
                            "id",
                            format!("`{id}` appears again (record {first} has it; kept that one)"),
                        ),
                    ));
                } else {
                    seen.insert(id, number);
                    report.items.push(Imported {
                        location,
                        draft,
                        original: None,
                    });
                }
            }
            (Ok(_), None) => report.errors.push(error(
                file,
                Some(location),
                ImportErrorKind::MissingField("id".to_owned()),
            )),
            (Err(kind), _) => report.errors.push(error(file, Some(location), kind)),
        }
    }
    if let Some(cut) = cut {
        let at = match records.len() {
            0 => "the file".to_owned(),
            n => format!("after record {n}"),
        };
        report
            .errors
            .push(error(file, Some(at), ImportErrorKind::Syntax(cut)));
    }
    report
}

/// The elements of a JSON array, each as its own JSON text, read one at a time so that a file
/// cut short (or broken after some records) keeps the records before the break; the second
/// value is the syntax error that ended the reading, if any.
pub(crate) fn array_records(bytes: &[u8]) -> (Vec<Box<RawValue>>, Option<String>) {
    let mut out = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let result = CollectInto(&mut out)
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    (out, result.err().map(|e| describe_json_error(&e)))
}

/// Pushes each element of a JSON array into the vector as it is read.
struct CollectInto<'v>(&'v mut Vec<Box<RawValue>>);

impl<'de> DeserializeSeed<'de> for CollectInto<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CollectInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON list of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(element) = seq.next_element::<Box<RawValue>>()? {
            self.0.push(element);
        }
        Ok(())
    }
}

/// One record of a memory file as a draft.
fn record(kind: MemoryFile, json: &str) -> Result<ItemDraft, ImportErrorKind> {
    if json.len() > MAX_RECORD_JSON_BYTES {
        return Err(ImportErrorKind::Syntax(format!(
            "record is {} bytes of JSON; at most {MAX_RECORD_JSON_BYTES} are read",
            json.len()
        )));
    }
    let object = Object::parse(json.as_bytes())?;
    if let Some(key) = object.first_duplicate() {
        return Err(invalid(key, "appears more than once".to_owned()));
    }
    let members: HashMap<String, Value> = object.0.into_iter().collect();
    let fields = match kind {
        MemoryFile::Emails => email(members)?,
        MemoryFile::Images | MemoryFile::Videos => media(kind, members)?,
    };
    fields
        .validate()
        .map_err(|reason| invalid("record", reason))?;
    Ok(ItemDraft {
        fields,
        supersedes: None,
    })
}

/// A member's value, `null` when absent.
fn take(members: &mut HashMap<String, Value>, key: &str) -> Value {
    members.remove(key).unwrap_or(Value::Null)
}

/// An optional text member; blank text is absent.
fn text(
    members: &mut HashMap<String, Value>,
    key: &str,
) -> Result<Option<String>, ImportErrorKind> {
    Ok(optional_string(key, take(members, key))?.filter(|s| !s.trim().is_empty()))
}

fn email(mut m: HashMap<String, Value>) -> Result<ItemFields, ImportErrorKind> {
    let id = benchmark_id("id", take(&mut m, "id"))?;
    let time = timestamp(take(&mut m, "timestamp"))?.unwrap_or(EventTime::UNDATED);
    let mut fields = ItemFields::new(Source::Email, time);
    fields.external_id = Some(id);
    let subject = text(&mut m, "subject")?;
    fields.summary = text(&mut m, "short_summary")?.or(subject);
    fields.body = text(&mut m, "detail")?;
    fields.from = text(&mut m, "sender")?;
    fields.location = text(&mut m, "location")?.map(|name| Location {
        name: Some(name),
        geo: None,
        place: None,
    });
    Ok(fields)
}

fn media(kind: MemoryFile, mut m: HashMap<String, Value>) -> Result<ItemFields, ImportErrorKind> {
    let path_field = kind.path_field();
    let path = match take(&mut m, path_field) {
        Value::Null => return Err(ImportErrorKind::MissingField(path_field.to_owned())),
        other => string(path_field, other)?,
    };
    // Either separator: the benchmark's paths come from the machine that made them.
    let file_name = path
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .to_owned();
    let stem = file_name
        .rsplit_once('.')
        .map_or(file_name.as_str(), |(stem, _)| stem)
        .to_owned();
    let id = benchmark_id(path_field, Value::String(stem))?;
    // The benchmark names media by capture time; a record without one has it in its name.
    let time = match timestamp(take(&mut m, "timestamp"))? {
        Some(time) => time,
        None => stem_time(&id).unwrap_or(EventTime::UNDATED),
    };
    let source = match kind {
        MemoryFile::Videos => Source::Video,
        _ => Source::Image,
    };
    let mut fields = ItemFields::new(source, time);
    fields.external_id = Some(id);
    let geo = coordinates(take(&mut m, "location"))?;
    let city = text(&mut m, "city")?;
    let mut name = text(&mut m, "location_name")?;
    if let Some(city) = city {
        name = match name {
            Some(n) if n.to_lowercase().contains(&city.to_lowercase()) => Some(n),
            Some(n) => Some(format!("{n}, {city}")),
            None => Some(city),
        };
    }
    if name.is_some() || geo.is_some() {
        fields.location = Some(Location {
            name,
            geo,
            place: None,
        });
    }
    fields.caption = text(&mut m, "caption")?;
    fields.short_caption = text(&mut m, "short_caption")?;
    fields.ocr = text(&mut m, "ocr_text")?;
    fields.entities = entities(take(&mut m, "entities"))?;
    let mut tags: Vec<String> = strings("tags", take(&mut m, "tags"))?
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .collect();
    if !file_name.is_empty() {
        tags.insert(0, format!("file:{file_name}"));
    }
    if kind == MemoryFile::Videos {
        if let Some(duration) = text(&mut m, "duration_formatted")? {
            tags.push(format!("duration:{duration}"));
        }
        let width = optional_number("width", take(&mut m, "width"))?;
        let height = optional_number("height", take(&mut m, "height"))?;
        let rotation = optional_number("rotation", take(&mut m, "rotation"))?.unwrap_or(0.0);
        if let (Some(w), Some(h)) = (width, height)
            && w >= 1.0
            && h >= 1.0
            && w <= f64::from(u32::MAX)
            && h <= f64::from(u32::MAX)
        {
            // A quarter turn shows the frame the other way up.
            let turned = (rotation.rem_euclid(180.0) - 90.0).abs() < 1.0;
            let (w, h) = if turned { (h, w) } else { (w, h) };
            fields.orientation = Some(Orientation::of(w as u32, h as u32));
        }
        if let Some(device) = text(&mut m, "device")? {
            fields.camera = Some(crate::item::Camera {
                model: Some(device),
                ..Default::default()
            });
        }
    }
    fields.tags = tags;
    let model = text(&mut m, "model_used")?;
    let at = match take(&mut m, "processed_at") {
        Value::Null => None,
        other => {
            let t = string("processed_at", other)?;
            parse_time(&t).ok()
        }
    };
    if let (Some(model), Some(at)) = (model, at)
        && !at.is_undated()
    {
        fields.caption_provenance = Some(CaptionProvenance {
            model,
            at_ms: at.unix_ms,
        });
    }
    Ok(fields)
}

/// An id: a non-empty string of at most [`MAX_ID_BYTES`] without whitespace or control
/// characters (answers quote ids, so they must survive being written in a sentence).
fn benchmark_id(field: &str, value: Value) -> Result<String, ImportErrorKind> {
    let id = match value {
        Value::Null => return Err(ImportErrorKind::MissingField(field.to_owned())),
        Value::Number(n) => n.to_string(),
        other => string(field, other)?,
    };
    if id.is_empty() {
        return Err(invalid(field, "is empty".to_owned()));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(invalid(
            field,
            format!("is {} bytes; an id has at most {MAX_ID_BYTES}", id.len()),
        ));
    }
    if id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            field,
            format!(
                "`{}` holds whitespace or a control character",
                id.escape_debug()
            ),
        ));
    }
    Ok(id)
}

/// `timestamp`: a naive local time (`2022-04-30 13:22:12`, or EXIF's `2022:04:30 13:22:12`),
/// an RFC 3339 time, a date, or `null`.
fn timestamp(value: Value) -> Result<Option<EventTime>, ImportErrorKind> {
    match value {
        Value::Null => Ok(None),
        other => {
            let text = string("timestamp", other)?;
            if text.trim().is_empty() {
                return Ok(None);
            }
            parse_time(&text)
                .map(Some)
                .map_err(|r| invalid("timestamp", r))
        }
    }
}

/// See [`timestamp`].
pub(crate) fn parse_time(text: &str) -> Result<EventTime, String> {
    let text = text.trim();
    let mut normal = text.to_owned();
    // EXIF writes the date with colons: `2022:04:30 13:22:12`.
    if text.len() >= 10
        && text.as_bytes().get(4) == Some(&b':')
        && text.as_bytes().get(7) == Some(&b':')
    {
        normal.replace_range(4..5, "-");
        normal.replace_range(7..8, "-");
    }
    // jiff would take a trailing offset or zone for a civil time and drop it: only a bare time
    // is naive, anything after the clock goes to the RFC 3339 parser.
    let b = normal.as_bytes();
    let zoned = normal.ends_with(['Z', 'z', ']'])
        || (b.len() > 16 && matches!(b[b.len() - 6], b'+' | b'-') && b[b.len() - 3] == b':');
    if !zoned && let Ok(civil) = normal.parse::<jiff::civil::DateTime>() {
        return EventTime::from_local(civil, 0);
    }
    EventTime::parse(&normal)
}

/// The time a media id (`YYYYMMDD_HHMMSS`) names, if it names one.
fn stem_time(id: &str) -> Option<EventTime> {
    let b = id.as_bytes();
    if b.len() != 15
        || b[8] != b'_'
        || !b
            .iter()
            .enumerate()
            .all(|(i, c)| i == 8 || c.is_ascii_digit())
    {
        return None;
    }
    let n = |from: usize, to: usize| id[from..to].parse::<i16>().ok();
    let civil = jiff::civil::DateTime::new(
        n(0, 4)?,
        i8::try_from(n(4, 6)?).ok()?,
        i8::try_from(n(6, 8)?).ok()?,
        i8::try_from(n(9, 11)?).ok()?,
        i8::try_from(n(11, 13)?).ok()?,
        i8::try_from(n(13, 15)?).ok()?,
        0,
    )
    .ok()?;
    EventTime::from_local(civil, 0).ok()
}

/// `location`: `[lat, lon]` in decimal degrees (an object `{lat, lon}` is taken too), or `null`.
fn coordinates(value: Value) -> Result<Option<GeoPoint>, ImportErrorKind> {
    let (lat, lon) = match value {
        Value::Null => return Ok(None),
        Value::Array(values) if values.is_empty() => return Ok(None),
        Value::Array(values) if values.len() == 2 => {
            let mut values = values.into_iter();
            let lat = values.next().unwrap_or(Value::Null);
            let lon = values.next().unwrap_or(Value::Null);
            (
                optional_number("location[0]", lat)?,
                optional_number("location[1]", lon)?,
            )
        }
        Value::Array(values) => {
            return Err(invalid(
                "location",
                format!("expected [lat, lon], found a list of {}", values.len()),
            ));
        }
        Value::Object(members) => {
            let mut members: HashMap<String, Value> = members.into_iter().collect();
            (
                optional_number("location.lat", take(&mut members, "lat"))?,
                optional_number("location.lon", take(&mut members, "lon"))?,
            )
        }
        other => return Err(wrong_type("location", "[lat, lon]", &other)),
    };
    match (lat, lon) {
        (Some(lat), Some(lon)) => {
            let geo = GeoPoint { lat, lon };
            match geo.out_of_range() {
                Some((_, why)) => Err(invalid("location", why)),
                None => Ok(Some(geo)),
            }
        }
        (None, None) => Ok(None),
        _ => Err(invalid("location", "has one coordinate of two".to_owned())),
    }
}

/// `entities`: `[{entity, type}]` (or plain strings), as their names, each once.
fn entities(value: Value) -> Result<Vec<String>, ImportErrorKind> {
    let values = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(values) => values,
        other => return Err(wrong_type("entities", "a list", &other)),
    };
    let mut out: Vec<String> = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        let field = format!("entities[{i}]");
        let name = match value {
            Value::String(s) => s,
            Value::Object(members) => {
                let mut members: HashMap<String, Value> = members.into_iter().collect();
                match take(&mut members, "entity") {
                    Value::Null => {
                        return Err(ImportErrorKind::MissingField(format!("{field}.entity")));
                    }
                    other => string(&format!("{field}.entity"), other)?,
                }
            }
            other => return Err(wrong_type(&field, "an object {entity, type}", &other)),
        };
        let name = name.trim().to_owned();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}

/// What a question asks for, which says how its answer is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuestionType {
    /// A number, date, time, amount or short fact: exact match after normalisation.
    Number,
    /// A list of items or memory ids: Jaccard overlap.
    ListRecall,
    /// Free text: an LLM judge.
    OpenEnd,
}

impl QuestionType {
    /// Every type, in report order.
    pub const ALL: [QuestionType; 3] = [
        QuestionType::Number,
        QuestionType::ListRecall,
        QuestionType::OpenEnd,
    ];

    /// The name the benchmark's files use.
    pub fn name(self) -> &'static str {
        match self {
            QuestionType::Number => "number",
            QuestionType::ListRecall => "list_recall",
            QuestionType::OpenEnd => "open_end",
        }
    }
}

/// One question of a QA file.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question's id.
    pub id: String,
    /// The question, possibly starting with "Today is YYYY-MM-DD."
    pub question: String,
    /// The ground-truth answer.
    pub answer: String,
    /// Ground-truth evidence ids, duplicates removed, first occurrence kept.
    pub evidence_ids: Vec<String>,
    /// How the answer is scored.
    pub qtype: QuestionType,
    /// NIAH files: the only ids retrieval may return.
    pub pool: Option<Vec<String>>,
}

/// The questions of a QA file, and one error per entry that is not a question.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QaFile {
    /// Good entries, in file order.
    pub questions: Vec<Question>,
    /// One error per bad entry.
    pub errors: Vec<ImportError>,
}

/// Parses a QA file: a JSON list of entries, or an object with a `qas` list. A file that is not
/// that (or is cut short) is an error as a whole, since evaluating part of a file would report
/// figures for questions nobody chose; a bad entry is reported and left out.
pub fn parse_qa(file: &Path, bytes: &[u8]) -> Result<QaFile, ImportError> {
    let whole = |kind| error(file, None, kind);
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| whole(ImportErrorKind::Syntax(describe_json_error(&e))))?;
    let entries = match value {
        Value::Array(entries) => entries,
        Value::Object(mut members) => match members.remove("qas") {
            Some(Value::Array(entries)) => entries,
            Some(other) => return Err(whole(wrong_type("qas", "a list", &other))),
            None => return Err(whole(ImportErrorKind::MissingField("qas".to_owned()))),
        },
        other => {
            return Err(whole(wrong_type(
                "(file)",
                "a list of questions or an object with `qas`",
                &other,
            )));
        }
    };
    let mut out = QaFile::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let number = index + 1;
        match question(entry) {
            Ok(q) => {
                let location = Some(format!("question {number} ({})", q.id));
                if let Some(first) = seen.get(&q.id) {
                    out.errors.push(error(
                        file,
                        location,
                        invalid(
                            "id",
                            format!("`{}` appears again (question {first} has it)", q.id),
                        ),
                    ));
                } else {
                    seen.insert(q.id.clone(), number);
                    out.questions.push(q);
                }
            }
            Err(kind) => out
                .errors
                .push(error(file, Some(format!("question {number}")), kind)),
        }
    }
    Ok(out)
}

fn question(entry: Value) -> Result<Question, ImportErrorKind> {
    let mut m: HashMap<String, Value> = match entry {
        Value::Object(members) => members.into_iter().collect(),
        other => return Err(wrong_type("question", "an object", &other)),
    };
    let required = |m: &mut HashMap<String, Value>, key: &str| match take(m, key) {
        Value::Null => Err(ImportErrorKind::MissingField(key.to_owned())),
        Value::Number(n) if key != "question" => Ok(n.to_string()),
        other => string(key, other),
    };
    let id = required(&mut m, "id")?;
    if id.is_empty() {
        return Err(invalid("id", "is empty".to_owned()));
    }
    let question = required(&mut m, "question")?;
    let answer = match take(&mut m, "answer") {
        Value::Null => String::new(),
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        // Some list answers are written as lists.
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => return Err(wrong_type("answer", "a string", &other)),
    };
    let qtype = match required(&mut m, "qtype")?.as_str() {
        "number" => QuestionType::Number,
        "list_recall" => QuestionType::ListRecall,
        "open_end" => QuestionType::OpenEnd,
        other => {
            return Err(invalid(
                "qtype",
                format!("`{other}` is not number, list_recall or open_end"),
            ));
        }
    };
    let evidence_ids = dedup(strings("evidence_ids", take(&mut m, "evidence_ids"))?);
    let pool = match take(&mut m, "niah_evidence_ids") {
        Value::Null => None,
        other => Some(dedup(strings("niah_evidence_ids", other)?)),
    };
    Ok(Question {
        id,
        question,
        answer,
        evidence_ids,
        qtype,
        pool,
    })
}

/// `ids` without empty ids and repeats, first occurrence kept.
fn dedup(ids: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        let id = id.trim().to_owned();
        if !id.is_empty() && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// One line of a predictions file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// The question's id.
    pub id: String,
    /// The system's answer.
    pub answer: String,
}

/// The predictions of a JSON Lines file (`{"id", "answer"}` per line; other members ignored),
/// and one error per bad line. A later line for the same id is an error (the first is kept).
pub fn parse_predictions(file: &Path, bytes: &[u8]) -> (Vec<Prediction>, Vec<ImportError>) {
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let mut seen: HashMap<String, u64> = HashMap::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = index as u64 + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = Some(format!("line {line_no}"));
        let parsed = Object::parse(line).and_then(|object| {
            let mut m: HashMap<String, Value> = object.0.into_iter().collect();
            let id = match take(&mut m, "id") {
                Value::Null => return Err(ImportErrorKind::MissingField("id".to_owned())),
                Value::Number(n) => n.to_string(),
                other => string("id", other)?,
            };
            let answer = match take(&mut m, "answer") {
                Value::Null => String::new(),
                Value::Number(n) => n.to_string(),
                other => string("answer", other)?,
            };
            Ok(Prediction { id, answer })
        });
        match parsed {
            Ok(p) => {
                if let Some(first) = seen.get(&p.id) {
                    errors.push(error(
                        file,
                        at,
                        invalid("id", format!("`{}` was answered on line {first}", p.id)),
                    ));
                } else {
                    seen.insert(p.id.clone(), line_no);
                    out.push(p);
                }
            }
            Err(kind) => errors.push(error(file, at, kind)),
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(kind: MemoryFile, text: &str) -> ImportReport {
        parse(kind, Path::new(kind.file_name()), text.as_bytes())
    }

    #[test]
    fn an_email_record_lands_with_its_fields() {
        let r = parse_str(
            MemoryFile::Emails,
            r#"[{"id": "email202401010001", "timestamp": "2024-01-01 09:30:00",
                "short_summary": "Dentist booking confirmed", "detail": "Subject: Booking\nSee you Tuesday.",
                "sender": "clinic@example.org", "extra": 1}]"#,
        );
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let f = &r.items[0].draft.fields;
        assert_eq!(f.source, Source::Email);
        assert_eq!(f.external_id.as_deref(), Some("email202401010001"));
        assert_eq!(f.time.to_rfc3339(), "2024-01-01T09:30:00+00:00");
        assert_eq!(f.summary.as_deref(), Some("Dentist booking confirmed"));
        assert!(f.body.as_deref().unwrap().contains("Tuesday"));
        assert_eq!(f.from.as_deref(), Some("clinic@example.org"));
        assert_eq!(r.items[0].location, "record 1 (email202401010001)");
        for (text, want) in [
            ("2024-01-01 09:30:00", "2024-01-01T09:30:00+00:00"),
            ("2024:01:01 09:30:00", "2024-01-01T09:30:00+00:00"),
            ("2024-01-01T09:30:00+02:00", "2024-01-01T09:30:00+02:00"),
            ("2024-01-01T09:30:00-05:30", "2024-01-01T09:30:00-05:30"),
            ("2024-01-01T09:30:00Z", "2024-01-01T09:30:00+00:00"),
            ("2024-01-01", "2024-01-01T00:00:00+00:00"),
        ] {
            assert_eq!(parse_time(text).unwrap().to_rfc3339(), want, "{text}");
        }
        for bad in [
            "yesterday",
            "2024-01-01 09:30:00é",
            "2024-01-01T09:30[Europe/Paris]",
            "é",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_image_record_lands_keyed_by_its_file_stem() {
        let r = parse_str(
            MemoryFile::Images,
            r#"[{"image_path": "/data/images/20220430_132212.jpg", "timestamp": "2022:04:30 13:22:12",
                "location": [51.5072, -0.1276], "location_name": "Trafalgar Square, Westminster",
                "city": "London", "caption": "A crowd in a square", "short_caption": "square",
                "ocr_text": "NATIONAL GALLERY", "tags": ["city", "crowd"],
                "entities": [{"entity": "National Gallery", "type": "ORG"}, "Nelson", {"entity": "Nelson", "type": "PER"}],
                "camera_settings": {"iso": 100}, "model_used": "Qwen3-VL-2B", "processed_at": "2025-01-02T03:04:05Z"}]"#,
        );
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let f = &r.items[0].draft.fields;
        assert_eq!(f.source, Source::Image);
        assert_eq!(f.external_id.as_deref(), Some("20220430_132212"));
        assert_eq!(f.time.to_rfc3339(), "2022-04-30T13:22:12+00:00");
        let loc = f.location.as_ref().unwrap();
        assert_eq!(
            loc.name.as_deref(),
            Some("Trafalgar Square, Westminster, London")
        );
        assert_eq!(
            loc.geo,
            Some(GeoPoint {
                lat: 51.5072,
                lon: -0.1276
            })
        );
        assert_eq!(f.entities, ["National Gallery", "Nelson"]);
        assert_eq!(f.tags, ["file:20220430_132212.jpg", "city", "crowd"]);
        assert_eq!(f.ocr.as_deref(), Some("NATIONAL GALLERY"));
        assert_eq!(f.caption_provenance.as_ref().unwrap().model, "Qwen3-VL-2B");
    }

    #[test]
    fn a_video_record_takes_its_time_from_its_name_when_it_has_none() {
        let r = parse_str(
            MemoryFile::Videos,
            r#"[{"video_path": "C:\\clips\\20210815_101500.mp4", "timestamp": null, "location": null,
                "width": 1920, "height": 1080, "rotation": 90, "device": "Pixel 6",
                "duration_formatted": "0:42", "caption": "Waves"}]"#,
        );
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let f = &r.items[0].draft.fields;
        assert_eq!(f.source, Source::Video);
        assert_eq!(f.external_id.as_deref(), Some("20210815_101500"));
        assert_eq!(f.time.to_rfc3339(), "2021-08-15T10:15:00+00:00");
        assert_eq!(f.orientation, Some(Orientation::Portrait));
        assert_eq!(f.camera.as_ref().unwrap().model.as_deref(), Some("Pixel 6"));
        assert!(f.tags.contains(&"duration:0:42".to_owned()));
    }

    #[test]
    fn bad_records_are_reported_by_file_and_record_and_the_rest_lands() {
        let huge = "x".repeat(MAX_RECORD_JSON_BYTES + 1);
        let text = format!(
            r#"[{{"id": "email1", "detail": "ok"}},
               {{"detail": "no id"}},
               {{"id": "email3", "timestamp": 20240101}},
               {{"id": "email1", "detail": "again"}},
               {{"id": "email5", "detail": "{huge}"}},
               {{"id": "has space"}},
               "not an object",
               {{"id": "email8", "timestamp": "2024-13-45 99:00:00"}},
               {{"id": "email9", "detail": "fine"}}]"#
        );
        let r = parse_str(MemoryFile::Emails, &text);
        let ids: Vec<_> = r
            .items
            .iter()
            .map(|i| i.draft.fields.external_id.clone().unwrap())
            .collect();
        assert_eq!(ids, ["email1", "email9"]);
        let at: Vec<_> = r
            .errors
            .iter()
            .map(|e| e.location.clone().unwrap())
            .collect();
        assert_eq!(
            at,
            [
                "record 2",
                "record 3",
                "record 4 (email1)",
                "record 5",
                "record 6",
                "record 7",
                "record 8"
            ]
        );
        for e in &r.errors {
            assert!(e.to_string().starts_with("emails.json:record "), "{e}");
        }
        let media = parse_str(
            MemoryFile::Images,
            r#"[{"image_path": "a/20200101_000000.jpg", "location": [95.0, 10.0]},
               {"image_path": "a/20200101_000001.jpg", "location": [10.0, 200.0]},
               {"image_path": "a/20200101_000002.jpg", "location": [1.0]},
               {"image_path": "a/20200101_000003.jpg", "location": ["x", 1.0]},
               {"image_path": 7},
               {"timestamp": "2020-01-01 00:00:00"},
               {"image_path": "a/20200101_000004.jpg", "tags": "one"},
               {"image_path": "a/20200101_000005.jpg", "location": [0.0, 0.0]}]"#,
        );
        assert_eq!(media.items.len(), 1, "{:?}", media.errors);
        assert_eq!(media.errors.len(), 7);
        assert!(
            media.errors[0].to_string().contains("latitude 95"),
            "{}",
            media.errors[0]
        );
    }

    #[test]
    fn a_file_cut_short_keeps_the_records_before_the_cut() {
        let r = parse_str(
            MemoryFile::Emails,
            r#"[{"id": "email1", "detail": "a"}, {"id": "email2", "detail": "b"}, {"id": "email3", "det"#,
        );
        assert_eq!(r.items.len(), 2);
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.errors[0].location.as_deref(), Some("after record 2"));
        for bad in ["", "{}", "null", "[1, 2", "\u{feff}[]", "[] []"] {
            let r = parse_str(MemoryFile::Images, bad);
            assert!(r.items.is_empty());
            assert!(!r.errors.is_empty(), "{bad:?}");
        }
        assert!(parse_str(MemoryFile::Images, " [ ] ").errors.is_empty());
    }

    #[test]
    fn qa_files_are_lists_or_objects_with_qas() {
        let list = br#"[{"id": "q1", "question": "Today is 2024-03-01. How many?", "answer": "3",
            "evidence_ids": ["email1", "email1", "20220101_101010"], "qtype": "number"},
            {"id": "q2", "question": "Which?", "answer": ["a", "b"], "evidence_ids": [], "qtype": "list_recall",
             "niah_evidence_ids": ["x", "y"]},
            {"id": "q3", "question": "Why?", "answer": "because", "evidence_ids": ["x"], "qtype": "essay"},
            {"id": "q1", "question": "again", "answer": "", "evidence_ids": [], "qtype": "open_end"}]"#;
        let qa = parse_qa(Path::new("qa.json"), list).unwrap();
        assert_eq!(qa.questions.len(), 2);
        assert_eq!(qa.questions[0].evidence_ids, ["email1", "20220101_101010"]);
        assert_eq!(qa.questions[1].answer, "a, b");
        assert_eq!(
            qa.questions[1].pool.as_deref(),
            Some(&["x".to_owned(), "y".to_owned()][..])
        );
        assert_eq!(qa.errors.len(), 2);
        let object = br#"{"qas": [{"id": 7, "question": "q", "answer": "a", "evidence_ids": null, "qtype": "open_end"}]}"#;
        let qa = parse_qa(Path::new("qa.json"), object).unwrap();
        assert_eq!(qa.questions[0].id, "7");
        for bad in [&b"[1,"[..], b"{}", b"\"x\"", b"{\"qas\": 3}"] {
            assert!(parse_qa(Path::new("qa.json"), bad).is_err());
        }
    }

    #[test]
    fn predictions_are_json_lines() {
        let (p, e) = parse_predictions(
            Path::new("p.jsonl"),
            b"{\"id\": \"q1\", \"answer\": \"3\", \"model\": \"m\"}\n\n{\"id\": \"q1\", \"answer\": \"4\"}\nnot json\r\n{\"id\": 2, \"answer\": 5}\n",
        );
        assert_eq!(
            p,
            [
                Prediction {
                    id: "q1".into(),
                    answer: "3".into()
                },
                Prediction {
                    id: "2".into(),
                    answer: "5".into()
                }
            ]
        );
        let lines: Vec<_> = e.iter().map(|e| e.location.clone().unwrap()).collect();
        assert_eq!(lines, ["line 3", "line 4"]);
    }
}
