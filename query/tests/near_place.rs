//! `NEAR('place', d)` is `NEAR` at the point the place's name resolves to
//! (`memdb_geo::lookup`): the same items, for items scattered around several places of the
//! same name; a name the gazetteer does not know is a typed error carrying suggestions.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{
    EventTime, ItemDraft, ItemFields, Options, Source, Store, item::GeoPoint, item::Location,
};
use memdb_query::{QueryContext, QueryError, Rows, StoreQuery};

/// A store of notes at positions around Paris (France), Paris (Texas) and Lisbon, up to about
/// 60 km from each, on a fixed pseudo-random spread.
fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut batch = store.batch();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut unit = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1_000_001) as f64 / 1_000_000.0 * 2.0 - 1.0
    };
    for (i, (lat, lon)) in [(48.8566, 2.3522), (33.6609, -95.5555), (38.7223, -9.1393)]
        .into_iter()
        .cycle()
        .take(300)
        .enumerate()
    {
        let mut f = ItemFields::new(Source::Note, EventTime::utc(1_700_000_000_000 + i as i64));
        f.body = Some(format!("note {i}"));
        f.location = Some(Location {
            name: None,
            geo: Some(GeoPoint {
                lat: lat + 0.55 * unit(),
                lon: lon + 0.8 * unit(),
            }),
            place: None,
        });
        batch.put(ItemDraft {
            fields: f,
            supersedes: None,
        });
    }
    batch.commit().unwrap();
    (dir, store)
}

fn ids(store: &Store, statement: &str) -> Vec<u64> {
    match store
        .query(statement, &QueryContext::default())
        .unwrap()
        .rows
    {
        Rows::Items(rows) => rows.into_iter().map(|r| r.item.id).collect(),
        other => panic!("{statement}: {other:?}"),
    }
}

#[test]
fn a_place_name_filters_as_its_point() {
    let (_dir, store) = store();
    for (name, radius) in [
        ("Paris", "25km"),
        ("Paris, TX", "25km"),
        ("paris, texas", "10mi"),
        ("Lisboa", "30000m"),
        ("Lisbon", "0.5km"),
    ] {
        let place = memdb_geo::lookup(name).unwrap();
        let by_name = ids(&store, &format!("ITEMS WHERE NEAR('{name}', {radius})"));
        let by_point = ids(
            &store,
            &format!(
                "ITEMS WHERE NEAR({}, {}, {radius})",
                place.lat(),
                place.lon()
            ),
        );
        assert_eq!(by_name, by_point, "{name} {radius}");
        if radius != "0.5km" {
            assert!(by_name.len() > 3, "{name}: {} items", by_name.len());
        }
    }
    // Paris, France and Paris, Texas are different places.
    assert_ne!(
        ids(&store, "ITEMS WHERE NEAR('Paris', 25km)"),
        ids(&store, "ITEMS WHERE NEAR('Paris, TX', 25km)")
    );
    // EXPLAIN says what the name resolved to.
    let out = store
        .query(
            "EXPLAIN ITEMS WHERE NEAR('Paris', 25km)",
            &QueryContext::default(),
        )
        .unwrap();
    let place = out.plan.stages.iter().find(|s| s.name == "place").unwrap();
    assert!(
        place
            .detail
            .starts_with("'Paris' is Paris, Île-de-France, France at (48.85"),
        "{}",
        place.detail
    );
}

#[test]
fn an_unknown_place_is_an_error_with_suggestions() {
    let (_dir, store) = store();
    let e = store
        .query("ITEMS WHERE NEAR('Pariss', 25km)", &QueryContext::default())
        .unwrap_err();
    match &e {
        QueryError::Place {
            statement,
            source: memdb_geo::GeoError::UnknownPlace { name, suggestions },
        } => {
            assert_eq!(statement, "ITEMS WHERE NEAR('Pariss', 25km)");
            assert_eq!(name, "Pariss");
            assert_eq!(
                suggestions.first().map(String::as_str),
                Some("Paris, Île-de-France, France")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string()
            .contains("did you mean \"Paris, Île-de-France, France\""),
        "{e}"
    );
}

/// An ambiguous name is the place the person's things are near: "Newcastle" is Newcastle,
/// Australia (the most populous so named) in a store with nothing there, and Newcastle upon
/// Tyne in a store of three notes around it; the answer names the choice and the others.
#[test]
fn an_ambiguous_name_is_the_place_the_items_are_near() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let statement = "ITEMS WHERE NEAR('Newcastle', 30km)";
    let out = store.query(statement, &QueryContext::default()).unwrap();
    assert!(
        out.notes[0].starts_with("'Newcastle' is Newcastle, New South Wales, Australia"),
        "{:?}",
        out.notes
    );
    let mut batch = store.batch();
    // Lamesley, Horsley and Meldon: around Newcastle upon Tyne, as three shared photos are.
    for (i, (lat, lon)) in [(54.91, -1.60), (54.98, -1.86), (55.14, -1.81)]
        .into_iter()
        .enumerate()
    {
        let mut f = ItemFields::new(Source::Note, EventTime::utc(1_700_000_000_000 + i as i64));
        f.body = Some(format!("walk {i}"));
        f.location = Some(Location {
            name: None,
            geo: Some(GeoPoint { lat, lon }),
            place: None,
        });
        batch.put(ItemDraft {
            fields: f,
            supersedes: None,
        });
    }
    batch.commit().unwrap();
    assert_eq!(ids(&store, statement).len(), 3);
    let out = store.query(statement, &QueryContext::default()).unwrap();
    let note = &out.notes[0];
    assert!(
        note.starts_with("'Newcastle' is Newcastle upon Tyne, England, United Kingdom"),
        "{note}"
    );
    assert!(note.contains("3 items lie within the distance"), "{note}");
    assert!(
        note.contains("Newcastle, New South Wales, Australia (0)"),
        "{note}"
    );
    // EXPLAIN says the same as its place stage.
    let explained = store
        .query(&format!("EXPLAIN {statement}"), &QueryContext::default())
        .unwrap();
    let place = explained
        .plan
        .stages
        .iter()
        .find(|s| s.name == "place")
        .unwrap();
    assert_eq!(&place.detail, note);
}
