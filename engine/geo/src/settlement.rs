//! The settlement a point is in: the city, town or village a person would name, which is not
//! always the nearest place of the gazetteer.
//!
//! GeoNames lists neighbourhoods as places of their own: the nearest place to a photo taken in
//! Madrid is "Vallehermoso", in Rome "Testaccio". A person says "Madrid". The rule:
//!
//! 1. Every place *reaches* as far as its people would spread at [`URBAN_DENSITY`] people per
//!    km²: a disc of radius √(population / (π × density)) around its point ([`reach_km`]) —
//!    16 km for Madrid's 3.3 million, 2 km for a town of 50,000, 280 m for a village of 1,000.
//! 2. The settlement of a point is the most populous place that reaches it, among the places of
//!    the nearest place's country (a city across a border is not where one is); ties go to the
//!    lower GeoNames id.
//! 3. When no place reaches the point (the countryside), it is the nearest place.
//!
//! The density is a round figure for the cities proper of Europe (London 5,700, Madrid 5,400,
//! Berlin 4,100, Helsinki 3,100, Rome 2,200 people per km²), fixed once for every point on
//! Earth; it is not fitted to any photo. A suburb that is a town of its own inside a large
//! city's reach (Saint-Denis beside Paris) reads as the city, with the town as the locality.

use crate::place::{Place, PlaceMatch};
use crate::reverse::{PointIndex, haversine_km};

/// People per km² at which a place's population is spread to find its reach.
pub const URBAN_DENSITY: f64 = 4_000.0;

/// How far a place of `population` people reaches, in km (see the module doc).
pub fn reach_km(population: u64) -> f64 {
    (population as f64 / (std::f64::consts::PI * URBAN_DENSITY)).sqrt()
}

/// A point placed in its settlement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settlement {
    /// The place nearest the point (a neighbourhood, a village), with its distance.
    pub nearest: PlaceMatch,
    /// The city, town or village a person would name, with its distance: `nearest` itself
    /// when no more populous place of its country reaches the point.
    pub city: PlaceMatch,
}

/// The settlement of a checked point whose nearest place is `nearest` (see the module doc);
/// `farthest_reach_km` is the largest [`reach_km`] of the table.
pub(crate) fn settle(
    places: &'static [Place],
    points: &PointIndex,
    (lat, lon): (f64, f64),
    nearest: PlaceMatch,
    farthest_reach_km: f64,
) -> Settlement {
    // A place that reaches the point is at least as populous as the nearest place if that one
    // does not reach it (it is farther and reaches farther), so starting from the nearest and
    // keeping the most populous place that reaches the point is the rule.
    let mut city = nearest;
    for i in points.within(lat, lon, farthest_reach_km) {
        let Some(place) = places.get(i) else { continue };
        if place.country_code() != nearest.place.country_code() {
            continue;
        }
        let distance_km = haversine_km(lat, lon, place.lat(), place.lon());
        let more_populous = (place.population(), std::cmp::Reverse(place.geoname_id()))
            > (
                city.place.population(),
                std::cmp::Reverse(city.place.geoname_id()),
            );
        if more_populous && distance_km <= reach_km(place.population()) {
            city = PlaceMatch { place, distance_km };
        }
    }
    Settlement { nearest, city }
}
