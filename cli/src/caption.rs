//! `memdb caption`: the captioner stage over a store, through a local vision model server
//! (`memdb::caption::VisionCaptioner`). Photos captioned before are never sent again; a photo the
//! model fails on is listed with its reason and stays as it was.

use std::time::{Duration, Instant};

use memdb::{
    IngestOptions, Store, caption::CaptionReport, caption::VisionCaptioner, caption::VisionOptions,
    ingest::PageStage,
};
use serde_json::{Value, json};

use crate::error::{CliError, Result};

/// What `memdb caption` did.
pub(crate) struct CaptionSummary {
    report: CaptionReport,
    model: String,
    seconds: f64,
}

impl CaptionSummary {
    pub(crate) fn json(&self) -> Value {
        json!({
            "model": self.model,
            "captioned": self.report.captioned,
            "already": self.report.already,
            "no_original": self.report.no_original,
            "failed": self.report.failed.iter().map(|f| json!({
                "id": f.id,
                "external_id": f.external_id,
                "error": f.error.to_string(),
            })).collect::<Vec<_>>(),
            "seconds": self.seconds,
        })
    }

    pub(crate) fn text(&self) -> String {
        let r = &self.report;
        let mut text = format!(
            "captioned {} photo(s) with {} in {:.1} s ({} captioned before, {} without an original, {} failed)",
            r.captioned,
            self.model,
            self.seconds,
            r.already,
            r.no_original,
            r.failed.len()
        );
        for f in &r.failed {
            let name = f.external_id.as_deref().unwrap_or("-");
            text.push_str(&format!("\n  item {} {name}: {}", f.id, f.error));
        }
        if r.captioned > 0 {
            text.push_str("\nrun `memdb embed` to index the captions (recall and pages)");
        }
        text
    }

    /// Whether the run failed on every photo it tried (the server is likely down or wrong).
    pub(crate) fn all_failed(&self) -> bool {
        self.report.captioned == 0 && !self.report.failed.is_empty()
    }
}

/// Captions the store's uncaptioned photos with `model` at `endpoint`.
pub(crate) fn caption(
    store: &Store,
    endpoint: &str,
    model: &str,
    timeout_secs: u64,
    progress: bool,
) -> Result<CaptionSummary> {
    let captioner = VisionCaptioner::new(
        endpoint,
        model,
        VisionOptions {
            timeout: Duration::from_secs(timeout_secs.max(1)),
            ..VisionOptions::default()
        },
    )
    .map_err(|e| CliError::flag("--endpoint", e))?;
    let started = Instant::now();
    let mut stages = crate::progress::Stages::new(progress);
    let options = IngestOptions {
        captioner: Some(std::sync::Arc::new(captioner)),
        embed: false,
        graph: None,
        pages: PageStage::Skip,
        ..IngestOptions::default()
    };
    let report = store
        .ingest(options)
        .and_then(|ingest| ingest.finish(None, &mut |s, d, t| stages.report(s, d, t)))?;
    stages.finish();
    Ok(CaptionSummary {
        report: report.captions.unwrap_or_default(),
        model: model.to_owned(),
        seconds: started.elapsed().as_secs_f64(),
    })
}
