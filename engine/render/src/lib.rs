//! memdb-render: scrapbook pages (ScrapMem §4.1) as pixels, pure over a day's items.
//!
//! Owns composing a day's page (`compose.rs`: the plan — where every photo and line of text
//! goes, which becomes the stored [`PageLayout`](memdb_formats::page_layout::PageLayout) — and
//! the paint, part by part), the pixel buffer and JPEG (`canvas.rs`: resizing with
//! fast_image_resize, encoding and decoding with libjpeg-turbo) and text (`font.rs`: the
//! embedded DejaVu Sans). It knows no store: the engine's `memdb::scrapbook` gathers a day's
//! items and nodes, calls [`plan`] and [`paint_part`], and keeps the parts and the row in one
//! commit.
//!
//! Invariants (tested here): the plan is a pure function of its inputs, so a text-only page
//! rendered again on demand lands exactly where its stored layout says; a photo is drawn with
//! its long side at `min(its own, PHOTO_LONG_SIDE)`; no text is smaller than `BODY_PX`; no
//! photo row or text line straddles a part boundary; `rgb.len() == width * height * 3` for
//! every canvas; drawing never writes outside a canvas.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod canvas;
mod compose;
mod font;

pub use canvas::Canvas;
pub use compose::{
    BODY_PX, DayItem, HEADLINE_PX, MAX_PAGE_WIDTH, PART_HEIGHT, PHOTO_LONG_SIDE, PageOptions, Plan,
    paint_part, part_count, photo_display_size, plan,
};
pub use font::Typeface;

/// An image operation that failed (JPEG decode or encode, resize, the embedded font).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {reason}")]
pub struct RenderError {
    /// What was being done (`JPEG encode`, `resize`, …).
    pub op: &'static str,
    /// What the library said.
    pub reason: String,
}

impl RenderError {
    /// The error of operation `op`, given what failed.
    pub(crate) fn image(op: &'static str) -> impl FnOnce(String) -> RenderError {
        move |reason| RenderError { op, reason }
    }
}

/// Result of rendering.
pub type Result<T, E = RenderError> = std::result::Result<T, E>;
