//! Dot-product kernels for the stored precisions, their scalar references, and the encoders
//! that turn an f32 vector into a stored row.
//!
//! The SIMD kernels are simsimd's (`SpatialSimilarity::dot`, which picks the best backend for
//! the CPU once, at the first call). Each has a plain scalar reference here, and the tests at the
//! bottom check one against the other on random lengths (0, 1, 383, 384, 385, ...) and unaligned
//! slices.
//!
//! **i8 is scalar quantization with one scale per vector**: a row x is stored as
//! `q_i = round(x_i / s_x)` with `s_x = max_i |x_i| / 127`, so `x ≈ s_x·q` and
//! `dot(a, x) ≈ s_a·s_x·Σ a_i q_i`, an exact integer dot (simsimd's VNNI / `pmaddubsw` kernels)
//! followed by one multiply per row. The scale is per vector rather than per block because
//! (1) every vector then uses the full 8-bit range: embeddings differ in their largest component,
//! and a block-wide scale is set by the block's most extreme vector, wasting bits on the rest;
//! (2) a row's bytes depend on that row alone, so compaction can drop, move or append rows
//! without re-quantizing its neighbours; (3) the cost is 4 bytes per row (1% at d = 384).
//! Per-dimension scales would cost nothing in space but break the integer dot product (each
//! product would need its own multiply). The quantizer never emits -128, so values are
//! symmetric.
//!
//! **f16** rows are IEEE binary16 bits (converted with the `half` crate, round to nearest even),
//! scored by simsimd's f16 kernel, which widens to f32 before multiplying.
//!
//! The batched scan does not use these pair kernels: it scores a tile of queries against a block
//! of rows as one matrix product (`matmul`).

use std::ops::Range;

use simsimd::SpatialSimilarity;

use crate::topk::TopK;

/// simsimd's half-precision type: `#[repr(transparent)]` over the IEEE binary16 bits.
pub(crate) type F16 = simsimd::f16;

/// The element type of stored vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum Precision {
    /// 32-bit IEEE floats, 4 bytes per value.
    F32 = 1,
    /// 16-bit IEEE floats, 2 bytes per value.
    F16 = 2,
    /// 8-bit integers with one f32 scale per vector, 1 byte per value.
    I8 = 3,
    /// 4-bit integers with one f32 scale per vector, two values per byte (`i4`; block format
    /// 12 and later).
    I4 = 4,
}

impl Precision {
    /// The code stored in a block header (and in the store's catalog): 1 f32, 2 f16, 3 i8,
    /// 4 i4.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The precision a header code names, if any.
    pub fn try_from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::F32),
            2 => Some(Self::F16),
            3 => Some(Self::I8),
            4 => Some(Self::I4),
            _ => None,
        }
    }

    /// Bits per stored value.
    pub fn bits_per_value(self) -> usize {
        match self {
            Self::F32 => 32,
            Self::F16 => 16,
            Self::I8 => 8,
            Self::I4 => 4,
        }
    }

    /// Bytes of one stored row of `dim` values, before its padding (i4: two values per byte).
    pub fn row_bytes(self, dim: usize) -> usize {
        (dim * self.bits_per_value()).div_ceil(8)
    }

    /// Whether rows carry a per-row scale (the integer precisions).
    pub fn scaled(self) -> bool {
        matches!(self, Self::I8 | Self::I4)
    }

    /// The coarser of the two.
    pub fn coarsest(self, other: Precision) -> Precision {
        if other.bits_per_value() < self.bits_per_value() {
            other
        } else {
            self
        }
    }

    /// The precision named `f32`, `f16`, `i8` or `i4`.
    pub fn from_name(name: &str) -> Option<Precision> {
        match name {
            "f32" => Some(Self::F32),
            "f16" => Some(Self::F16),
            "i8" => Some(Self::I8),
            "i4" => Some(Self::I4),
            _ => None,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::I8 => "i8",
            Self::I4 => "i4",
        })
    }
}

/// Dot product of two f32 vectors of equal length: the AVX-512 kernel below where the CPU has
/// it, else simsimd's.
///
/// Slices of different lengths are a caller bug; they score NaN rather than panic.
#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if a.len() == b.len() && has_avx512f() {
        #[allow(unsafe_code)]
        // SAFETY: `dot_f32_avx512` only requires AVX-512 F, which `has_avx512f` has just checked
        // at run time (std's cached CPUID detection).
        return unsafe { dot_f32_avx512(a, b) };
    }
    dot_f32_simsimd(a, b)
}

/// Offers rows `rows` of a row-major f32 block to `top`, each scored exactly as [`dot_f32`]
/// scores it: row `r` is `vectors[r * stride..r * stride + query.len()]`. The result equals
/// pushing every row's `dot_f32` score in turn (same kernel, same heap order), so a scan and a
/// row-by-row lookup agree to the bit. Rows past the end of `vectors` score NaN (a caller bug,
/// never a panic).
///
/// Why it exists: a `#[target_feature]` kernel cannot be inlined into a caller without the
/// feature, so scoring a million rows one [`dot_f32`] call at a time pays a call and a feature
/// check per row. Here the loop runs inside the AVX-512 function with the kernel inlined, and a
/// row that scores below the heap's floor (nearly all of them, once the heap is full) costs one
/// compare: the scan keeps issuing loads instead of stopping for heap work between rows, which
/// is what a memory-bound scan needs.
pub(crate) fn top_f32_rows(
    query: &[f32],
    vectors: &[f32],
    stride: usize,
    rows: Range<usize>,
    top: &mut TopK,
) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        #[allow(unsafe_code)]
        // SAFETY: `top_f32_rows_avx512` only requires AVX-512 F, checked just now at run time.
        unsafe {
            top_f32_rows_avx512(query, vectors, stride, rows, top)
        };
        return;
    }
    offer_rows(rows, top, |r| {
        row(vectors, stride, r, query.len()).map_or(f32::NAN, |v| dot_f32_simsimd(query, v))
    });
}

/// Pushes `score(r)` for each row `r` into `top`, skipping the push where the score is below the
/// heap's floor (a NaN score is never skipped, so the heap's total order still places it).
#[inline(always)]
fn offer_rows(rows: Range<usize>, top: &mut TopK, mut score: impl FnMut(usize) -> f32) {
    let mut floor = top.floor();
    for r in rows {
        let s = score(r);
        if TopK::may_enter(s, floor) {
            top.push(s, r as u32);
            floor = top.floor();
        }
    }
}

/// Row `r` of a row-major block, if it lies inside it.
#[inline]
fn row(vectors: &[f32], stride: usize, r: usize, dim: usize) -> Option<&[f32]> {
    let at = r.checked_mul(stride)?;
    vectors.get(at..at.checked_add(dim)?)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn top_f32_rows_avx512(
    query: &[f32],
    vectors: &[f32],
    stride: usize,
    rows: Range<usize>,
    top: &mut TopK,
) {
    // Software prefetch a few rows ahead was measured and did not help (15.2 vs 16.2 QPS at
    // 1M × 384): the hardware prefetcher already follows this sequential stream.
    offer_rows(rows, top, |r| match row(vectors, stride, r, query.len()) {
        Some(v) => dot_f32_avx512(query, v),
        None => f32::NAN,
    });
}

/// simsimd's f32 dot product.
#[inline]
pub(crate) fn dot_f32_simsimd(a: &[f32], b: &[f32]) -> f32 {
    f32::dot(a, b).map_or(f32::NAN, |d| d as f32)
}

/// Whether this CPU runs [`dot_f32_avx512`].
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512f() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// `Σ a_i·b_i` over the common length of `a` and `b`, in f32 with four independent AVX-512
/// accumulators.
///
/// simsimd's AVX-512 kernel keeps one accumulator, so each of its fused multiply-adds waits for
/// the previous one (4 cycles): 24 in a chain at d = 384. A flat scan scores a million rows per
/// query, and that chain, not memory, capped it below faiss's single-query rate (16.5 against
/// 19.0 QPS at 1M × 384 in the `vectors` bench). Four chains of six hide the latency. The sum
/// order differs from simsimd's, so scores differ in the last bits (the differential test bounds
/// both against an f64 reference).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn dot_f32_avx512(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{
        _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_maskz_loadu_ps,
        _mm512_reduce_add_ps, _mm512_setzero_ps,
    };
    let len = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut at = 0;
    while at + 64 <= len {
        for (lane, sum) in acc.iter_mut().enumerate() {
            let i = at + lane * 16;
            #[allow(unsafe_code)]
            // SAFETY: `i + 16 <= at + 64 <= len`, and `len` is at most either slice's length, so
            // both 16-float unaligned loads read inside the slices.
            let (va, vb) = unsafe { (_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i))) };
            *sum = _mm512_fmadd_ps(va, vb, *sum);
        }
        at += 64;
    }
    let mut lane = 0;
    while at < len {
        let take = (len - at).min(16);
        let mask = ((1u32 << take) - 1) as u16;
        #[allow(unsafe_code)]
        // SAFETY: the mask enables only lanes `at..at + take`, inside both slices; masked loads
        // do not touch (or fault on) disabled lanes.
        let (va, vb) = unsafe {
            (
                _mm512_maskz_loadu_ps(mask, pa.add(at)),
                _mm512_maskz_loadu_ps(mask, pb.add(at)),
            )
        };
        acc[lane] = _mm512_fmadd_ps(va, vb, acc[lane]);
        lane = (lane + 1) % 4;
        at += take;
    }
    _mm512_reduce_add_ps(_mm512_add_ps(
        _mm512_add_ps(acc[0], acc[1]),
        _mm512_add_ps(acc[2], acc[3]),
    ))
}

/// Dot product of two f16 vectors of equal length, accumulated in f32 or wider: the AVX-512
/// kernel below where the CPU has AVX-512, else simsimd's.
///
/// Not simsimd's on AVX-512 machines: on a CPU with AVX-512 FP16 (Sapphire Rapids) simsimd
/// multiplies and accumulates in f16, off from the f64 reference by far more than rounding the
/// inputs (−0.21631 against −0.21628 for one pair of values), so a block's scores would depend on
/// the machine that scans it.
#[inline]
pub(crate) fn dot_f16(a: &[F16], b: &[F16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        #[allow(unsafe_code)]
        // SAFETY: `dot_f16_avx512` only requires AVX-512 F, which `has_avx512f` has just
        // checked at run time (std's cached CPUID detection).
        return unsafe { dot_f16_avx512(a, b) };
    }
    dot_f16_simsimd(a, b)
}

/// simsimd's f16 dot product.
#[inline]
pub(crate) fn dot_f16_simsimd(a: &[F16], b: &[F16]) -> f32 {
    F16::dot(a, b).map_or(f32::NAN, |d| d as f32)
}

/// `Σ a_i·b_i` over the common length of `a` and `b`: each 16 halves widened to f32 exactly
/// (`vcvtph2ps`), multiplied and accumulated in f32 with two independent accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn dot_f16_avx512(a: &[F16], b: &[F16]) -> f32 {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm512_add_ps, _mm512_cvtph_ps, _mm512_fmadd_ps,
        _mm512_reduce_add_ps, _mm512_setzero_ps,
    };
    let len = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 2];
    let mut at = 0;
    while at + 32 <= len {
        for (lane, sum) in acc.iter_mut().enumerate() {
            let i = at + lane * 16;
            #[allow(unsafe_code)]
            // SAFETY: `i + 16 <= at + 32 <= len`, at most either slice's length, so both
            // 32-byte unaligned loads (16 halves, `F16` is a transparent u16) read inside the
            // slices.
            let (va, vb) = unsafe {
                (
                    _mm512_cvtph_ps(_mm256_loadu_si256(pa.add(i).cast::<__m256i>())),
                    _mm512_cvtph_ps(_mm256_loadu_si256(pb.add(i).cast::<__m256i>())),
                )
            };
            *sum = _mm512_fmadd_ps(va, vb, *sum);
        }
        at += 32;
    }
    let mut sum = _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
    for (x, y) in a[at..len].iter().zip(&b[at..len]) {
        sum += half::f16::from_bits(x.0).to_f32() * half::f16::from_bits(y.0).to_f32();
    }
    sum
}

/// Exact integer dot product of two i8 vectors of equal length: the AVX-512 VNNI kernel below
/// where the CPU has it, else simsimd's.
///
/// Exact while `len * 127 * 127` fits in an i32 (len < 133,000), far above any embedding size.
#[inline]
pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx512_vnni() {
        #[allow(unsafe_code)]
        // SAFETY: `dot_i8_vnni` only requires AVX-512 F, BW and VNNI, which `has_avx512_vnni`
        // has just checked at run time (std's cached CPUID detection).
        return unsafe { dot_i8_vnni(a, b) } as f32;
    }
    dot_i8_simsimd(a, b)
}

/// simsimd's i8 dot product (its best backend for the CPU; on AVX-512 machines it widens to
/// i16, about twice the time of [`dot_i8_vnni`] at d = 384).
#[inline]
pub(crate) fn dot_i8_simsimd(a: &[i8], b: &[i8]) -> f32 {
    i8::dot(a, b).map_or(f32::NAN, |d| d as f32)
}

/// Whether this CPU runs [`dot_i8_vnni`].
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512_vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// Exact `Σ a_i·b_i` over the common length of `a` and `b`, with `vpdpbusd`.
///
/// `vpdpbusd` multiplies *unsigned* bytes by signed bytes, so `a` is biased to `a + 128` (a xor
/// with 0x80) and the bias removed at the end: `Σ (a_i + 128)·b_i − 128·Σ b_i`, with `Σ b_i` from
/// a second `vpdpbusd` against ones. Every partial sum fits in i32 for lengths up to 65,536
/// (255·127·65,536 < 2³¹), and the result is combined in i64, so it is exact, equal to
/// [`dot_i8_scalar`] bit for bit (tested). Per 64 values: two loads, one xor, two `vpdpbusd`
/// (≈ 8 ns at d = 384 against simsimd's ≈ 18 ns, measured on this AMD EPYC).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn dot_i8_vnni(a: &[i8], b: &[i8]) -> i64 {
    use std::arch::x86_64::{
        _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_maskz_loadu_epi8, _mm512_reduce_add_epi32,
        _mm512_set1_epi8, _mm512_setzero_si512, _mm512_xor_si512,
    };
    let len = a.len().min(b.len());
    let bias = _mm512_set1_epi8(i8::MIN);
    let ones = _mm512_set1_epi8(1);
    let mut biased = _mm512_setzero_si512();
    let mut sum_b = _mm512_setzero_si512();
    let mut at = 0;
    while at + 64 <= len {
        #[allow(unsafe_code)]
        // SAFETY: `at + 64 <= len`, and `len` is at most either slice's length, so both 64-byte
        // unaligned loads read inside the slices.
        let (va, vb) = unsafe {
            (
                _mm512_loadu_si512(a.as_ptr().add(at).cast()),
                _mm512_loadu_si512(b.as_ptr().add(at).cast()),
            )
        };
        biased = _mm512_dpbusd_epi32(biased, _mm512_xor_si512(va, bias), vb);
        sum_b = _mm512_dpbusd_epi32(sum_b, ones, vb);
        at += 64;
    }
    if at < len {
        // Fewer than 64 values remain; masked-off lanes load as zero, and a zero b_i adds
        // nothing to either sum.
        let mask = (1u64 << (len - at)) - 1;
        #[allow(unsafe_code)]
        // SAFETY: the mask enables only lanes `at..len`, inside both slices; masked loads do not
        // touch (or fault on) disabled lanes.
        let (va, vb) = unsafe {
            (
                _mm512_maskz_loadu_epi8(mask, a.as_ptr().add(at)),
                _mm512_maskz_loadu_epi8(mask, b.as_ptr().add(at)),
            )
        };
        biased = _mm512_dpbusd_epi32(biased, _mm512_xor_si512(va, bias), vb);
        sum_b = _mm512_dpbusd_epi32(sum_b, ones, vb);
    }
    i64::from(_mm512_reduce_add_epi32(biased)) - 128 * i64::from(_mm512_reduce_add_epi32(sum_b))
}

/// Score of an i8 row against an i8 query: `s_q·s_x·Σ q_i x_i`.
///
/// The one place the product is formed, so single, batched and reference scans agree bit for bit.
#[inline]
pub(crate) fn score_i8(integer_dot: f32, query_scale: f32, row_scale: f32) -> f32 {
    integer_dot * (query_scale * row_scale)
}

#[cfg(test)]
/// Scalar reference for [`dot_f32`], accumulated in f64.
pub(crate) fn dot_f32_scalar(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

#[cfg(test)]
/// Scalar reference for [`dot_f16`]: decode with `half`, accumulate in f64.
pub(crate) fn dot_f16_scalar(a: &[F16], b: &[F16]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(half::f16::from_bits(x.0)) * f64::from(half::f16::from_bits(y.0)))
        .sum()
}

#[cfg(test)]
/// Scalar reference for [`dot_i8`], exact in i64.
pub(crate) fn dot_i8_scalar(a: &[i8], b: &[i8]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i64::from(x) * i64::from(y))
        .sum()
}

/// Encodes one f32 value as f16 (round to nearest even; out of range becomes ±infinity).
#[inline]
pub(crate) fn f16_from_f32(value: f32) -> F16 {
    simsimd::f16(half::f16::from_f32(value).to_bits())
}

/// Encodes `x` into `out` (same length) as f16 values.
pub(crate) fn encode_f16(x: &[f32], out: &mut [F16]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f16_from_f32(v);
    }
}

/// Quantizes `x` into `out` (same length) and returns the scale `s` with `x ≈ s·out`.
///
/// `s = max |x_i| / 127`; an all-zero vector gets scale 0. Values land in -127..=127.
pub(crate) fn quantize_i8(x: &[f32], out: &mut [i8]) -> f32 {
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if max == 0.0 || !max.is_finite() {
        out.fill(0);
        return 0.0;
    }
    let inverse = 127.0 / max;
    for (o, &v) in out.iter_mut().zip(x) {
        *o = (v * inverse).round().clamp(-127.0, 127.0) as i8;
    }
    max / 127.0
}

/// Views f16 bit patterns as simsimd's f16 type.
#[allow(unsafe_code)]
pub(crate) fn f16_from_bits(bits: &[u16]) -> &[F16] {
    // SAFETY: `simsimd::f16` is `#[repr(transparent)]` over `u16` (simsimd 6.5, rust/lib.rs), so
    // it has u16's size and alignment and every u16 bit pattern is a valid value; the new slice
    // covers exactly the same bytes and borrows `bits` for the same lifetime. The test
    // `f16_bits_view_matches_values` checks the layout assumption and the values read back.
    unsafe { std::slice::from_raw_parts(bits.as_ptr().cast::<F16>(), bits.len()) }
}

/// Widens f16 values into `out` (same length) as f32, exactly: `half`'s slice conversion, which
/// uses the F16C instructions where the CPU has them (8 values per instruction) instead of one
/// value at a time.
pub(crate) fn widen_f16(values: &[F16], out: &mut [f32]) {
    use half::slice::HalfFloatSliceExt;
    let len = values.len().min(out.len());
    #[allow(unsafe_code)]
    // SAFETY: `simsimd::f16` (simsimd 6.5, rust/lib.rs) and `half::f16` (half 2.7,
    // src/binary16.rs) are both `#[repr(transparent)]` over `u16`: same size and alignment,
    // every bit pattern valid in both, the same IEEE binary16 meaning. The new slice covers
    // exactly the first `len` elements of `values` for the same lifetime. The test
    // `widen_f16_matches_scalar` checks the values.
    let halves: &[half::f16] =
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<half::f16>(), len) };
    halves.convert_to_f32_slice(&mut out[..len]);
}

const _: () = assert!(std::mem::size_of::<F16>() == std::mem::size_of::<u16>());
const _: () = assert!(std::mem::size_of::<half::f16>() == std::mem::size_of::<u16>());
const _: () = assert!(std::mem::align_of::<half::f16>() == std::mem::align_of::<u16>());
const _: () = assert!(std::mem::align_of::<F16>() == std::mem::align_of::<u16>());

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lengths that cover the empty vector, one value, and both sides of 384 (the all-MiniLM
    /// dimension) and of the 8/16/32/64-lane SIMD widths.
    fn length() -> impl Strategy<Value = usize> {
        prop_oneof![
            Just(0usize),
            Just(1),
            Just(383),
            Just(384),
            Just(385),
            Just(768),
            0usize..200,
        ]
    }

    /// Two random vectors of one random length, each embedded at a random offset (0..4 values)
    /// in a larger buffer, so kernels also see slices that do not start on a vector boundary.
    fn pair<T: std::fmt::Debug + Clone>(
        value: impl Strategy<Value = T> + Clone,
    ) -> impl Strategy<Value = (Vec<T>, usize, Vec<T>, usize, usize)> {
        (length(), 0usize..4, 0usize..4).prop_flat_map(move |(len, oa, ob)| {
            (
                proptest::collection::vec(value.clone(), len + oa),
                Just(oa),
                proptest::collection::vec(value.clone(), len + ob),
                Just(ob),
                Just(len),
            )
        })
    }

    /// Bound on the f32 rounding error of an accumulated dot product: relative to Σ|a_i·b_i|.
    fn tolerance(a: &[f32], b: &[f32]) -> f64 {
        let magnitude: f64 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| (f64::from(x) * f64::from(y)).abs())
            .sum();
        1e-5 * magnitude + 1e-6
    }

    proptest! {
        #[test]
        fn f32_kernel_matches_scalar((a, oa, b, ob, len) in pair(-1.0f32..1.0)) {
            let (a, b) = (&a[oa..oa + len], &b[ob..ob + len]);
            let want = dot_f32_scalar(a, b);
            // The dispatched kernel (AVX-512 where present) and the simsimd fallback, each
            // against the f64 reference.
            for got in [dot_f32(a, b), dot_f32_simsimd(a, b)] {
                let got = f64::from(got);
                prop_assert!((got - want).abs() <= tolerance(a, b), "len {len}: {got} vs {want}");
            }
        }

        #[test]
        fn row_scan_equals_pushing_row_by_row(
            (dim, pad, rows, first) in (1usize..70, 0usize..5, 1usize..12, 0usize..14),
            seed in any::<u64>(),
        ) {
            let stride = dim + pad;
            let mut next = crate::tests::unit_values(seed);
            let vectors: Vec<f32> = (0..rows * stride).map(|_| next()).collect();
            let query: Vec<f32> = (0..dim).map(|_| next()).collect();
            // Two rows past the block's end: they score NaN, which the heap places too.
            let scan = first..rows + 2;
            for k in [1, 3, rows + 2] {
                let mut top = TopK::new(k);
                top_f32_rows(&query, &vectors, stride, scan.clone(), &mut top);
                let mut want = TopK::new(k);
                for r in scan.clone() {
                    let score = match vectors.get(r * stride..r * stride + dim) {
                        Some(v) => dot_f32(&query, v),
                        None => f32::NAN,
                    };
                    want.push(score, r as u32);
                }
                // Bit-identical to the one-row kernel: scans and lookups must agree.
                let bits = |top: TopK| -> Vec<(u32, u32)> {
                    top.into_sorted().iter().map(|s| (s.score.to_bits(), s.row)).collect()
                };
                prop_assert_eq!(bits(top), bits(want), "k {}", k);
            }
        }

        #[test]
        fn f16_kernel_matches_scalar((a, oa, b, ob, len) in pair(-1.0f32..1.0)) {
            let (a, b) = (&a[oa..oa + len], &b[ob..ob + len]);
            let mut ha = vec![F16::ZERO; len];
            let mut hb = vec![F16::ZERO; len];
            encode_f16(a, &mut ha);
            encode_f16(b, &mut hb);
            let got = f64::from(dot_f16(&ha, &hb));
            let want = dot_f16_scalar(&ha, &hb);
            prop_assert!((got - want).abs() <= tolerance(a, b), "len {len}: {got} vs {want}");
        }

        #[test]
        fn i8_kernel_is_exact((a, oa, b, ob, len) in pair(-127i8..=127)) {
            let (a, b) = (&a[oa..oa + len], &b[ob..ob + len]);
            let got = dot_i8(a, b);
            let want = dot_i8_scalar(a, b);
            prop_assert_eq!(f64::from(got), want as f64, "len {}", len);
        }

        #[test]
        fn i8_kernels_agree_with_scalar((a, oa, b, ob, len) in pair(-127i8..=127)) {
            let (a, b) = (&a[oa..oa + len], &b[ob..ob + len]);
            let want = dot_i8_scalar(a, b);
            prop_assert_eq!(f64::from(dot_i8_simsimd(a, b)), want as f64, "len {}", len);
            #[cfg(target_arch = "x86_64")]
            if has_avx512_vnni() {
                #[allow(unsafe_code)]
                // SAFETY: AVX-512 F, BW and VNNI were detected on this CPU just above.
                let got = unsafe { dot_i8_vnni(a, b) };
                prop_assert_eq!(got, want, "len {}", len);
            }
        }

        #[test]
        fn i8_quantized_dot_approximates_f32((a, oa, b, ob, len) in pair(-1.0f32..1.0)) {
            let (a, b) = (&a[oa..oa + len], &b[ob..ob + len]);
            let mut qa = vec![0i8; len];
            let mut qb = vec![0i8; len];
            let sa = quantize_i8(a, &mut qa);
            let sb = quantize_i8(b, &mut qb);
            prop_assert!(qa.iter().chain(&qb).all(|&v| v != i8::MIN));
            let got = f64::from(score_i8(dot_i8(&qa, &qb), sa, sb));
            let want = dot_f32_scalar(a, b);
            // Each value is off by at most half a step (s/2); the dot by at most
            // Σ (|a_i|·s_b + |b_i|·s_a)/2 + n·s_a·s_b/4.
            let bound: f64 = a.iter().zip(b).map(|(&x, &y)| {
                (f64::from(x.abs()) * f64::from(sb) + f64::from(y.abs()) * f64::from(sa)) / 2.0
                    + f64::from(sa) * f64::from(sb) / 4.0
            }).sum::<f64>() * 1.001 + 1e-6;
            prop_assert!((got - want).abs() <= bound, "len {len}: {got} vs {want}, bound {bound}");
        }
    }

    #[test]
    fn i8_kernel_handles_extremes() {
        for len in [
            0usize, 1, 63, 64, 65, 127, 128, 129, 383, 384, 385, 1024, 65_536,
        ] {
            let a = vec![-127i8; len];
            let b = vec![127i8; len];
            assert_eq!(f64::from(dot_i8(&a, &b)), dot_i8_scalar(&a, &b) as f64);
            let c = vec![-127i8; len];
            assert_eq!(f64::from(dot_i8(&a, &c)), dot_i8_scalar(&a, &c) as f64);
            // The largest biased products (255 · 127) in every lane of the VNNI kernel.
            assert_eq!(f64::from(dot_i8(&b, &b)), dot_i8_scalar(&b, &b) as f64);
        }
    }

    #[test]
    fn quantize_zero_and_unit() {
        let mut out = [5i8; 3];
        assert_eq!(quantize_i8(&[0.0, 0.0, 0.0], &mut out), 0.0);
        assert_eq!(out, [0, 0, 0]);
        let scale = quantize_i8(&[1.0, -0.5, 0.0], &mut out);
        assert_eq!(out, [127, -64, 0]);
        assert!((scale - 1.0 / 127.0).abs() < 1e-9);
    }

    #[test]
    fn widen_f16_matches_scalar() {
        let values: Vec<f32> = (0..1000)
            .map(|i| (i as f32 - 500.0) * 0.37)
            .chain([65504.0, -0.0, 1e-7, f32::INFINITY])
            .collect();
        let mut halves = vec![F16::ZERO; values.len()];
        encode_f16(&values, &mut halves);
        // Odd lengths and starts: the SIMD body and its scalar tail.
        for (start, len) in [(0, values.len()), (3, 17), (1, 8), (5, 0)] {
            let mut out = vec![f32::NAN; len];
            widen_f16(&halves[start..start + len], &mut out);
            for (h, o) in halves[start..start + len].iter().zip(&out) {
                assert_eq!(o.to_bits(), half::f16::from_bits(h.0).to_f32().to_bits());
            }
        }
    }

    #[test]
    fn f16_bits_view_matches_values() {
        let values = [0.0f32, 1.0, -2.5, 65504.0, 1e-5];
        let bits: Vec<u16> = values
            .iter()
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect();
        let view = f16_from_bits(&bits);
        assert_eq!(view.len(), bits.len());
        assert_eq!(view.as_ptr().cast::<u16>(), bits.as_ptr());
        for (h, &v) in view.iter().zip(&values) {
            assert_eq!(h.to_f32(), half::f16::from_f32(v).to_f32());
        }
        // Unaligned start within a larger buffer keeps the same element mapping.
        assert_eq!(f16_from_bits(&bits[1..])[0].to_f32(), 1.0);
    }

    #[test]
    fn precision_codes_round_trip() {
        for p in [Precision::F32, Precision::F16, Precision::I8, Precision::I4] {
            assert_eq!(Precision::try_from_code(p.code()), Some(p));
            assert_eq!(Precision::from_name(&p.to_string()), Some(p));
        }
        assert_eq!(Precision::try_from_code(0), None);
        assert_eq!(Precision::try_from_code(5), None);
        assert_eq!(Precision::I4.row_bytes(385), 193);
        assert_eq!(Precision::I8.coarsest(Precision::I4), Precision::I4);
        assert_eq!(Precision::I4.coarsest(Precision::F32), Precision::I4);
    }
}
