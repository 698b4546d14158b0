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
use memdb_formats::segment::{BlobTag, ENTRY_HEADER_BYTES, EntryHeader, EntryKind, PAGE};
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
    /// Earlier versions (history rows) the old catalog listed, which the rebuilt store does
    /// not carry (their records stay in the damaged copy); the op log goes with them.
    pub versions_not_carried: u64,
    /// Deleted items the old catalog kept for an undelete, which the rebuilt store does not
    /// carry.
    pub deleted_items_not_carried: u64,
    /// Items whose records were all lost but whose files survived: kept as stand-ins tagged
    /// `recovered` (a photo's fields read again from its original), as `repair` keeps them.
    pub stand_ins: Vec<u64>,
    /// Segment files nothing could be read from (an encrypted segment of format 1 whose key
    /// was only in the lost catalog).
    pub segments_unreadable: Vec<u64>,
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
    /// (segment, payload offset) → payload bytes (verified) and what the entry's header says
    /// the blob is (segment format 2).
    blobs: HashMap<(u64, u64), (Vec<u8>, Option<BlobTag>)>,
    /// Blob id → where its newest sound copy is (segment format 2: the entry names its blob).
    by_id: HashMap<u64, (u64, u64)>,
    /// Segment files that could not be read at all (an encrypted segment whose key is lost).
    unreadable: Vec<u64>,
}

/// What can be read from the bytes of one segment file without its catalog.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SalvagedSegment {
    /// Every item record whose frame verifies, with the file offset of its frame, in file
    /// order (several versions of an item may appear).
    pub records: Vec<(u64, ItemRecord)>,
    /// Every blob entry whose payload verifies: (payload offset, payload length, what the
    /// entry's header says the blob is — its id, kind and owner; `None` in a segment entry
    /// of format 1).
    pub blobs: Vec<(u64, u64, Option<BlobTag>)>,
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
                out.blobs.push((start, header.payload_len, header.blob));
            }
            _ => {}
        }
        at = at
            .saturating_add(header.pages().saturating_mul(page))
            .max(at + page);
    }
    out
}

/// Reads every segment file of the store: as it is, or in an encrypted store page by page
/// through `sealed` under the key its salt derives — the salt on the segment's header page
/// (segment format 2), else the one the old catalog's `segment_keys` still gives. A page that
/// fails its tag reads as zeros (what it held is lost, nothing else); a segment with no usable
/// salt cannot be read at all and is listed in `unreadable`.
fn scan_segments(
    paths: &StorePaths,
    sealed: Option<&super::sealed::SealedIo>,
    catalog_salts: &BTreeMap<u64, Vec<u8>>,
) -> Result<SegmentScan> {
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
        let bytes = match sealed {
            None => std::fs::read(&path).map_err(Error::io("read", &path))?,
            Some(sealed) => {
                match open_sealed_segment(sealed, &path, segment, catalog_salts.get(&segment))? {
                    Some(bytes) => bytes,
                    None => {
                        scan.unreadable.push(segment);
                        continue;
                    }
                }
            }
        };
        let salvaged = salvage_segment(segment, &bytes);
        for (offset, record) in salvaged.records {
            scan.records.push(Found {
                record,
                segment,
                offset,
            });
        }
        for (offset, len, tag) in salvaged.blobs {
            let payload = bytes[offset as usize..(offset + len) as usize].to_vec();
            if let Some(tag) = tag {
                // Files are walked in id order: a later segment's copy (a compaction's) wins.
                scan.by_id.insert(tag.id, (segment, offset));
            }
            scan.blobs.insert((segment, offset), (payload, tag));
        }
    }
    Ok(scan)
}

/// The pages of an encrypted segment, opened (a page whose tag fails reads as zeros); `None`
/// when no salt opens it. Of the salts there may be (the header page's, the old catalog's),
/// the first that opens the segment's first data page is taken.
fn open_sealed_segment(
    sealed: &super::sealed::SealedIo,
    path: &Path,
    segment: u64,
    catalog_salt: Option<&Vec<u8>>,
) -> Result<Option<Vec<u8>>> {
    use super::io::StorageIo;
    let raw_len = std::fs::metadata(path)
        .map_err(Error::io("stat", path))?
        .len();
    let pages = raw_len / super::sealed::SLOT as u64;
    let file = std::fs::File::open(path).map_err(Error::io("open", path))?;
    let mut header_page = vec![0u8; PAGE];
    {
        use std::os::unix::fs::FileExt;
        // Page 0 is stored readable: its plaintext is the slot's first 4096 bytes.
        let _ = file.read_exact_at(&mut header_page, 0);
    }
    let mut salts: Vec<[u8; 32]> = Vec::new();
    if let Some(salt) = memdb_formats::segment::SegmentHeader::decode(&header_page)
        .ok()
        .and_then(|h| h.key_salt)
    {
        salts.push(salt);
    }
    if let Some(salt) = catalog_salt.and_then(|s| <[u8; 32]>::try_from(s.as_slice()).ok())
        && !salts.contains(&salt)
    {
        salts.push(salt);
    }
    for salt in salts {
        if sealed.register_segment(path, segment, &salt).is_err() {
            continue;
        }
        let mut out = vec![0u8; (pages as usize).saturating_mul(PAGE)];
        let mut opened = 0u64;
        for (page, buf) in (0u64..).zip(out.chunks_exact_mut(PAGE)) {
            match sealed.read_at(path, &file, buf, page * PAGE as u64) {
                Ok(()) => opened += 1,
                Err(_) => buf.fill(0),
            }
        }
        // Every page's tag is under the segment's key, which its salt derives: a salt that
        // opens no page is the wrong one (or the damage took every page).
        if opened > 0 {
            return Ok(Some(out));
        }
    }
    sealed.forget(path);
    Ok(None)
}

/// Blob `blob`'s kind and verified bytes: where the old catalog's row says it is, when a sound
/// entry is there that is not another blob's; else where the segments' own tags say (segment
/// format 2).
fn find_blob<'s>(
    scan: &'s SegmentScan,
    blob: u64,
    loc: Option<&BlobLoc>,
) -> Option<(BlobKind, &'s [u8])> {
    if let Some(l) = loc
        && let Some((bytes, tag)) = scan.blobs.get(&(l.segment, l.offset))
        && tag.is_none_or(|t| t.id == blob)
        && bytes.len() as u64 == l.len
    {
        return Some((l.kind, bytes));
    }
    let place = scan.by_id.get(&blob)?;
    let (bytes, tag) = scan.blobs.get(place)?;
    let kind = BlobKind::from_code(tag.as_ref()?.kind)?;
    Some((kind, bytes))
}

/// The old catalog, opened however it still opens (a panic of the catalog library on its
/// damaged bytes counts as not opening).
fn open_old_catalog(
    paths: &StorePaths,
    io: &Arc<dyn super::io::StorageIo>,
) -> std::result::Result<OldCatalog, String> {
    crate::error::catch_catalog_panic("open the damaged catalog", || {
        Ok(open_old_catalog_inner(paths, io))
    })
    .map_err(|e| e.to_string())?
}

fn open_old_catalog_inner(
    paths: &StorePaths,
    io: &Arc<dyn super::io::StorageIo>,
) -> std::result::Result<OldCatalog, String> {
    if !paths.catalog.is_file() {
        return Err("the catalog file is missing".to_owned());
    }
    let io = Arc::clone(io);
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

/// A blob a restored item had, recorded in its `dropped_blobs`: (id, kind, bytes, when, why).
pub(crate) type DroppedRecord = (u64, BlobKind, u64, i64, String);

/// Why a rebuild records a blob it could not find.
const REBUILD_LOST: &str = "repair: its bytes were not found, or did not verify, when the store was rebuilt from its segments";

/// The file that marks a rebuilt store not yet swapped in (a leftover with it is removed; one
/// without it is an old store a killed swap left behind, and is kept).
const UNFINISHED_MARK: &str = "REBUILD-UNFINISHED";

/// Items written per commit of the rebuilt store, and blob bytes.
const RESTORE_ITEMS: usize = 500;
const RESTORE_BYTES: usize = 64 << 20;

impl Store {
    /// Rebuilds the store at `path` from its segment files when its catalog cannot be read
    /// (see the module header); `why` says what failed. The old directory is kept beside it as
    /// `<name>.damaged-<unix seconds>`. `progress` gets (items written, items to write).
    pub fn rebuild_with(
        path: impl AsRef<Path>,
        options: Options,
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
        // An encrypted store is read through its key (a missing or wrong secret fails here,
        // before anything is written); the rebuilt store is sealed under the same secret.
        let encrypted = super::keys::is_encrypted(&paths);
        let (options, sealed) = super::keys::seal_if_encrypted(&paths, options)?;
        let lock = StoreLock::acquire(root)?;
        let mut report = RebuildReport {
            catalog_error: why.to_owned(),
            deletions_known: true,
            ..RebuildReport::default()
        };
        let old = open_old_catalog(&paths, &options.io).ok();
        let txn = crate::error::catch_catalog_panic("read the damaged catalog", || {
            Ok(old.as_ref().and_then(OldCatalog::begin_read))
        })
        .ok()
        .flatten();
        let items = salvage_table(txn.as_ref(), catalog::ITEMS, |k, v| {
            (k.value(), ItemLoc::decode(v.value()))
        });
        let mut blobs = salvage_table(txn.as_ref(), catalog::BLOBS, |k, v| (k.value(), v.value()));
        // Where earlier versions are: a record found there is not its item's current one.
        let history = salvage_table(txn.as_ref(), catalog::HISTORY, |k, v| {
            let (segment, offset, ..) = v.value();
            ((segment, offset), k.value().0)
        });
        let salts = if encrypted {
            salvage_table(txn.as_ref(), catalog::SEGMENT_KEYS, |k, v| {
                (k.value(), v.value().to_vec())
            })
            .rows
        } else {
            BTreeMap::new()
        };
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
        // The ops by memory (format 8): the same ops as the log, kept by item — a second
        // reading of what happened to each, for when a page of the log is lost.
        let by_memory = salvage_table(txn.as_ref(), catalog::MEMORY_OPS, |k, v| {
            (k.value(), v.value().0)
        });
        // The last op of each item: deleted ones must not come back from their old bytes.
        // A NONE (op 4) changes nothing, so it does not count as the last word.
        let mut last: HashMap<u64, (u64, u8)> = HashMap::new();
        let ops = oplog
            .rows
            .iter()
            .map(|(seq, (op, item, _))| (*seq, *op, *item))
            .chain(
                by_memory
                    .rows
                    .iter()
                    .map(|((item, seq), op)| (*seq, *op, *item)),
            );
        for (seq, op, item) in ops {
            if op != OpCode::Keep as u8 && last.get(&item).is_none_or(|(s, _)| seq >= *s) {
                last.insert(item, (seq, op));
            }
        }
        let last_op: HashMap<u64, u8> = last.into_iter().map(|(k, (_, op))| (k, op)).collect();
        // (`memory_ops` only adds ops: a purge removes an item's rows there, its own included,
        // so only the log read whole knows every item's last op.)
        let gone = [OpCode::Delete as u8, OpCode::Purge as u8];

        let scan = scan_segments(&paths, sealed.as_deref(), &salts)?;
        report.segments_unreadable = scan.unreadable.clone();
        let at: HashMap<(u64, u64), usize> = scan
            .records
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.segment, f.offset), i))
            .collect();
        let mut keep: BTreeMap<u64, usize> = BTreeMap::new();
        // Items the catalog lists whose row does not point at their record (a damaged row):
        // taken from the segments as their newest version that is not an earlier one.
        let mut misplaced: Vec<u64> = Vec::new();
        for (id, loc) in &items.rows {
            match at.get(&(loc.segment, loc.offset)) {
                Some(&i) if scan.records[i].record.id == *id => {
                    keep.insert(*id, i);
                }
                _ => misplaced.push(*id),
            }
        }
        // The newest version in the segments of every item, leaving out the versions the
        // history lists and the locations the `items` rows point at for other items.
        let mut newest: BTreeMap<u64, usize> = BTreeMap::new();
        for (i, found) in scan.records.iter().enumerate() {
            let id = found.record.id;
            if history.rows.contains_key(&(found.segment, found.offset)) {
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
        for id in misplaced {
            match newest.get(&id) {
                Some(&i) => {
                    keep.insert(id, i);
                    report.from_segments_only += 1;
                }
                None => report.items_lost.push(id),
            }
        }
        // Items the catalog does not list: when its list is partial, every other item in the
        // segments unless the op log says it was deleted; when its list reads whole, those the
        // op log (read whole) says are current — a row that damage took or renamed.
        report.deletions_known = oplog.complete;
        // Whether an item the `items` table does not list is current (the same rule for its
        // records and, below, its surviving files).
        let listed_current = |id: u64| match last_op.get(&id) {
            Some(op) if gone.contains(op) => false,
            Some(_) => oplog.complete || !items.complete,
            None => !items.complete,
        };
        for (id, i) in newest {
            if keep.contains_key(&id) || items.rows.contains_key(&id) {
                continue;
            }
            if listed_current(id) {
                keep.insert(id, i);
                report.from_segments_only += 1;
            }
        }

        // A damaged page of the blobs table stops its scan, not lookups down other paths.
        let blobs_table = crate::error::catch_catalog_panic("read the damaged catalog", || {
            Ok(txn.as_ref().and_then(|t| t.open_table(catalog::BLOBS).ok()))
        })
        .ok()
        .flatten();
        if !blobs.complete
            && let Some(table) = blobs_table
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

        // Items whose every record is lost but whose files survive (segment format 2 names
        // each blob's owner): kept as stand-ins, as a repair in place keeps them.
        let external = salvage_table(txn.as_ref(), catalog::EXTERNAL_IDS, |k, v| {
            (v.value(), k.value().to_owned())
        });
        let mut by_owner: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (&blob, place) in &scan.by_id {
            if let Some((_, Some(tag))) = scan.blobs.get(place)
                && tag.owner != 0
                && !keep.contains_key(&tag.owner)
                && matches!(
                    BlobKind::from_code(tag.kind),
                    Some(BlobKind::Original | BlobKind::Attachment | BlobKind::Other)
                )
            {
                by_owner.entry(tag.owner).or_default().push(blob);
            }
        }
        let mut records: BTreeMap<u64, ItemRecord> = keep
            .into_iter()
            .map(|(id, i)| (id, scan.records[i].record.clone()))
            .collect();
        for (owner, owned) in by_owner {
            let deleted = last_op.get(&owner).is_some_and(|op| gone.contains(op));
            if deleted || !(items.rows.contains_key(&owner) || listed_current(owner)) {
                continue;
            }
            let loc = items.rows.get(&owner);
            let lost = super::compact::LostItem {
                id: owner,
                time_ms: loc.map_or(memdb_formats::item::UNDATED_MS, |l| l.time_ms),
                source: loc.map_or(memdb_formats::item::Source::Note.code(), |l| l.source),
                external_id: external.rows.get(&owner).cloned(),
                blobs: owned.clone(),
            };
            let original = owned.iter().find_map(|blob| {
                let (bytes, tag) = scan.blobs.get(scan.by_id.get(blob)?)?;
                (tag.as_ref()?.kind == BlobKind::Original as u8).then_some(bytes.as_slice())
            });
            records.insert(
                owner,
                super::repair::stand_in_for(&lost, original, &clients),
            );
            report.items_lost.retain(|id| *id != owner);
            report.stand_ins.push(owner);
        }

        // What the old catalog says of the items kept that the rebuilt store carries over:
        // the files forgetting or a repair dropped (so an item still says they existed and a
        // re-import does not bring back what forgetting took), and the store's settings.
        let dropped = salvage_table(txn.as_ref(), catalog::DROPPED_BLOBS, |k, v| {
            let (kind, len, at, why) = v.value();
            (k.value(), (kind, len, at, why.to_owned()))
        });
        let settings = salvage_table(txn.as_ref(), catalog::SETTINGS, |k, v| {
            (k.value().to_owned(), v.value().to_owned())
        });
        // What it cannot carry: earlier versions and the op log (their records stay in the
        // damaged copy), and deleted items kept for an undelete.
        report.versions_not_carried = history.rows.len() as u64;
        let retired: std::collections::BTreeSet<u64> = history
            .rows
            .values()
            .filter(|id| !records.contains_key(id))
            .copied()
            .collect();
        report.deleted_items_not_carried = retired.len() as u64;

        // The new store, beside the old one until it takes its place.
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "store".to_owned());
        let parent = match root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Rebuilds of this store killed before their swap left their half-written directory
        // (marked unfinished): the LOCK held here proves none of them still runs. One killed
        // between the exchange and the rename left the old store under that name, unmarked:
        // it is kept, as a damaged copy.
        let unfinished = format!(".{name}.rebuild-");
        if let Ok(listing) = std::fs::read_dir(&parent) {
            for entry in listing.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&unfinished) {
                    let path = entry.path();
                    if path.join(UNFINISHED_MARK).exists() {
                        std::fs::remove_dir_all(&path).map_err(Error::io("remove", &path))?;
                    } else {
                        let keep = parent.join(format!(
                            "{name}.damaged-{}-recovered",
                            super::now_ms() / 1000
                        ));
                        std::fs::rename(&path, &keep).map_err(Error::io("rename", &path))?;
                    }
                }
            }
        }
        let fresh = parent.join(format!("{unfinished}{}", std::process::id()));
        let fresh_options = Options {
            secret: options.secret.clone(),
            kdf_cost: options.kdf_cost,
            ..Options::default()
        };
        let store = Store::create_with(&fresh, fresh_options, clients)?;
        let mark = fresh.join(UNFINISHED_MARK);
        std::fs::write(&mark, b"").map_err(Error::io("write", &mark))?;
        let total = records.len() as u64;
        let mut batch = store.batch();
        let (mut pending, mut pending_bytes) = (0usize, 0usize);
        for (done, record) in records.into_values().enumerate() {
            let record = &record;
            let mut owned = Vec::new();
            let mut lost = Vec::new();
            for &blob in &record.blobs {
                let loc = blobs
                    .rows
                    .get(&blob)
                    .and_then(|raw| BlobLoc::decode(blob, *raw).ok());
                match find_blob(&scan, blob, loc.as_ref()) {
                    Some((kind, bytes)) if kind != BlobKind::Vectors => {
                        pending_bytes += bytes.len();
                        owned.push((blob, kind, bytes.to_vec()));
                    }
                    _ => {
                        report.blobs_lost.push(blob);
                        let (kind, len) = loc.map_or((BlobKind::Other, 0), |l| (l.kind, l.len));
                        lost.push((blob, kind, len));
                    }
                }
            }
            let mut record = record.clone();
            record.blobs = owned.iter().map(|b| b.0).collect();
            report.items += 1;
            report.blobs += owned.len() as u64;
            let now = super::now_ms();
            let mut lost: Vec<DroppedRecord> = lost
                .into_iter()
                .map(|(blob, kind, len)| (blob, kind, len, now, REBUILD_LOST.to_owned()))
                .collect();
            for ((_, blob), (kind, len, at, why)) in
                dropped.rows.range((record.id, 0)..=(record.id, u64::MAX))
            {
                if !lost.iter().any(|l| l.0 == *blob) {
                    let kind = BlobKind::from_code(*kind).unwrap_or(BlobKind::Other);
                    lost.push((*blob, kind, *len, *at, why.clone()));
                }
            }
            batch.restore_with_lost(record, owned, lost);
            pending += 1;
            if pending >= RESTORE_ITEMS || pending_bytes >= RESTORE_BYTES {
                std::mem::replace(&mut batch, store.batch()).commit()?;
                (pending, pending_bytes) = (0, 0);
            }
            progress(done as u64 + 1, total);
        }
        for (key, value) in settings.rows {
            batch.set_setting(key, value);
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
        // The rebuilt store is the store now: it no longer says it is unfinished.
        let mark = root.join(UNFINISHED_MARK);
        std::fs::remove_file(&mark).map_err(Error::io("remove", &mark))?;
        dir::sync_dir(&super::io::OsIo, root)?;
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

/// The plaintext of segment `id` of the store at `path`: the file as it is, or an encrypted
/// store's pages opened under the key its header page's salt derives (a page that fails its
/// tag reads as zeros). What a reliability test maps a changed byte of a file back to.
#[cfg(any(test, feature = "fault-injection"))]
pub fn segment_plaintext(path: &Path, options: Options, id: u64) -> Result<Vec<u8>> {
    let paths = StorePaths::new(path);
    let file = paths.segment(id);
    let (_, sealed) = super::keys::seal_if_encrypted(&paths, options)?;
    match sealed {
        None => std::fs::read(&file).map_err(Error::io("read", &file)),
        Some(sealed) => open_sealed_segment(&sealed, &file, id, None)?.ok_or_else(|| {
            Error::SegmentUnavailable {
                segment: id,
                reason: "no salt opens it".into(),
            }
        }),
    }
}
