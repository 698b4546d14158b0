//! memdb-store: the storage substrate of memdb — a directory holding a redb catalog and segment
//! files of checksummed pages, opened by one writer.
//!
//! It knows what it stores (items, versions, blobs, vectors, segments, settings) and nothing of
//! what clients make of it: the engine (`memdb`) keeps its derived rows (the EM-Graph, the
//! scrapbook pages) inside this crate's commits through the extension API of [`derived`], and
//! the compiler keeps the rule that the store names no client (this crate depends on none).
//!
//! `Store` owns the open catalog, the set of mapped segments, the writer state and the LOCK.
//! Reads go through [`Snapshot`]s, writes through [`WriteBatch`]es (one batch, one commit),
//! space is reclaimed by [`Store::compact`], and [`Store::check`] verifies everything.
//!
//! Architecture invariants (DESIGN.md §3, each tested):
//! 1. a segment is referenced by the catalog only after its bytes, its length and its directory
//!    entry are fsync'd;
//! 2. the redb commit is the one linearisation point of every write, seal and compaction;
//! 3. at open, segment files no committed catalog references are deleted, and an open
//!    segment's uncommitted tail is cut off;
//! 4. a segment dropped by a commit is unlinked only after that commit, and only once no
//!    snapshot holds it;
//! 5. every byte read back from a segment is checked against a CRC32C before it is used.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod catalog;
pub(crate) mod check;
pub mod compact;
pub mod crypto;
pub mod derived;
mod dir;
mod error;
#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
pub mod io;
mod keys;
pub mod pages;
mod read;
mod rebuild;
mod repair;
mod sealed;
mod segment_file;
mod stats;
mod time;
pub mod vector_space;
mod versions;
mod write;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vector_tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use memdb_formats::segment::{BlobTag, EntryKind, FooterRecord, PAGE};
use redb::{ReadableDatabase, ReadableTable};

pub use crate::error::{CatalogResult, Error, Result};
pub use crate::time::{TimeBound, TimeError, TimeWindow};
use catalog::{SegmentRow, SegmentState};
use dir::{StoreLock, StorePaths};
use io::OpenMode;
use segment_file::{SegmentFile, SegmentSet};

pub use catalog::BlobKind;
pub use check::{CheckReport, Damage, Problem};
pub use compact::{
    BlobRewrite, CatalogShrink, CompactOptions, CompactReport, CompactionHook, FinishRows,
    ItemRewrite, KeepEverything, LostItem, Victims,
};
pub use read::{Blob, BlobInfo, DroppedBlob, ItemVersion, ScanFilter, Skipped, Snapshot};
#[cfg(feature = "fault-injection")]
pub use rebuild::segment_plaintext;
pub use rebuild::{RebuildReport, SalvagedSegment, salvage_segment};
pub use repair::{RepairPhase, RepairReport, Repaired};
pub use stats::{CatalogTableStats, SegmentStats, Stats};
pub use vector_space::{ITEM_VECTORS, StoredVectors, VectorHit, VectorScope};
pub use versions::{
    AppliedOp, DEFAULT_RETENTION_DAYS, MemoryHistory, MemoryOp, MemoryOpKind, MemoryOpRow,
    MemoryVersion, OpNote, TimeTravel, Validity, close_superseded,
};
pub use write::check_put;
pub use write::{CommitReceipt, PutOutcome, PutStatus, Tables, WriteBatch};

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct Options {
    /// An open segment is sealed and a new one started once it reaches this many bytes.
    pub segment_target_bytes: u64,
    /// Memory redb may use to cache catalog pages.
    pub catalog_cache_bytes: usize,
    /// Where every file operation goes: the OS ([`io::OsIo`]) unless a test records or fails
    /// them. An encrypted store seals its pages on their way there.
    pub io: Arc<dyn io::StorageIo>,
    /// The passphrase or key file of an encrypted store. Creating a store with one makes it
    /// encrypted; opening an encrypted store needs it; a store that is not encrypted ignores it.
    pub secret: Option<Arc<crate::crypto::Secret>>,
    /// Argon2id's costs when a passphrase wraps the data key (creating a store, `rekey`).
    pub kdf_cost: crate::crypto::KdfCost,
    /// The precision the item vector space ([`ITEM_VECTORS`]) is made with, when a store
    /// stores its first item vector. Creating a store records it (setting `item_vectors`), so
    /// the store keeps the choice whatever options it is opened with later; a store created
    /// before that setting takes it from the options it is opened with. A space keeps the
    /// precision it was made with (forgetting may coarsen old rows). i8 by default: a quarter of f32's bytes, with one scale per row,
    /// and at the 384 dimensions of the embedded encoder the scores move by about 1e-3, which
    /// leaves recall within bench `footprint`'s noise (its per-item table and R@10 say how
    /// much). F32 keeps full precision and gives a large space an HNSW graph.
    pub item_vector_precision: memdb_vectors::Precision,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_target_bytes: 64 << 20,
            catalog_cache_bytes: 64 << 20,
            io: Arc::new(io::OsIo),
            secret: None,
            kdf_cost: crate::crypto::KdfCost::default(),
            item_vector_precision: memdb_vectors::Precision::I8,
        }
    }
}

/// An open memdb store. Cheap to clone; all clones share one writer.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.paths.root)
            .finish_non_exhaustive()
    }
}

/// The catalog as this handle opened it: as the store's one writer, or read-only beside it.
enum Catalog {
    Writer(redb::Database),
    Reader(redb::ReadOnlyDatabase),
}

impl Catalog {
    fn begin_read(&self) -> Result<redb::ReadTransaction> {
        match self {
            Catalog::Writer(db) => db.begin_read(),
            Catalog::Reader(db) => db.begin_read(),
        }
        .ctx("begin read")
    }

    fn begin_write(&self, paths: &StorePaths) -> Result<redb::WriteTransaction> {
        match self {
            Catalog::Writer(db) => db.begin_write().ctx("begin write"),
            Catalog::Reader(_) => Err(Error::ReadOnly {
                path: paths.root.clone(),
            }),
        }
    }

    fn is_read_only(&self) -> bool {
        matches!(self, Catalog::Reader(_))
    }
}

// Field order is drop order: the catalog closes before the LOCK is released.
pub(crate) struct StoreInner {
    paths: StorePaths,
    db: Catalog,
    options: Options,
    segments: RwLock<Arc<SegmentSet>>,
    writer: Mutex<Writer>,
    damaged: BTreeMap<u64, String>,
    /// Segments dropped from the catalog whose files live on while snapshots map them.
    retiring: Mutex<BTreeMap<u64, std::sync::Weak<SegmentFile>>>,
    /// Approximate-search graphs loaded from their blobs, shared by every snapshot.
    graphs: Arc<vector_space::GraphCache>,
    /// Clients keeping derived rows inside this store's commits (see [`derived`]).
    clients: derived::Clients,
    /// Clients' per-store state (caches, update locks).
    extensions: derived::Extensions,
    /// An encrypted store's sealing io (also `options.io`), which new segments' keys are
    /// registered with; `None` for a store that is not encrypted.
    sealed: Option<Arc<sealed::SealedIo>>,
    /// The writer's LOCK; a read-only handle takes none.
    _lock: Option<StoreLock>,
}

/// State only the writer touches.
pub(crate) struct Writer {
    active: Option<OpenSegment>,
    poisoned: Option<String>,
}

/// A segment that accepts appends: the writer's active segment, or one being filled by
/// compaction. `len` is the write position; `committed_len` what the catalog says.
pub(crate) struct OpenSegment {
    file: Arc<SegmentFile>,
    len: u64,
    committed_len: u64,
    entries: Vec<FooterRecord>,
    committed_entries: usize,
}

impl OpenSegment {
    /// Creates segment `id` of `store`; in an encrypted store its key is registered and its
    /// salt recorded in `t`, the commit that will first record the segment.
    fn create(
        store: &StoreInner,
        t: &mut write::Tables<'_>,
        id: u64,
        now_ms: i64,
    ) -> Result<OpenSegment> {
        let (io, paths) = (&store.options.io, &store.paths);
        let mut key_salt = None;
        if let Some(sealed) = &store.sealed {
            let table = t.segment_keys.as_mut().ok_or_else(|| {
                Error::Inconsistent("an encrypted store's catalog has no segment_keys".into())
            })?;
            key_salt = Some(keys::new_segment_key(sealed, paths, table, id)?);
        }
        let file = SegmentFile::create(io, paths.segment(id), id, now_ms, key_salt)?
            .with_opened_cache(store.sealed.as_ref().map(|s| s.opened_cache()));
        dir::sync_dir(io.as_ref(), &paths.segments)?;
        Ok(OpenSegment {
            file: Arc::new(file),
            len: PAGE as u64,
            committed_len: PAGE as u64,
            entries: Vec::new(),
            committed_entries: 0,
        })
    }

    fn id(&self) -> u64 {
        self.file.id()
    }

    /// Writes one entry at the write position; returns the file offset of its payload.
    fn append(&mut self, kind: EntryKind, payload: &[u8]) -> Result<u64> {
        let header = memdb_formats::segment::EntryHeader::for_payload(kind, self.id(), payload);
        self.append_entry(header, payload)
    }

    /// Writes blob `tag`'s entry (its header names the blob, its kind and owner: SPEC.md §3.2)
    /// at the write position; returns the file offset of its payload.
    fn append_blob(&mut self, tag: BlobTag, payload: &[u8]) -> Result<u64> {
        let header = memdb_formats::segment::EntryHeader::for_blob(self.id(), tag, payload);
        self.append_entry(header, payload)
    }

    fn append_entry(
        &mut self,
        header: memdb_formats::segment::EntryHeader,
        payload: &[u8],
    ) -> Result<u64> {
        let kind = header.kind;
        let start = self.len;
        let total = header.pages() * PAGE as u64;
        let payload_offset = start + memdb_formats::segment::ENTRY_HEADER_BYTES as u64;
        self.file.write_at(&header.encode(), start)?;
        self.file.write_at(payload, payload_offset)?;
        let pad_from = payload_offset + payload.len() as u64;
        let pad = usize::try_from(start + total - pad_from).unwrap_or(0);
        if pad > 0 {
            self.file.write_at(&vec![0u8; pad], pad_from)?;
        }
        self.len = start + total;
        self.entries.push(FooterRecord {
            page: start / PAGE as u64,
            payload_len: payload.len() as u64,
            payload_crc: header.payload_crc,
            kind,
        });
        Ok(payload_offset)
    }

    /// Appends the footer and trailer; returns the sealed length. The caller fsyncs.
    fn seal(&mut self) -> Result<u64> {
        let footer = memdb_formats::segment::encode_footer(&self.entries)
            .map_err(|e| Error::corruption(self.id(), self.len, e))?;
        let count = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        let footer_page = self.len / PAGE as u64;
        let entries_before = self.entries.clone();
        self.append(EntryKind::Footer, &footer)?;
        self.entries = entries_before;
        let trailer = memdb_formats::segment::Trailer {
            segment_id: self.id(),
            footer_page,
            total_pages: self.len / PAGE as u64 + 1,
            entry_count: count,
        };
        self.file.write_at(&trailer.encode(), self.len)?;
        self.len += PAGE as u64;
        Ok(self.len)
    }

    fn rollback(&mut self) {
        self.len = self.committed_len;
        self.entries.truncate(self.committed_entries);
    }

    fn mark_committed(&mut self) {
        self.committed_len = self.len;
        self.committed_entries = self.entries.len();
    }
}

/// The wall clock in Unix milliseconds, as the store stamps commits, versions and operations.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Store {
    /// Creates a new, empty store at `path` (the directory may exist but must be empty), with
    /// `clients` keeping their derived rows in its commits.
    pub fn create_with(
        path: impl AsRef<Path>,
        options: Options,
        clients: derived::Clients,
    ) -> Result<Store> {
        let root = path.as_ref();
        if root.exists() {
            let mut entries = std::fs::read_dir(root).map_err(Error::io("list", root))?;
            if entries.next().is_some() {
                return Err(Error::AlreadyExists {
                    path: root.to_path_buf(),
                });
            }
        }
        let paths = StorePaths::new(root);
        let io = options.io.as_ref();
        dir::create_private_dir(io, &paths.root)?;
        // The store's own directory entry must be durable too, or a power loss could take the
        // whole new store with it.
        let parent = match paths.root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        dir::sync_dir(io, &parent)?;
        let lock = StoreLock::acquire(&paths.root)?;
        dir::create_private_dir(io, &paths.segments)?;
        // An encrypted store's KEY is durable before its catalog exists: a catalog without it
        // could never be read.
        let (catalog_io, encrypted) = match options.secret.as_deref() {
            Some(secret) => {
                let key = keys::create_key_file(io, &paths, secret, options.kdf_cost)?;
                let sealed = keys::sealed_io(&paths, Arc::clone(&options.io), key)?;
                (sealed as Arc<dyn io::StorageIo>, true)
            }
            None => (Arc::clone(&options.io), false),
        };
        let backend = io::CatalogBackend::open(catalog_io, &paths.catalog, OpenMode::CreateNew)
            .map_err(Error::io("create catalog", &paths.catalog))?;
        let db = redb::Builder::new()
            .set_cache_size(options.catalog_cache_bytes)
            .set_concurrency_mode(CONCURRENCY)
            .create_with_backend(backend)
            .ctx("create catalog")?;
        let txn = db.begin_write().ctx("begin write")?;
        catalog::initialise(&txn, now_ms(), options.item_vector_precision)?;
        if encrypted {
            txn.open_table(catalog::SEGMENT_KEYS)
                .ctx("create segment_keys")?;
            txn.open_table(catalog::META)
                .ctx("open meta")?
                .insert(
                    catalog::KEY_FORMAT_VERSION,
                    catalog::ENCRYPTED_FORMAT_VERSION,
                )
                .ctx("init meta")?;
        }
        txn.commit().ctx("commit")?;
        dir::sync_dir(io, &paths.root)?;
        drop(db);
        drop(lock);
        Store::open_with(root, options, clients)
    }

    /// Opens an existing store for reading and writing, with `clients` keeping their derived
    /// rows in its commits. Recovers from a crash: cuts the uncommitted tail of open segments
    /// and deletes segment files no commit references.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: Options,
        clients: derived::Clients,
    ) -> Result<Store> {
        let paths = existing_store_paths(path.as_ref())?;
        let lock = StoreLock::acquire(&paths.root)?;
        // Tighten permissions of files made by older builds or copied in.
        {
            let p = &paths.catalog;
            std::fs::set_permissions(
                p,
                std::os::unix::fs::PermissionsExt::from_mode(io::FILE_MODE),
            )
            .map_err(Error::io("chmod", p))?;
        }
        let (options, sealed) = keys::seal_if_encrypted(&paths, options)?;
        // Our LOCK is held, so a held catalog lock can only be our own previous handle still
        // shared with a child forked by another thread (see `dir::retry_held_lock`).
        let (db, rows) = crate::error::catch_catalog_panic("open catalog", || {
            let db = dir::retry_held_lock(
                dir::CATALOG_LOCK_GRACE,
                || -> std::result::Result<redb::Database, redb::DatabaseError> {
                    let backend = io::CatalogBackend::open(
                        Arc::clone(&options.io),
                        &paths.catalog,
                        OpenMode::ReadWrite,
                    )?;
                    redb::Builder::new()
                        .set_cache_size(options.catalog_cache_bytes)
                        .set_concurrency_mode(CONCURRENCY)
                        .create_with_backend(backend)
                },
                |e| matches!(e, redb::DatabaseError::DatabaseAlreadyOpen),
            )
            .ctx("open catalog")?;
            let txn = db.begin_read().ctx("begin read")?;
            let rows = committed_segment_rows(&txn)?;
            if let Some(sealed) = &sealed {
                keys::register_segments(sealed, &paths, &txn, rows.keys().copied())?;
            }
            drop(txn);
            Ok((db, rows))
        })?;

        let mut set = SegmentSet::new();
        let mut damaged = BTreeMap::new();
        // Open segments whose file had an uncommitted tail: an encrypted store appends no more
        // to them, so no page position of a segment is ever sealed twice with different
        // bytes (an old copy of such a page would carry a valid tag: a replay).
        let mut had_tail = BTreeSet::new();
        for (&id, row) in &rows {
            match open_segment(&options.io, &paths, id, row) {
                Ok((seg, tail, header_damage)) => {
                    let seg = seg.with_opened_cache(sealed.as_ref().map(|s| s.opened_cache()));
                    if tail {
                        had_tail.insert(id);
                    }
                    if let Some(reason) = header_damage {
                        damaged.insert(id, reason);
                    }
                    set.insert(id, Arc::new(seg));
                }
                // A read that failed is not damage: fail the open rather than serve a store that
                // is missing a healthy segment until the next open.
                Err(e @ Error::Io { .. }) if !e.is_missing_bytes() => return Err(e),
                Err(e) => {
                    damaged.insert(id, e.to_string());
                }
            }
        }
        remove_orphans(options.io.as_ref(), &paths, &rows)?;

        // The newest open segment keeps taking appends; its entry list is rebuilt by walking it.
        let active = rows
            .iter()
            .rev()
            .filter(|(_, row)| row.state == SegmentState::Open)
            .filter(|(id, _)| sealed.is_none() || !had_tail.contains(id))
            .filter(|(id, _)| !damaged.contains_key(id))
            .find_map(|(id, row)| set.get(id).map(|f| (Arc::clone(f), row.len)))
            .and_then(|(file, len)| {
                // A damaged open segment takes no more appends: it stays as it is (readable
                // where it is sound) until `repair` rewrites it, and writes go to a new one.
                let (entries, damaged) = check::walk_entries(file.as_ref(), len).ok()?;
                if damaged {
                    return None;
                }
                let committed_entries = entries.len();
                Some(OpenSegment {
                    file,
                    len,
                    committed_len: len,
                    entries,
                    committed_entries,
                })
            });

        Ok(Store::assemble(
            paths,
            Catalog::Writer(db),
            options,
            (set, active, damaged),
            (Some(lock), sealed),
            clients,
        ))
    }

    /// Opens the store read-only beside its writer (see the engine's `Store::open_read_only`).
    pub fn open_read_only_with(
        path: impl AsRef<Path>,
        options: Options,
        clients: derived::Clients,
    ) -> Result<Store> {
        let paths = existing_store_paths(path.as_ref())?;
        let (options, sealed) = keys::seal_if_encrypted(&paths, options)?;
        let backend =
            io::CatalogBackend::open(Arc::clone(&options.io), &paths.catalog, OpenMode::ReadOnly)
                .map_err(Error::io("open catalog", &paths.catalog))?;
        let db = crate::error::catch_catalog_panic("open catalog read-only", || {
            let db = redb::Builder::new()
                .set_cache_size(options.catalog_cache_bytes)
                .set_concurrency_mode(CONCURRENCY)
                .open_read_only_with_backend(backend)
                .ctx("open catalog read-only")?;
            committed_segment_rows(&db.begin_read().ctx("begin read")?)?;
            Ok(db)
        })?;
        Ok(Store::assemble(
            paths,
            Catalog::Reader(db),
            options,
            (SegmentSet::new(), None, BTreeMap::new()),
            (None, sealed),
            clients,
        ))
    }

    /// The handle over an opened catalog: its segments, the writer's open segment and the
    /// segments found damaged at open.
    fn assemble(
        paths: StorePaths,
        db: Catalog,
        options: Options,
        (set, active, damaged): (SegmentSet, Option<OpenSegment>, BTreeMap<u64, String>),
        (lock, sealed): (Option<StoreLock>, Option<Arc<sealed::SealedIo>>),
        clients: derived::Clients,
    ) -> Store {
        Store {
            inner: Arc::new(StoreInner {
                paths,
                db,
                options,
                segments: RwLock::new(Arc::new(set)),
                writer: Mutex::new(Writer {
                    active,
                    poisoned: None,
                }),
                damaged,
                retiring: Mutex::new(BTreeMap::new()),
                graphs: Arc::new(vector_space::GraphCache::default()),
                clients,
                extensions: derived::Extensions::default(),
                sealed,
                _lock: lock,
            }),
        }
    }

    /// Whether the store is encrypted (its pages sealed under a key a passphrase or key file
    /// unwraps; SPEC.md §3.7).
    pub fn is_encrypted(&self) -> bool {
        self.inner.sealed.is_some()
    }

    /// Whether the store at `path` is encrypted, without opening it.
    pub fn is_encrypted_at(path: impl AsRef<Path>) -> bool {
        keys::is_encrypted(&StorePaths::new(path.as_ref()))
    }

    /// Changes what unlocks the encrypted store at `path` from `old` to `new` (Argon2id costs
    /// from `options.kdf_cost`). Only the KEY file changes, atomically: the data key is wrapped
    /// again and no page is rewritten. Takes the store's LOCK, so no writer may have it open.
    pub fn rekey(
        path: impl AsRef<Path>,
        old: &crate::crypto::Secret,
        new: &crate::crypto::Secret,
        options: &Options,
    ) -> Result<()> {
        let paths = existing_store_paths(path.as_ref())?;
        if !keys::is_encrypted(&paths) {
            return Err(Error::Key {
                path: paths.root.clone(),
                source: crate::crypto::CryptoError::Unsupported(
                    "the store is not encrypted: there is no key to change".into(),
                ),
            });
        }
        let _lock = StoreLock::acquire(&paths.root)?;
        keys::rekey(options.io.as_ref(), &paths, old, new, options.kdf_cost)
    }

    /// Whether this handle was opened with [`open_read_only`](Self::open_read_only).
    pub fn is_read_only(&self) -> bool {
        self.inner.db.is_read_only()
    }

    /// A bare store for the substrate's own tests: no client registered.
    #[cfg(test)]
    pub(crate) fn create(path: impl AsRef<Path>, options: Options) -> Result<Store> {
        Store::create_with(path, options, Vec::new())
    }

    /// Opens a bare store for the substrate's own tests: no client registered.
    #[cfg(test)]
    pub(crate) fn open(path: impl AsRef<Path>, options: Options) -> Result<Store> {
        Store::open_with(path, options, Vec::new())
    }

    /// Whether `path` holds a store's catalog.
    pub fn exists_at(path: &Path) -> bool {
        path.join(dir::CATALOG_FILE).is_file()
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.inner.paths.root
    }

    /// A consistent read-only view of the store as of the last commit.
    pub fn snapshot(&self) -> Result<Snapshot> {
        if self.is_read_only() {
            return self.reader_snapshot();
        }
        let guard = self
            .inner
            .segments
            .read()
            .map_err(|_| Error::ThreadFailed("segment set lock"))?;
        // Both are taken under the read lock: a writer retires segments under the write lock
        // after its commit, so this view's catalog never references a segment missing here.
        let segments = Arc::clone(&guard);
        let txn = self.inner.db.begin_read()?;
        drop(guard);
        Ok(Snapshot::new(txn, segments, Arc::clone(&self.inner.graphs)))
    }

    /// A read-only handle's snapshot: the writer's latest commit, with the segment files it
    /// references opened (kept open, so a segment the writer unlinks later stays readable here).
    /// A file already unlinked means a newer commit dropped it: look again.
    fn reader_snapshot(&self) -> Result<Snapshot> {
        const ATTEMPTS: usize = 16;
        // Segments found missing once: if a newer commit still lists one, it is really gone.
        let mut missing = BTreeSet::new();
        for _ in 0..ATTEMPTS {
            let txn = self.inner.db.begin_read()?;
            let rows =
                catalog::segment_rows(&txn.open_table(catalog::SEGMENTS).ctx("open segments")?)?;
            let known = self.current_segments()?;
            let mut set = SegmentSet::new();
            let mut vanished = false;
            for &id in rows.keys() {
                if let Some(file) = known.get(&id) {
                    set.insert(id, Arc::clone(file));
                    continue;
                }
                if let Some(sealed) = &self.inner.sealed {
                    keys::register_segments(sealed, &self.inner.paths, &txn, [id])?;
                }
                let path = self.inner.paths.segment(id);
                match SegmentFile::open(&self.inner.options.io, path, id, OpenMode::ReadOnly) {
                    Ok(file) => {
                        let file = file.with_opened_cache(
                            self.inner.sealed.as_ref().map(|s| s.opened_cache()),
                        );
                        set.insert(id, Arc::new(file));
                    }
                    Err(e) if e.is_not_found() && missing.insert(id) => {
                        vanished = true;
                        break;
                    }
                    // Damaged (or missing though a newer commit still lists it): left out, so
                    // reads of it fail with `SegmentUnavailable`.
                    Err(_) => {}
                }
            }
            if vanished {
                continue;
            }
            let set = Arc::new(set);
            self.edit_segment_set(|shared| shared.clone_from(&set))?;
            return Ok(Snapshot::new(txn, set, Arc::clone(&self.inner.graphs)));
        }
        Err(Error::ReaderOutpaced { attempts: ATTEMPTS })
    }

    /// A new, empty write batch.
    pub fn batch(&self) -> WriteBatch<'_> {
        WriteBatch::new(self)
    }

    /// Records `model_id` (model name and weights hash) as the encoder of this store's vectors,
    /// or checks that it is the one already recorded: a store never mixes models.
    /// Through a read-only handle it only checks: it records nothing.
    pub fn bind_model(&self, model_id: &str) -> Result<()> {
        if self.is_read_only() {
            return match self.model()? {
                Some(stored) if stored != model_id => Err(Error::ModelMismatch {
                    stored,
                    given: model_id.to_owned(),
                }),
                _ => Ok(()),
            };
        }
        let _writer = self.lock_writer()?;
        let txn = self.inner.db.begin_write(&self.inner.paths)?;
        {
            let mut settings = txn.open_table(catalog::SETTINGS).ctx("open settings")?;
            let stored = settings
                .get(catalog::KEY_ENCODER_MODEL)
                .ctx("read settings")?
                .map(|v| v.value().to_owned());
            match stored {
                Some(stored) if stored != model_id => {
                    return Err(Error::ModelMismatch {
                        stored,
                        given: model_id.to_owned(),
                    });
                }
                Some(_) => return Ok(()),
                None => {
                    settings
                        .insert(catalog::KEY_ENCODER_MODEL, model_id)
                        .ctx("write settings")?;
                }
            }
        }
        txn.commit().ctx("commit")
    }

    /// Writes one setting in its own durable commit.
    pub fn write_setting(&self, key: &str, value: &str) -> Result<()> {
        let _writer = self.lock_writer()?;
        let txn = self.inner.db.begin_write(&self.inner.paths)?;
        {
            let mut settings = txn.open_table(catalog::SETTINGS).ctx("open settings")?;
            settings.insert(key, value).ctx("write settings")?;
        }
        txn.commit().ctx("commit")
    }

    /// The encoder model recorded by [`bind_model`](Self::bind_model), if any.
    pub fn model(&self) -> Result<Option<String>> {
        self.snapshot()?.setting(catalog::KEY_ENCODER_MODEL)
    }

    /// A client's per-store state of type `T` (made on first use), shared by every clone of
    /// this handle.
    pub fn extension<T: std::any::Any + Send + Sync + Default>(&self) -> Result<Arc<T>> {
        self.inner.extensions.get::<T>()
    }

    /// The clients keeping derived rows in this store.
    pub fn clients(&self) -> &derived::Clients {
        &self.inner.clients
    }

    fn lock_writer(&self) -> Result<MutexGuard<'_, Writer>> {
        if self.is_read_only() {
            return Err(Error::ReadOnly {
                path: self.inner.paths.root.clone(),
            });
        }
        let writer = self
            .inner
            .writer
            .lock()
            .map_err(|_| Error::WriterPoisoned("a writer thread panicked".into()))?;
        if let Some(reason) = &writer.poisoned {
            return Err(Error::WriterPoisoned(reason.clone()));
        }
        Ok(writer)
    }

    fn publish_segment(&self, file: &Arc<SegmentFile>) -> Result<()> {
        self.edit_segment_set(|set| {
            set.insert(file.id(), Arc::clone(file));
        })
    }

    /// Removes segments from the shared set and marks them obsolete: each file is unlinked
    /// when the last snapshot holding it goes away.
    fn retire_segments(&self, ids: &[u64]) -> Result<()> {
        let mut retired = Vec::new();
        self.edit_segment_set(|set| {
            for id in ids {
                if let Some(file) = set.remove(id) {
                    file.mark_obsolete();
                    retired.push(file);
                }
            }
        })?;
        if let Ok(mut retiring) = self.inner.retiring.lock() {
            retiring.retain(|_, weak| weak.strong_count() > 0);
            for file in &retired {
                retiring.insert(file.id(), Arc::downgrade(file));
            }
        }
        Ok(())
    }

    /// Removes segments written for a commit that failed from the shared set, leaving their
    /// files: a failed catalog commit may still have reached the disk (its fsync failed after
    /// the write), and then it references them. The next open deletes them if no committed
    /// catalog does.
    fn abandon_segments(&self, ids: &[u64]) -> Result<()> {
        self.edit_segment_set(|set| {
            for id in ids {
                set.remove(id);
            }
        })
    }

    /// Whether segment `id` was retired but is still held by a snapshot.
    fn is_retiring(&self, id: u64) -> bool {
        self.inner
            .retiring
            .lock()
            .map(|r| r.get(&id).is_some_and(|w| w.strong_count() > 0))
            .unwrap_or(false)
    }

    fn edit_segment_set(&self, edit: impl FnOnce(&mut SegmentSet)) -> Result<()> {
        let mut guard = self
            .inner
            .segments
            .write()
            .map_err(|_| Error::ThreadFailed("segment set lock"))?;
        let mut set = SegmentSet::clone(&guard);
        edit(&mut set);
        *guard = Arc::new(set);
        Ok(())
    }

    fn current_segments(&self) -> Result<Arc<SegmentSet>> {
        self.inner
            .segments
            .read()
            .map(|g| Arc::clone(&g))
            .map_err(|_| Error::ThreadFailed("segment set lock"))
    }
}

/// redb's multi-process regime: one writer process (the LOCK already ensures it), any number of
/// read-only processes following its commits.
const CONCURRENCY: redb::ConcurrencyMode = redb::ConcurrencyMode::SingleWriter;

/// The paths of the store at `root`, if it has a catalog. An empty catalog file is a store
/// whose creation never finished; redb would initialise it as a new database, so it is refused
/// here, before redb sees it.
fn existing_store_paths(root: &Path) -> Result<StorePaths> {
    let paths = StorePaths::new(root);
    if !paths.catalog.is_file() {
        return Err(Error::NoStore {
            path: root.to_path_buf(),
        });
    }
    let len = std::fs::metadata(&paths.catalog)
        .map_err(Error::io("stat", &paths.catalog))?
        .len();
    if len == 0 {
        return Err(Error::io("open catalog", &paths.catalog)(
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the catalog is empty: the store's creation never finished",
            ),
        ));
    }
    Ok(paths)
}

/// The committed segment rows, after checking the store's format version.
fn committed_segment_rows(txn: &redb::ReadTransaction) -> Result<BTreeMap<u64, SegmentRow>> {
    let meta = txn.open_table(catalog::META).ctx("open meta")?;
    let version = catalog::meta_get(&meta, catalog::KEY_FORMAT_VERSION)?;
    // An encrypted store's catalog (version 9, 11, 13, 15 or 17) is only readable through its key, so
    // reaching this line with it means the key opened it.
    if !(catalog::OLDEST_FORMAT_VERSION..=catalog::STORE_FORMAT_VERSION).contains(&version)
        && version != catalog::ENCRYPTED_FORMAT_VERSION
    {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: catalog::STORE_FORMAT_VERSION,
        });
    }
    catalog::segment_rows(&txn.open_table(catalog::SEGMENTS).ctx("open segments")?)
}

/// Opens segment `id` as `row` describes it, cutting an open segment's uncommitted tail;
/// says whether there was one.
fn open_segment(
    io: &Arc<dyn io::StorageIo>,
    paths: &StorePaths,
    id: u64,
    row: &SegmentRow,
) -> Result<(SegmentFile, bool, Option<String>)> {
    let file = SegmentFile::open_unchecked(io, paths.segment(id), id, OpenMode::ReadWrite)?;
    // A damaged header page costs no entry (each has its own checks): the segment stays
    // readable, reported damaged, until a repair copies its entries into a sound one.
    let header_damage = match file.verify_header() {
        Ok(()) => None,
        Err(e @ Error::Corruption { .. }) => Some(e.to_string()),
        Err(e) => return Err(e),
    };
    let file_len = file.file_len()?;
    if file_len < row.len {
        return Err(Error::SegmentUnavailable {
            segment: id,
            reason: format!(
                "file is {file_len} bytes, the catalog committed {}",
                row.len
            ),
        });
    }
    if file_len > row.len {
        if row.state == SegmentState::Sealed {
            return Err(Error::SegmentUnavailable {
                segment: id,
                reason: format!("sealed at {} bytes but the file is {file_len}", row.len),
            });
        }
        // Bytes past the committed length belong to a batch whose commit never happened.
        file.truncate(row.len)?;
    }
    Ok((file, file_len > row.len, header_damage))
}

/// Deletes segment files (and temporary files) that no committed catalog row references.
fn remove_orphans(
    io: &dyn io::StorageIo,
    paths: &StorePaths,
    rows: &BTreeMap<u64, SegmentRow>,
) -> Result<()> {
    let listing = std::fs::read_dir(&paths.segments).map_err(Error::io("list", &paths.segments))?;
    let mut removed = false;
    for entry in listing {
        let entry = entry.map_err(Error::io("list", &paths.segments))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let orphan = match dir::parse_segment_file_name(name) {
            Some(id) => !rows.contains_key(&id),
            None => name.ends_with(".tmp"),
        };
        if orphan {
            io.remove_file(&entry.path())
                .map_err(Error::io("remove orphan", entry.path()))?;
            removed = true;
        }
    }
    if removed {
        dir::sync_dir(io, &paths.segments)?;
    }
    Ok(())
}
