//! The bytes of an HNSW graph block (SPEC.md §5.2): header, the f32 flat block, the deleted
//! rows, the graph's levels and link lists, and a CRC-32C trailer.
//!
//! ```text
//! HEADER 64 bytes: 0..8 magic "MDBHNSW\0" | 8..10 version (u16) = 1
//!   | 10 traversal code | 11 top level | 12..14 M (u16) | 14..18 entry row (u32)
//!   | 18..22 ef_construction (u32) | 22..26 ef_search (u32) | 26..32 zero
//!   | 32..40 flat length | 40..48 deleted length | 48..56 graph length | 56..64 level seed
//! FLAT:    the f32 flat block (SPEC.md §5.1)
//! DELETED: the deleted rows, roaring portable format
//! GRAPH:   rows × u8 levels; then per row, per layer 0..=level: u16 count, count × u32 rows
//! TRAILER: u32 CRC-32C of everything before it
//! ```
//!
//! Owns: [`HnswBlock`] (header and sections) and [`HnswGraph`] (the GRAPH section), each with
//! `encode` / `decode`. The two other sections are bytes here: the flat block's layout belongs
//! to `memdb-vectors` (which reads it in place), and the deleted rows are roaring's own format.
//! So decoding takes two steps: [`HnswBlock::decode`] checks the trailer, the header and the
//! section lengths; [`HnswGraph::decode`] then checks the graph against the row count the flat
//! block's header gives. `memdb-vectors` turns the result into a searchable index.
//!
//! **Invariants:** the bytes change only with [`VERSION`] (the golden test
//! `engine/vectors/tests/hnsw_block_golden.rs` holds them); decoding treats them as untrusted:
//! every read is bounds-checked and every check of SPEC.md §5.2 that needs only these bytes and
//! the row count fails with a [`FormatError`], never a panic; `decode` then `encode` gives back
//! the same bytes.

use crate::FormatError;
use crate::bytes::{PutLe, Reader, crc32c};

/// Magic of an HNSW graph block.
const MAGIC: [u8; 8] = *b"MDBHNSW\x00";
/// Format version this build writes and reads.
pub const VERSION: u16 = 1;
/// Smallest M (links per node on the upper layers; layer 0 keeps 2·M).
pub const MIN_M: u16 = 2;
/// Largest M.
pub const MAX_M: u16 = 256;
/// Largest `ef_construction` and `ef_search` a block may carry (both at least 1).
pub const MAX_EF: u32 = 1 << 16;
/// Highest level a row, and so the top level, may have.
pub const MAX_TOP_LEVEL: u8 = 16;

const HEADER_LEN: usize = 64;
const RESERVED_AT: usize = 26;
const RESERVED_LEN: usize = 6;
const TRAILER_LEN: usize = 4;
const WHAT: &str = "HNSW block";
const GRAPH: &str = "HNSW graph";

/// The header fields of an HNSW graph block, as stored (the section lengths are those of
/// [`HnswBlock`]'s sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswHeader {
    /// Precision code of the codes the graph is walked with (1 f32, 2 f16, 3 i8: the flat
    /// block's precision codes). Not checked here: `memdb-vectors` gives it its meaning.
    pub traversal: u8,
    /// The entry row's level, the highest of all ([`MAX_TOP_LEVEL`] at most).
    pub top_level: u8,
    /// Links per node on the upper layers; layer 0 keeps `2·m` ([`MIN_M`]`..=`[`MAX_M`]).
    pub m: u16,
    /// Row the search starts from.
    pub entry: u32,
    /// Candidate list size the graph was built with (1..=[`MAX_EF`]).
    pub ef_construction: u32,
    /// Default candidate list size of a search (1..=[`MAX_EF`]).
    pub ef_search: u32,
    /// Seed of the level draw.
    pub seed: u64,
}

/// An HNSW graph block: its header and its three sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswBlock<'a> {
    /// The header fields.
    pub header: HnswHeader,
    /// The f32 flat block whose rows the graph links (SPEC.md §5.1).
    pub flat: &'a [u8],
    /// Rows deleted when the graph was built, roaring portable serialization.
    pub deleted: &'a [u8],
    /// The GRAPH section: [`HnswGraph::encode`]'s output, read with [`HnswGraph::decode`].
    pub graph: &'a [u8],
}

impl<'a> HnswBlock<'a> {
    /// The block's bytes, trailer included.
    pub fn encode(&self) -> Vec<u8> {
        let h = &self.header;
        let mut out = Vec::with_capacity(
            HEADER_LEN + self.flat.len() + self.deleted.len() + self.graph.len() + TRAILER_LEN,
        );
        out.extend_from_slice(&MAGIC);
        out.put_u16(VERSION);
        out.put_u8(h.traversal);
        out.put_u8(h.top_level);
        out.put_u16(h.m);
        out.put_u32(h.entry);
        out.put_u32(h.ef_construction);
        out.put_u32(h.ef_search);
        out.extend_from_slice(&[0; RESERVED_LEN]);
        for section in [self.flat, self.deleted, self.graph] {
            out.put_u64(section.len() as u64);
        }
        out.put_u64(h.seed);
        for section in [self.flat, self.deleted, self.graph] {
            out.extend_from_slice(section);
        }
        let sum = crc32c(&out);
        out.put_u32(sum);
        out
    }

    /// Reads a block: its length, magic, version and checksum, then the header's ranges and
    /// reserved bytes, then that the sections fill the bytes exactly. The sections themselves
    /// are not read.
    pub fn decode(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let Some(body_len) = bytes
            .len()
            .checked_sub(TRAILER_LEN)
            .filter(|&len| len >= HEADER_LEN)
        else {
            return Err(FormatError::Truncated {
                what: WHAT,
                offset: 0,
                need: (HEADER_LEN + TRAILER_LEN) as u64,
                have: bytes.len() as u64,
            });
        };
        let (body, trailer) = bytes.split_at(body_len);
        let mut r = Reader::new(WHAT, body);
        // Magic and version before the checksum: bytes of another kind, or of a later version
        // with another trailer, are named for what they are rather than as damage.
        let magic: [u8; 8] = r.array()?;
        if magic != MAGIC {
            return Err(FormatError::BadMagic {
                what: WHAT,
                offset: 0,
                found: magic.to_vec(),
            });
        }
        FormatError::check_version(WHAT, r.u16()?, VERSION)?;
        FormatError::check_crc(WHAT, 0, Reader::new(WHAT, trailer).u32()?, body)?;
        let (header, [flat_len, deleted_len, graph_len]) = read_header(&mut r)?;
        r.enter("HNSW block FLAT section");
        let flat = r.take_u64(flat_len)?;
        r.enter("HNSW block DELETED section");
        let deleted = r.take_u64(deleted_len)?;
        r.enter("HNSW block GRAPH section");
        let graph = r.take_u64(graph_len)?;
        if r.remaining() != 0 {
            let left = r.remaining();
            return Err(r.invalid(
                r.position(),
                format!("{left} bytes between the last section and the trailer"),
            ));
        }
        Ok(Self {
            header,
            flat,
            deleted,
            graph,
        })
    }
}

/// Header bytes 10..64, range-checked: the fields, and the flat, deleted and graph lengths.
fn read_header(r: &mut Reader<'_>) -> Result<(HnswHeader, [u64; 3]), FormatError> {
    let traversal = r.u8()?;
    let top_level_at = r.position();
    let top_level = r.u8()?;
    let m_at = r.position();
    let m = r.u16()?;
    let entry = r.u32()?;
    let ef_construction_at = r.position();
    let ef_construction = r.u32()?;
    let ef_search_at = r.position();
    let ef_search = r.u32()?;
    let reserved: [u8; RESERVED_LEN] = r.array()?;
    if reserved != [0; RESERVED_LEN] {
        return Err(r.invalid(
            RESERVED_AT,
            format!("reserved header bytes {reserved:02x?} must be zero"),
        ));
    }
    if !(MIN_M..=MAX_M).contains(&m) {
        return Err(r.invalid(m_at, format!("M {m} is not in {MIN_M}..={MAX_M}")));
    }
    if top_level > MAX_TOP_LEVEL {
        return Err(r.invalid(
            top_level_at,
            format!("top level {top_level} is above {MAX_TOP_LEVEL}"),
        ));
    }
    for (field, at, ef) in [
        ("ef_construction", ef_construction_at, ef_construction),
        ("ef_search", ef_search_at, ef_search),
    ] {
        if !(1..=MAX_EF).contains(&ef) {
            return Err(r.invalid(at, format!("{field} {ef} is not in 1..={MAX_EF}")));
        }
    }
    let lengths = [r.u64()?, r.u64()?, r.u64()?];
    let seed = r.u64()?;
    let header = HnswHeader {
        traversal,
        top_level,
        m,
        entry,
        ef_construction,
        ef_search,
        seed,
    };
    Ok((header, lengths))
}

/// The GRAPH section: each row's level and its link lists, one per layer `0..=level`.
///
/// Built with [`HnswGraph::collect`] or [`HnswGraph::decode`] only, so the lists always match
/// the levels.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HnswGraph {
    levels: Vec<u8>,
    /// Every list in stored order (row by row, layers ascending): its length, then its rows.
    lists: Vec<u32>,
}

impl HnswGraph {
    /// The graph of rows with `levels`, row `r`'s list on `layer` being `list(r, layer)`.
    /// A list is written as at most `u16::MAX` rows, as much as its count can say (an index
    /// keeps at most `2·MAX_M` per list).
    pub fn collect<'g>(levels: &[u8], mut list: impl FnMut(u32, u8) -> &'g [u32]) -> Self {
        let mut lists = Vec::new();
        for (row, &level) in levels.iter().enumerate() {
            for layer in 0..=level {
                let links = list(row as u32, layer);
                let links = &links[..links.len().min(usize::from(u16::MAX))];
                lists.push(links.len() as u32);
                lists.extend_from_slice(links);
            }
        }
        Self {
            levels: levels.to_vec(),
            lists,
        }
    }

    /// Each row's level.
    pub fn levels(&self) -> &[u8] {
        &self.levels
    }

    /// Every link list in stored order: `(row, layer, rows linked)`.
    pub fn lists(&self) -> impl Iterator<Item = (u32, u8, &[u32])> + '_ {
        let mut at = 0usize;
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(row, &level)| (0..=level).map(move |layer| (row as u32, layer)))
            .map_while(move |(row, layer)| {
                let count = *self.lists.get(at)? as usize;
                let links = self.lists.get(at + 1..at + 1 + count)?;
                at += 1 + count;
                Some((row, layer, links))
            })
    }

    /// The GRAPH section's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.levels.len() + self.lists.len() * 4);
        out.extend_from_slice(&self.levels);
        for (_, _, links) in self.lists() {
            // `collect` and `decode` keep every count within u16.
            out.put_u16(links.len() as u16);
            for &row in links {
                out.put_u32(row);
            }
        }
        out
    }

    /// Reads the GRAPH section of a block whose flat block has `rows` rows, checking it against
    /// `header`: the entry row in range and on the top level (an empty graph: entry 0, top level
    /// 0), no level above the top level, at most `2·M` links on layer 0 and `M` above, every link
    /// to a row in range whose level reaches the layer, no bytes after the last row.
    pub fn decode(bytes: &[u8], rows: usize, header: &HnswHeader) -> Result<Self, FormatError> {
        let mut r = Reader::new(GRAPH, bytes);
        let levels = r.take(rows)?.to_vec();
        let (entry, top) = (header.entry, header.top_level);
        if rows == 0 {
            if entry != 0 || top != 0 {
                return Err(r.invalid(
                    0,
                    format!(
                        "an empty graph has entry row 0 and top level 0, not {entry} and {top}"
                    ),
                ));
            }
        } else {
            let Some(&entry_level) = levels.get(entry as usize) else {
                return Err(r.invalid(
                    0,
                    format!("entry row {entry} is out of range ({rows} rows)"),
                ));
            };
            if let Some((row, &level)) = levels.iter().enumerate().find(|(_, l)| **l > top) {
                return Err(r.invalid(
                    row,
                    format!("row {row} has level {level}, above the top level {top}"),
                ));
            }
            if entry_level != top {
                return Err(r.invalid(
                    entry as usize,
                    format!("entry row {entry} has level {entry_level}, not the top level {top}"),
                ));
            }
        }
        let m = usize::from(header.m);
        // Each stored count (2 bytes) and link (4 bytes) is one u32 here: the allocation is
        // bounded by the bytes given, whatever the counts claim.
        let mut lists = Vec::with_capacity(r.remaining() / 2);
        for (row, &level) in levels.iter().enumerate() {
            for layer in 0..=level {
                let cap = if layer == 0 { 2 * m } else { m };
                let at = r.position();
                let count = r.u16()?;
                if usize::from(count) > cap {
                    return Err(r.invalid(
                        at,
                        format!(
                            "row {row}, layer {layer}: {count} links, more than the {cap} the \
                             layer allows"
                        ),
                    ));
                }
                lists.push(u32::from(count));
                for _ in 0..count {
                    let at = r.position();
                    let link = r.u32()?;
                    match levels.get(link as usize) {
                        None => {
                            return Err(r.invalid(
                                at,
                                format!(
                                    "row {row}, layer {layer}: link to row {link}, out of range \
                                     ({rows} rows)"
                                ),
                            ));
                        }
                        Some(&level) if level < layer => {
                            return Err(r.invalid(
                                at,
                                format!(
                                    "row {row}, layer {layer}: link to row {link}, whose level \
                                     {level} is below the layer"
                                ),
                            ));
                        }
                        Some(_) => lists.push(link),
                    }
                }
            }
        }
        if r.remaining() != 0 {
            let left = r.remaining();
            return Err(r.invalid(r.position(), format!("{left} bytes after the last row")));
        }
        Ok(Self { levels, lists })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Four rows, M = 2: row 0 alone on layer 1 (the entry point), layer 0 a ring 0–1–2–3–0
    /// (the graph of the golden test in `memdb-vectors`).
    fn ring() -> HnswGraph {
        let levels = [1u8, 0, 0, 0];
        let lists: [&[u32]; 5] = [&[1, 3], &[], &[0, 2], &[1, 3], &[2, 0]];
        let mut next = lists.into_iter();
        HnswGraph::collect(&levels, |_, _| next.next().unwrap_or(&[]))
    }

    fn header() -> HnswHeader {
        HnswHeader {
            traversal: 3,
            top_level: 1,
            m: 2,
            entry: 0,
            ef_construction: 8,
            ef_search: 4,
            seed: 42,
        }
    }

    fn block_bytes(graph: &[u8]) -> Vec<u8> {
        HnswBlock {
            header: header(),
            flat: b"flat block bytes",
            deleted: &[0x3a, 0x30, 0, 0, 0, 0, 0, 0],
            graph,
        }
        .encode()
    }

    /// Re-seals `bytes` after an edit, so that a structural check, not the checksum, must
    /// catch it.
    fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
        let body = bytes.len() - TRAILER_LEN;
        let sum = crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
        bytes
    }

    #[test]
    fn the_graph_section_is_as_specified_and_round_trips() {
        let graph = ring();
        let bytes = graph.encode();
        let mut want = vec![1u8, 0, 0, 0];
        for list in [&[1u32, 3][..], &[], &[0, 2], &[1, 3], &[2, 0]] {
            want.extend_from_slice(&(list.len() as u16).to_le_bytes());
            for row in list {
                want.extend_from_slice(&row.to_le_bytes());
            }
        }
        assert_eq!(bytes, want);
        let back = HnswGraph::decode(&bytes, 4, &header()).unwrap();
        assert_eq!(back, graph);
        let lists: Vec<(u32, u8, Vec<u32>)> =
            back.lists().map(|(r, l, s)| (r, l, s.to_vec())).collect();
        assert_eq!(
            lists,
            [
                (0, 0, vec![1, 3]),
                (0, 1, vec![]),
                (1, 0, vec![0, 2]),
                (2, 0, vec![1, 3]),
                (3, 0, vec![2, 0])
            ]
        );
    }

    #[test]
    fn blocks_round_trip_and_every_truncation_or_flip_is_an_error() {
        let graph = ring().encode();
        let bytes = block_bytes(&graph);
        assert_eq!(&bytes[..8], b"MDBHNSW\0");
        assert_eq!(bytes.len(), 64 + 16 + 8 + graph.len() + 4);
        let block = HnswBlock::decode(&bytes).unwrap();
        assert_eq!(block.header, header());
        assert_eq!(block.flat, b"flat block bytes");
        assert_eq!(block.graph, graph.as_slice());
        assert_eq!(block.encode(), bytes);
        // Every prefix, every byte with one bit flipped, and one byte too many.
        let prefixes = (0..bytes.len()).map(|len| bytes[..len].to_vec());
        let flips = (0..bytes.len()).map(|at| {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            b
        });
        let longer = std::iter::once([&bytes[..], &[0]].concat());
        for (i, b) in prefixes.chain(flips).chain(longer).enumerate() {
            assert!(HnswBlock::decode(&b).is_err(), "variant {i}");
        }
    }

    #[test]
    fn header_errors_are_typed_and_placed() {
        let bytes = block_bytes(&ring().encode());
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(matches!(
            HnswBlock::decode(&b),
            Err(FormatError::BadMagic { .. })
        ));
        let mut b = bytes.clone();
        b[8] = 9;
        assert!(matches!(
            HnswBlock::decode(&b),
            Err(FormatError::UnsupportedVersion { found: 9, .. })
        ));
        let mut b = bytes.clone();
        b[100] ^= 1;
        assert!(matches!(
            HnswBlock::decode(&b),
            Err(FormatError::Checksum { .. })
        ));
        // (byte offset, value written there, offset the error names)
        for (at, value, offset) in [
            (26, 1, 26),
            (12, 1, 12),
            (11, 17, 11),
            (18, 0, 18),
            (24, 1, 22),
        ] {
            let mut b = bytes.clone();
            b[at] = value;
            match HnswBlock::decode(&resealed(b)) {
                Err(FormatError::Invalid { offset: o, .. }) => assert_eq!(o, offset, "byte {at}"),
                other => panic!("byte {at} = {value}: {other:?}"),
            }
        }
        // A section longer than the block.
        let mut b = bytes.clone();
        b[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            HnswBlock::decode(&resealed(b)),
            Err(FormatError::Truncated { .. })
        ));
    }

    #[test]
    fn graph_errors_are_refused() {
        let graph = ring().encode();
        let ok = |b: &[u8], rows| HnswGraph::decode(b, rows, &header());
        assert!(ok(&graph, 4).is_ok());
        assert!(ok(&graph, 3).is_err(), "fewer rows");
        assert!(ok(&graph, 5).is_err(), "more rows");
        let at_lists = 4;
        // (what, byte offset, value written there)
        for (what, at, value) in [
            ("row level above the top", 1, 2),
            ("entry not on the top level", 0, 0),
            ("link out of range", at_lists + 2, 7),
            ("list longer than 2·M", at_lists, 5),
        ] {
            let mut b = graph.clone();
            b[at] = value;
            assert!(ok(&b, 4).is_err(), "{what} accepted");
        }
        let mut b = graph.clone();
        b.push(0);
        assert!(ok(&b, 4).is_err(), "trailing byte");
        // Row 0's layer-1 list links row 1, whose level is 0.
        let levels = [1u8, 0, 0, 0];
        let below = HnswGraph::collect(&levels, |row, layer| match (row, layer) {
            (0, 1) => &[1],
            _ => &[],
        });
        assert!(ok(&below.encode(), 4).is_err(), "link below its layer");
        let empty = HnswHeader {
            top_level: 0,
            ..header()
        };
        assert!(HnswGraph::decode(&[], 0, &empty).is_ok());
        assert!(HnswGraph::decode(&[], 0, &header()).is_err());
        let far = HnswHeader {
            entry: 9,
            ..header()
        };
        assert!(HnswGraph::decode(&graph, 4, &far).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            rows in 0usize..40,
            m in any::<u16>(),
            top_level in any::<u8>(),
            entry in 0u32..50,
        ) {
            if let Ok(block) = HnswBlock::decode(&bytes) {
                prop_assert_eq!(block.encode(), bytes.clone());
            }
            let header = HnswHeader { m, top_level, entry, ..header() };
            if let Ok(graph) = HnswGraph::decode(&bytes, rows, &header) {
                prop_assert_eq!(graph.encode(), bytes);
            }
        }
    }
}
