//! The memorability gate as a stage of ingest: in `Drop` mode a text no scene matches never
//! reaches the segments, the item vectors or the memory graph, and the report names it; in
//! `Tag` mode everything is stored with the decision and its scenes as tags.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use memdb::gate::{
    ClusterPrompt, ClusterPrompts, GateMode, GateModelError, GateStage, Gum, Judge, JudgeStage,
    Scenes, TAG_MEMORABLE, TAG_NOT_MEMORABLE, Verdict,
};
use memdb::{
    EventTime, IngestItem, IngestOptions, ItemDraft, ItemFields, Options, Source, Store,
    ingest::PageStage, vectors::ITEM_VECTORS,
};

const CHATTER: &str = "haha ok zzqx thanks";
const MEMORABLE: &str = "My sister adopted a puppy named Biscuit.";

fn turn(ext: &str, minute: i64, text: &str) -> IngestItem {
    let mut fields = ItemFields::new(
        Source::Chat,
        EventTime::utc(1_700_000_000_000 + minute * 60_000),
    );
    fields.external_id = Some(ext.into());
    fields.speaker = Some("Ana".into());
    fields.body = Some(text.into());
    IngestItem {
        origin: format!("chat:{minute}"),
        ..IngestItem::new(ItemDraft {
            fields,
            supersedes: None,
        })
    }
}

fn builtin(mode: GateMode) -> GateStage {
    GateStage::new(
        Arc::new(Gum::new(Scenes::builtin().unwrap()).unwrap()),
        mode,
        "builtin",
    )
}

/// Ingests `turns` into `store` through `gate`.
fn run(store: &Store, gate: GateStage, turns: Vec<IngestItem>) -> memdb::IngestReport {
    let mut ingest = store
        .ingest(IngestOptions {
            gate: Some(gate),
            pages: PageStage::Skip,
            ..IngestOptions::default()
        })
        .unwrap();
    for t in turns {
        ingest.add(t).unwrap();
    }
    ingest
        .finish(Some(&memdb_it::HashEmbedder), &mut |_, _, _| {})
        .unwrap()
}

fn ingest(mode: GateMode) -> (tempfile::TempDir, Store, memdb::IngestReport) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let report = run(
        &store,
        builtin(mode),
        vec![turn("t1", 1, MEMORABLE), turn("t2", 2, CHATTER)],
    );
    (dir, store, report)
}

#[test]
fn drop_mode_stores_nothing_of_a_text_no_scene_matches() {
    let (dir, store, report) = ingest(GateMode::Drop);
    assert_eq!(report.added, 1, "{report:?}");
    assert_eq!(report.gate_dropped.len(), 1);
    assert_eq!(report.gate_dropped[0].external_id.as_deref(), Some("t2"));
    assert!(report.gate_dropped[0].reason.contains("not memorable"));
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.item_count().unwrap(), 1);
    assert!(snap.get_by_external_id("t2").unwrap().is_none());
    let kept = snap.get_by_external_id("t1").unwrap().unwrap();
    // Vectors and graph: the kept item only.
    let keys: Vec<u64> = snap.vector_keys(ITEM_VECTORS).unwrap().iter().collect();
    assert_eq!(keys, [kept.id]);
    assert!(snap.graph().item(kept.id).unwrap().is_some());
    assert!(snap.graph().find("zzqx").unwrap().is_none());
    drop(snap);
    drop(store);
    // Not a byte of the dropped text in any file of the store.
    for path in memdb_it::files_under(dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(4).any(|w| w == b"zzqx"),
            "{} holds the dropped text",
            path.display()
        );
    }
}

#[test]
fn tag_mode_stores_everything_with_the_decision() {
    let (_dir, store, report) = ingest(GateMode::Tag);
    assert_eq!((report.added, report.gate_tagged), (2, 2));
    assert!(report.gate_dropped.is_empty());
    let snap = store.snapshot().unwrap();
    let kept = snap.get_by_external_id("t1").unwrap().unwrap();
    assert!(kept.fields.tags.contains(&TAG_MEMORABLE.to_owned()));
    assert!(
        kept.fields.tags.contains(&"gate:scene:family".to_owned()),
        "{:?}",
        kept.fields.tags
    );
    let chatter = snap.get_by_external_id("t2").unwrap().unwrap();
    assert_eq!(
        chatter.fields.tags,
        [TAG_NOT_MEMORABLE, "gate:lexicon:builtin"]
    );
}

#[test]
fn tag_mode_keeps_a_persons_own_tags() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut own = turn("t1", 1, CHATTER);
    own.draft.fields.tags = vec!["gate:mine".into(), "gate:memorable".into()];
    run(&store, builtin(GateMode::Tag), vec![own]);
    let snap = store.snapshot().unwrap();
    let item = snap.get_by_external_id("t1").unwrap().unwrap();
    // The gate's own tags are replaced by its decision; the person's stay.
    assert_eq!(
        item.fields.tags,
        ["gate:mine", TAG_NOT_MEMORABLE, "gate:lexicon:builtin"]
    );
}

#[test]
fn drop_mode_stores_a_correction_of_a_kept_item() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let first = run(
        &store,
        builtin(GateMode::Drop),
        vec![turn("t1", 1, MEMORABLE)],
    );
    assert_eq!(first.added, 1);
    // The corrected text matches no scene; it still replaces the stored one, and so does a
    // correction of an item put earlier in the same batch.
    let report = run(
        &store,
        builtin(GateMode::Drop),
        vec![
            turn("t1", 1, "ok zzqx"),
            turn("t3", 3, MEMORABLE),
            turn("t3", 3, "fine, thanks"),
            turn("t4", 4, CHATTER),
        ],
    );
    assert_eq!(report.gate_corrections, 2, "{report:?}");
    assert_eq!(report.gate_dropped.len(), 1);
    assert_eq!(report.gate_dropped[0].external_id.as_deref(), Some("t4"));
    let snap = store.snapshot().unwrap();
    let t1 = snap.get_by_external_id("t1").unwrap().unwrap();
    assert_eq!(t1.fields.body.as_deref(), Some("ok zzqx"));
    let t3 = snap.get_by_external_id("t3").unwrap().unwrap();
    assert_eq!(t3.fields.body.as_deref(), Some("fine, thanks"));
}

#[test]
fn drop_mode_keeps_photos_whatever_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut photo = turn("p1", 1, CHATTER);
    photo.draft.fields.source = Source::Image;
    photo.draft.fields.speaker = None;
    let report = run(
        &store,
        builtin(GateMode::Drop),
        vec![photo, turn("t2", 2, CHATTER)],
    );
    assert_eq!(report.added, 1, "{report:?}");
    assert_eq!(report.gate_dropped.len(), 1);
    assert_eq!(report.gate_dropped[0].external_id.as_deref(), Some("t2"));
    let snap = store.snapshot().unwrap();
    assert!(snap.get_by_external_id("p1").unwrap().is_some());
}

/// A judge with one answer, or none (a failing server).
#[derive(Debug)]
struct FixedJudge(Option<bool>);

impl Judge for FixedJudge {
    fn judge(&self, _text: &str, prompt: &ClusterPrompt) -> Result<Verdict, GateModelError> {
        assert!(
            !prompt.positive.is_empty(),
            "the judge gets the scenes' rules"
        );
        match self.0 {
            Some(memorable) => Ok(Verdict {
                memorable,
                reason: "fixed".into(),
            }),
            None => Err(GateModelError::Malformed {
                expected: "a verdict",
                why: "no verdict".into(),
                snippet: String::new(),
            }),
        }
    }
}

fn judged(judge: Option<bool>) -> GateStage {
    GateStage {
        judge: Some(JudgeStage {
            judge: Arc::new(FixedJudge(judge)),
            prompts: Arc::new(ClusterPrompts::default()),
        }),
        ..builtin(GateMode::Drop)
    }
}

#[test]
fn the_judge_decides_what_the_gum_passes_and_a_failing_judge_drops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    // The judge rejects: the GUM's pass is overruled, with the judge's reason.
    let report = run(&store, judged(Some(false)), vec![turn("t1", 1, MEMORABLE)]);
    assert_eq!(report.gate_dropped.len(), 1);
    assert!(
        report.gate_dropped[0]
            .reason
            .contains("not memorable by the judge (fixed)"),
        "{:?}",
        report.gate_dropped[0]
    );
    // What the GUM drops never reaches the judge (this one would keep it).
    let report = run(&store, judged(Some(true)), vec![turn("t2", 2, CHATTER)]);
    assert_eq!(report.gate_dropped.len(), 1);
    // A failing judge keeps the text and says so.
    let report = run(&store, judged(None), vec![turn("t3", 3, MEMORABLE)]);
    assert_eq!(report.added, 1);
    assert!(report.gate_dropped.is_empty());
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("kept without the gate's judge")),
        "{:?}",
        report.warnings
    );
}
