//! Reliability R4: I/O error injection.
//!
//! Countdown: each step — open, a batch commit that rolls and seals segments, a compaction of
//! every segment, a vector compaction, a catalog shrink — runs on a copy of the same store with
//! the n-th file operation failing, for n = 1, 2, … until the step completes without reaching
//! it; each n once as EIO (fail once), as ENOSPC from then on (a dead disk) and as a short
//! write. Every outcome must be a typed error naming its operation and file — never a panic;
//! a handle that saw a failure must not report a later commit as durable unless it is; and
//! after the fault, the store must reopen (on a healthy disk), pass `check()`, and hold
//! exactly the state before the step or after it — after it whenever the step reported
//! success.
//!
//! Soak: a random workload with file operations failing at random rates (writes 1/128 and
//! 1/1000, reads 1/32, RocksDB's figures) while it runs, reopening and checking after each
//! error.
//! `MEMDB_IO_SOAK_STEPS` sets its length (the extended run raises it).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use memdb::fault::{FaultFs, FaultKind, Injection, RandomFaults};
use memdb::{
    Error, Options, ScanFilter, Store, maintenance::CompactOptions, maintenance::KeepEverything,
    maintenance::Victims, vectors::ITEM_VECTORS,
};
use memdb_it::{Rng, crash_item, env_u64, files_under};

/// Live items: external id → (batch, index) of `crash_item`.
type State = BTreeMap<String, (u64, u64)>;

/// Options whose file operations go through `fs` (an encrypted store's sealed pages are what
/// `fs` sees and fails).
fn options(fs: &Arc<FaultFs>, encrypted: bool) -> Options {
    Options {
        segment_target_bytes: 48 << 10,
        catalog_cache_bytes: 1 << 20,
        io: Arc::clone(fs) as Arc<dyn memdb::io::StorageIo>,
        ..memdb_it::store_options(encrypted)
    }
}

/// Commits batch `batch`: a few items with blobs and their vectors, and deletes `delete`.
fn commit_batch(store: &Store, batch: u64, delete: Option<&str>) -> memdb::Result<Vec<String>> {
    let mut wb = store.batch();
    let mut added = Vec::new();
    for index in 0..3 {
        let (draft, blobs) = crash_item(batch, index);
        added.push(draft.fields.external_id.clone().unwrap());
        wb.put_with_blobs(draft, blobs);
    }
    if let Some(ext) = delete {
        wb.delete_external(ext.to_owned());
    }
    let receipt = wb.commit()?;
    let mut wb = store.batch();
    for put in &receipt.puts {
        let v: Vec<f32> = (0..8)
            .map(|i| ((put.id * 7 + i) % 11) as f32 - 5.0)
            .collect();
        wb.put_vector(ITEM_VECTORS, put.id, 0, 0, v);
    }
    wb.commit()?;
    Ok(added)
}

fn apply_batch(state: &mut State, batch: u64, delete: Option<&str>) {
    for index in 0..3 {
        state.insert(
            crash_item(batch, index).0.fields.external_id.unwrap(),
            (batch, index),
        );
    }
    if let Some(ext) = delete {
        state.remove(ext);
    }
}

/// What the store holds, checked item by item against `crash_item`: `None` if any item or
/// blob differs from what its batch wrote.
fn read_state(store: &Store) -> Option<State> {
    let snap = store.snapshot().unwrap();
    let mut state = State::new();
    for item in snap.scan(&ScanFilter::default()).unwrap() {
        let ext = item.fields.external_id.clone().unwrap();
        let (batch, index) = ext[1..]
            .split_once("-i")
            .map(|(b, i)| (b.parse().unwrap(), i.parse().unwrap()))
            .unwrap();
        let (draft, blobs) = crash_item(batch, index);
        if item.fields != draft.fields || item.blobs.len() != blobs.len() {
            return None;
        }
        for (id, (_, bytes)) in item.blobs.iter().zip(&blobs) {
            if snap.blob(*id).unwrap().map(|b| b.to_vec()).as_ref() != Some(bytes) {
                return None;
            }
        }
        state.insert(ext, (batch, index));
    }
    Some(state)
}

/// Reopens on a healthy disk, checks, and returns what the store holds.
fn reopen_and_check(dir: &Path, encrypted: bool, context: &str) -> State {
    let store = Store::open(dir, memdb_it::store_options(encrypted))
        .unwrap_or_else(|e| panic!("{context}: the store does not reopen: {e}"));
    let report = store.check().unwrap();
    assert!(
        report.is_clean(),
        "{context}: check finds {:?}",
        report.problems
    );
    read_state(&store).unwrap_or_else(|| panic!("{context}: an item changed"))
}

/// An error must say what failed and where.
fn assert_typed(e: &Error, context: &str) {
    let text = e.to_string();
    let names_a_file =
        text.contains('/') || matches!(e.store(), Some(memdb::StoreError::WriterPoisoned(_)));
    assert!(
        names_a_file,
        "{context}: the error does not name its file: {text} ({e:?})"
    );
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Open,
    Commit,
    CompactAll,
    CompactVectors,
    ShrinkCatalog,
}

/// Runs `step` on an open store; returns the state it should leave.
fn run_step(step: Step, store: &mut Store, before: &State) -> memdb::Result<State> {
    let mut after = before.clone();
    match step {
        Step::Open => {}
        Step::Commit => {
            let delete = before.keys().next().cloned();
            commit_batch(store, 900, delete.as_deref())?;
            apply_batch(&mut after, 900, delete.as_deref());
        }
        Step::CompactAll => {
            store.compact(
                &CompactOptions {
                    victims: Victims::All,
                },
                &mut KeepEverything,
            )?;
        }
        Step::CompactVectors => {
            store.compact_vectors(true)?;
        }
        Step::ShrinkCatalog => {
            store.shrink_catalog()?;
        }
    }
    Ok(after)
}

fn copy_dir(from: &Path, to: &Path) {
    for file in files_under(from) {
        let target = to.join(file.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&file, &target).unwrap();
    }
    std::fs::create_dir_all(to.join("segments")).unwrap();
}

/// A store of 12 batches with deletes and a compaction behind it.
fn template(dir: &Path, encrypted: bool) -> State {
    let store = Store::create(
        dir,
        Options {
            segment_target_bytes: 48 << 10,
            ..memdb_it::store_options(encrypted)
        },
    )
    .unwrap();
    let mut state = State::new();
    for batch in 1..=12 {
        let delete = (batch % 3 == 0)
            .then(|| state.keys().nth(1).cloned())
            .flatten();
        commit_batch(&store, batch, delete.as_deref()).unwrap();
        apply_batch(&mut state, batch, delete.as_deref());
        if batch == 8 {
            memdb_it::compact_everything(&store);
        }
    }
    state
}

#[test]
fn every_failed_operation_is_reported_typed_and_loses_nothing() {
    countdown(false);
}

/// R4's countdown on an encrypted store (SPEC.md §3.7): the faults hit sealed pages, and a
/// short write leaves part of a slot, which must read as damage or as never written, never as
/// wrong data.
#[test]
fn every_failed_operation_of_an_encrypted_store_is_reported_typed_and_loses_nothing() {
    countdown(true);
}

fn countdown(encrypted: bool) {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join("template");
    let before = template(&base, encrypted);
    let mut runs = 0u64;
    let mut failed_steps = 0u64;
    for step in [
        Step::Open,
        Step::Commit,
        Step::CompactAll,
        Step::CompactVectors,
        Step::ShrinkCatalog,
    ] {
        for (kind, forever) in [
            (FaultKind::Eio, false),
            (FaultKind::NoSpace, true),
            (FaultKind::ShortWrite, false),
        ] {
            for at in 1.. {
                let context =
                    format!("{step:?}, operation {at} failing with {kind:?} (forever: {forever})");
                let dir = root.path().join(format!("run-{runs}"));
                copy_dir(&base, &dir);
                let fs = Arc::new(FaultFs::new(&dir));
                fs.inject(Some(Injection { at, forever, kind }));
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let mut store = Store::open(&dir, options(&fs, encrypted))?;
                    let after = run_step(step, &mut store, &before)?;
                    Ok::<_, Error>(after)
                }));
                let outcome = outcome.unwrap_or_else(|_| panic!("{context}: panicked"));
                let fired = fs.failures() > 0;
                fs.inject(None);
                let found = reopen_and_check(&dir, encrypted, &context);
                runs += 1;
                match outcome {
                    Ok(after) => {
                        assert_eq!(found, after, "{context}: a reported success is not on disk");
                        if !fired {
                            std::fs::remove_dir_all(&dir).unwrap();
                            break;
                        }
                    }
                    Err(e) => {
                        assert!(fired, "{context}: failed with no fault: {e}");
                        assert_typed(&e, &context);
                        failed_steps += 1;
                        let mut after = before.clone();
                        if let Step::Commit = step {
                            let delete = before.keys().next().cloned();
                            apply_batch(&mut after, 900, delete.as_deref());
                        }
                        assert!(
                            found == before || found == after,
                            "{context}: after `{e}` the store holds neither the state before \
                             nor after the step"
                        );
                    }
                }
                std::fs::remove_dir_all(&dir).unwrap();
            }
        }
    }
    eprintln!(
        "R4 countdown{}: {runs} runs, {failed_steps} ended in a typed error, 0 panics, every \
         reopen clean",
        if encrypted { " (encrypted)" } else { "" }
    );
}

/// After a failure, the same handle must never turn a later commit into a false success: it
/// either refuses (the writer is poisoned until reopen) or its commit really is durable.
#[test]
fn a_handle_that_saw_a_failed_fsync_never_reports_a_false_success() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join("template");
    let before = template(&base, false);
    let mut refused = 0;
    let mut durable = 0;
    for at in 1..200 {
        let dir = root.path().join(format!("run-{at}"));
        copy_dir(&base, &dir);
        let fs = Arc::new(FaultFs::new(&dir));
        let store = Store::open(&dir, options(&fs, false)).unwrap();
        fs.inject(Some(Injection {
            at,
            forever: false,
            kind: FaultKind::Eio,
        }));
        let first = commit_batch(&store, 900, None);
        let fired = fs.failures() > 0;
        let second = commit_batch(&store, 901, None);
        drop(store);
        let found = reopen_and_check(&dir, false, &format!("fault at {at}"));
        if let Ok(added) = &second {
            assert!(
                added.iter().all(|ext| found.contains_key(ext)),
                "fault at {at}: batch 901 was acknowledged but is not in the store"
            );
            durable += 1;
        } else {
            refused += 1;
        }
        if first.is_ok() {
            assert!(found.len() > before.len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
        if !fired {
            break;
        }
    }
    eprintln!(
        "after a failure: {refused} later commits refused, {durable} acknowledged and durable"
    );
}

#[test]
fn a_random_fault_soak_never_loses_an_acknowledged_item() {
    let steps = env_u64("MEMDB_IO_SOAK_STEPS", 500);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("store");
    drop(Store::create(&dir, Options::default()).unwrap());
    let mut state = State::new();
    let mut errors = 0u64;
    let mut reopens = 0u64;
    let mut rng = Rng::new(77);
    for (rate, (write_one_in, read_one_in)) in [(128, 32), (1000, 32)].into_iter().enumerate() {
        let fs = Arc::new(FaultFs::new(&dir));
        let faults = RandomFaults {
            write_one_in,
            read_one_in,
            seed: 1 + rate as u64,
        };
        let mut store: Option<Store> = None;
        for step in 0..steps {
            let context = format!("rate 1/{write_one_in}, step {step}");
            let batch = 10_000 * (rate as u64 + 1) + step;
            let choice = rng.range(0, 10);
            let delete = state.keys().nth(rng.range(0, 4) as usize).cloned();
            let mut after = state.clone();
            if choice >= 2 {
                apply_batch(&mut after, batch, delete.as_deref());
            }
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| -> memdb::Result<()> {
                // Opens run on a healthy disk (at 1/32 failed reads almost none would finish; the
                // countdown test fails every operation of an open instead).
                if store.is_none() {
                    fs.randomly(None);
                    store = Some(Store::open(&dir, options(&fs, false))?);
                }
                // A new seed per step: `randomly` restarts its generator.
                fs.randomly(Some(RandomFaults {
                    seed: faults.seed.wrapping_mul(1_000_003) + step,
                    ..faults
                }));
                let s = store.as_ref().unwrap();
                match choice {
                    0 => {
                        s.compact(
                            &CompactOptions {
                                victims: Victims::All,
                            },
                            &mut KeepEverything,
                        )?;
                    }
                    1 => {
                        s.compact_vectors(true)?;
                    }
                    _ => {
                        commit_batch(s, batch, delete.as_deref())?;
                    }
                }
                Ok(())
            }));
            match outcome.unwrap_or_else(|_| panic!("{context}: panicked")) {
                Ok(()) => state = after,
                Err(e) => {
                    assert_typed(&e, &context);
                    errors += 1;
                    store = None;
                    reopens += 1;
                    let found = reopen_and_check(&dir, false, &context);
                    // The step may have reached the disk before its error (its fsync failed
                    // after the write): either state is allowed, and is the state from now on.
                    assert!(
                        found == state || found == after,
                        "{context}: after `{e}` the store holds neither the state before nor \
                         after the step"
                    );
                    state = found;
                }
            }
        }
        drop(store);
        assert_eq!(reopen_and_check(&dir, false, "end of soak"), state);
    }
    eprintln!(
        "R4 soak: {} steps, {errors} typed errors, {reopens} reopens, 0 panics, 0 lost items",
        2 * steps
    );
}
