//! An application linking `memdb` gets, through the engine's ingest API alone, the store the
//! `memdb` tool builds (`import`, `embed`, `pages`): the same items, vectors, memory graph and
//! pages, on LoCoMo conversations and the shared photos, with the real encoder.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::{Path, PathBuf};

use common::{json, memdb, model_installed};
use memdb::{BlobKind, IngestItem, IngestOptions, Options, Store};
use memdb_encode::{Encoder, EncoderOptions, MiniLm, model};
use memdb_formats::import::{locomo, photo};
use memdb_it::{files_under, locomo_files, shared_data, store_shape};

/// LoCoMo conversations used (the first, in name order): enough for several graph chunks'
/// worth of paths while keeping the test short on two cores.
const CONVERSATIONS: usize = 2;

fn conversations(dir: &Path) -> Vec<PathBuf> {
    let mut files = locomo_files(dir);
    files.truncate(CONVERSATIONS);
    files
}

/// The items an application hands the ingest: what the importers parse, in the order the tool
/// imports them (conversations, then photos by path, each with its original).
fn application_items(files: &[PathBuf], photos: &Path) -> Vec<IngestItem> {
    let mut items = Vec::new();
    for file in files {
        let bytes = std::fs::read(file).unwrap();
        let parsed = locomo::parse(file, &bytes).unwrap();
        assert!(parsed.errors.is_empty());
        items.extend(parsed.items.into_iter().map(|i| IngestItem::new(i.draft)));
    }
    for path in files_under(photos) {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // What the importer refuses (not a JPEG, an unreadable header) the application skips
        // too; a damaged photo the importer keeps, it keeps.
        if let Ok(parsed) = photo::parse(&name, &bytes, photo::PhotoLimits::default()) {
            items.push(IngestItem {
                draft: parsed.draft,
                blobs: vec![(BlobKind::Original, bytes)],
                origin: name,
                vector: None,
            });
        }
    }
    items
}

#[test]
fn the_ingest_api_builds_the_store_the_tool_builds() {
    let (Some(locomo_dir), Some(photos)) = (shared_data("locomo"), shared_data("photos")) else {
        return;
    };
    if !model_installed() {
        return;
    }
    let files = conversations(&locomo_dir);
    let dir = tempfile::tempdir().unwrap();

    // The tool's path.
    let tool = dir.path().join("tool");
    let tool_s = tool.to_str().unwrap();
    let mut args = vec!["--json", "import", "locomo", "--create", tool_s];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    json(&memdb(&args));
    json(&memdb(&[
        "--json",
        "import",
        "photos",
        tool_s,
        photos.to_str().unwrap(),
    ]));
    json(&memdb(&["--json", "embed", tool_s]));
    json(&memdb(&["--json", "pages", tool_s]));
    let want = store_shape(&Store::open(&tool, Options::default()).unwrap());

    // The application's path: one call.
    let encoder = MiniLm::load(&model::locate().unwrap(), EncoderOptions::default()).unwrap();
    let app = Store::create(dir.path().join("app"), Options::default()).unwrap();
    app.bind_model(&encoder.model_id().to_string()).unwrap();
    let report = app
        .ingest_items(
            application_items(&files, &photos),
            Some(&encoder),
            IngestOptions::default(),
            &mut |_, _, _| {},
        )
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let got = store_shape(&app);

    assert!(want.items > 500, "{} items", want.items);
    assert_eq!(want.vectors, want.items);
    assert!(want.graph_nodes > 0 && want.pages.iter().any(|p| p.2 > 0));
    assert_eq!(got, want);
    assert_eq!(
        report.embedded.unwrap().encoded,
        want.items,
        "the embed stage encoded every item"
    );
}
