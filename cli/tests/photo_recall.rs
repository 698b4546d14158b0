//! Issue 19, "done when": photos are found by place, camera and name of a place, with the real
//! encoder, through the `memdb` tool as a person uses it.
//!
//! The store holds every shared photo the importer takes and the shared test-suite mail (so a
//! question about a city has e-mails to confuse it with). For every photo that has a place, the
//! question "photos I took in <its city>" with `--source image -k 10` must return it; the rate
//! is printed, and the target is 90 %. The rate without `--source` is printed too.
//! The city asked for is the one the place stage stored, so this measures recall, not the
//! geocoder (the geocoder's own tests check places against a brute-force scan).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::{json, memdb, model_installed};
use serde_json::Value;

/// The ids of the hits of `memdb recall STORE QUESTION ARGS…`.
fn recall(store: &str, question: &str, args: &[&str]) -> Vec<u64> {
    let mut all = vec!["--json", "recall", store, question];
    all.extend(args);
    json(&memdb(&all))["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_u64().unwrap())
        .collect()
}

fn ids(rows: &Value) -> Vec<u64> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn photos_are_found_by_the_city_they_were_taken_in() {
    let (Some(photos), Some(mail)) = (
        memdb_it::shared_data("photos"),
        memdb_it::shared_data("mail"),
    ) else {
        return;
    };
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let store = store.to_str().unwrap();
    let imported = memdb(&[
        "--json",
        "import",
        "photos",
        "--create",
        store,
        photos.to_str().unwrap(),
    ]);
    assert!(imported.status.success());
    let suites = mail.join("testsuites");
    json(&memdb(&[
        "--json",
        "import",
        "mail",
        store,
        suites.to_str().unwrap(),
    ]));
    json(&memdb(&["--json", "embed", store]));

    let items = json(&memdb(&["--json", "ls", store, "--limit", "100000"]));
    let items = items.as_array().unwrap();
    let with_gps: Vec<&Value> = items
        .iter()
        .filter(|i| i["source"] == "image" && !i["location"]["lat"].is_null())
        .collect();
    assert!(with_gps.len() >= 20, "{} photos with GPS", with_gps.len());

    let (mut asked, mut found, mut found_any_source) = (0u32, 0u32, 0u32);
    let mut missed = Vec::new();
    let mut unplaced = Vec::new();
    for photo in &with_gps {
        let id = photo["id"].as_u64().unwrap();
        let Some(city) = photo["location"]["place"]["city"].as_str() else {
            unplaced.push(photo["external_id"].to_string());
            continue;
        };
        asked += 1;
        let question = format!("photos I took in {city}");
        let hits = recall(store, &question, &["--source", "image", "-k", "10"]);
        if hits.contains(&id) {
            found += 1;
        } else {
            missed.push(format!("{question} (item {id}): {hits:?}"));
        }
        if recall(store, &question, &["-k", "10"]).contains(&id) {
            found_any_source += 1;
        }
    }
    let rate = f64::from(found) / f64::from(asked.max(1));
    eprintln!(
        "photos with GPS: {}, with a place: {asked}, without: {unplaced:?}\n\
         \"photos I took in <city>\" --source image -k 10: {found}/{asked} = {:.1} %\n\
         the same without --source: {found_any_source}/{asked} = {:.1} %\nmissed: {missed:#?}",
        with_gps.len(),
        100.0 * rate,
        100.0 * f64::from(found_any_source) / f64::from(asked.max(1)),
    );
    assert_eq!(
        asked as usize,
        with_gps.len(),
        "every photo with GPS has a place"
    );
    assert!(rate >= 0.9, "hit rate {:.1} % is under 90 %", 100.0 * rate);

    // The camera's name finds that camera's photos first.
    let mut fuji: Vec<u64> = items
        .iter()
        .filter(|i| i["camera"]["model"] == "FinePixS2Pro")
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    fuji.sort_unstable();
    assert!(fuji.len() >= 2, "{fuji:?}");
    let hits = recall(store, "FUJIFILM FinePixS2Pro", &["-k", "10"]);
    let mut first: Vec<u64> = hits[..fuji.len()].to_vec();
    first.sort_unstable();
    assert_eq!(first, fuji, "hits {hits:?}");

    // The Eiffel Tower photo reads "Paris" in `memdb get`, beside its position.
    let eiffel = items
        .iter()
        .find(|i| {
            i["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "file:FujiFilm_FinePixS2Pro.jpg")
        })
        .unwrap();
    let id = eiffel["id"].to_string();
    let got = json(&memdb(&["--json", "get", store, &id]));
    assert_eq!(got["location"]["place"]["city"], "Paris");
    assert_eq!(got["location"]["name"], "Paris, Île-de-France, France");
    let table = memdb(&["get", store, &id]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("Paris, Île-de-France, France (48.85"),
        "{table}"
    );

    // NEAR by name is NEAR at the name's point: here the point for Paris gives the
    // same photos (the Eiffel Tower one; none lies near the 25 km circle).
    let query = |statement: &str| json(&memdb(&["--json", "query", store, statement]));
    let by_name = ids(&query("ITEMS WHERE NEAR('Paris', 25km)")["rows"]);
    assert!(!by_name.is_empty());
    assert_eq!(
        by_name,
        ids(&query("ITEMS WHERE NEAR(48.8566, 2.3522, 25km)")["rows"])
    );
}
