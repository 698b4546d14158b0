//! The on-device encoder (all-MiniLM-L6-v2), loaded once per process on first use and shared
//! by every store opened from Python.
//!
//! The package never downloads it: a missing or damaged model is a `memdb.ModelError` that
//! says how to install it (`scripts/install-model.sh`, `memdb model install`).

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
