//! `nearest` against an independent computation: a brute-force haversine scan of the whole
//! table, for random points (uniform on the sphere, near the antimeridian, near the poles, next
//! to towns) and for the GPS point of every shared photo that has one; and no panic on any
//! input.
//!
//! The photos are read from the shared folder (`MEMDB_SHARED_DIR`, else `<repo>/../shared`);
//! when it is absent the photo test fails under `CI` and prints a loud SKIPPED otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;
use std::path::{Path, PathBuf};

use exif::{In, Tag, Value};
use memdb_geo::{GeoError, Place, haversine_km, lookup, nearest, places, places_in_text};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The nearest place by scanning every place, and its distance.
fn brute_force(lat: f64, lon: f64) -> (&'static Place, f64) {
    let mut best: Option<(&'static Place, f64)> = None;
    for p in places().unwrap() {
        let d = haversine_km(lat, lon, p.lat(), p.lon());
        if best.is_none_or(|(_, b)| d < b) {
            best = Some((p, d));
        }
    }
    best.unwrap()
}

/// `nearest` agrees with the scan: the same place, or (a tie) one exactly as far.
fn check(lat: f64, lon: f64) -> &'static Place {
    let (want, want_km) = brute_force(lat, lon);
    let got = nearest(lat, lon, f64::INFINITY).unwrap().unwrap();
    assert!(
        got.place.geoname_id() == want.geoname_id() || (got.distance_km - want_km).abs() < 1e-9,
        "({lat}, {lon}): nearest gave {} at {} km, the scan {} at {want_km} km",
        got.place,
        got.distance_km,
        want,
    );
    assert!((got.distance_km - want_km).abs() < 1e-9);
    // The cap: just below the distance there is nothing, at it there is the place.
    if want_km > 1e-6 {
        assert_eq!(nearest(lat, lon, want_km * (1.0 - 1e-9)).unwrap(), None);
    }
    assert!(nearest(lat, lon, want_km).unwrap().is_some());
    got.place
}

#[test]
fn nearest_equals_a_brute_force_scan_at_random_points() {
    let mut rng = StdRng::seed_from_u64(19);
    let table = places().unwrap();
    let mut points = Vec::new();
    for _ in 0..300 {
        // Uniform on the sphere.
        let z: f64 = rng.random_range(-1.0..=1.0);
        points.push((z.asin().to_degrees(), rng.random_range(-180.0..=180.0)));
    }
    for _ in 0..100 {
        // Straddling the antimeridian, and near the poles.
        let side: f64 = if rng.random_bool(0.5) { 180.0 } else { -180.0 };
        let lon = side - rng.random_range(-0.5..0.5);
        points.push((rng.random_range(-60.0..70.0), lon.clamp(-180.0, 180.0)));
        points.push((
            rng.random_range(80.0..=90.0),
            rng.random_range(-180.0..=180.0),
        ));
        points.push((
            rng.random_range(-90.0..=-60.0),
            rng.random_range(-180.0..=180.0),
        ));
    }
    for _ in 0..300 {
        // Next to a town, where the neighbours are close together.
        let p = &table[rng.random_range(0..table.len())];
        let lat = (p.lat() + rng.random_range(-0.05..0.05)).clamp(-90.0, 90.0);
        let lon = (p.lon() + rng.random_range(-0.05..0.05)).clamp(-180.0, 180.0);
        points.push((lat, lon));
    }
    for (lat, lon) in points {
        check(lat, lon);
    }
}

fn shared_dir() -> PathBuf {
    match std::env::var_os("MEMDB_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// Decimal degrees of an EXIF GPS coordinate: three rationals and a hemisphere letter.
fn coordinate(exif: &exif::Exif, tag: Tag, reference: Tag, negative: &str) -> Option<f64> {
    let dms: Vec<f64> = match &exif.get_field(tag, In::PRIMARY)?.value {
        Value::Rational(v) => v.iter().map(|r| r.to_f64()).collect(),
        Value::SRational(v) => v.iter().map(|r| r.to_f64()).collect(),
        _ => return None,
    };
    let part = |i: usize| dms.get(i).copied().unwrap_or(0.0);
    let value = part(0) + part(1) / 60.0 + part(2) / 3600.0;
    let hemisphere = exif
        .get_field(reference, In::PRIMARY)
        .map(|f| f.display_value().to_string())
        .unwrap_or_default();
    let value = if hemisphere.trim_matches('"').starts_with(negative) {
        -value
    } else {
        value
    };
    value.is_finite().then_some(value)
}

fn gps_of(path: &Path) -> Option<(f64, f64)> {
    let bytes = std::fs::read(path).ok()?;
    let exif = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(bytes))
        .or_else(|e| e.distill_partial_result(|_| {}))
        .ok()?;
    let lat = coordinate(&exif, Tag::GPSLatitude, Tag::GPSLatitudeRef, "S")?;
    let lon = coordinate(&exif, Tag::GPSLongitude, Tag::GPSLongitudeRef, "W")?;
    Some((lat, lon))
}

fn jpegs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            jpegs(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg"))
        {
            out.push(path);
        }
    }
}

#[test]
fn every_shared_photo_with_gps_gets_the_scan_s_nearest_place() {
    let dir = shared_dir().join("data/photos");
    if !dir.is_dir() {
        let what = format!(
            "shared photos not found at {} (set MEMDB_SHARED_DIR)",
            dir.display()
        );
        assert!(std::env::var_os("CI").is_none(), "CI is set and {what}");
        eprintln!("\n*** SKIPPED: geocoding of the shared photos not run: {what} ***\n");
        return;
    }
    let mut files = Vec::new();
    jpegs(&dir, &mut files);
    files.sort();
    // The manifest's GPS column, read with another EXIF parser (ExifRead): ours must agree.
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut expected: Vec<(String, f64, f64)> = Vec::new();
    for line in manifest.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if let (Some(Ok(lat)), Some(Ok(lon))) =
            (f.get(6).map(|v| v.parse()), f.get(7).map(|v| v.parse()))
        {
            expected.push((f[0].to_owned(), lat, lon));
        }
    }
    let mut located = Vec::new();
    for file in &files {
        let Some((lat, lon)) = gps_of(file) else {
            continue;
        };
        let name = file.strip_prefix(&dir).unwrap().display().to_string();
        match nearest(lat, lon, f64::INFINITY) {
            Ok(_) => {
                let place = check(lat, lon);
                let km = haversine_km(lat, lon, place.lat(), place.lon());
                eprintln!("{name}: ({lat:.5}, {lon:.5}) → {place} ({km:.1} km)");
                if name.ends_with("FujiFilm_FinePixS2Pro.jpg") {
                    // Taken at the foot of the Eiffel Tower.
                    assert_eq!((place.name(), place.country_code()), ("Paris", "FR"));
                }
                located.push((name, lat, lon));
            }
            // EXIF may hold anything: an impossible point is refused, not placed.
            Err(GeoError::InvalidCoordinates { .. }) => eprintln!("{name}: ({lat}, {lon}) refused"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    for (name, lat, lon) in &expected {
        assert!(
            located
                .iter()
                .any(|(n, la, lo)| n == name && (la - lat).abs() < 1e-5 && (lo - lon).abs() < 1e-5),
            "{name}: the manifest's GPS point ({lat}, {lon}) was not read"
        );
    }
    assert!(
        expected.len() >= 25,
        "the manifest lists {} photos with GPS",
        expected.len()
    );
    eprintln!(
        "{} shared photos with a GPS point, each placed as the scan places it",
        located.len()
    );
}

#[test]
fn lookup_and_text_agree_with_nearest() {
    let paris = lookup("Paris").unwrap();
    assert!(haversine_km(paris.lat(), paris.lon(), 48.8566, 2.3522) < 3.0);
    let m = nearest(paris.lat(), paris.lon(), 1.0).unwrap().unwrap();
    assert_eq!(m.place.geoname_id(), paris.geoname_id());
    let found = places_in_text("photos I took in Paris").unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].place.geoname_id(), paris.geoname_id());
}

#[test]
fn threads_share_one_gazetteer() {
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let m = nearest(48.8584, 2.2945, 10.0).unwrap().unwrap();
                (
                    m.place.geoname_id(),
                    lookup("Lisbon").unwrap() as *const Place as usize,
                )
            })
        })
        .collect();
    let answers: Vec<(u32, usize)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn nearest_never_panics(lat in any::<f64>(), lon in any::<f64>(), cap in any::<f64>()) {
        let valid = (-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon);
        match nearest(lat, lon, cap) {
            Ok(found) => {
                prop_assert!(valid && cap >= 0.0);
                if let Some(m) = found {
                    prop_assert!(m.distance_km <= cap && m.distance_km >= 0.0);
                }
            }
            Err(GeoError::InvalidCoordinates { .. }) => prop_assert!(!valid),
            Err(GeoError::InvalidDistance { .. }) => prop_assert!(valid && (cap.is_nan() || cap < 0.0)),
            Err(e) => prop_assert!(false, "{e}"),
        }
    }

    #[test]
    fn valid_points_always_have_a_nearest_place(lat in -90.0..=90.0f64, lon in -180.0..=180.0f64) {
        let m = nearest(lat, lon, f64::INFINITY).unwrap().unwrap();
        prop_assert!(m.distance_km.is_finite());
    }

}

proptest! {
    // Fewer cases: an unknown name is compared with every name of the index for suggestions.
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn names_and_texts_never_panic(text in any::<String>()) {
        let _ = lookup(&text);
        for m in places_in_text(&text).unwrap() {
            prop_assert!(m.start < m.end && text.get(m.start..m.end).is_some());
        }
    }
}
