//! Items the unit tests of several crates share (feature `fixtures`, a dev-dependency only).

use crate::item::{
    Camera, EventTime, GeoPoint, ItemFields, Location, Orientation, PlaceName, Source,
};

/// The shared photo of the Eiffel Tower as the importer and the place stage leave it: taken on
/// 24 August 2002 at 13:59 (UTC+2) with a FUJIFILM FinePixS2Pro, landscape, at 48.857833,
/// 2.297, in Paris (nearest place the 16th arrondissement), named after its place.
pub fn eiffel_photo() -> ItemFields {
    let mut f = ItemFields::new(
        Source::Image,
        EventTime::parse("2002-08-24T13:59:08+02:00").unwrap_or(EventTime::UNDATED),
    );
    let place = PlaceName {
        city: "Paris".into(),
        locality: Some("Paris 16 Passy".into()),
        region: Some("Île-de-France".into()),
        country: Some("France".into()),
        country_code: Some("FR".into()),
        distance_m: Some(3_829),
        geonames_id: Some(2_988_507),
    };
    f.location = Some(Location {
        name: Some(place.label()),
        geo: Some(GeoPoint {
            lat: 48.857833,
            lon: 2.297,
        }),
        place: Some(place),
    });
    f.camera = Some(Camera {
        make: Some("FUJIFILM".into()),
        model: Some("FinePixS2Pro".into()),
        lens: None,
    });
    f.orientation = Some(Orientation::Landscape);
    f.tags = vec!["photo".into(), "file:FujiFilm_FinePixS2Pro.jpg".into()];
    f
}
