//! The gate as a stage of ingest (issue 21 item 4): before an item commits, the GUM reads its
//! recall text with its source as the intent. `Tag` stores everything and records the decision
//! on the item (tag `gate:memorable` with a `gate:scene:<name>` tag per scene hit, or
//! `gate:not-memorable`); `Drop` stores nothing of a text no scene matches and reports it.
//! Off (no stage) is the default until the gate is measured to keep what matters.

use std::sync::Arc;

use memdb_formats::item::{ItemFields, ItemRecord};

use super::gum::{Gum, GumHits};

/// Tag of an item the gate found memorable.
pub const TAG_MEMORABLE: &str = "gate:memorable";
/// Tag of an item the gate found not memorable (kept, in `Tag` mode).
pub const TAG_NOT_MEMORABLE: &str = "gate:not-memorable";
/// Prefix of the tags naming the scenes an item hit.
pub const TAG_SCENE_PREFIX: &str = "gate:scene:";

/// The recall text of an item not stored yet (what the gate reads).
fn text_of(fields: &ItemFields) -> String {
    crate::recall::item_text(&ItemRecord {
        id: 0,
        ingest_time_ms: 0,
        fields: fields.clone(),
        supersedes: None,
        blobs: Vec::new(),
    })
}

/// What the stage does with its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateMode {
    /// Store everything; record the decision and its scenes as tags.
    Tag,
    /// Store only what some scene matches; report the rest.
    Drop,
}

/// The ingest's gate stage.
#[derive(Debug, Clone)]
pub struct GateStage {
    /// The matcher (its scene catalogue).
    pub gum: Arc<Gum>,
    /// What to do.
    pub mode: GateMode,
}

impl GateStage {
    /// The GUM's hits on `fields`' recall text, with their source as the intent.
    pub fn hits(&self, fields: &ItemFields) -> GumHits {
        self.gum.hits(&text_of(fields), Some(fields.source))
    }

    /// Decides on `fields`: `false` when the item is to be dropped. In `Tag` mode records
    /// the decision on the item (replacing an earlier decision's tags).
    pub fn apply(&self, fields: &mut ItemFields) -> bool {
        if self.mode == GateMode::Drop {
            return self.gum.passes(&text_of(fields), Some(fields.source));
        }
        let hits = self.hits(fields);
        fields.tags.retain(|t| !t.starts_with("gate:"));
        if hits.is_memorable() {
            fields.tags.push(TAG_MEMORABLE.to_owned());
            fields.tags.extend(
                hits.scenes
                    .iter()
                    .map(|s| format!("{TAG_SCENE_PREFIX}{}", s.name)),
            );
        } else {
            fields.tags.push(TAG_NOT_MEMORABLE.to_owned());
        }
        true
    }
}
