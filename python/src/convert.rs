//! Values across the boundary: JSON documents (the shapes `memdb_query` renders items, rows
//! and reports in) to plain Python dicts and lists, Python item mappings to JSON, and the
//! arguments every method shares (keys of items, time bounds).
//!
//! Invariants: nothing here trusts the Python side. A wrong type is a `TypeError`, a value out
//! of range a `ValueError`; nesting deeper than [`MAX_DEPTH`] (a list that holds itself) is a
//! `ValueError`, never a stack overflow.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::errors::{Raise, Result};

/// Deepest nesting of a Python value turned into JSON (the JSONL importer's own limit is 128).
pub(crate) const MAX_DEPTH: usize = 64;

/// A JSON value as plain Python objects: dict, list, str, int, float, bool, None.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(values) => {
            let list = PyList::empty(py);
            for v in values {
                list.append(to_py(py, v)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// A Python value as JSON: `where` names it in errors (`items[3].tags[1]`). A `date` or
/// `datetime` (anything with `isoformat`) becomes its ISO text.
pub(crate) fn from_py(obj: &Bound<'_, PyAny>, at: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(Raise::value(format!("{at}: nested deeper than {MAX_DEPTH} levels")).into());
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(Raise::value(format!("{at}: integer out of range")).into());
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        return Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| Raise::value(format!("{at}: {v} is not a finite number")).into());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in dict.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(Raise::type_error(format!(
                    "{at}: keys must be str, not {}",
                    type_name(&k)
                ))
                .into());
            };
            let key = key.to_cow()?.into_owned();
            let value = from_py(&v, &format!("{at}.{key}"), depth + 1)?;
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut values = Vec::new();
        for (i, v) in obj.try_iter()?.enumerate() {
            values.push(from_py(&v?, &format!("{at}[{i}]"), depth + 1)?);
        }
        return Ok(Value::Array(values));
    }
    if obj.hasattr("isoformat")? {
        let text = obj.call_method0("isoformat")?;
        if let Ok(s) = text.cast::<PyString>() {
            return Ok(Value::String(s.to_cow()?.into_owned()));
        }
    }
    Err(Raise::type_error(format!(
        "{at}: a value of type {} cannot be stored (use str, int, float, bool, None, list or dict)",
        type_name(obj)
    ))
    .into())
}

/// The type name of `obj`, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// How a method names an item: its id (an `int`) or its external id (a `str`).
#[derive(Debug, Clone)]
pub(crate) enum Key {
    Id(u64),
    External(String),
}

impl Key {
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
        if obj.is_instance_of::<PyBool>() {
            return Err(Raise::type_error(
                "an item key is an int id or a str external id, not bool",
            )
            .into());
        }
        if obj.is_instance_of::<PyInt>() {
            return match obj.extract::<u64>() {
                Ok(id) => Ok(Key::Id(id)),
                Err(_) => Err(Raise::value(format!(
                    "item id {} is not in 0..=2**64-1",
                    obj.str().map(|s| s.to_string()).unwrap_or_default()
                ))
                .into()),
            };
        }
        if let Ok(s) = obj.cast::<PyString>() {
            let s = s.to_cow()?;
            if s.is_empty() {
                return Err(Raise::value("an external id is not empty").into());
            }
            return Ok(Key::External(s.into_owned()));
        }
        Err(Raise::type_error(format!(
            "an item key is an int id or a str external id, not {}",
            type_name(obj)
        ))
        .into())
    }

    /// The item id this key names in `snapshot`, if any.
    pub(crate) fn resolve(&self, snapshot: &memdb::Snapshot) -> Result<Option<u64>> {
        match self {
            Key::Id(id) => Ok(Some(*id)),
            Key::External(ext) => Ok(snapshot.get_by_external_id(ext)?.map(|i| i.id)),
        }
    }

    /// The current item this key names, if any.
    pub(crate) fn item(&self, snapshot: &memdb::Snapshot) -> Result<Option<memdb::Item>> {
        Ok(match self {
            Key::Id(id) => snapshot.get(*id)?,
            Key::External(ext) => snapshot.get_by_external_id(ext)?,
        })
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Id(id) => write!(f, "item {id}"),
            Key::External(ext) => write!(f, "item with external id {ext:?}"),
        }
    }
}

/// A count argument (`k`, a batch size) as a `usize` of at least `min`: a negative or huge
/// `int` is a `ValueError`, not an `OverflowError`.
pub(crate) fn count(obj: &Bound<'_, PyAny>, name: &str, min: usize) -> PyResult<usize> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(
            Raise::type_error(format!("{name} must be an int, not {}", type_name(obj))).into(),
        );
    }
    match obj.extract::<i64>() {
        Ok(n) if n >= 0 && usize::try_from(n).is_ok_and(|n| n >= min) => {
            Ok(usize::try_from(n).unwrap_or(min))
        }
        _ => Err(Raise::value(format!(
            "{name} must be an int >= {min}, not {}",
            obj.str().map(|s| s.to_string()).unwrap_or_default()
        ))
        .into()),
    }
}

/// A time bound from a `str` (`YYYY-MM-DD` is the item's local day, a date-time with an
/// offset an instant) or a `date` / aware `datetime` (by its ISO text).
pub(crate) fn time_bound(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<memdb::time::TimeBound> {
    let text = if let Ok(s) = obj.cast::<PyString>() {
        s.to_cow()?.into_owned()
    } else if obj.hasattr("isoformat")? {
        obj.call_method0("isoformat")?.extract::<String>()?
    } else {
        return Err(Raise::type_error(format!(
            "{name} must be a str, date or datetime, not {}",
            type_name(obj)
        ))
        .into());
    };
    memdb::time::TimeBound::parse(&text).map_err(|e| Raise::value(format!("{name}: {e}")).into())
}
