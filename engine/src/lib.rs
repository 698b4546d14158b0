//! memdb: an embedded, on-device store for a person's long-term multimodal memory.
//!
//! A store is a directory holding a redb catalog and append-only segment files of
//! checksummed pages (SPEC.md). Applications open a [`Store`], write items (Schema-Guided
//! Memory records) and blobs in [`WriteBatch`]es — one batch, one durable commit — and read
//! them through consistent [`Snapshot`]s.
//!
//! ```no_run
//! use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store};
//! # fn main() -> memdb::Result<()> {
//! let store = Store::open_or_create("my.memdb", Options::default())?;
//! let mut fields = ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00").unwrap());
//! fields.body = Some("Booked the hotel in Lisbon".into());
//! let mut batch = store.batch();
//! batch.put(ItemDraft { fields, supersedes: None });
//! let receipt = batch.commit()?;
//! let item = store.snapshot()?.get(receipt.puts[0].id)?;
//! # Ok(()) }
//! ```
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]
// Without `render`, what only forgetting and the scrapbook use (page writes, node fading) is
// compiled but unused.
#![cfg_attr(not(feature = "render"), allow(dead_code, unused_imports))]

pub mod caption;
mod error;
#[cfg(feature = "render")]
pub mod forget;
pub mod gate;
pub mod graph;
mod handle;
pub mod ingest;
mod open;
pub mod ops;
pub mod place;
pub mod recall;
#[cfg(feature = "render")]
pub mod scrapbook;

// ---- The root: what an application needs to open, write, read, ingest and recall. ----------
// Every name here is documented with an example (the tidy test `facade` holds that, and the
// list of names, to its golden). Everything else is in a module named for what it is.

/// A store, open for reading and writing: [`Store::batch`](memdb_store::Store::batch) writes, [`Store::snapshot`] reads,
/// [`Store::ingest`] brings items in with their derived data, [`Store::recall`] answers.
///
/// ```
/// use memdb::{Options, Store};
/// # let dir = tempfile::tempdir()?;
/// let store = Store::open_or_create(dir.path().join("my.memdb"), Options::default())?;
/// assert_eq!(store.stats()?.items, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use handle::Store;

/// A consistent view of a store as of one commit: reads see nothing written after it.
///
/// ```
/// # use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// let before = store.snapshot()?;
/// let mut batch = store.batch();
/// batch.put(ItemDraft { fields: ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?), supersedes: None });
/// let id = batch.commit()?.puts[0].id;
/// assert!(before.get(id)?.is_none());
/// assert!(store.snapshot()?.get(id)?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use handle::Snapshot;

/// How a store is opened: durability, cache and encryption.
///
/// ```
/// let options = memdb::Options::default();
/// # let _ = options;
/// ```
pub use memdb_store::Options;

/// A set of writes that commit together, durably, or not at all.
///
/// ```
/// # use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// let mut fields = ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?);
/// fields.body = Some("Booked the hotel in Lisbon".into());
/// let mut batch = store.batch();
/// batch.put(ItemDraft { fields: fields, supersedes: None }).put_blob(BlobKind::Attachment, b"confirmation".to_vec());
/// let receipt = batch.commit()?;
/// assert_eq!(receipt.puts.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::WriteBatch;

/// What a committed batch did, one [`PutOutcome`] per put.
///
/// ```
/// # use memdb::{EventTime, ItemDraft, ItemFields, Options, PutStatus, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// let mut fields = ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?);
/// fields.external_id = Some("note-1".into());
/// let mut batch = store.batch();
/// batch.put(ItemDraft { fields: fields.clone(), supersedes: None });
/// assert_eq!(batch.commit()?.puts[0].status, PutStatus::Added);
/// let mut again = store.batch();
/// again.put(ItemDraft { fields: fields, supersedes: None });
/// assert_eq!(again.commit()?.puts[0].status, PutStatus::Unchanged);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::CommitReceipt;

/// One put of a committed batch: the item's id, what happened, its blobs' ids.
///
/// ```
/// # use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// let mut batch = store.batch();
/// let photo = ItemDraft { fields: ItemFields::new(Source::Image, EventTime::parse("2024-05-01T09:30:00+01:00")?), supersedes: None };
/// batch.put_with_blobs(photo, vec![(BlobKind::Original, vec![0xff, 0xd8, 0xff])]);
/// let put = &batch.commit()?.puts[0];
/// assert_eq!(put.blob_ids.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::PutOutcome;

/// Whether a put added an item, replaced the one with its external id, or changed nothing.
///
/// ```
/// use memdb::PutStatus;
/// assert_ne!(PutStatus::Added, PutStatus::Updated);
/// ```
pub use memdb_store::PutStatus;

/// A stored blob (a photo's original, an attachment), read from a snapshot.
///
/// ```
/// # use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// # let mut batch = store.batch();
/// # let photo = ItemDraft { fields: ItemFields::new(Source::Image, EventTime::parse("2024-05-01T09:30:00+01:00")?), supersedes: None };
/// # batch.put_with_blobs(photo, vec![(BlobKind::Original, vec![0xff, 0xd8, 0xff])]);
/// # let blob_id = batch.commit()?.puts[0].blob_ids[0];
/// let blob = store.snapshot()?.blob(blob_id)?.expect("committed");
/// assert_eq!(blob.info().kind, BlobKind::Original);
/// assert_eq!(&blob[..], &[0xff, 0xd8, 0xff]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::Blob;

/// Where a blob is and what it is, without its bytes.
///
/// ```
/// # use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// # let mut batch = store.batch();
/// # let photo = ItemDraft { fields: ItemFields::new(Source::Image, EventTime::parse("2024-05-01T09:30:00+01:00")?), supersedes: None };
/// # batch.put_with_blobs(photo, vec![(BlobKind::Original, vec![1, 2, 3])]);
/// # let blob_id = batch.commit()?.puts[0].blob_ids[0];
/// let info = store.snapshot()?.blob_info(blob_id)?.expect("committed");
/// assert_eq!(info.len, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::BlobInfo;

/// What a blob holds: a photo's original, an attachment, a scrapbook page, vectors.
///
/// ```
/// use memdb::BlobKind;
/// assert_ne!(BlobKind::Original, BlobKind::Attachment);
/// ```
pub use memdb_store::BlobKind;

/// Everything that can go wrong, the store's failures ([`StoreError`]) among them.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let err = memdb::Store::open(dir.path().join("none"), memdb::Options::default()).unwrap_err();
/// assert!(err.store().is_some());
/// assert!(!err.is_damage());
/// # Ok::<(), std::io::Error>(())
/// ```
pub use error::Error;

/// `Result` with memdb's [`Error`].
///
/// ```
/// fn count(store: &memdb::Store) -> memdb::Result<u64> {
///     Ok(store.stats()?.items)
/// }
/// # let _ = count;
/// ```
pub use error::Result;

/// The storage substrate's failures (crate `memdb-store`): the disk, the catalog, a batch.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let err = memdb::Store::open(dir.path().join("none"), memdb::Options::default()).unwrap_err();
/// assert!(matches!(err.store(), Some(memdb::StoreError::NoStore { .. })));
/// # Ok::<(), std::io::Error>(())
/// ```
pub use error::StoreError;

/// An embedder's failure: the model could not encode a text.
///
/// ```
/// let err = memdb::EmbedError::Message("no model installed".into());
/// assert!(err.to_string().contains("no model"));
/// ```
pub use error::EmbedError;

/// Turns texts into unit-length vectors: the store's encoder (crate `memdb-encode` ships
/// all-MiniLM-L6-v2; an application may bring its own).
///
/// ```
/// use memdb::Embedder;
/// /// Letters counted into four dimensions: a toy, for examples.
/// struct Letters;
/// impl memdb::Embedder for Letters {
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
///         Ok(texts.iter().map(|t| {
///             let mut v = [1.0f32, 0.0, 0.0, 0.0];
///             for b in t.bytes() { v[usize::from(b % 4)] += 1.0; }
///             let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
///             v.iter().map(|x| x / norm).collect()
///         }).collect())
///     }
/// }
/// let v = Letters.embed(&["lisbon"]).unwrap();
/// assert_eq!(v[0].len(), 4);
/// ```
pub use graph::Embedder;

/// A stored item (a Schema-Guided Memory record): its id, fields, blobs, what it supersedes.
///
/// ```
/// # use memdb::{EventTime, Item, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// # let mut batch = store.batch();
/// # batch.put(ItemDraft { fields: ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?), supersedes: None });
/// # let id = batch.commit()?.puts[0].id;
/// let item: Item = store.snapshot()?.get(id)?.expect("committed");
/// assert_eq!(item.fields.source, Source::Note);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_formats::item::ItemRecord as Item;

/// An item to write: its fields and, for a correction, the item it supersedes.
///
/// ```
/// use memdb::{EventTime, ItemDraft, ItemFields, Source};
/// let draft = ItemDraft { fields: ItemFields::new(Source::Chat, EventTime::UNDATED), supersedes: None };
/// assert!(draft.supersedes.is_none());
/// ```
pub use memdb_formats::item::ItemDraft;

/// A memory's fields (SPEC.md §3): source, time, place, people, words.
///
/// ```
/// use memdb::{EventTime, ItemFields, Source};
/// let mut fields = ItemFields::new(Source::Email, EventTime::parse("2024-05-01T09:30:00+01:00")?);
/// fields.from = Some("ana@example.org".into());
/// fields.body = Some("The flight lands at 10:05".into());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_formats::item::ItemFields;

/// When something happened: an instant with its UTC offset, a local time, or undated.
///
/// ```
/// use memdb::EventTime;
/// let time = EventTime::parse("2024-05-01T09:30:00+01:00")?;
/// assert_ne!(time, EventTime::UNDATED);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_formats::item::EventTime;

/// Where an item came from: a photo, video, e-mail, chat or note.
///
/// ```
/// use memdb::Source;
/// assert_eq!(Source::Email.name(), "email");
/// ```
pub use memdb_formats::item::Source;

/// Whose memory an item is (Mem0's user, agent and run ids).
///
/// ```
/// let scope = memdb::Scope::new(Some("ana".into()), None, None);
/// assert!(!scope.is_empty());
/// ```
pub use memdb_formats::item::Scope;

/// Which items a scan reads: a time window, a source, a limit.
///
/// ```
/// # use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store};
/// use memdb::{ScanFilter, TimeWindow};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// # let mut batch = store.batch();
/// # batch.put(ItemDraft { fields: ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?), supersedes: None });
/// # batch.commit()?;
/// let filter = ScanFilter { source: Some(Source::Note), limit: Some(10), time: TimeWindow::ALL };
/// assert_eq!(store.snapshot()?.scan(&filter)?.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::ScanFilter;

/// A span of time items are read or recalled in (bounds in [`time`]).
///
/// ```
/// use memdb::time::TimeBound;
/// let may = memdb::TimeWindow::between(TimeBound::parse("2024-05-01")?, TimeBound::parse("2024-05-31")?)?;
/// assert_ne!(may, memdb::TimeWindow::ALL);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use memdb_store::TimeWindow;

/// An ingest in progress: items are added, committed in windows, and `finish` derives their
/// places, vectors, graph and pages.
///
/// ```
/// # struct Letters;
/// # impl memdb::Embedder for Letters {
/// #     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
/// #         Ok(texts.iter().map(|t| { let mut v = [1.0f32, 0.0, 0.0, 0.0];
/// #             for b in t.bytes() { v[usize::from(b % 4)] += 1.0; }
/// #             let n = v.iter().map(|x| x * x).sum::<f32>().sqrt(); v.iter().map(|x| x / n).collect() }).collect())
/// #     }
/// # }
/// use memdb::{EventTime, IngestItem, IngestOptions, ItemDraft, ItemFields, Options, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// let mut ingest = store.ingest(IngestOptions::default())?;
/// let mut fields = ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?);
/// fields.body = Some("Booked the hotel in Lisbon".into());
/// ingest.add(IngestItem::new(ItemDraft { fields: fields, supersedes: None }))?;
/// let report = ingest.finish(Some(&Letters), &mut |_stage, _done, _total| {})?;
/// assert_eq!(report.added, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use ingest::Ingest;

/// One item to ingest, with the blobs it owns and where it came from.
///
/// ```
/// use memdb::{BlobKind, EventTime, IngestItem, ItemDraft, ItemFields, Source};
/// let mut item = IngestItem::new(ItemDraft { fields: ItemFields::new(Source::Image, EventTime::UNDATED), supersedes: None });
/// item.blobs.push((BlobKind::Original, vec![0xff, 0xd8, 0xff]));
/// item.origin = "photos/a.jpg".into();
/// ```
pub use ingest::IngestItem;

/// What an ingest does beyond committing: which derived stages run, how large a window is.
///
/// ```
/// let commit_only = memdb::IngestOptions::commit_only();
/// let everything = memdb::IngestOptions::default();
/// # let _ = (commit_only, everything);
/// ```
pub use ingest::IngestOptions;

/// What an ingest did: items added, updated, unchanged, rejected (with why), per stage.
///
/// ```
/// let report = memdb::IngestReport::default();
/// assert_eq!(report.added + report.updated, 0);
/// ```
pub use ingest::IngestReport;

/// The answer to a question: hits best first, with the question's nodes and what was skipped.
///
/// ```
/// # struct Letters;
/// # impl memdb::Embedder for Letters {
/// #     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
/// #         Ok(texts.iter().map(|t| { let mut v = [1.0f32, 0.0, 0.0, 0.0];
/// #             for b in t.bytes() { v[usize::from(b % 4)] += 1.0; }
/// #             let n = v.iter().map(|x| x * x).sum::<f32>().sqrt(); v.iter().map(|x| x / n).collect() }).collect())
/// #     }
/// # }
/// use memdb::{EventTime, IngestItem, IngestOptions, ItemDraft, ItemFields, Options, RecallOptions, Source, Store};
/// # let dir = tempfile::tempdir()?;
/// let store = Store::open_or_create(dir.path().join("s.memdb"), Options::default())?;
/// let mut fields = ItemFields::new(Source::Note, EventTime::parse("2024-05-01T09:30:00+01:00")?);
/// fields.body = Some("Booked the hotel in Lisbon".into());
/// let items = [IngestItem::new(ItemDraft { fields: fields, supersedes: None })];
/// store.ingest_items(items, Some(&Letters), IngestOptions::default(), &mut |_, _, _| {})?;
/// let recall = store.recall("which hotel did I book?", &RecallOptions::default(), &Letters)?;
/// assert_eq!(recall.hits.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use recall::Recall;

/// How a recall searches: how many hits, which sources and time, which signals.
///
/// ```
/// let mut options = memdb::RecallOptions::default();
/// options.k = 5;
/// ```
pub use recall::RecallOptions;

/// One recalled item, with its score and why it is there (the signals that found it).
///
/// ```
/// fn ids(recall: &memdb::Recall) -> Vec<u64> {
///     recall.hits.iter().map(|hit: &memdb::RecallHit| hit.item).collect()
/// }
/// # let _ = ids;
/// ```
pub use recall::RecallHit;

// ---- Modules: the rest, by what it is. -----------------------------------------------------

/// Encryption at rest (XChaCha20-Poly1305 per page, Argon2id key derivation): the secret a
/// store is opened with, the key derivation's cost, and what can go wrong.
pub mod crypto {
    pub use memdb_store::crypto::{CryptoError, KdfCost, Secret};
}

/// Where a store's bytes go: the file system, or a test's failing one.
pub mod io {
    pub use memdb_store::io::{OpenMode, OsIo, StorageIo};
}

/// An item's parts beyond its fields' plain values: place, position, camera, orientation and
/// where a caption came from.
pub mod item {
    pub use memdb_formats::item::{
        Camera, CaptionProvenance, GeoPoint, Location, Orientation, PlaceName,
    };
}

/// A memory's life (SPEC.md §4.5): the typed operations (ADD, UPDATE, DELETE, PURGE), the
/// versions they leave, valid time, and reading the store as of an earlier moment.
pub mod memory {
    pub use memdb_store::{
        AppliedOp, DEFAULT_RETENTION_DAYS, ItemVersion, MemoryHistory, MemoryOp, MemoryOpKind,
        MemoryOpRow, MemoryVersion, OpNote, TimeTravel, Validity, close_superseded,
    };
}

/// Keeping a store sound and small: statistics, check, repair, rebuild, salvage, compaction,
/// and what a read skipped because its bytes are damaged.
pub mod maintenance {
    pub use memdb_store::{
        BlobRewrite, CatalogShrink, CatalogTableStats, CheckReport, CompactOptions, CompactReport,
        CompactionHook, Damage, DroppedBlob, ItemRewrite, KeepEverything, LostItem, Problem,
        RebuildReport, RepairPhase, RepairReport, Repaired, SalvagedSegment, SegmentStats, Skipped,
        Stats, Victims, salvage_segment,
    };
}

/// Time for reading and recall: a window's bounds (a day, a month, an instant), what is wrong
/// with one, and the times a question names in words ("in May 2001", "last summer").
pub mod time {
    pub use memdb_store::{TimeBound, TimeError};
    pub use memdb_text::{TimePhrase, time_phrases};
}

/// Vectors: the store's vector spaces ([`vectors::ITEM_VECTORS`]) and the indexes of crate
/// `memdb-vectors`, to build and search one outside a store. Tuning constants, routes,
/// traversal codes and block views live in `memdb_vectors` itself.
pub mod vectors {
    pub use memdb_store::{ITEM_VECTORS, StoredVectors, VectorHit, VectorScope};
    pub use memdb_vectors::{
        Filter as VectorFilter, FlatIndex, FlatIndexWriter, Hit, HnswIndex, HnswParams, Precision,
        RefinedFlatIndex, VectorError, VectorIndex,
    };
}

/// Fault injection for reliability tests (feature `fault-injection`): a recording, failing
/// [`io::StorageIo`], crash images built from its trace, and the fsync-ordering audit.
#[cfg(feature = "fault-injection")]
pub mod fault {
    pub use memdb_store::fault::{
        CrashImage, DiskModel, FaultFs, FaultKind, Injection, Op, RandomFaults, Violation, audit,
        catalog_segments, sealed_segment_problems,
    };
    pub use memdb_store::segment_plaintext;
}
