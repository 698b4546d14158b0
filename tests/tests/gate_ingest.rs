//! The memorability gate as a stage of ingest: in `Drop` mode a text no scene matches never
//! reaches the segments, the item vectors or the memory graph, and the report names it; in
//! `Tag` mode everything is stored with the decision and its scenes as tags.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use memdb::gate::{GateMode, GateStage, Gum, Scenes, TAG_MEMORABLE, TAG_NOT_MEMORABLE};
use memdb::{
    EventTime, ITEM_VECTORS, IngestItem, IngestOptions, ItemDraft, ItemFields, Options, PageStage,
    Source, Store,
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

fn ingest(mode: GateMode) -> (tempfile::TempDir, Store, memdb::IngestReport) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let gate = GateStage {
        gum: Arc::new(Gum::new(Scenes::builtin().unwrap()).unwrap()),
        mode,
    };
    let mut ingest = store
        .ingest(IngestOptions {
            gate: Some(gate),
            pages: PageStage::Skip,
            ..IngestOptions::default()
        })
        .unwrap();
    ingest.add(turn("t1", 1, MEMORABLE)).unwrap();
    ingest.add(turn("t2", 2, CHATTER)).unwrap();
    let report = ingest
        .finish(Some(&memdb_it::HashEmbedder), &mut |_, _, _| {})
        .unwrap();
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
    assert_eq!(chatter.fields.tags, [TAG_NOT_MEMORABLE]);
}
