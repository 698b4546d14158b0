//! all-MiniLM-L6-v2 as an [`Encoder`]: checked files in, unit vectors out.
//!
//! Owns: loading (digest checks, tokenizer, weights onto the chosen device), the inference thread
//! budget, and batched encoding.
//!
//! Invariants:
//! - a loaded encoder's weights are byte-for-byte the pinned release (their SHA-256 is checked
//!   on the bytes that are loaded, not on a second read), so [`ModelId`] names what computed the
//!   vectors;
//! - all work runs on the encoder's own threads (`threads` of them, one shard of a batch each),
//!   inside single-threaded rayon pools, so the backend's parallel kernels never use more threads
//!   than the budget whatever the rest of the process does;
//! - at most one batch of activations is alive at a time: a batch's shards together are the
//!   batch, batches run one after another, and each one's tensors are dropped before the next
//!   starts.

use burn::tensor::{DType, Device};
use rayon::prelude::*;

use crate::bert::{Bert, BertConfig, Kernels, PaddedBatch};
use crate::error::EncodeError;
use crate::model::{self, ModelDir};
use crate::tokenize::WordPiece;
use crate::{Encoder, ModelId, batch};

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Backend {
    /// burn's Flex backend (pure-Rust CPU kernels: gemm, SIMD), on the encoder's threads.
    #[default]
    Cpu,
    /// burn's CUDA backend on the GPU with this index.
    #[cfg(feature = "cuda")]
    Cuda(usize),
}

impl Backend {
    fn device(self) -> Device {
        match self {
            Self::Cpu => Device::flex(),
            #[cfg(feature = "cuda")]
            Self::Cuda(index) => Device::cuda(index),
        }
    }

    /// Host kernels only where tensors already live in host memory.
    fn kernels(self) -> Kernels {
        match self {
            Self::Cpu => Kernels::Host,
            #[cfg(feature = "cuda")]
            Self::Cuda(_) => Kernels::Device,
        }
    }
}

/// How an encoder runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderOptions {
    /// Threads for inference and tokenization; `None` means one per available core.
    pub threads: Option<usize>,
    /// Texts per forward pass (≥ 1). Larger batches pad more, smaller ones use the cores less.
    pub batch_size: usize,
    /// Where the model runs.
    pub backend: Backend,
    /// Runs the dense projections in 8-bit integers (weights per output, activations per token,
    /// smoothed; exact i32 sums) where the backend is the CPU and the CPU has the packed i8
    /// kernel (AVX-512 VNNI or AVX-VNNI): about twice the sentences per second, vectors within
    /// a cosine of about 0.995 of the f32 model's. `false`, or a CPU without the kernel: f32
    /// throughout, the model as published.
    pub int8: bool,
}

impl Default for EncoderOptions {
    fn default() -> Self {
        Self {
            threads: None,
            batch_size: 32,
            backend: Backend::Cpu,
            int8: true,
        }
    }
}

/// The all-MiniLM-L6-v2 sentence encoder (384 dimensions).
pub struct MiniLm {
    model: Bert,
    tokenizer: WordPiece,
    device: Device,
    /// `threads` threads: tokenization, and the pool that loads the model.
    pool: rayon::ThreadPool,
    /// One single-threaded pool per thread of the budget; each runs one shard of a batch.
    shards: Vec<rayon::ThreadPool>,
    batch_size: usize,
    id: ModelId,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("id", &self.id)
            .field("device", &self.device)
            .field("threads", &self.pool.current_num_threads())
            .field("batch_size", &self.batch_size)
            .field("int8", &self.model.int8())
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// The vector dimension.
    pub const DIMENSION: usize = 384;

    /// Loads the model from `dir`, refusing files whose SHA-256 is not the pinned one.
    pub fn load(dir: &ModelDir, options: EncoderOptions) -> Result<Self, EncodeError> {
        let weights_path = dir.path().join(model::WEIGHTS.name);
        let read_checked = |file: model::PinnedFile| {
            let path = dir.path().join(file.name);
            let bytes = std::fs::read(&path).map_err(EncodeError::io("reading", &path))?;
            model::check_hex(&path, file, model::sha256_hex(&bytes))?;
            Ok::<_, EncodeError>((path, bytes))
        };
        // The tokenizer is built from tokenizer.json alone (it holds the vocabulary too);
        // vocab.txt is checked so that an install is either entirely the pinned release or
        // refused.
        let (tokenizer_path, tokenizer_json) = read_checked(model::TOKENIZER)?;
        read_checked(model::VOCAB)?;
        let tokenizer = WordPiece::from_bytes(&tokenizer_json, &tokenizer_path)?;

        let threads = options.threads.unwrap_or_else(available_cores).max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("memdb-encode-{i}"))
            .build()
            .map_err(|e| EncodeError::ThreadPool {
                threads,
                reason: e.to_string(),
            })?;
        let shard_count = match options.backend {
            Backend::Cpu => threads,
            // A GPU runs a batch as a whole; splitting it would only shrink its kernels.
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => 1,
        };
        let shards = (0..shard_count)
            .map(|i| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(move |_| format!("memdb-encode-shard-{i}"))
                    .build()
                    .map_err(|e| EncodeError::ThreadPool {
                        threads: 1,
                        reason: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let device = options.backend.device();
        let kernels = options.backend.kernels();
        // The weights are hashed (streamed, on a second thread) while the model reads its
        // tensors from the same file, so a load costs the longer of the two, not their sum. The
        // model is used only once the digest matched, and only if the file is the same one
        // (device, inode, length, modification time) before and after: then the hash and the
        // load both read the pinned bytes.
        let identity = model::file_identity(&weights_path)?;
        let (digest, model) = std::thread::scope(|scope| {
            let hasher = scope.spawn(|| model::check_digest(&weights_path, model::WEIGHTS));
            let model = pool.install(|| {
                Bert::load(
                    BertConfig::MINILM_L6,
                    &weights_path,
                    &device,
                    kernels,
                    options.int8,
                )
            });
            let digest = hasher.join().unwrap_or_else(|_| {
                Err(EncodeError::Backend {
                    what: "weights digest",
                    reason: "the hashing thread panicked".into(),
                })
            });
            (digest, model)
        });
        let weights_sha256 = digest?;
        if model::file_identity(&weights_path)? != identity {
            return Err(EncodeError::Weights {
                path: weights_path,
                reason: "the file changed while it was loaded; load again".into(),
            });
        }
        let model = model?;
        Ok(Self {
            model,
            tokenizer,
            device,
            pool,
            shards,
            batch_size: options.batch_size.max(1),
            id: ModelId::new(model::MINILM_NAME, weights_sha256),
        })
    }

    /// The ids the model sees for `text` (`[CLS]` … `[SEP]`, at most 256).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EncodeError> {
        self.tokenizer.encode(text, 0)
    }

    /// Changes how many texts go through the model per forward pass (≥ 1).
    pub fn set_batch_size(&mut self, batch_size: usize) {
        self.batch_size = batch_size.max(1);
    }

    /// Whether the dense projections run in 8-bit integers ([`EncoderOptions::int8`] and a CPU
    /// with the packed i8 kernel).
    pub fn int8(&self) -> bool {
        self.model.int8()
    }

    /// Threads in the inference pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Vectors for one batch (`seqs` sorted by descending length, not empty): `seqs.len() × 384`
    /// floats, row-major.
    ///
    /// The batch is dealt round-robin into one shard per inference thread (so the shards get
    /// equal shares of long and short members) and the shards run at once, each on its own
    /// single-threaded pool. On a CPU this beats running the whole batch with every kernel split
    /// over the threads: everything between the matrix products runs in parallel too, with no
    /// synchronisation inside a layer. The shards together hold one batch's activations, as the
    /// whole batch would.
    fn run_batch(&self, seqs: &[&[u32]]) -> Result<Vec<f32>, EncodeError> {
        let count = self.shards.len().min(seqs.len()).max(1);
        let shards: Vec<Vec<&[u32]>> = (0..count)
            .map(|s| seqs.iter().skip(s).step_by(count).copied().collect())
            .collect();
        let parts: Vec<Result<Vec<f32>, EncodeError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = shards
                .iter()
                .zip(&self.shards)
                .map(|(shard, pool)| scope.spawn(move || pool.install(|| self.forward(shard))))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(EncodeError::Backend {
                            what: "sentence vectors",
                            reason: "an inference thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
        // Undo the deal: member i is row i / count of shard i % count.
        let dim = Self::DIMENSION;
        let mut out = vec![0.0_f32; seqs.len() * dim];
        for (i, row) in out.chunks_exact_mut(dim).enumerate() {
            let at = (i / count) * dim;
            row.copy_from_slice(&parts[i % count][at..at + dim]);
        }
        Ok(out)
    }

    /// One forward pass over `seqs` (not empty) on the current thread's pool.
    fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<f32>, EncodeError> {
        let batch = PaddedBatch::new(seqs);
        let vectors = self.model.embed(&batch, &self.device)?;
        let data = vectors
            .into_data()
            .convert_dtype(DType::F32)
            .try_into_vec::<f32>()
            .map_err(|e| EncodeError::Backend {
                what: "sentence vectors",
                reason: format!("{e:?}"),
            })?;
        if data.len() != seqs.len() * Self::DIMENSION {
            return Err(EncodeError::Backend {
                what: "sentence vectors",
                reason: format!(
                    "expected {} × {} floats, got {}",
                    seqs.len(),
                    Self::DIMENSION,
                    data.len()
                ),
            });
        }
        Ok(data)
    }
}

impl Encoder for MiniLm {
    fn model_id(&self) -> &ModelId {
        &self.id
    }

    fn dimension(&self) -> usize {
        Self::DIMENSION
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        self.pool.install(|| {
            let ids = texts
                .par_iter()
                .enumerate()
                .map(|(index, text)| self.tokenizer.encode(text, index))
                .collect::<Result<Vec<_>, _>>()?;
            let lengths: Vec<usize> = ids.iter().map(Vec::len).collect();
            let mut out = vec![Vec::new(); texts.len()];
            for members in batch::plan(&lengths, self.batch_size) {
                let seqs: Vec<&[u32]> = members.iter().map(|&i| ids[i].as_slice()).collect();
                let rows = self.run_batch(&seqs)?;
                for (row, &index) in rows.chunks_exact(Self::DIMENSION).zip(&members) {
                    out[index] = row.to_vec();
                }
            }
            Ok(out)
        })
    }
}

fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl memdb::Embedder for MiniLm {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        self.encode(texts)
            .map_err(|e| memdb::EmbedError::Encoder(Box::new(e)))
    }
}
