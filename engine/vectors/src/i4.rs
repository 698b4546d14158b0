//! 4-bit rows ([`Precision::I4`](crate::Precision::I4)): the quantizer, the packing, and the
//! integer dot product of an i8 query with a packed row, with its run-time dispatch (AVX-512
//! VNNI, AVX2, scalar) and a scalar reference.
//!
//! **Quantization** is i8's (one scale per vector, symmetric) with 15 levels: a row x is stored
//! as `q_i = round(x_i / s_x)` with `s_x = max_i |x_i| / 7`, `q_i` in −7..=7, so `x ≈ s_x·q`.
//! A row costs half of i8's bytes (192 bytes at d = 384, plus its 4-byte scale) for about 18
//! times i8's squared quantization error: enough to rank near neighbours for threshold tests
//! and candidate lists (graph-node phrases), not for the final order of close scores.
//!
//! **Packing.** Each value is stored as the nibble `u_i = q_i + 8` (1..=15; 8 is zero). With
//! `h = ⌈d/2⌉`, byte `j` (0 ≤ j < h) holds value `j` in its low nibble and value `j + h` in its
//! high nibble (8 where `j + h ≥ d`). Splitting the row in halves rather than pairing
//! neighbours lets a SIMD kernel take the low nibbles of 32 or 64 bytes against 32 or 64
//! consecutive query values, and the high nibbles against the next half, with no shuffle.
//!
//! **Scoring.** A query is quantized to i8 (as for i8 rows) and laid out as `2h` values (zero
//! past `d`). The kernels compute the exact `Σ q_i·u_i` over both halves; the score is
//! `s_q·s_x·(Σ q_i·u_i − 8·Σ q_i)` ([`score_i4`]), the one formula every i4 scan uses.
//! Every partial sum is exact in i32 for `d ≤ 65,536` (65,536 · 127 · 15 < 2³¹).

use crate::kernels::quantize_i8;

/// Stored bytes of a `dim`-value row before padding: two values per byte.
pub(crate) fn packed_len(dim: usize) -> usize {
    dim.div_ceil(2)
}

/// Quantizes `x` to 4 bits and packs it into `out` ([`packed_len`] bytes, see the module
/// header); returns the scale `s` with `x ≈ s·(u − 8)`. An all-zero (or non-finite) vector
/// gets scale 0 and every nibble 8.
pub(crate) fn quantize_i4(x: &[f32], out: &mut [u8]) -> f32 {
    let half = packed_len(x.len());
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let out = &mut out[..half];
    if max == 0.0 || !max.is_finite() {
        out.fill(0x88);
        return 0.0;
    }
    let inverse = 7.0 / max;
    let nibble = |i: usize| -> u8 {
        x.get(i).map_or(8, |&v| {
            ((v * inverse).round().clamp(-7.0, 7.0) as i8 + 8) as u8
        })
    };
    for (j, byte) in out.iter_mut().enumerate() {
        *byte = nibble(j) | (nibble(j + half) << 4);
    }
    max / 7.0
}

/// The values of a packed row of `dim` values, as `q_i = u_i − 8` (−8..=7; −8 only from bytes
/// this build never writes).
pub(crate) fn unpack_i4(packed: &[u8], dim: usize) -> impl Iterator<Item = i8> + '_ {
    let half = packed_len(dim);
    (0..dim).map(move |i| {
        let byte = packed.get(i % half).copied().unwrap_or(0x88);
        let u = if i < half { byte & 0x0F } else { byte >> 4 };
        u as i8 - 8
    })
}

/// An i8 query laid out for the i4 kernels.
#[derive(Clone, Debug)]
pub(crate) struct I4Query {
    /// The quantized values, `2·⌈d/2⌉` of them (zero past `d`).
    pub(crate) values: Vec<i8>,
    /// The query's scale.
    pub(crate) scale: f32,
    /// `Σ q_i`, for the nibbles' bias.
    pub(crate) sum: i64,
    /// The kernel this CPU runs, picked once per query rather than once per row.
    kernel: I4Kernel,
}

impl I4Query {
    /// Quantizes `query` (its `d` values) for scoring i4 rows.
    pub(crate) fn new(query: &[f32]) -> Self {
        let mut values = vec![0i8; 2 * packed_len(query.len())];
        let scale = quantize_i8(query, &mut values[..query.len()]);
        let sum = values.iter().map(|&v| i64::from(v)).sum();
        Self {
            values,
            scale,
            sum,
            kernel: I4Kernel::best(),
        }
    }

    /// Score of a packed row with scale `row_scale` against this query.
    #[inline]
    pub(crate) fn score(&self, packed: &[u8], row_scale: f32) -> f32 {
        score_i4(
            self.kernel.dot(&self.values, packed),
            self.sum,
            self.scale,
            row_scale,
        )
    }
}

/// `s_q·s_x·(raw − 8·Σ q_i)`: the score of an i4 row from its kernel's raw sum.
#[inline]
pub(crate) fn score_i4(raw: i64, query_sum: i64, query_scale: f32, row_scale: f32) -> f32 {
    (raw - 8 * query_sum) as f32 * (query_scale * row_scale)
}

/// The i4 kernels, fastest first; [`I4Kernel::best`] is the one this CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum I4Kernel {
    /// 64 bytes (128 values) per step with `vpdpbusd` (AVX-512 F, BW, VNNI).
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
    /// 32 bytes (64 values) per step with `vpmaddubsw` and `vpmaddwd` (AVX2).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// One byte (two values) at a time, in plain Rust: other CPUs (NEON phones included).
    Scalar,
}

impl I4Kernel {
    /// Every kernel this build has, fastest first.
    #[cfg(test)]
    pub(crate) const ALL: &'static [I4Kernel] = &[
        #[cfg(target_arch = "x86_64")]
        I4Kernel::Avx512Vnni,
        #[cfg(target_arch = "x86_64")]
        I4Kernel::Avx2,
        I4Kernel::Scalar,
    ];

    /// Whether this CPU runs the kernel.
    pub(crate) fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            I4Kernel::Avx512Vnni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            I4Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            I4Kernel::Scalar => true,
        }
    }

    /// The fastest kernel this CPU runs (detected once).
    pub(crate) fn best() -> I4Kernel {
        static CHOSEN: std::sync::OnceLock<I4Kernel> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            for kernel in [I4Kernel::Avx512Vnni, I4Kernel::Avx2] {
                if kernel.available() {
                    return kernel;
                }
            }
            I4Kernel::Scalar
        })
    }

    /// A name for reports and test output.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            I4Kernel::Avx512Vnni => "avx512-vnni",
            #[cfg(target_arch = "x86_64")]
            I4Kernel::Avx2 => "avx2",
            I4Kernel::Scalar => "scalar",
        }
    }

    /// `Σ q_i·u_i` over a packed row (see the module header) with this kernel; `query` holds
    /// `2·packed.len()` values. The kernel must be [`available`](Self::available).
    pub(crate) fn dot(self, query: &[i8], packed: &[u8]) -> i64 {
        let half = packed.len().min(query.len() / 2);
        let (low, high) = (&query[..half], &query[half..2 * half]);
        let packed = &packed[..half];
        match self {
            #[cfg(target_arch = "x86_64")]
            I4Kernel::Avx512Vnni => {
                #[allow(unsafe_code)]
                // SAFETY: callers use only available kernels (`best`, or tests that check
                // `available`), and this one needs AVX-512 F, BW and VNNI, which `available`
                // detects at run time.
                unsafe {
                    dot_i4_vnni(low, high, packed)
                }
            }
            #[cfg(target_arch = "x86_64")]
            I4Kernel::Avx2 => {
                #[allow(unsafe_code)]
                // SAFETY: as above; this kernel needs AVX2 only.
                unsafe {
                    dot_i4_avx2(low, high, packed)
                }
            }
            I4Kernel::Scalar => dot_i4_scalar(low, high, packed),
        }
    }
}

/// The scalar kernel, and the reference the others are tested against.
fn dot_i4_scalar(low: &[i8], high: &[i8], packed: &[u8]) -> i64 {
    packed
        .iter()
        .zip(low.iter().zip(high))
        .map(|(&b, (&l, &h))| i64::from(l) * i64::from(b & 0x0F) + i64::from(h) * i64::from(b >> 4))
        .sum()
}

/// AVX2: per 32 bytes, the low and high nibbles (a shift and a mask) times 32 query values
/// each with `vpmaddubsw` (unsigned nibble × signed byte, pairs summed in i16: at most
/// 2 · 15 · 127, no saturation), widened to i32 with `vpmaddwd` against ones.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_i4_avx2(low: &[i8], high: &[i8], packed: &[u8]) -> i64 {
    use std::arch::x86_64::{
        __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm_unpackhi_epi64,
        _mm256_add_epi32, _mm256_and_si256, _mm256_castsi256_si128, _mm256_extracti128_si256,
        _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi8,
        _mm256_set1_epi16, _mm256_setzero_si256, _mm256_srli_epi16,
    };
    let n = packed.len();
    let mask = _mm256_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    let mut acc: __m256i = _mm256_setzero_si256();
    let mut at = 0;
    while at + 32 <= n {
        #[allow(unsafe_code)]
        // SAFETY: `at + 32 <= n`, and `low`, `high` and `packed` each hold at least `n` values
        // (the caller cut them to the same length), so the three 32-byte unaligned loads read
        // inside the slices.
        let (bytes, ql, qh) = unsafe {
            (
                _mm256_loadu_si256(packed.as_ptr().add(at).cast()),
                _mm256_loadu_si256(low.as_ptr().add(at).cast()),
                _mm256_loadu_si256(high.as_ptr().add(at).cast()),
            )
        };
        let lo = _mm256_and_si256(bytes, mask);
        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(bytes), mask);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ql), ones));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, qh), ones));
        at += 32;
    }
    let sum128 = _mm_add_epi32(
        _mm256_castsi256_si128(acc),
        _mm256_extracti128_si256::<1>(acc),
    );
    let sum64 = _mm_add_epi32(sum128, _mm_unpackhi_epi64(sum128, sum128));
    let sum32 = _mm_add_epi32(sum64, _mm_shuffle_epi32::<0b01>(sum64));
    i64::from(_mm_cvtsi128_si32(sum32)) + dot_i4_scalar(&low[at..], &high[at..], &packed[at..])
}

/// AVX-512 VNNI: per 64 bytes, the low and high nibbles times 64 query values each with
/// `vpdpbusd` (unsigned × signed bytes, four products summed into each i32 lane); the tail
/// with masked loads (disabled lanes read as zero and add nothing).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn dot_i4_vnni(low: &[i8], high: &[i8], packed: &[u8]) -> i64 {
    use std::arch::x86_64::{
        _mm512_and_si512, _mm512_dpbusd_epi32, _mm512_maskz_loadu_epi8, _mm512_reduce_add_epi32,
        _mm512_set1_epi8, _mm512_setzero_si512, _mm512_srli_epi16,
    };
    let n = packed.len();
    let mask = _mm512_set1_epi8(0x0F);
    let mut acc = _mm512_setzero_si512();
    let mut at = 0;
    while at < n {
        let lanes = (n - at).min(64);
        let enabled = if lanes == 64 {
            u64::MAX
        } else {
            (1u64 << lanes) - 1
        };
        #[allow(unsafe_code)]
        // SAFETY: the mask enables only lanes `at..at + lanes`, with `at + lanes <= n`, and the
        // three slices hold at least `n` values; masked loads do not touch disabled lanes.
        let (bytes, ql, qh) = unsafe {
            (
                _mm512_maskz_loadu_epi8(enabled, packed.as_ptr().add(at).cast()),
                _mm512_maskz_loadu_epi8(enabled, low.as_ptr().add(at)),
                _mm512_maskz_loadu_epi8(enabled, high.as_ptr().add(at)),
            )
        };
        let lo = _mm512_and_si512(bytes, mask);
        let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(bytes), mask);
        acc = _mm512_dpbusd_epi32(acc, lo, ql);
        acc = _mm512_dpbusd_epi32(acc, hi, qh);
        at += lanes;
    }
    i64::from(_mm512_reduce_add_epi32(acc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Σ q_i·(u_i − 8) the slow way: unpack the row, multiply value by value.
    fn reference(query: &[i8], packed: &[u8], dim: usize) -> i64 {
        unpack_i4(packed, dim)
            .zip(query)
            .map(|(x, &q)| i64::from(x) * i64::from(q))
            .sum()
    }

    fn random_vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed | 1;
        (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    /// Every kernel this CPU runs against the scalar reference, on lengths around every SIMD
    /// width and the all-MiniLM dimension; the test prints which kernels ran.
    #[test]
    fn every_available_kernel_matches_the_reference() {
        let ran: Vec<&str> = I4Kernel::ALL
            .iter()
            .filter(|k| k.available())
            .map(|k| k.name())
            .collect();
        eprintln!("i4 kernels run on this CPU: {ran:?}");
        assert!(ran.contains(&"scalar"));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            assert!(ran.contains(&"avx2"));
        }
        for dim in [
            0usize, 1, 2, 3, 31, 63, 64, 65, 127, 128, 129, 255, 383, 384, 385, 768, 1001,
        ] {
            for seed in 0..4 {
                let row = random_vector(seed * 7 + 1, dim);
                let query = random_vector(seed * 11 + 5, dim);
                let mut packed = vec![0u8; packed_len(dim)];
                quantize_i4(&row, &mut packed);
                let q = I4Query::new(&query);
                let want = reference(&q.values, &packed, dim);
                for &kernel in I4Kernel::ALL.iter().filter(|k| k.available()) {
                    let raw = kernel.dot(&q.values, &packed);
                    assert_eq!(raw - 8 * q.sum, want, "{} at d = {dim}", kernel.name());
                }
            }
        }
    }

    #[test]
    fn extremes_are_exact_in_every_kernel() {
        for dim in [1usize, 64, 128, 384, 65_536] {
            let packed_max = vec![0xFFu8; packed_len(dim)];
            let packed_min = vec![0x11u8; packed_len(dim)];
            for qv in [127i8, -127] {
                let query = vec![qv; 2 * packed_len(dim)];
                for packed in [&packed_max, &packed_min] {
                    let want: i64 = packed
                        .iter()
                        .map(|&b| i64::from(qv) * (i64::from(b & 0x0F) + i64::from(b >> 4)))
                        .sum();
                    for &kernel in I4Kernel::ALL.iter().filter(|k| k.available()) {
                        assert_eq!(kernel.dot(&query, packed), want, "{}", kernel.name());
                    }
                }
            }
        }
    }

    #[test]
    fn quantize_packs_halves_and_zero() {
        let mut out = [0u8; 2];
        assert_eq!(quantize_i4(&[0.0, 0.0, 0.0], &mut out), 0.0);
        assert_eq!(out, [0x88, 0x88]);
        // d = 3, h = 2: byte 0 holds values 0 and 2, byte 1 value 1 and padding (8).
        let scale = quantize_i4(&[1.0, -0.5, 0.25], &mut out);
        assert!((scale - 1.0 / 7.0).abs() < 1e-9);
        assert_eq!(out, [15 | (10 << 4), 4 | (8 << 4)]);
        assert_eq!(unpack_i4(&out, 3).collect::<Vec<_>>(), [7, -4, 2]);
    }

    proptest! {
        #[test]
        fn i4_score_approximates_f32(seed in 0u64..10_000, dim in 1usize..400) {
            let a = random_vector(seed * 2 + 1, dim);
            let b = random_vector(seed * 2 + 2, dim);
            let mut packed = vec![0u8; packed_len(dim)];
            let sb = quantize_i4(&b, &mut packed);
            let q = I4Query::new(&a);
            let got = f64::from(q.score(&packed, sb));
            let want: f64 = a.iter().zip(&b).map(|(&x, &y)| f64::from(x) * f64::from(y)).sum();
            // Each value is off by at most half a step: s_b/2 for the row, s_a/2 for the query.
            let bound: f64 = a.iter().zip(&b).map(|(&x, &y)| {
                (f64::from(x.abs()) * f64::from(sb) + f64::from(y.abs()) * f64::from(q.scale)) / 2.0
                    + f64::from(sb) * f64::from(q.scale) / 4.0
            }).sum::<f64>() * 1.001 + 1e-6;
            prop_assert!((got - want).abs() <= bound, "d {dim}: {got} vs {want}, bound {bound}");
        }
    }
}
