//! The photo and mail importers on the real corpora of ../shared/data (photos: 329 JPEGs with
//! 88 broken ones; mail: 2,926 files incl. 57 malformed ones), compared with the reference
//! values of each folder's MANIFEST.tsv (another parser's reading, not ground truth: where we
//! differ the test says so by count, and the counts are pinned). Every broken photo is kept
//! with a damage warning or refused with a typed reason; none panics.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use memdb_formats::ImportErrorKind;
use memdb_formats::import::mail;
use memdb_formats::import::photo::{self, PhotoLimits};
use memdb_formats::item::Orientation;

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

/// What `photo::parse` made of one file, for counting.
fn verdict(result: &Result<photo::Photo, ImportErrorKind>) -> String {
    match result {
        Ok(p) if p.damage.is_none() => "imported".to_owned(),
        Ok(_) => "kept damaged".to_owned(),
        Err(ImportErrorKind::Unsupported { found, .. }) => format!("refused: {found}"),
        Err(ImportErrorKind::Syntax(m)) if m.starts_with("JPEG header does not parse") => {
            "refused: JPEG header does not parse".to_owned()
        }
        Err(ImportErrorKind::InvalidField { field, .. }) if field == "pixels" => {
            "refused: over the pixel limit".to_owned()
        }
        Err(other) => format!("refused otherwise: {other}"),
    }
}

#[test]
fn photos_import_or_are_kept_damaged_or_refused_with_a_reason() {
    let Some(dir) = data_dir("photos") else {
        return;
    };
    let rows = manifest(&dir);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    let mut broken_intact = Vec::new();
    let mut good_refused = Vec::new();
    let (mut dates_checked, mut date_mismatch) = (0, Vec::new());
    let (mut gps_checked, mut gps_mismatch) = (0, Vec::new());
    let (mut cameras_checked, mut camera_mismatch) = (0, Vec::new());
    for (name, row) in &rows {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let result = photo::parse(name, &bytes, PhotoLimits::default());
        let verdict = verdict(&result);
        *counts.entry(verdict.clone()).or_default() += 1;
        assert!(
            !verdict.starts_with("refused otherwise"),
            "{name}: {verdict}"
        );
        let broken = row["category"] == "broken";
        let Ok(p) = result else {
            if !broken {
                good_refused.push(format!("{name}: {verdict}"));
            }
            continue;
        };
        if broken && p.damage.is_none() {
            broken_intact.push(name.clone());
        }
        // Named by content, tagged with the file's base name, damage tagged.
        let f = &p.draft.fields;
        assert_eq!(
            f.external_id.as_deref(),
            Some(format!("sha256:{}", row["sha256"]).as_str()),
            "{name}"
        );
        let base = name.rsplit('/').next().unwrap();
        assert_eq!(
            f.tags[..2],
            ["photo".to_owned(), format!("file:{base}")],
            "{name}"
        );
        assert_eq!(
            f.tags.contains(&photo::DAMAGED_TAG.to_owned()),
            p.damage.is_some()
        );
        if row["width"].is_empty() {
            continue;
        }
        assert_eq!(p.width.to_string(), row["width"], "{name}");
        assert_eq!(p.height.to_string(), row["height"], "{name}");
        // The manifest's date is the local EXIF DateTimeOriginal, `YYYY:MM:DD HH:MM:SS`.
        let want = row["datetime_original"].trim().to_owned();
        if want.len() >= 19 && want.as_bytes()[0].is_ascii_digit() && !want.starts_with("0000") {
            dates_checked += 1;
            let local = f.time.to_rfc3339();
            let local = local
                .get(..19)
                .unwrap_or(&local)
                .replacen('-', ":", 2)
                .replace('T', " ");
            if local != want[..19] {
                date_mismatch.push(format!("{name}: {local} vs {want}"));
            }
        }
        if let (Ok(lat), Ok(lon)) = (row["gps_lat"].parse::<f64>(), row["gps_lon"].parse::<f64>()) {
            gps_checked += 1;
            let geo = f.location.as_ref().and_then(|l| l.geo);
            if !geo.is_some_and(|g| (g.lat - lat).abs() < 1e-4 && (g.lon - lon).abs() < 1e-4) {
                gps_mismatch.push(format!("{name}: {geo:?} vs {lat},{lon}"));
            }
        }
        let orientation: u8 = row["orientation"].parse().unwrap_or(0);
        if (1..=8).contains(&orientation) {
            assert_eq!(p.orientation, orientation, "{name}");
        }
        // Make and model as ExifRead read them (the manifest), kept apart.
        let camera = f.camera.clone().unwrap_or_default();
        for (column, got) in [("make", &camera.make), ("model", &camera.model)] {
            let want = row[column].trim();
            if !want.is_empty() {
                cameras_checked += 1;
                if got.as_deref() != Some(want) {
                    camera_mismatch.push(format!("{name}: {column} {got:?} vs {want:?}"));
                }
            }
        }
    }
    eprintln!(
        "photos: {} files: {counts:#?}\nbroken (per Pillow) that decode whole: {broken_intact:?}\ngood ones refused: {good_refused:?}\ndates checked {dates_checked}, differing {date_mismatch:?}; gps checked {gps_checked}, differing {gps_mismatch:?}",
        rows.len()
    );
    assert_eq!(rows.len(), 329);
    // Pinned from a run (see the eprintln above), so that any change shows.
    let count = |k: &str| counts.get(k).copied().unwrap_or(0);
    assert_eq!(count("imported"), EXPECT_IMPORTED, "{counts:#?}");
    assert_eq!(count("kept damaged"), EXPECT_DAMAGED, "{counts:#?}");
    assert_eq!(
        count("refused: JPEG header does not parse"),
        EXPECT_BAD_HEADER,
        "{counts:#?}"
    );
    assert_eq!(count("refused: not an image"), 1, "{counts:#?}");
    // The one photo Pillow reads that is refused: a fuzzed file whose Adobe APP14 segment
    // names colour transform 199 (libjpeg ignores it; zune-jpeg's header parser refuses it).
    assert_eq!(
        good_refused,
        [
            "metadata-extractor-images/ImageTestSuite/5482a54657765056f1a94116a8dbffe7.jpg: refused: JPEG header does not parse"
        ]
    );
    assert!(date_mismatch.is_empty(), "{date_mismatch:#?}");
    assert!(gps_mismatch.is_empty(), "{gps_mismatch:#?}");
    assert!(camera_mismatch.is_empty(), "{camera_mismatch:#?}");
    assert!(
        dates_checked >= 150 && gps_checked >= 20 && cameras_checked >= 300,
        "{dates_checked} {gps_checked} {cameras_checked}"
    );
    // zune-jpeg decodes one fuzzed file whole that Pillow gives up on.
    assert_eq!(
        broken_intact,
        ["metadata-extractor-images/ImageTestSuite/b0b8914cc5f7a6eff409f16d8cc236c5.jpg"]
    );
}

const EXPECT_IMPORTED: usize = 236;
const EXPECT_DAMAGED: usize = 52;
const EXPECT_BAD_HEADER: usize = 40;

/// The camera photo with a corrupt stretch ("Unknown marker in bit stream") and a
/// truncated 4K phone photo are kept, with their EXIF, and show the part that decodes.
#[test]
fn damaged_camera_photos_are_kept_with_their_metadata_and_partial_pixels() {
    let Some(dir) = data_dir("photos") else {
        return;
    };
    for (name, time, camera, cut) in [
        (
            "exif-samples/corrupted.jpg",
            "2015-09-08T11:02:17",
            true,
            "Unknown marker",
        ),
        (
            "metadata-extractor-images/User_Comment_Encoding.jpg",
            "2016-05-30T14:20:55",
            true,
            "Exhausted data",
        ),
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let p = photo::parse(name, &bytes, PhotoLimits::default()).unwrap();
        let damage = p.damage.as_deref().expect("damage reported");
        assert!(damage.contains(cut), "{name}: {damage}");
        let f = &p.draft.fields;
        assert!(
            f.time.to_rfc3339().starts_with(time),
            "{name}: {}",
            f.time.to_rfc3339()
        );
        assert_eq!(f.camera.is_some(), camera, "{name}: {:?}", f.camera);
        assert!(f.tags.contains(&photo::DAMAGED_TAG.to_owned()));

        let image = photo::decode_rgb(&bytes, PhotoLimits::default()).unwrap();
        assert!(
            image.damage.as_deref().is_some_and(|d| d.contains(cut)),
            "{name}"
        );
        let (w, h) = (image.width as usize, image.height as usize);
        assert_eq!(image.rgb.len(), w * h * 3);
        let grey_row = |y: usize| {
            image.rgb[y * w * 3..(y + 1) * w * 3]
                .iter()
                .all(|&b| b == 128)
        };
        assert!(!grey_row(0), "{name}: the first row decodes");
        if name.ends_with("corrupted.jpg") {
            assert!(
                grey_row(h - 1),
                "{name}: the rows after the damage are grey"
            );
        }
    }
}

/// `decode_rgb` accepts exactly what `parse` accepts, returns a full-size image, and agrees on
/// damage, on every fuzzed file of the corpus (98 small JPEGs, most of them broken).
#[test]
fn decode_rgb_and_parse_agree_on_the_fuzzed_files() {
    let Some(dir) = data_dir("photos") else {
        return;
    };
    let suite = dir.join("metadata-extractor-images/ImageTestSuite");
    let mut seen = 0;
    for entry in std::fs::read_dir(&suite).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let parsed = photo::parse("x.jpg", &bytes, PhotoLimits::default());
        let decoded = photo::decode_rgb(&bytes, PhotoLimits::default());
        match (&parsed, &decoded) {
            (Ok(p), Ok(image)) => {
                assert_eq!(
                    u64::from(image.width) * u64::from(image.height),
                    u64::from(p.width) * u64::from(p.height),
                    "{}",
                    path.display()
                );
                assert_eq!(image.rgb.len(), (image.width * image.height * 3) as usize);
                assert_eq!(
                    p.damage.is_some(),
                    image.damage.is_some(),
                    "{}",
                    path.display()
                );
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!(
                "{}: {parsed:?} vs {:?}",
                path.display(),
                decoded.map(|i| i.damage)
            ),
        }
        seen += 1;
    }
    assert_eq!(seen, 98);
}

/// immich's date test files: the date only in XMP (as exif:GPSTimeStamp), only a time in IPTC
/// (no date: undated), and conflicting dates where EXIF DateTimeOriginal wins.
#[test]
fn immich_date_files_take_the_best_source() {
    let Some(dir) = data_dir("photos") else {
        return;
    };
    let dates = dir.join("immich-test-assets/metadata/dates");
    let time = |file: &str| {
        let p = photo::parse(
            file,
            &std::fs::read(dates.join(file)).unwrap(),
            PhotoLimits::default(),
        )
        .unwrap();
        let f = p.draft.fields;
        let source: Vec<String> = f
            .tags
            .into_iter()
            .filter(|t| t.starts_with("time:"))
            .collect();
        (f.time.to_rfc3339(), source)
    };
    assert_eq!(
        time("gps-datetime.jpg"),
        ("2023-11-15T12:30:00+00:00".into(), vec!["time:xmp".into()])
    );
    assert_eq!(time("time-created.jpg"), ("undated".into(), vec![]));
    assert_eq!(
        time("date-priority-test.jpg"),
        ("2023-02-02T02:00:00+00:00".into(), vec![])
    );
    assert_eq!(
        time("datetimeoriginal-gps.jpg"),
        ("2025-12-01T11:30:00+00:00".into(), vec![])
    );
}

#[test]
fn mail_imports_every_readable_message_and_reports_the_rest() {
    let Some(dir) = data_dir("mail") else { return };
    let rows = manifest(&dir);
    let (mut items, mut errors) = (0usize, Vec::new());
    let mut subject_mismatch = Vec::new();
    let mut by_kind: HashMap<String, (usize, usize)> = HashMap::new();
    let (mut undated, mut by_time_tag) = (0, HashMap::<String, usize>::new());
    for (name, row) in &rows {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let report = if name.ends_with(".mbox") {
            mail::parse_mbox(Path::new(name), name, &bytes)
        } else {
            mail::parse_eml(Path::new(name), name, &bytes)
        };
        // Telling an mbox by its content finds the same messages.
        assert_eq!(
            mail::parse(Path::new(name), name, &bytes).items.len(),
            report.items.len(),
            "{name}"
        );
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
            let f = &item.draft.fields;
            f.validate().unwrap();
            undated += usize::from(f.time.is_undated());
            for tag in f.tags.iter().filter(|t| t.starts_with("time:")) {
                *by_time_tag.entry(tag.clone()).or_default() += 1;
            }
        }
    }
    eprintln!(
        "mail: {items} items, {} errors, by kind {by_kind:?}, undated {undated}, fallback times {by_time_tag:?}",
        errors.len()
    );
    for e in errors.iter().take(80) {
        eprintln!("  {e}");
    }
    // Every Enron message imports (2,685 files, all with dates); so does every test-suite
    // message, and every malformed one (undated where its Date is unusable).
    assert_eq!(by_kind["enron"], (2685, 0));
    assert_eq!(by_kind["testsuite"], (180, 0), "{errors:#?}");
    // The README counts 39 mbox messages by splitting at every `From ` line; two of them are
    // unquoted body lines of unmunged.mbox (`From Russia with love`), which stay in their
    // messages here, and that file's first message hides behind a byte order mark (it was lost
    // before, and one body fragment imported as a message instead).
    assert_eq!(by_kind["mbox"], (EXPECT_MBOX_ITEMS, 0));
    assert_eq!(
        by_kind["malformed"].0, EXPECT_MALFORMED_ITEMS,
        "{errors:#?}"
    );
    assert_eq!(
        items,
        2685 + 180 + EXPECT_MBOX_ITEMS + EXPECT_MALFORMED_ITEMS
    );
    // Before this importer checked for a header block, 2,960 items came from these files; as
    // many do now, and nothing is refused.
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(undated, EXPECT_UNDATED);
    assert!(subject_mismatch.len() <= 5, "{subject_mismatch:#?}");
}

const EXPECT_MBOX_ITEMS: usize = 38;
const EXPECT_MALFORMED_ITEMS: usize = 57;
const EXPECT_UNDATED: usize = 52;

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

/// The orientation kept in the item is the one the picture is shown in: the example files are
/// named by what a viewer shows (Landscape_6 is stored 1200×1800 and tagged "rotate 90"), so
/// every `Landscape_k` is landscape and every `Portrait_k` portrait, whatever its stored size.
#[test]
fn the_stored_orientation_is_the_shown_one() {
    let Some(photos) = data_dir("photos") else {
        return;
    };
    let dir = photos.join("exif-orientation-examples");
    for (shape, want) in [
        ("Landscape", Orientation::Landscape),
        ("Portrait", Orientation::Portrait),
    ] {
        for k in 0..=8 {
            let name = format!("{shape}_{k}.jpg");
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            let p = photo::parse(&name, &bytes, PhotoLimits::default()).unwrap();
            assert_eq!(p.draft.fields.orientation, Some(want), "{name}");
        }
    }
}

/// GPS tags that hold exactly (0, 0) are an empty GPS block, not a position: no location. The
/// files are found by reading their EXIF here with the same library, not named by hand.
#[test]
fn a_zero_gps_position_is_no_fix() {
    let Some(dir) = data_dir("photos") else {
        return;
    };
    let mut zero = Vec::new();
    for (name, _) in manifest(&dir) {
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        let Ok(exif) = exif::Reader::new()
            .continue_on_error(true)
            .read_from_container(&mut std::io::Cursor::new(&bytes))
            .or_else(|e| e.distill_partial_result(|_| {}))
        else {
            continue;
        };
        let is_zero = |tag| {
            exif.get_field(tag, exif::In::PRIMARY)
                .is_some_and(|f| match &f.value {
                    exif::Value::Rational(v) => !v.is_empty() && v.iter().all(|r| r.num == 0),
                    _ => false,
                })
        };
        if is_zero(exif::Tag::GPSLatitude) && is_zero(exif::Tag::GPSLongitude) {
            let Ok(p) = photo::parse(&name, &bytes, PhotoLimits::default()) else {
                continue;
            };
            assert_eq!(p.draft.fields.location, None, "{name}");
            zero.push(name);
        }
    }
    assert!(
        !zero.is_empty(),
        "no photo of the corpus has a (0, 0) GPS block"
    );
    eprintln!("photos with a (0, 0) GPS block: {zero:?}");
}
