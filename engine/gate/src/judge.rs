//! The optional judge after the GUM (SAMD §4, the CPM's use): a text the GUM passes is shown,
//! with the positive and negative rules of its intent's cluster, to a language model on a local
//! OpenAI-compatible server, which says whether it is worth remembering.
//!
//! The rules a text is judged by ([`ClusterPrompts::prompt`]): when its intent (source) is in
//! a CPM cluster, the rules of every scene of that cluster and of every scene it hit; otherwise
//! those of the scenes it hit.
//!
//! Invariants: the model's answer is untrusted — it must be one JSON object
//! `{"memorable": bool, "reason": string}` (one code fence tolerated), anything else is a typed
//! [`GateModelError`] and no verdict; a judge that fails never drops a text (the ingest stage keeps
//! it and says why), so a stopped server cannot lose memories.

use memdb_formats::item::Source;

use super::gum::GumHits;
use super::scenes::Scenes;

/// What a judge decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Worth remembering.
    pub memorable: bool,
    /// Why, in the judge's words.
    pub reason: String,
}

/// Why a model stage of the gate (the judge, role-play generation) got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateModelError {
    /// The model server failed (refused, timed out, HTTP error, not a chat completion).
    #[error(transparent)]
    Endpoint(#[from] memdb_endpoint::EndpointError),
    /// The answer is not what was asked for.
    #[error("the model's answer is not {expected} ({why}): {snippet:?}")]
    Malformed {
        /// What was asked for (`a verdict`, `a word list`).
        expected: &'static str,
        /// What is wrong.
        why: String,
        /// The answer's start.
        snippet: String,
    },
}

impl GateModelError {
    /// The error of `content`, which is not `expected`, for `why`.
    pub fn malformed(expected: &'static str, content: &str, why: String) -> GateModelError {
        GateModelError::Malformed {
            expected,
            why,
            snippet: memdb_endpoint::snippet(content),
        }
    }
}

/// The rules one text is judged by.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterPrompt {
    /// The scenes whose rules these are.
    pub scenes: Vec<String>,
    /// What a memorable text of those scenes says.
    pub positive: Vec<String>,
    /// What looks like those scenes but is not memorable.
    pub negative: Vec<String>,
}

/// A judge of memorability.
pub trait Judge: Send + Sync + std::fmt::Debug {
    /// Whether `text` is worth remembering under `prompt`'s rules.
    fn judge(&self, text: &str, prompt: &ClusterPrompt) -> Result<Verdict, GateModelError>;
}

/// The CPM's clusters as the judge uses them: for each clustered intent, its cluster's scenes.
#[derive(Debug, Clone, Default)]
pub struct ClusterPrompts {
    by_intent: Vec<(Source, Vec<usize>)>,
}

impl ClusterPrompts {
    /// The prompts of clusters of intents: for each clustered intent, the scenes (by position
    /// in the catalogue) of its cluster. The lab's CPM clustering (`memdb_lab::gate::
    /// cluster_prompts`) makes them from a store's intent × scene matrix.
    pub fn from_clusters(by_intent: Vec<(Source, Vec<usize>)>) -> ClusterPrompts {
        ClusterPrompts { by_intent }
    }

    /// The rules a text of `intent` with `hits` is judged by (scene order: the catalogue's).
    pub fn prompt(&self, scenes: &Scenes, intent: Option<Source>, hits: &GumHits) -> ClusterPrompt {
        let all = scenes.scenes();
        let mut chosen = vec![false; all.len()];
        for hit in &hits.scenes {
            if let Some(c) = chosen.get_mut(hit.scene) {
                *c = true;
            }
        }
        if let Some((_, cluster)) = self.by_intent.iter().find(|(i, _)| Some(*i) == intent) {
            for &s in cluster {
                if let Some(c) = chosen.get_mut(s) {
                    *c = true;
                }
            }
        }
        let mut prompt = ClusterPrompt::default();
        for (scene, _) in all.iter().zip(&chosen).filter(|(_, c)| **c) {
            prompt.scenes.push(scene.name.clone());
            prompt.positive.extend(scene.positive.iter().cloned());
            prompt.negative.extend(scene.negative.iter().cloned());
        }
        prompt
    }
}

/// The judge's instructions: SAMD's memory-discrimination question with the cluster's rules.
pub const JUDGE_SYSTEM: &str = "You decide whether a message is worth keeping in a person's long-term memory: facts about the person and the people, places, plans, events, preferences and possessions in their life. Small talk, greetings, thanks and reactions with nothing else said are not. Answer with JSON only: {\"memorable\": true or false, \"reason\": \"<one short sentence>\"}.";

/// The user message for `text` under `prompt`.
pub fn judge_message(text: &str, prompt: &ClusterPrompt) -> String {
    let mut message = String::new();
    if !prompt.scenes.is_empty() {
        message.push_str(&format!("Memory scenes: {}.\n", prompt.scenes.join(", ")));
    }
    if !prompt.positive.is_empty() {
        message.push_str("Memorable when it:\n");
        for rule in &prompt.positive {
            message.push_str(&format!("+ {rule}\n"));
        }
    }
    if !prompt.negative.is_empty() {
        message.push_str("Not memorable when it:\n");
        for rule in &prompt.negative {
            message.push_str(&format!("- {rule}\n"));
        }
    }
    message.push_str(&format!(
        "Message: {text}\nIs this message worth remembering?"
    ));
    message
}

/// The verdict in a model's answer `content`.
#[cfg(feature = "llm")]
pub fn parse_verdict(content: &str) -> Result<Verdict, GateModelError> {
    let malformed = |why: String| GateModelError::malformed("a verdict", content, why);
    let value = memdb_endpoint::json_reply(content).map_err(malformed)?;
    let memorable = value
        .get("memorable")
        .and_then(serde_json::Value::as_bool)
        .ok_or_else(|| malformed("no boolean `memorable`".to_owned()))?;
    let reason = value
        .get("reason")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned();
    Ok(Verdict { memorable, reason })
}

/// A model on a local OpenAI-compatible server, asked for one JSON object per call: what the
/// judge and the lab's role-play share (feature `llm`).
#[cfg(feature = "llm")]
#[derive(Debug, Clone)]
pub struct GateModel {
    chat: memdb_endpoint::LoopbackChat,
    model: String,
}

#[cfg(feature = "llm")]
impl GateModel {
    /// `model` at `base_url`, each call bounded by `timeout`; refuses a URL that is not
    /// `http://` to a loopback host.
    pub fn new(
        base_url: &str,
        model: &str,
        timeout: std::time::Duration,
    ) -> Result<GateModel, GateModelError> {
        Ok(GateModel {
            chat: memdb_endpoint::LoopbackChat::new(base_url, timeout)?,
            model: model.to_owned(),
        })
    }

    /// The reply's content to `system` and `user` in JSON mode with `schema`, at `temperature`.
    pub fn ask(
        &self,
        schema: serde_json::Value,
        system: &str,
        user: &str,
        temperature: f64,
    ) -> Result<String, GateModelError> {
        let mut request = memdb_endpoint::json_mode_request(&self.model, schema, system, user);
        request["temperature"] = serde_json::json!(temperature);
        Ok(self.chat.complete(&request)?)
    }
}

/// A judge behind a local OpenAI-compatible server (feature `llm`).
#[cfg(feature = "llm")]
#[derive(Debug, Clone)]
pub struct ModelJudge(GateModel);

#[cfg(feature = "llm")]
impl ModelJudge {
    /// A judge asking `model` at `base_url`, each call bounded by `timeout`; refuses a URL that
    /// is not `http://` to a loopback host.
    pub fn new(
        base_url: &str,
        model: &str,
        timeout: std::time::Duration,
    ) -> Result<ModelJudge, GateModelError> {
        GateModel::new(base_url, model, timeout).map(ModelJudge)
    }
}

#[cfg(feature = "llm")]
impl Judge for ModelJudge {
    fn judge(&self, text: &str, prompt: &ClusterPrompt) -> Result<Verdict, GateModelError> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "memorable": {"type": "boolean"},
                "reason": {"type": "string"}
            },
            "required": ["memorable", "reason"]
        });
        // Greedy: a verdict should not depend on the draw.
        let content = self
            .0
            .ask(schema, JUDGE_SYSTEM, &judge_message(text, prompt), 0.0)?;
        parse_verdict(&content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gum;

    fn scenes() -> Scenes {
        Scenes::from_toml(
            r#"version = 1
[[scene]]
name = "health"
words = ["doctor"]
positive = ["a condition or treatment"]
negative = ["figures of speech"]
[[scene]]
name = "travel"
words = ["flight"]
positive = ["a trip taken or planned"]
[[scene]]
name = "work"
words = ["boss"]
positive = ["a job"]
negative = ["it works"]
"#,
        )
        .unwrap()
    }

    #[test]
    fn a_text_is_judged_by_its_intents_cluster_and_its_own_hits() {
        let scenes = scenes();
        let gum = Gum::new(scenes.clone()).unwrap();
        // Mail and chat in one cluster with health and travel; notes hit work only.
        let prompts = ClusterPrompts::from_clusters(vec![
            (Source::Email, vec![0, 1]),
            (Source::Chat, vec![0, 1]),
            (Source::Note, vec![2]),
        ]);
        let hits = gum.hits("my boss booked the flight", Some(Source::Email));
        let prompt = prompts.prompt(&scenes, Some(Source::Email), &hits);
        assert_eq!(prompt.scenes, ["health", "travel", "work"]);
        assert_eq!(
            prompt.positive,
            [
                "a condition or treatment",
                "a trip taken or planned",
                "a job"
            ]
        );
        assert_eq!(prompt.negative, ["figures of speech", "it works"]);
        // No cluster for the intent: only the scenes hit.
        let prompt = ClusterPrompts::default().prompt(&scenes, Some(Source::Email), &hits);
        assert_eq!(prompt.scenes, ["travel", "work"]);
        let message = judge_message("my boss booked the flight", &prompt);
        assert!(
            message.contains("+ a trip taken or planned\n+ a job\n"),
            "{message}"
        );
        assert!(message.contains("- it works\n"), "{message}");
        assert!(
            message.ends_with(
                "Message: my boss booked the flight\nIs this message worth remembering?"
            )
        );
    }

    #[cfg(feature = "llm")]
    #[test]
    fn the_model_judge_against_a_stub_server() {
        use memdb_endpoint_stub::{Reply, completion, serve};
        let (url, server) = serve(vec![
            Reply::ok(completion(
                r#"{"memorable": true, "reason": "a trip is planned"}"#,
            )),
            Reply::ok(completion(
                "```json\n{\"memorable\": false, \"reason\": \"small talk\"}\n```",
            )),
            Reply::ok(completion("Sure! It is memorable.")),
            Reply::ok(completion(r#"{"memorable": "yes"}"#)),
            Reply {
                status: 500,
                body: "overloaded".into(),
                delay: std::time::Duration::ZERO,
            },
        ]);
        let judge = ModelJudge::new(&url, "judge-1", std::time::Duration::from_secs(5)).unwrap();
        let prompt = ClusterPrompt {
            scenes: vec!["travel".into()],
            positive: vec!["a trip taken or planned".into()],
            negative: vec![],
        };
        assert_eq!(
            judge.judge("flight to Oslo on May 3", &prompt).unwrap(),
            Verdict {
                memorable: true,
                reason: "a trip is planned".into()
            }
        );
        assert!(!judge.judge("haha ok", &prompt).unwrap().memorable);
        assert!(matches!(
            judge.judge("x", &prompt),
            Err(GateModelError::Malformed { .. })
        ));
        let err = judge.judge("x", &prompt).unwrap_err();
        assert!(err.to_string().contains("memorable"), "{err}");
        assert!(matches!(
            judge.judge("x", &prompt),
            Err(GateModelError::Endpoint(_))
        ));
        let requests = server.join().unwrap();
        let first: serde_json::Value = serde_json::from_str(&requests[0]).unwrap();
        assert_eq!(first["model"], "judge-1");
        assert_eq!(first["temperature"], 0.0);
        assert_eq!(first["response_format"]["type"], "json_object");
        assert_eq!(first["messages"][0]["content"], JUDGE_SYSTEM);
        let user = first["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("+ a trip taken or planned"), "{user}");
        assert!(user.contains("Message: flight to Oslo on May 3"), "{user}");
    }

    #[cfg(feature = "llm")]
    #[test]
    fn a_judge_refuses_a_server_off_the_device() {
        let err = ModelJudge::new(
            "http://example.com:8080",
            "m",
            std::time::Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(matches!(err, GateModelError::Endpoint(_)), "{err}");
    }
}
