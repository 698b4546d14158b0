//! The intent × scene affinity matrix of a store (SAMD's `E`), counted from its items: an
//! item's intent is its source kind (the importer context memdb records: image, video, email,
//! chat, note), its scenes those the GUM finds in its own words (the gate's text, never the
//! date, place or field names memdb writes around them). A scene belongs to an
//! intent when at least `min_share` of that intent's items hit it.

use memdb_formats::item::Source;

use memdb::gate::Gum;
use memdb::{Result, ScanFilter, Snapshot};

/// `E` with its labels and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Affinity {
    /// The intents (rows): source kinds with at least one item.
    pub intents: Vec<Source>,
    /// Items per intent.
    pub items: Vec<usize>,
    /// Hits per (intent, scene), row-major.
    pub hits: Vec<usize>,
    /// The 0/1 matrix, row-major (`intents × scenes`).
    pub matrix: Vec<u8>,
    /// Scenes (columns).
    pub scenes: usize,
}

/// Counts `E` over every current item of `snapshot`.
pub fn store_affinity(snapshot: &Snapshot, gum: &Gum, min_share: f64) -> Result<Affinity> {
    let scenes = gum.scenes().scenes().len();
    let mut items = vec![0usize; Source::ALL.len()];
    let mut hits = vec![0usize; Source::ALL.len() * scenes];
    for item in snapshot.scan(&ScanFilter::default())? {
        let row = Source::ALL
            .iter()
            .position(|s| *s == item.fields.source)
            .unwrap_or(0);
        items[row] += 1;
        for hit in gum.hits(&memdb::gate::text_of(&item.fields), None).scenes {
            hits[row * scenes + hit.scene] += 1;
        }
    }
    let rows: Vec<usize> = (0..Source::ALL.len()).filter(|&r| items[r] > 0).collect();
    let mut out = Affinity {
        intents: rows.iter().map(|&r| Source::ALL[r]).collect(),
        items: rows.iter().map(|&r| items[r]).collect(),
        hits: Vec::with_capacity(rows.len() * scenes),
        matrix: Vec::with_capacity(rows.len() * scenes),
        scenes,
    };
    for &r in &rows {
        for s in 0..scenes {
            let n = hits[r * scenes + s];
            out.hits.push(n);
            let share = n as f64 / items[r] as f64;
            out.matrix.push(u8::from(n > 0 && share >= min_share));
        }
    }
    Ok(out)
}
