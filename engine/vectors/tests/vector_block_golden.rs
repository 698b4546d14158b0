//! Golden test of the vector block layout (SPEC.md §5.1): blocks built by `FlatIndexWriter` must
//! equal blocks built by hand from the specification, and the files in `golden/vectors-v1/`
//! (written from the hand-built bytes when missing). A change here is a format change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use memdb_vectors::{FlatIndexWriter, FlatView, Precision};

/// Rows of the sample block: (key, time ms, source, values).
fn sample_rows() -> Vec<(u64, i64, u8, [f32; 3])> {
    vec![
        (7, 1_700_000_000_000, 4, [0.5, -0.25, 1.0]),
        (u64::MAX, -1, 255, [0.0, 0.0, 0.0]),
    ]
}

fn pad64(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(64) {
        out.push(0);
    }
}

/// The block as SPEC.md §5.1 describes it, written out byte by byte.
fn spec_block(precision: Precision) -> Vec<u8> {
    let rows = sample_rows();
    let dim = 3usize;
    let (code, row_bytes) = match precision {
        Precision::F32 => (1u8, dim * 4),
        Precision::F16 => (2, dim * 2),
        Precision::I8 => (3, dim),
        // Two values per byte: ⌈3/2⌉ = 2 bytes.
        Precision::I4 => (4, dim.div_ceil(2)),
        other => panic!("no golden block for {other}"),
    };
    let stride = row_bytes.div_ceil(64) * 64;
    let mut out = Vec::new();
    out.extend_from_slice(b"MDBVECS\0");
    out.extend_from_slice(&1u16.to_le_bytes());
    out.push(code);
    out.push(0);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    out.extend_from_slice(&(stride as u32).to_le_bytes());
    pad64(&mut out);
    let mut scales = Vec::new();
    for (_, _, _, values) in &rows {
        let start = out.len();
        match precision {
            Precision::F32 => values
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            Precision::F16 => values.iter().for_each(|v| {
                out.extend_from_slice(&half::f16::from_f32(*v).to_bits().to_le_bytes())
            }),
            Precision::I8 => {
                let max = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let scale = if max == 0.0 { 0.0 } else { max / 127.0 };
                scales.push(scale);
                for v in values {
                    let q = if max == 0.0 {
                        0
                    } else {
                        (v * (127.0 / max)).round() as i8
                    };
                    out.push(q as u8);
                }
            }
            Precision::I4 => {
                // q = round(v · 7 / max) in −7..=7, stored as the nibble q + 8; with h = 2,
                // byte 0 holds values 0 (low) and 2 (high), byte 1 value 1 and the padding 8.
                let max = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let scale = if max == 0.0 { 0.0 } else { max / 7.0 };
                scales.push(scale);
                let u = |v: f32| -> u8 {
                    if max == 0.0 {
                        8
                    } else {
                        ((v * (7.0 / max)).round() as i8 + 8) as u8
                    }
                };
                out.push(u(values[0]) | (u(values[2]) << 4));
                out.push(u(values[1]) | (8 << 4));
            }
            other => panic!("no golden block for {other}"),
        }
        out.resize(start + stride, 0);
    }
    pad64(&mut out);
    if matches!(precision, Precision::I8 | Precision::I4) {
        scales
            .iter()
            .for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
        pad64(&mut out);
    }
    rows.iter()
        .for_each(|r| out.extend_from_slice(&r.0.to_le_bytes()));
    pad64(&mut out);
    rows.iter()
        .for_each(|r| out.extend_from_slice(&r.1.to_le_bytes()));
    pad64(&mut out);
    rows.iter().for_each(|r| out.push(r.2));
    pad64(&mut out);
    out
}

fn built_block(precision: Precision) -> Vec<u8> {
    let mut writer = FlatIndexWriter::new(precision, 3).unwrap();
    for (key, time, source, values) in sample_rows() {
        writer.push(key, time, source, &values).unwrap();
    }
    writer.finish().unwrap().as_bytes().to_vec()
}

fn golden(name: &str, bytes: &[u8]) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/vectors-v1");
    let path = dir.join(name);
    if !path.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "{} differs from SPEC.md §5.1",
        path.display()
    );
}

#[test]
fn vector_blocks_match_the_specification_byte_for_byte() {
    for (precision, name) in [
        (Precision::F32, "block_f32.bin"),
        (Precision::F16, "block_f16.bin"),
        (Precision::I8, "block_i8.bin"),
        (Precision::I4, "block_i4.bin"),
    ] {
        let spec = spec_block(precision);
        assert_eq!(built_block(precision), spec, "{precision} block");
        golden(name, &spec);
        // And the reader takes the golden bytes back (copied to an aligned buffer).
        let index = memdb_vectors::FlatIndex::from_bytes(&spec).unwrap();
        let view: FlatView<'_> = index.view().unwrap();
        assert_eq!(view.len(), 2);
        assert_eq!(view.id(1), Some(u64::MAX));
        assert_eq!(view.time(0), Some(1_700_000_000_000));
        assert_eq!(view.source(1), Some(255));
    }
}
