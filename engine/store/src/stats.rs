//! Store statistics: counts and bytes by kind, by source and by segment.

use memdb_formats::item::Source;
use redb::{ReadableTable, ReadableTableMetadata};

use super::Store;
use super::catalog::{self, BlobKind, BlobLoc, ItemLoc, SegmentState};
use crate::error::{CatalogResult, Error, Result};

/// One segment's size and dead bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentStats {
    /// Segment id.
    pub id: u64,
    /// Whether it is sealed (immutable).
    pub sealed: bool,
    /// File bytes.
    pub bytes: u64,
    /// Bytes of deleted or superseded entries, reclaimable by compaction.
    pub dead_bytes: u64,
}

/// One catalog table's share of the catalog file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogTableStats {
    /// The table's name (SPEC.md §5).
    pub name: String,
    /// Rows.
    pub rows: u64,
    /// Bytes of its keys and values.
    pub stored_bytes: u64,
    /// Bytes of the B-tree pages holding them (leaves and branches): stored bytes plus each
    /// page's index and free space.
    pub page_bytes: u64,
}

/// What a store holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live items.
    pub items: u64,
    /// Live items per source.
    pub items_by_source: Vec<(Source, u64)>,
    /// Bytes of live item records (framed).
    pub item_bytes: u64,
    /// Live blobs per kind: (kind, count, payload bytes).
    pub blobs_by_kind: Vec<(BlobKind, u64, u64)>,
    /// Every live segment.
    pub segments: Vec<SegmentStats>,
    /// Bytes of all segment files.
    pub segment_bytes: u64,
    /// Bytes of deleted or superseded entries.
    pub dead_bytes: u64,
    /// Bytes of the catalog file.
    pub catalog_bytes: u64,
    /// Every catalog table, largest first (the rest of the file is free pages and redb's
    /// own allocator state).
    pub catalog_tables: Vec<CatalogTableStats>,
    /// Scrapbook pages per forgetting stage: (stage, pages, pages stored as pixels, bytes of
    /// their JPEG parts), stages in order.
    pub pages_by_stage: Vec<(u8, u64, u64, u64)>,
    /// Whether the store is encrypted (SPEC.md §3.7). Its files are then 40/4096 longer on
    /// disk than the byte counts above, which count pages as the store reads them.
    pub encrypted: bool,
}

impl Stats {
    /// Live blobs.
    pub fn blobs(&self) -> u64 {
        self.blobs_by_kind.iter().map(|b| b.1).sum()
    }

    /// Bytes of live blob payloads.
    pub fn blob_bytes(&self) -> u64 {
        self.blobs_by_kind.iter().map(|b| b.2).sum()
    }

    /// Segment bytes not dead: live payloads plus headers, padding, footers and trailers.
    pub fn live_bytes(&self) -> u64 {
        self.segment_bytes.saturating_sub(self.dead_bytes)
    }

    /// Everything on disk.
    pub fn total_bytes(&self) -> u64 {
        self.segment_bytes + self.catalog_bytes
    }
}

impl Store {
    /// Counts and sizes as of the last commit.
    pub fn stats(&self) -> Result<Stats> {
        let snapshot = self.snapshot()?;
        let txn = snapshot.txn();
        let mut stats = Stats {
            encrypted: self.is_encrypted(),
            ..Stats::default()
        };
        let items = txn.open_table(catalog::ITEMS).ctx("open items")?;
        stats.items = items.len().ctx("count items")?;
        let mut per_source = [0u64; 256];
        for row in items.iter().ctx("scan items")? {
            let loc = ItemLoc::decode(row.ctx("scan items")?.1.value());
            stats.item_bytes += u64::from(loc.frame_len);
            per_source[usize::from(loc.source)] += 1;
        }
        stats.items_by_source = Source::ALL
            .iter()
            .map(|s| (*s, per_source[usize::from(s.code())]))
            .collect();
        let mut per_kind = [(0u64, 0u64); BlobKind::ALL.len()];
        for row in txn
            .open_table(catalog::BLOBS)
            .ctx("open blobs")?
            .iter()
            .ctx("scan blobs")?
        {
            let (id, raw) = row.ctx("scan blobs")?;
            let loc = BlobLoc::decode(id.value(), raw.value())?;
            if let Some(slot) = per_kind.get_mut(loc.kind as usize) {
                slot.0 += 1;
                slot.1 += loc.len;
            }
        }
        stats.blobs_by_kind = BlobKind::ALL
            .iter()
            .map(|k| (*k, per_kind[*k as usize].0, per_kind[*k as usize].1))
            .collect();
        let rows = catalog::segment_rows(&txn.open_table(catalog::SEGMENTS).ctx("open segments")?)?;
        for (id, seg) in rows {
            stats.segment_bytes += seg.len;
            stats.dead_bytes += seg.dead_bytes;
            stats.segments.push(SegmentStats {
                id,
                sealed: seg.state == SegmentState::Sealed,
                bytes: seg.len,
                dead_bytes: seg.dead_bytes,
            });
        }
        let mut by_stage: std::collections::BTreeMap<u8, (u64, u64, u64)> = Default::default();
        for row in snapshot.page_rows()?.values() {
            let slot = by_stage.entry(row.stage).or_default();
            slot.0 += 1;
            if !row.parts.is_empty() {
                slot.1 += 1;
            }
            for &part in &row.parts {
                slot.2 += snapshot.blob_info(part)?.map_or(0, |i| i.len);
            }
        }
        stats.pages_by_stage = by_stage
            .into_iter()
            .map(|(stage, (pages, pixels, bytes))| (stage, pages, pixels, bytes))
            .collect();
        stats.catalog_tables = catalog_table_stats(txn)?;
        let catalog_path = &self.inner.paths.catalog;
        stats.catalog_bytes = std::fs::metadata(catalog_path)
            .map_err(Error::io("stat", catalog_path))?
            .len();
        Ok(stats)
    }
}

/// Rows and bytes of every table in the catalog, largest first.
fn catalog_table_stats(txn: &redb::ReadTransaction) -> Result<Vec<CatalogTableStats>> {
    // redb's page size (its default, which the store keeps).
    const CATALOG_PAGE_BYTES: u64 = 4096;
    let mut tables = Vec::new();
    for handle in txn.list_tables().ctx("list catalog tables")? {
        let name = redb::TableHandle::name(&handle).to_owned();
        let table = txn.open_untyped_table(handle).ctx("open catalog table")?;
        let s = table.stats().ctx("catalog table stats")?;
        tables.push(CatalogTableStats {
            rows: table.len().ctx("count catalog table")?,
            stored_bytes: s.stored_bytes(),
            page_bytes: (s.leaf_pages() + s.branch_pages()) * CATALOG_PAGE_BYTES,
            name,
        });
    }
    tables.sort_by(|a, b| b.page_bytes.cmp(&a.page_bytes).then(a.name.cmp(&b.name)));
    Ok(tables)
}
