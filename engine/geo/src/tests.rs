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

/// `within` against a brute-force haversine scan of the whole table, around a few points
/// (a city, a coast, the antimeridian, a pole).
#[test]
fn within_equals_a_brute_force_scan() {
    let all = places().unwrap();
    for (lat, lon, radius) in [
        (48.8566, 2.3522, 10.0),
        (38.72, -9.14, 30.0),
        (-16.8, 179.99, 120.0),
        (89.0, 0.0, 500.0),
        (51.8467, -3.3378, 0.0),
    ] {
        let got: Vec<u32> = within(lat, lon, radius)
            .unwrap()
            .iter()
            .map(|m| m.place.geoname_id())
            .collect();
        let mut want: Vec<(f64, u32)> = all
            .iter()
            .map(|p| (haversine_km(lat, lon, p.lat(), p.lon()), p.geoname_id()))
            .filter(|(d, _)| *d <= radius)
            .collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let want: Vec<u32> = want.into_iter().map(|(_, id)| id).collect();
        assert_eq!(got, want, "({lat}, {lon}) within {radius} km");
    }
    assert!(within(0.0, 0.0, -1.0).is_err() && within(91.0, 0.0, 1.0).is_err());
}

/// The settlement rule, computed here over the whole table without the k-d tree: the most
/// populous place of the nearest place's country whose reach covers the point, else the
/// nearest place.
fn settlement_by_scan(lat: f64, lon: f64) -> u32 {
    let all = places().unwrap();
    let nearest = all
        .iter()
        .min_by(|a, b| {
            haversine_km(lat, lon, a.lat(), a.lon())
                .total_cmp(&haversine_km(lat, lon, b.lat(), b.lon()))
                .then(a.geoname_id().cmp(&b.geoname_id()))
        })
        .unwrap();
    all.iter()
        .filter(|p| p.country_code() == nearest.country_code())
        .filter(|p| haversine_km(lat, lon, p.lat(), p.lon()) <= reach_km(p.population()))
        .max_by_key(|p| (p.population(), std::cmp::Reverse(p.geoname_id())))
        .map_or(nearest.geoname_id(), Place::geoname_id)
}

#[test]
fn the_settlement_is_the_city_a_person_names() {
    // (point, the settlement's name): a university campus in Madrid, a street in Rome, the
    // Eiffel Tower, a village in Wales, the middle of Manhattan.
    for (lat, lon, city) in [
        (40.446972, -3.724753, "Madrid"),
        (41.853, 12.488833, "Rome"),
        (48.8584, 2.2945, "Paris"),
        (51.846667, -3.337833, "Llangynidr"),
        (40.7580, -73.9855, "New York City"),
    ] {
        let s = settlement(lat, lon, 50.0).unwrap().unwrap();
        assert_eq!(s.city.place.name(), city, "({lat}, {lon})");
        assert!(s.city.distance_km <= 50.0_f64.max(reach_km(s.city.place.population())));
        assert_eq!(s.city.place.geoname_id(), settlement_by_scan(lat, lon));
    }
    // The nearest place of the Madrid point is a neighbourhood, not Madrid.
    let s = settlement(40.446972, -3.724753, 50.0).unwrap().unwrap();
    assert_ne!(s.nearest.place.name(), "Madrid");
    // Nothing within the cap: no settlement.
    assert_eq!(settlement(-48.8767, -123.3933, 50.0).unwrap(), None);
}

/// The rule at random points on land and sea, against the scan.
#[test]
fn settlement_equals_the_rule_computed_by_scan() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(19);
    let all = places().unwrap();
    for _ in 0..60 {
        // Near a random place (so most points are in towns and cities), up to ~20 km off.
        let p = &all[rng.random_range(0..all.len())];
        let lat = (p.lat() + rng.random_range(-0.2..0.2)).clamp(-90.0, 90.0);
        let lon = (p.lon() + rng.random_range(-0.2..0.2)).clamp(-180.0, 180.0);
        let s = settlement(lat, lon, f64::INFINITY).unwrap().unwrap();
        assert_eq!(
            s.city.place.geoname_id(),
            settlement_by_scan(lat, lon),
            "({lat}, {lon})"
        );
    }
}

#[test]
fn folded_names_compare_equal() {
    assert_eq!(fold_name("Saint-Étienne"), fold_name("saint etienne"));
    assert_eq!(fold_name("München"), "munchen");
    assert_ne!(fold_name("Paris"), fold_name("París de Arriba"));
}

/// The screen never clears a text the rule takes a place from: every name and alternate of
/// every place, as written and lower-cased, cued and not, with words around it.
#[test]
fn the_name_screen_clears_no_text_that_names_a_place() {
    let g = gazetteer().unwrap();
    let mut checked = 0usize;
    let mut taken = 0usize;
    for place in &g.table.places {
        let own = place.district().unwrap_or(place.name());
        for name in std::iter::once(own).chain(place.alternates()) {
            let lower = name.to_lowercase();
            for text in [
                format!("photos I took in {name} last year"),
                format!("{name} photos"),
                format!("trip to {lower}"),
                format!("{lower} 2019"),
            ] {
                checked += 1;
                if !mentions::find(&text, &g.table, g.names()).is_empty() {
                    taken += 1;
                    assert!(mentions::may_name_a_place(&text), "{text:?}");
                }
            }
        }
    }
    println!("name screen: {taken} of {checked} texts name a place; the screen passed them all");
    assert!(taken > 400_000, "{taken}");
}

/// Questions that name no place are cleared by the screen (no gazetteer decoded for them).
#[test]
fn the_name_screen_clears_everyday_questions() {
    let cleared = [
        "what did I do in May 2001?",
        "What did Caroline research?",
        "where was I in August 2002?",
        "the photo of my handwritten notes",
        "When did Melanie paint a sunrise?",
        "How many times has Jon been to the gym this month?",
        "what did my sister say about the new job",
    ];
    for text in cleared {
        assert!(!may_name_a_place(text), "{text:?}");
        assert!(places_in_text(text).unwrap().is_empty());
    }
    for text in [
        "photos I took in Lisbon",
        "Paris photos",
        "from Nice",
        "near New York City",
    ] {
        assert!(may_name_a_place(text), "{text:?}");
    }
}
