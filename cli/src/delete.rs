//! `memdb delete`, `memdb undelete` and `memdb purge`: a person's deletes at the command line.
//!
//! A delete is soft (SPEC.md §5.6): the item is retired — no longer found, its versions kept in
//! its history, its originals kept — and `undelete` brings it back until a purge, or a
//! compaction once the store's retention window (default 30 days) has passed. A purge removes
//! an item and its history for good, so it is a dry run unless `--yes`.
//!
//! Each command is one commit: every key is resolved first, and one that names nothing fails
//! the command before anything is written.

use std::path::Path;

use memdb::{Store, memory::MemoryOp, memory::OpNote};
use memdb_query::reports::memory_text;
use serde_json::json;

use crate::error::{CliError, Result};
use crate::output::Out;

/// A key resolved to a current item id.
fn resolve(store: &Store, key: &str, external: bool) -> Result<u64> {
    let snapshot = store.snapshot()?;
    let item = if external {
        snapshot.get_by_external_id(key)?
    } else {
        let id: u64 = key.parse().map_err(|_| CliError::NotAnId {
            key: key.to_owned(),
        })?;
        snapshot.get(id)?
    };
    item.map(|item| item.id).ok_or_else(|| CliError::NoItem {
        key: key.to_owned(),
    })
}

/// Words for a list of ids: `12, 13, 14`.
fn listed(ids: &[u64]) -> String {
    ids.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

pub(crate) fn delete(
    dir: &Path,
    keys: &[String],
    external: bool,
    reason: Option<String>,
    out: &Out,
) -> Result<()> {
    let store = crate::open::open_store(dir)?;
    let mut ids = Vec::with_capacity(keys.len());
    for key in keys {
        let id = resolve(&store, key, external)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let note = OpNote {
        reason: reason.unwrap_or_else(|| "memdb delete".to_owned()),
        actor: None,
        role: Some("user".to_owned()),
    };
    store.apply(
        ids.iter()
            .map(|&id| MemoryOp::Delete {
                id,
                valid_to_ms: None,
                note: note.clone(),
            })
            .collect(),
    )?;
    let days = store.retention_days()?;
    out.emit(json!({ "deleted": ids, "retention_days": days }), || {
        format!(
            "deleted {} item(s): {}\nundo with `memdb undelete {} {}` (their originals are \
                 kept for {days} days after a compaction could drop them)",
            ids.len(),
            listed(&ids),
            dir.display(),
            listed(&ids),
        )
    });
    Ok(())
}

pub(crate) fn undelete(dir: &Path, ids: &[u64], out: &Out) -> Result<()> {
    let store = crate::open::open_store(dir)?;
    let note = OpNote {
        reason: "memdb undelete".to_owned(),
        actor: None,
        role: Some("user".to_owned()),
    };
    let mut unique: Vec<u64> = Vec::with_capacity(ids.len());
    for &id in ids {
        if !unique.contains(&id) {
            unique.push(id);
        }
    }
    store.apply(
        unique
            .iter()
            .map(|&id| MemoryOp::Restore {
                id,
                note: note.clone(),
            })
            .collect(),
    )?;
    out.emit(json!({ "restored": unique }), || {
        format!(
            "restored {} item(s): {}\nrun `memdb embed {}` to index them for recall again",
            unique.len(),
            listed(&unique),
            dir.display()
        )
    });
    Ok(())
}

pub(crate) fn purge(dir: &Path, ids: &[u64], yes: bool, out: &Out) -> Result<()> {
    let store = if yes {
        crate::open::open_store(dir)?
    } else {
        crate::open::open_for_reading(dir)?
    };
    // What each id names now: its current text, else its last version's (a deleted item).
    let snapshot = store.snapshot()?;
    let mut found = Vec::new();
    for &id in ids {
        let (text, state) = match snapshot.get(id)? {
            Some(item) => (memory_text(&item), "current"),
            None => match snapshot.history(id)?.versions.pop() {
                Some(version) => (memory_text(&version.record), "deleted"),
                None => {
                    return Err(CliError::NoItem {
                        key: id.to_string(),
                    });
                }
            },
        };
        if !found.iter().any(|(f, _, _)| *f == id) {
            found.push((id, text, state));
        }
    }
    drop(snapshot);
    if yes {
        let mut batch = store.batch();
        for (id, _, _) in &found {
            batch.purge(*id);
        }
        batch.commit()?;
    }
    let rows: Vec<_> = found
        .iter()
        .map(|(id, text, state)| {
            json!({"id": id, "was": state, "text": crate::mcp::preview(text, 80)})
        })
        .collect();
    out.emit(json!({ "purged": yes, "items": rows }), || {
        let mut lines: Vec<String> = found
            .iter()
            .map(|(id, text, state)| format!("  {id} ({state}): {}", crate::mcp::preview(text, 80)))
            .collect();
        lines.insert(
            0,
            if yes {
                format!(
                    "purged {} item(s) and their history; run `memdb compact {}` to take the \
                     bytes off the disk",
                    found.len(),
                    dir.display()
                )
            } else {
                format!(
                    "dry run: would purge {} item(s) and their history for good (pass --yes):",
                    found.len()
                )
            },
        );
        lines.join("\n")
    });
    Ok(())
}

pub(crate) fn retention(dir: &Path, days: Option<u32>, out: &Out) -> Result<()> {
    let store = match days {
        Some(_) => crate::open::open_store(dir)?,
        None => crate::open::open_for_reading(dir)?,
    };
    if let Some(days) = days {
        store.set_retention_days(days)?;
    }
    let days = store.retention_days()?;
    out.emit(json!({ "retention_days": days }), || {
        format!(
            "deleted items keep their originals for {days} day(s) after their delete; a \
             compaction after that drops them"
        )
    });
    Ok(())
}
