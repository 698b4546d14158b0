//! `Store.import_*` and `Store.ingest`: files (or Python item mappings) through memdb's importer
//! library (`memdb_import`, which `memdb import` calls too), with a summary of what landed and
//! what did not.

use memdb_import::Format;

use crate::errors::{Raise, Result};

/// The importer's format named `name`.
pub(crate) fn format(name: &str) -> Result<Format> {
    Format::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        Raise::value(format!(
            "unknown import format {name:?} (expected one of {})",
            names.join(", ")
        ))
    })
}

impl From<memdb_import::Error> for Raise {
    fn from(e: memdb_import::Error) -> Raise {
        match e {
            memdb_import::Error::Commit(e) | memdb_import::Error::Engine(e) => Raise::from(e),
        }
    }
}
