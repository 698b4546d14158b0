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

mod caption;
mod error;
#[cfg(feature = "render")]
pub mod forget;
pub mod gate;
pub mod graph;
mod handle;
mod ingest;
mod open;
pub mod ops;
mod place;
pub mod recall;
#[cfg(feature = "render")]
pub mod scrapbook;

pub use caption::{CaptionError, CaptionFailure, CaptionReport, Captioner, apply_caption};
#[cfg(feature = "llm")]
pub use caption::{VisionCaptioner, VisionOptions};
pub use error::{EmbedError, Error, Result, StoreError};
#[cfg(feature = "llm")]
pub use graph::LlmExtractor;
pub use graph::{Embedder, GraphOptions, GraphReport, NodeExtractor, RuleExtractor};
pub use handle::{Snapshot, Store};
pub use ingest::{
    EmbedReport, Ingest, IngestItem, IngestOptions, IngestReport, IngestStage, PageStage, Rejected,
};
pub use memdb_endpoint::EndpointError;
pub use memdb_formats::caption::{CaptionFields, CaptionReplyError};
pub use memdb_formats::item::{
    Camera, CaptionProvenance, EventTime, GeoPoint, ItemDraft, ItemFields, ItemRecord as Item,
    Location, Orientation, PlaceName, Scope, Source,
};
pub use memdb_store::crypto;
pub use memdb_store::io::{OpenMode, OsIo, StorageIo};
pub use memdb_store::{
    AppliedOp, DEFAULT_RETENTION_DAYS, MemoryHistory, MemoryOp, MemoryOpKind, MemoryOpRow,
    MemoryVersion, OpNote, TimeTravel, Validity, close_superseded,
};
pub use memdb_store::{
    Blob, BlobInfo, BlobKind, BlobRewrite, CatalogShrink, CatalogTableStats, CheckReport,
    CommitReceipt, CompactOptions, CompactReport, CompactionHook, Damage, DroppedBlob,
    ITEM_VECTORS, ItemRewrite, ItemVersion, KeepEverything, LostItem, Options, Problem, PutOutcome,
    PutStatus, RebuildReport, RepairPhase, RepairReport, Repaired, SalvagedSegment, ScanFilter,
    SegmentStats, Skipped, Stats, StoredVectors, VectorHit, VectorScope, Victims, WriteBatch,
    salvage_segment,
};
pub use memdb_store::{TimeBound, TimeError, TimeWindow};
pub use place::{DEFAULT_PLACE_CAP_KM, PlaceOptions, PlaceReport, fill_place, place_of};
pub use recall::{
    Explanation, FEATURES, Features, FusionWeights, ItemTextStyle, QuestionForm, RERANK_DEPTH,
    Recall, RecallCounts, RecallHit, RecallOptions, RecallTimings, Reranker, Signals, item_text,
    item_text_in,
};
pub use roaring::RoaringTreemap;
/// Fault injection for reliability tests (feature `fault-injection`): a recording, failing
/// [`StorageIo`], crash images built from its trace, and the fsync-ordering audit.
#[cfg(feature = "fault-injection")]
pub mod fault {
    pub use memdb_store::fault::{
        CrashImage, DiskModel, FaultFs, FaultKind, Injection, Op, RandomFaults, Violation, audit,
        catalog_segments, sealed_segment_problems,
    };
    pub use memdb_store::segment_plaintext;
}
/// The vector indexes (crate `memdb-vectors`): what an application needs to build and search
/// one outside a store. Tuning constants, routes, traversal codes and block views live in
/// `memdb_vectors` itself.
pub use memdb_vectors::{
    Filter as VectorFilter, FlatIndex, FlatIndexWriter, Hit, HnswIndex, HnswParams, Precision,
    RefinedFlatIndex, VectorError, VectorIndex,
};
