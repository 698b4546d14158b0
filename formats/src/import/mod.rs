//! Importers of outside data into [`ItemDraft`](crate::item::ItemDraft)s.
//!
//! Each importer parses untrusted bytes, returns the good records and a typed
//! [`ImportError`](crate::ImportError) for each bad one, so one bad record never stops the rest.
//!
//! - [`jsonl`]: memdb's own interchange format, one SGM item per line (SPEC.md §8.1).
//! - [`locomo`]: LoCoMo benchmark conversations, one chat item per dialogue turn, from one
//!   conversation file or the released `locomo10.json` array (SPEC.md §8.2), plus the
//!   benchmark's question/evidence annotations for the benchmark programs.
//! - [`mail`]: e-mail messages and mbox mailboxes (SPEC.md §8.3).
//! - [`photo`]: JPEG photos (SPEC.md §8.4).
//! - [`atm`]: ATM-Bench's memory files (e-mails, image and video records) and its question and
//!   prediction files (SPEC.md §8.6).
//! - [`sniff()`]: what a file is from its first bytes, so a refusal can say what it got
//!   (`PNG image: memdb imports JPEG photos`).
//!
//! This module also holds the JSON helpers the JSON importers share: an object reader that
//! keeps key order and sees duplicate keys (serde_json's `Value` keeps neither), and the
//! wording of type errors.
//!
//! Invariants (checked by the fuzz targets `jsonl_line`, `locomo_file`, `mail_message` and
//! `photo_file`): no input makes an importer panic; every draft an importer returns satisfies
//! [`ItemFields::validate`](crate::item::ItemFields::validate); memory use is proportional to
//! the input, never to a size the input claims (JSON carries no length prefixes, and
//! serde_json bounds nesting at 128 levels, so no input can exhaust the stack either). No
//! importer reads a clock or a file's metadata: an item without a time in its source is
//! [`EventTime::UNDATED`](crate::item::EventTime::UNDATED).

use std::fmt;
use std::path::Path;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::item::ItemDraft;
use crate::{ImportError, ImportErrorKind};

pub mod atm;
pub mod jsonl;
pub mod locomo;
pub mod mail;
pub mod photo;
mod sniff;

pub use jsonl::Original;
pub use sniff::{FileKind, sniff};

/// One record that imported cleanly, and where it came from in its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Where the record is in its file, in the same words as [`ImportError::location`]:
    /// `line 12` (JSONL), `session_3[4] D3:5` (LoCoMo: session, 0-based turn index, dia_id).
    pub location: String,
    /// The item to store.
    pub draft: ItemDraft,
    /// The item's original file, when the record names one (JSONL `original`); the caller
    /// reads, checks and stores it.
    pub original: Option<Original>,
}

/// What an importer made of one file: the good records in file order, and one error per bad
/// record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImportReport {
    /// Records that imported, in file order.
    pub items: Vec<Imported>,
    /// One error per record that did not.
    pub errors: Vec<ImportError>,
}

/// Builds an [`ImportError`] for `file` at `location`.
pub(crate) fn error(file: &Path, location: Option<String>, kind: ImportErrorKind) -> ImportError {
    ImportError {
        file: file.to_path_buf(),
        location,
        kind,
    }
}

/// A JSON object as its members appear in the text: in order, duplicates kept.
///
/// The importers want both: LoCoMo sessions are reported in file order, and a duplicate key in
/// a JSONL line is an error rather than a silent "last one wins".
///
/// Member values are `V`: parsed JSON by default, or raw JSON text
/// (`Box<serde_json::value::RawValue>`) where a member is to be read on its own later.
#[derive(Debug, Default)]
pub(crate) struct Object<V = Value>(pub(crate) Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Object<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for ObjectVisitor<V> {
            type Value = Object<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<V>, A::Error> {
                // No `size_hint` pre-allocation: the vector grows only with members read.
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, V>()? {
                    members.push(member);
                }
                Ok(Object(members))
            }
        }
        deserializer.deserialize_map(ObjectVisitor(std::marker::PhantomData))
    }
}

impl<V> Object<V> {
    /// The first key that appears more than once, if any.
    pub(crate) fn first_duplicate(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::with_capacity(self.0.len());
        self.0
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !seen.insert(*k))
    }
}

impl Object {
    /// Parses `bytes` as exactly one JSON object (whitespace around it allowed).
    pub(crate) fn parse(bytes: &[u8]) -> Result<Object, ImportErrorKind> {
        serde_json::from_slice(bytes).map_err(|e| ImportErrorKind::Syntax(describe_json_error(&e)))
    }
}

/// serde_json's message with its position as `line L column C`, or `column C` alone for a
/// single-line document (a JSONL line, where "line 1" would be confused with the file's line).
pub(crate) fn describe_json_error(err: &serde_json::Error) -> String {
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match full.strip_suffix(&suffix) {
        Some(message) if err.line() == 1 => format!("{message} (column {})", err.column()),
        Some(message) => format!("{message} (line {} column {})", err.line(), err.column()),
        None => full,
    }
}

/// The JSON type of `value`, for "expected X, found Y" messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// An `InvalidField` error saying `field` should have been `expected`.
pub(crate) fn wrong_type(field: &str, expected: &str, found: &Value) -> ImportErrorKind {
    ImportErrorKind::InvalidField {
        field: field.to_owned(),
        reason: format!("expected {expected}, found {}", type_name(found)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keeps_order_and_duplicates() {
        let obj = Object::parse(br#" {"b": 1, "a": [2], "b": null} "#).unwrap();
        let keys: Vec<&str> = obj.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        assert_eq!(obj.first_duplicate(), Some("b"));
        assert_eq!(
            Object::parse(br#"{"x": 1}"#).unwrap().first_duplicate(),
            None
        );
    }

    #[test]
    fn non_objects_and_bad_json_are_syntax_errors() {
        for bad in [
            &b"[1]"[..],
            b"\"s\"",
            b"{",
            b"{} {}",
            b"",
            b"{\"a\":1,}",
            b"\xff",
        ] {
            match Object::parse(bad) {
                Err(ImportErrorKind::Syntax(msg)) => {
                    assert!(!msg.contains("line 1 column"), "{msg}")
                }
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
            }
        }
    }
}
