//! Recall on LoCoMo, following DESIGN.md §6: one store per conversation, items = dialogue turns
//! (external id = `dia_id`), item embeddings of `[<session date_time>] <speaker>: <text>` plus
//! ` [image: <blip_caption>]`, queries = `qa` entries with evidence, Recall@k over evidence ids,
//! overall and per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
//! 5 adversarial).
//!
//! Rows: memdb flat dense (f32 and i8), lexical (BM25), path overlap alone, full recall (all
//! three fused), and — when python3 has sentence-transformers and rank_bm25 — the peers on the
//! same items and questions (benches/peers/locomo_peer.py): exact cosine, BM25Okapi and their
//! reciprocal-rank fusion. Also: recall latency p50/p99 excluding query encoding (encoding
//! reported separately), and ingest time per conversation (import, embed, graph).
//!
//! ```sh
//! cargo run --release -p memdb-benches --bin locomo -- [DATA_DIR] [--json OUT] [--skip-peer]
//!     [--weights DENSE,LEXICAL,GRAPH] [--full-only] [--gate builtin|cv]
//!     [--item-text sgm|descriptive] [--item-vectors i8|f32|i4] [--node-vectors i4|i8] [--cv]
//!     [--encoder-f32]
//! ```
//!
//! `--encoder-f32` embeds with the encoder's f32 projections instead of its default 8-bit ones
//! (`EncoderOptions::int8`, where the CPU has the packed i8 kernel): the quantized path's
//! recall is held against the f32 model's by two runs, one with the flag.
//!
//! `--cv` cross-validates the full recall's fusion parameters across the conversations (issue
//! 26): every setting of a grid (dense and graph weights against the lexical one, context
//! share, the dense score's weight for questions of fact and for questions that ask for an
//! inference; the graph signal's paths, path share and node match) is run
//! on every conversation; for each conversation held out, the setting with the best mean of
//! R@1/5/10/20 over the other conversations' questions is chosen and scored on the held-out
//! one. The inference weight is then chosen with the reranker in the loop (for the pipeline
//! tables below): among the settings that differ from the chosen one only in it, the one whose
//! fused candidates, reranked by a model fitted on all but one of the training conversations,
//! score best on that one, each in turn. The per-fold table and the pooled held-out figures print beside the defaults' row of
//! the same run, so a parameter tuned on the conversations it is scored on shows as the gap.
//! Then the reranker: fitted on four conversations' candidates under the default fusion and
//! scored on the fifth; and the whole pipeline cross-validated — each fold's fusion setting
//! chosen on its four (the first table), the reranker fitted on their candidates under that
//! setting, both scored on the fold — the estimate in which no parameter saw the conversation
//! it scores. Last, the setting chosen on all five and the reranker weights fitted on all five
//! (what the engine ships).
//!
//! Rows "words not stems" run BM25 over the words as written (rank_bm25's tokens) instead of
//! their stems (`RecallOptions::stems`).
//!
//! `--node-vectors` is the precision of the graph's node space (`GraphOptions::node_vectors`;
//! default the engine's, i4), which decides node merges at ingest and matches query phrases.
//!
//! `--item-vectors` is the precision of the stores' item vectors (`Options::item_vector_precision`;
//! default the engine's, i8), which the full-recall rows search; the same vectors go into
//! spaces at f32 and i8 where the item space is not, so the flat rows show f32 and i8 side by
//! side (and i4 beside them when the items are i4).
//!
//! `--item-text sgm|descriptive` embeds each turn's item text in that style instead of the
//! protocol's text, and makes it the store's style (so BM25 reads it too): ATM-Bench's
//! comparison of Schema-Guided Memory with descriptive memory, on LoCoMo (issue 23).
//!
//! `--gate` ingests through the memorability gate in drop mode (issue 21): `builtin` with the
//! built-in scenes, `cv` with a lexicon learned on the other conversations only (log-odds,
//! default threshold). A question whose evidence the gate dropped can only miss. The store
//! bytes (segments and catalog) of all conversations are printed, to compare with a run
//! without `--gate`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use memdb::{Options, RecallOptions, Store, recall::Signals, vectors::ITEM_VECTORS};
use memdb_benches::{
    Memo, PEER_PYTHON_ENV, flag_value, locomo_turns, peer_python, run_peer_json, shared_dir,
};
use memdb_encode::{Encoder, MiniLm, model};
use memdb_formats::import::locomo;
use serde_json::{Value, json};

const KS: [usize; 4] = [1, 5, 10, 20];
/// The second copy of the item vectors, at the precision the item space does not have.
/// The item vectors again at f32 and at i8 where the item space is not, for the flat rows.
const COPY_SPACES: [(memdb::vectors::Precision, &str); 2] = [
    (memdb::vectors::Precision::F32, "items.f32"),
    (memdb::vectors::Precision::I8, "items.i8"),
];

/// Retriever → its ranking (external ids, best first) for each question, in question order.
type Rankings = BTreeMap<String, Vec<Vec<String>>>;

/// One question, with what each retriever returned (external ids, best first).
struct Question {
    text: String,
    category: u8,
    evidence: HashSet<String>,
}

/// One setting of the cross-validation grid (`--cv`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tuning {
    /// Fusion weights of the dense, lexical and graph ranks.
    weights: [f64; 3],
    /// `RecallOptions::context_share`.
    context_share: f64,
    /// `RecallOptions::dense_score_weight`.
    dense_score_weight: f64,
    /// `RecallOptions::inference_dense_score_weight`.
    inference_dense_score_weight: f64,
    /// `RecallOptions::graph_paths`.
    graph_paths: usize,
    /// `RecallOptions::path_share`.
    path_share: f64,
    /// `RecallOptions::node_match`.
    node_match: f32,
}

impl Tuning {
    fn defaults() -> Tuning {
        let d = RecallOptions::default();
        Tuning {
            weights: d.weights,
            context_share: d.context_share,
            dense_score_weight: d.dense_score_weight,
            inference_dense_score_weight: d.inference_dense_score_weight,
            graph_paths: d.graph_paths,
            path_share: d.path_share,
            node_match: d.node_match,
        }
    }

    fn label(&self) -> String {
        format!(
            "{} / {} / {} / {} / {} / {} / {} / {} / {}",
            self.weights[0],
            self.weights[1],
            self.weights[2],
            self.context_share,
            self.dense_score_weight,
            self.inference_dense_score_weight,
            self.graph_paths,
            self.path_share,
            self.node_match
        )
    }

    /// The setting with the inference weight left out: settings with the same base recall a
    /// question of fact alike.
    fn base_label(&self) -> String {
        Tuning {
            inference_dense_score_weight: 0.0,
            ..*self
        }
        .label()
    }

    /// The full recall under this setting, without the reranker.
    fn options(&self, k: usize) -> RecallOptions {
        RecallOptions {
            k,
            weights: self.weights,
            context_share: self.context_share,
            dense_score_weight: self.dense_score_weight,
            inference_dense_score_weight: self.inference_dense_score_weight,
            graph_paths: self.graph_paths,
            path_share: self.path_share,
            node_match: self.node_match,
            reranker: None,
            ..RecallOptions::default()
        }
    }
}

/// The grid `--cv` searches. The fusion's order depends only on the ratios of its weights (the
/// context share and the reranker's features are relative to the fused scores; the place signal
/// is silent on LoCoMo), so the lexical weight stays at its default and the others move against
/// it: the dense weight (0 to 0.6), the graph weight (0.75 to 1.05), the context share (0.3 to
/// 0.75) and the dense score's weight (0 to 0.048), every combination; then, at the defaults,
/// the graph signal's paths (4, 8, 16) with its path share (0.15, 0.3, 0.45), and its node
/// match (0.75, 0.8, 0.85). Each of those with every inference dense score weight (0.012 to
/// 0.12; it changes the recall of inference questions only, so the others' runs are shared).
/// The defaults first, so a tie keeps them.
fn cv_grid() -> Vec<Tuning> {
    let defaults = Tuning::defaults();
    let mut grid = vec![defaults];
    fn push(grid: &mut Vec<Tuning>, t: Tuning) {
        if !grid.contains(&t) {
            grid.push(t);
        }
    }
    let lexical = defaults.weights[1];
    for dense in [0.0, 0.075, 0.15, 0.3, 0.6] {
        for graph in [0.75, 0.9, 1.05] {
            for context_share in [0.3, 0.45, 0.6, 0.75] {
                for dense_score_weight in [0.0, 0.012, 0.024, 0.048] {
                    push(
                        &mut grid,
                        Tuning {
                            weights: [dense, lexical, graph],
                            context_share,
                            dense_score_weight,
                            ..defaults
                        },
                    );
                }
            }
        }
    }
    for graph_paths in [4, 8, 16] {
        for path_share in [0.15, 0.3, 0.45] {
            push(
                &mut grid,
                Tuning {
                    graph_paths,
                    path_share,
                    ..defaults
                },
            );
        }
    }
    for node_match in [0.75, 0.8, 0.85] {
        push(
            &mut grid,
            Tuning {
                node_match,
                ..defaults
            },
        );
    }
    let bases = grid.clone();
    for base in bases {
        for inference_dense_score_weight in INFERENCE_WEIGHTS {
            push(
                &mut grid,
                Tuning {
                    inference_dense_score_weight,
                    ..base
                },
            );
        }
    }
    grid
}

/// The inference dense score weights `--cv` searches.
const INFERENCE_WEIGHTS: [f64; 6] = [0.012, 0.024, 0.048, 0.072, 0.096, 0.12];

/// One question's fused candidates, best first, each with its reranker features.
type Candidates = Vec<(String, memdb::recall::Features)>;

struct Conversation {
    name: String,
    items: Vec<(String, String)>,
    questions: Vec<Question>,
    rankings: Rankings,
    /// Under each `--cv` grid setting (grid order; the defaults first), per question the
    /// fused top `RERANK_DEPTH` (no reranker: the fusion's ranking) with each candidate's
    /// reranker features.
    tuned: Vec<Vec<Arc<Candidates>>>,
    ingest_s: f64,
    /// Segment and catalog bytes of its store after ingest.
    store_bytes: u64,
    /// Turns the gate did not store.
    gate_dropped: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| flag_value(&args, flag);
    let data_dir = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .map_or_else(|| shared_dir().join("data/locomo"), PathBuf::from);
    let json_out = value("--json").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/locomo.json"),
        PathBuf::from,
    );
    let skip_peer = args.iter().any(|a| a == "--skip-peer");
    let weights: [f64; 3] = value("--weights").map_or(RecallOptions::default().weights, |w| {
        let v: Vec<f64> = w.split(',').map(|x| x.parse().unwrap()).collect();
        [v[0], v[1], v[2]]
    });

    let mut files: Vec<PathBuf> = std::fs::read_dir(&data_dir)
        .unwrap_or_else(|e| panic!("{}: {e} (pass the LoCoMo folder)", data_dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no .json files in {}",
        data_dir.display()
    );

    let encoder_f32 = args.iter().any(|a| a == "--encoder-f32");
    let (encoder, model_dir) = memdb_benches::minilm_two_threads_with(!encoder_f32);
    println!(
        "encoder: all-MiniLM-L6-v2, {} projections",
        if encoder.int8() { "int8" } else { "f32" }
    );
    let style = value("--item-text").map(|name| {
        memdb::recall::ItemTextStyle::from_name(&name)
            .unwrap_or_else(|| panic!("--item-text {name}: sgm or descriptive"))
    });
    println!(
        "item text embedded: {}",
        style.map_or("the protocol's turn text (DESIGN.md §6)", |s| s.name())
    );

    let item_precision = match value("--item-vectors").as_deref() {
        None => Options::default().item_vector_precision,
        Some("i8") => memdb::vectors::Precision::I8,
        Some("f32") => memdb::vectors::Precision::F32,
        Some("i4") => memdb::vectors::Precision::I4,
        Some(other) => panic!("--item-vectors {other}: i8, f32 or i4"),
    };
    println!("item vectors stored as {item_precision}");
    let node_precision = match value("--node-vectors").as_deref() {
        None => memdb::graph::GraphOptions::default().node_vectors,
        Some("i4") => memdb::vectors::Precision::I4,
        Some("i8") => memdb::vectors::Precision::I8,
        Some(other) => panic!("--node-vectors {other}: i4 or i8"),
    };
    println!("node vectors stored as {node_precision}");
    let gates = gate_stages(value("--gate").as_deref(), &files);
    let grid = if args.iter().any(|a| a == "--cv") {
        cv_grid()
    } else {
        Vec::new()
    };
    let mut conversations = Vec::new();
    let mut search_us: Vec<u64> = Vec::new();
    let mut encode_us: Vec<u64> = Vec::new();
    let mut graph_us: Vec<u64> = Vec::new();
    for (file, gate) in files.iter().zip(gates) {
        let conv = run_conversation(
            file,
            gate,
            style,
            [item_precision, node_precision],
            &encoder,
            weights,
            &grid,
            &mut search_us,
            &mut encode_us,
            &mut graph_us,
        );
        eprintln!(
            "{}: {} items, {} questions, ingest {:.1} s",
            conv.name,
            conv.items.len(),
            conv.questions.len(),
            conv.ingest_s
        );
        conversations.push(conv);
    }

    if skip_peer {
        eprintln!("peer skipped (--skip-peer)");
    } else {
        match run_peer(&conversations, &model_dir) {
            Ok(peer) => {
                for (conv, rankings) in conversations.iter_mut().zip(peer) {
                    conv.rankings.extend(rankings);
                }
            }
            Err(why) => eprintln!("peer not run: {why}"),
        }
    }

    let bytes: u64 = conversations.iter().map(|c| c.store_bytes).sum();
    let dropped: usize = conversations.iter().map(|c| c.gate_dropped).sum();
    println!(
        "store bytes (segments + catalog, all conversations): {bytes}; turns the gate dropped: {dropped} (gate: {})",
        value("--gate").unwrap_or_else(|| "off".into())
    );
    let mut report = report(&conversations, &search_us, &encode_us, &graph_us);
    if !grid.is_empty() {
        report["cross_validation"] = cross_validate(&conversations, &grid);
    }
    if let Some(parent) = json_out.parent() {
        std::fs::create_dir_all(parent).ok();
    }
    std::fs::write(&json_out, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    eprintln!("wrote {}", json_out.display());
}

/// The gate stage of each file's ingest (`None`: no gate).
fn gate_stages(mode: Option<&str>, files: &[PathBuf]) -> Vec<Option<memdb::gate::GateStage>> {
    use memdb::gate::{GateMode, GateStage, Gum, Scenes};
    use memdb_lab::gate::LearnOptions;
    let stage = |scenes: Scenes| {
        Some(GateStage::new(
            std::sync::Arc::new(Gum::new(scenes).expect("gate matcher")),
            GateMode::Drop,
            "bench",
        ))
    };
    match mode {
        None => files.iter().map(|_| None).collect(),
        Some("builtin") => files
            .iter()
            .map(|_| stage(Scenes::builtin().expect("built-in scenes")))
            .collect(),
        Some("cv") => {
            let labelled: Vec<Vec<memdb_lab::gate::LabelledText>> = files
                .iter()
                .map(|f| memdb_lab::gate::locomo_texts(f, &std::fs::read(f).unwrap()).unwrap())
                .collect();
            memdb_lab::gate::lexicons_leaving_one_out(&labelled, &LearnOptions::default())
                .into_iter()
                .map(stage)
                .collect()
        }
        Some(other) => panic!("--gate {other}: builtin or cv"),
    }
}

/// One row of the recall table: how each question is asked for it.
#[derive(Clone, Copy)]
struct Mode<'a> {
    label: &'a str,
    signals: Signals,
    /// The vector space dense search reads.
    space: &'a str,
    /// `RecallOptions::context_share`.
    context_share: f64,
    /// Whether the learned reranker reorders the fused top.
    reranker: bool,
    /// BM25 over stems (false: over the words as written).
    stems: bool,
    /// The dense score in the fusion (false: `dense_score_weight` 0).
    dense_score: bool,
    /// An inference question weighs the dense score by its own weight (false: as a question
    /// of fact does).
    inference: bool,
}

#[allow(clippy::too_many_arguments)]
fn run_conversation(
    file: &Path,
    gate: Option<memdb::gate::GateStage>,
    style: Option<memdb::recall::ItemTextStyle>,
    [item_precision, node_precision]: [memdb::vectors::Precision; 2],
    encoder: &MiniLm,
    weights: [f64; 3],
    grid: &[Tuning],
    search_us: &mut Vec<u64>,
    encode_us: &mut Vec<u64>,
    graph_us: &mut Vec<u64>,
) -> Conversation {
    let name = locomo::conversation_id(file);
    let bytes = std::fs::read(file).unwrap();
    let imported = locomo::parse(file, &bytes).unwrap();
    assert!(imported.errors.is_empty(), "{:?}", imported.errors);
    let turns = locomo_turns(file).unwrap();
    let text_of: HashMap<String, String> = turns
        .iter()
        .map(|(dia, text)| (locomo::external_id(&name, dia), text.clone()))
        .collect();
    let qa = locomo::parse_qa(file, &bytes).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let options = Options {
        item_vector_precision: item_precision,
        ..Options::default()
    };
    let store = Store::create(dir.path().join("store"), options).unwrap();
    store.bind_model(&encoder.model_id().to_string()).unwrap();
    // The LoCoMo protocol embeds each turn's own text (DESIGN.md §6), so the items come with
    // their vectors; the engine's ingest commits them and builds the memory graph.
    let texts: Vec<String> = imported
        .items
        .iter()
        .map(|i| match style {
            None => text_of[i.draft.fields.external_id.as_ref().unwrap()].clone(),
            Some(style) => memdb::recall::item_text_in(
                &memdb::Item {
                    id: 0,
                    ingest_time_ms: 0,
                    fields: i.draft.fields.clone(),
                    supersedes: None,
                    blobs: Vec::new(),
                },
                style,
            ),
        })
        .collect();
    if let Some(style) = style {
        store.set_item_text_style(style).unwrap();
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = encoder.encode(&refs).unwrap();
    let ingest = memdb::IngestOptions {
        pages: memdb::ingest::PageStage::Skip,
        gate,
        graph: Some(memdb::graph::GraphOptions {
            node_vectors: node_precision,
            ..memdb::graph::GraphOptions::default()
        }),
        ..memdb::IngestOptions::default()
    };
    let items_in = imported.items.iter().zip(&vectors).map(|(item, vector)| {
        let mut item_in = memdb::IngestItem::new(item.draft.clone());
        item_in.vector = Some(vector.clone());
        item_in
    });
    let report = store
        .ingest_items(items_in, Some(encoder), ingest, &mut |_, _, _| {})
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let gate_dropped = report.gate_dropped.len();
    assert_eq!(
        report.embedded.unwrap().encoded,
        0,
        "every item came with its vector"
    );
    // The same vectors again at f32 and i8 where the item space has another precision, for
    // the flat comparison rows.
    let copies: Vec<(memdb::vectors::Precision, &str)> = COPY_SPACES
        .into_iter()
        .filter(|(p, _)| *p != item_precision)
        .collect();
    let space_at = |precision: memdb::vectors::Precision| {
        copies
            .iter()
            .find(|(p, _)| *p == precision)
            .map_or(ITEM_VECTORS, |(_, space)| *space)
    };
    let (f32_space, i8_space) = (
        space_at(memdb::vectors::Precision::F32),
        space_at(memdb::vectors::Precision::I8),
    );
    let snapshot = store.snapshot().unwrap();
    let mut items: Vec<(String, String)> = Vec::new();
    let mut ext_of: HashMap<u64, String> = HashMap::new();
    let mut batch = store.batch();
    for (precision, space) in &copies {
        batch.define_vectors(space, *precision);
    }
    for (item, vector) in imported.items.iter().zip(vectors) {
        let ext = item.draft.fields.external_id.clone().unwrap();
        // Not stored: the gate dropped it.
        let Some(stored) = snapshot.get_by_external_id(&ext).unwrap() else {
            continue;
        };
        let (time, source) = (
            item.draft.fields.time.unix_ms,
            item.draft.fields.source.code(),
        );
        for (_, space) in &copies {
            batch.put_vector(space, stored.id, time, source, vector.clone());
        }
        items.push((ext.clone(), text_of[&ext].clone()));
        ext_of.insert(stored.id, ext);
    }
    batch.commit().unwrap();
    let ingest_s = started.elapsed().as_secs_f64();
    let store_bytes = store.stats().unwrap().total_bytes();

    let questions: Vec<Question> = qa
        .into_iter()
        .filter(|q| !q.evidence.is_empty())
        .map(|q| Question {
            text: q.question,
            category: q.category,
            evidence: q.evidence.into_iter().collect(),
        })
        .collect();

    // Single signals run pure (no context spread); the last rows are ablations of the full
    // recall, to show where its gain comes from.
    let dense_only = Signals {
        dense: true,
        lexical: false,
        graph: false,
        place: false,
    };
    let lexical_only = Signals {
        dense: false,
        lexical: true,
        graph: false,
        place: false,
    };
    let single = |label, signals, space| Mode {
        label,
        signals,
        space,
        context_share: 0.0,
        reranker: false,
        stems: true,
        dense_score: true,
        inference: true,
    };
    let full = Mode {
        label: "memdb full recall",
        signals: Signals::ALL,
        space: ITEM_VECTORS,
        context_share: RecallOptions::default().context_share,
        reranker: true,
        stems: true,
        dense_score: true,
        inference: true,
    };
    let mut modes = vec![
        single("memdb flat f32", dense_only, f32_space),
        single("memdb flat i8", dense_only, i8_space),
        single("memdb lexical (BM25)", lexical_only, ITEM_VECTORS),
        Mode {
            stems: false,
            ..single(
                "memdb lexical (BM25), words not stems",
                lexical_only,
                ITEM_VECTORS,
            )
        },
        single(
            "memdb path overlap",
            Signals {
                dense: false,
                lexical: false,
                graph: true,
                place: false,
            },
            ITEM_VECTORS,
        ),
        full,
        Mode {
            label: "ablation: full recall without the reranker",
            reranker: false,
            ..full
        },
        Mode {
            label: "ablation: full recall without context spread",
            context_share: 0.0,
            ..full
        },
        Mode {
            label: "ablation: full recall, BM25 over words not stems",
            stems: false,
            ..full
        },
        Mode {
            label: "ablation: full recall without the graph",
            signals: Signals {
                graph: false,
                ..Signals::ALL
            },
            ..full
        },
        Mode {
            label: "ablation: full recall without the dense score",
            dense_score: false,
            ..full
        },
        Mode {
            label: "ablation: full recall, inference questions weighted as facts",
            inference: false,
            ..full
        },
    ];
    if item_precision == memdb::vectors::Precision::I4 {
        modes.push(single("memdb flat i4", dense_only, ITEM_VECTORS));
    }
    let full_only = std::env::args().any(|a| a == "--full-only");
    let defaults = RecallOptions::default();
    let mut rankings = BTreeMap::new();
    for Mode {
        label,
        signals,
        space,
        context_share,
        reranker,
        stems,
        dense_score,
        inference,
    } in modes
    {
        let is_full = label == full.label;
        if full_only && !is_full {
            continue;
        }
        let options = RecallOptions {
            k: 20,
            signals,
            context_share,
            dense_space: space.to_owned(),
            weights,
            reranker: reranker.then(|| Arc::new(memdb::recall::Reranker::learned())),
            stems,
            dense_score_weight: if dense_score {
                defaults.dense_score_weight
            } else {
                0.0
            },
            inference_dense_score_weight: match (dense_score, inference) {
                (false, _) => 0.0,
                (true, true) => defaults.inference_dense_score_weight,
                (true, false) => defaults.dense_score_weight,
            },
            ..RecallOptions::default()
        };
        let mut per_question = Vec::new();
        for q in &questions {
            let recall = store.recall(&q.text, &options, encoder).unwrap();
            if is_full {
                search_us.push(recall.timings.search_us());
                encode_us.push(recall.timings.encode_us);
            }
            if signals.graph && !signals.dense {
                graph_us.push(recall.timings.graph_us);
            }
            per_question.push(
                recall
                    .hits
                    .iter()
                    .map(|h| ext_of[&h.item].clone())
                    .collect(),
            );
        }
        rankings.insert(label.to_owned(), per_question);
    }
    // The grid reuses each question's vectors: only the fusion differs between settings.
    let memo = Memo::new(encoder);
    let inference: Vec<bool> = questions
        .iter()
        .map(|q| memdb::recall::QuestionForm::of(&q.text) == memdb::recall::QuestionForm::Inference)
        .collect();
    // Each setting's fusion (no reranker) with the features the reranker would read: the
    // fusion's ranking, and the reranker's candidates under that setting. Settings that differ
    // only in the inference weight recall a question of fact alike: it runs once per base.
    let mut tuned: Vec<Vec<Arc<Candidates>>> = Vec::with_capacity(grid.len());
    let mut first_of_base: HashMap<String, usize> = HashMap::new();
    for (g, t) in grid.iter().enumerate() {
        let options = t.options(memdb::recall::RERANK_DEPTH.max(KS[KS.len() - 1]));
        let shared = *first_of_base.entry(t.base_label()).or_insert(g);
        let per_question = questions
            .iter()
            .zip(&inference)
            .enumerate()
            .map(|(at, (q, &inference))| {
                if shared != g && !inference {
                    return Arc::clone(&tuned[shared][at]);
                }
                let hits = store.recall(&q.text, &options, &memo).unwrap().hits;
                Arc::new(
                    hits.iter()
                        .map(|h| {
                            let features = h.explanation.features.expect("features of the top");
                            (ext_of[&h.item].clone(), features)
                        })
                        .collect(),
                )
            })
            .collect();
        tuned.push(per_question);
    }
    // The graph's size, for the record.
    let snapshot = store.snapshot().unwrap();
    let (nodes, paths) = snapshot.graph().counts().unwrap();
    let node_vectors = snapshot
        .vectors(memdb::graph::NODE_VECTORS)
        .unwrap()
        .map_or(0, |v| v.len());
    eprintln!("{name}: graph {nodes} nodes ({node_vectors} vectors), {paths} paths");
    Conversation {
        name,
        items,
        questions,
        rankings,
        tuned,
        ingest_s,
        store_bytes,
        gate_dropped,
    }
}

fn run_peer(
    conversations: &[Conversation],
    model_dir: &model::ModelDir,
) -> Result<Vec<Rankings>, String> {
    let python = peer_python();
    let probe = Command::new(&python)
        .args(["-c", "import sentence_transformers, rank_bm25"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err(format!(
            "{python} cannot import sentence_transformers and rank_bm25; install them with \
             `python3 -m pip install sentence-transformers rank_bm25`, or name a Python that \
             has them in {PEER_PYTHON_ENV}"
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = dir.path().join("input.json");
    let payload = json!({
        "conversations": conversations.iter().map(|c| json!({
            "items": c.items,
            "questions": c.questions.iter().map(|q| q.text.clone()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()
    });
    std::fs::write(&input, serde_json::to_vec(&payload).unwrap()).map_err(|e| e.to_string())?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/locomo_peer.py");
    eprintln!("running peer: {python} {}", script.display());
    let mut command = Command::new(&python);
    command
        .arg(&script)
        .arg("--input")
        .arg(&input)
        .arg("--model")
        .arg(model_dir.path());
    let report = run_peer_json(command, &script)?;
    let convs = report["conversations"]
        .as_array()
        .ok_or("no conversations")?;
    Ok(convs
        .iter()
        .map(|c| {
            [
                ("peer: MiniLM exact cosine (sentence-transformers)", "dense"),
                ("peer: BM25Okapi (rank_bm25)", "bm25"),
                ("peer: RRF of the two (k = 60)", "rrf"),
            ]
            .into_iter()
            .map(|(label, key)| {
                let lists = c[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        l.as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_str().unwrap().to_owned())
                            .collect()
                    })
                    .collect();
                (label.to_owned(), lists)
            })
            .collect()
        })
        .collect())
}

/// Recall@k of one ranking: the share of the evidence in its first k.
/// Sums of Recall@k (k in [`KS`]) over `questions` ranked by `lists`, and per category the sum
/// of Recall@10 and the count.
/// The sum of R@1/5/10/20 over `questions` (recall per question), what `--cv` maximises.
fn objective(questions: &[Question], lists: &[Vec<String>]) -> f64 {
    recall_sums(questions, lists).0.iter().sum()
}

fn recall_sums(questions: &[Question], lists: &[Vec<String>]) -> ([f64; 4], [(f64, usize); 5]) {
    let mut sums = [0.0; 4];
    let mut by_cat = [(0.0, 0); 5];
    for (q, list) in questions.iter().zip(lists) {
        for (slot, &k) in KS.iter().enumerate() {
            sums[slot] += recall_at(list, &q.evidence, k);
        }
        if let Some(c) = by_cat.get_mut(usize::from(q.category).wrapping_sub(1)) {
            c.0 += recall_at(list, &q.evidence, 10);
            c.1 += 1;
        }
    }
    (sums, by_cat)
}

/// The `--cv` table: per held-out conversation the grid setting chosen on the others (best
/// mean of R@1/5/10/20 over their questions, the earlier setting on a tie) and its figures on
/// the held-out questions; then the held-out questions pooled, and the defaults on all.
fn cross_validate(conversations: &[Conversation], grid: &[Tuning]) -> Value {
    println!(
        "
cross-validated full recall: {} settings (dense / lexical / graph weights / context share / dense score weight / inference dense score weight / graph paths / path share / node match), each fold tuned on the other conversations and scored on its own
",
        grid.len()
    );
    println!(
        "| held out | questions | chosen | R@1 | R@5 | R@10 | R@20 | R@10 cat 1 | cat 2 | cat 3 | cat 4 | cat 5 |"
    );
    println!("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    // One table row: a fold's (or the pool's) recall sums as percentages.
    let row = |name: &str, n: usize, chosen: &str, (sums, cats): ([f64; 4], [(f64, usize); 5])| {
        let pct = |v: f64, n: usize| if n == 0 { 0.0 } else { 100.0 * v / n as f64 };
        let r: Vec<f64> = sums.iter().map(|v| pct(*v, n)).collect();
        let c: Vec<f64> = cats.iter().map(|(v, n)| pct(*v, *n)).collect();
        println!(
            "| {name} | {n} | {chosen} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r[0], r[1], r[2], r[3], c[0], c[1], c[2], c[3], c[4]
        );
        json!({
            "held_out": name, "questions": n, "chosen": chosen,
            "recall_at": {"1": r[0], "5": r[1], "10": r[2], "20": r[3]},
            "recall_at_10_by_category": c,
        })
    };
    let add = |into: &mut ([f64; 4], [(f64, usize); 5]),
               (sums, cats): ([f64; 4], [(f64, usize); 5])| {
        for (a, b) in into.0.iter_mut().zip(sums) {
            *a += b;
        }
        for (a, b) in into.1.iter_mut().zip(cats) {
            a.0 += b.0;
            a.1 += b.1;
        }
    };
    // Setting `g`'s fused rankings of a conversation's questions.
    let fused = |c: &Conversation, g: usize| -> Vec<Vec<String>> {
        c.tuned[g]
            .iter()
            .map(|cands| cands.iter().map(|(ext, _)| ext.clone()).collect())
            .collect()
    };
    // Each setting's sum of R@1/5/10/20 over each conversation's questions, computed once.
    let objectives: Vec<Vec<f64>> = (0..grid.len())
        .map(|g| {
            conversations
                .iter()
                .map(|c| objective(&c.questions, &fused(c, g)))
                .collect()
        })
        .collect();
    // The fusion setting with the best mean of R@1/5/10/20 over the conversations `train`
    // names (the earlier setting on a tie).
    let choose = |train: &dyn Fn(usize) -> bool| -> usize {
        let mut best = (0, f64::NEG_INFINITY);
        for (g, per_conversation) in objectives.iter().enumerate() {
            let objective: f64 = per_conversation
                .iter()
                .enumerate()
                .filter(|(i, _)| train(*i))
                .map(|(_, o)| o)
                .sum();
            if objective > best.1 {
                best = (g, objective);
            }
        }
        best.0
    };
    let labelled = |c: &Conversation, g: usize| -> Vec<(memdb::recall::Features, bool)> {
        c.questions
            .iter()
            .zip(&c.tuned[g])
            .flat_map(|(q, cands)| cands.iter().map(|(ext, f)| (*f, q.evidence.contains(ext))))
            .collect()
    };
    let reranked =
        |model: &memdb::recall::Reranker, c: &Conversation, g: usize| -> Vec<Vec<String>> {
            c.tuned[g]
                .iter()
                .map(|cands| {
                    let mut scored: Vec<(f64, usize, &String)> = cands
                        .iter()
                        .enumerate()
                        .map(|(at, (ext, f))| (model.probability(f), at, ext))
                        .collect();
                    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                    scored.into_iter().map(|(_, _, ext)| ext.clone()).collect()
                })
                .collect()
        };
    // The inference weight decides which inference questions' evidence reaches the reranker,
    // and with what features: it is chosen with the reranker in the loop. Among the settings
    // that differ from `g` only in it, the one whose pipeline scores best over `train`, each of
    // those conversations scored with the reranker fitted on the others (the earlier setting
    // on a tie).
    let with_inference_weight = |g: usize, train: &[usize]| -> usize {
        let base = grid[g].base_label();
        let mut best = (g, f64::NEG_INFINITY);
        for v in (0..grid.len()).filter(|&v| grid[v].base_label() == base) {
            let mut total = 0.0;
            for &inner in train {
                let rows: Vec<(memdb::recall::Features, bool)> = train
                    .iter()
                    .filter(|&&i| i != inner)
                    .flat_map(|&i| labelled(&conversations[i], v))
                    .collect();
                let model = memdb::recall::Reranker::fit(&rows);
                let c = &conversations[inner];
                total += objective(&c.questions, &reranked(&model, c, v));
            }
            if total > best.1 {
                best = (v, total);
            }
        }
        best.0
    };
    let mut folds = Vec::new();
    let mut pooled = ([0.0; 4], [(0.0, 0); 5]);
    let mut defaults = ([0.0; 4], [(0.0, 0); 5]);
    let mut chosen = Vec::new();
    for (held, conv) in conversations.iter().enumerate() {
        let g = choose(&|i| i != held);
        chosen.push(g);
        let scored = recall_sums(&conv.questions, &fused(conv, g));
        folds.push(row(
            &conv.name,
            conv.questions.len(),
            &grid[g].label(),
            scored,
        ));
        add(&mut pooled, scored);
        add(&mut defaults, recall_sums(&conv.questions, &fused(conv, 0)));
    }
    let total: usize = conversations.iter().map(|c| c.questions.len()).sum();
    let pooled = row("pooled held-out", total, "per fold", pooled);
    let defaults = row("defaults (same run)", total, &grid[0].label(), defaults);

    // The reranker (issue 26): fitted on four conversations' candidates, scored on the fifth;
    // first on the default fusion's candidates, then on those of the fusion setting the fold
    // chose on its four (so no parameter of the pipeline saw the conversation it scores).
    let mut tables = Vec::new();
    for (title, nested) in [
        (
            format!(
                "full recall with the reranker cross-validated: a logistic model over the {} features of the default fusion's top {}, fitted on the other conversations, scored on its own",
                memdb::recall::FEATURES,
                memdb::recall::RERANK_DEPTH
            ),
            false,
        ),
        (
            "full recall with the fusion and the reranker cross-validated together: each fold's fusion setting chosen on the other conversations (the first table), the reranker fitted on their candidates under it, both scored on its own".to_owned(),
            true,
        ),
    ] {
        println!("\n{title}\n");
        println!(
            "| held out | questions | fusion | R@1 | R@5 | R@10 | R@20 | R@10 cat 1 | cat 2 | cat 3 | cat 4 | cat 5 |"
        );
        println!(
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        let mut rows = Vec::new();
        let mut sums = ([0.0; 4], [(0.0, 0); 5]);
        for (held, conv) in conversations.iter().enumerate() {
            let g = if nested {
                let train: Vec<usize> = (0..conversations.len()).filter(|&i| i != held).collect();
                with_inference_weight(chosen[held], &train)
            } else {
                0
            };
            let train: Vec<(memdb::recall::Features, bool)> = conversations
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != held)
                .flat_map(|(_, c)| labelled(c, g))
                .collect();
            let model = memdb::recall::Reranker::fit(&train);
            let scored = recall_sums(&conv.questions, &reranked(&model, conv, g));
            rows.push(row(&conv.name, conv.questions.len(), &grid[g].label(), scored));
            add(&mut sums, scored);
        }
        let pooled = row("pooled held-out", total, "per fold", sums);
        tables.push(json!({"nested": nested, "folds": rows, "pooled": pooled}));
    }
    let all: Vec<usize> = (0..conversations.len()).collect();
    let everyone = with_inference_weight(choose(&|_| true), &all);
    // What the engine ships: its defaults (the setting chosen on all five, as it was chosen
    // when the defaults were last set) with the inference weight chosen on all five for them,
    // and the reranker fitted on all five under that.
    let shipped = with_inference_weight(0, &all);
    let rows: Vec<(memdb::recall::Features, bool)> = conversations
        .iter()
        .flat_map(|c| labelled(c, shipped))
        .collect();
    let fitted = memdb::recall::Reranker::fit(&rows);
    println!(
        "\nfusion setting chosen on all {n} conversations: {}; the engine's defaults: {}; the \
         defaults with the inference weight chosen on all {n}: {}",
        grid[everyone].label(),
        grid[0].label(),
        grid[shipped].label(),
        n = conversations.len(),
    );
    println!(
        "reranker weights fitted on all {} conversations under that last setting (what the engine ships as Reranker::learned): {:?}",
        conversations.len(),
        fitted.weights
    );
    json!({
        "settings": grid.len(), "folds": folds, "pooled": pooled, "defaults": defaults,
        "reranker": {"tables": tables, "fitted_on_all": fitted.weights.to_vec()},
        "chosen_on_all": grid[everyone].label(), "shipped": grid[shipped].label(),
    })
}

fn recall_at(ranking: &[String], evidence: &HashSet<String>, k: usize) -> f64 {
    let found = ranking
        .iter()
        .take(k)
        .filter(|id| evidence.contains(*id))
        .count();
    found as f64 / evidence.len() as f64
}

fn percentile(values: &[u64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        return 0.0;
    }
    let idx = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[idx] as f64 / 1000.0
}

fn report(
    conversations: &[Conversation],
    search_us: &[u64],
    encode_us: &[u64],
    graph_us: &[u64],
) -> Value {
    let retrievers: Vec<String> = conversations
        .first()
        .map(|c| c.rankings.keys().cloned().collect())
        .unwrap_or_default();
    // Peers first, then memdb, in a fixed order.
    let mut retrievers = retrievers;
    retrievers.sort_by_key(|r| (!r.starts_with("peer"), r.clone()));
    let total: usize = conversations.iter().map(|c| c.questions.len()).sum();
    println!(
        "LoCoMo recall: {} conversations, {total} questions with evidence, Recall@k in %\n",
        conversations.len()
    );
    println!(
        "| retriever | R@1 | R@5 | R@10 | R@20 | R@10 cat 1 | cat 2 | cat 3 | cat 4 | cat 5 |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut rows = Vec::new();
    let mut by_category: Vec<(String, Vec<[f64; 4]>)> = Vec::new();
    for r in &retrievers {
        let mut overall = [0.0f64; 4];
        let mut by_cat: BTreeMap<u8, ([f64; 4], usize)> = BTreeMap::new();
        for conv in conversations {
            let Some(lists) = conv.rankings.get(r) else {
                continue;
            };
            for (q, list) in conv.questions.iter().zip(lists) {
                for (slot, &k) in KS.iter().enumerate() {
                    overall[slot] += recall_at(list, &q.evidence, k);
                }
                let e = by_cat.entry(q.category).or_default();
                for (slot, &k) in KS.iter().enumerate() {
                    e.0[slot] += recall_at(list, &q.evidence, k);
                }
                e.1 += 1;
            }
        }
        let overall: Vec<f64> = overall.iter().map(|s| 100.0 * s / total as f64).collect();
        // category → Recall@1/5/10/20
        let per_cat: Vec<[f64; 4]> = (1..=5)
            .map(|c| {
                by_cat
                    .get(&c)
                    .map_or([0.0; 4], |(s, n)| s.map(|v| 100.0 * v / *n as f64))
            })
            .collect();
        let cats: Vec<f64> = per_cat.iter().map(|r| r[2]).collect();
        by_category.push((r.clone(), per_cat.clone()));
        println!(
            "| {r} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            overall[0],
            overall[1],
            overall[2],
            overall[3],
            cats[0],
            cats[1],
            cats[2],
            cats[3],
            cats[4]
        );
        rows.push(json!({
            "retriever": r,
            "recall_at": {"1": overall[0], "5": overall[1], "10": overall[2], "20": overall[3]},
            "recall_at_by_category": (1..=5).map(|c| (c.to_string(), json!({
                "1": per_cat[c - 1][0], "5": per_cat[c - 1][1],
                "10": per_cat[c - 1][2], "20": per_cat[c - 1][3],
            }))).collect::<serde_json::Map<_, _>>(),
        }));
    }
    println!("\nper category, R@1 / R@5 / R@10 / R@20:\n");
    println!(
        "| retriever | 1 multi-hop | 2 temporal | 3 open-domain | 4 single-hop | 5 adversarial |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for (r, per_cat) in &by_category {
        let cells: Vec<String> = per_cat
            .iter()
            .map(|v| format!("{:.1} / {:.1} / {:.1} / {:.1}", v[0], v[1], v[2], v[3]))
            .collect();
        println!("| {r} | {} |", cells.join(" | "));
    }
    let counts: Vec<usize> = (1..=5u8)
        .map(|c| {
            conversations
                .iter()
                .flat_map(|v| &v.questions)
                .filter(|q| q.category == c)
                .count()
        })
        .collect();
    println!("\nquestions per category: {counts:?}");
    let best_peer = rows
        .iter()
        .filter(|r| {
            r["retriever"]
                .as_str()
                .is_some_and(|s| s.starts_with("peer"))
        })
        .map(|r| r["recall_at"]["10"].as_f64().unwrap())
        .fold(f64::NAN, f64::max);
    let full = rows
        .iter()
        .find(|r| r["retriever"] == "memdb full recall")
        .map(|r| r["recall_at"]["10"].as_f64().unwrap());
    if let Some(full) = full
        && best_peer.is_finite()
    {
        println!(
            "full recall R@10 − best peer R@10: {:+.1} points",
            full - best_peer
        );
    }
    println!(
        "\nrecall latency, excluding query encoding (full recall, {} queries): p50 {:.3} ms, p99 {:.3} ms",
        search_us.len(),
        percentile(search_us, 50.0),
        percentile(search_us, 99.0)
    );
    println!(
        "query encoding (question + its nodes, one encoder call): p50 {:.3} ms, p99 {:.3} ms",
        percentile(encode_us, 50.0),
        percentile(encode_us, 99.0)
    );
    println!(
        "path overlap alone (node match + Q-matrix + item scoring): p50 {:.3} ms, p99 {:.3} ms",
        percentile(graph_us, 50.0),
        percentile(graph_us, 99.0)
    );
    println!("\n| conversation | items | questions | ingest s (import + embed + graph) |");
    println!("| --- | ---: | ---: | ---: |");
    for c in conversations {
        println!(
            "| {} | {} | {} | {:.2} |",
            c.name,
            c.items.len(),
            c.questions.len(),
            c.ingest_s
        );
    }
    json!({
        "questions": total,
        "rows": rows,
        "latency_ms": {
            "search_p50": percentile(search_us, 50.0), "search_p99": percentile(search_us, 99.0),
            "encode_p50": percentile(encode_us, 50.0), "encode_p99": percentile(encode_us, 99.0),
            "path_overlap_p50": percentile(graph_us, 50.0), "path_overlap_p99": percentile(graph_us, 99.0),
        },
        "ingest_s": conversations.iter().map(|c| json!({"conversation": c.name, "seconds": c.ingest_s})).collect::<Vec<_>>(),
    })
}
