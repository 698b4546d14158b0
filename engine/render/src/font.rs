//! Text on pages, set in the embedded DejaVu Sans (Bitstream Vera licence; the file and its
//! licence are in `engine/render/assets/fonts/`): measuring, greedy word wrapping and drawing onto a
//! [`Canvas`].
//!
//! Invariants: the same text at the same size always wraps to the same lines (layouts are
//! recomputed from records when a text-only page is rendered on demand, and must match the
//! stored layout); drawing never writes outside the canvas.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};

use crate::canvas::Canvas;
use crate::{RenderError, Result};

static DEJAVU_SANS: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// The page typeface.
#[derive(Debug, Clone)]
pub struct Typeface {
    font: FontRef<'static>,
}

impl Typeface {
    /// The embedded DejaVu Sans.
    pub fn embedded() -> Result<Typeface> {
        let font = FontRef::try_from_slice(DEJAVU_SANS)
            // The font is compiled in: failing to load it is a broken build, not bad data.
            .map_err(|e| RenderError {
                op: "load the embedded font",
                reason: e.to_string(),
            })?;
        Ok(Typeface { font })
    }

    /// Distance between baselines of consecutive lines at `px`.
    pub fn line_height(&self, px: u8) -> u32 {
        let scaled = self.font.as_scaled(PxScale::from(f32::from(px)));
        (scaled.height() + scaled.line_gap()).ceil() as u32
    }

    /// Advance width of `text` at `px`.
    pub fn width(&self, px: u8, text: &str) -> f32 {
        let scaled = self.font.as_scaled(PxScale::from(f32::from(px)));
        let mut width = 0.0;
        let mut previous = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = previous {
                width += scaled.kern(p, id);
            }
            width += scaled.h_advance(id);
            previous = Some(id);
        }
        width
    }

    /// Splits `text` into lines no wider than `max_width` at `px`, breaking at whitespace
    /// (a word wider than a line is cut between characters). At most `max_lines` lines; when
    /// text is left over the last line ends with `…`.
    pub fn wrap(&self, px: u8, text: &str, max_width: f32, max_lines: usize) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        let mut truncated = false;
        'paragraphs: for paragraph in text.lines() {
            let mut line = String::new();
            for word in paragraph.split_whitespace() {
                let candidate = if line.is_empty() {
                    word.to_owned()
                } else {
                    format!("{line} {word}")
                };
                if self.width(px, &candidate) <= max_width {
                    line = candidate;
                    continue;
                }
                if !line.is_empty() {
                    if lines.len() == max_lines {
                        truncated = true;
                        break 'paragraphs;
                    }
                    lines.push(std::mem::take(&mut line));
                }
                // A word alone may still be too wide: cut it between characters.
                for c in word.chars() {
                    line.push(c);
                    if self.width(px, &line) > max_width && line.chars().count() > 1 {
                        line.pop();
                        if lines.len() == max_lines {
                            truncated = true;
                            break 'paragraphs;
                        }
                        lines.push(std::mem::replace(&mut line, c.to_string()));
                    }
                }
            }
            if !line.is_empty() {
                if lines.len() == max_lines {
                    truncated = true;
                    break;
                }
                lines.push(line);
            }
        }
        if truncated && let Some(last) = lines.last_mut() {
            while !last.is_empty() && self.width(px, &format!("{last}…")) > max_width {
                last.pop();
            }
            last.push('…');
        }
        lines
    }

    /// Draws one line of black text with its top at `top` (canvas coordinates, which may lie
    /// partly or wholly outside the canvas: what falls outside is clipped).
    pub fn draw(&self, canvas: &mut Canvas, px: u8, left: f32, top: f32, text: &str) {
        let scale = PxScale::from(f32::from(px));
        let scaled = self.font.as_scaled(scale);
        let baseline = top + scaled.ascent();
        let mut x = left;
        let mut previous = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = previous {
                x += scaled.kern(p, id);
            }
            let glyph = id.with_scale_and_position(scale, point(x, baseline));
            x += scaled.h_advance(id);
            previous = Some(id);
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            outline.draw(|gx, gy, coverage| {
                let cx = bounds.min.x as i64 + i64::from(gx);
                let cy = bounds.min.y as i64 + i64::from(gy);
                canvas.darken(cx, cy, coverage);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_respects_the_width_and_the_line_cap() {
        let face = Typeface::embedded().unwrap();
        let text = "the quick brown fox jumps over the lazy dog ".repeat(20);
        let lines = face.wrap(14, &text, 300.0, 5);
        assert_eq!(lines.len(), 5);
        assert!(lines.iter().all(|l| face.width(14, l) <= 300.0));
        assert!(lines[4].ends_with('…'));
        let long_word = "x".repeat(200);
        let cut = face.wrap(14, &long_word, 100.0, 100);
        assert!(cut.len() > 1);
        assert_eq!(cut.concat(), long_word);
    }

    #[test]
    fn drawing_marks_pixels_and_clips_at_the_edges() {
        let face = Typeface::embedded().unwrap();
        let mut canvas = Canvas::white(200, 40);
        face.draw(&mut canvas, 20, 5.0, 5.0, "Hello");
        assert!(canvas.rgb().iter().any(|&b| b < 128));
        // Half outside on every side: clipped, no panic.
        face.draw(&mut canvas, 30, -20.0, -15.0, "WWWWWWWWWWWWWWWW");
        face.draw(&mut canvas, 30, 150.0, 30.0, "WWWW");
    }
}
