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

use std::collections::HashMap as StdHashMap;

// The index's maps hash every word of every item: foldhash is several times faster than the
// standard SipHash and this map is never fed an adversary's keys in bulk (item text is the
// owner's own).
use foldhash::HashMap;
use roaring::RoaringBitmap;
use rust_stemmers::{Algorithm, Stemmer};

use memdb_text::{spans, words};

/// The terms of `text`: its lowercased words, stemmed by `stemmer` where there is one.
fn terms<'a>(text: &'a str, stemmer: Option<&'a Stemmer>) -> impl Iterator<Item = String> + 'a {
    words(text).map(move |w| match stemmer {
        Some(s) => s.stem(&w).into_owned(),
        None => w,
    })
}

/// `word.to_lowercase()` written into `out` (cleared first).
fn lowercase_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
    } else {
        out.push_str(&word.to_lowercase());
    }
}

const K1: f64 = 1.5;
const B: f64 = 0.75;
const EPSILON: f64 = 0.25;

/// One term's postings: the rows holding it and, in the same (ascending) order, how often.
struct Postings {
    rows: RoaringBitmap,
    tf: Vec<u32>,
    idf: f64,
}

/// A BM25 index over a fixed set of documents, addressed by row (position in `keys`).
pub(crate) struct Bm25 {
    keys: Vec<u64>,
    doc_len: Vec<u32>,
    avg_len: f64,
    /// Term → its index in `postings`.
    terms: HashMap<String, u32>,
    postings: Vec<Postings>,
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
        let mut terms: HashMap<String, u32> = HashMap::default();
        let mut postings: Vec<Postings> = Vec::new();
        // Word as written (lowercased) → its term: a word is stemmed once per build, not once
        // per occurrence (stemming was most of a cold recall's index build).
        let mut word_terms: HashMap<String, u32> = HashMap::default();
        let mut counts: HashMap<u32, u32> = HashMap::default();
        let mut word = String::new();
        for (row, (key, text)) in docs.into_iter().enumerate() {
            let row = u32::try_from(row).unwrap_or(u32::MAX);
            keys.push(key);
            counts.clear();
            let mut len = 0u32;
            for (start, end) in spans(text) {
                // `words`' lowercasing, into one reused buffer.
                lowercase_into(&text[start..end], &mut word);
                let term = match word_terms.get(word.as_str()) {
                    Some(&term) => term,
                    None => {
                        let stem = match &stemmer {
                            Some(s) => s.stem(&word).into_owned(),
                            None => word.clone(),
                        };
                        let next = u32::try_from(postings.len()).unwrap_or(u32::MAX);
                        let term = *terms.entry(stem).or_insert_with(|| {
                            postings.push(Postings {
                                rows: RoaringBitmap::new(),
                                tf: Vec::new(),
                                idf: 0.0,
                            });
                            next
                        });
                        word_terms.insert(word.clone(), term);
                        term
                    }
                };
                *counts.entry(term).or_default() += 1;
                len += 1;
            }
            doc_len.push(len);
            for (&term, &count) in &counts {
                let p = &mut postings[term as usize];
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
        for p in &mut postings {
            let df = p.rows.len() as f64;
            p.idf = ((n - df + 0.5) / (df + 0.5)).ln();
        }
        let mean = if postings.is_empty() {
            0.0
        } else {
            postings.iter().map(|p| p.idf).sum::<f64>() / postings.len() as f64
        };
        for p in &mut postings {
            if p.idf < 0.0 {
                p.idf = EPSILON * mean;
            }
        }
        Bm25 {
            keys,
            doc_len,
            avg_len,
            terms,
            postings,
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
        let mut scores: StdHashMap<u32, f64> = StdHashMap::new();
        let stemmer = self.stems.then(|| Stemmer::create(Algorithm::English));
        // Repeated query terms count again, as in rank_bm25.
        for term in terms(query, stemmer.as_ref()) {
            let Some(p) = self.terms.get(&term).map(|&t| &self.postings[t as usize]) else {
                continue;
            };
            let idf = p.idf;
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
