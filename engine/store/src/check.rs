//! `check()`: verifies every checksum and every catalog reference, reporting each problem
//! with its segment, page and offset.
//!
//! It re-reads every byte of every live segment (headers, entries, padding, footer, trailer),
//! every item record and blob through the catalog, and cross-checks the indexes against the
//! items table. It never stops at the first problem, and never modifies the store.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use memdb_formats::segment::{
    ENTRY_HEADER_BYTES, EntryHeader, EntryKind, FooterRecord, PAGE, SEGMENT_HEADER_BYTES,
    SegmentHeader, TRAILER_BYTES, Trailer, decode_footer,
};
use redb::{ReadableTable, ReadableTableMetadata};

use super::Store;
use super::catalog::{self, BlobKind, BlobLoc, ItemLoc, SegmentRow, SegmentState};
use super::read::{BlobInfo, read_blob, read_record};
use super::segment_file::SegmentFile;
use crate::error::{CatalogResult, Error, Result};

/// One thing `check` found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Segment concerned, if any.
    pub segment: Option<u64>,
    /// File offset within it, if known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub what: String,
}

impl Problem {
    /// Page of the segment file the problem is on, if known.
    pub fn page(&self) -> Option<u64> {
        self.offset.map(|o| o / PAGE as u64)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.segment, self.offset) {
            (Some(s), Some(o)) => write!(
                f,
                "segment {s:016x} page {} offset {o}: {}",
                o / PAGE as u64,
                self.what
            ),
            (Some(s), None) => write!(f, "segment {s:016x}: {}", self.what),
            _ => f.write_str(&self.what),
        }
    }
}

/// What damage makes unreadable: exactly which items, versions, blobs, vectors and pages
/// are lost (what `repair` cannot save), as opposed to every problem found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Damage {
    /// Items whose current record cannot be read.
    pub items: Vec<u64>,
    /// Earlier versions (item id, op sequence) that cannot be read.
    pub versions: Vec<(u64, u64)>,
    /// Blobs that cannot be read (photo originals, page parts, vector blocks, …).
    pub blobs: Vec<BlobInfo>,
    /// Vectors lost with their blocks: (space, key).
    pub vectors: Vec<(String, u64)>,
    /// Days whose page has a part that cannot be read.
    pub pages: Vec<String>,
}

impl Damage {
    /// Whether nothing is lost.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
            && self.versions.is_empty()
            && self.blobs.is_empty()
            && self.vectors.is_empty()
            && self.pages.is_empty()
    }
}

/// What `check` verified and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Segments verified.
    pub segments: u64,
    /// Entries verified.
    pub entries: u64,
    /// Items verified.
    pub items: u64,
    /// Blobs verified.
    pub blobs: u64,
    /// Segment bytes read and verified.
    pub bytes: u64,
    /// Everything found wrong.
    pub problems: Vec<Problem>,
    /// What the problems make unreadable.
    pub damage: Damage,
    /// The catalog itself cannot be read (the rest of the report is then empty).
    pub catalog_damaged: bool,
    /// The catalog reads but some of its rows disagree with sound segment bytes or with each
    /// other (a row that damage changed): a repair in place would trust them, so `repair`
    /// rebuilds the store from its segments instead.
    pub catalog_inconsistent: bool,
}

impl CheckReport {
    /// Whether nothing was found wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, segment: Option<u64>, offset: Option<u64>, what: impl Into<String>) {
        self.problems.push(Problem {
            segment,
            offset,
            what: what.into(),
        });
    }

    /// A problem of the catalog's rows, not of segment bytes.
    fn catalog_problem(
        &mut self,
        segment: Option<u64>,
        offset: Option<u64>,
        what: impl Into<String>,
    ) {
        self.catalog_inconsistent = true;
        self.problem(segment, offset, what);
    }
}

/// An entry found by walking a segment: its first page, kind and payload range, and whether
/// its payload and padding verified (an entry whose header is sound but whose payload is
/// damaged still has a known extent: item frames inside it carry their own CRCs).
#[derive(Debug, Clone, Copy)]
struct WalkedEntry {
    kind: EntryKind,
    payload_start: u64,
    payload_end: u64,
}

/// What is wrong with an entry: its header (extent unknown) or its body (extent known).
enum EntryDamage {
    /// The header does not verify: the walk must find the next entry by scanning.
    Header(u64, String),
    /// The header verifies but the payload or its padding does not; the entry ends at `.2`.
    Body(EntryHeader, u64, (u64, String)),
}

/// Decodes and checks the header of the entry at `offset` within `[.., end)`; returns it with
/// the entry's end.
fn entry_header(
    map: &[u8],
    segment: u64,
    offset: u64,
    end: u64,
) -> Result<(EntryHeader, u64), (u64, String)> {
    if offset + ENTRY_HEADER_BYTES as u64 > end {
        return Err((
            offset,
            format!("entry header would run past the end at {end}"),
        ));
    }
    let header = EntryHeader::decode(&map[offset as usize..], offset)
        .map_err(|e| (offset, e.to_string()))?;
    if header.segment_id != segment {
        return Err((
            offset,
            format!("entry belongs to segment {:016x}", header.segment_id),
        ));
    }
    let entry_end = offset.saturating_add(header.pages().saturating_mul(PAGE as u64));
    if entry_end > end {
        return Err((
            offset,
            format!(
                "entry of {} payload bytes runs past the end at {end}",
                header.payload_len
            ),
        ));
    }
    Ok((header, entry_end))
}

/// Verifies the entry at `offset` (header, payload CRC, zero padding) within `[.., end)`.
fn verify_entry(
    map: &[u8],
    segment: u64,
    offset: u64,
    end: u64,
) -> Result<(EntryHeader, u64), EntryDamage> {
    let (header, entry_end) = entry_header(map, segment, offset, end)
        .map_err(|(at, why)| EntryDamage::Header(at, why))?;
    let payload_start = offset + ENTRY_HEADER_BYTES as u64;
    let payload_end = payload_start + header.payload_len;
    if let Err(e) = header.verify_payload(
        &map[payload_start as usize..payload_end as usize],
        payload_start,
    ) {
        return Err(EntryDamage::Body(
            header,
            entry_end,
            (payload_start, e.to_string()),
        ));
    }
    if let Some(pos) = map[payload_end as usize..entry_end as usize]
        .iter()
        .position(|&b| b != 0)
    {
        return Err(EntryDamage::Body(
            header,
            entry_end,
            (
                payload_end + pos as u64,
                "padding after the payload is not zero".into(),
            ),
        ));
    }
    Ok((header, entry_end))
}

/// The first page boundary after `offset` (and before `end`) where a sound entry header of
/// `segment` starts: where a walk resumes after a header it cannot read.
fn next_entry_start(map: &[u8], segment: u64, offset: u64, end: u64) -> Option<u64> {
    let page = PAGE as u64;
    let mut at = (offset / page + 1) * page;
    while at < end {
        if entry_header(map, segment, at, end).is_ok() {
            return Some(at);
        }
        at += page;
    }
    None
}

/// Walks the entries of `[PAGE, end)` of an open segment, verifying each; returns the entries
/// in order and whether any was damaged. A damaged entry is still listed (so an appended
/// footer describes the file); a header it cannot read is skipped by scanning for the next.
pub(crate) fn walk_entries(file: &SegmentFile, end: u64) -> Result<(Vec<FooterRecord>, bool)> {
    let (map, bad_pages) = file.bytes_by_page(0..end)?;
    let mut out = Vec::new();
    let mut damaged = !bad_pages.is_empty();
    let mut offset = PAGE as u64;
    while offset < end {
        let (header, next) = match verify_entry(&map, file.id(), offset, end) {
            Ok(found) => found,
            Err(EntryDamage::Body(header, next, _)) => {
                damaged = true;
                (header, next)
            }
            Err(EntryDamage::Header(..)) => {
                damaged = true;
                match next_entry_start(&map, file.id(), offset, end) {
                    Some(next) => {
                        offset = next;
                        continue;
                    }
                    None => break,
                }
            }
        };
        out.push(FooterRecord {
            page: offset / PAGE as u64,
            payload_len: header.payload_len,
            payload_crc: header.payload_crc,
            kind: header.kind,
        });
        offset = next;
    }
    Ok((out, damaged))
}

/// Whether segment `file`, as `row` describes it, verifies whole: every page, entry, footer
/// and trailer (what a compaction that must not trip over damage rewrites).
/// An error reading it that is not damage (an I/O error) is returned, not taken for damage.
pub(super) fn segment_is_sound(file: &SegmentFile, row: &SegmentRow) -> Result<bool> {
    file.file_len()?;
    if let Err(e) = file.bytes_by_page(0..row.len)
        && !e.is_damage()
    {
        return Err(e);
    }
    let mut report = CheckReport::default();
    check_segment(&mut report, file, row, false);
    Ok(report.problems.is_empty())
}

fn check_segment(
    report: &mut CheckReport,
    file: &SegmentFile,
    row: &SegmentRow,
    writer_elsewhere: bool,
) -> Vec<WalkedEntry> {
    let id = file.id();
    let entries = Vec::new();
    let file_len = match file.file_len() {
        Ok(l) => l,
        Err(e) => {
            report.problem(Some(id), None, e.to_string());
            return entries;
        }
    };
    // Beside a running writer, an open segment grows past what this snapshot committed.
    let growing = writer_elsewhere && row.state == SegmentState::Open && file_len > row.len;
    if file_len != row.len && !growing {
        report.problem(
            Some(id),
            None,
            format!("file is {file_len} bytes, the catalog says {}", row.len),
        );
        if file_len < row.len {
            return entries;
        }
    }
    if row.len < PAGE as u64 || !row.len.is_multiple_of(PAGE as u64) {
        report.problem(
            Some(id),
            None,
            format!(
                "length {} is not a positive multiple of the page size",
                row.len
            ),
        );
        return entries;
    }
    let map = match file.bytes_by_page(0..row.len) {
        Ok((map, bad_pages)) => {
            for page in bad_pages {
                report.problem(
                    Some(id),
                    Some(page * PAGE as u64),
                    format!("page {page} fails its tag (the entries on it follow)"),
                );
            }
            map
        }
        Err(e) => {
            report.problem(Some(id), None, e.to_string());
            return entries;
        }
    };
    check_segment_bytes(report, &map[..row.len as usize], id, row)
}

/// Verifies the bytes of segment `id` as `row` describes them: header page, every entry, and
/// when sealed the footer, trailer and their agreement. `map` is exactly `row.len` bytes.
fn check_segment_bytes(
    report: &mut CheckReport,
    map: &[u8],
    id: u64,
    row: &SegmentRow,
) -> Vec<WalkedEntry> {
    let mut entries = Vec::new();
    report.segments += 1;
    report.bytes += row.len;
    let mut padding = SEGMENT_HEADER_BYTES;
    match SegmentHeader::decode(&map[..PAGE]) {
        Ok(h) if h.segment_id == id => padding = h.padding_start(),
        Ok(h) => report.problem(
            Some(id),
            Some(0),
            format!("header names segment {:016x}", h.segment_id),
        ),
        Err(e) => report.problem(Some(id), Some(0), e.to_string()),
    }
    if let Some(pos) = map[padding..PAGE].iter().position(|&b| b != 0) {
        report.problem(
            Some(id),
            Some((padding + pos) as u64),
            "header page padding is not zero",
        );
    }

    // Sealed: the trailer and footer say where the data ends and list its entries.
    let mut data_end = row.len;
    let mut footer: Option<Vec<FooterRecord>> = None;
    if row.state == SegmentState::Sealed {
        let trailer_at = row.len - PAGE as u64;
        match Trailer::decode(&map[trailer_at as usize..], trailer_at) {
            Err(e) => report.problem(Some(id), Some(trailer_at), e.to_string()),
            Ok(t) => {
                if t.segment_id != id
                    || t.total_pages * PAGE as u64 != row.len
                    || t.footer_page * PAGE as u64 >= trailer_at
                {
                    report.problem(
                        Some(id),
                        Some(trailer_at),
                        format!("trailer {t:?} does not fit the segment"),
                    );
                } else {
                    let footer_at = t.footer_page * PAGE as u64;
                    data_end = footer_at;
                    match verify_entry(map, id, footer_at, trailer_at) {
                        Err(
                            EntryDamage::Header(at, what) | EntryDamage::Body(_, _, (at, what)),
                        ) => report.problem(Some(id), Some(at), format!("footer: {what}")),
                        Ok((h, end)) if h.kind != EntryKind::Footer || end != trailer_at => report
                            .problem(
                                Some(id),
                                Some(footer_at),
                                "footer entry is not a footer ending at the trailer",
                            ),
                        Ok((h, _)) => {
                            let start = footer_at as usize + ENTRY_HEADER_BYTES;
                            match decode_footer(&map[start..start + h.payload_len as usize]) {
                                Ok(list) if list.len() as u64 == u64::from(t.entry_count) => {
                                    footer = Some(list)
                                }
                                Ok(_) => report.problem(
                                    Some(id),
                                    Some(footer_at),
                                    "footer entry count differs from the trailer",
                                ),
                                Err(e) => report.problem(Some(id), Some(footer_at), e.to_string()),
                            }
                        }
                    }
                }
            }
        }
        if let Some(pos) = map[(trailer_at as usize + TRAILER_BYTES)..]
            .iter()
            .position(|&b| b != 0)
        {
            report.problem(
                Some(id),
                Some(trailer_at + (TRAILER_BYTES + pos) as u64),
                "trailer page padding is not zero",
            );
        }
        if footer.is_none() {
            return entries;
        }
    }

    // Walk the data region. With a footer, a bad entry is skipped using the footer's next page.
    let starts: Option<Vec<u64>> = footer
        .as_ref()
        .map(|f| f.iter().map(|r| r.page * PAGE as u64).collect());
    let mut offset = PAGE as u64;
    let mut index = 0usize;
    while offset < data_end {
        let verified = match verify_entry(map, id, offset, data_end) {
            Ok(found) => Ok(found),
            // A damaged payload: reported, and the entry still listed (its extent is known;
            // item frames inside it are checked one by one below).
            Err(EntryDamage::Body(header, next, (at, what))) => {
                report.problem(Some(id), Some(at), what);
                Ok((header, next))
            }
            Err(EntryDamage::Header(at, what)) => Err((at, what)),
        };
        match verified {
            Ok((header, next)) => {
                report.entries += 1;
                if header.kind == EntryKind::Footer {
                    report.problem(
                        Some(id),
                        Some(offset),
                        "a footer entry inside the data region",
                    );
                }
                if let Some(f) = &footer {
                    let expected = f.get(index);
                    let found = FooterRecord {
                        page: offset / PAGE as u64,
                        payload_len: header.payload_len,
                        payload_crc: header.payload_crc,
                        kind: header.kind,
                    };
                    if expected != Some(&found) {
                        report.problem(
                            Some(id),
                            Some(offset),
                            format!("entry {found:?} differs from footer record {expected:?}"),
                        );
                    }
                }
                let payload_start = offset + ENTRY_HEADER_BYTES as u64;
                entries.push(WalkedEntry {
                    kind: header.kind,
                    payload_start,
                    payload_end: payload_start + header.payload_len,
                });
                offset = next;
                index += 1;
            }
            Err((at, what)) => {
                report.problem(Some(id), Some(at), what);
                // Resume at the next entry: the footer lists it in a sealed segment; in an
                // open one the next page holding a sound entry header.
                match &starts {
                    Some(starts) => match starts.iter().position(|&p| p > offset) {
                        Some(next_index) => {
                            index = next_index;
                            offset = starts[next_index];
                        }
                        None => break,
                    },
                    None => match next_entry_start(map, id, offset, data_end) {
                        Some(next) => offset = next,
                        None => break,
                    },
                }
            }
        }
    }
    if let Some(f) = &footer
        && index != f.len()
    {
        report.problem(
            Some(id),
            None,
            format!("walked {index} entries, the footer lists {}", f.len()),
        );
    }
    entries
}

fn inside(
    entries: Option<&Vec<WalkedEntry>>,
    kind: EntryKind,
    start: u64,
    end: u64,
    exact: bool,
) -> bool {
    entries.is_some_and(|list| {
        list.iter().any(|e| {
            e.kind == kind
                && if exact {
                    e.payload_start == start && e.payload_end == end
                } else {
                    e.payload_start <= start && end <= e.payload_end
                }
        })
    })
}

/// What `check` finds wrong in the bytes of a sealed segment `id` (the whole file), for tests
/// that damage segment bytes in memory by the million (reliability R5).
#[cfg(any(test, feature = "fault-injection"))]
pub(crate) fn sealed_segment_problems(bytes: &[u8], id: u64) -> Vec<Problem> {
    let mut report = CheckReport::default();
    let len = bytes.len() as u64;
    if len < 2 * PAGE as u64 || !len.is_multiple_of(PAGE as u64) {
        report.problem(
            Some(id),
            None,
            format!("length {len} is not a sealed segment's"),
        );
        return report.problems;
    }
    let row = SegmentRow {
        state: SegmentState::Sealed,
        len,
        dead_bytes: 0,
    };
    check_segment_bytes(&mut report, bytes, id, &row);
    report.problems
}

/// Verifies the earlier versions (`history`): each frame inside a sound item-block entry,
/// readable, of its item.
fn check_history(
    report: &mut CheckReport,
    txn: &redb::ReadTransaction,
    segments: &super::segment_file::SegmentSet,
    rows: &BTreeMap<u64, SegmentRow>,
    walked: &BTreeMap<u64, Vec<WalkedEntry>>,
) -> Result<()> {
    let Some(history) = catalog::open_optional(txn, catalog::HISTORY)? else {
        return Ok(());
    };
    for row in history.iter().ctx("scan history")? {
        let (key, value) = row.ctx("scan history")?;
        let (item, seq) = key.value();
        let (loc, _) = catalog::version_loc(value.value());
        let (segment, offset, frame_len) = (loc.segment, loc.offset, loc.frame_len);
        let at = (Some(segment), Some(offset));
        if !rows.contains_key(&segment) {
            report.problem(
                at.0,
                at.1,
                format!("version {seq} of item {item} is in a segment the catalog does not list"),
            );
            continue;
        }
        if walked.contains_key(&segment)
            && !inside(
                walked.get(&segment),
                EntryKind::ItemBlock,
                offset,
                offset + u64::from(frame_len),
                false,
            )
        {
            report.problem(
                at.0,
                at.1,
                format!("version {seq} of item {item} is not inside an item block"),
            );
        }
        match read_record(segments, &loc) {
            Ok(record) if record.id == item => {}
            Ok(record) => report.problem(
                at.0,
                at.1,
                format!(
                    "version {seq} of item {item} is a record of item {}",
                    record.id
                ),
            ),
            Err(e) => {
                report.damage.versions.push((item, seq));
                report.problem(at.0, at.1, format!("version {seq} of item {item}: {e}"));
            }
        }
    }
    Ok(())
}

/// What the unreadable blobs take with them: the vectors of lost vector blocks, the pages of
/// lost page parts.
fn damage_of_lost_blobs(damage: &mut Damage, snapshot: &super::Snapshot) -> Result<()> {
    if damage.blobs.is_empty() {
        return Ok(());
    }
    let lost: BTreeSet<u64> = damage.blobs.iter().map(|b| b.id).collect();
    for space in snapshot.vector_spaces()? {
        super::vector_space::for_each_key(snapshot.txn(), &space, |key, (block, _)| {
            if lost.contains(&block) {
                damage.vectors.push((space.clone(), key));
            }
        })?;
    }
    for (day, row) in snapshot.page_rows()? {
        if row.parts.iter().any(|p| lost.contains(p)) {
            damage.pages.push(day);
        }
    }
    Ok(())
}

impl Store {
    /// Verifies every checksum of every live segment and every catalog reference. A catalog
    /// that cannot be read (redb failing, or giving up on damaged bytes) is reported as a
    /// problem with [`CheckReport::catalog_damaged`] set, not as an error: `repair` then
    /// rebuilds the store from its segments.
    pub fn check(&self) -> Result<CheckReport> {
        // An encrypted store's opened ranges are what was read before: check reads the disk.
        if let Some(sealed) = &self.inner.sealed {
            sealed.opened_cache().clear();
        }
        match crate::error::catch_catalog_panic("check", || self.check_everything()) {
            Err(e @ (Error::Catalog { .. } | Error::CatalogDamaged { .. })) => {
                let mut report = CheckReport {
                    catalog_damaged: true,
                    ..CheckReport::default()
                };
                report.problem(
                    None,
                    None,
                    format!("the catalog cannot be read: {e}; run `memdb repair` to rebuild the store from its segments"),
                );
                Ok(report)
            }
            other => other,
        }
    }

    fn check_everything(&self) -> Result<CheckReport> {
        let mut report = CheckReport::default();
        let read_only = self.is_read_only();
        let snapshot = self.snapshot()?;
        let txn = snapshot.txn();
        let segments = snapshot.segments();
        let rows = catalog::segment_rows(&txn.open_table(catalog::SEGMENTS).ctx("open segments")?)?;
        // (A segment found damaged at open that a repair has since dropped is gone.)
        for (id, reason) in self
            .inner
            .damaged
            .iter()
            .filter(|(id, _)| rows.contains_key(id))
        {
            report.problem(Some(*id), None, format!("unusable since open: {reason}"));
        }
        let mut walked = BTreeMap::new();
        // Segments whose own bytes showed damage: a catalog row pointing at something
        // unreadable in any other segment is itself wrong.
        // (A segment found unusable at open — missing, short, its header damaged — is one.)
        let mut damaged_segments: BTreeSet<u64> = self.inner.damaged.keys().copied().collect();
        for (id, row) in &rows {
            match segments.get(id) {
                Some(file) => {
                    let before = report.problems.len();
                    walked.insert(*id, check_segment(&mut report, file, row, read_only));
                    if report.problems.len() > before {
                        damaged_segments.insert(*id);
                    }
                }
                None if self.inner.damaged.contains_key(id) => {}
                None => report.problem(Some(*id), None, "listed in the catalog but not open"),
            }
        }

        let items = txn.open_table(catalog::ITEMS).ctx("open items")?;
        let by_source = txn.open_table(catalog::BY_SOURCE).ctx("open by_source")?;
        let external = txn
            .open_table(catalog::EXTERNAL_IDS)
            .ctx("open external_ids")?;
        let mut external_count = 0u64;
        for row in items.iter().ctx("scan items")? {
            let (id, raw) = row.ctx("scan items")?;
            let id = id.value();
            let loc = ItemLoc::decode(raw.value());
            let end = loc.offset + u64::from(loc.frame_len);
            report.items += 1;
            if !rows.contains_key(&loc.segment) {
                report.catalog_problem(
                    Some(loc.segment),
                    Some(loc.offset),
                    format!("item {id} is in a segment the catalog does not list"),
                );
                continue;
            }
            if walked.contains_key(&loc.segment)
                && !inside(
                    walked.get(&loc.segment),
                    EntryKind::ItemBlock,
                    loc.offset,
                    end,
                    false,
                )
            {
                report.problem(
                    Some(loc.segment),
                    Some(loc.offset),
                    format!("item {id} is not inside a sound item block"),
                );
            }
            match read_record(segments, &loc) {
                Err(e) => {
                    report.damage.items.push(id);
                    if damaged_segments.contains(&loc.segment) {
                        report.problem(
                            Some(loc.segment),
                            Some(loc.offset),
                            format!("item {id}: {e}"),
                        )
                    } else {
                        report.catalog_problem(
                            Some(loc.segment),
                            Some(loc.offset),
                            format!(
                                "item {id}: {e} (its segment is sound: the catalog row is wrong)"
                            ),
                        )
                    }
                }
                Ok(rec) => {
                    if rec.id != id {
                        report.catalog_problem(
                            Some(loc.segment),
                            Some(loc.offset),
                            format!("item {id} points at the record of item {}", rec.id),
                        );
                    }
                    if rec.fields.time.unix_ms != loc.time_ms
                        || rec.fields.source.code() != loc.source
                    {
                        report.catalog_problem(
                            Some(loc.segment),
                            Some(loc.offset),
                            format!("item {id}: catalog time/source differ from the record"),
                        );
                    }
                    if let Some(ext) = &rec.fields.external_id {
                        external_count += 1;
                        let mapped = external
                            .get(ext.as_str())
                            .ctx("read external_ids")?
                            .map(|v| v.value());
                        if mapped != Some(id) {
                            report.catalog_problem(
                                None,
                                None,
                                format!("external id `{ext}` of item {id} maps to {mapped:?}"),
                            );
                        }
                    }
                }
            }
            if by_source
                .get((loc.source, loc.time_ms, id))
                .ctx("read by_source")?
                .is_none()
            {
                report.catalog_problem(
                    None,
                    None,
                    format!("item {id} is missing from the time index"),
                );
            }
        }
        let (n_time, n_ext) = (
            by_source.len().ctx("count by_source")?,
            external.len().ctx("count external_ids")?,
        );
        // An unreadable record does not say its external id: count it as having one.
        let ext_plausible = if report.damage.items.is_empty() {
            n_ext == external_count
        } else {
            (external_count..=external_count + report.damage.items.len() as u64).contains(&n_ext)
        };
        if n_time != report.items || !ext_plausible {
            report.catalog_problem(None, None, format!(
                "index sizes differ: {} items, {n_time} in the time index, {n_ext} external ids for {external_count} items that have one",
                report.items
            ));
        }
        if let Err(e) = catalog::read_op_log(txn) {
            report.catalog_problem(None, None, format!("the op log: {e}"));
        }

        let blobs = txn.open_table(catalog::BLOBS).ctx("open blobs")?;
        let mut owners = BTreeSet::new();
        // Op notes outlive their memory's retirement: they belong to its ops, not its record.
        let mut notes = BTreeMap::new();
        for row in blobs.iter().ctx("scan blobs")? {
            let (id, raw) = row.ctx("scan blobs")?;
            let id = id.value();
            report.blobs += 1;
            let loc = match BlobLoc::decode(id, raw.value()) {
                Ok(l) => l,
                Err(e) => {
                    report.catalog_problem(None, None, format!("blob {id}: {e}"));
                    continue;
                }
            };
            if loc.kind == BlobKind::OpNote {
                notes.insert(id, loc.owner);
            } else if loc.owner != 0 {
                owners.insert((loc.owner, id));
            }
            if walked.contains_key(&loc.segment)
                && !inside(
                    walked.get(&loc.segment),
                    EntryKind::Blob,
                    loc.offset,
                    loc.offset + loc.len,
                    true,
                )
            {
                report.problem(
                    Some(loc.segment),
                    Some(loc.offset),
                    format!("blob {id} is not a sound blob entry"),
                );
            }
            if let Err(e) = read_blob(segments, id, &loc) {
                report.damage.blobs.push(super::read::blob_info(id, &loc));
                if damaged_segments.contains(&loc.segment) || !rows.contains_key(&loc.segment) {
                    report.problem(
                        Some(loc.segment),
                        Some(loc.offset),
                        format!("blob {id}: {e}"),
                    );
                } else {
                    report.catalog_problem(
                        Some(loc.segment),
                        Some(loc.offset),
                        format!("blob {id}: {e} (its segment is sound: the catalog row is wrong)"),
                    );
                }
            }
        }
        check_history(&mut report, txn, segments, &rows, &walked)?;
        damage_of_lost_blobs(&mut report.damage, &snapshot)?;
        check_op_notes(&mut report, txn, notes)?;
        let history = catalog::open_optional(txn, catalog::HISTORY)?;
        for (owner, blob) in owners {
            // A deleted item keeps its blobs (for an undelete) while it has versions.
            let retired = match &history {
                Some(h) => h
                    .range((owner, 0)..=(owner, u64::MAX))
                    .ctx("scan history")?
                    .next()
                    .is_some(),
                None => false,
            };
            if !retired && items.get(owner).ctx("read items")?.is_none() {
                report.catalog_problem(
                    None,
                    None,
                    format!("blob {blob} belongs to missing item {owner}"),
                );
            }
        }

        let listing = std::fs::read_dir(&self.inner.paths.segments)
            .map_err(Error::io("list", &self.inner.paths.segments))?;
        for entry in listing {
            let entry = entry.map_err(Error::io("list", &self.inner.paths.segments))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            match super::dir::parse_segment_file_name(&name) {
                Some(id) if rows.contains_key(&id) => {}
                Some(id) if segments.contains_key(&id) || self.is_retiring(id) => {} // still mapped by a snapshot
                // Beside a running writer: a segment it is writing, or one it just retired.
                Some(_) if read_only => {}
                _ => report.problem(None, None, format!("unexpected file segments/{name}")),
            }
        }
        // Vector rows that disagree with their blocks are catalog rows damage changed (a lost
        // block's keys are `repair`'s to drop, and reported above as the block's damage).
        for (in_catalog, what) in super::vector_space::check_vectors(&snapshot)? {
            if in_catalog {
                report.catalog_problem(None, None, what);
            } else {
                report.problem(None, None, what);
            }
        }
        Ok(report)
    }
}

/// Every op note is named by one op of the memory that owns it.
fn check_op_notes(
    report: &mut CheckReport,
    txn: &redb::ReadTransaction,
    mut notes: BTreeMap<u64, u64>,
) -> Result<()> {
    if let Some(ops) = catalog::open_optional(txn, catalog::MEMORY_OPS)? {
        for row in ops.iter().ctx("scan memory_ops")? {
            let (key, value) = row.ctx("scan memory_ops")?;
            let ((memory, seq), note) = (key.value(), value.value().3);
            if note == 0 {
                continue;
            }
            match notes.remove(&note) {
                Some(owner) if owner == memory => {}
                Some(owner) => report.catalog_problem(
                    None,
                    None,
                    format!("op {seq} of memory {memory} names note blob {note} of memory {owner}"),
                ),
                // Dropped as damaged by a repair (which reported it): the op reads as having
                // lost its note.
                None => {}
            }
        }
    }
    for (blob, owner) in notes {
        report.catalog_problem(
            None,
            None,
            format!("op note blob {blob} of memory {owner} is named by no op"),
        );
    }
    Ok(())
}
