//! The persisted form of an [`HnswIndex`] (SPEC.md §5.2): the index to and from the block
//! `memdb_formats::hnsw` encodes (header, the f32 flat block, the deleted rows, the graph's
//! levels and link lists, a CRC-32C trailer).
//!
//! `memdb-formats` owns the bytes and every check that needs only them and the row count
//! (checksum, header ranges, section lengths, the graph's structure); here are the checks that
//! need this crate's types: the traversal code, the flat block, and the deleted rows against its
//! row count.
//!
//! **Invariants:** the byte layout is the on-disk format (held by the golden test
//! `tests/hnsw_block_golden.rs`); [`HnswIndex::from_bytes`] builds an index only from bytes that
//! passed every check, so untrusted bytes give an error, never a panic; `to_bytes` then
//! `from_bytes` gives back the same bytes.

use std::sync::Mutex;

use memdb_formats::hnsw::{HnswBlock, HnswGraph, HnswHeader};
use roaring::RoaringBitmap;

use crate::index::FlatIndex;
use crate::kernels::Precision;
use crate::{VectorError, VectorIndex};

use super::codes::Codes;
use super::{Graph, HnswIndex, HnswParams, Traversal, f32_rows};

impl Traversal {
    fn code(self) -> u8 {
        match self {
            Traversal::F32 => Precision::F32.code(),
            Traversal::F16 => Precision::F16.code(),
            Traversal::I8 => Precision::I8.code(),
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match Precision::try_from_code(code)? {
            Precision::F32 => Some(Traversal::F32),
            Precision::F16 => Some(Traversal::F16),
            Precision::I8 => Some(Traversal::I8),
            // Graph traversal does not run on 4-bit codes (they only back flat blocks).
            Precision::I4 => None,
        }
    }
}

impl HnswIndex {
    /// The persisted form, SPEC.md §5.2 (see `memdb_formats::hnsw`).
    ///
    /// Traversal codes are not stored: they are re-encoded from the f32 rows on load (the
    /// encoders are deterministic), so they cannot disagree with the rows.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut deleted = Vec::with_capacity(self.flat.deleted().serialized_size());
        // Writing into a Vec cannot fail.
        let _ = self.flat.deleted().serialize_into(&mut deleted);
        let g = &self.graph;
        let graph = HnswGraph::collect(&g.levels, |node, layer| g.neighbours(node, layer)).encode();
        // `build` and `from_bytes` keep M and ef in the format's ranges; a value that did not
        // fit would be written as one the reader refuses, never as a different valid one.
        let header = HnswHeader {
            traversal: self.params.traversal.code(),
            top_level: g.max_level,
            m: u16::try_from(self.params.m).unwrap_or(u16::MAX),
            entry: g.entry,
            ef_construction: u32::try_from(self.params.ef_construction).unwrap_or(u32::MAX),
            ef_search: u32::try_from(self.params.ef_search).unwrap_or(u32::MAX),
            seed: self.params.seed,
        };
        HnswBlock {
            header,
            flat: self.flat.as_bytes(),
            deleted: &deleted,
            graph: &graph,
        }
        .encode()
    }

    /// Reads the persisted form back, checking the checksum and every structural invariant of
    /// the module docs; any violation is an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, VectorError> {
        let block = HnswBlock::decode(bytes)?;
        let header = block.header;
        let traversal =
            Traversal::from_code(header.traversal).ok_or(VectorError::UnknownPrecision {
                code: header.traversal,
            })?;
        let mut flat = FlatIndex::from_bytes(block.flat)?;
        let view = flat.view()?;
        let (n, dim) = (view.len(), view.dim());
        let (rows, stride) = f32_rows(&view)?;
        let deleted = RoaringBitmap::deserialize_from(block.deleted)
            .map_err(|e| VectorError::BadDeleted { why: e.to_string() })?;
        if let Some(max) = deleted.max()
            && max as usize >= n
        {
            return Err(VectorError::BadDeleted {
                why: format!("row {max} is deleted but the block has {n} rows"),
            });
        }
        let stored = HnswGraph::decode(block.graph, n, &header)?;
        let m = usize::from(header.m);
        let graph = frozen(&stored, m, header.entry, header.top_level);
        let codes = Codes::encode(traversal, rows, stride, dim, n);
        for row in &deleted {
            flat.delete_row(row);
        }
        Ok(Self {
            flat,
            codes,
            graph,
            params: HnswParams {
                m,
                ef_construction: header.ef_construction as usize,
                ef_search: header.ef_search as usize,
                traversal,
                seed: header.seed,
                threads: 0,
            },
            pool: Mutex::new(Vec::new()),
            prefetch: true,
        })
    }
}

/// The searchable graph of a decoded (and so checked) GRAPH section with M = `m`.
fn frozen(stored: &HnswGraph, m: usize, entry: u32, top_level: u8) -> Graph {
    let levels = stored.levels().to_vec();
    let n = levels.len();
    let m0 = 2 * m;
    let mut layer0 = vec![0u32; n * (m0 + 1)];
    let mut upper: Vec<Vec<Vec<u32>>> = vec![Vec::new(); n];
    for (node, layer, links) in stored.lists() {
        let node = node as usize;
        if layer == 0 {
            // The decoder held each list to 2·M; the cap only keeps this copy in its slots.
            let count = links.len().min(m0);
            let at = node * (m0 + 1);
            layer0[at] = count as u32;
            layer0[at + 1..at + 1 + count].copy_from_slice(&links[..count]);
        } else if let Some(lists) = upper.get_mut(node) {
            lists.push(links.to_vec());
        }
    }
    let mut graph = Graph::freeze(m, levels, layer0, upper, entry);
    graph.max_level = top_level;
    graph
}
