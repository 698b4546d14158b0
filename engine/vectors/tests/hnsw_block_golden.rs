//! Golden test of the HNSW graph block (SPEC.md §5.2): a graph block written by hand from the
//! specification must load, search as its links say, and be written back byte for byte; the file
//! in `golden/vectors-v1/` (written from the hand-built bytes when missing) must equal it. A change
//! here is a format change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use memdb_vectors::{Filter, FlatIndexWriter, HnswIndex, Route, VectorIndex};

/// Four rows of dimension 2 on the unit circle, keys 10..14.
const ROWS: [[f32; 2]; 4] = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]];

fn flat_block() -> Vec<u8> {
    let mut writer = FlatIndexWriter::new(memdb_vectors::Precision::F32, 2).unwrap();
    for (i, row) in ROWS.iter().enumerate() {
        writer.push(10 + i as u64, i as i64, 0, row).unwrap();
    }
    writer.finish().unwrap().as_bytes().to_vec()
}

/// The graph block as SPEC.md §5.2 describes it: M = 2, i8 traversal, row 0 alone on layer 1
/// (the entry point), layer 0 a ring 0–1–2–3–0.
fn spec_graph_block() -> Vec<u8> {
    let flat = flat_block();
    // No deleted rows: the empty roaring bitmap, portable format (cookie 12346, 0 containers).
    let deleted: Vec<u8> = vec![0x3a, 0x30, 0, 0, 0, 0, 0, 0];
    let mut graph = vec![1u8, 0, 0, 0];
    // (row, layer) lists in row order, layers ascending.
    let lists: [&[u32]; 5] = [&[1, 3], &[], &[0, 2], &[1, 3], &[2, 0]];
    for list in lists {
        graph.extend_from_slice(&(list.len() as u16).to_le_bytes());
        for row in list {
            graph.extend_from_slice(&row.to_le_bytes());
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"MDBHNSW\0");
    out.extend_from_slice(&1u16.to_le_bytes());
    out.push(3); // i8 traversal
    out.push(1); // top level
    out.extend_from_slice(&2u16.to_le_bytes()); // M
    out.extend_from_slice(&0u32.to_le_bytes()); // entry row
    out.extend_from_slice(&8u32.to_le_bytes()); // ef_construction
    out.extend_from_slice(&4u32.to_le_bytes()); // ef_search
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&(flat.len() as u64).to_le_bytes());
    out.extend_from_slice(&(deleted.len() as u64).to_le_bytes());
    out.extend_from_slice(&(graph.len() as u64).to_le_bytes());
    out.extend_from_slice(&42u64.to_le_bytes()); // level seed
    assert_eq!(out.len(), 64);
    out.extend_from_slice(&flat);
    out.extend_from_slice(&deleted);
    out.extend_from_slice(&graph);
    let sum = crc32c::crc32c(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

#[test]
fn hnsw_blocks_match_the_specification_byte_for_byte() {
    let spec = spec_graph_block();
    let index = HnswIndex::from_bytes(&spec).expect("the hand-built block loads");
    assert_eq!(index.len(), ROWS.len());
    let params = index.params();
    assert_eq!(
        (params.m, params.ef_construction, params.ef_search),
        (2, 8, 4)
    );
    assert_eq!(params.seed, 42);
    assert_eq!(index.to_bytes(), spec, "written back differently");

    // Walking the hand-made links finds every row, best first.
    for (i, row) in ROWS.iter().enumerate() {
        let hits = index
            .search_with(row, 2, &Filter::new(), 4, Route::Graph)
            .unwrap();
        assert_eq!(hits[0].id, 10 + i as u64, "query row {i}");
        assert_eq!(hits[0].score, 1.0);
    }

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/vectors-v1");
    let path = dir.join("hnsw_i8_m2.bin");
    if !path.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, &spec).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        spec,
        "{} differs from SPEC.md §5.2",
        path.display()
    );
}

#[test]
fn hnsw_blocks_that_break_the_specification_are_refused() {
    let spec = spec_graph_block();
    let body = spec.len() - 4;
    let resealed = |mut b: Vec<u8>| {
        let sum = crc32c::crc32c(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
        b
    };
    // A flipped bit anywhere is caught by the trailer.
    for at in [0, 11, 40, 64, body - 1, body] {
        let mut b = spec.clone();
        b[at] ^= 0x10;
        assert!(HnswIndex::from_bytes(&b).is_err(), "flip at {at} accepted");
    }
    let graph_at = body - (4 + 2 * 5 + 4 * 8);
    // (what, byte offset, value written there)
    let cases = [
        ("reserved byte", 26, 1),
        ("M = 1", 12, 1),
        ("top level 17", 11, 17),
        ("entry row out of range", 14, 9),
        ("entry not on the top level", 14, 1),
        ("row level above the top", graph_at + 1, 2),
        // Row 0's layer-0 list: its first link names row 7.
        ("link out of range", graph_at + 4 + 2, 7),
        // Row 0's layer-0 count: 5 links where 2·M = 4 are allowed.
        ("list longer than 2·M", graph_at + 4, 5),
    ];
    for (what, at, value) in cases {
        let mut b = spec.clone();
        b[at] = value;
        let b = resealed(b);
        assert!(HnswIndex::from_bytes(&b).is_err(), "{what} accepted");
    }
    // Truncated anywhere: an error, never a panic.
    for len in 0..spec.len() {
        assert!(HnswIndex::from_bytes(&spec[..len]).is_err(), "length {len}");
    }
}
