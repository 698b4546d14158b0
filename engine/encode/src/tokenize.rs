//! WordPiece tokenization exactly as the reference (sentence-transformers) does it.
//!
//! Owns: turning a text into the ids the model sees. Uses the model's own `tokenizer.json` through
//! the `tokenizers` crate — the same Rust core the Python reference runs — so the BERT normaliser
//! (lower-casing, accent stripping, control-character cleaning, CJK spacing), the BERT
//! pre-tokeniser, `##` continuations, `[UNK]` and literal special tokens behave identically.
//!
//! Invariants:
//! - the file's own truncation (128) and fixed padding (128) are replaced: sequences are cut at
//!   [`MAX_TOKENS`] ids *including* `[CLS]` and `[SEP]`, and never padded here (padding is the
//!   batcher's job, per batch);
//! - every returned sequence starts with `[CLS]` and ends with `[SEP]`, so it is never empty.

use std::path::Path;

use tokenizers::{TruncationDirection, TruncationParams, TruncationStrategy};

use crate::error::EncodeError;

/// Longest sequence the model is given, `[CLS]` and `[SEP]` included (sentence-transformers'
/// `max_seq_length` for all-MiniLM-L6-v2).
pub(crate) const MAX_TOKENS: usize = 256;

/// The model's WordPiece tokenizer with the reference's truncation and no padding.
pub(crate) struct WordPiece {
    inner: tokenizers::Tokenizer,
}

impl WordPiece {
    /// Parses the content of `tokenizer.json` and applies the reference's overrides; `path` only
    /// labels errors.
    pub(crate) fn from_bytes(json: &[u8], path: &Path) -> Result<Self, EncodeError> {
        let fail = |reason: String| EncodeError::Tokenizer {
            path: path.to_path_buf(),
            reason,
        };
        let mut inner = tokenizers::Tokenizer::from_bytes(json).map_err(|e| fail(e.to_string()))?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| fail(e.to_string()))?;
        Ok(Self { inner })
    }

    /// The ids of one text: `[CLS]`, at most `MAX_TOKENS - 2` word pieces, `[SEP]`.
    ///
    /// `index` only labels the error.
    pub(crate) fn encode(&self, text: &str, index: usize) -> Result<Vec<u32>, EncodeError> {
        // `encode_fast` skips character offsets, which nothing here needs; the ids are the same.
        let encoding = self
            .inner
            .encode_fast(text, true)
            .map_err(|e| EncodeError::Tokenize {
                index,
                chars: text.chars().count(),
                reason: e.to_string(),
            })?;
        Ok(encoding.get_ids().to_vec())
    }
}
