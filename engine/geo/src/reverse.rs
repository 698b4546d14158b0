//! Reverse geocoding: the place nearest a point.
//!
//! Every place is a point on the unit sphere, (x, y, z) from its latitude and longitude, in a
//! k-d tree (kiddo). The straight-line (chord) distance between two points on the sphere grows
//! with the great-circle distance, so the nearest point by chord is the nearest by great-circle
//! distance: no special case at the antimeridian (179.9° and -179.9° are neighbours) or at the
//! poles (every longitude meets there). The distance reported is the haversine distance on a
//! sphere of the mean Earth radius.

use kiddo::{ImmutableKdTree, SquaredEuclidean};

use crate::GeoError;
use crate::place::Place;

/// Mean Earth radius (IUGG), kilometres.
pub(crate) const EARTH_RADIUS_KM: f64 = 6371.0088;

/// Great-circle distance in kilometres between two points given in degrees (haversine formula,
/// mean Earth radius). Coordinates are not checked.
pub fn haversine_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * h.sqrt().min(1.0).asin()
}

/// Refuses a latitude outside [-90, 90], a longitude outside [-180, 180], and NaN.
pub(crate) fn check_point(lat: f64, lon: f64) -> Result<(), GeoError> {
    if (-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon) {
        Ok(())
    } else {
        Err(GeoError::InvalidCoordinates { lat, lon })
    }
}

fn unit_vector(lat: f64, lon: f64) -> [f64; 3] {
    let (p, l) = (lat.to_radians(), lon.to_radians());
    [p.cos() * l.cos(), p.cos() * l.sin(), p.sin()]
}

/// The k-d tree over every place's point; the item of a point is its index in the table.
pub(crate) struct PointIndex {
    tree: ImmutableKdTree<f64, 3>,
}

impl std::fmt::Debug for PointIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointIndex").finish_non_exhaustive()
    }
}

impl PointIndex {
    pub(crate) fn build(places: &[Place]) -> Result<Self, GeoError> {
        let points: Vec<[f64; 3]> = places.iter().map(|p| unit_vector(p.lat, p.lon)).collect();
        let tree = ImmutableKdTree::new_from_slice(&points)
            .map_err(|e| GeoError::Data(format!("k-d tree: {e:?}")))?;
        Ok(Self { tree })
    }

    /// Indexes of the places within `radius_km` of the (checked) point, nearest first (as far
    /// as the chord order; callers measure haversine distances themselves).
    pub(crate) fn within(&self, lat: f64, lon: f64, radius_km: f64) -> Vec<usize> {
        if self.tree.size() == 0 || radius_km.is_nan() || radius_km < 0.0 {
            return Vec::new();
        }
        // The chord of an arc of angle θ on the unit sphere is 2·sin(θ/2); beyond half the
        // globe every point is in.
        let angle = (radius_km / EARTH_RADIUS_KM).min(std::f64::consts::PI);
        let chord = 2.0 * (angle / 2.0).sin();
        // A hair more than the chord: rounding must not drop a place exactly on the circle
        // (the caller filters by haversine distance anyway).
        let reach = chord * chord * (1.0 + 1e-9) + 1e-15;
        self.tree
            .query(&unit_vector(lat, lon))
            .within::<SquaredEuclidean<f64>>(reach)
            .execute()
            .into_iter()
            .filter_map(|hit| usize::try_from(hit.item).ok())
            .collect()
    }

    /// Index of the place nearest the (checked) point, or `None` for an empty table.
    pub(crate) fn nearest(&self, lat: f64, lon: f64) -> Option<usize> {
        if self.tree.size() == 0 {
            return None;
        }
        let hit = self
            .tree
            .query(&unit_vector(lat, lon))
            .nearest_one::<SquaredEuclidean<f64>>()
            .execute();
        usize::try_from(hit.item).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haversine_known_distances() {
        // Paris – London, about 344 km.
        let d = haversine_km(48.8566, 2.3522, 51.5074, -0.1278);
        assert!((d - 343.5).abs() < 1.0, "{d}");
        assert_eq!(haversine_km(10.0, 20.0, 10.0, 20.0), 0.0);
        // Across the antimeridian: 0.2° of longitude on the equator.
        let d = haversine_km(0.0, 179.9, 0.0, -179.9);
        assert!((d - 22.24).abs() < 0.01, "{d}");
        // Pole to pole, whatever the longitudes.
        let d = haversine_km(90.0, 10.0, -90.0, -170.0);
        assert!(
            (d - std::f64::consts::PI * EARTH_RADIUS_KM).abs() < 1e-6,
            "{d}"
        );
    }

    #[test]
    fn points_outside_the_globe_are_refused() {
        for (lat, lon) in [
            (f64::NAN, 0.0),
            (0.0, f64::NAN),
            (90.0001, 0.0),
            (-91.0, 0.0),
            (0.0, 180.5),
            (0.0, f64::NEG_INFINITY),
        ] {
            assert!(matches!(
                check_point(lat, lon),
                Err(GeoError::InvalidCoordinates { .. })
            ));
        }
        assert!(check_point(-90.0, -180.0).is_ok() && check_point(90.0, 180.0).is_ok());
    }
}
