//! The shapes `memdb mcp` answers agents in, and the bounds on them: a compact hit (id, text cut
//! to `max_chars`, score, time, scope, one line of why; no null field) and a whole answer that
//! never exceeds `max_bytes` of JSON, saying what it left out. Also the tool schemas made
//! portable (no type arrays, no formats beyond JSON Schema's own), which strict clients and the
//! MCP Inspector need.
//!
//! Invariants:
//! - A cut text ends on a character boundary and the hit says `truncated: true` and how long
//!   the whole text is; the whole item stays available through `get_memory`.
//! - The serialized answer of [`bounded`] is at most its `max_bytes` (see its doc for the one
//!   exception: a cap below the envelope's own size).

use memdb::Item;
use memdb::recall::Explanation;
use memdb_query::reports::memory_text;
use serde_json::{Map, Value, json};

/// A hit's text is cut to this many characters unless the call says otherwise.
pub(crate) const DEFAULT_MAX_CHARS: usize = 200;
/// The range `max_chars` may take.
pub(crate) const MAX_CHARS_RANGE: std::ops::RangeInclusive<usize> = 20..=100_000;
/// An answer is at most this many bytes of JSON unless the call says otherwise: ten hits at
/// the default `max_chars` fit.
pub(crate) const DEFAULT_MAX_BYTES: usize = 4_096;
/// The range `max_bytes` may take.
pub(crate) const MAX_BYTES_RANGE: std::ops::RangeInclusive<usize> = 512..=1 << 20;

/// `text` cut to at most `max_chars` characters, and whether it was cut.
pub(crate) fn cut(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// One memory as agents see it in searches and lists: `id`, `memory` (its text, cut to
/// `max_chars`; `truncated` and `chars` when cut), `time`, `source`, the scope's components
/// that are set, `speaker` when there is one, and what the caller adds (score, why).
pub(crate) fn compact_memory(item: &Item, max_chars: usize) -> Map<String, Value> {
    let text = memory_text(item);
    let (shown, truncated) = cut(&text, max_chars);
    let mut hit = Map::new();
    hit.insert("id".into(), json!(item.id));
    hit.insert("memory".into(), json!(shown));
    if truncated {
        hit.insert("truncated".into(), json!(true));
        hit.insert("chars".into(), json!(text.chars().count()));
    }
    hit.insert("time".into(), json!(item.fields.time.to_rfc3339()));
    hit.insert("source".into(), json!(item.fields.source.name()));
    for (name, id) in item.fields.scope.components() {
        hit.insert(name.into(), json!(id));
    }
    if let Some(speaker) = &item.fields.speaker {
        let (speaker, _) = cut(speaker, 40);
        hit.insert("speaker".into(), json!(speaker));
    }
    hit
}

/// Why recall found a hit, in one line: each signal's rank (`dense #1 (0.62)`, `lexical #3`,
/// `graph #2`, `place #1 Lisbon, Portugal`).
pub(crate) fn why_line(why: &Explanation) -> String {
    let mut parts = Vec::new();
    if let Some(rank) = why.dense_rank {
        match why.dense_score {
            Some(score) => parts.push(format!("dense #{rank} ({score:.2})")),
            None => parts.push(format!("dense #{rank}")),
        }
    }
    if let Some(rank) = why.lexical_rank {
        parts.push(format!("lexical #{rank}"));
    }
    if let Some(rank) = why.graph_rank {
        parts.push(format!("graph #{rank}"));
    }
    if let Some(rank) = why.place_rank {
        match &why.place {
            Some(place) => parts.push(format!("place #{rank} {}", cut(place, 60).0)),
            None => parts.push(format!("place #{rank}")),
        }
    }
    if parts.is_empty() {
        "context".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `{key: entries, …rest}` with as many of `entries` (in order) as fit in `max_bytes` of JSON;
/// when some do not, `omitted` counts them and `note` says how to see them. The envelope
/// (`rest`, the note) always stays, so a cap smaller than it returns no entry and may exceed
/// the cap by the envelope's own size; `MAX_BYTES_RANGE` keeps caps well above it.
pub(crate) fn bounded(
    key: &str,
    entries: Vec<Value>,
    rest: Map<String, Value>,
    max_bytes: usize,
) -> Value {
    let total = entries.len();
    let mut doc = rest;
    doc.insert(key.into(), Value::Array(Vec::new()));
    // The note's worst case is reserved up front so that adding it never breaks the cap.
    let note_reserve = r#","omitted":1000000,"note":""#.len() + NOTE.len() + 2;
    let mut size = Value::Object(doc.clone()).to_string().len();
    let mut kept = Vec::new();
    for entry in entries {
        let len = entry.to_string().len() + usize::from(!kept.is_empty());
        let reserve = if kept.len() + 1 < total {
            note_reserve
        } else {
            0
        };
        if size + len + reserve > max_bytes {
            break;
        }
        size += len;
        kept.push(entry);
    }
    let omitted = total - kept.len();
    doc.insert(key.into(), Value::Array(kept));
    if omitted > 0 {
        doc.insert("omitted".into(), json!(omitted));
        doc.insert("note".into(), json!(NOTE));
    }
    Value::Object(doc)
}

const NOTE: &str =
    "answer cut at max_bytes: raise max_bytes, lower max_chars or k, or get_memory by id";

/// `schema` made portable: a type array holding `null` (schemars' `Option<T>`) becomes its
/// one other type, `nullable` and number `format`s (`uint32`, `double`: not JSON Schema's) go,
/// and every property without a type gets one from its default or `string`, recursively.
pub(crate) fn portable_schema(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let single = match kept.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        };
        match single {
            Some(one) => {
                map.insert("type".into(), one);
            }
            None => {
                map.insert("type".into(), Value::Array(kept));
            }
        }
    }
    map.remove("nullable");
    if map.get("format").and_then(Value::as_str).is_some_and(|f| {
        matches!(
            f,
            "uint"
                | "uint8"
                | "uint16"
                | "uint32"
                | "uint64"
                | "int32"
                | "int64"
                | "double"
                | "float"
        )
    }) {
        map.remove("format");
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for prop in props.values_mut() {
            if let Value::Object(p) = prop
                && !p.contains_key("type")
                && !p.contains_key("$ref")
            {
                let ty = match p.get("default") {
                    Some(Value::Bool(_)) => "boolean",
                    Some(Value::Number(_)) => "number",
                    _ => "string",
                };
                p.insert("type".into(), json!(ty));
            }
            portable_schema(prop);
        }
    }
    if let Some(items) = map.get_mut("items") {
        portable_schema(items);
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            for def in defs.values_mut() {
                portable_schema(def);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("héllo wörld", 4), ("héll", true));
        assert_eq!(cut("short", 10), ("short", false));
        assert_eq!(cut("exact", 5), ("exact", false));
    }

    #[test]
    fn bounded_answers_fit_their_cap_and_count_what_they_left_out() {
        let entries: Vec<Value> = (0..50)
            .map(|i| json!({"id": i, "memory": "x".repeat(150)}))
            .collect();
        for cap in [512, 1_000, 4_096, 6_000] {
            let doc = bounded("results", entries.clone(), Map::new(), cap);
            let len = doc.to_string().len();
            assert!(len <= cap, "{len} > {cap}");
            let kept = doc["results"].as_array().unwrap().len();
            assert!(kept > 0, "cap {cap} kept nothing");
            assert_eq!(doc["omitted"], json!(50 - kept), "cap {cap}");
        }
        let all = bounded("results", entries[..3].to_vec(), Map::new(), 4_096);
        assert_eq!(all["results"].as_array().unwrap().len(), 3);
        assert!(all.get("omitted").is_none() && all.get("note").is_none());
    }

    #[test]
    fn portable_schemas_have_one_type_per_property() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "k": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "since": {"type": ["string", "null"]},
                "ids": {"type": "array", "items": {"type": "integer", "format": "uint64"}},
                "confirm": {"default": true},
            }
        });
        portable_schema(&mut schema);
        assert_eq!(
            schema["properties"]["k"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(schema["properties"]["since"], json!({"type": "string"}));
        assert_eq!(
            schema["properties"]["ids"]["items"],
            json!({"type": "integer"})
        );
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
    }
}
