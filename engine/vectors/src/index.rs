//! Flat (exact) vector indices: [`FlatIndexWriter`] builds a block, [`FlatIndex`] owns one
//! (plus its deleted-rows bitmap), and the scans on [`FlatView`] search one, single query or
//! batched.
//!
//! A single-query scan walks the candidate rows once, scoring each with the simsimd kernel of
//! the block's precision and offering it to a bounded top-k heap. A batched scan is blocked:
//! each thread takes a share of the queries and walks the rows in blocks small enough to stay in
//! its cache, and scores every query of the share against a block before the next, so each row
//! is read from memory once per thread instead of once per query. A tile of queries against a
//! block is one matrix product (`matmul`): i8 rows go to the packed integer kernel where the
//! CPU has VNNI; otherwise f16 and i8 rows are widened into a per-block f32 scratch, which is
//! exact for both (for i8 up to 1,040 dimensions, past which the integer kernel scores each
//! pair). The scores then go through a floor check into each query's heap.
//!
//! **Invariant:** queries are encoded to the block's precision exactly as rows are (f16
//! rounding, i8 per-vector scale), so a query equal to a stored vector scores as its row does.

use roaring::RoaringBitmap;

use crate::filter::Filter;
use crate::i4::I4Query;
use crate::kernels::{
    F16, Precision, dot_f16, dot_f32, dot_i8, encode_f16, quantize_i8, score_i8, top_f32_rows,
    widen_f16,
};
use crate::layout::{AlignedBuf, FlatView, HEADER_LEN, Layout, MAX_ROWS, Vectors};
use crate::matmul::{self, EXACT_I8_MAX_DIM, RowBlock};
use crate::parallel;
use crate::topk::{Hit, Scored, TopK};
use crate::{VectorError, VectorIndex};

/// Rows of one block of a batched scan: one matrix product scores a tile of queries against
/// them. Large enough for the product to run at the micro-kernel's speed (its packing is paid
/// once per block), small enough that the tile's scores (`QUERY_TILE × ROW_BLOCK_ROWS` f32)
/// stay in the L2 cache for the top-k pass that reads them.
const ROW_BLOCK_ROWS: usize = 512;
/// Queries scored against one row block before the next block is loaded.
const QUERY_TILE: usize = 256;

/// Builds a flat index block row by row.
#[derive(Debug)]
pub struct FlatIndexWriter {
    precision: Precision,
    dim: usize,
    /// Row stride in bytes.
    stride: usize,
    vectors: Vec<u8>,
    scales: Vec<f32>,
    ids: Vec<u64>,
    times: Vec<i64>,
    sources: Vec<u8>,
    scratch_f16: Vec<F16>,
    scratch_i8: Vec<i8>,
    scratch_i4: Vec<u8>,
}

impl FlatIndexWriter {
    /// An empty writer for vectors of `dim` values stored at `precision`.
    pub fn new(precision: Precision, dim: usize) -> Result<Self, VectorError> {
        let layout = Layout::new(precision, dim, 0)?;
        Ok(Self {
            precision,
            dim,
            stride: layout.stride,
            vectors: Vec::new(),
            scales: Vec::new(),
            ids: Vec::new(),
            times: Vec::new(),
            sources: Vec::new(),
            scratch_f16: vec![F16::ZERO; dim],
            scratch_i8: vec![0; dim],
            scratch_i4: vec![0; crate::i4::packed_len(dim)],
        })
    }

    /// Reserves room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.vectors.reserve(rows.saturating_mul(self.stride));
        self.ids.reserve(rows);
        self.times.reserve(rows);
        self.sources.reserve(rows);
        if self.precision.scaled() {
            self.scales.reserve(rows);
        }
    }

    /// Appends a row: item `id`, its `time` (unix seconds) and `source` code, and its vector
    /// (encoded to the writer's precision). Returns the row number.
    pub fn push(
        &mut self,
        id: u64,
        time: i64,
        source: u8,
        vector: &[f32],
    ) -> Result<u32, VectorError> {
        let row = self.ids.len();
        if row as u64 >= MAX_ROWS {
            return Err(VectorError::TooManyRows { max: MAX_ROWS });
        }
        check_vector("vector", row, self.dim, vector)?;
        let start = self.vectors.len();
        match self.precision {
            Precision::F32 => {
                for v in vector {
                    self.vectors.extend_from_slice(&v.to_le_bytes());
                }
            }
            Precision::F16 => {
                encode_f16(vector, &mut self.scratch_f16);
                for h in &self.scratch_f16 {
                    self.vectors.extend_from_slice(&h.0.to_le_bytes());
                }
            }
            Precision::I8 => {
                let scale = quantize_i8(vector, &mut self.scratch_i8);
                self.vectors
                    .extend(self.scratch_i8.iter().map(|&q| q as u8));
                self.scales.push(scale);
            }
            Precision::I4 => {
                let scale = crate::i4::quantize_i4(vector, &mut self.scratch_i4);
                self.vectors.extend_from_slice(&self.scratch_i4);
                self.scales.push(scale);
            }
        }
        self.vectors.resize(start + self.stride, 0);
        self.ids.push(id);
        self.times.push(time);
        self.sources.push(source);
        Ok(row as u32)
    }

    /// Rows pushed so far.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no row has been pushed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Lays the rows out as one aligned block.
    pub fn finish(self) -> Result<FlatIndex, VectorError> {
        let layout = Layout::new(self.precision, self.dim, self.ids.len())?;
        let mut buf = AlignedBuf::zeroed(layout.block_len);
        let bytes = buf.as_bytes_mut();
        bytes[..HEADER_LEN].copy_from_slice(&layout.header());
        bytes[layout.vectors_at..layout.vectors_at + self.vectors.len()]
            .copy_from_slice(&self.vectors);
        drop(self.vectors);
        put_all(
            &mut bytes[layout.scales_at..],
            self.scales.iter().map(|s| s.to_le_bytes()),
        );
        put_all(
            &mut bytes[layout.ids_at..],
            self.ids.iter().map(|v| v.to_le_bytes()),
        );
        put_all(
            &mut bytes[layout.times_at..],
            self.times.iter().map(|v| v.to_le_bytes()),
        );
        bytes[layout.sources_at..layout.sources_at + self.sources.len()]
            .copy_from_slice(&self.sources);
        FlatIndex::from_buf(buf)
    }
}

fn put_all<const N: usize>(out: &mut [u8], values: impl Iterator<Item = [u8; N]>) {
    for (chunk, value) in out.chunks_exact_mut(N).zip(values) {
        chunk.copy_from_slice(&value);
    }
}

/// Checks that `v` (`what` number `index`: a stored vector or a query) has `dim` values, all
/// finite.
pub(crate) fn check_vector(
    what: &'static str,
    index: usize,
    dim: usize,
    v: &[f32],
) -> Result<(), VectorError> {
    if v.len() != dim {
        return Err(VectorError::DimensionMismatch {
            what,
            expected: dim,
            found: v.len(),
        });
    }
    match v.iter().position(|x| !x.is_finite()) {
        Some(position) => Err(VectorError::NonFinite {
            what,
            index,
            position,
        }),
        None => Ok(()),
    }
}

/// An in-memory flat vector index: one aligned block (vectors, ids, times, sources) and the set
/// of deleted rows.
#[derive(Clone)]
pub struct FlatIndex {
    buf: AlignedBuf,
    deleted: RoaringBitmap,
}

impl std::fmt::Debug for FlatIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatIndex")
            .field("bytes", &self.buf.as_bytes().len())
            .field("deleted", &self.deleted.len())
            .finish()
    }
}

impl FlatIndex {
    fn from_buf(buf: AlignedBuf) -> Result<Self, VectorError> {
        FlatView::from_bytes(buf.as_bytes())?;
        Ok(Self {
            buf,
            deleted: RoaringBitmap::new(),
        })
    }

    /// Copies a block (at any alignment) into a new index with no deleted rows.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, VectorError> {
        Layout::parse(bytes)?;
        let mut buf = AlignedBuf::zeroed(bytes.len());
        buf.as_bytes_mut().copy_from_slice(bytes);
        Self::from_buf(buf)
    }

    /// The block's bytes (its on-disk form).
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_bytes()
    }

    /// The block viewed in place.
    pub fn view(&self) -> Result<FlatView<'_>, VectorError> {
        FlatView::from_bytes(self.buf.as_bytes())
    }
}

impl VectorIndex for FlatIndex {
    fn dim(&self) -> usize {
        self.view().map_or(0, |v| v.dim())
    }

    fn len(&self) -> usize {
        self.view().map_or(0, |v| v.len())
    }

    fn deleted(&self) -> &RoaringBitmap {
        &self.deleted
    }

    fn delete_row(&mut self, row: u32) -> bool {
        (row as usize) < self.len() && self.deleted.insert(row)
    }

    /// The block plus the deleted-rows bitmap.
    fn memory_bytes(&self) -> usize {
        self.buf.as_bytes().len() + self.deleted.serialized_size()
    }

    /// See [`FlatView::search`].
    fn search(&self, query: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, VectorError> {
        self.view()?.search(&self.deleted, query, k, filter)
    }

    /// See [`FlatView::search_batch`] (near-ties may order differently than in single searches).
    fn search_batch(
        &self,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError> {
        self.view()?
            .search_batch(&self.deleted, queries, k, filter, threads)
    }
}

/// Queries encoded to a block's precision, `dim` values each, back to back.
enum Encoded {
    F32(Vec<f32>),
    F16(Vec<F16>),
    I8 {
        values: Vec<i8>,
        scales: Vec<f32>,
    },
    /// One i8 query per query, laid out for the i4 kernels.
    I4(Vec<I4Query>),
}

impl Encoded {
    fn new(precision: Precision, dim: usize, queries: &[f32]) -> Self {
        match precision {
            Precision::F32 => Encoded::F32(queries.to_vec()),
            Precision::F16 => {
                let mut halves = vec![F16::ZERO; queries.len()];
                encode_f16(queries, &mut halves);
                Encoded::F16(halves)
            }
            Precision::I8 => {
                let mut values = vec![0i8; queries.len()];
                let scales = queries
                    .chunks_exact(dim)
                    .zip(values.chunks_exact_mut(dim))
                    .map(|(q, out)| quantize_i8(q, out))
                    .collect();
                Encoded::I8 { values, scales }
            }
            Precision::I4 => Encoded::I4(queries.chunks_exact(dim).map(I4Query::new).collect()),
        }
    }
}

impl FlatView<'_> {
    pub(crate) fn check_queries(
        &self,
        queries: &[f32],
        what: &'static str,
    ) -> Result<usize, VectorError> {
        let dim = self.dim();
        if !queries.len().is_multiple_of(dim) {
            return Err(VectorError::DimensionMismatch {
                what,
                expected: dim,
                found: queries.len(),
            });
        }
        for (i, q) in queries.chunks_exact(dim).enumerate() {
            check_vector(what, i, dim, q)?;
        }
        Ok(queries.len() / dim)
    }

    pub(crate) fn hits(&self, top: TopK) -> Vec<Hit> {
        top.into_sorted()
            .into_iter()
            .map(|Scored { score, row }| Hit {
                row,
                id: self.ids[row as usize],
                score,
            })
            .collect()
    }

    /// The `k` rows with the highest dot product with `query` among the rows not in `deleted`
    /// that pass `filter`, best first, ties by ascending row. Returns exactly
    /// `min(k, matching rows)` hits. The query is encoded to the block's precision first.
    pub fn search(
        &self,
        deleted: &RoaringBitmap,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, VectorError> {
        if query.len() != self.dim() {
            return Err(VectorError::DimensionMismatch {
                what: "query",
                expected: self.dim(),
                found: query.len(),
            });
        }
        self.check_queries(query, "query")?;
        let mut top = TopK::new(k);
        if k == 0 {
            return Ok(Vec::new());
        }
        let candidates = filter.candidates(self.len(), deleted);
        let (dim, stride) = (self.dim(), self.layout.stride_values());
        match (self.vectors, Encoded::new(self.precision(), dim, query)) {
            (Vectors::F32(v), Encoded::F32(q)) => match candidates.every_row(filter) {
                // Unfiltered: the whole scan runs inside the kernel (see `top_f32_rows`).
                Some(n) => top_f32_rows(&q, v, stride, 0..n, &mut top),
                None => candidates.for_each(self, filter, |row| {
                    let at = row * stride;
                    top.push(dot_f32(&q, &v[at..at + dim]), row as u32);
                }),
            },
            (Vectors::F16(v), Encoded::F16(q)) => {
                candidates.for_each(self, filter, |row| {
                    let at = row * stride;
                    top.push(dot_f16(&q, &v[at..at + dim]), row as u32);
                });
            }
            (
                Vectors::I8(v),
                Encoded::I8 {
                    values: q, scales, ..
                },
            ) => {
                let query_scale = scales.first().copied().unwrap_or(0.0);
                candidates.for_each(self, filter, |row| {
                    let at = row * stride;
                    let dot = dot_i8(&q, &v[at..at + dim]);
                    top.push(score_i8(dot, query_scale, self.scales[row]), row as u32);
                });
            }
            (Vectors::I4(v), Encoded::I4(queries)) => {
                if let Some(q) = queries.first() {
                    let packed = crate::i4::packed_len(dim);
                    candidates.for_each(self, filter, |row| {
                        let at = row * stride;
                        top.push(q.score(&v[at..at + packed], self.scales[row]), row as u32);
                    });
                }
            }
            // `Encoded::new` follows the block's precision, so the pairs above are the only ones.
            _ => {}
        }
        Ok(self.hits(top))
    }

    /// [`FlatView::search`] for `queries.len() / dim` queries stored back to back, sharing one
    /// filter, on `threads` threads (0: one per available core). Result `i` is query `i`'s hits.
    ///
    /// f32 and f16 blocks are scored by a matrix product, whose rounding differs from the
    /// single-query kernel's in the last bits, so near-ties may order differently than in
    /// [`FlatView::search`]; i8 scores are identical (the products are exact integers).
    pub fn search_batch(
        &self,
        deleted: &RoaringBitmap,
        queries: &[f32],
        k: usize,
        filter: &Filter,
        threads: usize,
    ) -> Result<Vec<Vec<Hit>>, VectorError> {
        let n_queries = self.check_queries(queries, "query batch")?;
        if k == 0 || n_queries == 0 {
            return Ok(vec![Vec::new(); n_queries]);
        }
        let threads = parallel::thread_count(threads).min(n_queries);
        let rows = filter
            .candidates(self.len(), deleted)
            .materialize(self, filter);
        let rows = match &rows {
            Some(list) => RowList::Listed(list),
            None => RowList::All(self.len()),
        };
        let encoded = Encoded::new(self.precision(), self.dim(), queries);
        let per_thread = n_queries.div_ceil(threads);
        let mut tops: Vec<TopK> = Vec::with_capacity(n_queries);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..n_queries)
                .step_by(per_thread)
                .map(|first| {
                    let share = first..(first + per_thread).min(n_queries);
                    let (encoded, rows) = (&encoded, &rows);
                    scope.spawn(move || self.scan_batch(encoded, share, rows, k))
                })
                .collect();
            for worker in workers {
                // A worker only panics if the scan has a bug; re-raise it on this thread.
                match worker.join() {
                    Ok(share) => tops.extend(share),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
        Ok(tops.into_iter().map(|top| self.hits(top)).collect())
    }

    /// Scores the queries `share` against `rows` block by block; one heap per query.
    ///
    /// Each block of rows is made ready once (f32 rows at hand are used in place; listed, f16
    /// and i8 rows are gathered and widened, or packed for the i8 kernel) and then scored
    /// against every tile of the share's queries, one matrix product per tile
    /// ([`matmul::scores_f32`], [`matmul::scores_i8`]), so the preparation is paid once per
    /// block however many queries there are.
    fn scan_batch(
        &self,
        encoded: &Encoded,
        share: std::ops::Range<usize>,
        rows: &RowList<'_>,
        k: usize,
    ) -> Vec<TopK> {
        let (dim, stride) = (self.dim(), self.layout.stride_values());
        let mut tops: Vec<TopK> = share.clone().map(|_| TopK::new(k)).collect();
        let mut block: Vec<u32> = Vec::with_capacity(ROW_BLOCK_ROWS);
        let mut gathered: Vec<f32> = Vec::new();
        let mut scores: Vec<f32> = vec![0.0; QUERY_TILE * ROW_BLOCK_ROWS];
        let mut block_scales: Vec<f32> = Vec::new();
        let mut panels = matmul::I8Panels::default();
        // The i8 kernel's queries, biased, for the whole share (empty where it does not run).
        let mut biased: Vec<u8> = Vec::new();
        let packed_i8 = match encoded {
            Encoded::I8 { values, .. } if matmul::packed_i8_runs(dim) => {
                matmul::bias_queries_i8(
                    &values[share.start * dim..share.end * dim],
                    dim,
                    &mut biased,
                );
                true
            }
            _ => false,
        };
        let step = matmul::biased_query_len(dim);
        // The share's queries as f32 for the matrix product (f16 widened, i8 as their integer
        // values: both exact), made only where the product runs on them; f32 queries are used
        // in place.
        let widened: Vec<f32> = match encoded {
            Encoded::F16(halves) => {
                let mut out = vec![0.0; share.len() * dim];
                widen_f16(&halves[share.start * dim..share.end * dim], &mut out);
                out
            }
            Encoded::I8 { values, .. } if !packed_i8 && dim <= EXACT_I8_MAX_DIM => values
                [share.start * dim..share.end * dim]
                .iter()
                .map(|&x| f32::from(x))
                .collect(),
            _ => Vec::new(),
        };
        let mut next = 0;
        while rows.fill(&mut block, &mut next, ROW_BLOCK_ROWS) {
            let n = block.len();
            if let Encoded::I8 { .. } | Encoded::I4(_) = encoded {
                block_scales.clear();
                block_scales.extend(block.iter().map(|&r| self.scales[r as usize]));
            }
            let mut rows_block = None;
            match (self.vectors, encoded) {
                (Vectors::I8(v), _) if packed_i8 => {
                    panels.pack(
                        dim,
                        block.iter().map(|&r| &v[r as usize * stride..]),
                        &block_scales,
                    );
                }
                (Vectors::I8(_), _) if dim > EXACT_I8_MAX_DIM => {}
                // Scored pair by pair below, from the packed rows.
                (Vectors::I4(_), _) => {}
                (Vectors::F32(v), _) if rows.is_all() => {
                    rows_block = Some(RowBlock {
                        values: &v[block[0] as usize * stride..],
                        rows: n,
                        stride,
                    });
                }
                (vectors, _) => {
                    gather(vectors, stride, dim, &block, &mut gathered);
                    rows_block = Some(RowBlock {
                        values: &gathered,
                        rows: n,
                        stride: dim,
                    });
                }
            }
            for tile_start in share.clone().step_by(QUERY_TILE) {
                let tile = tile_start..(tile_start + QUERY_TILE).min(share.end);
                let heaps = &mut tops[tile.start - share.start..tile.end - share.start];
                let out = &mut scores[..tile.len() * n];
                let scaled = match (encoded, rows_block) {
                    (Encoded::I8 { scales, .. }, None) if packed_i8 => {
                        // Finished scores straight from the i8 rows (AVX-512 VNNI).
                        let at = (tile.start - share.start) * step;
                        let queries = &biased[at..at + tile.len() * step];
                        matmul::scores_i8(queries, &scales[tile.clone()], &panels, out);
                        true
                    }
                    (Encoded::I8 { values, scales, .. }, None) => {
                        // Too long for f32 to sum exactly: the integer kernel, pair by pair.
                        let Vectors::I8(v) = self.vectors else {
                            continue;
                        };
                        for (scores_q, qi) in out.chunks_exact_mut(n).zip(tile.clone()) {
                            let q = &values[qi * dim..(qi + 1) * dim];
                            let pairs = scores_q.iter_mut().zip(&block).zip(&block_scales);
                            for ((s, &r), &row_scale) in pairs {
                                let at = r as usize * stride;
                                *s = score_i8(dot_i8(q, &v[at..at + dim]), scales[qi], row_scale);
                            }
                        }
                        true
                    }
                    (Encoded::I4(queries), None) => {
                        // The i4 kernel, pair by pair: a block of nibbles is scored where it
                        // lies (i4 spaces are small: graph-node phrases).
                        let Vectors::I4(v) = self.vectors else {
                            continue;
                        };
                        let packed = crate::i4::packed_len(dim);
                        for (scores_q, qi) in out.chunks_exact_mut(n).zip(tile.clone()) {
                            let q = &queries[qi];
                            let pairs = scores_q.iter_mut().zip(&block).zip(&block_scales);
                            for ((s, &r), &row_scale) in pairs {
                                let at = r as usize * stride;
                                *s = q.score(&v[at..at + packed], row_scale);
                            }
                        }
                        true
                    }
                    (_, Some(rows_block)) => {
                        let queries = match encoded {
                            Encoded::F32(q) => &q[tile.start * dim..tile.end * dim],
                            _ => {
                                let at = (tile.start - share.start) * dim;
                                &widened[at..at + tile.len() * dim]
                            }
                        };
                        matmul::scores_f32(queries, dim, rows_block, out);
                        false
                    }
                    (_, None) => continue,
                };
                for ((heap, qi), scores_q) in heaps
                    .iter_mut()
                    .zip(tile.clone())
                    .zip(out.chunks_exact_mut(n))
                {
                    let i8_scales = match encoded {
                        Encoded::I8 { scales, .. } if !scaled => {
                            Some((scales[qi], block_scales.as_slice()))
                        }
                        _ => None,
                    };
                    offer(heap, &block, scores_q, i8_scales);
                }
            }
        }
        tops
    }
}

/// Offers `scores[j]` as row `block[j]`'s score to `heap`. For an i8 block, `i8_scales` is the
/// query's scale and the block's row scales, and `scores` hold integer dots: they are turned
/// into scores first, in place, by the one formula every i8 scan uses ([`score_i8`]).
///
/// Once the heap is full nearly every score is below its floor, so the scores are checked 16 at
/// a time (a loop the compiler vectorizes) and only a group with a candidate is walked.
#[inline]
fn offer(heap: &mut TopK, block: &[u32], scores: &mut [f32], i8_scales: Option<(f32, &[f32])>) {
    const GROUP: usize = 16;
    if let Some((query_scale, row_scales)) = i8_scales {
        for (s, &row_scale) in scores.iter_mut().zip(row_scales) {
            *s = score_i8(*s, query_scale, row_scale);
        }
    }
    let mut floor = heap.floor();
    for (rows, group) in block.chunks(GROUP).zip(scores.chunks(GROUP)) {
        let candidate = group
            .iter()
            .fold(false, |any, &s| any | TopK::may_enter(s, floor));
        if !candidate {
            continue;
        }
        for (&row, &score) in rows.iter().zip(group) {
            if TopK::may_enter(score, floor) {
                heap.push(score, row);
                floor = heap.floor();
            }
        }
    }
}

/// Copies rows `block` of `vectors` (row `r` at `r × stride` values) into `out` as f32, `dim`
/// values each, back to back: f16 widened (exact), i8 as their integer values (exact; the
/// per-row scale is applied to the score).
fn gather(vectors: Vectors<'_>, stride: usize, dim: usize, block: &[u32], out: &mut Vec<f32>) {
    out.clear();
    for &r in block {
        let at = r as usize * stride;
        match vectors {
            Vectors::F32(v) => out.extend_from_slice(&v[at..at + dim]),
            Vectors::F16(v) => {
                let start = out.len();
                out.resize(start + dim, 0.0);
                widen_f16(&v[at..at + dim], &mut out[start..]);
            }
            Vectors::I8(v) => out.extend(v[at..at + dim].iter().map(|&x| f32::from(x))),
            // Not reached by the scans (i4 rows are scored pair by pair by the i4 kernel): the
            // values as integers (nibble − 8), like i8's, the scale left to the score.
            Vectors::I4(v) => out.extend(crate::i4::unpack_i4(&v[at..], dim).map(f32::from)),
        }
    }
}

/// The candidate rows of a batched scan.
enum RowList<'a> {
    /// Rows `0..n`.
    All(usize),
    /// Exactly these rows, ascending.
    Listed(&'a [u32]),
}

impl RowList<'_> {
    /// Whether the list is every row, in order (so a block's rows are contiguous).
    fn is_all(&self) -> bool {
        matches!(self, RowList::All(_))
    }

    /// Refills `block` with up to `max` rows starting at position `*next`; false when done.
    fn fill(&self, block: &mut Vec<u32>, next: &mut usize, max: usize) -> bool {
        block.clear();
        match self {
            RowList::All(n) => {
                let end = (*next + max).min(*n);
                block.extend(*next as u32..end as u32);
                *next = end;
            }
            RowList::Listed(rows) => {
                let end = (*next + max).min(rows.len());
                block.extend_from_slice(&rows[*next..end]);
                *next = end;
            }
        }
        !block.is_empty()
    }
}
