//! Mining salient words from labelled texts: the weighted log-odds ratio with an informative
//! Dirichlet prior (Monroe, Colaresi & Quinn 2008, "Fightin' Words"), memorable against not
//! memorable, over the texts' normalised words.
//!
//! Counts are per text (a word counts once per text it is in: the gate asks whether a text
//! holds a word, not how often). The prior of word `w` is `α_w = α₀ · share of w in all texts`
//! and `z_w = δ_w / √(1/(y_m + α_w) + 1/(y_n + α_w))`, `δ_w` the difference of the two classes'
//! smoothed log-odds. A word is salient when `z_w > threshold` and it is in at least
//! `min_count` memorable texts.

use std::collections::HashMap;

use memdb::gate::{Gum, GumError, Scene, Scenes, normalise};

use super::GateEval;

/// How a lexicon is learned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LearnOptions {
    /// z-score a word must exceed.
    pub threshold: f64,
    /// Fewest memorable texts a word must be in.
    pub min_count: u32,
    /// Prior strength α₀; `None`: the number of word occurrences (per text) in all texts.
    pub prior: Option<f64>,
    /// Also two-word phrases.
    pub bigrams: bool,
}

impl Default for LearnOptions {
    fn default() -> Self {
        // The feasibility study on the LoCoMo files (nested leave-one-file-out on the training
        // files only) picked 0.75 on every fold.
        LearnOptions {
            threshold: 0.75,
            min_count: 1,
            prior: None,
            bigrams: false,
        }
    }
}

/// A salient word and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct SalientWord {
    /// The normalised word or phrase.
    pub word: String,
    /// Its z-score (memorable over not).
    pub z: f64,
    /// Memorable texts holding it.
    pub memorable: u32,
    /// Other texts holding it.
    pub other: u32,
}

/// The distinct words (and with `bigrams` the two-word phrases) of a text.
fn terms(text: &str, bigrams: bool) -> Vec<String> {
    let normal = normalise(text);
    let words: Vec<&str> = normal.split(' ').filter(|w| !w.is_empty()).collect();
    let mut out: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    if bigrams {
        out.extend(words.windows(2).map(|p| format!("{} {}", p[0], p[1])));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Every word of `texts` (text, memorable) with its z-score, best first (ties by word).
pub fn score_words(texts: &[(&str, bool)], options: &LearnOptions) -> Vec<SalientWord> {
    let mut counts: HashMap<String, (u32, u32)> = HashMap::new();
    let (mut total_m, mut total_n) = (0f64, 0f64);
    for (text, memorable) in texts {
        for term in terms(text, options.bigrams) {
            let entry = counts.entry(term).or_default();
            if *memorable {
                entry.0 += 1;
                total_m += 1.0;
            } else {
                entry.1 += 1;
                total_n += 1.0;
            }
        }
    }
    let total = total_m + total_n;
    let a0 = options.prior.unwrap_or(total).max(f64::MIN_POSITIVE);
    let mut out: Vec<SalientWord> = counts
        .into_iter()
        .filter_map(|(word, (m, n))| {
            let (ym, yn) = (f64::from(m), f64::from(n));
            let aw = a0 * (ym + yn) / total;
            let odds = |y: f64, class_total: f64| {
                let rest = class_total + a0 - y - aw;
                ((y + aw) / rest).ln()
            };
            let delta = odds(ym, total_m) - odds(yn, total_n);
            let z = delta / (1.0 / (ym + aw) + 1.0 / (yn + aw)).sqrt();
            z.is_finite().then_some(SalientWord {
                word,
                z,
                memorable: m,
                other: n,
            })
        })
        .collect();
    out.sort_by(|a, b| b.z.total_cmp(&a.z).then_with(|| a.word.cmp(&b.word)));
    out
}

/// A one-scene catalogue of the words salient under `options`, named `name`.
pub fn learn_lexicon(texts: &[(&str, bool)], options: &LearnOptions, name: &str) -> Scenes {
    let words: Vec<String> = score_words(texts, options)
        .into_iter()
        .filter(|w| w.z > options.threshold && w.memorable >= options.min_count)
        .map(|w| w.word)
        .collect();
    Scenes::from_parts(vec![Scene {
        name: name.to_owned(),
        words,
        positive: vec![format!(
            "holds a word salient in memorable texts (log-odds z > {})",
            options.threshold
        )],
        negative: Vec::new(),
        unless: Vec::new(),
        intents: Vec::new(),
    }])
}

/// For each group (a conversation), the lexicon learned on every other group: what
/// cross-validation gates that group's texts with, so that no text is scored by a lexicon that
/// saw its label.
pub fn lexicons_leaving_one_out(
    groups: &[Vec<super::LabelledText>],
    options: &LearnOptions,
) -> Vec<Scenes> {
    (0..groups.len())
        .map(|held_out| {
            let train: Vec<(&str, bool)> = groups
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != held_out)
                .flat_map(|(_, g)| g.iter().map(|t| (t.text.as_str(), t.memorable)))
                .collect();
            learn_lexicon(&train, options, "learned")
        })
        .collect()
}

/// Seed expansion in an embedding space (issue 21 item 1): the words of the training texts
/// nearest a learned word join the lexicon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expansion {
    /// Neighbours taken per learned word.
    pub neighbours: usize,
    /// Cosine a neighbour must reach.
    pub min_cosine: f32,
    /// Fewest training texts a candidate word must be in.
    pub min_texts: u32,
}

impl Default for Expansion {
    fn default() -> Self {
        Expansion {
            neighbours: 3,
            min_cosine: 0.75,
            min_texts: 2,
        }
    }
}

/// The distinct words of `texts` that are in at least `min_texts` of them, sorted.
pub fn vocabulary(texts: &[&str], min_texts: u32) -> Vec<String> {
    let mut counts: HashMap<String, u32> = HashMap::new();
    for text in texts {
        for term in terms(text, false) {
            *counts.entry(term).or_default() += 1;
        }
    }
    let mut words: Vec<String> = counts
        .into_iter()
        .filter(|(_, n)| *n >= min_texts)
        .map(|(w, _)| w)
        .collect();
    words.sort_unstable();
    words
}

/// `scenes` with each scene's words joined by their nearest neighbours among the words of
/// `texts` (by `vector`, unit-length: cosine is the dot product). A word without a vector
/// neither seeds nor joins.
pub fn expand_lexicon(
    scenes: &Scenes,
    texts: &[&str],
    expansion: &Expansion,
    vector: &dyn Fn(&str) -> Option<Vec<f32>>,
) -> Scenes {
    let candidates: Vec<(String, Vec<f32>)> = vocabulary(texts, expansion.min_texts)
        .into_iter()
        .filter_map(|w| vector(&w).map(|v| (w, v)))
        .collect();
    let grown = scenes
        .scenes()
        .iter()
        .map(|scene| {
            let mut scene = scene.clone();
            let mut added: Vec<String> = Vec::new();
            for seed in &scene.words {
                let Some(seed_vector) = vector(seed) else {
                    continue;
                };
                let mut near: Vec<(f32, &str)> = candidates
                    .iter()
                    .filter(|(w, _)| w != seed)
                    .map(|(w, v)| (dot(&seed_vector, v), w.as_str()))
                    .filter(|(c, _)| *c >= expansion.min_cosine)
                    .collect();
                near.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
                for (_, word) in near.into_iter().take(expansion.neighbours) {
                    if !scene.words.iter().any(|w| w == word) && !added.iter().any(|w| w == word) {
                        added.push(word.to_owned());
                    }
                }
            }
            scene.words.extend(added);
            scene
        })
        .collect();
    Scenes::from_parts(grown)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// One held-out group's figures under the lexicon learned without it.
#[derive(Debug, Clone)]
pub struct Fold {
    /// The held-out group (a conversation's name).
    pub group: String,
    /// Its figures.
    pub eval: GateEval,
    /// Words in the lexicon that gated it.
    pub words: usize,
}

/// A lexicon grown by the words of the training texts (seed expansion), given the scenes
/// learned on a fold and that fold's training texts.
pub type Expand<'a> = dyn Fn(&Scenes, &[&str]) -> Scenes + 'a;

/// Leave one group out: each group's texts are gated by a lexicon learned on the others only
/// (grown by `expand` with the words of those others); the pooled figures count every text
/// once, under the lexicon that never saw it.
pub fn cross_validate(
    groups: &[Vec<super::LabelledText>],
    options: &LearnOptions,
    expand: Option<&Expand<'_>>,
) -> Result<(Vec<Fold>, GateEval), GumError> {
    let mut folds = Vec::new();
    let (mut decisions, mut total_us) = (Vec::new(), 0.0);
    let lexicons = lexicons_leaving_one_out(groups, options);
    for (index, (held_out, scenes)) in groups.iter().zip(lexicons).enumerate() {
        let scenes = match expand {
            Some(expand) => {
                let train: Vec<&str> = groups
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != index)
                    .flat_map(|(_, g)| g.iter().map(|t| t.text.as_str()))
                    .collect();
                expand(&scenes, &train)
            }
            None => scenes,
        };
        let words = scenes.word_count();
        let gate = Gum::new(scenes)?;
        let eval = super::evaluate(&gate, held_out);
        total_us += eval.us_per_text * eval.texts as f64;
        decisions.extend(
            held_out
                .iter()
                .map(|t| (t.memorable, gate.passes(&t.text, None))),
        );
        let group = held_out.first().map_or("", |t| t.group.as_str()).to_owned();
        folds.push(Fold { group, eval, words });
    }
    Ok((folds, GateEval::of(&decisions, total_us)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_gain_their_nearest_words_of_the_training_texts() {
        // A hand-made 2-d space: puppy and kitten near dog; tax far from it.
        let space: HashMap<&str, [f32; 2]> = [
            ("dog", [1.0, 0.0]),
            ("puppy", [0.96, 0.28]),
            ("kitten", [0.8, 0.6]),
            ("tax", [0.0, 1.0]),
        ]
        .into_iter()
        .collect();
        let vector = |w: &str| space.get(w).map(|v| v.to_vec());
        let seeds = Scenes::from_parts(vec![Scene {
            name: "learned".into(),
            words: vec!["dog".into()],
            positive: vec![],
            negative: vec![],
            unless: vec![],
            intents: vec![],
        }]);
        let texts = ["a puppy and a kitten", "puppy tax kitten", "tax", "dog"];
        assert_eq!(vocabulary(&texts, 2), ["kitten", "puppy", "tax"]);
        let grow = |neighbours, min_cosine| {
            let e = Expansion {
                neighbours,
                min_cosine,
                min_texts: 2,
            };
            expand_lexicon(&seeds, &texts, &e, &vector).scenes()[0]
                .words
                .clone()
        };
        assert_eq!(grow(1, 0.5), ["dog", "puppy"]);
        assert_eq!(grow(3, 0.5), ["dog", "puppy", "kitten"]);
        assert_eq!(grow(3, 0.9), ["dog", "puppy"]);
        assert_eq!(grow(3, -1.0), ["dog", "puppy", "kitten", "tax"]);
    }

    #[test]
    fn words_of_memorable_texts_score_high_and_shared_words_near_zero() {
        let texts = [
            ("I adopted a puppy last week", true),
            ("We adopted a kitten", true),
            ("My puppy is sick", true),
            ("haha ok thanks", false),
            ("ok sounds good", false),
            ("thanks a lot haha", false),
        ];
        let scored = score_words(&texts, &LearnOptions::default());
        let z = |w: &str| scored.iter().find(|s| s.word == w).unwrap().z;
        // Twice in memorable texts only > once > in both classes > only in the others.
        assert!(
            z("adopted") > z("kitten") && z("kitten") > z("a"),
            "{scored:?}"
        );
        assert!(z("a") > 0.0 && z("a") < 0.5);
        assert!(z("haha") < z("sounds") && z("sounds") < 0.0);
        let options = LearnOptions {
            threshold: 0.6,
            ..LearnOptions::default()
        };
        let lexicon = learn_lexicon(&texts, &options, "learned");
        assert_eq!(lexicon.scenes()[0].words, ["adopted", "puppy"]);
    }

    #[test]
    fn a_word_counts_once_per_text_and_bigrams_are_phrases() {
        let texts = [("dog dog dog", true), ("cat", false)];
        let scored = score_words(&texts, &LearnOptions::default());
        assert_eq!(
            scored.iter().find(|s| s.word == "dog").unwrap().memorable,
            1
        );
        let with_pairs = LearnOptions {
            bigrams: true,
            ..LearnOptions::default()
        };
        let scored = score_words(&[("Road trip!", true), ("no", false)], &with_pairs);
        assert!(scored.iter().any(|s| s.word == "road trip"));
    }
}
