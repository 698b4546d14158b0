//! `memdb import`: parse files with the formats importers and commit them in batches.
//!
//! A bad record or an unreadable file is reported (file, line or field, reason) and skipped;
//! the good records of the same file still land. Each batch is one commit, so an interrupted
//! import keeps every batch that was committed. Photos and mail take folders too (walked in
//! name order); their external ids are paths relative to the folder given, so importing the
//! same folder again updates instead of duplicating. Files are read and parsed one at a time
//! and a batch is committed at `--batch` items or 64 MiB of blobs, so memory stays bounded
//! whatever the folder holds.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use memdb::{BlobKind, EventTime, ItemDraft, PutStatus, Store};
use memdb_formats::ImportError;
use memdb_formats::import::photo::{self, PhotoLimits};
use memdb_formats::import::{ImportReport, jsonl, locomo, mail};
use serde_json::{Value, json};

/// An item to put and the blobs it owns.
type Staged = (ItemDraft, Vec<(BlobKind, Vec<u8>)>);

/// Blob bytes staged before a commit.
const MAX_PENDING_BLOB_BYTES: usize = 64 << 20;

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

/// The files a format reads under `path`: the file itself, or a folder's matching files in
/// name order (recursively), each with the name that becomes its external id.
fn expand(format: ImportFormat, path: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    let wanted = |p: &Path| {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match format {
            ImportFormat::Photos => matches!(ext.as_deref(), Some("jpg" | "jpeg")),
            ImportFormat::Mail => matches!(ext.as_deref(), Some("eml" | "mbox")),
            ImportFormat::Jsonl | ImportFormat::Locomo => true,
        }
    };
    if !path.is_dir() {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        return Ok(vec![(path.to_path_buf(), name)]);
    }
    if matches!(format, ImportFormat::Jsonl | ImportFormat::Locomo) {
        return Err(format!("{}: is a folder (give the files)", path.display()));
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries.into_iter().rev() {
            if entry.is_dir() {
                stack.push(entry);
            } else if wanted(&entry) {
                let name = entry
                    .strip_prefix(path)
                    .unwrap_or(&entry)
                    .to_string_lossy()
                    .into_owned();
                out.push((entry, name));
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// The file's modification time, the capture time of last resort.
fn file_time(path: &Path) -> Option<EventTime> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let ms = modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis();
    Some(EventTime::utc(i64::try_from(ms).ok()?))
}

/// Parses one file into drafts with their blobs.
fn parse_file(
    format: ImportFormat,
    file: &Path,
    name: &str,
    bytes: Vec<u8>,
) -> (Vec<Staged>, Vec<ImportError>) {
    let report = match format {
        ImportFormat::Jsonl => jsonl::parse(file, &bytes),
        ImportFormat::Locomo => match locomo::parse(file, &bytes) {
            Ok(r) => r,
            Err(e) => ImportReport {
                items: Vec::new(),
                errors: vec![e],
            },
        },
        ImportFormat::Mail if name.to_ascii_lowercase().ends_with(".mbox") => {
            mail::parse_mbox(file, name, &bytes, file_time(file))
        }
        ImportFormat::Mail => mail::parse_eml(file, name, &bytes, file_time(file)),
        ImportFormat::Photos => {
            return match photo::parse(name, &bytes, file_time(file), PhotoLimits::default()) {
                Ok(p) => (
                    vec![(p.draft, vec![(BlobKind::Original, bytes)])],
                    Vec::new(),
                ),
                Err(kind) => (
                    Vec::new(),
                    vec![ImportError {
                        file: file.to_path_buf(),
                        location: None,
                        kind,
                    }],
                ),
            };
        }
    };
    (
        report
            .items
            .into_iter()
            .map(|i| (i.draft, Vec::new()))
            .collect(),
        report.errors,
    )
}

pub(crate) fn import_files(
    store: &Store,
    format: ImportFormat,
    paths: &[PathBuf],
    batch_size: usize,
    show_progress: bool,
) -> Result<Summary, String> {
    let mut summary = Summary::default();
    let mut files = Vec::new();
    for path in paths {
        match expand(format, path) {
            Ok(found) => files.extend(found),
            Err(msg) => {
                eprintln!("memdb: skipped {msg}");
                summary.errors.push(msg);
            }
        }
    }
    let bar = if show_progress && files.len() > 20 {
        let bar = ProgressBar::new(files.len() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {pos}/{len} files ({per_sec}, {eta} left)")
        {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut pending: Vec<Staged> = Vec::new();
    let mut pending_bytes = 0;
    for (file, name) in &files {
        bar.inc(1);
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                let msg = format!("{}: {e}", file.display());
                bar.suspend(|| eprintln!("memdb: skipped {msg}"));
                summary.errors.push(msg);
                continue;
            }
        };
        let (drafts, errors) = parse_file(format, file, name, bytes);
        for e in &errors {
            bar.suspend(|| eprintln!("memdb: skipped {e}"));
            summary.errors.push(e.to_string());
        }
        summary.files += 1;
        for (draft, blobs) in drafts {
            pending_bytes += blobs.iter().map(|b| b.1.len()).sum::<usize>();
            pending.push((draft, blobs));
            if pending.len() >= batch_size || pending_bytes >= MAX_PENDING_BLOB_BYTES {
                commit(store, &mut pending, &mut summary)?;
                pending_bytes = 0;
            }
        }
    }
    commit(store, &mut pending, &mut summary)?;
    bar.finish_and_clear();
    Ok(summary)
}

fn commit(store: &Store, pending: &mut Vec<Staged>, summary: &mut Summary) -> Result<(), String> {
    if pending.is_empty() {
        return Ok(());
    }
    let mut batch = store.batch();
    for (draft, blobs) in pending.drain(..) {
        if blobs.is_empty() {
            batch.put(draft);
        } else {
            batch.put_with_blobs(draft, blobs);
        }
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
    Ok(())
}
