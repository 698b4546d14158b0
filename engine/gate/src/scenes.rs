//! Scene catalogues: the built-in one and a person's own, from TOML (SPEC.md §11, to come).
//!
//! A catalogue is `version = 1` and `[[scene]]` tables with `name`, `words` (salient words and
//! phrases), optional `positive` and `negative` rules (for a judge) and optional `intents` (the
//! sources the scene applies to). Parsing checks everything a matcher relies on and says which
//! scene is wrong.

use memdb_formats::item::Source;
use serde::{Deserialize, Serialize};

/// The catalogue shipped with memdb (written by the project; see the file's header).
pub const BUILTIN_SCENES: &str = include_str!("scenes.toml");

/// The longest salient word or phrase, in characters.
const MAX_WORD_CHARS: usize = 80;

/// Why a scene catalogue cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SceneError {
    /// Not TOML, or not a catalogue's shape.
    #[error("scene catalogue is not valid TOML: {0}")]
    Toml(String),
    /// A version this memdb does not read.
    #[error("scene catalogue version {0}; this memdb reads version 1")]
    Version(u32),
    /// A scene without a name, or two scenes of one name.
    #[error("scene {index}: {why}")]
    Name {
        /// Position of the scene (0-based).
        index: usize,
        /// What is wrong.
        why: String,
    },
    /// A scene whose words cannot be matched (none, empty, too long, no letter or digit).
    #[error("scene `{scene}`: {why}")]
    Words {
        /// The scene.
        scene: String,
        /// What is wrong.
        why: String,
    },
    /// An intent that is not a source.
    #[error("scene `{scene}`: unknown intent `{intent}` (image, video, email, chat or note)")]
    Intent {
        /// The scene.
        scene: String,
        /// The intent as written.
        intent: String,
    },
}

/// One memory scene.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scene {
    /// Its name (unique in its catalogue).
    pub name: String,
    /// Salient words and phrases, normalised ([`crate::normalise`]), without duplicates.
    pub words: Vec<String>,
    /// What a memorable text of the scene says (for a judge, and for a person to review).
    pub positive: Vec<String>,
    /// What looks like the scene but is not memorable.
    pub negative: Vec<String>,
    /// The negative rules as predicates: expressions (normalised) whose words do not count as
    /// a hit ("sick of it", "killing me"): "GUM + rule predicates" matches the text with them
    /// taken out.
    pub unless: Vec<String>,
    /// The sources it applies to; empty: every source.
    pub intents: Vec<Source>,
}

/// A scene catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenes {
    scenes: Vec<Scene>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawCatalogue {
    version: u32,
    #[serde(default)]
    scene: Vec<RawScene>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawScene {
    name: String,
    words: Vec<String>,
    #[serde(default)]
    positive: Vec<String>,
    #[serde(default)]
    negative: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unless: Vec<String>,
    #[serde(default)]
    intents: Vec<String>,
}

/// `words` normalised, without duplicates; a word too long or with nothing to match is an
/// error made by `error`.
fn matchable(
    words: &[String],
    error: &dyn Fn(String) -> SceneError,
) -> Result<Vec<String>, SceneError> {
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for word in words {
        if word.chars().count() > MAX_WORD_CHARS {
            return Err(error(format!(
                "a word longer than {MAX_WORD_CHARS} characters"
            )));
        }
        let normal = crate::normalise(word);
        if normal.is_empty() {
            return Err(error(format!("`{word}` has no letter or digit to match")));
        }
        if !out.contains(&normal) {
            out.push(normal);
        }
    }
    Ok(out)
}

impl Scenes {
    /// The built-in catalogue.
    pub fn builtin() -> Result<Scenes, SceneError> {
        Scenes::from_toml(BUILTIN_SCENES)
    }

    /// Reads a catalogue (untrusted text: every problem is a [`SceneError`]).
    pub fn from_toml(text: &str) -> Result<Scenes, SceneError> {
        let raw: RawCatalogue =
            toml::from_str(text).map_err(|e| SceneError::Toml(e.to_string()))?;
        if raw.version != 1 {
            return Err(SceneError::Version(raw.version));
        }
        let mut scenes: Vec<Scene> = Vec::with_capacity(raw.scene.len());
        for (index, scene) in raw.scene.into_iter().enumerate() {
            let name = scene.name.trim().to_owned();
            if name.is_empty() {
                return Err(SceneError::Name {
                    index,
                    why: "it has no name".into(),
                });
            }
            if scenes.iter().any(|s| s.name.eq_ignore_ascii_case(&name)) {
                return Err(SceneError::Name {
                    index,
                    why: format!("`{name}` is named twice"),
                });
            }
            let words_error = |why: String| SceneError::Words {
                scene: name.clone(),
                why,
            };
            let words = matchable(&scene.words, &words_error)?;
            let unless = matchable(&scene.unless, &words_error)?;
            if words.is_empty() {
                return Err(words_error("no words".into()));
            }
            let mut intents = Vec::with_capacity(scene.intents.len());
            for intent in scene.intents {
                let source = Source::ALL
                    .into_iter()
                    .find(|s| s.name().eq_ignore_ascii_case(intent.trim()))
                    .ok_or_else(|| SceneError::Intent {
                        scene: name.clone(),
                        intent: intent.clone(),
                    })?;
                if !intents.contains(&source) {
                    intents.push(source);
                }
            }
            scenes.push(Scene {
                name,
                words,
                positive: scene.positive,
                negative: scene.negative,
                unless,
                intents,
            });
        }
        Ok(Scenes { scenes })
    }

    /// A catalogue of `scenes` as given: their words must already be normalised ([`normalise`](crate::normalise)),
    /// as a learned lexicon's are; [`Scenes::from_scenes`] normalises them.
    pub fn from_parts(scenes: Vec<Scene>) -> Scenes {
        Scenes { scenes }
    }

    /// A catalogue of `scenes`, each word normalised and empty ones left out (for programs
    /// that build lexicons in code: benches, tools).
    pub fn from_scenes(scenes: Vec<Scene>) -> Scenes {
        Scenes {
            scenes: scenes
                .into_iter()
                .map(|mut s| {
                    s.words = s
                        .words
                        .iter()
                        .map(|w| crate::normalise(w))
                        .filter(|w| !w.is_empty())
                        .collect();
                    s.words.dedup();
                    s
                })
                .collect(),
        }
    }

    /// The catalogue as TOML ([`Scenes::from_toml`] reads it back as it is).
    pub fn to_toml(&self) -> String {
        let raw = RawCatalogue {
            version: 1,
            scene: self
                .scenes
                .iter()
                .map(|s| RawScene {
                    name: s.name.clone(),
                    words: s.words.clone(),
                    positive: s.positive.clone(),
                    negative: s.negative.clone(),
                    unless: s.unless.clone(),
                    intents: s.intents.iter().map(|i| i.name().to_owned()).collect(),
                })
                .collect(),
        };
        // Strings, lists and tables only: serialising them cannot fail.
        toml::to_string(&raw).unwrap_or_default()
    }

    /// Its scenes, in catalogue order.
    pub fn scenes(&self) -> &[Scene] {
        &self.scenes
    }

    /// Salient words and phrases over all scenes (a word in two scenes counts twice).
    pub fn word_count(&self) -> usize {
        self.scenes.iter().map(|s| s.words.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalogue_loads() {
        let scenes = Scenes::builtin().unwrap();
        assert!(scenes.scenes().len() >= 12);
        assert!(scenes.word_count() > 300);
        for scene in scenes.scenes() {
            assert!(!scene.positive.is_empty(), "{}", scene.name);
        }
    }

    #[test]
    fn bad_catalogues_are_typed_errors_naming_the_scene() {
        type Expect = fn(&SceneError) -> bool;
        let cases: [(&str, Expect); 8] = [
            ("version = 1\n[[scene]\n", |e| {
                matches!(e, SceneError::Toml(_))
            }),
            ("version = 2", |e| matches!(e, SceneError::Version(2))),
            ("[[scene]]\nname = \"a\"\nwords = [\"x\"]", |e| {
                matches!(e, SceneError::Toml(_))
            }),
            (
                "version = 1\n[[scene]]\nname = \" \"\nwords = [\"x\"]",
                |e| matches!(e, SceneError::Name { index: 0, .. }),
            ),
            (
                "version = 1\n[[scene]]\nname = \"a\"\nwords = [\"x\"]\n[[scene]]\nname = \"A\"\nwords = [\"y\"]",
                |e| matches!(e, SceneError::Name { index: 1, .. }),
            ),
            (
                "version = 1\n[[scene]]\nname = \"a\"\nwords = []",
                |e| matches!(e, SceneError::Words { scene, .. } if scene == "a"),
            ),
            (
                "version = 1\n[[scene]]\nname = \"a\"\nwords = [\"?!\"]",
                |e| matches!(e, SceneError::Words { .. }),
            ),
            (
                "version = 1\n[[scene]]\nname = \"a\"\nwords = [\"x\"]\nintents = [\"fax\"]",
                |e| matches!(e, SceneError::Intent { intent, .. } if intent == "fax"),
            ),
        ];
        for (text, expected) in cases {
            let err = Scenes::from_toml(text).unwrap_err();
            assert!(expected(&err), "{text:?}: {err:?}");
        }
        let unknown_key = "version = 1\n[[scene]]\nname = \"a\"\nwords = [\"x\"]\nweight = 3";
        assert!(matches!(
            Scenes::from_toml(unknown_key),
            Err(SceneError::Toml(_))
        ));
    }

    #[test]
    fn a_catalogue_reads_back_from_its_toml() {
        let scenes = Scenes::builtin().unwrap();
        assert_eq!(Scenes::from_toml(&scenes.to_toml()).unwrap(), scenes);
    }

    #[test]
    fn words_are_normalised_and_deduplicated() {
        let scenes = Scenes::from_toml(
            "version = 1\n[[scene]]\nname = \"trips\"\nwords = [\"Road  Trip\", \"road-trip\", \"HOTEL\"]\nintents = [\"email\", \"EMAIL\"]",
        )
        .unwrap();
        let scene = &scenes.scenes()[0];
        assert_eq!(scene.words, ["road trip", "hotel"]);
        assert_eq!(scene.intents, [Source::Email]);
    }
}
