//! The photo and mail importers on the real corpora of ../shared/data (photos: 329 JPEGs with
//! 88 broken ones; mail: 2,926 files incl. 57 malformed ones), compared with the reference
//! values of each folder's MANIFEST.tsv (another parser's reading, not ground truth: where we
//! differ the test says so by count, and the counts are pinned).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use memdb_formats::import::mail;
use memdb_formats::import::photo::{self, PhotoLimits};
use memdb_formats::item::EventTime;

fn data_dir(kind: &str) -> Option<PathBuf> {
    let shared = std::env::var_os("MEMDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let dir = shared.join("data").join(kind);
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but {} is missing",
        dir.display()
    );
    eprintln!(
        "\n*** SKIPPED: {} not found (set MEMDB_SHARED_DIR) ***\n",
        dir.display()
    );
    None
}

/// MANIFEST.tsv rows keyed by file, as column name → value.
fn manifest(dir: &Path) -> HashMap<String, HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|line| {
            let row: HashMap<String, String> = header
                .iter()
                .zip(line.split('\t'))
                .map(|(k, v)| ((*k).to_owned(), v.to_owned()))
                .collect();
            (row["file"].clone(), row)
        })
        .collect()
}

#[test]
fn photos_import_with_exif_or_are_reported() {
    let Some(dir) = data_dir("photos") else {
        return;
    };
    let rows = manifest(&dir);
    let file_time = EventTime::parse("2026-01-01T00:00:00Z").unwrap();
    let (mut ok, mut broken_ok, mut good_refused) = (0, Vec::new(), Vec::new());
    let (mut dates_checked, mut date_mismatch) = (0, Vec::new());
    let (mut gps_checked, mut gps_mismatch) = (0, Vec::new());
    for (name, row) in &rows {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let result = photo::parse(name, &bytes, Some(file_time), PhotoLimits::default());
        let broken = row["category"] == "broken";
        match result {
            Err(e) => {
                if !broken {
                    good_refused.push(format!("{name}: {e}"));
                }
            }
            Ok(p) => {
                ok += 1;
                if broken {
                    broken_ok.push(name.clone());
                    continue;
                }
                assert_eq!(p.width.to_string(), row["width"], "{name}");
                assert_eq!(p.height.to_string(), row["height"], "{name}");
                let f = &p.draft.fields;
                // The manifest's date is the local EXIF DateTimeOriginal, `YYYY:MM:DD HH:MM:SS`.
                let want = row["datetime_original"].trim().to_owned();
                if want.len() >= 19
                    && want.as_bytes()[0].is_ascii_digit()
                    && !want.starts_with("0000")
                {
                    dates_checked += 1;
                    let local = f.time.to_rfc3339()[..19]
                        .replacen('-', ":", 2)
                        .replace('T', " ");
                    if local != want[..19] {
                        date_mismatch.push(format!("{name}: {local} vs {want}"));
                    }
                }
                if let (Ok(lat), Ok(lon)) =
                    (row["gps_lat"].parse::<f64>(), row["gps_lon"].parse::<f64>())
                {
                    gps_checked += 1;
                    let geo = f.location.as_ref().and_then(|l| l.geo);
                    if !geo
                        .is_some_and(|g| (g.lat - lat).abs() < 1e-4 && (g.lon - lon).abs() < 1e-4)
                    {
                        gps_mismatch.push(format!("{name}: {geo:?} vs {lat},{lon}"));
                    }
                }
                let orientation: u8 = row["orientation"].parse().unwrap_or(0);
                if (1..=8).contains(&orientation) {
                    assert_eq!(p.orientation, orientation, "{name}");
                }
            }
        }
    }
    eprintln!(
        "photos: {} files, {ok} imported; broken ones that decoded: {broken_ok:?}; good ones refused: {good_refused:?}; dates checked {dates_checked}, differing {date_mismatch:?}; gps checked {gps_checked}, differing {gps_mismatch:?}",
        rows.len()
    );
    assert_eq!(rows.len(), 329);
    // Pillow's verdict differs on a few fuzzed ImageTestSuite files (and on
    // exif-samples/corrupted.jpg, which Pillow decodes): pinned, so any change shows.
    assert!(good_refused.len() <= 6, "{good_refused:#?}");
    assert!(date_mismatch.is_empty(), "{date_mismatch:#?}");
    assert!(gps_mismatch.is_empty(), "{gps_mismatch:#?}");
    assert!(
        dates_checked >= 140 && gps_checked >= 20,
        "{dates_checked} {gps_checked}"
    );
    // zune-jpeg decodes some fuzzed files Pillow gives up on; pinned so a change shows.
    assert!(broken_ok.len() <= 7, "{broken_ok:?}");
    assert!(ok >= 240, "{ok} imported");
}

#[test]
fn mail_imports_every_readable_message_and_reports_the_rest() {
    let Some(dir) = data_dir("mail") else { return };
    let rows = manifest(&dir);
    let file_time = EventTime::parse("2026-01-01T00:00:00Z").unwrap();
    let (mut items, mut errors) = (0usize, Vec::new());
    let mut subject_mismatch = Vec::new();
    let mut by_kind: HashMap<String, (usize, usize)> = HashMap::new();
    for (name, row) in &rows {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let report = if name.ends_with(".mbox") {
            mail::parse_mbox(Path::new(name), name, &bytes, Some(file_time))
        } else {
            mail::parse_eml(Path::new(name), name, &bytes, Some(file_time))
        };
        let entry = by_kind.entry(row["kind"].clone()).or_default();
        entry.0 += report.items.len();
        entry.1 += report.errors.len();
        items += report.items.len();
        for e in &report.errors {
            errors.push(e.to_string());
        }
        if row["kind"] == "enron" {
            let f = &report.items[0].draft.fields;
            if f.summary.as_deref().unwrap_or("") != row["subject"].trim() {
                subject_mismatch.push(format!("{name}: {:?} vs {:?}", f.summary, row["subject"]));
            }
            assert!(f.body.is_some(), "{name}: no body");
            assert!(f.from.is_some(), "{name}: no sender");
        }
        for item in &report.items {
            item.draft.fields.validate().unwrap();
        }
    }
    eprintln!(
        "mail: {items} items, {} errors, by kind {by_kind:?}",
        errors.len()
    );
    for e in errors.iter().take(80) {
        eprintln!("  {e}");
    }
    // Every Enron message imports (2,685 files, all with dates); so does every test-suite
    // message (those without a usable Date take the file time); the mbox files hold 39.
    assert_eq!(by_kind["enron"], (2685, 0));
    assert_eq!(by_kind["testsuite"].1, 0, "{errors:#?}");
    assert_eq!(by_kind["mbox"].0 + by_kind["mbox"].1, 39);
    // What is refused is refused for having no header at all.
    assert!(
        errors.iter().all(|e| e.contains("no headers")),
        "{errors:#?}"
    );
    assert!(subject_mismatch.len() <= 5, "{subject_mismatch:#?}");
    // Every error names its file and says why.
    assert!(
        errors
            .iter()
            .all(|e| e.contains(".eml") || e.contains(".mbox"))
    );
}

/// `decode_rgb` turns every EXIF orientation upright: the eight stored variants of the same
/// landscape and portrait picture decode to (nearly) the same pixels as the untransformed one.
#[test]
fn decode_rgb_applies_all_eight_exif_orientations() {
    let Some(photos) = data_dir("photos") else {
        return;
    };
    let dir = photos.join("exif-orientation-examples");
    for shape in ["Landscape", "Portrait"] {
        let read = |k: u32| {
            let bytes = std::fs::read(dir.join(format!("{shape}_{k}.jpg"))).unwrap();
            photo::decode_rgb(&bytes, PhotoLimits::default()).unwrap()
        };
        let upright = read(1);
        for k in 2..=8 {
            let image = read(k);
            assert_eq!(
                (image.width, image.height),
                (upright.width, upright.height),
                "{shape}_{k}"
            );
            let diff: u64 = image
                .rgb
                .iter()
                .zip(&upright.rgb)
                .map(|(a, b)| u64::from(a.abs_diff(*b)))
                .sum();
            let mean = diff as f64 / image.rgb.len() as f64;
            assert!(mean < 8.0, "{shape}_{k}: mean difference {mean:.1}");
        }
    }
}
