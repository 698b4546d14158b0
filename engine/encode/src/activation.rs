//! BERT's GELU (`x · Φ(x)`, the erf form) as a parallel host kernel for the CPU backend.
//!
//! Owns: the activation of the feed-forward block when the model runs on burn's Flex backend.
//! Flex evaluates `erf` with a scalar libm call on one thread, which cost about 15% of the whole
//! forward pass in profiles; this kernel is branch-free, so the compiler vectorises it (at the
//! widest instruction set the CPU offers, chosen at run time by `pulp`), and it is split over the
//! encoder's thread pool.
//!
//! Invariants:
//! - `erf` is Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7, below `f32` resolution near
//!   1): the approximation PyTorch's vectorised CPU `erf` uses, so the reference's GELU is this
//!   same function;
//! - `exp` is Cephes' `expf` polynomial (≈ 1 ulp) on an argument clamped to where `f32` is
//!   normal; the clamp only affects terms that are below 1e-37 anyway.

use rayon::prelude::*;

/// Elements per parallel task: large enough to amortise scheduling, small enough to balance.
const CHUNK: usize = 16 * 1024;

/// Applies `gelu` to every element, in parallel on the current rayon pool.
pub(crate) fn gelu_in_place(xs: &mut [f32]) {
    let arch = pulp::Arch::new();
    xs.par_chunks_mut(CHUNK)
        .for_each(|chunk| arch.dispatch(GeluChunk(chunk)));
}

/// GELU over a chunk as a `pulp` operation: `dispatch` runs it inside a function compiled for the
/// widest instruction set the CPU has (AVX-512 or AVX2), so the loop is vectorised at that width
/// rather than at the SSE2 baseline the rest of the crate is compiled for.
struct GeluChunk<'a>(&'a mut [f32]);

impl pulp::WithSimd for GeluChunk<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        if S::IS_SCALAR {
            self.0.iter_mut().for_each(|x| *x = gelu::<false>(*x));
        } else {
            self.0.iter_mut().for_each(|x| *x = gelu::<true>(*x));
        }
    }
}

/// `a · b + c`, as one fused instruction when `FUSED`. Only code running under a `pulp`
/// instruction set with FMA (any but `Scalar`: AVX2 and AVX-512 both have it) may pass `true`:
/// elsewhere `mul_add` is a library call, far slower than the two operations.
#[inline(always)]
pub(crate) fn madd<const FUSED: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FUSED { a.mul_add(b, c) } else { a * b + c }
}

/// `0.5 · x · (1 + erf(x / √2))`.
#[inline(always)]
pub(crate) fn gelu<const FUSED: bool>(x: f32) -> f32 {
    0.5 * x * (1.0 + erf::<FUSED>(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Abramowitz & Stegun 7.1.26.
#[inline(always)]
fn erf<const FUSED: bool>(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A1: f32 = 0.254_829_6;
    const A2: f32 = -0.284_496_74;
    const A3: f32 = 1.421_413_7;
    const A4: f32 = -1.453_152_1;
    const A5: f32 = 1.061_405_4;
    let a = x.abs();
    let t = 1.0 / (1.0 + P * a);
    let m = madd::<FUSED>;
    let poly = m(m(m(m(A5, t, A4), t, A3), t, A2), t, A1) * t;
    let y = 1.0 - poly * exp::<FUSED>(-a * a);
    y.copysign(x)
}

/// Cephes `expf`, written without branches or library calls so that it vectorises.
#[inline(always)]
pub(crate) fn exp<const FUSED: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that `n · LN2_HI` is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 · 2^23 rounds to the nearest integer and leaves it in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    const ROUND_BITS: i32 = 0x4B40_0000;
    // Below this, e^x is not a normal f32.
    let m = madd::<FUSED>;
    let x = x.clamp(-87.0, 88.0);
    let shifted = m(x, LOG2E, ROUND);
    let n = shifted - ROUND;
    let r = m(-n, LN2_LO, m(-n, LN2_HI, x));
    let p = m(
        m(
            m(
                m(m(1.987_569_1e-4, r, 1.398_2e-3), r, 8.333_452e-3),
                r,
                4.166_579_6e-2,
            ),
            r,
            1.666_666_5e-1,
        ),
        r,
        0.5,
    );
    let e_r = m(p, r * r, r + 1.0);
    // 2^n built from its exponent bits; |n| ≤ 127 by the clamp, so no overflow.
    let n_int = (shifted.to_bits() as i32).wrapping_sub(ROUND_BITS);
    let scale = f32::from_bits(((n_int + 127) << 23) as u32);
    e_r * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 by its Maclaurin series: accurate to ~1e-9 for |x| ≤ 4.
    fn erf_f64(x: f64) -> f64 {
        let mut sum = 0.0_f64;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-18 * sum.abs().max(1e-300) || n < 5.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
            if n > 400.0 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_is_accurate_where_erf_uses_it() {
        for i in 0..=2000 {
            let x = -20.0 + 20.0 * i as f32 / 2000.0;
            let exact = f64::from(x).exp();
            let ours = f64::from(exp::<false>(x));
            let fused = f64::from(exp::<true>(x));
            assert!(
                ((fused - exact) / exact).abs() < 3e-7,
                "fused exp({x}) = {fused}"
            );
            assert!(
                ((ours - exact) / exact).abs() < 3e-7,
                "exp({x}) = {ours}, expected {exact}"
            );
        }
        assert_eq!(exp::<false>(0.0), 1.0);
        assert!(exp::<false>(-200.0) < 1e-37);
    }

    #[test]
    fn gelu_matches_the_exact_erf_form() {
        let mut worst = 0.0_f64;
        for i in 0..=8000 {
            let x = -8.0 + 16.0 * f64::from(i) / 8000.0;
            let exact = if x.abs() <= 5.5 {
                0.5 * x * (1.0 + erf_f64(x / std::f64::consts::SQRT_2))
            } else if x > 0.0 {
                x
            } else {
                0.0
            };
            for ours in [gelu::<false>(x as f32), gelu::<true>(x as f32)] {
                worst = worst.max((f64::from(ours) - exact).abs() / x.abs().max(1.0));
            }
        }
        // A&S 7.1.26's bound, plus f32 rounding of the operations around it.
        assert!(worst < 4e-7, "worst relative error {worst}");
    }

    #[test]
    fn the_parallel_kernel_applies_gelu_everywhere() {
        let mut xs: Vec<f32> = (0..100_000)
            .map(|i| (i as f32 - 50_000.0) / 5_000.0)
            .collect();
        let expected: Vec<f32> = xs.iter().map(|&x| gelu::<false>(x)).collect();
        gelu_in_place(&mut xs);
        // Fused and unfused arithmetic round differently; both are within the bound above.
        for (x, e) in xs.iter().zip(&expected) {
            assert!((x - e).abs() <= 1e-6 * e.abs().max(1.0), "{x} vs {e}");
        }
        assert_eq!(gelu::<false>(0.0), 0.0);
        assert!(gelu::<false>(-10.0).abs() < 1e-20);
        assert_eq!(gelu::<false>(10.0), 10.0);
    }
}
