//! The model-backed decider: Mem0's memory-update step asked of a local OpenAI-compatible server
//! (MemLoRA's "update" expert: a small model, or one LoRA adapter of it, per operation), through
//! the one loopback client of `memdb_endpoint`.
//!
//! The prompt is MemLoRA's memory-update input prompt (its Appendix A) after Mem0's guidelines
//! as the system message; the memories are shown with the ids "0", "1", … of their positions.
//! The answer is untrusted: it must be Mem0's `{"memory": [{"id", "text", "event",
//! "old_memory"?}]}` (one code fence tolerated), every event one of ADD, UPDATE, DELETE, NONE,
//! and every UPDATE, DELETE or NONE id one it was given; anything else is a typed
//! [`DeciderError`] and no decision. An ADD may carry any new id (Mem0 makes one up).
//!
//! One fact, one decision: the first UPDATE or DELETE of the answer wins, else an ADD, else
//! NONE. Mem0's answer does not say which memory a NONE restates; the decision names the first
//! candidate (callers give candidates most similar first).

use std::time::Duration;

use serde_json::{Value, json};

use super::{Candidate, Decider, DeciderError, Decision, Operation};
use crate::error::Result;
use memdb_endpoint::{LoopbackChat, json_mode_request, json_reply, snippet};

const SYSTEM: &str = "You are a smart memory manager which controls the memory of a system. You can perform four operations: (1) add into the memory, (2) update the memory, (3) delete from the memory, and (4) no change. Compare the new retrieved facts with the existing memory and for each decide: ADD if it is new information; UPDATE if it is about an existing memory but different or more informative (keep that memory's id); DELETE if it contradicts or retracts an existing memory; NONE if it is already present. Return the IDs from the input only for UPDATE, DELETE and NONE. Do not return anything except the JSON.";

/// Mem0's update step behind a local model server.
#[derive(Debug, Clone)]
pub struct ModelDecider {
    chat: LoopbackChat,
    update_model: String,
}

impl ModelDecider {
    /// A decider asking `update_model` (a model name, or the name of a LoRA adapter the server
    /// serves for the update operation) at `base_url`, each call bounded by `timeout`; refuses a
    /// URL that is not `http://` to a loopback host.
    pub fn new(base_url: &str, update_model: &str, timeout: Duration) -> Result<ModelDecider> {
        Ok(ModelDecider {
            chat: LoopbackChat::new(base_url, timeout).map_err(DeciderError::from)?,
            update_model: update_model.to_owned(),
        })
    }
}

/// The JSON Schema of an update reply (Mem0's `{"memory": [{"id", "text", "event",
/// "old_memory"}]}`).
fn update_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"memory": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "text": {"type": "string"},
                "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]},
                "old_memory": {"type": "string"}
            },
            "required": ["id", "text", "event"]
        }}},
        "required": ["memory"]
    })
}

/// The decision in a model's `content`, for `candidates` memories shown with ids "0", "1", ….
pub fn parse_update_reply(
    content: &str,
    candidates: usize,
) -> std::result::Result<Decision, DeciderError> {
    let malformed = malformed("a memory update", content);
    let value = json_reply(content).map_err(malformed)?;
    let entries = value
        .get("memory")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `memory` array".to_owned()))?;
    let known = |id: &str| id.parse::<usize>().ok().filter(|i| *i < candidates);
    let mut add = None;
    let mut none = false;
    for entry in entries {
        let event = entry
            .get("event")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("an entry has no string `event`".to_owned()))?;
        let op = Operation::from_name(event)
            .ok_or_else(|| malformed(format!("unknown event {event:?}")))?;
        let id = match entry.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(malformed("an entry has no `id`".to_owned())),
        };
        match op {
            Operation::Add => {
                add.get_or_insert(id);
            }
            Operation::Update | Operation::Delete | Operation::None => {
                let Some(index) = known(&id) else {
                    return Err(DeciderError::UnknownId { id });
                };
                if op == Operation::None {
                    none = true;
                    continue;
                }
                return Ok(Decision::on(
                    op,
                    index,
                    format!("the model: {event} memory {id}"),
                ));
            }
        }
    }
    if add.is_some() {
        return Ok(Decision::add("the model: ADD"));
    }
    if none && candidates > 0 {
        return Ok(Decision::on(Operation::None, 0, "the model: NONE"));
    }
    Err(malformed("no operation for the new fact".to_owned()))
}

/// The error of a reply that is not what operation `expected` (a why, then the reply's start).
pub(super) fn malformed<'c>(
    expected: &'static str,
    content: &'c str,
) -> impl Fn(String) -> DeciderError + Copy + 'c {
    move |why| DeciderError::Malformed {
        expected,
        why,
        snippet: snippet(content),
    }
}

impl Decider for ModelDecider {
    fn decide(&self, fact: &str, candidates: &[Candidate]) -> Result<Decision> {
        let old: Vec<Value> = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"id": i.to_string(), "text": c.text}))
            .collect();
        let user = format!(
            "Old memories: {}. New retrieved facts: {}. Return memory update in JSON format: {{\"memory\" : [{{\"id\" : \"<ID of the memory>\", \"text\" : \"<Content of the memory>\", \"event\" : \"<Operation, among ADD, UPDATE, DELETE, or NONE>\", \"old_memory\" : \"<Old memory content, only if UPDATE event>\"}}]}}",
            Value::Array(old),
            json!([fact]),
        );
        let request = json_mode_request(&self.update_model, update_schema(), SYSTEM, &user);
        let content = self.chat.complete(&request).map_err(DeciderError::from)?;
        Ok(parse_update_reply(&content, candidates.len())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memdb_endpoint_stub::{Reply, completion, serve};

    fn memories() -> Vec<Candidate> {
        ["Lives in Lisbon", "Has a dog named Rex"]
            .iter()
            .map(|t| Candidate {
                text: (*t).to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_well_formed_answer_is_one_decision_with_the_updates_model_named() {
        let (url, server) = serve(vec![
            Reply::ok(completion(
                r#"{"memory": [{"id": "0", "text": "Lives in Porto", "event": "UPDATE", "old_memory": "Lives in Lisbon"}, {"id": "1", "text": "Has a dog named Rex", "event": "NONE"}]}"#,
            )),
            Reply::ok(completion(
                "```json\n{\"memory\": [{\"id\": \"0\", \"text\": \"Lives in Lisbon\", \"event\": \"NONE\"}, {\"id\": \"2\", \"text\": \"Plays tennis\", \"event\": \"ADD\"}]}\n```",
            )),
            Reply::ok(completion(
                r#"{"memory": [{"id": 1, "text": "Has a dog named Rex", "event": "delete"}]}"#,
            )),
        ]);
        let decider = ModelDecider::new(&url, "update-lora", Duration::from_secs(10)).unwrap();
        let d = decider.decide("Moved to Porto", &memories()).unwrap();
        assert_eq!((d.op, d.target), (Operation::Update, Some(0)));
        let d = decider.decide("Plays tennis", &memories()).unwrap();
        assert_eq!((d.op, d.target), (Operation::Add, None));
        let d = decider.decide("No longer has a dog", &memories()).unwrap();
        assert_eq!((d.op, d.target), (Operation::Delete, Some(1)));
        let requests = server.join().unwrap();
        let first: Value = serde_json::from_str(&requests[0]).unwrap();
        assert_eq!(first["model"], "update-lora");
        assert_eq!(first["response_format"]["type"], "json_object");
        let user = first["messages"][1]["content"].as_str().unwrap();
        assert!(
            user.contains(r#"{"id":"1","text":"Has a dog named Rex"}"#),
            "{user}"
        );
        assert!(user.contains("Moved to Porto"), "{user}");
    }

    #[test]
    fn malformed_hallucinated_and_slow_answers_are_typed_errors() {
        let (url, server) = serve(vec![
            Reply::ok(completion("I would update memory 0.")),
            Reply::ok(completion(
                r#"{"memory": [{"id": "7", "text": "x", "event": "UPDATE"}]}"#,
            )),
            Reply::ok(completion(
                r#"{"memory": [{"id": "0", "text": "x", "event": "MERGE"}]}"#,
            )),
            Reply::ok(completion(r#"{"memories": []}"#)),
            Reply {
                delay: Duration::from_millis(1_500),
                ..Reply::ok(completion(r#"{"memory": []}"#))
            },
        ]);
        let decider = ModelDecider::new(&url, "m", Duration::from_millis(500)).unwrap();
        let errors: Vec<crate::Error> = (0..5)
            .map(|_| decider.decide("Moved to Porto", &memories()).unwrap_err())
            .collect();
        server.join().unwrap();
        assert!(matches!(
            errors[0],
            crate::Error::Decider(DeciderError::Malformed { .. })
        ));
        assert!(matches!(
            &errors[1],
            crate::Error::Decider(DeciderError::UnknownId { id }) if id == "7"
        ));
        assert!(matches!(
            &errors[2],
            crate::Error::Decider(DeciderError::Malformed { why, .. }) if why.contains("MERGE")
        ));
        assert!(matches!(
            errors[3],
            crate::Error::Decider(DeciderError::Malformed { .. })
        ));
        assert!(matches!(
            errors[4],
            crate::Error::Decider(DeciderError::Endpoint(
                memdb_endpoint::EndpointError::Transport { .. }
            ))
        ));
    }

    #[test]
    fn an_answer_with_no_operation_for_the_fact_is_refused() {
        assert!(parse_update_reply(r#"{"memory": []}"#, 2).is_err());
        // NONE names the first (most similar) candidate.
        let d = parse_update_reply(
            r#"{"memory": [{"id": "1", "text": "x", "event": "NONE"}]}"#,
            2,
        )
        .unwrap();
        assert_eq!((d.op, d.target), (Operation::None, Some(0)));
    }
}
