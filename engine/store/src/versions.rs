//! Memories in two times: the typed memory operations (ADD, UPDATE, DELETE, NONE, and purge),
//! the log of every operation on a memory, and every version of a memory with its system time
//! (when memdb held it as current) and valid time (when it was true in the world).
//!
//! Owns the `memory_ops` and `valid_time` tables (SPEC.md §5.6) and the reads over them
//! ([`Snapshot::history`], [`Snapshot::versions_at`], [`Snapshot::op_log`]); the staging of a
//! memory operation inside a batch is `write.rs`'s, which calls [`close_version`] and
//! [`set_current_validity`] here.
//!
//! Invariants:
//! - a version's system time is `[its record's ingest time, the commit that replaced or retired
//!   it)`; the current version's is open. Nothing but `purge` removes a version: an UPDATE
//!   closes the old one, a DELETE retires the memory and keeps its versions and its blobs (a
//!   RESTORE makes it current again), until a purge or the retention window's end;
//! - an UPDATE or DELETE closes the old version's valid time at the new version's
//!   `valid_from` (or the delete's `valid_to`), never later than it was, and keeps the valid
//!   end the version was written with, so what memdb knew at any earlier time can be asked;
//! - every op on a memory has a `memory_ops` row in the same commit (its reason, actor and
//!   role; empty when the write was not a memory operation).

use memdb_formats::item::{ItemFields, ItemRecord};
use redb::ReadableTable;

use super::catalog::{self, MemoryOpValue, OpCode};
use super::read::{Snapshot, read_record};
use super::write::Tables;
use super::{CommitReceipt, Store};
use crate::error::{CatalogResult, Error, Result};

/// What the caller says about a memory operation: the columns of Mem0's history table that
/// are not the memory itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpNote {
    /// Why (a decider's explanation, a person's words).
    pub reason: String,
    /// Who made the change (a person, an agent).
    pub actor: Option<String>,
    /// In what role (`user`, `assistant`, …).
    pub role: Option<String>,
}

impl OpNote {
    /// Nothing was said (no note is stored).
    pub fn is_empty(&self) -> bool {
        self.reason.is_empty() && self.actor.is_none() && self.role.is_none()
    }
}

/// When a new version is true in the world, `[from, to)`. A `from` of `None` is the item's
/// event time (the commit's time when undated); a `to` of `None` is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validity {
    /// Valid from (UTC ms).
    pub from_ms: Option<i64>,
    /// Valid until, exclusive (UTC ms).
    pub to_ms: Option<i64>,
}

/// One typed memory operation of [`Store::apply`].
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryOp {
    /// A new memory.
    Add {
        /// Its fields.
        fields: ItemFields,
        /// When it is true.
        valid: Validity,
        /// Why.
        note: OpNote,
    },
    /// Memory `id` now reads `fields`; its old version is closed, not erased.
    Update {
        /// The memory.
        id: u64,
        /// Its new fields (an external id, when given, must be the memory's own).
        fields: ItemFields,
        /// When the new version is true (its start closes the old version's validity).
        valid: Validity,
        /// Why.
        note: OpNote,
    },
    /// Memory `id` is no longer true: it is retired, its versions kept.
    Delete {
        /// The memory.
        id: u64,
        /// Until when it was true (default: the commit's time).
        valid_to_ms: Option<i64>,
        /// Why.
        note: OpNote,
    },
    /// The fact is already known as memory `id`: nothing changes, the decision is logged.
    None {
        /// The memory.
        id: u64,
        /// Why.
        note: OpNote,
    },
    /// Retired memory `id` is current again, as its last version read (an undelete), with
    /// the originals it still holds: logged as an ADD of the same id (SPEC.md §5.6).
    Restore {
        /// The memory.
        id: u64,
        /// Why.
        note: OpNote,
    },
}

impl MemoryOp {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            MemoryOp::Add { .. } => "add",
            MemoryOp::Update { .. } => "update",
            MemoryOp::Delete { .. } => "delete",
            MemoryOp::None { .. } => "none",
            MemoryOp::Restore { .. } => "restore",
        }
    }
}

/// What a logged operation did to its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryOpKind {
    /// A new memory (or item).
    Add,
    /// A new version of it.
    Update,
    /// Retired (versions kept; before format 8: removed).
    Delete,
    /// Already known: nothing changed.
    None,
    /// Removed physically with every version.
    Purge,
}

impl MemoryOpKind {
    /// Mem0's event names: `ADD`, `UPDATE`, `DELETE`, `NONE`, and `PURGE`.
    pub fn name(self) -> &'static str {
        match self {
            MemoryOpKind::Add => "ADD",
            MemoryOpKind::Update => "UPDATE",
            MemoryOpKind::Delete => "DELETE",
            MemoryOpKind::None => "NONE",
            MemoryOpKind::Purge => "PURGE",
        }
    }

    fn from_code(code: u8) -> Option<MemoryOpKind> {
        Some(match OpCode::from_code(code)? {
            OpCode::Add => MemoryOpKind::Add,
            OpCode::Update => MemoryOpKind::Update,
            OpCode::Delete => MemoryOpKind::Delete,
            OpCode::Keep => MemoryOpKind::None,
            OpCode::Purge => MemoryOpKind::Purge,
        })
    }
}

/// One row of the operation log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryOpRow {
    /// Its sequence number (the log's order).
    pub seq: u64,
    /// The memory (item id).
    pub memory_id: u64,
    /// What it did.
    pub kind: MemoryOpKind,
    /// When memdb committed it (UTC ms).
    pub system_ms: i64,
    /// The valid time it gave: the new version's start, or the retired version's end.
    pub valid_ms: Option<i64>,
    /// Why; empty when the write was not a memory operation (an import, an enrichment).
    pub reason: String,
    /// Who.
    pub actor: Option<String>,
    /// In what role.
    pub role: Option<String>,
}

/// One version of a memory in both times.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryVersion {
    /// The record as that version reads (its `ingest_time_ms` is its system start).
    pub record: ItemRecord,
    /// When memdb stopped holding it as current (UTC ms); `None`: it is current.
    pub system_to_ms: Option<i64>,
    /// The op that closed it (the key of its `history` row), when closed.
    pub closed_by: Option<u64>,
    /// Valid from (UTC ms); `None`: unbounded.
    pub valid_from_ms: Option<i64>,
    /// Valid until, exclusive, as memdb knows now; `None`: unbounded.
    pub valid_to_ms: Option<i64>,
    /// Valid until as the version was written (before a later op closed it).
    pub valid_to_written_ms: Option<i64>,
}

impl MemoryVersion {
    /// When memdb started holding it (UTC ms).
    pub fn system_from_ms(&self) -> i64 {
        self.record.ingest_time_ms
    }

    /// Whether it is the memory's current version.
    pub fn is_current(&self) -> bool {
        self.system_to_ms.is_none()
    }
}

/// Reads `supersedes` links as UPDATEs in both times (SPEC.md §5.6): an open version of item
/// `n` that another item's version names as superseded is closed in system time when memdb
/// first held a version naming it (the earliest such `system_from`), and in valid time at that
/// version's `valid_from` (never later than it was; the end as written is kept). Only links
/// among `versions` count. The stored rows do not change: the current view still lists a
/// superseded item (`CURRENT` hides it).
pub fn close_superseded(versions: &mut [MemoryVersion]) {
    let mut closing: std::collections::HashMap<u64, (i64, Option<i64>)> =
        std::collections::HashMap::new();
    for v in versions.iter() {
        let Some(old) = v.record.supersedes else {
            continue;
        };
        if old == v.record.id {
            continue;
        }
        let at = (v.system_from_ms(), v.valid_from_ms);
        closing
            .entry(old)
            .and_modify(|e| {
                if at.0 < e.0 {
                    *e = at;
                }
            })
            .or_insert(at);
    }
    for v in versions.iter_mut() {
        let Some(&(system, valid)) = closing.get(&v.record.id) else {
            continue;
        };
        if v.system_to_ms.is_some() || system < v.system_from_ms() {
            continue;
        }
        v.system_to_ms = Some(system);
        // Unbounded start: the superseding version does not say when; its valid time is not
        // cut short.
        if let Some(from) = valid {
            v.valid_to_ms = Some(v.valid_to_ms.map_or(from, |to| to.min(from)));
        }
    }
}

/// Every version and op of one memory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryHistory {
    /// Oldest first; the current one (if the memory is current) last.
    pub versions: Vec<MemoryVersion>,
    /// Its ops in log order.
    pub ops: Vec<MemoryOpRow>,
}

impl MemoryHistory {
    /// The version op `row` closed (UPDATE, DELETE) and the one it wrote (ADD, UPDATE), when
    /// still stored.
    pub fn versions_of(
        &self,
        row: &MemoryOpRow,
    ) -> (Option<&MemoryVersion>, Option<&MemoryVersion>) {
        let old = self.versions.iter().find(|v| v.closed_by == Some(row.seq));
        let new = match row.kind {
            MemoryOpKind::Add | MemoryOpKind::Update => self
                .versions
                .iter()
                .find(|v| v.system_from_ms() == row.system_ms),
            _ => None,
        };
        (old, new)
    }
}

/// A point in system time, valid time, or both (SPEC.md §9.3, `AS OF` and `VALID AT`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeTravel {
    /// What memdb held as current then (`AS OF`).
    pub as_of_ms: Option<i64>,
    /// What was true in the world then (`VALID AT`), as memdb knew it at `as_of_ms` (or now).
    pub valid_at_ms: Option<i64>,
}

impl TimeTravel {
    /// Neither time: the current memories.
    pub fn is_now(&self) -> bool {
        self.as_of_ms.is_none() && self.valid_at_ms.is_none()
    }

    /// Whether `v` is seen at this point.
    ///
    /// - `AS OF s` alone: the version was current at `s` (system from ≤ s < system to).
    /// - `VALID AT t`: among the versions memdb had written by `s` (now, without `AS OF`), those
    ///   true at `t` (valid from ≤ t < valid to), with the valid end memdb knew at `s`: the
    ///   closed end for a version closed by then, the end it was written with otherwise.
    pub fn sees(&self, v: &MemoryVersion) -> bool {
        let Some(t) = self.valid_at_ms else {
            return match self.as_of_ms {
                None => v.is_current(),
                Some(s) => v.system_from_ms() <= s && v.system_to_ms.is_none_or(|to| s < to),
            };
        };
        let known_to = match self.as_of_ms {
            None => v.valid_to_ms,
            Some(s) => {
                if v.system_from_ms() > s {
                    return false;
                }
                if v.system_to_ms.is_some_and(|to| to <= s) {
                    v.valid_to_ms
                } else {
                    v.valid_to_written_ms
                }
            }
        };
        v.valid_from_ms.is_none_or(|from| from <= t) && known_to.is_none_or(|to| t < to)
    }
}

/// A bound as stored: `i64::MIN`/`i64::MAX` are unbounded.
fn bound(ms: i64) -> Option<i64> {
    (ms != i64::MIN && ms != i64::MAX).then_some(ms)
}

/// Closes the current version of memory `id` at op `seq`: its `valid_time` row moves from
/// version 0 to version `seq` with its valid end at `end_ms` (never later than it was). The
/// default for a version without a row is from its event time to unbounded.
pub(super) fn close_version(
    t: &mut Tables<'_>,
    id: u64,
    seq: u64,
    old_event_ms: i64,
    end_ms: i64,
) -> Result<()> {
    let (from, to, written) = t
        .valid_time
        .remove((id, 0))
        .ctx("remove valid_time")?
        .map(|v| v.value())
        .unwrap_or((old_event_ms, i64::MAX, i64::MAX));
    t.valid_time
        .insert((id, seq), (from, to.min(end_ms), written))
        .ctx("write valid_time")?;
    Ok(())
}

/// Sets the valid time of memory `id`'s current version (`None`: the default).
pub(super) fn set_current_validity(
    t: &mut Tables<'_>,
    id: u64,
    valid: Option<(i64, i64)>,
) -> Result<()> {
    match valid {
        Some((from, to)) => {
            t.valid_time
                .insert((id, 0), (from, to, to))
                .ctx("write valid_time")?;
        }
        None => {
            t.valid_time.remove((id, 0)).ctx("remove valid_time")?;
        }
    }
    Ok(())
}

/// The valid interval a memory op's new version is written with: from the given start, else
/// its event time, else (undated) the commit's time; to the given end, else unbounded.
pub(super) fn memory_validity(valid: &Validity, fields: &ItemFields, now: i64) -> (i64, i64) {
    let from = valid
        .from_ms
        .unwrap_or_else(|| new_version_start(None, fields, now));
    (from, valid.to_ms.unwrap_or(i64::MAX))
}

/// Where the valid time of a new version starts (what closes the old one): its stored start,
/// else its event time, else (undated) the commit's time.
pub(super) fn new_version_start(valid: Option<(i64, i64)>, fields: &ItemFields, now: i64) -> i64 {
    match valid {
        Some((from, _)) => from,
        None if fields.time.is_undated() => now,
        None => fields.time.unix_ms,
    }
}

/// Names the note of op `seq` on memory `id` (its row was written by the log) and the op's
/// valid time.
pub(super) fn annotate(
    t: &mut Tables<'_>,
    id: u64,
    seq: u64,
    valid_ms: Option<i64>,
    note_blob: u64,
) -> Result<()> {
    let row = t
        .memory_ops
        .get((id, seq))
        .ctx("read memory_ops")?
        .map(|v| {
            let value = v.value();
            (value.0, value.1)
        });
    let Some((op, at)) = row else {
        return Err(Error::Inconsistent(format!(
            "op {seq} of memory {id} is not logged"
        )));
    };
    t.memory_ops
        .insert((id, seq), (op, at, valid_ms.unwrap_or(i64::MIN), note_blob))
        .ctx("write memory_ops")?;
    Ok(())
}

/// Removes every `memory_ops` and `valid_time` row of memory `id` and the notes its ops name
/// (a purge); true if it had any op.
pub(super) fn remove_memory_rows(t: &mut Tables<'_>, id: u64) -> Result<bool> {
    let mut ops = Vec::new();
    for row in t
        .memory_ops
        .range((id, 0)..=(id, u64::MAX))
        .ctx("scan memory_ops")?
    {
        let (key, value) = row.ctx("scan memory_ops")?;
        ops.push((key.value(), value.value().3));
    }
    let mut valid = Vec::new();
    for row in t
        .valid_time
        .range((id, 0)..=(id, u64::MAX))
        .ctx("scan valid_time")?
    {
        valid.push(row.ctx("scan valid_time")?.0.value());
    }
    let found = !ops.is_empty();
    for (key, note_blob) in ops {
        t.memory_ops.remove(key).ctx("remove memory_ops")?;
        if note_blob != 0 {
            t.remove_blob(note_blob)?;
        }
    }
    for key in valid {
        t.valid_time.remove(key).ctx("remove valid_time")?;
    }
    Ok(found)
}

/// Version byte of an op note blob.
const NOTE_FORMAT: u8 = 1;

/// An op note as a blob: a format byte, then reason, actor and role, each a little-endian
/// `u32` length and UTF-8 bytes (an absent actor or role is empty).
pub(super) fn encode_note(note: &OpNote) -> Vec<u8> {
    let parts = [
        note.reason.as_str(),
        note.actor.as_deref().unwrap_or(""),
        note.role.as_deref().unwrap_or(""),
    ];
    let mut out = Vec::with_capacity(1 + parts.iter().map(|p| 4 + p.len()).sum::<usize>());
    out.push(NOTE_FORMAT);
    for part in parts {
        // A note longer than 4 GiB cannot be staged: a batch's segment append refuses it first.
        let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&part.as_bytes()[..len as usize]);
    }
    out
}

/// Reads an op note blob back (bytes from disk: checked, never trusted).
pub(super) fn decode_note(bytes: &[u8]) -> std::result::Result<OpNote, String> {
    let (&format, mut rest) = bytes.split_first().ok_or("an empty note")?;
    if format != NOTE_FORMAT {
        return Err(format!("note format {format}, expected {NOTE_FORMAT}"));
    }
    let mut part = || -> std::result::Result<String, String> {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or("a note cut short")?;
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return Err("a note cut short".into());
        }
        let (text, tail) = tail.split_at(len);
        rest = tail;
        String::from_utf8(text.to_vec()).map_err(|_| "a note that is not UTF-8".to_owned())
    };
    let (reason, actor, role) = (part()?, part()?, part()?);
    if !rest.is_empty() {
        return Err(format!("{} bytes after the note", rest.len()));
    }
    let text = |s: String| (!s.is_empty()).then_some(s);
    Ok(OpNote {
        reason,
        actor: text(actor),
        role: text(role),
    })
}

/// The note op rows name, read through the snapshot's blobs. A note that cannot be read (a
/// repair or compaction dropped it as damaged) reads as a reason saying so: the op itself
/// stays logged.
fn read_note(snap: &Snapshot, note_blob: u64) -> Result<OpNote> {
    if note_blob == 0 {
        return Ok(OpNote::default());
    }
    let lost = |why: String| OpNote {
        reason: format!("(note lost: {why})"),
        ..OpNote::default()
    };
    match snap.blob(note_blob) {
        Ok(Some(blob)) => Ok(decode_note(&blob).unwrap_or_else(lost)),
        Ok(None) => Ok(lost("its blob is gone".into())),
        Err(e @ (Error::Corruption { .. } | Error::SegmentUnavailable { .. })) => {
            Ok(lost(e.to_string()))
        }
        Err(e) => Err(e),
    }
}

fn op_row(snap: &Snapshot, id: u64, seq: u64, value: MemoryOpValue) -> Result<MemoryOpRow> {
    let (code, system_ms, valid_ms, note_blob) = value;
    let kind = MemoryOpKind::from_code(code).ok_or_else(|| {
        Error::bad_row(
            "memory_ops",
            format!("({id}, {seq})"),
            format!("unknown op {code}"),
        )
    })?;
    let note = read_note(snap, note_blob)?;
    Ok(MemoryOpRow {
        seq,
        memory_id: id,
        kind,
        system_ms,
        valid_ms: bound(valid_ms),
        reason: note.reason,
        actor: note.actor,
        role: note.role,
    })
}

impl Snapshot {
    /// Every version of memory `id` in both times, and its ops (empty for an id that never
    /// existed or was purged). A retired memory still has its versions, all closed.
    pub fn history(&self, id: u64) -> Result<MemoryHistory> {
        let txn = self.txn();
        let valid = catalog::open_optional(txn, catalog::VALID_TIME)?;
        let valid_row = |key: (u64, u64)| -> Result<Option<(i64, i64, i64)>> {
            match &valid {
                Some(table) => Ok(table.get(key).ctx("read valid_time")?.map(|v| v.value())),
                None => Ok(None),
            }
        };
        let mut versions = Vec::new();
        for earlier in self.versions(id)? {
            let valid = valid_row((id, earlier.seq))?;
            versions.push(earlier_version(
                earlier.record,
                earlier.seq,
                earlier.replaced_ms,
                valid,
            ));
        }
        if let Some(record) = self.get(id)? {
            versions.push(current_version(record, valid_row((id, 0))?));
        }
        let mut ops = Vec::new();
        if let Some(table) = catalog::open_optional(txn, catalog::MEMORY_OPS)? {
            for row in table
                .range((id, 0)..=(id, u64::MAX))
                .ctx("scan memory_ops")?
            {
                let (key, value) = row.ctx("scan memory_ops")?;
                ops.push(op_row(self, id, key.value().1, value.value())?);
            }
        }
        Ok(MemoryHistory { versions, ops })
    }

    /// Every version seen at `at` (see [`TimeTravel::sees`]), by memory id, then oldest first,
    /// with `supersedes` links read as UPDATEs ([`close_superseded`]). Reads every version of
    /// every memory: time travel is a scan, the current view (`at` is now) is the indexes'.
    pub fn versions_at(&self, at: TimeTravel) -> Result<Vec<MemoryVersion>> {
        let txn = self.txn();
        let valid = catalog::open_optional(txn, catalog::VALID_TIME)?;
        let mut valid_rows = std::collections::HashMap::new();
        if let Some(table) = &valid {
            for row in table.iter().ctx("scan valid_time")? {
                let (key, value) = row.ctx("scan valid_time")?;
                valid_rows.insert(key.value(), value.value());
            }
        }
        let mut out = Vec::new();
        if let Some(history) = catalog::open_optional(txn, catalog::HISTORY)? {
            for row in history.iter().ctx("scan history")? {
                let (key, value) = row.ctx("scan history")?;
                let (id, seq) = key.value();
                let (loc, replaced_ms) = catalog::version_loc(value.value());
                let record = read_record(self.segment_set(), &loc)?;
                let valid = valid_rows.get(&(id, seq)).copied();
                out.push(earlier_version(record, seq, replaced_ms, valid));
            }
        }
        for record in self.scan(&super::ScanFilter::default())? {
            let valid = valid_rows.get(&(record.id, 0)).copied();
            out.push(current_version(record, valid));
        }
        close_superseded(&mut out);
        out.retain(|v| at.sees(v));
        out.sort_by_key(|v| {
            (
                v.record.id,
                v.record.ingest_time_ms,
                v.closed_by.unwrap_or(u64::MAX),
            )
        });
        Ok(out)
    }

    /// The operation log from system time `since_ms` on (all of it without), in log order.
    pub fn op_log(&self, since_ms: Option<i64>) -> Result<Vec<MemoryOpRow>> {
        let txn = self.txn();
        let memory_ops = catalog::open_optional(txn, catalog::MEMORY_OPS)?;
        let mut out = Vec::new();
        for (seq, code, id, at) in catalog::read_op_log(txn)? {
            if since_ms.is_some_and(|since| at < since) {
                continue;
            }
            let noted = match &memory_ops {
                Some(table) => match table.get((id, seq)).ctx("read memory_ops")? {
                    Some(value) => Some(op_row(self, id, seq, value.value())?),
                    None => None,
                },
                None => None,
            };
            // Purged (or older than format 8 and not yet upgraded): the bare log row.
            out.push(match noted {
                Some(row) => row,
                None => op_row(self, id, seq, (code, at, i64::MIN, 0))?,
            });
        }
        Ok(out)
    }
}

/// An earlier version, closed by op `seq` at `replaced_ms`, with its `valid_time` row (absent:
/// from its event time to when it was replaced).
fn earlier_version(
    record: ItemRecord,
    seq: u64,
    replaced_ms: i64,
    valid: Option<(i64, i64, i64)>,
) -> MemoryVersion {
    let (from, to, written) = valid.unwrap_or((record.fields.time.unix_ms, replaced_ms, i64::MAX));
    MemoryVersion {
        record,
        system_to_ms: Some(replaced_ms),
        closed_by: Some(seq),
        valid_from_ms: bound(from),
        valid_to_ms: bound(to),
        valid_to_written_ms: bound(written),
    }
}

/// The current version, with its `valid_time` row (absent: from its event time on).
fn current_version(record: ItemRecord, valid: Option<(i64, i64, i64)>) -> MemoryVersion {
    let (from, to, written) = valid.unwrap_or((record.fields.time.unix_ms, i64::MAX, i64::MAX));
    MemoryVersion {
        record,
        system_to_ms: None,
        closed_by: None,
        valid_from_ms: bound(from),
        valid_to_ms: bound(to),
        valid_to_written_ms: bound(written),
    }
}

/// What [`Store::apply`] did, one per op, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedOp {
    /// What was logged (an UPDATE whose fields equal the memory's is logged as NONE).
    pub kind: MemoryOpKind,
    /// The memory.
    pub id: u64,
    /// Its op-log sequence number.
    pub seq: u64,
    /// The commit's system time (UTC ms): when the new version starts, the old one ends.
    pub system_ms: i64,
}

/// The settings key of the retention window: how many days a deleted item keeps its blobs
/// (photo originals) for an undelete before a compaction drops them.
pub(crate) const KEY_RETENTION_DAYS: &str = "deleted_retention_days";

/// The retention window of a store that records none (SPEC.md §5.6).
pub const DEFAULT_RETENTION_DAYS: u32 = 30;

/// Drops the blobs of items retired more than `retention_days` before `now` (and of items
/// with no current record and no version at all): they become dead bytes this compaction
/// reclaims. Op notes are history and stay. Returns how many blobs went.
pub(super) fn expire_retired_blobs(
    t: &mut Tables<'_>,
    now: i64,
    retention_days: u32,
) -> Result<u64> {
    let window_ms = i64::from(retention_days).saturating_mul(86_400_000);
    let mut by_owner: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for row in t.blobs.iter().ctx("scan blobs")? {
        let (id, raw) = row.ctx("scan blobs")?;
        let (owner, kind) = (raw.value().4, raw.value().3);
        if owner != 0 && kind != catalog::BlobKind::OpNote as u8 {
            by_owner.entry(owner).or_default().push(id.value());
        }
    }
    let mut expired = 0;
    for (owner, blobs) in by_owner {
        if t.items.get(owner).ctx("read items")?.is_some() {
            continue;
        }
        // Retired when its last version was closed (0: no version, so nothing to restore).
        let retired_ms = match t
            .history
            .range((owner, 0)..=(owner, u64::MAX))
            .ctx("scan history")?
            .next_back()
        {
            Some(row) => row.ctx("scan history")?.1.value().3,
            None => 0,
        };
        if now.saturating_sub(retired_ms) < window_ms {
            continue;
        }
        for blob in blobs {
            t.remove_blob(blob)?;
            expired += 1;
        }
    }
    Ok(expired)
}

impl Store {
    /// How many days a deleted item keeps its blobs for an undelete (the store records it;
    /// [`DEFAULT_RETENTION_DAYS`] when it does not).
    pub fn retention_days(&self) -> Result<u32> {
        Ok(self
            .snapshot()?
            .setting(KEY_RETENTION_DAYS)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_RETENTION_DAYS))
    }

    /// Records the retention window (days; 0 lets the next compaction drop the blobs of every
    /// deleted item).
    pub fn set_retention_days(&self, days: u32) -> Result<()> {
        self.write_setting(KEY_RETENTION_DAYS, &days.to_string())
    }

    /// Makes retired memory `id` current again as its last version read, with the originals
    /// it still holds (an undelete; logged as an ADD with `note`). Fails with
    /// [`Error::NoMemory`] when nothing of it is retired, and [`Error::InvalidItem`] when it
    /// is current or its external id names another item now.
    pub fn restore(&self, id: u64, note: OpNote) -> Result<AppliedOp> {
        self.apply(vec![MemoryOp::Restore { id, note }])?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Inconsistent("a restore logged no op".into()))
    }

    /// Applies typed memory operations in one durable commit: all of them or, on an error
    /// (an op naming a memory that is not current, an invalid item), none. Every op is logged
    /// with its note, system time and valid time.
    pub fn apply(&self, ops: Vec<MemoryOp>) -> Result<Vec<AppliedOp>> {
        let mut batch = self.batch();
        for op in ops {
            batch.memory(op);
        }
        let receipt: CommitReceipt = batch.commit()?;
        Ok(receipt.memory_ops)
    }

    /// Removes memory `id` physically: its current record, every earlier version, its blobs,
    /// vector, graph rows and its rows in the operation log (one bare `PURGE` row stays,
    /// naming no content). The bytes leave the segments at the next compaction. False when
    /// there is nothing of it.
    pub fn purge(&self, id: u64) -> Result<bool> {
        let mut batch = self.batch();
        batch.purge(id);
        let receipt = batch.commit()?;
        Ok(receipt.deleted > 0)
    }
}
