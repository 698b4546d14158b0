//! Where an item happened: a GPS point ([`GeoPoint`]), a location as recorded ([`Location`]),
//! and the structured place a point is in ([`PlaceName`]).

/// A WGS 84 position in decimal degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoPoint {
    /// Latitude, −90..=90.
    pub lat: f64,
    /// Longitude, −180..=180.
    pub lon: f64,
}

impl GeoPoint {
    /// The coordinate (`"lat"` or `"lon"`) outside its range (finite, −90..=90 and
    /// −180..=180), and why; `None` for a valid position. The one range check of every
    /// reader and of [`ItemFields::validate`].
    pub fn out_of_range(self) -> Option<(&'static str, String)> {
        let GeoPoint { lat, lon } = self;
        if !(lat.is_finite() && (-90.0..=90.0).contains(&lat)) {
            return Some(("lat", format!("latitude {lat} is not within -90..=90")));
        }
        if !(lon.is_finite() && (-180.0..=180.0).contains(&lon)) {
            return Some(("lon", format!("longitude {lon} is not within -180..=180")));
        }
        None
    }
}

/// Where something happened: a place name, a position, the place the position is in, or any
/// of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Location {
    /// Human name of the place ("Lisbon", "Home"): the item's own, or, for an item that had
    /// none, its [`place`](Location::place)'s [`label`](PlaceName::label).
    pub name: Option<String>,
    /// Position, when known.
    pub geo: Option<GeoPoint>,
    /// The settlement the position is in, in words (SGM's `city` and `location_name`): given
    /// by hand, or filled at ingest from [`geo`](Location::geo) by the offline geocoder.
    pub place: Option<PlaceName>,
}

/// A place in words: the city a person would name, the region and the country, with where the
/// words came from.
///
/// Filled by the engine's place stage from a GPS position (GeoNames, see `memdb-geo`), or given
/// in an import. `city` is the settlement a person would say they were in ("Madrid"), which is
/// not always the nearest one in the gazetteer: that one, when it differs (a neighbourhood such
/// as "Vallehermoso", a village), is the `locality`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlaceName {
    /// The city, town or village, in its GeoNames spelling ("Madrid", "Zürich"); never empty.
    pub city: String,
    /// The nearest populated place when it is not `city`: a neighbourhood, district or village.
    pub locality: Option<String>,
    /// The first-level region in English ("Île-de-France", "Wales", "Texas").
    pub region: Option<String>,
    /// The country in English ("France").
    pub country: Option<String>,
    /// The country's ISO 3166-1 alpha-2 code ("FR"): two upper-case ASCII letters.
    pub country_code: Option<String>,
    /// Great-circle distance from the item's position to the city's own point, in metres.
    pub distance_m: Option<u32>,
    /// GeoNames id of `city` when it came from the gazetteer; `None` when given by hand.
    pub geonames_id: Option<u32>,
}

impl PlaceName {
    /// "Paris, Île-de-France, France": city, region (left out when absent or the city's own
    /// name, as "Madrid, Spain") and country — what an item without a name of its own is
    /// called, and what its text says.
    pub fn label(&self) -> String {
        let mut parts = vec![self.city.as_str()];
        if let Some(region) = self.region.as_deref().filter(|r| *r != self.city) {
            parts.push(region);
        }
        parts.extend(self.country.as_deref());
        parts.join(", ")
    }

    /// "Paris, France": city and country, what a page shows beside the coordinates.
    pub fn short_label(&self) -> String {
        match &self.country {
            Some(country) => format!("{}, {country}", self.city),
            None => self.city.clone(),
        }
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        if self.city.trim().is_empty() {
            return Err("place: city is empty".to_owned());
        }
        for (what, value) in [
            ("locality", &self.locality),
            ("region", &self.region),
            ("country", &self.country),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(format!("place: {what} is empty"));
            }
        }
        if let Some(code) = &self.country_code
            && !(code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase()))
        {
            return Err(format!(
                "place: country code `{code}` is not two upper-case letters (ISO 3166-1 alpha-2)"
            ));
        }
        Ok(())
    }
}
