//! Unit tests of the public calls against the embedded gazetteer.

use super::*;

fn near(lat: f64, lon: f64) -> PlaceMatch {
    nearest(lat, lon, f64::INFINITY).unwrap().unwrap()
}

#[test]
fn the_eiffel_tower_is_in_paris() {
    let m = near(48.8584, 2.2945);
    assert_eq!((m.place.name(), m.place.country_code()), ("Paris", "FR"));
    assert_eq!(m.place.country(), "France");
    assert_eq!(m.place.region(), Some("Île-de-France"));
    assert!(m.distance_km < 3.0, "{}", m.distance_km);
    assert_eq!(m.place.to_string(), "Paris, Île-de-France, France");
    assert_eq!(m.place.short_label(), "Paris, France");
    assert_eq!(lookup("zurich").unwrap().ascii_name(), "Zurich");
}

#[test]
fn nearest_respects_the_cap() {
    // Point Nemo, the ocean pole of inaccessibility: over 2,000 km from any town.
    assert_eq!(nearest(-48.8767, -123.3933, 500.0).unwrap(), None);
    let m = near(-48.8767, -123.3933);
    assert!(m.distance_km > 1000.0);
    // A cap of 0 finds a place only on its exact point.
    let paris = lookup("Paris").unwrap();
    let m = nearest(paris.lat(), paris.lon(), 0.0).unwrap().unwrap();
    assert_eq!(m.place.geoname_id(), paris.geoname_id());
    assert_eq!(m.distance_km, 0.0);
}

#[test]
fn nearest_across_the_antimeridian_and_at_the_poles() {
    // Fiji's Taveuni straddles 180°: from either side the answer is a Fijian place, and the
    // distance is short although the longitudes differ by almost 360°.
    for lon in [179.99, -179.99, 180.0, -180.0] {
        let m = near(-16.8, lon);
        assert_eq!(m.place.country_code(), "FJ", "{lon}: {}", m.place);
        assert!(m.distance_km < 150.0, "{lon}: {}", m.distance_km);
    }
    // At the North Pole every longitude is the same point.
    let a = near(90.0, 0.0);
    let b = near(90.0, 137.0);
    assert_eq!(a.place.geoname_id(), b.place.geoname_id());
    assert!((a.distance_km - b.distance_km).abs() < 1e-6);
    assert!(near(-90.0, 0.0).distance_km > 1000.0);
}

#[test]
fn bad_points_and_caps_are_typed_errors() {
    assert!(matches!(
        nearest(f64::NAN, 0.0, 10.0),
        Err(GeoError::InvalidCoordinates { .. })
    ));
    assert!(matches!(
        nearest(0.0, 181.0, 10.0),
        Err(GeoError::InvalidCoordinates { .. })
    ));
    assert!(matches!(
        nearest(0.0, 0.0, -1.0),
        Err(GeoError::InvalidDistance { .. })
    ));
    assert!(matches!(
        nearest(0.0, 0.0, f64::NAN),
        Err(GeoError::InvalidDistance { .. })
    ));
}

#[test]
fn lookup_finds_the_most_populous_place_of_a_name() {
    let paris = lookup("Paris").unwrap();
    assert_eq!(paris.country_code(), "FR");
    assert!(haversine_km(paris.lat(), paris.lon(), 48.8566, 2.3522) < 2.0);
    for (name, city, cc) in [
        ("paris", "Paris", "FR"),
        ("  PARIS ", "Paris", "FR"),
        ("Lisbon", "Lisbon", "PT"),
        ("Lisboa", "Lisbon", "PT"),
        ("Rome", "Rome", "IT"),
        ("Roma", "Rome", "IT"),
        ("Munich", "Munich", "DE"),
        ("München", "Munich", "DE"),
        ("muenchen", "Munich", "DE"),
        ("Firenze", "Florence", "IT"),
        ("Zurich", "Zürich", "CH"),
        ("sao paulo", "São Paulo", "BR"),
        ("Saint-Étienne", "Saint-Étienne", "FR"),
        ("new york city", "New York City", "US"),
    ] {
        let p = lookup(name).unwrap();
        assert_eq!((p.name(), p.country_code()), (city, cc), "{name}");
    }
}

#[test]
fn qualifiers_pick_the_country_or_region() {
    let tx = lookup("Paris, TX").unwrap();
    assert_eq!((tx.country_code(), tx.region()), ("US", Some("Texas")));
    assert_eq!(
        lookup("Paris, Texas").unwrap().geoname_id(),
        tx.geoname_id()
    );
    assert_eq!(
        lookup("paris, texas, usa").unwrap().geoname_id(),
        tx.geoname_id()
    );
    assert_eq!(lookup("Paris, France").unwrap().country_code(), "FR");
    assert_eq!(lookup("Paris, fr").unwrap().country_code(), "FR");
    assert_eq!(lookup("Paris, Ontario").unwrap().country_code(), "CA");
    assert_eq!(lookup("Bath, England").unwrap().country_code(), "GB");
    assert_eq!(lookup("Rome, GA").unwrap().region(), Some("Georgia"));
    // A qualifier that matches none of the places of a known name: those places as suggestions.
    match lookup("Paris, Narnia") {
        Err(GeoError::UnknownPlace { name, suggestions }) => {
            assert_eq!(name, "Paris, Narnia");
            assert_eq!(suggestions.len(), 5);
            assert_eq!(suggestions[0], "Paris, Île-de-France, France");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_names_come_with_suggestions() {
    match lookup("Pariss") {
        Err(GeoError::UnknownPlace { suggestions, .. }) => {
            assert_eq!(
                suggestions.first().map(String::as_str),
                Some("Paris, Île-de-France, France")
            );
        }
        other => panic!("{other:?}"),
    }
    match lookup("Lisbn") {
        Err(e @ GeoError::UnknownPlace { .. }) => {
            assert!(
                e.to_string()
                    .starts_with("unknown place \"Lisbn\"; did you mean \"Lisbon, Portugal\" or "),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    match lookup("Xqzvwtplk") {
        Err(GeoError::UnknownPlace { suggestions, .. }) => assert!(suggestions.is_empty()),
        other => panic!("{other:?}"),
    }
    assert_eq!(lookup(""), Err(GeoError::EmptyName));
    assert_eq!(lookup(" ,, "), Err(GeoError::EmptyName));
}

/// Each mention of `text` as (the name as written, country code, cued).
fn mentioned(text: &str) -> Vec<(&str, &'static str, bool)> {
    places_in_text(text)
        .unwrap()
        .into_iter()
        .map(|m| (&text[m.start..m.end], m.place.country_code(), m.cued))
        .collect()
}

/// What a text mentions: (the name as written, country code, cued) each.
type Mentioned<'a> = &'a [(&'a str, &'a str, bool)];

/// Texts and what they mention.
fn check_texts(cases: &[(&str, Mentioned<'_>)]) {
    for (text, want) in cases {
        assert_eq!(mentioned(text), *want, "{text:?}");
    }
}

#[test]
fn places_named_in_questions() {
    check_texts(&[
        ("photos I took in Paris", &[("Paris", "FR", true)]),
        ("from Rome", &[("Rome", "IT", true)]),
        ("in Lisbon last spring", &[("Lisbon", "PT", true)]),
        ("Lisbon 2019", &[("Lisbon", "PT", false)]),
        (
            "the trip to New York City and then to São Paulo's beaches",
            &[("New York City", "US", true), ("São Paulo", "BR", true)],
        ),
        ("pictures from münchen", &[("münchen", "DE", true)]),
    ]);
}

#[test]
fn words_that_are_also_places_need_a_cue_and_a_capital() {
    check_texts(&[
        ("a nice day", &[]),
        ("we had nice weather in Nice", &[("Nice", "FR", true)]),
        ("in nice weather", &[]),
        ("a hot bath", &[]),
        ("the weekend in Bath", &[("Bath", "GB", true)]),
        ("my mobile phone", &[]),
        ("flew from Mobile", &[("Mobile", "US", true)]),
        ("photos of the kids", &[]),
        ("in May and in March", &[]),
        ("what did I do last Sunday", &[]),
        ("", &[]),
        // A small place needs the cue.
        ("Llangynidr", &[]),
        ("near Llangynidr", &[("Llangynidr", "GB", true)]),
    ]);
}
