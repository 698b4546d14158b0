//! The embedded gazetteer: `data/geonames.tsv.gz` (made by `scripts/geonames-data.py`, described
//! in `data/README.md`) decoded once into [`Place`]s.
//!
//! The file's sections, in order: `#countries` (code, English name), `#admin1` (`CC.CODE`,
//! English name), `#common` (English words that are also a place's one-word name), `#places`
//! (geonameid, name, `|`-separated alternates, country code, admin1 code, latitude, longitude,
//! population, geonameid of the city a district belongs to). Any departure from that shape is a
//! [`GeoError::Data`]: the bytes are part of the build, so it cannot happen to a user, but it is
//! reported rather than panicking.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::Arc;

use crate::GeoError;
use crate::place::Place;

/// The gazetteer as built into the binary.
pub(crate) const EMBEDDED: &[u8] = include_bytes!("../data/geonames.tsv.gz");

/// The decoded gazetteer.
#[derive(Debug)]
pub(crate) struct Table {
    /// Every place, in geonameid order.
    pub(crate) places: Vec<Place>,
    /// Folded English words that are also the one-word name of a place.
    pub(crate) common: HashSet<String>,
    /// Folded country names and codes → country code (`"france"`, `"fr"` → `"FR"`).
    pub(crate) countries: HashMap<String, Arc<str>>,
}

/// Decodes the gzip'd TSV `bytes`.
pub(crate) fn decode(bytes: &[u8]) -> Result<Table, GeoError> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| GeoError::Data(format!("gzip/UTF-8: {e}")))?;
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, "#memdb-geo-data 1")) => {}
        other => {
            return Err(GeoError::Data(format!(
                "unknown header {:?}",
                other.map(|(_, l)| l)
            )));
        }
    }

    let mut section = "";
    let mut country_names: HashMap<String, Arc<str>> = HashMap::new();
    let mut admin1: HashMap<String, Arc<str>> = HashMap::new();
    let mut common = HashSet::new();
    // geonameid, fields, city geonameid
    let mut rows: Vec<Row<'_>> = Vec::new();
    for (n, line) in lines {
        let bad = |what: &str| GeoError::Data(format!("line {}: {what}: {line:?}", n + 1));
        if let Some(name) = line.strip_prefix('#') {
            section = name;
            continue;
        }
        match section {
            "countries" => {
                let (code, name) = line.split_once('\t').ok_or_else(|| bad("country"))?;
                country_names.insert(code.to_owned(), Arc::from(name));
            }
            "admin1" => {
                let (code, name) = line.split_once('\t').ok_or_else(|| bad("region"))?;
                admin1.insert(code.to_owned(), Arc::from(name));
            }
            "common" => {
                common.insert(line.to_owned());
            }
            "places" => rows.push(Row::parse(line).ok_or_else(|| bad("place"))?),
            _ => return Err(bad("line outside a known section")),
        }
    }
    if rows.is_empty() {
        return Err(GeoError::Data("no places".into()));
    }

    let by_id: HashMap<u32, usize> = rows.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let codes: HashMap<&str, Arc<str>> = country_names
        .keys()
        .map(|code| (code.as_str(), Arc::from(code.as_str())))
        .collect();
    let mut places = Vec::with_capacity(rows.len());
    let mut key = String::new();
    for row in &rows {
        let (Some(country_code), Some(country)) =
            (codes.get(row.country), country_names.get(row.country))
        else {
            return Err(GeoError::Data(format!("place {}: unknown country", row.id)));
        };
        key.clear();
        key.push_str(row.country);
        key.push('.');
        key.push_str(row.admin1);
        let (name, district) = match row.city.and_then(|id| by_id.get(&id)) {
            Some(&city) => (rows[city].name, Some(row.name)),
            None => (row.name, None),
        };
        places.push(Place {
            geoname_id: row.id,
            name: name.into(),
            district: district.map(Into::into),
            alternates: row.alternates.into(),
            admin1_code: row.admin1.into(),
            region: admin1.get(&key).cloned(),
            country_code: country_code.clone(),
            country: country.clone(),
            lat: row.lat,
            lon: row.lon,
            population: row.population,
        });
    }

    let mut countries = HashMap::new();
    for (code, name) in &country_names {
        countries.insert(crate::fold::fold(code), Arc::from(code.as_str()));
        countries.insert(crate::fold::fold(name), Arc::from(code.as_str()));
    }
    for (alias, code) in COUNTRY_ALIASES {
        countries.insert((*alias).to_owned(), Arc::from(*code));
    }
    Ok(Table {
        places,
        common,
        countries,
    })
}

/// Everyday names of countries that GeoNames writes otherwise (folded).
const COUNTRY_ALIASES: &[(&str, &str)] = &[
    ("usa", "US"),
    ("america", "US"),
    ("united states of america", "US"),
    ("uk", "GB"),
    ("britain", "GB"),
    ("great britain", "GB"),
    ("england", "GB"),
    ("scotland", "GB"),
    ("wales", "GB"),
    ("holland", "NL"),
    ("the netherlands", "NL"),
    ("czech republic", "CZ"),
    ("russia", "RU"),
    ("south korea", "KR"),
    ("korea", "KR"),
    ("north korea", "KP"),
    ("vietnam", "VN"),
    ("ivory coast", "CI"),
    ("uae", "AE"),
];

/// One line of the `#places` section, borrowed from the decoded text.
struct Row<'a> {
    id: u32,
    name: &'a str,
    alternates: &'a str,
    country: &'a str,
    admin1: &'a str,
    lat: f64,
    lon: f64,
    population: u64,
    city: Option<u32>,
}

impl<'a> Row<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut f = line.split('\t');
        let row = Row {
            id: f.next()?.parse().ok()?,
            name: f.next().filter(|n| !n.is_empty())?,
            alternates: f.next()?,
            country: f.next()?,
            admin1: f.next()?,
            lat: f
                .next()?
                .parse()
                .ok()
                .filter(|l: &f64| (-90.0..=90.0).contains(l))?,
            lon: f
                .next()?
                .parse()
                .ok()
                .filter(|l: &f64| (-180.0..=180.0).contains(l))?,
            population: f.next()?.parse().ok()?,
            city: match f.next()? {
                "" => None,
                id => Some(id.parse().ok()?),
            },
        };
        f.next().is_none().then_some(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gz(text: &str) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn decodes_a_small_table_with_a_district() {
        let t = decode(&gz(
            "#memdb-geo-data 1\n#countries\nFR\tFrance\n#admin1\nFR.11\tÎle-de-France\n\
             #common\nnice\n#places\n\
             1\tParis\tLutetia|Parigi\tFR\t11\t48.85341\t2.3488\t2138551\t\n\
             2\tParis 16 Passy\tPassy\tFR\t11\t48.8637\t2.2769\t159386\t1\n",
        ))
        .unwrap();
        assert_eq!(t.places.len(), 2);
        let passy = &t.places[1];
        assert_eq!(
            (passy.name(), passy.district()),
            ("Paris", Some("Paris 16 Passy"))
        );
        assert_eq!(passy.region(), Some("Île-de-France"));
        assert_eq!(
            t.places[0].alternates().collect::<Vec<_>>(),
            ["Lutetia", "Parigi"]
        );
        assert!(t.common.contains("nice"));
        assert_eq!(t.countries.get("france").map(|c| &**c), Some("FR"));
    }

    #[test]
    fn damaged_data_is_an_error_not_a_panic() {
        for text in [
            "",
            "#memdb-geo-data 2\n",
            "#memdb-geo-data 1\n#places\n",
            "#memdb-geo-data 1\n#countries\nFR\tFrance\n#places\n1\tX\t\tFR\t\t91\t0\t1\t\n",
            "#memdb-geo-data 1\n#countries\nFR\tFrance\n#places\n1\tX\t\tDE\t\t1\t0\t1\t\n",
            "#memdb-geo-data 1\nstray\n",
        ] {
            assert!(
                matches!(decode(&gz(text)), Err(GeoError::Data(_))),
                "{text:?}"
            );
        }
        assert!(matches!(decode(b"not gzip"), Err(GeoError::Data(_))));
    }

    #[test]
    fn the_embedded_table_decodes() {
        let t = decode(EMBEDDED).unwrap();
        assert!(t.places.len() > 150_000, "{}", t.places.len());
        assert!(t.places.iter().all(|p| p.country_code().len() == 2));
    }
}
