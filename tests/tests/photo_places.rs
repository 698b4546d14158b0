//! Issue 19, "done when": every shared photo with GPS is placed at the nearest GeoNames
//! populated place, checked against an independent computation — a brute-force haversine scan
//! of the whole gazetteer, not the k-d tree the place stage uses — through the engine's ingest
//! as an application runs it.
//!
//! The stored place names the city a person would name (SPEC.md §8.5); the nearest place is
//! that city, or else the place's locality. Either way the scan's nearest place must be in the
//! item's place, and the stored distance must be the haversine distance to the city's point.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{IngestItem, IngestOptions, ItemDraft, Options, Store};
use memdb_geo::{Place, haversine_km, places};

/// The nearest place by scanning every place, and its distance in km.
fn scan(lat: f64, lon: f64) -> (&'static Place, f64) {
    let mut best: Option<(&'static Place, f64)> = None;
    for p in places().unwrap() {
        let d = haversine_km(lat, lon, p.lat(), p.lon());
        if best.is_none_or(|(_, b)| d < b) {
            best = Some((p, d));
        }
    }
    best.unwrap()
}

#[test]
fn every_shared_photo_with_gps_is_placed_at_the_scan_s_nearest_place() {
    let Some(dir) = memdb_it::shared_data("photos") else {
        return;
    };
    let mut items = Vec::new();
    for path in memdb_it::files_under(&dir) {
        if !path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg"))
        {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        if let Ok(photo) = memdb_formats::import::photo::parse(&name, &bytes, Default::default()) {
            let mut fields = photo.draft.fields;
            fields.external_id = Some(name);
            items.push(IngestItem::new(ItemDraft {
                fields,
                supersedes: None,
            }));
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path().join("s"), Options::default()).unwrap();
    let report = store
        .ingest_items(items, None, IngestOptions::commit_only(), &mut |_, _, _| {})
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);

    let snapshot = store.snapshot().unwrap();
    let (mut with_gps, mut placed) = (0, 0);
    for item in snapshot.scan(&memdb::ScanFilter::default()).unwrap() {
        let name = item.fields.external_id.clone().unwrap();
        let Some(location) = &item.fields.location else {
            continue;
        };
        let Some(geo) = location.geo else {
            continue;
        };
        with_gps += 1;
        let (nearest, km) = scan(geo.lat, geo.lon);
        let Some(place) = &location.place else {
            assert!(
                km > memdb::place::DEFAULT_PLACE_CAP_KM,
                "{name}: no place, yet {nearest} is {km:.1} km away"
            );
            continue;
        };
        placed += 1;
        let own = nearest.district().unwrap_or(nearest.name());
        let found = place.geonames_id == Some(nearest.geoname_id())
            || place.locality.as_deref() == Some(own)
            || (place.locality.is_none() && place.city == own);
        assert!(
            found,
            "{name}: the scan's nearest place is {nearest} ({km:.2} km), the item is in {place:?}"
        );
        // The distance stored is to the city's point.
        let city = places()
            .unwrap()
            .iter()
            .find(|p| Some(p.geoname_id()) == place.geonames_id)
            .unwrap();
        let to_city = haversine_km(geo.lat, geo.lon, city.lat(), city.lon());
        let stored = f64::from(place.distance_m.unwrap()) / 1000.0;
        assert!(
            (stored - to_city).abs() < 0.001,
            "{name}: {stored} km vs {to_city} km"
        );
        eprintln!(
            "{name}: nearest {} ({km:.1} km) → {}",
            nearest.name(),
            place.short_label()
        );
        if name.ends_with("FujiFilm_FinePixS2Pro.jpg") {
            assert_eq!(place.city, "Paris");
        }
    }
    eprintln!(
        "{placed} of {with_gps} shared photos with a GPS fix placed; each at the scan's nearest place"
    );
    assert!(with_gps >= 24, "{with_gps} photos with GPS");
    assert!(placed >= 24, "{placed} placed");
}
