//! Helpers shared by memdb's integration tests: a seeded generator and the deterministic
//! workload of the crash tests, so the writer child and the verifying parent derive the same
//! bytes from a batch id.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Source};

/// SplitMix64: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo).max(1)
    }
}

/// One item of the crash workload: everything about it follows from `(batch, index)`.
pub fn crash_item(batch: u64, index: u64) -> (ItemDraft, Vec<(BlobKind, Vec<u8>)>) {
    let mut rng = Rng::new(batch.wrapping_mul(1_000_003) ^ index);
    let source = Source::ALL[(rng.next_u64() % 5) as usize];
    let mut fields = ItemFields::new(
        source,
        EventTime::utc(1_600_000_000_000 + (rng.next_u64() % 100_000_000_000) as i64),
    );
    fields.external_id = Some(crash_external_id(batch, index));
    let len = rng.range(0, 3000) as usize;
    fields.body = Some(
        (0..len)
            .map(|_| (b'a' + (rng.next_u64() % 26) as u8) as char)
            .collect(),
    );
    fields.tags = vec![format!("batch-{batch}")];
    let blobs = if rng.next_u64().is_multiple_of(4) {
        let n = rng.range(1, 40_000) as usize;
        vec![(
            BlobKind::Original,
            (0..n).map(|_| rng.next_u64() as u8).collect(),
        )]
    } else {
        Vec::new()
    };
    (
        ItemDraft {
            fields,
            supersedes: None,
        },
        blobs,
    )
}

pub fn crash_external_id(batch: u64, index: u64) -> String {
    format!("b{batch}-i{index}")
}

/// Applies one logged `crash_writer` batch to `expected` (external id → the batch and index
/// that wrote it): its puts, its deletes, and its restores (`+ext`, an undelete: the item is
/// back as the batch that first wrote it).
pub fn apply_crash_batch(
    expected: &mut std::collections::BTreeMap<String, (u64, u64)>,
    batch: u64,
    entries: &[String],
) {
    for index in 0..crash_batch_len(batch) {
        expected.insert(crash_external_id(batch, index), (batch, index));
    }
    for entry in entries {
        match entry.strip_prefix('+') {
            Some(ext) => {
                let written = ext
                    .strip_prefix('b')
                    .and_then(|rest| rest.split_once("-i"))
                    .and_then(|(b, i)| Some((b.parse().ok()?, i.parse().ok()?)))
                    .unwrap_or_else(|| panic!("a restore of {ext:?}, not a crash item"));
                expected.insert(ext.to_owned(), written);
            }
            None => {
                expected.remove(entry);
            }
        }
    }
}

/// What a `crash_writer` child acknowledged: batches whose commit returned (with the external
/// ids each deleted, and `+`-prefixed those it restored), and the batch it had started.
#[derive(Default, Debug)]
pub struct CrashLog {
    pub committed: Vec<(u64, Vec<String>)>,
    pub in_flight: Option<(u64, Vec<String>)>,
}

/// Parses a `crash_writer` log: `I batch deletes…` before a commit, `C batch` after it.
pub fn read_crash_log(text: &str) -> CrashLog {
    let mut log = CrashLog::default();
    for line in text.lines() {
        let mut parts = line.split(' ');
        match (
            parts.next(),
            parts.next().and_then(|b| b.parse::<u64>().ok()),
        ) {
            (Some("I"), Some(batch)) => {
                log.in_flight = Some((
                    batch,
                    parts.filter(|s| !s.is_empty()).map(str::to_owned).collect(),
                ));
            }
            (Some("C"), Some(batch)) => {
                let (b, deletes) = log.in_flight.take().expect("C without I");
                assert_eq!(b, batch);
                log.committed.push((batch, deletes));
            }
            // A torn last line (killed mid-write) carries no acknowledgement.
            _ => {}
        }
    }
    log
}

/// Items in crash batch `batch`.
pub fn crash_batch_len(batch: u64) -> u64 {
    Rng::new(batch ^ 0xABCD).range(1, 40)
}

/// Rewrites every segment of `store` (keeping every live entry): the compaction after which
/// nothing deleted may remain on disk.
pub fn compact_everything(store: &memdb::Store) -> memdb::maintenance::CompactReport {
    store
        .compact(
            &memdb::maintenance::CompactOptions {
                victims: memdb::maintenance::Victims::All,
            },
            &mut memdb::maintenance::KeepEverything,
        )
        .expect("compaction of every segment")
}

/// Bag of words hashed into 16 dimensions (the graph needs an embedder, not a model).
#[derive(Debug, Clone, Copy)]
pub struct HashEmbedder;

impl memdb::Embedder for HashEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = [0f32; 16];
                for w in t.split_whitespace() {
                    let h = w
                        .bytes()
                        .fold(7u32, |h, b| h.wrapping_mul(31) ^ u32::from(b));
                    v[(h % 16) as usize] += 1.0;
                }
                v[15] += 0.01;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

/// The shared data folder `kind` (photos, mail, locomo) if present. Under CI its absence is a
/// failure; elsewhere the caller skips, and this says so.
pub fn shared_data(kind: &str) -> Option<std::path::PathBuf> {
    let base = std::env::var_os("MEMDB_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let dir = base.join("data").join(kind);
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have {}",
        dir.display()
    );
    eprintln!(
        "SKIPPED: {} not found (set MEMDB_SHARED_DIR)",
        dir.display()
    );
    None
}

/// Imports every JPEG under `dir` that parses and decodes whole (name order, at most `limit`;
/// damaged photos, which the importer keeps, are left out so page pixels are all real) as
/// photo items with their originals; returns how many went in.
pub fn import_photos(store: &memdb::Store, dir: &std::path::Path, limit: usize) -> usize {
    import_photos_at(store, dir, limit, |_| None)
}

/// As [`import_photos`], the `i`-th photo's time replaced by `time(i)` where that gives one.
pub fn import_photos_at(
    store: &memdb::Store,
    dir: &std::path::Path,
    limit: usize,
    time: impl Fn(usize) -> Option<EventTime>,
) -> usize {
    let files: Vec<std::path::PathBuf> = files_under(dir)
        .into_iter()
        .filter(|path| {
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg"))
        })
        .collect();
    let mut batch = store.batch();
    let mut n = 0;
    for path in files {
        if n == limit {
            break;
        }
        let bytes = std::fs::read(&path).unwrap();
        let name = path.strip_prefix(dir).unwrap().display().to_string();
        if let Ok(mut photo) =
            memdb_formats::import::photo::parse(&name, &bytes, Default::default())
            && photo.damage.is_none()
        {
            // Every photo gets a day (and so a page): undated ones go on one fixed day.
            if let Some(t) = time(n) {
                photo.draft.fields.time = t;
            } else if photo.draft.fields.time.is_undated() {
                photo.draft.fields.time = EventTime::utc(1_600_000_000_000);
            }
            // What the ingest does before a photo commits.
            memdb::place::fill_place(
                &mut photo.draft.fields,
                &memdb::place::PlaceOptions::default(),
            );
            batch.put_with_blobs(photo.draft, vec![(BlobKind::Original, bytes)]);
            n += 1;
        }
    }
    batch.commit().unwrap();
    n
}

/// Steps of the forgetting crash test: step k moves every page to stage k.
pub const CRASH_FORGET_STEPS: u32 = 8;

/// An eight-stage policy of ten days each, every stage lower in quality and scale, item
/// vectors f32 in stages 0–2, f16 in 3–5, i8 in 6–7.
pub fn crash_forget_policy() -> memdb::forget::Policy {
    let stages = (0..CRASH_FORGET_STEPS)
        .map(|k| memdb::forget::StageRule {
            name: format!("s{k}"),
            until_days: (k + 1 < CRASH_FORGET_STEPS).then_some(10 * (k + 1)),
            quality: 95 - 8 * k as u8,
            scale: 1.0 - 0.08 * k as f32,
            keep_originals: false,
            vectors: match k {
                0..=2 => memdb::vectors::Precision::F32,
                3..=5 => memdb::vectors::Precision::F16,
                _ => memdb::vectors::Precision::I8,
            },
        })
        .collect();
    memdb::forget::Policy {
        name: "crash-eight".to_owned(),
        stages,
    }
}

/// The photos of the crash test are dated 2020-01-01 to 2020-01-06.
pub fn crash_forget_photo_time(index: usize) -> EventTime {
    EventTime::utc(1_577_836_800_000 + index as i64 * 6 * 3_600_000)
}

/// The day step k counts ages to: every page is then 10k+1 to 10k+6 days old.
pub fn crash_forget_as_of(step: u32) -> jiff::civil::Date {
    jiff::civil::date(2020, 1, 7)
        .checked_add(jiff::Span::new().days(i64::from(10 * step)))
        .unwrap()
}

/// Every file under `dir`, recursively, sorted.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// An environment variable as a number, or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An append-only acknowledgement log for crash-test children: each line is fsync'd before the
/// call returns, so the parent knows exactly what was acknowledged.
pub fn ack_log(path: &str) -> impl FnMut(String) {
    use std::io::Write;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    move |text: String| {
        log.write_all(text.as_bytes()).unwrap();
        log.sync_data().unwrap();
    }
}

/// The items of one LoCoMo file and (if given) the first `photo_limit` whole photos under a
/// folder, as the engine's ingest takes them, in a fixed order.
pub fn ingest_corpus(
    locomo_file: &std::path::Path,
    photos: Option<&std::path::Path>,
    photo_limit: usize,
) -> Vec<memdb::IngestItem> {
    let bytes = std::fs::read(locomo_file).unwrap();
    let parsed = memdb_formats::import::locomo::parse(locomo_file, &bytes).unwrap();
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let mut items: Vec<memdb::IngestItem> = parsed
        .items
        .into_iter()
        .map(|i| memdb::IngestItem::new(i.draft))
        .collect();
    let Some(photos) = photos else {
        return items;
    };
    let mut n = 0;
    for path in files_under(photos) {
        if n == photo_limit {
            break;
        }
        let bytes = std::fs::read(&path).unwrap();
        let name = path.strip_prefix(photos).unwrap().display().to_string();
        if let Ok(photo) = memdb_formats::import::photo::parse(&name, &bytes, Default::default())
            && photo.damage.is_none()
        {
            items.push(memdb::IngestItem {
                draft: photo.draft,
                blobs: vec![(BlobKind::Original, bytes)],
                origin: name,
                vector: None,
            });
            n += 1;
        }
    }
    items
}

/// What a store holds, for comparing two ways of building it: items, item vectors, graph
/// (items seen, nodes, paths) and pages (day, stage, parts, the items each shows).
#[derive(Debug, PartialEq, Eq)]
pub struct StoreShape {
    pub items: u64,
    pub vectors: u64,
    pub graph_items: u64,
    pub graph_nodes: u64,
    pub graph_paths: u64,
    pub pages: Vec<(String, u8, usize, Vec<String>)>,
}

/// The [`StoreShape`] of `store` (items on pages named by external id, so two stores compare).
pub fn store_shape(store: &memdb::Store) -> StoreShape {
    let snap = store.snapshot().unwrap();
    let graph = snap.graph();
    let (graph_nodes, graph_paths) = graph.counts().unwrap();
    let pages = snap
        .pages()
        .unwrap()
        .into_iter()
        .map(|page| {
            let mut shown: Vec<String> = page
                .layout
                .items()
                .into_iter()
                .map(|id| {
                    snap.get(id)
                        .unwrap()
                        .and_then(|i| i.fields.external_id)
                        .unwrap_or_else(|| format!("#{id}"))
                })
                .collect();
            shown.sort();
            (page.day, page.stage, page.parts.len(), shown)
        })
        .collect();
    StoreShape {
        items: snap.item_count().unwrap(),
        vectors: snap
            .vector_keys(memdb::vectors::ITEM_VECTORS)
            .unwrap()
            .len(),
        graph_items: graph.seen_count().unwrap(),
        graph_nodes,
        graph_paths,
        pages,
    }
}

/// Ingest options with small batches and graph chunks, so every stage commits several times
/// (a kill lands inside one) — the same for a run and its resumption, since graph paths
/// follow the chunks.
pub fn small_ingest_options() -> memdb::IngestOptions {
    let mut options = memdb::IngestOptions {
        batch_items: 100,
        ..memdb::IngestOptions::default()
    };
    if let Some(graph) = options.graph.as_mut() {
        graph.chunk_items = 150;
    }
    options
}

/// The LoCoMo conversation files (`*.json`) in `dir`, in name order.
pub fn locomo_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// The message a `remember` crash-test child says in call `n`: one to three statements, each
/// naming `n` so no two calls' facts are equal, on subjects that recur so later calls update,
/// delete and restate earlier ones.
pub fn remember_message(n: u64) -> String {
    const SUBJECTS: [&str; 4] = ["I live in", "I work at", "My dog is called", "I drive a"];
    const VALUES: [&str; 5] = ["Lisbon", "Porto", "Acme", "Rex", "Kia"];
    let mut rng = Rng::new(n.wrapping_mul(0x9e37_79b9) | 1);
    let mut sentences = Vec::new();
    for _ in 0..rng.range(1, 4) {
        let subject = SUBJECTS[(rng.next_u64() % 4) as usize];
        let value = VALUES[(rng.next_u64() % 5) as usize];
        let sentence = if rng.next_u64().is_multiple_of(5) {
            format!("{subject} {value} no longer since call {n}.")
        } else {
            format!("{subject} {value} as of call {n}.")
        };
        // `remember` drops a fact repeated within one input; the writer counts distinct ones.
        if !sentences.contains(&sentence) {
            sentences.push(sentence);
        }
    }
    sentences.join(" ")
}

/// A store's options, encrypted (passphrase `pw`) or not. Argon2id runs at its floor: the
/// reliability tests are about the files, not the KDF's cost.
pub fn store_options(encrypted: bool) -> memdb::Options {
    memdb::Options {
        secret: encrypted.then(|| {
            std::sync::Arc::new(memdb::crypto::Secret::passphrase("pw").expect("a passphrase"))
        }),
        kdf_cost: memdb::crypto::KdfCost {
            memory_kib: 64,
            iterations: 1,
            parallelism: 1,
        },
        ..memdb::Options::default()
    }
}

/// Copies the directory tree `from` to `to` (a store, to damage or crash a copy of it).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
