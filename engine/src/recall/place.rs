//! The place signal of recall: a place named in the question ("photos I took in Madrid", "from
//! Rome") ranks the items that are there.
//!
//! The question's places are `memdb_geo::places_in_text`'s (the cue words, the common-word
//! guard and the resolution to the most populous place of a name are that crate's). An item
//! matches a named place, best first:
//!
//! 1. its place is that place (same GeoNames id), or its city has that name in the same
//!    country;
//! 2. its locality (the neighbourhood or village it was nearest) has that name, same country;
//! 3. its position is within the place's reach (`memdb_geo::reach_km`, at least
//!    [`MIN_RADIUS_KM`]): a photo in the suburbs of a city that is placed in a town of its own;
//! 4. its city or locality has that name in another country (the question said "Paris"; the
//!    photos are in Paris, Texas).
//!
//! Within a tier, nearer the named place's point first, then lower item id. Names are compared
//! folded (`memdb_geo::fold_name`: "Zürich" is "zurich"). An item without a place or a position
//! never matches, so a store without places (LoCoMo conversations) ranks exactly as before.

use memdb_formats::item::{ItemFields, PlaceName};
use memdb_geo::{Mention, fold_name, haversine_km, reach_km};
use roaring::RoaringBitmap;

use crate::error::Result;

/// The least radius around a named place within which a position matches it, in km: the
/// centre of a town and the few kilometres a person still calls by its name.
pub(crate) const MIN_RADIUS_KM: f64 = 5.0;

/// What the place signal needs of an item, derived once per index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ItemPlace {
    /// GeoNames id of its city.
    city_id: Option<u32>,
    /// Folded names of its city and locality.
    city: Option<String>,
    locality: Option<String>,
    country_code: Option<String>,
    /// (lat, lon).
    geo: Option<(f64, f64)>,
    /// Its place in words ("Paris, United States"): what an explanation says when the item
    /// matched a name it shares with the question's place.
    label: Option<String>,
}

impl ItemPlace {
    /// The place fields of an item (`None`: it has neither a place nor a position).
    pub(crate) fn of(fields: &ItemFields) -> Option<ItemPlace> {
        let location = fields.location.as_ref()?;
        let place = location.place.as_ref();
        if place.is_none() && location.geo.is_none() {
            return None;
        }
        Some(ItemPlace {
            city_id: place.and_then(|p| p.geonames_id),
            city: place.map(|p| fold_name(&p.city)),
            locality: place.and_then(|p| p.locality.as_deref()).map(fold_name),
            country_code: place.and_then(|p| p.country_code.clone()),
            geo: location.geo.map(|g| (g.lat, g.lon)),
            label: place.map(PlaceName::short_label),
        })
    }

    /// (tier, km from the place's point) when the item matches `mention` (see the module doc).
    fn matches(&self, mention: &Mention, name: &str) -> Option<(u8, f64)> {
        let p = mention.place;
        let distance = self.geo.map_or(f64::INFINITY, |(lat, lon)| {
            haversine_km(lat, lon, p.lat(), p.lon())
        });
        let same_country = self.country_code.as_deref() == Some(p.country_code());
        let city = self.city.as_deref() == Some(name);
        let locality = self.locality.as_deref() == Some(name);
        let tier = if self.city_id == Some(p.geoname_id()) || (city && same_country) {
            0
        } else if locality && same_country {
            1
        } else if distance <= reach_km(p.population()).max(MIN_RADIUS_KM) {
            2
        } else if city || locality {
            3
        } else {
            return None;
        };
        Some((tier, distance))
    }
}

/// What the place signal found for a question.
pub(crate) struct Ranked {
    /// The items at a place the question names, best first, each with the place it matched
    /// ("Madrid, Spain").
    pub(crate) hits: Vec<(u64, String)>,
    /// The places the question names, as written ("Lisbon").
    pub(crate) named: Vec<String>,
    /// Whether some allowed item has a place or a position at all (a store of chat turns has
    /// none: a place it does not hold says nothing there).
    pub(crate) any_placed: bool,
}

/// The items (`keys[row]`) of the rows `allowed` lets through (all when `None`) that are at a
/// place `question` names, best first, at most `depth`, each with the place it matched
/// ("Madrid, Spain").
pub(crate) fn rank(
    question: &str,
    keys: impl Fn(u32) -> u64,
    places: &[Option<ItemPlace>],
    allowed: Option<&RoaringBitmap>,
    depth: usize,
) -> Result<Ranked> {
    let mentions = memdb_geo::places_in_text(question)?;
    let allowed_row =
        |row: usize| u32::try_from(row).is_ok_and(|r| allowed.is_none_or(|a| a.contains(r)));
    let any_placed = places
        .iter()
        .enumerate()
        .any(|(row, p)| p.is_some() && allowed_row(row));
    let named = mentions
        .iter()
        .map(|m| question[m.start..m.end].to_owned())
        .collect();
    let mentions: Vec<Mention> = mentions
        .into_iter()
        .map(|m| where_items_are(m, &question[m.start..m.end], places, allowed))
        .collect();
    let hits = rank_mentions(&mentions, keys, places, allowed, depth);
    Ok(Ranked {
        hits,
        named,
        any_placed,
    })
}

/// The place a person means by a name several places carry: `mention`'s (the most populous)
/// when some allowed item is at it (tiers 0–2 of the module doc), else the first of the other
/// places so named (`memdb_geo::candidates`, most populous first, at most
/// [`PLACE_CHOICES`]) that some allowed item is at, else `mention`'s. "photos from Newcastle"
/// in a store of photos around Newcastle upon Tyne means that one, not Newcastle, Australia.
fn where_items_are(
    mention: Mention,
    written: &str,
    places: &[Option<ItemPlace>],
    allowed: Option<&RoaringBitmap>,
) -> Mention {
    let has_items = |m: &Mention| {
        let name = fold_name(m.place.name());
        places.iter().enumerate().any(|(row, place)| {
            place.as_ref().is_some_and(|p| {
                u32::try_from(row).is_ok_and(|r| allowed.is_none_or(|a| a.contains(r)))
                    && p.matches(m, &name).is_some_and(|(tier, _)| tier < 3)
            })
        })
    };
    if has_items(&mention) {
        return mention;
    }
    let Ok(candidates) = memdb_geo::candidates(written) else {
        return mention;
    };
    candidates
        .into_iter()
        .take(PLACE_CHOICES)
        .map(|place| Mention { place, ..mention })
        .find(|m| m.place.geoname_id() != mention.place.geoname_id() && has_items(m))
        .unwrap_or(mention)
}

/// How many of the places a name may mean are weighed by the items at them.
const PLACE_CHOICES: usize = 20;

fn rank_mentions(
    mentions: &[memdb_geo::Mention],
    keys: impl Fn(u32) -> u64,
    places: &[Option<ItemPlace>],
    allowed: Option<&RoaringBitmap>,
    depth: usize,
) -> Vec<(u64, String)> {
    if mentions.is_empty() {
        return Vec::new();
    }
    let names: Vec<String> = mentions.iter().map(|m| fold_name(m.place.name())).collect();
    let mut hits: Vec<(u8, f64, u64, String)> = Vec::new();
    for (row, place) in places.iter().enumerate() {
        let (Some(place), Ok(row)) = (place, u32::try_from(row)) else {
            continue;
        };
        if allowed.is_some_and(|a| !a.contains(row)) {
            continue;
        }
        // The best of the question's places for this item.
        let best = mentions
            .iter()
            .zip(&names)
            .enumerate()
            .filter_map(|(i, (m, name))| place.matches(m, name).map(|(t, d)| (t, d, i)))
            .min_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        if let Some((tier, distance, mention)) = best {
            // Tiers 0–2 are at the question's place; tier 3 is a namesake elsewhere, which the
            // explanation names by the item's own place.
            let label = match (tier, &place.label) {
                (3, Some(own)) => own.clone(),
                _ => mentions[mention].place.short_label(),
            };
            hits.push((tier, distance, keys(row), label));
        }
    }
    hits.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    hits.truncate(depth);
    hits.into_iter()
        .map(|(_, _, item, label)| (item, label))
        .collect()
}

#[cfg(test)]
mod tests {
    use memdb_formats::item::{EventTime, GeoPoint, Location, PlaceName, Source};

    use super::*;

    fn at(lat: f64, lon: f64, city: Option<(&str, &str, Option<&str>)>) -> Option<ItemPlace> {
        let mut f = ItemFields::new(Source::Image, EventTime::utc(0));
        f.location = Some(Location {
            name: None,
            geo: Some(GeoPoint { lat, lon }),
            place: city.map(|(city, cc, locality)| PlaceName {
                city: city.into(),
                locality: locality.map(Into::into),
                country_code: Some(cc.into()),
                ..PlaceName::default()
            }),
        });
        ItemPlace::of(&f)
    }

    fn ranked(question: &str, places: &[Option<ItemPlace>]) -> Vec<u64> {
        rank(question, u64::from, places, None, 100)
            .unwrap()
            .hits
            .into_iter()
            .map(|(item, _)| item)
            .collect()
    }

    /// "Newcastle" is Newcastle, Australia by population; in a store whose photos are in
    /// Newcastle upon Tyne it means that one.
    #[test]
    fn a_name_several_places_carry_means_the_one_with_items() {
        let places = vec![
            at(54.9733, -1.6140, Some(("Newcastle upon Tyne", "GB", None))),
            at(54.978, -1.62, None),
            at(48.8566, 2.3522, Some(("Paris", "FR", None))),
        ];
        let found = rank("photos from Newcastle", u64::from, &places, None, 10).unwrap();
        assert_eq!(
            found.hits,
            [
                (0, "Newcastle upon Tyne, United Kingdom".into()),
                (1, "Newcastle upon Tyne, United Kingdom".into())
            ]
        );
        // Without items there, the most populous stays: nothing matches.
        let elsewhere = vec![places[2].clone()];
        assert!(
            rank("photos from Newcastle", u64::from, &elsewhere, None, 10)
                .unwrap()
                .hits
                .is_empty()
        );
    }

    #[test]
    fn items_at_the_named_place_rank_by_tier_then_distance() {
        let places = vec![
            // 0: Madrid by name, 4 km from its point.
            at(
                40.446972,
                -3.724753,
                Some(("Madrid", "ES", Some("Vallehermoso"))),
            ),
            // 1: Paris, Texas.
            at(33.66, -95.555, Some(("Paris", "US", None))),
            // 2: no place, a position in the centre of Paris.
            at(48.8566, 2.3522, None),
            // 3: Paris, France, by name.
            at(
                48.857833,
                2.297,
                Some(("Paris", "FR", Some("Paris 16 Passy"))),
            ),
            // 4: nothing.
            None,
            // 5: Lisbon.
            at(38.72, -9.14, Some(("Lisbon", "PT", None))),
        ];
        assert_eq!(ranked("photos I took in Paris", &places), [3, 2, 1]);
        assert_eq!(ranked("pictures from Madrid", &places), [0]);
        assert_eq!(ranked("in Vallehermoso", &places), [0]);
        // Two places in one question: each item by its best.
        assert_eq!(ranked("from Lisbon to Madrid", &places), [5, 0]);
        assert!(ranked("what did Caroline say about the parade?", &places).is_empty());
        // Only the allowed rows.
        let allowed: RoaringBitmap = [1u32, 2].into_iter().collect();
        let hits = rank("in Paris", u64::from, &places, Some(&allowed), 10)
            .unwrap()
            .hits;
        assert_eq!(
            hits,
            [(2, "Paris, France".into()), (1, "Paris".into())],
            "the namesake in Texas is explained by its own place"
        );
    }
}
