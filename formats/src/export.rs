//! Items out, in the JSONL import format (SPEC.md §8.1): the inverse of `import::jsonl`, so
//! `memdb export` writes what `memdb import jsonl` reads back — the same fields, the same local
//! time and offset to the millisecond, undated items as `"time": null`, the original file as a
//! relative path with its SHA-256.
//!
//! Invariant (test `an_exported_line_imports_as_the_same_fields`): parsing a written line gives
//! back the fields it was written from.

use serde_json::{Map, Value, json};

use crate::item::{Camera, EventTime, ItemFields, PlaceName};

/// The original file an exported item names: a path relative to the JSONL file's folder, and
/// the SHA-256 of its bytes (lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginalFile {
    /// Relative path, `/`-separated, no `..`.
    pub file: String,
    /// SHA-256 of the file, 64 lowercase hex digits.
    pub sha256: String,
}

/// `time` as the JSONL format writes it: local date-time to the millisecond with its offset
/// (`2023-05-08T13:56:00.250+02:00`; no fraction when it is zero), or `null` when undated.
pub fn time_value(time: EventTime) -> Value {
    if time.is_undated() {
        return Value::Null;
    }
    let Some(local_ms) = time.local_ms() else {
        return Value::Null;
    };
    let Ok(local) = jiff::Timestamp::from_millisecond(local_ms) else {
        return Value::Null;
    };
    let civil = jiff::tz::Offset::UTC.to_datetime(local);
    let ms = local_ms.rem_euclid(1000);
    let fraction = if ms == 0 {
        String::new()
    } else {
        format!(".{ms:03}")
    };
    let sign = if time.offset_minutes < 0 { '-' } else { '+' };
    let abs = time.offset_minutes.unsigned_abs();
    Value::String(format!(
        "{}{fraction}{sign}{:02}:{:02}",
        civil.strftime("%Y-%m-%dT%H:%M:%S"),
        abs / 60,
        abs % 60
    ))
}

/// A place as JSON (the JSONL `location.place` member, and the `place` of an item's JSON):
/// every member it has, absent ones left out.
pub fn place_value(place: &PlaceName) -> Value {
    let mut object = Map::new();
    object.insert("city".into(), json!(place.city));
    for (key, value) in [
        ("locality", json!(place.locality)),
        ("region", json!(place.region)),
        ("country", json!(place.country)),
        ("country_code", json!(place.country_code)),
        ("distance_m", json!(place.distance_m)),
        ("geonames_id", json!(place.geonames_id)),
    ] {
        if !value.is_null() {
            object.insert(key.into(), value);
        }
    }
    Value::Object(object)
}

/// A camera as JSON (the JSONL `camera` member): its known members only.
pub fn camera_value(camera: &Camera) -> Value {
    let mut object = Map::new();
    for (key, value) in [
        ("make", &camera.make),
        ("model", &camera.model),
        ("lens", &camera.lens),
    ] {
        if let Some(value) = value {
            object.insert(key.into(), json!(value));
        }
    }
    Value::Object(object)
}

/// One JSONL line (without its newline) for an item's `fields`, naming the item it supersedes
/// by external id and its original file.
pub fn item_line(
    fields: &ItemFields,
    supersedes: Option<&str>,
    original: Option<&OriginalFile>,
) -> String {
    let mut object = Map::new();
    object.insert("source".into(), json!(fields.source.name()));
    object.insert("time".into(), time_value(fields.time));
    let mut optional = |key: &str, value: Value| {
        let empty = match &value {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            _ => false,
        };
        if !empty {
            object.insert(key.to_owned(), value);
        }
    };
    optional("external_id", json!(fields.external_id));
    if let Some(location) = &fields.location {
        let mut place = Map::new();
        if let Some(name) = &location.name {
            place.insert("name".into(), json!(name));
        }
        if let Some(geo) = location.geo {
            place.insert("lat".into(), json!(geo.lat));
            place.insert("lon".into(), json!(geo.lon));
        }
        if let Some(p) = &location.place {
            place.insert("place".into(), place_value(p));
        }
        optional("location", Value::Object(place));
    }
    optional("entities", json!(fields.entities));
    optional("tags", json!(fields.tags));
    optional("ocr", json!(fields.ocr));
    optional("caption", json!(fields.caption));
    optional("short_caption", json!(fields.short_caption));
    if let Some(p) = &fields.caption_provenance {
        optional(
            "caption_provenance",
            json!({"model": p.model, "at": time_value(EventTime::utc(p.at_ms))}),
        );
    }
    if let Some(camera) = &fields.camera {
        optional("camera", camera_value(camera));
    }
    optional("orientation", json!(fields.orientation.map(|o| o.name())));
    optional("summary", json!(fields.summary));
    optional("body", json!(fields.body));
    optional("speaker", json!(fields.speaker));
    optional("from", json!(fields.from));
    optional("to", json!(fields.to));
    optional("supersedes", json!(supersedes));
    optional("user_id", json!(fields.scope.user_id));
    optional("agent_id", json!(fields.scope.agent_id));
    optional("run_id", json!(fields.scope.run_id));
    if let Some(original) = original {
        optional(
            "original",
            json!({"file": original.file, "sha256": original.sha256}),
        );
    }
    Value::Object(object).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{Camera, GeoPoint, Location, PlaceName, Source};

    #[test]
    fn times_keep_their_offset_and_milliseconds() {
        let t = EventTime::parse("2023-05-08T13:56:00.250+02:00").unwrap();
        assert_eq!(time_value(t), json!("2023-05-08T13:56:00.250+02:00"));
        let t = EventTime::parse("2001-05-14T19:36:00-07:00").unwrap();
        assert_eq!(time_value(t), json!("2001-05-14T19:36:00-07:00"));
        assert_eq!(time_value(EventTime::UNDATED), Value::Null);
        let t = EventTime::parse("1969-12-31T23:59:59.999Z").unwrap();
        assert_eq!(time_value(t), json!("1969-12-31T23:59:59.999+00:00"));
    }

    #[test]
    fn an_exported_line_imports_as_the_same_fields() {
        let mut f = ItemFields::new(
            Source::Email,
            EventTime::parse("2001-05-14T19:36:00.007-07:00").unwrap(),
        );
        f.external_id = Some("mid:<a@b>#00ff00ff".into());
        f.location = Some(Location {
            name: Some("Helsinki \"Vantaa\" ✈".into()),
            geo: Some(GeoPoint {
                lat: 60.146_705_555_555_55,
                lon: 24.906_772_222_222_22,
            }),
            place: None,
        });
        f.entities = vec!["Ana".into(), "Rui".into()];
        f.tags = vec!["time:mbox".into()];
        f.summary = Some("Re: dinner\nat 8".into());
        f.body = Some("line one\n\tline two".into());
        f.from = Some("Ana <a@b>".into());
        f.to = vec!["Rui <r@b>".into()];
        let mut undated = ItemFields::new(Source::Image, EventTime::UNDATED);
        undated.caption = Some("a shop sign".into());
        let photo = crate::item::photo_fields();
        let mut hand = ItemFields::new(Source::Note, EventTime::UNDATED);
        hand.location = Some(Location {
            name: None,
            geo: None,
            place: Some(PlaceName {
                city: "Springfield".into(),
                ..PlaceName::default()
            }),
        });
        hand.camera = Some(Camera {
            lens: Some("50mm".into()),
            ..Camera::default()
        });
        let original = OriginalFile {
            file: "originals/7-x.jpg".into(),
            sha256: "ab".repeat(32),
        };
        for (fields, original) in [
            (f, None),
            (undated, Some(&original)),
            (photo, None),
            (hand, None),
        ] {
            let line = item_line(&fields, None, original);
            let report =
                crate::import::jsonl::parse(std::path::Path::new("x.jsonl"), line.as_bytes());
            assert!(report.errors.is_empty(), "{line}: {:?}", report.errors);
            assert_eq!(report.items[0].draft.fields, fields, "{line}");
            assert_eq!(report.items[0].original.is_some(), original.is_some());
        }
    }

    #[test]
    fn a_line_names_every_field_it_has() {
        let mut f = ItemFields::new(
            Source::Image,
            EventTime::parse("2022-05-07T16:41:09+01:00").unwrap(),
        );
        f.external_id = Some("sha256:ab".into());
        f.location = Some(Location {
            name: Some("Lisbon".into()),
            geo: Some(GeoPoint {
                lat: 38.7163,
                lon: -9.1318,
            }),
            place: None,
        });
        f.tags = vec!["photo".into()];
        let original = OriginalFile {
            file: "originals/1-a.jpg".into(),
            sha256: "00".repeat(32),
        };
        let line = item_line(&f, Some("older"), Some(&original));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["time"], "2022-05-07T16:41:09+01:00");
        assert_eq!(v["location"]["lat"], 38.7163);
        assert_eq!(v["supersedes"], "older");
        assert_eq!(v["original"]["file"], "originals/1-a.jpg");
        assert!(v.get("body").is_none() && v.get("to").is_none());
    }
}
