//! Recall: given a question, the memory items that answer it, with the reasons.
//!
//! Four signals, each computed over the items the filters allow (never filtered after
//! ranking):
//! - **dense**: the question's embedding against the item vector space (exact or HNSW);
//! - **lexical**: BM25 over the stems of item text's words (`lexical`; the text is
//!   [`item_text`]'s);
//! - **graph**: query nodes (the extractor of [`crate::graph`]) matched to graph nodes exactly
//!   and by embedding similarity, weighted by similarity × idf over paths; candidate EM-Paths
//!   from the Q-matrix bitmaps scored by weighted overlap; items of the best paths scored by
//!   the matched nodes they carry plus their path's score (day-level ranking, then item level);
//! - **place**: the places the question names, matched to the items' places and positions
//!   (`place`); silent when the question names none or no item has a place.
//!
//! The signals are fused by weighted reciprocal rank, and the dense signal also by its score:
//! each dense hit adds its cosine, min-max normalised over the dense list, so a hit far above
//! the rest keeps that margin (a convex combination of normalised scores, which Bruch et al.
//! found ahead of reciprocal rank alone for hybrid retrieval); then each chat turn among the
//! candidates lends a share of its fused score to the turns before and after it in its EM-Path
//! (conversation context: an answer is often the turn after the one that names the topic).
//! A question that asks for an inference ("Would she enjoy …?", `form`) weighs the dense
//! score by its own weight: its evidence says the same in other words.
//! A learned reranker (`rerank`) then reorders the chat turns among the fused top candidates
//! (first rank: which of the turns on the topic holds the answer). Every hit carries its
//! explanation: its rank under each signal, the graph nodes it matched, the place of the
//! question it is at, and its path and page.
//!
//! A query node that is an identifier (a phrase with a digit, not a date or an amount: a camera
//! model) matches only the graph node of the same phrase, never one that merely embeds alike,
//! as the graph's own merges keep them apart.
//!
//! The fusion weights of the first three, the dense score's weights and the context share were
//! chosen on the five LoCoMo conversations the locomo bench runs (the only labelled data
//! here), one setting for every store: the setting of `locomo --cv`'s grid best on all five;
//! the graph signal's paths, path share and node match were set with them. `locomo --cv`
//! cross-validates all of them (each conversation scored with the setting best on the other
//! four) and the reranker with them, whose weights were fitted on the same five under the
//! defaults: the pipeline is also scored with both chosen on the other four.
//! The place signal's weight is BM25's, set by reasoning, not fitted: LoCoMo has no places, and
//! the shared photos are the measurement, not a training set.

mod answer_type;
mod form;
mod item_text;
mod lexical;
mod place;
mod rerank;

use crate::handle::{Snapshot, Store};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use memdb_formats::item::Source;
use roaring::RoaringBitmap;
/// The item-id set [`RecallOptions::items`] restricts a recall to.
pub use roaring::RoaringTreemap;

use crate::error::Result;
use crate::graph::{Embedder, NODE_VECTORS, embed_checked};
use lexical::Bm25;
use memdb_store::{ITEM_VECTORS, ScanFilter, VectorScope};

pub use form::QuestionForm;
pub(crate) use item_text::{ITEM_TEXT_SETTING, Recipe, RecipeLock, changed_sources};
pub use item_text::{ItemTextStyle, item_text, item_text_in};
pub use rerank::{FEATURES, Features, RERANK_DEPTH, Reranker};

/// Which signals a recall uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signals {
    /// Embedding similarity of the question and the item.
    pub dense: bool,
    /// BM25 over item text.
    pub lexical: bool,
    /// Path overlap in the EM-Graph.
    pub graph: bool,
    /// The places the question names, against the items' places.
    pub place: bool,
}

impl Signals {
    /// All four (the default).
    pub const ALL: Signals = Signals {
        dense: true,
        lexical: true,
        graph: true,
        place: true,
    };
}

/// The fusion's weights for one kind of item: of each signal's reciprocal rank, of the dense
/// signal's normalised score, and of the item's recency among the candidates of its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionWeights {
    /// Weight of the dense rank.
    pub dense: f64,
    /// Weight of the lexical (BM25) rank.
    pub lexical: f64,
    /// Weight of the graph (path overlap) rank.
    pub graph: f64,
    /// Weight of the place rank.
    pub place: f64,
    /// Weight of the dense cosine, min-max normalised over the dense list.
    pub dense_score: f64,
    /// Weight of the item's rank among the fused candidates of its kind by event time, newest
    /// first: of two memories on one subject, the later is the more likely to be true now.
    pub recency: f64,
    /// Weight of whose the item is against whose the question asks about, as a reciprocal rank
    /// of 1: added when the question names a relation ("my sister") the memory names too,
    /// taken off when the question names none and the memory is about someone else ("Where do
    /// I live?" is not answered by "My sister lives in Rome").
    pub subject: f64,
    /// Weight of holding the kind of answer the question asks for (a place for "where", a day
    /// or time for "when", a number for "how many", a name for "who"), as a reciprocal rank of
    /// 1.
    pub answer_type: f64,
}

impl FusionWeights {
    /// The most a candidate can score by these weights: every rank weight at rank 1, and the
    /// dense score at its best. Kinds of items are weighed on one scale when their totals are
    /// equal: a remembered fact cannot outrank a mail by its kind's weights alone.
    pub fn total(&self) -> f64 {
        (self.dense
            + self.lexical
            + self.graph
            + self.place
            + self.recency
            + self.subject
            + self.answer_type)
            / (RRF_K + 1.0)
            + self.dense_score
    }

    /// These weights scaled to a `total` of `to` (the fused order among items of one kind is
    /// the same at any scale).
    pub fn scaled_to(&self, to: f64) -> FusionWeights {
        let k = if self.total() > 0.0 {
            to / self.total()
        } else {
            1.0
        };
        FusionWeights {
            dense: self.dense * k,
            lexical: self.lexical * k,
            graph: self.graph * k,
            place: self.place * k,
            dense_score: self.dense_score * k,
            recency: self.recency * k,
            subject: self.subject * k,
            answer_type: self.answer_type * k,
        }
    }
}

impl RecallOptions {
    /// The fusion's weights of every item that is not a remembered fact, as [`FusionWeights`]
    /// (a question of fact's dense score weight; no recency, subject or answer type).
    pub fn default_weights(&self) -> FusionWeights {
        FusionWeights {
            dense: self.weights[0],
            lexical: self.weights[1],
            graph: self.weights[2],
            place: self.place_weight,
            dense_score: self.dense_score_weight,
            recency: 0.0,
            subject: 0.0,
            answer_type: 0.0,
        }
    }
}

/// Whether an item is a remembered fact, which the fusion weighs by
/// [`RecallOptions::memory_weights`] (defined with the memories `Store::remember` writes).
pub use crate::ops::is_remembered_fact;

/// How a recall runs.
#[derive(Debug, Clone)]
pub struct RecallOptions {
    /// Items to return.
    pub k: usize,
    /// Signals to fuse.
    pub signals: Signals,
    /// Only items in this time window (days are the items' local days).
    pub time: crate::TimeWindow,
    /// Only items of this source code.
    pub source: Option<u8>,
    /// Only these items (ids), on top of the time and source bounds: how a caller's own
    /// filters (tags, places, …) are pushed into every signal's scan.
    pub items: Option<RoaringTreemap>,
    /// Only items of this scope (SPEC.md §4.5: every component the filter sets must match;
    /// `None`, or the empty scope, allows every item).
    pub scope: Option<memdb_formats::item::Scope>,
    /// The vector space of item embeddings.
    pub dense_space: String,
    /// Fusion weights of the dense, lexical and graph ranks.
    pub weights: [f64; 3],
    /// Fusion weight of the place rank.
    pub place_weight: f64,
    /// Weight of the dense signal's score in the fusion, on top of its rank: each dense hit
    /// adds this times its cosine min-max normalised over the dense list (the best hit 1, the
    /// last 0). 0 (or less): ranks alone. For a question that states a fact
    /// ([`QuestionForm::Fact`]).
    pub dense_score_weight: f64,
    /// The dense score's weight for a question that asks for an inference
    /// ([`QuestionForm::Inference`]: "Would she enjoy …?", "What might his degree be in?"),
    /// whose evidence says the same in other words, so its meaning counts for more.
    pub inference_dense_score_weight: f64,
    /// Candidates each signal contributes before fusion.
    pub depth: usize,
    /// Cosine at or above which a graph node counts as matching a query node.
    pub node_match: f32,
    /// Paths (days) of the graph signal whose items are scored, best overlap first.
    pub graph_paths: usize,
    /// Share of its path's overlap score an item of the graph signal inherits (day-level
    /// context), against the matched nodes it carries itself.
    pub path_share: f64,
    /// Share of a chat turn's fused score given to the turns before and after it in its path.
    pub context_share: f64,
    /// Where the question's nodes come from (default: the rule extractor).
    pub extractor: Arc<dyn crate::graph::NodeExtractor>,
    /// The model that reorders the fused top candidates (default: [`Reranker::learned`];
    /// `None`: the fused order).
    pub reranker: Option<Arc<Reranker>>,
    /// BM25 matches words by their English stems ("camped" finds "camping"; default); false:
    /// by the words as written, as rank_bm25 does.
    pub stems: bool,
    /// The fusion's weights for remembered facts (short statements of what is true, which
    /// `weights`, `place_weight` and the dense score weights — chosen on conversation turns —
    /// weigh every other item by).
    pub memory_weights: FusionWeights,
    /// Whether a time the question names ("in May 2001", "last summer", "two years ago") is
    /// used: as a filter when the question is about that time (the phrase is cued: "in",
    /// "during", "since", "last …", "… ago"), no other time filter is given and the window holds
    /// items; else as a ranking signal ([`RecallOptions::time_weight`]). See [`QuestionTime`].
    pub question_time: bool,
    /// The day the question is asked, that "last month" and "two years ago" are read from
    /// (`None`: today, in the machine's time zone).
    pub asked_on: Option<jiff::civil::Date>,
    /// Weight of lying in [`RecallOptions::prefer_time`], as a reciprocal rank of 1.
    pub time_weight: f64,
    /// A window whose items the fusion ranks higher (without leaving the others out): set by
    /// the question's time when it is a signal, or by a caller.
    pub prefer_time: Option<crate::TimeWindow>,
}

impl RecallOptions {
    /// The dense score's weight for a question of `form` (below 0, or NaN, counts as 0).
    pub fn dense_score_weight_for(&self, form: QuestionForm) -> f64 {
        match form {
            QuestionForm::Fact => self.dense_score_weight,
            QuestionForm::Inference => self.inference_dense_score_weight,
        }
        .max(0.0)
    }
}

impl Default for RecallOptions {
    fn default() -> Self {
        let mut options = RecallOptions {
            k: 10,
            signals: Signals::ALL,
            time: crate::TimeWindow::ALL,
            source: None,
            items: None,
            scope: None,
            dense_space: ITEM_VECTORS.to_owned(),
            // Chosen on the five LoCoMo conversations of ../shared/data (the locomo bench's
            // `--cv` grid, the setting best on all five), the same for every store and
            // conversation: BM25 carries names, which dense misses; dense weighs in mostly by
            // its score (below), little by its rank.
            weights: [0.15, 1.5, 0.9],
            // As BM25's: a place named in the question is a word of it that the item's place
            // matches, with the place's meaning (its neighbourhoods and surroundings) added.
            place_weight: 1.5,
            dense_score_weight: 0.024,
            // For these weights, the inference weight whose pipeline (the reranker fitted
            // under it) scored best on all five, each conversation by a model fitted on the
            // other four (`locomo --cv`).
            inference_dense_score_weight: 0.048,
            depth: 100,
            node_match: 0.80,
            graph_paths: 8,
            path_share: 0.3,
            context_share: 0.45,
            extractor: Arc::new(crate::graph::RuleExtractor),
            reranker: Some(Arc::new(Reranker::learned())),
            stems: true,
            memory_weights: MEMORY_WEIGHTS,
            question_time: true,
            asked_on: None,
            // As the place's, by the same reasoning: a time the question names is a word of it
            // that the item's time matches. Not fitted (LoCoMo's questions name few times).
            time_weight: 1.5,
            prefer_time: None,
        };
        options.memory_weights = MEMORY_WEIGHTS.scaled_to(options.default_weights().total());
        options
    }
}

/// The fusion's weights for remembered facts as the `stories` bench's cross-validation over
/// the project's life stories (`tests/data/life-stories.jsonl`) chose them, the lexical rank's
/// weight at 1; [`RecallOptions::default`] scales them to the total of the other items' weights
/// ([`FusionWeights::scaled_to`]), so a fact and a mail are weighed on one scale.
pub const MEMORY_WEIGHTS: FusionWeights = FusionWeights {
    dense: 0.5,
    lexical: 1.0,
    graph: 0.9,
    place: 1.5,
    dense_score: 0.2,
    recency: 0.0,
    subject: 3.0,
    answer_type: 3.0,
};

/// Why an item was recalled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Explanation {
    /// Rank (1-based) under each signal that found it.
    pub dense_rank: Option<usize>,
    /// The dense signal's score of it: the cosine of its vector and the question's (as the
    /// item space's precision computes it), when dense search found it. The fusion adds it
    /// min-max normalised ([`RecallOptions::dense_score_weight`]).
    pub dense_score: Option<f32>,
    /// Rank under BM25.
    pub lexical_rank: Option<usize>,
    /// Rank under path overlap.
    pub graph_rank: Option<usize>,
    /// Rank under the place signal.
    pub place_rank: Option<usize>,
    /// The place of the question the item is at ("Paris, France"), when the place signal found
    /// it.
    pub place: Option<String>,
    /// Graph nodes of the item that matched the question.
    pub nodes: Vec<String>,
    /// The EM-Path the item belongs to and its page.
    pub path: Option<(u64, String)>,
    /// Its fused score (signals and conversation context), before the reranker.
    pub fused_score: f64,
    /// Its reranker features ([`FEATURES`]), computed in the fused order.
    pub features: Option<Features>,
    /// The reranker's probability that it answers the question (chat turns, when a reranker
    /// ran).
    pub rerank: Option<f64>,
    /// It lies in the window the question names, used as a ranking signal
    /// ([`RecallOptions::prefer_time`]).
    pub in_question_time: bool,
    /// The item it supersedes, when the signals found that one: a correction takes the place
    /// of what it corrects at once, before it has a vector of its own. Its ranks are then
    /// those of whichever of the two scored higher.
    pub corrects: Option<u64>,
}

/// One recalled item.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    /// Item id.
    pub item: u64,
    /// The ranking score, higher first: the fused score of the rank the hit holds (the
    /// reranker moves chat turns among the ranks they held; the hit's own fused score is
    /// [`Explanation::fused_score`]).
    pub score: f64,
    /// Why it is here.
    pub explanation: Explanation,
}

/// Time per stage of one recall, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecallTimings {
    /// Reading the items into the recall's index (the lexical index, each item's time, source
    /// and place) when this snapshot's index was not built yet; 0 when it was
    /// ([`Store::prepare_recall`], or an earlier recall of the same commit).
    pub index_us: u64,
    /// Embedding the question and its nodes (the encoder's share).
    pub encode_us: u64,
    /// Dense search.
    pub dense_us: u64,
    /// Lexical search.
    pub lexical_us: u64,
    /// Node matching, path overlap and item scoring.
    pub graph_us: u64,
    /// Places named in the question, matched to the items' places.
    pub place_us: u64,
    /// Fusion and explanations.
    pub fuse_us: u64,
}

impl RecallTimings {
    /// Everything except encoding and the index build.
    pub fn search_us(&self) -> u64 {
        self.dense_us + self.lexical_us + self.graph_us + self.place_us + self.fuse_us
    }
}

/// Candidates per stage of one recall.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecallCounts {
    /// Items the filters allow (`None`: no filter, every item).
    pub allowed: Option<u64>,
    /// Items in the store's lexical index (every live item).
    pub items: u64,
    /// Candidates from dense search.
    pub dense: u64,
    /// Candidates from BM25.
    pub lexical: u64,
    /// Graph nodes matched to the question's nodes.
    pub matched_nodes: u64,
    /// Candidates from path overlap.
    pub graph: u64,
    /// Candidates from the place signal.
    pub place: u64,
    /// Distinct items after fusion and conversation context, before the top k.
    pub fused: u64,
}

/// What [`Store::recall`] returns.
#[derive(Debug, Clone, Default)]
pub struct Recall {
    /// Best first.
    pub hits: Vec<RecallHit>,
    /// The question's nodes, as extracted.
    pub query_nodes: Vec<String>,
    /// What the question asks for (which dense score weight the fusion used).
    pub form: QuestionForm,
    /// Time per stage.
    pub timings: RecallTimings,
    /// Candidates per stage.
    pub counts: RecallCounts,
    /// What the answer could not search because its bytes are damaged (`memdb repair`).
    pub skipped: memdb_store::Skipped,
    /// The time the question names, and how the recall used it (`None`: it names none, or
    /// [`RecallOptions::question_time`] is off).
    pub time: Option<QuestionTime>,
    /// Why no item matches the question well, when none does: the question names a place no
    /// item is at (in a store that has places) nor names, or a time no item lies in. The hits
    /// are then the nearest items, not an answer; callers say so first. `None`: the hits
    /// answer as well as recall can tell (rules, not a fitted threshold: see SPEC.md §9.3).
    pub no_good_match: Option<String>,
}

/// A time named in a question and what recall did with it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionTime {
    /// The words that name it ("May 2001", "last summer").
    pub phrase: String,
    /// Its window, whole local days of the items ("2001-05-01 to 2001-05-31").
    pub window: String,
    /// The day relative phrases were read from.
    pub asked_on: jiff::civil::Date,
    /// How it was used.
    pub used: TimeUse,
    /// Items in the window that the other filters allow.
    pub items_in_window: u64,
}

/// How a recall used the time its question names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUse {
    /// Only items in the window were searched.
    Filter,
    /// Items in the window ranked higher; the phrase may be what the question is about ("the
    /// 2002 budget"), not when.
    SignalUncued,
    /// Ranked higher: the caller gave a time filter of its own, which wins.
    SignalExplicitFilter,
    /// Ranked higher: no item lies in the window (a misread, or nothing there).
    SignalEmptyWindow,
}

impl TimeUse {
    /// In words, for EXPLAIN.
    pub fn describe(self) -> &'static str {
        match self {
            TimeUse::Filter => "a filter",
            TimeUse::SignalUncued => "a ranking signal (not cued as the question's time)",
            TimeUse::SignalExplicitFilter => "a ranking signal (a time filter was given)",
            TimeUse::SignalEmptyWindow => "a ranking signal (no item in the window)",
        }
    }
}

/// Per-snapshot derived data: the lexical index and each item's time, source and place, by row.
pub(crate) struct ItemIndex {
    op_seq: u64,
    /// The style of the text BM25 indexed: a store's style changes without an item operation,
    /// so the cache is keyed on both.
    style: ItemTextStyle,
    bm25: Bm25,
    time_source: Vec<(memdb_formats::item::EventTime, u8)>,
    places: Vec<Option<place::ItemPlace>>,
    /// What the reranker reads of each item, by row.
    cues: Vec<rerank::ItemCues>,
    /// Whether each item is a remembered fact, by row.
    memories: Vec<bool>,
    /// The relations each remembered fact is about ("sister"), by row (empty for other items).
    relations: Vec<std::collections::BTreeSet<&'static str>>,
    /// The scope of each item that has one, by row (most items have none).
    scopes: HashMap<usize, memdb_formats::item::Scope>,
    /// The text of each remembered fact, by row.
    fact_texts: HashMap<usize, String>,
    /// Item id → row.
    rows: HashMap<u64, usize>,
    /// A superseded item → the item that supersedes it (imports and corrections that name
    /// what they replace).
    successors: HashMap<u64, u64>,
    /// Items left out because their records could not be read (damage).
    unreadable: Vec<u64>,
}

impl ItemIndex {
    fn build(
        op_seq: u64,
        items: &[memdb_formats::item::ItemRecord],
        style: ItemTextStyle,
        stems: bool,
    ) -> ItemIndex {
        let texts: Vec<(u64, String)> = items
            .iter()
            .map(|i| (i.id, item_text_in(i, style)))
            .collect();
        ItemIndex {
            op_seq,
            style,
            bm25: Bm25::build(texts.iter().map(|(id, t)| (*id, t.as_str())), stems),
            time_source: items
                .iter()
                .map(|i| (i.fields.time, i.fields.source.code()))
                .collect(),
            places: items
                .iter()
                .map(|i| place::ItemPlace::of(&i.fields))
                .collect(),
            cues: items
                .iter()
                .map(|i| rerank::ItemCues::of(&i.fields))
                .collect(),
            memories: items
                .iter()
                .map(|i| is_remembered_fact(&i.fields))
                .collect(),
            scopes: items
                .iter()
                .enumerate()
                .filter(|(_, i)| !i.fields.scope.is_empty())
                .map(|(row, i)| (row, i.fields.scope.clone()))
                .collect(),
            fact_texts: items
                .iter()
                .enumerate()
                .filter(|(_, i)| is_remembered_fact(&i.fields))
                .map(|(row, i)| (row, i.fields.body.clone().unwrap_or_default()))
                .collect(),
            relations: items
                .iter()
                .map(|i| {
                    if is_remembered_fact(&i.fields) {
                        crate::ops::lexicon::relations_in(i.fields.body.as_deref().unwrap_or(""))
                    } else {
                        std::collections::BTreeSet::new()
                    }
                })
                .collect(),
            rows: items
                .iter()
                .enumerate()
                .map(|(row, i)| (i.id, row))
                .collect(),
            successors: items
                .iter()
                .filter_map(|i| {
                    i.supersedes
                        .filter(|&old| old != i.id)
                        .map(|old| (old, i.id))
                })
                .collect(),
            unreadable: Vec::new(),
        }
    }
}

/// A recall over versions seen at another time (`AS OF` / `VALID AT`): which of them are the
/// memories' current versions (their stored vector, graph nodes and path are theirs), and
/// fresh embeddings of the earlier ones (the store keeps vectors of current versions only).
struct Travel {
    current: RoaringTreemap,
    earlier: Vec<(u64, Vec<f32>)>,
}

impl Snapshot {
    /// The style the store writes its items' text in for the encoder and BM25 (its
    /// `item_text` setting; SGM when unset).
    pub fn item_text_style(&self) -> Result<ItemTextStyle> {
        Ok(Recipe::from_setting(self.setting(ITEM_TEXT_SETTING)?.as_deref()).style)
    }

    /// [`Store::recall`] over `versions` (from
    /// [`Snapshot::versions_at`](memdb_store::Snapshot::versions_at)) instead of the current
    /// items: one version per memory (the newest of those given). Current versions
    /// rank by their stored vectors, earlier ones by fresh embeddings of their text (one
    /// encoder call); BM25 and places over the versions' own text and fields; the graph and
    /// the conversation context (derived from current text only) count for current versions.
    pub fn recall_versions(
        &self,
        question: &str,
        options: &RecallOptions,
        embedder: &dyn Embedder,
        versions: &[memdb_store::MemoryVersion],
    ) -> Result<Recall> {
        let mut newest: BTreeMap<u64, &memdb_store::MemoryVersion> = BTreeMap::new();
        for version in versions {
            newest.insert(version.record.id, version);
        }
        let items: Vec<memdb_formats::item::ItemRecord> =
            newest.values().map(|v| v.record.clone()).collect();
        let style = self.item_text_style()?;
        let index = ItemIndex::build(self.op_seq()?, &items, style, options.stems);
        let current = newest
            .values()
            .filter(|v| v.is_current())
            .map(|v| v.record.id)
            .collect();
        let earlier: Vec<&memdb_store::MemoryVersion> = newest
            .values()
            .filter(|v| !v.is_current())
            .copied()
            .collect();
        let earlier = if options.signals.dense {
            let texts: Vec<String> = earlier
                .iter()
                .map(|v| item_text_in(&v.record, style))
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = embed_checked(embedder, &refs)?;
            earlier.iter().map(|v| v.record.id).zip(vectors).collect()
        } else {
            Vec::new()
        };
        let travel = Travel { current, earlier };
        recall_in(self, &index, question, options, embedder, Some(&travel))
    }
}

/// The cache of the newest [`ItemIndex`], shared by clones of a store.
#[derive(Default)]
pub(crate) struct RecallCache {
    newest: std::sync::Mutex<Option<Arc<ItemIndex>>>,
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

impl Store {
    /// The items that answer `question`, best first, with their explanations. `embedder` must
    /// be the store's encoder (it embeds the question and its nodes).
    pub fn recall(
        &self,
        question: &str,
        options: &RecallOptions,
        embedder: &dyn Embedder,
    ) -> Result<Recall> {
        let snapshot = self.snapshot()?;
        let started = Instant::now();
        let (index, built) = self.ready_index(&snapshot, question, options)?;
        let index_us = if built { micros(started) } else { 0 };
        let (options, time) = question_time(&index, question, options)?;
        let mut recall = recall_in(&snapshot, &index, question, &options, embedder, None)?;
        recall.timings.index_us = index_us;
        if time.as_ref().is_some_and(|t| t.used == TimeUse::Filter) {
            fill_from_window(&index, &options, &mut recall);
        }
        if let Some(t) = &time
            && t.used == TimeUse::SignalEmptyWindow
            && recall.no_good_match.is_none()
        {
            recall.no_good_match = Some(format!("no item lies in {} ({})", t.phrase, t.window));
        }
        recall.time = time;
        Ok(recall)
    }

    /// Builds what a recall of `question` on the current commit reads before it is asked: the
    /// item index (the lexical index and each item's time, source and place) and, when the
    /// question may name a place, the gazetteer. An application calls it while its encoder
    /// loads, so that the first answer does not wait for them in turn. A later write makes a
    /// recall build the index again. Returns whether the index was built (`false`: it was
    /// already there).
    pub fn prepare_recall(&self, question: &str, options: &RecallOptions) -> Result<bool> {
        let snapshot = self.snapshot()?;
        Ok(self.ready_index(&snapshot, question, options)?.1)
    }

    /// The item index of `snapshot` (and whether this call built it), with the gazetteer
    /// decoded on another thread meanwhile when `question` may name a place: a first question
    /// pays for the longer of the two (about 250 ms for the gazetteer, once per process), not
    /// both.
    fn ready_index(
        &self,
        snapshot: &Snapshot,
        question: &str,
        options: &RecallOptions,
    ) -> Result<(Arc<ItemIndex>, bool)> {
        if options.signals.place && memdb_geo::may_name_a_place(question) {
            std::thread::scope(|scope| {
                let warm = scope.spawn(|| memdb_geo::places_in_text(question).map(drop));
                let index = self.item_index(snapshot, options.stems);
                // The place stage asks again and reports a failure there.
                let _ = warm.join();
                index
            })
        } else {
            self.item_index(snapshot, options.stems)
        }
    }

    /// The item index of `snapshot` and whether it was built by this call.
    fn item_index(&self, snapshot: &Snapshot, stems: bool) -> Result<(Arc<ItemIndex>, bool)> {
        let op_seq = snapshot.op_seq()?;
        let style = snapshot.item_text_style()?;
        let cache = self.extension::<RecallCache>()?;
        if let Ok(guard) = cache.newest.lock()
            && let Some(index) = guard.as_ref()
            && index.op_seq == op_seq
            && index.style == style
            && index.bm25.stems() == stems
        {
            return Ok((Arc::clone(index), false));
        }
        // A damaged record costs its item, not the search: it is left out and named.
        let (items, unreadable) = snapshot.scan_readable(&ScanFilter::default())?;
        let mut index = ItemIndex::build(op_seq, &items, style, stems);
        index.unreadable = unreadable;
        let index = Arc::new(index);
        if let Ok(mut guard) = cache.newest.lock() {
            *guard = Some(Arc::clone(&index));
        }
        Ok((index, true))
    }
}

fn recall_in(
    snapshot: &Snapshot,
    index: &ItemIndex,
    question: &str,
    options: &RecallOptions,
    embedder: &dyn Embedder,
    travel: Option<&Travel>,
) -> Result<Recall> {
    let mut timings = RecallTimings::default();
    let depth = options.depth.max(options.k);
    let nodes = if options.signals.graph {
        options.extractor.query_nodes(question)?
    } else {
        Vec::new()
    };

    // One encoder call: the question, then its nodes.
    let started = Instant::now();
    let mut texts: Vec<&str> = vec![question];
    if options.signals.graph {
        texts.extend(nodes.iter().map(|n| n.phrase.as_str()));
    }
    let vectors = embed_checked(embedder, &texts)?;
    timings.encode_us = micros(started);

    // Rows the filters allow (None: all).
    let allowed_rows = allowed_rows(index, options);
    let mut counts = RecallCounts {
        allowed: allowed_rows.as_ref().map(RoaringBitmap::len),
        items: index.bm25.len() as u64,
        ..RecallCounts::default()
    };
    let allowed_keys: Option<RoaringTreemap> = allowed_rows
        .as_ref()
        .map(|rows| rows.iter().map(|r| index.bm25.key(r)).collect());
    // What the stored vectors, the graph and the paths may return: in time travel, only the
    // versions seen that are current (what is stored for a memory is its current version's).
    let stored_keys: Option<RoaringTreemap> = match travel {
        None => allowed_keys.clone(),
        Some(t) => Some(match &allowed_keys {
            Some(keys) => keys & &t.current,
            None => t.current.clone(),
        }),
    };

    let mut ranked: [Vec<u64>; 4] = Default::default();

    let started = Instant::now();
    let mut skipped = memdb_store::Skipped {
        items: index.unreadable.clone(),
        vector_blocks: Vec::new(),
    };
    let dense_hits = dense_hits(
        snapshot,
        options,
        &vectors[0],
        depth,
        Keys {
            stored: &stored_keys,
            allowed: &allowed_keys,
        },
        travel,
        &mut skipped,
    )?;
    ranked[0] = dense_hits.iter().map(|&(key, _)| key).collect();
    timings.dense_us = micros(started);

    let started = Instant::now();
    if options.signals.lexical {
        ranked[1] = index
            .bm25
            .search(question, depth, allowed_rows.as_ref())
            .into_iter()
            .map(|(row, _)| index.bm25.key(row))
            .collect();
    }
    timings.lexical_us = micros(started);

    let started = Instant::now();
    let mut matched_nodes: HashMap<u64, (f64, String)> = HashMap::new();
    if options.signals.graph {
        let graph = path_overlap(snapshot, &nodes, &vectors[1..], options, &stored_keys)?;
        ranked[2] = graph.items;
        matched_nodes = graph.node_weights;
    }
    counts.dense = ranked[0].len() as u64;
    counts.lexical = ranked[1].len() as u64;
    counts.graph = ranked[2].len() as u64;
    counts.matched_nodes = matched_nodes.len() as u64;
    timings.graph_us = micros(started);

    let started = Instant::now();
    let mut at_place: HashMap<u64, String> = HashMap::new();
    let mut no_good_match = None;
    if options.signals.place {
        let found = place::rank(
            question,
            |row| index.bm25.key(row),
            &index.places,
            allowed_rows.as_ref(),
            depth,
        )?;
        // A place the question names that no item is at, in a store that knows places, and
        // that no item's text names either: nothing answers it.
        if found.hits.is_empty() && found.any_placed && !found.named.is_empty() {
            let in_text = found
                .named
                .iter()
                .any(|name| !index.bm25.search(name, 1, allowed_rows.as_ref()).is_empty());
            if !in_text {
                no_good_match = Some(format!(
                    "no item is at {} or names it",
                    found.named.join(" or ")
                ));
            }
        }
        ranked[3] = found.hits.iter().map(|(item, _)| *item).collect();
        at_place = found.hits.into_iter().collect();
    }
    counts.place = ranked[3].len() as u64;
    timings.place_us = micros(started);

    let started = Instant::now();
    let form = QuestionForm::of(question);
    let mut fused = fuse(index, options, question, form, &ranked, &dense_hits);
    let graph = snapshot.graph();
    let chat = |item: u64| is_chat(index, item);
    if options.context_share > 0.0 {
        share_context(
            &graph,
            index,
            options.context_share,
            &stored_keys,
            &mut fused,
        )?;
    }
    if travel.is_none() {
        hand_to_successors(index, &allowed_keys, &mut fused);
    }
    let mut hits: Vec<RecallHit> = fused
        .into_iter()
        .map(|(item, (score, explanation))| RecallHit {
            item,
            score,
            explanation,
        })
        .collect();
    counts.fused = hits.len() as u64;
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.item.cmp(&b.item)));
    // The reranker's candidates, with their features in the fused order.
    hits.truncate(options.k.max(RERANK_DEPTH));
    let best = hits.first().map_or(1.0, |h| h.score.max(f64::MIN_POSITIVE));
    let words = rerank::question_words(question);
    // Each candidate's graph row, read once: its matched nodes are a feature here and its
    // explanation below.
    let mut graph_rows: HashMap<u64, Option<(u64, Vec<u64>)>> = HashMap::new();
    for (at, hit) in hits.iter_mut().enumerate() {
        let row = graph.item(hit.item)?;
        let matched = row.as_ref().map_or(0, |(_, item_nodes)| {
            item_nodes
                .iter()
                .filter(|n| matched_nodes.contains_key(n))
                .count()
        });
        graph_rows.insert(hit.item, row);
        let cues = index
            .rows
            .get(&hit.item)
            .and_then(|&row| index.cues.get(row));
        let features = rerank::features(
            &rerank::Fused {
                relative_score: hit.score / best,
                position: at + 1,
                explanation: &hit.explanation,
                matched_nodes: matched,
            },
            cues,
            &words,
        );
        hit.explanation.fused_score = hit.score;
        hit.explanation.features = Some(features);
    }
    if let Some(reranker) = &options.reranker {
        rerank_turns(&mut hits, reranker, chat);
    }
    // An item whose record is unreadable is named in `skipped`, never returned (the graph and
    // place signals know it by id alone).
    hits.retain(|h| !skipped.items.contains(&h.item));
    hits.truncate(options.k);
    for hit in &mut hits {
        hit.explanation.place = at_place.remove(&hit.item);
        let row = match graph_rows.remove(&hit.item) {
            Some(row) => row,
            None => graph.item(hit.item)?,
        };
        if let Some((path, item_nodes)) = row {
            hit.explanation.nodes = item_nodes
                .iter()
                .filter_map(|n| matched_nodes.get(n).map(|(_, p)| p.clone()))
                .collect();
            hit.explanation.path = graph.path(path)?.map(|p| (path, p.page));
        }
    }
    timings.fuse_us = micros(started);
    Ok(Recall {
        hits,
        query_nodes: nodes.into_iter().map(|n| n.phrase).collect(),
        form,
        timings,
        counts,
        skipped,
        time: None,
        no_good_match,
    })
}

/// Each hit's score min-max normalised over the list: the best 1, the last 0; every hit 1 when
/// they all score alike (a list of one included). A score that is not finite (an embedder's
/// NaN, met in time travel's fresh embeddings) counts as the last: 0, and is left out of the
/// range, so it cannot turn the fused scores it joins into NaN.
fn min_max(hits: &[(u64, f32)]) -> Vec<(u64, f64)> {
    let finite = || {
        hits.iter()
            .map(|h| f64::from(h.1))
            .filter(|s| s.is_finite())
    };
    let best = finite().fold(f64::NEG_INFINITY, f64::max);
    let worst = finite().fold(f64::INFINITY, f64::min);
    let span = best - worst;
    hits.iter()
        .map(|&(key, score)| {
            let score = f64::from(score);
            let normalized = if !score.is_finite() {
                0.0
            } else if span > 0.0 {
                (score - worst) / span
            } else {
                1.0
            };
            (key, normalized)
        })
        .collect()
}
/// Which rows of the index the options' filters allow (time, source, an allow-list, a scope);
/// `None`: every row.
/// The options a recall of `question` runs with once the time it names is applied (a filter or
/// a preferred window, see [`RecallOptions::question_time`]), and what was done.
fn question_time<'o>(
    index: &ItemIndex,
    question: &str,
    options: &'o RecallOptions,
) -> Result<(std::borrow::Cow<'o, RecallOptions>, Option<QuestionTime>)> {
    use std::borrow::Cow;
    if !options.question_time {
        return Ok((Cow::Borrowed(options), None));
    }
    let asked_on = options
        .asked_on
        .unwrap_or_else(|| jiff::Zoned::now().date());
    let phrases = memdb_text::time_phrases(question, asked_on);
    let Some(phrase) = phrases.iter().find(|p| p.cued).or(phrases.first()) else {
        return Ok((Cow::Borrowed(options), None));
    };
    // Days of 1900–2100 are always in range; a window that would not be is no window.
    let Ok(window) = phrase_window(phrase) else {
        return Ok((Cow::Borrowed(options), None));
    };
    let items_in_window = (0..index.bm25.len())
        .filter(|&row| {
            let (time, source) = index.time_source[row];
            window.contains(time) && allowed(options, (time, source))
        })
        .count() as u64;
    let used = if !phrase.cued {
        TimeUse::SignalUncued
    } else if !options.time.is_all() {
        TimeUse::SignalExplicitFilter
    } else if items_in_window == 0 {
        TimeUse::SignalEmptyWindow
    } else {
        TimeUse::Filter
    };
    let mut applied = options.clone();
    if used == TimeUse::Filter {
        applied.time = window;
    } else {
        applied.prefer_time = Some(window);
    }
    Ok((
        Cow::Owned(applied),
        Some(QuestionTime {
            phrase: question[phrase.start..phrase.end].to_owned(),
            window: phrase.describe(),
            asked_on,
            used,
            items_in_window,
        }),
    ))
}

/// A superseded item the signals found gives its place to the item that supersedes it (the
/// correction, which may have no vector or graph node yet): the successor takes the better of
/// the two scores and says which item it corrects; the superseded one leaves the answer. A
/// successor the filters do not allow leaves things as they are. Chains are followed.
fn hand_to_successors(
    index: &ItemIndex,
    allowed: &Option<RoaringTreemap>,
    fused: &mut BTreeMap<u64, (f64, Explanation)>,
) {
    let superseded: Vec<u64> = fused
        .keys()
        .copied()
        .filter(|item| index.successors.contains_key(item))
        .collect();
    for old in superseded {
        // The newest live successor (a chain of corrections ends at the current one).
        let mut new = old;
        let mut steps = 0;
        while let Some(&next) = index.successors.get(&new) {
            if !index.rows.contains_key(&next) || steps > index.successors.len() {
                break;
            }
            new = next;
            steps += 1;
        }
        if new == old || allowed.as_ref().is_some_and(|a| !a.contains(new)) {
            continue;
        }
        let Some((score, explanation)) = fused.remove(&old) else {
            continue;
        };
        let entry = fused
            .entry(new)
            .or_insert_with(|| (f64::MIN, explanation.clone()));
        if score > entry.0 {
            *entry = (score, explanation);
        }
        entry.1.corrects = Some(old);
    }
}

/// A question about a time ("mail from last year") may share no word with the items of that
/// time: the answer is those items all the same. When the signals found fewer than `k`, the
/// rest of the window's items follow them, newest first, scored 0 and marked as in the
/// question's time.
fn fill_from_window(index: &ItemIndex, options: &RecallOptions, recall: &mut Recall) {
    if recall.hits.len() >= options.k {
        return;
    }
    let Some(rows) = allowed_rows(index, options) else {
        return;
    };
    let have: std::collections::HashSet<u64> = recall.hits.iter().map(|h| h.item).collect();
    let mut rest: Vec<(i64, u64)> = rows
        .iter()
        .map(|row| {
            (
                index.time_source[row as usize].0.unix_ms,
                index.bm25.key(row),
            )
        })
        .filter(|(_, item)| !have.contains(item) && !index.unreadable.contains(item))
        .collect();
    rest.sort_by(|a, b| b.cmp(a));
    for (_, item) in rest.into_iter().take(options.k - recall.hits.len()) {
        recall.hits.push(RecallHit {
            item,
            score: 0.0,
            explanation: Explanation {
                in_question_time: true,
                ..Explanation::default()
            },
        });
    }
}

/// A phrase's days as a window over the items' local days.
fn phrase_window(
    phrase: &memdb_text::TimePhrase,
) -> std::result::Result<crate::TimeWindow, memdb_store::TimeError> {
    use memdb_store::TimeBound;
    match (phrase.first, phrase.last) {
        (Some(a), Some(b)) => crate::TimeWindow::between(TimeBound::Day(a), TimeBound::Day(b)),
        (Some(a), None) => crate::TimeWindow::from(TimeBound::Day(a)),
        (None, Some(b)) => crate::TimeWindow::until(TimeBound::Day(b)),
        (None, None) => Ok(crate::TimeWindow::ALL),
    }
}

fn allowed_rows(index: &ItemIndex, options: &RecallOptions) -> Option<RoaringBitmap> {
    let scope = options.scope.as_ref().filter(|s| !s.is_empty());
    let empty_scope = memdb_formats::item::Scope::default();
    (!options.time.is_all()
        || options.source.is_some()
        || options.items.is_some()
        || scope.is_some())
    .then(|| {
        (0..index.bm25.len())
            .filter(|&row| allowed(options, index.time_source[row]))
            .filter(|row| {
                scope.is_none_or(|want| index.scopes.get(row).unwrap_or(&empty_scope).within(want))
            })
            .filter_map(|row| u32::try_from(row).ok())
            .filter(|&row| {
                options
                    .items
                    .as_ref()
                    .is_none_or(|items| items.contains(index.bm25.key(row)))
            })
            .collect()
    })
}

/// The keys a recall may return: what the stored vectors, the graph and the paths may return
/// (`stored`: in time travel only the versions seen that are current), and what the filters
/// allow (`allowed`); `None`: all.
struct Keys<'a> {
    stored: &'a Option<RoaringTreemap>,
    allowed: &'a Option<RoaringTreemap>,
}

/// The dense signal: the question's nearest item vectors with their cosines, best first (in
/// time travel, with earlier versions' fresh embeddings merged by score). Damaged vector
/// blocks go to `skipped`; a vector whose item is unreadable leads nowhere.
#[allow(clippy::too_many_arguments)]
fn dense_hits(
    snapshot: &Snapshot,
    options: &RecallOptions,
    question: &[f32],
    depth: usize,
    keys: Keys<'_>,
    travel: Option<&Travel>,
    skipped: &mut memdb_store::Skipped,
) -> Result<Vec<(u64, f32)>> {
    if !options.signals.dense {
        return Ok(Vec::new());
    }
    let (space, unreadable) = snapshot.readable_vectors(&options.dense_space)?;
    skipped.vector_blocks = unreadable;
    let Some(space) = space else {
        return Ok(Vec::new());
    };
    let mut scope = VectorScope::all();
    if let Some(keys) = keys.stored {
        scope = scope.with_keys(keys.clone());
    }
    let mut hits: Vec<(u64, f32)> = space
        .search(question, depth, &scope)?
        .into_iter()
        .filter(|h| !skipped.items.contains(&h.key))
        .map(|h| (h.key, h.score))
        .collect();
    if let Some(travel) = travel {
        // Earlier versions by their fresh embeddings, on the same scale (unit vectors of the
        // same encoder), merged by score.
        for (key, vector) in &travel.earlier {
            if keys.allowed.as_ref().is_none_or(|k| k.contains(*key)) {
                hits.push((*key, memdb_vectors::dot_f32(question, vector)));
            }
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(depth);
    }
    Ok(hits)
}

/// Whether `item` is a remembered fact.
fn is_memory(index: &ItemIndex, item: u64) -> bool {
    index
        .rows
        .get(&item)
        .and_then(|&row| index.memories.get(row))
        .copied()
        .unwrap_or(false)
}

/// Whether `item` is a conversation turn.
fn is_chat(index: &ItemIndex, item: u64) -> bool {
    index
        .rows
        .get(&item)
        .and_then(|&row| index.time_source.get(row))
        .is_some_and(|&(_, source)| source == Source::Chat.code())
}

/// The signals' ranked lists (dense, lexical, graph, place) fused by weighted reciprocal rank,
/// the dense cosines added, and remembered facts weighed by whose they are, the kind of answer
/// asked for and recency.
fn fuse(
    index: &ItemIndex,
    options: &RecallOptions,
    question: &str,
    form: QuestionForm,
    ranked: &[Vec<u64>; 4],
    dense_hits: &[(u64, f32)],
) -> BTreeMap<u64, (f64, Explanation)> {
    let weights = [
        options.weights[0],
        options.weights[1],
        options.weights[2],
        options.place_weight,
    ];
    let m = &options.memory_weights;
    let memory_weights = [m.dense, m.lexical, m.graph, m.place];
    // Remembered facts weigh by their own set.
    let memory = |item: u64| is_memory(index, item);
    let mut fused: BTreeMap<u64, (f64, Explanation)> = BTreeMap::new();
    for (signal, list) in ranked.iter().enumerate() {
        for (rank, &item) in list.iter().enumerate() {
            let entry = fused.entry(item).or_default();
            let weight = if memory(item) {
                memory_weights[signal]
            } else {
                weights[signal]
            };
            entry.0 += weight / (RRF_K + (rank + 1) as f64);
            let slot = match signal {
                0 => &mut entry.1.dense_rank,
                1 => &mut entry.1.lexical_rank,
                2 => &mut entry.1.graph_rank,
                _ => &mut entry.1.place_rank,
            };
            *slot = Some(rank + 1);
        }
    }
    // The dense signal's cosines, not only its ranks: a hit far above the rest of the dense
    // list keeps that margin, where reciprocal rank alone lets items that several weak signals
    // found bury it (a convex combination of normalised scores, after Bruch et al., "An
    // Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023).
    // An inference's evidence says the same in other words: its meaning weighs by its own
    // weight.
    let dense_score_weight = options.dense_score_weight_for(form);
    for (&(item, cosine), (_, normalized)) in dense_hits.iter().zip(min_max(dense_hits)) {
        let entry = fused.entry(item).or_default();
        let weight = if memory(item) {
            m.dense_score.max(0.0)
        } else {
            dense_score_weight
        };
        // x + 0.0 is x: a weight of 0 leaves the ranks' fusion as it was.
        entry.0 += weight * normalized;
        entry.1.dense_score = Some(cosine);
    }
    // Whose: a question about the person is not answered by a memory about their sister.
    if m.subject > 0.0 {
        let asked = crate::ops::lexicon::relations_in(question);
        for (item, entry) in fused.iter_mut() {
            let Some(about) = index
                .rows
                .get(item)
                .and_then(|&row| index.relations.get(row))
            else {
                continue;
            };
            if !memory(*item) {
                continue;
            }
            let unit = m.subject / (RRF_K + 1.0);
            if asked.is_empty() && !about.is_empty() {
                entry.0 -= unit;
            } else if !asked.is_disjoint(about) {
                entry.0 += unit;
            }
        }
    }
    // The window the question names, as a signal: its items rank higher, the rest stay.
    if let Some(window) = &options.prefer_time
        && options.time_weight > 0.0
    {
        for (item, entry) in fused.iter_mut() {
            let Some(&(time, _)) = index
                .rows
                .get(item)
                .and_then(|&row| index.time_source.get(row))
            else {
                continue;
            };
            if window.contains(time) {
                entry.0 += options.time_weight / (RRF_K + 1.0);
                entry.1.in_question_time = true;
            }
        }
    }
    // The kind of answer asked for: a fact that names a place answers "where".
    if m.answer_type > 0.0
        && let Some(want) = answer_type::wants(question)
    {
        for (item, entry) in fused.iter_mut() {
            let Some(text) = index
                .rows
                .get(item)
                .and_then(|row| index.fact_texts.get(row))
            else {
                continue;
            };
            if answer_type::offers(text, want) {
                entry.0 += m.answer_type / (RRF_K + 1.0);
            }
        }
    }
    // Recency among the remembered facts found: of two memories on a subject, the later one.
    if m.recency > 0.0 {
        let mut facts: Vec<(i64, u64)> = fused
            .keys()
            .filter(|&&item| memory(item))
            .filter_map(|&item| {
                let row = *index.rows.get(&item)?;
                Some((index.time_source.get(row)?.0.unix_ms, item))
            })
            .collect();
        facts.sort_by(|a, b| b.cmp(a));
        for (rank, (_, item)) in facts.into_iter().enumerate() {
            fused.entry(item).or_default().0 += m.recency / (RRF_K + (rank + 1) as f64);
        }
    }
    fused
}

/// Conversation context: a turn next to a strong candidate in its path (the same day, in
/// order) shares `share` of its score — answers often sit one turn after the question. Only
/// between chat turns: the photos or mails of a day are not turns of one dialogue, and a photo
/// lent its neighbour's score would outrank the photos the question names.
fn share_context(
    graph: &crate::graph::GraphReader<'_>,
    index: &ItemIndex,
    share: f64,
    stored_keys: &Option<RoaringTreemap>,
    fused: &mut BTreeMap<u64, (f64, Explanation)>,
) -> Result<()> {
    let chat = |item: u64| is_chat(index, item);
    let base: HashMap<u64, f64> = fused
        .iter()
        .filter(|(i, _)| chat(**i))
        .map(|(&i, (s, _))| (i, *s))
        .collect();
    let mut paths: HashMap<u64, Vec<u64>> = HashMap::new();
    // Neighbour → the best score next to it (max, so a turn between two candidates does not
    // outrank both).
    let mut context: HashMap<u64, f64> = HashMap::new();
    for (&item, &score) in &base {
        let Some((path, _)) = graph.item(item)? else {
            continue;
        };
        if let std::collections::hash_map::Entry::Vacant(e) = paths.entry(path) {
            e.insert(graph.path(path)?.map(|p| p.items).unwrap_or_default());
        }
        let order = &paths[&path];
        let Some(at) = order.iter().position(|&i| i == item) else {
            continue;
        };
        for next in [at.checked_sub(1), Some(at + 1)].into_iter().flatten() {
            let Some(&neighbour) = order.get(next) else {
                continue;
            };
            if !chat(neighbour) || stored_keys.as_ref().is_some_and(|k| !k.contains(neighbour)) {
                continue;
            }
            let best = context.entry(neighbour).or_default();
            *best = best.max(score);
        }
    }
    for (item, best) in context {
        fused.entry(item).or_default().0 += share * best;
    }
    Ok(())
}

/// The reranker's reordering of the chat turns among the ranks they hold (it was fitted on
/// conversation turns): every other item (a photo, a mail) stays where the fusion put it, and
/// each rank keeps its fused score, so scores still fall down the list.
fn rerank_turns(hits: &mut [RecallHit], reranker: &Reranker, chat: impl Fn(u64) -> bool) {
    let slots: Vec<usize> = (0..hits.len()).filter(|&i| chat(hits[i].item)).collect();
    let mut turns: Vec<RecallHit> = slots.iter().map(|&i| hits[i].clone()).collect();
    for turn in &mut turns {
        turn.explanation.rerank = turn
            .explanation
            .features
            .as_ref()
            .map(|f| reranker.probability(f));
    }
    // Stable: equal probabilities keep the fused order.
    turns.sort_by(|a, b| {
        let p = |h: &RecallHit| h.explanation.rerank.unwrap_or(0.0);
        p(b).total_cmp(&p(a))
    });
    for (&slot, mut turn) in slots.iter().zip(turns) {
        turn.score = hits[slot].score;
        hits[slot] = turn;
    }
}

/// Reciprocal-rank fusion constant (Cormack et al.; the peer's k = 60).
const RRF_K: f64 = 60.0;

fn allowed(options: &RecallOptions, (time, source): (memdb_formats::item::EventTime, u8)) -> bool {
    options.time.contains(time) && options.source.is_none_or(|s| s == source)
}

/// What path overlap found.
pub(crate) struct PathOverlap {
    /// Items, best first.
    pub(crate) items: Vec<u64>,
    /// Matched node → (weight, phrase).
    pub(crate) node_weights: HashMap<u64, (f64, String)>,
}

/// Matches query nodes to graph nodes (exact phrase, then embedding neighbours), weights them
/// by similarity × idf over paths, scores candidate paths by weighted overlap and ranks the
/// items of the best paths.
pub(crate) fn path_overlap(
    snapshot: &Snapshot,
    nodes: &[crate::graph::NodeDraft],
    node_vectors: &[Vec<f32>],
    options: &RecallOptions,
    allowed_keys: &Option<RoaringTreemap>,
) -> Result<PathOverlap> {
    let graph = snapshot.graph();
    // A damaged block of node vectors costs its nodes' similarity, not the recall.
    let (node_space, _) = snapshot.readable_vectors(NODE_VECTORS)?;
    // node id → (similarity, phrase of the query node)
    let mut sims: HashMap<u64, f32> = HashMap::new();
    for (draft, vector) in nodes.iter().zip(node_vectors) {
        if let Some(id) = graph.lookup(&draft.phrase)? {
            sims.insert(id, 1.0);
        }
        // An identifier (a phrase with a digit that is no date or amount: a camera model, a
        // room) names one thing: nodes that merely embed alike ("finepixs1pro" for
        // "finepixs2pro") are other things, as in the graph's own merges.
        let identifier = !matches!(
            draft.kind,
            crate::graph::NodeKind::Date | crate::graph::NodeKind::Amount
        ) && draft.phrase.bytes().any(|b| b.is_ascii_digit());
        if identifier {
            continue;
        }
        if let Some(space) = &node_space {
            for hit in space.search(vector, NODE_NEIGHBOURS, &VectorScope::all())? {
                if hit.score >= options.node_match {
                    let s = sims.entry(hit.key).or_insert(0.0);
                    *s = s.max(hit.score);
                }
            }
        }
    }
    let mut boosts: Vec<(u64, f64)> = sims.iter().map(|(&n, &s)| (n, f64::from(s))).collect();
    // A fixed order, so equal weights always sum in the same order.
    boosts.sort_by_key(|b| b.0);
    let matched = graph.paths_matching(&boosts, 1, options.graph_paths)?;
    let mut node_weights: HashMap<u64, (f64, String)> = HashMap::new();
    for (node, weight) in matched.node_weights {
        let phrase = graph.node(node)?.map(|n| n.phrase).unwrap_or_default();
        node_weights.insert(node, (weight, phrase));
    }
    let paths: Vec<(u64, f64)> = matched.paths.iter().map(|p| (p.path, p.score)).collect();
    let top = paths.first().map_or(1.0, |p| p.1.max(f64::MIN_POSITIVE));
    let mut items: Vec<(u64, f64)> = Vec::new();
    for &(path, score) in &paths {
        let Some(row) = graph.path(path)? else {
            continue;
        };
        for item in row.items {
            if allowed_keys.as_ref().is_some_and(|k| !k.contains(item)) {
                continue;
            }
            let Some((_, item_nodes)) = graph.item(item)? else {
                continue;
            };
            let own: f64 = item_nodes
                .iter()
                .filter_map(|n| node_weights.get(n).map(|w| w.0))
                .sum();
            if own > 0.0 || score > 0.0 {
                items.push((item, own + options.path_share * score / top * own.max(1.0)));
            }
        }
    }
    items.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    items.truncate(options.depth.max(options.k));
    Ok(PathOverlap {
        items: items.into_iter().map(|(i, _)| i).collect(),
        node_weights,
    })
}

/// Graph nodes considered per query node by embedding similarity.
const NODE_NEIGHBOURS: usize = 8;

#[cfg(test)]
mod tests {
    use super::min_max;

    #[test]
    fn min_max_puts_the_best_at_one_and_the_last_at_zero() {
        let normalized = min_max(&[(7, 0.9), (3, 0.5), (9, 0.7), (1, 0.4)]);
        let expected = [(7, 1.0), (3, 0.2), (9, 0.6), (1, 0.0)];
        for ((key, value), (want_key, want)) in normalized.iter().zip(expected) {
            assert_eq!(*key, want_key);
            assert!((value - want).abs() < 1e-6, "{normalized:?}");
        }
    }

    #[test]
    fn min_max_of_equal_scores_or_one_hit_is_one() {
        assert_eq!(min_max(&[(1, 0.3)]), vec![(1, 1.0)]);
        assert_eq!(min_max(&[(1, 0.3), (2, 0.3)]), vec![(1, 1.0), (2, 1.0)]);
        assert!(min_max(&[]).is_empty());
    }

    #[test]
    fn min_max_scores_a_score_that_is_not_finite_zero_and_ranges_over_the_rest() {
        let normalized = min_max(&[(1, 0.8), (2, f32::NAN), (3, 0.4), (4, f32::INFINITY)]);
        assert_eq!(normalized, vec![(1, 1.0), (2, 0.0), (3, 0.0), (4, 0.0)]);
        assert_eq!(min_max(&[(1, f32::NAN)]), vec![(1, 0.0)]);
    }
}
