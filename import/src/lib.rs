//! memdb's file-level importer: files and folders in memdb's formats (SGM JSONL, LoCoMo, photos,
//! mail, ATM-Bench's memory files) into a store, through the engine's ingest. `memdb import`,
//! the Python package's `Store.import_*` and `Store.ingest` all call it.
//!
//! Nothing given is passed over in silence: a bad record, a path that does not exist, an
//! unreadable file, and every file of a folder that the format does not take (a PNG among
//! photos, a text file among mail) is reported as skipped with its reason, and the good records
//! of the same file still land. Photos kept although their image data is damaged are reported
//! as warnings. Each batch is one commit, so an interrupted import keeps every batch that was
//! committed. Files are read and parsed one at a time and a batch is committed at
//! [`ImportOptions::batch_items`] items or 64 MiB of blobs, so memory stays bounded whatever
//! the folder holds.
//!
//! Identity: photos are named by content (`sha256:…`), so importing a folder again, or a
//! subfolder after its parent, finds the same items: such a photo is put without its original
//! (the store keeps the one it has) and with the `file:` tags of the stored item merged in
//! front of its own, so an unchanged photo reports `unchanged` and adds no bytes. A JSONL line's
//! `original` file is read relative to the JSONL file's folder (the current folder for standard
//! input and for records given in memory), checked against its SHA-256 and stored as the item's
//! `Original` blob (again only when the stored item does not already hold those bytes).
//!
//! Invariants:
//! - every input is accounted for: it lands (added, updated, unchanged, restored), or its path
//!   or record is in [`Summary::skipped`] with why, or (a kept photo's damage, a record kept
//!   without its picture) in [`Summary::warnings`];
//! - without [`Capability::Delete`] an input that would replace a stored item other than a
//!   remembered fact is skipped before anything is written (SPEC.md §11.1).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use memdb::ops::access::{Capabilities, Capability, Change, check_change};
use memdb::{BlobKind, ItemDraft, Store};
use memdb_formats::ImportError;
use memdb_formats::import::photo::{self, PhotoLimits};
use memdb_formats::import::{ImportReport, Imported, atm, jsonl, locomo, mail};
use serde_json::{Value, json};

/// Blob bytes staged before a commit.
const MAX_PENDING_BLOB_BYTES: usize = 64 << 20;

/// Why an import stopped. Records and files that cannot be used are not errors: they are
/// skipped and reported in the [`Summary`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A batch failed to commit; the batches before it are in the store.
    #[error("commit failed (earlier batches are kept): {0}")]
    Commit(#[source] memdb::Error),
    /// Reading the store failed (an item's stored originals, the ingest's start).
    #[error(transparent)]
    Engine(#[from] memdb::Error),
}

impl From<memdb::StoreError> for Error {
    fn from(error: memdb::StoreError) -> Error {
        Error::Engine(error.into())
    }
}

/// The importer's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A file format the importer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One SGM item per line (SPEC.md §8.1); a line's `original` file is stored with it.
    Jsonl,
    /// LoCoMo conversation JSON, or the released locomo10.json array: one item per turn.
    Locomo,
    /// JPEG photos (files or folders); originals kept; named by content.
    Photos,
    /// E-mail (files or folders): `.eml` messages, mbox mailboxes, Maildir folders.
    Mail,
    /// ATM-Bench's memory files (a folder holding any of them, or the files): one item per
    /// record; images whose pictures are under the folders given keep them as originals.
    Atm,
}

impl Format {
    /// Every format, in the order they are listed.
    pub const ALL: [Format; 5] = [
        Format::Jsonl,
        Format::Locomo,
        Format::Photos,
        Format::Mail,
        Format::Atm,
    ];

    /// The format's name: `jsonl`, `locomo`, `photos`, `mail`, `atm`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Locomo => "locomo",
            Format::Photos => "photos",
            Format::Mail => "mail",
            Format::Atm => "atm",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// How an import runs.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Items per commit (at least 1).
    pub batch_items: usize,
    /// The memorability gate, run on each record before it is staged.
    pub gate: Option<memdb::gate::GateStage>,
    /// What the caller may destroy: without [`Capability::Delete`], an input that would
    /// replace a stored item other than a remembered fact is skipped.
    pub granted: Capabilities,
    /// Whether the path `-` is standard input (the command line's convention).
    pub dash_is_stdin: bool,
}

impl Default for ImportOptions {
    /// 1,000 items per commit, no gate, no capability (an import replaces only remembered facts
    /// unless the caller grants `delete`, as the store's owner at the command line does), `-` a
    /// file name.
    fn default() -> Self {
        ImportOptions {
            batch_items: 1000,
            gate: None,
            granted: Capabilities::NONE,
            dash_is_stdin: false,
        }
    }
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    /// Files read.
    pub files: usize,
    /// Items added.
    pub added: u64,
    /// Items that replaced a stored one.
    pub updated: u64,
    /// Items the store already held as they are.
    pub unchanged: u64,
    /// Items whose files the store had lost to damage, put back by this import.
    pub restored: u64,
    /// One line per thing not imported: `PATH: reason` or `PATH:LOCATION: reason`.
    pub skipped: Vec<String>,
    /// Things imported with a caveat (a damaged photo kept), and the store's warnings.
    pub warnings: Vec<String>,
    /// What the gate (in `drop` mode) did not store: `ORIGIN: reason`.
    pub gate_dropped: Vec<String>,
    /// Items the gate (in `tag` mode) tagged with its decision.
    pub gate_tagged: u64,
}

impl Summary {
    /// The summary as one JSON object.
    pub fn json(&self) -> Value {
        json!({"files": self.files, "added": self.added, "updated": self.updated,
               "unchanged": self.unchanged, "restored": self.restored,
               "skipped": self.skipped, "warnings": self.warnings,
               "gate_dropped": self.gate_dropped, "gate_tagged": self.gate_tagged})
    }

    /// The summary in words: a line of counts, then one line per gate drop and warning.
    pub fn text(&self) -> String {
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

    /// A run that was given something and took nothing from it: nothing added, updated, found
    /// unchanged or restored, and something skipped.
    pub fn imported_nothing(&self) -> bool {
        self.added + self.updated + self.unchanged + self.restored == 0 && !self.skipped.is_empty()
    }
}

/// What an import tells its caller as it goes (a progress bar, messages); every method does
/// nothing by default.
pub trait Observer {
    /// The inputs are known: `files` of them will be read.
    fn started(&mut self, files: usize) {
        let _ = files;
    }
    /// One more input was read (or failed to be).
    fn file_done(&mut self) {}
    /// Something was skipped (also kept in [`Summary::skipped`]).
    fn skipped(&mut self, what: &str) {
        let _ = what;
    }
    /// The inputs are all read; what remains is the last commit.
    fn finished(&mut self) {}
}

/// An observer that hears nothing.
impl Observer for () {}

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

    /// The name it goes by (empty for standard input).
    fn name(&self) -> &str {
        match self {
            Input::File { name, .. } => name,
            Input::Stdin => "",
        }
    }

    /// Its folder's name and its file name (`Wedding 2019/notes.jpg`): what a photo is told it
    /// is called (empty for standard input).
    fn folder_and_name(&self) -> String {
        match self {
            Input::File { path, .. } => folder_and_name(path),
            Input::Stdin => String::new(),
        }
    }

    /// The folder a record's `original` file is read relative to.
    fn base(&self) -> PathBuf {
        match self {
            Input::File { path, .. } => path.parent().map(Path::to_path_buf).unwrap_or_default(),
            Input::Stdin => PathBuf::new(),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `folder/file` of `path`: the name of the folder holding it (none at a root) and its own.
/// A `/` inside either name becomes a space, so the two stay two.
fn folder_and_name(path: &Path) -> String {
    let name = file_name(path).replace('/', " ");
    match path
        .parent()
        .and_then(Path::file_name)
        .map(|f| f.to_string_lossy().replace('/', " "))
    {
        Some(folder) if !folder.is_empty() => format!("{folder}/{name}"),
        _ => name,
    }
}

/// The inputs under `path`: standard input for `-` (when `dash_is_stdin`), the file itself, or
/// every file of a folder in name order (recursively; photos and mail only; ATM-Bench's memory
/// files of the folder). Paths that cannot be used are reported in `skipped`.
fn expand(
    format: Format,
    path: &Path,
    dash_is_stdin: bool,
    skipped: &mut Vec<String>,
) -> Vec<Input> {
    if dash_is_stdin && path.as_os_str() == "-" {
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
    if matches!(format, Format::Jsonl | Format::Locomo) {
        skipped.push(format!("{}: is a folder (give the files)", path.display()));
        return Vec::new();
    }
    if format == Format::Atm {
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
                if format == Format::Mail && is_maildir_tmp(&entry) {
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
    out.sort_by(|a, b| a.name().cmp(b.name()));
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
            name: file_name(&path),
            path,
        })
        .collect();
    if out.is_empty() {
        skipped.push(format!(
            "{}: holds no ATM-Bench memory file (looked for {})",
            dir.display(),
            atm_file_names()
        ));
    }
    out
}

fn atm_file_names() -> String {
    let names: Vec<&str> = atm::MemoryFile::ALL.iter().map(|k| k.file_name()).collect();
    names.join(", ")
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

/// Why a file could not be read, in words.
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        std::io::ErrorKind::PermissionDenied => "cannot be read: permission denied".to_owned(),
        _ => format!("cannot be read: {e}"),
    }
}

/// What one input yielded: records (with a JSONL line's original file named) and errors.
/// Photos are not parsed here: [`Importer`] keeps their bytes as originals.
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
            let id_name = if name.is_empty() { "stdin" } else { name };
            if lower.ends_with(".mbox") {
                mail::parse_mbox(&shown, id_name, bytes)
            } else if lower.ends_with(".eml") {
                mail::parse_eml(&shown, id_name, bytes)
            } else {
                mail::parse(&shown, id_name, bytes)
            }
        }
        Format::Atm => match atm_kind(name) {
            Some(kind) => atm::parse(kind, &shown, bytes),
            None => ImportReport {
                items: Vec::new(),
                errors: vec![ImportError {
                    file: shown,
                    location: None,
                    kind: memdb_formats::ImportErrorKind::Unsupported {
                        found: "not an ATM-Bench memory file".to_owned(),
                        expected: format!("its files are named {}", atm_file_names()),
                    },
                }],
            },
        },
        Format::Photos => ImportReport::default(),
    }
}

/// Feeds the engine's ingest input by input, and keeps the summary. Call [`Importer::files`]
/// and [`Importer::records`] as often as needed, then [`Importer::finish`] to commit the last
/// batch.
pub struct Importer<'s, 'o> {
    ingest: memdb::Ingest<'s>,
    granted: Capabilities,
    dash_is_stdin: bool,
    observer: &'o mut dyn Observer,
    /// Photos staged in the ingest's pending batch, by external id, to merge a second file of
    /// the same photo.
    pending_photos: HashMap<String, (usize, String)>,
    summary: Summary,
}

impl<'s, 'o> Importer<'s, 'o> {
    /// An import into `store`, telling `observer` how it goes.
    pub fn new(
        store: &'s Store,
        options: ImportOptions,
        observer: &'o mut dyn Observer,
    ) -> Result<Importer<'s, 'o>> {
        Ok(Importer {
            ingest: store.ingest(memdb::IngestOptions {
                batch_items: options.batch_items.max(1),
                batch_blob_bytes: MAX_PENDING_BLOB_BYTES,
                gate: options.gate,
                ..memdb::IngestOptions::commit_only()
            })?,
            granted: options.granted,
            dash_is_stdin: options.dash_is_stdin,
            observer,
            pending_photos: HashMap::new(),
            summary: Summary::default(),
        })
    }

    fn skip(&mut self, what: String) {
        self.observer.skipped(&what);
        self.summary.skipped.push(what);
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
            self.skip(format!(
                "{origin}: {refusal}: open the store with allow=[\"delete\"] to replace it"
            ));
            return Ok(());
        }
        let committed = self
            .ingest
            .add(memdb::IngestItem {
                draft,
                blobs,
                origin,
                vector: None,
            })
            .map_err(Error::Commit)?;
        if committed {
            self.pending_photos.clear();
        }
        Ok(())
    }

    /// The stored item with external id `id`, if any.
    fn stored(&self, id: Option<&str>) -> Result<Option<memdb::Item>> {
        match id {
            Some(id) => Ok(self.ingest.snapshot().get_by_external_id(id)?),
            None => Ok(None),
        }
    }

    /// One photo file: kept (with its original unless the store has it) or skipped.
    fn photo(&mut self, input: &Input, bytes: Vec<u8>) -> Result<()> {
        let shown = input.shown();
        let mut photo = match photo::parse(&input.folder_and_name(), &bytes, PhotoLimits::default())
        {
            Ok(photo) => photo,
            Err(kind) => {
                let error = ImportError {
                    file: shown,
                    location: None,
                    kind,
                };
                self.skip(error.to_string());
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

    /// One JSONL record with its `original` file, if it names one, read relative to `base`.
    fn with_original(&mut self, base: &Path, origin: String, item: Imported) -> Result<()> {
        let Some(original) = &item.original else {
            return self.stage(item.draft, Vec::new(), origin);
        };
        let file = base.join(&original.file);
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                let why = io_reason(&e);
                self.skip(format!(
                    "{origin}: field `original.file`: {}: {why}",
                    file.display()
                ));
                return Ok(());
            }
        };
        let found = photo::content_id(&bytes);
        let found = found.trim_start_matches("sha256:");
        if found != original.sha256 {
            self.skip(format!(
                "{origin}: field `original.sha256`: {} has SHA-256 {found}, not {}",
                file.display(),
                original.sha256
            ));
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
        if let Err(kind) = photo::parse(&folder_and_name(&file), &bytes, PhotoLimits::default()) {
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

    /// Every file under `paths` in `format`: a file, or a folder's files (photos, mail, ATM-Bench;
    /// ATM-Bench images find their pictures anywhere under the folders given).
    pub fn files(&mut self, format: Format, paths: &[PathBuf]) -> Result<()> {
        let mut inputs = Vec::new();
        for path in paths {
            let mut skipped = Vec::new();
            inputs.extend(expand(format, path, self.dash_is_stdin, &mut skipped));
            for what in skipped {
                self.skip(what);
            }
        }
        let media = if format == Format::Atm {
            media_index(paths)
        } else {
            HashMap::new()
        };
        self.observer.started(inputs.len());
        for input in &inputs {
            self.observer.file_done();
            let bytes = match input.read() {
                Ok(b) => b,
                Err(e) => {
                    self.skip(format!("{}: {}", input.shown().display(), io_reason(&e)));
                    continue;
                }
            };
            self.summary.files += 1;
            if format == Format::Photos {
                self.photo(input, bytes)?;
                continue;
            }
            let report = parse_input(format, input, &bytes);
            for e in &report.errors {
                self.skip(e.to_string());
            }
            for item in report.items {
                if format == Format::Atm {
                    self.atm_record(input, item, &media)?;
                } else {
                    let origin = format!("{}:{}", input.shown().display(), item.location);
                    self.with_original(&input.base(), origin, item)?;
                }
            }
        }
        self.observer.finished();
        Ok(())
    }

    /// Records given in memory as JSONL lines, each with its index (`items[i]` in messages);
    /// `original` files are read relative to the current folder.
    pub fn records(&mut self, lines: Vec<(usize, Vec<u8>)>) -> Result<()> {
        for (index, line) in lines {
            let name = format!("items[{index}]");
            let report = jsonl::parse(Path::new(&name), &line);
            for e in report.errors {
                self.skip(format!("{name}: {}", e.kind));
            }
            for item in report.items {
                self.with_original(Path::new(""), name.clone(), item)?;
            }
        }
        Ok(())
    }

    /// Commits what is pending and returns what the import did.
    pub fn finish(mut self) -> Result<Summary> {
        let report = self
            .ingest
            .finish(None, &mut |_, _, _| {})
            .map_err(Error::Commit)?;
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
            self.observer.skipped(&what);
            self.summary.skipped.push(what);
        }
        Ok(self.summary)
    }
}

/// Imports every file under `paths` in `format` into `store` and commits: [`Importer::files`]
/// then [`Importer::finish`].
pub fn import_files(
    store: &Store,
    format: Format,
    paths: &[PathBuf],
    options: ImportOptions,
    observer: &mut dyn Observer,
) -> Result<Summary> {
    let mut importer = Importer::new(store, options, observer)?;
    importer.files(format, paths)?;
    importer.finish()
}

/// What `paths` would import, without a store (a dry run): each record's origin
/// (`FILE:LOCATION`) and draft, and what could not be read or parsed.
pub fn drafts(format: Format, paths: &[PathBuf]) -> (Vec<(String, ItemDraft)>, Vec<String>) {
    let (mut drafts, mut skipped) = (Vec::new(), Vec::new());
    let mut inputs = Vec::new();
    for path in paths {
        inputs.extend(expand(format, path, true, &mut skipped));
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
        if format == Format::Photos {
            match photo::parse(&folder_and_name(&shown), &bytes, PhotoLimits::default()) {
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

/// `new`'s tags with the `file:` and `folder:` tags of `stored` first, then `new`'s own that
/// `stored` lacks, where `new`'s first such tag was (after `photo`): every name a photo was
/// imported under stays a word of it.
fn merge_file_tags(stored: &[String], new: &[String]) -> Vec<String> {
    let is_file = |t: &String| t.starts_with("file:") || t.starts_with("folder:");
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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

    #[test]
    fn format_names_round_trip() {
        for format in Format::ALL {
            assert_eq!(Format::from_name(format.name()), Some(format));
        }
        assert_eq!(Format::from_name("png"), None);
    }

    /// Every input is accounted for: a folder of mail with a stray file, a missing path, and a
    /// JSONL file with one bad line land what they can and name the rest, and the observer
    /// hears each skip once.
    #[test]
    fn every_input_lands_or_is_named_with_why() {
        #[derive(Default)]
        struct Heard {
            files: usize,
            done: usize,
            skipped: Vec<String>,
        }
        impl Observer for Heard {
            fn started(&mut self, files: usize) {
                self.files = files;
            }
            fn file_done(&mut self) {
                self.done += 1;
            }
            fn skipped(&mut self, what: &str) {
                self.skipped.push(what.to_owned());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let lines = dir.path().join("notes.jsonl");
        std::fs::write(
            &lines,
            "{\"source\":\"note\",\"time\":\"2024-05-01T09:00:00Z\",\"external_id\":\"n1\",\"body\":\"Booked the hotel\"}\nnot json\n",
        )
        .unwrap();
        let store = Store::create(dir.path().join("store"), memdb::Options::default()).unwrap();
        let mut heard = Heard::default();
        let summary = import_files(
            &store,
            Format::Jsonl,
            &[
                lines.clone(),
                dir.path().join("missing.jsonl"),
                dir.path().to_path_buf(),
            ],
            ImportOptions::default(),
            &mut heard,
        )
        .unwrap();
        assert_eq!(summary.added, 1, "{summary:?}");
        assert_eq!(summary.files, 1);
        assert_eq!(summary.skipped.len(), 3, "{summary:?}");
        assert!(
            summary.skipped[0].contains("missing.jsonl: no such file"),
            "{summary:?}"
        );
        assert!(summary.skipped[1].contains("is a folder"), "{summary:?}");
        assert!(
            summary.skipped[2].contains("notes.jsonl:line 2"),
            "{summary:?}"
        );
        assert_eq!(heard.skipped, summary.skipped);
        assert_eq!((heard.files, heard.done), (1, 1));
        assert!(!summary.imported_nothing());
        // The same file again: unchanged, nothing added.
        let again = import_files(
            &store,
            Format::Jsonl,
            &[lines],
            ImportOptions::default(),
            &mut (),
        )
        .unwrap();
        assert_eq!((again.added, again.unchanged), (0, 1), "{again:?}");
    }

    /// The documented default grants nothing: a changed record under a stored (imported)
    /// item's external id is skipped, naming the capability; granted `delete`, it updates.
    #[test]
    fn by_default_an_import_replaces_no_imported_item() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.jsonl");
        let line = |body: &str| {
            format!(
                "{{\"source\":\"note\",\"time\":\"2024-05-01T09:00:00Z\",\"external_id\":\"n1\",\"body\":\"{body}\"}}\n"
            )
        };
        let store = Store::create(dir.path().join("store"), memdb::Options::default()).unwrap();
        let import = |body: &str, granted: Capabilities| {
            std::fs::write(&file, line(body)).unwrap();
            let options = ImportOptions {
                granted,
                ..ImportOptions::default()
            };
            let paths = std::slice::from_ref(&file);
            import_files(&store, Format::Jsonl, paths, options, &mut ()).unwrap()
        };
        let default = ImportOptions::default().granted;
        let first = import("Booked the hotel", default);
        assert_eq!(first.added, 1, "{first:?}");
        let refused = import("Cancelled the hotel", default);
        assert_eq!(refused.updated, 0, "{refused:?}");
        assert_eq!(refused.skipped.len(), 1, "{refused:?}");
        assert!(refused.skipped[0].contains("delete"), "{refused:?}");
        let updated = import("Cancelled the hotel", Capabilities::of(Capability::ALL));
        assert_eq!(updated.updated, 1, "{updated:?}");
    }
}
