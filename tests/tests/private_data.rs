//! Reliability R12, the forgetting half: an item holding a random 32-byte canary (in its text
//! and as a blob) is updated and deleted as a memory (the canary in its versions and in the
//! operations' reasons and actor), then purged and the store compacted; from the purge on no
//! read returns it, and after the compaction not one byte under the store directory still
//! holds the canary.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;

use memdb::{
    BlobKind, EventTime, ItemDraft, ItemFields, Options, ScanFilter, Source, Store,
    memory::MemoryOp, memory::OpNote, memory::Validity,
};

fn canary(seed: u64) -> [u8; 32] {
    let mut x = seed | 1;
    let mut out = [0u8; 32];
    for b in &mut out {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn note(ext: &str, day: u32, body: &str) -> ItemDraft {
    let mut f = ItemFields::new(
        Source::Note,
        EventTime::parse(&format!("2024-03-{day:02}T10:00:00Z")).unwrap(),
    );
    f.external_id = Some(ext.to_owned());
    f.body = Some(body.to_owned());
    ItemDraft {
        fields: f,
        supersedes: None,
    }
}

/// Files under `dir` holding `needle`, with the offset of the first hit.
fn hits(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for path in memdb_it::files_under(dir) {
        let bytes = std::fs::read(&path).unwrap();
        if let Some(at) = bytes.windows(needle.len()).position(|w| w == needle) {
            out.push(format!("{} @ {at}", path.display()));
        }
    }
    out
}

#[test]
fn a_deleted_item_leaves_no_byte_behind_after_compaction() {
    for seed in [1u64, 0xfeed, 0x5eed_cafe] {
        let secret = canary(seed);
        let text = hex(&secret);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = Store::create(&path, Options::default()).unwrap();
        let mut batch = store.batch();
        for i in 0..40 {
            batch.put(note(
                &format!("n{i}"),
                1 + i % 28,
                &format!("ordinary note number {i}"),
            ));
        }
        batch.put_with_blobs(
            note("secret", 5, &format!("my bank PIN list {text}")),
            vec![(BlobKind::Original, secret.to_vec())],
        );
        let receipt = batch.commit().unwrap();
        let secret_id = receipt.puts.last().unwrap().id;
        assert!(
            !hits(&path, &secret).is_empty(),
            "the canary must be on disk first"
        );
        assert!(!hits(&path, text.as_bytes()).is_empty());

        // The memory changes (the canary in its new text and in the op's reason), then is
        // deleted: a delete keeps its versions, so the canary is still readable in its history.
        let mut changed = note("secret", 6, &format!("my new bank PIN list {text}")).fields;
        changed.tags = vec![format!("pin-{text}")];
        store
            .apply(vec![MemoryOp::Update {
                id: secret_id,
                fields: changed,
                valid: Validity::default(),
                note: OpNote {
                    reason: format!("the PIN list changed to {text}"),
                    actor: Some(format!("actor-{text}")),
                    role: None,
                },
            }])
            .unwrap();
        store
            .apply(vec![MemoryOp::Delete {
                id: secret_id,
                valid_to_ms: None,
                note: OpNote {
                    reason: format!("no longer {text}"),
                    ..OpNote::default()
                },
            }])
            .unwrap();
        let history = store.snapshot().unwrap().history(secret_id).unwrap();
        assert_eq!(history.versions.len(), 2);
        assert!(history.ops.iter().any(|op| op.reason.contains(&text)));
        // A delete is soft: the original stays for an undelete until the purge.
        let original = receipt.puts.last().unwrap().blob_ids[0];
        assert!(store.snapshot().unwrap().blob(original).unwrap().is_some());
        // Purged: every version and every op's words go.
        assert!(store.purge(secret_id).unwrap());
        let snap = store.snapshot().unwrap();
        assert!(snap.history(secret_id).unwrap().versions.is_empty());
        assert!(
            snap.op_log(None)
                .unwrap()
                .iter()
                .all(|op| !op.reason.contains(&text))
        );
        assert!(snap.get(secret_id).unwrap().is_none());
        assert!(snap.get_by_external_id("secret").unwrap().is_none());
        let all = snap.scan(&ScanFilter::default()).unwrap();
        assert_eq!(all.len(), 40);
        assert!(
            all.iter()
                .all(|i| !i.fields.body.as_deref().unwrap_or("").contains(&text))
        );
        drop(snap);

        memdb_it::compact_everything(&store);
        // The op rows' words were catalog rows: the catalog's pages that held them are freed,
        // not overwritten, until the catalog is compacted too (`memdb compact` does both).
        let mut store = store;
        store.shrink_catalog().unwrap();
        drop(store);
        let left: Vec<String> = hits(&path, &secret)
            .into_iter()
            .chain(hits(&path, text.as_bytes()))
            .collect();
        assert!(
            left.is_empty(),
            "seed {seed:#x}: canary still on disk in {left:?}"
        );
        // And the store is whole.
        let store = Store::open(&path, Options::default()).unwrap();
        assert_eq!(store.snapshot().unwrap().item_count().unwrap(), 40);
        assert!(store.check().unwrap().problems.is_empty());
    }
}

#[test]
fn a_deleted_item_leaves_nothing_in_vectors_or_the_memory_graph() {
    for seed in [0xabc, 0x77, 0x12345, 0xdead] {
        graph_case(seed);
    }
}

fn graph_case(seed: u64) {
    let secret = canary(seed);
    let text = hex(&secret);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = Store::create(&path, Options::default()).unwrap();
    let mut batch = store.batch();
    for i in 0..20 {
        batch.put(note(
            &format!("n{i}"),
            1 + i,
            &format!("ordinary note number {i}"),
        ));
    }
    // A made-up name the extractor takes as an entity node.
    let name: String = secret[..8]
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let c = char::from(b'a' + b % 26);
            if i == 0 { c.to_ascii_uppercase() } else { c }
        })
        .collect();
    batch.put(note(
        "secret",
        5,
        &format!("Vault code {text} for Lisbon, ask {name} Smith"),
    ));
    let receipt = batch.commit().unwrap();
    let secret_id = receipt.puts.last().unwrap().id;
    let mut batch = store.batch();
    for put in &receipt.puts {
        let item = store.snapshot().unwrap().get(put.id).unwrap().unwrap();
        let v = memdb::Embedder::embed(
            &memdb_it::HashEmbedder,
            &[item.fields.body.as_deref().unwrap()],
        )
        .unwrap()
        .remove(0);
        batch.put_vector(
            memdb::vectors::ITEM_VECTORS,
            put.id,
            item.fields.time.unix_ms,
            5,
            v,
        );
    }
    batch.commit().unwrap();
    store
        .update_graph(
            &memdb_it::HashEmbedder,
            &memdb::graph::GraphOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
    assert!(!hits(&path, text.as_bytes()).is_empty());
    let phrase = format!("{} smith", name.to_lowercase());
    assert!(
        store
            .snapshot()
            .unwrap()
            .graph()
            .lookup(&phrase)
            .unwrap()
            .is_some(),
        "the name must be a graph node first"
    );

    let mut batch = store.batch();
    batch.purge(secret_id);
    batch.delete_vector(memdb::vectors::ITEM_VECTORS, secret_id);
    batch.commit().unwrap();
    memdb_it::compact_everything(&store);
    store.compact_vectors(true).unwrap();
    drop(store);
    let left: Vec<String> = hits(&path, text.as_bytes())
        .into_iter()
        .chain(hits(&path, phrase.as_bytes()))
        .chain(hits(&path, name.as_bytes()))
        .collect();
    assert!(left.is_empty(), "canary still on disk in {left:?}");
}

/// R12: the test suite opens no network connection. `scripts/test.sh` runs it in a network
/// namespace with only loopback and says so with `MEMDB_NO_NETWORK=1`; this proves the namespace
/// is in force — another host is unreachable — so any test that tried would have failed.
#[test]
fn the_suite_runs_where_no_other_host_is_reachable() {
    if std::env::var_os("MEMDB_NO_NETWORK").is_none() {
        eprintln!("SKIPPED: not under scripts/test.sh's network namespace");
        return;
    }
    let far = std::net::SocketAddr::from(([1, 1, 1, 1], 53));
    let err = std::net::TcpStream::connect_timeout(&far, std::time::Duration::from_secs(2))
        .expect_err("another host is reachable from the test namespace");
    assert_eq!(err.kind(), std::io::ErrorKind::NetworkUnreachable, "{err}");
    // Loopback works: the LLM extractor's tests talk to a server on 127.0.0.1.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
}
