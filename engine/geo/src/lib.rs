//! memdb's offline geocoder: GeoNames populated places built into the binary, the nearest place
//! to a GPS point, a place name to the place it names, and the place names of a free text.
//!
//! This crate owns the embedded gazetteer (`data/geonames.tsv.gz`: GeoNames cities1000, about
//! 170,000 places of 1,000 people or more, with region and country names; made once by
//! `scripts/geonames-data.py`, provenance and licence in `data/README.md`) and every question
//! asked of it. It knows nothing of the store; the engine will call it at ingest (a photo's GPS
//! to its place) and at query time (a place named in a question, `NEAR('Paris', 25km)`).
//!
//! Code map:
//! - `data`: the embedded bytes decoded into [`Place`]s (gzip'd TSV, checked line by line).
//! - `place`: [`Place`] (name, district, region, country, point, population) and
//!   [`PlaceMatch`].
//! - `reverse`: [`nearest`] and [`within`] — a k-d tree over the places' points on the unit
//!   sphere; [`haversine_km`].
//! - `settlement`: [`settlement`] — the city a person would name for a point, which is not
//!   always the nearest place (a neighbourhood: "Vallehermoso" is in Madrid); [`reach_km`].
//! - `forward`: [`lookup`] — the name index, qualifiers ("Paris, TX"), suggestions.
//! - `mentions`: [`places_in_text`] — place names in a question, with the rule that keeps
//!   "Nice", "Bath" and "May" from being places when they are words.
//! - `bloom`: the name screen, Bloom filters built with the crate (`build.rs`) so that a text
//!   naming no place is answered without decoding the gazetteer.
//! - `fold`: names as they are compared (lower-case ASCII, no accents, no punctuation):
//!   [`fold_name`].
//!
//! **Invariants:**
//! - no file and no network at run time: the data is `include_bytes!`'d, decoded on first use,
//!   once per process (thread-safe), and the k-d tree and the name index are each built on the
//!   first call that needs them;
//! - [`nearest`] returns exactly the place a brute-force haversine scan of [`places`] finds
//!   (equal distances aside), within the cap given; a district (a city's arrondissement that
//!   GeoNames lists as a place, "Paris 16 Passy") reads as its city, so the Eiffel Tower is in
//!   Paris;
//! - bad input is a typed [`GeoError`], never a panic: NaN or out-of-range coordinates, a
//!   negative or NaN cap, an empty or unknown name (with suggestions); a text never fails;
//! - GeoNames data is CC BY 4.0: whatever shows a place from here credits [`ATTRIBUTION`].
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod bloom;
mod data;
mod error;
mod fold;
mod forward;
mod mentions;
mod place;
mod reverse;
mod settlement;

use std::sync::OnceLock;

pub use error::GeoError;
pub use mentions::Mention;
pub use place::{Place, PlaceMatch};
pub use reverse::haversine_km;
pub use settlement::{Settlement, URBAN_DENSITY, reach_km};

/// The credit GeoNames' licence asks for, to show wherever places from this crate are shown
/// (README, about screens).
pub const ATTRIBUTION: &str = "Place names and coordinates from GeoNames (https://www.geonames.org), \
     licensed under CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/).";

/// Size of the embedded gazetteer in the binary, in bytes (gzip'd).
pub const EMBEDDED_DATA_BYTES: usize = data::EMBEDDED.len();

/// The decoded table and the indexes built from it on demand.
struct Gazetteer {
    table: data::Table,
    points: OnceLock<Result<reverse::PointIndex, GeoError>>,
    names: OnceLock<forward::NameIndex>,
    /// The largest [`reach_km`] of any place: how far around a point the settlement rule looks.
    farthest_reach_km: f64,
}

static GAZETTEER: OnceLock<Result<Gazetteer, GeoError>> = OnceLock::new();

fn gazetteer() -> Result<&'static Gazetteer, GeoError> {
    GAZETTEER
        .get_or_init(|| {
            data::decode(data::EMBEDDED).map(|table| Gazetteer {
                farthest_reach_km: reach_km(
                    table
                        .places
                        .iter()
                        .map(Place::population)
                        .max()
                        .unwrap_or(0),
                ),
                table,
                points: OnceLock::new(),
                names: OnceLock::new(),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl Gazetteer {
    fn names(&self) -> &forward::NameIndex {
        self.names
            .get_or_init(|| forward::NameIndex::build(&self.table.places))
    }

    fn points(&self) -> Result<&reverse::PointIndex, GeoError> {
        self.points
            .get_or_init(|| reverse::PointIndex::build(&self.table.places))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Every place of the gazetteer, in GeoNames id order (decoded on first use).
pub fn places() -> Result<&'static [Place], GeoError> {
    Ok(&gazetteer()?.table.places)
}

/// The populated place nearest (`lat`, `lon`) by great-circle distance, if it is at most
/// `max_km` away (`f64::INFINITY`: no cap).
///
/// `Ok(None)` means no place within the cap (the open sea, say). A NaN or out-of-range
/// coordinate is [`GeoError::InvalidCoordinates`], a negative or NaN cap
/// [`GeoError::InvalidDistance`].
pub fn nearest(lat: f64, lon: f64, max_km: f64) -> Result<Option<PlaceMatch>, GeoError> {
    reverse::check_point(lat, lon)?;
    if max_km.is_nan() || max_km < 0.0 {
        return Err(GeoError::InvalidDistance { max_km });
    }
    let g = gazetteer()?;
    let Some(place) = g
        .points()?
        .nearest(lat, lon)
        .and_then(|i| g.table.places.get(i))
    else {
        return Ok(None);
    };
    let distance_km = haversine_km(lat, lon, place.lat, place.lon);
    Ok((distance_km <= max_km).then_some(PlaceMatch { place, distance_km }))
}

/// Every place within `radius_km` of (`lat`, `lon`) by great-circle distance, nearest first
/// (ties: lower GeoNames id).
///
/// Errors as [`nearest`]'s: bad coordinates, a negative or NaN radius.
pub fn within(lat: f64, lon: f64, radius_km: f64) -> Result<Vec<PlaceMatch>, GeoError> {
    reverse::check_point(lat, lon)?;
    if radius_km.is_nan() || radius_km < 0.0 {
        return Err(GeoError::InvalidDistance { max_km: radius_km });
    }
    let g = gazetteer()?;
    let mut found: Vec<PlaceMatch> = g
        .points()?
        .within(lat, lon, radius_km)
        .into_iter()
        .filter_map(|i| g.table.places.get(i))
        .map(|place| PlaceMatch {
            place,
            distance_km: haversine_km(lat, lon, place.lat, place.lon),
        })
        .filter(|m| m.distance_km <= radius_km)
        .collect();
    found.sort_by(|a, b| {
        a.distance_km
            .total_cmp(&b.distance_km)
            .then(a.place.geoname_id.cmp(&b.place.geoname_id))
    });
    Ok(found)
}

/// The settlement of (`lat`, `lon`): its nearest place within `max_km` and the city, town or
/// village a person would name there (the rule is in the `settlement` module doc: the most
/// populous place of the nearest place's country whose [`reach_km`] covers the point, else the
/// nearest place). `Ok(None)` when no place is within `max_km`; errors as [`nearest`]'s.
pub fn settlement(lat: f64, lon: f64, max_km: f64) -> Result<Option<Settlement>, GeoError> {
    let Some(nearest) = nearest(lat, lon, max_km)? else {
        return Ok(None);
    };
    let g = gazetteer()?;
    Ok(Some(settlement::settle(
        &g.table.places,
        g.points()?,
        (lat, lon),
        nearest,
        g.farthest_reach_km,
    )))
}

/// `name` as this crate compares names: lower-case ASCII letters and digits, one space between
/// words ("Saint-Étienne" and "saint etienne" are both "saint etienne", "München" is
/// "munchen"). Two names are the same place name exactly when their folds are equal.
pub fn fold_name(name: &str) -> String {
    fold::fold(name)
}

/// The place a person most likely means by `name`: case, accents and punctuation aside, by its
/// GeoNames name or an alternate ("Roma", "München"), the most populous first; qualifiers after
/// commas narrow it to a country or region ("Paris, France", "Paris, TX").
///
/// An unknown name is [`GeoError::UnknownPlace`] with up to five suggestions; a name with no
/// letter or digit is [`GeoError::EmptyName`].
pub fn lookup(name: &str) -> Result<&'static Place, GeoError> {
    let g = gazetteer()?;
    let place = g.names().lookup(&g.table, name)?;
    g.table
        .places
        .get(place)
        .ok_or_else(|| GeoError::Data(format!("name index points past the table ({place})")))
}

/// Every place `name` may mean, [`lookup`]'s choice first (the most populous, as there), then
/// the other places that carry the name as their own or as an alternate and match its
/// qualifiers, most populous first: "Newcastle" is Newcastle, Australia, then Newcastle, South
/// Africa, Newcastle upon Tyne, … A caller that knows where a person's things are picks among
/// them. Errors as [`lookup`]'s.
pub fn candidates(name: &str) -> Result<Vec<&'static Place>, GeoError> {
    let g = gazetteer()?;
    let found = g.names().candidates(&g.table, name)?;
    Ok(found
        .into_iter()
        .filter_map(|i| g.table.places.get(i))
        .collect())
}

/// The places named in `text`, in text order ("photos I took in Paris" → Paris, France).
///
/// The rule (longest names first, "in/at/from/near/to" as a cue, common English words such as
/// "Nice" or "Bath" only when cued and capitalised) is in the `mentions` module doc. Only an
/// unreadable embedded gazetteer is an error.
///
/// A text that names no place is answered without decoding the gazetteer (a Bloom-filter
/// screen of every name the rule could take, built with the crate: [`may_name_a_place`]).
pub fn places_in_text(text: &str) -> Result<Vec<Mention>, GeoError> {
    if !mentions::may_name_a_place(text) {
        return Ok(Vec::new());
    }
    let g = gazetteer()?;
    Ok(mentions::find(text, &g.table, g.names()))
}

/// Whether `text` may name a place ([`places_in_text`]'s rule), decided without decoding the
/// gazetteer: `false` means [`places_in_text`] finds nothing and costs microseconds; `true`,
/// that it may find something (rarely nothing: the screen's filters have false positives)
/// and decodes the gazetteer on its first call in the process (about 250 ms).
pub fn may_name_a_place(text: &str) -> bool {
    mentions::may_name_a_place(text)
}

#[cfg(test)]
mod tests;
