//! The batched flat scan's inner step: the scores of a tile of queries against a block of rows,
//! as one matrix product.
//!
//! `scores[i·n + j] = dot(query i, row j)` is `Q · Rᵀ`, a general matrix product, and the gemm
//! crate's sgemm (the one burn's CPU backend already links) computes it near the cores' peak:
//! it packs both operands into cache-sized panels and runs a register-blocked micro-kernel it
//! picks at run time (AVX2 + FMA, AVX-512 with the `x86-v4` feature, NEON, or portable code).
//! Every query of a tile then reuses every row while the row is in cache, which a scan of one
//! query per row pass cannot do.
//!
//! i8 rows are widened to f32 before the product. That is exact, not an approximation: every
//! product `q·x` of two values in −127..=127 is an integer of magnitude ≤ 16,129, and every
//! partial sum of `dim` of them stays an integer below 2²⁴ while `dim ≤`
//! [`EXACT_I8_MAX_DIM`], so f32 adds them without rounding, in any order. The integer dot that
//! comes out is the one [`dot_i8`](crate::kernels::dot_i8) computes, bit for bit, and so are the
//! scores built from it; past that dimension the caller scores i8 pairs with the integer
//! kernel.
//!
//! Where the CPU has AVX-512 VNNI (or AVX-VNNI, its 256-bit form on cores without AVX-512), i8
//! tiles skip the widening: [`I8Panels`] packs a block of rows 16 to a panel, four bytes of
//! each row side by side, so one `vpdpbusd` multiplies four
//! values of one query (broadcast) into sixteen rows at once and adds them into sixteen i32
//! sums, 64 multiply-adds per instruction against sgemm's 16. A register-blocked micro-kernel
//! keeps 8 queries × 48 rows of sums in registers while it walks the dimension. `vpdpbusd`
//! takes unsigned bytes on one side, so queries are biased by +128 and `128·Σx` (computed per
//! row while packing) is taken off at the end. All of it is integer arithmetic, exact, equal
//! to the widened product and to the scalar reference (tested on every path this CPU has). The
//! 256-bit kernel reads the same panels as two halves of 8 rows, against 6 queries at a time
//! (AVX2 has 16 registers). [`I8Kernel::best`] picks the fastest kernel the CPU runs, or the one
//! `MEMDB_VECTORS_I8_KERNEL` names, so one machine can measure another's path.
//!
//! **Invariant:** the functions here never read or write outside the slices they are given:
//! shapes are checked before the product, and a shape that does not fit (a caller bug) scores
//! NaN instead of running it.

/// Largest dimension whose i8 dot products f32 sums exactly: `dim · 127² < 2²⁴`.
pub(crate) const EXACT_I8_MAX_DIM: usize = ((1 << 24) - 1) / (127 * 127);

/// A block of `rows` row vectors of `dim` values each, row `j` at `values[j·stride..]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowBlock<'a> {
    pub(crate) values: &'a [f32],
    pub(crate) rows: usize,
    pub(crate) stride: usize,
}

/// Writes `out[i·n + j] = dot(queries[i·dim..][..dim], row j of block)` for the
/// `m = queries.len() / dim` queries and `n = block.rows` rows (`out` is `m × n`, row-major,
/// and must hold at least that many values).
///
/// The sums run in the micro-kernel's order, so a score may differ from
/// [`dot_f32`](crate::kernels::dot_f32)'s in the last bits (a relative error of a few f32 ulps
/// of `Σ|q_i·x_i|`).
pub(crate) fn scores_f32(queries: &[f32], dim: usize, block: RowBlock<'_>, out: &mut [f32]) {
    let m = queries.len().checked_div(dim).unwrap_or(0);
    let n = block.rows;
    let Some(cells) = m.checked_mul(n) else {
        return;
    };
    let fits = dim > 0
        && queries.len() == m * dim
        && block.stride >= dim
        && out.len() >= cells
        && (n == 0
            || (n - 1)
                .checked_mul(block.stride)
                .and_then(|last| last.checked_add(dim))
                .is_some_and(|end| end <= block.values.len()));
    if !fits {
        let cells = cells.min(out.len());
        out[..cells].fill(f32::NAN);
        return;
    }
    if cells == 0 {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: gemm reads lhs element (i, k) at `queries + i·dim + k` for i < m, k < dim: at most
    // index m·dim − 1 < queries.len(). It reads rhs element (k, j) at `block.values + j·stride + k`
    // for k < dim, j < n: at most (n − 1)·stride + dim − 1 < block.values.len() (checked above).
    // It writes dst element (i, j) at `out + i·n + j`: at most m·n − 1 < out.len(). All three
    // pointers come from live slices, and `out` is a unique borrow, so dst aliases neither input.
    // With `read_dst` false, dst is only written (alpha is ignored); beta = 1 gives dst = lhs·rhs.
    // The test `matmul::tests::scores_match_the_scalar_reference` runs this call on odd shapes,
    // strides and lengths against a scalar reference.
    unsafe {
        gemm::gemm(
            m,
            n,
            dim,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            queries.as_ptr(),
            1,
            dim as isize,
            block.values.as_ptr(),
            block.stride as isize,
            1,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Rows per panel of [`I8Panels`]: one 512-bit register of i32 sums.
const PANEL_ROWS: usize = 16;
/// Queries per pass of the i8 micro-kernel.
const KERNEL_QUERIES: usize = 8;
/// Largest dimension the packed i8 kernel takes: its i32 sums hold `dim/4` steps of
/// `4·255·127` (biased query times row) below 2³¹ with room to spare.
const PACKED_I8_MAX_DIM: usize = 16_384;

/// Whether [`scores_i8`] runs for vectors of `dim` values on this CPU.
pub(crate) fn packed_i8_runs(dim: usize) -> bool {
    dim <= PACKED_I8_MAX_DIM && I8Kernel::best().is_some()
}

/// The packed i8 kernels, each for the CPUs that have its instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum I8Kernel {
    /// 512-bit `vpdpbusd` (AVX-512 F, BW, VNNI: server cores, Zen 4 and later).
    Avx512Vnni,
    /// 256-bit `vpdpbusd` (AVX-VNNI: laptop and desktop cores without AVX-512, such as Intel's
    /// since Alder Lake).
    AvxVnni,
}

impl I8Kernel {
    /// Fastest first.
    pub(crate) const ALL: [I8Kernel; 2] = [I8Kernel::Avx512Vnni, I8Kernel::AvxVnni];

    /// The fastest kernel this CPU runs, if any; or the one `MEMDB_VECTORS_I8_KERNEL` names
    /// (`avx512-vnni`, `avx-vnni`, or `none` for the widened sgemm path), where this CPU runs
    /// it: a way to measure, on one machine, the paths other machines take. Read once.
    pub(crate) fn best() -> Option<I8Kernel> {
        static CHOSEN: std::sync::OnceLock<Option<I8Kernel>> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let fastest = Self::ALL.into_iter().find(|k| k.available());
            match std::env::var("MEMDB_VECTORS_I8_KERNEL").as_deref() {
                Ok("none") => None,
                Ok("avx512-vnni") => Some(I8Kernel::Avx512Vnni).filter(|k| k.available()),
                Ok("avx-vnni") => Some(I8Kernel::AvxVnni).filter(|k| k.available()),
                _ => fastest,
            }
        })
    }

    /// Whether this CPU runs the kernel.
    pub(crate) fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                I8Kernel::Avx512Vnni => {
                    std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512bw")
                        && std::arch::is_x86_feature_detected!("avx512vnni")
                }
                I8Kernel::AvxVnni => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("avxvnni")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = self;
            false
        }
    }
}

/// A block of i8 rows packed for the VNNI micro-kernel, reused block after block.
///
/// Panel `p` holds rows `16p..16p + 16`; within it, step `s` is 64 bytes: four values
/// (`4s..4s + 4`) of each of the 16 rows in turn. Values past `dim` and rows past the block are
/// zero, so they add nothing.
#[derive(Debug, Default)]
pub(crate) struct I8Panels {
    bytes: Vec<i8>,
    /// `128 · Σ x` per packed row (the bias to take off).
    bias: Vec<i32>,
    /// Each packed row's scale (0 past the block's rows).
    scales: Vec<f32>,
    rows: usize,
    steps: usize,
}

impl I8Panels {
    /// Packs `rows` (each at least `dim` values; the first `dim` are used) with their scales
    /// (`row_scales[j]` for row `j`; a missing scale is 0).
    pub(crate) fn pack<'r>(
        &mut self,
        dim: usize,
        rows: impl ExactSizeIterator<Item = &'r [i8]>,
        row_scales: &[f32],
    ) {
        let n = rows.len();
        self.rows = n;
        self.steps = dim.div_ceil(4);
        let panels = n.div_ceil(PANEL_ROWS);
        let panel_bytes = self.steps * 4 * PANEL_ROWS;
        self.bytes.clear();
        self.bytes.resize(panels * panel_bytes, 0);
        self.bias.clear();
        self.bias.resize(panels * PANEL_ROWS, 0);
        self.scales.clear();
        self.scales.extend(row_scales.iter().take(n));
        self.scales.resize(panels * PANEL_ROWS, 0.0);
        for (r, row) in rows.enumerate() {
            let (panel, lane) = (r / PANEL_ROWS, r % PANEL_ROWS);
            let base = panel * panel_bytes + lane * 4;
            let mut sum = 0i32;
            for (step, values) in row[..dim.min(row.len())].chunks(4).enumerate() {
                let at = base + step * 4 * PANEL_ROWS;
                self.bytes[at..at + values.len()].copy_from_slice(values);
                sum += values.iter().map(|&x| i32::from(x)).sum::<i32>();
            }
            self.bias[r] = 128 * sum;
        }
    }
}

/// Queries biased to unsigned bytes (`q + 128`) and padded to whole 4-byte steps with 128 (a
/// biased zero), `steps·4` bytes each, for [`scores_i8`].
pub(crate) fn bias_queries_i8(queries: &[i8], dim: usize, out: &mut Vec<u8>) {
    out.clear();
    for q in queries.chunks_exact(dim.max(1)) {
        out.extend(q.iter().map(|&x| (x as u8) ^ 0x80));
        out.extend(std::iter::repeat_n(0x80u8, biased_query_len(dim) - dim));
    }
}

/// Bytes of one query as [`bias_queries_i8`] lays it out: `dim` rounded up to whole 4-byte
/// steps.
pub(crate) fn biased_query_len(dim: usize) -> usize {
    dim.div_ceil(4) * 4
}

/// Writes `out[i·n + j] = score_i8(Σ q_i·x_j, query_scales[i], scale of row j)` — the exact
/// integer dot, as f32, times `query_scales[i] · row scale`, the one formula of
/// [`score_i8`](crate::kernels::score_i8), so the scores equal the single-query scan's bit for
/// bit — for the `m` biased queries in `queries` ([`bias_queries_i8`]) and the `n` rows of
/// `panels`. The caller checks [`packed_i8_runs`] first; on a CPU without the kernel, or shapes
/// that do not fit (a caller bug), it scores NaN.
pub(crate) fn scores_i8(queries: &[u8], query_scales: &[f32], panels: &I8Panels, out: &mut [f32]) {
    scores_i8_with(I8Kernel::best(), queries, query_scales, panels, out);
}

/// [`scores_i8`] with the given kernel (`None`, or one this CPU lacks: NaN).
pub(crate) fn scores_i8_with(
    kernel: Option<I8Kernel>,
    queries: &[u8],
    query_scales: &[f32],
    panels: &I8Panels,
    out: &mut [f32],
) {
    let step_bytes = panels.steps * 4;
    let m = queries.len().checked_div(step_bytes).unwrap_or(0);
    let n = panels.rows;
    let whole = n.div_ceil(PANEL_ROWS) * PANEL_ROWS;
    let fits = step_bytes > 0
        && panels.steps * 4 <= PACKED_I8_MAX_DIM + 3
        && queries.len() == m * step_bytes
        && query_scales.len() == m
        && out.len() >= m * n
        && panels.bytes.len() == whole * step_bytes
        && panels.bias.len() == whole
        && panels.scales.len() == whole;
    let kernel = kernel.filter(|k| k.available());
    let Some(kernel) = kernel.filter(|_| fits) else {
        let cells = m.saturating_mul(n).min(out.len());
        out[..cells].fill(f32::NAN);
        return;
    };
    #[cfg(target_arch = "x86_64")]
    match kernel {
        #[allow(unsafe_code)]
        // SAFETY: `available` has just checked AVX-512 F, BW and VNNI at run time, all that
        // `scores_i8_vnni` requires; the shapes it relies on were checked above.
        I8Kernel::Avx512Vnni => unsafe { scores_i8_vnni(queries, query_scales, m, panels, out) },
        #[allow(unsafe_code)]
        // SAFETY: `available` has just checked AVX2 and AVX-VNNI at run time, all that
        // `scores_i8_avx_vnni` requires; the shapes it relies on were checked above.
        I8Kernel::AvxVnni => unsafe { scores_i8_avx_vnni(queries, query_scales, m, panels, out) },
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
}

/// One micro-kernel call: queries `first..first + group` of the biased `queries` against the
/// panels of `panels` from `panel` on.
#[derive(Clone, Copy)]
struct Tile<'a> {
    queries: &'a [u8],
    query_scales: &'a [f32],
    panels: &'a I8Panels,
    first: usize,
    group: usize,
    panel: usize,
}

impl Tile<'_> {
    /// Where each of `N` queries starts in `queries`; slots past the group repeat its last
    /// query (their sums are computed but never stored), so a kernel's loop has no branches.
    fn query_offsets<const N: usize>(&self) -> [usize; N] {
        let step_bytes = self.panels.steps * 4;
        std::array::from_fn(|i| (self.first + i.min(self.group.max(1) - 1)) * step_bytes)
    }
}

/// The VNNI kernel: for each group of 8 queries and 3 panels (48 rows), 24 registers of sums.
///
/// Preconditions (checked by [`scores_i8_with`]): `queries` holds `m` queries of `steps·4` bytes,
/// `panels` holds `⌈n/16⌉` whole panels and biases, `out` at least `m·n` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn scores_i8_vnni(
    queries: &[u8],
    query_scales: &[f32],
    m: usize,
    panels: &I8Panels,
    out: &mut [f32],
) {
    let n = panels.rows;
    let n_panels = n.div_ceil(PANEL_ROWS);
    let mut panel = 0;
    while panel < n_panels {
        let take = (n_panels - panel).min(3);
        let mut query = 0;
        while query < m {
            let group = (m - query).min(KERNEL_QUERIES);
            let tile = Tile {
                queries,
                query_scales,
                panels,
                first: query,
                group,
                panel,
            };
            match take {
                3 => vnni_tile::<3>(tile, out),
                2 => vnni_tile::<2>(tile, out),
                _ => vnni_tile::<1>(tile, out),
            }
            query += group;
        }
        panel += take;
    }
}

/// Sums for queries `first..first + group` (at most 8) against panels `panel..panel + P`, then
/// the bias taken off, the scales applied and each score stored where its row exists.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
#[allow(unsafe_code)] // Loads and stores through raw pointers, each with its SAFETY note.
fn vnni_tile<const P: usize>(tile: Tile<'_>, out: &mut [f32]) {
    use std::arch::x86_64::{
        __m512i, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_loadu_ps, _mm512_loadu_si512,
        _mm512_mul_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_si512, _mm512_storeu_ps,
        _mm512_sub_epi32,
    };
    let steps = tile.panels.steps;
    let step_bytes = steps * 4;
    let panel_bytes = step_bytes * PANEL_ROWS;
    let n = tile.panels.rows;
    let mut acc = [[_mm512_setzero_si512(); P]; KERNEL_QUERIES];
    let query_at: [usize; KERNEL_QUERIES] = tile.query_offsets();
    let rows = tile.panels.bytes.as_ptr();
    let qs = tile.queries.as_ptr();
    for step in 0..steps {
        let mut x = [_mm512_setzero_si512(); P];
        for (p, xp) in x.iter_mut().enumerate() {
            // SAFETY: panel `tile.panel + p` < ⌈n/16⌉ (the caller takes at most the panels left),
            // and `step < steps`, so these 64 bytes lie inside `tile.panels.bytes`, whose length is
            // ⌈n/16⌉ · panel_bytes (checked by `scores_i8`).
            *xp = unsafe {
                _mm512_loadu_si512(rows.add((tile.panel + p) * panel_bytes + step * 64).cast())
            };
        }
        for (acc_q, &at) in acc.iter_mut().zip(&query_at) {
            // SAFETY: query index < m and `step < steps`, so the 4 bytes at
            // `at + 4·step` lie inside `tile.queries` (m · step_bytes long, checked by `scores_i8`).
            let four = unsafe { (qs.add(at + step * 4) as *const i32).read_unaligned() };
            let q = _mm512_set1_epi32(four);
            for (a, &xp) in acc_q.iter_mut().zip(&x) {
                *a = _mm512_dpbusd_epi32(*a, q, xp);
            }
        }
    }
    for p in 0..P {
        let row0 = (tile.panel + p) * PANEL_ROWS;
        // SAFETY: `row0 + 16 <= bias.len()` (whole panels of biases, checked by `scores_i8`).
        let bias: __m512i =
            unsafe { _mm512_loadu_si512(tile.panels.bias.as_ptr().add(row0).cast()) };
        // SAFETY: as for the biases: whole panels of scales (checked by `scores_i8`).
        let row_scales = unsafe { _mm512_loadu_ps(tile.panels.scales.as_ptr().add(row0)) };
        let rows_here = n.saturating_sub(row0).min(PANEL_ROWS);
        for (i, acc_q) in acc.iter().enumerate().take(tile.group) {
            let dots = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc_q[p], bias));
            // `dot · (s_q · s_x)`, the operations of `score_i8` in its order: equal bits.
            let scale = _mm512_mul_ps(
                _mm512_set1_ps(tile.query_scales[tile.first + i]),
                row_scales,
            );
            let scores = _mm512_mul_ps(dots, scale);
            let at = (tile.first + i) * n + row0;
            if rows_here == PANEL_ROWS {
                // SAFETY: query `tile.first + i` < m and rows row0..row0 + 16 < n, so the 16 values
                // at `at` lie inside `out` (at least m · n long, checked by `scores_i8`).
                unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(at), scores) };
            } else {
                let mut lanes = [0.0f32; PANEL_ROWS];
                // SAFETY: `lanes` is 16 f32 long.
                unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), scores) };
                out[at..at + rows_here].copy_from_slice(&lanes[..rows_here]);
            }
        }
    }
}

/// Queries per pass of the 256-bit kernel: 6 queries × 2 halves of a panel = 12 registers of
/// sums, plus 2 of rows and 1 of the query, within AVX2's 16.
const AVX_KERNEL_QUERIES: usize = 6;

/// The AVX-VNNI kernel: the same panels as [`scores_i8_vnni`], each read as two 256-bit halves
/// of 8 rows, against groups of 6 queries.
///
/// Preconditions as for [`scores_i8_vnni`] (checked by [`scores_i8_with`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
fn scores_i8_avx_vnni(
    queries: &[u8],
    query_scales: &[f32],
    m: usize,
    panels: &I8Panels,
    out: &mut [f32],
) {
    for panel in 0..panels.rows.div_ceil(PANEL_ROWS) {
        let mut query = 0;
        while query < m {
            let group = (m - query).min(AVX_KERNEL_QUERIES);
            let tile = Tile {
                queries,
                query_scales,
                panels,
                first: query,
                group,
                panel,
            };
            avx_vnni_tile(tile, out);
            query += group;
        }
    }
}

/// Sums for queries `first..first + group` (at most 6) against one panel, then the bias taken
/// off, the scales applied and each score stored where its row exists.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
#[inline]
#[allow(unsafe_code)] // Loads and stores through raw pointers, each with its SAFETY note.
fn avx_vnni_tile(tile: Tile<'_>, out: &mut [f32]) {
    use std::arch::x86_64::{
        _mm256_cvtepi32_ps, _mm256_dpbusd_avx_epi32, _mm256_loadu_ps, _mm256_loadu_si256,
        _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_si256, _mm256_storeu_ps,
        _mm256_sub_epi32,
    };
    const HALF: usize = PANEL_ROWS / 2;
    let steps = tile.panels.steps;
    let step_bytes = steps * 4;
    let panel_bytes = step_bytes * PANEL_ROWS;
    let n = tile.panels.rows;
    let mut acc = [[_mm256_setzero_si256(); 2]; AVX_KERNEL_QUERIES];
    let query_at: [usize; AVX_KERNEL_QUERIES] = tile.query_offsets();
    let rows = tile.panels.bytes.as_ptr();
    let qs = tile.queries.as_ptr();
    for step in 0..steps {
        let at = tile.panel * panel_bytes + step * 64;
        // SAFETY: `tile.panel` < ⌈n/16⌉ and `step < steps`, so the 64 bytes at `at` (two 32-byte
        // halves) lie inside `tile.panels.bytes`, ⌈n/16⌉ · panel_bytes long (checked by the caller).
        let x = unsafe {
            [
                _mm256_loadu_si256(rows.add(at).cast()),
                _mm256_loadu_si256(rows.add(at + 32).cast()),
            ]
        };
        for (acc_q, &q_at) in acc.iter_mut().zip(&query_at) {
            // SAFETY: query index < m and `step < steps`, so these 4 bytes lie inside `tile.queries`
            // (m · step_bytes long, checked by the caller).
            let four = unsafe { (qs.add(q_at + step * 4) as *const i32).read_unaligned() };
            let q = _mm256_set1_epi32(four);
            acc_q[0] = _mm256_dpbusd_avx_epi32(acc_q[0], q, x[0]);
            acc_q[1] = _mm256_dpbusd_avx_epi32(acc_q[1], q, x[1]);
        }
    }
    for half in 0..2 {
        let row0 = tile.panel * PANEL_ROWS + half * HALF;
        // SAFETY: `row0 + 8 <= ⌈n/16⌉ · 16`, the length of both the biases and the scales
        // (checked by the caller).
        let (bias, row_scales) = unsafe {
            (
                _mm256_loadu_si256(tile.panels.bias.as_ptr().add(row0).cast()),
                _mm256_loadu_ps(tile.panels.scales.as_ptr().add(row0)),
            )
        };
        let rows_here = n.saturating_sub(row0).min(HALF);
        if rows_here == 0 {
            continue;
        }
        for (i, acc_q) in acc.iter().enumerate().take(tile.group) {
            let dots = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc_q[half], bias));
            // `dot · (s_q · s_x)`, the operations of `score_i8` in its order: equal bits.
            let scale = _mm256_mul_ps(
                _mm256_set1_ps(tile.query_scales[tile.first + i]),
                row_scales,
            );
            let scores = _mm256_mul_ps(dots, scale);
            let at = (tile.first + i) * n + row0;
            let mut lanes = [0.0f32; HALF];
            // SAFETY: `lanes` is 8 f32 long.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), scores) };
            out[at..at + rows_here].copy_from_slice(&lanes[..rows_here]);
        }
    }
}

/// The sgemm kernel the gemm crate picks on this CPU (its dispatch, mirrored for test output).
#[cfg(test)]
fn sgemm_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            "widened f32 through gemm's AVX-512 sgemm"
        } else if std::arch::is_x86_feature_detected!("fma") {
            "widened f32 through gemm's AVX2 + FMA sgemm"
        } else {
            "widened f32 through gemm's scalar sgemm"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "widened f32 through gemm's sgemm (NEON on aarch64)"
    }
}

/// Scalar reference for [`scores_i8`]: the exact integer dots, as f32.
#[cfg(test)]
pub(crate) fn scores_i8_scalar(queries: &[i8], dim: usize, rows: &[&[i8]], out: &mut [f32]) {
    for (i, q) in queries.chunks_exact(dim).enumerate() {
        for (j, r) in rows.iter().enumerate() {
            let dot: i64 = q
                .iter()
                .zip(r.iter())
                .map(|(&a, &b)| i64::from(a) * i64::from(b))
                .sum();
            out[i * rows.len() + j] = dot as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{dot_f32_scalar, score_i8};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn scores_match_the_scalar_reference(
            (m, n, dim, pad) in (0usize..20, 0usize..40, 1usize..80, 0usize..5),
            seed in any::<u64>(),
        ) {
            let stride = dim + pad;
            let mut next = crate::tests::unit_values(seed);
            let queries: Vec<f32> = (0..m * dim).map(|_| next()).collect();
            let rows: Vec<f32> = (0..n * stride).map(|_| next()).collect();
            let mut out = vec![0.0f32; m * n + 3];
            scores_f32(&queries, dim, RowBlock { values: &rows, rows: n, stride }, &mut out);
            for i in 0..m {
                for j in 0..n {
                    let (q, r) = (&queries[i * dim..(i + 1) * dim], &rows[j * stride..j * stride + dim]);
                    let want = dot_f32_scalar(q, r);
                    let bound: f64 = q.iter().zip(r).map(|(&a, &b)| f64::from(a * b).abs()).sum();
                    let got = f64::from(out[i * n + j]);
                    prop_assert!((got - want).abs() <= 1e-5 * bound + 1e-6, "({i}, {j}): {got} vs {want}");
                }
            }
            // Nothing past m × n is written.
            prop_assert!(out[m * n..].iter().all(|&x| x == 0.0));
        }

        #[test]
        fn widened_i8_products_are_exact(dim in 1usize..=EXACT_I8_MAX_DIM, seed in any::<u64>()) {
            // The extreme values give the largest partial sums: the bound must hold for them.
            let mut bits = crate::tests::xorshift(seed);
            let mut next = move || {
                let state = bits();
                match state % 4 { 0 => 127i8, 1 => -127, _ => (state % 255) as i8 }
            };
            let (q, r): (Vec<i8>, Vec<i8>) = (0..dim).map(|_| (next(), next())).unzip();
            let widen = |v: &[i8]| -> Vec<f32> { v.iter().map(|&x| f32::from(x)).collect() };
            let mut out = [0.0f32; 1];
            scores_f32(&widen(&q), dim, RowBlock { values: &widen(&r), rows: 1, stride: dim }, &mut out);
            let want: i64 = q.iter().zip(&r).map(|(&a, &b)| i64::from(a) * i64::from(b)).sum();
            prop_assert_eq!(f64::from(out[0]), want as f64);
        }
    }

    proptest! {
        #[test]
        fn packed_i8_scores_equal_the_scalar_reference(
            (m, n, dim) in (1usize..20, 0usize..70, 1usize..200),
            extremes in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let mut bits = crate::tests::xorshift(seed);
            let mut next = move || {
                let state = bits();
                if extremes { if state.is_multiple_of(2) { 127i8 } else { -127 } } else { (state % 255) as i8 }
            };
            let queries: Vec<i8> = (0..m * dim).map(|_| next()).collect();
            let rows: Vec<Vec<i8>> = (0..n).map(|_| (0..dim).map(|_| next()).collect()).collect();
            let refs: Vec<&[i8]> = rows.iter().map(|r| r.as_slice()).collect();
            let mut want = vec![0.0f32; m * n];
            scores_i8_scalar(&queries, dim, &refs, &mut want);
            // Scales as the quantizer makes them (max |x| / 127), each a different value.
            let query_scales: Vec<f32> = (0..m).map(|i| (0.3 + i as f32 * 0.07) / 127.0).collect();
            let row_scales: Vec<f32> = (0..n).map(|j| (0.2 + j as f32 * 0.013) / 127.0).collect();
            let mut panels = I8Panels::default();
            panels.pack(dim, refs.iter().copied(), &row_scales);
            let mut biased = Vec::new();
            bias_queries_i8(&queries, dim, &mut biased);
            for kernel in I8Kernel::ALL.into_iter().filter(|k| k.available()) {
                let mut got = vec![f32::NAN; m * n];
                scores_i8_with(Some(kernel), &biased, &query_scales, &panels, &mut got);
                for i in 0..m {
                    for j in 0..n {
                        let scored = score_i8(want[i * n + j], query_scales[i], row_scales[j]);
                        prop_assert_eq!(got[i * n + j].to_bits(), scored.to_bits(), "{:?} ({}, {})", kernel, i, j);
                    }
                }
            }
        }
    }

    /// One block of extreme values through every i8 path this CPU runs, each equal to the
    /// scalar reference; prints which paths ran (and which sgemm kernel the gemm crate picked).
    #[test]
    fn every_i8_path_on_this_cpu_is_exact() {
        let (m, n, dim) = (11, 37, 384);
        let queries: Vec<i8> = (0..m * dim)
            .map(|i| if i % 3 == 0 { -127 } else { 127 })
            .collect();
        let rows: Vec<Vec<i8>> = (0..n)
            .map(|j| {
                (0..dim)
                    .map(|i| if (i + j) % 5 == 0 { -127 } else { 127 })
                    .collect()
            })
            .collect();
        let refs: Vec<&[i8]> = rows.iter().map(|r| r.as_slice()).collect();
        let mut want = vec![0.0f32; m * n];
        scores_i8_scalar(&queries, dim, &refs, &mut want);
        let mut ran = Vec::new();
        let mut panels = I8Panels::default();
        panels.pack(dim, refs.iter().copied(), &[1.0; 37]);
        let mut biased = Vec::new();
        bias_queries_i8(&queries, dim, &mut biased);
        for kernel in I8Kernel::ALL.into_iter().filter(|k| k.available()) {
            let mut got = vec![f32::NAN; m * n];
            scores_i8_with(Some(kernel), &biased, &[1.0; 11], &panels, &mut got);
            assert_eq!(got, want, "{kernel:?}");
            ran.push(match kernel {
                I8Kernel::Avx512Vnni => "AVX-512 VNNI packed kernel",
                I8Kernel::AvxVnni => "AVX-VNNI (256-bit) packed kernel",
            });
        }
        let widen = |v: &[i8]| -> Vec<f32> { v.iter().map(|&x| f32::from(x)).collect() };
        let flat: Vec<f32> = rows.iter().flat_map(|r| widen(r)).collect();
        let mut widened = vec![0.0f32; m * n];
        scores_f32(
            &widen(&queries),
            dim,
            RowBlock {
                values: &flat,
                rows: n,
                stride: dim,
            },
            &mut widened,
        );
        assert_eq!(widened, want, "widened through sgemm");
        ran.push(sgemm_path());
        eprintln!("i8 batched paths tested on this CPU: {}", ran.join(", "));
    }

    #[test]
    fn a_shape_that_does_not_fit_scores_nan() {
        let queries = [1.0f32; 8];
        let rows = [1.0f32; 7];
        let mut out = [0.0f32; 4];
        // No kernel: NaN, never a wrong score.
        let mut panels = I8Panels::default();
        panels.pack(4, [[1i8; 4].as_slice()].into_iter(), &[1.0]);
        let mut scores = [0.0f32; 1];
        scores_i8_with(None, &[129u8; 4], &[1.0], &panels, &mut scores);
        assert!(scores[0].is_nan());
        // Two rows of four values need 8 values; 7 are given.
        scores_f32(
            &queries,
            4,
            RowBlock {
                values: &rows,
                rows: 2,
                stride: 4,
            },
            &mut out,
        );
        assert!(out.iter().all(|x| x.is_nan()));
        assert_eq!(EXACT_I8_MAX_DIM, 1040);
    }
}
