//! `memdb export STORE DIR`: everything a person keeps, taken out in open formats, so nothing
//! they put in is ever held hostage — before forgetting, after it, or to leave memdb.
//!
//! ```text
//! DIR/items.jsonl        every item, in the JSONL import format (SPEC.md §8.1), id order
//! DIR/originals/         each item's original file (a photo as imported), named <id>-<name>
//! DIR/pages/             each day's scrapbook page as JPEG (<day>.jpg, <day>-2.jpg, …)
//! DIR/history.jsonl      earlier versions of items (for reading; not an import file)
//! DIR/manifest.json      counts, and what the store no longer has (originals forgetting or a
//!                         repair dropped, each with why)
//! ```
//!
//! `memdb init NEW && memdb import jsonl NEW DIR/items.jsonl` takes the items back with their
//! originals byte for byte (each line names its original file and its SHA-256). Files are
//! owner-only like the store, written and fsync'd one by one; the directory must not exist
//! or be empty, so an export never mixes with an older one.

use crate::error::{CliError, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

use memdb::{BlobKind, Item, Store};
use memdb_formats::export::{OriginalFile, item_line};
use serde_json::{Value, json};
use sha2::Digest;

use crate::output::Out;

/// What an export wrote.
#[derive(Default)]
pub(crate) struct ExportReport {
    dir: PathBuf,
    items: u64,
    undated: u64,
    originals: u64,
    original_bytes: u64,
    other_blobs: u64,
    pages: u64,
    page_files: u64,
    damaged_page_parts: u64,
    versions: u64,
    dropped_originals: Vec<Value>,
    warnings: Vec<String>,
}

impl ExportReport {
    fn json(&self) -> Value {
        json!({
            "dir": self.dir, "items": self.items, "undated": self.undated,
            "originals": self.originals, "original_bytes": self.original_bytes,
            "other_blobs": self.other_blobs, "pages": self.pages, "page_files": self.page_files,
            "damaged_page_parts": self.damaged_page_parts, "earlier_versions": self.versions,
            "dropped_originals": self.dropped_originals, "warnings": self.warnings,
        })
    }

    fn text(&self) -> String {
        let mut text = format!(
            "exported {} items ({} undated) to {}: {} originals ({} bytes), {} pages ({} files), {} earlier versions\n\
             take them back with `memdb init NEW && memdb import jsonl NEW {}`",
            self.items,
            self.undated,
            self.dir.display(),
            self.originals,
            self.original_bytes,
            self.pages,
            self.page_files,
            self.versions,
            self.dir.join("items.jsonl").display()
        );
        if !self.dropped_originals.is_empty() {
            // Who dropped each: forgetting (a policy the person agreed to) or a repair
            // (damage; importing the file again puts it back).
            let by_repair = self
                .dropped_originals
                .iter()
                .filter(|d| d["why"].as_str().is_some_and(|w| w.starts_with("repair")))
                .count();
            let by_forgetting = self.dropped_originals.len() - by_repair;
            let mut causes = Vec::new();
            if by_forgetting > 0 {
                causes.push(format!("{by_forgetting} by forgetting"));
            }
            if by_repair > 0 {
                causes.push(format!(
                    "{by_repair} by a repair, lost to damage (import the files again to restore them)"
                ));
            }
            text.push_str(&format!(
                "\n{} original(s) were dropped before this export: {} (listed in manifest.json)",
                self.dropped_originals.len(),
                causes.join(", ")
            ));
        }
        for w in &self.warnings {
            text.push_str(&format!("\nwarning: {w}"));
        }
        text
    }
}

/// Creates (or truncates) an owner-only file.
fn create_private(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| CliError::io("create", path, e))?;
    // A file that existed keeps its mode through `open`: make it owner-only too.
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(|e| CliError::io("chmod", path, e))?;
    Ok(file)
}

/// Creates an owner-only file and writes `bytes`, durably.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = create_private(path)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| CliError::io("write", path, e))
}

/// An owner-only file written line by line (a store's worth of items need not fit in memory),
/// fsync'd when finished.
struct PrivateLines {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl PrivateLines {
    fn create(path: PathBuf) -> Result<PrivateLines> {
        let out = std::io::BufWriter::new(create_private(&path)?);
        Ok(PrivateLines { path, out })
    }

    fn line(&mut self, line: &str) -> Result<()> {
        self.out
            .write_all(line.as_bytes())
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|e| CliError::io("write", &self.path, e))
    }

    fn finish(self) -> Result<()> {
        let path = self.path;
        self.out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|file| file.sync_all())
            .map_err(|e| CliError::io("write", path, e))
    }
}

fn private_dir(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| CliError::io("create", path, e))
}

/// A file name made of the safe characters of `name`.
fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = cleaned.trim_start_matches('.');
    let short: String = trimmed.chars().take(80).collect();
    if short.is_empty() {
        "original".to_owned()
    } else {
        short
    }
}

/// The name an item's original goes under: its `file:` tag, else its external id.
fn original_name(item: &Item) -> String {
    let from_tag = item
        .fields
        .tags
        .iter()
        .find_map(|t| t.strip_prefix("file:"))
        .map(str::to_owned);
    let name = from_tag
        .or_else(|| item.fields.external_id.clone())
        .unwrap_or_else(|| "original".to_owned());
    let base = name.rsplit('/').next().unwrap_or(&name).to_owned();
    format!("{}-{}", item.id, safe_name(&base))
}

pub(crate) fn export(store: &Store, dir: &Path, pages: bool, out: &Out) -> Result<()> {
    if dir.exists()
        && std::fs::read_dir(dir)
            .map_err(|e| CliError::io("list", dir, e))?
            .next()
            .is_some()
    {
        return Err(CliError::ExportTarget {
            dir: dir.to_path_buf(),
            reason: "not empty: export into a new folder".to_owned(),
        });
    }
    private_dir(dir)?;
    private_dir(&dir.join("originals"))?;
    let snapshot = store.snapshot()?;
    let ids = snapshot.item_ids()?;
    let mut report = ExportReport {
        dir: dir.to_path_buf(),
        ..ExportReport::default()
    };
    let mut lines = PrivateLines::create(dir.join("items.jsonl"))?;
    let mut history = PrivateLines::create(dir.join("history.jsonl"))?;
    let mut progress = crate::progress::bar(ids.len() as u64, "exporting items", !out.json);
    for id in &ids {
        progress.inc(1);
        let Some(item) = snapshot.get(*id)? else {
            continue;
        };
        let supersedes = match item.supersedes {
            Some(old) => match snapshot.get(old)? {
                Some(o) if o.fields.external_id.is_some() => o.fields.external_id,
                _ => {
                    report.warnings.push(format!(
                        "item {id}: supersedes item {old}, which has no external id; the link is not exported"
                    ));
                    None
                }
            },
            None => None,
        };
        let mut original = None;
        for blob in &item.blobs {
            let Some(bytes) = snapshot.blob(*blob)? else {
                continue;
            };
            let kind = bytes.info().kind;
            if kind == BlobKind::Original && original.is_none() {
                let name = original_name(&item);
                write_private(&dir.join("originals").join(&name), &bytes)?;
                report.originals += 1;
                report.original_bytes += bytes.len() as u64;
                original = Some(OriginalFile {
                    file: format!("originals/{name}"),
                    sha256: hex(&sha2::Sha256::digest(&*bytes)),
                });
            } else {
                let name = format!("{}-blob-{blob}-{}", item.id, kind.name());
                write_private(&dir.join("originals").join(&name), &bytes)?;
                report.other_blobs += 1;
            }
        }
        for dropped in snapshot.dropped_blobs(*id)? {
            report.dropped_originals.push(json!({
                "item": id, "external_id": item.fields.external_id, "blob": dropped.id,
                "kind": dropped.kind.name(), "bytes": dropped.len, "why": dropped.why,
            }));
        }
        for version in snapshot.versions(*id)? {
            let line = item_line(&version.record.fields, None, None);
            history.line(&format!(
                "{{\"item\":{id},\"replaced_ms\":{},\"fields\":{line}}}",
                version.replaced_ms
            ))?;
            report.versions += 1;
        }
        if item.fields.time.is_undated() {
            report.undated += 1;
        }
        lines.line(&item_line(
            &item.fields,
            supersedes.as_deref(),
            original.as_ref(),
        ))?;
        report.items += 1;
    }
    progress.finish_and_clear();
    lines.finish()?;
    history.finish()?;
    if pages {
        private_dir(&dir.join("pages"))?;
        let days: Vec<String> = snapshot.pages()?.into_iter().map(|p| p.day).collect();
        let mut progress = crate::progress::bar(days.len() as u64, "exporting pages", !out.json);
        for day in &days {
            progress.inc(1);
            let Some(rendered) = store.render_page(day)? else {
                continue;
            };
            report.damaged_page_parts += rendered.damaged.len() as u64;
            for (index, why) in &rendered.damaged {
                report.warnings.push(format!(
                    "page {day}, part {}: damaged ({why}); exported grey",
                    index + 1
                ));
            }
            for (i, part) in rendered.parts.iter().enumerate() {
                let name = if i == 0 {
                    format!("{day}.jpg")
                } else {
                    format!("{day}-{}.jpg", i + 1)
                };
                write_private(&dir.join("pages").join(name), part)?;
                report.page_files += 1;
            }
            report.pages += 1;
        }
        progress.finish_and_clear();
    }
    let manifest = json!({
        "format": "memdb-export-1",
        "store": store.path(),
        "exported": memdb::EventTime::utc(now_ms()).to_rfc3339(),
        "summary": report.json(),
    });
    write_private(&dir.join("manifest.json"), manifest.to_string().as_bytes())?;
    // The entries themselves must survive a power loss too.
    for sub in ["originals", "pages", ""] {
        let path = dir.join(sub);
        if path.is_dir()
            && let Ok(handle) = std::fs::File::open(&path)
        {
            handle
                .sync_all()
                .map_err(|e| CliError::io("fsync", path, e))?;
        }
    }
    out.emit(report.json(), || report.text());
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
