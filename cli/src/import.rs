//! `memdb import`: read files (or standard input, `-`) with the formats importers and commit
//! them in batches.
//!
//! Nothing given is passed over in silence: a bad record, a path that does not exist, an
//! unreadable file, and every file of a folder that the format does not take (a PNG among
//! photos, a text file among mail) is reported as skipped with its reason, and the good records
//! of the same file still land. Photos kept although their image data is damaged are reported
//! as warnings. Each batch is one commit, so an interrupted import keeps every batch that was
//! committed. Files are read and parsed one at a time and a batch is committed at `--batch`
//! items or 64 MiB of blobs, so memory stays bounded whatever the folder holds.
//!
//! Identity: photos are named by content (`sha256:…`), so importing a folder again, or a
//! subfolder after its parent, finds the same items: such a photo is put without its original
//! (the store keeps the one it has) and with the `file:` tags of the stored item merged in
//! front of its own, so an unchanged photo reports `unchanged` and adds no bytes. A JSONL line's
//! `original` file is read relative to the JSONL file's folder (the current folder for `-`),
//! checked against its SHA-256 and stored as the item's `Original` blob (again only when the
//! stored item does not already hold those bytes).

use crate::error::{CliError, Result};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::progress::Progress;
use memdb::{BlobKind, ItemDraft, Store};
use memdb_formats::ImportError;
use memdb_formats::import::photo::{self, PhotoLimits};
use memdb_formats::import::{ImportReport, Imported, atm, jsonl, locomo, mail};
use serde_json::{Value, json};

use crate::ImportFormat;

/// Blob bytes staged before a commit.
const MAX_PENDING_BLOB_BYTES: usize = 64 << 20;

/// Inputs above which the progress bar is shown.
const PROGRESS_MIN_FILES: usize = 20;

/// The outcome of an import, as printed.
#[derive(Default)]
pub(crate) struct Summary {
    files: usize,
    added: u64,
    updated: u64,
    unchanged: u64,
    /// Items whose files the store had lost to damage, put back by this import.
    restored: u64,
    /// One line per thing not imported: `PATH: reason` or `PATH:LOCATION: reason`.
    skipped: Vec<String>,
    /// Things imported with a caveat (a damaged photo kept), and the store's warnings.
    warnings: Vec<String>,
    /// What the gate (`--gate drop`) did not store: `ORIGIN: reason`.
    gate_dropped: Vec<String>,
    /// Items the gate (`--gate tag`) tagged with its decision.
    gate_tagged: u64,
}

impl Summary {
    pub(crate) fn json(&self) -> Value {
        json!({"files": self.files, "added": self.added, "updated": self.updated,
               "unchanged": self.unchanged, "restored": self.restored,
               "skipped": self.skipped, "warnings": self.warnings,
               "gate_dropped": self.gate_dropped, "gate_tagged": self.gate_tagged})
    }

    pub(crate) fn text(&self) -> String {
        let mut text = format!(
            "imported {} file(s): {} added, {} updated, {} unchanged, {} skipped",
            self.files,
            self.added,
            self.updated,
            self.unchanged,
            self.skipped.len()
        );
        if self.restored > 0 {
            text.push_str(&format!(
                ", {} restored (their files, lost to damage, are back)",
                self.restored
            ));
        }
        if !self.gate_dropped.is_empty() {
            text.push_str(&format!(
                ", {} not memorable (dropped by the gate)",
                self.gate_dropped.len()
            ));
        }
        if self.gate_tagged > 0 {
            text.push_str(&format!(", {} tagged by the gate", self.gate_tagged));
        }
        for d in &self.gate_dropped {
            text.push_str(&format!("\n  dropped by the gate: {d}"));
        }
        for w in &self.warnings {
            text.push_str(&format!("\n  warning: {w}"));
        }
        text
    }

    /// A run that was given something and took nothing from it: nothing added, updated or
    /// found unchanged, and something skipped. The command then fails (exit status 2).
    pub(crate) fn imported_nothing(&self) -> bool {
        self.added + self.updated + self.unchanged + self.restored == 0 && !self.skipped.is_empty()
    }

    /// Counts of what was skipped, for the one-line failure message.
    pub(crate) fn skipped(&self) -> usize {
        self.skipped.len()
    }
}

/// One input: a file (with the name it goes by: its path relative to the folder given, or its
/// file name) or standard input.
enum Input {
    File { path: PathBuf, name: String },
    Stdin,
}

impl Input {
    /// Its bytes.
    fn read(&self) -> std::io::Result<Vec<u8>> {
        match self {
            Input::File { path, .. } => std::fs::read(path),
            Input::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .read_to_end(&mut bytes)
                    .map(|_| bytes)
            }
        }
    }

    /// The path errors are reported against.
    fn shown(&self) -> PathBuf {
        match self {
            Input::File { path, .. } => path.clone(),
            Input::Stdin => PathBuf::from("-"),
        }
    }
}

/// The inputs under `path`: standard input for `-`, the file itself, or every file of a
/// folder in name order (recursively; photos and mail only). Paths that cannot be used are
/// reported in `skipped`.
fn expand(format: ImportFormat, path: &Path, skipped: &mut Vec<String>) -> Vec<Input> {
    if path.as_os_str() == "-" {
        return vec![Input::Stdin];
    }
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
        return vec![Input::File {
            path: path.to_path_buf(),
            name,
        }];
    }
    if matches!(format, ImportFormat::Jsonl | ImportFormat::Locomo) {
        skipped.push(format!("{}: is a folder (give the files)", path.display()));
        return Vec::new();
    }
    if format == ImportFormat::Atm {
        return atm_files(path, skipped);
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
                if format == ImportFormat::Mail && is_maildir_tmp(&entry) {
                    // Messages still being delivered; `cur/` and `new/` hold the mail.
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
                out.push(Input::File { path: entry, name });
            }
        }
    }
    out.sort_by(|a, b| match (a, b) {
        (Input::File { name: x, .. }, Input::File { name: y, .. }) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    });
    out
}

/// The ATM-Bench memory files in folder `dir` (not its subfolders), in the order
/// [`atm::MemoryFile::ALL`] lists them; a folder with none of them is skipped with a reason.
fn atm_files(dir: &Path, skipped: &mut Vec<String>) -> Vec<Input> {
    let out: Vec<Input> = atm::MemoryFile::ALL
        .iter()
        .map(|kind| dir.join(kind.file_name()))
        .filter(|path| path.is_file())
        .map(|path| Input::File {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path,
        })
        .collect();
    if out.is_empty() {
        let names: Vec<&str> = atm::MemoryFile::ALL.iter().map(|k| k.file_name()).collect();
        skipped.push(format!(
            "{}: holds no ATM-Bench memory file (looked for {})",
            dir.display(),
            names.join(", ")
        ));
    }
    out
}

/// The kind of ATM-Bench memory file `name` is, by its name.
fn atm_kind(name: &str) -> Option<atm::MemoryFile> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    atm::MemoryFile::ALL
        .into_iter()
        .find(|kind| kind.file_name() == base)
}

/// The media files under `dirs` (recursively), by file name: where an ATM-Bench image record's
/// picture is, when the user downloaded the media too. The first of two files with one name
/// wins (name order), as the benchmark's ids are unique names.
fn media_index(dirs: &[PathBuf]) -> HashMap<String, PathBuf> {
    let mut index = HashMap::new();
    let mut stack: Vec<PathBuf> = dirs.iter().filter(|d| d.is_dir()).cloned().collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = entries
            .filter_map(|e| e.ok().and_then(|e| Some((e.path(), e.file_type().ok()?))))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, kind) in entries {
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned())
                && !name.ends_with(".json")
            {
                index.entry(name).or_insert(path);
            }
        }
    }
    index
}

/// Whether `dir` is the `tmp/` of a Maildir (a sibling `cur/` or `new/` exists).
fn is_maildir_tmp(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "tmp")
        && dir
            .parent()
            .is_some_and(|p| p.join("cur").is_dir() || p.join("new").is_dir())
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        std::io::ErrorKind::PermissionDenied => "cannot be read: permission denied".to_owned(),
        _ => format!("cannot be read: {e}"),
    }
}

/// What one input yielded: records (with a JSONL line's original file named) and errors.
fn parse_input(format: ImportFormat, input: &Input, bytes: &[u8]) -> ImportReport {
    let shown = input.shown();
    let name = match input {
        Input::File { name, .. } => name.as_str(),
        Input::Stdin => "",
    };
    let lower = name.to_ascii_lowercase();
    match format {
        ImportFormat::Jsonl => jsonl::parse(&shown, bytes),
        ImportFormat::Locomo => locomo::parse(&shown, bytes).unwrap_or_else(|e| ImportReport {
            items: Vec::new(),
            errors: vec![e],
        }),
        ImportFormat::Mail => {
            let id_name = if name.is_empty() { "stdin" } else { name };
            if lower.ends_with(".mbox") {
                mail::parse_mbox(&shown, id_name, bytes)
            } else if lower.ends_with(".eml") {
                mail::parse_eml(&shown, id_name, bytes)
            } else {
                mail::parse(&shown, id_name, bytes)
            }
        }
        ImportFormat::Atm => match atm_kind(name) {
            Some(kind) => atm::parse(kind, &shown, bytes),
            None => {
                let names: Vec<&str> = atm::MemoryFile::ALL.iter().map(|k| k.file_name()).collect();
                ImportReport {
                    items: Vec::new(),
                    errors: vec![ImportError {
                        file: shown,
                        location: None,
                        kind: memdb_formats::ImportErrorKind::Unsupported {
                            found: "not an ATM-Bench memory file".to_owned(),
                            expected: format!("its files are named {}", names.join(", ")),
                        },
                    }],
                }
            }
        },
        // Photos go through `Importer::photo`, which keeps the original bytes.
        ImportFormat::Photos => ImportReport::default(),
    }
}

/// Feeds the engine's ingest file by file, and keeps the summary.
struct Importer<'s> {
    ingest: memdb::Ingest<'s>,
    /// Photos staged in the ingest's pending batch, by external id, to merge a second file of
    /// the same photo.
    pending_photos: HashMap<String, (usize, String)>,
    summary: Summary,
}

impl<'s> Importer<'s> {
    fn new(
        store: &'s Store,
        batch_size: usize,
        gate: Option<memdb::gate::GateStage>,
    ) -> Result<Importer<'s>> {
        Ok(Importer {
            ingest: store.ingest(memdb::IngestOptions {
                batch_items: batch_size,
                batch_blob_bytes: MAX_PENDING_BLOB_BYTES,
                gate,
                ..memdb::IngestOptions::commit_only()
            })?,
            pending_photos: HashMap::new(),
            summary: Summary::default(),
        })
    }

    fn skip(&mut self, bar: &Progress, what: String) {
        bar.suspend(|| eprintln!("memdb: skipped {what}"));
        self.summary.skipped.push(what);
    }

    fn stage(
        &mut self,
        draft: ItemDraft,
        blobs: Vec<(BlobKind, Vec<u8>)>,
        origin: String,
    ) -> Result<()> {
        let committed = self
            .ingest
            .add(memdb::IngestItem {
                draft,
                blobs,
                origin,
                vector: None,
            })
            .map_err(CliError::Commit)?;
        if committed {
            self.pending_photos.clear();
        }
        Ok(())
    }

    /// The stored item with external id `id`, if any.
    fn stored(&self, id: Option<&str>) -> Result<Option<memdb::Item>> {
        match id {
            Some(id) => self
                .ingest
                .snapshot()
                .get_by_external_id(id)
                .map_err(CliError::from),
            None => Ok(None),
        }
    }

    /// One photo file: kept (with its original unless the store has it) or skipped.
    fn photo(&mut self, bar: &Progress, input: &Input, bytes: Vec<u8>) -> Result<()> {
        let shown = input.shown();
        let name = match input {
            Input::File { path, .. } => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Input::Stdin => String::new(),
        };
        let mut photo = match photo::parse(&name, &bytes, PhotoLimits::default()) {
            Ok(photo) => photo,
            Err(kind) => {
                let error = ImportError {
                    file: shown,
                    location: None,
                    kind,
                };
                self.skip(bar, error.to_string());
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
            // The same picture twice in this batch: one item, both names.
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
                // The store has this picture: keep its original and its file names.
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

    /// One JSONL line's record with its `original` file, if it names one.
    fn with_original(&mut self, bar: &Progress, input: &Input, item: Imported) -> Result<()> {
        let origin = format!("{}:{}", input.shown().display(), item.location);
        let Some(original) = &item.original else {
            return self.stage(item.draft, Vec::new(), origin);
        };
        let base = match input {
            Input::File { path, .. } => path.parent().map(Path::to_path_buf).unwrap_or_default(),
            Input::Stdin => PathBuf::new(),
        };
        let file = base.join(&original.file);
        let at = origin.clone();
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                let why = io_reason(&e);
                self.skip(
                    bar,
                    format!("{at}: field `original.file`: {}: {why}", file.display()),
                );
                return Ok(());
            }
        };
        let found = photo::content_id(&bytes);
        let found = found.trim_start_matches("sha256:");
        if found != original.sha256 {
            self.skip(
                bar,
                format!(
                    "{at}: field `original.sha256`: {} has SHA-256 {found}, not {}",
                    file.display(),
                    original.sha256
                ),
            );
            return Ok(());
        }
        self.stage_with_original(item.draft, bytes, origin)
    }

    /// One ATM-Bench record: an image keeps its picture as its original when the picture is
    /// among `media` and is a JPEG the pages can show (else the record lands alone, with a
    /// warning), unless the stored item already holds those bytes.
    fn atm_record(
        &mut self,
        input: &Input,
        item: Imported,
        media: &HashMap<String, PathBuf>,
    ) -> Result<()> {
        let origin = format!("{}:{}", input.shown().display(), item.location);
        let file = item
            .draft
            .fields
            .tags
            .iter()
            .find_map(|t| t.strip_prefix("file:"))
            .and_then(|name| media.get(name))
            .filter(|_| item.draft.fields.source == memdb::Source::Image)
            .cloned();
        let Some(file) = file else {
            return self.stage(item.draft, Vec::new(), origin);
        };
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.summary.warnings.push(format!(
                    "{origin}: {}: {}; the record is kept without its picture",
                    file.display(),
                    io_reason(&e)
                ));
                return self.stage(item.draft, Vec::new(), origin);
            }
        };
        if let Err(kind) = photo::parse(
            &file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            &bytes,
            PhotoLimits::default(),
        ) {
            self.summary.warnings.push(format!(
                "{origin}: {}: {kind}; the record is kept without its picture",
                file.display()
            ));
            return self.stage(item.draft, Vec::new(), origin);
        }
        self.stage_with_original(item.draft, bytes, origin)
    }

    /// Stages `draft` with `bytes` as its original, unless the stored item of the same external
    /// id already holds those bytes as its original (then it keeps them: a re-import adds none).
    fn stage_with_original(
        &mut self,
        draft: ItemDraft,
        bytes: Vec<u8>,
        origin: String,
    ) -> Result<()> {
        let stored = self.stored(draft.fields.external_id.as_deref())?;
        let wanted = photo::content_id(&bytes);
        let mut has_it = false;
        for blob in stored.iter().flat_map(|s| s.blobs.iter()) {
            if let Some(blob) = self.ingest.snapshot().blob(*blob)?
                && blob.info().kind == BlobKind::Original
                && photo::content_id(&blob) == wanted
            {
                has_it = true;
            }
        }
        let blobs = if has_it {
            Vec::new()
        } else {
            vec![(BlobKind::Original, bytes)]
        };
        self.stage(draft, blobs, origin)
    }

    /// Commits what is pending and takes the ingest's counts into the summary.
    fn finish(mut self) -> Result<Summary> {
        let report = self
            .ingest
            .finish(None, &mut |_, _, _| {})
            .map_err(CliError::Commit)?;
        self.summary.added = report.added;
        self.summary.updated = report.updated;
        self.summary.unchanged = report.unchanged;
        self.summary.restored = report.restored;
        self.summary.warnings.extend(report.warnings);
        self.summary.gate_tagged = report.gate_tagged;
        self.summary.gate_dropped = report
            .gate_dropped
            .into_iter()
            .map(|r| format!("{}: {}", r.origin, r.reason))
            .collect();
        for r in report.rejected {
            let what = format!("{}: {}", r.origin, r.reason);
            eprintln!("memdb: skipped {what}");
            self.summary.skipped.push(what);
        }
        Ok(self.summary)
    }
}

/// `new`'s tags with the `file:` tags of `stored` first, then `new`'s own `file:` tags that
/// `stored` lacks, where `new`'s first `file:` tag was (after `photo`).
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

/// What `paths` would import, without a store (`memdb gate check`'s dry run): each record's
/// origin (`FILE:LOCATION`) and draft, and what could not be read or parsed.
pub(crate) fn drafts(
    format: ImportFormat,
    paths: &[PathBuf],
) -> (Vec<(String, ItemDraft)>, Vec<String>) {
    let (mut drafts, mut skipped) = (Vec::new(), Vec::new());
    let mut inputs = Vec::new();
    for path in paths {
        inputs.extend(expand(format, path, &mut skipped));
    }
    for input in &inputs {
        let bytes = match input.read() {
            Ok(b) => b,
            Err(e) => {
                skipped.push(format!("{}: {}", input.shown().display(), io_reason(&e)));
                continue;
            }
        };
        let shown = input.shown();
        if format == ImportFormat::Photos {
            let name = shown
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match photo::parse(&name, &bytes, PhotoLimits::default()) {
                Ok(photo) => drafts.push((shown.display().to_string(), photo.draft)),
                Err(kind) => skipped.push(
                    ImportError {
                        file: shown,
                        location: None,
                        kind,
                    }
                    .to_string(),
                ),
            }
            continue;
        }
        let report = parse_input(format, input, &bytes);
        skipped.extend(report.errors.iter().map(ToString::to_string));
        drafts.extend(
            report
                .items
                .into_iter()
                .map(|item| (format!("{}:{}", shown.display(), item.location), item.draft)),
        );
    }
    (drafts, skipped)
}

pub(crate) fn import_files(
    store: &Store,
    format: ImportFormat,
    paths: &[PathBuf],
    batch_size: usize,
    show_progress: bool,
    gate: Option<memdb::gate::GateStage>,
) -> Result<Summary> {
    let mut importer = Importer::new(store, batch_size, gate)?;
    let mut inputs = Vec::new();
    for path in paths {
        let mut skipped = Vec::new();
        inputs.extend(expand(format, path, &mut skipped));
        for what in skipped {
            importer.skip(&crate::progress::bar(0, "", false), what);
        }
    }
    // ATM-Bench images find their pictures anywhere under the folders given.
    let media = if format == ImportFormat::Atm {
        media_index(paths)
    } else {
        HashMap::new()
    };
    let mut bar = crate::progress::bar(
        inputs.len() as u64,
        "importing files",
        show_progress && inputs.len() > PROGRESS_MIN_FILES,
    );
    for input in &inputs {
        bar.inc(1);
        let bytes = match input.read() {
            Ok(b) => b,
            Err(e) => {
                let what = format!("{}: {}", input.shown().display(), io_reason(&e));
                importer.skip(&bar, what);
                continue;
            }
        };
        importer.summary.files += 1;
        if format == ImportFormat::Photos {
            importer.photo(&bar, input, bytes)?;
            continue;
        }
        let report = parse_input(format, input, &bytes);
        for e in &report.errors {
            importer.skip(&bar, e.to_string());
        }
        for item in report.items {
            if format == ImportFormat::Atm {
                importer.atm_record(input, item, &media)?;
            } else {
                importer.with_original(&bar, input, item)?;
            }
        }
    }
    bar.finish_and_clear();
    importer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn file_tags_merge_stored_first_in_place() {
        let stored = tags(&["photo", "file:a.jpg", "file:b.jpg", "camera:X"]);
        let new = tags(&["photo", "file:c.jpg", "camera:X", "image:damaged"]);
        assert_eq!(
            merge_file_tags(&stored, &new),
            tags(&[
                "photo",
                "file:a.jpg",
                "file:b.jpg",
                "file:c.jpg",
                "camera:X",
                "image:damaged"
            ])
        );
        let again = tags(&["photo", "file:b.jpg", "camera:X"]);
        assert_eq!(
            merge_file_tags(&stored, &again),
            tags(&["photo", "file:a.jpg", "file:b.jpg", "camera:X"])
        );
        // A photo read from standard input has no name of its own.
        assert_eq!(
            merge_file_tags(&stored, &tags(&["photo", "camera:X"])),
            tags(&["photo", "file:a.jpg", "file:b.jpg", "camera:X"])
        );
    }
}
