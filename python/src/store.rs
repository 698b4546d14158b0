//! `memdb._native.Store`: one open store as a Python object, and every method of it.
//!
//! Owns the handle's life (open, `close`, the context manager) and the GIL discipline: every
//! call that touches the store runs in [`PyStore::run`], which releases the GIL first and only
//! then takes the handle's lock, so a thread waiting for the store never holds the GIL and a
//! long ingest, recall or compaction never stops other Python threads. Python values are read
//! before and built after, with the GIL held; nothing Python is touched inside.
//!
//! The public Python class is `memdb.Store` (python/memdb/__init__.py), a thin wrapper that
//! turns hit dicts into dataclasses; argument checking is all here, so the native class is
//! just as safe to call directly.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use memdb::ops::access::{Capabilities, Capability, Change, Refusal, check_change};
use memdb::{
    IngestOptions, Options, RecallOptions, Source, Store, TimeWindow, ingest::PageStage,
    maintenance::CompactOptions, maintenance::KeepEverything, maintenance::Victims,
    recall::RoaringTreemap, recall::Signals,
};
use memdb_encode::{Encoder, MiniLm};
use memdb_query::{Query, QueryContext, Statement, StoreQuery};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::{Value, json};

use crate::convert::{Key, count, from_py, time_bound, to_py, type_name};
use crate::errors::{Raise, Result};
use crate::report;
use memdb_import::{ImportOptions, Importer};

/// An open store and the encoder bound to it (loaded on first use).
pub(crate) struct Open {
    pub(crate) store: Store,
    encoder: Mutex<Option<Arc<MiniLm>>>,
}

impl Open {
    /// The on-device encoder, bound to this store (the store records its model and refuses
    /// vectors of another).
    pub(crate) fn encoder(&self) -> Result<Arc<MiniLm>> {
        let mut slot = self.encoder.lock().map_err(|_| Raise::poisoned())?;
        if let Some(encoder) = slot.as_ref() {
            return Ok(Arc::clone(encoder));
        }
        let encoder = crate::encoder::shared()?;
        self.store.bind_model(&encoder.model_id().to_string())?;
        *slot = Some(Arc::clone(&encoder));
        Ok(encoder)
    }
}

/// The filters of a recall, read from Python before the GIL is released.
#[derive(Debug, Clone)]
pub(crate) struct RecallFilters {
    pub(crate) k: usize,
    time: TimeWindow,
    source: Option<u8>,
    items: Option<RoaringTreemap>,
    signals: Signals,
    scope: memdb::Scope,
}

impl RecallFilters {
    /// No filter: the top `k` of every item, all four signals.
    pub(crate) fn top(k: usize) -> RecallFilters {
        RecallFilters {
            k,
            time: TimeWindow::ALL,
            source: None,
            items: None,
            signals: Signals::ALL,
            scope: memdb::Scope::default(),
        }
    }

    /// The engine's options: its defaults with these filters (what `memdb recall` and the
    /// query language's `RECALL` run with, too).
    pub(crate) fn options(&self) -> RecallOptions {
        RecallOptions {
            k: self.k,
            time: self.time,
            source: self.source,
            items: self.items.clone(),
            signals: self.signals,
            scope: (!self.scope.is_empty()).then(|| self.scope.clone()),
            ..RecallOptions::default()
        }
    }

    /// Filters from a dict: `source` (a source name), `from` / `to` (time bounds, both ends
    /// included), `ids` (item ids every signal is limited to), `signals` (names among dense,
    /// lexical, graph and place), `user_id` / `agent_id` / `run_id` (only items of that scope).
    fn parse(k: usize, filters: Option<&Bound<'_, PyAny>>) -> PyResult<RecallFilters> {
        let mut out = RecallFilters::top(k);
        let Some(filters) = filters.filter(|f| !f.is_none()) else {
            return Ok(out);
        };
        let Ok(filters) = filters.cast::<PyDict>() else {
            return Err(Raise::type_error(format!(
                "filters must be a dict, not {}",
                type_name(filters)
            ))
            .into());
        };
        let (mut from, mut to) = (None, None);
        for (key, value) in filters.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(Raise::type_error("filter names are str").into());
            };
            let key = key.to_cow()?;
            if value.is_none() {
                continue;
            }
            match &*key {
                "source" => {
                    let Ok(name) = value.cast::<PyString>() else {
                        return Err(Raise::type_error(format!(
                            "filter `source` is a str, not {}",
                            type_name(&value)
                        ))
                        .into());
                    };
                    let source = Source::from_str(&name.to_cow()?)
                        .map_err(|e| Raise::value(format!("filter `source`: {e}")))?;
                    out.source = Some(source.code());
                }
                "user_id" | "agent_id" | "run_id" => {
                    let Ok(id) = value.cast::<PyString>() else {
                        return Err(Raise::type_error(format!(
                            "filter `{key}` is a str, not {}",
                            type_name(&value)
                        ))
                        .into());
                    };
                    let id = Some(id.to_cow()?.into_owned());
                    match &*key {
                        "user_id" => out.scope.user_id = id,
                        "agent_id" => out.scope.agent_id = id,
                        _ => out.scope.run_id = id,
                    }
                    out.scope
                        .validate()
                        .map_err(|e| Raise::value(format!("filter `{key}`: {e}")))?;
                }
                "from" => from = Some(time_bound(&value, "filter `from`")?),
                "to" => to = Some(time_bound(&value, "filter `to`")?),
                "ids" => {
                    if value.is_instance_of::<PyString>() {
                        return Err(
                            Raise::type_error("filter `ids` is a collection of int ids").into()
                        );
                    }
                    let mut ids = RoaringTreemap::new();
                    for id in value.try_iter()? {
                        match Key::extract(&id?)? {
                            Key::Id(id) => {
                                ids.insert(id);
                            }
                            Key::External(_) => {
                                return Err(Raise::type_error(
                                    "filter `ids` holds int item ids, not str",
                                )
                                .into());
                            }
                        }
                    }
                    out.items = Some(ids);
                }
                "signals" => {
                    if value.is_instance_of::<PyString>() {
                        return Err(
                            Raise::type_error("filter `signals` is a collection of names").into(),
                        );
                    }
                    let mut signals = Signals {
                        dense: false,
                        lexical: false,
                        graph: false,
                        place: false,
                    };
                    for name in value.try_iter()? {
                        let name = name?;
                        let Ok(name) = name.cast::<PyString>() else {
                            return Err(
                                Raise::type_error("filter `signals` holds str names").into()
                            );
                        };
                        match &*name.to_cow()? {
                            "dense" => signals.dense = true,
                            "lexical" => signals.lexical = true,
                            "graph" => signals.graph = true,
                            "place" => signals.place = true,
                            other => {
                                return Err(Raise::value(format!(
                                    "filter `signals`: unknown signal {other:?} (dense, lexical, graph, place)"
                                ))
                                .into());
                            }
                        }
                    }
                    out.signals = signals;
                }
                other => {
                    return Err(Raise::value(format!(
                        "unknown filter {other:?} (filters: source, from, to, ids, signals, user_id, agent_id, run_id)"
                    ))
                    .into());
                }
            }
        }
        out.time = match (from, to) {
            (Some(from), Some(to)) => TimeWindow::between(from, to),
            (Some(from), None) => TimeWindow::from(from),
            (None, Some(to)) => TimeWindow::until(to),
            (None, None) => Ok(TimeWindow::ALL),
        }
        .map_err(Raise::from)?;
        Ok(out)
    }
}

/// A store opened from Python.
#[pyclass(module = "memdb._native", name = "Store", frozen)]
pub(crate) struct PyStore {
    path: PathBuf,
    read_only: bool,
    /// What this handle may destroy (`allow=` at open; SPEC.md §11.1).
    granted: Capabilities,
    /// `None` once closed.
    state: RwLock<Option<Open>>,
}

impl PyStore {
    /// Runs `f` on the open store with the GIL released.
    pub(crate) fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Open) -> Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let guard = self.state.read().map_err(|_| Raise::poisoned())?;
            let open = guard.as_ref().ok_or_else(|| Raise::closed(&self.path))?;
            f(open)
        })
        .map_err(PyErr::from)
    }

    /// Runs `f` with the store to itself (no other call of this handle under way), with the
    /// GIL released.
    fn run_mut<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Open) -> Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.state.write().map_err(|_| Raise::poisoned())?;
            let open = guard.as_mut().ok_or_else(|| Raise::closed(&self.path))?;
            f(open)
        })
        .map_err(PyErr::from)
    }

    /// Items given to `ingest` as JSONL lines (their index, the line).
    fn lines(items: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, Vec<u8>)>> {
        if items.is_instance_of::<PyString>() || items.is_instance_of::<PyDict>() {
            return Err(Raise::type_error(
                "items is an iterable of dicts (one per item), not a single str or dict",
            )
            .into());
        }
        let mut lines = Vec::new();
        for (index, item) in items.try_iter()?.enumerate() {
            let item = item?;
            if !item.is_instance_of::<PyDict>() {
                return Err(Raise::type_error(format!(
                    "items[{index}] is a dict of item fields, not {}",
                    type_name(&item)
                ))
                .into());
            }
            let value = from_py(&item, &format!("items[{index}]"), 0)?;
            let line = serde_json::to_vec(&value)
                .map_err(|e| Raise::value(format!("items[{index}]: {e}")))?;
            lines.push((index, line));
        }
        Ok(lines)
    }

    /// Vectors, memory graph and pages for items that lack them (the ingest's derived stages).
    fn derive(open: &Open, encoder: &MiniLm) -> Result<Value> {
        let options = IngestOptions {
            pages: PageStage::Stale,
            ..IngestOptions::default()
        };
        let report = open
            .store
            .ingest(options)?
            .finish(Some(encoder), &mut |_, _, _| {})?;
        Ok(report::derived_json(&report))
    }

    /// An import: records committed through `feed`, then (with `embed`) the derived stages.
    fn import(
        &self,
        py: Python<'_>,
        embed: bool,
        batch: usize,
        feed: impl FnOnce(&mut Importer<'_, '_>) -> memdb_import::Result<()> + Send,
    ) -> PyResult<Value> {
        let granted = self.granted;
        self.run(py, |open| {
            // The encoder first: a missing model fails the call before anything is written.
            let encoder = if embed { Some(open.encoder()?) } else { None };
            let options = ImportOptions {
                batch_items: batch,
                granted,
                ..ImportOptions::default()
            };
            let mut quiet = ();
            let mut importer = Importer::new(&open.store, options, &mut quiet)?;
            feed(&mut importer)?;
            let mut json = importer.finish()?.json();
            // The items are committed: a derived stage that fails now is a warning (the next
            // `embed()` completes it), never an error that would make the caller add them again.
            json["derived"] = match &encoder {
                Some(encoder) => match PyStore::derive(open, encoder) {
                    Ok(derived) => derived,
                    Err(e) => {
                        let warning = format!(
                            "stored, but embedding, the memory graph or pages failed ({e}); \
                             embed() completes them"
                        );
                        match json["warnings"].as_array_mut() {
                            Some(warnings) => warnings.push(Value::String(warning)),
                            None => json["warnings"] = Value::Array(vec![Value::String(warning)]),
                        }
                        Value::Null
                    }
                },
                None => Value::Null,
            };
            Ok(json)
        })
    }
}

/// Text from a `str`, or a `date` / `datetime` by its ISO form.
fn text_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if obj.hasattr("isoformat")? {
        return obj.call_method0("isoformat")?.extract::<String>();
    }
    Err(Raise::type_error(format!(
        "{name} must be a str, date or datetime, not {}",
        type_name(obj)
    ))
    .into())
}

/// A forgetting policy: a built-in name, or a TOML file.
fn load_policy(spec: &str) -> Result<memdb::forget::Policy> {
    if spec.ends_with(".toml") || Path::new(spec).is_file() {
        let text = std::fs::read_to_string(spec)
            .map_err(|e| Raise::new("StorageError", format!("read policy file {spec}: {e}")))?;
        return memdb::forget::Policy::from_toml(&text)
            .map_err(|e| Raise::new("PolicyError", format!("{spec}: {e}")));
    }
    memdb::forget::Policy::builtin(spec).map_err(|e| Raise::new("PolicyError", e.to_string()))
}

/// The capabilities `allow=` names: `None`, a comma-separated string, or an iterable of names.
fn capabilities(allow: Option<&Bound<'_, PyAny>>) -> PyResult<Capabilities> {
    let Some(allow) = allow.filter(|a| !a.is_none()) else {
        return Ok(Capabilities::NONE);
    };
    let parse = |text: &str| {
        Capabilities::parse_list(text).map_err(|e| Raise::value(format!("allow: {e}")))
    };
    if let Ok(text) = allow.cast::<PyString>() {
        return Ok(parse(&text.to_cow()?)?);
    }
    let mut granted = Capabilities::NONE;
    for name in allow.try_iter().map_err(|_| {
        Raise::type_error(format!(
            "allow must be a list of capability names, got {}",
            type_name(allow)
        ))
    })? {
        let name = name?;
        let text = name.cast::<PyString>().map_err(|_| {
            Raise::type_error(format!(
                "allow: a capability is a name (str), got {}",
                type_name(&name)
            ))
        })?;
        let one = parse(&text.to_cow()?)?;
        for capability in Capability::ALL {
            if one.allows(capability) {
                granted = granted.with(capability);
            }
        }
    }
    Ok(granted)
}

/// A refusal as the `CapabilityError` Python sees, naming `allow=`.
fn refused(refusal: Refusal) -> Raise {
    let capability = refusal.capability().map_or("delete", |c| c.name());
    Raise::new(
        "CapabilityError",
        format!("{refusal}: open the store with allow=[\"{capability}\"] to permit it"),
    )
    .attr_str("capability", capability)
}

/// Checks that a handle holding `granted` may retire or restore item `id` of `fields`.
fn permit(id: u64, fields: &memdb::ItemFields, granted: Capabilities) -> Result<()> {
    check_change(
        id,
        fields,
        &memdb::Scope::default(),
        granted,
        Change::Retire,
    )
    .map_err(refused)
}

#[pymethods]
impl PyStore {
    /// Opens the store at `path` (creating it when `create` and the folder holds none), or,
    /// with `read_only`, beside its writer without taking its lock.
    #[staticmethod]
    #[pyo3(signature = (path, *, create = true, read_only = false, passphrase = None, allow = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        read_only: bool,
        passphrase: Option<String>,
        allow: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyStore> {
        let granted = capabilities(allow)?;
        // An encrypted store's passphrase: the argument, else MEMDB_PASSPHRASE (as the CLI).
        // Given for a store that does not exist yet, it makes the new store encrypted.
        let passphrase = passphrase.map(zeroize::Zeroizing::new).or_else(|| {
            Store::is_encrypted_at(&path)
                .then(|| std::env::var("MEMDB_PASSPHRASE").ok())
                .flatten()
                .map(zeroize::Zeroizing::new)
        });
        let store = py
            .detach(|| -> Result<Store> {
                let mut options = Options::default();
                if let Some(passphrase) = &passphrase {
                    let secret =
                        memdb::crypto::Secret::passphrase(passphrase).map_err(|source| {
                            memdb::StoreError::Key {
                                path: path.clone(),
                                source,
                            }
                        })?;
                    options.secret = Some(Arc::new(secret));
                }
                Ok(if read_only {
                    Store::open_read_only(&path, options)?
                } else if create {
                    Store::open_or_create(&path, options)?
                } else {
                    Store::open(&path, options)?
                })
            })
            .map_err(PyErr::from)?;
        Ok(PyStore {
            path,
            read_only,
            granted,
            state: RwLock::new(Some(Open {
                store,
                encoder: Mutex::new(None),
            })),
        })
    }

    /// Closes the store (waits for calls under way on other threads); releases its lock. A
    /// second close does nothing.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            let open = self
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            // Dropping the last handle releases the store's lock.
            drop(open);
        });
    }

    /// Whether the store was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.state.read().map(|s| s.is_none()).unwrap_or(true)
    }

    /// The store's folder.
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// Whether the store was opened read-only.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "Store({:?}{}{})",
            self.path.display().to_string(),
            if self.read_only {
                ", read_only=True"
            } else {
                ""
            },
            if self.closed() { ", closed" } else { "" }
        )
    }

    /// Items given as dicts in memdb's JSONL shape (SPEC.md §8.1: `source`, `time`, `body`,
    /// `tags`, …), committed in batches; with `embed`, then embedded and added to the memory
    /// graph. Bad items are reported in `skipped`, the rest land.
    #[pyo3(signature = (items, *, embed = true, batch = None))]
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        embed: bool,
        batch: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let batch = batch.map_or(Ok(1000), |b| count(b, "batch", 1))?;
        let lines = PyStore::lines(items)?;
        let json = self.import(py, embed, batch, move |importer| importer.records(lines))?;
        to_py(py, &json)
    }

    /// Files (or folders, for photos, mail and ATM-Bench) in `format` (`jsonl`, `locomo`,
    /// `photos`, `mail`, `atm`), as `memdb import` reads them.
    #[pyo3(signature = (format, paths, *, embed = true, batch = None))]
    fn import_files<'py>(
        &self,
        py: Python<'py>,
        format: String,
        paths: Vec<PathBuf>,
        embed: bool,
        batch: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let format = crate::import::format(&format)?;
        let batch = batch.map_or(Ok(1000), |b| count(b, "batch", 1))?;
        let json = self.import(py, embed, batch, move |importer| {
            importer.files(format, &paths)
        })?;
        to_py(py, &json)
    }

    /// Embeds the items without a vector and brings the memory graph and pages up to date.
    /// `item_text` ("sgm" or "descriptive") first chooses the style of the item text the
    /// encoder and BM25 read; vectors made in the other style are made again.
    #[pyo3(signature = (*, item_text = None))]
    fn embed<'py>(
        &self,
        py: Python<'py>,
        item_text: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let style = item_text
            .map(|name| {
                memdb::recall::ItemTextStyle::from_name(&name).ok_or_else(|| {
                    Raise::value(format!(
                        "item_text must be \"sgm\" or \"descriptive\", not {name:?}"
                    ))
                })
            })
            .transpose()?;
        let json = self.run(py, |open| {
            let encoder = open.encoder()?;
            let remade = match style {
                Some(style) => open.store.set_item_text_style(style)?,
                None => 0,
            };
            let mut json = PyStore::derive(open, &encoder)?;
            json["item_text"] = open.store.snapshot()?.item_text_style()?.name().into();
            json["remade"] = (remade + json["remade"].as_u64().unwrap_or(0)).into();
            Ok(json)
        })?;
        to_py(py, &json)
    }

    /// The items that answer `query`, best first (dicts of `id`, `score`, `text`, `item` and
    /// `explanation`), and why no item matches well when none does (`None`: they answer).
    #[pyo3(signature = (query, k = None, filters = None))]
    fn recall<'py>(
        &self,
        py: Python<'py>,
        query: String,
        k: Option<&Bound<'py, PyAny>>,
        filters: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyList>, Option<String>)> {
        let k = k.map_or(Ok(10), |k| count(k, "k", 1))?;
        let filters = RecallFilters::parse(k, filters)?;
        let hits = self.run(py, move |open| {
            let encoder = open.encoder()?;
            let recall = open.store.recall(&query, &filters.options(), &*encoder)?;
            let snapshot = open.store.snapshot()?;
            // The text recall indexed, in the store's style.
            let style = snapshot.item_text_style()?;
            let mut hits = Vec::with_capacity(recall.hits.len());
            for hit in recall.hits {
                let item = snapshot.get(hit.item)?;
                let text = item.as_ref().map(|i| memdb::recall::item_text_in(i, style));
                hits.push((hit, item, text));
            }
            Ok((hits, recall.no_good_match))
        })?;
        let (hits, no_good_match) = hits;
        let list = PyList::empty(py);
        for (hit, item, text) in hits {
            let e = &hit.explanation;
            let explanation = json!({
                "dense_rank": e.dense_rank, "dense_score": e.dense_score,
                "lexical_rank": e.lexical_rank,
                "graph_rank": e.graph_rank, "place_rank": e.place_rank, "place": e.place,
                "nodes": e.nodes,
                "path": e.path.as_ref().map(|(id, _)| id),
                "page": e.path.as_ref().map(|(_, page)| page),
            });
            let dict = PyDict::new(py);
            dict.set_item("id", hit.item)?;
            dict.set_item("score", hit.score)?;
            dict.set_item("text", text.unwrap_or_default())?;
            match &item {
                Some(item) => dict.set_item("item", to_py(py, &memdb_query::item_json(item))?)?,
                None => dict.set_item("item", py.None())?,
            }
            dict.set_item("explanation", to_py(py, &explanation)?)?;
            list.append(dict)?;
        }
        Ok((list, no_good_match))
    }

    /// Runs one statement of the query language; the result as one document (`statement`,
    /// `kind`, `rows` or the thing shown, `plan`).
    fn query<'py>(&self, py: Python<'py>, statement: String) -> PyResult<Bound<'py, PyAny>> {
        let granted = self.granted;
        let doc = self.run(py, |open| {
            let parsed = memdb_query::parse(&statement).map_err(memdb_query::QueryError::Parse)?;
            if let Statement::Forget(forget) = &parsed
                && !forget.dry_run
            {
                granted
                    .require(
                        Capability::Forget,
                        "a FORGET statement that is not a dry run",
                    )
                    .map_err(refused)?;
            }
            if let Statement::Forget(forget) = &parsed
                && !forget.dry_run
                && open.store.is_read_only()
            {
                return Err(memdb::StoreError::ReadOnly {
                    path: open.store.path().to_path_buf(),
                }
                .into());
            }
            let recall = matches!(
                parsed,
                Statement::Query(Query::Recall(_)) | Statement::Explain(Query::Recall(_))
            );
            let encoder = if recall { Some(open.encoder()?) } else { None };
            let ctx = QueryContext {
                embedder: encoder.as_deref().map(|e| e as &dyn memdb::Embedder),
                ..QueryContext::default()
            };
            let out = open.store.query(&statement, &ctx)?;
            Ok(memdb_query::to_json(&out))
        })?;
        to_py(py, &doc)
    }

    /// The current item named by `key` (its id, or its external id) with the blobs forgetting
    /// dropped and its earlier versions; `None` when there is none.
    fn get<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = Key::extract(key)?;
        let doc = self.run(py, move |open| {
            let snapshot = open.store.snapshot()?;
            let Some(item) = key.item(&snapshot)? else {
                return Ok(Value::Null);
            };
            let dropped = snapshot.dropped_blobs(item.id)?;
            let versions = snapshot.versions(item.id)?;
            Ok(report::item_detail_json(&item, &dropped, &versions))
        })?;
        to_py(py, &doc)
    }

    /// Retires the memory named by `key` (its versions are kept: see `history`).
    #[pyo3(signature = (key, *, reason = None))]
    fn delete<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        reason: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = Key::extract(key)?;
        let granted = self.granted;
        let doc = self.run(py, move |open| {
            let snapshot = open.store.snapshot()?;
            let id = key
                .resolve(&snapshot)?
                .ok_or_else(|| Raise::not_found(format!("no {key}")))?;
            if let Some(item) = snapshot.get(id)? {
                permit(id, &item.fields, granted)?;
            }
            drop(snapshot);
            let applied = open.store.apply(vec![memdb::memory::MemoryOp::Delete {
                id,
                valid_to_ms: None,
                note: memdb::memory::OpNote {
                    reason: reason.unwrap_or_default(),
                    actor: None,
                    role: None,
                },
            }])?;
            let first = applied
                .first()
                .ok_or_else(|| Raise::new("MemdbError", "the store applied no operation"))?;
            Ok(report::applied_json(first))
        })?;
        to_py(py, &doc)
    }

    /// Brings deleted memory `id` back as its last version read, with the originals it still
    /// holds (until it is purged or compacted past the store's retention window).
    #[pyo3(signature = (id, *, reason = None))]
    fn undelete<'py>(
        &self,
        py: Python<'py>,
        id: u64,
        reason: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let granted = self.granted;
        let doc = self.run(py, move |open| {
            let snapshot = open.store.snapshot()?;
            if snapshot.get(id)?.is_some() {
                return Err(Raise::value(format!("memory {id} is not deleted")));
            }
            let version = snapshot
                .history(id)?
                .versions
                .pop()
                .ok_or_else(|| Raise::not_found(format!("no deleted memory {id}")))?;
            drop(snapshot);
            // What this handle could not delete it may not bring back either.
            permit(id, &version.record.fields, granted)?;
            let applied = open.store.restore(
                id,
                memdb::memory::OpNote {
                    reason: reason.unwrap_or_else(|| "undelete".to_owned()),
                    actor: None,
                    role: None,
                },
            )?;
            let mut doc = report::applied_json(&applied);
            doc["event"] = json!("UNDELETE");
            Ok(doc)
        })?;
        to_py(py, &doc)
    }

    /// Removes memory `id` (current or deleted) and its whole history for good. Needs the
    /// `purge` capability.
    fn purge<'py>(&self, py: Python<'py>, id: u64) -> PyResult<Bound<'py, PyAny>> {
        self.granted
            .require(Capability::Purge, format!("purging memory {id} (no undo)"))
            .map_err(refused)?;
        let purged = self.run(py, move |open| Ok(open.store.purge(id)?))?;
        to_py(py, &json!({ "memory_id": id, "purged": purged }))
    }

    /// The capabilities this handle was opened with (`allow=`).
    #[getter]
    fn allowed(&self) -> Vec<&'static str> {
        self.granted.names()
    }

    /// Every version of the memory named by `key` (oldest first) and its logged operations.
    fn history<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = Key::extract(key)?;
        let doc = self.run(py, move |open| {
            let snapshot = open.store.snapshot()?;
            let id = key
                .resolve(&snapshot)?
                .ok_or_else(|| Raise::not_found(format!("no {key}")))?;
            Ok(report::history_json(id, &snapshot.history(id)?))
        })?;
        to_py(py, &doc)
    }

    /// Mem0's write path: the facts of `text` decided against similar memories of the same
    /// scope and speaker (ADD, UPDATE, DELETE or NONE) and applied in one commit. Returns
    /// `{"results", "skipped", "replayed", "warnings"}`; with `idempotency_key`, a repeated
    /// call applies nothing and returns what the first applied.
    #[pyo3(signature = (text, *, speaker = None, time = None, user_id = None, agent_id = None, run_id = None, idempotency_key = None))]
    #[allow(clippy::too_many_arguments)]
    fn remember<'py>(
        &self,
        py: Python<'py>,
        text: String,
        speaker: Option<String>,
        time: Option<&Bound<'py, PyAny>>,
        user_id: Option<String>,
        agent_id: Option<String>,
        run_id: Option<String>,
        idempotency_key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let time = match time.filter(|t| !t.is_none()) {
            Some(t) => Some(
                memdb::EventTime::parse(&text_arg(t, "time")?)
                    .map_err(|e| Raise::value(format!("time: {e}")))?,
            ),
            None => None,
        };
        let scope = memdb::Scope::new(user_id, agent_id, run_id);
        scope
            .validate()
            .map_err(|e| Raise::value(format!("user_id/agent_id/run_id: {e}")))?;
        let doc = self.run(py, move |open| {
            use memdb::ops::{Message, RememberOptions, SentenceExtractor};
            let encoder = open.encoder()?;
            let decider = memdb::ops::on_device_decider(&*encoder);
            let mut options = RememberOptions::new(&SentenceExtractor, decider.as_ref(), &*encoder);
            options.time = time;
            options.actor = speaker.clone();
            options.scope = scope;
            options.idempotency_key = idempotency_key;
            let report = open
                .store
                .remember(&[Message { speaker, text }], &options)?;
            Ok(report::remember_json(&report, &[]))
        })?;
        to_py(py, &doc)
    }

    /// Forgets by `policy` (a built-in name or a TOML file) as of `as_of` (default: today):
    /// pages age into lower quality, illegible graph nodes fade, item vectors shrink. A dry
    /// run (the default, as the MCP `forget` tool's) reports what would change; pass
    /// `dry_run=False` to change the store. Dropping photo originals needs `drop_originals`.
    #[pyo3(signature = (policy, as_of = None, *, dry_run = true, drop_originals = false))]
    fn forget<'py>(
        &self,
        py: Python<'py>,
        policy: String,
        as_of: Option<&Bound<'py, PyAny>>,
        dry_run: bool,
        drop_originals: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let as_of = match as_of.filter(|a| !a.is_none()) {
            Some(a) => {
                let text = text_arg(a, "as_of")?;
                text.parse::<jiff::civil::Date>().map_err(|e| {
                    Raise::value(format!("as_of {text:?} is not a YYYY-MM-DD date ({e})"))
                })?
            }
            None => jiff::Zoned::now().date(),
        };
        if !dry_run {
            self.granted
                .require(
                    Capability::Forget,
                    if drop_originals {
                        "forgetting that drops photo originals"
                    } else {
                        "forgetting (not a dry run)"
                    },
                )
                .map_err(refused)?;
        }
        let policy = load_policy(&policy)?;
        let mut report = self.run(py, |open| {
            Ok(open.store.forget(
                &policy,
                as_of,
                memdb::forget::ForgetOptions {
                    dry_run,
                    drop_originals,
                    pages: memdb::scrapbook::PageOptions::default(),
                    progress: &mut |_, _| {},
                },
            )?)
        })?;
        if !report.dry_run {
            // Forgetting frees catalog pages; give them back (as `memdb forget` does).
            report.store_bytes_after = self.run_mut(py, |open| {
                match open.store.shrink_catalog() {
                    Ok(_) | Err(memdb::StoreError::InUse(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                Ok(open.store.stats()?.total_bytes())
            })?;
        }
        to_py(py, &memdb_query::forget_json(&report))
    }

    /// Rewrites segments with much dead space (`all`: every segment) and rebuilds vector
    /// spaces that need it; gives freed catalog pages back.
    #[pyo3(signature = (*, all = false))]
    fn compact<'py>(&self, py: Python<'py>, all: bool) -> PyResult<Bound<'py, PyAny>> {
        let doc = self.run_mut(py, |open| {
            let rebuilt = open.store.compact_vectors(all)?;
            let options = CompactOptions {
                victims: if all {
                    Victims::All
                } else {
                    Victims::DeadRatio(0.25)
                },
            };
            let compacted = open.store.compact(&options, &mut KeepEverything)?;
            let shrink = match open.store.shrink_catalog() {
                Ok(shrink) => Some(shrink),
                Err(memdb::StoreError::InUse(_)) => None,
                Err(e) => return Err(e.into()),
            };
            Ok(report::compact_json(&compacted, &rebuilt, shrink.as_ref()))
        })?;
        to_py(py, &doc)
    }

    /// Items, blobs, segments and bytes, and the encoder model the store is bound to.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let doc = self.run(py, |open| {
            Ok(report::stats_json(
                &open.store.stats()?,
                open.store.model()?,
            ))
        })?;
        to_py(py, &doc)
    }

    /// Verifies every checksum of the store; `clean` is false when anything is damaged, and
    /// `problems` and `lost` say what.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let doc = self.run(py, |open| Ok(report::check_json(&open.store.check()?)))?;
        to_py(py, &doc)
    }
}
