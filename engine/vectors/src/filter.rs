//! Search filters, applied during the scan: an allow-list of rows, a time range and a set of
//! sources, checked against the per-row columns stored next to the vectors.
//!
//! The scan never scores a row the filter rejects, so a filtered top-k returns exactly
//! `min(k, matching rows)` hits however selective the filter is (unlike post-filtering the top
//! k of an unfiltered search). The allow-list and the deleted-rows bitmap are combined into one
//! candidate set before the scan; the time and source tests run per candidate row.

use std::ops::Range;

use roaring::RoaringBitmap;

use crate::layout::FlatView;

/// Which rows a search may return. The default matches every (non-deleted) row; each `with_*`
/// narrows it, and a row must pass every test given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Allowed row numbers; `None` allows all.
    rows: Option<RoaringBitmap>,
    /// Allowed times, unix seconds, `start..end`.
    time: Option<Range<i64>>,
    /// Allowed source codes as a 256-bit set; `None` allows all.
    sources: Option<[u64; 4]>,
}

impl Filter {
    /// A filter that matches every row.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows only rows in `rows` (row numbers, not item ids); intersects with an earlier list.
    pub fn with_rows(mut self, rows: RoaringBitmap) -> Self {
        self.rows = Some(match self.rows.take() {
            Some(earlier) => earlier & rows,
            None => rows,
        });
        self
    }

    /// Allows only rows whose time (unix seconds) lies in `range` (start inclusive, end
    /// exclusive); intersects with an earlier range.
    pub fn with_time(mut self, range: Range<i64>) -> Self {
        self.time = Some(match self.time.take() {
            Some(earlier) => earlier.start.max(range.start)..earlier.end.min(range.end),
            None => range,
        });
        self
    }

    /// Adds `source` to the allowed sources (the first call restricts the search to it).
    pub fn with_source(mut self, source: u8) -> Self {
        let set = self.sources.get_or_insert([0; 4]);
        set[usize::from(source / 64)] |= 1 << (source % 64);
        self
    }

    /// The allow-list of rows, if one was given.
    pub(crate) fn allowed_rows(&self) -> Option<&RoaringBitmap> {
        self.rows.as_ref()
    }

    /// Whether the filter restricts anything (a default filter matches every row).
    pub(crate) fn restricts(&self) -> bool {
        self.rows.is_some() || self.tests_columns()
    }

    /// Whether the per-row columns must be read at all.
    pub(crate) fn tests_columns(&self) -> bool {
        self.time.is_some() || self.sources.is_some()
    }

    /// Whether a row with this time and source passes the column tests.
    #[inline]
    pub(crate) fn columns_match(&self, time: i64, source: u8) -> bool {
        self.time.as_ref().is_none_or(|r| r.contains(&time))
            && self
                .sources
                .as_ref()
                .is_none_or(|s| s[usize::from(source / 64)] & (1 << (source % 64)) != 0)
    }

    /// Whether `row` of `view` passes the column tests (the row must exist).
    #[inline]
    pub(crate) fn row_matches(&self, view: &FlatView<'_>, row: usize) -> bool {
        !self.tests_columns() || self.columns_match(view.times[row], view.sources[row])
    }

    /// The rows to visit: the allow-list (or every row) minus the deleted rows, limited to the
    /// `rows` rows of the block. Column tests are still to be applied.
    pub(crate) fn candidates(&self, rows: usize, deleted: &RoaringBitmap) -> Candidates {
        let end = rows as u32;
        match &self.rows {
            None if deleted.is_empty() || deleted.min().is_none_or(|m| m >= end) => {
                Candidates::All(end)
            }
            None => {
                let mut all = RoaringBitmap::new();
                all.insert_range(0..end);
                Candidates::Rows(all - deleted)
            }
            Some(allowed) => {
                let mut set = allowed - deleted;
                set.remove_range(end..);
                Candidates::Rows(set)
            }
        }
    }
}

/// The rows a scan visits before column tests.
#[derive(Clone, Debug)]
pub(crate) enum Candidates {
    /// Rows `0..n`.
    All(u32),
    /// Exactly these rows.
    Rows(RoaringBitmap),
}

impl Candidates {
    /// Calls `visit` on each candidate row of `view` that passes `filter`'s column tests, in
    /// ascending order.
    #[inline]
    pub(crate) fn for_each(
        &self,
        view: &FlatView<'_>,
        filter: &Filter,
        mut visit: impl FnMut(usize),
    ) {
        let columns = filter.tests_columns();
        match self {
            Candidates::All(n) => {
                for row in 0..*n as usize {
                    if !columns || filter.columns_match(view.times[row], view.sources[row]) {
                        visit(row);
                    }
                }
            }
            Candidates::Rows(rows) => {
                for row in rows.iter() {
                    let row = row as usize;
                    if filter.row_matches(view, row) {
                        visit(row);
                    }
                }
            }
        }
    }

    /// `Some(n)` when all `n` rows pass (no row list, no column test), so a scan may walk
    /// `0..n` without asking per row.
    pub(crate) fn every_row(&self, filter: &Filter) -> Option<usize> {
        match self {
            Candidates::All(n) if !filter.tests_columns() => Some(*n as usize),
            _ => None,
        }
    }

    /// The passing rows as a list, for scans that visit them many times (batched search);
    /// `None` when every row passes (the scan then walks `0..n` directly).
    pub(crate) fn materialize(&self, view: &FlatView<'_>, filter: &Filter) -> Option<Vec<u32>> {
        if let Candidates::All(_) = self
            && !filter.tests_columns()
        {
            return None;
        }
        let mut out = Vec::new();
        self.for_each(view, filter, |row| out.push(row as u32));
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_tests() {
        let f = Filter::new()
            .with_time(10..20)
            .with_source(3)
            .with_source(200);
        assert!(f.columns_match(10, 3) && f.columns_match(19, 200));
        assert!(!f.columns_match(20, 3) && !f.columns_match(9, 3) && !f.columns_match(15, 4));
        let narrowed = f.with_time(15..30);
        assert!(!narrowed.columns_match(12, 3) && narrowed.columns_match(15, 3));
        assert!(Filter::new().columns_match(i64::MIN, 255));
        assert!(!Filter::new().tests_columns());
    }

    #[test]
    fn candidates_drop_deleted_and_out_of_range_rows() {
        let deleted: RoaringBitmap = [2u32, 4].into_iter().collect();
        let allowed: RoaringBitmap = [1u32, 2, 3, 9, 50].into_iter().collect();
        match Filter::new().with_rows(allowed).candidates(10, &deleted) {
            Candidates::Rows(r) => assert_eq!(r.iter().collect::<Vec<_>>(), [1, 3, 9]),
            Candidates::All(_) => panic!("expected rows"),
        }
        match Filter::new().candidates(5, &deleted) {
            Candidates::Rows(r) => assert_eq!(r.iter().collect::<Vec<_>>(), [0, 1, 3]),
            Candidates::All(_) => panic!("expected rows"),
        }
        assert!(matches!(
            Filter::new().candidates(2, &deleted),
            Candidates::All(2)
        ));
        assert!(matches!(
            Filter::new().candidates(7, &RoaringBitmap::new()),
            Candidates::All(7)
        ));
    }
}
