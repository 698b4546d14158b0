//! The compact traversal codes of an [`HnswIndex`](super::HnswIndex): a copy of every row in
//! the [`Traversal`] precision (none for f32, which walks the rows themselves), the scores a
//! walk computes on them (row against row while building, query against row while searching),
//! and the cache prefetch hint both walks issue before scoring a node's neighbours.
//!
//! **Invariants:** codes are a pure function of the f32 rows and the traversal (the encoders
//! are deterministic), so the persisted form does not store them and a loaded index re-encodes
//! the same codes; row `r`'s codes are `dim` values at `r × dim`; only the final rerank's f32
//! scores are reported, so code rounding changes which rows a walk visits, never a hit's score.

use crate::kernels::{F16, dot_f16, dot_f32, dot_i8, encode_f16, quantize_i8, score_i8};

use super::Traversal;

/// Compact copies of the rows, walked instead of the f32 rows.
pub(super) enum Codes {
    F32,
    F16(Vec<F16>),
    I8 { values: Vec<i8>, scales: Vec<f32> },
}

impl Codes {
    pub(super) fn encode(
        traversal: Traversal,
        rows: &[f32],
        stride: usize,
        dim: usize,
        n: usize,
    ) -> Self {
        let row = |r: usize| &rows[r * stride..r * stride + dim];
        match traversal {
            Traversal::F32 => Codes::F32,
            Traversal::F16 => {
                let mut out = vec![F16::ZERO; n * dim];
                for (r, chunk) in out.chunks_exact_mut(dim).enumerate() {
                    encode_f16(row(r), chunk);
                }
                Codes::F16(out)
            }
            Traversal::I8 => {
                let mut values = vec![0i8; n * dim];
                let scales = values
                    .chunks_exact_mut(dim)
                    .enumerate()
                    .map(|(r, chunk)| quantize_i8(row(r), chunk))
                    .collect();
                Codes::I8 { values, scales }
            }
        }
    }

    pub(super) fn bytes(&self) -> usize {
        match self {
            Codes::F32 => 0,
            Codes::F16(v) => v.len() * 2,
            Codes::I8 { values, scales } => values.len() + scales.len() * 4,
        }
    }
}

/// A query encoded like the traversal codes.
pub(super) enum QueryCodes {
    F32(Vec<f32>),
    F16(Vec<F16>),
    I8 { values: Vec<i8>, scale: f32 },
}

/// Row-against-row and query-against-row scores on the traversal codes.
#[derive(Clone, Copy)]
pub(super) struct Space<'a> {
    pub(super) codes: &'a Codes,
    pub(super) rows: &'a [f32],
    pub(super) stride: usize,
    pub(super) dim: usize,
}

impl<'a> Space<'a> {
    #[inline]
    pub(super) fn f32_row(&self, r: u32) -> &'a [f32] {
        let at = r as usize * self.stride;
        &self.rows[at..at + self.dim]
    }

    /// Score of stored row `a` against stored row `b`.
    #[inline]
    pub(super) fn pair(&self, a: u32, b: u32) -> f32 {
        let dim = self.dim;
        let (a, b) = (a as usize, b as usize);
        match self.codes {
            Codes::F32 => dot_f32(self.f32_row(a as u32), self.f32_row(b as u32)),
            Codes::F16(v) => dot_f16(&v[a * dim..(a + 1) * dim], &v[b * dim..(b + 1) * dim]),
            Codes::I8 { values, scales } => score_i8(
                dot_i8(
                    &values[a * dim..(a + 1) * dim],
                    &values[b * dim..(b + 1) * dim],
                ),
                scales[a],
                scales[b],
            ),
        }
    }

    pub(super) fn encode_query(&self, query: &[f32]) -> QueryCodes {
        match self.codes {
            Codes::F32 => QueryCodes::F32(query.to_vec()),
            Codes::F16(_) => {
                let mut out = vec![F16::ZERO; query.len()];
                encode_f16(query, &mut out);
                QueryCodes::F16(out)
            }
            Codes::I8 { .. } => {
                let mut values = vec![0i8; query.len()];
                let scale = quantize_i8(query, &mut values);
                QueryCodes::I8 { values, scale }
            }
        }
    }

    /// Start and length in bytes of row `r`'s codes, for prefetching.
    #[inline]
    pub(super) fn code_span(&self, r: u32) -> (*const u8, usize) {
        let (dim, r) = (self.dim, r as usize);
        match self.codes {
            Codes::F32 => (self.f32_row(r as u32).as_ptr().cast(), dim * 4),
            Codes::F16(v) => (v[r * dim..].as_ptr().cast(), dim * 2),
            Codes::I8 { values, .. } => (values[r * dim..].as_ptr().cast(), dim),
        }
    }
}

/// Hints the CPU to fetch the first cache lines of `len` bytes at `start` (never faults).
#[inline]
pub(super) fn prefetch((start, len): (*const u8, usize)) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // Up to eight cache lines: a whole i8 row of 384 values (six lines) or a layer-0 list
        // (two or three); longer rows get their first 512 bytes and the hardware prefetcher
        // follows the rest.
        for line in 0..len.div_ceil(64).min(8) {
            let at = start.wrapping_add(line * 64);
            #[allow(unsafe_code)]
            // SAFETY: `_mm_prefetch` is only a cache hint: it never faults, whatever the address,
            // and has no effect a program can observe other than timing. SSE, its only
            // requirement, is part of the x86_64 baseline. The test `prefetch_is_a_pure_hint`
            // compares walks with and without prefetching.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}
