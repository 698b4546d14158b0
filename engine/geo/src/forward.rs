//! Forward geocoding: a place name to the place a person most likely means.
//!
//! The name index maps every folded name ([`crate::fold`]) to the places that carry it, most
//! populous first: a place's GeoNames name (a district's own name, not its city's) and its
//! alternates. [`NameIndex::resolve`] picks among them:
//!
//! - the most populous place whose GeoNames name it is, unless
//! - a place that has it only as an alternate name is at least ten times as populous ("Roma"
//!   is Rome, Italy, not Roma, Queensland; "Paris" stays Paris, France, whatever else is also
//!   called Paris somewhere).
//!
//! A name may carry qualifiers after commas, each a country (name, ISO code, or an everyday
//! alias such as "USA", "UK") or a first-level region (name or GeoNames code: "Texas", "TX"):
//! "Paris, TX", "Paris, Ontario", "Springfield, Illinois, USA". Only places matching every
//! qualifier are candidates. An unknown name is [`GeoError::UnknownPlace`] with up to five
//! suggestions: names within a small edit distance (optimal string alignment: 1 for names of 3
//! or 4 letters, 2 from 5 letters), most populous first among equally close ones; for a known
//! name whose qualifier matched nothing, the places that name does have.

use std::collections::HashMap;

use crate::GeoError;
use crate::data::Table;
use crate::fold::fold;
use crate::place::Place;

/// How many times more populous a place named so only by an alternate must be to win.
const ALTERNATE_FACTOR: u64 = 10;
/// Suggestions carried by an unknown-place error.
const SUGGESTIONS: usize = 5;

/// One place carrying a name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) place: u32,
    /// The name is the place's GeoNames name (not an alternate).
    pub(crate) primary: bool,
}

/// Folded name → places carrying it, most populous first.
#[derive(Debug)]
pub(crate) struct NameIndex {
    names: HashMap<String, Vec<Entry>>,
}

impl NameIndex {
    pub(crate) fn build(places: &[Place]) -> Self {
        let mut names: HashMap<String, Vec<Entry>> = HashMap::with_capacity(places.len() * 2);
        for (i, p) in places.iter().enumerate() {
            let Ok(place) = u32::try_from(i) else { break };
            let own = p.district().unwrap_or(p.name());
            let mut add = |name: &str, primary: bool| {
                let key = fold(name);
                if key.is_empty() {
                    return;
                }
                let entries = names.entry(key).or_default();
                if !entries.iter().any(|e| e.place == place) {
                    entries.push(Entry { place, primary });
                }
            };
            add(own, true);
            for alt in p.alternates() {
                add(alt, false);
            }
        }
        for entries in names.values_mut() {
            entries.sort_by_key(|e| {
                let p = &places[e.place as usize];
                (std::cmp::Reverse(p.population), p.geoname_id)
            });
        }
        Self { names }
    }

    /// The places carrying the folded name `key`, most populous first.
    pub(crate) fn get(&self, key: &str) -> Option<&[Entry]> {
        self.names.get(key).map(Vec::as_slice)
    }

    /// The place a person most likely means among `entries` (most populous first): see the
    /// module doc.
    pub(crate) fn resolve(entries: &[Entry], places: &[Place]) -> Option<usize> {
        let pop = |e: &Entry| places[e.place as usize].population;
        let primary = entries.iter().find(|e| e.primary);
        let alternate = entries.iter().find(|e| !e.primary);
        let best = match (primary, alternate) {
            (Some(p), Some(a)) if pop(a) >= pop(p).saturating_mul(ALTERNATE_FACTOR) => a,
            (Some(p), _) => p,
            (None, a) => a?,
        };
        Some(best.place as usize)
    }

    /// Every place `name` may mean: [`NameIndex::lookup`]'s choice first, then the other places
    /// carrying the name (their own or an alternate) that match its qualifiers, most populous
    /// first.
    pub(crate) fn candidates(&self, table: &Table, name: &str) -> Result<Vec<usize>, GeoError> {
        let chosen = self.lookup(table, name)?;
        let mut parts = name.split(',');
        let head = fold(parts.next().unwrap_or_default());
        let qualifiers: Vec<String> = parts.map(fold).filter(|q| !q.is_empty()).collect();
        let mut out = vec![chosen];
        for e in self.get(&head).unwrap_or_default() {
            let place = e.place as usize;
            if !out.contains(&place)
                && qualifiers
                    .iter()
                    .all(|q| qualifies(table, &table.places[place], q))
            {
                out.push(place);
            }
        }
        Ok(out)
    }

    /// `name`, possibly qualified ("Paris, TX"), to the index of its place.
    pub(crate) fn lookup(&self, table: &Table, name: &str) -> Result<usize, GeoError> {
        let mut parts = name.split(',');
        let head = fold(parts.next().unwrap_or_default());
        if head.is_empty() {
            return Err(GeoError::EmptyName);
        }
        let qualifiers: Vec<String> = parts.map(fold).filter(|q| !q.is_empty()).collect();
        let unknown = |suggestions| GeoError::UnknownPlace {
            name: name.trim().to_owned(),
            suggestions,
        };
        let Some(entries) = self.get(&head) else {
            return Err(unknown(self.suggest(&head, &table.places)));
        };
        let matching: Vec<Entry> = entries
            .iter()
            .copied()
            .filter(|e| {
                let place = &table.places[e.place as usize];
                qualifiers.iter().all(|q| qualifies(table, place, q))
            })
            .collect();
        match Self::resolve(&matching, &table.places) {
            Some(place) => Ok(place),
            None => Err(unknown(labels(
                entries.iter().map(|e| &table.places[e.place as usize]),
            ))),
        }
    }

    /// Up to five places whose name is a few edits from `key`, closest and then most populous
    /// first, as "Name, Country".
    fn suggest(&self, key: &str, places: &[Place]) -> Vec<String> {
        let len = key.chars().count();
        let max = match len {
            0..=2 => return Vec::new(),
            3 | 4 => 1,
            _ => 2,
        };
        let mut close: Vec<(usize, u64, usize)> = Vec::new();
        for (name, entries) in &self.names {
            if name.len().abs_diff(key.len()) > max {
                continue;
            }
            let d = strsim::osa_distance(key, name);
            if d <= max
                && let Some(place) = Self::resolve(entries, places)
            {
                close.push((d, places[place].population, place));
            }
        }
        close.sort_by_key(|&(d, pop, place)| (d, std::cmp::Reverse(pop), place));
        labels(close.iter().map(|&(_, _, place)| &places[place]))
    }
}

/// Does `place` lie in the country or region named by the folded qualifier `q`?
fn qualifies(table: &Table, place: &Place, q: &str) -> bool {
    table
        .countries
        .get(q)
        .is_some_and(|code| **code == *place.country_code())
        || place.region().is_some_and(|r| fold(r) == q)
        || (!place.region_code().is_empty() && fold(place.region_code()) == q)
}

/// Distinct "Name, Region, Country" labels, at most [`SUGGESTIONS`].
fn labels<'a>(places: impl Iterator<Item = &'a Place>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in places {
        let label = p.to_string();
        if !out.contains(&label) {
            out.push(label);
            if out.len() == SUGGESTIONS {
                break;
            }
        }
    }
    out
}
