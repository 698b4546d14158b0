//! The memorability gate (SAMD, ../shared/papers/samd-memory-discrimination.txt §3–4): decides
//! *before writing* whether a text is worth remembering.
//!
//! The model — scene catalogues ([`Scenes`]), the Gating Unit Module ([`Gum`]), rule
//! predicates and the judge — is crate `memdb-gate`, pure over text and re-exported here. This
//! module runs it on items: the ingest stage (`stage.rs`: tag or drop before commit) and the
//! lexicon versions kept in the store's settings (`stored.rs`).
//!
//! Invariant: a correction of a stored item always passes the gate (checked by `ingest.rs`).

mod stage;
mod stored;

pub use memdb_gate::{
    BUILTIN_SCENES, ClusterPrompt, ClusterPrompts, GateModelError, Gum, GumError, GumHits,
    JUDGE_SYSTEM, Judge, PredicateHits, RulePredicates, Scene, SceneError, SceneHit, Scenes,
    Verdict, judge_message, normalise,
};
#[cfg(feature = "llm")]
pub use memdb_gate::{GateModel, ModelJudge, parse_verdict};
pub(crate) use stage::excerpt;
pub use stage::{
    GateDecision, GateMode, GateStage, JudgeStage, TAG_LEXICON_PREFIX, TAG_MEMORABLE,
    TAG_NOT_MEMORABLE, TAG_SCENE_PREFIX, text_of,
};
pub use stored::{StoredLexicon, install_lexicon, stored_lexicon, stored_lexicons, use_lexicon};
