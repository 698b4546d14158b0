//! The optional node extractor backed by a local OpenAI-compatible server (llama.cpp's
//! `llama-server`, Ollama, vLLM…), with ScrapMem's prompts (its Figures 5 and 6). Off by
//! default: a store uses the rule extractor ([`super::extract`]) unless
//! [`super::GraphOptions::extractor`] / [`crate::RecallOptions::extractor`] name this one.
//!
//! Nothing leaves the device through it: the endpoint must be a loopback address
//! (`127.0.0.1`, `::1`, `localhost`), checked when the extractor is made. Whatever the server
//! answers is untrusted: a reply that is not the promised JSON is a typed error naming the
//! endpoint; accepted phrases go through the same normalisation as the rule extractor's
//! (lowercase, trimmed, at most [`super::extract::MAX_NODE_CHARS`] characters, no duplicates,
//! at most [`memdb_text::MAX_NODES`]).

use std::time::Duration;

use memdb_formats::item::ItemFields;
use serde_json::{Value, json};

use super::NodeExtractor;
use crate::error::{Error, Result};
use memdb_endpoint::{LoopbackChat, snippet};
use memdb_text::{Candidates, NodeDraft, NodeKind};

const ITEM_SYSTEM: &str = "You extract semantic memory nodes from a single email for memory retrieval. Return ONLY a JSON object with key \"semantic_nodes\" (array of 3-8 concise phrases). Focus on named entities (people, places, brands, products), key objects, actions, events, and concrete time mentions. Use short lowercase phrases. Do NOT echo the email field names. Do NOT include the words Subject/Summary/Detail.";

const ITEM_EXAMPLE: &str = "Here are examples of the desired behaviour. Input:\nDay: 2022-05-07\nTimestamp: 2022-05-07T09:12\nSubject: Hotel booking confirmation\nShort summary: Booked Grand Plaza Lisbon for 2 nights\nDetail: Your reservation at Grand Plaza Lisbon from May 10 to May 12 is confirmed. Total 240 EUR.\nOutput:\n{\"semantic_nodes\": [\"grand plaza lisbon\", \"hotel booking\", \"2 nights\", \"may 10\", \"may 12\", \"240 eur\", \"reservation\"]}";

const QUERY_SYSTEM: &str = "You extract semantic memory nodes from a user's question so we can match them against a memory graph. Return JSON ONLY with key \"semantic_nodes\" (array of 3-10 concise phrases). Focus on entities (people, places, brands, products), objects, actions, events, and concrete time mentions. Use lowercase, short phrases, no stop words.";

const QUERY_EXAMPLE: &str = "Q: On 2022-05-10 in Lisbon, what hotel did I book and how many nights?\nA: {\"semantic_nodes\": [\"2022-05-10\", \"lisbon\", \"hotel booking\", \"number of nights\", \"reservation\"]}";

/// Node extraction by a local chat-completions server.
#[derive(Debug, Clone)]
pub struct LlmExtractor {
    chat: LoopbackChat,
    model: String,
}

impl LlmExtractor {
    /// An extractor calling `base_url` (for example `http://127.0.0.1:8080`; the request goes
    /// to `<base_url>/v1/chat/completions`) with model name `model`, waiting at most
    /// `timeout` per call (the paper: 30 s). Refuses a non-loopback URL.
    pub fn new(base_url: &str, model: &str, timeout: Duration) -> Result<LlmExtractor> {
        let chat =
            LoopbackChat::new(base_url, timeout).map_err(|e| Error::Extractor(e.to_string()))?;
        Ok(LlmExtractor {
            chat,
            model: model.to_owned(),
        })
    }

    fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<Vec<NodeDraft>> {
        let request = json!({
            "model": self.model,
            "temperature": 0.0,
            "max_tokens": max_tokens,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        });
        let content = self
            .chat
            .complete(&request)
            .map_err(|e| Error::Extractor(e.to_string()))?;
        parse_content(&content)
            .map_err(|why| Error::Extractor(format!("{}: {why}", self.chat.url())))
    }
}

impl NodeExtractor for LlmExtractor {
    fn item_nodes(&self, fields: &ItemFields) -> Result<Vec<NodeDraft>> {
        let day = fields
            .time
            .local_date()
            .map(|d| d.to_string())
            .unwrap_or_default();
        let stamp = fields.time.to_rfc3339();
        let subject = fields
            .summary
            .as_deref()
            .or(fields.caption.as_deref())
            .unwrap_or("");
        let who = fields
            .speaker
            .as_deref()
            .or(fields.from.as_deref())
            .unwrap_or("");
        let detail = [&fields.body, &fields.ocr]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ");
        let user = format!(
            "{ITEM_EXAMPLE}\nInput:\nDay: {day}\nTimestamp: {}\nSubject: {subject}\nShort summary: {who}\nDetail: {detail}\nOutput:",
            stamp.get(..16).unwrap_or(&stamp)
        );
        self.complete(ITEM_SYSTEM, &user, 256)
    }

    fn query_nodes(&self, question: &str) -> Result<Vec<NodeDraft>> {
        let user = format!(
            "{QUERY_EXAMPLE}\nQ: {question}\nOutput JSON only (no markdown, no explanation)."
        );
        self.complete(QUERY_SYSTEM, &user, 200)
    }
}

/// The nodes in a reply's content: a JSON object with `semantic_nodes` (code fences and prose
/// around it tolerated: the extractor's phrases are normalised and bounded whatever they are).
fn parse_content(content: &str) -> std::result::Result<Vec<NodeDraft>, String> {
    let start = content
        .find('{')
        .ok_or_else(|| format!("no JSON object in {}", snippet(content)))?;
    let end = content
        .rfind('}')
        .ok_or_else(|| format!("no JSON object in {}", snippet(content)))?;
    let object: Value = serde_json::from_str(content.get(start..=end).unwrap_or(""))
        .map_err(|e| format!("content is not a JSON object ({e}): {}", snippet(content)))?;
    let phrases = object
        .get("semantic_nodes")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no semantic_nodes array in {}", snippet(content)))?;
    let mut out = Candidates::default();
    for phrase in phrases.iter().filter_map(Value::as_str) {
        out.push(kind_of(phrase), phrase);
    }
    Ok(out.finish(memdb_text::MAX_NODES))
}

/// A kind for a phrase the model gave: ISO dates and amounts are recognised, other phrases are
/// phrases (several words) or words.
fn kind_of(phrase: &str) -> NodeKind {
    let p = phrase.trim();
    let iso = p.len() >= 4
        && p.chars().all(|c| c.is_ascii_digit() || c == '-')
        && p.chars().take(4).all(|c| c.is_ascii_digit());
    if iso {
        return NodeKind::Date;
    }
    let mut words = p.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some(n), Some(cur), None)
            if n.chars().all(|c| c.is_ascii_digit() || c == '.')
                && cur.len() == 3
                && cur.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            NodeKind::Amount
        }
        (Some(_), None, None) => NodeKind::Word,
        _ => NodeKind::Phrase,
    }
}

#[cfg(test)]
mod tests {
    use memdb_formats::item::{EventTime, Source};

    use super::*;
    use memdb_endpoint_stub::{self as stub, completion};

    fn serve(replies: Vec<(u16, String)>) -> (String, std::thread::JoinHandle<Vec<String>>) {
        stub::serve(
            replies
                .into_iter()
                .map(|(status, body)| stub::Reply {
                    status,
                    ..stub::Reply::ok(body)
                })
                .collect(),
        )
    }

    #[test]
    fn extracts_through_a_loopback_server_with_the_papers_prompts() {
        let (url, server) = serve(vec![
            (
                200,
                completion(
                    "```json\n{\"semantic_nodes\": [\"Grand Plaza Lisbon\", \"hotel booking\", \"240 eur\", \"2022-05-10\", \"hotel booking\"]}\n```",
                ),
            ),
            (
                200,
                completion("{\"semantic_nodes\": [\"lisbon\", \"hotel\"]}"),
            ),
        ]);
        let llm = LlmExtractor::new(&url, "local", Duration::from_secs(10)).unwrap();
        let mut fields = ItemFields::new(
            Source::Email,
            EventTime::parse("2022-05-07T09:12:00+01:00").unwrap(),
        );
        fields.summary = Some("Hotel booking confirmation".into());
        fields.body = Some("Your reservation at Grand Plaza Lisbon is confirmed.".into());
        let nodes = llm.item_nodes(&fields).unwrap();
        let phrases: Vec<&str> = nodes.iter().map(|n| n.phrase.as_str()).collect();
        assert_eq!(
            phrases,
            [
                "2022-05-10",
                "240 eur",
                "grand plaza lisbon",
                "hotel booking"
            ]
        );
        assert_eq!(nodes[0].kind, NodeKind::Date);
        assert_eq!(nodes[1].kind, NodeKind::Amount);
        let query = llm.query_nodes("Which hotel in Lisbon?").unwrap();
        assert_eq!(query.len(), 2);

        let requests = server.join().unwrap();
        let item: Value = serde_json::from_str(&requests[0]).unwrap();
        assert_eq!(item["messages"][0]["content"], ITEM_SYSTEM);
        let user = item["messages"][1]["content"].as_str().unwrap();
        assert!(
            user.contains("Day: 2022-05-07") && user.contains("Grand Plaza Lisbon is confirmed"),
            "{user}"
        );
        assert_eq!(item["temperature"], 0.0);
        let q: Value = serde_json::from_str(&requests[1]).unwrap();
        assert_eq!(q["messages"][0]["content"], QUERY_SYSTEM);
        assert!(
            q["messages"][1]["content"]
                .as_str()
                .unwrap()
                .contains("Q: Which hotel in Lisbon?")
        );
    }

    #[test]
    fn a_bad_reply_is_a_typed_error_naming_the_endpoint() {
        let (url, server) = serve(vec![
            (500, "model not loaded".into()),
            (200, "not json".into()),
            (200, completion("I think the nodes are lisbon and hotel")),
            (200, json!({"choices": []}).to_string()),
        ]);
        let llm = LlmExtractor::new(&url, "local", Duration::from_secs(10)).unwrap();
        for want in ["HTTP 500", "not JSON", "no JSON object", "no choices"] {
            let err = llm.query_nodes("where?").unwrap_err().to_string();
            assert!(err.contains(want) && err.contains(&url), "{want}: {err}");
        }
        server.join().unwrap();
    }

    #[test]
    fn a_graph_update_can_take_its_nodes_from_the_server() {
        let (url, server) = serve(vec![(
            200,
            completion(
                "{\"semantic_nodes\": [\"grand plaza lisbon\", \"hotel booking\", \"240 eur\"]}",
            ),
        )]);
        let llm = LlmExtractor::new(&url, "local", Duration::from_secs(10)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::create(dir.path().join("s"), crate::Options::default()).unwrap();
        let mut fields = ItemFields::new(
            Source::Email,
            EventTime::parse("2022-05-07T09:12:00+00:00").unwrap(),
        );
        fields.body = Some("Booked the Grand Plaza in Lisbon.".into());
        let mut batch = store.batch();
        batch.put(memdb_formats::item::ItemDraft {
            fields,
            supersedes: None,
        });
        batch.commit().unwrap();
        struct Unit;
        impl crate::Embedder for Unit {
            fn embed(
                &self,
                texts: &[&str],
            ) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
                // Distinct phrases, orthogonal vectors: nothing merges.
                Ok((0..texts.len())
                    .map(|i| (0..8).map(|d| if d == i { 1.0 } else { 0.0 }).collect())
                    .collect())
            }
        }
        let options = crate::graph::GraphOptions {
            extractor: std::sync::Arc::new(llm),
            ..crate::graph::GraphOptions::default()
        };
        let report = store.update_graph(&Unit, &options, &mut |_, _| {}).unwrap();
        assert_eq!(
            (report.items, report.new_nodes, report.new_paths),
            (1, 3, 1)
        );
        let snap = store.snapshot().unwrap();
        assert!(snap.graph().lookup("240 eur").unwrap().is_some());
        server.join().unwrap();
    }

    #[test]
    fn only_loopback_servers_are_accepted() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:11434/",
            "http://[::1]:8080",
        ] {
            assert!(
                LlmExtractor::new(ok, "m", Duration::from_secs(1)).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "https://api.example.com",
            "http://10.0.0.2:8080",
            "http://example.com",
            "ftp://127.0.0.1",
        ] {
            assert!(
                LlmExtractor::new(bad, "m", Duration::from_secs(1)).is_err(),
                "{bad}"
            );
        }
    }
}
