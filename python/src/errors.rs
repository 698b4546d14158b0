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

/// The store variant's name, the `kind` attribute of every exception made from it.
fn store_kind_of(e: &memdb::StoreError) -> &'static str {
    use memdb::StoreError as S;
    match e {
        S::Locked { .. } => "Locked",
        S::ReadOnly { .. } => "ReadOnly",
        S::AlreadyExists { .. } => "AlreadyExists",
        S::NoStore { .. } => "NoStore",
        S::Encrypted { .. } => "Encrypted",
        S::Key { .. } => "Key",
        S::UnsupportedVersion { .. } => "UnsupportedVersion",
        S::Io { .. } => "Io",
        S::Catalog { .. } => "Catalog",
        S::CatalogDamaged { .. } => "CatalogDamaged",
        S::Corruption { .. } => "Corruption",
        S::SegmentUnavailable { .. } => "SegmentUnavailable",
        S::BadRow { .. } => "BadRow",
        S::ThreadFailed(_) => "ThreadFailed",
        S::ReaderOutpaced { .. } => "ReaderOutpaced",
        S::Overflow { .. } => "Overflow",
        S::Inconsistent(_) => "Inconsistent",
        S::NoMemory { .. } => "NoMemory",
        S::InvalidItem { .. } => "InvalidItem",
        S::WriterPoisoned(_) => "WriterPoisoned",
        S::ModelMismatch { .. } => "ModelMismatch",
        S::InUse(_) => "InUse",
        S::Hook(_) => "Hook",
        S::InvalidVector { .. } => "InvalidVector",
        S::VectorBlock { .. } => "VectorBlock",
        _ => "Other",
    }
}

/// The engine variant's name (the store's own, for a store error), the `kind` attribute of
/// every exception made from it.
fn kind_of(e: &memdb::Error) -> &'static str {
    use memdb::Error as E;
    match e {
        E::Store(s) => store_kind_of(s),
        E::Image { .. } => "Image",
        E::Policy(_) => "Policy",
        E::NoLexicon { .. } => "NoLexicon",
        E::Embed(_) => "Embed",
        E::Extractor(_) => "Extractor",
        E::Decider(_) => "Decider",
        E::Geo(_) => "Geo",
        E::OriginalsNeedConsent { .. } => "OriginalsNeedConsent",
        E::StalePlan { .. } => "StalePlan",
        _ => "Other",
    }
}

/// The exception of a store error, before its `kind`.
fn store_raise(e: &memdb::StoreError, message: String) -> Raise {
    use memdb::StoreError as S;
    match e {
        S::Locked { path } => Raise::new("LockedError", message).with_path(path),
        S::ReadOnly { path } => Raise::new("ReadOnlyError", message).with_path(path),
        S::AlreadyExists { path } => Raise::new("AlreadyExistsError", message).with_path(path),
        S::NoStore { path } => Raise::new("NoStoreError", message).with_path(path),
        S::Encrypted { path } | S::Key { path, .. } => {
            Raise::new("EncryptionError", message).with_path(path)
        }
        S::UnsupportedVersion { found, supported } => {
            Raise::new("UnsupportedVersionError", message)
                .with("found", Attr::Int(*found))
                .with("supported", Attr::Int(*supported))
        }
        S::Io { path, .. } => Raise::new("StorageError", message).with_path(path),
        S::Catalog { .. } => Raise::new("StorageError", message),
        S::CatalogDamaged { .. } => Raise::new("CatalogDamagedError", message),
        S::Corruption {
            segment,
            page,
            offset,
            ..
        } => Raise::new("CorruptionError", message)
            .with("segment", Attr::Int(*segment))
            .with("page", Attr::Int(*page))
            .with("offset", Attr::Int(*offset)),
        S::SegmentUnavailable { segment, .. } => {
            Raise::new("CorruptionError", message).with("segment", Attr::Int(*segment))
        }
        S::BadRow { .. } | S::VectorBlock { .. } => Raise::new("CorruptionError", message),
        S::NoMemory { id, .. } => Raise::not_found(message).with("id", Attr::Int(*id)),
        S::InvalidItem { .. } | S::InvalidVector { .. } => Raise::new("InvalidItemError", message),
        S::ModelMismatch { .. } => Raise::model(message),
        S::ReaderOutpaced { .. } | S::InUse(_) => Raise::new("ConflictError", message),
        _ => Raise::new("MemdbError", message),
    }
}

impl From<memdb::Error> for Raise {
    fn from(e: memdb::Error) -> Raise {
        use memdb::Error as E;
        let kind = kind_of(&e);
        let message = e.to_string();
        let raise = match &e {
            E::Store(s) => store_raise(s, message),
            E::Policy(_) => Raise::new("PolicyError", message),
            E::NoLexicon { .. } => Raise::not_found(message),
            E::Embed(_) | E::Extractor(_) | E::Decider(_) => Raise::model(message),
            E::OriginalsNeedConsent { count, bytes, .. } => Raise::new("ConsentError", message)
                .with("count", Attr::Int(*count))
                .with("bytes", Attr::Int(*bytes)),
            E::StalePlan { .. } => Raise::new("ConflictError", message),
            _ => Raise::new("MemdbError", message),
        };
        raise.with("kind", Attr::Str(kind.to_owned()))
    }
}

impl From<memdb::StoreError> for Raise {
    fn from(e: memdb::StoreError) -> Raise {
        Raise::from(memdb::Error::from(e))
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

impl From<memdb::time::TimeError> for Raise {
    fn from(e: memdb::time::TimeError) -> Raise {
        Raise::value(e.to_string())
    }
}
