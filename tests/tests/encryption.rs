//! Encryption at rest (SPEC.md §3.7) through the public API: an encrypted store filled from the
//! shared corpora (photos with their pages, mail, LoCoMo) plus canary strings leaves no canary,
//! no 8-byte fragment of any item's text, no external id and no run of a stored photo's bytes
//! in any file under its directory, before and after compaction and forgetting; a wrong
//! passphrase, a damaged or cut key file, pages swapped between segments or moved within one
//! are typed errors naming the file and page; rekeying changes only the key file.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memdb::crypto::{CryptoError, KdfCost, Secret};
use memdb::forget::{ForgetOptions, Policy};
use memdb::scrapbook::PageOptions;
use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Options, Source, Store, StoreError};
use memdb_it::{files_under, shared_data};

/// Argon2id at its floor: the tests are about the format, not the KDF's cost.
const CHEAP: KdfCost = KdfCost {
    memory_kib: 64,
    iterations: 1,
    parallelism: 1,
};

/// Bytes of a sealed page on disk (4096 + nonce and tag).
const SLOT: usize = 4136;

fn options(passphrase: &str) -> Options {
    Options {
        secret: Some(Arc::new(Secret::passphrase(passphrase).unwrap())),
        kdf_cost: CHEAP,
        segment_target_bytes: 256 << 10,
        ..Options::default()
    }
}

fn note(ext: &str, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(
        Source::Note,
        EventTime::parse("2024-03-05T10:00:00Z").unwrap(),
    );
    f.external_id = Some(ext.to_owned());
    f.body = Some(body.to_owned());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

/// What must never be found on disk: every 8-byte window of every text, and runs of photos.
struct Needles {
    windows: HashSet<[u8; 8]>,
    /// 16-byte runs taken through each stored photo.
    photo_runs: HashSet<[u8; 16]>,
}

impl Needles {
    fn new() -> Needles {
        Needles {
            windows: HashSet::new(),
            photo_runs: HashSet::new(),
        }
    }

    fn text(&mut self, text: &str) {
        for w in text.as_bytes().windows(8) {
            self.windows.insert(w.try_into().unwrap());
        }
    }

    fn photo(&mut self, bytes: &[u8]) {
        // Its markers and EXIF header, and a run every 4 KiB through the compressed data.
        for at in (0..bytes.len().saturating_sub(16)).step_by(4096) {
            self.photo_runs
                .insert(bytes[at..at + 16].try_into().unwrap());
        }
    }

    /// Every hit under `dir`, as "file @ offset".
    fn hits(&self, dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for path in files_under(dir) {
            let bytes = std::fs::read(&path).unwrap();
            let text_hit = bytes
                .windows(8)
                .position(|w| self.windows.contains(<&[u8; 8]>::try_from(w).unwrap()));
            let photo_hit = bytes
                .windows(16)
                .position(|w| self.photo_runs.contains(<&[u8; 16]>::try_from(w).unwrap()));
            for (what, hit) in [("text", text_hit), ("photo", photo_hit)] {
                if let Some(at) = hit {
                    out.push(format!("{what} in {} @ {at}", path.display()));
                }
            }
        }
        out
    }
}

/// The items of the shared corpora this test stores: LoCoMo 26, the mail test suites, and
/// the first photos (with their originals).
fn corpora() -> Option<(Vec<memdb::IngestItem>, usize)> {
    let locomo = shared_data("locomo")?;
    let mail = shared_data("mail")?;
    let photos = shared_data("photos")?;
    let mut items = memdb_it::ingest_corpus(&locomo.join("26.json"), Some(&photos), 12);
    let photo_count = items.iter().filter(|i| !i.blobs.is_empty()).count();
    let suites = mail.join("testsuites");
    for path in files_under(&suites) {
        let name = path.strip_prefix(&suites).unwrap().display().to_string();
        let report = memdb_formats::import::mail::parse_eml(
            Path::new(&name),
            &name,
            &std::fs::read(&path).unwrap(),
        );
        items.extend(
            report
                .items
                .into_iter()
                .map(|i| memdb::IngestItem::new(i.draft)),
        );
    }
    Some((items, photo_count))
}

#[test]
fn an_encrypted_store_leaves_no_plaintext_on_disk_before_or_after_compaction_and_forgetting() {
    let Some((items, photo_count)) = corpora() else {
        return;
    };
    assert!(photo_count >= 5, "{photo_count} photos");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::create(&path, options("a long passphrase")).unwrap();
    assert!(store.is_encrypted() && store.stats().unwrap().encrypted);

    let mut needles = Needles::new();
    for item in &items {
        let f = &item.draft.fields;
        let location = f.location.as_ref().and_then(|l| l.name.clone());
        for text in [
            &f.body,
            &f.summary,
            &f.caption,
            &f.ocr,
            &f.external_id,
            &f.speaker,
            &f.from,
            &location,
        ]
        .into_iter()
        .flatten()
        {
            needles.text(text);
        }
        for (_, bytes) in &item.blobs {
            needles.photo(bytes);
        }
    }
    let canaries: Vec<String> = (0..4)
        .map(|i| format!("canary-{i}-9f3b1c77e2a4d05b-do-not-leak"))
        .collect();
    for c in &canaries {
        needles.text(c);
    }
    store
        .ingest_items(
            items,
            None,
            memdb::IngestOptions::default(),
            &mut |_, _, _| {},
        )
        .unwrap();
    let mut batch = store.batch();
    for (i, c) in canaries.iter().enumerate() {
        batch.put(note(&format!("canary-note-{i}"), c));
    }
    batch.commit().unwrap();
    // The ingest composed the pages already (photos among them); this brings the canaries'
    // day current.
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let stats = store.stats().unwrap();
    assert!(
        stats
            .blobs_by_kind
            .iter()
            .any(|(k, n, _)| *k == BlobKind::Original && *n > 0),
        "no originals: {:?}",
        stats.blobs_by_kind
    );

    let check = |when: &str| {
        let hits = needles.hits(&path);
        assert!(hits.is_empty(), "{when}: plaintext on disk: {hits:?}");
    };
    check("after ingest");
    memdb_it::compact_everything(&store);
    check("after compaction");
    store
        .forget(
            &Policy::builtin("timed-gentle").unwrap(),
            "2030-01-01".parse().unwrap(),
            ForgetOptions {
                dry_run: false,
                drop_originals: true,
                pages: PageOptions::default(),
                progress: &mut |_, _| {},
            },
        )
        .unwrap();
    memdb_it::compact_everything(&store);
    check("after forgetting");

    // Everything still reads back, through a new handle and a read-only one.
    let texts_before = store_texts(&store);
    drop(store);
    let store = Store::open(&path, options("a long passphrase")).unwrap();
    assert_eq!(store_texts(&store), texts_before);
    assert!(store.check().unwrap().is_clean());
    drop(store);
    let reader = Store::open_read_only(&path, options("a long passphrase")).unwrap();
    assert_eq!(store_texts(&reader), texts_before);
}

fn store_texts(store: &Store) -> Vec<(u64, Option<String>)> {
    let snap = store.snapshot().unwrap();
    snap.item_ids()
        .unwrap()
        .into_iter()
        .map(|id| (id, snap.get(id).unwrap().unwrap().fields.body))
        .collect()
}

/// A small encrypted store with items in at least two sealed segments.
fn small_store(path: &Path) -> Vec<String> {
    let store = Store::create(
        path,
        Options {
            segment_target_bytes: 16 << 10,
            ..options("pw")
        },
    )
    .unwrap();
    let mut ids = Vec::new();
    for b in 0..6 {
        let mut batch = store.batch();
        for i in 0..20 {
            let ext = format!("n-{b}-{i}");
            batch.put(note(
                &ext,
                &format!("note {b}/{i}: {}", "words of a note ".repeat(20)),
            ));
            ids.push(ext);
        }
        batch.commit().unwrap();
    }
    ids
}

fn segments(path: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = files_under(&path.join("segments"));
    v.sort();
    v
}

fn snapshot_files(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files_under(path)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "LOCK"))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn a_wrong_or_missing_key_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    small_store(&path);
    let before = snapshot_files(&path);
    match Store::open(&path, options("not the passphrase")) {
        Err(memdb::Error::Store(StoreError::Key {
            source: CryptoError::WrongKey,
            ..
        })) => {}
        other => panic!("wrong passphrase: {other:?}"),
    }
    assert!(matches!(
        Store::open(&path, Options::default()),
        Err(memdb::Error::Store(StoreError::Encrypted { .. }))
    ));
    let key_file = Options {
        secret: Some(Arc::new(Secret::key_file(&[1; 32]).unwrap())),
        ..options("x")
    };
    assert!(matches!(
        Store::open(&path, key_file),
        Err(memdb::Error::Store(StoreError::Key {
            source: CryptoError::WrongSecretKind { .. },
            ..
        }))
    ));
    assert!(matches!(
        Store::open_read_only(&path, options("nope")),
        Err(memdb::Error::Store(StoreError::Key {
            source: CryptoError::WrongKey,
            ..
        }))
    ));
    assert_eq!(
        snapshot_files(&path),
        before,
        "a refused open changed a file"
    );

    // A key file cut short, grown, or with a byte flipped in both of its copies: the header's
    // own error, naming it. One copy damaged costs nothing (store format 21).
    let key = path.join("KEY");
    let good = std::fs::read(&key).unwrap();
    assert_eq!(good.len(), 320, "two copies of the key header");
    let mut one_copy = good.clone();
    one_copy[50] ^= 1;
    std::fs::write(&key, &one_copy).unwrap();
    Store::open(&path, options("pw")).expect("the second copy unlocks the store");
    for (what, bytes) in [
        ("cut", good[..100].to_vec()),
        ("empty", Vec::new()),
        ("grown", [good.clone(), vec![0]].concat()),
        ("flipped", {
            let mut b = good.clone();
            b[50] ^= 1;
            b[160 + 50] ^= 1;
            b
        }),
    ] {
        std::fs::write(&key, &bytes).unwrap();
        match Store::open(&path, options("pw")) {
            Err(memdb::Error::Store(StoreError::Key {
                source: CryptoError::Header(e),
                ..
            })) => assert!(e.to_string().contains("key header"), "{what}: {e}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    std::fs::write(&key, &good).unwrap();
    Store::open(&path, options("pw")).unwrap();
}

#[test]
fn pages_swapped_between_segments_or_moved_are_errors_naming_the_file_and_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let ids = small_store(&path);
    let segs = segments(&path);
    assert!(segs.len() >= 2, "{segs:?}");
    let (a, b) = (&segs[0], &segs[1]);
    let (bytes_a, bytes_b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert!(bytes_a.len() >= 3 * SLOT && bytes_b.len() >= 3 * SLOT);
    // Page 1 of segment A replaced by page 1 of segment B: same place, another file.
    let mut swapped = bytes_a.clone();
    swapped[SLOT..2 * SLOT].copy_from_slice(&bytes_b[SLOT..2 * SLOT]);
    std::fs::write(a, &swapped).unwrap();
    let id_a = a.file_stem().unwrap().to_str().unwrap().to_owned();
    let store = Store::open(&path, options("pw")).unwrap();
    let report = store.check().unwrap();
    let named = report.problems.iter().any(|p| {
        p.segment == Some(u64::from_str_radix(&id_a, 16).unwrap())
            && p.what.contains(&format!("segment {id_a} page 1"))
    });
    assert!(named, "{:?}", report.problems);
    let snap = store.snapshot().unwrap();
    let mut refused = 0;
    for ext in &ids {
        match snap.get_by_external_id(ext) {
            Ok(Some(item)) => assert!(item.fields.body.unwrap().contains("words of a note")),
            Err(memdb::StoreError::Corruption { .. }) => refused += 1,
            other => panic!("{ext}: {other:?}"),
        }
    }
    assert!(refused > 0, "no read hit the swapped page");
    drop((snap, store));

    // Pages 1 and 2 of segment A exchanged: each in the wrong place of its own file.
    let mut moved = bytes_a.clone();
    moved[SLOT..2 * SLOT].copy_from_slice(&bytes_a[2 * SLOT..3 * SLOT]);
    moved[2 * SLOT..3 * SLOT].copy_from_slice(&bytes_a[SLOT..2 * SLOT]);
    std::fs::write(a, &moved).unwrap();
    let report = Store::open(&path, options("pw")).unwrap().check().unwrap();
    for page in [1, 2] {
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.what.contains(&format!("segment {id_a} page {page}"))),
            "page {page}: {:?}",
            report.problems
        );
    }
    std::fs::write(a, &bytes_a).unwrap();
    assert!(
        Store::open(&path, options("pw"))
            .unwrap()
            .check()
            .unwrap()
            .is_clean()
    );
}

#[test]
fn every_flipped_bit_of_a_segment_is_caught_by_its_tag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    small_store(&path);
    let seg = segments(&path)[0].clone();
    let good = std::fs::read(&seg).unwrap();
    // Bits through the header page (its tag covers the plaintext), sealed pages and tails.
    let mut flips = 0;
    for bit in (0..good.len() * 8).step_by(good.len() * 8 / 389) {
        flips += 1;
        let mut flipped = good.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&seg, &flipped).unwrap();
        let found = match Store::open(&path, options("pw")) {
            Ok(store) => !store.check().unwrap().is_clean(),
            // The header page is checked at open: a typed error, not a panic.
            Err(memdb::Error::Store(
                StoreError::Corruption { .. }
                | StoreError::SegmentUnavailable { .. }
                | StoreError::Io { .. },
            )) => true,
            Err(e) => panic!("bit {bit}: {e}"),
        };
        assert!(found, "bit {bit} of {} went unnoticed", seg.display());
    }
    std::fs::write(&seg, &good).unwrap();
    eprintln!(
        "R3 (encrypted): {flips} bits flipped one at a time through a {}-byte segment (header \
         page, sealed pages, tails): every one detected",
        good.len()
    );
}

#[test]
fn rekeying_changes_only_the_key_file_and_the_old_passphrase_stops_working() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let ids = small_store(&path);
    let before = snapshot_files(&path);
    let old = Secret::passphrase("pw").unwrap();
    let new = Secret::passphrase("a new passphrase").unwrap();
    Store::rekey(&path, &new, &old, &options("pw")).expect_err("the wrong old passphrase");
    Store::rekey(&path, &old, &new, &options("pw")).unwrap();
    let after = snapshot_files(&path);
    assert_eq!(before.len(), after.len());
    for ((p1, b1), (p2, b2)) in before.iter().zip(&after) {
        assert_eq!(p1, p2);
        if p1.file_name().unwrap() == "KEY" {
            assert_ne!(b1, b2, "the key file was not rewritten");
        } else {
            assert_eq!(b1, b2, "{} changed", p1.display());
        }
    }
    assert!(matches!(
        Store::open(&path, options("pw")),
        Err(memdb::Error::Store(StoreError::Key {
            source: CryptoError::WrongKey,
            ..
        }))
    ));
    let store = Store::open(&path, options("a new passphrase")).unwrap();
    let snap = store.snapshot().unwrap();
    assert!(snap.get_by_external_id(&ids[7]).unwrap().is_some());
    // A plain store has no key to change.
    let plain = dir.path().join("plain");
    drop(Store::create(&plain, Options::default()).unwrap());
    assert!(Store::rekey(&plain, &old, &new, &options("pw")).is_err());
    assert!(
        !Store::open(&plain, Options::default())
            .unwrap()
            .is_encrypted()
    );
}

#[test]
fn an_interrupted_append_is_never_sealed_over() {
    // After a crash leaves sealed pages past an open segment's committed length, the store
    // cuts them and appends no more to that segment: no page position of a segment is ever
    // sealed twice with different bytes, so an old copy of a page cannot be replayed.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::create(&path, options("pw")).unwrap();
    let mut batch = store.batch();
    batch.put(note("first", "the first note"));
    batch.commit().unwrap();
    drop(store);
    let seg = segments(&path)[0].clone();
    let committed = std::fs::read(&seg).unwrap();
    // An uncommitted tail: two slots of an append whose catalog commit never happened.
    let mut with_tail = committed.clone();
    with_tail.extend(std::iter::repeat_n(0x5a, 2 * SLOT));
    std::fs::write(&seg, &with_tail).unwrap();
    let store = Store::open(&path, options("pw")).unwrap();
    assert_eq!(std::fs::read(&seg).unwrap(), committed, "the tail is cut");
    let mut batch = store.batch();
    batch.put(note("second", "the second note"));
    batch.commit().unwrap();
    assert_eq!(
        std::fs::read(&seg).unwrap(),
        committed,
        "the cut segment took an append"
    );
    assert_eq!(segments(&path).len(), 2);
    let snap = store.snapshot().unwrap();
    assert!(snap.get_by_external_id("first").unwrap().is_some());
    assert!(snap.get_by_external_id("second").unwrap().is_some());
}

/// An older copy of a segment (a backup, a snapshot of the disk) put back into the store it
/// came from: a segment never reseals a page position (entries are whole pages, and an
/// interrupted append is cut and never appended to again), so wherever an older copy has a page
/// it is the current page byte for byte: there is nothing older to replay. (A catalog page
/// replayed from an older copy is not detected by the sealing: see SPEC.md §3.7.)
#[test]
fn an_older_copy_of_a_segment_holds_exactly_the_current_sealed_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = Store::create(&path, options("pw")).unwrap();
    let commit = |store: &Store, round: usize| {
        let mut batch = store.batch();
        for i in 0..8 {
            batch.put(note(
                &format!("r{round}-{i}"),
                &format!("round {round}, note {i}: {}", "some words ".repeat(30)),
            ));
        }
        batch.commit().unwrap();
    };
    commit(&store, 0);
    let old_segments: Vec<(PathBuf, Vec<u8>)> = segments(&path)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    assert!(!old_segments.is_empty());
    for round in 1..4 {
        commit(&store, round);
    }
    drop(store);
    let store = Store::open(&path, options("pw")).unwrap();
    commit(&store, 4);
    drop(store);
    for (segment, old) in &old_segments {
        let now = std::fs::read(segment).unwrap();
        assert!(now.len() > old.len(), "{}: no append", segment.display());
        assert_eq!(
            &now[..old.len()],
            old.as_slice(),
            "{}: a page position was sealed again",
            segment.display()
        );
    }
}
