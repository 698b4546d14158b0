//! The place stage: an item's GPS position to the place it is in, in words — city, region,
//! country — from the offline gazetteer of `memdb-geo` (GeoNames, built into the binary; no
//! network, no file).
//!
//! Two ways in:
//! - [`fill_place`], pure, on a draft: the ingest runs it on every item just before it commits
//!   (so a re-import of the same photo computes the same place and stays `unchanged`);
//! - [`Store::fill_places`], a pass over the stored items, for stores ingested before places
//!   existed (and for items an application put through a [`crate::WriteBatch`] directly). It
//!   commits a window of items at a time, each an amendment of the item as it is when the window
//!   commits, so it is idempotent and resumable like the other stages; the ingest's `finish`
//!   runs it once per store, then records that it did (setting `PLACES_SETTING`).
//!
//! The place is the settlement rule of `memdb_geo::settlement`: the city a person would name
//! ("Madrid", not its neighbourhood "Vallehermoso", which is kept as the locality), its region
//! and country, the distance to the city's point and the city's GeoNames id. A position with no
//! populated place within [`PlaceOptions::max_km`] gets no place (the open sea, the wilderness):
//! that is not an error.
//!
//! Invariants: an item that already has a place keeps it (given by hand, or filled before); a
//! name of the item's own (`Location::name`) is never overwritten — only an item without one is
//! named after its place ("Paris, Île-de-France, France"); an item without a position is not
//! touched.

use crate::handle::Store;
use memdb_formats::item::{ItemFields, PlaceName};

use crate::error::Result;
use memdb_store::ScanFilter;

/// Default [`PlaceOptions::max_km`].
pub const DEFAULT_PLACE_CAP_KM: f64 = 50.0;

/// Setting (`settings` table, SPEC.md §5) recording that [`Store::fill_places`] went over
/// every item with the current rule: its value is [`PLACES_VERSION`].
pub(crate) const PLACES_SETTING: &str = "places";
/// The version of the place rule (gazetteer and settlement rule). A store whose pass was of an
/// older version is passed over again, which places the items still without a place; a place
/// once given is kept (the module's invariant), so a new rule does not rename old photos.
pub(crate) const PLACES_VERSION: &str = "1";

/// Items amended per commit by [`Store::fill_places`].
const PLACE_WINDOW: usize = 256;

/// How the place stage names positions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaceOptions {
    /// A position farther than this from every populated place of the gazetteer (places of
    /// 1,000 people or more) gets no place. The default, 50 km, names the village of a photo
    /// taken in the countryside (in Europe the nearest such place is rarely 15 km away) and
    /// leaves the sea and the wilderness unnamed, where "the nearest town" would be a town the
    /// person was never in.
    pub max_km: f64,
}

impl Default for PlaceOptions {
    fn default() -> Self {
        PlaceOptions {
            max_km: DEFAULT_PLACE_CAP_KM,
        }
    }
}

/// What [`Store::fill_places`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaceReport {
    /// Items given a place now.
    pub placed: u64,
    /// Items with a position and no place within the cap.
    pub unplaced: u64,
    /// Items that had a place already.
    pub already: u64,
}

/// The place of a position, if a populated place is within `options.max_km` (coordinates
/// outside the globe have none: validation refuses them elsewhere).
pub fn place_of(lat: f64, lon: f64, options: &PlaceOptions) -> Option<PlaceName> {
    let settlement = memdb_geo::settlement(lat, lon, options.max_km).ok()??;
    let (city, nearest) = (settlement.city.place, settlement.nearest.place);
    let own = |p: &memdb_geo::Place| p.district().unwrap_or(p.name()).to_owned();
    let locality = (nearest.geoname_id() != city.geoname_id())
        .then(|| own(nearest))
        .filter(|l| *l != city.name());
    Some(PlaceName {
        city: city.name().to_owned(),
        locality,
        region: city.region().map(str::to_owned),
        country: Some(city.country().to_owned()),
        country_code: Some(city.country_code().to_owned()),
        // Metres, rounded: a u32 holds any distance on Earth.
        distance_m: Some((settlement.city.distance_km * 1000.0).round() as u32),
        geonames_id: Some(city.geoname_id()),
    })
}

/// Fills the place of `fields` from its position when it has a position and no place, and
/// names the location after the place when it has no name of its own. Returns whether it
/// changed anything.
pub fn fill_place(fields: &mut ItemFields, options: &PlaceOptions) -> bool {
    let Some(location) = fields.location.as_mut() else {
        return false;
    };
    let Some(geo) = location.geo else {
        return false;
    };
    if location.place.is_some() {
        return false;
    }
    let Some(place) = place_of(geo.lat, geo.lon, options) else {
        return false;
    };
    if location.name.is_none() {
        location.name = Some(place.label());
    }
    location.place = Some(place);
    true
}

/// The place stage as a client of the store: a stand-in a repair reads again from a photo's
/// original gets the place its GPS is in, as an import would have given it.
pub(crate) struct PlaceFields;

impl memdb_store::derived::DerivedData for PlaceFields {
    fn complete_stand_in(&self, fields: &mut ItemFields) {
        fill_place(fields, &PlaceOptions::default());
    }
}

impl Store {
    /// Gives every stored item that has a position and no place its place ([`fill_place`]), a
    /// window of items per commit; `progress` gets (items done, items to do). Then records that
    /// the store has been through this pass (`PLACES_SETTING`). Running it again changes
    /// nothing.
    pub fn fill_places(
        &self,
        options: &PlaceOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<PlaceReport> {
        let snapshot = self.snapshot()?;
        let mut report = PlaceReport::default();
        let mut todo = Vec::new();
        for item in snapshot.scan(&ScanFilter::default())? {
            let Some(location) = &item.fields.location else {
                continue;
            };
            match (location.geo, &location.place) {
                (Some(_), Some(_)) => report.already += 1,
                (Some(_), None) => todo.push(item),
                (None, _) => {}
            }
        }
        let total = todo.len() as u64;
        progress(0, total);
        let mut done = 0;
        for window in todo.chunks(PLACE_WINDOW) {
            let mut batch = self.batch();
            for item in window {
                let mut fields = item.fields.clone();
                if fill_place(&mut fields, options) {
                    report.placed += 1;
                    let options = *options;
                    // Applied to the item as it is at commit time: a change made since the scan
                    // is kept, and an item given a place meanwhile is left as it is.
                    batch.amend(item.id, move |f| {
                        fill_place(f, &options);
                    });
                } else {
                    report.unplaced += 1;
                }
            }
            if !batch.is_empty() {
                batch.commit()?;
            }
            done += window.len() as u64;
            progress(done, total);
        }
        let mut batch = self.batch();
        batch.set_setting(PLACES_SETTING, PLACES_VERSION.to_owned());
        batch.commit()?;
        Ok(report)
    }

    /// Whether [`fill_places`](Store::fill_places) has gone over this store with the current
    /// rule.
    pub(crate) fn places_filled(&self) -> Result<bool> {
        Ok(self.snapshot()?.setting(PLACES_SETTING)?.as_deref() == Some(PLACES_VERSION))
    }
}

#[cfg(test)]
mod tests {
    use memdb_formats::item::{EventTime, GeoPoint, Location, Source};

    use super::*;

    fn at(lat: f64, lon: f64, name: Option<&str>) -> ItemFields {
        let mut f = ItemFields::new(Source::Image, EventTime::utc(0));
        f.location = Some(Location {
            name: name.map(str::to_owned),
            geo: Some(GeoPoint { lat, lon }),
            place: None,
        });
        f
    }

    #[test]
    fn a_position_gets_its_city_and_a_name_when_it_has_none() {
        // Near the Eiffel Tower; the nearest GeoNames place is the 16th arrondissement.
        let mut f = at(48.857833, 2.297, None);
        assert!(fill_place(&mut f, &PlaceOptions::default()));
        let l = f.location.as_ref().unwrap();
        let p = l.place.as_ref().unwrap();
        assert_eq!(p.city, "Paris");
        assert_eq!(p.country_code.as_deref(), Some("FR"));
        assert_eq!(p.geonames_id, Some(2_988_507));
        assert!(p.distance_m.is_some_and(|d| d < 5_000), "{p:?}");
        assert_eq!(l.name.as_deref(), Some("Paris, Île-de-France, France"));
        // Filled once: nothing changes the second time.
        let before = f.clone();
        assert!(!fill_place(&mut f, &PlaceOptions::default()));
        assert_eq!(f, before);
    }

    #[test]
    fn a_name_of_its_own_is_kept_and_far_positions_get_no_place() {
        let mut f = at(48.857833, 2.297, Some("Tour Eiffel"));
        assert!(fill_place(&mut f, &PlaceOptions::default()));
        let l = f.location.as_ref().unwrap();
        assert_eq!(l.name.as_deref(), Some("Tour Eiffel"));
        assert_eq!(l.place.as_ref().unwrap().city, "Paris");
        // Point Nemo: nothing within 50 km (or 2,000).
        let mut sea = at(-48.8767, -123.3933, None);
        assert!(!fill_place(&mut sea, &PlaceOptions::default()));
        assert_eq!(sea, at(-48.8767, -123.3933, None));
        // The cap is the option's: a village 8 km away is out of a 5 km cap.
        let mut wales = at(51.846667, -3.337833, None);
        assert!(!fill_place(&mut wales, &PlaceOptions { max_km: 5.0 }));
        assert!(fill_place(&mut wales, &PlaceOptions::default()));
        // Out-of-range coordinates are validation's to refuse: no place, no panic.
        let mut bad = at(91.0, 0.0, None);
        assert!(!fill_place(&mut bad, &PlaceOptions::default()));
        // No position, nothing to do.
        let mut named = ItemFields::new(Source::Note, EventTime::utc(0));
        named.location = Some(Location {
            name: Some("Home".into()),
            geo: None,
            place: None,
        });
        assert!(!fill_place(&mut named, &PlaceOptions::default()));
    }

    fn draft(fields: ItemFields) -> memdb_formats::item::ItemDraft {
        memdb_formats::item::ItemDraft {
            fields,
            supersedes: None,
        }
    }

    /// Items put directly (no external id, so only an amendment by id can change them) are
    /// placed by the pass, once: no item is added, each keeps its old version as history, and
    /// a second pass changes nothing.
    #[test]
    fn the_pass_places_stored_items_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), crate::Options::default()).unwrap();
        let mut named = at(41.853, 12.488833, Some("Testaccio market"));
        named.external_id = Some("n1".into());
        let mut plain = ItemFields::new(Source::Note, EventTime::utc(5));
        plain.body = Some("no position".into());
        let mut batch = store.batch();
        batch.put(draft(at(48.857833, 2.297, None)));
        batch.put(draft(named));
        batch.put(draft(at(-48.8767, -123.3933, None)));
        batch.put(draft(plain));
        batch.commit().unwrap();
        assert!(!store.places_filled().unwrap());

        let report = store
            .fill_places(&PlaceOptions::default(), &mut |_, _| {})
            .unwrap();
        assert_eq!(
            report,
            PlaceReport {
                placed: 2,
                unplaced: 1,
                already: 0
            }
        );
        assert!(store.places_filled().unwrap());
        let snap = store.snapshot().unwrap();
        assert_eq!(snap.item_count().unwrap(), 4);
        let items = snap.scan(&ScanFilter::default()).unwrap();
        let cities: Vec<Option<&str>> = items
            .iter()
            .map(|i| {
                i.fields
                    .location
                    .as_ref()
                    .and_then(|l| l.place.as_ref())
                    .map(|p| p.city.as_str())
            })
            .collect();
        assert_eq!(cities, [Some("Paris"), Some("Rome"), None, None]);
        assert_eq!(
            items[1].fields.location.as_ref().unwrap().name.as_deref(),
            Some("Testaccio market")
        );
        assert_eq!(snap.versions(items[0].id).unwrap().len(), 1);

        let again = store
            .fill_places(&PlaceOptions::default(), &mut |_, _| {})
            .unwrap();
        assert_eq!((again.placed, again.already), (0, 2));
        assert_eq!(
            store
                .snapshot()
                .unwrap()
                .versions(items[0].id)
                .unwrap()
                .len(),
            1
        );
    }

    /// The ingest places items before they commit, so the same items again are `unchanged`;
    /// its pass over stored items runs once per store.
    #[test]
    fn the_ingest_places_items_as_they_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), crate::Options::default()).unwrap();
        let photo = |name: &str, lat: f64, lon: f64| {
            let mut f = at(lat, lon, None);
            f.external_id = Some(name.into());
            crate::IngestItem::new(draft(f))
        };
        let ingest = |item, places| {
            let options = crate::IngestOptions {
                places,
                ..crate::IngestOptions::commit_only()
            };
            store
                .ingest_items([item], None, options, &mut |_, _, _| {})
                .unwrap()
        };
        let madrid = || photo("madrid.jpg", 40.446972, -3.724753);
        let first = ingest(madrid(), Some(PlaceOptions::default()));
        assert_eq!((first.added, first.placed), (1, 1));
        assert_eq!(first.places.map(|p| p.already), Some(1));
        let item = store
            .snapshot()
            .unwrap()
            .get_by_external_id("madrid.jpg")
            .unwrap()
            .unwrap();
        let location = item.fields.location.unwrap();
        assert_eq!(location.name.as_deref(), Some("Madrid, Spain"));
        let second = ingest(madrid(), Some(PlaceOptions::default()));
        assert_eq!((second.unchanged, second.placed), (1, 1));
        assert_eq!(second.places, None, "the pass ran once");
        // Without the stage, nothing is placed.
        let third = ingest(photo("wales.jpg", 51.846667, -3.337833), None);
        assert_eq!((third.added, third.placed), (1, 0));
    }

    #[test]
    fn the_city_is_the_one_a_person_names_and_the_neighbourhood_the_locality() {
        let mut f = at(40.446972, -3.724753, None);
        assert!(fill_place(&mut f, &PlaceOptions::default()));
        let p = f.location.unwrap().place.unwrap();
        assert_eq!(p.city, "Madrid");
        assert!(p.locality.is_some_and(|l| l != "Madrid"));
        assert_eq!(p.country.as_deref(), Some("Spain"));
    }
}
