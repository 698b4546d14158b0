//! Memory operations against an in-memory model: random sequences of ADD, UPDATE, DELETE,
//! NONE, RESTORE (an undelete) and purge with random valid times, committed one call at a time; after every call the
//! store's `AS OF`, `VALID AT` and both-times answers at every probed time, and every memory's
//! history, equal the model's.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;

use memdb::{
    EventTime, ItemFields, Options, Source, Store, memory::MemoryOp, memory::MemoryOpKind,
    memory::OpNote, memory::TimeTravel, memory::Validity,
};
use proptest::prelude::*;

/// Event and valid times are drawn from a small range of days, so they collide and order in
/// every way.
const DAY: i64 = 86_400_000;
const EPOCH: i64 = 1_700_000_000_000;

#[derive(Debug, Clone)]
enum Step {
    Add {
        text: u8,
        day: Option<i64>,
        from: Option<i64>,
        to: Option<i64>,
    },
    Update {
        pick: usize,
        text: u8,
        day: Option<i64>,
        from: Option<i64>,
    },
    Delete {
        pick: usize,
        to: Option<i64>,
    },
    None {
        pick: usize,
    },
    Purge {
        pick: usize,
    },
    Restore {
        pick: usize,
    },
}

fn day_ms(day: i64) -> i64 {
    EPOCH + day * DAY
}

fn step() -> impl Strategy<Value = Step> {
    let day = proptest::option::of(0i64..20);
    prop_oneof![
        3 => (0u8..6, day.clone(), proptest::option::of(0i64..20), proptest::option::of(0i64..20))
            .prop_map(|(text, day, from, to)| Step::Add { text, day, from, to }),
        3 => (any::<usize>(), 0u8..6, day.clone(), proptest::option::of(0i64..20))
            .prop_map(|(pick, text, day, from)| Step::Update { pick, text, day, from }),
        2 => (any::<usize>(), proptest::option::of(0i64..20))
            .prop_map(|(pick, to)| Step::Delete { pick, to }),
        1 => any::<usize>().prop_map(|pick| Step::None { pick }),
        1 => any::<usize>().prop_map(|pick| Step::Purge { pick }),
        1 => any::<usize>().prop_map(|pick| Step::Restore { pick }),
    ]
}

fn fields(text: u8, day: Option<i64>) -> ItemFields {
    let time = match day {
        Some(d) => EventTime {
            unix_ms: day_ms(d),
            offset_minutes: 0,
        },
        None => EventTime::UNDATED,
    };
    let mut f = ItemFields::new(Source::Note, time);
    f.body = Some(format!("fact number {text}"));
    f
}

/// One version as the model holds it.
#[derive(Debug, Clone, PartialEq)]
struct Version {
    body: String,
    event_ms: i64,
    system_from: i64,
    system_to: Option<i64>,
    valid_from: Option<i64>,
    valid_to: Option<i64>,
    valid_to_written: Option<i64>,
}

#[derive(Default)]
struct Model {
    memories: BTreeMap<u64, Vec<Version>>,
}

fn unbounded(ms: i64) -> Option<i64> {
    (ms != i64::MIN && ms != i64::MAX).then_some(ms)
}

impl Model {
    fn current_ids(&self) -> Vec<u64> {
        self.memories
            .iter()
            .filter(|(_, v)| v.last().is_some_and(|v| v.system_to.is_none()))
            .map(|(id, _)| *id)
            .collect()
    }

    fn current(&mut self, id: u64) -> &mut Version {
        self.memories.get_mut(&id).unwrap().last_mut().unwrap()
    }

    /// Closes the current version at system time `now`, its validity at `end`.
    fn close(&mut self, id: u64, now: i64, end: i64) {
        let v = self.current(id);
        v.system_to = Some(now);
        v.valid_to = Some(v.valid_to.map_or(end, |to| to.min(end)));
    }

    fn sees(at: &TimeTravel, v: &Version) -> bool {
        let Some(t) = at.valid_at_ms else {
            return match at.as_of_ms {
                None => v.system_to.is_none(),
                Some(s) => v.system_from <= s && v.system_to.is_none_or(|to| s < to),
            };
        };
        let known_to = match at.as_of_ms {
            None => v.valid_to,
            Some(s) if v.system_from > s => return false,
            Some(s) if v.system_to.is_some_and(|to| to <= s) => v.valid_to,
            Some(_) => v.valid_to_written,
        };
        v.valid_from.is_none_or(|from| from <= t) && known_to.is_none_or(|to| t < to)
    }

    fn at(&self, at: &TimeTravel) -> Vec<(u64, String, i64)> {
        let mut out = Vec::new();
        for (id, versions) in &self.memories {
            for v in versions {
                if Self::sees(at, v) {
                    out.push((*id, v.body.clone(), v.system_from));
                }
            }
        }
        out.sort();
        out
    }
}

fn new_version(f: &ItemFields, from: Option<i64>, to: Option<i64>, now: i64) -> Version {
    let start = from.unwrap_or(if f.time.is_undated() {
        now
    } else {
        f.time.unix_ms
    });
    Version {
        body: f.body.clone().unwrap(),
        event_ms: f.time.unix_ms,
        system_from: now,
        system_to: None,
        valid_from: unbounded(start),
        valid_to: to,
        valid_to_written: to,
    }
}

fn pick(ids: &[u64], n: usize) -> Option<u64> {
    (!ids.is_empty()).then(|| ids[n % ids.len()])
}

fn run(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut model = Model::default();
    let mut ever: Vec<u64> = Vec::new();
    let mut probes_s = vec![0i64, i64::MAX - 1];
    let note = |r: &str| OpNote {
        reason: r.to_owned(),
        actor: Some("test".into()),
        role: None,
    };
    for step in steps {
        let current = model.current_ids();
        match step {
            Step::Add {
                text,
                day,
                from,
                to,
            } => {
                let f = fields(text, day);
                let valid = Validity {
                    from_ms: from.map(day_ms),
                    to_ms: to.map(day_ms),
                };
                let applied = store
                    .apply(vec![MemoryOp::Add {
                        fields: f.clone(),
                        valid,
                        note: note("add"),
                    }])
                    .unwrap();
                let a = &applied[0];
                prop_assert_eq!(a.kind, MemoryOpKind::Add);
                model.memories.insert(
                    a.id,
                    vec![new_version(&f, valid.from_ms, valid.to_ms, a.system_ms)],
                );
                ever.push(a.id);
                probes_s.extend([a.system_ms - 1, a.system_ms, a.system_ms + 1]);
            }
            Step::Update {
                pick: n,
                text,
                day,
                from,
            } => {
                let Some(id) = pick(&current, n) else {
                    continue;
                };
                let f = fields(text, day);
                let valid = Validity {
                    from_ms: from.map(day_ms),
                    to_ms: None,
                };
                let applied = store
                    .apply(vec![MemoryOp::Update {
                        id,
                        fields: f.clone(),
                        valid,
                        note: note("update"),
                    }])
                    .unwrap();
                let a = &applied[0];
                let cur = model.current(id).clone();
                if cur.body == *f.body.as_ref().unwrap() && cur.event_ms == f.time.unix_ms {
                    prop_assert_eq!(a.kind, MemoryOpKind::None);
                } else {
                    prop_assert_eq!(a.kind, MemoryOpKind::Update);
                    let mut v = new_version(&f, valid.from_ms, None, a.system_ms);
                    // A correction that keeps the memory's (dated) time holds from its commit,
                    // at least 1 ms after that time (SPEC.md §5, valid time).
                    if valid.from_ms.is_none()
                        && !f.time.is_undated()
                        && cur.event_ms == f.time.unix_ms
                    {
                        v.valid_from = unbounded(a.system_ms.max(f.time.unix_ms + 1));
                    }
                    model.close(id, a.system_ms, v.valid_from.unwrap_or(i64::MIN));
                    model.memories.get_mut(&id).unwrap().push(v);
                }
                probes_s.extend([a.system_ms - 1, a.system_ms, a.system_ms + 1]);
            }
            Step::Delete { pick: n, to } => {
                let Some(id) = pick(&current, n) else {
                    continue;
                };
                let applied = store
                    .apply(vec![MemoryOp::Delete {
                        id,
                        valid_to_ms: to.map(day_ms),
                        note: note("delete"),
                    }])
                    .unwrap();
                let a = &applied[0];
                prop_assert_eq!(a.kind, MemoryOpKind::Delete);
                model.close(id, a.system_ms, to.map_or(a.system_ms, day_ms));
                probes_s.extend([a.system_ms - 1, a.system_ms, a.system_ms + 1]);
            }
            Step::None { pick: n } => {
                let Some(id) = pick(&current, n) else {
                    // A NONE naming no current memory is refused, and nothing is applied.
                    let err = store
                        .apply(vec![MemoryOp::None {
                            id: 999,
                            note: note("none"),
                        }])
                        .unwrap_err();
                    let refused = matches!(err, memdb::StoreError::NoMemory { id: 999, .. });
                    prop_assert!(refused, "{}", err);
                    continue;
                };
                let applied = store
                    .apply(vec![MemoryOp::None {
                        id,
                        note: note("none"),
                    }])
                    .unwrap();
                prop_assert_eq!(applied[0].kind, MemoryOpKind::None);
            }
            Step::Purge { pick: n } => {
                let Some(id) = pick(&ever, n) else { continue };
                let purged = store.purge(id).unwrap();
                prop_assert_eq!(purged, model.memories.remove(&id).is_some());
            }
            Step::Restore { pick: n } => {
                let Some(id) = pick(&ever, n) else { continue };
                let restored = store.restore(id, note("restore"));
                let last = model.memories.get(&id).and_then(|v| v.last()).cloned();
                match last {
                    // A retired memory comes back as its last version read, with the valid
                    // time that version was written with, from now on in system time.
                    Some(last) if last.system_to.is_some() => {
                        let a = restored.unwrap();
                        prop_assert_eq!((a.kind, a.id), (MemoryOpKind::Add, id));
                        let v = Version {
                            system_from: a.system_ms,
                            system_to: None,
                            valid_to: last.valid_to_written,
                            ..last
                        };
                        model.memories.get_mut(&id).unwrap().push(v);
                        probes_s.extend([a.system_ms - 1, a.system_ms, a.system_ms + 1]);
                    }
                    // A current memory is refused; a purged one has nothing to restore.
                    Some(_) => {
                        let refused =
                            matches!(restored, Err(memdb::StoreError::InvalidItem { .. }));
                        prop_assert!(refused, "{:?}", restored);
                    }
                    None => {
                        let refused = matches!(restored, Err(memdb::StoreError::NoMemory { .. }));
                        prop_assert!(refused, "{:?}", restored);
                    }
                }
            }
        }
        check(&store, &model, &probes_s)?;
    }
    Ok(())
}

fn check(store: &Store, model: &Model, probes_s: &[i64]) -> Result<(), TestCaseError> {
    let snap = store.snapshot().unwrap();
    let mut probes_t: Vec<Option<i64>> = vec![None, Some(i64::MIN + 1)];
    probes_t.extend((-1..22).map(|d| Some(day_ms(d))));
    probes_t.extend((-1..22).map(|d| Some(day_ms(d) - 1)));
    let mut probes_s: Vec<Option<i64>> = probes_s.iter().copied().map(Some).collect();
    probes_s.push(None);
    for &s in &probes_s {
        for &t in &probes_t {
            let at = TimeTravel {
                as_of_ms: s,
                valid_at_ms: t,
            };
            let mut got: Vec<(u64, String, i64)> = snap
                .versions_at(at)
                .unwrap()
                .into_iter()
                .map(|v| {
                    (
                        v.record.id,
                        v.record.fields.body.clone().unwrap(),
                        v.system_from_ms(),
                    )
                })
                .collect();
            got.sort();
            prop_assert_eq!(got, model.at(&at), "at {:?}", at);
        }
    }
    for (id, versions) in &model.memories {
        let history = snap.history(*id).unwrap();
        let got: Vec<Version> = history
            .versions
            .iter()
            .map(|v| Version {
                body: v.record.fields.body.clone().unwrap(),
                event_ms: v.record.fields.time.unix_ms,
                system_from: v.system_from_ms(),
                system_to: v.system_to_ms,
                valid_from: v.valid_from_ms,
                valid_to: v.valid_to_ms,
                valid_to_written: v.valid_to_written_ms,
            })
            .collect();
        prop_assert_eq!(&got, versions, "history of {}", id);
        prop_assert!(history.ops.iter().all(|op| !op.reason.is_empty()));
        prop_assert_eq!(
            history.ops.first().map(|op| op.kind),
            Some(MemoryOpKind::Add)
        );
    }
    // The current view (the indexes) agrees with the model's current memories.
    let current: Vec<u64> = snap.item_ids().unwrap();
    prop_assert_eq!(current, model.current_ids());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn time_travel_and_history_equal_the_model(steps in proptest::collection::vec(step(), 1..14)) {
        run(steps)?;
    }
}

#[test]
fn a_purged_memory_leaves_no_row_of_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let applied = store
        .apply(vec![MemoryOp::Add {
            fields: fields(1, Some(1)),
            valid: Validity::default(),
            note: OpNote {
                reason: "first".into(),
                ..OpNote::default()
            },
        }])
        .unwrap();
    let id = applied[0].id;
    store
        .apply(vec![MemoryOp::Update {
            id,
            fields: fields(2, Some(2)),
            valid: Validity::default(),
            note: OpNote::default(),
        }])
        .unwrap();
    store
        .apply(vec![MemoryOp::Delete {
            id,
            valid_to_ms: None,
            note: OpNote::default(),
        }])
        .unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(
        snap.history(id).unwrap().versions.len(),
        2,
        "a delete keeps both versions"
    );
    assert!(snap.get(id).unwrap().is_none());
    drop(snap);
    assert!(store.purge(id).unwrap());
    let snap = store.snapshot().unwrap();
    let history = snap.history(id).unwrap();
    assert!(history.versions.is_empty() && history.ops.is_empty());
    let log = snap.op_log(None).unwrap();
    assert_eq!(
        log.iter().map(|r| r.kind).collect::<Vec<_>>(),
        [
            MemoryOpKind::Add,
            MemoryOpKind::Update,
            MemoryOpKind::Delete,
            MemoryOpKind::Purge
        ]
    );
    assert!(
        log.iter().all(|r| r.reason.is_empty()),
        "no reason survives a purge"
    );
    assert!(!store.purge(id).unwrap(), "nothing is left to purge");
}
