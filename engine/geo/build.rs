//! Builds the name screen (`src/bloom.rs`) from the embedded gazetteer: three Bloom filters of
//! the folded names the mention rule may take, so a question that names no place never decodes
//! the 9.6 MB table (about 250 ms).
//!
//! The keys follow `mentions::accept` exactly, with the data alone: a key the rule could take is
//! always in its filter (the crate's tests check every place's names against the rule).

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;

#[allow(dead_code)]
#[path = "src/bloom.rs"]
mod bloom;
#[allow(dead_code)]
#[path = "src/fold.rs"]
mod fold;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = "data/geonames.tsv.gz";
    println!("cargo::rerun-if-changed={data}");
    println!("cargo::rerun-if-changed=src/bloom.rs");
    println!("cargo::rerun-if-changed=src/fold.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(data)?).read_to_string(&mut text)?;

    let mut section = "";
    let mut common: HashSet<String> = HashSet::new();
    let mut cued: HashSet<String> = HashSet::new();
    let mut uncued: HashSet<String> = HashSet::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('#') {
            section = name;
            continue;
        }
        match section {
            "common" => {
                common.insert(line.to_owned());
            }
            "places" => {
                // geonameid, name, alternates, country, admin1, lat, lon, population, city
                let f: Vec<&str> = line.split('\t').collect();
                let (Some(name), Some(alternates), Some(population)) = (
                    f.get(1),
                    f.get(2),
                    f.get(7).and_then(|p| p.parse::<u64>().ok()),
                ) else {
                    // The crate's decoder reports a bad line at run time; the screen only
                    // needs to hold every good one.
                    continue;
                };
                let own = fold::fold(name);
                let needed = if own.contains(' ') {
                    bloom::UNCUED_LONGER
                } else {
                    bloom::UNCUED_ONE_WORD
                };
                if population >= needed {
                    uncued.insert(own.clone());
                }
                cued.insert(own);
                for alternate in alternates.split('|').filter(|a| !a.is_empty()) {
                    cued.insert(fold::fold(alternate));
                }
            }
            _ => {}
        }
    }
    let common_names: Vec<String> = cued.intersection(&common).cloned().collect();
    let mut sets = [
        cued.difference(&common).cloned().collect::<Vec<_>>(),
        common_names,
        uncued.difference(&common).cloned().collect::<Vec<_>>(),
    ];
    let mut bytes = Vec::new();
    for (keys, (_, bits_per_key, hashes)) in sets.iter_mut().zip(bloom::SCREEN_FILTERS) {
        keys.retain(|k| !k.is_empty());
        keys.sort();
        bloom::write(keys, bits_per_key, hashes, &mut bytes);
    }
    std::fs::write(out.join("name-screen.bin"), bytes)?;
    Ok(())
}
