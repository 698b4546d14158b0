//! The persisted form of an [`HnswIndex`] (SPEC.md §5.2): header, the f32 flat block, the
//! deleted rows, the graph's levels and link lists, and a CRC-32C trailer.
//!
//! **Invariants:** the byte layout is the on-disk format (held by the golden test
//! `tests/hnsw_block_golden.rs`) and changes only with [`VERSION`]; [`HnswIndex::from_bytes`]
//! checks the checksum and every structural invariant of the graph (links in range and on
//! layers their targets reach, list lengths, the entry point on the top level) before building
//! an index, so untrusted bytes give an error, never a panic; `to_bytes` then `from_bytes` gives
//! back the same bytes.

use std::sync::Mutex;

use roaring::RoaringBitmap;

use crate::index::FlatIndex;
use crate::kernels::Precision;
use crate::{VectorError, VectorIndex};

use super::codes::Codes;
use super::{Graph, HnswIndex, HnswParams, MAX_EF, MAX_LEVEL, Traversal, f32_rows};

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
        }
    }
}

/// Magic of a persisted HNSW index.
const MAGIC: [u8; 8] = *b"MDBHNSW\x00";
/// Persisted format version this build writes and reads.
const VERSION: u16 = 1;
const HEADER_LEN: usize = 64;
const TRAILER_LEN: usize = 4;
const WHAT: &str = "HNSW index bytes";

/// Checksum of the persisted form: CRC-32C (Castagnoli), as the segment format uses.
pub(super) fn checksum(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// A bounds-checked reader over persisted bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, section: &'static str, need: u64) -> Result<&'a [u8], VectorError> {
        let have = self.bytes.len() - self.at;
        let too_short = || VectorError::Truncated {
            what: WHAT,
            section,
            at: self.at,
            need,
            have,
        };
        let len = usize::try_from(need).map_err(|_| too_short())?;
        if len > have {
            return Err(too_short());
        }
        let out = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(out)
    }

    fn u16(&mut self, section: &'static str) -> Result<u16, VectorError> {
        let b = self.take(section, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, section: &'static str) -> Result<u32, VectorError> {
        let b = self.take(section, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl HnswIndex {
    /// The persisted form (little-endian):
    ///
    /// ```text
    /// HEADER 64 bytes: 0..8 magic "MDBHNSW\0" | 8..10 version (u16) = 1
    ///   | 10 traversal code (1 f32, 2 f16, 3 i8) | 11 top level | 12..14 M (u16)
    ///   | 14..18 entry row (u32) | 18..22 ef_construction (u32) | 22..26 ef_search (u32)
    ///   | 26..32 zero | 32..40 flat length | 40..48 deleted length | 48..56 graph length
    ///   | 56..64 level seed
    /// FLAT:    the f32 flat block (layout.rs)
    /// DELETED: the deleted rows, roaring portable format
    /// GRAPH:   rows × u8 levels; then per node, per layer 0..=level: u16 count, count × u32 rows
    /// TRAILER: u32 CRC-32C of everything before it
    /// ```
    ///
    /// Traversal codes are not stored: they are re-encoded from the f32 rows on load (the
    /// encoders are deterministic), so they cannot disagree with the rows.
    pub fn to_bytes(&self) -> Vec<u8> {
        let flat = self.flat.as_bytes();
        let mut deleted = Vec::with_capacity(self.flat.deleted().serialized_size());
        // Writing into a Vec cannot fail.
        let _ = self.flat.deleted().serialize_into(&mut deleted);
        let g = &self.graph;
        let mut graph = Vec::with_capacity(g.levels.len() * (1 + 2 + g.m0 * 4));
        graph.extend_from_slice(&g.levels);
        for (node, &level) in g.levels.iter().enumerate() {
            for layer in 0..=level {
                let list = g.neighbours(node as u32, layer);
                graph.extend_from_slice(&(list.len() as u16).to_le_bytes());
                for id in list {
                    graph.extend_from_slice(&id.to_le_bytes());
                }
            }
        }
        let mut out =
            Vec::with_capacity(HEADER_LEN + flat.len() + deleted.len() + graph.len() + TRAILER_LEN);
        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(&MAGIC);
        header[8..10].copy_from_slice(&VERSION.to_le_bytes());
        header[10] = self.params.traversal.code();
        header[11] = g.max_level;
        header[12..14].copy_from_slice(&(self.params.m as u16).to_le_bytes());
        header[14..18].copy_from_slice(&g.entry.to_le_bytes());
        header[18..22].copy_from_slice(&(self.params.ef_construction as u32).to_le_bytes());
        header[22..26].copy_from_slice(&(self.params.ef_search as u32).to_le_bytes());
        header[32..40].copy_from_slice(&(flat.len() as u64).to_le_bytes());
        header[40..48].copy_from_slice(&(deleted.len() as u64).to_le_bytes());
        header[48..56].copy_from_slice(&(graph.len() as u64).to_le_bytes());
        header[56..64].copy_from_slice(&self.params.seed.to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(flat);
        out.extend_from_slice(&deleted);
        out.extend_from_slice(&graph);
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads the persisted form back, checking the checksum and every structural invariant of
    /// the module docs; any violation is an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, VectorError> {
        if bytes.len() < HEADER_LEN + TRAILER_LEN {
            return Err(VectorError::TooShort {
                len: bytes.len(),
                need: HEADER_LEN + TRAILER_LEN,
            });
        }
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&bytes[..8]);
        if magic != MAGIC {
            return Err(VectorError::BadMagic { found: magic });
        }
        let version = le_u16(bytes, 8);
        if version != VERSION {
            return Err(VectorError::UnsupportedVersion {
                found: version,
                supported: VERSION,
            });
        }
        let body_len = bytes.len() - TRAILER_LEN;
        let stored = le_u32(bytes, body_len);
        let computed = checksum(&bytes[..body_len]);
        if stored != computed {
            return Err(VectorError::ChecksumMismatch {
                what: WHAT,
                stored,
                computed,
            });
        }
        let header = &bytes[..HEADER_LEN];
        let traversal = Traversal::from_code(header[10])
            .ok_or(VectorError::UnknownPrecision { code: header[10] })?;
        let max_level = header[11];
        let m = usize::from(le_u16(header, 12));
        let entry = le_u32(header, 14);
        let ef_construction = le_u32(header, 18) as usize;
        let ef_search = le_u32(header, 22) as usize;
        if header[26..32].iter().any(|&b| b != 0) {
            return Err(VectorError::BadHeader {
                field: "reserved",
                value: 0,
                why: "reserved header bytes must be zero",
            });
        }
        let bad = |field: &'static str, value: u64, why: &'static str| VectorError::BadHeader {
            field,
            value,
            why,
        };
        if !(2..=256).contains(&m) {
            return Err(bad("m", m as u64, "must be 2..=256"));
        }
        if max_level > MAX_LEVEL {
            return Err(bad("top level", u64::from(max_level), "at most 16"));
        }
        for (field, ef) in [
            ("ef_construction", ef_construction),
            ("ef_search", ef_search),
        ] {
            if !(1..=MAX_EF).contains(&ef) {
                return Err(bad(field, ef as u64, "must be 1..=65536"));
            }
        }
        let mut reader = Reader {
            bytes: &bytes[..body_len],
            at: HEADER_LEN,
        };
        let flat_bytes = reader.take("flat block", le_u64(header, 32))?;
        let deleted_bytes = reader.take("deleted rows", le_u64(header, 40))?;
        let graph_len = le_u64(header, 48);
        let graph_bytes = reader.take("graph", graph_len)?;
        if reader.at != body_len {
            return Err(VectorError::LengthMismatch {
                rows: 0,
                dim: 0,
                expected: reader.at + TRAILER_LEN,
                found: bytes.len(),
            });
        }
        let mut flat = FlatIndex::from_bytes(flat_bytes)?;
        let view = flat.view()?;
        let (n, dim) = (view.len(), view.dim());
        let (rows, stride) = f32_rows(&view)?;
        let deleted = RoaringBitmap::deserialize_from(deleted_bytes)
            .map_err(|e| VectorError::BadDeleted { why: e.to_string() })?;
        if let Some(max) = deleted.max()
            && max as usize >= n
        {
            return Err(VectorError::BadDeleted {
                why: format!("row {max} is deleted but the block has {n} rows"),
            });
        }
        let graph = parse_graph(graph_bytes, n, m, entry, max_level)?;
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
                ef_construction,
                ef_search,
                traversal,
                seed: le_u64(header, 56),
                threads: 0,
            },
            pool: Mutex::new(Vec::new()),
            prefetch: true,
        })
    }
}

/// Parses and validates the persisted graph of `n` rows.
fn parse_graph(
    bytes: &[u8],
    n: usize,
    m: usize,
    entry: u32,
    max_level: u8,
) -> Result<Graph, VectorError> {
    let bad = |node: usize, layer: u8, why: &'static str, value: u64| VectorError::BadGraph {
        node: node as u64,
        layer,
        why,
        value,
    };
    let mut reader = Reader { bytes, at: 0 };
    let levels = reader.take("graph levels", n as u64)?.to_vec();
    if n == 0 {
        if entry != 0 || max_level != 0 {
            return Err(bad(
                0,
                0,
                "an empty graph has entry 0 and top level 0",
                u64::from(entry),
            ));
        }
    } else {
        if entry as usize >= n {
            return Err(bad(
                entry as usize,
                0,
                "entry point out of range",
                u64::from(entry),
            ));
        }
        if let Some((node, &level)) = levels.iter().enumerate().find(|(_, l)| **l > max_level) {
            return Err(bad(
                node,
                level,
                "level above the top level",
                u64::from(level),
            ));
        }
        if levels[entry as usize] != max_level {
            return Err(bad(
                entry as usize,
                max_level,
                "entry point is not on the top level",
                u64::from(levels[entry as usize]),
            ));
        }
    }
    let m0 = 2 * m;
    let mut layer0 = vec![0u32; n * (m0 + 1)];
    let mut upper: Vec<Vec<Vec<u32>>> = Vec::with_capacity(n);
    for (node, &level) in levels.iter().enumerate() {
        let mut node_upper = Vec::with_capacity(usize::from(level));
        for layer in 0..=level {
            let cap = if layer == 0 { m0 } else { m };
            let count = usize::from(reader.u16("graph links")?);
            if count > cap {
                return Err(bad(
                    node,
                    layer,
                    "more links than the layer allows",
                    count as u64,
                ));
            }
            let mut list = Vec::with_capacity(count);
            for _ in 0..count {
                let id = reader.u32("graph links")?;
                if id as usize >= n {
                    return Err(bad(
                        node,
                        layer,
                        "link to a row out of range",
                        u64::from(id),
                    ));
                }
                if levels[id as usize] < layer {
                    return Err(bad(
                        node,
                        layer,
                        "link to a node below this layer",
                        u64::from(id),
                    ));
                }
                list.push(id);
            }
            if layer == 0 {
                let at = node * (m0 + 1);
                layer0[at] = count as u32;
                layer0[at + 1..at + 1 + count].copy_from_slice(&list);
            } else {
                node_upper.push(list);
            }
        }
        upper.push(node_upper);
    }
    if reader.at != bytes.len() {
        return Err(bad(
            n,
            0,
            "bytes left after the last node",
            (bytes.len() - reader.at) as u64,
        ));
    }
    let mut graph = Graph::freeze(m, levels, layer0, upper, entry);
    graph.max_level = max_level;
    Ok(graph)
}
