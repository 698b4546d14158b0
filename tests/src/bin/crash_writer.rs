//! The writer child of the kill -9 test: ingests, deletes, undeletes and compacts in a loop
//! until killed.
//!
//! Usage: `crash_writer STORE LOG FIRST_BATCH SEED`. Before each commit it appends an intent
//! line `I <batch> <deleted external ids…> <+restored external ids…>` to LOG, and after the
//! commit returns a line `C <batch>`, each fsync'd, so the parent knows exactly which batches
//! were acknowledged and which one may have been in flight. A restore (an undelete, in the same
//! batch as its puts) brings back an item this process deleted in an acknowledged batch.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{
    Options, ScanFilter, Store, maintenance::CompactOptions, maintenance::KeepEverything,
    maintenance::Victims, memory::MemoryOp, memory::OpNote,
};
use memdb_it::{Rng, crash_batch_len, crash_item};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (store_dir, log_path) = (&args[1], &args[2]);
    let first_batch: u64 = args[3].parse().unwrap();
    let mut rng = Rng::new(args[4].parse().unwrap());
    let options = Options {
        segment_target_bytes: 256 << 10,
        ..Options::default()
    };
    let store = Store::open_or_create(store_dir, options).unwrap();
    let mut line = memdb_it::ack_log(log_path);
    // Items this process deleted in acknowledged batches: (id, external id).
    let mut retired: Vec<(u64, String)> = Vec::new();
    for batch in first_batch.. {
        let mut deletes = Vec::new();
        let mut deleted_ids = Vec::new();
        if rng.next_u64().is_multiple_of(3) {
            let ids = store
                .snapshot()
                .unwrap()
                .scan_ids(&ScanFilter::default())
                .unwrap();
            let snap = store.snapshot().unwrap();
            for _ in 0..rng.range(1, 6) {
                if ids.is_empty() {
                    break;
                }
                let id = ids[(rng.next_u64() % ids.len() as u64) as usize];
                if let Some(item) = snap.get(id).unwrap() {
                    let ext = item.fields.external_id.unwrap();
                    if !deletes.contains(&ext) {
                        deleted_ids.push((id, ext.clone()));
                        deletes.push(ext);
                    }
                }
            }
        }
        let mut wb = store.batch();
        for index in 0..crash_batch_len(batch) {
            let (draft, blobs) = crash_item(batch, index);
            wb.put_with_blobs(draft, blobs);
        }
        for ext in &deletes {
            wb.delete_external(ext.clone());
        }
        let mut entries = deletes.clone();
        if !retired.is_empty() && rng.next_u64().is_multiple_of(3) {
            let (id, ext) = retired.swap_remove((rng.next_u64() % retired.len() as u64) as usize);
            wb.memory(MemoryOp::Restore {
                id,
                note: OpNote::default(),
            });
            entries.push(format!("+{ext}"));
        }
        line(format!("I {batch} {}\n", entries.join(" ")));
        wb.commit().unwrap();
        line(format!("C {batch}\n"));
        retired.extend(deleted_ids);
        if rng.next_u64().is_multiple_of(5) {
            let victims = if rng.next_u64().is_multiple_of(2) {
                Victims::All
            } else {
                Victims::DeadRatio(0.1)
            };
            store
                .compact(&CompactOptions { victims }, &mut KeepEverything)
                .unwrap();
        }
    }
}
