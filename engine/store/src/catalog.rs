//! The catalog: redb tables that hold the manifest of live segments and every index.
//!
//! redb's commit is memdb's single linearisation point: a write is visible and durable exactly
//! when the redb transaction that references its bytes commits. Segment bytes are written and
//! fsync'd before that commit, so the catalog never references bytes that are not durable.
//! Table layouts are normative in SPEC.md §5.
//!
//! Invariants: every row of `items` points at a framed record inside an item-block entry of a
//! segment listed in `segments`; every row of `blobs` points at the payload of a blob entry;
//! `by_source` and `external_ids` hold exactly one row per item (the last only for items with
//! an external id); `op_batches` holds every op sequence number below `next_op_seq` once.

use redb::{ReadableTable, TableDefinition};

use crate::error::{CatalogResult, Result};

/// Store-wide counters and settings: `format_version`, `next_item_id`, `next_blob_id`,
/// `next_segment_id`, `next_op_seq`, `created_unix_ms`.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// segment id → (state, committed length in bytes, dead bytes).
pub(crate) const SEGMENTS: TableDefinition<u64, (u8, u64, u64)> = TableDefinition::new("segments");
/// item id → (segment id, file offset of the record frame, frame length, event time ms, source).
pub(crate) const ITEMS: TableDefinition<u64, (u64, u64, u32, i64, u8)> =
    TableDefinition::new("items");
/// external id → item id.
pub(crate) const EXTERNAL_IDS: TableDefinition<&str, u64> = TableDefinition::new("external_ids");
/// (event time ms, item id) → (): the time index of format versions 1–9, which version 10 folded
/// into `by_source` (a time scan over every source merges the sources' ranges). Dropped at an
/// older store's first write.
pub(crate) const BY_TIME: TableDefinition<(i64, u64), ()> = TableDefinition::new("by_time");
/// (source code, event time ms, item id) → (): the time index, per source.
pub(crate) const BY_SOURCE: TableDefinition<(u8, i64, u64), ()> = TableDefinition::new("by_source");
/// blob id → (segment id, file offset of the payload, payload length, blob kind, owner item id
/// or 0).
pub(crate) const BLOBS: TableDefinition<u64, (u64, u64, u64, u8, u64)> =
    TableDefinition::new("blobs");
/// Store-wide text settings: `encoder_model` (the model id and weights hash that made the
/// store's vectors); and settings the store keeps for its clients without reading them:
/// `item_text` (the recipe version and style of the text the item vectors were made from) and
/// `places`
/// (the version of the place pass every item has been through).
pub const SETTINGS: TableDefinition<&str, &str> = TableDefinition::new("settings");
pub(crate) const KEY_ENCODER_MODEL: &str = "encoder_model";
/// Prefix of the `settings` rows that record a batch's memory operations under a client's key
/// (SPEC.md §5.6): `ops:<key>` → the ops as `seq:id` pairs joined by `,`, ids only, no text.
pub(crate) const RECORDED_OPS_PREFIX: &str = "ops:";

/// The `settings` row of the ops recorded under `key`.
pub(crate) fn recorded_ops_key(key: &str) -> String {
    format!("{RECORDED_OPS_PREFIX}{key}")
}

/// The value of a recorded-ops row: each op as `seq:id`, joined by `,`.
pub(crate) fn recorded_ops_value(ops: impl Iterator<Item = (u64, u64)>) -> String {
    ops.map(|(seq, id)| format!("{seq}:{id}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The (op sequence, memory id) pairs of a recorded-ops row; a part that is not two numbers is
/// a damaged row.
pub(crate) fn parse_recorded_ops(value: &str) -> std::result::Result<Vec<(u64, u64)>, String> {
    value
        .split(',')
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.split_once(':')
                .and_then(|(seq, id)| Some((seq.parse().ok()?, id.parse().ok()?)))
                .ok_or_else(|| format!("`{part}` is not seq:id"))
        })
        .collect()
}
/// The `item_text` setting a store starts with: a new store's vectors are made with the
/// current recipe, so none is stale (absent, in a store made before version 7, means 1). The
/// recall module's tests pin it to its `ITEM_TEXT_VERSION`.
pub(crate) const NEW_STORE_SETTINGS: [(&str, &str); 1] = [("item_text", "4")];
/// Setting: the precision (`f32`, `f16`, `i8`) the item vector space is made with when the
/// store stores its first item vector, chosen when the store was created
/// (`Options::item_vector_precision`). Absent in a store created before it: the options the
/// store is opened with choose.
pub(crate) const KEY_ITEM_VECTORS: &str = "item_vectors";
/// vector space name → (dimension, precision code): the spaces of the store's vectors (SPEC.md
/// §5.1). Format version 2.
pub(crate) const VECTOR_SPACES: TableDefinition<&str, (u32, u8)> =
    TableDefinition::new("vector_spaces");
/// (space, blob id of a vector block) → (rows, block kind, the block's deleted rows as a
/// serialized roaring bitmap; empty: none). Kind 0: a flat block; 1: an HNSW graph with its flat
/// block inside. Format version 2.
pub(crate) const VECTOR_BLOCKS: TableDefinition<(&str, u64), (u32, u8, &[u8])> =
    TableDefinition::new("vector_blocks");
/// (space, key) → (blob id of the vector block, row): where the live vector of a key was, in
/// formats 2 to 11. Format 12 keeps one table per space instead ([`vector_key_table`]); an
/// older store is read through this one until its first write moves its rows.
pub(crate) const VECTOR_KEYS: TableDefinition<(&str, u64), (u64, u32)> =
    TableDefinition::new("vector_keys");

/// The name of `space`'s key table (format 12): `vector_keys.<space>`.
pub(crate) fn vector_key_table_name(space: &str) -> String {
    format!("vector_keys.{space}")
}

/// A space's key table open in a write transaction: key → (block, row).
pub(crate) type KeyTable<'t> = redb::Table<'t, u64, (u64, u32)>;

/// `space`'s key table, named `name` ([`vector_key_table_name`]): key → (blob id of the vector
/// block, row), where the live vector of a key is. Fixed-width rows (20 bytes, no per-row
/// offsets, no space name) where the shared `vector_keys` of format 2 to 11 took about 40.
pub(crate) fn vector_key_table(name: &str) -> TableDefinition<'_, u64, (u64, u32)> {
    TableDefinition::new(name)
}
/// EM-Graph nodes (SPEC.md §5.3): node id → (canonical phrase, kind code, aliases joined by
/// U+001F). Format version 3, like every `graph_*` table.
pub const GRAPH_NODES: TableDefinition<u64, (&str, u8, &str)> = TableDefinition::new("graph_nodes");
/// Phrase (canonical or alias) → node id.
pub const GRAPH_ALIASES: TableDefinition<&str, u64> = TableDefinition::new("graph_aliases");
/// EM-Path id → (page key, node ids in order of first mention, evidence item ids), the lists
/// as `memdb_formats::id_list` (SPEC.md §5.3). Format version 14; it replaced `graph_paths`.
pub const GRAPH_PATHS: TableDefinition<u64, (&str, &[u8], &[u8])> =
    TableDefinition::new("graph.paths");
/// Q-matrix by node: node id → the paths holding it, in increasing order, as an id list.
/// Format version 14; it replaced `graph_node_paths`. (The Q-matrix by path is each path's
/// node list: `graph_path_nodes`, its bitmap copy, is gone.)
pub const GRAPH_NODE_PATHS: TableDefinition<u64, &[u8]> = TableDefinition::new("graph.node_paths");
/// Versions 3 to 13: `graph.paths` with the lists as u64 LE.
pub const LEGACY_GRAPH_PATHS: TableDefinition<u64, (&str, &[u8], &[u8])> =
    TableDefinition::new("graph_paths");
/// Versions 3 to 13: `graph.node_paths` as portable roaring bitmaps.
pub const LEGACY_GRAPH_NODE_PATHS: TableDefinition<u64, &[u8]> =
    TableDefinition::new("graph_node_paths");
/// Versions 3 to 13: path id → its nodes as a portable roaring bitmap (what `graph.paths`
/// lists).
pub(crate) const LEGACY_GRAPH_PATH_NODES: TableDefinition<u64, &[u8]> =
    TableDefinition::new("graph_path_nodes");
/// Versions 3 to 13: `graph.items` with the node ids as u64 LE.
pub const LEGACY_GRAPH_ITEMS: TableDefinition<u64, (u64, &[u8])> =
    TableDefinition::new("graph_items");
/// segment id → the 32-byte random salt its subkey derives from; encrypted stores only
/// (SPEC.md §3.7). Dropped with the segment's row; a segment of format 2 also carries it on its
/// header page (what a rebuild reads when the catalog cannot be).
pub(crate) const SEGMENT_KEYS: TableDefinition<u64, &[u8]> = TableDefinition::new("segment_keys");
/// item id → (path id, the item's node ids as an id list): which items the graph has seen.
/// Format version 14; it replaced `graph_items`.
pub const GRAPH_ITEMS: TableDefinition<u64, (u64, &[u8])> = TableDefinition::new("graph.items");
/// Scrapbook pages (SPEC.md §5.4): local day `YYYY-MM-DD` → (forgetting stage, JPEG quality,
/// scale in thousandths, the page's JPEG parts as blob ids u64 LE (none: rendered on demand),
/// layout). Format version 4.
pub const PAGES: TableDefinition<&str, PageValue<'static>> = TableDefinition::new("pages");
/// A `PAGES` row: (stage, quality, scale ‰, parts, layout).
pub(crate) type PageValue<'a> = (u8, u8, u16, &'a [u8], &'a [u8]);
/// op sequence number → (op code, item id, commit time ms): the op log of format versions 1–9,
/// one row per op. Version 10 keeps it in `op_batches`; an older store's rows move there at its
/// first write.
pub(crate) const OPLOG: TableDefinition<u64, (u8, u64, i64)> = TableDefinition::new("oplog");
/// First op sequence number of a run → (commit time ms, the run's ops packed: per op its code
/// (u8) and item id (unsigned LEB128)): the op log, one row per run of consecutive ops a commit
/// logged at the same time — one row per batch, where `oplog` had one per op. Op `i` of a run
/// has sequence number key + i. Format version 10.
pub(crate) const OP_BATCHES: TableDefinition<u64, (i64, &[u8])> =
    TableDefinition::new("op_batches");
/// (item id, op sequence of the update that replaced the version) → (segment id, file offset
/// of the record frame, frame length, replaced at ms): the earlier versions of items, oldest
/// first. Their frames stay live (moved by compaction, never counted dead) until the item is
/// deleted. Format version 6.
pub(crate) const HISTORY: TableDefinition<(u64, u64), (u64, u64, u32, i64)> =
    TableDefinition::new("history");
/// (owner item id, blob id) → (blob kind, length, dropped at ms, why): blobs an item owned that
/// forgetting dropped, so the item still says its original existed, when it went and by which
/// policy. Format version 6.
pub(crate) const DROPPED_BLOBS: TableDefinition<(u64, u64), (u8, u64, i64, &str)> =
    TableDefinition::new("dropped_blobs");
/// (local day `YYYY-MM-DD`, item id) → op sequence of the change: an item of that day changed
/// after its page was composed, so the page must be composed again (or, when forgotten, the
/// item's old block blanked). The page write that handles a row removes it — only if its
/// sequence is still the one handled, so a change committed meanwhile is not lost. Format
/// version 6.
pub const STALE_PAGES: TableDefinition<(&str, u64), u64> = TableDefinition::new("stale_pages");
/// (item id, op sequence) → (op code, system time ms, valid time ms or `i64::MIN`, note blob
/// id or 0): every op on a memory, by memory. The op's valid time is the new version's
/// `valid_from` (add, update) or the retired version's `valid_to` (delete). What the caller
/// said about the op (reason, actor, role: the columns of Mem0's history table that are not
/// the memory) is a blob of kind [`BlobKind::OpNote`] owned by the memory, never text in this
/// table: free text in a catalog row would outlive a purge in a freed catalog page, while a
/// segment entry goes with segment compaction. Format version 8; an older store's `oplog` is
/// copied in at its first write, without notes.
pub(crate) const MEMORY_OPS: TableDefinition<(u64, u64), MemoryOpValue> =
    TableDefinition::new("memory_ops");
/// A `MEMORY_OPS` row: (op code, system time ms, valid time ms, note blob id or 0).
pub(crate) type MemoryOpValue = (u8, i64, i64, u64);
/// (item id, version) → (valid from ms, valid to ms, valid to ms as first written): when a
/// version of a memory was true in the world, `[from, to)`, `i64::MIN` and `i64::MAX` standing
/// for unbounded. Version 0 is the current version; an earlier one is keyed like its `history`
/// row (the sequence of the op that replaced it). Absent: from the version's event time
/// (unbounded when undated) to unbounded, or for an earlier version to the time it was
/// replaced (SPEC.md §5.6). Format version 8.
pub(crate) const VALID_TIME: TableDefinition<(u64, u64), (i64, i64, i64)> =
    TableDefinition::new("valid_time");

pub(crate) const KEY_FORMAT_VERSION: &str = "format_version";
pub(crate) const KEY_NEXT_ITEM: &str = "next_item_id";
pub(crate) const KEY_NEXT_BLOB: &str = "next_blob_id";
pub(crate) const KEY_NEXT_SEGMENT: &str = "next_segment_id";
pub(crate) const KEY_NEXT_OP: &str = "next_op_seq";
pub(crate) const KEY_CREATED: &str = "created_unix_ms";
/// The counters-table key of the EM-Graph's next node id (the graph's rows are part of the
/// catalog's format, SPEC.md §3; the engine's graph keeps them).
pub const KEY_NEXT_NODE: &str = "next_graph_node_id";
/// The counters-table key of the EM-Graph's next path id.
pub const KEY_NEXT_PATH: &str = "next_graph_path_id";

/// Version of the store layout (catalog tables + segment format), bumped on any change.
/// Version 2 added the vector tables; a version-1 store is read as one without vectors and
/// becomes version 2 at its first write. Version 3 added the `graph_*` tables (the EM-Graph);
/// an older store is read as one without a graph and becomes version 3 at its first write.
/// Version 4 added the `pages` table, with the same upgrade rule. Version 5 lets a vector block
/// be coarser than its space (forgetting re-quantizes item vectors); a version-4 store is read
/// as it is and becomes version 5 at its first write. Version 6 added `history`,
/// `dropped_blobs` and `stale_pages`, and undated items (event time `i64::MIN`); an older store
/// is read as one with none of them and becomes version 6 at its first write. Version 7 writes
/// item records of version 2 (SPEC.md §4.2: place, camera, orientation, short caption, caption
/// provenance) and the settings `item_text` and `places`; a version-6 store is read as it is
/// (its records are version 1, which still read) and becomes version 7 at its first write, so
/// a build that knows only version-1 records refuses the store instead of failing on its
/// newer records one by one. Version 8 added `memory_ops` and `valid_time` (memory operations,
/// bi-temporal versions) and made a delete keep the item's versions (op 3 retires; op 5
/// purges); a version-7 store is read as one whose ops have no reasons and whose versions have
/// default valid times, and becomes version 8 at its first write, which copies `oplog` into
/// `memory_ops`. Version 10 slimmed the per-item rows: the time index is `by_source` alone
/// (`by_time` is gone) and the op log has one row per batch (`op_batches`, where `oplog` had one
/// per op); an older store is read through `by_source` and its `oplog`, and becomes version 10
/// at its first write, which moves `oplog` into `op_batches` and drops `by_time` and `oplog`.
/// Version 12 writes item records of version 3 (SPEC.md §4.3: a record's fields in a zstd frame,
/// where that saves) beside version 2 and vector blocks of precision i4, and keeps each vector
/// space's keys in a table of its own (`vector_keys.<space>`); a version-10 store is read as it
/// is (its keys through the shared `vector_keys`) and becomes version 12 at its first write,
/// which moves its keys, so a build that cannot read compressed records or i4 blocks refuses
/// the store. Version 14 keeps the graph's id lists as varint deltas (`graph.paths`,
/// `graph.node_paths`, `graph.items`, SPEC.md §5.3) where versions 3 to 13 kept u64 LE lists
/// and roaring bitmaps (`graph_paths`, `graph_node_paths`, `graph_path_nodes`,
/// `graph_items`); an older store is read through those and becomes version 14 at its first
/// write, which rewrites the rows. Version 16 writes item records of versions 4 and 5 (SPEC.md
/// §4.5: an item's scope, whose memory it is) for items that have a scope; a version-14 store
/// is read as it is and becomes version 16 at its first write, so a build that cannot read
/// scoped records refuses the store instead of failing on them one by one. Version 18 makes a
/// delete soft for blobs too (SPEC.md §5.6): a retired item keeps its blobs, owned by it, until
/// a purge or a compaction past the store's retention window (`settings`
/// `deleted_retention_days`), so an undelete brings its originals back; a version-16 store is
/// read as it is and becomes version 18 at its first write, so an older build — whose delete
/// frees the blobs and whose `check` calls a retired item's blob an orphan — refuses it.
/// Version 20 writes segments of format 2 (SPEC.md §3): every blob entry names its blob, kind
/// and owner, and an encrypted segment's header page its key salt, so a rebuild ties each
/// original to its item without the catalog; a version-18 store is read as it is and becomes
/// version 20 at its first write (a build that does not know the tags would call them damage).
pub(crate) const STORE_FORMAT_VERSION: u64 = 20;
/// Format of an encrypted store (SPEC.md §3.7, §10): version 20 with its files sealed, a KEY
/// file and the `segment_keys` table. A store is made encrypted or not and stays so; the
/// plain format keeps its version. Versions 9, 11, 13, 15, 17 and 19 are encrypted stores of
/// versions 8, 10, 12, 14, 16 and 18: read as they are, and upgraded at their first write like a
/// plain store of their version, to this version.
pub(crate) const ENCRYPTED_FORMAT_VERSION: u64 = 21;
/// The oldest version this build opens.
pub(crate) const OLDEST_FORMAT_VERSION: u64 = 1;

/// Segment states in `SEGMENTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SegmentState {
    /// Appendable: no footer yet; the committed length is the end of the last committed entry.
    Open = 1,
    /// Footer and trailer written; immutable.
    Sealed = 2,
}

impl SegmentState {
    pub(crate) fn from_code(code: u8) -> Option<SegmentState> {
        match code {
            1 => Some(SegmentState::Open),
            2 => Some(SegmentState::Sealed),
            _ => None,
        }
    }
}

/// A row of `SEGMENTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentRow {
    pub(crate) state: SegmentState,
    pub(crate) len: u64,
    pub(crate) dead_bytes: u64,
}

impl SegmentRow {
    pub(crate) fn decode(id: u64, raw: (u8, u64, u64)) -> Result<SegmentRow> {
        let state = SegmentState::from_code(raw.0).ok_or_else(|| {
            crate::Error::bad_row(
                "segments",
                format!("{id:016x}"),
                format!("unknown state {}", raw.0),
            )
        })?;
        Ok(SegmentRow {
            state,
            len: raw.1,
            dead_bytes: raw.2,
        })
    }

    pub(crate) fn encode(&self) -> (u8, u64, u64) {
        (self.state as u8, self.len, self.dead_bytes)
    }
}

/// A row of `ITEMS`: where the item's current record is, plus the index keys it was filed
/// under (so deletes need not read the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ItemLoc {
    pub(crate) segment: u64,
    pub(crate) offset: u64,
    pub(crate) frame_len: u32,
    pub(crate) time_ms: i64,
    pub(crate) source: u8,
}

impl ItemLoc {
    pub(crate) fn decode(raw: (u64, u64, u32, i64, u8)) -> ItemLoc {
        ItemLoc {
            segment: raw.0,
            offset: raw.1,
            frame_len: raw.2,
            time_ms: raw.3,
            source: raw.4,
        }
    }

    pub(crate) fn encode(&self) -> (u64, u64, u32, i64, u8) {
        (
            self.segment,
            self.offset,
            self.frame_len,
            self.time_ms,
            self.source,
        )
    }
}

/// A row of `HISTORY`: where an earlier version's record frame is, and when it was replaced.
/// (An earlier version is in no index, so its location has no time or source columns.)
pub(crate) fn version_loc(raw: (u64, u64, u32, i64)) -> (ItemLoc, i64) {
    let (segment, offset, frame_len, replaced_ms) = raw;
    (
        ItemLoc {
            segment,
            offset,
            frame_len,
            time_ms: 0,
            source: 0,
        },
        replaced_ms,
    )
}

/// What a blob holds; stored as a byte in `BLOBS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlobKind {
    /// Anything else.
    Other = 0,
    /// An original file (a photo as imported).
    Original = 1,
    /// A composed scrapbook page image.
    Page = 2,
    /// An e-mail attachment.
    Attachment = 3,
    /// A block of a vector space (the `memdb-vectors` layout); owned by the store, never offered
    /// to compaction hooks.
    Vectors = 4,
    /// What the caller said about a memory operation (its reason, actor and role), owned by
    /// the memory and referenced from its `memory_ops` row; owned by the store, never offered
    /// to compaction hooks. Format version 8.
    OpNote = 5,
}

impl BlobKind {
    /// Every kind, in code order.
    pub const ALL: [BlobKind; 6] = [
        BlobKind::Other,
        BlobKind::Original,
        BlobKind::Page,
        BlobKind::Attachment,
        BlobKind::Vectors,
        BlobKind::OpNote,
    ];

    pub(crate) fn from_code(code: u8) -> Option<BlobKind> {
        BlobKind::ALL.into_iter().find(|k| *k as u8 == code)
    }

    /// Lowercase name for reports.
    pub fn name(self) -> &'static str {
        match self {
            BlobKind::Other => "other",
            BlobKind::Original => "original",
            BlobKind::Page => "page",
            BlobKind::Attachment => "attachment",
            BlobKind::Vectors => "vectors",
            BlobKind::OpNote => "op note",
        }
    }

    /// Blobs the store owns: written and read only by the engine, never by a put, never
    /// offered to compaction hooks.
    pub(crate) fn is_reserved(self) -> bool {
        matches!(self, BlobKind::Vectors | BlobKind::OpNote)
    }
}

/// A row of `BLOBS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlobLoc {
    pub(crate) segment: u64,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) kind: BlobKind,
    pub(crate) owner: u64,
}

impl BlobLoc {
    pub(crate) fn decode(id: u64, raw: (u64, u64, u64, u8, u64)) -> Result<BlobLoc> {
        let kind = BlobKind::from_code(raw.3)
            .ok_or_else(|| crate::Error::bad_row("blobs", id, format!("unknown kind {}", raw.3)))?;
        Ok(BlobLoc {
            segment: raw.0,
            offset: raw.1,
            len: raw.2,
            kind,
            owner: raw.4,
        })
    }

    pub(crate) fn encode(&self) -> (u64, u64, u64, u8, u64) {
        (
            self.segment,
            self.offset,
            self.len,
            self.kind as u8,
            self.owner,
        )
    }

    /// What blob `id`'s entry header says of it (segment format 2): its id, kind and owner.
    pub(crate) fn tag(&self, id: u64) -> memdb_formats::segment::BlobTag {
        memdb_formats::segment::BlobTag {
            id,
            kind: self.kind as u8,
            owner: self.owner,
        }
    }

    /// Bytes the blob's entry occupies in its segment (header, payload, padding).
    pub(crate) fn entry_bytes(&self) -> u64 {
        memdb_formats::segment::pages_for(self.len) * u64::from(memdb_formats::segment::PAGE_SIZE)
    }
}

/// Op codes of the op log (`op_batches`, and an older store's `oplog`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpCode {
    Add = 1,
    Update = 2,
    /// Format 8 on: the item is retired, its versions kept; before: removed with its history.
    Delete = 3,
    /// A memory operation that changed nothing (NONE: the fact was already known).
    Keep = 4,
    /// The item and every version of it removed physically (format 8).
    Purge = 5,
}

impl OpCode {
    pub(crate) fn from_code(code: u8) -> Option<OpCode> {
        Some(match code {
            1 => OpCode::Add,
            2 => OpCode::Update,
            3 => OpCode::Delete,
            4 => OpCode::Keep,
            5 => OpCode::Purge,
            _ => return None,
        })
    }
}

/// Creates every table so readers never see a missing one, and writes the initial counters.
pub(crate) fn initialise(
    txn: &redb::WriteTransaction,
    now_ms: i64,
    item_vectors: memdb_vectors::Precision,
) -> Result<()> {
    {
        let mut meta = txn.open_table(META).ctx("open meta")?;
        meta.insert(KEY_FORMAT_VERSION, STORE_FORMAT_VERSION)
            .ctx("init meta")?;
        for key in [KEY_NEXT_ITEM, KEY_NEXT_BLOB, KEY_NEXT_SEGMENT, KEY_NEXT_OP] {
            meta.insert(key, 1).ctx("init meta")?;
        }
        meta.insert(KEY_CREATED, u64::try_from(now_ms).unwrap_or(0))
            .ctx("init meta")?;
    }
    txn.open_table(SEGMENTS).ctx("create segments")?;
    txn.open_table(ITEMS).ctx("create items")?;
    txn.open_table(EXTERNAL_IDS).ctx("create external_ids")?;
    txn.open_table(BY_SOURCE).ctx("create by_source")?;
    txn.open_table(BLOBS).ctx("create blobs")?;
    {
        let mut settings = txn.open_table(SETTINGS).ctx("create settings")?;
        for (key, value) in NEW_STORE_SETTINGS {
            settings.insert(key, value).ctx("init settings")?;
        }
        settings
            .insert(KEY_ITEM_VECTORS, item_vectors.to_string().as_str())
            .ctx("init settings")?;
    }
    txn.open_table(VECTOR_SPACES).ctx("create vector_spaces")?;
    txn.open_table(VECTOR_BLOCKS).ctx("create vector_blocks")?;
    create_later_tables(txn)
}

/// Creates the tables added after version 2, the `graph_*` tables, `pages`, `history`,
/// `dropped_blobs`, `stale_pages`, `memory_ops`, `valid_time` and `op_batches` (a no-op where
/// they exist): at creation, and at the first write to an older store, where it also makes the
/// version-10 changes (the `oplog` rows move to `op_batches`, and to `memory_ops` in a store
/// from before version 8; `oplog` and `by_time` are dropped), the version-12 one (the shared
/// `vector_keys` rows move to one table per space) and the version-14 one (the graph's lists
/// are rewritten as id lists, [`compact_graph_lists`]).
pub(crate) fn create_later_tables(txn: &redb::WriteTransaction) -> Result<()> {
    split_vector_keys(txn)?;
    compact_graph_lists(txn)?;
    txn.open_table(PAGES).ctx("create pages")?;
    txn.open_table(GRAPH_NODES).ctx("create graph_nodes")?;
    txn.open_table(GRAPH_ALIASES).ctx("create graph_aliases")?;
    txn.open_table(GRAPH_PATHS).ctx("create graph.paths")?;
    txn.open_table(GRAPH_NODE_PATHS)
        .ctx("create graph.node_paths")?;
    txn.open_table(GRAPH_ITEMS).ctx("create graph.items")?;
    txn.open_table(HISTORY).ctx("create history")?;
    txn.open_table(DROPPED_BLOBS).ctx("create dropped_blobs")?;
    txn.open_table(STALE_PAGES).ctx("create stale_pages")?;
    txn.open_table(VALID_TIME).ctx("create valid_time")?;
    // A store from before version 8 has no `memory_ops`: its op log becomes the memories' op
    // index too. (An empty `memory_ops` in a later store is one whose memories were all
    // purged, whose ops must stay gone.)
    let copy_to_memory_ops = !has_table(txn, "memory_ops")?;
    let mut op_batches = txn.open_table(OP_BATCHES).ctx("create op_batches")?;
    let mut memory_ops = txn.open_table(MEMORY_OPS).ctx("create memory_ops")?;
    if !has_table(txn, "oplog")? {
        return Ok(());
    }
    let mut log = OpLogWriter::default();
    {
        let oplog = txn.open_table(OPLOG).ctx("open oplog")?;
        for row in oplog.iter().ctx("scan oplog")? {
            let (seq, value) = row.ctx("scan oplog")?;
            let (op, item, at) = value.value();
            if copy_to_memory_ops {
                memory_ops
                    .insert((item, seq.value()), (op, at, i64::MIN, 0))
                    .ctx("copy oplog to memory_ops")?;
            }
            log.push(seq.value(), op, item, at);
        }
    }
    log.flush(&mut op_batches)?;
    drop((op_batches, memory_ops));
    // Version 10 keeps the log in `op_batches` and the time index in `by_source`.
    txn.delete_table(OPLOG).ctx("drop oplog")?;
    txn.delete_table(BY_TIME).ctx("drop by_time")?;
    Ok(())
}

/// Moves the rows of a format-2-to-11 `vector_keys` into one table per space and drops it (a
/// no-op where it does not exist). The rows are in (space, key) order, so each space's table is
/// opened once and filled in key order.
fn split_vector_keys(txn: &redb::WriteTransaction) -> Result<()> {
    if !has_table(txn, "vector_keys")? {
        return Ok(());
    }
    {
        let old = txn.open_table(VECTOR_KEYS).ctx("open vector_keys")?;
        let mut current: Option<(String, KeyTable<'_>)> = None;
        for row in old.iter().ctx("scan vector_keys")? {
            let (key, at) = row.ctx("scan vector_keys")?;
            let (space, key) = key.value();
            let table = match &mut current {
                Some((open, table)) if open == space => table,
                _ => {
                    // The previous space's table is closed before the next one opens.
                    current = None;
                    let name = vector_key_table_name(space);
                    let table = txn
                        .open_table(vector_key_table(&name))
                        .ctx("create a space's vector keys")?;
                    &mut current.insert((space.to_owned(), table)).1
                }
            };
            table.insert(key, at.value()).ctx("move vector_keys")?;
        }
    }
    txn.delete_table(VECTOR_KEYS).ctx("drop vector_keys")?;
    Ok(())
}

/// Rewrites the graph rows of a format-3-to-13 store as format 14 keeps them (a no-op where
/// `graph_paths` does not exist): `graph_paths`, `graph_node_paths` and `graph_items` move to
/// `graph.paths`, `graph.node_paths` and `graph.items` with their lists as
/// `memdb_formats::id_list`, and `graph_path_nodes` (what `graph_paths` lists) is dropped. A
/// row that does not decode is refused: the commit fails and the store keeps its old tables.
fn compact_graph_lists(txn: &redb::WriteTransaction) -> Result<()> {
    use memdb_formats::id_list;
    use redb::TableHandle;
    if !has_table(txn, LEGACY_GRAPH_PATHS.name())? {
        return Ok(());
    }
    let legacy_list = |what: &'static str, id: u64, bytes: &[u8]| -> Result<Vec<u8>> {
        let ids =
            memdb_formats::u64_list(what, bytes).map_err(|e| crate::Error::bad_row(what, id, e))?;
        Ok(id_list::to_bytes(&ids))
    };
    {
        let old = txn.open_table(LEGACY_GRAPH_PATHS).ctx("open graph_paths")?;
        let mut new = txn.open_table(GRAPH_PATHS).ctx("create graph.paths")?;
        for row in old.iter().ctx("scan graph_paths")? {
            let (id, value) = row.ctx("scan graph_paths")?;
            let (page, nodes, items) = value.value();
            let nodes = legacy_list("graph_paths nodes", id.value(), nodes)?;
            let items = legacy_list("graph_paths items", id.value(), items)?;
            new.insert(id.value(), (page, nodes.as_slice(), items.as_slice()))
                .ctx("move graph_paths")?;
        }
    }
    {
        let old = txn
            .open_table(LEGACY_GRAPH_NODE_PATHS)
            .ctx("open graph_node_paths")?;
        let mut new = txn
            .open_table(GRAPH_NODE_PATHS)
            .ctx("create graph.node_paths")?;
        for row in old.iter().ctx("scan graph_node_paths")? {
            let (id, value) = row.ctx("scan graph_node_paths")?;
            let paths = roaring::RoaringBitmap::deserialize_from(value.value())
                .map_err(|e| crate::Error::bad_row("graph_node_paths", id.value(), e))?;
            let paths: Vec<u64> = paths.iter().map(u64::from).collect();
            new.insert(id.value(), id_list::to_bytes(&paths).as_slice())
                .ctx("move graph_node_paths")?;
        }
    }
    {
        let old = txn.open_table(LEGACY_GRAPH_ITEMS).ctx("open graph_items")?;
        let mut new = txn.open_table(GRAPH_ITEMS).ctx("create graph.items")?;
        for row in old.iter().ctx("scan graph_items")? {
            let (id, value) = row.ctx("scan graph_items")?;
            let (path, nodes) = value.value();
            let nodes = legacy_list("graph_items nodes", id.value(), nodes)?;
            new.insert(id.value(), (path, nodes.as_slice()))
                .ctx("move graph_items")?;
        }
    }
    // `graph_node_paths` and `graph_items` exist wherever `graph_paths` does (format 3 made
    // them together); deleting a table that is not there is a no-op.
    txn.delete_table(LEGACY_GRAPH_PATHS)
        .ctx("drop graph_paths")?;
    txn.delete_table(LEGACY_GRAPH_NODE_PATHS)
        .ctx("drop graph_node_paths")?;
    txn.delete_table(LEGACY_GRAPH_PATH_NODES)
        .ctx("drop graph_path_nodes")?;
    txn.delete_table(LEGACY_GRAPH_ITEMS)
        .ctx("drop graph_items")?;
    Ok(())
}

/// One logged op: (sequence number, op code, item id, commit time ms).
pub(crate) type LoggedOp = (u64, u8, u64, i64);

/// Ops a transaction logs, written to `op_batches` as runs (one row per run of consecutive
/// sequence numbers with one commit time) by [`flush`](OpLogWriter::flush).
#[derive(Debug, Default)]
pub(crate) struct OpLogWriter {
    ops: Vec<LoggedOp>,
}

impl OpLogWriter {
    pub(crate) fn push(&mut self, seq: u64, op: u8, item: u64, at: i64) {
        self.ops.push((seq, op, item, at));
    }

    /// Writes the ops pushed since the last flush.
    pub(crate) fn flush(&mut self, table: &mut redb::Table<'_, u64, (i64, &[u8])>) -> Result<()> {
        let mut ops = std::mem::take(&mut self.ops);
        ops.sort_unstable_by_key(|op| op.0);
        let mut packed = Vec::new();
        let mut start = 0;
        while start < ops.len() {
            let (first, _, _, at) = ops[start];
            let mut end = start;
            packed.clear();
            while end < ops.len() && ops[end].3 == at && ops[end].0 == first + (end - start) as u64
            {
                end += 1;
            }
            memdb_formats::op_batch::encode(
                ops[start..end].iter().map(|op| (op.1, op.2)),
                &mut packed,
            );
            table
                .insert(first, (at, packed.as_slice()))
                .ctx("append op_batches")?;
            start = end;
        }
        Ok(())
    }
}

/// The ops of an `op_batches` row keyed `first`: (sequence number, op code, item id) each, in
/// order.
pub(crate) fn decode_op_batch(
    first: u64,
    packed: &[u8],
) -> std::result::Result<Vec<(u64, u8, u64)>, memdb_formats::FormatError> {
    let ops = memdb_formats::op_batch::decode(packed)?;
    if first.checked_add(ops.len() as u64).is_none() {
        return Err(memdb_formats::FormatError::Invalid {
            what: "op batch",
            offset: 0,
            reason: format!("{} ops from sequence {first} overflow", ops.len()),
        });
    }
    Ok(ops
        .into_iter()
        .enumerate()
        .map(|(i, (op, item))| (first + i as u64, op, item))
        .collect())
}

/// Every logged op of a read transaction's catalog, in log order: `op_batches`, and the
/// `oplog` of a store from before version 10 that no write has upgraded yet.
pub(crate) fn read_op_log(txn: &redb::ReadTransaction) -> Result<Vec<LoggedOp>> {
    let mut out = Vec::new();
    if let Some(oplog) = open_optional(txn, OPLOG)? {
        for row in oplog.iter().ctx("scan oplog")? {
            let (seq, value) = row.ctx("scan oplog")?;
            let (op, item, at) = value.value();
            out.push((seq.value(), op, item, at));
        }
    }
    if let Some(batches) = open_optional(txn, OP_BATCHES)? {
        for row in batches.iter().ctx("scan op_batches")? {
            let (first, value) = row.ctx("scan op_batches")?;
            let (at, packed) = value.value();
            let ops = decode_op_batch(first.value(), packed)
                .map_err(|e| crate::Error::bad_row("op_batches", first.value(), e))?;
            out.extend(ops.into_iter().map(|(seq, op, item)| (seq, op, item, at)));
        }
    }
    out.sort_unstable_by_key(|op| op.0);
    Ok(out)
}

/// Opens table `def` of a read transaction, or `None` when the store predates it (a read-only
/// handle on an older store, which no write has upgraded yet).
pub fn open_optional<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    def: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>> {
    match txn.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(crate::Error::catalog("open table")(e.into())),
    }
}

/// Whether table `name` exists in the catalog as the write transaction `txn` sees it (tables
/// that only some stores have: the graph's, an encrypted store's `segment_keys`).
pub fn has_table(txn: &redb::WriteTransaction, name: &str) -> Result<bool> {
    use redb::TableHandle;
    Ok(txn
        .list_tables()
        .ctx("list tables")?
        .any(|t| t.name() == name))
}

/// Reads a counter from `META`.
pub(crate) fn meta_get(table: &impl ReadableTable<&'static str, u64>, key: &str) -> Result<u64> {
    table
        .get(key)
        .ctx("read meta")?
        .map(|v| v.value())
        .ok_or_else(|| crate::Error::bad_row("meta", key, "missing"))
}

/// Every row of `SEGMENTS`, by id.
pub(crate) fn segment_rows(
    table: &impl ReadableTable<u64, (u8, u64, u64)>,
) -> Result<std::collections::BTreeMap<u64, SegmentRow>> {
    let mut rows = std::collections::BTreeMap::new();
    for row in table.iter().ctx("scan segments")? {
        let (id, raw) = row.ctx("scan segments")?;
        rows.insert(id.value(), SegmentRow::decode(id.value(), raw.value())?);
    }
    Ok(rows)
}
