//! JSONL import: one SGM item per line, memdb's own interchange format (SPEC.md §8.1).
//!
//! ```text
//! FILE := (LINE "\n")* LINE?          LINE := OBJECT | blank        (a "\r" before "\n" is dropped)
//! OBJECT := {"source": S, "time": T | null, ...optional fields}      (one item)
//! ```
//! A line is blank when it holds only JSON whitespace; blank lines are skipped but counted, so
//! `line N` always means the N-th line of the file as an editor shows it. A UTF-8 byte order
//! mark at the very start of the file is ignored.
//!
//! Fields are checked strictly, as `#[serde(deny_unknown_fields)]` would, but by hand over the
//! parsed JSON members, so each error names the field (`location.lat`, `tags[2]`) and its kind
//! ([`ImportErrorKind::MissingField`] / [`ImportErrorKind::InvalidField`]) rather than carrying
//! only serde's message.
//!
//! `"time": null` is an undated item ([`EventTime::UNDATED`]); the member itself stays
//! required, so a forgotten time is an error rather than a silent "undated". The optional
//! `original` member names the item's original file ([`Original`]): this module checks its
//! shape only (a relative path without `..`, 64 hex digits); reading and verifying the file is
//! the caller's, which knows where the JSONL file is.
//!
//! Invariants: each non-blank line yields exactly one outcome (an item or an error) in line
//! order; [`parse`] and [`Reader`] give identical outcomes for the same bytes (the
//! `jsonl_line` fuzz target checks this); no line longer than [`MAX_LINE_BYTES`] is ever held
//! in memory by [`Reader`].

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ImportReport, Imported, Object, error, wrong_type};
use crate::item::{
    Camera, CaptionProvenance, EventTime, GeoPoint, ItemDraft, ItemFields, Location,
    MAX_RECORD_BYTES, Orientation, PlaceName, Scope, Source,
};
use crate::{ImportError, ImportErrorKind};

/// Longest line accepted, in bytes, without its `\n`. A longer line cannot become a storable
/// record anyway (records are at most [`MAX_RECORD_BYTES`]), and the limit is what keeps the
/// streaming [`Reader`] bounded on a file with no newlines at all.
pub const MAX_LINE_BYTES: usize = MAX_RECORD_BYTES;

/// Every field a line may have, in the order SPEC.md lists them.
pub const FIELDS: [&str; 22] = [
    "source",
    "time",
    "external_id",
    "location",
    "entities",
    "tags",
    "ocr",
    "caption",
    "short_caption",
    "caption_provenance",
    "camera",
    "orientation",
    "summary",
    "body",
    "speaker",
    "from",
    "to",
    "supersedes",
    "original",
    "user_id",
    "agent_id",
    "run_id",
];

/// Every member `location` may have.
pub const LOCATION_FIELDS: [&str; 4] = ["name", "lat", "lon", "place"];

/// Every member `location.place` may have.
pub const PLACE_FIELDS: [&str; 7] = [
    "city",
    "locality",
    "region",
    "country",
    "country_code",
    "distance_m",
    "geonames_id",
];

/// Every member `camera` may have.
pub const CAMERA_FIELDS: [&str; 3] = ["make", "model", "lens"];

/// Every member `caption_provenance` may have.
pub const CAPTION_PROVENANCE_FIELDS: [&str; 2] = ["model", "at"];

/// Every member `original` may have.
pub const ORIGINAL_FIELDS: [&str; 2] = ["file", "sha256"];

/// The original file of an item, as a JSONL line names it (`"original": {"file": …,
/// "sha256": …}`, written by `memdb export`): the bytes the item's `Original` blob must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    /// Where the file is, relative to the folder of the JSONL file, folders separated by `/`.
    /// Never empty, never absolute, no `..` component, no backslash or NUL.
    pub file: String,
    /// SHA-256 of the file's bytes: 64 hex digits, lowercase.
    pub sha256: String,
}

/// Parses a whole JSONL file held in memory. Never fails as a whole: bad lines become errors.
pub fn parse(file: &Path, bytes: &[u8]) -> ImportReport {
    let mut report = ImportReport::default();
    // `split` yields a final empty piece after a trailing newline; it is blank, so skipped.
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = index as u64 + 1;
        // The byte order mark counts towards line 1's length, as it does in `Reader`.
        let outcome = if line.len() > MAX_LINE_BYTES {
            Some(Err(line_error(
                file,
                line_no,
                overlong_kind(MAX_LINE_BYTES),
            )))
        } else if line_no == 1 {
            parse_line(file, line_no, line.strip_prefix(BOM).unwrap_or(line))
        } else {
            parse_line(file, line_no, line)
        };
        match outcome {
            Some(Ok(item)) => report.items.push(item),
            Some(Err(err)) => report.errors.push(err),
            None => {}
        }
    }
    report
}

/// Streams a JSONL file line by line, holding at most one line (capped at a maximum) in memory.
///
/// Yields one `Ok(outcome)` per non-blank line, where the outcome is the item or the
/// [`ImportError`] of that line; an I/O error from the underlying reader is yielded as `Err`
/// and ends the stream.
#[derive(Debug)]
pub struct Reader<R> {
    file: PathBuf,
    inner: R,
    line_no: u64,
    line: Vec<u8>,
    max_line_bytes: usize,
    done: bool,
}

impl<R: BufRead> Reader<R> {
    /// A reader of `inner`, reporting errors against `file`.
    pub fn new(file: &Path, inner: R) -> Reader<R> {
        Reader {
            file: file.to_path_buf(),
            inner,
            line_no: 0,
            line: Vec::new(),
            max_line_bytes: MAX_LINE_BYTES,
            done: false,
        }
    }

    /// Lowers the longest line accepted (default [`MAX_LINE_BYTES`]); longer lines are errors.
    pub fn max_line_bytes(mut self, max: usize) -> Reader<R> {
        self.max_line_bytes = max.min(MAX_LINE_BYTES);
        self
    }

    /// Reads the next line into `self.line`. Returns `Ok(None)` at the end of the input,
    /// `Ok(Some(true))` for a line that fit and `Ok(Some(false))` for one that was too long (its
    /// bytes were consumed and dropped).
    fn read_line(&mut self) -> io::Result<Option<bool>> {
        self.line.clear();
        let mut read_any = false;
        let mut overlong = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                self.done = true;
                break;
            }
            read_any = true;
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            if !overlong {
                if self.line.len().saturating_add(chunk.len()) > self.max_line_bytes {
                    overlong = true;
                    // Release the partial line now: the point of the cap is to bound memory.
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = newline.map_or(available.len(), |at| at + 1);
            self.inner.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if !read_any {
            return Ok(None);
        }
        if self.line_no == 0 && self.line.starts_with(BOM) {
            self.line.drain(..BOM.len());
        }
        Ok(Some(!overlong))
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = io::Result<Result<Imported, ImportError>>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let fits = match self.read_line() {
                Ok(Some(fits)) => fits,
                Ok(None) => break,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            self.line_no += 1;
            if !fits {
                let kind = overlong_kind(self.max_line_bytes);
                return Some(Ok(Err(line_error(&self.file, self.line_no, kind))));
            }
            if let Some(outcome) = parse_line(&self.file, self.line_no, &self.line) {
                return Some(Ok(outcome));
            }
        }
        None
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

fn overlong_kind(max: usize) -> ImportErrorKind {
    ImportErrorKind::Syntax(format!("line is longer than {max} bytes"))
}

fn line_error(file: &Path, line_no: u64, kind: ImportErrorKind) -> ImportError {
    error(file, Some(format!("line {line_no}")), kind)
}

/// Parses one line (without its `\n`); `None` when it is blank.
fn parse_line(file: &Path, line_no: u64, line: &[u8]) -> Option<Result<Imported, ImportError>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return None;
    }
    let result = match std::str::from_utf8(line) {
        Err(e) => Err(ImportErrorKind::Syntax(format!(
            "invalid UTF-8 at byte {} of the line",
            e.valid_up_to()
        ))),
        Ok(text) => Object::parse(text.as_bytes()).and_then(draft_from),
    };
    Some(match result {
        Ok((draft, original)) => Ok(Imported {
            location: format!("line {line_no}"),
            draft,
            original,
        }),
        Err(kind) => Err(line_error(file, line_no, kind)),
    })
}

/// The fields of one line as they are read, before the required ones are known to be there.
#[derive(Default)]
struct Partial {
    source: Option<Source>,
    time: Option<EventTime>,
    external_id: Option<String>,
    location: Option<Location>,
    entities: Vec<String>,
    tags: Vec<String>,
    ocr: Option<String>,
    caption: Option<String>,
    short_caption: Option<String>,
    caption_provenance: Option<CaptionProvenance>,
    camera: Option<Camera>,
    orientation: Option<Orientation>,
    summary: Option<String>,
    body: Option<String>,
    speaker: Option<String>,
    from: Option<String>,
    to: Vec<String>,
    supersedes: Option<String>,
    original: Option<Original>,
    scope: Scope,
}

fn draft_from(object: Object) -> Result<(ItemDraft, Option<Original>), ImportErrorKind> {
    if let Some(key) = object.first_duplicate() {
        return Err(invalid(key, "appears more than once".to_owned()));
    }
    let mut p = Partial::default();
    for (key, value) in object.0 {
        match key.as_str() {
            "source" => {
                let text = string(&key, value)?;
                p.source = Some(text.parse().map_err(|reason| invalid(&key, reason))?);
            }
            "time" => {
                p.time = Some(match value {
                    Value::Null => EventTime::UNDATED,
                    other => {
                        let text = string(&key, other)?;
                        EventTime::parse(&text).map_err(|reason| invalid(&key, reason))?
                    }
                });
            }
            "external_id" => p.external_id = non_empty(&key, optional_string(&key, value)?)?,
            "location" => p.location = location(value)?,
            "entities" => p.entities = strings(&key, value)?,
            "tags" => p.tags = strings(&key, value)?,
            "ocr" => p.ocr = optional_string(&key, value)?,
            "caption" => p.caption = optional_string(&key, value)?,
            "short_caption" => p.short_caption = optional_string(&key, value)?,
            "caption_provenance" => p.caption_provenance = caption_provenance(value)?,
            "camera" => p.camera = camera(value)?,
            "orientation" => {
                p.orientation = optional_string(&key, value)?
                    .map(|o| o.parse().map_err(|reason| invalid(&key, reason)))
                    .transpose()?;
            }
            "summary" => p.summary = optional_string(&key, value)?,
            "body" => p.body = optional_string(&key, value)?,
            "speaker" => p.speaker = optional_string(&key, value)?,
            "from" => p.from = optional_string(&key, value)?,
            "to" => p.to = strings(&key, value)?,
            "supersedes" => p.supersedes = non_empty(&key, optional_string(&key, value)?)?,
            "original" => p.original = original(value)?,
            "user_id" => p.scope.user_id = non_empty(&key, optional_string(&key, value)?)?,
            "agent_id" => p.scope.agent_id = non_empty(&key, optional_string(&key, value)?)?,
            "run_id" => p.scope.run_id = non_empty(&key, optional_string(&key, value)?)?,
            _ => return Err(unknown(&key, &FIELDS)),
        }
    }
    let source = p
        .source
        .ok_or_else(|| ImportErrorKind::MissingField("source".to_owned()))?;
    let time = p.time.ok_or_else(|| ImportErrorKind::MissingFieldHint {
        field: "time".to_owned(),
        hint: "null for an undated item".to_owned(),
    })?;
    let fields = ItemFields {
        external_id: p.external_id,
        source,
        time,
        location: p.location,
        entities: p.entities,
        tags: p.tags,
        ocr: p.ocr,
        caption: p.caption,
        summary: p.summary,
        body: p.body,
        speaker: p.speaker,
        from: p.from,
        to: p.to,
        short_caption: p.short_caption,
        caption_provenance: p.caption_provenance,
        camera: p.camera,
        orientation: p.orientation,
        scope: p.scope,
    };
    // The checks above already cover every rule `validate` has; it stays as the last word so
    // an importer can never hand the store a draft the record decoder would reject.
    fields
        .validate()
        .map_err(|reason| invalid("item", reason))?;
    Ok((
        ItemDraft {
            fields,
            supersedes: p.supersedes,
        },
        p.original,
    ))
}

fn original(value: Value) -> Result<Option<Original>, ImportErrorKind> {
    let members = match value {
        Value::Null => return Ok(None),
        Value::Object(members) => members,
        other => return Err(wrong_type("original", "an object", &other)),
    };
    let (mut file, mut sha256) = (None, None);
    for (key, value) in members {
        let field = format!("original.{key}");
        match key.as_str() {
            "file" => file = Some(string(&field, value)?),
            "sha256" => sha256 = Some(string(&field, value)?),
            _ => return Err(unknown(&field, &ORIGINAL_FIELDS)),
        }
    }
    let file = file.ok_or_else(|| ImportErrorKind::MissingField("original.file".to_owned()))?;
    let sha256 =
        sha256.ok_or_else(|| ImportErrorKind::MissingField("original.sha256".to_owned()))?;
    let bad_file = |why: &str| invalid("original.file", format!("`{file}` {why}"));
    if file.is_empty() {
        return Err(invalid("original.file", "is empty".to_owned()));
    }
    if file.starts_with('/') {
        return Err(bad_file(
            "is an absolute path (give it relative to the JSONL file's folder)",
        ));
    }
    if file.contains('\\') || file.contains('\0') {
        return Err(bad_file(
            "holds a backslash or NUL (separate folders with `/`)",
        ));
    }
    if file.split('/').any(|part| part == "..") {
        return Err(bad_file(
            "has a `..` component (it must lie inside the JSONL file's folder)",
        ));
    }
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(
            "original.sha256",
            format!("`{sha256}` is not 64 hex digits"),
        ));
    }
    Ok(Some(Original {
        file,
        sha256: sha256.to_ascii_lowercase(),
    }))
}

fn location(value: Value) -> Result<Option<Location>, ImportErrorKind> {
    let members = match value {
        Value::Null => return Ok(None),
        Value::Object(members) => members,
        other => return Err(wrong_type("location", "an object", &other)),
    };
    let (mut name, mut lat, mut lon, mut place) = (None, None, None, None);
    for (key, value) in members {
        let field = format!("location.{key}");
        match key.as_str() {
            "name" => name = optional_string(&field, value)?,
            "lat" => lat = optional_number(&field, value)?,
            "lon" => lon = optional_number(&field, value)?,
            "place" => place = place_name(value)?,
            _ => return Err(unknown(&field, &LOCATION_FIELDS)),
        }
    }
    let geo = match (lat, lon) {
        (None, None) => None,
        (Some(lat), Some(lon)) => {
            let geo = GeoPoint { lat, lon };
            if let Some((axis, why)) = geo.out_of_range() {
                return Err(invalid(&format!("location.{axis}"), why));
            }
            Some(geo)
        }
        (Some(_), None) => return Err(invalid("location", "has `lat` but no `lon`".to_owned())),
        (None, Some(_)) => return Err(invalid("location", "has `lon` but no `lat`".to_owned())),
    };
    if name.is_none() && geo.is_none() && place.is_none() {
        return Err(invalid(
            "location",
            "needs a `name`, `lat` and `lon`, or a `place`".to_owned(),
        ));
    }
    Ok(Some(Location { name, geo, place }))
}

/// The members of an optional object member (`null` is absent), each checked against
/// `allowed`; `field` is the object's JSON path.
fn members(
    field: &str,
    value: Value,
    allowed: &[&str],
) -> Result<Option<Vec<(String, Value)>>, ImportErrorKind> {
    match value {
        Value::Null => Ok(None),
        Value::Object(members) => {
            let members: Vec<(String, Value)> = members.into_iter().collect();
            if let Some((key, _)) = members.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
                return Err(unknown(&format!("{field}.{key}"), allowed));
            }
            Ok(Some(members))
        }
        other => Err(wrong_type(field, "an object", &other)),
    }
}

/// A non-empty optional string member (`field` its JSON path): a name that is blank says
/// nothing, so it is refused rather than stored.
fn optional_name(field: &str, value: Value) -> Result<Option<String>, ImportErrorKind> {
    match optional_string(field, value)? {
        Some(s) if s.trim().is_empty() => Err(invalid(field, "is empty".to_owned())),
        other => Ok(other),
    }
}

/// A whole number from 0 to `u32::MAX` (`field` its JSON path), or absent.
fn optional_u32(field: &str, value: Value) -> Result<Option<u32>, ImportErrorKind> {
    match &value {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| {
                invalid(
                    field,
                    format!("{n} is not a whole number from 0 to {}", u32::MAX),
                )
            }),
        other => Err(wrong_type(field, "a number", other)),
    }
}

fn place_name(value: Value) -> Result<Option<PlaceName>, ImportErrorKind> {
    const FIELD: &str = "location.place";
    let Some(members) = members(FIELD, value, &PLACE_FIELDS)? else {
        return Ok(None);
    };
    let mut place = PlaceName::default();
    let mut city = None;
    for (key, value) in members {
        let field = format!("{FIELD}.{key}");
        match key.as_str() {
            "city" => city = optional_name(&field, value)?,
            "locality" => place.locality = optional_name(&field, value)?,
            "region" => place.region = optional_name(&field, value)?,
            "country" => place.country = optional_name(&field, value)?,
            "country_code" => {
                place.country_code = optional_string(&field, value)?;
                if let Some(code) = &place.country_code
                    && !(code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase()))
                {
                    return Err(invalid(
                        &field,
                        format!("`{code}` is not two upper-case letters (ISO 3166-1 alpha-2)"),
                    ));
                }
            }
            "distance_m" => place.distance_m = optional_u32(&field, value)?,
            // Every other member was refused by `members`.
            _ => place.geonames_id = optional_u32(&field, value)?,
        }
    }
    place.city = city.ok_or_else(|| ImportErrorKind::MissingField(format!("{FIELD}.city")))?;
    Ok(Some(place))
}

fn camera(value: Value) -> Result<Option<Camera>, ImportErrorKind> {
    let Some(members) = members("camera", value, &CAMERA_FIELDS)? else {
        return Ok(None);
    };
    let mut camera = Camera::default();
    for (key, value) in members {
        let field = format!("camera.{key}");
        let text = optional_name(&field, value)?;
        match key.as_str() {
            "make" => camera.make = text,
            "model" => camera.model = text,
            _ => camera.lens = text,
        }
    }
    if camera == Camera::default() {
        return Err(invalid(
            "camera",
            "needs a `make`, a `model` or a `lens`".to_owned(),
        ));
    }
    Ok(Some(camera))
}

fn caption_provenance(value: Value) -> Result<Option<CaptionProvenance>, ImportErrorKind> {
    const FIELD: &str = "caption_provenance";
    let Some(members) = members(FIELD, value, &CAPTION_PROVENANCE_FIELDS)? else {
        return Ok(None);
    };
    let (mut model, mut at) = (None, None);
    for (key, value) in members {
        let field = format!("{FIELD}.{key}");
        match key.as_str() {
            "model" => model = optional_name(&field, value)?,
            _ => {
                at = optional_string(&field, value)?
                    .map(|t| EventTime::parse(&t).map_err(|reason| invalid(&field, reason)))
                    .transpose()?;
            }
        }
    }
    let model = model.ok_or_else(|| ImportErrorKind::MissingField(format!("{FIELD}.model")))?;
    let at = at.ok_or_else(|| ImportErrorKind::MissingField(format!("{FIELD}.at")))?;
    Ok(Some(CaptionProvenance {
        model,
        at_ms: at.unix_ms,
    }))
}

pub(super) fn invalid(field: &str, reason: String) -> ImportErrorKind {
    ImportErrorKind::InvalidField {
        field: field.to_owned(),
        reason,
    }
}

fn unknown(field: &str, allowed: &[&str]) -> ImportErrorKind {
    invalid(
        field,
        format!("unknown field (allowed: {})", allowed.join(", ")),
    )
}

pub(super) fn string(field: &str, value: Value) -> Result<String, ImportErrorKind> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(wrong_type(field, "a string", &other)),
    }
}

/// Optional fields may be omitted or `null`; both mean "absent".
pub(super) fn optional_string(
    field: &str,
    value: Value,
) -> Result<Option<String>, ImportErrorKind> {
    match value {
        Value::Null => Ok(None),
        other => string(field, other).map(Some),
    }
}

/// External ids name items in the store, so an empty one is refused rather than stored.
fn non_empty(field: &str, value: Option<String>) -> Result<Option<String>, ImportErrorKind> {
    match value {
        Some(s) if s.is_empty() => Err(invalid(field, "is empty".to_owned())),
        other => Ok(other),
    }
}

pub(super) fn optional_number(field: &str, value: Value) -> Result<Option<f64>, ImportErrorKind> {
    match &value {
        Value::Null => Ok(None),
        // serde_json refuses NaN, infinities and out-of-range literals (`1e999`) while
        // parsing, so every number here is finite.
        Value::Number(n) => match n.as_f64() {
            Some(x) => Ok(Some(x)),
            None => Err(invalid(
                field,
                format!("{n} is not representable as a double"),
            )),
        },
        other => Err(wrong_type(field, "a number", other)),
    }
}

/// A list of strings; `null` is the empty list.
pub(super) fn strings(field: &str, value: Value) -> Result<Vec<String>, ImportErrorKind> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(values) => values
            .into_iter()
            .enumerate()
            .map(|(i, v)| string(&format!("{field}[{i}]"), v))
            .collect(),
        other => Err(wrong_type(field, "a list of strings", &other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<ItemDraft, ImportError> {
        let report = parse(Path::new("t.jsonl"), line.as_bytes());
        assert_eq!(report.items.len() + report.errors.len(), 1, "{line}");
        match report.items.into_iter().next() {
            Some(item) => Ok(item.draft),
            None => Err(report.errors.into_iter().next().unwrap()),
        }
    }

    fn kind(line: &str) -> ImportErrorKind {
        one(line).unwrap_err().kind
    }

    fn field_of(line: &str) -> String {
        match kind(line) {
            ImportErrorKind::InvalidField { field, .. } => field,
            ImportErrorKind::MissingField(field) => field,
            ImportErrorKind::MissingFieldHint { field, .. } => field,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn every_field_lands_where_it_belongs() {
        let d = one(
            r#"{"source":"EMAIL","time":"2022-05-07T09:30:00+01:00","external_id":"m1",
            "location":{"name":"Lisbon","lat":38.72,"lon":-9.14},"entities":["Ana"],"tags":["trip"],
            "ocr":"o","caption":"c","summary":"s","body":"b","speaker":"sp","from":"f",
            "to":["t1","t2"],"supersedes":"m0"}"#
                .replace('\n', "")
                .as_str(),
        )
        .unwrap();
        let f = &d.fields;
        assert_eq!(f.source, Source::Email);
        assert_eq!(
            f.time,
            EventTime::parse("2022-05-07T08:30:00Z")
                .map(|t| EventTime {
                    offset_minutes: 60,
                    ..t
                })
                .unwrap()
        );
        assert_eq!(f.external_id.as_deref(), Some("m1"));
        let loc = f.location.as_ref().unwrap();
        assert_eq!(loc.name.as_deref(), Some("Lisbon"));
        assert_eq!(
            loc.geo,
            Some(GeoPoint {
                lat: 38.72,
                lon: -9.14
            })
        );
        assert_eq!(
            (f.entities.as_slice(), f.tags.as_slice()),
            (&["Ana".to_owned()][..], &["trip".to_owned()][..])
        );
        let texts = [&f.ocr, &f.caption, &f.summary, &f.body, &f.speaker, &f.from];
        let texts: Vec<_> = texts.iter().map(|t| t.as_deref().unwrap()).collect();
        assert_eq!(texts, ["o", "c", "s", "b", "sp", "f"]);
        assert_eq!(f.to, ["t1", "t2"]);
        assert_eq!(d.supersedes.as_deref(), Some("m0"));
    }

    #[test]
    fn nulls_mean_absent_and_a_bare_date_is_midnight_utc() {
        let d =
            one(r#"{"source":"note","time":"2024-02-29","ocr":null,"tags":null,"location":null}"#)
                .unwrap();
        assert_eq!(
            d.fields,
            ItemFields::new(Source::Note, EventTime::utc(1_709_164_800_000))
        );
    }

    #[test]
    fn a_null_time_is_an_undated_item() {
        let d = one(r#"{"source":"note","time":null,"body":"no idea when"}"#).unwrap();
        assert_eq!(d.fields.time, EventTime::UNDATED);
        assert_eq!(field_of(r#"{"source":"note","time":""}"#), "time");
    }

    #[test]
    fn original_names_a_relative_file_and_its_sha256() {
        let sha = "AB".repeat(32);
        let line =
            |original: &str| format!(r#"{{"source":"image","time":null,"original":{original}}}"#);
        let report = parse(
            Path::new("t.jsonl"),
            line(&format!(r#"{{"file":"photos/a b.jpg","sha256":"{sha}"}}"#)).as_bytes(),
        );
        assert_eq!(
            report.items[0].original,
            Some(Original {
                file: "photos/a b.jpg".into(),
                sha256: "ab".repeat(32)
            })
        );
        let none = parse(Path::new("t.jsonl"), line("null").as_bytes());
        assert_eq!(none.items[0].original, None);
        for (original, field) in [
            (
                format!(r#"{{"file":"/etc/passwd","sha256":"{sha}"}}"#),
                "original.file",
            ),
            (
                format!(r#"{{"file":"a/../../b.jpg","sha256":"{sha}"}}"#),
                "original.file",
            ),
            (
                format!(r#"{{"file":"..","sha256":"{sha}"}}"#),
                "original.file",
            ),
            (
                format!(r#"{{"file":"a\\b.jpg","sha256":"{sha}"}}"#),
                "original.file",
            ),
            (
                format!(r#"{{"file":"","sha256":"{sha}"}}"#),
                "original.file",
            ),
            (
                r#"{"file":"a.jpg","sha256":"abc"}"#.to_owned(),
                "original.sha256",
            ),
            (
                format!(r#"{{"file":"a.jpg","sha256":"{}"}}"#, "g".repeat(64)),
                "original.sha256",
            ),
            (r#"{"file":"a.jpg"}"#.to_owned(), "original.sha256"),
            (format!(r#"{{"sha256":"{sha}"}}"#), "original.file"),
            (
                format!(r#"{{"file":"a.jpg","sha256":"{sha}","size":3}}"#),
                "original.size",
            ),
            ("\"a.jpg\"".to_owned(), "original"),
        ] {
            assert_eq!(field_of(&line(&original)), field, "{original}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        let base = r#""source":"chat","time":"2023-01-01""#;
        assert_eq!(
            kind(r#"{"time":"2023-01-01"}"#),
            ImportErrorKind::MissingField("source".into())
        );
        assert_eq!(
            kind(r#"{"source":"chat"}"#),
            ImportErrorKind::MissingFieldHint {
                field: "time".into(),
                hint: "null for an undated item".into()
            }
        );
        assert_eq!(
            kind(r#"{"source":"chat"}"#).to_string(),
            "missing field `time` (null for an undated item)"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"colour\":\"red\"}}")),
            "colour"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"tags\":[\"a\",3]}}")),
            "tags[1]"
        );
        assert_eq!(field_of(&format!("{{{base},\"tags\":\"a\"}}")), "tags");
        assert_eq!(
            field_of(r#"{"source":"fax","time":"2023-01-01"}"#),
            "source"
        );
        assert_eq!(
            field_of(r#"{"source":"chat","time":"2023-01-01T10:00:00"}"#),
            "time"
        );
        assert_eq!(field_of(r#"{"source":"chat","time":20230101}"#), "time");
        assert_eq!(
            field_of(&format!("{{{base},\"location\":{{\"lat\":91,\"lon\":0}}}}")),
            "location.lat"
        );
        assert_eq!(
            field_of(&format!(
                "{{{base},\"location\":{{\"lat\":0,\"lon\":-180.5}}}}"
            )),
            "location.lon"
        );
        assert_eq!(
            field_of(&format!(
                "{{{base},\"location\":{{\"lat\":\"1\",\"lon\":0}}}}"
            )),
            "location.lat"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"location\":{{\"lat\":1}}}}")),
            "location"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"location\":{{}}}}")),
            "location"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"location\":{{\"city\":\"x\"}}}}")),
            "location.city"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"external_id\":\"\"}}")),
            "external_id"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"supersedes\":\"\"}}")),
            "supersedes"
        );
        assert_eq!(
            field_of(&format!("{{{base},\"source\":\"chat\"}}")),
            "source"
        );
        assert!(matches!(kind("[1,2]"), ImportErrorKind::Syntax(_)));
        assert!(matches!(kind("{\"source\":"), ImportErrorKind::Syntax(_)));
        assert!(matches!(
            kind(&format!("{{{base}}} x")),
            ImportErrorKind::Syntax(_)
        ));
    }

    #[test]
    fn photo_fields_land_where_they_belong() {
        let d = one(
            r#"{"source":"image","time":"2015-04-10T20:12:23+02:00","location":{"lat":40.44,
            "lon":-3.72,"place":{"city":"Madrid","locality":"Vallehermoso","region":"Madrid",
            "country":"Spain","country_code":"ES","distance_m":3812,"geonames_id":3117735}},
            "camera":{"make":"Apple","model":"iPhone 6"},"orientation":"Portrait",
            "short_caption":"a street","caption_provenance":{"model":"vlm",
            "at":"2026-01-02T03:04:05.678Z"}}"#
                .replace('\n', "")
                .as_str(),
        )
        .unwrap();
        let f = &d.fields;
        let place = f.location.as_ref().and_then(|l| l.place.as_ref()).unwrap();
        assert_eq!(
            (place.city.as_str(), place.locality.as_deref()),
            ("Madrid", Some("Vallehermoso"))
        );
        assert_eq!(
            (
                place.country_code.as_deref(),
                place.distance_m,
                place.geonames_id
            ),
            (Some("ES"), Some(3812), Some(3_117_735))
        );
        let camera = f.camera.as_ref().unwrap();
        assert_eq!(
            (
                camera.make.as_deref(),
                camera.model.as_deref(),
                camera.lens.as_deref()
            ),
            (Some("Apple"), Some("iPhone 6"), None)
        );
        assert_eq!(f.orientation, Some(Orientation::Portrait));
        assert_eq!(f.short_caption.as_deref(), Some("a street"));
        let p = f.caption_provenance.as_ref().unwrap();
        assert_eq!((p.model.as_str(), p.at_ms), ("vlm", 1_767_323_045_678));
        // A location may be only a place.
        let d =
            one(r#"{"source":"note","time":null,"location":{"place":{"city":"Lyon"}}}"#).unwrap();
        assert_eq!(d.fields.location.unwrap().place.unwrap().city, "Lyon");
    }

    #[test]
    fn bad_photo_fields_name_the_field() {
        let base = r#""source":"image","time":null"#;
        for (member, field) in [
            (r#""location":{"place":{}}"#, "location.place.city"),
            (
                r#""location":{"place":{"city":" "}}"#,
                "location.place.city",
            ),
            (
                r#""location":{"place":{"city":"a","country_code":"es"}}"#,
                "location.place.country_code",
            ),
            (
                r#""location":{"place":{"city":"a","distance_m":-1}}"#,
                "location.place.distance_m",
            ),
            (
                r#""location":{"place":{"city":"a","geonames_id":1.5}}"#,
                "location.place.geonames_id",
            ),
            (
                r#""location":{"place":{"city":"a","town":"b"}}"#,
                "location.place.town",
            ),
            (r#""location":{"place":"Paris"}"#, "location.place"),
            (r#""camera":{}"#, "camera"),
            (r#""camera":{"make":""}"#, "camera.make"),
            (r#""camera":{"iso":100}"#, "camera.iso"),
            (r#""orientation":"sideways""#, "orientation"),
            (
                r#""caption_provenance":{"model":"m"}"#,
                "caption_provenance.at",
            ),
            (
                r#""caption_provenance":{"at":"2026-01-01"}"#,
                "caption_provenance.model",
            ),
            (
                r#""caption_provenance":{"model":"m","at":"yesterday"}"#,
                "caption_provenance.at",
            ),
        ] {
            assert_eq!(field_of(&format!("{{{base},{member}}}")), field, "{member}");
        }
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_byte() {
        let report = parse(Path::new("t.jsonl"), b"\n{\"source\":\"chat\xff\"}\n");
        assert_eq!(report.errors.len(), 1);
        assert_eq!(report.errors[0].location.as_deref(), Some("line 2"));
        assert_eq!(
            report.errors[0].kind,
            ImportErrorKind::Syntax("invalid UTF-8 at byte 15 of the line".into())
        );
    }

    #[test]
    fn crlf_bom_and_blank_lines() {
        let text = "\u{feff}{\"source\":\"chat\",\"time\":\"2023-01-01\"}\r\n \t\r\n\r\n{\"source\":\"note\",\"time\":\"2023-01-02\"}";
        let report = parse(Path::new("t.jsonl"), text.as_bytes());
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let at: Vec<_> = report.items.iter().map(|i| i.location.as_str()).collect();
        assert_eq!(at, ["line 1", "line 4"]);
    }

    #[test]
    fn reader_matches_parse_and_caps_lines() {
        let text = b"{\"source\":\"chat\",\"time\":\"2023-01-01\"}\n\n[]\n{\"source\":\"note\",\"time\":\"2023-01-02\",\"body\":\"0123456789012345678901234567890123456789\"}\nnot json";
        let whole = parse(Path::new("t"), text);
        let mut streamed = ImportReport::default();
        // A 3-byte buffer splits every line across many `fill_buf` calls.
        for outcome in Reader::new(Path::new("t"), io::BufReader::with_capacity(3, &text[..])) {
            match outcome.unwrap() {
                Ok(item) => streamed.items.push(item),
                Err(err) => streamed.errors.push(err),
            }
        }
        assert_eq!(streamed, whole);
        assert_eq!((whole.items.len(), whole.errors.len()), (2, 2));

        let capped: Vec<_> = Reader::new(Path::new("t"), &text[..])
            .max_line_bytes(60)
            .map(|o| {
                o.unwrap()
                    .map(|i| i.location)
                    .map_err(|e| (e.location, e.kind))
            })
            .collect();
        assert_eq!(capped.len(), 4);
        assert_eq!(capped[0], Ok("line 1".to_owned()));
        assert_eq!(
            capped[2],
            Err((
                Some("line 4".to_owned()),
                ImportErrorKind::Syntax("line is longer than 60 bytes".into())
            ))
        );
    }

    #[test]
    fn reader_reports_io_errors_and_stops() {
        struct Failing;
        impl io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let mut reader = Reader::new(Path::new("t"), io::BufReader::new(Failing));
        assert!(matches!(reader.next(), Some(Err(_))));
        assert!(reader.next().is_none());
    }
}
