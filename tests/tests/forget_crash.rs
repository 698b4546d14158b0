//! A crash test of forgetting (issue 6): a child runs an eight-step forgetting schedule and is
//! killed with SIGKILL at random moments; after every kill the store opens, `check()` is clean,
//! and every page shows the same step — the last one acknowledged or the one in flight, never a
//! mix — with pixels that agree with its row (each part's width is the page width at the row's
//! scale) and item vectors at that step's precision, and the segment files on disk are exactly
//! the catalog's manifest (reliability R3).
//!
//! Seeded and reproducible: `MEMDB_CRASH_SEED` (default 1), `MEMDB_FORGET_KILLS` (default 16).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use memdb::scrapbook::PageOptions;
use memdb::{BlobKind, Options, Store, vectors::ITEM_VECTORS, vectors::Precision};
use memdb_it::{
    CRASH_FORGET_STEPS, Rng, crash_forget_photo_time, env_u64, import_photos_at, shared_data,
};

/// Options for the stores under test: f32 item vectors (an option; the default is i8), so that
/// the schedule's steps re-quantize them to f16 and then i8.
fn f32_items() -> Options {
    Options {
        item_vector_precision: Precision::F32,
        ..Options::default()
    }
}

/// (last acknowledged step, step in flight) from the child's log.
fn read_log(text: &str) -> (Option<u32>, Option<u32>) {
    let (mut committed, mut in_flight) = (None, None);
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("I", k)) => in_flight = k.parse().ok(),
            Some(("C", k)) => {
                committed = k.parse().ok();
                in_flight = None;
            }
            _ => {}
        }
    }
    (committed, in_flight)
}

/// Verifies the store after a kill; returns the step every page shows.
fn verify(path: &std::path::Path, committed: Option<u32>, in_flight: Option<u32>) -> Option<u32> {
    let store = Store::open(path, Options::default()).unwrap();
    let report = store.check().unwrap();
    assert!(report.is_clean(), "{report:?}");
    // No orphan segment survives the open, and none the catalog lists is missing.
    let listed: BTreeSet<String> = store
        .stats()
        .unwrap()
        .segments
        .iter()
        .map(|s| format!("{:016x}.seg", s.id))
        .collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(path.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(on_disk, listed, "segment files vs the catalog's manifest");
    let snap = store.snapshot().unwrap();
    let pages = snap.pages().unwrap();
    assert!(!pages.is_empty());
    let originals = store
        .stats()
        .unwrap()
        .blobs_by_kind
        .iter()
        .find(|b| b.0 == BlobKind::Original)
        .unwrap()
        .1;
    // Step k leaves every page at stage k; before step 0 the originals are still there.
    let stages: BTreeSet<u8> = pages.iter().map(|p| p.stage).collect();
    assert_eq!(stages.len(), 1, "pages at different stages: {stages:?}");
    let stage = *stages.iter().next().unwrap();
    let shown = if originals > 0 {
        assert_eq!(stage, 0);
        None
    } else {
        Some(u32::from(stage))
    };
    let allowed: BTreeSet<Option<u32>> = [committed, in_flight.or(committed)].into();
    assert!(
        allowed.contains(&shown),
        "pages show step {shown:?}; acknowledged {committed:?}, in flight {in_flight:?}"
    );
    // Item vectors are at the precision of the step the pages show.
    let policy = memdb_it::crash_forget_policy();
    let want = shown.map_or(Precision::F32, |k| policy.stages[k as usize].vectors);
    let vectors = snap.vectors(ITEM_VECTORS).unwrap().unwrap();
    for id in snap.item_ids().unwrap() {
        assert_eq!(
            vectors.precision_of(id),
            Some(want),
            "item {id}: pages show step {shown:?}"
        );
    }
    for page in &pages {
        for part in &page.parts {
            let bytes = snap.blob(*part).unwrap().unwrap();
            let image =
                memdb_formats::import::photo::decode_rgb(&bytes, Default::default()).unwrap();
            let want = f64::from(page.layout.width) * page.scale;
            assert!(
                (f64::from(image.width) - want).abs() <= 2.0,
                "page {} part {part}: {} px wide at scale {}",
                page.day,
                image.width,
                page.scale
            );
        }
    }
    shown
}

/// A copy of a closed store, permissions and all.
fn copy_store(from: &std::path::Path, to: &std::path::Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Copies the `n` smallest photos under `photos` that import and decode into `dir` (small
/// stores keep each crash image small).
fn smallest_photos(
    photos: &std::path::Path,
    dir: &std::path::Path,
    n: usize,
) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut files = memdb_it::files_under(photos);
    files.retain(|p| {
        let bytes = std::fs::read(p).unwrap();
        p.extension().is_some_and(|e| e.eq_ignore_ascii_case("jpg"))
            && memdb_formats::import::photo::parse("x", &bytes, Default::default())
                .is_ok_and(|p| p.damage.is_none())
            && memdb_formats::import::photo::decode_rgb(&bytes, Default::default()).is_ok()
    });
    files.sort_by_key(|p| std::fs::metadata(p).unwrap().len());
    for (i, file) in files.iter().take(n).enumerate() {
        std::fs::copy(file, dir.join(format!("{i}.jpg"))).unwrap();
    }
    dir.to_path_buf()
}

/// Imports the first `n` photos of `dir` dated by `crash_forget_photo_time`, gives every item
/// a vector, and composes the pages: the store the forgetting schedule starts from.
fn photos_with_vectors_and_pages(store: &Store, dir: &std::path::Path, n: usize) {
    assert_eq!(
        import_photos_at(store, dir, n, |i| Some(crash_forget_photo_time(i))),
        n
    );
    let snap = store.snapshot().unwrap();
    let mut batch = store.batch();
    for id in snap.item_ids().unwrap() {
        let item = snap.get(id).unwrap().unwrap();
        let vector = (0..32).map(|d| ((id * 31 + d) % 17) as f32 - 8.0).collect();
        let (time, source) = (item.fields.time.unix_ms, item.fields.source.code());
        batch.put_vector(ITEM_VECTORS, id, time, source, vector);
    }
    batch.commit().unwrap();
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
}

#[test]
fn killed_forgetting_leaves_every_page_old_or_new_never_a_mix() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let kills = env_u64("MEMDB_FORGET_KILLS", 16);
    let mut rng = Rng::new(env_u64("MEMDB_CRASH_SEED", 1));
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    {
        let store = Store::create(&pristine, f32_items()).unwrap();
        photos_with_vectors_and_pages(&store, &photos, 24);
    }
    let (mut killed, mut completed, mut rounds) = (0, 0, 0);
    while killed < kills {
        rounds += 1;
        let work = dir.path().join(format!("round-{rounds}"));
        copy_store(&pristine, &work);
        let log = dir.path().join(format!("round-{rounds}.log"));
        let mut next = 0;
        while next < CRASH_FORGET_STEPS {
            let mut child = Command::new(env!("CARGO_BIN_EXE_forget_writer"))
                .arg(&work)
                .arg(&log)
                .arg(next.to_string())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(rng.range(5, 900)));
            let was_running = child.try_wait().unwrap().is_none();
            if was_running {
                child.kill().unwrap();
                killed += 1;
            }
            let status = child.wait().unwrap();
            assert!(
                was_running || status.success(),
                "the child failed: {status}"
            );
            let (committed, in_flight) =
                read_log(&std::fs::read_to_string(&log).unwrap_or_default());
            let shown = verify(&work, committed, in_flight);
            next = shown.map_or(0, |k| k + 1);
            if next == CRASH_FORGET_STEPS {
                completed += 1;
            }
        }
        std::fs::remove_dir_all(&work).unwrap();
    }
    println!(
        "forgetting crash test: {killed} kills in {rounds} rounds, {completed} schedules completed"
    );
}

/// Reliability R1 during forgetting (R3): the store, its photos, pages and the first three
/// steps of the schedule are recorded through `FaultFs`; at every operation of the forgetting
/// steps, each kind of power-loss image must open with `check()` clean, no orphan segment, and
/// every page at one step — the acknowledged one or the one in flight — with its vectors at
/// that step's precision. The same trace passes the fsync-ordering audit (R6).
#[test]
fn power_loss_during_forgetting_leaves_every_page_old_or_new() {
    use memdb::fault::{CrashImage, DiskModel, FaultFs, Op, audit};
    use memdb::forget::ForgetOptions;
    use std::sync::Arc;

    let Some(photos) = shared_data("photos") else {
        return;
    };
    let steps = env_u64("MEMDB_FORGET_POWER_STEPS", 3) as u32;
    let dir = tempfile::tempdir().unwrap();
    let small = smallest_photos(&photos, &dir.path().join("small"), 4);

    let root = dir.path().join("store");
    let fs = Arc::new(FaultFs::new(&root));
    let options = Options {
        io: Arc::clone(&fs) as Arc<dyn memdb::io::StorageIo>,
        ..f32_items()
    };
    {
        let store = Store::create(&root, options).unwrap();
        photos_with_vectors_and_pages(&store, &small, 4);
        fs.mark(0);
        let policy = memdb_it::crash_forget_policy();
        for step in 0..steps {
            store
                .forget(
                    &policy,
                    memdb_it::crash_forget_as_of(step),
                    ForgetOptions {
                        dry_run: false,
                        drop_originals: true,
                        pages: Default::default(),
                        progress: &mut |_, _| {},
                    },
                )
                .unwrap();
            fs.mark(u64::from(step) + 1);
        }
    }
    let trace = fs.trace();
    let violations = audit(&trace, dir.path());
    assert!(violations.is_empty(), "{violations:#?}");

    let mut disk = DiskModel::new();
    let mut acked: Option<u64> = None;
    let mut rng = 99u64;
    let mut images = 0;
    let mut shown_steps = BTreeSet::new();
    for (k, op) in trace.iter().enumerate() {
        disk.apply(op);
        if let Op::Mark(m) = op {
            acked = Some(*m);
        }
        let Some(acked) = acked else { continue };
        // Mark 0: pages composed, no step run; mark m: step m − 1 acknowledged.
        let committed = acked.checked_sub(1).map(|s| s as u32);
        let in_flight = (acked < u64::from(steps)).then_some(acked as u32);
        for kind in CrashImage::ALL {
            let image = dir.path().join(format!("image-{k}-{kind:?}"));
            std::fs::create_dir_all(&image).unwrap();
            disk.write_image(kind, &mut rng, &image).unwrap();
            let shown = std::panic::catch_unwind(|| verify(&image, committed, in_flight))
                .unwrap_or_else(|_| panic!("op {k} of {} ({op:?}), {kind:?}", trace.len()));
            shown_steps.insert(shown);
            std::fs::remove_dir_all(&image).unwrap();
            images += 1;
        }
    }
    assert!(
        shown_steps.len() as u32 >= steps,
        "images showed {shown_steps:?}"
    );
    println!(
        "power loss during forgetting: {images} crash images over {} operations, pages at steps {shown_steps:?}, 0 violations of the fsync order",
        trace.len()
    );
}

/// Reliability R3 + R4: the first forgetting step with the n-th file operation failing — for
/// n = 1, 2, … until the step completes — as ENOSPC from then on (a full disk) and as EIO
/// once. Every failure is a typed error, never a panic; on reopen the old pages and segments
/// still serve (or, where the commit reached the disk before its fsync failed, the new ones),
/// never a mix, `check()` clean and no orphan segment.
#[test]
fn a_failing_disk_mid_forget_leaves_the_old_pages_serving() {
    use memdb::fault::{FaultFs, FaultKind, Injection};
    use memdb::forget::ForgetOptions;
    use std::sync::Arc;

    let Some(photos) = shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let small = smallest_photos(&photos, &dir.path().join("small"), 4);
    let pristine = dir.path().join("pristine");
    photos_with_vectors_and_pages(&Store::create(&pristine, f32_items()).unwrap(), &small, 4);
    let policy = memdb_it::crash_forget_policy();
    let (mut runs, mut failed, mut old_serving) = (0, 0, 0);
    for (kind, forever) in [(FaultKind::NoSpace, true), (FaultKind::Eio, false)] {
        for at in 1.. {
            let work = dir.path().join(format!("run-{runs}"));
            copy_store(&pristine, &work);
            let fs = Arc::new(FaultFs::new(&work));
            fs.inject(Some(Injection { at, forever, kind }));
            let context = format!("forget step 0, operation {at} failing with {kind:?}");
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let store = Store::open(
                    &work,
                    Options {
                        io: Arc::clone(&fs) as Arc<dyn memdb::io::StorageIo>,
                        ..Options::default()
                    },
                )?;
                store.forget(
                    &policy,
                    memdb_it::crash_forget_as_of(0),
                    ForgetOptions {
                        dry_run: false,
                        drop_originals: true,
                        pages: Default::default(),
                        progress: &mut |_, _| {},
                    },
                )
            }))
            .unwrap_or_else(|_| panic!("{context}: panicked"));
            let fired = fs.failures() > 0;
            let shown = verify(&work, None, Some(0));
            runs += 1;
            std::fs::remove_dir_all(&work).unwrap();
            match outcome {
                Ok(_) => {
                    assert_eq!(
                        shown,
                        Some(0),
                        "{context}: a reported success is not on disk"
                    );
                    if !fired {
                        break;
                    }
                }
                Err(e) => {
                    assert!(fired, "{context}: failed with no fault: {e}");
                    assert!(
                        e.to_string().contains('/')
                            || matches!(
                                e,
                                memdb::Error::Store(memdb::StoreError::WriterPoisoned(_))
                            ),
                        "{context}: the error does not name its file: {e}"
                    );
                    failed += 1;
                    if shown.is_none() {
                        old_serving += 1;
                    }
                }
            }
        }
    }
    println!(
        "failing disk mid-forget: {runs} runs, {failed} typed errors, {old_serving} of them left the old pages serving, the rest the new; 0 panics"
    );
}
