//! `memdb import`: files (or standard input, `-`) through memdb's importer library
//! (`memdb_import`), with a progress bar and every skipped thing said on stderr as it happens.

use std::path::PathBuf;

use memdb::{ItemDraft, Store};
use memdb_import::{ImportOptions, Observer};

use crate::ImportFormat;
use crate::error::{CliError, Result};
use crate::progress::Progress;

pub(crate) use memdb_import::Summary;

/// Inputs above which the progress bar is shown.
const PROGRESS_MIN_FILES: usize = 20;

impl ImportFormat {
    /// The importer's format.
    pub(crate) fn format(self) -> memdb_import::Format {
        match self {
            ImportFormat::Jsonl => memdb_import::Format::Jsonl,
            ImportFormat::Locomo => memdb_import::Format::Locomo,
            ImportFormat::Photos => memdb_import::Format::Photos,
            ImportFormat::Mail => memdb_import::Format::Mail,
            ImportFormat::Atm => memdb_import::Format::Atm,
        }
    }
}

/// The terminal's view of an import: a bar over the files (past [`PROGRESS_MIN_FILES`]) and a
/// `memdb: skipped …` line per thing skipped.
struct Terminal {
    show_progress: bool,
    bar: Option<Progress>,
}

impl Observer for Terminal {
    fn started(&mut self, files: usize) {
        self.bar = Some(crate::progress::bar(
            files as u64,
            "importing files",
            self.show_progress && files > PROGRESS_MIN_FILES,
        ));
    }

    fn file_done(&mut self) {
        if let Some(bar) = &mut self.bar {
            bar.inc(1);
        }
    }

    fn skipped(&mut self, what: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("memdb: skipped {what}")),
            None => eprintln!("memdb: skipped {what}"),
        }
    }

    fn finished(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// What `paths` would import, without a store (`memdb gate check`'s dry run).
pub(crate) fn drafts(
    format: ImportFormat,
    paths: &[PathBuf],
) -> (Vec<(String, ItemDraft)>, Vec<String>) {
    memdb_import::drafts(format.format(), paths)
}

/// Imports `paths` into `store` in batches of `batch_size` items.
pub(crate) fn import_files(
    store: &Store,
    format: ImportFormat,
    paths: &[PathBuf],
    batch_size: usize,
    show_progress: bool,
    gate: Option<memdb::gate::GateStage>,
) -> Result<Summary> {
    let options = ImportOptions {
        batch_items: batch_size,
        gate,
        dash_is_stdin: true,
        ..ImportOptions::default()
    };
    let mut terminal = Terminal {
        show_progress,
        bar: None,
    };
    memdb_import::import_files(store, format.format(), paths, options, &mut terminal).map_err(|e| {
        match e {
            memdb_import::Error::Commit(e) => CliError::Commit(e),
            memdb_import::Error::Engine(e) => CliError::Engine(e),
        }
    })
}
