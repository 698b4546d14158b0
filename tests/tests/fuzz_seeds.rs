//! The committed seed corpora of the fuzz targets (`fuzz/seeds/TARGET`): the binary seeds are
//! made by memdb-formats' own encoders, so they must change when the formats do. This test fails
//! when a committed seed differs from what the encoders now write;
//! `UPDATE_SEEDS=1 cargo test -p memdb-it --test fuzz_seeds` rewrites them. It also keeps every
//! corpus small (< 50 KB), as CI clones it.
//!
//! It lives in the main workspace, not in `fuzz/` (its own workspace, built on nightly with
//! coverage instrumentation), so that it reuses the test build instead of compiling every
//! dependency a third time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use memdb_formats::item::{
    Camera, CaptionProvenance, EventTime, GeoPoint, ItemFields, ItemRecord, Location, Orientation,
    PlaceName, Source, encode_record, put_framed,
};
use memdb_formats::segment::{
    ENTRY_HEADER_BYTES, EntryKind, FooterRecord, SEGMENT_HEADER_BYTES, SegmentHeader,
    TRAILER_BYTES, Trailer, encode_entry, encode_footer,
};
use memdb_vectors::{FlatIndexWriter, HnswIndex, HnswParams, Precision, VectorIndex};

const TARGETS: [&str; 24] = [
    "atm_memory",
    "key_header",
    "atm_qa",
    "gate_reply",
    "caption_reply",
    "memory_reply",
    "scene_toml",
    "segment_entry",
    "segment_salvage",
    "item_record",
    "jsonl_line",
    "locomo_file",
    "vector_block",
    "node_extract",
    "query_parse",
    "mail_message",
    "photo_file",
    "page_layout",
    "forget_policy",
    "op_batch",
    "id_list",
    "safetensors_index",
    "remember_text",
    "time_phrase",
];
const MAX_CORPUS_BYTES: u64 = 50 * 1024;

/// `fuzz/`, beside this crate.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fuzz")
}

fn seeds_dir(target: &str) -> PathBuf {
    fuzz_dir().join("seeds").join(target)
}

fn records() -> Vec<ItemRecord> {
    let time = EventTime::parse("2023-05-08T13:56:00+02:00").unwrap();
    let mut full = ItemFields::new(Source::Image, time);
    full.external_id = Some("photos/IMG_0412.jpg".into());
    full.location = Some(Location {
        name: Some("Lisbon".into()),
        geo: Some(GeoPoint {
            lat: 38.72,
            lon: -9.14,
        }),
        // Every field of record version 2, so the fuzzer starts from them.
        place: Some(PlaceName {
            city: "Lisbon".into(),
            locality: Some("Alfama".into()),
            region: Some("Lisbon".into()),
            country: Some("Portugal".into()),
            country_code: Some("PT".into()),
            distance_m: Some(1_200),
            geonames_id: Some(2_267_057),
        }),
    });
    full.camera = Some(Camera {
        make: Some("Apple".into()),
        model: Some("iPhone 6".into()),
        lens: Some("iPhone 6 back camera 4.15mm f/2.2".into()),
    });
    full.orientation = Some(Orientation::Portrait);
    full.short_caption = Some("red roofs".into());
    full.caption_provenance = Some(CaptionProvenance {
        model: "vlm".into(),
        at_ms: 1_700_000_000_000,
    });
    full.entities = vec!["Ana".into(), "Lisbon".into()];
    full.tags = vec!["travel".into()];
    full.ocr = Some("MIRADOURO".into());
    full.caption = Some("red roofs at sunset".into());
    full.summary = Some("view from the miradouro".into());
    full.body = Some("é ünïcödé ✓".into());
    full.speaker = Some("Ana".into());
    full.from = Some("ana@example.org".into());
    full.to = vec!["ben@example.org".into()];
    let minimal = ItemFields::new(Source::Note, EventTime::utc(0));
    let mut named_only = ItemFields::new(Source::Chat, EventTime::utc(-62_135_596_800_000));
    named_only.location = Some(Location {
        name: Some("Home".into()),
        geo: None,
        place: None,
    });
    let mut mail = ItemFields::new(Source::Email, time);
    mail.from = Some("ana@example.org".into());
    mail.summary = Some("Re: the Lisbon trip".into());
    mail.body = Some(
        (1..=12)
            .map(|day| format!("Day {day}: breakfast at 8, the tram to Belém, dinner in Alfama.\n"))
            .collect(),
    );
    vec![
        ItemRecord {
            id: 7,
            ingest_time_ms: 1_700_000_000_000,
            fields: full,
            supersedes: Some(3),
            blobs: vec![1, 2],
        },
        ItemRecord {
            id: 0,
            ingest_time_ms: 0,
            fields: minimal,
            supersedes: None,
            blobs: vec![],
        },
        ItemRecord {
            id: u64::MAX,
            ingest_time_ms: -1,
            fields: named_only,
            supersedes: None,
            blobs: vec![u64::MAX],
        },
        // Long enough to be written as record version 3 (its fields in a zstd frame), so the
        // fuzzer starts from the decompressing path too.
        ItemRecord {
            id: 12,
            ingest_time_ms: 1_700_000_000_000,
            fields: mail,
            supersedes: None,
            blobs: vec![],
        },
    ]
}

fn framed(record: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_framed(&mut out, record).unwrap();
    out
}

/// Whole segment files for the salvage reader: sound, with a flipped bit in the item block (one
/// frame lost, the others found), and cut short in its last entry.
fn damaged_segments(block: &[u8]) -> Vec<(&'static str, String, Vec<u8>)> {
    let mut file = SegmentHeader {
        segment_id: 7,
        created_unix_ms: 1_700_000_000_000,
        sealed: false,
        key_salt: None,
    }
    .encode()
    .to_vec();
    file.resize(4096, 0);
    file.extend(encode_entry(EntryKind::ItemBlock, 7, block));
    file.extend(encode_entry(
        EntryKind::Blob,
        7,
        b"\xff\xd8\xff\xe0 a tiny blob",
    ));
    let mut flipped = file.clone();
    flipped[4096 + ENTRY_HEADER_BYTES + 20] ^= 0x08;
    let cut = file[..file.len() - 4096 + 40].to_vec();
    vec![
        ("segment_salvage", "sound.seg".into(), file),
        ("segment_salvage", "flipped.seg".into(), flipped),
        ("segment_salvage", "cut.seg".into(), cut),
    ]
}

/// An entry without its zero padding: the decoders need no more, and seeds stay small.
fn entry(kind: EntryKind, payload: &[u8]) -> Vec<u8> {
    let mut bytes = encode_entry(kind, 7, payload);
    bytes.truncate(ENTRY_HEADER_BYTES + payload.len());
    bytes
}

fn generated() -> Vec<(&'static str, String, Vec<u8>)> {
    let encoded: Vec<Vec<u8>> = records()
        .iter()
        .map(|r| encode_record(r).unwrap())
        .collect();
    assert_eq!(
        encoded.last().map(|r| r[0]),
        Some(memdb_formats::item::RECORD_VERSION_ZSTD),
        "the long mail is a compressed record"
    );
    let mut out = Vec::new();
    for (i, record) in encoded.iter().enumerate() {
        out.push(("item_record", format!("raw_{i}.bin"), record.clone()));
        out.push(("item_record", format!("framed_{i}.bin"), framed(record)));
    }
    // Version-1 records (stores of format 6 and older still hold them): a version-2 record of
    // an item without the version-2 fields, its five bytes of empty tail cut, version byte 1
    // (SPEC.md §4.2), so the fuzzer also starts from the older decode path.
    for (i, record) in encoded.iter().enumerate().skip(1) {
        if record.ends_with(&[0; 5]) {
            let mut v1 = record[..record.len() - 5].to_vec();
            v1[0] = memdb_formats::item::RECORD_VERSION_1;
            assert!(memdb_formats::item::decode_record(&v1).is_ok());
            out.push(("item_record", format!("raw_v1_{i}.bin"), v1));
        }
    }
    let block: Vec<u8> = encoded.iter().flat_map(|r| framed(r)).collect();

    let header = SegmentHeader {
        segment_id: 7,
        created_unix_ms: 1_700_000_000_000,
        sealed: false,
        key_salt: None,
    }
    .encode();
    out.push((
        "segment_entry",
        "header.bin".into(),
        header[..SEGMENT_HEADER_BYTES].to_vec(),
    ));
    out.push((
        "segment_entry",
        "entry_items.bin".into(),
        entry(EntryKind::ItemBlock, &block),
    ));
    out.push((
        "segment_entry",
        "entry_blob.bin".into(),
        entry(EntryKind::Blob, b"\xff\xd8\xff\xe0 a tiny blob"),
    ));
    out.push((
        "segment_entry",
        "entry_empty.bin".into(),
        entry(EntryKind::Blob, b""),
    ));
    let footer = encode_footer(&[
        FooterRecord {
            page: 1,
            payload_len: block.len() as u64,
            payload_crc: 0x1234_5678,
            kind: EntryKind::ItemBlock,
        },
        FooterRecord {
            page: 2,
            payload_len: 18,
            payload_crc: 0x9abc_def0,
            kind: EntryKind::Blob,
        },
    ])
    .unwrap();
    out.push(("segment_entry", "footer_payload.bin".into(), footer.clone()));
    out.push((
        "segment_entry",
        "entry_footer.bin".into(),
        entry(EntryKind::Footer, &footer),
    ));
    let trailer = Trailer {
        segment_id: 7,
        footer_page: 4,
        total_pages: 6,
        entry_count: 2,
    }
    .encode();
    out.push((
        "segment_entry",
        "trailer.bin".into(),
        trailer[..TRAILER_BYTES].to_vec(),
    ));
    out.extend(vector_blocks());
    out.extend(pages_and_policies());
    out.extend(damaged_segments(&block));
    out.extend(key_headers());
    out.extend(op_batches());
    out.extend(id_lists());
    out
}

/// The graph's id lists (SPEC.md §5.3): empty, a path's increasing nodes, an item's nodes out
/// of order, the widest ids, and a list cut inside an id.
fn id_lists() -> Vec<(&'static str, String, Vec<u8>)> {
    use memdb_formats::id_list::to_bytes;
    // The last id's varint (a step of 2⁴⁰, six bytes) loses its last byte.
    let mut cut = to_bytes(&[1, 1 << 40]);
    cut.pop();
    vec![
        ("id_list", "empty.bin".into(), to_bytes(&[])),
        (
            "id_list",
            "path_nodes.bin".into(),
            to_bytes(&[1, 2, 3, 4, 5, 6, 7, 300]),
        ),
        (
            "id_list",
            "item_nodes.bin".into(),
            to_bytes(&[5, 6, 3, 7, 1 << 20]),
        ),
        (
            "id_list",
            "widest.bin".into(),
            to_bytes(&[u64::MAX, 0, 1 << 63]),
        ),
        ("id_list", "cut.bin".into(), cut),
    ]
}

/// The op log's packed runs (SPEC.md §5 `op_batches`): an empty run, a batch of each op, the
/// widest id, and a run cut inside an id.
fn op_batches() -> Vec<(&'static str, String, Vec<u8>)> {
    use memdb_formats::op_batch;
    let packed = |ops: &[(u8, u64)]| {
        let mut out = Vec::new();
        op_batch::encode(ops.iter().copied(), &mut out);
        out
    };
    let ops = [(1, 1), (2, 300), (3, 2), (4, 16_384), (5, 7)];
    let mut cut = packed(&[(1, 1), (2, u64::MAX)]);
    cut.truncate(cut.len() - 3);
    vec![
        ("op_batch", "empty.bin".into(), Vec::new()),
        ("op_batch", "every_op.bin".into(), packed(&ops)),
        ("op_batch", "max_id.bin".into(), packed(&[(5, u64::MAX)])),
        ("op_batch", "cut_id.bin".into(), cut),
    ]
}

/// Key headers of both kinds (fixed bytes where a real one has random salt, nonce and wrap)
/// and one cut short.
fn key_headers() -> Vec<(&'static str, String, Vec<u8>)> {
    use memdb_formats::key_header::{Kdf, KeyHeader};
    let header = |kdf| KeyHeader {
        kdf,
        store_key_id: [0x11; 16],
        salt: [0x22; 32],
        wrap_nonce: [0x33; 24],
        wrapped_key: [0x44; 32],
        wrap_tag: [0x55; 16],
    };
    let passphrase = header(Kdf::Argon2id {
        memory_kib: 65_536,
        iterations: 3,
        parallelism: 1,
    })
    .encode();
    vec![
        ("key_header", "passphrase.bin".into(), passphrase.to_vec()),
        (
            "key_header",
            "key_file.bin".into(),
            header(Kdf::KeyFile).encode().to_vec(),
        ),
        ("key_header", "cut.bin".into(), passphrase[..100].to_vec()),
    ]
}

/// Layouts (plain, saliency-aware, empty) and policy files (a built-in written as TOML, a
/// user policy, one that validation refuses).
fn pages_and_policies() -> Vec<(&'static str, String, Vec<u8>)> {
    use memdb_formats::page_layout::{Block, BlockKind, PageLayout};
    let layout = |salient_facts: bool, blocks: Vec<Block>| PageLayout {
        width: 2120,
        height: 1800,
        salient_facts,
        blocks,
    };
    let photo = Block {
        item: 3,
        kind: BlockKind::Photo,
        rect: [24, 80, 1024, 683],
        text_px: 0,
        nodes: vec![],
    };
    let text = Block {
        item: 9,
        kind: BlockKind::Text,
        rect: [24, 800, 2072, 140],
        text_px: 14,
        nodes: vec![(1, 22), (2, 14), (40_000, 14)],
    };
    let mut out = vec![
        (
            "page_layout",
            "empty.bin".to_string(),
            layout(false, vec![]).encode(),
        ),
        (
            "page_layout",
            "photo_and_text.bin".into(),
            layout(true, vec![photo, text.clone()]).encode(),
        ),
        (
            "page_layout",
            "text.bin".into(),
            layout(false, vec![text]).encode(),
        ),
    ];
    let builtin = "name = \"timed-gentle\"\n\
        [[stage]]\nname = \"recent\"\nuntil_days = 180\nquality = 90\nscale = 1.0\n\
        [[stage]]\nname = \"mid\"\nuntil_days = 730\nquality = 70\nscale = 0.85\n\
        [[stage]]\nname = \"old\"\nquality = 40\nscale = 0.6\n";
    let user = "name = \"mine\"\n\
        [[stage]]\nname = \"fresh\"\nuntil_days = 30\nquality = 92\nscale = 1.0\nkeep_originals = true\n\
        [[stage]]\nname = \"faded\"\nquality = 50\nscale = 0.5\n";
    let refused = user.replace("quality = 50", "quality = 99");
    for (name, text) in [
        ("timed_gentle.toml", builtin.to_owned()),
        ("user.toml", user.to_owned()),
        ("rising.toml", refused),
    ] {
        out.push(("forget_policy", name.to_string(), text.into_bytes()));
    }
    out
}

/// Flat blocks of each precision and a small HNSW graph block (one build thread, so the graph
/// is a pure function of the rows), with one row deleted.
fn vector_blocks() -> Vec<(&'static str, String, Vec<u8>)> {
    let rows: Vec<[f32; 4]> = (0..12u8)
        .map(|i| {
            let a = f32::from(i) * 0.5;
            [a.cos(), a.sin(), 0.25 * f32::from(i % 3), -0.5]
        })
        .collect();
    let block = |precision: Precision| {
        let mut writer = FlatIndexWriter::new(precision, 4).unwrap();
        for (i, row) in rows.iter().enumerate() {
            writer
                .push(
                    100 + i as u64,
                    1_700_000_000_000 + i as i64,
                    (i % 3) as u8,
                    row,
                )
                .unwrap();
        }
        writer.finish().unwrap()
    };
    let mut out = Vec::new();
    for (precision, name) in [
        (Precision::F32, "flat_f32.bin"),
        (Precision::F16, "flat_f16.bin"),
        (Precision::I8, "flat_i8.bin"),
        (Precision::I4, "flat_i4.bin"),
    ] {
        out.push((
            "vector_block",
            name.to_string(),
            block(precision).as_bytes().to_vec(),
        ));
    }
    let params = HnswParams {
        m: 2,
        ef_construction: 8,
        ef_search: 4,
        threads: 1,
        ..HnswParams::default()
    };
    let mut graph = HnswIndex::build(block(Precision::F32), params).unwrap();
    out.push(("vector_block", "hnsw_m2.bin".into(), graph.to_bytes()));
    graph.delete_row(5);
    out.push((
        "vector_block",
        "hnsw_m2_deleted.bin".into(),
        graph.to_bytes(),
    ));
    out
}

#[test]
fn generated_seeds_match_the_encoders() {
    let update = std::env::var_os("UPDATE_SEEDS").is_some();
    let mut stale = Vec::new();
    for (target, name, bytes) in generated() {
        let path = seeds_dir(target).join(&name);
        if update {
            std::fs::create_dir_all(seeds_dir(target)).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "seeds differ from the encoders (UPDATE_SEEDS=1 cargo test -p memdb-it --test fuzz_seeds): {stale:?}"
    );
}

#[test]
fn every_target_has_a_small_seed_corpus() {
    for target in TARGETS {
        let (mut files, mut bytes) = (0, 0);
        for entry in std::fs::read_dir(seeds_dir(target)).unwrap() {
            let meta = entry.unwrap().metadata().unwrap();
            files += 1;
            bytes += meta.len();
        }
        assert!(files >= 3, "{target}: {files} seeds");
        assert!(bytes < MAX_CORPUS_BYTES, "{target}: {bytes} bytes of seeds");
        let source = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        assert!(source.is_file(), "{target} has no fuzz target");
    }
    // And the other way: every fuzz target is listed here, so none goes without seeds.
    for entry in std::fs::read_dir(fuzz_dir().join("fuzz_targets")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            TARGETS.contains(&name.as_str()),
            "fuzz target {name} is not in TARGETS"
        );
    }
}
