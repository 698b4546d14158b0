//! Issue 48: damage costs no more than what it hit. A store of photos, mail and chat with
//! vectors and pages, plain and encrypted, is copied N times; each copy gets one byte changed
//! (seeded) in one of its files — a segment, the catalog, the KEY file, anything — and is
//! repaired the way `memdb repair` repairs (`Store::repair_or_rebuild`). Every repair must
//! succeed and leave a store that checks clean, and the items and originals lost must be among
//! those whose own bytes the change hit: a changed byte of the catalog or the KEY file hits no
//! item, one of a segment hits the record frame or blob entry it lies in (an entry header: the
//! whole entry; in an encrypted store, every entry on the changed byte's page). A table row per
//! copy prints both counts. `MEMDB_DAMAGE_COPIES` (default 10 per store) and
//! `MEMDB_DAMAGE_SEED` size and seed the run; the notes' run is a large N.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use memdb::scrapbook::PageOptions;
use memdb::{ItemFields, Store, maintenance::Repaired, vectors::ITEM_VECTORS};
use memdb_formats::item::{decode_record, read_framed};
use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryHeader, EntryKind, PAGE};
use memdb_it::{Rng, crash_batch_len, crash_item, env_u64, files_under, store_options};

/// Bytes a sealed page takes on disk (SPEC.md §3.7: 4096 and a 40-byte tail).
const SLOT: u64 = 4136;

/// What the store held: each current item's fields and the bytes of its blobs, by id.
type Truth = BTreeMap<u64, (ItemFields, BTreeMap<u64, Vec<u8>>)>;

/// A store of photos and real mail (from the shared data when present), chat and notes (the
/// crash workload: every source, some with originals), one item deleted, every item with a
/// vector, the pages composed; sealed by a compaction, then one more batch in an open segment.
/// `MEMDB_DAMAGE_PHOTOS` (default 8) and `MEMDB_DAMAGE_MAILS` (default 20) size it: the notes'
/// bench-sized run takes 60 and 300.
fn build(path: &Path, encrypted: bool) -> Truth {
    let store = Store::create(path, store_options(encrypted)).unwrap();
    if let Some(photos) = memdb_it::shared_data("photos") {
        let limit = env_u64("MEMDB_DAMAGE_PHOTOS", 8) as usize;
        memdb_it::import_photos(&store, &photos, limit);
    }
    if let Some(mail) = memdb_it::shared_data("mail") {
        let limit = env_u64("MEMDB_DAMAGE_MAILS", 20) as usize;
        let mut wb = store.batch();
        let mut n = 0;
        for file in files_under(&mail.join("enron")) {
            if n == limit {
                break;
            }
            let bytes = std::fs::read(&file).unwrap();
            let name = file.display().to_string();
            for item in memdb_formats::import::mail::parse(&file, &name, &bytes).items {
                if n < limit {
                    wb.put(item.draft);
                    n += 1;
                }
            }
        }
        wb.commit().unwrap();
    }
    for batch in 0..3 {
        let mut wb = store.batch();
        for index in 0..crash_batch_len(batch).min(40) {
            let (draft, blobs) = crash_item(batch, index);
            wb.put_with_blobs(draft, blobs);
        }
        wb.commit().unwrap();
    }
    let snap = store.snapshot().unwrap();
    let ids = snap.item_ids().unwrap();
    let mut wb = store.batch();
    for &id in &ids {
        let item = snap.get(id).unwrap().unwrap();
        let vector = (0..32).map(|d| ((id * 31 + d) % 17) as f32 - 8.0).collect();
        wb.put_vector(
            ITEM_VECTORS,
            id,
            item.fields.time.unix_ms,
            item.fields.source.code(),
            vector,
        );
    }
    wb.delete(ids[ids.len() / 2]);
    wb.commit().unwrap();
    drop(snap);
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    memdb_it::compact_everything(&store);
    let mut wb = store.batch();
    for index in 0..12 {
        let (draft, blobs) = crash_item(7, index);
        wb.put_with_blobs(draft, blobs);
    }
    wb.commit().unwrap();
    let report = store.check().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    truth(&store)
}

fn truth(store: &Store) -> Truth {
    let snap = store.snapshot().unwrap();
    let mut out = Truth::new();
    for id in snap.item_ids().unwrap() {
        let item = snap.get(id).unwrap().unwrap();
        let mut blobs = BTreeMap::new();
        for blob in item.blobs {
            if let Some(bytes) = snap.blob(blob).unwrap() {
                blobs.insert(blob, bytes.to_vec());
            }
        }
        out.insert(id, (item.fields, blobs));
    }
    out
}

/// The items and blobs whose own bytes lie in the plaintext range `hit` of segment `id`.
fn hit_in_segment(
    plain: &[u8],
    id: u64,
    hit: std::ops::Range<u64>,
    truth: &Truth,
) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let (mut items, mut blobs) = (BTreeSet::new(), BTreeSet::new());
    let overlaps = |a: u64, b: u64| a < hit.end && hit.start < b;
    let mut at = PAGE as u64;
    while at + PAGE as u64 <= plain.len() as u64 {
        let Ok(header) = EntryHeader::decode(&plain[at as usize..], at) else {
            at += PAGE as u64;
            continue;
        };
        if header.segment_id != id {
            at += PAGE as u64;
            continue;
        }
        let payload = at + ENTRY_HEADER_BYTES as u64;
        let end = payload + header.payload_len;
        let whole = overlaps(at, payload);
        match header.kind {
            EntryKind::ItemBlock => {
                let block = &plain[payload as usize..end.min(plain.len() as u64) as usize];
                let mut off = 0usize;
                while off + 8 <= block.len() {
                    let len = u32::from_le_bytes(block[off..off + 4].try_into().unwrap()) as usize;
                    let Some(frame) = block.get(off..off + 8 + len) else {
                        break;
                    };
                    let start = payload + off as u64;
                    if (whole || overlaps(start, start + frame.len() as u64))
                        && let Ok(record) = read_framed(frame).and_then(decode_record)
                        && truth.get(&record.id).is_some_and(|t| t.0 == record.fields)
                    {
                        items.insert(record.id);
                    }
                    off += 8 + len;
                }
            }
            EntryKind::Blob => {
                if (whole || overlaps(payload, end))
                    && let Some(tag) = header.blob
                {
                    blobs.insert(tag.id);
                }
            }
            EntryKind::Footer => {}
        }
        at += header.pages() * PAGE as u64;
    }
    (items, blobs)
}

/// What one copy's repair cost, against what its changed byte hit.
struct Row {
    file: String,
    offset: u64,
    hit_items: BTreeSet<u64>,
    hit_blobs: BTreeSet<u64>,
    lost_items: BTreeSet<u64>,
    lost_blobs: BTreeSet<u64>,
    how: String,
    /// What the repaired store gets wrong besides losses: check's problems, items back from
    /// the dead.
    wrong: Vec<String>,
}

fn one_copy(pristine: &Path, work: &Path, encrypted: bool, truth: &Truth, rng: &mut Rng) -> Row {
    memdb_it::copy_dir(pristine, work);
    // Every file of the store but LOCK, whose bytes (the writer's pid) nothing reads.
    let files: Vec<PathBuf> = files_under(work)
        .into_iter()
        .filter(|f| std::fs::metadata(f).unwrap().len() > 0 && !f.ends_with("LOCK"))
        .collect();
    let file = files[rng.range(0, files.len() as u64) as usize].clone();
    let mut bytes = std::fs::read(&file).unwrap();
    let offset = rng.range(0, bytes.len() as u64);
    bytes[offset as usize] ^= rng.range(1, 256) as u8;
    let name = file.strip_prefix(work).unwrap().display().to_string();
    let (mut hit_items, mut hit_blobs) = (BTreeSet::new(), BTreeSet::new());
    if let Some(id) = name
        .strip_prefix("segments/")
        .and_then(|n| n.strip_suffix(".seg"))
        .and_then(|n| u64::from_str_radix(n, 16).ok())
    {
        let plain =
            memdb::fault::segment_plaintext(pristine, store_options(encrypted), id).unwrap();
        let hit = if encrypted {
            let page = offset / SLOT * PAGE as u64;
            page..page + PAGE as u64
        } else {
            offset..offset + 1
        };
        (hit_items, hit_blobs) = hit_in_segment(&plain, id, hit, truth);
    }
    std::fs::write(&file, bytes).unwrap();

    let repaired = Store::repair_or_rebuild(work, store_options(encrypted), &mut |_, _, _| {})
        .unwrap_or_else(|e| panic!("repair after a change of {name} at {offset}: {e}"));
    let how = match &repaired {
        Repaired::InPlace(r) if r.was_clean() => "clean".to_owned(),
        Repaired::InPlace(_) => "in place".to_owned(),
        Repaired::Rebuilt(r) => format!(
            "rebuilt ({}; {} from the segments alone{})",
            r.catalog_error.chars().take(60).collect::<String>(),
            r.from_segments_only,
            if r.deletions_known {
                ""
            } else {
                ", deletions unknown"
            }
        ),
    };
    let store = Store::open(work, store_options(encrypted)).unwrap();
    let mut wrong: Vec<String> = store
        .check()
        .unwrap()
        .problems
        .iter()
        .map(|p| format!("check: {p}"))
        .collect();
    let snap = store.snapshot().unwrap();
    let (mut lost_items, mut lost_blobs) = (BTreeSet::new(), BTreeSet::new());
    for (id, (fields, blobs)) in truth {
        match snap.get(*id).unwrap() {
            Some(item) if item.fields == *fields => {}
            _ => {
                lost_items.insert(*id);
            }
        }
        for (blob, want) in blobs {
            if snap.blob(*blob).unwrap().is_none_or(|got| *got != **want) {
                lost_blobs.insert(*blob);
            }
        }
    }
    // Nothing comes back that was not current (the deleted item, an earlier version) —
    // unless the rebuild says it could not tell deletions (the op log, the ops by memory and
    // the item list all lost with one catalog page): then the row counts them.
    let deletions_known = match &repaired {
        Repaired::Rebuilt(r) => r.deletions_known,
        Repaired::InPlace(_) => true,
    };
    let mut back = 0;
    for id in snap.item_ids().unwrap() {
        if !truth.contains_key(&id) {
            back += 1;
            if deletions_known {
                wrong.push(format!("item {id} is back but was not current"));
            }
        }
    }
    let how = if back > 0 {
        format!("{how}; {back} deleted item(s) back")
    } else {
        how
    };
    Row {
        wrong,
        file: name,
        offset,
        hit_items,
        hit_blobs,
        lost_items,
        lost_blobs,
        how,
    }
}

fn campaign(encrypted: bool) {
    let copies = env_u64("MEMDB_DAMAGE_COPIES", 10);
    let mut rng = Rng::new(env_u64("MEMDB_DAMAGE_SEED", 48) ^ u64::from(encrypted));
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    let truth = build(&pristine, encrypted);
    let originals: usize = truth.values().map(|(_, b)| b.len()).sum();
    println!(
        "{} store: {} items, {originals} blobs of items; {copies} copies, one byte changed in each",
        if encrypted { "encrypted" } else { "plain" },
        truth.len()
    );
    println!(
        "{:>4} {:<28} {:>9} {:>9} {:>10} {:>10} {:>10}  repair",
        "copy", "file", "offset", "hit items", "hit blobs", "lost items", "lost blobs"
    );
    let mut failures = Vec::new();
    for copy in 0..copies {
        let work = dir.path().join(format!("copy-{copy}"));
        let row = one_copy(&pristine, &work, encrypted, &truth, &mut rng);
        println!(
            "{copy:>4} {:<28} {:>9} {:>9} {:>10} {:>10} {:>10}  {}",
            row.file,
            row.offset,
            row.hit_items.len(),
            row.hit_blobs.len(),
            row.lost_items.len(),
            row.lost_blobs.len(),
            row.how
        );
        for what in &row.wrong {
            failures.push(format!(
                "copy {copy} ({} at {}): {what}",
                row.file, row.offset
            ));
        }
        if !row.lost_items.is_subset(&row.hit_items) || !row.lost_blobs.is_subset(&row.hit_blobs) {
            failures.push(format!(
                "copy {copy} ({} at {}): lost items {:?} (hit {:?}), blobs {:?} (hit {:?})",
                row.file, row.offset, row.lost_items, row.hit_items, row.lost_blobs, row.hit_blobs
            ));
        }
        std::fs::remove_dir_all(&work).unwrap();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .contains(".damaged-")
            {
                std::fs::remove_dir_all(path).unwrap();
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_changed_byte_in_a_plain_store_costs_no_more_than_what_it_hit() {
    campaign(false);
}

#[test]
fn a_changed_byte_in_an_encrypted_store_costs_no_more_than_what_it_hit() {
    campaign(true);
}

/// The first case: the catalog's first pages unreadable (redb's header, or an encrypted
/// catalog's header slots) — `repair` rebuilds from the segments and every item comes back
/// with every original, byte for byte, tied to its item by the entries' tags.
fn a_lost_catalog_keeps_every_original(encrypted: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let truth = build(&path, encrypted);
    let catalog = path.join("catalog.redb");
    let mut bytes = std::fs::read(&catalog).unwrap();
    for (i, b) in bytes.iter_mut().take(3 * 4136).enumerate() {
        *b ^= (i * 7 + 13) as u8 | 1;
    }
    std::fs::write(&catalog, bytes).unwrap();
    let repaired =
        Store::repair_or_rebuild(&path, store_options(encrypted), &mut |_, _, _| {}).unwrap();
    let Repaired::Rebuilt(report) = repaired else {
        panic!("a catalog that does not open is rebuilt: {repaired:?}");
    };
    assert!(report.blobs_lost.is_empty(), "{report:?}");
    let store = Store::open(&path, store_options(encrypted)).unwrap();
    assert!(store.check().unwrap().is_clean());
    let snap = store.snapshot().unwrap();
    let originals: usize = truth.values().map(|(_, b)| b.len()).sum();
    assert!(originals > 10, "the store has originals to lose");
    for (id, (fields, blobs)) in &truth {
        let item = snap.get(*id).unwrap().unwrap();
        assert_eq!(&item.fields, fields);
        assert_eq!(item.blobs, blobs.keys().copied().collect::<Vec<_>>());
        for (blob, want) in blobs {
            assert_eq!(&*snap.blob(*blob).unwrap().unwrap(), &want[..]);
        }
    }
}

#[test]
fn a_plain_store_whose_catalog_is_lost_keeps_every_original() {
    a_lost_catalog_keeps_every_original(false);
}

#[test]
fn an_encrypted_store_whose_catalog_is_lost_is_rebuilt_with_its_passphrase() {
    a_lost_catalog_keeps_every_original(true);
}

/// The payload offset of the item frame of `id` in the store's segments: (file, offset of a
/// byte in the middle of its record).
fn frame_of(path: &Path, id: u64) -> (PathBuf, u64) {
    for file in files_under(&path.join("segments")) {
        let bytes = std::fs::read(&file).unwrap();
        let name = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let segment = u64::from_str_radix(&name, 16).unwrap();
        for (offset, record) in memdb::maintenance::salvage_segment(segment, &bytes).records {
            if record.id == id {
                return (file, offset + 20);
            }
        }
    }
    panic!("no frame of item {id}");
}

fn note(ext: &str, body: &str) -> memdb::ItemDraft {
    let mut fields = ItemFields::new(
        memdb::Source::Note,
        memdb::EventTime::parse("2024-03-04T09:00:00+01:00").unwrap(),
    );
    fields.external_id = Some(ext.into());
    fields.body = Some(body.into());
    memdb::ItemDraft {
        fields,
        supersedes: None,
    }
}

/// Issue 48 (4): one damaged record costs its item, not the search: `recall` answers from the
/// rest and names the item it skipped — through a read-only handle too, which can repair
/// nothing.
#[test]
fn recall_skips_a_damaged_record_and_names_it_read_only_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let damaged = {
        let store = Store::create(&path, store_options(false)).unwrap();
        let mut b = store.batch();
        for (i, body) in [
            "The harbour at dusk, boats coming in",
            "Lunch with Ana at the harbour market",
            "Dentist appointment on Tuesday",
            "The harbour ferry timetable changed",
        ]
        .into_iter()
        .enumerate()
        {
            b.put(note(&format!("n{i}"), body));
        }
        let receipt = b.commit().unwrap();
        store
            .embed_missing(&memdb_it::HashEmbedder, &mut |_, _| {})
            .unwrap();
        receipt.puts[1].id
    };
    let (file, offset) = frame_of(&path, damaged);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[offset as usize] ^= 0x20;
    std::fs::write(&file, bytes).unwrap();
    let options = memdb::recall::RecallOptions::default();
    for read_only in [false, true] {
        let store = if read_only {
            Store::open_read_only(&path, store_options(false)).unwrap()
        } else {
            Store::open(&path, store_options(false)).unwrap()
        };
        let recall = store
            .recall("harbour", &options, &memdb_it::HashEmbedder)
            .unwrap();
        assert_eq!(
            recall.skipped.items,
            vec![damaged],
            "read-only: {read_only}"
        );
        let hits: Vec<u64> = recall.hits.iter().map(|h| h.item).collect();
        assert!(!hits.contains(&damaged), "{hits:?}");
        assert!(
            hits.len() >= 2,
            "the sound harbour notes are found: {hits:?}"
        );
        let warning = recall.skipped.describe().unwrap();
        assert!(
            warning.contains(&damaged.to_string()) && warning.contains("memdb repair"),
            "{warning}"
        );
        // A listing skips it too, and says so.
        let (listed, unreadable) = store
            .snapshot()
            .unwrap()
            .scan_readable(&memdb::ScanFilter::default())
            .unwrap();
        assert_eq!((listed.len(), unreadable), (3, vec![damaged]));
    }
}

/// Issue 48 (2): importing a photo again whose original a repair dropped (damage) puts the
/// original back and says so (`restored`); the item no longer says its original is lost.
#[test]
fn importing_a_photo_again_restores_its_original_lost_to_damage() {
    let Some(photos) = memdb_it::shared_data("photos") else {
        return;
    };
    let files: Vec<(String, Vec<u8>)> = files_under(&photos.join("exif-samples"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("jpg")))
        .filter_map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            memdb_formats::import::photo::parse("x", &bytes, Default::default())
                .is_ok_and(|p| p.damage.is_none())
                .then(|| (p.display().to_string(), bytes))
        })
        .take(3)
        .collect();
    let ingest = |store: &Store| {
        let items = files.iter().map(|(name, bytes)| {
            let photo =
                memdb_formats::import::photo::parse(name, bytes, Default::default()).unwrap();
            memdb::IngestItem {
                blobs: vec![(memdb::BlobKind::Original, bytes.clone())],
                origin: name.clone(),
                ..memdb::IngestItem::new(photo.draft)
            }
        });
        store
            .ingest_items(
                items,
                None,
                memdb_it::small_ingest_options(),
                &mut |_, _, _| {},
            )
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, store_options(false)).unwrap();
    assert_eq!(ingest(&store).added, 3);
    // Damage the first photo's original; the repair drops it, recorded as the repair's.
    let snap = store.snapshot().unwrap();
    let id = snap.item_ids().unwrap()[0];
    let blob = snap.get(id).unwrap().unwrap().blobs[0];
    let original = snap.blob(blob).unwrap().unwrap().to_vec();
    drop((snap, store));
    let mut hit = None;
    for file in files_under(&path.join("segments")) {
        let bytes = std::fs::read(&file).unwrap();
        if let Some(at) = bytes.windows(64).position(|w| w == &original[1000..1064]) {
            hit = Some((file, at));
        }
    }
    let (file, at) = hit.expect("the original's bytes in a segment");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[at] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    let repaired =
        Store::repair_or_rebuild(&path, store_options(false), &mut |_, _, _| {}).unwrap();
    assert!(matches!(repaired, Repaired::InPlace(_)), "{repaired:?}");
    let store = Store::open(&path, store_options(false)).unwrap();
    let dropped = store.snapshot().unwrap().dropped_blobs(id).unwrap();
    assert!(
        dropped.len() == 1 && dropped[0].why.starts_with("repair"),
        "{dropped:?}"
    );
    assert!(
        store
            .snapshot()
            .unwrap()
            .get(id)
            .unwrap()
            .unwrap()
            .blobs
            .is_empty()
    );

    let report = ingest(&store);
    assert_eq!(
        (
            report.added,
            report.updated,
            report.restored,
            report.unchanged
        ),
        (0, 0, 1, 2)
    );
    let snap = store.snapshot().unwrap();
    let item = snap.get(id).unwrap().unwrap();
    assert_eq!(item.blobs.len(), 1);
    assert_eq!(&*snap.blob(item.blobs[0]).unwrap().unwrap(), &original[..]);
    assert!(snap.dropped_blobs(id).unwrap().is_empty());
    assert!(store.check().unwrap().is_clean());
}

/// Issue 48 (6): an undated photo ages from the day memdb stored it, so forgetting does not
/// keep its original forever; the dry run says which day it counted from.
#[test]
fn an_undated_original_ages_from_the_day_it_was_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, store_options(false)).unwrap();
    let mut fields = ItemFields::new(memdb::Source::Image, memdb::EventTime::UNDATED);
    fields.external_id = Some("undated".into());
    let mut b = store.batch();
    b.put_with_blobs(
        memdb::ItemDraft {
            fields,
            supersedes: None,
        },
        vec![(memdb::BlobKind::Original, vec![9; 10_000])],
    );
    let id = b.commit().unwrap().puts[0].id;
    let policy = memdb::forget::Policy::builtin("timed-gentle").unwrap();
    let today = jiff::Zoned::now()
        .with_time_zone(jiff::tz::TimeZone::UTC)
        .date();
    let plan = |as_of: jiff::civil::Date| {
        store
            .forget(
                &policy,
                as_of,
                memdb::forget::ForgetOptions {
                    dry_run: true,
                    drop_originals: false,
                    pages: PageOptions::default(),
                    progress: &mut |_, _| {},
                },
            )
            .unwrap()
    };
    assert!(plan(today).originals.is_empty(), "a new original is kept");
    let later = plan(today.checked_add(jiff::Span::new().years(30)).unwrap());
    assert_eq!(later.originals.len(), 1, "{later:?}");
    assert_eq!(later.originals[0].item, id);
    assert_eq!(later.originals[0].day, format!("undated, stored {today}"));
}

/// Issue 48 (5): in an encrypted store one bad page is reported as the entries it holds, not
/// as every entry of its segment: a changed byte in the second page of a photo original names
/// that original and nothing else.
#[test]
fn check_names_what_one_bad_encrypted_page_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let truth = build(&path, true);
    // A blob entry over two pages or more, in some segment.
    let mut target = None;
    for file in files_under(&path.join("segments")) {
        let name = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let id = u64::from_str_radix(&name, 16).unwrap();
        let plain = memdb::fault::segment_plaintext(&path, store_options(true), id).unwrap();
        let mut at = PAGE as u64;
        while at + PAGE as u64 <= plain.len() as u64 {
            match EntryHeader::decode(&plain[at as usize..], at) {
                Ok(h) if h.kind == EntryKind::Blob && h.pages() >= 3 => {
                    if let Some(tag) = h.blob
                        && truth.values().any(|(_, blobs)| blobs.contains_key(&tag.id))
                    {
                        target = Some((file.clone(), at / PAGE as u64 + 1, tag.id));
                    }
                    at += h.pages() * PAGE as u64;
                }
                Ok(h) => at += h.pages() * PAGE as u64,
                Err(_) => at += PAGE as u64,
            }
        }
    }
    let (file, page, blob) = target.expect("an original over several pages");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[(page * SLOT + 100) as usize] ^= 0x40;
    std::fs::write(&file, bytes).unwrap();
    let store = Store::open(&path, store_options(true)).unwrap();
    let report = store.check().unwrap();
    let lost: Vec<u64> = report.damage.blobs.iter().map(|b| b.id).collect();
    assert_eq!(lost, vec![blob], "{:?}", report.problems);
    assert!(report.damage.items.is_empty(), "{:?}", report.damage);
    assert!(
        report.problems.len() <= 4,
        "one bad page, {} problems: {:?}",
        report.problems.len(),
        report.problems
    );
}

/// Issue 48 (3): a page of an encrypted catalog put back from an older copy of the same
/// catalog carries a valid tag, so only redb's structure checks stand against it: whatever
/// it makes of the store, opening, checking, reading and repairing answer with typed errors
/// or results, never a panic.
#[test]
fn a_replayed_encrypted_catalog_page_is_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let old_catalog = {
        let store = Store::create(&path, store_options(true)).unwrap();
        let mut b = store.batch();
        for i in 0..40 {
            b.put(note(&format!("a{i}"), &format!("first note {i}")));
        }
        b.commit().unwrap();
        drop(store);
        std::fs::read(path.join("catalog.redb")).unwrap()
    };
    {
        let store = Store::open(&path, store_options(true)).unwrap();
        for round in 0..3 {
            let mut b = store.batch();
            for i in 0..40 {
                b.put(note(&format!("b{round}-{i}"), &format!("later note {i}")));
            }
            b.commit().unwrap();
        }
    }
    let current = std::fs::read(path.join("catalog.redb")).unwrap();
    let slot = SLOT as usize;
    let mut replayed = 0;
    let mut panics = Vec::new();
    // Slots 0 and 1 hold the header page (its own generations); the rest are pages 1, 2, …
    for n in 2..old_catalog.len().min(current.len()) / slot {
        let (old, new) = (
            &old_catalog[n * slot..(n + 1) * slot],
            &current[n * slot..(n + 1) * slot],
        );
        if old == new || old.iter().all(|&b| b == 0) {
            continue;
        }
        replayed += 1;
        let work = dir.path().join(format!("replay-{n}"));
        memdb_it::copy_dir(&path, &work);
        let mut bytes = current.clone();
        bytes[n * slot..(n + 1) * slot].copy_from_slice(old);
        std::fs::write(work.join("catalog.redb"), bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            if let Ok(store) = Store::open(&work, store_options(true)) {
                let _ = store.check();
                if let Ok(snap) = store.snapshot() {
                    let _ = snap.scan_readable(&memdb::ScanFilter::default());
                }
            }
            Store::repair_or_rebuild(&work, store_options(true), &mut |_, _, _| {})
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        match outcome {
            Err(_) => panics.push(n),
            Ok(Ok(())) => {
                let store = Store::open(&work, store_options(true)).unwrap();
                assert!(store.check().unwrap().is_clean(), "page {n}");
            }
            Ok(Err(e)) => panic!("page {n}: the repair failed: {e}"),
        }
    }
    assert!(replayed > 0, "some page changed between the copies");
    assert!(panics.is_empty(), "panics replaying pages {panics:?}");
}

/// Issue 48 (4): a plain compaction leaves a damaged segment as it is, says so, and compacts
/// the rest; `repair` then mends it.
#[test]
fn compaction_carries_a_damaged_segment_over_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let truth = build(&path, false);
    let (id, _) = truth
        .iter()
        .find(|(_, (_, blobs))| !blobs.is_empty())
        .unwrap();
    let (file, offset) = frame_of(&path, *id);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[offset as usize] ^= 0x08;
    std::fs::write(&file, bytes).unwrap();
    let store = Store::open(&path, store_options(false)).unwrap();
    let before = store.check().unwrap().problems.len();
    assert!(before > 0);
    let report = store
        .compact(
            &memdb::maintenance::CompactOptions {
                victims: memdb::maintenance::Victims::All,
            },
            &mut memdb::maintenance::KeepEverything,
        )
        .unwrap();
    let damaged: u64 =
        u64::from_str_radix(file.file_stem().unwrap().to_str().unwrap(), 16).unwrap();
    assert_eq!(report.segments_skipped_damaged, vec![damaged], "{report:?}");
    assert!(file.exists(), "the damaged segment is kept as it was");
    assert_eq!(store.check().unwrap().problems.len(), before);
    drop(store);
    Store::repair_or_rebuild(&path, store_options(false), &mut |_, _, _| {}).unwrap();
    assert!(
        Store::open(&path, store_options(false))
            .unwrap()
            .check()
            .unwrap()
            .is_clean()
    );
}
