//! An RGB pixel buffer and the image operations pages need: blitting photos, resizing with
//! fast_image_resize, encoding and decoding JPEG with libjpeg-turbo.
//!
//! Invariant: `rgb.len() == width * height * 3` for every canvas.

use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

use crate::{RenderError, Result};

/// Widest or tallest image libjpeg-turbo encodes.
pub(crate) const JPEG_MAX_SIDE: u32 = 65_500;

/// A row-major RGB image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canvas {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Canvas {
    /// A white canvas of `width` × `height`.
    pub fn white(width: u32, height: u32) -> Canvas {
        Canvas {
            width,
            height,
            rgb: vec![255; width as usize * height as usize * 3],
        }
    }

    /// The canvas of `rgb` (row-major, 3 bytes a pixel), refused unless it is `width` ×
    /// `height` pixels.
    pub fn from_rgb(width: u32, height: u32, rgb: Vec<u8>) -> Result<Canvas> {
        if rgb.len() != width as usize * height as usize * 3 {
            return Err(RenderError {
                op: "RGB image",
                reason: format!("{} bytes are not {width}×{height} pixels", rgb.len()),
            });
        }
        Ok(Canvas { width, height, rgb })
    }

    /// Its width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Its height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    #[cfg(test)]
    pub(crate) fn rgb(&self) -> &[u8] {
        &self.rgb
    }

    /// Blends black over the pixel at (x, y) with `coverage` in 0..=1; outside: nothing.
    pub fn darken(&mut self, x: i64, y: i64, coverage: f32) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let at = (y as usize * self.width as usize + x as usize) * 3;
        let keep = 1.0 - coverage.clamp(0.0, 1.0);
        for b in &mut self.rgb[at..at + 3] {
            *b = (f32::from(*b) * keep).round() as u8;
        }
    }

    /// Paints the rectangle at (x, y) of `w` × `h` white, clipped to the canvas.
    pub fn fill_white(&mut self, x: i64, y: i64, w: i64, h: i64) {
        let (x0, y0) = (x.max(0), y.max(0));
        let x1 = (x + w).min(i64::from(self.width));
        let y1 = (y + h).min(i64::from(self.height));
        for row in y0..y1 {
            if x0 >= x1 {
                break;
            }
            let from = ((row * i64::from(self.width) + x0) * 3) as usize;
            let to = ((row * i64::from(self.width) + x1) * 3) as usize;
            self.rgb[from..to].fill(255);
        }
    }

    /// Copies `image` with its top-left corner at (x, y) (which may lie outside: clipped).
    pub fn blit(&mut self, image: &Canvas, x: i64, y: i64) {
        for row in 0..i64::from(image.height) {
            let cy = y + row;
            if cy < 0 || cy >= i64::from(self.height) {
                continue;
            }
            let from_x = (-x).max(0);
            let to_x = (i64::from(self.width) - x).min(i64::from(image.width));
            if from_x >= to_x {
                continue;
            }
            let src = ((row * i64::from(image.width) + from_x) * 3) as usize;
            let dst = ((cy * i64::from(self.width) + x + from_x) * 3) as usize;
            let n = ((to_x - from_x) * 3) as usize;
            self.rgb[dst..dst + n].copy_from_slice(&image.rgb[src..src + n]);
        }
    }

    /// This image resized to `width` × `height` (Lanczos3; both at least 1).
    ///
    /// The resizer runs on RGBA pixels with an opaque alpha it is told to ignore (each channel
    /// is convolved on its own, as for RGB): fast_image_resize is built for that one pixel type
    /// (`only_u8x4`), which takes its generic kernels out of this crate's build for every other
    /// pixel type, three quarters of the crate's compile time.
    pub fn resized(&self, width: u32, height: u32) -> Result<Canvas> {
        let (width, height) = (width.max(1), height.max(1));
        if (width, height) == (self.width, self.height) {
            return Ok(self.clone());
        }
        let src = Image::from_vec_u8(self.width, self.height, rgba(&self.rgb), PixelType::U8x4)
            .map_err(|e| RenderError::image("resize source")(e.to_string()))?;
        let mut dst = Image::new(width, height, PixelType::U8x4);
        Resizer::new()
            .resize(
                &src,
                &mut dst,
                &ResizeOptions::new()
                    .resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3))
                    .use_alpha(false),
            )
            .map_err(|e| RenderError::image("resize")(format!("to {width}×{height}: {e}")))?;
        Canvas::from_rgb(width, height, rgb(dst.buffer()))
    }

    /// Encodes as a baseline JPEG at `quality` (1–100) with 4:2:0 chroma, as Pillow does by
    /// default: a page's text is black on white (all luma), so halving chroma costs it nothing.
    pub fn encode_jpeg(&self, quality: u8) -> Result<Vec<u8>> {
        if self.width > JPEG_MAX_SIDE || self.height > JPEG_MAX_SIDE {
            return Err(RenderError {
                op: "JPEG encode",
                reason: format!(
                    "a {}×{} page is over JPEG's size limit",
                    self.width, self.height
                ),
            });
        }
        let image = turbojpeg::Image {
            pixels: self.rgb.as_slice(),
            width: self.width as usize,
            pitch: self.width as usize * 3,
            height: self.height as usize,
            format: turbojpeg::PixelFormat::RGB,
        };
        let out = turbojpeg::compress(
            image,
            i32::from(quality.clamp(1, 100)),
            turbojpeg::Subsamp::Sub2x2,
        )
        .map_err(|e| RenderError::image("JPEG encode")(e.to_string()))?;
        Ok(out.to_vec())
    }

    /// Decodes a JPEG (a stored page: bytes memdb wrote and verified by checksum).
    pub fn decode_jpeg(bytes: &[u8]) -> Result<Canvas> {
        let image = turbojpeg::decompress(bytes, turbojpeg::PixelFormat::RGB)
            .map_err(|e| RenderError::image("page JPEG decode")(e.to_string()))?;
        let (width, height) = (image.width as u32, image.height as u32);
        let mut rgb = Vec::with_capacity(image.width * image.height * 3);
        for row in image.pixels.chunks(image.pitch).take(image.height) {
            rgb.extend_from_slice(&row[..image.width * 3]);
        }
        Canvas::from_rgb(width, height, rgb)
    }
}

/// RGB pixels as RGBA, opaque.
fn rgba(rgb: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rgb.len() / 3 * 4);
    for pixel in rgb.chunks_exact(3) {
        out.extend_from_slice(pixel);
        out.push(u8::MAX);
    }
    out
}

/// RGBA pixels as RGB, the alpha dropped.
fn rgb(rgba: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rgba.len() / 4 * 3);
    for pixel in rgba.chunks_exact(4) {
        out.extend_from_slice(&pixel[..3]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(width: u32, height: u32) -> Canvas {
        let mut rgb = Vec::new();
        for y in 0..height {
            for x in 0..width {
                rgb.extend_from_slice(&[(x % 256) as u8, (y % 256) as u8, 128]);
            }
        }
        Canvas::from_rgb(width, height, rgb).unwrap()
    }

    #[test]
    fn jpeg_round_trip_keeps_size_and_roughly_the_pixels() {
        let image = gradient(120, 80);
        let jpeg = image.encode_jpeg(95).unwrap();
        let back = Canvas::decode_jpeg(&jpeg).unwrap();
        assert_eq!((back.width(), back.height()), (120, 80));
        let worst = image
            .rgb()
            .iter()
            .zip(back.rgb())
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        assert!(worst < 24, "max pixel error {worst}");
        assert!(image.encode_jpeg(40).unwrap().len() < jpeg.len());
    }

    #[test]
    fn resizing_and_blitting_clip_and_scale() {
        let image = gradient(100, 50);
        let half = image.resized(50, 25).unwrap();
        assert_eq!((half.width(), half.height()), (50, 25));
        let mut page = Canvas::white(60, 60);
        page.blit(&half, 30, 50); // partly outside
        page.blit(&half, -40, -20);
        assert_eq!(page.rgb().len(), 60 * 60 * 3);
        page.fill_white(-5, 10, 20, 1_000);
        assert!(
            page.rgb()[(10 * 60) * 3..(10 * 60 + 15) * 3]
                .iter()
                .all(|&b| b == 255)
        );
        page.fill_white(70, 70, 5, 5); // wholly outside: nothing
        assert!(Canvas::decode_jpeg(b"not a jpeg").is_err());
        assert!(Canvas::from_rgb(2, 2, vec![0; 11]).is_err());
    }
}
