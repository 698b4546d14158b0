//! The Gating Unit Module: every scene's salient words in one Aho-Corasick automaton, matched
//! against a text's normalised words.
//!
//! A text is normalised to ` w1 w2 … wn ` (each word lower-cased, one space between words and
//! one at each end) and every pattern is ` word ` or ` phrase words `: the spaces are the word
//! boundaries, so `cat` never matches in `category`, and a phrase matches across the line break
//! or punctuation that separates its words in the text.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use memdb_formats::item::Source;

use super::scenes::Scenes;

/// A text's words, lower-cased, each run of other characters one space (an apostrophe between
/// two letters or digits stays: "don't", "mom's"). Empty when it has no word.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut pending_space = false;
    let mut prev_word_char = false;
    while let Some(c) = chars.next() {
        let apostrophe = matches!(c, '\'' | '’')
            && prev_word_char
            && chars.peek().is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() || apostrophe {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            if apostrophe {
                out.push('\'');
            } else {
                out.extend(c.to_lowercase());
            }
            prev_word_char = true;
        } else {
            pending_space = true;
            prev_word_char = false;
        }
    }
    out
}

/// ` w1 w2 … wn `: the normalised text with the spaces that make every match whole words.
pub(crate) fn padded(text: &str) -> String {
    let normal = normalise(text);
    let mut padded = String::with_capacity(normal.len() + 2);
    padded.push(' ');
    padded.push_str(&normal);
    padded.push(' ');
    padded
}

/// One scene a text matched, and by which of its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneHit {
    /// Position of the scene in its catalogue.
    pub scene: usize,
    /// The scene's name.
    pub name: String,
    /// The words and phrases that matched, in the order they first occur in the text.
    pub words: Vec<String>,
}

/// What a text matched: the scene-hit vector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GumHits {
    /// Scenes hit, in catalogue order.
    pub scenes: Vec<SceneHit>,
}

impl GumHits {
    /// Any hit: memorable by the GUM.
    pub fn is_memorable(&self) -> bool {
        !self.scenes.is_empty()
    }
}

/// The matcher over one scene catalogue.
pub struct Gum {
    scenes: Scenes,
    automaton: AhoCorasick,
    /// Pattern → (normalised word, the scenes that list it).
    patterns: Vec<(String, Vec<usize>)>,
}

impl std::fmt::Debug for Gum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gum")
            .field("scenes", &self.scenes.scenes().len())
            .field("patterns", &self.patterns.len())
            .finish()
    }
}

/// Why a matcher could not be built (the automaton's own limits).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the scene words cannot be compiled into one matcher: {0}")]
pub struct GumError(String);

impl GumError {
    pub(crate) fn new(why: String) -> GumError {
        GumError(why)
    }
}

impl Gum {
    /// Builds the matcher of `scenes`.
    pub fn new(scenes: Scenes) -> Result<Gum, GumError> {
        let mut index: std::collections::HashMap<String, usize> = Default::default();
        let mut patterns: Vec<(String, Vec<usize>)> = Vec::new();
        for (s, scene) in scenes.scenes().iter().enumerate() {
            for word in &scene.words {
                let at = *index.entry(word.clone()).or_insert_with(|| {
                    patterns.push((word.clone(), Vec::new()));
                    patterns.len() - 1
                });
                patterns[at].1.push(s);
            }
        }
        let padded: Vec<String> = patterns.iter().map(|(w, _)| format!(" {w} ")).collect();
        // A DFA: the fastest search, and a catalogue's words are few enough (tens of
        // thousands) for its memory.
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&padded)
            .or_else(|_| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&padded)
            })
            .map_err(|e| GumError::new(e.to_string()))?;
        Ok(Gum {
            scenes,
            automaton,
            patterns,
        })
    }

    /// Its catalogue.
    pub fn scenes(&self) -> &Scenes {
        &self.scenes
    }

    /// Whether `text` matches any scene (with `intent`, any that applies to that source): the
    /// gate's decision without its explanation, stopping at the first word that decides it.
    pub fn passes(&self, text: &str, intent: Option<Source>) -> bool {
        self.passes_padded(&padded(text), intent)
    }

    /// [`Gum::passes`] on a text already [`padded`].
    pub(crate) fn passes_padded(&self, padded: &str, intent: Option<Source>) -> bool {
        let all = self.scenes.scenes();
        let applies = |s: usize| {
            intent.is_none_or(|i| all[s].intents.is_empty() || all[s].intents.contains(&i))
        };
        self.automaton.find_overlapping_iter(padded).any(|m| {
            self.patterns[m.pattern().as_usize()]
                .1
                .iter()
                .any(|&s| applies(s))
        })
    }

    /// The scenes `text` matches; with `intent`, only the scenes that apply to that source.
    pub fn hits(&self, text: &str, intent: Option<Source>) -> GumHits {
        self.hits_padded(&padded(text), intent)
    }

    /// [`Gum::hits`] on a text already [`padded`].
    pub(crate) fn hits_padded(&self, padded: &str, intent: Option<Source>) -> GumHits {
        let all = self.scenes.scenes();
        // Pattern ids first (each once, in the order first matched); words are copied only
        // once per (scene, word) at the end: a long text can match hundreds of times.
        let mut order: Vec<usize> = Vec::new();
        // A linear scan while few patterns matched; a set once many have (long mail).
        let mut seen: std::collections::HashSet<usize> = Default::default();
        for m in self.automaton.find_overlapping_iter(padded) {
            let p = m.pattern().as_usize();
            let new = if order.len() < 16 {
                !order.contains(&p)
            } else {
                if seen.is_empty() {
                    seen.extend(order.iter().copied());
                }
                seen.insert(p)
            };
            if new {
                order.push(p);
            }
        }
        let mut by_scene: Vec<Vec<String>> = vec![Vec::new(); all.len()];
        for p in order {
            let (word, scenes) = &self.patterns[p];
            for &s in scenes {
                let applies =
                    intent.is_none_or(|i| all[s].intents.is_empty() || all[s].intents.contains(&i));
                if applies {
                    by_scene[s].push(word.clone());
                }
            }
        }
        GumHits {
            scenes: by_scene
                .into_iter()
                .enumerate()
                .filter(|(_, words)| !words.is_empty())
                .map(|(scene, words)| SceneHit {
                    scene,
                    name: all[scene].name.clone(),
                    words,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gum(toml: &str) -> Gum {
        Gum::new(Scenes::from_toml(toml).unwrap()).unwrap()
    }

    const SMALL: &str = r#"version = 1
[[scene]]
name = "pets"
words = ["cat", "dog", "vet"]
[[scene]]
name = "travel"
words = ["road trip", "hotel", "São Paulo"]
intents = ["email", "chat"]
[[scene]]
name = "family"
words = ["mom's", "dog"]
"#;

    fn names(h: &GumHits) -> Vec<&str> {
        h.scenes.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn normalising_keeps_words_and_in_word_apostrophes() {
        assert_eq!(normalise("  Hello,\tWORLD!\n"), "hello world");
        assert_eq!(normalise("Mom's  car — don’t"), "mom's car don't");
        assert_eq!(normalise("'quoted' ...!"), "quoted");
        assert_eq!(normalise("ÉTÉ à São-Paulo"), "été à são paulo");
        assert_eq!(normalise("?!"), "");
    }

    #[test]
    fn whole_words_only_whatever_the_case_or_punctuation() {
        let g = gum(SMALL);
        assert_eq!(names(&g.hits("My CAT, Tom!", None)), ["pets"]);
        assert!(!g.hits("a category of concatenation", None).is_memorable());
        assert!(!g.hits("catalogue; dogma; vetted", None).is_memorable());
        assert_eq!(names(&g.hits("cat", None)), ["pets"]);
        assert_eq!(names(&g.hits("(vet)", None)), ["pets"]);
        assert!(!g.hits("", None).is_memorable());
        assert!(!g.hits("haha ok, thanks!", None).is_memorable());
    }

    #[test]
    fn phrases_match_across_line_breaks_and_punctuation() {
        let g = gum(SMALL);
        let hits = g.hits("we went on a Road\n trip, then a hotel", None);
        assert_eq!(names(&hits), ["travel"]);
        assert_eq!(hits.scenes[0].words, ["road trip", "hotel"]);
        assert!(!g.hits("the road was a trip", None).is_memorable());
        assert_eq!(names(&g.hits("Flying to SÃO PAULO.", None)), ["travel"]);
        assert!(!g.hits("Paulo from São", None).is_memorable());
    }

    #[test]
    fn one_word_in_two_scenes_hits_both_and_apostrophes_stay() {
        let g = gum(SMALL);
        assert_eq!(names(&g.hits("Walked the DOG", None)), ["pets", "family"]);
        assert_eq!(names(&g.hits("at my mom’s place", None)), ["family"]);
        assert!(!g.hits("my mom is here", None).is_memorable());
    }

    #[test]
    fn passing_agrees_with_the_hits() {
        let g = gum(SMALL);
        for text in [
            "my cat",
            "category",
            "Road\ntrip",
            "hotel",
            "",
            "mom's",
            "mom",
        ] {
            for intent in [None, Some(Source::Image), Some(Source::Email)] {
                assert_eq!(
                    g.passes(text, intent),
                    g.hits(text, intent).is_memorable(),
                    "{text:?} {intent:?}"
                );
            }
        }
    }

    #[test]
    fn a_known_intent_matches_only_its_scenes() {
        let g = gum(SMALL);
        assert_eq!(
            names(&g.hits("hotel and dog", Some(Source::Email))),
            ["pets", "travel", "family"]
        );
        assert_eq!(
            names(&g.hits("hotel and dog", Some(Source::Image))),
            ["pets", "family"]
        );
        assert!(!g.hits("hotel", Some(Source::Note)).is_memorable());
    }

    #[test]
    fn the_builtin_catalogue_passes_what_a_person_would_remember() {
        let g = Gum::new(Scenes::builtin().unwrap()).unwrap();
        for memorable in [
            "I just signed up for a pottery class!",
            "My sister is getting married next month.",
            "We moved to Porto in March.",
            "I was diagnosed with asthma last year.",
        ] {
            assert!(g.hits(memorable, None).is_memorable(), "{memorable}");
        }
        for chatter in ["haha ok", "Thanks, you too!", "lol yes", "Good night!"] {
            assert!(!g.hits(chatter, None).is_memorable(), "{chatter}");
        }
    }
}
