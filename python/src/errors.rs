//! Every failure of the extension as the Python exception a caller catches.
//!
//! Owns: [`Raise`], the one error type of this crate (an exception class name from
//! `memdb/_errors.py`, its message and its attributes), built from the engine's, the query
//! language's and the encoder's errors, and turned into a `PyErr` only once the GIL is held
//! again. Every engine error keeps its variant's name as the exception's `kind` attribute and
//! the path, segment, page and offset it names as attributes of their own.
//!
//! Invariant: no error is a panic. Bad arguments are `TypeError` / `ValueError` (or a
//! `memdb` class that also derives from `ValueError`), never an interpreter crash.

use std::path::Path;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

/// A value of an exception attribute.
#[derive(Debug, Clone)]
pub(crate) enum Attr {
    Str(String),
    Int(u64),
}

/// A Python exception to raise: the class (a name in `memdb._errors`, or a built-in), its
/// message and its attributes.
#[derive(Debug)]
pub(crate) struct Raise {
    class: &'static str,
    message: String,
    attrs: Vec<(&'static str, Attr)>,
}

pub(crate) type Result<T, E = Raise> = std::result::Result<T, E>;

impl std::fmt::Display for Raise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl Raise {
    pub(crate) fn new(class: &'static str, message: impl Into<String>) -> Raise {
        Raise {
            class,
            message: message.into(),
            attrs: Vec::new(),
        }
    }

    fn with(mut self, name: &'static str, value: Attr) -> Raise {
        self.attrs.push((name, value));
        self
    }

    fn with_path(self, path: &Path) -> Raise {
        self.with("path", Attr::Str(path.display().to_string()))
    }

    /// Sets string attribute `name` of the exception.
    pub(crate) fn attr_str(self, name: &'static str, value: impl Into<String>) -> Raise {
        self.with(name, Attr::Str(value.into()))
    }

    /// A `ValueError`: an argument of the right type with a wrong value.
    pub(crate) fn value(message: impl Into<String>) -> Raise {
        Raise::new("ValueError", message)
    }

    /// A `TypeError`: an argument of the wrong type.
    pub(crate) fn type_error(message: impl Into<String>) -> Raise {
        Raise::new("TypeError", message)
    }

    /// The store was closed (`Store.close`, or the end of its `with` block).
    pub(crate) fn closed(path: &Path) -> Raise {
        Raise::new("ClosedError", format!("store {} is closed", path.display())).with_path(path)
    }

    /// A thread of this extension panicked while holding the store's state.
    pub(crate) fn poisoned() -> Raise {
        Raise::new(
            "MemdbError",
            "an earlier call on this store failed inside the engine; open the store again",
        )
    }

    /// Something the caller named is not there.
    pub(crate) fn not_found(message: impl Into<String>) -> Raise {
        Raise::new("NotFoundError", message)
    }

    /// The encoder's weights are missing, damaged or cannot be loaded.
    pub(crate) fn model(message: impl Into<String>) -> Raise {
        Raise::new("ModelError", message)
    }

    /// The exception as a Python object (the GIL is held).
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self.class {
            "ValueError" => return PyValueError::new_err(self.message),
            "TypeError" => return PyTypeError::new_err(self.message),
            _ => {}
        }
        let class = match errors_module(py).and_then(|m| m.getattr(self.class)) {
            Ok(class) => class,
            Err(e) => {
                return PyRuntimeError::new_err(format!(
                    "{} (memdb._errors could not be read: {e})",
                    self.message
                ));
            }
        };
        let value = match class.call1((self.message.as_str(),)) {
            Ok(value) => value,
            Err(e) => return e,
        };
        for (name, attr) in self.attrs {
            let set = match attr {
                Attr::Str(s) => value.setattr(name, s),
                Attr::Int(n) => value.setattr(name, n),
            };
            if let Err(e) = set {
                return e;
            }
        }
        PyErr::from_value(value)
    }
}

impl From<Raise> for PyErr {
    fn from(raise: Raise) -> PyErr {
        Python::attach(|py| raise.into_pyerr(py))
    }
}

/// `memdb._errors`, imported once.
fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    MODULE
        .get_or_try_init(py, || py.import("memdb._errors").map(Bound::unbind))
        .map(|m| m.bind(py))
}

/// The engine variant's name, the `kind` attribute of every exception made from it.
fn kind_of(e: &memdb::Error) -> &'static str {
    use memdb::Error as E;
    match e {
        E::Locked { .. } => "Locked",
        E::ReadOnly { .. } => "ReadOnly",
        E::AlreadyExists { .. } => "AlreadyExists",
        E::NoStore { .. } => "NoStore",
        E::Encrypted { .. } => "Encrypted",
        E::Key { .. } => "Key",
        E::UnsupportedVersion { .. } => "UnsupportedVersion",
        E::Io { .. } => "Io",
        E::Catalog { .. } => "Catalog",
        E::CatalogDamaged { .. } => "CatalogDamaged",
        E::Corruption { .. } => "Corruption",
        E::SegmentUnavailable { .. } => "SegmentUnavailable",
        E::BadRow { .. } => "BadRow",
        E::Image { .. } => "Image",
        E::ThreadFailed(_) => "ThreadFailed",
        E::ReaderOutpaced { .. } => "ReaderOutpaced",
        E::Overflow { .. } => "Overflow",
        E::Inconsistent(_) => "Inconsistent",
        E::Policy(_) => "Policy",
        E::NoMemory { .. } => "NoMemory",
        E::NoLexicon { .. } => "NoLexicon",
        E::InvalidItem { .. } => "InvalidItem",
        E::WriterPoisoned(_) => "WriterPoisoned",
        E::ModelMismatch { .. } => "ModelMismatch",
        E::Embed(_) => "Embed",
        E::Extractor(_) => "Extractor",
        E::Decider(_) => "Decider",
        E::Geo(_) => "Geo",
        E::InUse(_) => "InUse",
        E::OriginalsNeedConsent { .. } => "OriginalsNeedConsent",
        E::StalePlan { .. } => "StalePlan",
        E::Hook(_) => "Hook",
        E::InvalidVector { .. } => "InvalidVector",
        E::VectorBlock { .. } => "VectorBlock",
        _ => "Other",
    }
}

impl From<memdb::Error> for Raise {
    fn from(e: memdb::Error) -> Raise {
        use memdb::Error as E;
        let kind = kind_of(&e);
        let message = e.to_string();
        let raise = match &e {
            E::Locked { path } => Raise::new("LockedError", message).with_path(path),
            E::ReadOnly { path } => Raise::new("ReadOnlyError", message).with_path(path),
            E::AlreadyExists { path } => Raise::new("AlreadyExistsError", message).with_path(path),
            E::NoStore { path } => Raise::new("NoStoreError", message).with_path(path),
            E::Encrypted { path } | E::Key { path, .. } => {
                Raise::new("EncryptionError", message).with_path(path)
            }
            E::UnsupportedVersion { found, supported } => {
                Raise::new("UnsupportedVersionError", message)
                    .with("found", Attr::Int(*found))
                    .with("supported", Attr::Int(*supported))
            }
            E::Io { path, .. } => Raise::new("StorageError", message).with_path(path),
            E::Catalog { .. } => Raise::new("StorageError", message),
            E::CatalogDamaged { .. } => Raise::new("CatalogDamagedError", message),
            E::Corruption {
                segment,
                page,
                offset,
                ..
            } => Raise::new("CorruptionError", message)
                .with("segment", Attr::Int(*segment))
                .with("page", Attr::Int(*page))
                .with("offset", Attr::Int(*offset)),
            E::SegmentUnavailable { segment, .. } => {
                Raise::new("CorruptionError", message).with("segment", Attr::Int(*segment))
            }
            E::BadRow { .. } | E::VectorBlock { .. } => Raise::new("CorruptionError", message),
            E::Policy(_) => Raise::new("PolicyError", message),
            E::NoMemory { id, .. } => Raise::not_found(message).with("id", Attr::Int(*id)),
            E::NoLexicon { .. } => Raise::not_found(message),
            E::InvalidItem { .. } | E::InvalidVector { .. } => {
                Raise::new("InvalidItemError", message)
            }
            E::ModelMismatch { .. } | E::Embed(_) | E::Extractor(_) | E::Decider(_) => {
                Raise::model(message)
            }
            E::OriginalsNeedConsent { count, bytes, .. } => Raise::new("ConsentError", message)
                .with("count", Attr::Int(*count))
                .with("bytes", Attr::Int(*bytes)),
            E::ReaderOutpaced { .. } | E::StalePlan { .. } | E::InUse(_) => {
                Raise::new("ConflictError", message)
            }
            _ => Raise::new("MemdbError", message),
        };
        raise.with("kind", Attr::Str(kind.to_owned()))
    }
}

impl From<memdb_query::QueryError> for Raise {
    fn from(e: memdb_query::QueryError) -> Raise {
        use memdb_query::QueryError as Q;
        match e {
            Q::Parse(p) => {
                let message = p.to_string();
                let mut raise = Raise::new("QuerySyntaxError", message)
                    .with("line", Attr::Int(p.line as u64))
                    .with("column", Attr::Int(p.column as u64));
                if let Some(s) = p.suggestion {
                    raise = raise.with("suggestion", Attr::Str(s));
                }
                raise
            }
            Q::Engine { statement, source } => {
                let mut raise = Raise::from(source);
                raise.message = format!("{statement}: {}", raise.message);
                raise
            }
            Q::NoEncoder(statement) => Raise::model(format!(
                "{statement}: RECALL needs the on-device encoder, which is not loaded"
            )),
            Q::NotFound(what) => Raise::not_found(what),
            other @ (Q::Place { .. } | Q::Time { .. }) => {
                Raise::new("QueryError", other.to_string())
            }
        }
    }
}

impl From<memdb_encode::EncodeError> for Raise {
    fn from(e: memdb_encode::EncodeError) -> Raise {
        Raise::model(format!(
            "{e}\n(install it with `memdb.install_model()`, `memdb model install` or \
             `scripts/install-model.sh` in a memdb checkout, or set MEMDB_MODEL_DIR to a folder \
             that holds it)"
        ))
    }
}

impl From<memdb::TimeError> for Raise {
    fn from(e: memdb::TimeError) -> Raise {
        Raise::value(e.to_string())
    }
}
