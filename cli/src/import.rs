//! `memdb import`: files (or standard input, `-`) through memdb's importer library
//! (`memdb_import`), with a progress bar and every skipped thing said on stderr as it happens.

use std::process::ExitCode;

use crate::args::{GateArg, ImportArgs};
use crate::gate;
use crate::keys;
use crate::open::{COMMAND_LOCK_WAIT, lock_wait, waiting_for_lock};
use crate::output::Out;
use std::path::PathBuf;

use memdb::Store;
use memdb_import::{ImportOptions, Observer};

use crate::args::ImportFormat;
use crate::error::{CliError, Result};
use crate::progress::Progress;

pub(crate) use memdb_import::Summary;

/// Inputs above which the progress bar is shown.
const PROGRESS_MIN_FILES: usize = 20;

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
        // The person at the command line owns the store: a re-import may replace what it holds.
        granted: memdb::ops::access::Capabilities::of(memdb::ops::access::Capability::ALL),
        dash_is_stdin: true,
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

/// `memdb import`: exit status 2 when it was given inputs and imported nothing.
pub(crate) fn command(args: ImportArgs, out: &Out) -> Result<ExitCode> {
    let ImportArgs {
        format,
        dir,
        files,
        batch,
        create,
        gate: gate_mode,
        lexicon,
        gate_rules,
        gate_judge,
        gate_endpoint,
        gate_timeout,
    } = args;
    let options = keys::options_for(&dir)?;
    let store = waiting_for_lock(&dir, lock_wait(COMMAND_LOCK_WAIT), || {
        if create {
            Store::open_or_create(&dir, options.clone())
        } else {
            Store::open(&dir, options.clone())
        }
    })
    .map_err(|e| match e {
        memdb::Error::Store(memdb::StoreError::NoStore { .. }) => {
            CliError::NoStore { dir: dir.clone() }
        }
        other => CliError::store(&dir, other),
    })?;
    let extras = gate::GateExtras {
        rules: gate_rules,
        judge: gate_judge.map(|model| (gate_endpoint, model, gate_timeout)),
    };
    let mode = match gate_mode {
        GateArg::Off => None,
        GateArg::Tag => Some(memdb::gate::GateMode::Tag),
        GateArg::Drop => Some(memdb::gate::GateMode::Drop),
    };
    let gate = mode
        .map(|mode| gate::stage(&store, lexicon.as_deref(), mode, &extras))
        .transpose()?;
    let summary = import_files(&store, format, &files, batch.max(1), !out.json, gate)?;
    out.emit(summary.json(), || summary.text());
    if summary.imported_nothing() {
        eprintln!(
            "memdb: nothing imported: {} input(s) skipped (reasons above)",
            summary.skipped.len()
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
