//! MemLoRA's other two experts over the loopback client: **extract** (Mem0's fact extraction:
//! facts from messages) and **generate** (an answer from retrieved memories, citing them).
//! Each names its own model or LoRA adapter, as the update expert (`model.rs`) does.
//!
//! Answers are untrusted and parsed strictly: extraction must be `{"facts": [string, …]}`
//! (at most [`MAX_FACTS`], each non-empty and at most [`MAX_FACT_CHARS`]); an answer must be
//! `{"answer": string, "cited": [id, …]}` citing only the ids it was given. Anything else is a
//! typed [`DeciderError`]: nothing is written, nothing is shown as an answer.

use std::time::Duration;

use serde_json::{Value, json};

use super::DeciderError;
use super::extract::{Extracted, FactExtractor};
use super::model::malformed;
use super::remember::Message;
use crate::error::Result;
use memdb_endpoint::LoopbackChat;
use memdb_endpoint::{json_mode_request, json_reply};

/// The most facts one extraction may return.
pub const MAX_FACTS: usize = 64;
/// The longest fact, in characters.
pub const MAX_FACT_CHARS: usize = 1_000;

const EXTRACT_SYSTEM: &str = "You are a Personal Information Organizer, specialized in accurately storing facts, user memories, and preferences. Extract relevant pieces of information from the conversation and organize them into distinct, manageable facts. Return the facts in JSON format: {\"facts\": [\"fact 1\", \"fact 2\"]}. If there is nothing worth remembering, return {\"facts\": []}. Do not return anything except the JSON.";

const ANSWER_SYSTEM: &str = "You answer a question about the user's life from their memories only. Each memory has an id. Return JSON: {\"answer\": \"<the answer, or 'I don't know' if the memories do not say>\", \"cited\": [<ids of the memories the answer uses>]}. Do not return anything except the JSON.";

/// Mem0's fact extraction behind a local model server.
#[derive(Debug, Clone)]
pub struct ModelExtractor {
    chat: LoopbackChat,
    model: String,
}

impl ModelExtractor {
    /// An extractor asking `model` (the extract operation's model or adapter) at `base_url`.
    pub fn new(base_url: &str, model: &str, timeout: Duration) -> Result<ModelExtractor> {
        Ok(ModelExtractor {
            chat: LoopbackChat::new(base_url, timeout).map_err(DeciderError::from)?,
            model: model.to_owned(),
        })
    }
}

/// The facts in a model's extraction answer.
pub fn parse_facts_reply(content: &str) -> std::result::Result<Vec<String>, DeciderError> {
    let malformed = malformed("a list of facts", content);
    let value = json_reply(content).map_err(malformed)?;
    let facts = value
        .get("facts")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `facts` array".to_owned()))?;
    if facts.len() > MAX_FACTS {
        return Err(malformed(format!(
            "{} facts, at most {MAX_FACTS}",
            facts.len()
        )));
    }
    facts
        .iter()
        .map(|f| match f.as_str().map(str::trim) {
            Some(text) if !text.is_empty() && text.chars().count() <= MAX_FACT_CHARS => {
                Ok(text.to_owned())
            }
            _ => Err(malformed(format!(
                "a fact is not a non-empty string of at most {MAX_FACT_CHARS} characters"
            ))),
        })
        .collect()
}

impl FactExtractor for ModelExtractor {
    /// One [`Extracted`] per message, each message asked on its own.
    fn extract(&self, messages: &[Message]) -> Result<Vec<Extracted>> {
        let mut out = Vec::with_capacity(messages.len());
        for message in messages {
            let facts = self.extract_one(std::slice::from_ref(message))?;
            out.push(Extracted {
                said: message.text.clone(),
                speaker: message.speaker.clone(),
                skipped: facts
                    .is_empty()
                    .then(|| "the extraction model found no fact in it".to_owned()),
                facts,
            });
        }
        Ok(out)
    }
}

impl ModelExtractor {
    /// The facts the model finds in `messages`.
    fn extract_one(&self, messages: &[Message]) -> Result<Vec<String>> {
        let conversation: Vec<String> = messages
            .iter()
            .map(|m| format!("{}: {}", m.speaker.as_deref().unwrap_or("user"), m.text))
            .collect();
        let schema = json!({
            "type": "object",
            "properties": {"facts": {"type": "array", "items": {"type": "string", "minLength": 1}}},
            "required": ["facts"]
        });
        let user = format!("Input:\n{}", conversation.join("\n"));
        let request = json_mode_request(&self.model, schema, EXTRACT_SYSTEM, &user);
        let content = self.chat.complete(&request).map_err(DeciderError::from)?;
        Ok(parse_facts_reply(&content)?)
    }
}

/// An answer and the memories it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The answer.
    pub text: String,
    /// The ids of the memories it uses (each one it was given).
    pub cited: Vec<u64>,
}

/// The generate expert: answers a question from memories, citing them.
#[derive(Debug, Clone)]
pub struct ModelAnswerer {
    chat: LoopbackChat,
    model: String,
}

impl ModelAnswerer {
    /// An answerer asking `model` (the generate operation's model or adapter) at `base_url`.
    pub fn new(base_url: &str, model: &str, timeout: Duration) -> Result<ModelAnswerer> {
        Ok(ModelAnswerer {
            chat: LoopbackChat::new(base_url, timeout).map_err(DeciderError::from)?,
            model: model.to_owned(),
        })
    }

    /// The answer to `question` from `evidence` (memory id, its text), most relevant first.
    pub fn answer(&self, question: &str, evidence: &[(u64, String)]) -> Result<Answer> {
        let memories: Vec<Value> = evidence
            .iter()
            .map(|(id, text)| json!({"id": id, "text": text}))
            .collect();
        let schema = json!({
            "type": "object",
            "properties": {
                "answer": {"type": "string", "minLength": 1},
                "cited": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["answer", "cited"]
        });
        let user = format!("Memories: {}\nQuestion: {question}", Value::Array(memories));
        let request = json_mode_request(&self.model, schema, ANSWER_SYSTEM, &user);
        let content = self.chat.complete(&request).map_err(DeciderError::from)?;
        let ids: Vec<u64> = evidence.iter().map(|(id, _)| *id).collect();
        Ok(parse_answer_reply(&content, &ids)?)
    }
}

/// The answer in a model's reply, citing only ids of `given`.
pub fn parse_answer_reply(
    content: &str,
    given: &[u64],
) -> std::result::Result<Answer, DeciderError> {
    let malformed = malformed("an answer with citations", content);
    let value = json_reply(content).map_err(malformed)?;
    let text = value
        .get("answer")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| malformed("no `answer` string".to_owned()))?;
    let mut cited = Vec::new();
    for id in value
        .get("cited")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `cited` array".to_owned()))?
    {
        let parsed = match id {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        match parsed {
            Some(id) if given.contains(&id) => {
                if !cited.contains(&id) {
                    cited.push(id);
                }
            }
            _ => {
                return Err(DeciderError::UnknownId { id: id.to_string() });
            }
        }
    }
    Ok(Answer {
        text: text.to_owned(),
        cited,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memdb_endpoint_stub::{Reply, completion, serve};

    #[test]
    fn extraction_takes_only_a_facts_array_of_strings() {
        assert_eq!(
            parse_facts_reply("```json\n{\"facts\": [\"Lives in Porto\", \" Has a dog \"]}\n```")
                .unwrap_or_default(),
            ["Lives in Porto", "Has a dog"]
        );
        for bad in [
            "Sure! Lives in Porto.",
            r#"{"facts": "Lives in Porto"}"#,
            r#"{"facts": [1, 2]}"#,
            r#"{"facts": [""]}"#,
            r#"{"memory": []}"#,
        ] {
            assert!(
                matches!(parse_facts_reply(bad), Err(DeciderError::Malformed { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_answer_cites_only_the_memories_it_was_given() {
        let given = [4, 9];
        let a = parse_answer_reply(r#"{"answer": "Porto", "cited": [9, "4", 9]}"#, &given);
        assert_eq!(
            a.ok(),
            Some(Answer {
                text: "Porto".into(),
                cited: vec![9, 4]
            })
        );
        assert!(matches!(
            parse_answer_reply(r#"{"answer": "Porto", "cited": [5]}"#, &given),
            Err(DeciderError::UnknownId { .. })
        ));
        assert!(matches!(
            parse_answer_reply(r#"{"answer": "", "cited": []}"#, &given),
            Err(DeciderError::Malformed { .. })
        ));
    }

    #[test]
    fn each_expert_names_its_own_model() {
        let (url, server) = serve(vec![
            Reply::ok(completion(r#"{"facts": ["Moved to Porto"]}"#)),
            Reply::ok(completion(r#"{"answer": "Porto", "cited": [3]}"#)),
        ]);
        let extractor = ModelExtractor::new(&url, "extract-lora", Duration::from_secs(10));
        let answerer = ModelAnswerer::new(&url, "generate-lora", Duration::from_secs(10));
        let (Ok(extractor), Ok(answerer)) = (extractor, answerer) else {
            panic!("loopback endpoints are accepted");
        };
        let facts = extractor.extract(&[Message {
            speaker: Some("Ana".into()),
            text: "We moved to Porto".into(),
        }]);
        let facts: Vec<Vec<String>> = facts
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.facts)
            .collect();
        assert_eq!(facts, [vec!["Moved to Porto".to_owned()]]);
        let answer = answerer.answer("Where do I live?", &[(3, "Moved to Porto".into())]);
        assert_eq!(answer.ok().map(|a| a.cited), Some(vec![3]));
        let requests = server.join().unwrap_or_default();
        let models: Vec<String> = requests
            .iter()
            .filter_map(|r| serde_json::from_str::<Value>(r).ok())
            .map(|v| v["model"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(models, ["extract-lora", "generate-lora"]);
    }
}
