//! Vector spaces kept in the store: named sets of keyed vectors (the embeddings of items and of
//! graph nodes) stored as flat-index blocks (the `memdb-vectors` layout, SPEC.md §5.1) in segment
//! blobs of kind [`BlobKind::Vectors`], searched in place from the mapped segments.
//!
//! Catalog (SPEC.md §5): `vector_spaces` gives each space's dimension and precision,
//! `vector_blocks` lists its blocks with their row count and deleted rows (a roaring bitmap),
//! `vector_keys.<space>` (one table per space, format 12; the shared `vector_keys` of an older
//! store is read until its first write, [`for_each_key`]) says where each key's live vector
//! is. A batch that puts vectors writes one new
//! block per space it touches, in the same append and the same redb commit as its items, so a
//! vector is durable and visible exactly when the batch is. Replacing or deleting a key marks
//! its old row deleted; [`Store::compact_vectors`] rewrites a space's live rows into one block
//! and drops the old ones (their bytes are then reclaimed by segment compaction).
//!
//! Invariants: every key row points at a row of a listed block whose id column holds
//! that key and which is not marked deleted; a block whose rows are all deleted is dropped in
//! the commit that deletes the last one; every block of a space has the space's dimension, and
//! its precision or a coarser one (rows that forgetting re-quantized; a rebuild keeps each
//! row's precision). The item space ([`ITEM_VECTORS`]) is keyed by item id: deleting an item deletes
//! its vector, and an update that changes the item's time or source without giving a new vector
//! deletes the old one (its filter columns would be stale).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use memdb_vectors::{
    FLAT_BELOW_ROWS, Filter, FlatIndexWriter, FlatView, HnswIndex, HnswParams, Precision,
    VectorError, VectorIndex,
};
use redb::{ReadableTable, ReadableTableMetadata};
use roaring::{RoaringBitmap, RoaringTreemap};

use super::Store;
use super::catalog::{self, BlobKind, BlobLoc};
use super::read::{Blob, Snapshot, read_blob};
use super::segment_file::SegmentSet;
use super::write::Tables;
use crate::error::{CatalogResult, Error, Result};

/// The space holding one embedding per item, keyed by item id.
pub const ITEM_VECTORS: &str = "items";

/// A rebuilt f32 space with at least this many rows gets an HNSW graph; smaller ones are
/// searched flat, which is faster below this size (the crossover measured by bench `vectors`).
pub(crate) const GRAPH_MIN_ROWS: usize = FLAT_BELOW_ROWS;

/// `vector_blocks` kinds.
const KIND_FLAT: u8 = 0;
const KIND_GRAPH: u8 = 1;

/// Longest space name accepted.
const MAX_SPACE_NAME: usize = 64;

/// A space whose deleted rows reach this fraction of its rows, or which has this many blocks,
/// is rewritten by [`Store::compact_vectors`] (every space with a deleted row or a second block
/// is rewritten when `force` is given).
const REBUILD_DELETED_FRACTION: f64 = 0.1;
const REBUILD_BLOCKS: usize = 8;

/// Which stored vectors a search may return: a time range, a set of sources and a set of keys.
/// The default allows every live vector; each `with_*` narrows it. Applied during the scan, so a
/// search returns exactly `min(k, matching vectors)` hits.
#[derive(Clone, Debug, Default)]
pub struct VectorScope {
    time: Option<Range<i64>>,
    sources: Vec<u8>,
    keys: Option<RoaringTreemap>,
}

impl VectorScope {
    /// Every live vector.
    pub fn all() -> VectorScope {
        VectorScope::default()
    }

    /// Only vectors whose time (unix milliseconds) lies in `range` (end exclusive).
    pub fn with_time(mut self, range: Range<i64>) -> VectorScope {
        self.time = Some(match self.time.take() {
            Some(earlier) => earlier.start.max(range.start)..earlier.end.min(range.end),
            None => range,
        });
        self
    }

    /// Adds a source code to the allowed sources (the first call restricts the search to it).
    pub fn with_source(mut self, source: u8) -> VectorScope {
        self.sources.push(source);
        self
    }

    /// Only vectors whose key is in `keys`; intersects with an earlier set.
    pub fn with_keys(mut self, keys: RoaringTreemap) -> VectorScope {
        self.keys = Some(match self.keys.take() {
            Some(earlier) => earlier & keys,
            None => keys,
        });
        self
    }

    /// The block-level filter for `view`: column tests, plus the rows holding allowed keys.
    fn filter_for(&self, view: &FlatView<'_>) -> Filter {
        let mut filter = Filter::new();
        if let Some(time) = &self.time {
            filter = filter.with_time(time.clone());
        }
        for source in &self.sources {
            filter = filter.with_source(*source);
        }
        if let Some(keys) = &self.keys {
            let rows: RoaringBitmap = view
                .ids()
                .iter()
                .enumerate()
                .filter(|(_, key)| keys.contains(**key))
                .map(|(row, _)| row as u32)
                .collect();
            filter = filter.with_rows(rows);
        }
        filter
    }
}

/// One search result: the key and its dot product with the query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VectorHit {
    /// The key (the item id, in [`ITEM_VECTORS`]).
    pub key: u64,
    /// Dot product with the query (the cosine, for unit vectors).
    pub score: f32,
}

/// A vector staged by a batch.
#[derive(Debug, Clone)]
pub(crate) struct StagedVector {
    pub(crate) time_ms: i64,
    pub(crate) source: u8,
    pub(crate) vector: Vec<f32>,
    /// Stored at most at this precision (forgetting's re-quantization); the space's when
    /// `None` or finer.
    pub(crate) precision: Option<Precision>,
}

/// What a batch does to one space.
#[derive(Debug, Default)]
pub struct SpaceChanges {
    /// Precision asked for by `define_vectors`, for a space that does not exist yet.
    pub(crate) precision: Option<Precision>,
    /// New vectors, by key.
    pub(crate) puts: BTreeMap<u64, StagedVector>,
    /// Keys whose vector goes (and gets no new one).
    pub(crate) removes: std::collections::BTreeSet<u64>,
    /// Rewrite the space's live rows into one block per precision.
    pub(crate) rebuild: bool,
    /// Keys whose stored vector is re-quantized to at most this precision (implies a rebuild,
    /// which is what frees the finer rows' bytes).
    pub quantize: BTreeMap<u64, Precision>,
}

impl SpaceChanges {
    pub(crate) fn put(&mut self, key: u64, vector: StagedVector) {
        self.removes.remove(&key);
        self.puts.insert(key, vector);
    }

    pub(crate) fn remove(&mut self, key: u64) {
        self.puts.remove(&key);
        self.removes.insert(key);
    }
}

/// Every space a batch touches, by name.
pub type StagedVectors = BTreeMap<String, SpaceChanges>;

/// A block to append as a blob of kind [`BlobKind::Vectors`].
pub(crate) struct NewBlock {
    pub(crate) blob_id: u64,
    pub(crate) bytes: Vec<u8>,
    /// The graph the bytes persist, for the cache once the batch commits.
    pub(crate) graph: Option<Arc<HnswIndex>>,
}

/// Graphs loaded from their blobs, by blob id, shared by the store's snapshots so a graph is
/// read and checked once, not per snapshot. A blob's bytes never change under its id (ids of
/// committed blobs are never reused; compaction moves bytes without changing them), so an
/// entry stays valid while its blob is listed; entries of dropped blocks are pruned.
#[derive(Default)]
pub(crate) struct GraphCache {
    graphs: Mutex<HashMap<u64, Arc<HnswIndex>>>,
}

impl GraphCache {
    pub(crate) fn insert(&self, blob_id: u64, graph: Arc<HnswIndex>) {
        if let Ok(mut graphs) = self.graphs.lock() {
            graphs.insert(blob_id, graph);
        }
    }

    fn remove(&self, blob_id: u64) {
        if let Ok(mut graphs) = self.graphs.lock() {
            graphs.remove(&blob_id);
        }
    }

    fn get_or_load(&self, space: &str, blob: &Blob) -> Result<Arc<HnswIndex>> {
        let id = blob.info().id;
        if let Some(graph) = self.graphs.lock().ok().and_then(|g| g.get(&id).cloned()) {
            return Ok(graph);
        }
        let graph = Arc::new(HnswIndex::from_bytes(blob).map_err(block_error(space, id))?);
        self.insert(id, Arc::clone(&graph));
        Ok(graph)
    }
}

/// A block as loaded: flat, searched in place in the mapped segment, or a graph (held in
/// memory, with its flat block inside).
enum LoadedBlock {
    Flat(Blob),
    Graph(Arc<HnswIndex>),
}

impl LoadedBlock {
    fn view(&self) -> std::result::Result<FlatView<'_>, VectorError> {
        match self {
            LoadedBlock::Flat(blob) => FlatView::from_bytes(blob),
            LoadedBlock::Graph(graph) => graph.flat().view(),
        }
    }
}

pub(crate) fn check_space_name(space: &str) -> Result<()> {
    if space.is_empty() || space.len() > MAX_SPACE_NAME || space.chars().any(char::is_control) {
        return Err(Error::InvalidVector {
            space: space.to_owned(),
            reason: format!(
                "a space name has 1 to {MAX_SPACE_NAME} bytes and no control characters"
            ),
        });
    }
    Ok(())
}

fn block_error(space: &str, block: u64) -> impl FnOnce(VectorError) -> Error + '_ {
    move |source| Error::VectorBlock {
        space: space.to_owned(),
        block,
        source,
    }
}

fn decode_bitmap(space: &str, block: u64, bytes: &[u8]) -> Result<RoaringBitmap> {
    if bytes.is_empty() {
        return Ok(RoaringBitmap::new());
    }
    RoaringBitmap::deserialize_from(bytes).map_err(|e| {
        Error::bad_row(
            "vector_blocks",
            format!("{space}/{block}"),
            format!("deleted-rows bitmap is unreadable: {e}"),
        )
    })
}

fn encode_bitmap(bitmap: &RoaringBitmap) -> Vec<u8> {
    if bitmap.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

/// Deletes the live vector of `key` in `space`, if any: marks its row deleted, and drops the
/// block when that was its last live row.
pub(crate) fn remove_key(t: &mut Tables<'_>, space: &str, key: u64) -> Result<bool> {
    // A space that was never made has no keys (and gets no empty key table). Asked once per
    // space and transaction: once its key table is open, the space exists.
    if !t.vector_keys_open(space)
        && t.vector_spaces
            .get(space)
            .ctx("read vector_spaces")?
            .is_none()
    {
        return Ok(false);
    }
    let Some((block, row)) = t
        .vector_keys(space)?
        .remove(key)
        .ctx("remove vector key")?
        .map(|v| v.value())
    else {
        return Ok(false);
    };
    let Some((rows, kind, bytes)) = t
        .vector_blocks
        .get((space, block))
        .ctx("read vector_blocks")?
        .map(|v| {
            let (rows, kind, bytes) = v.value();
            (rows, kind, bytes.to_vec())
        })
    else {
        return Err(Error::bad_row(
            "vector_keys",
            format!("{space}/{key}"),
            format!("points at unlisted block {block}"),
        ));
    };
    let mut deleted = decode_bitmap(space, block, &bytes)?;
    deleted.insert(row);
    if deleted.len() >= u64::from(rows) {
        t.vector_blocks
            .remove((space, block))
            .ctx("remove vector block")?;
        t.remove_blob(block)?;
    } else {
        t.vector_blocks
            .insert(
                (space, block),
                (rows, kind, encode_bitmap(&deleted).as_slice()),
            )
            .ctx("write vector_blocks")?;
    }
    Ok(true)
}

/// One `vector_blocks` row.
struct ListedBlock {
    id: u64,
    rows: u32,
    kind: u8,
    deleted: RoaringBitmap,
}

/// The blocks of `space` listed in the catalog.
fn listed_blocks(
    table: &impl ReadableTable<(&'static str, u64), (u32, u8, &'static [u8])>,
    space: &str,
) -> Result<Vec<ListedBlock>> {
    let mut blocks = Vec::new();
    for row in table
        .range((space, 0u64)..=(space, u64::MAX))
        .ctx("scan vector_blocks")?
    {
        let (key, value) = row.ctx("scan vector_blocks")?;
        let id = key.value().1;
        let (rows, kind, bytes) = value.value();
        blocks.push(ListedBlock {
            id,
            rows,
            kind,
            deleted: decode_bitmap(space, id, bytes)?,
        });
    }
    Ok(blocks)
}

/// Reads and verifies block `listed` of `space` (a graph through `graphs`).
fn load_block(
    blobs: &impl ReadableTable<u64, (u64, u64, u64, u8, u64)>,
    segments: &SegmentSet,
    graphs: &GraphCache,
    space: &str,
    listed: &ListedBlock,
) -> Result<LoadedBlock> {
    let block = listed.id;
    let raw = blobs
        .get(block)
        .ctx("read blobs")?
        .map(|v| v.value())
        .ok_or_else(|| {
            Error::bad_row(
                "vector_blocks",
                format!("{space}/{block}"),
                "the block is not a blob",
            )
        })?;
    let loc = BlobLoc::decode(block, raw)?;
    if loc.kind != BlobKind::Vectors {
        return Err(Error::bad_row(
            "vector_blocks",
            format!("{space}/{block}"),
            format!("the block is a {} blob", loc.kind.name()),
        ));
    }
    let blob = read_blob(segments, block, &loc)?;
    let loaded = match listed.kind {
        KIND_FLAT => LoadedBlock::Flat(blob),
        KIND_GRAPH => LoadedBlock::Graph(graphs.get_or_load(space, &blob)?),
        other => {
            return Err(Error::bad_row(
                "vector_blocks",
                format!("{space}/{block}"),
                format!("unknown block kind {other}"),
            ));
        }
    };
    let rows = loaded.view().map_err(block_error(space, block))?.len();
    if rows != listed.rows as usize {
        return Err(Error::bad_row(
            "vector_blocks",
            format!("{space}/{block}"),
            format!(
                "the block has {rows} rows, the catalog says {}",
                listed.rows
            ),
        ));
    }
    Ok(loaded)
}

/// Applies a batch's vector changes inside its write transaction and returns the blocks to
/// append. Runs after the batch's item operations, so item deletes are already staged here.
pub(crate) fn stage(
    t: &mut Tables<'_>,
    segments: &SegmentSet,
    graphs: &GraphCache,
    changes: StagedVectors,
) -> Result<Vec<NewBlock>> {
    let mut new_blocks = Vec::new();
    for (space, mut ch) in changes {
        let spec = t
            .vector_spaces
            .get(space.as_str())
            .ctx("read vector_spaces")?
            .map(|v| v.value());
        let (dim, precision) = match spec {
            Some((dim, code)) => {
                let precision = Precision::try_from_code(code).ok_or_else(|| {
                    Error::bad_row(
                        "vector_spaces",
                        &space,
                        format!("unknown precision code {code}"),
                    )
                })?;
                if let Some(asked) = ch.precision
                    && asked != precision
                {
                    return Err(Error::InvalidVector {
                        space,
                        reason: format!("the space holds {precision} vectors, not {asked}"),
                    });
                }
                (dim as usize, precision)
            }
            None => {
                let Some(first) = ch.puts.values().next() else {
                    // Nothing to store and nothing stored: removes and rebuilds are no-ops.
                    continue;
                };
                let dim = first.vector.len();
                let precision = ch.precision.unwrap_or(Precision::F32);
                let dim32 = u32::try_from(dim).map_err(|_| Error::InvalidVector {
                    space: space.clone(),
                    reason: format!("dimension {dim} is too large"),
                })?;
                t.vector_spaces
                    .insert(space.as_str(), (dim32, precision.code()))
                    .ctx("write vector_spaces")?;
                (dim, precision)
            }
        };
        for (key, staged) in &ch.puts {
            if staged.vector.len() != dim {
                return Err(Error::InvalidVector {
                    space,
                    reason: format!(
                        "key {key}: the vector has {} values, the space {dim}",
                        staged.vector.len()
                    ),
                });
            }
            if let Some(at) = staged.vector.iter().position(|x| !x.is_finite()) {
                return Err(Error::InvalidVector {
                    space,
                    reason: format!("key {key}: value {at} is not finite"),
                });
            }
        }

        ch.quantize
            .retain(|key, _| !ch.puts.contains_key(key) && !ch.removes.contains(key));
        if !ch.quantize.is_empty() {
            ch.rebuild = true;
        }
        if ch.rebuild {
            let blocks = listed_blocks(&t.vector_blocks, &space)?;
            for listed in &blocks {
                let loaded = load_block(&t.blobs, segments, graphs, &space, listed)?;
                let view = loaded.view().map_err(block_error(&space, listed.id))?;
                for (row, &key) in view.ids().iter().enumerate() {
                    let row = row as u32;
                    if listed.deleted.contains(row)
                        || ch.removes.contains(&key)
                        || ch.puts.contains_key(&key)
                    {
                        continue;
                    }
                    let (Some(time_ms), Some(source), Some(vector)) =
                        (view.time(row), view.source(row), view.row_f32(row))
                    else {
                        return Err(Error::Inconsistent(format!(
                            "vector space `{space}`, block {}: row {row} has a key but no \
                             values",
                            listed.id
                        )));
                    };
                    let kept = view.precision();
                    ch.puts.insert(
                        key,
                        StagedVector {
                            time_ms,
                            source,
                            vector,
                            precision: Some(
                                ch.quantize
                                    .get(&key)
                                    .map_or(kept, |&asked| kept.coarsest(asked)),
                            ),
                        },
                    );
                }
            }
            for listed in blocks {
                t.vector_blocks
                    .remove((space.as_str(), listed.id))
                    .ctx("remove vector block")?;
                t.remove_blob(listed.id)?;
                graphs.remove(listed.id);
            }
            // Every key is rewritten below; the old rows are gone with their blocks.
            t.vector_keys(&space)?
                .retain(|_, _| false)
                .ctx("clear vector keys")?;
        } else {
            for key in ch.removes.iter().chain(ch.puts.keys()) {
                remove_key(t, &space, *key)?;
            }
        }

        let mut groups: BTreeMap<u8, Vec<(u64, StagedVector)>> = BTreeMap::new();
        for (key, staged) in std::mem::take(&mut ch.puts) {
            let stored = staged
                .precision
                .map_or(precision, |asked| precision.coarsest(asked));
            groups.entry(stored.code()).or_default().push((key, staged));
        }
        for (code, rows) in groups {
            let stored = Precision::try_from_code(code).unwrap_or(precision);
            new_blocks.push(write_block(t, &space, dim, stored, &rows, ch.rebuild)?);
        }
    }
    Ok(new_blocks)
}

/// Writes `rows` as one new block of `space` at `precision` and points their keys at it. A
/// rebuild of a large f32 space persists a graph (with the flat block inside) instead of the
/// bare block; blocks appended by ordinary batches stay flat until the next one.
fn write_block(
    t: &mut Tables<'_>,
    space: &str,
    dim: usize,
    precision: Precision,
    rows: &[(u64, StagedVector)],
    rebuild: bool,
) -> Result<NewBlock> {
    let invalid = |reason: String| Error::InvalidVector {
        space: space.to_owned(),
        reason,
    };
    let mut writer = FlatIndexWriter::new(precision, dim).map_err(|e| invalid(e.to_string()))?;
    writer.reserve(rows.len());
    let blob_id = t.take(catalog::KEY_NEXT_BLOB, 1)?;
    let keys = t.vector_keys(space)?;
    for (key, staged) in rows {
        let row = writer
            .push(*key, staged.time_ms, staged.source, &staged.vector)
            .map_err(|e| invalid(format!("key {key}: {e}")))?;
        keys.insert(*key, (blob_id, row)).ctx("write vector_keys")?;
    }
    let count = u32::try_from(writer.len())
        .map_err(|_| invalid("more than u32::MAX vectors in one block".into()))?;
    let index = writer.finish().map_err(block_error(space, blob_id))?;
    let (kind, bytes, graph) =
        if rebuild && precision == Precision::F32 && count as usize >= GRAPH_MIN_ROWS {
            let graph = HnswIndex::build(index, HnswParams::default())
                .map_err(block_error(space, blob_id))?;
            let bytes = graph.to_bytes();
            (KIND_GRAPH, bytes, Some(Arc::new(graph)))
        } else {
            (KIND_FLAT, index.as_bytes().to_vec(), None)
        };
    t.vector_blocks
        .insert((space, blob_id), (count, kind, &[][..]))
        .ctx("write vector_blocks")?;
    Ok(NewBlock {
        blob_id,
        bytes,
        graph,
    })
}

/// A searchable view of one vector space as of a snapshot: its blocks, mapped and verified once
/// when the view is made, searched in place. Keep it for many queries.
pub struct StoredVectors {
    space: String,
    dim: usize,
    precision: Precision,
    blocks: Vec<StoredBlock>,
}

struct StoredBlock {
    id: u64,
    loaded: LoadedBlock,
    deleted: RoaringBitmap,
}

impl std::fmt::Debug for StoredVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredVectors")
            .field("space", &self.space)
            .field("dim", &self.dim)
            .field("precision", &self.precision)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

impl StoredVectors {
    /// The space's name.
    pub fn space(&self) -> &str {
        &self.space
    }

    /// Length of every vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How the vectors are stored.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Number of blocks (a rebuild by [`Store::compact_vectors`] makes it one).
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Number of blocks searched through an HNSW graph (built by a rebuild of a large f32
    /// space); the others are scanned exactly.
    pub fn graph_blocks(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| matches!(b.loaded, LoadedBlock::Graph(_)))
            .count()
    }

    /// Number of live vectors.
    pub fn len(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| {
                let rows = b.loaded.view().map_or(0, |v| v.len() as u64);
                rows.saturating_sub(b.deleted.len())
            })
            .sum()
    }

    /// Whether the space holds no live vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k` live vectors in `scope` with the highest dot product with `query`, best first
    /// (equal scores by ascending key): exactly `min(k, vectors in scope)` hits. Flat blocks are
    /// scanned exactly; a graph block is walked approximately (recall@10 ≥ 0.95 measured by
    /// bench `vectors`), or scanned when the scope leaves few of its rows.
    pub fn search(&self, query: &[f32], k: usize, scope: &VectorScope) -> Result<Vec<VectorHit>> {
        if query.len() != self.dim {
            return Err(Error::InvalidVector {
                space: self.space.clone(),
                reason: format!(
                    "the query has {} values, the space {}",
                    query.len(),
                    self.dim
                ),
            });
        }
        let mut hits = Vec::new();
        for block in &self.blocks {
            let view = block
                .loaded
                .view()
                .map_err(block_error(&self.space, block.id))?;
            let filter = scope.filter_for(&view);
            let found = match &block.loaded {
                LoadedBlock::Flat(_) => view.search(&block.deleted, query, k, &filter),
                LoadedBlock::Graph(graph) => {
                    // The catalog's deleted rows join the filter: the graph only knows those
                    // deleted when it was built (none).
                    let filter = if block.deleted.is_empty() {
                        filter
                    } else {
                        let mut live = RoaringBitmap::new();
                        live.insert_range(0..view.len() as u32);
                        filter.with_rows(live - &block.deleted)
                    };
                    graph.search(query, k, &filter)
                }
            }
            .map_err(block_error(&self.space, block.id))?;
            hits.extend(found.into_iter().map(|h| VectorHit {
                key: h.id,
                score: h.score,
            }));
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        hits.truncate(k);
        Ok(hits)
    }

    /// The precision `key`'s live vector is stored at (the space's, or coarser where
    /// forgetting re-quantized it).
    pub fn precision_of(&self, key: u64) -> Option<Precision> {
        self.blocks.iter().find_map(|block| {
            let view = block.loaded.view().ok()?;
            let row = view.ids().iter().position(|id| *id == key)?;
            (!block.deleted.contains(row as u32)).then(|| view.precision())
        })
    }

    /// Blob ids of the space's blocks.
    pub fn block_ids(&self) -> Vec<u64> {
        self.blocks.iter().map(|b| b.id).collect()
    }

    /// The precision of every live vector, by key.
    pub fn precisions(&self) -> HashMap<u64, Precision> {
        let mut out = HashMap::new();
        for block in &self.blocks {
            let Ok(view) = block.loaded.view() else {
                continue;
            };
            for (row, key) in view.ids().iter().enumerate() {
                if !block.deleted.contains(row as u32) {
                    out.insert(*key, view.precision());
                }
            }
        }
        out
    }

    /// The stored vector of `key` (as f32; i8 and f16 values converted back), if it is live.
    pub fn get(&self, key: u64) -> Option<Vec<f32>> {
        self.blocks.iter().find_map(|block| {
            let view = block.loaded.view().ok()?;
            let row = view.ids().iter().position(|id| *id == key)? as u32;
            if block.deleted.contains(row) {
                return None;
            }
            view.row_f32(row)
        })
    }
}

impl Snapshot {
    /// The vector space `space` as of this snapshot (`None` if it has never held a vector).
    /// Maps and checksum-verifies its blocks once; search the returned view many times.
    pub fn vectors(&self, space: &str) -> Result<Option<StoredVectors>> {
        self.vectors_with(space, None)
    }

    /// As [`vectors`](Snapshot::vectors), but a block whose bytes fail their checks is left
    /// out and its blob id listed second: a search answers from the rest and says what it
    /// skipped (`memdb repair` drops the block's keys, `memdb embed` encodes them again).
    pub fn readable_vectors(&self, space: &str) -> Result<(Option<StoredVectors>, Vec<u64>)> {
        let mut skipped = Vec::new();
        let vectors = self.vectors_with(space, Some(&mut skipped))?;
        Ok((vectors, skipped))
    }

    fn vectors_with(
        &self,
        space: &str,
        mut skipped: Option<&mut Vec<u64>>,
    ) -> Result<Option<StoredVectors>> {
        let spaces = match self.txn().open_table(catalog::VECTOR_SPACES) {
            Ok(table) => table,
            // A format-1 store has no vector tables yet.
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(Error::catalog("open vector_spaces")(e.into())),
        };
        let Some((dim, code)) = spaces
            .get(space)
            .ctx("read vector_spaces")?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        let precision = Precision::try_from_code(code).ok_or_else(|| {
            Error::bad_row(
                "vector_spaces",
                space,
                format!("unknown precision code {code}"),
            )
        })?;
        let table = self
            .txn()
            .open_table(catalog::VECTOR_BLOCKS)
            .ctx("open vector_blocks")?;
        let blobs = self.txn().open_table(catalog::BLOBS).ctx("open blobs")?;
        let mut blocks = Vec::new();
        for listed in listed_blocks(&table, space)? {
            let id = listed.id;
            let loaded = match load_block(&blobs, self.segments(), self.graphs(), space, &listed) {
                Ok(loaded) => loaded,
                Err(e) if e.is_damage() => match skipped.as_deref_mut() {
                    Some(skipped) => {
                        skipped.push(id);
                        continue;
                    }
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            };
            let view = loaded.view().map_err(block_error(space, id))?;
            if view.dim() != dim as usize
                || view.precision().bits_per_value() > precision.bits_per_value()
            {
                return Err(Error::bad_row(
                    "vector_blocks",
                    format!("{space}/{id}"),
                    format!(
                        "the block is {} × {}, its space {precision} × {dim}",
                        view.precision(),
                        view.dim()
                    ),
                ));
            }
            blocks.push(StoredBlock {
                id,
                loaded,
                deleted: listed.deleted,
            });
        }
        Ok(Some(StoredVectors {
            space: space.to_owned(),
            dim: dim as usize,
            precision,
            blocks,
        }))
    }

    /// Keys with a live vector in `space` (empty if the space does not exist).
    pub fn vector_keys(&self, space: &str) -> Result<RoaringTreemap> {
        let mut set = RoaringTreemap::new();
        for_each_key(self.txn(), space, |key, _| {
            set.insert(key);
        })?;
        Ok(set)
    }

    /// Names of the store's vector spaces.
    pub fn vector_spaces(&self) -> Result<Vec<String>> {
        let spaces = match self.txn().open_table(catalog::VECTOR_SPACES) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(Error::catalog("open vector_spaces")(e.into())),
        };
        let mut names = Vec::with_capacity(spaces.len().ctx("count vector_spaces")? as usize);
        for row in spaces.iter().ctx("scan vector_spaces")? {
            let (name, _) = row.ctx("scan vector_spaces")?;
            names.push(name.value().to_owned());
        }
        Ok(names)
    }
}

/// Calls `f(key, (block, row))` for every key of `space` in key order: from the space's own
/// table (format 12), or in a store of format 11 or older not yet written to by this build,
/// from the shared `vector_keys`. Nothing where the space has no keys.
pub(crate) fn for_each_key(
    txn: &redb::ReadTransaction,
    space: &str,
    mut f: impl FnMut(u64, (u64, u32)),
) -> Result<()> {
    let name = catalog::vector_key_table_name(space);
    if let Some(table) = catalog::open_optional(txn, catalog::vector_key_table(&name))? {
        for row in table.iter().ctx("scan vector keys")? {
            let (key, at) = row.ctx("scan vector keys")?;
            f(key.value(), at.value());
        }
    } else if let Some(shared) = catalog::open_optional(txn, catalog::VECTOR_KEYS)? {
        for row in shared
            .range((space, 0u64)..=(space, u64::MAX))
            .ctx("scan vector_keys")?
        {
            let (key, at) = row.ctx("scan vector_keys")?;
            f(key.value().1, at.value());
        }
    }
    Ok(())
}

/// Cross-checks the vector tables: every listed block is a readable vector blob of its space's
/// shape with the row count the catalog says; every key points at a live row of a listed block
/// that holds that key; every live row has its key. Returns one line per problem.
pub(crate) fn check_vectors(snapshot: &Snapshot) -> Result<Vec<(bool, String)>> {
    let mut problems = Vec::new();
    let Some(listed) = catalog::open_optional(snapshot.txn(), catalog::VECTOR_BLOCKS)? else {
        return Ok(problems);
    };
    for space in snapshot.vector_spaces()? {
        let vectors = match snapshot.vectors(&space) {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => {
                // A block that does not read: damage to its bytes, not to the catalog's rows.
                problems.push((!e.is_damage(), format!("vector space `{space}`: {e}")));
                continue;
            }
        };
        let rows_listed: BTreeMap<u64, u32> = listed_blocks(&listed, &space)?
            .into_iter()
            .map(|b| (b.id, b.rows))
            .collect();
        let mut live_rows = 0u64;
        for block in &vectors.blocks {
            let view = block.loaded.view().map_err(block_error(&space, block.id))?;
            if rows_listed.get(&block.id).copied() != Some(view.len() as u32) {
                problems.push((
                    true,
                    format!(
                        "vector space `{space}`, block {}: {} rows, the catalog says {:?}",
                        block.id,
                        view.len(),
                        rows_listed.get(&block.id)
                    ),
                ));
            }
            live_rows += (view.len() as u64).saturating_sub(block.deleted.len());
        }
        let mut key_count = 0u64;
        for_each_key(snapshot.txn(), &space, |key, (block_id, at)| {
            key_count += 1;
            let holds_key = vectors
                .blocks
                .iter()
                .find(|b| b.id == block_id)
                .is_some_and(|b| {
                    !b.deleted.contains(at) && b.loaded.view().is_ok_and(|v| v.id(at) == Some(key))
                });
            if !holds_key {
                problems.push((true, format!(
                    "vector space `{space}`: key {key} points at block {block_id} row {at}, which does not hold it live"
                )));
            }
        })?;
        if key_count != live_rows {
            problems.push((
                true,
                format!("vector space `{space}`: {key_count} keys for {live_rows} live rows"),
            ));
        }
    }
    Ok(problems)
}

impl Store {
    /// Rewrites the live vectors of each space that needs it into one block (a space with
    /// deleted rows making up at least a tenth of it, or with many blocks; with `force`, any
    /// space with a deleted row or more than one block), and any f32 space of at least
    /// [`FLAT_BELOW_ROWS`] live rows that has no HNSW graph yet: its new block is a graph block
    /// (SPEC.md §5.2), whose build takes about 25 s per 100,000 rows on 2 cores. Returns the
    /// spaces rewritten. The old blocks become dead bytes, reclaimed by the next segment
    /// compaction.
    pub fn compact_vectors(&self, force: bool) -> Result<Vec<String>> {
        let snapshot = self.snapshot()?;
        let mut due = Vec::new();
        for space in snapshot.vector_spaces()? {
            let table = snapshot
                .txn()
                .open_table(catalog::VECTOR_BLOCKS)
                .ctx("open vector_blocks")?;
            let blocks = listed_blocks(&table, &space)?;
            let rows: u64 = blocks.iter().map(|b| u64::from(b.rows)).sum();
            let deleted: u64 = blocks.iter().map(|b| b.deleted.len()).sum();
            let f32_space = snapshot
                .txn()
                .open_table(catalog::VECTOR_SPACES)
                .ctx("open vector_spaces")?
                .get(space.as_str())
                .ctx("read vector_spaces")?
                .is_some_and(|v| v.value().1 == Precision::F32.code());
            // A large f32 space without a graph gets one.
            let wants_graph = f32_space
                && rows.saturating_sub(deleted) >= GRAPH_MIN_ROWS as u64
                && !blocks.iter().any(|b| b.kind == KIND_GRAPH);
            let needed = wants_graph
                || if force {
                    deleted > 0 || blocks.len() > 1
                } else {
                    blocks.len() >= REBUILD_BLOCKS
                        || (rows > 0 && deleted as f64 >= REBUILD_DELETED_FRACTION * rows as f64)
                };
            if needed {
                due.push(space);
            }
        }
        drop(snapshot);
        if due.is_empty() {
            return Ok(due);
        }
        let mut batch = self.batch();
        for space in &due {
            batch.rebuild_vectors(space);
        }
        batch.commit()?;
        Ok(due)
    }
}

/// The staged changes of `space`, created empty on first use.
pub fn changes<'a>(staged: &'a mut StagedVectors, space: &str) -> &'a mut SpaceChanges {
    staged.entry(space.to_owned()).or_default()
}
