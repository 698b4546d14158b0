//! `memdb remember`, `memdb log` and `memdb ask`: the memory operations of `memdb::ops` from
//! the command line (Mem0's write path, the operation log, and an answer from recall).

use std::path::Path;
use std::time::Duration;

use memdb::EventTime;
use memdb::ops::{
    Decider, FactExtractor, Message, ModelAnswerer, ModelDecider, ModelExtractor, RememberOptions,
    SentenceExtractor,
};
use serde_json::{Value, json};

use crate::error::{CliError, Result};
use crate::output::Out;
use memdb_query::reports::{op_row_json, rfc3339, texts_of};

/// The loopback models of the three operations (each its own model or LoRA adapter).
pub(crate) struct Experts {
    pub(crate) endpoint: String,
    pub(crate) extract_model: Option<String>,
    pub(crate) update_model: Option<String>,
    pub(crate) timeout: u64,
}

/// One `memdb remember` call: what was said, by whom, when, in which scope.
pub(crate) struct Call<'a> {
    pub(crate) text: &'a str,
    pub(crate) speaker: Option<String>,
    pub(crate) time: Option<&'a str>,
    pub(crate) scope: memdb::Scope,
    pub(crate) idempotency_key: Option<String>,
}

/// `memdb remember STORE TEXT`.
pub(crate) fn remember(dir: &Path, call: Call<'_>, experts: &Experts, out: &Out) -> Result<()> {
    let time = call
        .time
        .map(EventTime::parse)
        .transpose()
        .map_err(|reason| CliError::flag("--time", reason))?;
    call.scope
        .validate()
        .map_err(|reason| CliError::flag("--user-id/--agent-id/--run-id", reason))?;
    let store = crate::open::open_store(dir)?;
    let encoder = crate::embed::encoder_for(&store, !out.json, crate::model::Download::Ask)?;
    let timeout = Duration::from_secs(experts.timeout.max(1));
    let extractor: Box<dyn FactExtractor + '_> = match &experts.extract_model {
        Some(model) => Box::new(
            ModelExtractor::new(&experts.endpoint, model, timeout)
                .map_err(|e| CliError::flag("--endpoint", e))?,
        ),
        None => Box::new(SentenceExtractor),
    };
    let decider: Box<dyn Decider + '_> = match &experts.update_model {
        Some(model) => Box::new(
            ModelDecider::new(&experts.endpoint, model, timeout)
                .map_err(|e| CliError::flag("--endpoint", e))?,
        ),
        None => memdb::ops::on_device_decider(&encoder),
    };
    let mut options = RememberOptions::new(extractor.as_ref(), decider.as_ref(), &encoder);
    options.time = time;
    options.actor = call.speaker.clone();
    options.scope = call.scope;
    options.idempotency_key = call.idempotency_key;
    let report = store.remember(
        &[Message {
            speaker: call.speaker,
            text: call.text.to_owned(),
        }],
        &options,
    )?;
    out.emit(memdb_query::reports::remember_json(&report, &[]), || {
        memdb_query::reports::remember_text(&report)
    });
    Ok(())
}

/// `memdb log STORE [--since T]`: the operation log, oldest first, in Mem0's history columns.
pub(crate) fn log(dir: &Path, since: Option<&str>, out: &Out) -> Result<()> {
    let since_ms = since
        .map(|s| EventTime::parse(s).map(|t| t.unix_ms))
        .transpose()
        .map_err(|reason| CliError::flag("--since", reason))?;
    let store = crate::open::open_for_reading(dir)?;
    let snapshot = store.snapshot()?;
    let rows = snapshot.op_log(since_ms)?;
    let mut json_rows = Vec::new();
    let mut lines = Vec::new();
    // Each memory's versions, read once however many of its ops the log lists.
    let mut histories: std::collections::HashMap<u64, memdb::memory::MemoryHistory> =
        std::collections::HashMap::new();
    for row in &rows {
        let history = match histories.entry(row.memory_id) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(snapshot.history(row.memory_id)?)
            }
        };
        let (old, new) = texts_of(history, row);
        json_rows.push(op_row_json(row, old.as_deref(), new.as_deref()));
        lines.push(format!(
            "{:>6}  {}  {:<6} memory {:<6} {}{}",
            row.seq,
            rfc3339(row.system_ms).as_str().unwrap_or("?"),
            row.kind.name(),
            row.memory_id,
            match (&old, &new) {
                (Some(o), Some(n)) => format!("{o:?} → {n:?}"),
                (None, Some(n)) => format!("{n:?}"),
                (Some(o), None) => format!("{o:?}"),
                (None, None) => String::new(),
            },
            if row.reason.is_empty() {
                String::new()
            } else {
                format!("  ({})", row.reason)
            }
        ));
    }
    out.emit(Value::Array(json_rows), || {
        if lines.is_empty() {
            "no operations".to_owned()
        } else {
            lines.join("\n")
        }
    });
    Ok(())
}

/// `memdb ask STORE QUESTION`: recall's evidence (of `scope`'s memories when it is given),
/// and with `--model` an answer citing it.
pub(crate) fn ask(
    dir: &Path,
    question: &str,
    k: usize,
    scope: &memdb::Scope,
    generate: Option<(&str, &str, u64)>,
    out: &Out,
) -> Result<()> {
    let store = crate::open::open_for_reading(dir)?;
    let encoder = crate::embed::encoder_for(&store, !out.json, crate::model::Download::Ask)?;
    let answer = crate::embed::recall(
        &store,
        &encoder,
        memdb_query::Recall {
            text: question.to_owned(),
            filters: memdb_query::ScopeField::filters(scope),
            at: memdb_query::TimeTravel::default(),
            asked_on: None,
            top: Some(k as u64),
        },
    )?;
    let evidence: Vec<(u64, String)> = answer
        .rows
        .iter()
        .map(|row| (row.item.id, memdb::recall::item_text(&row.item)))
        .collect();
    let skipped = answer.skipped.describe();
    if let Some(skipped) = &skipped
        && !out.json
    {
        eprintln!("memdb: warning: {skipped}");
    }
    let generated = match generate {
        Some((endpoint, model, timeout)) => {
            let answerer = ModelAnswerer::new(endpoint, model, Duration::from_secs(timeout.max(1)))
                .map_err(|e| CliError::flag("--endpoint", e))?;
            Some(answerer.answer(question, &evidence)?)
        }
        None => None,
    };
    let json = json!({
        "question": question,
        "answer": generated.as_ref().map(|a| a.text.clone()),
        "cited": generated.as_ref().map(|a| a.cited.clone()),
        "evidence": evidence.iter().map(|(id, text)| json!({"id": id, "text": text})).collect::<Vec<_>>(),
        "skipped": skipped,
    });
    out.emit(json, || {
        let mut text = match &generated {
            Some(a) => format!(
                "{}\n(cites {})\n\nevidence:\n",
                a.text,
                a.cited
                    .iter()
                    .map(|id| format!("[{id}]"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            None => "no generation model given (--model): the evidence recall found:\n".to_owned(),
        };
        for (id, line) in &evidence {
            text.push_str(&format!("[{id}] {line}\n"));
        }
        text
    });
    Ok(())
}
