//! The `pages` catalog table as the store sees it: a day's page row (forgetting stage, JPEG
//! quality, scale, the blob ids of its parts, its layout bytes) read and written as rows. What
//! a page shows, how it is drawn and when it is composed belong to the scrapbook; the store
//! only reads these rows to check, count and salvage the blobs they reference.

use std::collections::BTreeMap;

use redb::ReadableTable;

use super::catalog::PAGES;
use super::read::Snapshot;
use crate::error::{CatalogResult, Error, Result};

/// A page's catalog row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRow {
    /// The forgetting stage the page was last encoded at (0: as drawn).
    pub stage: u8,
    /// Its JPEG quality.
    pub quality: u8,
    /// Its scale against the drawn page, in thousandths.
    pub scale_milli: u16,
    /// The blob ids of its parts, in order.
    pub parts: Vec<u64>,
    /// The layout of what it shows (the scrapbook's own encoding).
    pub layout: Vec<u8>,
}

use crate::catalog::PageValue as RawPageRow;

impl PageRow {
    /// The row of `day` as the catalog stores it.
    pub fn decode(day: &str, raw: RawPageRow<'_>) -> Result<PageRow> {
        let (stage, quality, scale_milli, parts, layout) = raw;
        let parts = memdb_formats::u64_list("page parts", parts)
            .map_err(|e| Error::bad_row("pages", day, e))?;
        Ok(PageRow {
            stage,
            quality,
            scale_milli,
            parts,
            layout: layout.to_vec(),
        })
    }

    /// The scale as a fraction of the page's size at composition.
    pub fn scale(&self) -> f32 {
        f32::from(self.scale_milli) / 1000.0
    }
}

/// Writes (or with `None` removes) a day's row; returns the blob ids of the parts it had.
pub fn replace_page_row(
    txn: &redb::WriteTransaction,
    day: &str,
    row: Option<&PageRow>,
) -> Result<Vec<u64>> {
    let mut table = txn.open_table(PAGES).ctx("open pages")?;
    let old = match row {
        Some(row) => {
            let parts = memdb_formats::u64_list_bytes(&row.parts);
            table
                .insert(
                    day,
                    (
                        row.stage,
                        row.quality,
                        row.scale_milli,
                        parts.as_slice(),
                        row.layout.as_slice(),
                    ),
                )
                .ctx("write pages")?
                .map(|old| PageRow::decode(day, old.value()))
        }
        None => table
            .remove(day)
            .ctx("remove pages")?
            .map(|old| PageRow::decode(day, old.value())),
    };
    Ok(old.transpose()?.map(|r| r.parts).unwrap_or_default())
}

/// The pages table as of `snapshot`, if the store has one.
pub fn open_pages(
    snapshot: &Snapshot,
) -> Result<Option<redb::ReadOnlyTable<&'static str, RawPageRow<'static>>>> {
    crate::catalog::open_optional(snapshot.txn(), PAGES)
}

impl Snapshot {
    /// Every page row, by day.
    pub fn page_rows(&self) -> Result<BTreeMap<String, PageRow>> {
        let Some(table) = open_pages(self)? else {
            return Ok(BTreeMap::new());
        };
        let mut rows = BTreeMap::new();
        for row in table.iter().ctx("scan pages")? {
            let (day, raw) = row.ctx("scan pages")?;
            let day = day.value().to_owned();
            let decoded = PageRow::decode(&day, raw.value())?;
            rows.insert(day, decoded);
        }
        Ok(rows)
    }
}
