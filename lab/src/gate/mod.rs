//! The memorability gate's lab (SAMD, ../shared/papers/samd-memory-discrimination.txt §3–4): how
//! a gate is measured and grown, apart from the gate itself (`memdb::gate`).
//!
//! - [`evaluate`]: a gate's precision, recall and pass rate on labelled texts (LoCoMo's
//!   evidence turns are the memorable ones);
//! - [`learn_lexicon`], [`expand_lexicon`], [`lexicons_leaving_one_out`]: salient words learned
//!   from labelled texts, each fold's lexicon fitted without its own texts, and
//!   [`cross_validate`] scoring each fold under the lexicon that never saw it;
//! - [`grow_by_roleplay`]: words asked of personas played by a local model;
//! - [`store_affinity`] and [`cluster_intents`]: a store's intent × scene matrix `E` and its CPM
//!   clustering (SVD), made into the judge's [`ClusterPrompts`] by [`cluster_prompts`].

mod affinity;
mod cpm;
mod eval;
mod learn;
mod roleplay;

pub use affinity::{Affinity, store_affinity};
pub use cpm::{Clustering, CpmOptions, cluster_intents, cluster_prompts};
pub use eval::{GateEval, LabelledText, evaluate, evaluate_with, locomo_texts};
pub use learn::{
    Expand, Expansion, Fold, LearnOptions, SalientWord, cross_validate, expand_lexicon,
    learn_lexicon, lexicons_leaving_one_out, score_words, vocabulary,
};
pub use memdb::gate::ClusterPrompts;
pub use roleplay::RoleplayModel;
pub use roleplay::{
    AskWords, DEFAULT_PERSONAS, RoleplayReport, grow_by_roleplay, parse_words, roleplay_message,
    roleplay_system,
};
