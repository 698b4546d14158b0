//! `memdb import`: parse files with the formats importers and commit them in batches.
//!
//! A bad record or an unreadable file is reported (file, line or field, reason) and skipped;
//! the good records of the same file still land. Each batch is one commit, so an interrupted
//! import keeps every batch that was committed.

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use memdb::{PutStatus, Store};
use memdb_formats::import::{ImportReport, jsonl, locomo};
use serde_json::{Value, json};

use crate::ImportFormat;

#[derive(Default)]
pub(crate) struct Summary {
    files: usize,
    added: u64,
    updated: u64,
    unchanged: u64,
    errors: Vec<String>,
    warnings: Vec<String>,
}

impl Summary {
    pub(crate) fn json(&self) -> Value {
        json!({"files": self.files, "added": self.added, "updated": self.updated,
               "unchanged": self.unchanged, "skipped": self.errors, "warnings": self.warnings})
    }

    pub(crate) fn text(&self) -> String {
        let mut text = format!(
            "imported {} file(s): {} added, {} updated, {} unchanged, {} skipped",
            self.files,
            self.added,
            self.updated,
            self.unchanged,
            self.errors.len()
        );
        for w in &self.warnings {
            text.push_str(&format!("\n  warning: {w}"));
        }
        text
    }
}

pub(crate) fn import_files(
    store: &Store,
    format: ImportFormat,
    files: &[PathBuf],
    batch_size: usize,
    show_progress: bool,
) -> Result<Summary, String> {
    let mut summary = Summary::default();
    let mut reports = Vec::new();
    for file in files {
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                let msg = format!("{}: {e}", file.display());
                eprintln!("memdb: skipped {msg}");
                summary.errors.push(msg);
                continue;
            }
        };
        let report = match format {
            ImportFormat::Jsonl => jsonl::parse(file, &bytes),
            ImportFormat::Locomo => match locomo::parse(file, &bytes) {
                Ok(r) => r,
                Err(e) => ImportReport {
                    items: Vec::new(),
                    errors: vec![e],
                },
            },
        };
        for e in &report.errors {
            eprintln!("memdb: skipped {e}");
            summary.errors.push(e.to_string());
        }
        summary.files += 1;
        reports.push(report);
    }
    let total: usize = reports.iter().map(|r| r.items.len()).sum();
    let bar = if show_progress && total >= batch_size {
        let bar = ProgressBar::new(total as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {pos}/{len} items ({per_sec}, {eta} left)")
        {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let drafts = reports
        .into_iter()
        .flat_map(|r| r.items.into_iter().map(|i| i.draft));
    let mut pending = Vec::with_capacity(batch_size);
    for draft in drafts {
        pending.push(draft);
        if pending.len() == batch_size {
            commit(store, &mut pending, &mut summary, &bar)?;
        }
    }
    commit(store, &mut pending, &mut summary, &bar)?;
    bar.finish_and_clear();
    Ok(summary)
}

fn commit(
    store: &Store,
    pending: &mut Vec<memdb::ItemDraft>,
    summary: &mut Summary,
    bar: &ProgressBar,
) -> Result<(), String> {
    if pending.is_empty() {
        return Ok(());
    }
    let n = pending.len() as u64;
    let mut batch = store.batch();
    for draft in pending.drain(..) {
        batch.put(draft);
    }
    let receipt = batch
        .commit()
        .map_err(|e| format!("commit failed (earlier batches are kept): {e}"))?;
    for put in &receipt.puts {
        match put.status {
            PutStatus::Added => summary.added += 1,
            PutStatus::Updated => summary.updated += 1,
            PutStatus::Unchanged => summary.unchanged += 1,
        }
    }
    summary.warnings.extend(receipt.warnings);
    bar.inc(n);
    Ok(())
}
