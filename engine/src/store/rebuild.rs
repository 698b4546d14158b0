//! Rebuild: a store whose catalog cannot be read, taken back from its segments.
//!
//! Segments are self-describing: every item record carries its id, ingest time, external id,
//! fields and blob ids, behind its own CRC. [`Store::rebuild`] reads whatever of the old
//! catalog still reads (the current location of each item, where blobs are, deletions in the
//! op log), walks every segment file page by page (past damaged entries), and writes each item
//! it can prove current — with its own id, ingest time and blobs — into a new store, which
//! then takes the old one's place; the old directory is kept beside it, renamed, until the
//! person deletes it.
//!
//! What is derived from items is not copied: vectors, the memory graph and pages come back
//! with `memdb embed` and `memdb pages` (pages that forgetting had re-encoded, and originals it
//! had dropped, are gone with the catalog that listed them; the report counts them).
//! Invariant: the old store is never written; until the final rename the new one is a
//! separate directory, so a crash leaves the old store as it was.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memdb_formats::item::{ItemRecord, decode_record, read_framed};
use memdb_formats::segment::{ENTRY_HEADER_BYTES, EntryHeader, EntryKind, PAGE};
use redb::{ReadableDatabase, ReadableTable};

use super::catalog::{self, BlobKind, BlobLoc, ItemLoc, OpCode};
use super::dir::{self, StoreLock, StorePaths};
use super::io::{CatalogBackend, OpenMode};
use super::{Options, Store};
use crate::error::{Error, Result};

/// What [`Store::rebuild`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Why the old catalog could not serve the store (what made a rebuild necessary).
    pub catalog_error: String,
    /// Where the old store directory was kept.
    pub damaged_copy: PathBuf,
    /// Items written into the rebuilt store.
    pub items: u64,
    /// Blobs written with them.
    pub blobs: u64,
    /// Items the old catalog listed whose record could not be read.
    pub items_lost: Vec<u64>,
    /// Blobs of salvaged items that could not be found or read.
    pub blobs_lost: Vec<u64>,
    /// Items taken from the segments alone, as their newest version, because the catalog's
    /// list of items could not be read whole; when the op log could not be read whole either,
    /// some of them may be items deleted before the damage (compaction had not yet reclaimed
    /// their bytes).
    pub from_segments_only: u64,
    /// Whether deletions could be told from the op log for those.
    pub deletions_known: bool,
    /// Pages the old catalog listed: they come back from `memdb pages`, except those that
    /// forgetting had re-encoded (stage > 0), which are lost with their catalog rows.
    pub pages_listed: u64,
    /// Of those, forgotten pages (lost).
    pub forgotten_pages_lost: u64,
}

/// Rows of one table of the old catalog, as far as they read; `complete` when every row did.
struct Salvaged<K, V> {
    rows: BTreeMap<K, V>,
    complete: bool,
}

fn salvage_table<K: redb::Key + 'static, V: redb::Value + 'static, KO: Ord, VO>(
    txn: Option<&redb::ReadTransaction>,
    def: redb::TableDefinition<K, V>,
    convert: impl FnMut(redb::AccessGuard<'_, K>, redb::AccessGuard<'_, V>) -> (KO, VO),
) -> Salvaged<KO, VO> {
    let mut rows = BTreeMap::new();
    let mut complete = false;
    // The catalog library may panic on damaged bytes: what was read before it did is kept.
    let _ = crate::error::catch_catalog_panic("read the damaged catalog", || {
        let salvaged = salvage_rows(txn, def, convert, &mut rows);
        complete = salvaged;
        Ok(())
    });
    Salvaged { rows, complete }
}

/// Reads the rows of `def` into `rows` until one fails; returns whether all read.
fn salvage_rows<K: redb::Key + 'static, V: redb::Value + 'static, KO: Ord, VO>(
    txn: Option<&redb::ReadTransaction>,
    def: redb::TableDefinition<K, V>,
    mut convert: impl FnMut(redb::AccessGuard<'_, K>, redb::AccessGuard<'_, V>) -> (KO, VO),
    rows: &mut BTreeMap<KO, VO>,
) -> bool {
    let Some(txn) = txn else {
        return false;
    };
    let Ok(table) = txn.open_table(def) else {
        return false;
    };
    let Ok(iter) = table.iter() else {
        return false;
    };
    for row in iter {
        match row {
            Ok((k, v)) => {
                let (k, v) = convert(k, v);
                rows.insert(k, v);
            }
            Err(_) => return false,
        }
    }
    true
}

/// A record found in a segment: the decoded record and where its frame is.
struct Found {
    record: ItemRecord,
    segment: u64,
    offset: u64,
}

/// Everything readable in the segment files: item records and sound blob payloads by place.
#[derive(Default)]
struct SegmentScan {
    records: Vec<Found>,
    /// (segment, payload offset) → payload bytes (verified).
    blobs: HashMap<(u64, u64), Vec<u8>>,
}

/// What can be read from the bytes of one segment file without its catalog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SalvagedSegment {
    /// Every item record whose frame verifies, with the file offset of its frame, in file
    /// order (several versions of an item may appear).
    pub records: Vec<(u64, ItemRecord)>,
    /// Every blob entry whose payload verifies: (payload offset, payload length).
    pub blobs: Vec<(u64, u64)>,
}

/// Reads what it can from the bytes of segment `segment` (a whole file, possibly damaged):
/// walks it page by page for sound entry headers of that segment, takes every item frame that
/// verifies from item blocks (damaged or not: frames carry their own CRCs) and every blob whose
/// payload verifies. Never panics; what it returns passed the record decoder's validation.
pub fn salvage_segment(segment: u64, bytes: &[u8]) -> SalvagedSegment {
    let mut out = SalvagedSegment::default();
    let page = PAGE as u64;
    let len = bytes.len() as u64;
    let mut at = page;
    while at.saturating_add(ENTRY_HEADER_BYTES as u64) <= len {
        let Ok(header) = EntryHeader::decode(&bytes[at as usize..], at) else {
            at += page;
            continue;
        };
        let start = at + ENTRY_HEADER_BYTES as u64;
        let end = start.saturating_add(header.payload_len);
        if header.segment_id != segment || end > len {
            at += page;
            continue;
        }
        let payload = &bytes[start as usize..end as usize];
        match header.kind {
            EntryKind::ItemBlock => {
                let mut off = 0usize;
                while off + 8 <= payload.len() {
                    let mut word = [0u8; 4];
                    word.copy_from_slice(&payload[off..off + 4]);
                    let frame_len = u32::from_le_bytes(word) as usize;
                    let Some(frame) = off
                        .checked_add(8 + frame_len)
                        .and_then(|frame_end| payload.get(off..frame_end))
                    else {
                        break;
                    };
                    if let Ok(record) = read_framed(frame).and_then(decode_record) {
                        out.records.push((start + off as u64, record));
                    }
                    off += 8 + frame_len;
                }
            }
            EntryKind::Blob if header.verify_payload(payload, start).is_ok() => {
                out.blobs.push((start, header.payload_len));
            }
            _ => {}
        }
        at = at
            .saturating_add(header.pages().saturating_mul(page))
            .max(at + page);
    }
    out
}

fn scan_segments(paths: &StorePaths) -> Result<SegmentScan> {
    let mut scan = SegmentScan::default();
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&paths.segments)
        .map_err(Error::io("list", &paths.segments))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            dir::parse_segment_file_name(name.to_str()?).map(|id| (id, e.path()))
        })
        .collect();
    files.sort();
    for (segment, path) in files {
        let bytes = std::fs::read(&path).map_err(Error::io("read", &path))?;
        let salvaged = salvage_segment(segment, &bytes);
        for (offset, record) in salvaged.records {
            scan.records.push(Found {
                record,
                segment,
                offset,
            });
        }
        for (offset, len) in salvaged.blobs {
            let payload = bytes[offset as usize..(offset + len) as usize].to_vec();
            scan.blobs.insert((segment, offset), payload);
        }
    }
    Ok(scan)
}

/// The old catalog, opened however it still opens (a panic of the catalog library on its
/// damaged bytes counts as not opening).
fn open_old_catalog(paths: &StorePaths) -> std::result::Result<OldCatalog, String> {
    crate::error::catch_catalog_panic("open the damaged catalog", || {
        Ok(open_old_catalog_inner(paths))
    })
    .map_err(|e| e.to_string())?
}

fn open_old_catalog_inner(paths: &StorePaths) -> std::result::Result<OldCatalog, String> {
    if !paths.catalog.is_file() {
        return Err("the catalog file is missing".to_owned());
    }
    let io: Arc<dyn super::io::StorageIo> = Arc::new(super::io::OsIo);
    let read_only = CatalogBackend::open(Arc::clone(&io), &paths.catalog, OpenMode::ReadOnly)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            redb::Builder::new()
                .open_read_only_with_backend(b)
                .map_err(|e| e.to_string())
        });
    match read_only {
        Ok(db) => Ok(OldCatalog::Reader(db)),
        Err(first) => CatalogBackend::open(io, &paths.catalog, OpenMode::ReadWrite)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                redb::Builder::new()
                    .create_with_backend(b)
                    .map_err(|e| e.to_string())
            })
            .map(OldCatalog::Writer)
            .map_err(|second| format!("{first}; {second}")),
    }
}

enum OldCatalog {
    Reader(redb::ReadOnlyDatabase),
    Writer(redb::Database),
}

impl OldCatalog {
    fn begin_read(&self) -> Option<redb::ReadTransaction> {
        match self {
            OldCatalog::Reader(db) => db.begin_read().ok(),
            OldCatalog::Writer(db) => db.begin_read().ok(),
        }
    }
}

/// Items written per commit of the rebuilt store, and blob bytes.
const RESTORE_ITEMS: usize = 500;
const RESTORE_BYTES: usize = 64 << 20;

impl Store {
    /// Rebuilds the store at `path` from its segment files when its catalog cannot be read
    /// (see the module header); `why` says what failed. The old directory is kept beside it as
    /// `<name>.damaged-<unix seconds>`. `progress` gets (items written, items to write).
    pub(crate) fn rebuild_with(
        path: impl AsRef<Path>,
        why: &str,
        progress: &mut dyn FnMut(u64, u64),
        clients: super::derived::Clients,
    ) -> Result<RebuildReport> {
        let root = path.as_ref();
        let paths = StorePaths::new(root);
        if !paths.segments.is_dir() {
            return Err(Error::NoStore {
                path: root.to_path_buf(),
            });
        }
        if super::keys::is_encrypted(&paths) {
            // Its segments' keys are in the catalog that cannot be read (crypto-shredding's
            // price): nothing could be salvaged, so the store is left exactly as it is.
            return Err(Error::Key {
                path: root.to_path_buf(),
                source: crate::crypto::CryptoError::Unsupported(
                    "an encrypted store cannot be rebuilt without its catalog, which holds its segments' keys; restore the store from a backup".into(),
                ),
            });
        }
        let lock = StoreLock::acquire(root)?;
        let mut report = RebuildReport {
            catalog_error: why.to_owned(),
            deletions_known: true,
            ..RebuildReport::default()
        };
        let old = open_old_catalog(&paths).ok();
        let txn = old.as_ref().and_then(OldCatalog::begin_read);
        let items = salvage_table(txn.as_ref(), catalog::ITEMS, |k, v| {
            (k.value(), ItemLoc::decode(v.value()))
        });
        let mut blobs = salvage_table(txn.as_ref(), catalog::BLOBS, |k, v| (k.value(), v.value()));
        // The op log: `op_batches` (format 10), or the `oplog` of an older catalog.
        let mut oplog = salvage_table(txn.as_ref(), catalog::OPLOG, |k, v| (k.value(), v.value()));
        let batches = salvage_table(txn.as_ref(), catalog::OP_BATCHES, |k, v| {
            let (at, packed) = v.value();
            (
                k.value(),
                catalog::decode_op_batch(k.value(), packed)
                    .ok()
                    .map(|ops| (at, ops)),
            )
        });
        let mut batches_complete = batches.complete;
        for decoded in batches.rows.into_values() {
            match decoded {
                Some((at, ops)) => {
                    for (seq, op, item) in ops {
                        oplog.rows.insert(seq, (op, item, at));
                    }
                }
                None => batches_complete = false,
            }
        }
        // A catalog has one of the two tables.
        oplog.complete |= batches_complete;
        let pages = salvage_table(txn.as_ref(), catalog::PAGES, |k, v| {
            (k.value().to_owned(), v.value().0)
        });
        report.pages_listed = pages.rows.len() as u64;
        report.forgotten_pages_lost =
            pages.rows.values().filter(|stage| **stage > 0).count() as u64;
        // The last op of each item: deleted ones must not come back from their old bytes.
        // A NONE (op 4) changes nothing, so it does not count as the last word.
        let mut last_op: HashMap<u64, u8> = HashMap::new();
        for (op, item, _) in oplog.rows.values() {
            if *op != OpCode::Keep as u8 {
                last_op.insert(*item, *op);
            }
        }

        let scan = scan_segments(&paths)?;
        let at: HashMap<(u64, u64), usize> = scan
            .records
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.segment, f.offset), i))
            .collect();
        let mut keep: BTreeMap<u64, usize> = BTreeMap::new();
        for (id, loc) in &items.rows {
            match at.get(&(loc.segment, loc.offset)) {
                Some(&i) if scan.records[i].record.id == *id => {
                    keep.insert(*id, i);
                }
                _ => report.items_lost.push(*id),
            }
        }
        if !items.complete {
            // The catalog's list is partial: every other item is taken from the segments, as
            // its newest version, unless the op log says it was deleted.
            report.deletions_known = oplog.complete;
            let mut newest: BTreeMap<u64, usize> = BTreeMap::new();
            for (i, found) in scan.records.iter().enumerate() {
                let id = found.record.id;
                let gone = [OpCode::Delete as u8, OpCode::Purge as u8];
                if items.rows.contains_key(&id)
                    || last_op.get(&id).is_some_and(|op| gone.contains(op))
                {
                    continue;
                }
                let better = newest.get(&id).is_none_or(|&j| {
                    let (a, b) = (&scan.records[i], &scan.records[j]);
                    (a.record.ingest_time_ms, a.segment, a.offset)
                        > (b.record.ingest_time_ms, b.segment, b.offset)
                });
                if better {
                    newest.insert(id, i);
                }
            }
            report.from_segments_only = newest.len() as u64;
            keep.extend(newest);
        }

        // A damaged page of the blobs table stops its scan, not lookups down other paths.
        if !blobs.complete
            && let Some(table) = txn.as_ref().and_then(|t| t.open_table(catalog::BLOBS).ok())
        {
            for &i in keep.values() {
                for &blob in &scan.records[i].record.blobs {
                    if blobs.rows.contains_key(&blob) {
                        continue;
                    }
                    let found =
                        crate::error::catch_catalog_panic("read the damaged catalog", || {
                            Ok(table.get(blob).ok().flatten().map(|raw| raw.value()))
                        });
                    if let Ok(Some(raw)) = found {
                        blobs.rows.insert(blob, raw);
                    }
                }
            }
        }

        // The new store, beside the old one until it takes its place.
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "store".to_owned());
        let parent = match root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Rebuilds of this store killed before their swap left their half-written directory:
        // the LOCK held here proves none of them still runs.
        let unfinished = format!(".{name}.rebuild-");
        if let Ok(listing) = std::fs::read_dir(&parent) {
            for entry in listing.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&unfinished) {
                    let path = entry.path();
                    std::fs::remove_dir_all(&path).map_err(Error::io("remove", &path))?;
                }
            }
        }
        let fresh = parent.join(format!("{unfinished}{}", std::process::id()));
        let store = Store::create_with(&fresh, Options::default(), clients)?;
        let total = keep.len() as u64;
        let mut batch = store.batch();
        let (mut pending, mut pending_bytes) = (0usize, 0usize);
        for (done, (_, i)) in keep.into_iter().enumerate() {
            let record = &scan.records[i].record;
            let mut owned = Vec::new();
            for &blob in &record.blobs {
                let loc = blobs
                    .rows
                    .get(&blob)
                    .and_then(|raw| BlobLoc::decode(blob, *raw).ok());
                let bytes =
                    loc.and_then(|l| scan.blobs.get(&(l.segment, l.offset)).map(|b| (l.kind, b)));
                match bytes {
                    Some((kind, bytes)) if kind != BlobKind::Vectors => {
                        pending_bytes += bytes.len();
                        owned.push((blob, kind, bytes.clone()));
                    }
                    _ => report.blobs_lost.push(blob),
                }
            }
            let mut record = record.clone();
            record.blobs = owned.iter().map(|b| b.0).collect();
            report.items += 1;
            report.blobs += owned.len() as u64;
            batch.restore(record, owned);
            pending += 1;
            if pending >= RESTORE_ITEMS || pending_bytes >= RESTORE_BYTES {
                std::mem::replace(&mut batch, store.batch()).commit()?;
                (pending, pending_bytes) = (0, 0);
            }
            progress(done as u64 + 1, total);
        }
        batch.commit()?;
        drop(store);
        drop(txn);
        drop(old);

        // The swap: the new store takes the store's name and the old directory keeps its bytes
        // under another. Where the file system can, one atomic exchange does it (a crash
        // leaves either the old store or the new one at the name, never none); elsewhere two
        // renames. Both in one directory, fsync'd.
        let stamp = super::now_ms() / 1000;
        let damaged = parent.join(format!("{name}.damaged-{stamp}"));
        drop(lock);
        swap_in(root, &fresh, &damaged)?;
        dir::sync_dir(&super::io::OsIo, &parent)?;
        report.damaged_copy = damaged;
        Ok(report)
    }
}

/// Puts directory `fresh` at `root` and what was at `root` at `keep`.
fn swap_in(root: &Path, fresh: &Path, keep: &Path) -> Result<()> {
    let exchanged = rustix::fs::renameat_with(
        rustix::fs::CWD,
        fresh,
        rustix::fs::CWD,
        root,
        rustix::fs::RenameFlags::EXCHANGE,
    );
    match exchanged {
        // `fresh` now names the old store.
        Ok(()) => std::fs::rename(fresh, keep).map_err(Error::io("rename", fresh)),
        Err(_) => {
            std::fs::rename(root, keep).map_err(Error::io("rename", root))?;
            std::fs::rename(fresh, root).map_err(Error::io("rename", fresh))
        }
    }
}
