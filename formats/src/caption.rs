//! A vision model's description of a photo, as the captioner asks for it: ATM-Bench's SGM image
//! fields (`caption`, `short_caption`, `ocr_text`, `tags`, `entities`) in one JSON object
//! (SPEC.md §12). This module owns the reply's grammar and its strict validation; the request and
//! the transport are the engine's (`memdb::caption`).
//!
//! A model's answer is outside bytes: it may be prose, truncated JSON, the wrong types, a
//! thousand tags, or control characters. [`parse_caption_reply`] accepts exactly one JSON object
//! (optionally inside one Markdown code fence, which small models add even when told not to),
//! with only the five known keys, each of its type and within its bound; anything else is a
//! typed [`CaptionReplyError`] naming the field. Nothing is repaired or truncated silently: a
//! photo with a rejected reply stays uncaptioned rather than carry half an answer.
//!
//! Invariant: a returned [`CaptionFields`] has a non-empty caption and short caption, no text
//! with control characters (newline and tab allowed in the OCR text), and tags and entities that
//! are trimmed, non-empty, unique (case-insensitively) and within [`MAX_LIST_ITEMS`].

use serde_json::{Map, Value};

/// Longest caption accepted, in characters.
pub const MAX_CAPTION_CHARS: usize = 2_000;
/// Longest short caption accepted, in characters.
pub const MAX_SHORT_CAPTION_CHARS: usize = 200;
/// Longest OCR text accepted, in characters.
pub const MAX_OCR_CHARS: usize = 4_000;
/// Most tags, and most entities, accepted.
pub const MAX_LIST_ITEMS: usize = 32;
/// Longest tag or entity accepted, in characters.
pub const MAX_LIST_ITEM_CHARS: usize = 80;
/// Largest reply content read at all, in bytes (a reply within every bound above is far smaller).
pub const MAX_REPLY_BYTES: usize = 64 << 10;

/// The keys of the reply object, in the order the prompt lists them.
pub const CAPTION_KEYS: [&str; 5] = ["caption", "short_caption", "ocr_text", "tags", "entities"];

/// What a vision model said a photo shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptionFields {
    /// One or two sentences on what the photo shows.
    pub caption: String,
    /// A few words.
    pub short_caption: String,
    /// Text legible in the photo; `None` when there is none.
    pub ocr_text: Option<String>,
    /// Short lowercase labels (objects, scene, activity).
    pub tags: Vec<String>,
    /// Named things: people, places, brands, landmarks.
    pub entities: Vec<String>,
}

/// Why a reply is not a caption.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptionReplyError {
    /// The reply is larger than [`MAX_REPLY_BYTES`].
    #[error("the reply is {bytes} bytes, more than the {MAX_REPLY_BYTES} a caption can take")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// The reply is not one JSON object.
    #[error("the reply is not a JSON object ({why}): {snippet:?}")]
    NotAnObject {
        /// What the JSON parser said, or what was found instead.
        why: String,
        /// The start of the reply.
        snippet: String,
    },
    /// A key the grammar does not have.
    #[error("unknown key {key:?} (a caption has only {CAPTION_KEYS:?})")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A required field is absent.
    #[error("the reply has no {field:?}")]
    Missing {
        /// The field.
        field: &'static str,
    },
    /// A field of the wrong JSON type.
    #[error("{field:?} must be {expected}, not {found}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// The type the grammar asks for.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// A required text is empty (or only spaces).
    #[error("{field:?} is empty")]
    Empty {
        /// The field.
        field: &'static str,
    },
    /// A text longer than its bound.
    #[error("{field:?} has {chars} characters, more than {max}")]
    TooLong {
        /// The field (for a list, the list's).
        field: &'static str,
        /// Its length.
        chars: usize,
        /// The bound.
        max: usize,
    },
    /// A list with more items than [`MAX_LIST_ITEMS`].
    #[error("{field:?} has {items} items, more than {MAX_LIST_ITEMS}")]
    TooMany {
        /// The list.
        field: &'static str,
        /// Its length.
        items: usize,
    },
    /// A control character where none belongs.
    #[error("{field:?} holds a control character (U+{code:04X})")]
    ControlCharacter {
        /// The field.
        field: &'static str,
        /// The character.
        code: u32,
    },
}

fn snippet(text: &str) -> String {
    text.chars().take(120).collect()
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The reply's content with one surrounding Markdown code fence (```` ```json ```` … ```` ``` ````)
/// removed, if it has one.
fn unfenced(content: &str) -> &str {
    let trimmed = content.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // The info string ("json") runs to the end of the fence's first line.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('{') => inner.trim(),
        _ => body.trim(),
    }
}

/// Parses and validates a model's reply content (SPEC.md §12).
pub fn parse_caption_reply(content: &str) -> Result<CaptionFields, CaptionReplyError> {
    if content.len() > MAX_REPLY_BYTES {
        return Err(CaptionReplyError::TooLarge {
            bytes: content.len(),
        });
    }
    let body = unfenced(content);
    let value: Value = serde_json::from_str(body).map_err(|e| CaptionReplyError::NotAnObject {
        why: e.to_string(),
        snippet: snippet(content),
    })?;
    let Value::Object(object) = value else {
        return Err(CaptionReplyError::NotAnObject {
            why: format!("found {}", json_type(&value)),
            snippet: snippet(content),
        });
    };
    if let Some(key) = object.keys().find(|k| !CAPTION_KEYS.contains(&k.as_str())) {
        return Err(CaptionReplyError::UnknownKey { key: key.clone() });
    }
    let caption = required_text(&object, "caption", MAX_CAPTION_CHARS)?;
    let short_caption = required_text(&object, "short_caption", MAX_SHORT_CAPTION_CHARS)?;
    let ocr_text = optional_text(&object, "ocr_text", MAX_OCR_CHARS)?;
    let tags = list(&object, "tags")?;
    let entities = list(&object, "entities")?;
    Ok(CaptionFields {
        caption,
        short_caption,
        ocr_text,
        tags,
        entities,
    })
}

fn string_of<'a>(
    object: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, CaptionReplyError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(CaptionReplyError::WrongType {
            field,
            expected: "a string",
            found: json_type(other),
        }),
    }
}

/// `text` trimmed, checked against `max` characters and control characters (`multiline`
/// allows newline and tab: OCR text keeps a sign's line breaks).
fn checked(
    text: &str,
    field: &'static str,
    max: usize,
    multiline: bool,
) -> Result<String, CaptionReplyError> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars > max {
        return Err(CaptionReplyError::TooLong { field, chars, max });
    }
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !(multiline && matches!(c, '\n' | '\t')))
    {
        return Err(CaptionReplyError::ControlCharacter {
            field,
            code: u32::from(c),
        });
    }
    Ok(text.to_owned())
}

fn required_text(
    object: &Map<String, Value>,
    field: &'static str,
    max: usize,
) -> Result<String, CaptionReplyError> {
    let text = string_of(object, field)?.ok_or(CaptionReplyError::Missing { field })?;
    let text = checked(text, field, max, false)?;
    if text.is_empty() {
        return Err(CaptionReplyError::Empty { field });
    }
    Ok(text)
}

fn optional_text(
    object: &Map<String, Value>,
    field: &'static str,
    max: usize,
) -> Result<Option<String>, CaptionReplyError> {
    let Some(text) = string_of(object, field)? else {
        return Ok(None);
    };
    let text = checked(text, field, max, true)?;
    Ok((!text.is_empty()).then_some(text))
}

/// A list of short strings: absent or null is empty; empty strings are dropped, duplicates
/// (ignoring case) kept once, in the model's order.
fn list(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<Vec<String>, CaptionReplyError> {
    let items = match object.get(field) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(CaptionReplyError::WrongType {
                field,
                expected: "an array of strings",
                found: json_type(other),
            });
        }
    };
    if items.len() > MAX_LIST_ITEMS {
        return Err(CaptionReplyError::TooMany {
            field,
            items: items.len(),
        });
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Value::String(text) = item else {
            return Err(CaptionReplyError::WrongType {
                field,
                expected: "an array of strings",
                found: json_type(item),
            });
        };
        let text = checked(text, field, MAX_LIST_ITEM_CHARS, false)?;
        if !text.is_empty() && !out.iter().any(|t| t.eq_ignore_ascii_case(&text)) {
            out.push(text);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"caption": "The Eiffel Tower seen from the Champ de Mars on a clear evening.",
        "short_caption": "Eiffel Tower at dusk", "ocr_text": "",
        "tags": ["tower", "city", "Tower", " ", "evening"], "entities": ["Eiffel Tower", "Paris"]}"#;

    #[test]
    fn a_good_reply_is_read_with_lists_cleaned() {
        let c = parse_caption_reply(GOOD).unwrap();
        assert_eq!(c.short_caption, "Eiffel Tower at dusk");
        assert_eq!(c.ocr_text, None);
        assert_eq!(c.tags, ["tower", "city", "evening"]);
        assert_eq!(c.entities, ["Eiffel Tower", "Paris"]);
        // One code fence is tolerated; the result is the same.
        assert_eq!(
            parse_caption_reply(&format!("```json\n{GOOD}\n```")).unwrap(),
            c
        );
        // OCR text keeps its line breaks.
        let sign = r#"{"caption":"A shop sign.","short_caption":"sign","ocr_text":"OPEN\nDAILY"}"#;
        let c = parse_caption_reply(sign).unwrap();
        assert_eq!(c.ocr_text.as_deref(), Some("OPEN\nDAILY"));
        assert!(c.tags.is_empty() && c.entities.is_empty());
    }

    #[test]
    fn every_deviation_is_a_typed_error_naming_its_field() {
        let long = "x".repeat(MAX_SHORT_CAPTION_CHARS + 1);
        let many: Vec<String> = (0..=MAX_LIST_ITEMS).map(|i| format!("t{i}")).collect();
        let cases: Vec<(String, CaptionReplyError)> = vec![
            (
                "I see a tower.".into(),
                CaptionReplyError::NotAnObject {
                    why: String::new(),
                    snippet: String::new(),
                },
            ),
            (
                "[1, 2]".into(),
                CaptionReplyError::NotAnObject {
                    why: String::new(),
                    snippet: String::new(),
                },
            ),
            (
                r#"Here it is: {"caption":"a","short_caption":"b"}"#.into(),
                CaptionReplyError::NotAnObject {
                    why: String::new(),
                    snippet: String::new(),
                },
            ),
            (
                r#"{"caption":"a","short_caption":"b","mood":"happy"}"#.into(),
                CaptionReplyError::UnknownKey { key: "mood".into() },
            ),
            (
                r#"{"short_caption":"b"}"#.into(),
                CaptionReplyError::Missing { field: "caption" },
            ),
            (
                r#"{"caption":"a","short_caption":"  "}"#.into(),
                CaptionReplyError::Empty {
                    field: "short_caption",
                },
            ),
            (
                r#"{"caption":7,"short_caption":"b"}"#.into(),
                CaptionReplyError::WrongType {
                    field: "caption",
                    expected: "a string",
                    found: "a number",
                },
            ),
            (
                r#"{"caption":"a","short_caption":"b","tags":"tower"}"#.into(),
                CaptionReplyError::WrongType {
                    field: "tags",
                    expected: "an array of strings",
                    found: "a string",
                },
            ),
            (
                r#"{"caption":"a","short_caption":"b","entities":["x",1]}"#.into(),
                CaptionReplyError::WrongType {
                    field: "entities",
                    expected: "an array of strings",
                    found: "a number",
                },
            ),
            (
                format!(r#"{{"caption":"a","short_caption":"{long}"}}"#),
                CaptionReplyError::TooLong {
                    field: "short_caption",
                    chars: MAX_SHORT_CAPTION_CHARS + 1,
                    max: MAX_SHORT_CAPTION_CHARS,
                },
            ),
            (
                serde_json::json!({"caption":"a","short_caption":"b","tags":many}).to_string(),
                CaptionReplyError::TooMany {
                    field: "tags",
                    items: MAX_LIST_ITEMS + 1,
                },
            ),
            (
                "{\"caption\":\"a\\u0007b\",\"short_caption\":\"b\"}".into(),
                CaptionReplyError::ControlCharacter {
                    field: "caption",
                    code: 7,
                },
            ),
            (
                " ".repeat(MAX_REPLY_BYTES + 1),
                CaptionReplyError::TooLarge {
                    bytes: MAX_REPLY_BYTES + 1,
                },
            ),
        ];
        for (reply, want) in cases {
            let got = parse_caption_reply(&reply).unwrap_err();
            match (&got, &want) {
                (CaptionReplyError::NotAnObject { .. }, CaptionReplyError::NotAnObject { .. }) => {}
                _ => assert_eq!(got, want, "{reply:.80}"),
            }
        }
    }
}
