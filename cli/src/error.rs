//! The tool's error: what failed and the path, flag, item or statement it concerns.
//!
//! Every command returns [`CliError`]; `main` prints it as one line (`memdb: …`) and exits with
//! status 2. Engine errors keep their type to the end, so the one place that words them —
//! [`CliError`]'s `Display` — can add what to do next (a damaged store points at `memdb check`
//! and `memdb repair`).
//!
//! Invariant: no function in this crate returns `Result<_, String>`; a message made of words
//! only is one of the named variants below, each a case a person can act on.

use std::path::PathBuf;

use memdb_encode::EncodeError;
use memdb_query::QueryError;

/// A command that did not do what it was asked, with its context.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The engine refused or failed.
    #[error("{}", engine_message(.0))]
    Engine(#[from] memdb::Error),
    /// A lab run (ATM-Bench's scoring, a judge) failed.
    #[error("{0}")]
    Lab(#[source] memdb_lab::Error),
    /// A batch of an import failed to commit; the batches before it are in the store.
    #[error("commit failed (earlier batches are kept): {}", engine_message(.0))]
    Commit(#[source] memdb::Error),
    /// Opening, creating or repairing the store at `dir` failed.
    #[error("{}: {}", .dir.display(), engine_message(.source))]
    Store {
        /// The store directory.
        dir: PathBuf,
        /// What the engine said.
        #[source]
        source: memdb::Error,
    },
    /// There is no store at `dir` (and the command does not create one).
    #[error(
        "no memdb store at {0}: create it with `memdb init {0}` (or pass --create)",
        .dir.display()
    )]
    NoStore {
        /// Where one was expected.
        dir: PathBuf,
    },
    /// Reading or writing a file or folder of the user's failed.
    #[error("{op} {}: {source}{hint}", .path.display())]
    Io {
        /// What was being done: `read`, `write`, `create`, `remove`, `fsync`, `chmod`, `list`.
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
        /// What to do about it, with its leading separator, or empty.
        hint: &'static str,
    },
    /// A time bound given on the command line is not valid.
    #[error("{flag}: {source}")]
    Time {
        /// The flag (`--from`, `--to`, `--now`).
        flag: &'static str,
        /// What is wrong with its value.
        #[source]
        source: memdb::time::TimeError,
    },
    /// A flag's value is not valid.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag as typed (`--from`, `--quality 0`, …).
        flag: String,
        /// Why its value is refused.
        reason: String,
    },
    /// The arguments do not say what to do.
    #[error("{0}")]
    Usage(&'static str),
    /// A statement did not parse: the message points at the place in its text.
    #[error("{rendered}")]
    Statement {
        /// The parse error rendered against the statement's text.
        rendered: String,
    },
    /// A statement parsed but failed to run.
    #[error("{}", query_message(.0))]
    Query(#[from] QueryError),
    /// The on-device encoder or its weights failed.
    #[error(transparent)]
    Encoder(#[from] EncodeError),
    /// A forgetting policy (a built-in name or a TOML file) is not valid.
    #[error("{spec}: {source}")]
    Policy {
        /// The name or file given.
        spec: String,
        /// What is wrong with it.
        #[source]
        source: memdb::forget::PolicyError,
    },
    /// No item has this id or external id.
    #[error("no item `{key}`")]
    NoItem {
        /// The key as given.
        key: String,
    },
    /// A key given as an item id is not a number.
    #[error("`{key}` is not an item id (use --external for external ids)")]
    NotAnId {
        /// The key as given.
        key: String,
    },
    /// The store holds no page for this day.
    #[error("no page for {day} (compose pages with `memdb pages`)")]
    NoPage {
        /// The day asked for.
        day: String,
    },
    /// A search needs item vectors the store does not have yet.
    #[error("the store has no item vectors yet: run `memdb embed` first")]
    NoVectors,
    /// A benchmark's dense retrieval over a store some of whose items have no vector (an
    /// interrupted `memdb embed`) would score them as never found.
    #[error(
        "{missing} of {items} items have no vector yet (an interrupted `memdb embed`?): run `memdb embed` first"
    )]
    MissingVectors {
        /// Items without a vector.
        missing: u64,
        /// Items in the store.
        items: u64,
    },
    /// The encoder gave no vector for a text.
    #[error("the encoder returned no vector")]
    NoVector,
    /// A statement the tool built returned no item rows.
    #[error("`{statement}` returned no items")]
    NoRows {
        /// The statement.
        statement: String,
    },
    /// The MCP server could not start or its session failed.
    #[error(transparent)]
    Input(#[from] memdb_formats::ImportError),
    #[error("mcp: {0}")]
    Mcp(String),
    /// The person said no (or no terminal could ask): nothing was done.
    #[error("{0}")]
    Declined(String),
    /// A scene catalogue, lexicon or labelled file the gate cannot use.
    #[error("{}: {reason}", .file.display())]
    Gate {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `memdb export` needs an empty or new folder.
    #[error("{}: {reason}", .dir.display())]
    ExportTarget {
        /// The folder given.
        dir: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The line editor of the shell failed.
    #[error("{what}: {source}")]
    LineEditor {
        /// Starting it or reading a line.
        what: &'static str,
        /// What it said.
        #[source]
        source: rustyline::error::ReadlineError,
    },
    /// No passphrase or key file could be had, or the one given is unusable.
    #[error("{0}")]
    Secret(String),
    /// A check the command ran found problems (their list was printed).
    #[error("check found problems")]
    CheckFailed,
}

/// The result of a command.
pub(crate) type Result<T, E = CliError> = std::result::Result<T, E>;

impl CliError {
    /// An I/O failure on `path` while doing `op`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CliError::Io {
            op,
            path: path.into(),
            source,
            hint: "",
        }
    }

    /// A flag's refused value.
    pub(crate) fn flag(flag: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        CliError::Flag {
            flag: flag.into(),
            reason: reason.to_string(),
        }
    }

    /// A store that did not open at `dir`.
    pub(crate) fn store(dir: impl Into<PathBuf>, source: impl Into<memdb::Error>) -> Self {
        CliError::Store {
            dir: dir.into(),
            source: source.into(),
        }
    }
}

/// An engine error in words; damage adds what `check` and `repair` do about it.
fn engine_message(e: &memdb::Error) -> String {
    let damaged = matches!(
        e.store(),
        Some(
            memdb::StoreError::Corruption { .. }
                | memdb::StoreError::SegmentUnavailable { .. }
                | memdb::StoreError::CatalogDamaged { .. }
        )
    );
    if damaged {
        format!(
            "{e} (`memdb check` lists what the damage makes unreadable; `memdb repair` salvages the rest)"
        )
    } else {
        e.to_string()
    }
}

/// The store's errors are the engine's (with its advice).
impl From<memdb::StoreError> for CliError {
    fn from(e: memdb::StoreError) -> Self {
        CliError::Engine(e.into())
    }
}

/// The engine's errors inside a lab run keep their engine advice.
impl From<memdb_lab::Error> for CliError {
    fn from(e: memdb_lab::Error) -> Self {
        match e {
            memdb_lab::Error::Engine(source) => CliError::Engine(source),
            other => CliError::Lab(other),
        }
    }
}

/// A query error in words: an engine failure inside it gets the same advice as any other.
fn query_message(e: &QueryError) -> String {
    match e {
        QueryError::Engine { statement, source } => {
            format!("{statement}: {}", engine_message(source))
        }
        other => other.to_string(),
    }
}
