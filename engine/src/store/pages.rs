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
pub(crate) struct PageRow {
    pub(crate) stage: u8,
    pub(crate) quality: u8,
    pub(crate) scale_milli: u16,
    pub(crate) parts: Vec<u64>,
    pub(crate) layout: Vec<u8>,
}

use crate::store::catalog::PageValue as RawPageRow;

impl PageRow {
    pub(crate) fn decode(day: &str, raw: RawPageRow<'_>) -> Result<PageRow> {
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
    pub(crate) fn scale(&self) -> f32 {
        f32::from(self.scale_milli) / 1000.0
    }
}

/// Writes (or with `None` removes) a day's row; returns the blob ids of the parts it had.
pub(crate) fn replace_page_row(
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

pub(crate) fn open_pages(
    snapshot: &Snapshot,
) -> Result<Option<redb::ReadOnlyTable<&'static str, RawPageRow<'static>>>> {
    crate::store::catalog::open_optional(snapshot.txn(), PAGES)
}

impl Snapshot {
    pub(crate) fn page_rows(&self) -> Result<BTreeMap<String, PageRow>> {
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
