//! `memdb pages`, `memdb forget` and `memdb show page`: composing scrapbook pages, forgetting
//! by a policy, and writing a page out as JPEG.

use crate::error::{CliError, Result};
use std::path::{Path, PathBuf};

use memdb::forget::{ForgetOptions, ForgetReport, OriginalDrop, Policy};
use memdb::scrapbook::PageOptions;
use serde_json::{Value, json};

use crate::output::Out;

/// Page options from the command line.
pub(crate) fn page_options(quality: u8, no_salient: bool) -> Result<PageOptions> {
    if !(1..=100).contains(&quality) {
        return Err(CliError::flag(
            "--quality",
            format!("{quality} is not in 1..=100"),
        ));
    }
    Ok(PageOptions {
        quality,
        salient_facts: !no_salient,
    })
}

pub(crate) fn compose(dir: &Path, options: PageOptions, out: &Out) -> Result<()> {
    let store = crate::open::open_store(dir)?;
    // The ingest's page stage alone: no new items, nothing embedded.
    let mut stages = crate::progress::Stages::new(!out.json);
    let ingest = memdb::IngestOptions {
        embed: false,
        graph: None,
        pages: memdb::ingest::PageStage::All,
        page_options: options,
        ..memdb::IngestOptions::default()
    };
    let report = store
        .ingest(ingest)
        .and_then(|i| i.finish(None, &mut |s, d, t| stages.report(s, d, t)))?
        .pages
        .unwrap_or_default();
    stages.finish();
    let errors: Vec<Value> = report
        .photo_errors
        .iter()
        .map(|(item, why)| json!({"item": item, "error": why}))
        .collect();
    out.emit(
        json!({
            "days": report.days, "photo_pages": report.photo_pages, "text_pages": report.text_pages,
            "unchanged": report.unchanged, "kept_forgotten": report.kept_forgotten,
            "removed": report.removed, "bytes_written": report.bytes_written, "photo_errors": errors,
            "photos_partial": report.photos_partial.iter().map(|(item, why)| json!({"item": item, "damage": why})).collect::<Vec<_>>(),
        }),
        || {
            let mut text = format!(
                "{} days: {} pages with photos ({} bytes), {} text-only (rendered on demand), {} unchanged, {} forgotten pages kept, {} removed",
                report.days,
                report.photo_pages,
                report.bytes_written,
                report.text_pages,
                report.unchanged,
                report.kept_forgotten,
                report.removed
            );
            for (item, why) in &report.photos_partial {
                text.push_str(&format!(
                    "\nphoto of item {item} drawn as far as its damaged original decodes: {why}"
                ));
            }
            for (item, why) in &report.photo_errors {
                text.push_str(&format!("\nphoto of item {item} not drawn: {why}"));
            }
            text
        },
    );
    Ok(())
}

/// A built-in policy by name, or a TOML file.
pub(crate) fn load_policy(spec: &str) -> Result<Policy> {
    if spec.ends_with(".toml") || Path::new(spec).is_file() {
        let text = std::fs::read_to_string(spec).map_err(|e| CliError::io("read", spec, e))?;
        return Policy::from_toml(&text).map_err(|source| CliError::Policy {
            spec: spec.to_owned(),
            source,
        });
    }
    Policy::builtin(spec).map_err(|source| CliError::Policy {
        spec: spec.to_owned(),
        source,
    })
}

fn forget_text(r: &ForgetReport) -> String {
    let block = memdb_query::forget_block(r);
    let mut t = crate::output::table(&block.header.iter().map(String::as_str).collect::<Vec<_>>());
    for row in block.rows {
        t.add_row(row);
    }
    let tail = if r.dry_run {
        String::new()
    } else {
        format!(
            "\n{} pages composed first; store {} → {} bytes",
            r.pages_composed, r.store_bytes_before, r.store_bytes_after
        )
    };
    format!("{}\n{t}{tail}", block.title.unwrap_or_default())
}

/// The originals a run drops (or would), one line each.
fn originals_text(originals: &[OriginalDrop]) -> String {
    let mut text = String::new();
    for o in originals {
        text.push_str(&format!(
            "\n  item {} {} (page {}, stage {}): {} bytes",
            o.item,
            o.external_id.as_deref().unwrap_or("-"),
            o.day,
            o.stage,
            o.bytes
        ));
    }
    text
}

/// How `memdb forget` may drop photo originals.
pub(crate) enum Consent {
    /// `--yes`: drop what the policy drops.
    Given,
    /// Ask on the terminal when a run would drop any (refuse when there is no terminal).
    Ask,
}

pub(crate) fn forget(
    dir: &Path,
    policy: &str,
    as_of: &str,
    dry_run: bool,
    consent: Consent,
    pages: PageOptions,
    out: &Out,
) -> Result<()> {
    let policy = load_policy(policy)?;
    let as_of: jiff::civil::Date = as_of.parse().map_err(|e| {
        CliError::flag(
            format!("--as-of {as_of}"),
            format!("not a YYYY-MM-DD date ({e})"),
        )
    })?;
    let mut store = crate::open::open_store(dir)?;
    let mut drop_originals = matches!(consent, Consent::Given);
    let mut report = loop {
        let mut progress = crate::progress::bar(0, "re-encoding pages", !out.json);
        let run = store.forget(
            &policy,
            as_of,
            ForgetOptions {
                dry_run,
                drop_originals,
                pages,
                progress: &mut |done, total| {
                    progress.set_length(total);
                    progress.set_position(done);
                },
            },
        );
        progress.finish_and_clear();
        match run {
            Ok(report) => break report,
            Err(memdb::Error::OriginalsNeedConsent {
                count,
                bytes,
                originals,
            }) => {
                let question = format!(
                    "policy `{}` as of {as_of} drops {count} photo original(s), {bytes} bytes \
                     (each item keeps a record that its original was dropped):{}",
                    policy.name,
                    originals_text(&originals)
                );
                if !crate::progress::confirm(&format!("{question}\nDrop them?")) {
                    return Err(CliError::Declined(format!(
                        "nothing forgotten: this run would drop {count} photo original(s) ({bytes} bytes); \
                         list them with --dry-run, keep them with a policy whose stages keep originals, \
                         or consent with --yes"
                    )));
                }
                drop_originals = true;
            }
            Err(e) => return Err(e.into()),
        }
    };
    if !dry_run {
        // Forgetting frees catalog pages (page rows, faded graph rows); give them back.
        store.shrink_catalog()?;
        report.store_bytes_after = store.stats()?.total_bytes();
    }
    out.emit(memdb_query::forget_json(&report), || {
        let mut text = forget_text(&report);
        if !report.originals.is_empty() {
            text.push_str(&format!(
                "\n{} photo original(s) {}:{}",
                report.originals.len(),
                if report.dry_run {
                    "would be dropped (a real run asks first, or takes --yes)"
                } else {
                    "dropped"
                },
                originals_text(&report.originals)
            ));
        }
        text
    });
    Ok(())
}

pub(crate) fn show_page(dir: &Path, day: &str, to: Option<PathBuf>, out: &Out) -> Result<()> {
    let store = crate::open::open_for_reading(dir)?;
    let snapshot = store.snapshot()?;
    let page = snapshot.page(day)?.ok_or_else(|| CliError::NoPage {
        day: day.to_string(),
    })?;
    let mut written = Vec::new();
    if let Some(to) = &to {
        let rendered = store.render_page(day)?.unwrap_or_default();
        for (index, why) in &rendered.damaged {
            eprintln!(
                "memdb: warning: part {} of page {day} is damaged ({why}); it is shown grey (run `memdb repair`)",
                index + 1
            );
        }
        for (i, bytes) in rendered.parts.iter().enumerate() {
            let path = if i == 0 {
                to.clone()
            } else {
                let stem = to.file_stem().and_then(|s| s.to_str()).unwrap_or("page");
                to.with_file_name(format!("{stem}-{}.jpg", i + 1))
            };
            // Owner-only, like the store: a page shows a person's private day.
            crate::export::write_private(&path, bytes)?;
            written.push(path.display().to_string());
        }
    }
    let blocks: Vec<Value> = page
        .layout
        .blocks
        .iter()
        .map(|b| {
            json!({
                "item": b.item,
                "kind": match b.kind { memdb::scrapbook::BlockKind::Photo => "photo", memdb::scrapbook::BlockKind::Text => "text" },
                "rect": b.rect, "text_px": b.text_px,
                "nodes": b.nodes.iter().map(|(n, px)| json!({"node": n, "px": px})).collect::<Vec<_>>(),
            })
        })
        .collect();
    out.emit(
        json!({
            "day": page.day, "stage": page.stage, "quality": page.quality, "scale": page.scale,
            "parts": page.parts, "stored_bytes": page.stored_bytes,
            "width": page.layout.width, "height": page.layout.height, "blocks": blocks,
            "written": written,
        }),
        || {
            let photos = page
                .layout
                .blocks
                .iter()
                .filter(|b| b.kind == memdb::scrapbook::BlockKind::Photo)
                .count();
            let mut text = format!(
                "page {}: stage {}, JPEG quality {}, scale {:.2}, {}×{} px at scale 1, {} photos, {} items, {}",
                page.day,
                page.stage,
                page.quality,
                page.scale,
                page.layout.width,
                page.layout.height,
                photos,
                page.layout.items().len(),
                if page.parts.is_empty() {
                    "rendered on demand".to_owned()
                } else {
                    format!("{} bytes in {} part(s)", page.stored_bytes, page.parts.len())
                }
            );
            for path in &written {
                text.push_str(&format!("\nwrote {path}"));
            }
            text
        },
    );
    Ok(())
}
