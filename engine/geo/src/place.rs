//! A populated place of the gazetteer, and a place found near a point.

use std::fmt;
use std::sync::Arc;

/// One populated place of GeoNames' cities1000 (1,000 people or more).
///
/// A *district* — a municipal arrondissement GeoNames lists as a place of its own, such as
/// "Paris 16 Passy" — has its own point, population and id, but its [`name`](Place::name) is its
/// city's ("Paris") and its own name is [`district`](Place::district).
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub(crate) geoname_id: u32,
    pub(crate) name: Box<str>,
    pub(crate) district: Option<Box<str>>,
    /// `|`-separated (one allocation for all of them).
    pub(crate) alternates: Box<str>,
    pub(crate) admin1_code: Box<str>,
    pub(crate) region: Option<Arc<str>>,
    pub(crate) country_code: Arc<str>,
    pub(crate) country: Arc<str>,
    pub(crate) lat: f64,
    pub(crate) lon: f64,
    pub(crate) population: u64,
}

impl Place {
    /// GeoNames' id of this place (of the district itself, for a district).
    pub fn geoname_id(&self) -> u32 {
        self.geoname_id
    }

    /// The name as GeoNames writes it ("München" is "Munich", "Roma" is "Rome"); for a district,
    /// its city's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// [`name`](Place::name) in ASCII ("Zürich" → "Zurich", "Łódź" → "Lodz").
    pub fn ascii_name(&self) -> std::borrow::Cow<'_, str> {
        deunicode::deunicode_with_tofu_cow(&self.name, "[?]")
    }

    /// For a district, its own GeoNames name ("Paris 16 Passy"); `None` otherwise.
    pub fn district(&self) -> Option<&str> {
        self.district.as_deref()
    }

    /// Other names in the Latin alphabet ("Roma", "Lisboa"), kept for places of 15,000 people or
    /// more.
    pub fn alternates(&self) -> impl Iterator<Item = &str> {
        self.alternates.split('|').filter(|a| !a.is_empty())
    }

    /// The English name of the first-level region ("Île-de-France", "Texas", "England"), when
    /// GeoNames names it.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// GeoNames' code of the first-level region ("11", "TX", "ENG"); may be empty.
    pub fn region_code(&self) -> &str {
        &self.admin1_code
    }

    /// The region's name, else its code, else `None`.
    pub fn region_or_code(&self) -> Option<&str> {
        self.region().or_else(|| {
            let code = self.region_code();
            (!code.is_empty() && code != "00").then_some(code)
        })
    }

    /// ISO 3166-1 alpha-2 code of the country ("FR").
    pub fn country_code(&self) -> &str {
        &self.country_code
    }

    /// The country's English name ("France").
    pub fn country(&self) -> &str {
        &self.country
    }

    /// Latitude in degrees, WGS 84.
    pub fn lat(&self) -> f64 {
        self.lat
    }

    /// Longitude in degrees, WGS 84.
    pub fn lon(&self) -> f64 {
        self.lon
    }

    /// Population as GeoNames records it.
    pub fn population(&self) -> u64 {
        self.population
    }

    /// "Paris, France": the name and the country, what a page shows.
    pub fn short_label(&self) -> String {
        format!("{}, {}", self.name, self.country)
    }
}

/// "Paris, Île-de-France, France" (the region left out when GeoNames has none).
impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(region) = self.region().filter(|r| **r != *self.name) {
            write!(f, ", {region}")?;
        }
        write!(f, ", {}", self.country)
    }
}

/// The place nearest a point, and how far it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaceMatch {
    /// The place (a district reads as its city: see [`Place::district`]).
    pub place: &'static Place,
    /// Great-circle distance from the point to the place's own point, in kilometres.
    pub distance_km: f64,
}
