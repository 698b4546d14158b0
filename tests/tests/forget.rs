//! Scrapbook pages and optical forgetting through the public API: Recent pages are faithful
//! (photos at min(own, 1024) px on the long side, no text under 12 px); forgetting is
//! monotone, idempotent, and a dry run writes nothing yet reports what the run then does; the
//! saliency-aware layout keeps names, dates and amounts legible a stage longer; faded nodes
//! leave their items and stay on their day's path until one of its items is deleted.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::forget::{ForgetOptions, Policy, legible};
use memdb::scrapbook::{BlockKind, PHOTO_LONG_SIDE, PageOptions};
use memdb::{EventTime, ItemDraft, ItemFields, Options, Source, Store, graph::GraphOptions};
use memdb_it::{HashEmbedder, import_photos, shared_data};

fn day(s: &str) -> jiff::civil::Date {
    s.parse().unwrap()
}

fn forget(store: &Store, policy: &str, as_of: &str, dry_run: bool) -> memdb::forget::ForgetReport {
    store
        .forget(
            &Policy::builtin(policy).unwrap(),
            day(as_of),
            ForgetOptions {
                dry_run,
                drop_originals: true,
                pages: PageOptions::default(),
                progress: &mut |_, _| {},
            },
        )
        .unwrap()
}

/// Chat turns over three years, each naming people, a date and an amount.
fn add_chats(store: &Store) {
    let mut batch = store.batch();
    for (i, when) in [
        "2021-03-02T10:00:00Z",
        "2021-03-02T11:30:00Z",
        "2022-07-14T18:00:00Z",
        "2023-01-20T09:15:00Z",
        "2023-06-01T12:00:00Z",
        "2023-06-01T12:05:00Z",
    ]
    .iter()
    .enumerate()
    {
        let mut fields = ItemFields::new(Source::Chat, EventTime::parse(when).unwrap());
        fields.external_id = Some(format!("chat-{i}"));
        fields.speaker = Some(if i % 2 == 0 { "Caroline" } else { "Melanie" }.to_owned());
        fields.body = Some(format!(
            "On 8 May 2023 we paid 50 USD for the pottery class in Lisbon with Joanna, turn {i}; \
             the kids loved the painting workshop and the long walk by the river afterwards."
        ));
        batch.put(ItemDraft {
            fields,
            supersedes: None,
        });
    }
    batch.commit().unwrap();
    store
        .update_graph(&HashEmbedder, &GraphOptions::default(), &mut |_, _| {})
        .unwrap();
}

fn graph_incidences(store: &Store) -> (u64, u64) {
    let snap = store.snapshot().unwrap();
    let graph = snap.graph();
    let (mut all, mut salient) = (0, 0);
    for id in snap.item_ids().unwrap() {
        if let Some((_, nodes)) = graph.item(id).unwrap() {
            for n in nodes {
                all += 1;
                let kind = graph.node(n).unwrap().unwrap().kind;
                if memdb::scrapbook::is_salient_kind(kind) {
                    salient += 1;
                }
            }
        }
    }
    (all, salient)
}

#[test]
fn recent_pages_are_faithful_records_of_their_photos_and_text() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let n = import_photos(&store, &photos, usize::MAX);
    assert!(n > 200, "{n} photos");
    add_chats(&store);
    let report = store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    assert!(
        report.photo_pages > 100 && report.text_pages > 0,
        "{report:?}"
    );
    let snap = store.snapshot().unwrap();
    // Pages are committed in day order whichever worker composed them first, so their parts'
    // blob ids rise with the day (and the same store always composes to the same bytes).
    let first_parts: Vec<u64> = snap
        .pages()
        .unwrap()
        .iter()
        .filter_map(|p| p.parts.first().copied())
        .collect();
    assert!(first_parts.len() > 100);
    assert!(
        first_parts.windows(2).all(|w| w[0] < w[1]),
        "{first_parts:?}"
    );
    let mut photos_checked = 0;
    for page in snap.pages().unwrap() {
        assert_eq!((page.stage, page.quality, page.scale), (0, 95, 1.0));
        for block in &page.layout.blocks {
            match block.kind {
                BlockKind::Photo => {
                    let item = snap.get(block.item).unwrap().unwrap();
                    let original = snap.blob(item.blobs[0]).unwrap().unwrap();
                    let upright =
                        memdb_formats::import::photo::decode_rgb(&original, Default::default())
                            .unwrap();
                    let own = upright.width.max(upright.height);
                    let drawn = block.rect[2].max(block.rect[3]);
                    assert_eq!(drawn, own.min(PHOTO_LONG_SIDE), "item {}", block.item);
                    // Orientation applied: the drawn aspect is the upright one.
                    assert_eq!(
                        block.rect[2] >= block.rect[3],
                        upright.width >= upright.height,
                        "item {}",
                        block.item
                    );
                    photos_checked += 1;
                }
                BlockKind::Text => {
                    assert!(block.text_px >= 12, "{block:?}");
                    assert!(block.nodes.iter().all(|&(_, px)| px >= 12));
                }
            }
        }
        // Stored parts decode to the layout's size.
        let mut height = 0;
        for part in &page.parts {
            let bytes = snap.blob(*part).unwrap().unwrap();
            let image =
                memdb_formats::import::photo::decode_rgb(&bytes, Default::default()).unwrap();
            assert_eq!(image.width, page.layout.width);
            height += image.height;
        }
        if !page.parts.is_empty() {
            assert_eq!(height, page.layout.height, "{}", page.day);
        }
    }
    assert_eq!(photos_checked, n);
    // A second run finds nothing to do.
    let again = store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    assert_eq!(again.photo_pages + again.text_pages, 0, "{again:?}");
    // Text-only pages render on demand at the layout's size.
    let text_day = snap
        .pages()
        .unwrap()
        .into_iter()
        .find(|p| p.parts.is_empty())
        .unwrap();
    let rendered = store.render_page(&text_day.day).unwrap().unwrap().parts;
    let image = memdb_formats::import::photo::decode_rgb(&rendered[0], Default::default()).unwrap();
    assert_eq!(image.width, text_day.layout.width);
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn forgetting_is_monotone_idempotent_and_a_dry_run_writes_nothing() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    import_photos(&store, &photos, 40);
    add_chats(&store);
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let before = store.stats().unwrap();
    let pages_before = store.snapshot().unwrap().pages().unwrap();

    let dry = forget(&store, "softer-old", "2023-09-01", true);
    assert_eq!(store.stats().unwrap(), before, "a dry run wrote");
    assert_eq!(store.snapshot().unwrap().pages().unwrap(), pages_before);
    assert!(dry.bytes_saved() > 0);

    let real = forget(&store, "softer-old", "2023-09-01", false);
    assert_eq!(
        dry.stages, real.stages,
        "the dry run reports what the run does"
    );
    assert!(real.store_bytes_after < real.store_bytes_before);
    assert!(store.check().unwrap().is_clean());
    let after = store.snapshot().unwrap().pages().unwrap();
    for (old, new) in pages_before.iter().zip(&after) {
        assert!(new.stage >= old.stage && new.quality <= old.quality && new.scale <= old.scale);
    }
    assert!(after.iter().any(|p| p.stage == 2) && after.iter().any(|p| p.stage < 2));
    // Originals stay while their page is Recent; from Mid on the page holds the photo, and
    // the item records that its original was dropped, when and by which policy.
    let originals = |store: &Store| {
        store
            .stats()
            .unwrap()
            .blobs_by_kind
            .iter()
            .find(|b| b.0 == memdb::BlobKind::Original)
            .map_or(0, |b| b.1)
    };
    let recent_photos: u64 = after
        .iter()
        .filter(|p| p.stage == 0)
        .map(|p| {
            p.layout
                .blocks
                .iter()
                .filter(|b| b.kind == BlockKind::Photo)
                .count() as u64
        })
        .sum();
    assert_eq!(originals(&store), recent_photos);
    assert!(!real.originals.is_empty());
    let snap = store.snapshot().unwrap();
    for dropped in &real.originals {
        let records = snap.dropped_blobs(dropped.item).unwrap();
        assert!(
            records.iter().any(|r| r.id == dropped.blob
                && r.len == dropped.bytes
                && r.why.contains("softer-old")),
            "{records:?}"
        );
        assert!(
            !snap
                .get(dropped.item)
                .unwrap()
                .unwrap()
                .blobs
                .contains(&dropped.blob)
        );
    }
    drop(snap);

    // Idempotent: the same policy and day change nothing.
    let bytes = store.stats().unwrap().total_bytes();
    let again = forget(&store, "softer-old", "2023-09-01", false);
    assert!(
        again
            .stages
            .iter()
            .all(|s| s.pages_changed == 0 && s.originals_dropped == 0)
    );
    assert_eq!(store.snapshot().unwrap().pages().unwrap(), after);
    assert_eq!(store.stats().unwrap().total_bytes(), bytes);
    // Monotone: a milder policy never raises quality or scale back.
    forget(&store, "no-forget", "2023-09-01", false);
    assert_eq!(store.snapshot().unwrap().pages().unwrap(), after);
    // A harsher one lowers them further.
    forget(&store, "timed-gentle", "2023-09-01", false);
    let harsher = store.snapshot().unwrap().pages().unwrap();
    assert!(
        harsher
            .iter()
            .zip(&after)
            .any(|(h, a)| h.quality < a.quality)
    );
    assert!(store.check().unwrap().is_clean());
    // Everything survives a reopen.
    drop(store);
    let store = Store::open(dir.path().join("s"), Options::default()).unwrap();
    assert_eq!(store.snapshot().unwrap().pages().unwrap(), harsher);

    // An item deleted from a forgotten page's day is blanked out of its pixels.
    let page = harsher
        .iter()
        .find(|p| {
            p.stage > 0
                && p.parts.len() == 1
                && p.layout
                    .blocks
                    .iter()
                    .filter(|b| b.kind == BlockKind::Photo)
                    .count()
                    >= 2
        })
        .expect("a forgotten page with two photos")
        .clone();
    let photos: Vec<_> = page
        .layout
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Photo)
        .cloned()
        .collect();
    let (victim, survivor) = (&photos[0], &photos[1]);
    let pixels = |store: &Store, page: &memdb::scrapbook::Page| {
        let snap = store.snapshot().unwrap();
        let bytes = snap.blob(page.parts[0]).unwrap().unwrap();
        memdb_formats::import::photo::decode_rgb(&bytes, Default::default()).unwrap()
    };
    // Mean of a block's rectangle (shrunk by 3 px against resampling at its edges).
    let mean = |image: &memdb_formats::import::photo::RgbPhoto, rect: [u32; 4], scale: f64| {
        let [x, y, w, h] = rect.map(|v| (f64::from(v) * scale) as u32);
        let (mut sum, mut n) = (0u64, 0u64);
        for yy in y + 3..y + h - 3 {
            for xx in x + 3..x + w - 3 {
                let at = ((yy * image.width + xx) * 3) as usize;
                sum += image.rgb[at..at + 3]
                    .iter()
                    .map(|&b| u64::from(b))
                    .sum::<u64>();
                n += 3;
            }
        }
        sum as f64 / n as f64
    };
    let before = pixels(&store, &page);
    let mut batch = store.batch();
    batch.delete(victim.item);
    batch.commit().unwrap();
    let report = store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    assert_eq!(report.blanked, 1, "{report:?}");
    let blanked = store.snapshot().unwrap().page(&page.day).unwrap().unwrap();
    assert_eq!(
        (blanked.stage, blanked.quality, blanked.scale),
        (page.stage, page.quality, page.scale)
    );
    assert!(!blanked.layout.items().contains(&victim.item));
    let after = pixels(&store, &blanked);
    assert!(
        mean(&after, victim.rect, page.scale) > 250.0,
        "the deleted photo is white"
    );
    let kept =
        (mean(&after, survivor.rect, page.scale) - mean(&before, survivor.rect, page.scale)).abs();
    assert!(
        kept < 3.0,
        "the other photo is untouched: mean moved {kept}"
    );
    assert!(store.check().unwrap().is_clean());
}

#[test]
fn salient_nodes_stay_legible_a_stage_longer_with_the_saliency_aware_layout() {
    let mut survived = Vec::new();
    for salient_facts in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
        add_chats(&store);
        let options = PageOptions {
            salient_facts,
            ..PageOptions::default()
        };
        store.compose_pages(options, &mut |_, _| {}).unwrap();
        let (all_before, salient_before) = graph_incidences(&store);
        assert!(salient_before > 0);
        // Every page is Old (over 730 days) under timed-gentle: Q 40, scale 0.6.
        let report = forget(&store, "timed-gentle", "2030-01-01", false);
        assert!(report.stages[2].pages > 0);
        let (all_after, salient_after) = graph_incidences(&store);
        assert!(
            all_after < all_before,
            "body text at 14 px × 0.6 is illegible"
        );
        survived.push((salient_before, salient_after));
        assert!(store.check().unwrap().is_clean());
    }
    let (without, with) = (survived[0], survived[1]);
    assert!(with.1 > without.1, "with {with:?} vs without {without:?}");
    assert_eq!(with.1, with.0, "every salient node survives at 22 px × 0.6");
    // The model behind it: 22 px survives the Old stage, 14 px does not.
    assert!(legible(22, 0.6, 40) && !legible(14, 0.6, 40) && legible(14, 0.85, 70));
}

/// Each path's nodes and each item's (path, nodes).
type GraphShape = (
    std::collections::BTreeMap<u64, Vec<u64>>,
    std::collections::BTreeMap<u64, (u64, Vec<u64>)>,
);

fn graph_shape(store: &Store) -> GraphShape {
    let snap = store.snapshot().unwrap();
    let graph = snap.graph();
    let mut items = std::collections::BTreeMap::new();
    for id in snap.item_ids().unwrap() {
        if let Some(row) = graph.item(id).unwrap() {
            items.insert(id, row);
        }
    }
    let paths = items
        .values()
        .map(|(p, _)| (*p, graph.path(*p).unwrap().unwrap().nodes))
        .collect();
    (paths, items)
}

#[test]
fn faded_nodes_leave_their_items_but_their_day_keeps_them_until_an_item_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    add_chats(&store);
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let (paths_before, items_before) = graph_shape(&store);
    let report = forget(&store, "timed-gentle", "2030-01-01", false);
    let faded: u64 = report.stages.iter().map(|s| s.nodes_faded).sum();
    assert!(faded > 0);
    let (paths_after, items_after) = graph_shape(&store);

    // The items lost exactly the incidences reported, and stay on their paths.
    let incidences = |items: &std::collections::BTreeMap<u64, (u64, Vec<u64>)>| -> usize {
        items.values().map(|(_, n)| n.len()).sum()
    };
    assert_eq!(
        incidences(&items_before) - incidences(&items_after),
        faded as usize
    );
    for (id, (path, nodes)) in &items_after {
        let (path_before, nodes_before) = &items_before[id];
        assert_eq!(path, path_before);
        assert!(nodes.iter().all(|n| nodes_before.contains(n)));
    }
    // Every day keeps its gist: the same nodes, each still a node with its Q-matrix bit.
    assert_eq!(paths_after, paths_before);
    {
        let snap = store.snapshot().unwrap();
        let graph = snap.graph();
        for (&path, nodes) in &paths_after {
            for &n in nodes {
                assert!(graph.node(n).unwrap().is_some(), "node {n} purged");
                assert!(graph.node_paths(n).unwrap().contains(path as u32));
            }
        }
    }
    // A second run changes nothing (idempotent).
    forget(&store, "timed-gentle", "2030-01-01", false);
    assert_eq!(
        graph_shape(&store),
        (paths_after.clone(), items_after.clone())
    );

    // Deleting a turn of a day recomputes that day's nodes from the turns left: the gist,
    // which no longer says which turn it came from, goes with it, and nodes no path holds
    // any more are purged.
    let (&gone, &(day_path, _)) = items_after
        .iter()
        .find(|(_, (p, _))| items_after.values().filter(|(q, _)| q == p).count() > 1)
        .unwrap();
    let mut batch = store.batch();
    batch.delete(gone);
    batch.commit().unwrap();
    let (paths_deleted, items_deleted) = graph_shape(&store);
    let mut left: Vec<u64> = Vec::new();
    for (_, (p, nodes)) in items_deleted.iter().filter(|(_, (p, _))| *p == day_path) {
        assert_eq!(*p, day_path);
        for n in nodes {
            if !left.contains(n) {
                left.push(*n);
            }
        }
    }
    assert_eq!(paths_deleted[&day_path], left);
    assert!(left.len() < paths_after[&day_path].len());
    let snap = store.snapshot().unwrap();
    let graph = snap.graph();
    for n in paths_after[&day_path].iter().filter(|n| !left.contains(n)) {
        let elsewhere = paths_deleted.values().any(|nodes| nodes.contains(n));
        assert_eq!(graph.node(*n).unwrap().is_some(), elsewhere, "node {n}");
    }
    assert!(store.check().unwrap().is_clean());
}

/// A unit vector that depends on `seed` only (no two seeds alike).
fn unit_vector(seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v: Vec<f32> = (0..64)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

#[test]
fn item_vectors_are_kept_at_their_page_stage_precision() {
    use memdb::{vectors::ITEM_VECTORS, vectors::Precision, vectors::VectorScope};
    let dir = tempfile::tempdir().unwrap();
    // An f32 item space (an option; the default is i8, which forgetting has nothing to do to).
    let options = Options {
        item_vector_precision: Precision::F32,
        ..Options::default()
    };
    let store = Store::create(dir.path().join("s"), options).unwrap();
    // One note a day on three days: Recent, Mid and Old as of 2024-01-01 under timed-gentle.
    let days = ["2023-12-01", "2023-03-01", "2021-01-01"];
    let mut batch = store.batch();
    for (i, d) in days.iter().enumerate() {
        for n in 0..4u64 {
            let when = format!("{d}T1{n}:00:00Z");
            let mut fields = ItemFields::new(Source::Note, EventTime::parse(&when).unwrap());
            fields.body = Some(format!("note {n} of day {i}"));
            let draft = ItemDraft {
                fields,
                supersedes: None,
            };
            batch.put_with_vector(draft, Vec::new(), unit_vector(i as u64 * 10 + n));
        }
    }
    let ids: Vec<u64> = batch.commit().unwrap().puts.iter().map(|p| p.id).collect();
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let vector_bytes = |store: &Store| {
        let stats = store.stats().unwrap();
        stats
            .blobs_by_kind
            .iter()
            .find(|b| b.0 == memdb::BlobKind::Vectors)
            .map_or(0, |b| b.2)
    };
    let before = vector_bytes(&store);

    let dry = forget(&store, "timed-gentle", "2024-01-01", true);
    let quantized: Vec<u64> = dry.stages.iter().map(|s| s.vectors_quantized).collect();
    assert_eq!(quantized, [0, 4, 4]);
    assert_eq!(dry.stages[1].vector_bytes_saved, 4 * 64 * 2);
    assert_eq!(dry.stages[2].vector_bytes_saved, 4 * 64 * 3);
    let real = forget(&store, "timed-gentle", "2024-01-01", false);
    assert_eq!(dry.stages, real.stages);
    assert!(store.check().unwrap().is_clean());

    let precisions = |store: &Store| -> Vec<Precision> {
        let snap = store.snapshot().unwrap();
        let space = snap.vectors(ITEM_VECTORS).unwrap().unwrap();
        ids.iter()
            .map(|id| space.precision_of(*id).unwrap())
            .collect()
    };
    let want: Vec<Precision> = [Precision::F32, Precision::F16, Precision::I8]
        .iter()
        .flat_map(|p| [*p; 4])
        .collect();
    assert_eq!(precisions(&store), want);
    assert!(
        vector_bytes(&store) < before,
        "vector blobs {before} -> {}",
        vector_bytes(&store)
    );
    // Every vector still finds itself first, at its stored precision's accuracy.
    {
        let snap = store.snapshot().unwrap();
        let space = snap.vectors(ITEM_VECTORS).unwrap().unwrap();
        for (i, id) in ids.iter().enumerate() {
            let query = unit_vector((i / 4) as u64 * 10 + (i % 4) as u64);
            let hits = space.search(&query, 3, &VectorScope::all()).unwrap();
            assert_eq!(hits[0].key, *id);
            assert!((hits[0].score - 1.0).abs() < 0.02, "{hits:?}");
        }
    }

    // Idempotent; a rebuild of the space keeps each row's precision; all survive a reopen.
    let again = forget(&store, "timed-gentle", "2024-01-01", false);
    assert!(again.stages.iter().all(|s| s.vectors_quantized == 0));
    assert_eq!(store.compact_vectors(true).unwrap(), ["items"]);
    assert_eq!(precisions(&store), want);
    drop(store);
    let store = Store::open(dir.path().join("s"), Options::default()).unwrap();
    assert_eq!(precisions(&store), want);
    // A vector put again on an old day is f32 until the next run quantizes it.
    let mut batch = store.batch();
    let old = store.snapshot().unwrap().get(ids[8]).unwrap().unwrap();
    batch.put_vector(
        ITEM_VECTORS,
        ids[8],
        old.fields.time.unix_ms,
        old.fields.source.code(),
        unit_vector(20),
    );
    batch.commit().unwrap();
    assert_eq!(precisions(&store)[8], Precision::F32);
    store.compact_vectors(true).unwrap();
    assert_eq!(precisions(&store)[8], Precision::F32);
    assert_eq!(precisions(&store)[9], Precision::I8);
    let last = forget(&store, "timed-gentle", "2024-01-01", false);
    assert_eq!(last.stages[2].vectors_quantized, 1);
    assert_eq!(precisions(&store), want);
    assert!(store.check().unwrap().is_clean());
}

/// Issue 17 (1): forgetting never drops a photo original unless a stage of its policy says so
/// and the caller consents: no-forget drops none, a dry run lists what would go, and a run
/// without consent writes nothing.
#[test]
fn originals_go_only_where_a_stage_drops_them_and_only_with_consent() {
    let Some(photos) = shared_data("photos") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let imported = import_photos(&store, &photos, 30) as u64;
    store
        .compose_pages(PageOptions::default(), &mut |_, _| {})
        .unwrap();
    let count = |store: &Store| {
        store
            .stats()
            .unwrap()
            .blobs_by_kind
            .iter()
            .find(|b| b.0 == memdb::BlobKind::Original)
            .map_or(0, |b| b.1)
    };
    assert_eq!(count(&store), imported);
    let far = "2040-01-01";
    // no-forget: nothing listed, nothing dropped.
    let none = forget(&store, "no-forget", far, true);
    assert!(none.originals.is_empty());
    assert!(none.stages.iter().all(|s| s.originals_dropped == 0));
    forget(&store, "no-forget", far, false);
    assert_eq!(count(&store), imported);
    // timed-gentle as of 2040: every page is Old; the dry run lists every original.
    let dry = forget(&store, "timed-gentle", far, true);
    assert_eq!(dry.originals.len() as u64, imported);
    let before = store.stats().unwrap();
    let refused = store.forget(
        &Policy::builtin("timed-gentle").unwrap(),
        day(far),
        ForgetOptions {
            dry_run: false,
            drop_originals: false,
            pages: PageOptions::default(),
            progress: &mut |_, _| {},
        },
    );
    match refused {
        Err(memdb::Error::OriginalsNeedConsent {
            count, originals, ..
        }) => {
            assert_eq!(count, imported);
            assert_eq!(originals, dry.originals);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(store.stats().unwrap(), before, "a refused run wrote");
    // A policy whose every stage keeps originals re-encodes pages and keeps them all.
    let keeping = Policy::from_toml(
        "name = \"keeper\"\n[[stage]]\nname = \"all\"\nquality = 60\nscale = 0.5\n",
    )
    .unwrap();
    let report = store
        .forget(
            &keeping,
            day(far),
            ForgetOptions {
                dry_run: false,
                drop_originals: false,
                pages: PageOptions::default(),
                progress: &mut |_, _| {},
            },
        )
        .unwrap();
    assert!(report.originals.is_empty());
    assert!(report.stages[0].pages_changed > 0);
    assert_eq!(count(&store), imported);
    assert!(store.check().unwrap().is_clean());
}

/// Plan, then apply: a plan is what a dry run reports, and applying it does what `forget` does
/// (the same report as `forget` on a copy of the store). A plan the store moved on from — an
/// item written, or its pages forgotten by another plan, since — is refused as stale and
/// nothing is written.
#[test]
fn a_plan_applies_as_forget_does_and_a_stale_plan_is_refused() {
    use memdb::Error;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    {
        let store = Store::create(&a, Options::default()).unwrap();
        if let Some(photos) = shared_data("photos") {
            import_photos(&store, &photos, 12);
        }
        add_chats(&store);
        store
            .compose_pages(PageOptions::default(), &mut |_, _| {})
            .unwrap();
    }
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&a)
        .arg(&b)
        .status()
        .unwrap();
    assert!(status.success());
    let policy = Policy::builtin("softer-old").unwrap();
    let store = Store::open(&a, Options::default()).unwrap();
    let mut reencoded = 0;
    let plan = store
        .plan_forget(&policy, day("2023-09-01"), &mut |done, _| reencoded = done)
        .unwrap();
    let dry = forget(&store, "softer-old", "2023-09-01", true);
    assert_eq!(plan.report(), &dry, "the dry run is the plan");
    assert!(!plan.pages().is_empty());
    let page_bytes = |r: &memdb::forget::ForgetReport| -> (u64, u64) {
        r.stages.iter().fold((0, 0), |(b, a), s| {
            (b + s.page_bytes_before, a + s.page_bytes_after)
        })
    };
    let planned = plan
        .pages()
        .iter()
        .fold((0, 0), |(b, a), p| (b + p.bytes_before, a + p.bytes_after));
    assert_eq!(planned, page_bytes(&dry));
    assert!(plan.pages().iter().all(|p| p.to.stage >= p.from.stage
        && p.to.quality <= p.from.quality
        && p.to.scale <= p.from.scale));
    assert_eq!(plan.bytes_saved(), dry.bytes_saved());
    let with_pixels = plan.pages().iter().filter(|p| p.bytes_before > 0).count() as u64;
    assert_eq!(
        reencoded, with_pixels,
        "progress counts the pages re-encoded"
    );
    let applied = store.apply_forget(plan, true).unwrap();
    let other = Store::open(&b, Options::default()).unwrap();
    let forgot = forget(&other, "softer-old", "2023-09-01", false);
    assert_eq!(applied, forgot, "plan + apply is forget");
    assert!(!applied.dry_run && applied.stages == dry.stages);
    assert!(store.check().unwrap().is_clean());

    // An item written after the plan: refused, nothing written.
    let harsher = Policy::builtin("timed-gentle").unwrap();
    let stale = store
        .plan_forget(&harsher, day("2023-09-01"), &mut |_, _| {})
        .unwrap();
    assert!(stale.report().stages.iter().any(|s| s.pages_changed > 0));
    let mut batch = store.batch();
    batch.put(ItemDraft {
        fields: ItemFields::new(
            Source::Note,
            EventTime::parse("2023-08-30T10:00:00Z").unwrap(),
        ),
        supersedes: None,
    });
    batch.commit().unwrap();
    let (stats, pages) = (
        store.stats().unwrap(),
        store.snapshot().unwrap().pages().unwrap(),
    );
    let refused = store.apply_forget(stale, true);
    assert!(
        matches!(refused, Err(Error::StalePlan { .. })),
        "{refused:?}"
    );
    assert_eq!(store.stats().unwrap(), stats, "a stale plan wrote");
    assert_eq!(store.snapshot().unwrap().pages().unwrap(), pages);

    // Two plans from one snapshot: the second is stale once the first changed its pages.
    let first = store
        .plan_forget(&harsher, day("2023-09-01"), &mut |_, _| {})
        .unwrap();
    let second = store
        .plan_forget(&harsher, day("2023-09-01"), &mut |_, _| {})
        .unwrap();
    assert_eq!(first.op_seq(), second.op_seq());
    store.apply_forget(first, true).unwrap();
    let refused = store.apply_forget(second, true);
    assert!(
        matches!(refused, Err(Error::StalePlan { .. })),
        "{refused:?}"
    );
    assert!(store.check().unwrap().is_clean());
}
