//! The geocoder's one error type: every refusal names the value it refused.

/// Why a geocoding call gave no answer.
///
/// "Nothing within the distance cap" is not an error: [`crate::nearest`] returns `Ok(None)`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GeoError {
    /// A latitude outside [-90, 90], a longitude outside [-180, 180], or either not a number.
    #[error(
        "invalid coordinates ({lat}, {lon}): latitude must be in [-90, 90] and longitude in \
         [-180, 180]"
    )]
    InvalidCoordinates {
        /// The latitude given.
        lat: f64,
        /// The longitude given.
        lon: f64,
    },
    /// A distance cap that is negative or not a number (infinity means no cap).
    #[error("invalid distance cap {max_km} km: it must be 0 or more")]
    InvalidDistance {
        /// The cap given, in kilometres.
        max_km: f64,
    },
    /// A place name with no letter or digit in it.
    #[error("no place name given")]
    EmptyName,
    /// No place of the gazetteer has this name (or none with this name is in the region or
    /// country the name was qualified with).
    #[error("{}", unknown_place_message(.name, .suggestions))]
    UnknownPlace {
        /// The name as given, qualifiers included.
        name: String,
        /// Up to five places a person may have meant ("Paris, France"), best first; empty when
        /// nothing is close.
        suggestions: Vec<String>,
    },
    /// The gazetteer embedded in the build could not be read: a build error, never an input's.
    #[error("the embedded GeoNames gazetteer is damaged: {0}")]
    Data(String),
}

fn unknown_place_message(name: &str, suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        format!("unknown place {name:?}")
    } else {
        let quoted: Vec<String> = suggestions.iter().map(|s| format!("\"{s}\"")).collect();
        format!(
            "unknown place {name:?}; did you mean {}?",
            quoted.join(" or ")
        )
    }
}
