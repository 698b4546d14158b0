//! The write-side pipeline of Mem0, on the device: new input → facts → for each fact the most
//! similar current memories of its subject → a decision → typed memory operations applied in
//! one commit.
//!
//! A *memory* here is a fact item: source `note`, tag [`MEMORY_TAG`], the fact as its body, and
//! its subject: the [`Scope`] it was remembered in (user, agent, run) and the speaker who said
//! it. Only memories of the fact's own subject are candidates, never another person's, and
//! never the raw items (a chat turn, an e-mail, a photo): those are evidence, and an UPDATE must
//! not rewrite them.
//!
//! Invariants:
//! - one call is one commit ([`crate::Store::apply`]'s batch, with the facts' vectors): after a
//!   crash the store holds all of a call's operations or none;
//! - facts are decided in the order they were said, each against the memories as the facts
//!   before it left them: a memory an earlier fact changed is shown as it now reads, one it
//!   retired is not shown, one it added is shown like a stored one. So "I'm not allergic to
//!   peanuts anymore. I'm allergic to peanuts." retires the memory and then adds it again, and
//!   no two facts of a call can make the call fail;
//! - a fact that changes or retracts a memory an earlier fact of the same call added changes
//!   that memory before it is stored (one ADD with the last text, or nothing at all); likewise
//!   a stored memory changed by several facts gets one operation, the last (one commit moves it
//!   from its stored version to its last, and no version exists only inside the call);
//! - candidates are the top [`RememberOptions::candidates_per_fact`] memories of the subject by
//!   cosine, most similar first; a decider names its target (and what else the fact closes) by
//!   position in them, so no operation can name a memory it was not shown;
//! - every sentence of the input is accounted for: the operations its facts caused, or in
//!   [`RememberReport::skipped`] with the reason it gave none;
//! - with an idempotency key, the commit records its operations under the key
//!   ([`crate::Snapshot::ops_recorded_as`]); a later call with the same key applies nothing and
//!   answers what the first applied ([`RememberReport::replayed`]).

use crate::error::StoreError;
use crate::handle::{Snapshot, Store};
use std::collections::HashMap;

use memdb_formats::item::{EventTime, ItemFields, Scope, Source};

use super::extract::FactExtractor;
use super::{Candidate, Decider, Decision, Operation, cues, merge};
use crate::error::{Error, Result};
use crate::graph::Embedder;
use memdb_store::{
    AppliedOp, ITEM_VECTORS, MemoryOp, MemoryOpKind, OpNote, StoredVectors, Validity, VectorScope,
};

/// The tag every memory written by [`Store::remember`] carries.
pub const MEMORY_TAG: &str = "memory";

/// Whether an item is a remembered fact: a memory [`Store::remember`] wrote (a note tagged
/// [`MEMORY_TAG`]).
pub fn is_remembered_fact(fields: &memdb_formats::item::ItemFields) -> bool {
    fields.source == memdb_formats::item::Source::Note
        && fields.tags.iter().any(|t| t == MEMORY_TAG)
}

/// The longest idempotency key, in bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 200;

/// One message of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub speaker: Option<String>,
    /// What was said.
    pub text: String,
}

/// How [`Store::remember`] works.
pub struct RememberOptions<'a> {
    /// Extracts facts (MemLoRA's "extract" expert, or [`super::SentenceExtractor`]).
    pub extractor: &'a dyn FactExtractor,
    /// Decides each fact's operation (the "update" expert, or the on-device decider).
    pub decider: &'a dyn Decider,
    /// The store's encoder (candidates by cosine; the facts' vectors).
    pub embedder: &'a dyn Embedder,
    /// Candidates per fact (Mem0's code: 5).
    pub candidates_per_fact: usize,
    /// When the input was said (the facts' event time and the start of their validity);
    /// `None`: now.
    pub time: Option<EventTime>,
    /// Who acts (logged as the actor; a memory's speaker is its message's).
    pub actor: Option<String>,
    /// In what role (logged).
    pub role: Option<String>,
    /// Whose memories these are: every memory written carries it, and a fact is decided only
    /// against memories of the same scope and speaker.
    pub scope: Scope,
    /// A client's key for this call (at most [`MAX_IDEMPOTENCY_KEY_BYTES`], no control
    /// characters): a call repeated with the same key applies nothing and answers what the
    /// first applied.
    pub idempotency_key: Option<String>,
}

impl<'a> RememberOptions<'a> {
    /// Options with `extractor`, `decider` and `embedder`, five candidates per fact, the time
    /// now, no actor, the role `user`, the empty scope and no idempotency key.
    pub fn new(
        extractor: &'a dyn FactExtractor,
        decider: &'a dyn Decider,
        embedder: &'a dyn Embedder,
    ) -> RememberOptions<'a> {
        RememberOptions {
            extractor,
            decider,
            embedder,
            candidates_per_fact: 5,
            time: None,
            actor: None,
            role: Some("user".to_owned()),
            scope: Scope::default(),
            idempotency_key: None,
        }
    }
}

impl std::fmt::Debug for RememberOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RememberOptions")
            .field("extractor", &self.extractor)
            .field("decider", &self.decider)
            .field("candidates_per_fact", &self.candidates_per_fact)
            .field("time", &self.time)
            .field("scope", &self.scope)
            .field("idempotency_key", &self.idempotency_key)
            .finish_non_exhaustive()
    }
}

/// One operation [`Store::remember`] applied (or folded into another of the same call).
#[derive(Debug, Clone, PartialEq)]
pub struct Remembered {
    /// The fact, as stored (cue words such as "scratch that" removed).
    pub fact: String,
    /// The sentence it came from, as said.
    pub said: String,
    /// The decision (its target by position among the fact's candidates; for a memory the
    /// fact also closed, that memory's DELETE).
    pub decision: Decision,
    /// What happened to the memory.
    pub event: Operation,
    /// The memory it concerns; `None` for a memory this call added and then retracted, which is
    /// not stored.
    pub memory_id: Option<u64>,
    /// That memory's text before this fact (UPDATE, DELETE, NONE).
    pub old_text: Option<String>,
    /// The operation logged for it; `None` when it was folded into another operation of this
    /// call (a change of a memory this call adds) or nothing was stored.
    pub applied: Option<AppliedOp>,
}

/// A sentence that gave no fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The sentence as said.
    pub said: String,
    /// Why it gave none.
    pub reason: String,
}

/// What [`Store::remember`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RememberReport {
    /// Every operation, in the order it was decided.
    pub results: Vec<Remembered>,
    /// Every sentence that gave no fact, with why.
    pub skipped: Vec<Skipped>,
    /// The idempotency key named an earlier call: nothing was applied, and `results` are that
    /// call's operations as the log holds them.
    pub replayed: bool,
}

/// Whose a memory is: its scope and its speaker (folded to lower case).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Subject {
    scope: Scope,
    speaker: Option<String>,
}

impl Subject {
    fn new(scope: &Scope, speaker: Option<&str>) -> Subject {
        Subject {
            scope: scope.clone(),
            speaker: speaker
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty()),
        }
    }

    fn of(fields: &ItemFields) -> Subject {
        Subject::new(&fields.scope, fields.speaker.as_deref())
    }
}

/// A memory as this call sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Memory {
    /// A stored memory, by id.
    Stored(u64),
    /// A memory this call adds: the index of its ADD among the call's operations.
    New(usize),
}

/// A memory of the call's view: what it reads and its vector.
#[derive(Debug, Clone)]
struct Live {
    text: String,
    vector: Vec<f32>,
    subject: Subject,
}

/// An operation of the call, before the commit (`None` in [`Plan::ops`]: folded away).
#[derive(Debug)]
struct PlannedOp {
    op: MemoryOp,
    vector: Option<Vec<f32>>,
}

/// The call's operations and its view of the memories they change.
#[derive(Default)]
struct Plan {
    ops: Vec<Option<PlannedOp>>,
    /// Stored memories this call changed: their text now, or `None` when retired.
    stored: HashMap<u64, Option<Live>>,
    /// Memories this call adds, by the index of their ADD (`None`: retracted again).
    added: HashMap<usize, Option<Live>>,
    /// The one operation (UPDATE or DELETE) this call makes on each stored memory it changes:
    /// a later fact's change of the same memory replaces it, so one commit moves a memory from
    /// its stored version to its last one, with no version that existed only inside the call.
    changes: HashMap<u64, usize>,
    /// Result rows, in order.
    rows: Vec<Row>,
}

/// A result row and the operation it reports.
struct Row {
    row: Remembered,
    /// The operation whose memory it concerns (`None`: nothing stored).
    op: Option<usize>,
    /// Whether that operation is the row's own (not an ADD it was folded into).
    owns: bool,
}

/// One fact to decide.
struct Fact {
    /// As said (with cue words: the decider reads them).
    said_fact: String,
    /// As stored.
    text: String,
    sentence: String,
    speaker: Option<String>,
    /// An UPDATE's memory when it keeps clauses of the old one ([`merge`]).
    merged: Option<merge::Merged>,
}

fn check_key(key: &str) -> Result<()> {
    let bad = if key.is_empty() {
        Some("is empty".to_owned())
    } else if key.len() > MAX_IDEMPOTENCY_KEY_BYTES {
        Some(format!(
            "is {} bytes, at most {MAX_IDEMPOTENCY_KEY_BYTES}",
            key.len()
        ))
    } else if key.chars().any(char::is_control) {
        Some("holds a control character".to_owned())
    } else {
        None
    };
    match bad {
        Some(why) => Err(crate::Error::from(StoreError::InvalidItem {
            index: 0,
            reason: format!("idempotency key {why}"),
        })),
        None => Ok(()),
    }
}

impl Store {
    /// Remembers `messages`: extracts their facts, finds each fact's most similar current
    /// memories of its subject, decides ADD, UPDATE, DELETE or NONE (and what else the fact
    /// closes), and applies every decision in one commit, returning what was done and why, and
    /// which sentences gave no fact (see the module `ops::remember`).
    pub fn remember(
        &self,
        messages: &[Message],
        options: &RememberOptions<'_>,
    ) -> Result<RememberReport> {
        options
            .scope
            .validate()
            .map_err(|reason| StoreError::InvalidItem { index: 0, reason })?;
        if let Some(key) = &options.idempotency_key {
            check_key(key)?;
            if let Some(report) = self.replay(key)? {
                return Ok(report);
            }
        }
        let mut report = RememberReport::default();
        let mut facts: Vec<Fact> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for extracted in options.extractor.extract(messages)? {
            if let Some(reason) = &extracted.skipped {
                report.skipped.push(Skipped {
                    said: extracted.said.clone(),
                    reason: reason.clone(),
                });
            }
            for fact in extracted.facts {
                let key = (
                    memdb_text::words(&fact).collect::<Vec<_>>().join(" "),
                    extracted.speaker.clone(),
                );
                if !seen.insert(key) {
                    report.skipped.push(Skipped {
                        said: fact,
                        reason: "said before in this input".to_owned(),
                    });
                    continue;
                }
                facts.push(Fact {
                    text: cues::memory_text(&fact),
                    said_fact: fact,
                    sentence: extracted.said.clone(),
                    speaker: extracted.speaker.clone(),
                    merged: None,
                });
            }
        }
        if facts.is_empty() {
            if let Some(key) = &options.idempotency_key {
                let mut batch = self.batch();
                batch.record_ops_as(key.clone());
                self.commit_recorded(batch, key)?;
            }
            return Ok(report);
        }
        let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
        let vectors = crate::graph::embed_checked(options.embedder, &texts)?;
        let snapshot = self.snapshot()?;
        let space = snapshot.vectors(ITEM_VECTORS)?;
        let time = options.time.unwrap_or_else(|| EventTime {
            unix_ms: memdb_store::now_ms(),
            offset_minutes: 0,
        });
        let mut reader = MemoryReader {
            snapshot: &snapshot,
            space: space.as_ref(),
            texts: HashMap::new(),
        };
        let mut plan = Plan::default();
        for (mut fact, vector) in facts.into_iter().zip(vectors) {
            let subject = Subject::new(&options.scope, fact.speaker.as_deref());
            let shown = candidates(
                &mut reader,
                &plan,
                &vector,
                &subject,
                options.candidates_per_fact,
            )?;
            let texts: Vec<Candidate> = shown
                .iter()
                .map(|(_, live)| Candidate {
                    text: live.text.clone(),
                })
                .collect();
            let decision = options.decider.decide(&fact.said_fact, &texts)?;
            // "Forget about the Toyota" when no memory holds it is no memory of its own.
            if decision.op == Operation::Add
                && cues::read(&fact.said_fact).retracts_reference.is_some()
            {
                report.skipped.push(Skipped {
                    said: fact.sentence.clone(),
                    reason: "asks to forget something no memory of this subject holds".to_owned(),
                });
                continue;
            }
            let in_range = |at: Option<usize>| at.is_none_or(|i| i < shown.len());
            if (decision.op.has_target() && decision.target.is_none())
                || !in_range(decision.target)
                || decision.closes.iter().any(|(i, _)| !in_range(Some(*i)))
            {
                return Err(crate::Error::from(StoreError::Inconsistent(format!(
                    "the decider named candidates {:?} and {:?} of {}",
                    decision.target,
                    decision.closes,
                    shown.len()
                ))));
            }
            if let (Operation::Update, Some((_, old))) =
                (decision.op, decision.target.and_then(|i| shown.get(i)))
            {
                fact.merged = merge::merged(&old.text, &fact.text, &vector, options.embedder)?;
            }
            plan.apply(&fact, decision, &shown, vector, subject, options, time);
        }
        drop(snapshot);
        let mut batch = self.batch();
        let mut receipt_index: HashMap<usize, usize> = HashMap::new();
        for (i, planned) in plan.ops.iter_mut().enumerate() {
            if let Some(planned) = planned.take() {
                receipt_index.insert(i, receipt_index.len());
                batch.memory_with_vector(planned.op, planned.vector);
            }
        }
        if let Some(key) = &options.idempotency_key {
            batch.record_ops_as(key.clone());
        }
        let receipt = match &options.idempotency_key {
            Some(key) => match self.commit_recorded(batch, key)? {
                Some(receipt) => receipt,
                // Another call with this key committed first: answer what it did.
                None => return self.replay(key)?.ok_or_else(|| missing_replay(key)),
            },
            None => batch.commit()?,
        };
        for Row { mut row, op, owns } in plan.rows {
            if let Some(applied) = op
                .and_then(|i| receipt_index.get(&i))
                .and_then(|&r| receipt.memory_ops.get(r))
            {
                row.memory_id = Some(applied.id);
                // A change folded into this call's ADD reports the memory, not that op.
                if owns {
                    // An UPDATE to the text a memory already has is logged as a NONE.
                    row.event = op_of(applied.kind);
                    row.applied = Some(applied.clone());
                }
            }
            report.results.push(row);
        }
        Ok(report)
    }

    /// Adds `fields` as one new memory as they are, without extracting or deciding anything
    /// (Mem0's `add` with `infer=False`), recorded under `idempotency_key` when one is given: a
    /// repeated call with the key adds nothing and answers what the first call did. Its vector
    /// is made by the next `embed`.
    pub fn add_verbatim(
        &self,
        fields: ItemFields,
        note: OpNote,
        idempotency_key: Option<String>,
    ) -> Result<RememberReport> {
        if let Some(key) = &idempotency_key {
            check_key(key)?;
            if let Some(report) = self.replay(key)? {
                return Ok(report);
            }
        }
        let text = fields.body.clone().unwrap_or_default();
        let reason = note.reason.clone();
        let mut batch = self.batch();
        batch.memory(MemoryOp::Add {
            fields,
            valid: Validity::default(),
            note,
        });
        let receipt = match &idempotency_key {
            Some(key) => {
                batch.record_ops_as(key.clone());
                match self.commit_recorded(batch, key)? {
                    Some(receipt) => receipt,
                    None => return self.replay(key)?.ok_or_else(|| missing_replay(key)),
                }
            }
            None => batch.commit()?,
        };
        let applied = receipt.memory_ops.first().cloned();
        Ok(RememberReport {
            results: vec![Remembered {
                fact: text.clone(),
                said: text,
                decision: Decision::add(reason),
                event: Operation::Add,
                memory_id: applied.as_ref().map(|a| a.id),
                old_text: None,
                applied,
            }],
            ..RememberReport::default()
        })
    }

    /// Commits `batch`, which records its ops under `key`; `None` when an earlier commit
    /// recorded the key first (nothing of the batch was applied).
    fn commit_recorded(
        &self,
        batch: memdb_store::WriteBatch<'_>,
        key: &str,
    ) -> Result<Option<memdb_store::CommitReceipt>> {
        match batch.commit() {
            Ok(receipt) => Ok(Some(receipt)),
            Err(StoreError::KeyUsed { key: used }) if used == key => Ok(None),
            Err(e) => Err(crate::Error::from(e)),
        }
    }

    /// What the call recorded under `key` did, read back from the operation log; `None` when
    /// no call recorded it.
    fn replay(&self, key: &str) -> Result<Option<RememberReport>> {
        let snapshot = self.snapshot()?;
        let Some(recorded) = snapshot.ops_recorded_as(key)? else {
            return Ok(None);
        };
        let mut report = RememberReport {
            replayed: true,
            ..RememberReport::default()
        };
        let mut histories: HashMap<u64, memdb_store::MemoryHistory> = HashMap::new();
        for (seq, id) in recorded {
            let history = match histories.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(snapshot.history(id)?),
            };
            let Some(row) = history.ops.iter().find(|op| op.seq == seq) else {
                // Purged since: its ops are gone with it.
                continue;
            };
            let body = |v: &memdb_store::MemoryVersion| v.record.fields.body.clone();
            let (old, new) = history.versions_of(row);
            let (old, new) = (old.and_then(body), new.and_then(body));
            let event = op_of(row.kind);
            report.results.push(Remembered {
                fact: new.clone().or_else(|| old.clone()).unwrap_or_default(),
                said: String::new(),
                decision: Decision {
                    op: event,
                    target: None,
                    reason: row.reason.clone(),
                    closes: Vec::new(),
                },
                event,
                memory_id: Some(id),
                old_text: old,
                applied: Some(AppliedOp {
                    kind: row.kind,
                    id,
                    seq,
                    system_ms: row.system_ms,
                }),
            });
        }
        Ok(Some(report))
    }
}

fn missing_replay(key: &str) -> Error {
    crate::Error::from(StoreError::Inconsistent(format!(
        "the key {key:?} was recorded by another commit that cannot be read back"
    )))
}

/// The operation a logged op kind reports as.
fn op_of(kind: MemoryOpKind) -> Operation {
    match kind {
        MemoryOpKind::Add => Operation::Add,
        MemoryOpKind::Update => Operation::Update,
        MemoryOpKind::Delete | MemoryOpKind::Purge => Operation::Delete,
        _ => Operation::None,
    }
}

impl Plan {
    /// Applies `decision` on `fact` to the call's view and operations.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        fact: &Fact,
        decision: Decision,
        shown: &[(Memory, Live)],
        vector: Vec<f32>,
        subject: Subject,
        options: &RememberOptions<'_>,
        time: EventTime,
    ) {
        let note = |reason: &str| OpNote {
            reason: reason.to_owned(),
            actor: options.actor.clone().or_else(|| fact.speaker.clone()),
            role: options.role.clone(),
        };
        // An UPDATE that keeps clauses of the memory it changes stores them with the fact.
        let (text, vector, decision) = match (&fact.merged, decision.op) {
            (Some(merged), Operation::Update) => (
                merged.text.clone(),
                merged.vector.clone(),
                Decision {
                    reason: format!(
                        "{}; keeps of the old memory: {}",
                        decision.reason,
                        merged.kept.join(", ")
                    ),
                    ..decision
                },
            ),
            _ => (fact.text.clone(), vector, decision),
        };
        let fields = || memory_fields(&text, fact.speaker.as_deref(), &options.scope, time);
        let row = |decision: Decision, event: Operation, old_text: Option<String>| Remembered {
            fact: fact.text.clone(),
            said: fact.sentence.clone(),
            decision,
            event,
            memory_id: None,
            old_text,
            applied: None,
        };
        let target = decision.target.and_then(|i| shown.get(i));
        let closes: Vec<(usize, String)> = decision.closes.clone();
        let live = Live {
            text: text.clone(),
            vector: vector.clone(),
            subject,
        };
        match (decision.op, target) {
            (Operation::Update, Some((memory, old))) => match *memory {
                Memory::Stored(id) => {
                    let op = MemoryOp::Update {
                        id,
                        fields: fields(),
                        valid: Validity::default(),
                        note: note(&decision.reason),
                    };
                    let at = self.change(id, op, Some(vector));
                    self.stored.insert(id, Some(live));
                    let mut r = row(decision, Operation::Update, Some(old.text.clone()));
                    r.memory_id = Some(id);
                    self.record(r, Some(at), true);
                }
                Memory::New(add) => {
                    if let Some(Some(PlannedOp {
                        op: MemoryOp::Add { fields: f, .. },
                        vector: v,
                    })) = self.ops.get_mut(add)
                    {
                        f.body = Some(text.clone());
                        *v = Some(vector);
                    }
                    self.added.insert(add, Some(live));
                    let r = row(decision, Operation::Update, Some(old.text.clone()));
                    self.record(r, Some(add), false);
                }
            },
            (Operation::Delete, Some((memory, old))) => {
                let r = row(decision.clone(), Operation::Delete, Some(old.text.clone()));
                self.retire(*memory, &decision.reason, &note(&decision.reason), time, r);
            }
            (Operation::None, Some((memory, old))) => {
                let r = row(decision.clone(), Operation::None, Some(old.text.clone()));
                match *memory {
                    Memory::Stored(id) => {
                        let mut r = r;
                        r.memory_id = Some(id);
                        match self.changes.get(&id).copied() {
                            // Already changed by this call: the fact is known as it now reads.
                            Some(at) => self.record(r, Some(at), false),
                            None => {
                                let op = MemoryOp::None {
                                    id,
                                    note: note(&decision.reason),
                                };
                                let at = self.push(op, None);
                                self.record(r, Some(at), true);
                            }
                        }
                    }
                    Memory::New(add) => self.record(r, Some(add), false),
                }
            }
            _ => {
                let at = self.push(
                    MemoryOp::Add {
                        fields: fields(),
                        valid: Validity::default(),
                        note: note(&decision.reason),
                    },
                    Some(vector),
                );
                self.added.insert(at, Some(live));
                self.record(row(decision, Operation::Add, None), Some(at), true);
            }
        }
        for (at, why) in closes {
            let Some((memory, old)) = shown.get(at) else {
                continue;
            };
            // A memory retired by this fact already (its target) is not closed twice.
            if self.is_retired(*memory) {
                continue;
            }
            let decision = Decision::on(Operation::Delete, at, why.clone());
            let r = row(decision, Operation::Delete, Some(old.text.clone()));
            self.retire(*memory, &why, &note(&why), time, r);
        }
    }

    fn record(&mut self, row: Remembered, op: Option<usize>, owns: bool) {
        self.rows.push(Row { row, op, owns });
    }

    /// Plans `op` (an UPDATE or DELETE) on stored memory `id`: in place of this call's earlier
    /// change of it, whose rows then report the memory, not an operation of their own.
    fn change(&mut self, id: u64, op: MemoryOp, vector: Option<Vec<f32>>) -> usize {
        match self.changes.get(&id).copied() {
            Some(at) => {
                self.ops[at] = Some(PlannedOp { op, vector });
                for r in self.rows.iter_mut().filter(|r| r.op == Some(at)) {
                    r.owns = false;
                }
                at
            }
            None => {
                let at = self.push(op, vector);
                self.changes.insert(id, at);
                at
            }
        }
    }

    fn push(&mut self, op: MemoryOp, vector: Option<Vec<f32>>) -> usize {
        self.ops.push(Some(PlannedOp { op, vector }));
        self.ops.len() - 1
    }

    fn is_retired(&self, memory: Memory) -> bool {
        match memory {
            Memory::Stored(id) => matches!(self.stored.get(&id), Some(None)),
            Memory::New(add) => matches!(self.added.get(&add), Some(None)),
        }
    }

    /// Retires `memory`: a DELETE of a stored one, or the ADD of one this call added taken
    /// back (neither is stored).
    fn retire(
        &mut self,
        memory: Memory,
        reason: &str,
        note: &OpNote,
        time: EventTime,
        mut row: Remembered,
    ) {
        match memory {
            Memory::Stored(id) => {
                let op = MemoryOp::Delete {
                    id,
                    valid_to_ms: (!time.is_undated()).then_some(time.unix_ms),
                    note: note.clone(),
                };
                let at = self.change(id, op, None);
                self.stored.insert(id, None);
                row.memory_id = Some(id);
                self.record(row, Some(at), true);
            }
            Memory::New(add) => {
                if let Some(op) = self.ops.get_mut(add) {
                    *op = None;
                }
                self.added.insert(add, None);
                // The rows of that memory report it as not stored.
                for r in &mut self.rows {
                    if r.op == Some(add) {
                        r.op = None;
                        r.row.decision.reason = format!(
                            "{} (then retracted by a later fact of this input: not stored)",
                            r.row.decision.reason
                        );
                    }
                }
                row.decision.reason =
                    format!("{reason} (a memory added earlier in this input: neither is stored)");
                self.record(row, None, false);
            }
        }
    }
}

/// Reads stored memories for a call: texts and subjects of the records seen, read once.
struct MemoryReader<'s> {
    snapshot: &'s Snapshot,
    space: Option<&'s StoredVectors>,
    /// Item id → (text, subject) when it is a memory.
    texts: HashMap<u64, Option<(String, Subject)>>,
}

impl MemoryReader<'_> {
    fn memory(&mut self, id: u64) -> Result<Option<(String, Subject)>> {
        if let Some(known) = self.texts.get(&id) {
            return Ok(known.clone());
        }
        let found = self
            .snapshot
            .get(id)?
            .filter(|r| r.fields.tags.iter().any(|t| t == MEMORY_TAG))
            .map(|r| {
                let subject = Subject::of(&r.fields);
                (r.fields.body.unwrap_or_default(), subject)
            });
        self.texts.insert(id, found.clone());
        Ok(found)
    }
}

/// The candidates of a fact with `vector` and `subject`: the memories of that subject as this
/// call sees them, most similar first, at most `k`.
fn candidates(
    reader: &mut MemoryReader<'_>,
    plan: &Plan,
    vector: &[f32],
    subject: &Subject,
    k: usize,
) -> Result<Vec<(Memory, Live)>> {
    let mut found: Vec<(Memory, Live, f32)> = Vec::new();
    // Stored memories this call has not changed, by their stored vectors.
    if let Some(space) = reader.space {
        let scope = VectorScope::all().with_source(Source::Note.code());
        let mut want = k.max(1).saturating_mul(4) + plan.stored.len();
        loop {
            let hits = space.search(vector, want, &scope)?;
            found.clear();
            for hit in &hits {
                if plan.stored.contains_key(&hit.key) {
                    continue;
                }
                if let Some((text, their)) = reader.memory(hit.key)?
                    && their == *subject
                {
                    found.push((
                        Memory::Stored(hit.key),
                        Live {
                            text,
                            vector: Vec::new(),
                            subject: their,
                        },
                        hit.score,
                    ));
                    if found.len() == k {
                        break;
                    }
                }
            }
            if found.len() == k || hits.len() < want {
                break;
            }
            want = want.saturating_mul(4);
        }
    }
    // Memories this call changed or added, as they read now.
    let changed = plan
        .stored
        .iter()
        .filter_map(|(id, live)| Some((Memory::Stored(*id), live.as_ref()?)))
        .chain(
            plan.added
                .iter()
                .filter_map(|(at, live)| Some((Memory::New(*at), live.as_ref()?))),
        );
    for (memory, live) in changed {
        if live.subject == *subject {
            let cosine = memdb_vectors::dot_f32(vector, &live.vector);
            found.push((memory, live.clone(), cosine));
        }
    }
    found.sort_by(|a, b| b.2.total_cmp(&a.2));
    found.truncate(k);
    Ok(found.into_iter().map(|(m, live, _)| (m, live)).collect())
}

/// A memory's fields: a note of `text`, said by `speaker` at `time`, in `scope`.
fn memory_fields(text: &str, speaker: Option<&str>, scope: &Scope, time: EventTime) -> ItemFields {
    let mut fields = ItemFields::new(Source::Note, time);
    fields.body = Some(text.to_owned());
    fields.speaker = speaker.map(str::to_owned);
    fields.tags = vec![MEMORY_TAG.to_owned()];
    fields.scope = scope.clone();
    fields
}
