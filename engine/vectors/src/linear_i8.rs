//! A dense layer `y = x·W + b` in 8-bit integers: the encoder's projections on the packed VNNI
//! kernel of `matmul`.
//!
//! The weights of each output (a row of the checkpoint's `outputs × inputs` matrix, which is
//! the kernel's layout) are quantized once, symmetrically, each output with its own scale
//! (`max |w| / 127`); each input row (a token's activations) is quantized the same way
//! when the layer runs. The product of the two is the exact i32 dot of the codes, which the
//! kernel scales back by both scales; the bias is added in f32. The only error is the two
//! roundings to 8 bits (weights' halves away from zero, as the store's vectors round;
//! activations' to even, which keeps their per-call loop free of branches).
//!
//! A token's scale is set by its largest input, so a few inputs that are always large (a
//! transformer's outlier channels, made by its layer norms' scales) would leave the others few
//! codes. Smoothing (SmoothQuant, Xiao et al. 2023, α = ½) divides input `j` by
//! `s_j = √(range_j / max_o |w_jo|)` and multiplies its weights by `s_j` — the same product —
//! so the weights, quantized per output, take half of that range. The caller gives the ranges
//! (the encoder: its layer norms' `|γ| + |β|`); without them `s_j = 1`.
//!
//! **Invariant:** a [`QuantizedLinear`] exists only where the CPU runs the packed i8 kernel
//! ([`QuantizedLinear::new`] returns `None` elsewhere), and [`QuantizedLinear::forward`] never
//! reads or writes outside the slices it is given: a shape that does not fit is an error.

use crate::VectorError;
use crate::matmul::{I8Kernel, I8Panels, biased_query_len, packed_i8_runs, scores_i8_with};

/// The weights of a dense layer, quantized and packed for the i8 kernel.
#[derive(Debug)]
pub struct QuantizedLinear {
    panels: I8Panels,
    /// `1 / s_j` per input: what each input is multiplied by before it is quantized (its
    /// weights were multiplied by `s_j`).
    input_divisors: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl QuantizedLinear {
    /// The layer of `weight` (`outputs × inputs`, row-major: one row of input weights per
    /// output, as PyTorch's `nn.Linear` and a safetensors checkpoint store it) and `bias`
    /// (`outputs`), smoothed by `input_ranges` (one per input: a scale of its typical
    /// magnitude) where given; or `None` where this CPU has no packed i8 kernel (the caller
    /// keeps the f32 layer) or the shapes disagree.
    pub fn new(
        weight: &[f32],
        bias: &[f32],
        inputs: usize,
        outputs: usize,
        input_ranges: Option<&[f32]>,
    ) -> Option<Self> {
        if !packed_i8_runs(inputs)
            || inputs == 0
            || bias.len() != outputs
            || weight.len() != inputs.checked_mul(outputs)?
            || input_ranges.is_some_and(|r| r.len() != inputs)
        {
            return None;
        }
        // s_j per input (module header); 1 where a range or an input's weights are zero.
        let mut input_max = vec![0f32; inputs];
        for row in weight.chunks_exact(inputs) {
            for (m, w) in input_max.iter_mut().zip(row) {
                *m = m.max(w.abs());
            }
        }
        let smoothing: Vec<f32> = (0..inputs)
            .map(|j| {
                let Some(range) = input_ranges.map(|r| r[j].abs()) else {
                    return 1.0;
                };
                let s = (range / input_max[j]).sqrt();
                if s.is_finite() && s > 0.0 { s } else { 1.0 }
            })
            .collect();
        // One output's weights are one packed row, quantized by their maximum as
        // `kernels::quantize_i8` quantizes a row; the layout is already the kernel's, so each
        // row is made in place, in one pass over the weight.
        let mut codes = vec![0i8; inputs * outputs];
        let mut scales = Vec::with_capacity(outputs);
        let mut smoothed = vec![0f32; inputs];
        for (row, row_codes) in weight
            .chunks_exact(inputs)
            .zip(codes.chunks_exact_mut(inputs))
        {
            for ((v, w), s) in smoothed.iter_mut().zip(row).zip(&smoothing) {
                *v = w * s;
            }
            let max = smoothed.iter().fold(0f32, |m, v| m.max(v.abs()));
            let inverse = if max == 0.0 || !max.is_finite() {
                0.0
            } else {
                127.0 / max
            };
            for (code, v) in row_codes.iter_mut().zip(&smoothed) {
                *code = to_code_away(v * inverse);
            }
            scales.push(if inverse == 0.0 { 0.0 } else { max / 127.0 });
        }
        let mut panels = I8Panels::default();
        panels.pack(inputs, codes.chunks_exact(inputs), &scales);
        Some(Self {
            panels,
            input_divisors: smoothing.iter().map(|s| 1.0 / s).collect(),
            bias: bias.to_vec(),
            inputs,
            outputs,
        })
    }

    /// Outputs per row.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `out[r·outputs..] = x[r·inputs..]·W + b` for each of the `x.len() / inputs` rows.
    pub fn forward(&self, x: &[f32], out: &mut [f32]) -> Result<(), VectorError> {
        self.forward_with(I8Kernel::best(), x, out)
    }

    /// [`forward`](QuantizedLinear::forward) on the given kernel (the tests run each one this
    /// CPU has).
    pub(crate) fn forward_with(
        &self,
        kernel: Option<I8Kernel>,
        x: &[f32],
        out: &mut [f32],
    ) -> Result<(), VectorError> {
        let rows = x.len() / self.inputs;
        if rows * self.inputs != x.len() {
            return Err(VectorError::DimensionMismatch {
                what: "dense layer input (not whole rows)",
                expected: self.inputs,
                found: x.len(),
            });
        }
        if out.len() != rows * self.outputs {
            return Err(VectorError::IndexMismatch {
                what: "dense layer output",
                why: format!(
                    "{} values for {rows} rows of {} outputs",
                    out.len(),
                    self.outputs
                ),
            });
        }
        let stride = biased_query_len(self.inputs);
        let mut biased = vec![0x80u8; rows * stride];
        let mut scales = vec![0f32; rows];
        for ((row, code), scale) in x
            .chunks_exact(self.inputs)
            .zip(biased.chunks_exact_mut(stride))
            .zip(&mut scales)
        {
            *scale = quantize_biased(row, &self.input_divisors, &mut code[..self.inputs]);
        }
        scores_i8_with(kernel, &biased, &scales, &self.panels, out);
        for row in out.chunks_exact_mut(self.outputs) {
            for (y, b) in row.iter_mut().zip(&self.bias) {
                *y += b;
            }
        }
        Ok(())
    }
}

/// As [`to_code`], but halves away from zero, as `kernels::quantize_i8` (and `f32::round`)
/// round: the weights' codes, so that a weight column is quantized exactly as the store
/// quantizes a vector. Branch-free (the fraction `x - trunc(x)` is exact below 2²³).
#[inline]
fn to_code_away(x: f32) -> i8 {
    let x = x.clamp(-127.0, 127.0);
    let whole = x as i32;
    let fraction = x - whole as f32;
    let rounded = whole + i32::from(fraction >= 0.5) - i32::from(fraction <= -0.5);
    rounded.clamp(-127, 127) as i8
}

/// The code of a value already scaled to the code range (`|x| ≤ 127`): rounded to nearest,
/// halves to even, by adding 1.5·2²³, after which the sum's low mantissa bits are the rounded
/// value offset by the constant's own bits. Integer work only, so loops of it vectorize with
/// no call to `roundf` and no saturation check; the clamp keeps even a NaN's garbage inside
/// the code range.
#[inline]
fn to_code(x: f32) -> i8 {
    const MAGIC: f32 = 12_582_912.0;
    const MAGIC_BITS: i32 = 0x4B40_0000;
    let code = ((x + MAGIC).to_bits() as i32).wrapping_sub(MAGIC_BITS);
    code.clamp(-127, 127) as i8
}

/// Quantizes `x` as `kernels::quantize_i8` does (`s = max |x| / 127`, codes in -127..=127; but
/// halves to even) and writes each code biased by +128 into `out` (same length), the
/// form the kernel reads; returns `s`. Written to vectorize: it runs on every token of every
/// layer.
fn quantize_biased(x: &[f32], divisors: &[f32], out: &mut [u8]) -> f32 {
    let mut lanes = [0f32; 16];
    let mut chunks = x.chunks_exact(16);
    let mut weights = divisors.chunks_exact(16);
    for (chunk, d) in (&mut chunks).zip(&mut weights) {
        for ((lane, v), d) in lanes.iter_mut().zip(chunk).zip(d) {
            let a = (v * d).abs();
            *lane = if a > *lane { a } else { *lane };
        }
    }
    let mut max = lanes.iter().copied().fold(0f32, f32::max);
    for (v, d) in chunks.remainder().iter().zip(weights.remainder()) {
        max = max.max((v * d).abs());
    }
    if max == 0.0 || !max.is_finite() {
        out.fill(0x80);
        return 0.0;
    }
    let inverse = 127.0 / max;
    for ((o, &v), &d) in out.iter_mut().zip(x).zip(divisors) {
        *o = (i16::from(to_code(v * d * inverse)) + 128) as u8;
    }
    max / 127.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{quantize_i8, score_i8};
    use proptest::prelude::*;

    /// A layer's product the slow way: the same codes (weights quantized per output after
    /// smoothing; inputs per row by the layer's quantizer, with its divisors), their integer
    /// dot in i64, scaled as the kernel scales it.
    fn reference(
        layer: &QuantizedLinear,
        weight: &[f32],
        ranges: Option<&[f32]>,
        x: &[f32],
        inputs: usize,
    ) -> Vec<f32> {
        let outputs = layer.outputs;
        let smoothing: Vec<f32> = (0..inputs)
            .map(|j| {
                let Some(range) = ranges.map(|r| r[j].abs()) else {
                    return 1.0;
                };
                let w = (0..outputs).fold(0f32, |m, o| m.max(weight[j * outputs + o].abs()));
                let s = (range / w).sqrt();
                if s.is_finite() && s > 0.0 { s } else { 1.0 }
            })
            .collect();
        let columns: Vec<(Vec<i8>, f32)> = (0..outputs)
            .map(|o| {
                let column: Vec<f32> = (0..inputs)
                    .map(|j| weight[j * outputs + o] * smoothing[j])
                    .collect();
                let max = column.iter().fold(0f32, |m, v| m.max(v.abs()));
                if max == 0.0 {
                    return (vec![0; inputs], 0.0);
                }
                let inverse = 127.0 / max;
                let code = column
                    .iter()
                    .map(|v| (v * inverse).round().clamp(-127.0, 127.0) as i8)
                    .collect();
                (code, max / 127.0)
            })
            .collect();
        let mut out = Vec::new();
        for row in x.chunks_exact(inputs) {
            let mut biased = vec![0u8; inputs];
            let scale = quantize_biased(row, &layer.input_divisors, &mut biased);
            for (o, (column, column_scale)) in columns.iter().enumerate() {
                let dot: i64 = biased
                    .iter()
                    .zip(column)
                    .map(|(&a, &b)| (i64::from(a) - 128) * i64::from(b))
                    .sum();
                out.push(score_i8(dot as f32, scale, *column_scale) + layer.bias[o]);
            }
        }
        out
    }

    /// `weight` (`inputs × outputs`, the product's own layout, in which the tests index it)
    /// as [`QuantizedLinear::new`] takes it: one row per output.
    fn output_major(weight: &[f32], inputs: usize, outputs: usize) -> Vec<f32> {
        (0..outputs)
            .flat_map(|o| (0..inputs).map(move |j| weight[j * outputs + o]))
            .collect()
    }

    fn values(seed: u64, n: usize) -> Vec<f32> {
        let mut next = crate::tests::unit_values(seed);
        (0..n).map(|_| next()).collect()
    }

    proptest! {
        /// The quantizer rounds as [`quantize_i8`] does but for exact halves (to even there,
        /// away from zero in `quantize_i8`): every code within one of it, the same scale.
        #[test]
        fn the_activation_quantizer_agrees_with_quantize_i8(n in 1usize..200, seed in any::<u64>()) {
            let x = values(seed, n);
            let mut want = vec![0i8; n];
            let want_scale = quantize_i8(&x, &mut want);
            let mut got = vec![0u8; n];
            let scale = quantize_biased(&x, &vec![1.0; n], &mut got);
            prop_assert_eq!(scale.to_bits(), want_scale.to_bits());
            for (g, w) in got.iter().zip(&want) {
                prop_assert!((i32::from(*g) - 128 - i32::from(*w)).abs() <= 1);
            }
        }

        #[test]
        fn every_kernel_gives_the_reference_product(
            (inputs, outputs, rows) in (1usize..100, 1usize..60, 0usize..20),
            smoothed in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let weight = values(seed, inputs * outputs);
            let bias = values(seed ^ 1, outputs);
            // A few inputs ten times the others', as a layer norm's outlier channels.
            let mut x = values(seed ^ 2, rows * inputs);
            for (i, v) in x.iter_mut().enumerate() {
                if (i % inputs) % 7 == 3 {
                    *v *= 10.0;
                }
            }
            let ranges: Vec<f32> = (0..inputs).map(|j| if j % 7 == 3 { 10.0 } else { 1.0 }).collect();
            let ranges = smoothed.then_some(ranges.as_slice());
            let by_output = output_major(&weight, inputs, outputs);
            let Some(layer) = QuantizedLinear::new(&by_output, &bias, inputs, outputs, ranges) else {
                // No packed kernel on this CPU: nothing to test (the encoder stays f32).
                prop_assert!(I8Kernel::best().is_none());
                return Ok(());
            };
            let want = reference(&layer, &weight, ranges, &x, inputs);
            for kernel in I8Kernel::ALL.into_iter().filter(|k| k.available()) {
                let mut got = vec![f32::NAN; rows * outputs];
                layer.forward_with(Some(kernel), &x, &mut got).unwrap();
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    prop_assert_eq!(g.to_bits(), w.to_bits(), "{:?} cell {}: {} vs {}", kernel, i, g, w);
                }
            }
        }
    }

    /// The 8-bit layer against the f32 product on data shaped like a transformer's: every path
    /// this CPU has, within 2 % of the output's scale, and closer with smoothing than without
    /// where a few inputs are far larger than the rest. Prints the paths that ran.
    #[test]
    fn the_int8_layer_tracks_the_f32_product_and_smoothing_helps_with_outliers() {
        let (inputs, outputs, rows) = (384, 96, 24);
        let weight: Vec<f32> = values(7, inputs * outputs)
            .iter()
            .map(|w| w * 0.1)
            .collect();
        let bias = values(8, outputs);
        let mut x = values(9, rows * inputs);
        for (i, v) in x.iter_mut().enumerate() {
            if (i % inputs) % 64 == 5 {
                *v *= 30.0;
            }
        }
        let ranges: Vec<f32> = (0..inputs)
            .map(|j| if j % 64 == 5 { 30.0 } else { 1.0 })
            .collect();
        let exact: Vec<f64> = x
            .chunks_exact(inputs)
            .flat_map(|row| {
                (0..outputs).map(|o| {
                    f64::from(bias[o])
                        + row
                            .iter()
                            .enumerate()
                            .map(|(j, &v)| f64::from(v) * f64::from(weight[j * outputs + o]))
                            .sum::<f64>()
                })
            })
            .collect();
        let scale = exact.iter().fold(0f64, |m, v| m.max(v.abs()));
        let error = |layer: &QuantizedLinear, kernel| {
            let mut got = vec![0f32; rows * outputs];
            layer.forward_with(Some(kernel), &x, &mut got).unwrap();
            let squared: f64 = got
                .iter()
                .zip(&exact)
                .map(|(&g, e)| (f64::from(g) - e).powi(2))
                .sum();
            (squared / exact.len() as f64).sqrt() / scale
        };
        let mut ran = Vec::new();
        let by_output = output_major(&weight, inputs, outputs);
        if let (Some(plain), Some(smoothed)) = (
            QuantizedLinear::new(&by_output, &bias, inputs, outputs, None),
            QuantizedLinear::new(&by_output, &bias, inputs, outputs, Some(&ranges)),
        ) {
            for kernel in I8Kernel::ALL.into_iter().filter(|k| k.available()) {
                let (plain, smoothed) = (error(&plain, kernel), error(&smoothed, kernel));
                assert!(
                    smoothed < 0.02,
                    "{kernel:?}: RMS error {smoothed} of the output scale"
                );
                assert!(
                    smoothed < plain,
                    "{kernel:?}: smoothed {smoothed} vs plain {plain}"
                );
                ran.push(format!(
                    "{kernel:?} (RMS error {smoothed:.4} smoothed, {plain:.4} plain)"
                ));
            }
        }
        eprintln!(
            "int8 dense layer paths tested on this CPU: {}",
            if ran.is_empty() {
                "none (no packed i8 kernel)".to_owned()
            } else {
                ran.join(", ")
            }
        );
    }

    #[test]
    fn codes_round_to_nearest_halves_to_even_or_away_from_zero() {
        for i in -300_000..=300_000 {
            let x = i as f32 / 2_000.0;
            let want = x.round_ties_even().clamp(-127.0, 127.0) as i8;
            assert_eq!(to_code(x), want, "{x}");
        }
        for (x, want) in [
            (0.5f32, 0i8),
            (-0.5, 0),
            (1.5, 2),
            (-2.5, -2),
            (126.5, 126),
            (127.4, 127),
            (-130.0, -127),
        ] {
            assert_eq!(to_code(x), want, "{x}");
        }
    }

    #[test]
    fn shapes_that_do_not_fit_are_refused() {
        let weight = [0.5f32; 12];
        let bias = [0.0f32; 3];
        // Wrong weight, bias or range lengths: no layer.
        assert!(QuantizedLinear::new(&weight, &bias, 5, 3, None).is_none());
        assert!(QuantizedLinear::new(&weight, &bias[..2], 4, 3, None).is_none());
        assert!(QuantizedLinear::new(&weight, &bias, 4, 3, Some(&[1.0; 3])).is_none());
        let Some(layer) = QuantizedLinear::new(&weight, &bias, 4, 3, None) else {
            return;
        };
        let mut out = [0f32; 6];
        // Seven inputs are not whole rows of four; two rows need six outputs, not five.
        assert!(layer.forward(&[1.0; 7], &mut out).is_err());
        assert!(layer.forward(&[1.0; 8], &mut out[..5]).is_err());
        layer.forward(&[1.0; 8], &mut out).unwrap();
        assert!(out.iter().all(|&y| (y - 2.0).abs() < 0.02), "{out:?}");
    }
}
