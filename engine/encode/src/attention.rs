//! Multi-head self-attention as a host kernel for the CPU backend.
//!
//! Owns: `softmax(q·kᵀ / √d) · v` for every head of every sequence of a padded batch, read
//! straight from the fused query/key/value projection and written straight in the layout the
//! output projection reads. On burn's Flex backend this replaces three strided copies, the
//! attention op and a transposing copy; profiles showed Flex's attention at a third of the speed
//! of PyTorch's on these shapes (tiny per-head products, a scalar `exp` per score).
//!
//! Invariants:
//! - padding is at the end of each sequence, so masking padded keys is the same as stopping at
//!   the sequence's length: real tokens see exactly the real keys, as with the reference's
//!   additive mask (whose `exp` underflows to 0);
//! - the outputs of padded positions are 0 and never read: the feed-forward block works per
//!   token, attention never reads them as keys, and pooling skips them;
//! - inner loops are element-wise over keys or over head dimensions (no float reductions in the
//!   hot loops), so they vectorise without reassociating sums.

use rayon::prelude::*;

use crate::activation::{self, madd};

/// Shapes of one call: `rows` sequences padded to `len` tokens, `heads` heads of `head_dim`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) rows: usize,
    pub(crate) len: usize,
    pub(crate) heads: usize,
    pub(crate) head_dim: usize,
}

impl Shape {
    fn hidden(&self) -> usize {
        self.heads * self.head_dim
    }
}

/// Writes the attention context `[rows · len, hidden]` into `context` (zeroed by the caller)
/// from `qkv` `[rows · len, 3 · hidden]` (per token: all query heads, then all key heads, then
/// all value heads) and each row's real length.
pub(crate) fn self_attention(qkv: &[f32], lengths: &[usize], shape: Shape, context: &mut [f32]) {
    let hidden = shape.hidden();
    debug_assert_eq!(context.len(), shape.rows * shape.len * hidden);
    debug_assert_eq!(qkv.len(), 3 * context.len());
    debug_assert_eq!(lengths.len(), shape.rows);
    if hidden == 0 || shape.len == 0 {
        return;
    }
    let arch = pulp::Arch::new();
    context
        .par_chunks_mut(shape.len * hidden)
        .zip(qkv.par_chunks(shape.len * 3 * hidden))
        .zip(lengths.par_iter())
        .for_each(|((out, qkv), &length)| {
            arch.dispatch(Sequence {
                qkv,
                length: length.min(shape.len),
                shape,
                out,
            });
        });
}

/// One sequence's attention as a `pulp` operation: `dispatch` runs it inside a function compiled
/// for the widest instruction set the CPU has (AVX-512 or AVX2), where `sequence` is inlined and
/// vectorised at that width.
struct Sequence<'a> {
    qkv: &'a [f32],
    length: usize,
    shape: Shape,
    out: &'a mut [f32],
}

impl pulp::WithSimd for Sequence<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Self {
            qkv,
            length,
            shape,
            out,
        } = self;
        // Head sizes of common BERT models get register-blocked kernels; FMA wherever the
        // instruction set has it (see `activation::madd`).
        match (shape.head_dim, S::IS_SCALAR) {
            (32, false) => blocked::<32, true>(qkv, length, shape, out),
            (32, true) => blocked::<32, false>(qkv, length, shape, out),
            (64, false) => blocked::<64, true>(qkv, length, shape, out),
            (64, true) => blocked::<64, false>(qkv, length, shape, out),
            (_, false) => plain::<true>(qkv, length, shape, out),
            (_, true) => plain::<false>(qkv, length, shape, out),
        }
    }
}

/// Keys per block of scores: one 256-bit vector of `f32`.
const KEYS: usize = 8;
/// Queries per block of scores: independent accumulators that hide the add latency.
const QUERIES: usize = 4;

/// All heads of one sequence with head size `D`: `qkv` `[len, 3 · hidden]`, `out`
/// `[len, hidden]`.
///
/// Scores are computed in `QUERIES × KEYS` tiles from transposed, zero-padded copies of the
/// head's queries and keys (the padding yields scores that are never read); a context row is
/// accumulated in a `[f32; D]` that stays in registers.
#[inline(always)]
fn blocked<const D: usize, const FUSED: bool>(
    qkv: &[f32],
    length: usize,
    shape: Shape,
    out: &mut [f32],
) {
    let hidden = shape.hidden();
    let stride = 3 * hidden;
    let scale = 1.0 / (D as f32).sqrt();
    let lk = length.div_ceil(KEYS) * KEYS;
    let lq = length.div_ceil(QUERIES) * QUERIES;
    let mut keys_t = vec![0.0_f32; D * lk];
    let mut queries_t = vec![0.0_f32; D * lq];
    let mut values = vec![[0.0_f32; D]; length];
    let mut scores = vec![0.0_f32; QUERIES * lk];
    for h in 0..shape.heads {
        let (q_at, k_at, v_at) = (h * D, hidden + h * D, 2 * hidden + h * D);
        for (j, token) in qkv.chunks_exact(stride).take(length).enumerate() {
            for c in 0..D {
                queries_t[c * lq + j] = token[q_at + c] * scale;
                keys_t[c * lk + j] = token[k_at + c];
            }
            values[j].copy_from_slice(&token[v_at..v_at + D]);
        }
        for i0 in (0..length).step_by(QUERIES) {
            for jb in 0..lk / KEYS {
                let mut acc = [[0.0_f32; KEYS]; QUERIES];
                for c in 0..D {
                    let (k_blocks, _) = keys_t[c * lk..(c + 1) * lk].as_chunks::<KEYS>();
                    let (q_blocks, _) = queries_t[c * lq..(c + 1) * lq].as_chunks::<QUERIES>();
                    let (k, q) = (&k_blocks[jb], &q_blocks[i0 / QUERIES]);
                    for (acc, &q) in acc.iter_mut().zip(q) {
                        for (a, &k) in acc.iter_mut().zip(k) {
                            *a = madd::<FUSED>(q, k, *a);
                        }
                    }
                }
                for (a, acc) in acc.iter().enumerate() {
                    scores[a * lk + jb * KEYS..a * lk + (jb + 1) * KEYS].copy_from_slice(acc);
                }
            }
            for a in 0..QUERIES.min(length - i0) {
                let i = i0 + a;
                let row = &mut scores[a * lk..a * lk + length];
                let inv = softmax_unnormalised::<FUSED>(row);
                let mut context = [0.0_f32; D];
                for (&p, v) in row.iter().zip(&values) {
                    for (o, &v) in context.iter_mut().zip(v) {
                        *o = madd::<FUSED>(p, v, *o);
                    }
                }
                for (o, c) in out[i * hidden + h * D..i * hidden + (h + 1) * D]
                    .iter_mut()
                    .zip(context)
                {
                    *o = c * inv;
                }
            }
        }
    }
}

/// `exp(x - max)` in place; returns `1 / Σ` so the caller can normalise once per output.
///
/// Maximum and sum run over 8 lanes, combined at the end, so that they vectorise too.
#[inline(always)]
fn softmax_unnormalised<const FUSED: bool>(row: &mut [f32]) -> f32 {
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    let (blocks, tail) = row.as_chunks::<KEYS>();
    let mut lanes = [f32::NEG_INFINITY; KEYS];
    for block in blocks {
        for (m, &x) in lanes.iter_mut().zip(block) {
            *m = larger(*m, x);
        }
    }
    let max = lanes
        .iter()
        .chain(tail)
        .copied()
        .fold(f32::NEG_INFINITY, larger);
    for s in row.iter_mut() {
        *s = activation::exp::<FUSED>(*s - max);
    }
    let (blocks, tail) = row.as_chunks::<KEYS>();
    let mut lanes = [0.0_f32; KEYS];
    for block in blocks {
        for (a, &x) in lanes.iter_mut().zip(block) {
            *a += x;
        }
    }
    1.0 / (lanes.iter().sum::<f32>() + tail.iter().sum::<f32>())
}

/// Any head size: the same computation without register blocking.
#[inline(always)]
fn plain<const FUSED: bool>(qkv: &[f32], length: usize, shape: Shape, out: &mut [f32]) {
    let (hidden, d) = (shape.hidden(), shape.head_dim);
    let stride = 3 * hidden;
    let scale = 1.0 / (d as f32).sqrt();
    // Keys transposed ([d][length]) so a query's scores are one axpy per dimension; values as
    // rows ([length][d]) so a context row is one axpy per key.
    let mut keys_t = vec![0.0_f32; d * length];
    let mut values = vec![0.0_f32; length * d];
    let mut scores = vec![0.0_f32; length];
    for h in 0..shape.heads {
        let (q_at, k_at, v_at) = (h * d, hidden + h * d, 2 * hidden + h * d);
        for j in 0..length {
            let token = &qkv[j * stride..(j + 1) * stride];
            for (c, &k) in token[k_at..k_at + d].iter().enumerate() {
                keys_t[c * length + j] = k;
            }
            values[j * d..(j + 1) * d].copy_from_slice(&token[v_at..v_at + d]);
        }
        for i in 0..length {
            let query = &qkv[i * stride + q_at..i * stride + q_at + d];
            scores.fill(0.0);
            for (c, &q) in query.iter().enumerate() {
                let q = q * scale;
                for (s, &k) in scores.iter_mut().zip(&keys_t[c * length..(c + 1) * length]) {
                    *s = madd::<FUSED>(q, k, *s);
                }
            }
            let inv = softmax_unnormalised::<FUSED>(&mut scores);
            let row = &mut out[i * hidden + h * d..i * hidden + (h + 1) * d];
            for (j, &p) in scores.iter().enumerate() {
                for (o, &v) in row.iter_mut().zip(&values[j * d..(j + 1) * d]) {
                    *o = madd::<FUSED>(p, v, *o);
                }
            }
            for o in row.iter_mut() {
                *o *= inv;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straightforward f64 attention with an explicit mask, as the reference defines it.
    fn reference(qkv: &[f32], lengths: &[usize], shape: Shape) -> Vec<f64> {
        let hidden = shape.hidden();
        let d = shape.head_dim;
        let at = |t: usize, c: usize| f64::from(qkv[t * 3 * hidden + c]);
        let mut out = vec![0.0; shape.rows * shape.len * hidden];
        for (r, &length) in lengths.iter().enumerate() {
            for h in 0..shape.heads {
                for i in 0..length {
                    let ti = r * shape.len + i;
                    let scores: Vec<f64> = (0..shape.len)
                        .map(|j| {
                            if j >= length {
                                return f64::NEG_INFINITY;
                            }
                            let tj = r * shape.len + j;
                            let dot: f64 = (0..d)
                                .map(|c| at(ti, h * d + c) * at(tj, hidden + h * d + c))
                                .sum();
                            dot / (d as f64).sqrt()
                        })
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = exps.iter().sum();
                    for c in 0..d {
                        let tj = |j: usize| r * shape.len + j;
                        out[ti * hidden + h * d + c] = (0..shape.len)
                            .map(|j| exps[j] / sum * at(tj(j), 2 * hidden + h * d + c))
                            .sum();
                    }
                }
            }
        }
        out
    }

    #[test]
    fn plain_kernel_matches_masked_attention_and_zeroes_padding() {
        check(4, 7, &[7, 3, 1]);
    }

    #[test]
    fn blocked_kernels_match_masked_attention_and_zero_padding() {
        // Lengths around the block sizes (4 queries, 8 keys) and the full width.
        check(32, 19, &[19, 9, 8, 1, 4, 5, 17]);
        check(64, 10, &[10, 3]);
    }

    fn check(head_dim: usize, len: usize, lengths: &[usize]) {
        let shape = Shape {
            rows: lengths.len(),
            len,
            heads: 2,
            head_dim,
        };
        let n = shape.rows * shape.len * 3 * shape.hidden();
        // Deterministic values in [-2, 2], large enough to make the softmax uneven.
        let qkv: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 + 13) % 401) as f32 / 100.0 - 2.0)
            .collect();
        let mut ours = vec![0.0_f32; shape.rows * len * shape.hidden()];
        self_attention(&qkv, lengths, shape, &mut ours);
        let expected = reference(&qkv, lengths, shape);
        let hidden = shape.hidden();
        for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
            assert!((f64::from(*a) - b).abs() < 1e-5, "element {i}: {a} vs {b}");
            let (row, pos) = (i / hidden / len, i / hidden % len);
            if pos >= lengths[row] {
                assert_eq!(*a, 0.0, "padded position {pos} of row {row}");
            }
        }
    }
}
