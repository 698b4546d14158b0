//! Growing a lexicon by multi-view role-play (SAMD §4.2, Eq. 4: `W_i = ⋃ L(S_i | R)`): a local
//! language model plays each persona `R` (age, sex, career, personality) and lists the words and
//! short phrases that persona would use about scene `S_i`; the scene's new words are the union
//! over personas. The personas shipped ([`DEFAULT_PERSONAS`]) are written by the project.
//!
//! Invariants: every word a model returns is untrusted — it is normalised like any scene word,
//! and one that is empty, longer than four words or than [`super::scenes`]' limit is left
//! out; a reply that is not `{"words": [string, …]}` is a typed [`GateModelError`] counted
//! against its (persona, scene) and the rest goes on; a scene's existing words are never
//! removed.

use memdb::gate::{GateModel, GateModelError, Scene, Scenes};

/// Personas for role-play: age, sex, career, personality, spread across the ranges a personal
/// memory serves.
pub const DEFAULT_PERSONAS: [&str; 8] = [
    "a 19-year-old woman, a university student, outgoing and talkative",
    "a 27-year-old man, a software developer, reserved and precise",
    "a 34-year-old woman, a nurse working night shifts, warm and practical",
    "a 41-year-old man, a truck driver and father of three, plain-spoken",
    "a 52-year-old woman, a small-business owner, busy and organised",
    "a 63-year-old man, a retired teacher, curious and nostalgic",
    "a 75-year-old woman, a widowed grandmother, gentle and forgetful",
    "a 30-year-old non-binary person, a freelance artist, anxious and creative",
];

/// The most words one reply may add (a runaway reply is cut, not trusted).
const MAX_WORDS_PER_REPLY: usize = 60;
/// The longest phrase taken from a reply, in words.
const MAX_PHRASE_WORDS: usize = 4;
/// The longest phrase taken from a reply, in characters (the scene catalogue's limit).
const MAX_PHRASE_CHARS: usize = 80;

/// The role-play instruction for `persona`.
pub fn roleplay_system(persona: &str) -> String {
    format!(
        "You are {persona}. You talk to your phone's assistant, chat with friends and write notes and e-mails about your own life. Answer with JSON only: {{\"words\": [\"...\", ...]}}."
    )
}

/// The role-play request for `scene`.
pub fn roleplay_message(scene: &Scene) -> String {
    let mut message = format!(
        "Memory scene: {}.\nList 30 words or short phrases (one to four words each) that you would typically use when talking or writing about this part of your life",
        scene.name
    );
    if !scene.positive.is_empty() {
        message.push_str(&format!(" ({})", scene.positive.join("; ")));
    }
    message.push_str(&format!(
        ". Examples of such words: {}.",
        scene
            .words
            .iter()
            .take(8)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    message
}

/// The words in a role-play reply, normalised; typed error when it is not a word list.
pub fn parse_words(content: &str) -> Result<Vec<String>, GateModelError> {
    let malformed = |why: String| GateModelError::malformed("a word list", content, why);
    let value = memdb_endpoint::json_reply(content).map_err(malformed)?;
    let list = value
        .get("words")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| malformed("no `words` array".to_owned()))?;
    let mut words: Vec<String> = Vec::new();
    for entry in list.iter().take(MAX_WORDS_PER_REPLY) {
        let Some(text) = entry.as_str() else {
            continue;
        };
        if text.chars().count() > MAX_PHRASE_CHARS {
            continue;
        }
        let word = memdb::gate::normalise(text);
        if word.is_empty() || word.split(' ').count() > MAX_PHRASE_WORDS {
            continue;
        }
        if !words.contains(&word) {
            words.push(word);
        }
    }
    Ok(words)
}

/// What role-play added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleplayReport {
    /// Words added per scene (scene name, new words), in catalogue order.
    pub added: Vec<(String, Vec<String>)>,
    /// (persona, scene, why) of each request that gave no words.
    pub failures: Vec<(String, String, String)>,
}

/// Asks one persona (first argument) for the words of one scene.
pub type AskWords<'a> = dyn Fn(&str, &Scene) -> Result<Vec<String>, GateModelError> + 'a;

/// `scenes` with each scene's words grown by the union of what `ask` (persona, scene) returns
/// over `personas`; `progress` is told each (persona, scene) done.
pub fn grow_by_roleplay(
    scenes: &Scenes,
    personas: &[&str],
    ask: &AskWords<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> (Scenes, RoleplayReport) {
    let mut grown: Vec<Scene> = scenes.scenes().to_vec();
    let mut report = RoleplayReport::default();
    let total = grown.len() * personas.len();
    let mut done = 0;
    for scene in &mut grown {
        let mut added = Vec::new();
        for persona in personas {
            match ask(persona, scene) {
                Ok(words) => {
                    for word in words {
                        if !scene.words.contains(&word) {
                            scene.words.push(word.clone());
                            added.push(word);
                        }
                    }
                }
                Err(e) => {
                    report
                        .failures
                        .push(((*persona).to_owned(), scene.name.clone(), e.to_string()))
                }
            }
            done += 1;
            progress(done, total);
        }
        report.added.push((scene.name.clone(), added));
    }
    (Scenes::from_parts(grown), report)
}

/// Role-play through a local OpenAI-compatible server (feature `llm`).
#[derive(Debug, Clone)]
pub struct RoleplayModel(GateModel);

impl RoleplayModel {
    /// Role-play with `model` at `base_url`, each call bounded by `timeout`; refuses a URL that
    /// is not `http://` to a loopback host.
    pub fn new(
        base_url: &str,
        model: &str,
        timeout: std::time::Duration,
    ) -> Result<RoleplayModel, GateModelError> {
        GateModel::new(base_url, model, timeout).map(RoleplayModel)
    }

    /// The words `persona` gives for `scene`.
    pub fn words(&self, persona: &str, scene: &Scene) -> Result<Vec<String>, GateModelError> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"words": {"type": "array", "items": {"type": "string"}}},
            "required": ["words"]
        });
        // Role-play wants variety across personas, not the single most likely list.
        let content = self.0.ask(
            schema,
            &roleplay_system(persona),
            &roleplay_message(scene),
            0.7,
        )?;
        parse_words(&content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenes() -> Scenes {
        Scenes::from_toml(
            r#"version = 1
[[scene]]
name = "pets"
words = ["dog", "cat"]
positive = ["an animal the person keeps"]
[[scene]]
name = "travel"
words = ["flight"]
"#,
        )
        .unwrap()
    }

    #[test]
    fn replies_are_normalised_bounded_and_untrusted() {
        let words = parse_words(
            r#"{"words": ["Vet Visit", "vet visit", "", "?!", 7, "a b c d e", "Puppy"]}"#,
        )
        .unwrap();
        assert_eq!(words, ["vet visit", "puppy"]);
        for bad in ["words: dog", r#"{"list": ["dog"]}"#, r#"{"words": "dog"}"#] {
            assert!(
                matches!(
                    parse_words(bad),
                    Err(GateModelError::Malformed {
                        expected: "a word list",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        let many: Vec<String> = (0..500).map(|i| format!("\"w{i}\"")).collect();
        let words = parse_words(&format!("{{\"words\": [{}]}}", many.join(","))).unwrap();
        assert_eq!(words.len(), MAX_WORDS_PER_REPLY);
    }

    #[test]
    fn each_scene_grows_by_the_union_over_personas_and_failures_are_counted() {
        let ask = |persona: &str, scene: &Scene| -> Result<Vec<String>, GateModelError> {
            match (persona, scene.name.as_str()) {
                ("student", "pets") => Ok(vec!["puppy".into(), "dog".into()]),
                ("retiree", "pets") => Ok(vec!["puppy".into(), "budgie".into()]),
                ("student", "travel") => Ok(vec!["hostel".into()]),
                _ => Err(GateModelError::malformed("a word list", "", "no".into())),
            }
        };
        let mut seen = Vec::new();
        let (grown, report) = grow_by_roleplay(
            &scenes(),
            &["student", "retiree"],
            &ask,
            &mut |done, total| seen.push((done, total)),
        );
        assert_eq!(grown.scenes()[0].words, ["dog", "cat", "puppy", "budgie"]);
        assert_eq!(grown.scenes()[1].words, ["flight", "hostel"]);
        assert_eq!(
            report.added[0],
            ("pets".into(), vec!["puppy".into(), "budgie".into()])
        );
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].0, "retiree");
        assert_eq!(seen.last(), Some(&(4, 4)));
        // The grown catalogue is a valid one.
        assert_eq!(Scenes::from_toml(&grown.to_toml()).unwrap(), grown);
    }

    #[test]
    fn role_play_against_a_stub_server() {
        use memdb_endpoint_stub::{Reply, completion, serve};
        let (url, server) = serve(vec![
            Reply::ok(completion(r#"{"words": ["Dog park", "kibble"]}"#)),
            Reply::ok(completion("I love dogs!")),
        ]);
        let model = RoleplayModel::new(&url, "play-1", std::time::Duration::from_secs(5)).unwrap();
        let scene = &scenes().scenes()[0].clone();
        assert_eq!(
            model.words(DEFAULT_PERSONAS[0], scene).unwrap(),
            ["dog park", "kibble"]
        );
        assert!(model.words(DEFAULT_PERSONAS[1], scene).is_err());
        let requests = server.join().unwrap();
        let first: serde_json::Value = serde_json::from_str(&requests[0]).unwrap();
        assert_eq!(first["model"], "play-1");
        let system = first["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains(DEFAULT_PERSONAS[0]), "{system}");
        let user = first["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("Memory scene: pets."), "{user}");
        assert!(user.contains("an animal the person keeps"), "{user}");
        assert!(user.contains("dog, cat"), "{user}");
    }
}
