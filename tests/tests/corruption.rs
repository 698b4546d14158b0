//! Corruption of sealed segments: flipping any single byte, or truncating the file, is reported
//! by `check()` and by reads of the affected entry as a typed error — never a panic, never a
//! wrong answer — and the other segments stay readable.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use memdb::{Options, Store, StoreError as Error};
use memdb_it::{Rng, crash_batch_len, crash_external_id, crash_item};

fn options() -> Options {
    Options {
        segment_target_bytes: 48 << 10,
        ..Options::default()
    }
}

/// A store whose items all sit in sealed segments; returns the expected (external id → batch,
/// index) list.
fn build(path: &Path, batches: u64) -> Vec<(String, u64, u64)> {
    let store = Store::create(path, options()).unwrap();
    let mut expected = Vec::new();
    for batch in 0..batches {
        let mut wb = store.batch();
        for index in 0..crash_batch_len(batch) {
            let (draft, blobs) = crash_item(batch, index);
            wb.put_with_blobs(draft, blobs);
            expected.push((crash_external_id(batch, index), batch, index));
        }
        wb.commit().unwrap();
    }
    memdb_it::compact_everything(&store);
    let stats = store.stats().unwrap();
    assert!(
        stats.segments.len() >= 3 && stats.segments.iter().all(|s| s.sealed),
        "{stats:?}"
    );
    expected
}

fn segment_paths(path: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(path.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Opens the damaged store and checks every promise; returns how many reads were refused.
fn verify(path: &Path, damaged: &Path, expected: &[(String, u64, u64)], what: &str) -> u64 {
    let store = Store::open(path, options()).unwrap_or_else(|e| panic!("{what}: open failed: {e}"));
    let report = store.check().unwrap();
    assert!(!report.is_clean(), "{what}: check found nothing");
    let damaged_id =
        u64::from_str_radix(damaged.file_stem().unwrap().to_str().unwrap(), 16).unwrap();
    assert!(
        report
            .problems
            .iter()
            .all(|p| p.segment.is_none_or(|s| s == damaged_id)),
        "{what}: problems outside the damaged segment: {:?}",
        report.problems
    );
    let snap = store.snapshot().unwrap();
    let mut refused = 0;
    for (ext, batch, index) in expected {
        let (draft, blobs) = crash_item(*batch, *index);
        match snap.get_by_external_id(ext) {
            Ok(Some(item)) => {
                assert_eq!(item.fields, draft.fields, "{what}: wrong answer for {ext}");
                for (id, (_, bytes)) in item.blobs.iter().zip(&blobs) {
                    match snap.blob(*id) {
                        Ok(Some(b)) => {
                            assert_eq!(&b[..], &bytes[..], "{what}: wrong blob bytes for {ext}")
                        }
                        Err(
                            Error::Corruption { segment, .. }
                            | Error::SegmentUnavailable { segment, .. },
                        ) => {
                            assert_eq!(segment, damaged_id);
                            refused += 1;
                        }
                        other => panic!("{what}: blob of {ext}: {other:?}"),
                    }
                }
            }
            Err(Error::Corruption { segment, .. } | Error::SegmentUnavailable { segment, .. }) => {
                assert_eq!(
                    segment, damaged_id,
                    "{what}: {ext} refused from an undamaged segment"
                );
                refused += 1;
            }
            other => panic!("{what}: {ext}: {other:?}"),
        }
    }
    refused
}

#[test]
fn every_sampled_byte_flip_of_a_sealed_segment_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let expected = build(&path, 6);
    let seg = segment_paths(&path)[1].clone();
    let clean = std::fs::read(&seg).unwrap();
    // Every byte of the first two pages and the last two (header, first entry header, footer,
    // trailer) plus 500 random positions elsewhere.
    let mut positions: Vec<usize> = (0..8192).chain(clean.len() - 8192..clean.len()).collect();
    let mut rng = Rng::new(42);
    positions.extend((0..500).map(|_| rng.range(0, clean.len() as u64) as usize));
    let mut refused = 0;
    for (n, &pos) in positions.iter().enumerate() {
        // Checking all 16k header bytes fully is slow; verify reads for every 64th of them.
        let mut bad = clean.clone();
        bad[pos] ^= 1 << (n % 8);
        std::fs::write(&seg, &bad).unwrap();
        if n % 64 == 0 || pos >= 8192 && pos < clean.len() - 8192 {
            refused += verify(&path, &seg, &expected, &format!("flip at {pos}"));
        } else {
            let report = Store::open(&path, options()).unwrap().check().unwrap();
            assert!(!report.is_clean(), "flip at {pos} not reported");
        }
    }
    std::fs::write(&seg, &clean).unwrap();
    assert!(
        Store::open(&path, options())
            .unwrap()
            .check()
            .unwrap()
            .is_clean()
    );
    println!(
        "{} flips of a {}-byte sealed segment: all reported by check, {refused} reads refused with typed errors, 0 wrong answers",
        positions.len(),
        clean.len()
    );
}

#[test]
fn truncating_a_sealed_segment_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let expected = build(&path, 6);
    let seg = segment_paths(&path)[0].clone();
    let clean = std::fs::read(&seg).unwrap();
    let mut cuts: Vec<usize> = (0..clean.len()).step_by(4096).collect();
    cuts.extend([1, 63, 4097, clean.len() - 1, clean.len() - 4095]);
    for cut in cuts {
        std::fs::write(&seg, &clean[..cut]).unwrap();
        verify(&path, &seg, &expected, &format!("truncated to {cut}"));
    }
    // A zeroed trailer or footer is caught as well.
    let mut zeroed = clean.clone();
    let len = zeroed.len();
    zeroed[len - 4096..].fill(0);
    std::fs::write(&seg, &zeroed).unwrap();
    verify(&path, &seg, &expected, "zeroed trailer");
}

/// Reliability R5, exhaustively where CRC-32C promises detection: every single-bit flip of
/// `MEMDB_FLIP_PAGES` distinct sampled pages (default 100; a header and a trailer page always
/// among them) of the sealed segments, 64 random bursts of up to 32 bits and 16 random 1–64-byte
/// bursts in each, and a zeroed footer of every segment — each damaged copy goes through the
/// verification `check` runs (on bytes in memory, so millions of copies cost seconds) and must
/// be reported. The read path over a damaged file is covered by the tests above.
#[test]
fn every_bit_flip_and_short_burst_in_sampled_pages_is_detected() {
    let pages = memdb_it::env_u64("MEMDB_FLIP_PAGES", 100) as usize;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    // Six batches make about 200 pages; the sample takes each page at most once.
    build(&path, 6.max(pages as u64 / 20));
    let segments: Vec<(u64, Vec<u8>)> = segment_paths(&path)
        .iter()
        .map(|p| {
            let id = u64::from_str_radix(p.file_stem().unwrap().to_str().unwrap(), 16).unwrap();
            (id, std::fs::read(p).unwrap())
        })
        .collect();
    for (id, bytes) in &segments {
        assert!(memdb::fault::sealed_segment_problems(bytes, *id).is_empty());
    }
    let mut rng = Rng::new(5);
    let (first_id, first) = &segments[0];
    let mut sample: Vec<(usize, usize)> = vec![(0, 0), (0, first.len() / 4096 - 1)];
    while sample.len() < pages {
        let s = rng.range(0, segments.len() as u64) as usize;
        sample.push((
            s,
            rng.range(0, (segments[s].1.len() / 4096) as u64) as usize,
        ));
    }
    let (mut flips, mut bursts) = (0u64, 0u64);
    for &(s, page) in &sample {
        let (id, clean) = &segments[s];
        let mut bytes = clean.clone();
        let start = page * 4096;
        for byte in start..start + 4096 {
            for bit in 0..8 {
                bytes[byte] ^= 1 << bit;
                let problems = memdb::fault::sealed_segment_problems(&bytes, *id);
                assert!(
                    !problems.is_empty() && problems.iter().all(|p| p.segment == Some(*id)),
                    "segment {id:016x}: flip of bit {bit} at byte {byte}: {problems:?}"
                );
                bytes[byte] ^= 1 << bit;
                flips += 1;
            }
        }
        // A burst of length L flips its first and last bit and any of those between.
        for n in 0..80 {
            let max_bits = if n < 64 { 32 } else { 64 * 8 };
            let len = rng.range(1, max_bits + 1) as usize;
            let at = start * 8 + rng.range(0, (4096 * 8 - len) as u64 + 1) as usize;
            let mut mask = vec![false; len];
            mask[0] = true;
            mask[len - 1] = true;
            for m in mask.iter_mut().take(len - 1).skip(1) {
                *m = rng.next_u64() & 1 == 1;
            }
            let flip = |bytes: &mut Vec<u8>| {
                for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
                    bytes[(at + i) / 8] ^= 1 << ((at + i) % 8);
                }
            };
            flip(&mut bytes);
            let problems = memdb::fault::sealed_segment_problems(&bytes, *id);
            assert!(
                !problems.is_empty(),
                "segment {id:016x}: burst of {len} bits at bit {at} not detected"
            );
            flip(&mut bytes);
            bursts += 1;
        }
        assert_eq!(&bytes, clean);
    }
    // Zeroed footer (its entry ends where the trailer page starts).
    for (id, clean) in &segments {
        let mut bytes = clean.clone();
        let trailer_at = bytes.len() - 4096;
        let footer_page = memdb_formats::segment::Trailer::decode(&bytes[trailer_at..], 0)
            .unwrap()
            .footer_page;
        bytes[footer_page as usize * 4096..trailer_at].fill(0);
        assert!(!memdb::fault::sealed_segment_problems(&bytes, *id).is_empty());
    }
    println!(
        "R5: {flips} single-bit flips in {} sampled pages of {} sealed segments (segment {first_id:016x}'s header and trailer among them) and {bursts} bursts: all detected",
        sample.len(),
        segments.len()
    );
}
