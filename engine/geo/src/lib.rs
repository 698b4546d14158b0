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
//! - `reverse`: [`nearest`] — a k-d tree over the places' points on the unit sphere;
//!   [`haversine_km`].
//! - `forward`: [`lookup`] — the name index, qualifiers ("Paris, TX"), suggestions.
//! - `mentions`: [`places_in_text`] — place names in a question, with the rule that keeps
//!   "Nice", "Bath" and "May" from being places when they are words.
//! - `fold`: names as they are compared (lower-case ASCII, no accents, no punctuation).
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

mod data;
mod error;
mod fold;
mod forward;
mod mentions;
mod place;
mod reverse;

use std::sync::OnceLock;

pub use error::GeoError;
pub use mentions::Mention;
pub use place::{Place, PlaceMatch};
pub use reverse::haversine_km;

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
}

static GAZETTEER: OnceLock<Result<Gazetteer, GeoError>> = OnceLock::new();

fn gazetteer() -> Result<&'static Gazetteer, GeoError> {
    GAZETTEER
        .get_or_init(|| {
            data::decode(data::EMBEDDED).map(|table| Gazetteer {
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
    let points = g
        .points
        .get_or_init(|| reverse::PointIndex::build(&g.table.places))
        .as_ref()
        .map_err(Clone::clone)?;
    let Some(place) = points.nearest(lat, lon).and_then(|i| g.table.places.get(i)) else {
        return Ok(None);
    };
    let distance_km = haversine_km(lat, lon, place.lat, place.lon);
    Ok((distance_km <= max_km).then_some(PlaceMatch { place, distance_km }))
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

/// The places named in `text`, in text order ("photos I took in Paris" → Paris, France).
///
/// The rule (longest names first, "in/at/from/near/to" as a cue, common English words such as
/// "Nice" or "Bath" only when cued and capitalised) is in the `mentions` module doc. Only an
/// unreadable embedded gazetteer is an error.
pub fn places_in_text(text: &str) -> Result<Vec<Mention>, GeoError> {
    let g = gazetteer()?;
    Ok(mentions::find(text, &g.table, g.names()))
}

#[cfg(test)]
mod tests;
