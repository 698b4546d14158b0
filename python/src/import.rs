//! `Store.import_*` and `Store.ingest`: files (or Python item mappings) through the formats
//! importers into the engine's ingest, with a summary of what landed and what did not.
//!
//! The logic is `memdb import`'s (cli/src/import.rs; the CLI crate is no library): a bad
//! record, a path that does not exist, an unreadable file and every file of a folder the format
//! does not take is reported as skipped with its reason, and the good records of the same file
//! still land; photos are named by content, so importing a folder again finds the same items;
//! a JSONL record's `original` file is read relative to its file's folder (the current folder
//! for mappings given to `ingest`) and checked against its SHA-256. Each batch is one commit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use memdb::ops::access::{Capabilities, Capability, Change, check_change};
use memdb::{BlobKind, ItemDraft, Store};
use memdb_formats::ImportError;
use memdb_formats::import::photo::{self, PhotoLimits};
use memdb_formats::import::{ImportReport, Imported, jsonl, locomo, mail};
use serde_json::{Value, json};

use crate::errors::{Raise, Result};

/// Blob bytes staged before a commit.
const MAX_PENDING_BLOB_BYTES: usize = 64 << 20;

/// The file formats of `Store.import_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Jsonl,
    Locomo,
    Mail,
    Photos,
}

impl Format {
    pub(crate) fn parse(name: &str) -> Result<Format> {
        match name {
            "jsonl" => Ok(Format::Jsonl),
            "locomo" => Ok(Format::Locomo),
            "mail" => Ok(Format::Mail),
            "photos" => Ok(Format::Photos),
            other => Err(Raise::value(format!(
                "unknown import format {other:?} (expected jsonl, locomo, mail or photos)"
            ))),
        }
    }
}

/// What an import did.
#[derive(Default)]
pub(crate) struct Summary {
    files: usize,
    added: u64,
    updated: u64,
    unchanged: u64,
    skipped: Vec<String>,
    warnings: Vec<String>,
}

impl Summary {
    pub(crate) fn json(&self) -> Value {
        json!({"files": self.files, "added": self.added, "updated": self.updated,
               "unchanged": self.unchanged, "skipped": self.skipped, "warnings": self.warnings})
    }
}

/// One input file, with the name it goes by (its path relative to the folder given, or its
/// file name).
struct Input {
    path: PathBuf,
    name: String,
}

impl Input {
    fn shown(&self) -> PathBuf {
        self.path.clone()
    }

    fn name(&self) -> &str {
        &self.name
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        std::io::ErrorKind::PermissionDenied => "cannot be read: permission denied".to_owned(),
        _ => format!("cannot be read: {e}"),
    }
}

/// Whether `dir` is the `tmp/` of a Maildir (a sibling `cur/` or `new/` exists).
fn is_maildir_tmp(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "tmp")
        && dir
            .parent()
            .is_some_and(|p| p.join("cur").is_dir() || p.join("new").is_dir())
}

/// The inputs under `path`: the file itself, or every file of a folder in name order
/// (recursively; photos and mail only). Paths that cannot be used go to `skipped`.
fn expand(format: Format, path: &Path, skipped: &mut Vec<String>) -> Vec<Input> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            skipped.push(format!("{}: {}", path.display(), io_reason(&e)));
            return Vec::new();
        }
    };
    if !meta.is_dir() {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        return vec![Input {
            path: path.to_path_buf(),
            name,
        }];
    }
    if matches!(format, Format::Jsonl | Format::Locomo) {
        skipped.push(format!("{}: is a folder (give the files)", path.display()));
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                skipped.push(format!("{}: {}", dir.display(), io_reason(&e)));
                continue;
            }
        };
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = entries
            .filter_map(|e| e.ok().and_then(|e| Some((e.path(), e.file_type().ok()?))))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (entry, kind) in entries.into_iter().rev() {
            if kind.is_dir() {
                if format == Format::Mail && is_maildir_tmp(&entry) {
                    continue;
                }
                stack.push(entry);
            } else if kind.is_symlink() && entry.is_dir() {
                skipped.push(format!(
                    "{}: a link to a folder (not followed; give the folder itself)",
                    entry.display()
                ));
            } else {
                let name = entry
                    .strip_prefix(path)
                    .unwrap_or(&entry)
                    .to_string_lossy()
                    .into_owned();
                out.push(Input { path: entry, name });
            }
        }
    }
    out.sort_by(|a, b| a.name().cmp(b.name()));
    out
}

/// What one input yielded.
fn parse_input(format: Format, input: &Input, bytes: &[u8]) -> ImportReport {
    let shown = input.shown();
    let name = input.name();
    let lower = name.to_ascii_lowercase();
    match format {
        Format::Jsonl => jsonl::parse(&shown, bytes),
        Format::Locomo => locomo::parse(&shown, bytes).unwrap_or_else(|e| ImportReport {
            items: Vec::new(),
            errors: vec![e],
        }),
        Format::Mail => {
            if lower.ends_with(".mbox") {
                mail::parse_mbox(&shown, name, bytes)
            } else if lower.ends_with(".eml") {
                mail::parse_eml(&shown, name, bytes)
            } else {
                mail::parse(&shown, name, bytes)
            }
        }
        Format::Photos => ImportReport::default(),
    }
}

/// Feeds the engine's ingest input by input, and keeps the summary.
pub(crate) struct Importer<'s> {
    ingest: memdb::Ingest<'s>,
    /// The handle's capabilities: without `delete`, an input that would replace a stored item
    /// other than a remembered fact is skipped (SPEC.md §11.1).
    granted: Capabilities,
    /// Photos staged in the pending batch, by external id (a second file of the same photo).
    pending_photos: HashMap<String, (usize, String)>,
    summary: Summary,
}

impl<'s> Importer<'s> {
    pub(crate) fn new(
        store: &'s Store,
        batch_items: usize,
        granted: Capabilities,
    ) -> Result<Importer<'s>> {
        Ok(Importer {
            ingest: store.ingest(memdb::IngestOptions {
                batch_items,
                batch_blob_bytes: MAX_PENDING_BLOB_BYTES,
                ..memdb::IngestOptions::commit_only()
            })?,
            granted,
            pending_photos: HashMap::new(),
            summary: Summary::default(),
        })
    }

    fn stage(
        &mut self,
        draft: ItemDraft,
        blobs: Vec<(BlobKind, Vec<u8>)>,
        origin: String,
    ) -> Result<()> {
        // A put under a stored item's external id replaces that item: an update, which for
        // anything but a remembered fact needs the `delete` capability. An unchanged one is
        // no change at all.
        if !self.granted.allows(Capability::Delete)
            && let Some(stored) = self.stored(draft.fields.external_id.as_deref())?
            && (stored.fields != draft.fields || !blobs.is_empty())
            && let Err(refusal) = check_change(
                stored.id,
                &stored.fields,
                &memdb::Scope::default(),
                self.granted,
                Change::Update,
            )
        {
            self.summary.skipped.push(format!(
                "{origin}: {refusal}: open the store with allow=[\"delete\"] to replace it"
            ));
            return Ok(());
        }
        let committed = self.ingest.add(memdb::IngestItem {
            draft,
            blobs,
            origin,
            vector: None,
        })?;
        if committed {
            self.pending_photos.clear();
        }
        Ok(())
    }

    fn stored(&self, id: Option<&str>) -> Result<Option<memdb::Item>> {
        match id {
            Some(id) => Ok(self.ingest.snapshot().get_by_external_id(id)?),
            None => Ok(None),
        }
    }

    /// One photo file: kept (with its original unless the store has it) or skipped.
    fn photo(&mut self, input: &Input, bytes: Vec<u8>) -> Result<()> {
        let shown = input.shown();
        let name = shown
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut photo = match photo::parse(&name, &bytes, PhotoLimits::default()) {
            Ok(photo) => photo,
            Err(kind) => {
                let error = ImportError {
                    file: shown,
                    location: None,
                    kind,
                };
                self.summary.skipped.push(error.to_string());
                return Ok(());
            }
        };
        if let Some(damage) = &photo.damage {
            self.summary.warnings.push(format!(
                "{}: kept, but damaged ({damage}); tagged {}",
                shown.display(),
                photo::DAMAGED_TAG
            ));
        }
        let id = photo.draft.fields.external_id.clone().unwrap_or_default();
        if let Some((slot, first)) = self.pending_photos.get(&id) {
            let (slot, first) = (*slot, first.clone());
            if let Some(staged) = self.ingest.pending_item_mut(slot) {
                let tags = &mut staged.draft.fields.tags;
                *tags = merge_file_tags(tags, &photo.draft.fields.tags);
            }
            self.summary.warnings.push(format!(
                "{}: the same photo as {first} (one item; both file names tagged)",
                shown.display()
            ));
            return Ok(());
        }
        let blobs = match self.stored(Some(&id))? {
            Some(stored) => {
                photo.draft.fields.tags =
                    merge_file_tags(&stored.fields.tags, &photo.draft.fields.tags);
                Vec::new()
            }
            None => vec![(BlobKind::Original, bytes)],
        };
        self.pending_photos
            .insert(id, (self.ingest.pending(), shown.display().to_string()));
        self.stage(photo.draft, blobs, shown.display().to_string())
    }

    /// One JSONL record with its `original` file, read relative to `base`.
    fn with_original(&mut self, base: &Path, origin: String, item: Imported) -> Result<()> {
        let Some(original) = &item.original else {
            return self.stage(item.draft, Vec::new(), origin);
        };
        let file = base.join(&original.file);
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.summary.skipped.push(format!(
                    "{origin}: field `original.file`: {}: {}",
                    file.display(),
                    io_reason(&e)
                ));
                return Ok(());
            }
        };
        let found = photo::content_id(&bytes);
        let found = found.trim_start_matches("sha256:");
        if found != original.sha256 {
            self.summary.skipped.push(format!(
                "{origin}: field `original.sha256`: {} has SHA-256 {found}, not {}",
                file.display(),
                original.sha256
            ));
            return Ok(());
        }
        let stored = self.stored(item.draft.fields.external_id.as_deref())?;
        let mut has_it = false;
        for blob in stored.iter().flat_map(|s| s.blobs.iter()) {
            if let Some(blob) = self.ingest.snapshot().blob(*blob)?
                && blob.info().kind == BlobKind::Original
                && photo::content_id(&blob) == photo::content_id(&bytes)
            {
                has_it = true;
            }
        }
        let blobs = if has_it {
            Vec::new()
        } else {
            vec![(BlobKind::Original, bytes)]
        };
        self.stage(item.draft, blobs, origin)
    }

    /// Every file under `paths` in `format`.
    pub(crate) fn files(&mut self, format: Format, paths: &[PathBuf]) -> Result<()> {
        let mut inputs = Vec::new();
        for path in paths {
            inputs.extend(expand(format, path, &mut self.summary.skipped));
        }
        for input in &inputs {
            let path = &input.path;
            let bytes = match std::fs::read(path) {
                Ok(b) => b,
                Err(e) => {
                    self.summary
                        .skipped
                        .push(format!("{}: {}", path.display(), io_reason(&e)));
                    continue;
                }
            };
            self.summary.files += 1;
            if format == Format::Photos {
                self.photo(input, bytes)?;
                continue;
            }
            let report = parse_input(format, input, &bytes);
            self.summary
                .skipped
                .extend(report.errors.iter().map(ToString::to_string));
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            for item in report.items {
                let origin = format!("{}:{}", path.display(), item.location);
                self.with_original(&base, origin, item)?;
            }
        }
        Ok(())
    }

    /// Items given as JSONL lines (one per Python mapping, `items[i]` in messages); `original`
    /// files are read relative to the current folder.
    pub(crate) fn lines(&mut self, lines: Vec<(usize, Vec<u8>)>) -> Result<()> {
        for (index, line) in lines {
            let name = format!("items[{index}]");
            let report = jsonl::parse(Path::new(&name), &line);
            for e in report.errors {
                self.summary.skipped.push(format!("{name}: {}", e.kind));
            }
            for item in report.items {
                self.with_original(Path::new(""), name.clone(), item)?;
            }
        }
        Ok(())
    }

    /// Commits what is pending and takes the ingest's counts into the summary.
    pub(crate) fn finish(mut self) -> Result<Summary> {
        let report = self.ingest.finish(None, &mut |_, _, _| {})?;
        self.summary.added = report.added;
        self.summary.updated = report.updated;
        self.summary.unchanged = report.unchanged;
        self.summary.warnings.extend(report.warnings);
        for r in report.rejected {
            self.summary
                .skipped
                .push(format!("{}: {}", r.origin, r.reason));
        }
        Ok(self.summary)
    }
}

/// `new`'s tags with the `file:` tags of `stored` first, then `new`'s own `file:` tags that
/// `stored` lacks, where `new`'s first `file:` tag was.
fn merge_file_tags(stored: &[String], new: &[String]) -> Vec<String> {
    let is_file = |t: &String| t.starts_with("file:");
    let mut files: Vec<String> = stored.iter().filter(|t| is_file(t)).cloned().collect();
    for tag in new.iter().filter(|t| is_file(t)) {
        if !files.contains(tag) {
            files.push(tag.clone());
        }
    }
    let mut out = Vec::with_capacity(new.len() + files.len());
    let at = new.iter().position(is_file).unwrap_or(new.len().min(1));
    out.extend(new[..at].iter().filter(|t| !is_file(t)).cloned());
    out.extend(files);
    out.extend(new[at..].iter().filter(|t| !is_file(t)).cloned());
    out
}
