//! The captioner against a stub server on loopback: every new photo gets its fields, bad and
//! slow answers leave photos as they were, a captioned photo is never sent again.

use std::sync::Arc;
use std::time::Duration;

use memdb_formats::item::{EventTime, ItemDraft, ItemFields, Source};
use serde_json::{Value, json};

use super::*;
use crate::{BlobKind, IngestItem, IngestOptions, Options};
use memdb_endpoint_stub::{Reply, completion, serve};

/// Bytes with a JPEG's magic: the captioner sends what it cannot decode as it is.
fn fake_jpeg(n: u8) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0];
    bytes.extend(std::iter::repeat_n(n, 64));
    bytes
}

fn photo(name: &str, minute: i64, original: Option<Vec<u8>>) -> IngestItem {
    let mut fields = ItemFields::new(
        Source::Image,
        EventTime::utc(1_030_000_000_000 + minute * 60_000),
    );
    fields.external_id = Some(name.to_owned());
    let mut item = IngestItem::new(ItemDraft {
        fields,
        supersedes: None,
    });
    item.blobs.extend(original.map(|b| (BlobKind::Original, b)));
    item
}

fn good(n: usize) -> String {
    completion(
        &json!({
            "caption": format!("A red tram number {n} crossing a bridge."),
            "short_caption": format!("tram {n}"),
            "ocr_text": format!("LINE {n}"),
            "tags": ["tram", "bridge"],
            "entities": ["Ponte Vecchio"],
        })
        .to_string(),
    )
}

fn store_with(photos: Vec<IngestItem>) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let report = store
        .ingest_items(
            photos,
            None,
            IngestOptions::commit_only(),
            &mut |_, _, _| {},
        )
        .unwrap();
    assert!(report.rejected.is_empty(), "{report:?}");
    (dir, store)
}

fn captioner(url: &str, timeout: Duration) -> VisionCaptioner {
    VisionCaptioner::new(
        url,
        "stub-vl",
        VisionOptions {
            timeout,
            ..VisionOptions::default()
        },
    )
    .unwrap()
}

fn by_name(store: &Store, name: &str) -> crate::Item {
    store
        .snapshot()
        .unwrap()
        .get_by_external_id(name)
        .unwrap()
        .unwrap()
}

#[test]
fn every_new_photo_is_captioned_once_with_its_provenance() {
    let (_dir, store) = store_with(vec![
        photo("a.jpg", 0, Some(fake_jpeg(1))),
        photo("b.jpg", 1, Some(fake_jpeg(2))),
        photo("c.jpg", 2, Some(fake_jpeg(3))),
        photo("no-original.jpg", 3, None),
    ]);
    let (url, server) = serve((0..3).map(|n| Reply::ok(good(n))).collect());
    let before = jiff::Timestamp::now().as_millisecond();
    let mut seen = Vec::new();
    let report = store
        .caption_photos(&captioner(&url, Duration::from_secs(10)), &mut |d, t| {
            seen.push((d, t))
        })
        .unwrap();
    assert_eq!(
        (
            report.captioned,
            report.already,
            report.no_original,
            report.failed.len()
        ),
        (3, 0, 1, 0),
        "{report:?}"
    );
    assert_eq!(seen.last(), Some(&(3, 3)));
    let requests = server.join().unwrap();
    for (n, (request, name)) in requests.iter().zip(["a.jpg", "b.jpg", "c.jpg"]).enumerate() {
        let request: Value = serde_json::from_str(request).unwrap();
        assert_eq!(request["model"], "stub-vl");
        let content = &request["messages"][0]["content"];
        assert!(
            content[0]["text"]
                .as_str()
                .unwrap()
                .contains("\"short_caption\"")
        );
        let data_url = content[1]["image_url"]["url"].as_str().unwrap();
        use base64::Engine as _;
        let sent = base64::engine::general_purpose::STANDARD
            .decode(data_url.strip_prefix("data:image/jpeg;base64,").unwrap())
            .unwrap();
        assert_eq!(sent, fake_jpeg(n as u8 + 1), "the original as it was");
        let f = by_name(&store, name).fields;
        assert_eq!(
            f.caption.as_deref(),
            Some(format!("A red tram number {n} crossing a bridge.").as_str())
        );
        assert_eq!(
            f.short_caption.as_deref(),
            Some(format!("tram {n}").as_str())
        );
        assert_eq!(f.ocr.as_deref(), Some(format!("LINE {n}").as_str()));
        assert_eq!(f.tags, ["tram", "bridge"]);
        assert_eq!(f.entities, ["Ponte Vecchio"]);
        let p = f.caption_provenance.unwrap();
        assert_eq!(p.model, "stub-vl");
        assert!(p.at_ms >= before, "{p:?}");
        // The caption is part of the text the encoder and BM25 see.
        let text = crate::recall::item_text(&by_name(&store, name));
        assert!(text.contains(&format!("Short caption: tram {n}")), "{text}");
    }
    assert_eq!(
        by_name(&store, "no-original.jpg").fields.caption_provenance,
        None
    );

    // Never again: a server that would answer nothing good is not asked at all.
    let (url, server) = serve(vec![Reply {
        status: 500,
        ..Reply::ok("must not be asked")
    }]);
    let again = store
        .caption_photos(&captioner(&url, Duration::from_secs(10)), &mut |_, _| {})
        .unwrap();
    assert_eq!((again.captioned, again.already), (0, 3), "{again:?}");
    assert!(again.failed.is_empty());
    // Release the stub (it waits for one connection) and check it saw none of ours.
    let _ = std::net::TcpStream::connect(url.trim_start_matches("http://"));
    assert_eq!(server.join().unwrap(), [""]);
}

#[test]
fn malformed_and_slow_answers_leave_photos_uncaptioned_and_the_run_goes_on() {
    let names = ["500.jpg", "prose.jpg", "type.jpg", "slow.jpg", "fine.jpg"];
    let (_dir, store) = store_with(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| photo(n, i as i64, Some(fake_jpeg(i as u8))))
            .collect(),
    );
    let (url, server) = serve(vec![
        Reply {
            status: 500,
            ..Reply::ok("model not loaded")
        },
        Reply::ok(completion("The photo shows a tram on a bridge.")),
        Reply::ok(completion(
            r#"{"caption":"a tram","short_caption":["tram"]}"#,
        )),
        Reply {
            delay: Duration::from_millis(2_500),
            ..Reply::ok(good(9))
        },
        Reply::ok(good(4)),
    ]);
    let report = store
        .caption_photos(&captioner(&url, Duration::from_millis(800)), &mut |_, _| {})
        .unwrap();
    server.join().unwrap();
    assert_eq!(report.captioned, 1, "{report:?}");
    let failed: Vec<(&str, &CaptionError)> = report
        .failed
        .iter()
        .map(|f| (f.external_id.as_deref().unwrap(), &f.error))
        .collect();
    assert_eq!(failed.len(), 4, "{failed:?}");
    assert!(matches!(
        failed[0],
        (
            "500.jpg",
            CaptionError::Endpoint(EndpointError::Status { status: 500, .. })
        )
    ));
    assert!(matches!(
        failed[1],
        (
            "prose.jpg",
            CaptionError::Reply {
                source: CaptionReplyError::NotAnObject { .. },
                ..
            }
        )
    ));
    assert!(matches!(
        failed[2],
        (
            "type.jpg",
            CaptionError::Reply {
                source: CaptionReplyError::WrongType {
                    field: "short_caption",
                    ..
                },
                ..
            }
        )
    ));
    assert!(matches!(
        failed[3],
        (
            "slow.jpg",
            CaptionError::Endpoint(EndpointError::Transport { .. })
        )
    ));
    for (_, error) in &failed {
        assert!(error.to_string().contains("captioner"), "{error}");
    }
    let snapshot = store.snapshot().unwrap();
    assert_eq!(snapshot.item_count().unwrap(), 5);
    for name in &names[..4] {
        let item = snapshot.get_by_external_id(name).unwrap().unwrap();
        assert_eq!(
            (item.fields.caption, item.fields.caption_provenance),
            (None, None)
        );
        assert!(
            snapshot.versions(item.id).unwrap().is_empty(),
            "{name} unchanged"
        );
    }
    let fine = snapshot.get_by_external_id("fine.jpg").unwrap().unwrap();
    assert_eq!(fine.fields.short_caption.as_deref(), Some("tram 4"));

    // The next run tries only the four that failed.
    let (url, server) = serve((0..4).map(|n| Reply::ok(good(n))).collect());
    let retry = store
        .caption_photos(&captioner(&url, Duration::from_secs(10)), &mut |_, _| {})
        .unwrap();
    assert_eq!((retry.captioned, retry.already), (4, 1), "{retry:?}");
    assert_eq!(server.join().unwrap().len(), 4);
}

#[test]
fn the_persons_own_words_win_and_a_caption_is_applied_once() {
    let mut f = ItemFields::new(Source::Image, EventTime::utc(0));
    f.caption = Some("Grandma's 80th".into());
    f.tags = vec!["Family".into()];
    let model = CaptionFields {
        caption: "Several people around a cake.".into(),
        short_caption: "birthday cake".into(),
        ocr_text: Some("HAPPY 80".into()),
        tags: vec!["family".into(), "cake".into()],
        entities: vec![],
    };
    let provenance = CaptionProvenance {
        model: "m".into(),
        at_ms: 5,
    };
    assert!(apply_caption(&mut f, model.clone(), provenance.clone()));
    assert_eq!(f.caption.as_deref(), Some("Grandma's 80th"));
    assert_eq!(f.short_caption.as_deref(), Some("birthday cake"));
    assert_eq!(f.ocr.as_deref(), Some("HAPPY 80"));
    assert_eq!(f.tags, ["Family", "cake"]);
    let before = f.clone();
    assert!(!apply_caption(
        &mut f,
        model,
        CaptionProvenance {
            model: "other".into(),
            at_ms: 9
        }
    ));
    assert_eq!(f, before);
}

/// In an ingest the stage runs after the commit and before the embedder, so a photo's vector
/// is made from its caption: a caption applied to a photo embedded earlier makes its vector
/// stale and the same ingest makes it again.
#[test]
fn an_ingest_captions_new_photos_before_embedding_them() {
    #[derive(Debug)]
    struct Count;
    impl crate::Embedder for Count {
        fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, crate::EmbedError> {
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
    let no_derived = IngestOptions {
        graph: None,
        pages: crate::ingest::PageStage::Skip,
        ..IngestOptions::default()
    };
    // Embedded without a caption first (no captioner configured).
    let first = store
        .ingest_items(
            [photo("old.jpg", 0, Some(fake_jpeg(1)))],
            Some(&Count),
            no_derived.clone(),
            &mut |_, _, _| {},
        )
        .unwrap();
    assert_eq!(first.captions, None);
    assert_eq!(first.embedded.map(|e| e.encoded), Some(1));

    let (url, server) = serve(vec![Reply::ok(good(1)), Reply::ok(good(2))]);
    let options = IngestOptions {
        captioner: Some(Arc::new(captioner(&url, Duration::from_secs(10)))),
        ..no_derived
    };
    let mut stages = Vec::new();
    let second = store
        .ingest_items(
            [photo("new.jpg", 1, Some(fake_jpeg(2)))],
            Some(&Count),
            options,
            &mut |stage, _, _| {
                if stages.last() != Some(&stage) {
                    stages.push(stage);
                }
            },
        )
        .unwrap();
    server.join().unwrap();
    assert_eq!(second.captions.map(|c| c.captioned), Some(2));
    // Both photos embedded now: the new one, and the old one whose text the caption changed.
    assert_eq!(second.embedded.map(|e| e.encoded), Some(2), "{stages:?}");
    let captions = stages
        .iter()
        .position(|s| *s == crate::ingest::IngestStage::Captions);
    let embed = stages
        .iter()
        .position(|s| *s == crate::ingest::IngestStage::Embed);
    assert!(captions.is_some() && captions < embed, "{stages:?}");
}

#[cfg(feature = "render")]
#[test]
fn a_large_photo_is_sent_downscaled_upright_as_jpeg() {
    let big = crate::scrapbook::Canvas::white(2_400, 1_200)
        .encode_jpeg(80)
        .unwrap();
    let (url, server) = serve(vec![Reply::ok(good(0))]);
    captioner(&url, Duration::from_secs(10))
        .caption(&big)
        .unwrap();
    let request: Value = serde_json::from_str(&server.join().unwrap()[0]).unwrap();
    let url = request["messages"][0]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    use base64::Engine as _;
    let sent = base64::engine::general_purpose::STANDARD
        .decode(url.strip_prefix("data:image/jpeg;base64,").unwrap())
        .unwrap();
    let decoded = crate::scrapbook::Canvas::decode_jpeg(&sent).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (1_024, 512));
}

#[test]
fn only_loopback_servers_and_known_image_types_are_accepted() {
    for bad in [
        "http://192.168.1.5:8080",
        "https://127.0.0.1:8080",
        "http://vlm.example",
    ] {
        assert!(
            VisionCaptioner::new(bad, "m", VisionOptions::default()).is_err(),
            "{bad}"
        );
    }
    let c = VisionCaptioner::new("http://127.0.0.1:9", "m", VisionOptions::default()).unwrap();
    assert!(matches!(
        c.caption(b"GIF89a...."),
        Err(CaptionError::Image { .. })
    ));
}
