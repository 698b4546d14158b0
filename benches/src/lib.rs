//! Shared helpers of the benchmark programs in `src/bin/`.

use std::path::PathBuf;

/// Environment variable naming the Python interpreter that runs the peer scripts in `peers/`
/// (for example a virtual environment's `bin/python` with sentence-transformers or faiss-cpu).
pub const PEER_PYTHON_ENV: &str = "MEMDB_PEER_PYTHON";

/// The interpreter for peer scripts: `$MEMDB_PEER_PYTHON`, else `python3`.
pub fn peer_python() -> String {
    std::env::var(PEER_PYTHON_ENV)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}

/// The shared folder with data and reference figures: `$MEMDB_SHARED_DIR`, else `../shared`
/// beside the repository.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("MEMDB_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}
