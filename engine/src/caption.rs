//! The captioner stage: what a photo shows, in words, from an optional on-device vision model —
//! ATM-Bench's SGM image fields (caption, short caption, OCR text, tags, entities), stored in
//! the item with their provenance (which model, when).
//!
//! Off unless configured: [`crate::IngestOptions::captioner`] names a [`Captioner`] (the one
//! memdb ships is `VisionCaptioner`, feature `llm`: a local OpenAI-compatible server on
//! loopback, the image sent as a data URL), or an application calls [`Store::caption_photos`].
//!
//! Invariants:
//! - A photo is captioned at most once: an item with a caption provenance is never sent again,
//!   whatever changed since (a new model does not re-caption a library behind the person's
//!   back). A photo whose call failed has no provenance and is tried again by the next run.
//! - A failed call (transport, timeout, HTTP error, a reply that is not the strict grammar of
//!   `memdb_formats::caption`) is reported with the item and skipped; the photo stays as it
//!   was, and the rest of the run goes on.
//! - The person's own words win: a caption, short caption or OCR text the item already has is
//!   kept; the model's tags and entities are added to the item's, without duplicates.
//! - Results commit a window at a time (`CAPTION_WINDOW`) as amendments of the item as it is
//!   at commit, so a run that stops loses at most a window of calls and a change made to a
//!   photo meanwhile is kept. The amendment makes the item's vector, graph paths and page
//!   stale, so the derived stages that follow pick the caption up.

use crate::handle::Store;
use std::sync::Arc;

pub use memdb_formats::caption::{CaptionFields, CaptionReplyError};
use memdb_formats::item::{CaptionProvenance, ItemFields, Source};

use crate::error::Result;
pub use memdb_endpoint::EndpointError;
use memdb_store::ScanFilter;

/// Photos captioned per commit.
pub(crate) const CAPTION_WINDOW: usize = 8;

/// Why a photo was not captioned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptionError {
    /// The model server could not be reached, timed out, or did not answer a chat completion.
    #[error("captioner: {0}")]
    Endpoint(#[from] EndpointError),
    /// The model answered, but not a caption.
    #[error("captioner {model}: {source}")]
    Reply {
        /// The model asked.
        model: String,
        /// What is wrong with the answer.
        source: CaptionReplyError,
    },
    /// The photo cannot be sent: not a JPEG or PNG, or larger than the captioner takes.
    #[error("captioner: {why}")]
    Image {
        /// Why.
        why: String,
    },
}

/// Something that describes a photo. Implementations must be deterministic enough to be worth
/// storing and must never panic on any image bytes.
pub trait Captioner: Send + Sync + std::fmt::Debug {
    /// The model's name, recorded as the captions' provenance.
    fn model(&self) -> &str;
    /// Describes the photo whose file is `image` (the original as imported).
    fn caption(&self, image: &[u8]) -> std::result::Result<CaptionFields, CaptionError>;
}

/// A photo the run could not caption.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptionFailure {
    /// The item.
    pub id: u64,
    /// Its external id (the photo's path), if it has one.
    pub external_id: Option<String>,
    /// Why.
    pub error: CaptionError,
}

/// What [`Store::caption_photos`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaptionReport {
    /// Photos captioned now.
    pub captioned: u64,
    /// Photos captioned before (never sent again).
    pub already: u64,
    /// Photos without an original to show the model (forgotten, or imported without one).
    pub no_original: u64,
    /// Photos the model could not caption, each with its reason; they stay uncaptioned.
    pub failed: Vec<CaptionFailure>,
}

/// Merges a model's description into `fields` (see the module's invariants). Returns whether
/// it changed anything: `false` when the item has been captioned already.
pub fn apply_caption(
    fields: &mut ItemFields,
    caption: CaptionFields,
    provenance: CaptionProvenance,
) -> bool {
    if fields.caption_provenance.is_some() {
        return false;
    }
    fields.caption.get_or_insert(caption.caption);
    fields.short_caption.get_or_insert(caption.short_caption);
    if fields.ocr.is_none() {
        fields.ocr = caption.ocr_text;
    }
    for (have, new) in [
        (&mut fields.tags, caption.tags),
        (&mut fields.entities, caption.entities),
    ] {
        for word in new {
            if !have.iter().any(|h| h.eq_ignore_ascii_case(&word)) {
                have.push(word);
            }
        }
    }
    fields.caption_provenance = Some(provenance);
    true
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Store {
    /// Captions every photo (image item) that has an original and no caption provenance, with
    /// `captioner`, `CAPTION_WINDOW` photos per commit; `progress` gets (photos done, photos
    /// to do). Failed photos are reported and left as they were; a store error stops the run
    /// (what committed before it stays).
    pub fn caption_photos(
        &self,
        captioner: &dyn Captioner,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CaptionReport> {
        let mut report = CaptionReport::default();
        let mut todo = Vec::new();
        let snapshot = self.snapshot()?;
        let photos = ScanFilter {
            source: Some(Source::Image),
            ..ScanFilter::default()
        };
        for item in snapshot.scan(&photos)? {
            if item.fields.caption_provenance.is_some() {
                report.already += 1;
                continue;
            }
            match snapshot.original_of(&item)? {
                Some(_) => todo.push((item.id, item.fields.external_id)),
                None => report.no_original += 1,
            }
        }
        // Model calls take seconds each: a snapshot held for the whole run would keep every
        // segment it reads alive that long. Each window reads from a snapshot of its own.
        drop(snapshot);
        let total = todo.len() as u64;
        progress(0, total);
        let model: Arc<str> = Arc::from(captioner.model());
        let mut done = 0;
        for window in todo.chunks(CAPTION_WINDOW) {
            let snapshot = self.snapshot()?;
            let mut batch = self.batch();
            for (id, external_id) in window {
                // The photo or its original may have gone since the scan (deleted, forgotten).
                let original = match snapshot.get(*id)? {
                    Some(item) => snapshot.original_of(&item)?,
                    None => None,
                };
                let Some(bytes) = original.map(|b| snapshot.blob(b)).transpose()?.flatten() else {
                    report.no_original += 1;
                    continue;
                };
                match captioner.caption(&bytes) {
                    Ok(caption) => {
                        report.captioned += 1;
                        let provenance = CaptionProvenance {
                            model: model.to_string(),
                            at_ms: now_ms(),
                        };
                        batch.amend(*id, move |f| {
                            apply_caption(f, caption, provenance);
                        });
                    }
                    Err(error) => report.failed.push(CaptionFailure {
                        id: *id,
                        external_id: external_id.clone(),
                        error,
                    }),
                }
            }
            drop(snapshot);
            if !batch.is_empty() {
                batch.commit()?;
            }
            done += window.len() as u64;
            progress(done, total);
        }
        Ok(report)
    }
}

#[cfg(feature = "llm")]
pub use vision::{VisionCaptioner, VisionOptions};

#[cfg(feature = "llm")]
mod vision {
    //! The captioner memdb ships: a vision model behind a local OpenAI-compatible server.

    use std::time::Duration;

    use base64::Engine as _;
    use memdb_formats::caption::{CaptionFields, parse_caption_reply};
    use serde_json::json;

    use super::{CaptionError, Captioner};
    use memdb_endpoint::{EndpointError, LoopbackChat};

    /// The media type a data URL must say for an image file (`None`: not one the captioner
    /// sends).
    fn image_media_type(bytes: &[u8]) -> Option<&'static str> {
        use memdb_formats::import::{FileKind, sniff};
        match sniff(bytes) {
            FileKind::Jpeg => Some("image/jpeg"),
            FileKind::Png => Some("image/png"),
            _ => None,
        }
    }

    /// The instruction sent with every photo: ATM-Bench's SGM image fields as one JSON object.
    pub(crate) const CAPTION_PROMPT: &str = "Describe this photo for a personal memory archive. Answer with ONE JSON object and nothing else (no markdown, no explanation), with exactly these keys: \"caption\": one or two sentences on what the photo shows; \"short_caption\": at most eight words; \"ocr_text\": all legible text in the photo, or \"\" if none; \"tags\": up to 10 short lowercase labels (objects, scene, activity); \"entities\": named things visible (landmarks, brands, shops, people's names on signs), or [] if none.";

    /// How the vision captioner calls its server.
    #[derive(Debug, Clone, PartialEq)]
    pub struct VisionOptions {
        /// The longest a photo's call may take (small models on a laptop CPU take tens of
        /// seconds).
        pub timeout: Duration,
        /// Photos are sent at most this long on their long side (re-encoded as JPEG when the
        /// build draws pages, feature `render`; otherwise as imported). Vision encoders work at
        /// about this size; a 24-megapixel original would only cost time.
        pub max_side: u32,
        /// Largest file sent, in bytes (after any downscale).
        pub max_image_bytes: usize,
        /// Token budget of the answer.
        pub max_tokens: u32,
    }

    impl Default for VisionOptions {
        fn default() -> Self {
            VisionOptions {
                timeout: Duration::from_secs(120),
                max_side: 1024,
                max_image_bytes: 16 << 20,
                max_tokens: 512,
            }
        }
    }

    /// Captions through `<base_url>/v1/chat/completions` of a local server (llama.cpp's
    /// `llama-server` with a vision projector, Ollama, vLLM), the photo as a data URL.
    #[derive(Debug, Clone)]
    pub struct VisionCaptioner {
        chat: LoopbackChat,
        model: String,
        options: VisionOptions,
    }

    impl VisionCaptioner {
        /// A captioner asking model `model` at `base_url`; refuses a URL that is not `http://`
        /// to a loopback host.
        pub fn new(
            base_url: &str,
            model: &str,
            options: VisionOptions,
        ) -> Result<VisionCaptioner, EndpointError> {
            Ok(VisionCaptioner {
                chat: LoopbackChat::new(base_url, options.timeout)?,
                model: model.to_owned(),
                options,
            })
        }

        /// The bytes sent for `image`: downscaled when the build can (and it is larger).
        fn prepared(&self, image: &[u8]) -> Result<(Vec<u8>, &'static str), CaptionError> {
            let media = image_media_type(image).ok_or_else(|| CaptionError::Image {
                why: "the original is neither JPEG nor PNG".to_owned(),
            })?;
            #[cfg(feature = "render")]
            if media == "image/jpeg"
                && let Some(smaller) = downscaled(image, self.options.max_side)
            {
                return self.checked(smaller, "image/jpeg");
            }
            self.checked(image.to_vec(), media)
        }

        fn checked(
            &self,
            bytes: Vec<u8>,
            media: &'static str,
        ) -> Result<(Vec<u8>, &'static str), CaptionError> {
            if bytes.len() > self.options.max_image_bytes {
                return Err(CaptionError::Image {
                    why: format!(
                        "{} bytes to send, more than the {} allowed",
                        bytes.len(),
                        self.options.max_image_bytes
                    ),
                });
            }
            Ok((bytes, media))
        }
    }

    /// `jpeg` decoded upright, shrunk to `max_side` on its long side and encoded again; `None`
    /// when it is small enough already or does not decode (then the original goes as it is:
    /// the server's decoder may be more lenient).
    #[cfg(feature = "render")]
    fn downscaled(jpeg: &[u8], max_side: u32) -> Option<Vec<u8>> {
        use memdb_formats::import::photo::{PhotoLimits, decode_rgb};

        use crate::scrapbook::Canvas;

        let photo = decode_rgb(jpeg, PhotoLimits::default()).ok()?;
        let long = photo.width.max(photo.height);
        if long <= max_side.max(1) {
            return None;
        }
        let scale = f64::from(max_side.max(1)) / f64::from(long);
        let w = (f64::from(photo.width) * scale).round().max(1.0) as u32;
        let h = (f64::from(photo.height) * scale).round().max(1.0) as u32;
        let canvas = Canvas::from_rgb(photo.width, photo.height, photo.rgb).ok()?;
        canvas.resized(w, h).ok()?.encode_jpeg(90).ok()
    }

    impl Captioner for VisionCaptioner {
        fn model(&self) -> &str {
            &self.model
        }

        fn caption(&self, image: &[u8]) -> Result<CaptionFields, CaptionError> {
            let (bytes, media) = self.prepared(image)?;
            let data_url = format!(
                "data:{media};base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&bytes)
            );
            let request = json!({
                "model": self.model,
                "temperature": 0.0,
                "max_tokens": self.options.max_tokens,
                "messages": [{
                    "role": "user",
                    "content": [
                        {"type": "text", "text": CAPTION_PROMPT},
                        {"type": "image_url", "image_url": {"url": data_url}},
                    ],
                }],
            });
            let content = self.chat.complete(&request)?;
            parse_caption_reply(&content).map_err(|source| CaptionError::Reply {
                model: self.model.clone(),
                source,
            })
        }
    }
}

#[cfg(all(test, feature = "llm"))]
mod tests;
