//! EM-Graph tests: extraction, the incremental update, path overlap, deletion and fading.

use crate::handle::Store;
use memdb_formats::item::{EventTime, ItemDraft, ItemFields, Source};
use roaring::RoaringBitmap;

use super::*;
use crate::recall::{RecallOptions, Signals};
use memdb_store::Options;

/// A deterministic stand-in for the encoder: bag of words (a plural's `s`/`es` dropped, so plurals
/// embed like singulars) hashed into 64 dimensions, normalised.
struct HashEmbedder;

impl Embedder for HashEmbedder {
    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                for w in memdb_text::words(t) {
                    let w = match w.strip_suffix("es") {
                        Some(stem) => stem.to_owned(),
                        None if !w.ends_with("ss") => w.strip_suffix('s').unwrap_or(&w).to_owned(),
                        None => w,
                    };
                    let h = w.bytes().fold(1469598103934665603u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(1099511628211)
                    });
                    v[(h % 64) as usize] += 1.0;
                }
                v[63] += 0.01; // never all zeros
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

fn chat(day: &str, speaker: &str, body: &str, ext: &str) -> ItemDraft {
    let mut f = ItemFields::new(
        Source::Chat,
        EventTime::parse(&format!("{day}T10:00:00+00:00")).unwrap(),
    );
    f.speaker = Some(speaker.into());
    f.body = Some(body.into());
    f.external_id = Some(ext.into());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

fn store_with(items: &[ItemDraft]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let mut batch = store.batch();
    for i in items {
        batch.put(i.clone());
    }
    batch.commit().unwrap();
    (dir, store)
}

/// The Q-matrix rows agree both ways, and every item the graph saw points at a path that
/// lists it.
fn assert_consistent(store: &Store) {
    let snap = store.snapshot().unwrap();
    let g = snap.graph();
    let (nodes, paths) = g.counts().unwrap();
    assert!(nodes > 0 && paths > 0);
    let mut by_path: Vec<(u32, RoaringBitmap)> = Vec::new();
    for p in 1..=paths {
        let path = g.path(p).unwrap().expect("path ids are dense");
        let bitmap = g.path_nodes(p).unwrap();
        let listed: RoaringBitmap = path.nodes.iter().map(|&n| n as u32).collect();
        assert_eq!(bitmap, listed, "path {p}: bitmap and node list differ");
        for &item in &path.items {
            assert_eq!(g.item(item).unwrap().unwrap().0, p);
        }
        by_path.push((p as u32, bitmap));
    }
    for n in 1..=nodes {
        let node = g.node(n).unwrap().expect("node ids are dense");
        assert_eq!(g.lookup(&node.phrase).unwrap(), Some(n));
        for alias in &node.aliases {
            assert_eq!(g.lookup(alias).unwrap(), Some(n), "alias {alias}");
        }
        let node_paths = g.node_paths(n).unwrap();
        for (p, nodes_of_p) in &by_path {
            assert_eq!(
                node_paths.contains(*p),
                nodes_of_p.contains(n as u32),
                "node {n} path {p}"
            );
        }
        assert!(
            snap.vectors(NODE_VECTORS)
                .unwrap()
                .unwrap()
                .get(n)
                .is_some(),
            "node {n} has a vector"
        );
    }
}

#[test]
fn update_builds_paths_per_day_merges_aliases_and_is_incremental() {
    let (_dir, store) = store_with(&[
        chat(
            "2023-05-08",
            "Caroline",
            "I signed up for a pottery class at the Art Center.",
            "a",
        ),
        chat(
            "2023-05-08",
            "Melanie",
            "Pottery is so relaxing, I went camping with my kids.",
            "b",
        ),
        chat(
            "2023-06-01",
            "Caroline",
            "The pottery classes were fun; I also researched adoption agencies.",
            "c",
        ),
    ]);
    let report = store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    assert_eq!(report.items, 3);
    assert_eq!(report.new_paths, 2, "one path per day");
    assert!(
        report.merged >= 1,
        "`pottery classes` joins `pottery class`: {report:?}"
    );
    let snap = store.snapshot().unwrap();
    let class = snap.graph().lookup("pottery class").unwrap().unwrap();
    assert_eq!(snap.graph().lookup("pottery classes").unwrap(), Some(class));
    assert!(
        snap.graph().node_paths(class).unwrap().len() == 2,
        "both days hold the merged node"
    );
    drop(snap);
    assert_consistent(&store);

    // Nothing new: nothing changes.
    let again = store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    assert_eq!(again, GraphReport::default());

    // A later item gets its own path; the earlier ones are untouched.
    let mut batch = store.batch();
    batch.put(chat(
        "2023-07-02",
        "Melanie",
        "We went camping again at the lake.",
        "d",
    ));
    batch.commit().unwrap();
    let more = store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    assert_eq!((more.items, more.new_paths), (1, 1));
    assert_consistent(&store);

    // The graph survives a reopen.
    let path = _dir.path().join("s");
    drop(store);
    let store = Store::open(&path, Options::default()).unwrap();
    assert_consistent(&store);
}

/// Stores each item's embedding (of its item text) in the item vector space; returns the items.
fn put_item_vectors(store: &Store) -> Vec<memdb_formats::item::ItemRecord> {
    let snap = store.snapshot().unwrap();
    let items = snap.scan(&memdb_store::ScanFilter::default()).unwrap();
    drop(snap);
    let mut batch = store.batch();
    for item in &items {
        let v = HashEmbedder
            .embed(&[&crate::recall::item_text(item)])
            .unwrap()
            .remove(0);
        batch.put_vector(
            memdb_store::ITEM_VECTORS,
            item.id,
            item.fields.time.unix_ms,
            item.fields.source.code(),
            v,
        );
    }
    batch.commit().unwrap();
    items
}

#[test]
fn recall_finds_evidence_respects_filters_and_explains() {
    let (_dir, store) = store_with(&[
        chat(
            "2023-05-08",
            "Caroline",
            "I signed up for a pottery class at the Art Center.",
            "a",
        ),
        chat(
            "2023-05-08",
            "Melanie",
            "I went camping with my kids at the lake.",
            "b",
        ),
        chat(
            "2023-06-01",
            "Caroline",
            "I researched adoption agencies this week.",
            "c",
        ),
        chat("2023-06-01", "Melanie", "My kids loved the museum.", "d"),
    ]);
    store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    // Dense vectors for the items too.
    let items = put_item_vectors(&store);
    let id_of = |ext: &str| {
        items
            .iter()
            .find(|i| i.fields.external_id.as_deref() == Some(ext))
            .unwrap()
            .id
    };

    let question = "What did Caroline research about adoption agencies?";
    for signals in [
        Signals::ALL,
        Signals {
            dense: false,
            lexical: true,
            graph: false,
            place: false,
        },
        Signals {
            dense: false,
            lexical: false,
            graph: true,
            place: false,
        },
        Signals {
            dense: true,
            lexical: false,
            graph: false,
            place: false,
        },
    ] {
        let options = RecallOptions {
            k: 2,
            signals,
            ..RecallOptions::default()
        };
        let recall = store.recall(question, &options, &HashEmbedder).unwrap();
        assert_eq!(
            recall.hits.first().map(|h| h.item),
            Some(id_of("c")),
            "{signals:?}: {:?}",
            recall.hits
        );
        assert!(recall.hits.len() <= 2);
    }
    let full = store
        .recall(question, &RecallOptions::default(), &HashEmbedder)
        .unwrap();
    let top = &full.hits[0].explanation;
    assert!(
        top.dense_rank.is_some() && top.lexical_rank.is_some() && top.graph_rank.is_some(),
        "{top:?}"
    );
    assert!(top.nodes.iter().any(|n| n.contains("adoption")), "{top:?}");
    assert_eq!(top.path.as_ref().map(|p| p.1.as_str()), Some("2023-06-01"));
    assert!(full.query_nodes.contains(&"caroline".to_owned()));

    // A time filter applies inside every signal: only May items come back, however strong
    // the June match.
    let may = RecallOptions {
        time: crate::TimeWindow::utc_range(
            EventTime::parse("2023-05-01T00:00:00+00:00")
                .unwrap()
                .unix_ms,
            EventTime::parse("2023-06-01T00:00:00+00:00")
                .unwrap()
                .unix_ms,
        ),
        ..RecallOptions::default()
    };
    let hits = store.recall(question, &may, &HashEmbedder).unwrap().hits;
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h.item == id_of("a") || h.item == id_of("b")),
        "{hits:?}"
    );
}

/// Four chat turns on two days, each with its item vector.
fn four_turns_with_vectors() -> (tempfile::TempDir, Store) {
    let (dir, store) = store_with(&[
        chat(
            "2023-05-08",
            "Caroline",
            "I signed up for a pottery class.",
            "a",
        ),
        chat("2023-05-08", "Melanie", "I went camping at the lake.", "b"),
        chat(
            "2023-06-01",
            "Caroline",
            "I researched adoption agencies.",
            "c",
        ),
        chat("2023-06-01", "Melanie", "My kids loved the museum.", "d"),
    ]);
    put_item_vectors(&store);
    (dir, store)
}

/// A recall of all four turns by the dense signal alone, its score weighted `fact` for a
/// question of fact and `inference` for one of inference.
fn dense_only(fact: f64, inference: f64) -> RecallOptions {
    RecallOptions {
        k: 4,
        signals: Signals {
            dense: true,
            lexical: false,
            graph: false,
            place: false,
        },
        context_share: 0.0,
        reranker: None,
        dense_score_weight: fact,
        inference_dense_score_weight: inference,
        ..RecallOptions::default()
    }
}

#[test]
fn the_dense_score_adds_each_dense_hits_normalised_cosine_to_its_fused_score() {
    let (_dir, store) = four_turns_with_vectors();
    let question = "Which adoption agencies did Caroline research?";
    let ranks_only = store
        .recall(question, &dense_only(0.0, 0.0), &HashEmbedder)
        .unwrap()
        .hits;
    let with_score = store
        .recall(question, &dense_only(0.5, 0.0), &HashEmbedder)
        .unwrap()
        .hits;
    assert_eq!(ranks_only.len(), 4);
    // The score is monotone in the cosine, as the rank is: one signal keeps its order.
    let order = |hits: &[crate::recall::RecallHit]| hits.iter().map(|h| h.item).collect::<Vec<_>>();
    assert_eq!(order(&ranks_only), order(&with_score));
    // The best dense hit gains the whole weight, the last none, the others a share between.
    let gains: Vec<f64> = ranks_only
        .iter()
        .zip(&with_score)
        .map(|(a, b)| b.score - a.score)
        .collect();
    assert!((gains[0] - 0.5).abs() < 1e-9, "{gains:?}");
    assert!(gains[3].abs() < 1e-9, "{gains:?}");
    assert!(gains[1] < 0.5 && gains[2] > 0.0, "{gains:?}");
    // Each hit's explanation carries the cosine it was scored by, falling down the list.
    let cosines: Vec<f32> = with_score
        .iter()
        .map(|h| h.explanation.dense_score.unwrap())
        .collect();
    assert!(cosines.windows(2).all(|w| w[0] >= w[1]), "{cosines:?}");
    assert!(cosines[0] > cosines[3], "{cosines:?}");
}

#[test]
fn a_question_that_asks_for_an_inference_weighs_the_dense_score_by_the_inference_weight() {
    let (_dir, store) = four_turns_with_vectors();
    // The best dense hit's gain over the ranks alone: the weight the fusion used.
    let gain = |question: &str, fact: f64, inference: f64| {
        let ranks_only = store
            .recall(question, &dense_only(0.0, 0.0), &HashEmbedder)
            .unwrap();
        let scored = store
            .recall(question, &dense_only(fact, inference), &HashEmbedder)
            .unwrap();
        assert_eq!(ranks_only.form, scored.form);
        (scored.form, scored.hits[0].score - ranks_only.hits[0].score)
    };
    let (form, g) = gain("Would Melanie enjoy a national park?", 0.1, 0.7);
    assert_eq!(form, crate::recall::QuestionForm::Inference);
    assert!((g - 0.7).abs() < 1e-9, "{g}");
    let (form, g) = gain("Where did Melanie go camping?", 0.1, 0.7);
    assert_eq!(form, crate::recall::QuestionForm::Fact);
    assert!((g - 0.1).abs() < 1e-9, "{g}");
    // Below 0 counts as 0, as the fact weight does.
    let (_, g) = gain("Would Melanie enjoy a national park?", 0.1, -1.0);
    assert!(g.abs() < 1e-9, "{g}");
}

#[test]
fn an_embedder_that_breaks_its_promise_is_an_error_not_a_panic() {
    struct Short;
    impl Embedder for Short {
        fn embed(&self, _: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
            Ok(Vec::new())
        }
    }
    let (_dir, store) = store_with(&[chat("2023-05-08", "Caroline", "pottery class", "a")]);
    let err = store
        .update_graph(&Short, &GraphOptions::default(), &mut |_, _| {})
        .unwrap_err();
    assert!(err.to_string().contains("returned 0 vectors"), "{err}");
    assert_eq!(
        store.snapshot().unwrap().graph().counts().unwrap(),
        (0, 0),
        "nothing half-written"
    );
}

/// Scores every path the slow way: the reference `paths_matching` must equal.
fn brute_force(
    store: &Store,
    nodes: &[(u64, f64)],
    min_overlap: u32,
    top: usize,
) -> Vec<(u64, u32)> {
    let snap = store.snapshot().unwrap();
    let g = snap.graph();
    let (_, paths) = g.counts().unwrap();
    let mut scored: Vec<(u64, f64, u32)> = Vec::new();
    let weights = g.paths_matching(nodes, 1, 1).unwrap().node_weights;
    for p in 1..=paths {
        let held = g.path_nodes(p).unwrap();
        let (mut score, mut overlap) = (0.0, 0);
        for &(n, w) in &weights {
            if held.contains(n as u32) {
                score += w;
                overlap += 1;
            }
        }
        if overlap >= min_overlap && overlap > 0 {
            scored.push((p, score, overlap));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(top);
    scored.into_iter().map(|(p, _, o)| (p, o)).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
    /// Exact top-k path overlap, whether the candidate bound holds or the search falls back:
    /// random days of words from a skewed vocabulary, random queries, tiny and large caps.
    #[test]
    fn paths_matching_equals_scoring_every_path(
        days in proptest::collection::vec(proptest::collection::vec(0usize..40, 1..6), 5..40),
        query in proptest::collection::vec(0usize..40, 1..6),
        min_overlap in 1u32..3,
        top in 1usize..6,
        cap in proptest::prop_oneof![proptest::prelude::Just(1u64), proptest::prelude::Just(4), proptest::prelude::Just(1 << 20)],
    ) {
        // Skewed: word i appears about as often as 1/(i+1) (low ids are frequent).
        let word = |i: usize| format!("word{}", i * i / 40);
        let items: Vec<ItemDraft> = days
            .iter()
            .enumerate()
            .map(|(d, words)| {
                let body: Vec<String> = words.iter().map(|&w| word(w)).collect();
                let day = format!("2023-{:02}-{:02}", 1 + d / 28, 1 + d % 28);
                chat(&day, "Ann", &body.join(", "), &format!("e{d}"))
            })
            .collect();
        let (_dir, store) = store_with(&items);
        store.update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {}).unwrap();
        let snap = store.snapshot().unwrap();
        let g = snap.graph();
        let nodes: Vec<(u64, f64)> = query
            .iter()
            .filter_map(|&w| g.lookup(&word(w)).unwrap())
            .map(|n| (n, 1.0))
            .collect();
        let got = g.paths_matching_capped(&nodes, min_overlap, top, cap).unwrap();
        let got: Vec<(u64, u32)> = got.paths.iter().map(|m| (m.path, m.overlap)).collect();
        proptest::prop_assert_eq!(got, brute_force(&store, &nodes, min_overlap, top));
    }
}

/// Regression: with MiniLM, "2022-05-10" (from "10 May") merged into "2022-05-06" as an alias,
/// so the item's date node named the wrong day. An embedder blind to digits makes every date
/// identical; dates must still stay apart, while a word merges as before.
#[test]
fn dates_amounts_and_identifiers_never_merge_by_similarity() {
    struct DigitBlind;
    impl Embedder for DigitBlind {
        fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
            let blind: Vec<String> = texts
                .iter()
                .map(|t| t.chars().filter(|c| !c.is_ascii_digit()).collect())
                .collect();
            let refs: Vec<&str> = blind.iter().map(String::as_str).collect();
            HashEmbedder.embed(&refs)
        }
    }
    let (_dir, store) = store_with(&[
        chat(
            "2022-04-20",
            "Ana",
            "We fly to Lisbon on 6 May and pay $50.",
            "a",
        ),
        chat(
            "2022-04-21",
            "Ana",
            "Hotel booked for 10 May, it cost $70.",
            "b",
        ),
        chat(
            "2022-04-22",
            "Ana",
            "Shot it on the FinePixS1Pro, the FinePixS2Pro stayed home.",
            "c",
        ),
    ]);
    store
        .update_graph(&DigitBlind, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    let snap = store.snapshot().unwrap();
    let g = snap.graph();
    for phrase in [
        "2022-05-06",
        "2022-05-10",
        "50 usd",
        "70 usd",
        "finepixs1pro",
        "finepixs2pro",
    ] {
        let id = g
            .lookup(phrase)
            .unwrap()
            .unwrap_or_else(|| panic!("{phrase} missing"));
        assert_eq!(
            g.node(id).unwrap().unwrap().phrase,
            phrase,
            "{phrase} was merged"
        );
    }
}

/// Deleting items keeps the Q-matrix consistent both ways, drops emptied paths and purges nodes
/// no remaining item uses (with their aliases and vectors); the rest of the graph is untouched.
#[test]
fn deleting_items_prunes_paths_and_orphan_nodes_consistently() {
    let (_dir, store) = store_with(&[
        chat(
            "2023-05-08",
            "Ana",
            "I booked the Alfama hotel in Lisbon.",
            "a",
        ),
        chat(
            "2023-05-08",
            "Rui",
            "Zyxwv Qortal will drive us there.",
            "b",
        ),
        chat(
            "2023-05-09",
            "Ana",
            "Dinner at the Alfama hotel was great.",
            "c",
        ),
        chat(
            "2023-05-10",
            "Rui",
            "Only Zyxwv Qortal knows the code.",
            "d",
        ),
    ]);
    store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
    let id = |ext: &str| {
        store
            .snapshot()
            .unwrap()
            .get_by_external_id(ext)
            .unwrap()
            .unwrap()
            .id
    };
    let (b, d) = (id("b"), id("d"));
    let before = store.snapshot().unwrap();
    let g = before.graph();
    let secret = g.lookup("zyxwv qortal").unwrap().expect("an entity node");
    let (_, paths_before) = g.counts().unwrap();
    drop(before);

    let mut batch = store.batch();
    batch.delete(b).delete(d);
    batch.commit().unwrap();

    let snap = store.snapshot().unwrap();
    let g = snap.graph();
    assert_eq!(
        g.lookup("zyxwv qortal").unwrap(),
        None,
        "orphan node purged"
    );
    assert!(g.node(secret).unwrap().is_none());
    assert!(g.node_paths(secret).unwrap().is_empty());
    assert!(
        snap.vectors(NODE_VECTORS)
            .unwrap()
            .unwrap()
            .get(secret)
            .is_none()
    );
    assert!(g.item(b).unwrap().is_none() && g.item(d).unwrap().is_none());
    let (_, paths_after) = g.counts().unwrap();
    assert_eq!(
        paths_after,
        paths_before - 1,
        "the 10 May path lost its only item"
    );
    // Every remaining path agrees with its bitmap, its items and its nodes' rows.
    let alfama = g.lookup("alfama hotel").unwrap().expect("still used");
    for p in 1..=paths_before {
        let Some(path) = g.path(p).unwrap() else {
            continue;
        };
        let listed: RoaringBitmap = path.nodes.iter().map(|&n| n as u32).collect();
        assert_eq!(g.path_nodes(p).unwrap(), listed, "path {p}");
        assert!(!path.items.contains(&b) && !path.items.contains(&d));
        let mut from_items = std::collections::BTreeSet::new();
        for &item in &path.items {
            let (at, nodes) = g.item(item).unwrap().unwrap();
            assert_eq!(at, p);
            from_items.extend(nodes);
        }
        assert_eq!(
            from_items,
            path.nodes.iter().copied().collect(),
            "path {p} nodes"
        );
        for &n in &path.nodes {
            assert!(
                g.node_paths(n).unwrap().contains(p as u32),
                "node {n} path {p}"
            );
        }
    }
    assert!(g.node_paths(alfama).unwrap().len() >= 2);
}

/// Issue 17 (2): a correction re-imported under the same external id reaches everything
/// derived from the old text — vector, graph nodes and paths, page — in its own commit, and
/// the old version stays in history.
#[test]
#[cfg(feature = "render")]
fn a_correction_invalidates_what_was_derived_and_keeps_the_old_version() {
    use crate::scrapbook::PageOptions;
    use crate::vectors::ITEM_VECTORS;
    let embed = |store: &Store| {
        // What `memdb embed` does: encode items without a vector, then the graph.
        let snap = store.snapshot().unwrap();
        let done = snap.vector_keys(ITEM_VECTORS).unwrap();
        let mut batch = store.batch();
        for id in snap.item_ids().unwrap() {
            if !done.contains(id) {
                let item = snap.get(id).unwrap().unwrap();
                let v = HashEmbedder
                    .embed(&[crate::recall::item_text(&item).as_str()])
                    .unwrap()
                    .remove(0);
                batch.put_vector(ITEM_VECTORS, id, item.fields.time.unix_ms, 4, v);
            }
        }
        batch.commit().unwrap();
        store
            .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
            .unwrap();
    };
    let (_dir, store) = store_with(&[
        chat(
            "2024-03-04",
            "Ana",
            "Dentist appointment on Tuesday at 10",
            "n1",
        ),
        chat("2024-03-04", "Ana", "Bought bread at the bakery", "n2"),
    ]);
    embed(&store);
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let id = store
        .snapshot()
        .unwrap()
        .get_by_external_id("n1")
        .unwrap()
        .unwrap()
        .id;
    let nodes_of = |store: &Store| -> Vec<String> {
        let snap = store.snapshot().unwrap();
        let g = snap.graph();
        let Some((_, ids)) = g.item(id).unwrap() else {
            return Vec::new();
        };
        ids.iter()
            .map(|n| g.node(*n).unwrap().unwrap().phrase)
            .collect()
    };
    assert!(nodes_of(&store).iter().any(|n| n.contains("dentist")));

    let corrected = chat(
        "2024-03-04",
        "Ana",
        "Cancelled the dentist; going skiing in Chamonix instead",
        "n1",
    );
    let receipt = {
        let mut b = store.batch();
        b.put(corrected);
        b.commit().unwrap()
    };
    assert_eq!(receipt.puts[0].status, crate::PutStatus::Updated);
    // In the same commit: no vector, no graph row, the page marked stale.
    let snap = store.snapshot().unwrap();
    assert!(!snap.vector_keys(ITEM_VECTORS).unwrap().contains(id));
    assert_eq!(snap.graph().item(id).unwrap(), None);
    assert!(
        snap.stale_pages()
            .unwrap()
            .get("2024-03-04")
            .is_some_and(|marks| marks.iter().any(|(item, _)| *item == id))
    );
    // The old version is history.
    let versions = snap.versions(id).unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(
        versions[0].record.fields.body.as_deref(),
        Some("Dentist appointment on Tuesday at 10")
    );
    drop(snap);
    assert!(store.check().unwrap().is_clean());

    // The next embed derives it again from the new text; the page follows.
    embed(&store);
    let nodes = nodes_of(&store);
    assert!(nodes.iter().any(|n| n.contains("chamonix")), "{nodes:?}");
    assert!(!nodes.iter().any(|n| n == "tuesday"), "{nodes:?}");
    let refreshed = store
        .refresh_stale_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    assert_eq!(refreshed.text_pages, 1, "{refreshed:?}");
    let snap = store.snapshot().unwrap();
    assert!(snap.stale_pages().unwrap().is_empty());
    let page = snap.page("2024-03-04").unwrap().unwrap();
    let drawn: Vec<u64> = page
        .layout
        .blocks
        .iter()
        .find(|b| b.item == id)
        .unwrap()
        .nodes
        .iter()
        .map(|n| n.0)
        .collect();
    let chamonix = snap.graph().find("chamonix").unwrap().unwrap();
    assert!(drawn.contains(&chamonix));
    drop(snap);
    let hits = store
        .recall(
            "ski trip to Chamonix",
            &RecallOptions::default(),
            &HashEmbedder,
        )
        .unwrap()
        .hits;
    assert_eq!(hits[0].item, id);
    // Compaction moves the history with the item; a delete takes both.
    store
        .compact(
            &crate::maintenance::CompactOptions {
                victims: crate::maintenance::Victims::All,
            },
            &mut crate::maintenance::KeepEverything,
        )
        .unwrap();
    assert_eq!(store.snapshot().unwrap().versions(id).unwrap().len(), 1);
    assert!(store.check().unwrap().is_clean());
    // A delete retires the item and keeps both versions; a purge removes them.
    let mut b = store.batch();
    b.delete(id);
    b.commit().unwrap();
    assert_eq!(store.snapshot().unwrap().versions(id).unwrap().len(), 2);
    assert!(store.check().unwrap().is_clean());
    assert!(store.purge(id).unwrap());
    assert!(store.snapshot().unwrap().versions(id).unwrap().is_empty());
    assert!(store.check().unwrap().is_clean());
}
