//! The BERT encoder of all-MiniLM-L6-v2 in burn, and sentence pooling.
//!
//! Owns: the architecture (embeddings, 6 post-norm transformer layers, exact-erf GELU), the
//! inference form of its weights ([`Bert`]), laid out once from the Hugging Face
//! `model.safetensors` (read by [`crate::checkpoint`]), and the forward pass from padded ids to
//! mean-pooled, L2-normalised sentence vectors.
//!
//! Everything runs as burn tensor operations on the chosen device, except two operations that
//! burn's Flex CPU backend runs slowly (attention and GELU): on the CPU they run as host kernels
//! over the tensors' own memory ([`Kernels::Host`]), on a GPU as burn ops ([`Kernels::Device`]).
//! On the CPU, and where it has the packed i8 kernel, the projections (query/key/value, attention
//! output, intermediate, output) can run in 8 bits instead ([`Projection::Int8`], asked for by
//! `EncoderOptions::int8`): each becomes a `memdb_vectors::QuantizedLinear` and keeps no f32
//! copy. The query/key/value and intermediate projections read a layer norm's output, whose
//! `|γ| + |β|` give the smoothing its input ranges (without it the mean cosine to the f32
//! vectors on LoCoMo's turns was 0.99714, with it 0.99732; the LoCoMo recall difference went
//! from +0.5 to −0.1 points of full-recall R@10).
//!
//! Invariants:
//! - every tensor the encoder uses is read by its checkpoint name, dtype and shape (see
//!   [`Bert::load`]): a missing or misshapen tensor is an error, never a random weight;
//! - padded positions never influence a real token: they are masked out of attention as keys and
//!   excluded from the mean; what they compute for themselves is discarded;
//! - token type ids are all 0 and positions are `0..len`, as in the reference;
//! - an 8-bit projection quantizes each token from its own activations only, so padding and
//!   batch composition change no real token's result there either.

use std::path::Path;

use burn::tensor::activation::gelu;
use burn::tensor::module::{attention as device_attention, layer_norm, linear};
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use crate::checkpoint::Checkpoint;
use crate::error::EncodeError;
use crate::{activation, attention};

/// Shape of a BERT checkpoint; [`BertConfig::MINILM_L6`] is the only one shipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BertConfig {
    pub(crate) vocab: usize,
    pub(crate) hidden: usize,
    pub(crate) layers: usize,
    pub(crate) heads: usize,
    pub(crate) intermediate: usize,
    pub(crate) max_positions: usize,
    pub(crate) type_vocab: usize,
}

impl BertConfig {
    /// all-MiniLM-L6-v2 (its `config.json`).
    pub(crate) const MINILM_L6: Self = Self {
        vocab: 30_522,
        hidden: 384,
        layers: 6,
        heads: 12,
        intermediate: 1536,
        max_positions: 512,
        type_vocab: 2,
    };

    /// BERT's layer-norm epsilon (`layer_norm_eps` in `config.json`).
    const LAYER_NORM_EPS: f64 = 1e-12;
}

/// A batch of token ids padded to one length, ready for [`Bert::embed`].
pub(crate) struct PaddedBatch {
    /// Row-major `[rows, len]` ids, `[PAD]` (0) after each row's end.
    ids: Vec<i32>,
    /// Row-major `[rows, len]`, `true` where the id is a real token.
    mask: Vec<bool>,
    /// Real tokens per row: the padding of row `r` starts at `lengths[r]`.
    lengths: Vec<usize>,
    rows: usize,
    len: usize,
}

impl PaddedBatch {
    /// Pads `seqs` to the longest of them. `seqs` must not be empty, nor any of its members.
    pub(crate) fn new(seqs: &[&[u32]]) -> Self {
        let rows = seqs.len();
        let len = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut ids = vec![0_i32; rows * len];
        let mut mask = vec![false; rows * len];
        for (r, seq) in seqs.iter().enumerate() {
            for (c, &id) in seq.iter().enumerate() {
                // Vocabulary ids are < 30,522, far inside i32.
                ids[r * len + c] = i32::try_from(id).unwrap_or(i32::MAX);
                mask[r * len + c] = true;
            }
        }
        Self {
            ids,
            mask,
            lengths: seqs.iter().map(|s| s.len()).collect(),
            rows,
            len,
        }
    }
}

/// Where the two operations that burn's Flex backend runs slowly are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernels {
    /// burn's `attention` and `gelu` ops, on the device (GPU backends).
    #[cfg_attr(
        not(feature = "cuda"),
        allow(dead_code, reason = "only GPU backends use it")
    )]
    Device,
    /// [`attention::self_attention`] and [`activation::gelu_in_place`] on the host, over the
    /// tensors' own memory (Flex keeps tensors in host memory, so nothing is transferred).
    Host,
}

/// The encoder in inference form: the checkpoint's tensors, rearranged for speed.
///
/// Differences from the checkpoint's layout, all exact: the query, key and value projections are
/// concatenated into one `[hidden, 3·hidden]` matrix (one matrix product instead of three), and
/// every projection runs on `[tokens, hidden]` matrices with batch and position folded together.
pub(crate) struct Bert {
    word_embeddings: Tensor<2>,
    position_embeddings: Tensor<2>,
    token_type_0: Tensor<2>,
    embeddings_norm: Norm,
    layers: Vec<LayerWeights>,
    heads: usize,
    kernels: Kernels,
}

struct Dense {
    weight: Tensor<2>,
    bias: Tensor<1>,
}

/// A projection of the model: f32 (the published weights), or the same layer in 8-bit
/// integers, which then holds no f32 copy of its weights.
enum Projection {
    /// Boxed: a burn tensor pair is several times the 8-bit layer's handle.
    F32(Box<Dense>),
    Int8(memdb_vectors::QuantizedLinear),
}

impl Projection {
    fn forward(&self, x: Tensor<2>) -> Result<Tensor<2>, EncodeError> {
        Ok(self.forward_keeping(x)?.0)
    }

    /// The layer's output, and `x` handed back (the residual connection adds it later): the
    /// 8-bit layer reads `x`'s buffer in place, where a clone kept for the residual would make
    /// taking the buffer a copy.
    fn forward_keeping(&self, x: Tensor<2>) -> Result<(Tensor<2>, Tensor<2>), EncodeError> {
        let layer = match self {
            Projection::F32(dense) => {
                let out = linear(x.clone(), dense.weight.clone(), Some(dense.bias.clone()));
                return Ok((out, x));
            }
            Projection::Int8(layer) => layer,
        };
        let [tokens, _] = x.dims();
        let device = x.device();
        let values = x.into_data();
        let outputs = layer.outputs();
        let mut out = TensorData::new(vec![0f32; tokens * outputs], [tokens, outputs]);
        layer
            .forward(
                host_slice(&values, "dense layer input")?,
                host_slice_mut(&mut out, "dense layer output")?,
            )
            .map_err(|e| EncodeError::Backend {
                what: "i8 dense layer",
                reason: e.to_string(),
            })?;
        Ok((
            Tensor::from_data(out, &device),
            Tensor::from_data(values, &device),
        ))
    }
}

/// Reads the projections of a checkpoint: each in its 8-bit form where asked for and the CPU
/// runs the packed i8 kernel, else in f32.
struct ProjectionReader<'a> {
    checkpoint: &'a Checkpoint,
    device: &'a Device,
    int8: bool,
    /// The weights being read, `outputs × inputs` as the checkpoint stores them; reused from
    /// one projection to the next, so an 8-bit layer's f32 weights need no buffer of their own.
    weight: Vec<f32>,
}

impl ProjectionReader<'_> {
    /// One projection made of the layers `prefixes` (each `inputs → outputs`, with a `.weight`
    /// and a `.bias`), concatenated along their outputs: the query, key and value projections
    /// become one matrix product. `input` is the layer norm whose output the projection
    /// reads, if one does: its parameters scale each input's range, which smoothing moves into
    /// the 8-bit weights.
    fn read(
        &mut self,
        prefixes: &[&str],
        inputs: usize,
        outputs: usize,
        input: Option<&Norm>,
    ) -> Result<Projection, EncodeError> {
        let total = prefixes.len() * outputs;
        self.weight.resize(total * inputs, 0.0);
        let mut bias = vec![0f32; total];
        let checkpoint = self.checkpoint;
        for ((prefix, weight), bias) in prefixes
            .iter()
            .zip(self.weight.chunks_exact_mut(outputs * inputs))
            .zip(bias.chunks_exact_mut(outputs))
        {
            checkpoint.read_into(&format!("{prefix}.weight"), &[outputs, inputs], weight)?;
            checkpoint.read_into(&format!("{prefix}.bias"), &[outputs], bias)?;
        }
        if self.int8 {
            let ranges = input.map(Norm::ranges).transpose()?;
            if let Some(layer) = memdb_vectors::QuantizedLinear::new(
                &self.weight,
                &bias,
                inputs,
                total,
                ranges.as_deref(),
            ) {
                return Ok(Projection::Int8(layer));
            }
        }
        // burn's `linear` takes the weight as `inputs × outputs`.
        let weight = transposed(&self.weight, total, inputs);
        Ok(Projection::F32(Box::new(Dense {
            weight: Tensor::from_data(TensorData::new(weight, [inputs, total]), self.device),
            bias: Tensor::from_data(TensorData::new(bias, [total]), self.device),
        })))
    }
}

/// `matrix` (`rows × cols`, row-major) transposed, in square tiles that stay in cache.
fn transposed(matrix: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const TILE: usize = 32;
    let mut out = vec![0f32; rows * cols];
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                for c in c0..(c0 + TILE).min(cols) {
                    out[c * rows + r] = matrix[r * cols + c];
                }
            }
        }
    }
    out
}

struct Norm {
    gamma: Tensor<1>,
    beta: Option<Tensor<1>>,
}

impl Norm {
    /// A scale of each output channel's magnitude, `|γ_j| + |β_j|`: the normalized values it
    /// multiplies are of order one.
    fn ranges(&self) -> Result<Vec<f32>, EncodeError> {
        let gamma = self.gamma.clone().into_data();
        let gamma = host_slice(&gamma, "layer norm scale")?;
        let beta = self.beta.as_ref().map(|b| b.clone().into_data());
        let beta = match &beta {
            Some(b) => host_slice(b, "layer norm shift")?,
            None => &[],
        };
        Ok(gamma
            .iter()
            .enumerate()
            .map(|(j, g)| g.abs() + beta.get(j).map_or(0.0, |b| b.abs()))
            .collect())
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        layer_norm(
            x,
            self.gamma.clone(),
            self.beta.clone(),
            BertConfig::LAYER_NORM_EPS,
        )
    }
}

struct LayerWeights {
    qkv: Projection,
    attention_out: Projection,
    attention_norm: Norm,
    intermediate: Projection,
    output: Projection,
    output_norm: Norm,
}

impl Bert {
    /// The encoder of `config` on `device`, its weights read from the safetensors checkpoint at
    /// `path`, each by its name in the Hugging Face checkpoint with its dtype and shape checked.
    /// With `int8` (and [`Kernels::Host`]), each projection is quantized as it is read, where
    /// the CPU has the packed i8 kernel, and its f32 weights are never kept.
    pub(crate) fn load(
        config: BertConfig,
        path: &Path,
        device: &Device,
        kernels: Kernels,
        int8: bool,
    ) -> Result<Self, EncodeError> {
        let checkpoint = Checkpoint::open(path)?;
        let hidden = config.hidden;
        let vector = |name: &str, len: usize| -> Result<Tensor<1>, EncodeError> {
            let values = checkpoint.read(name, &[len])?;
            Ok(Tensor::from_data(TensorData::new(values, [len]), device))
        };
        let matrix = |name: &str, rows: usize| -> Result<Tensor<2>, EncodeError> {
            let values = checkpoint.read(name, &[rows, hidden])?;
            Ok(Tensor::from_data(
                TensorData::new(values, [rows, hidden]),
                device,
            ))
        };
        let norm = |prefix: &str| -> Result<Norm, EncodeError> {
            Ok(Norm {
                gamma: vector(&format!("{prefix}.LayerNorm.weight"), hidden)?,
                beta: Some(vector(&format!("{prefix}.LayerNorm.bias"), hidden)?),
            })
        };
        let mut projections = ProjectionReader {
            checkpoint: &checkpoint,
            device,
            int8: int8 && kernels == Kernels::Host,
            weight: Vec::new(),
        };
        let embeddings_norm = norm("embeddings")?;
        let mut layers: Vec<LayerWeights> = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let prefix = format!("encoder.layer.{i}");
            // The query/key/value projection reads the previous layer's output norm (the
            // embeddings' norm first) and the intermediate one the attention's norm: their
            // ranges smooth the 8-bit layers.
            let previous = layers.last().map_or(&embeddings_norm, |l| &l.output_norm);
            let qkv = projections.read(
                &[
                    &format!("{prefix}.attention.self.query"),
                    &format!("{prefix}.attention.self.key"),
                    &format!("{prefix}.attention.self.value"),
                ],
                hidden,
                hidden,
                Some(previous),
            )?;
            let attention_out = projections.read(
                &[&format!("{prefix}.attention.output.dense")],
                hidden,
                hidden,
                None,
            )?;
            let attention_norm = norm(&format!("{prefix}.attention.output"))?;
            let intermediate = projections.read(
                &[&format!("{prefix}.intermediate.dense")],
                hidden,
                config.intermediate,
                Some(&attention_norm),
            )?;
            let output = projections.read(
                &[&format!("{prefix}.output.dense")],
                config.intermediate,
                hidden,
                None,
            )?;
            layers.push(LayerWeights {
                qkv,
                attention_out,
                attention_norm,
                intermediate,
                output,
                output_norm: norm(&format!("{prefix}.output"))?,
            });
        }
        let mut token_types = checkpoint.read(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab, hidden],
        )?;
        // Token type ids are all 0: only the first row is used.
        token_types.truncate(hidden);
        Ok(Self {
            word_embeddings: matrix("embeddings.word_embeddings.weight", config.vocab)?,
            position_embeddings: matrix(
                "embeddings.position_embeddings.weight",
                config.max_positions,
            )?,
            token_type_0: Tensor::from_data(TensorData::new(token_types, [1, hidden]), device),
            embeddings_norm,
            layers,
            heads: config.heads,
            kernels,
        })
    }

    /// Whether the projections run in 8-bit integers.
    pub(crate) fn int8(&self) -> bool {
        !self.layers.is_empty()
            && self
                .layers
                .iter()
                .all(|l| matches!(l.qkv, Projection::Int8(_)))
    }

    /// Sentence vectors for a padded batch: `[rows, hidden]`, each row unit-length.
    pub(crate) fn embed(
        &self,
        batch: &PaddedBatch,
        device: &Device,
    ) -> Result<Tensor<2>, EncodeError> {
        let (rows, len) = (batch.rows, batch.len);
        let ids =
            Tensor::<1, Int>::from_data(TensorData::new(batch.ids.clone(), [rows * len]), device);
        let keep =
            Tensor::<2, Bool>::from_data(TensorData::new(batch.mask.clone(), [rows, len]), device);

        let words = self.word_embeddings.clone().select(0, ids);
        let [tokens, hidden] = words.dims();
        let positions = self.position_embeddings.clone().narrow(0, 0, len);
        let x = (words.reshape([rows, len, hidden]) + positions.unsqueeze_dim::<3>(0))
            .reshape([tokens, hidden])
            + self.token_type_0.clone();
        let mut x = self.embeddings_norm.forward(x);

        // burn's `attention` masks where the mask is true: padded keys. One [len, len] tile per
        // row, shared by the heads (a leading dim of 1 is broadcast without a copy).
        let pad_keys = match self.kernels {
            Kernels::Device => Some(
                keep.clone()
                    .bool_not()
                    .reshape([rows, 1, 1, len])
                    .expand([rows, 1, len, len]),
            ),
            Kernels::Host => None,
        };
        for layer in &self.layers {
            x = self.layer(layer, x, pad_keys.as_ref(), batch)?;
        }
        Ok(mean_pool_normalise(x.reshape([rows, len, hidden]), keep))
    }

    /// One post-norm transformer layer on `x` `[rows · len, hidden]`.
    fn layer(
        &self,
        w: &LayerWeights,
        x: Tensor<2>,
        pad_keys: Option<&Tensor<4, Bool>>,
        batch: &PaddedBatch,
    ) -> Result<Tensor<2>, EncodeError> {
        let [tokens, hidden] = x.dims();
        let (rows, len, heads) = (batch.rows, batch.len, self.heads);
        let head_dim = hidden / heads;
        let (qkv, x) = w.qkv.forward_keeping(x)?;
        let context = match pad_keys {
            None => {
                let device = qkv.device();
                let qkv = qkv.into_data();
                // An output buffer from the backend, so that handing it back is not a copy.
                let mut context = Tensor::<2>::zeros([tokens, hidden], &device).into_data();
                let shape = attention::Shape {
                    rows,
                    len,
                    heads,
                    head_dim,
                };
                attention::self_attention(
                    host_slice(&qkv, "query/key/value projections")?,
                    &batch.lengths,
                    shape,
                    host_slice_mut(&mut context, "attention context")?,
                );
                Tensor::from_data(context, &device)
            }
            Some(pad_keys) => {
                // [tokens, 3·hidden] → [rows, 3·heads, len, head_dim]: q, k, v are head ranges.
                let qkv = qkv
                    .reshape([rows, len, 3 * heads, head_dim])
                    .swap_dims(1, 2);
                let q = qkv.clone().narrow(1, 0, heads);
                let k = qkv.clone().narrow(1, heads, heads);
                let v = qkv.narrow(1, 2 * heads, heads);
                // Default scale is 1/sqrt(head_dim), as in BERT.
                let options = AttentionModuleOptions::default();
                device_attention(q, k, v, Some(pad_keys.clone()), None, options)
                    .swap_dims(1, 2)
                    .reshape([tokens, hidden])
            }
        };
        let x = w
            .attention_norm
            .forward(w.attention_out.forward(context)? + x);
        let (inner, x) = w.intermediate.forward_keeping(x)?;
        let inner = self.activate(inner)?;
        Ok(w.output_norm.forward(w.output.forward(inner)? + x))
    }

    fn activate(&self, x: Tensor<2>) -> Result<Tensor<2>, EncodeError> {
        match self.kernels {
            Kernels::Device => Ok(gelu(x)),
            Kernels::Host => {
                let device = x.device();
                let mut values = x.into_data();
                activation::gelu_in_place(host_slice_mut(&mut values, "feed-forward activations")?);
                Ok(Tensor::from_data(values, &device))
            }
        }
    }
}

// Flex keeps tensors in host memory and the callers pass tensors nothing else holds, so
// `into_data` hands over the backend's buffer and `from_data` takes it back, both without a
// copy; these two only view it as `f32`.

fn host_slice<'a>(data: &'a TensorData, what: &'static str) -> Result<&'a [f32], EncodeError> {
    data.as_slice::<f32>().map_err(|e| EncodeError::Backend {
        what,
        reason: format!("{e:?}"),
    })
}

fn host_slice_mut<'a>(
    data: &'a mut TensorData,
    what: &'static str,
) -> Result<&'a mut [f32], EncodeError> {
    data.as_mut_slice::<f32>()
        .map_err(|e| EncodeError::Backend {
            what,
            reason: format!("{e:?}"),
        })
}

/// Mean over real tokens (`[CLS]` and `[SEP]` included, as in sentence-transformers), then L2
/// normalisation with the same epsilons as the reference (count ≥ 1e-9, norm ≥ 1e-12).
fn mean_pool_normalise(hidden: Tensor<3>, keep: Tensor<2, Bool>) -> Tensor<2> {
    let [rows, _, dim] = hidden.dims();
    let weights = keep.float().unsqueeze_dim::<3>(2);
    let counts = weights.clone().sum_dim(1).clamp_min(1e-9);
    let mean = (hidden * weights).sum_dim(1) / counts;
    let norm = mean
        .clone()
        .powi_scalar(2)
        .sum_dim(2)
        .sqrt()
        .clamp_min(1e-12);
    (mean / norm).reshape([rows, dim])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::tests::{f32_bytes, file_bytes};

    /// A BERT small enough to write in a test, with every kind of tensor MiniLM has.
    const TINY: BertConfig = BertConfig {
        vocab: 12,
        hidden: 64,
        layers: 2,
        heads: 4,
        intermediate: 128,
        max_positions: 16,
        type_vocab: 2,
    };

    /// Every tensor [`Bert::load`] reads for `config`, by its name in a Hugging Face BERT
    /// checkpoint (written here from the checkpoint's naming, not from the loader's code).
    fn checkpoint_tensors(config: BertConfig) -> Vec<(String, Vec<usize>)> {
        let h = config.hidden;
        let mut out: Vec<(String, Vec<usize>)> = vec![
            (
                "embeddings.word_embeddings.weight".into(),
                vec![config.vocab, h],
            ),
            (
                "embeddings.position_embeddings.weight".into(),
                vec![config.max_positions, h],
            ),
            (
                "embeddings.token_type_embeddings.weight".into(),
                vec![config.type_vocab, h],
            ),
            ("embeddings.LayerNorm.weight".into(), vec![h]),
            ("embeddings.LayerNorm.bias".into(), vec![h]),
        ];
        for i in 0..config.layers {
            let layer = format!("encoder.layer.{i}");
            let i = config.intermediate;
            for (name, outputs, inputs) in [
                ("attention.self.query", h, h),
                ("attention.self.key", h, h),
                ("attention.self.value", h, h),
                ("attention.output.dense", h, h),
                ("intermediate.dense", i, h),
                ("output.dense", h, i),
            ] {
                out.push((format!("{layer}.{name}.weight"), vec![outputs, inputs]));
                out.push((format!("{layer}.{name}.bias"), vec![outputs]));
            }
            for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
                out.push((format!("{layer}.{norm}.weight"), vec![h]));
                out.push((format!("{layer}.{norm}.bias"), vec![h]));
            }
        }
        out
    }

    /// Writes `tensors` with deterministic values (layer-norm scales near 1, the rest small)
    /// as a checkpoint in `dir`, plus an unused `I64` buffer as the real file has.
    fn write_checkpoint(dir: &Path, tensors: &[(String, Vec<usize>)]) -> std::path::PathBuf {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2
        };
        let data: Vec<Vec<u8>> = tensors
            .iter()
            .map(|(name, shape)| {
                let scale = if name.ends_with("LayerNorm.weight") {
                    1.0
                } else {
                    0.0
                };
                let values: Vec<f32> = (0..shape.iter().product::<usize>())
                    .map(|_| scale + next())
                    .collect();
                f32_bytes(&values)
            })
            .collect();
        let mut listed: Vec<(&str, &str, &[usize], &[u8])> =
            vec![("embeddings.position_ids", "I64", &[1, 2], &[0; 16])];
        for ((name, shape), bytes) in tensors.iter().zip(&data) {
            listed.push((name, "F32", shape, bytes));
        }
        let path = dir.join("model.safetensors");
        std::fs::write(&path, file_bytes(&listed)).unwrap();
        path
    }

    fn load(path: &Path, int8: bool) -> Result<Bert, EncodeError> {
        Bert::load(TINY, path, &Device::flex(), Kernels::Host, int8)
    }

    fn vectors(model: &Bert) -> Vec<f32> {
        let batch = PaddedBatch::new(&[&[1, 5, 7, 2][..], &[1, 9, 2][..]]);
        let out = model.embed(&batch, &Device::flex()).unwrap();
        out.into_data().try_to_vec::<f32>().unwrap()
    }

    /// A checkpoint without any one of the tensors the model uses is refused, naming it.
    #[test]
    fn every_tensor_is_required_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let tensors = checkpoint_tensors(TINY);
        assert!(load(&write_checkpoint(dir.path(), &tensors), false).is_ok());
        for missing in 0..tensors.len() {
            let mut without = tensors.clone();
            let (name, _) = without.remove(missing);
            let path = write_checkpoint(dir.path(), &without);
            let message = match load(&path, true) {
                Ok(_) => panic!("loaded without {name}"),
                Err(e) => e.to_string(),
            };
            assert!(message.contains(&format!("tensor {name}:")), "{message}");
        }
    }

    /// A tensor of another shape than the architecture's is refused, not reinterpreted.
    #[test]
    fn a_misshapen_tensor_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut tensors = checkpoint_tensors(TINY);
        let query = tensors
            .iter_mut()
            .find(|(name, _)| name == "encoder.layer.1.attention.self.query.weight")
            .unwrap();
        query.1 = vec![TINY.hidden / 2, TINY.hidden * 2];
        let message = match load(&write_checkpoint(dir.path(), &tensors), false) {
            Ok(_) => panic!("loaded a misshapen query projection"),
            Err(e) => e.to_string(),
        };
        assert!(message.contains("shape [32, 128]"), "{message}");
    }

    /// The same checkpoint loaded with f32 projections and with 8-bit ones (where this CPU
    /// has the kernel) gives unit vectors that agree: the two paths read the same weights in
    /// the same layout (a transposed or misplaced query, key or value block would not agree).
    #[test]
    fn the_f32_and_8_bit_loads_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_checkpoint(dir.path(), &checkpoint_tensors(TINY));
        let exact = load(&path, false).unwrap();
        let quantized = load(&path, true).unwrap();
        assert!(!exact.int8());
        let (a, b) = (vectors(&exact), vectors(&quantized));
        for (row_a, row_b) in a.chunks_exact(TINY.hidden).zip(b.chunks_exact(TINY.hidden)) {
            let dot: f32 = row_a.iter().zip(row_b).map(|(x, y)| x * y).sum();
            let norm: f32 = row_a.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
            assert!(dot > 0.99, "cosine {dot} (8-bit: {})", quantized.int8());
        }
    }
}
