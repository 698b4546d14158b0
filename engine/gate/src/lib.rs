//! memdb-gate: the memorability gate's model (SAMD,
//! ../shared/papers/samd-memory-discrimination.txt §3–4), which decides *before writing*
//! whether a text is worth remembering. Pure over text: it knows no store.
//!
//! Owns the scene catalogue ([`Scenes`]: scenes with salient words and phrases and the positive
//! and negative rules of an optional judge; the built-in one is `scenes.toml`, user scenes
//! come from TOML), the Gating Unit Module ([`Gum`]): one Aho-Corasick automaton over every
//! scene's words, matched against the text's normalised words; any hit passes, and the
//! scene-hit list (which scenes, by which words) is the explanation a person sees), the rule
//! predicates ([`RulePredicates`]: `unless` expressions) and the judge ([`Judge`]; with `llm`,
//! [`ModelJudge`] asking a local model server). The engine's `memdb::gate` runs it as an ingest
//! stage and keeps lexicon versions in the store.
//!
//! Invariants:
//! - a word or phrase matches only whole normalised words (lower case; every run of
//!   characters that are not letters, digits or an in-word apostrophe is one space), so case,
//!   punctuation and line breaks never decide a match;
//! - a scene catalogue that does not parse, or names a scene twice, or has a scene without
//!   words, is a typed [`SceneError`] naming the scene: nothing half-loaded.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod gum;
mod judge;
mod predicates;
mod scenes;

pub use gum::{Gum, GumError, GumHits, SceneHit, normalise};
pub use judge::{
    ClusterPrompt, ClusterPrompts, GateModelError, JUDGE_SYSTEM, Judge, Verdict, judge_message,
};
#[cfg(feature = "llm")]
pub use judge::{GateModel, ModelJudge, parse_verdict};
pub use predicates::{PredicateHits, RulePredicates};
pub use scenes::{BUILTIN_SCENES, Scene, SceneError, Scenes};
