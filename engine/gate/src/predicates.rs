//! "GUM + rule predicates": the gate without a model (issue 21 item 3). SAMD gives each cluster's
//! positive and negative rules to an LLM judge; without one, a scene's negative rules act
//! through its `unless` expressions ("sick of it", "heading home"): a scene counts as hit only
//! when one of its words matches outside every one of its own `unless` expressions. The
//! positive rules are the scene words themselves. Reported under this name, never as SAMD's
//! judge.
//!
//! Invariants: a text no scene's words match is never let through by a predicate (predicates
//! only take hits away); an `unless` expression of one scene never voids another scene's hit.

use aho_corasick::{AhoCorasick, MatchKind};
use memdb_formats::item::Source;

use super::gum::{Gum, GumError, GumHits, SceneHit, padded};

/// The `unless` expressions of a catalogue, matched alongside a [`Gum`].
#[derive(Debug)]
pub struct RulePredicates {
    /// `None` when no scene has an `unless` expression.
    automaton: Option<AhoCorasick>,
    /// Pattern → (expression, the scenes that list it).
    patterns: Vec<(String, Vec<usize>)>,
}

/// The hits that survive the predicates, and those they voided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PredicateHits {
    /// Scenes hit by a word outside their `unless` expressions.
    pub hits: GumHits,
    /// Scenes whose every hit was inside one of their `unless` expressions; `words` holds
    /// those expressions.
    pub voided: Vec<SceneHit>,
}

impl RulePredicates {
    /// The predicates of `gum`'s catalogue.
    pub fn new(gum: &Gum) -> Result<RulePredicates, GumError> {
        let mut patterns: Vec<(String, Vec<usize>)> = Vec::new();
        for (s, scene) in gum.scenes().scenes().iter().enumerate() {
            for expression in &scene.unless {
                match patterns.iter_mut().find(|(e, _)| e == expression) {
                    Some((_, scenes)) => scenes.push(s),
                    None => patterns.push((expression.clone(), vec![s])),
                }
            }
        }
        let automaton = if patterns.is_empty() {
            None
        } else {
            let padded: Vec<String> = patterns.iter().map(|(e, _)| format!(" {e} ")).collect();
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&padded)
                    .map_err(|e| GumError::new(e.to_string()))?,
            )
        };
        Ok(RulePredicates {
            automaton,
            patterns,
        })
    }

    /// `gum`'s hits on `text` with the predicates applied (`gum` must be the one these
    /// predicates were made from).
    pub fn hits(&self, gum: &Gum, text: &str, intent: Option<Source>) -> PredicateHits {
        let padded = padded(text);
        let hits = gum.hits_padded(&padded, intent);
        let Some(automaton) = &self.automaton else {
            return PredicateHits {
                hits,
                voided: Vec::new(),
            };
        };
        if hits.scenes.is_empty() {
            return PredicateHits::default();
        }
        // Each hit scene's own `unless` spans (the expression without its boundary spaces).
        let mut spans: Vec<Vec<(usize, usize)>> = vec![Vec::new(); gum.scenes().scenes().len()];
        let mut expressions: Vec<Vec<&str>> = vec![Vec::new(); spans.len()];
        for m in automaton.find_overlapping_iter(&padded) {
            let (expression, scenes) = &self.patterns[m.pattern().as_usize()];
            for &s in scenes {
                spans[s].push((m.start() + 1, m.end() - 1));
                if !expressions[s].contains(&expression.as_str()) {
                    expressions[s].push(expression);
                }
            }
        }
        let mut out = PredicateHits::default();
        for hit in hits.scenes {
            if spans[hit.scene].is_empty() {
                out.hits.scenes.push(hit);
                continue;
            }
            // The text with this scene's expressions blanked: its words still match elsewhere?
            let mut blanked = padded.clone().into_bytes();
            for &(start, end) in &spans[hit.scene] {
                blanked[start..end].fill(b' ');
            }
            // Whole UTF-8 sequences were replaced by ASCII spaces: still UTF-8.
            let blanked = String::from_utf8_lossy(&blanked);
            match gum
                .hits_padded(&blanked, intent)
                .scenes
                .into_iter()
                .find(|h| h.scene == hit.scene)
            {
                Some(kept) => out.hits.scenes.push(kept),
                None => out.voided.push(SceneHit {
                    scene: hit.scene,
                    name: hit.name,
                    words: expressions[hit.scene]
                        .iter()
                        .map(|e| (*e).to_owned())
                        .collect(),
                }),
            }
        }
        out
    }

    /// Whether `text` passes the GUM with the predicates applied.
    pub fn passes(&self, gum: &Gum, text: &str, intent: Option<Source>) -> bool {
        if self.automaton.is_none() {
            return gum.passes(text, intent);
        }
        self.hits(gum, text, intent).hits.is_memorable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenes;

    fn gate() -> (Gum, RulePredicates) {
        let scenes = Scenes::from_toml(
            r#"version = 1
[[scene]]
name = "health"
words = ["sick", "doctor", "pain"]
unless = ["sick of", "no pain no gain"]
[[scene]]
name = "moods"
words = ["sick of"]
"#,
        )
        .unwrap();
        let gum = Gum::new(scenes).unwrap();
        let predicates = RulePredicates::new(&gum).unwrap();
        (gum, predicates)
    }

    fn names(hits: &GumHits) -> Vec<&str> {
        hits.scenes.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn an_expression_voids_only_its_own_scenes_hit() {
        let (gum, p) = gate();
        let got = p.hits(&gum, "I'm SICK of\nthis rain", None);
        // "sick of" voids health's "sick" but is itself a word of another scene.
        assert_eq!(names(&got.hits), ["moods"]);
        assert_eq!(got.voided.len(), 1);
        assert_eq!(got.voided[0].name, "health");
        assert_eq!(got.voided[0].words, ["sick of"]);
        // Without the predicates the GUM passes health too.
        assert_eq!(
            names(&gum.hits("I'm SICK of this rain", None)),
            ["health", "moods"]
        );
    }

    #[test]
    fn a_word_outside_the_expression_still_counts() {
        let (gum, p) = gate();
        let got = p.hits(
            &gum,
            "No pain, no gain. The doctor says my back is sick.",
            None,
        );
        assert_eq!(names(&got.hits), ["health"]);
        assert_eq!(got.hits.scenes[0].words, ["doctor", "sick"]);
        assert!(got.voided.is_empty());
        assert!(!p.passes(&gum, "no pain no gain!", None));
        assert!(p.passes(&gum, "chest pain since Monday", None));
    }

    #[test]
    fn predicates_never_let_through_what_the_gum_drops() {
        let (gum, p) = gate();
        for text in ["", "hello there", "sickle", "gain"] {
            assert!(!p.passes(&gum, text, None), "{text}");
            assert_eq!(p.hits(&gum, text, None), PredicateHits::default());
        }
    }

    #[test]
    fn the_builtin_catalogue_voids_its_figures_of_speech() {
        let gum = Gum::new(Scenes::builtin().unwrap()).unwrap();
        let p = RulePredicates::new(&gum).unwrap();
        assert!(gum.passes("I'm heading home now", None));
        assert!(!p.passes(&gum, "I'm heading home now", None));
        assert!(p.passes(&gum, "We bought a new house in Lisbon", None));
    }
}
