//! The engine's ingest is resumable: a process killed with SIGKILL as a stage begins (commit,
//! places, embed, graph, pages) leaves a store that opens clean, keeps every committed batch, and that
//! the same ingest call run again completes — to exactly the store an uninterrupted ingest
//! makes (items, vectors, graph counts, pages and the items on each).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use memdb::{Options, Store};
use memdb_it::{
    HashEmbedder, ingest_corpus, locomo_files, shared_data, small_ingest_options, store_shape,
};

const PHOTOS: &str = "40";

fn locomo_file(dir: &Path) -> PathBuf {
    locomo_files(dir).swap_remove(0)
}

/// Runs the helper until it prints `until` (then kills it with SIGKILL, after `delay`), or to
/// its end when `until` is `None`.
fn run_child(store: &Path, locomo: &Path, photos: &Path, until: Option<&str>, delay: Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ingest_stages"))
        .args([
            store.to_str().unwrap(),
            locomo.to_str().unwrap(),
            photos.to_str().unwrap(),
            PHOTOS,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        seen.push(line.clone());
        if Some(line.as_str()) == until {
            std::thread::sleep(delay);
            child.kill().unwrap(); // SIGKILL
            break;
        }
    }
    let status = child.wait().unwrap();
    if until.is_none() {
        assert!(status.success(), "helper failed: {seen:?}");
    } else {
        assert!(
            seen.last().map(String::as_str) == until,
            "the helper ended before `{until:?}`: {seen:?}"
        );
    }
}

#[test]
fn a_kill_between_stages_is_completed_by_the_next_ingest() {
    let (Some(locomo_dir), Some(photos)) = (shared_data("locomo"), shared_data("photos")) else {
        return;
    };
    let locomo = locomo_file(&locomo_dir);
    let dir = tempfile::tempdir().unwrap();

    // The store an uninterrupted ingest makes.
    let reference = dir.path().join("reference");
    run_child(&reference, &locomo, &photos, None, Duration::ZERO);
    let want = store_shape(&Store::open(&reference, Options::default()).unwrap());
    assert!(want.items > 100 && want.vectors == want.items && want.graph_items == want.items);
    assert!(want.pages.iter().any(|p| p.2 > 0), "no page with photos");

    for (stage, delay_ms) in [
        ("committed", 0),
        ("stage places", 0),
        ("stage embed", 5),
        ("stage graph", 5),
        ("stage pages", 50),
    ] {
        let store_dir = dir.path().join(stage.replace(' ', "-"));
        run_child(
            &store_dir,
            &locomo,
            &photos,
            Some(stage),
            Duration::from_millis(delay_ms),
        );
        let store = Store::open(&store_dir, Options::default()).unwrap();
        let check = store.check().unwrap();
        assert!(check.is_clean(), "{stage}: {:?}", check.problems);
        let before = store_shape(&store);
        assert!(
            before.items > 0,
            "{stage}: the first batch was acknowledged"
        );
        assert_ne!(
            before, want,
            "{stage}: the kill came too late to test anything"
        );
        // The same call again: items already stored come back unchanged, the rest are added,
        // and each derived stage takes what is missing.
        let items = ingest_corpus(&locomo, Some(&photos), PHOTOS.parse().unwrap());
        let report = store
            .ingest_items(
                items,
                Some(&HashEmbedder),
                small_ingest_options(),
                &mut |_, _, _| {},
            )
            .unwrap();
        assert!(report.rejected.is_empty());
        assert_eq!(
            report.unchanged, before.items,
            "{stage}: every item committed before the kill is found unchanged"
        );
        assert_eq!(
            store_shape(&store),
            want,
            "{stage}: the resumed store differs"
        );
        assert!(store.check().unwrap().is_clean());
    }
}

/// Issue 48 (2): an import that puts back originals damage took, killed with SIGKILL at any
/// moment, leaves each photo whole — its original back byte for byte and its repair record gone,
/// or still without it and still saying a repair dropped it — and the next import finishes it.
#[test]
fn a_healing_import_killed_at_any_moment_leaves_each_photo_whole() {
    let (Some(locomo_dir), Some(photos)) = (shared_data("locomo"), shared_data("photos")) else {
        return;
    };
    let locomo = locomo_file(&locomo_dir);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    run_child(&base, &locomo, &photos, None, Duration::ZERO);
    // Three photos lose their originals to damage, and a repair records it.
    let (damaged, originals) = {
        let store = Store::open(&base, Options::default()).unwrap();
        let snap = store.snapshot().unwrap();
        let mut damaged = Vec::new();
        let mut originals = Vec::new();
        for id in snap.item_ids().unwrap() {
            let item = snap.get(id).unwrap().unwrap();
            if let Some(&blob) = item.blobs.first()
                && damaged.len() < 3
            {
                damaged.push(id);
                originals.push(snap.blob(blob).unwrap().unwrap().to_vec());
            }
        }
        (damaged, originals)
    };
    for original in &originals {
        for file in memdb_it::files_under(&base.join("segments")) {
            let mut bytes = std::fs::read(&file).unwrap();
            let middle = original.len() / 2;
            let needle = &original[middle..middle + 64];
            if let Some(at) = bytes.windows(64).position(|w| w == needle) {
                bytes[at] ^= 1;
                std::fs::write(&file, bytes).unwrap();
                break;
            }
        }
    }
    Store::repair_or_rebuild(&base, Options::default(), &mut |_, _, _| {}).unwrap();
    let whole = |store: &Store, strict: bool| {
        let snap = store.snapshot().unwrap();
        let mut restored = 0;
        for (id, original) in damaged.iter().zip(&originals) {
            let item = snap.get(*id).unwrap().unwrap();
            let repair_record = snap
                .dropped_blobs(*id)
                .unwrap()
                .iter()
                .any(|d| d.why.starts_with("repair"));
            match item.blobs.first() {
                Some(&blob) => {
                    assert_eq!(&*snap.blob(blob).unwrap().unwrap(), &original[..]);
                    assert!(
                        !repair_record,
                        "item {id} is back but still says it is lost"
                    );
                    restored += 1;
                }
                None => assert!(repair_record && !strict, "item {id} lost its record"),
            }
        }
        restored
    };
    for delay_ms in [0u64, 30, 80, 150, 180, 210, 240, 270, 300] {
        let work = dir.path().join(format!("kill-{delay_ms}"));
        memdb_it::copy_dir(&base, &work);
        run_child(
            &work,
            &locomo,
            &photos,
            Some("stage commit"),
            Duration::from_millis(delay_ms),
        );
        let store = Store::open(&work, Options::default()).unwrap();
        let check = store.check().unwrap();
        assert!(check.is_clean(), "{delay_ms} ms: {:?}", check.problems);
        let before = whole(&store, false);
        println!(
            "killed {delay_ms} ms into the import: {before} of {} restored",
            damaged.len()
        );
        let items = ingest_corpus(&locomo, Some(&photos), PHOTOS.parse().unwrap());
        let report = store
            .ingest_items(
                items,
                Some(&HashEmbedder),
                small_ingest_options(),
                &mut |_, _, _| {},
            )
            .unwrap();
        assert_eq!(
            report.restored as usize,
            damaged.len() - before,
            "{delay_ms} ms"
        );
        assert_eq!(whole(&store, true), damaged.len());
        assert!(store.check().unwrap().is_clean());
    }
}
