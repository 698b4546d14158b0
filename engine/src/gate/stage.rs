//! The gate as a stage of ingest (issue 21 item 4): before an item commits, the GUM reads its
//! recall text with its source as the intent — then, when configured, the rule predicates
//! (the scenes' `unless` expressions) and the judge (a local model given the intent cluster's
//! rules). `Tag` stores everything and records the decision on the item (tag `gate:memorable`
//! with a `gate:scene:<name>` tag per scene hit, or `gate:not-memorable`, and
//! `gate:lexicon:<name>`); `Drop` stores nothing of a text found not memorable and reports it
//! with why. Off (no stage) is the default until the gate is measured to keep what matters.
//!
//! Invariants: `Drop` never drops a photo or a video (their words do not say whether a picture
//! matters, and the original would be lost); a correction of an item already stored (same external id) is never dropped —
//! it changes a memory the store kept, and dropping it would leave the old text current (the
//! ingest checks this, [`GateDecision::keep`] does not know the store); a judge that fails
//! never drops a text.

use std::sync::Arc;

use memdb_formats::item::{ItemFields, Source};

use memdb_gate::RulePredicates;
use memdb_gate::{ClusterPrompts, Judge};
use memdb_gate::{Gum, GumHits};

/// Tag of an item the gate found memorable.
pub const TAG_MEMORABLE: &str = "gate:memorable";
/// Tag of an item the gate found not memorable (kept, in `Tag` mode).
pub const TAG_NOT_MEMORABLE: &str = "gate:not-memorable";
/// Prefix of the tags naming the scenes an item hit.
pub const TAG_SCENE_PREFIX: &str = "gate:scene:";
/// Prefix of the tag naming the lexicon that decided.
pub const TAG_LEXICON_PREFIX: &str = "gate:lexicon:";
/// The prefix of every tag the gate writes (a decision replaces them all).
const GATE_TAGS: [&str; 4] = [
    TAG_MEMORABLE,
    TAG_NOT_MEMORABLE,
    TAG_SCENE_PREFIX,
    TAG_LEXICON_PREFIX,
];

/// What the gate reads of an item: the person's own words only — its subject line or summary,
/// body, caption, short caption, text read from the image, the entities and tags its source
/// gave — never what memdb writes around them for recall (the date and time of day, the season,
/// the place line, the speaker's label, SGM field names): "hi" said in March is not about a
/// protest march, and a note's date decides nothing about whether it is worth keeping.
pub fn text_of(fields: &ItemFields) -> String {
    let mut parts: Vec<&str> = [
        &fields.summary,
        &fields.body,
        &fields.caption,
        &fields.short_caption,
        &fields.ocr,
    ]
    .into_iter()
    .flatten()
    .map(String::as_str)
    .collect();
    parts.extend(fields.entities.iter().map(String::as_str));
    parts.extend(
        fields
            .tags
            .iter()
            .filter(|t| !t.starts_with("gate:") && t.as_str() != crate::ops::MEMORY_TAG)
            .map(String::as_str),
    );
    parts.join("\n")
}

/// The first `max` characters of what the gate reads of `fields` (its words, one line), with
/// `…` when cut: what a report shows of a dropped item.
pub(crate) fn excerpt(fields: &ItemFields, max: usize) -> String {
    let text = text_of(fields)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}

/// What the stage does with its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateMode {
    /// Store everything; record the decision and its scenes as tags.
    Tag,
    /// Store only what the gate finds memorable; report the rest.
    Drop,
}

/// The judge a stage asks, with the prompts of the store's intent clusters.
#[derive(Debug, Clone)]
pub struct JudgeStage {
    /// The judge.
    pub judge: Arc<dyn Judge>,
    /// The CPM's clusters (empty: each text is judged by the rules of the scenes it hit).
    pub prompts: Arc<ClusterPrompts>,
}

/// The ingest's gate stage.
#[derive(Debug, Clone)]
pub struct GateStage {
    /// The matcher (its scene catalogue).
    pub gum: Arc<Gum>,
    /// What to do.
    pub mode: GateMode,
    /// "GUM + rule predicates": the scenes' `unless` expressions do not count as hits.
    pub predicates: Option<Arc<RulePredicates>>,
    /// The judge of what the GUM passes (`None`: the GUM, or the predicates, decide).
    pub judge: Option<JudgeStage>,
    /// The lexicon's name, recorded in `Tag` mode (`builtin`, `v3` for a stored version, a
    /// file name).
    pub lexicon: String,
}

/// One decision and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateDecision {
    /// Worth remembering.
    pub keep: bool,
    /// The scenes hit (after the predicates), with their words.
    pub hits: GumHits,
    /// Why, in words a person reads.
    pub reason: String,
    /// The judge failed and the text was kept (fail open): why it failed.
    pub judge_failed: Option<String>,
}

impl GateStage {
    /// A stage of `mode` with the GUM alone.
    pub fn new(gum: Arc<Gum>, mode: GateMode, lexicon: impl Into<String>) -> GateStage {
        GateStage {
            gum,
            mode,
            predicates: None,
            judge: None,
            lexicon: lexicon.into(),
        }
    }

    /// The decision on `fields` (nothing recorded).
    pub fn decide(&self, fields: &ItemFields) -> GateDecision {
        if let Some(kept) = self.picture_kept(fields) {
            return kept;
        }
        let text = text_of(fields);
        let intent = Some(fields.source);
        let (hits, voided) = match &self.predicates {
            Some(p) => {
                let got = p.hits(&self.gum, &text, intent);
                (got.hits, got.voided)
            }
            None => (self.gum.hits(&text, intent), Vec::new()),
        };
        if !hits.is_memorable() {
            let reason = if voided.is_empty() {
                "not memorable: no word of any scene".to_owned()
            } else {
                let said: Vec<String> = voided
                    .iter()
                    .map(|v| format!("{} (\"{}\")", v.name, v.words.join("\", \"")))
                    .collect();
                format!(
                    "not memorable: only figures of speech of {}",
                    said.join(", ")
                )
            };
            return GateDecision {
                keep: false,
                hits,
                reason,
                judge_failed: None,
            };
        }
        let scenes = describe(&hits);
        let Some(judge) = &self.judge else {
            return GateDecision {
                keep: true,
                hits,
                reason: format!("memorable: {scenes}"),
                judge_failed: None,
            };
        };
        let prompt = judge.prompts.prompt(self.gum.scenes(), intent, &hits);
        match judge.judge.judge(&text, &prompt) {
            Ok(verdict) => GateDecision {
                keep: verdict.memorable,
                reason: format!(
                    "{} by the judge ({}); scenes: {scenes}",
                    if verdict.memorable {
                        "memorable"
                    } else {
                        "not memorable"
                    },
                    verdict.reason
                ),
                hits,
                judge_failed: None,
            },
            Err(e) => GateDecision {
                keep: true,
                reason: format!("memorable: {scenes} (the judge failed)"),
                hits,
                judge_failed: Some(e.to_string()),
            },
        }
    }

    /// Decides on `fields`; in `Tag` mode records the decision on the item (replacing an
    /// earlier decision's tags). In `Drop` mode with the GUM alone, stops at the first word
    /// that decides (no explanation is built for a kept item).
    pub fn apply(&self, fields: &mut ItemFields) -> GateDecision {
        if let Some(kept) = self.picture_kept(fields) {
            return kept;
        }
        if self.mode == GateMode::Drop && self.predicates.is_none() && self.judge.is_none() {
            let keep = self.gum.passes(&text_of(fields), Some(fields.source));
            return GateDecision {
                keep,
                hits: GumHits::default(),
                reason: if keep {
                    "memorable".to_owned()
                } else {
                    "not memorable: no word of any scene".to_owned()
                },
                judge_failed: None,
            };
        }
        let decision = self.decide(fields);
        if self.mode == GateMode::Tag {
            fields
                .tags
                .retain(|t| !GATE_TAGS.iter().any(|g| t.starts_with(g)));
            fields.tags.push(
                if decision.keep {
                    TAG_MEMORABLE
                } else {
                    TAG_NOT_MEMORABLE
                }
                .to_owned(),
            );
            fields.tags.extend(
                decision
                    .hits
                    .scenes
                    .iter()
                    .map(|s| format!("{TAG_SCENE_PREFIX}{}", s.name)),
            );
            fields
                .tags
                .push(format!("{TAG_LEXICON_PREFIX}{}", self.lexicon));
        }
        decision
    }
}

impl GateStage {
    /// `Drop` never drops a photo or a video: the gate reads words, and a picture's text (its
    /// caption, place, camera) says little of whether it is worth keeping, while dropping it
    /// would lose the original. `Tag` still records what its words hit.
    fn picture_kept(&self, fields: &ItemFields) -> Option<GateDecision> {
        let picture = matches!(fields.source, Source::Image | Source::Video);
        (self.mode == GateMode::Drop && picture).then(|| GateDecision {
            keep: true,
            hits: GumHits::default(),
            reason: "kept: photos and videos are not gated by their words".to_owned(),
            judge_failed: None,
        })
    }
}

/// `family ("mom", "sister"), health ("doctor")`.
fn describe(hits: &GumHits) -> String {
    hits.scenes
        .iter()
        .map(|s| format!("{} (\"{}\")", s.name, s.words.join("\", \"")))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{Gum, Scenes};
    use memdb_formats::item::{EventTime, GeoPoint, ItemRecord, Location, PlaceName};

    fn builtin(mode: GateMode) -> GateStage {
        let scenes = Scenes::builtin().unwrap_or_else(|e| panic!("{e}"));
        let gum = Gum::new(scenes).unwrap_or_else(|e| panic!("{e}"));
        GateStage::new(Arc::new(gum), mode, "builtin")
    }

    /// A chat turn said by `speaker` on 3 March 2024 (a Sunday morning, in spring), at a place:
    /// everything memdb writes around a text for recall names words the scenes hold ("march",
    /// "mom", "church" …).
    fn turn(speaker: &str, text: &str) -> ItemFields {
        let time = EventTime::parse("2024-03-03T09:30:00+00:00").unwrap_or_else(|e| panic!("{e}"));
        let mut f = ItemFields::new(Source::Chat, time);
        f.speaker = Some(speaker.to_owned());
        f.body = Some(text.to_owned());
        f.location = Some(Location {
            name: Some("St Mary's Church, Family Court".to_owned()),
            geo: Some(GeoPoint {
                lat: 51.5,
                lon: -0.12,
            }),
            place: Some(PlaceName {
                city: "London".to_owned(),
                locality: None,
                region: Some("England".to_owned()),
                country: Some("United Kingdom".to_owned()),
                country_code: Some("GB".to_owned()),
                distance_m: None,
                geonames_id: None,
            }),
        });
        f
    }

    #[test]
    fn words_memdb_writes_never_decide_and_the_persons_words_do() {
        let gate = builtin(GateMode::Drop);
        // The recall text of these turns holds "March", "Mom" and "Church": none is the
        // person's.
        for small_talk in ["hi", "lol ok", "Thanks, see you"] {
            let mut f = turn("Mom", small_talk);
            assert!(
                crate::recall::item_text(&ItemRecord {
                    id: 1,
                    ingest_time_ms: 0,
                    fields: f.clone(),
                    supersedes: None,
                    blobs: Vec::new(),
                })
                .contains("March"),
                "the test's premise: the recall text names the month"
            );
            let decision = gate.apply(&mut f);
            assert!(!decision.keep, "{small_talk:?}: {}", decision.reason);
        }
        for memorable in [
            "The wifi password at the cabin is bluefjord42",
            "My sister just had a baby girl",
            "The door code for the new office is 4471",
        ] {
            let mut f = turn("Mom", memorable);
            let decision = gate.apply(&mut f);
            assert!(decision.keep, "{memorable:?}: {}", decision.reason);
        }
    }

    #[test]
    fn the_gate_reads_the_persons_words_only() {
        let mut f = turn("Mom", "hello there");
        f.tags = vec![
            "gate:scene:family".to_owned(),
            crate::ops::MEMORY_TAG.to_owned(),
            "wedding".to_owned(),
        ];
        f.summary = Some("Re: plans".to_owned());
        let text = text_of(&f);
        for absent in [
            "March", "Mom", "Church", "London", "morning", "spring", "gate:", "memory",
        ] {
            assert!(!text.contains(absent), "{absent:?} in {text:?}");
        }
        for present in ["hello there", "Re: plans", "wedding"] {
            assert!(text.contains(present), "{present:?} not in {text:?}");
        }
    }
}
