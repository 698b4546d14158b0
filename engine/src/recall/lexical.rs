//! The lexical signal of recall: BM25 (Okapi, rank_bm25's defaults: k1 1.5, b 0.75, negative
//! idf floored at 0.25 × the mean idf) over the terms of each item's text
//! ([`crate::recall::item_text`]), with postings as roaring bitmaps of item rows plus their term
//! frequencies in bitmap order.
//!
//! A term is a lowercased word reduced to its Snowball (Porter 2) English stem, so a question's
//! "camped" finds a turn's "camping" and "activities" finds "activity" (issue 26: on LoCoMo
//! this moved BM25 alone from 56.9 to 59.8 R@10, multi-hop questions most); an index built
//! without stems takes the words as they are, as rank_bm25 does. Words of other languages go
//! through the English rules too: a suffix may be cut, the same way at index and query time.
//!
//! The index is derived data: built from a snapshot's items on first use and cached per commit
//! (keyed by the op sequence), so it never disagrees with the items it ranks. It is not
//! persisted; a store of 10,000 chat turns builds it in tens of milliseconds.

use std::collections::HashMap;

use roaring::RoaringBitmap;
use rust_stemmers::{Algorithm, Stemmer};

use memdb_text::words;

/// The terms of `text`: its lowercased words, stemmed by `stemmer` where there is one.
fn terms<'a>(text: &'a str, stemmer: Option<&'a Stemmer>) -> impl Iterator<Item = String> + 'a {
    words(text).map(move |w| match stemmer {
        Some(s) => s.stem(&w).into_owned(),
        None => w,
    })
}

const K1: f64 = 1.5;
const B: f64 = 0.75;
const EPSILON: f64 = 0.25;

/// One term's postings: the rows holding it and, in the same (ascending) order, how often.
struct Postings {
    rows: RoaringBitmap,
    tf: Vec<u32>,
}

/// A BM25 index over a fixed set of documents, addressed by row (position in `keys`).
pub(crate) struct Bm25 {
    keys: Vec<u64>,
    doc_len: Vec<u32>,
    avg_len: f64,
    postings: HashMap<String, Postings>,
    idf: HashMap<String, f64>,
    /// Whether terms are stems (see the module header).
    stems: bool,
}

impl Bm25 {
    /// Indexes `docs` (key, text), by their words' stems where `stems`; rows are positions in
    /// `docs`.
    pub(crate) fn build<'a>(docs: impl IntoIterator<Item = (u64, &'a str)>, stems: bool) -> Bm25 {
        let stemmer = stems.then(|| Stemmer::create(Algorithm::English));
        let mut keys = Vec::new();
        let mut doc_len = Vec::new();
        let mut postings: HashMap<String, Postings> = HashMap::new();
        for (row, (key, text)) in docs.into_iter().enumerate() {
            let row = u32::try_from(row).unwrap_or(u32::MAX);
            keys.push(key);
            let mut counts: HashMap<String, u32> = HashMap::new();
            let mut len = 0u32;
            for term in terms(text, stemmer.as_ref()) {
                *counts.entry(term).or_default() += 1;
                len += 1;
            }
            doc_len.push(len);
            for (term, count) in counts {
                let p = postings.entry(term).or_insert_with(|| Postings {
                    rows: RoaringBitmap::new(),
                    tf: Vec::new(),
                });
                // Rows arrive in ascending order, so the bitmap's order is push order.
                p.rows.insert(row);
                p.tf.push(count);
            }
        }
        let n = keys.len() as f64;
        let avg_len = if keys.is_empty() {
            0.0
        } else {
            doc_len.iter().map(|&l| f64::from(l)).sum::<f64>() / n
        };
        let mut idf: HashMap<String, f64> = postings
            .iter()
            .map(|(t, p)| {
                let df = p.rows.len() as f64;
                (t.clone(), ((n - df + 0.5) / (df + 0.5)).ln())
            })
            .collect();
        let mean = if idf.is_empty() {
            0.0
        } else {
            idf.values().sum::<f64>() / idf.len() as f64
        };
        for v in idf.values_mut() {
            if *v < 0.0 {
                *v = EPSILON * mean;
            }
        }
        Bm25 {
            keys,
            doc_len,
            avg_len,
            postings,
            idf,
            stems,
        }
    }

    /// Whether the index's terms are stems.
    pub(crate) fn stems(&self) -> bool {
        self.stems
    }

    /// Number of documents.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key of `row`.
    pub(crate) fn key(&self, row: u32) -> u64 {
        self.keys[row as usize]
    }

    /// BM25 score of every document that shares a word with `query` and passes `allowed`
    /// (all when `None`), as (row, score), best first, ties by row; at most `k`.
    pub(crate) fn search(
        &self,
        query: &str,
        k: usize,
        allowed: Option<&RoaringBitmap>,
    ) -> Vec<(u32, f64)> {
        let mut scores: HashMap<u32, f64> = HashMap::new();
        let stemmer = self.stems.then(|| Stemmer::create(Algorithm::English));
        // Repeated query terms count again, as in rank_bm25.
        for term in terms(query, stemmer.as_ref()) {
            let (Some(p), Some(&idf)) = (self.postings.get(&term), self.idf.get(&term)) else {
                continue;
            };
            for (row, &tf) in p.rows.iter().zip(&p.tf) {
                if allowed.is_some_and(|a| !a.contains(row)) {
                    continue;
                }
                let tf = f64::from(tf);
                let len = f64::from(self.doc_len[row as usize]);
                let norm = K1 * (1.0 - B + B * len / self.avg_len.max(f64::MIN_POSITIVE));
                *scores.entry(row).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut out: Vec<(u32, f64)> = scores.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Okapi BM25 with rank_bm25's rules, checked against a hand computation (the locomo bench
    /// compares whole rankings with rank_bm25 itself).
    #[test]
    fn scores_match_rank_bm25() {
        let docs = [
            "Caroline went to the LGBTQ support group",
            "Melanie painted a sunrise at the lake",
            "Caroline is researching adoption agencies",
            "the lake was calm and the sunrise was red",
        ];
        let index = Bm25::build(docs.iter().enumerate().map(|(i, d)| (i as u64, *d)), false);
        let hits = index.search("what did caroline research about adoption", 10, None);
        assert_eq!(hits[0].0, 2, "{hits:?}");
        // Hand computation: N = 4, avgdl = 6.5; "caroline" df 2 → idf ln(2.5/2.5) = 0 → floored
        // to 0.25 × mean idf; "adoption" df 1 → idf ln(3.5/1.5).
        let idf_adoption = (3.5f64 / 1.5).ln();
        let len = 5.0;
        let norm = K1 * (1.0 - B + B * len / 6.5);
        let adoption = idf_adoption * (K1 + 1.0) / (1.0 + norm);
        assert!(hits[0].1 > adoption, "caroline adds a positive floor score");
        // A row filter removes rows, never reorders the rest.
        let only: RoaringBitmap = [0u32].into_iter().collect();
        let filtered = index.search("caroline adoption", 10, Some(&only));
        assert_eq!(filtered.iter().map(|h| h.0).collect::<Vec<_>>(), [0]);
        assert!(index.search("zzz", 10, None).is_empty());
        assert_eq!(index.len(), 4);
    }

    /// Stems join a word's forms on both sides; without them only the same word matches.
    #[test]
    fn stems_match_the_forms_of_a_word() {
        let docs = [
            "we went camping by the lake",
            "the kids loved the painting workshop",
            "Melanie is researching adoption agencies",
        ];
        let rows = |stems: bool, query: &str| -> Vec<u32> {
            let index = Bm25::build(docs.iter().enumerate().map(|(i, d)| (i as u64, *d)), stems);
            assert_eq!(index.stems(), stems);
            index.search(query, 10, None).iter().map(|h| h.0).collect()
        };
        assert_eq!(rows(true, "where has she camped"), [0]);
        assert_eq!(rows(true, "what did Melanie research"), [2]);
        assert_eq!(rows(true, "paintings"), [1]);
        assert!(rows(false, "where has she camped").is_empty());
        assert!(rows(false, "paintings").is_empty());
        // A stem is still a whole term: "camp" does not match "campaign".
        assert!(rows(true, "campaign").is_empty());
    }
}
