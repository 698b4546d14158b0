//! Composing a day's page: the plan (where every photo and line of text goes, which becomes the
//! stored [`PageLayout`]) and the paint (pixels, part by part).
//!
//! The plan is a pure function of the day's items, their nodes, their photos' upright sizes and
//! [`PageOptions`], so a text-only page can be rendered again on demand and land exactly where
//! its stored layout says. Invariants (tested): a photo is drawn with its long side at
//! `min(its own, PHOTO_LONG_SIDE)`; no text is smaller than `BODY_PX`; no photo row or text
//! line straddles a part boundary.

use jiff::tz::Offset;
use memdb_formats::item::{ItemFields, Source};

use memdb_formats::page_layout::{Block, BlockKind, PageLayout};

use crate::Result;
use crate::canvas::Canvas;
use crate::font::Typeface;

/// Long side of a photo on a page at the Recent stage (or the photo's own, if smaller).
pub const PHOTO_LONG_SIDE: u32 = 1024;
/// Body text size in pixels at scale 1.0: the smallest text on any page.
pub const BODY_PX: u8 = 14;
/// Headline and key-fact text size in pixels at scale 1.0.
pub const HEADLINE_PX: u8 = 22;
/// The day's title size.
const TITLE_PX: u8 = 32;
const MARGIN: u32 = 24;
const GAP: u32 = 12;
/// The widest page: two photos side by side at their Recent size. A page is as wide as what
/// it shows, up to this; white margins cost bytes at every stage.
pub const MAX_PAGE_WIDTH: u32 = 2 * PHOTO_LONG_SIDE + 3 * MARGIN;
/// A photo's column is at least this wide, so a narrow photo's caption still has room.
const MIN_COLUMN: u32 = PHOTO_LONG_SIDE / 2;
/// Pages taller than this are stored as several JPEG parts (bounded memory per part, and under
/// JPEG's 65,535-pixel limit).
pub const PART_HEIGHT: u32 = 8192;
/// Body lines drawn per record; the rest of a long text is elided (it stays in the record).
const MAX_BODY_LINES: usize = 40;
const MAX_FACT_LINES: usize = 3;

/// How pages are composed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageOptions {
    /// JPEG quality pages are first encoded at (forgetting only ever lowers it).
    pub quality: u8,
    /// Saliency-aware layout: each record's salient nodes (names, dates, amounts) are set
    /// again as key facts at headline size, so they stay legible a stage longer than body text.
    pub salient_facts: bool,
}

impl Default for PageOptions {
    fn default() -> Self {
        PageOptions {
            quality: 95,
            salient_facts: true,
        }
    }
}

/// One item of a day, as the composer sees it.
#[derive(Debug, Clone)]
pub struct DayItem {
    /// The item's id.
    pub id: u64,
    /// Its fields.
    pub fields: ItemFields,
    /// Upright width and height of its photo, if it has one that decodes.
    pub photo: Option<(u32, u32)>,
    /// Its graph nodes: id, the phrases that name it (canonical and aliases), and whether the
    /// node is salient (a name, a date, an amount: set again as a key fact).
    pub nodes: Vec<(u64, Vec<String>, bool)>,
}

/// One drawing step of a plan, in page coordinates at scale 1.0.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DrawOp {
    Text {
        x: u32,
        y: u32,
        px: u8,
        text: String,
    },
    /// Photo of `DayItem` number `index`, drawn at `w` × `h`.
    Photo {
        index: usize,
        x: u32,
        y: u32,
        w: u32,
        h: u32,
    },
}

/// The planned page.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where everything sits, at scale 1.0: what the page row stores.
    pub layout: PageLayout,
    /// How to paint it.
    pub(crate) ops: Vec<DrawOp>,
}

/// A photo's size on a Recent page: long side `min(own, PHOTO_LONG_SIDE)`, aspect kept.
pub fn photo_display_size(width: u32, height: u32) -> (u32, u32) {
    let long = width.max(height).max(1);
    if long <= PHOTO_LONG_SIDE {
        return (width.max(1), height.max(1));
    }
    let scale = f64::from(PHOTO_LONG_SIDE) / f64::from(long);
    let w = ((f64::from(width) * scale).round() as u32).clamp(1, PHOTO_LONG_SIDE);
    let h = ((f64::from(height) * scale).round() as u32).clamp(1, PHOTO_LONG_SIDE);
    (w, h)
}

/// The first y ≥ `y` at which something `h` tall does not straddle a part boundary.
fn fit(y: u32, h: u32) -> u32 {
    let part_end = (y / PART_HEIGHT + 1) * PART_HEIGHT;
    if y + h > part_end && h <= PART_HEIGHT {
        part_end
    } else {
        y
    }
}

fn local_time(fields: &ItemFields) -> String {
    let offset =
        Offset::from_seconds(i32::from(fields.time.offset_minutes) * 60).unwrap_or(Offset::UTC);
    jiff::Timestamp::from_millisecond(fields.time.unix_ms)
        .map(|t| {
            t.to_zoned(offset.to_time_zone())
                .strftime("%H:%M")
                .to_string()
        })
        .unwrap_or_default()
}

/// The record's headline: time, who, and what it is about.
fn headline(fields: &ItemFields) -> String {
    let mut parts = vec![local_time(fields)];
    if let Some(who) = fields.speaker.as_ref().or(fields.from.as_ref()) {
        let mut who = who.clone();
        if !fields.to.is_empty() {
            who = format!("{who} → {}", fields.to.join(", "));
        }
        parts.push(who);
    }
    if fields.source == Source::Image {
        parts.extend(fields.location.as_ref().map(where_taken));
        // Photos stored before store format 7 have their camera as a tag.
        let camera = fields.camera.as_ref().map(|c| c.label()).or_else(|| {
            fields
                .tags
                .iter()
                .find_map(|t| t.strip_prefix("camera:").map(str::to_owned))
        });
        parts.extend(camera);
    }
    if let Some(summary) = &fields.summary {
        parts.push(summary.clone());
    }
    parts.retain(|p| !p.is_empty());
    parts.join("  ·  ")
}

/// Where a photo was taken, as its headline says it: its own name, the place its position is
/// in ("Paris, France") and the position — `Tour Eiffel, Paris, France (48.8578, 2.2970)`. A
/// name the place stage wrote is the place again, so it is not repeated.
fn where_taken(l: &memdb_formats::item::Location) -> String {
    let short = l.place.as_ref().map(|p| p.short_label());
    let own = l
        .name
        .clone()
        .filter(|n| l.place.as_ref().is_none_or(|p| *n != p.label()));
    let mut out = [own, short]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(g) = l.geo {
        let point = format!("{:.4}, {:.4}", g.lat, g.lon);
        out = if out.is_empty() {
            point
        } else {
            format!("{out} ({point})")
        };
    }
    out
}

fn body(fields: &ItemFields) -> String {
    [&fields.body, &fields.caption, &fields.ocr]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

fn mentions(text_lower: &str, phrases: &[String]) -> bool {
    phrases
        .iter()
        .any(|p| !p.is_empty() && text_lower.contains(p.as_str()))
}

/// Plans one day's page.
pub fn plan(face: &Typeface, day: &str, items: &[DayItem], options: PageOptions) -> Plan {
    let mut ops = Vec::new();
    let mut blocks = Vec::new();
    let text_width = (MAX_PAGE_WIDTH - 2 * MARGIN) as f32;
    let mut y = MARGIN;
    ops.push(DrawOp::Text {
        x: MARGIN,
        y,
        px: TITLE_PX,
        text: day.to_owned(),
    });
    y += face.line_height(TITLE_PX) + GAP;

    // Photos two to a row, each with its caption (a text block) beneath.
    let photos: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].photo.is_some())
        .collect();
    for row in photos.chunks(2) {
        let sizes: Vec<(u32, u32)> = row
            .iter()
            .map(|&i| {
                items[i]
                    .photo
                    .map_or((1, 1), |(w, h)| photo_display_size(w, h))
            })
            .collect();
        let row_h = sizes.iter().map(|s| s.1).max().unwrap_or(0);
        y = fit(y, row_h);
        let mut captions_bottom = y + row_h;
        let mut x = MARGIN;
        for (&index, &(w, h)) in row.iter().zip(&sizes) {
            let column = w.max(MIN_COLUMN);
            ops.push(DrawOp::Photo { index, x, y, w, h });
            blocks.push(Block {
                item: items[index].id,
                kind: BlockKind::Photo,
                rect: [x, y, w, h],
                text_px: 0,
                nodes: Vec::new(),
            });
            let bottom = text_block(
                face,
                &items[index],
                options,
                x,
                y + row_h + GAP / 2,
                column as f32,
                &mut ops,
                &mut blocks,
            );
            captions_bottom = captions_bottom.max(bottom);
            x += column + MARGIN;
        }
        y = captions_bottom + GAP;
    }
    // Then every record's text, full width, in time order.
    for item in items.iter().filter(|i| i.photo.is_none()) {
        y = text_block(
            face,
            item,
            options,
            MARGIN,
            y,
            text_width,
            &mut ops,
            &mut blocks,
        ) + GAP;
    }
    let right = ops
        .iter()
        .map(|op| match op {
            DrawOp::Text { x, px, text, .. } => x + face.width(*px, text).ceil() as u32,
            DrawOp::Photo { x, w, .. } => x + w,
        })
        .max()
        .unwrap_or(0);
    Plan {
        layout: PageLayout {
            width: (right + MARGIN).min(MAX_PAGE_WIDTH),
            height: y + MARGIN,
            salient_facts: options.salient_facts,
            blocks,
        },
        ops,
    }
}

/// Lays out an item's headline, key facts and body from `top`; returns the bottom.
#[allow(clippy::too_many_arguments)]
fn text_block(
    face: &Typeface,
    item: &DayItem,
    options: PageOptions,
    x: u32,
    top: u32,
    width: f32,
    ops: &mut Vec<DrawOp>,
    blocks: &mut Vec<Block>,
) -> u32 {
    let headline = headline(&item.fields);
    let facts: Vec<String> = if options.salient_facts {
        item.nodes
            .iter()
            .filter(|(_, _, salient)| *salient)
            .filter_map(|(_, phrases, _)| phrases.first().cloned())
            .collect()
    } else {
        Vec::new()
    };
    let body = body(&item.fields);
    let mut sections: Vec<(u8, Vec<String>)> = Vec::new();
    sections.push((HEADLINE_PX, face.wrap(HEADLINE_PX, &headline, width, 2)));
    if !facts.is_empty() {
        sections.push((
            HEADLINE_PX,
            face.wrap(HEADLINE_PX, &facts.join("  ·  "), width, MAX_FACT_LINES),
        ));
    }
    if !body.trim().is_empty() {
        sections.push((BODY_PX, face.wrap(BODY_PX, &body, width, MAX_BODY_LINES)));
    }
    let mut y = top;
    let mut block_top = None;
    let mut drawn_large = String::new();
    for (px, lines) in &sections {
        let lh = face.line_height(*px);
        for line in lines {
            y = fit(y, lh);
            block_top.get_or_insert(y);
            ops.push(DrawOp::Text {
                x,
                y,
                px: *px,
                text: line.clone(),
            });
            if *px != BODY_PX {
                drawn_large.push_str(&line.to_lowercase());
                drawn_large.push('\n');
            }
            y += lh;
        }
    }
    // Each node at the largest size its phrase is drawn at; a node the text implies without
    // spelling it (a relative date resolved to a day) counts as body text.
    let nodes = item
        .nodes
        .iter()
        .map(|(id, phrases, _)| {
            let px = if mentions(&drawn_large, phrases) {
                HEADLINE_PX
            } else {
                BODY_PX
            };
            (*id, px)
        })
        .collect();
    let block_top = block_top.unwrap_or(top);
    blocks.push(Block {
        item: item.id,
        kind: BlockKind::Text,
        rect: [x, block_top, width as u32, y.saturating_sub(block_top)],
        text_px: if sections.iter().any(|(px, _)| *px == BODY_PX) {
            BODY_PX
        } else {
            HEADLINE_PX
        },
        nodes,
    });
    y
}

/// Paints part `part` of a planned page. `photos[i]` is item `i`'s photo already resized to
/// its planned size (`None` for items without one).
pub fn paint_part(
    face: &Typeface,
    plan: &Plan,
    photos: &[Option<Canvas>],
    part: u32,
) -> Result<Canvas> {
    let top = part * PART_HEIGHT;
    let height = plan.layout.height.saturating_sub(top).clamp(1, PART_HEIGHT);
    let mut canvas = Canvas::white(plan.layout.width, height);
    let (lo, hi) = (i64::from(top), i64::from(top + height));
    for op in &plan.ops {
        match op {
            DrawOp::Text { x, y, px, text } => {
                let (y0, y1) = (i64::from(*y), i64::from(*y + face.line_height(*px)));
                if y1 > lo && y0 < hi {
                    face.draw(&mut canvas, *px, *x as f32, (y0 - lo) as f32, text);
                }
            }
            DrawOp::Photo { index, x, y, h, .. } => {
                let (y0, y1) = (i64::from(*y), i64::from(*y + *h));
                if y1 > lo
                    && y0 < hi
                    && let Some(Some(photo)) = photos.get(*index)
                {
                    canvas.blit(photo, i64::from(*x), y0 - lo);
                }
            }
        }
    }
    Ok(canvas)
}

/// Number of JPEG parts a page of this height is stored as.
pub fn part_count(height: u32) -> u32 {
    height.div_ceil(PART_HEIGHT).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_photo_headline_names_its_place_beside_its_position() {
        let mut f = memdb_formats::fixtures::eiffel_photo();
        assert_eq!(
            headline(&f),
            "13:59  ·  Paris, France (48.8578, 2.2970)  ·  FUJIFILM FinePixS2Pro"
        );
        let Some(l) = f.location.as_mut() else {
            panic!("the fixture has a location")
        };
        l.name = Some("Tour Eiffel".into());
        assert_eq!(
            where_taken(l),
            "Tour Eiffel, Paris, France (48.8578, 2.2970)"
        );
        l.place = None;
        l.name = None;
        assert_eq!(where_taken(l), "48.8578, 2.2970");
    }
}
