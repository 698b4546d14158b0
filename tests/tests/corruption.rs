//! Corruption of sealed segments: flipping any single byte, or truncating the file, is reported
//! by `check()` and by reads of the affected entry as a typed error — never a panic, never a
//! wrong answer — and the other segments stay readable.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use memdb::{Error, Options, Store};
use memdb_it::{Rng, crash_batch_len, crash_external_id, crash_item};

fn options() -> Options {
    Options {
        segment_target_bytes: 48 << 10,
        ..Options::default()
    }
}

/// A store whose items all sit in sealed segments; returns the expected (external id → batch,
/// index) list.
fn build(path: &Path) -> Vec<(String, u64, u64)> {
    let store = Store::create(path, options()).unwrap();
    let mut expected = Vec::new();
    for batch in 0..6 {
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
    let expected = build(&path);
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
    let expected = build(&path);
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
