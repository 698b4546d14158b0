//! Golden tests: the bytes SPEC.md §3–§4 describe, built here by hand (own varint, zigzag and
//! layout code; no memdb encoder), compared with what the encoders write and decoded back.
//! `golden/v1/` holds the files of record version 1 (and segment format 1), `golden/v2/` those
//! of record version 2, `golden/v4/` those of record version 4; a missing file is written from the hand-built bytes, an existing one
//! must match them exactly, so a format change cannot pass without a new version directory.
//! Version-1 files are never rewritten: the current decoder must still read them.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use memdb_formats::item::{
    self, Camera, CaptionProvenance, EventTime, GeoPoint, ItemFields, ItemRecord, Location,
    Orientation, PlaceName, Scope, Source,
};
use memdb_formats::segment::{self, EntryHeader, EntryKind, FooterRecord, SegmentHeader, Trailer};

fn crc(bytes: &[u8]) -> u32 {
    memdb_formats::crc32c(bytes)
}

fn page(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.resize(bytes.len().div_ceil(4096) * 4096, 0);
    bytes
}

/// SPEC.md §3.1, field by field.
fn spec_header_page(id: u64, created: i64) -> Vec<u8> {
    spec_header_page_of(2, id, created)
}

/// SPEC.md §3.1 of segment format `version` (a plain segment: both versions are laid out
/// alike).
fn spec_header_page_of(version: u32, id: u64, created: i64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"MEMDBSEG");
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&4096u32.to_le_bytes());
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&created.to_le_bytes());
    b.extend_from_slice(&[0, 0, 0, 0]); // page_reserve, cipher, flags
    b.extend_from_slice(&[0; 24]);
    assert_eq!(b.len(), 60);
    let c = crc(&b);
    b.extend_from_slice(&c.to_le_bytes());
    page(b)
}

/// SPEC.md §3.2 plus the payload and zero padding; `tag` is a blob entry's (id, kind, owner).
fn spec_entry(kind: u8, id: u64, payload: &[u8]) -> Vec<u8> {
    spec_tagged_entry(kind, id, (0, 0, 0), payload)
}

fn spec_tagged_entry(kind: u8, id: u64, tag: (u64, u8, u64), payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"MDBE");
    b.push(kind);
    b.push(tag.1); // blob_kind
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    b.extend_from_slice(&crc(payload).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&tag.0.to_le_bytes()); // blob_id
    b.extend_from_slice(&tag.2.to_le_bytes()); // blob_owner
    b.extend_from_slice(&[0; 12]);
    assert_eq!(b.len(), 60);
    let c = crc(&b);
    b.extend_from_slice(&c.to_le_bytes());
    b.extend_from_slice(payload);
    page(b)
}

fn spec_trailer(id: u64, footer_page: u64, total_pages: u64, count: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"MEMDBEND");
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&footer_page.to_le_bytes());
    b.extend_from_slice(&total_pages.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b.extend_from_slice(&[0; 24]);
    let c = crc(&b);
    b.extend_from_slice(&c.to_le_bytes());
    page(b)
}

/// SPEC.md §4.4 varint.
fn varint(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v <= 0xFFFF {
        out.push(251);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v <= 0xFFFF_FFFF {
        out.push(252);
        out.extend_from_slice(&(v as u32).to_le_bytes());
    } else {
        out.push(253);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn zigzag16(v: i16) -> u64 {
    u64::from(((v << 1) ^ (v >> 15)) as u16)
}

fn string(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn opt_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            string(out, s);
        }
    }
}

fn strings(out: &mut Vec<u8>, v: &[&str]) {
    varint(out, v.len() as u64);
    for s in v {
        string(out, s);
    }
}

fn sample_record() -> ItemRecord {
    let mut fields = ItemFields::new(
        Source::Email,
        EventTime {
            unix_ms: 1_683_546_960_000,
            offset_minutes: -300,
        },
    );
    fields.external_id = Some("msg-1".into());
    fields.location = Some(Location {
        name: Some("Lisboa".into()),
        geo: Some(GeoPoint {
            lat: 38.72,
            lon: -9.14,
        }),
        place: None,
    });
    fields.entities = vec!["Ana".into(), "Hotel Alfama".into()];
    fields.summary = Some("booking".into());
    fields.body = Some("Confirmed: 12–15 May, EUR 372.00".into());
    fields.from = Some("hotel@example.org".into());
    fields.to = vec!["me@example.org".into()];
    ItemRecord {
        id: 300,
        ingest_time_ms: -1,
        fields,
        supersedes: Some(70_000),
        blobs: vec![1, 5_000_000_000],
    }
}

/// SPEC.md §4.2, fields 1–19 (all of record version 1), for `sample_record()` with source code
/// `source`, after the version byte `version`.
fn spec_record_fields(version: u8, source: u8) -> Vec<u8> {
    spec_record_fields_with_body(version, source, "Confirmed: 12–15 May, EUR 372.00")
}

/// [`spec_record_fields`] with another body (field 14).
fn spec_record_fields_with_body(version: u8, source: u8, body: &str) -> Vec<u8> {
    let mut b = vec![version];
    varint(&mut b, 300);
    varint(&mut b, zigzag64(-1));
    opt_string(&mut b, Some("msg-1"));
    b.push(source);
    varint(&mut b, zigzag64(1_683_546_960_000));
    varint(&mut b, zigzag16(-300));
    opt_string(&mut b, Some("Lisboa"));
    b.push(1);
    b.extend_from_slice(&38.72f64.to_le_bytes());
    b.extend_from_slice(&(-9.14f64).to_le_bytes());
    strings(&mut b, &["Ana", "Hotel Alfama"]);
    strings(&mut b, &[]);
    opt_string(&mut b, None); // ocr
    opt_string(&mut b, None); // caption
    opt_string(&mut b, Some("booking"));
    opt_string(&mut b, Some(body));
    opt_string(&mut b, None); // speaker
    opt_string(&mut b, Some("hotel@example.org"));
    strings(&mut b, &["me@example.org"]);
    b.push(1);
    varint(&mut b, 70_000);
    varint(&mut b, 2);
    varint(&mut b, 1);
    varint(&mut b, 5_000_000_000);
    b
}

/// SPEC.md §4.2, record version 1: fields 1–19 only.
fn spec_record_v1() -> Vec<u8> {
    spec_record_fields(1, 3)
}

/// SPEC.md §4.2, record version 2 of `sample_record()`: fields 20–24 all absent (four `None`
/// bytes and orientation 0).
fn spec_record_v2_plain() -> Vec<u8> {
    let mut b = spec_record_fields(2, 3);
    b.extend_from_slice(&[0, 0, 0, 0, 0]);
    b
}

fn opt_varint(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            varint(out, v);
        }
    }
}

/// `sample_record()` with every field of version 2 set.
fn photo_record() -> ItemRecord {
    let mut r = sample_record();
    r.fields.source = Source::Image;
    r.fields.location = Some(Location {
        name: Some("Lisboa".into()),
        geo: Some(GeoPoint {
            lat: 38.72,
            lon: -9.14,
        }),
        place: Some(PlaceName {
            city: "Lisbon".into(),
            locality: Some("Alfama".into()),
            region: Some("Lisbon".into()),
            country: Some("Portugal".into()),
            country_code: Some("PT".into()),
            distance_m: Some(1_234),
            geonames_id: Some(2_267_057),
        }),
    });
    r.fields.camera = Some(Camera {
        make: Some("FUJIFILM".into()),
        model: None,
        lens: Some("XF23mm".into()),
    });
    r.fields.orientation = Some(Orientation::Portrait);
    r.fields.short_caption = Some("red roofs".into());
    r.fields.caption_provenance = Some(CaptionProvenance {
        model: "vlm".into(),
        at_ms: 1_700_000_000_000,
    });
    r
}

/// SPEC.md §4.2, record version 2 of `photo_record()`, field by field.
fn spec_record_v2_photo() -> Vec<u8> {
    let mut b = spec_record_fields(2, 1);
    // 20 place: Some(city, locality, region, country, country_code, distance_m, geonames_id)
    b.push(1);
    string(&mut b, "Lisbon");
    opt_string(&mut b, Some("Alfama"));
    opt_string(&mut b, Some("Lisbon"));
    opt_string(&mut b, Some("Portugal"));
    opt_string(&mut b, Some("PT"));
    opt_varint(&mut b, Some(1_234));
    opt_varint(&mut b, Some(2_267_057));
    // 21 camera: Some(make, model, lens)
    b.push(1);
    opt_string(&mut b, Some("FUJIFILM"));
    opt_string(&mut b, None);
    opt_string(&mut b, Some("XF23mm"));
    // 22 orientation: 2 portrait
    b.push(2);
    // 23 short caption
    opt_string(&mut b, Some("red roofs"));
    // 24 caption provenance: Some(model, at ms)
    b.push(1);
    string(&mut b, "vlm");
    varint(&mut b, zigzag64(1_700_000_000_000));
    b
}

/// A sealed segment holding one item block (the sample record) and one blob.
/// A sealed segment of format `version` holding one item block and one blob (tagged in
/// format 2: blob 9, an original of item 1).
fn spec_sealed_segment(version: u32) -> Vec<u8> {
    let id = 0x0102_0304_0506_0708u64;
    let record = spec_record_v1();
    let mut block = Vec::new();
    block.extend_from_slice(&(record.len() as u32).to_le_bytes());
    block.extend_from_slice(&crc(&record).to_le_bytes());
    block.extend_from_slice(&record);
    let blob: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 256) as u8).collect();
    let mut file = spec_header_page_of(version, id, 1_700_000_000_000);
    let block_page = file.len() as u64 / 4096;
    file.extend(spec_entry(1, id, &block));
    let blob_page = file.len() as u64 / 4096;
    let tag = if version >= 2 { (9, 1, 1) } else { (0, 0, 0) };
    file.extend(spec_tagged_entry(2, id, tag, &blob));
    let mut footer = 2u32.to_le_bytes().to_vec();
    for (p, payload, kind) in [(block_page, &block, 1u8), (blob_page, &blob, 2u8)] {
        footer.extend_from_slice(&p.to_le_bytes());
        footer.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        footer.extend_from_slice(&crc(payload).to_le_bytes());
        footer.extend_from_slice(&[kind, 0, 0, 0]);
    }
    let footer_page = file.len() as u64 / 4096;
    file.extend(spec_entry(255, id, &footer));
    let total = file.len() as u64 / 4096 + 1;
    file.extend(spec_trailer(id, footer_page, total, 2));
    file
}

fn golden_dir(version: u8) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/v{version}"))
}

/// Writes a golden file of `golden/v{version}/` from the hand-built bytes if it is missing;
/// otherwise it must match.
fn golden(version: u8, name: &str, bytes: &[u8]) {
    let path = golden_dir(version).join(name);
    if !path.exists() {
        std::fs::create_dir_all(golden_dir(version)).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "{} differs from SPEC.md",
        path.display()
    );
}

#[test]
fn crc_is_crc32c() {
    assert_eq!(crc(b"123456789"), 0xE306_9283);
}

#[test]
fn segment_structures_match_the_spec() {
    let id = 0x0102_0304_0506_0708u64;
    assert_eq!(
        SegmentHeader {
            segment_id: id,
            created_unix_ms: 1_700_000_000_000,
            sealed: false,
            key_salt: None,
        }
        .encode(),
        spec_header_page(id, 1_700_000_000_000)
    );
    assert_eq!(
        segment::encode_entry(EntryKind::Blob, id, b"hello"),
        spec_entry(2, id, b"hello")
    );
    assert_eq!(
        segment::encode_entry(EntryKind::ItemBlock, id, &[]),
        spec_entry(1, id, &[])
    );
    let exactly_one_page = vec![0xAB; 4096 - 64];
    assert_eq!(
        segment::encode_entry(EntryKind::Blob, id, &exactly_one_page).len(),
        4096
    );
    assert_eq!(
        Trailer {
            segment_id: id,
            footer_page: 3,
            total_pages: 5,
            entry_count: 2
        }
        .encode(),
        spec_trailer(id, 3, 5, 2)
    );
    let header = EntryHeader::for_payload(EntryKind::Blob, id, b"hello");
    assert_eq!(&header.encode()[..], &spec_entry(2, id, b"hello")[..64]);
    // A tagged blob entry (store format 20): an original of item 2^64 - 2, blob 77.
    let tag = segment::BlobTag {
        id: 77,
        kind: 1,
        owner: u64::MAX - 1,
    };
    let tagged = EntryHeader::for_blob(id, tag, b"jpeg");
    let spec = spec_tagged_entry(2, id, (77, 1, u64::MAX - 1), b"jpeg");
    assert_eq!(&tagged.encode()[..], &spec[..64]);
    assert_eq!(EntryHeader::decode(&spec, 0).unwrap().blob, Some(tag));
}

#[test]
fn item_record_matches_the_spec() {
    assert_eq!(item::RECORD_VERSION, 2);
    for (record, bytes, file) in [
        (sample_record(), spec_record_v2_plain(), "item_record.bin"),
        (photo_record(), spec_record_v2_photo(), "photo_record.bin"),
    ] {
        assert_eq!(item::encode_record(&record).unwrap(), bytes, "{file}");
        assert_eq!(item::decode_record(&bytes).unwrap(), record, "{file}");
        golden(2, file, &bytes);
    }
}

/// SPEC.md §4.3: a version-3 record is its version byte and one zstd frame (RFC 8878) of the
/// version-2 fields. The frame here is built by hand from the RFC: magic, a frame header
/// descriptor with `Single_Segment_Flag` and a 2-byte `Frame_Content_Size` (size − 256), then
/// one last raw block (`Block_Type` 0) holding the fields as they are; any valid frame reads.
/// What memdb writes for the same record is version 3 too, and decompresses to the same
/// fields.
#[test]
fn item_record_version_3_matches_the_spec() {
    let body: String = (0..16)
        .map(|i| format!("Night {i}: room 4, breakfast included. "))
        .collect();
    let mut record = sample_record();
    record.fields.body = Some(body.clone());
    let mut fields = spec_record_fields_with_body(2, 3, &body);
    fields.extend_from_slice(&[0, 0, 0, 0, 0]);
    let fields = &fields[1..];
    let n = fields.len();
    assert!((item::COMPRESS_MIN_BYTES..65_792).contains(&n));
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD];
    // Frame_Header_Descriptor: FCS_Field_Size 1 (2 bytes), Single_Segment_Flag, no checksum,
    // no dictionary.
    frame.push(0b0110_0000);
    frame.extend_from_slice(&u16::try_from(n - 256).unwrap().to_le_bytes());
    // Block_Header: Last_Block 1, Block_Type 0 (raw), Block_Size n, 3 bytes little-endian.
    let header = (u32::try_from(n).unwrap() << 3) | 1;
    frame.extend_from_slice(&header.to_le_bytes()[..3]);
    frame.extend_from_slice(fields);
    let mut spec = vec![3u8];
    spec.extend_from_slice(&frame);
    assert_eq!(item::decode_record(&spec).unwrap(), record);
    golden(3, "item_record_raw_block.bin", &spec);

    let written = item::encode_record(&record).unwrap();
    assert_eq!(written[0], item::RECORD_VERSION_ZSTD);
    assert!(written.len() * 8 <= n * 7, "{} of {n}", written.len());
    assert_eq!(zstd::bulk::decompress(&written[1..], n).unwrap(), fields);
    assert_eq!(item::decode_record(&written).unwrap(), record);
}

/// SPEC.md §4.5: an item with a scope is a version-4 record, version 2's fields then the scope
/// (fields 25–27); long enough, a version-5 record, those fields in one zstd frame. An item
/// without a scope is written as before (version 2), byte for byte.
#[test]
fn item_record_version_4_and_5_match_the_spec() {
    let mut record = sample_record();
    record.fields.scope = Scope::new(Some("alice".into()), None, Some("chat-7".into()));
    let mut spec = spec_record_fields(4, 3);
    spec.extend_from_slice(&[0, 0, 0, 0, 0]);
    opt_string(&mut spec, Some("alice"));
    opt_string(&mut spec, None);
    opt_string(&mut spec, Some("chat-7"));
    assert_eq!(item::RECORD_VERSION_SCOPED, 4);
    assert_eq!(item::encode_record(&record).unwrap(), spec);
    assert_eq!(item::decode_record(&spec).unwrap(), record);
    golden(4, "item_record_scoped.bin", &spec);

    // Without its scope the same item is the version-2 record of before.
    record.fields.scope = Scope::default();
    assert_eq!(
        item::encode_record(&record).unwrap(),
        spec_record_v2_plain()
    );

    // A version-4 record must carry a scope: an empty one is refused.
    let mut empty = spec_record_fields(4, 3);
    empty.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(item::decode_record(&empty).is_err());

    let body: String = (0..16)
        .map(|i| format!("Night {i}: room 4, breakfast included. "))
        .collect();
    let mut long = sample_record();
    long.fields.body = Some(body.clone());
    long.fields.scope = Scope::new(None, Some("travel-agent".into()), None);
    let mut fields = spec_record_fields_with_body(4, 3, &body);
    fields.extend_from_slice(&[0, 0, 0, 0, 0]);
    opt_string(&mut fields, None);
    opt_string(&mut fields, Some("travel-agent"));
    opt_string(&mut fields, None);
    let fields = &fields[1..];
    let written = item::encode_record(&long).unwrap();
    assert_eq!(written[0], item::RECORD_VERSION_SCOPED_ZSTD);
    assert_eq!(
        zstd::bulk::decompress(&written[1..], fields.len()).unwrap(),
        fields
    );
    assert_eq!(item::decode_record(&written).unwrap(), long);
}

/// Record version 1 as SPEC.md §4.2 describes it, and the version-1 golden file written before
/// version 2 existed: still read, with fields 20–24 absent.
#[test]
fn version_1_records_still_read() {
    golden(1, "item_record.bin", &spec_record_v1());
    let old = std::fs::read(golden_dir(1).join("item_record.bin")).unwrap();
    let record = item::decode_record(&old).unwrap();
    assert_eq!(record, sample_record());
    let f = &record.fields;
    assert!(f.location.as_ref().is_some_and(|l| l.place.is_none()));
    assert_eq!(
        (
            &f.camera,
            f.orientation,
            &f.short_caption,
            &f.caption_provenance
        ),
        (&None, None, &None, &None)
    );
    // Written again, it is a version-2 record.
    assert_eq!(
        item::encode_record(&record).unwrap(),
        spec_record_v2_plain()
    );
}

#[test]
fn sealed_segment_golden_file_decodes() {
    // Format 1 (before store format 20) is still read; format 2 tags its blob.
    for version in [1u8, 2] {
        let file = spec_sealed_segment(u32::from(version));
        golden(version, "sealed_segment.seg", &file);
        decode_sealed_segment(&file, version);
    }
}

fn decode_sealed_segment(file: &[u8], version: u8) {
    // Read it the way SPEC.md §3.4 says: trailer → footer → entries.
    let trailer = Trailer::decode(&file[file.len() - 4096..], (file.len() - 4096) as u64).unwrap();
    assert_eq!(trailer.total_pages as usize * 4096, file.len());
    let footer_at = trailer.footer_page as usize * 4096;
    let fh = EntryHeader::decode(&file[footer_at..], footer_at as u64).unwrap();
    assert_eq!(fh.kind, EntryKind::Footer);
    let footer_payload = &file[footer_at + 64..footer_at + 64 + fh.payload_len as usize];
    fh.verify_payload(footer_payload, 0).unwrap();
    let records: Vec<FooterRecord> = segment::decode_footer(footer_payload).unwrap();
    assert_eq!(records.len(), 2);
    let block_at = records[0].page as usize * 4096 + 64;
    let block = &file[block_at..block_at + records[0].payload_len as usize];
    let record = item::read_framed(block).unwrap();
    assert_eq!(item::decode_record(record).unwrap(), sample_record());
    let header = SegmentHeader::decode(file).unwrap();
    assert_eq!(header.segment_id, 0x0102_0304_0506_0708);
    let blob_at = records[1].page as usize * 4096;
    let blob = EntryHeader::decode(&file[blob_at..], blob_at as u64).unwrap();
    let want = (version >= 2).then_some(segment::BlobTag {
        id: 9,
        kind: 1,
        owner: 1,
    });
    assert_eq!(blob.blob, want);
}

#[test]
fn field_offsets_match_the_spec_tables() {
    let header: Vec<usize> = segment::SEGMENT_HEADER_OFFSETS
        .iter()
        .map(|f| f.1)
        .collect();
    assert_eq!(header, vec![0, 8, 12, 16, 24, 32, 34, 35, 36, 60]);
    let entry: Vec<usize> = segment::ENTRY_HEADER_OFFSETS.iter().map(|f| f.1).collect();
    assert_eq!(entry, vec![0, 4, 5, 6, 8, 16, 20, 24, 32, 40, 48, 60]);
}

/// SPEC.md §3.1 for an encrypted store's segment: `page_reserve` 40 and `cipher` 1.
#[test]
fn a_sealed_segments_header_page_matches_the_spec() {
    let id = 0x0a0b_0c0d_0e0f_1011u64;
    let mut b = Vec::new();
    b.extend_from_slice(b"MEMDBSEG");
    b.extend_from_slice(&2u32.to_le_bytes());
    b.extend_from_slice(&4096u32.to_le_bytes());
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&7i64.to_le_bytes());
    b.extend_from_slice(&40u16.to_le_bytes()); // page_reserve
    b.extend_from_slice(&[1, 0]); // cipher (XChaCha20-Poly1305), flags
    b.extend_from_slice(&[0; 24]);
    let c = crc(&b);
    b.extend_from_slice(&c.to_le_bytes());
    b.extend_from_slice(&[0x5a; 32]); // key_salt (format 2)
    let expected = page(b);
    let header = SegmentHeader {
        segment_id: id,
        created_unix_ms: 7,
        sealed: true,
        key_salt: Some([0x5a; 32]),
    };
    assert_eq!(header.encode(), expected);
    assert_eq!(SegmentHeader::decode(&expected).unwrap(), header);
}

/// SPEC.md §3.7's KEY file, field by field, for both kinds of secret.
#[test]
fn the_key_header_matches_the_spec() {
    use memdb_formats::key_header::{Kdf, KeyHeader};
    for (kdf, code, costs) in [
        (
            Kdf::Argon2id {
                memory_kib: 65_536,
                iterations: 3,
                parallelism: 1,
            },
            1u8,
            [65_536u32, 3, 1],
        ),
        (Kdf::KeyFile, 2, [0, 0, 0]),
    ] {
        let header = KeyHeader {
            kdf,
            store_key_id: [0x11; 16],
            salt: [0x22; 32],
            wrap_nonce: [0x33; 24],
            wrapped_key: [0x44; 32],
            wrap_tag: [0x55; 16],
        };
        let mut b = Vec::new();
        b.extend_from_slice(b"MEMDBKEY");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&[1, code, 0, 0]); // cipher, kdf, reserved
        for cost in costs {
            b.extend_from_slice(&cost.to_le_bytes());
        }
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&[0x11; 16]);
        b.extend_from_slice(&[0x22; 32]);
        assert_eq!(b.len(), 80);
        assert_eq!(header.associated_data().as_slice(), b.as_slice());
        b.extend_from_slice(&[0x33; 24]);
        b.extend_from_slice(&[0x44; 32]);
        b.extend_from_slice(&[0x55; 16]);
        b.extend_from_slice(&[0; 4]);
        let c = crc(&b);
        b.extend_from_slice(&c.to_le_bytes());
        assert_eq!(b.len(), 160);
        assert_eq!(header.encode().as_slice(), b.as_slice());
        assert_eq!(KeyHeader::decode(&b).unwrap(), header);
    }
}

/// SPEC.md §5 `op_batches`: per op its code byte and its item id as unsigned LEB128, built here
/// byte by byte.
#[test]
fn an_op_batch_matches_the_spec() {
    use memdb_formats::op_batch;
    let ops = [(1u8, 1u64), (2, 300), (3, 0), (5, u64::MAX)];
    let mut want = vec![1, 0x01];
    want.extend([2, 0xac, 0x02]); // 300 = 0b10_0101100: low group 0x2c | 0x80, then 0x02
    want.extend([3, 0x00]);
    want.push(5);
    want.extend([0xff; 9]);
    want.push(0x01); // u64::MAX: nine full groups, then its top bit
    let mut got = Vec::new();
    op_batch::encode(ops, &mut got);
    assert_eq!(got, want);
    assert_eq!(op_batch::decode(&want).unwrap(), ops);
}
