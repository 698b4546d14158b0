//! Bench `footprint` (issue 6): what forgetting saves and what it costs, on the shared corpora.
//!
//! Builds stores with the `memdb` tool as a person would (`import`, `embed`, `pages`): one from
//! ../shared/data/photos, one from ../shared/data/mail, one per LoCoMo conversation. Then for
//! every built-in policy, as of the day after the newest item of each corpus (the way a
//! person's store ages), forgets a copy and reports bytes by kind (raw inputs, pages,
//! originals, vectors, catalog — which holds the graph and the records' index —, segment
//! overhead), the saving against the raw inputs, LoCoMo Recall@10 after forgetting (DESIGN.md
//! §6 protocol, full recall), and how many salient graph incidences (names, dates, amounts)
//! survive with and without the saliency-aware layout. A stress row runs LoCoMo under
//! timed-gentle as of 2030-01-01, when every page is Old, then split in two: its Old stage's
//! vector precision alone, and its pages (the graph nodes that fade) alone. Also: what text-only pages would cost
//! stored as pixels (they are rendered on demand), and JPEG re-encode throughput (MB/s of
//! input) against Pillow on the same pages, when `MEMDB_PEER_PYTHON` (or python3) has Pillow.
//!
//! Writes a table to stdout, JSON to target/footprint/footprint.json and the plot (storage on a
//! log axis against Recall@10, one point per policy) to target/footprint/footprint.svg and .png.
//!
//! ```sh
//! cargo build --release -p memdb-cli
//! cargo run --release -p memdb-benches --bin footprint -- [--out DIR] [--skip-peer]
//!     [--corpora photos,mail,locomo] [--policies no-forget,…,stress]
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use memdb::forget::{BUILTIN_POLICIES, ForgetOptions, Policy};
use memdb::scrapbook::{PageOptions, is_salient_kind};
use memdb::{BlobKind, Options, RecallOptions, Store};
use memdb_benches::{flag_value, peer_python, run_peer_json, shared_dir, tree_bytes};
use memdb_encode::MiniLm;
use memdb_formats::import::locomo;
use serde_json::{Value, json};

fn memdb_tool() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let tool = exe.with_file_name("memdb");
    assert!(
        tool.is_file(),
        "{} is missing: run `cargo build --release -p memdb-cli` first",
        tool.display()
    );
    tool
}

fn run_tool(args: &[&str]) {
    let out = Command::new(memdb_tool()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "memdb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A corpus: its raw bytes, its stores (one, or one per LoCoMo conversation) in both layouts.
struct Corpus {
    name: &'static str,
    raw_bytes: u64,
    /// (salient-layout store, plain-layout store) per store.
    stores: Vec<(PathBuf, PathBuf)>,
    as_of: jiff::civil::Date,
}

/// Builds a store with `import` arguments, embeds it, and composes pages in both layouts.
fn build(work: &Path, name: &str, import: &[&str]) -> (PathBuf, PathBuf) {
    let salient = work.join(format!("{name}.salient"));
    let plain = work.join(format!("{name}.plain"));
    let s = salient.to_str().unwrap();
    let mut args = vec!["import", "--create"];
    args.push(import[0]);
    args.push(s);
    args.extend(&import[1..]);
    run_tool(&args);
    run_tool(&["embed", s]);
    copy_dir(&salient, &plain);
    run_tool(&["pages", s]);
    run_tool(&["pages", plain.to_str().unwrap(), "--no-salient"]);
    (salient, plain)
}

fn newest_day(stores: &[(PathBuf, PathBuf)]) -> jiff::civil::Date {
    let mut newest = i64::MIN;
    for (store, _) in stores {
        let store = Store::open(store, Options::default()).unwrap();
        if let Some((_, last)) = store.snapshot().unwrap().time_span().unwrap() {
            newest = newest.max(last);
        }
    }
    jiff::Timestamp::from_millisecond(newest)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .tomorrow()
        .unwrap()
}

/// Salient and all (item, node) incidences of a store's graph.
fn incidences(store: &Store) -> (u64, u64) {
    let snap = store.snapshot().unwrap();
    let graph = snap.graph();
    let mut kinds: HashMap<u64, bool> = HashMap::new();
    let (mut salient, mut all) = (0, 0);
    for id in snap.item_ids().unwrap() {
        if let Some((_, nodes)) = graph.item(id).unwrap() {
            for n in nodes {
                let is = *kinds.entry(n).or_insert_with(|| {
                    graph
                        .node(n)
                        .unwrap()
                        .is_some_and(|x| is_salient_kind(x.kind))
                });
                all += 1;
                salient += u64::from(is);
            }
        }
    }
    (salient, all)
}

/// Bytes of a store by kind.
#[derive(Default, Clone, Copy)]
struct Bytes {
    pages: u64,
    originals: u64,
    /// Photo originals still stored (a count).
    originals_kept: u64,
    vectors: u64,
    items: u64,
    catalog: u64,
    total: u64,
    /// Live items (a count).
    count: u64,
}

impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.count += o.count;
        self.pages += o.pages;
        self.originals += o.originals;
        self.originals_kept += o.originals_kept;
        self.vectors += o.vectors;
        self.items += o.items;
        self.catalog += o.catalog;
        self.total += o.total;
    }
}

fn bytes_of(store: &Store) -> Bytes {
    let stats = store.stats().unwrap();
    let kind = |k: BlobKind| {
        stats
            .blobs_by_kind
            .iter()
            .find(|b| b.0 == k)
            .map_or(0, |b| b.2)
    };
    let count = |k: BlobKind| {
        stats
            .blobs_by_kind
            .iter()
            .find(|b| b.0 == k)
            .map_or(0, |b| b.1)
    };
    Bytes {
        pages: kind(BlobKind::Page),
        originals: kind(BlobKind::Original),
        originals_kept: count(BlobKind::Original),
        vectors: kind(BlobKind::Vectors),
        items: stats.item_bytes,
        catalog: stats.catalog_bytes,
        total: stats.total_bytes(),
        count: stats.items,
    }
}

/// Page bytes of each catalog table, summed over stores.
fn add_catalog_tables(into: &mut BTreeMap<String, (u64, u64)>, store: &Store) {
    for t in store.stats().unwrap().catalog_tables {
        let slot = into.entry(t.name).or_default();
        slot.0 += t.page_bytes;
        slot.1 += t.rows;
    }
}

/// LoCoMo Recall@10 (full recall) of one conversation's store.
fn locomo_recall(store: &Store, file: &Path, encoder: &MiniLm) -> (f64, usize) {
    let bytes = std::fs::read(file).unwrap();
    let qa = locomo::parse_qa(file, &bytes).unwrap();
    let snap = store.snapshot().unwrap();
    let options = RecallOptions {
        k: 10,
        ..RecallOptions::default()
    };
    let (mut sum, mut n) = (0.0, 0);
    for q in qa.iter().filter(|q| !q.evidence.is_empty()) {
        // Evidence comes resolved to external ids (`<conversation>/<dia_id>`).
        let evidence: HashSet<String> = q.evidence.iter().cloned().collect();
        let hits = store.recall(&q.question, &options, encoder).unwrap().hits;
        let found = hits
            .iter()
            .filter_map(|h| snap.get(h.item).unwrap())
            .filter_map(|item| item.fields.external_id)
            .filter(|ext| evidence.contains(ext))
            .count();
        sum += found as f64 / evidence.len() as f64;
        n += 1;
    }
    (sum, n)
}

/// Bytes text-only pages would take stored as pixels at their current quality and scale.
fn text_pages_as_pixels(store: &Store) -> (u64, u64) {
    let snap = store.snapshot().unwrap();
    let (mut pages, mut bytes) = (0, 0);
    for page in snap
        .pages()
        .unwrap()
        .into_iter()
        .filter(|p| p.parts.is_empty())
    {
        for part in store.render_page(&page.day).unwrap().unwrap().parts {
            bytes += part.len() as u64;
        }
        pages += 1;
    }
    (pages, bytes)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out_dir = flag_value(&args, "--out").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/footprint"),
        PathBuf::from,
    );
    let skip_peer = args.iter().any(|a| a == "--skip-peer");
    std::fs::create_dir_all(&out_dir).unwrap();
    let data = shared_dir().join("data");
    let work = tempfile::tempdir().unwrap();
    let started = Instant::now();

    // `--corpora photos,mail,locomo` and `--policies no-forget,…,stress` pick a part of the
    // run (all of each by default).
    let picked = |flag: &str, name: &str| {
        flag_value(&args, flag).is_none_or(|list| list.split(',').any(|x| x == name))
    };
    let photos_dir = data.join("photos");
    let mail_dir = data.join("mail");
    let mut corpora = Vec::new();
    if picked("--corpora", "photos") {
        let photos = vec![build(
            work.path(),
            "photos",
            &["photos", photos_dir.to_str().unwrap()],
        )];
        corpora.push(Corpus {
            name: "photos",
            raw_bytes: tree_bytes(&photos_dir),
            as_of: newest_day(&photos),
            stores: photos,
        });
        eprintln!("photos built ({:.0} s)", started.elapsed().as_secs_f64());
    }
    if picked("--corpora", "mail") {
        let mail = vec![build(
            work.path(),
            "mail",
            &["mail", mail_dir.to_str().unwrap()],
        )];
        corpora.push(Corpus {
            name: "mail",
            raw_bytes: tree_bytes(&mail_dir),
            as_of: newest_day(&mail),
            stores: mail,
        });
        eprintln!("mail built ({:.0} s)", started.elapsed().as_secs_f64());
    }
    let mut locomo_files: Vec<PathBuf> = std::fs::read_dir(data.join("locomo"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    locomo_files.sort();
    if picked("--corpora", "locomo") {
        let locomo_stores: Vec<(PathBuf, PathBuf)> = locomo_files
            .iter()
            .map(|f| {
                let name = format!("locomo-{}", locomo::conversation_id(f));
                build(work.path(), &name, &["locomo", f.to_str().unwrap()])
            })
            .collect();
        corpora.push(Corpus {
            name: "locomo",
            raw_bytes: locomo_files.iter().map(|f| tree_bytes(f)).sum(),
            as_of: newest_day(&locomo_stores),
            stores: locomo_stores,
        });
        eprintln!("locomo built ({:.0} s)", started.elapsed().as_secs_f64());
    }

    let (encoder, _) = memdb_benches::minilm_two_threads();

    let mut rows: Vec<Value> = Vec::new();
    let mut before: BTreeMap<&str, Bytes> = BTreeMap::new();
    let mut tables_before: BTreeMap<&str, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    for corpus in &corpora {
        let mut b = Bytes::default();
        let tables = tables_before.entry(corpus.name).or_default();
        for (store, _) in &corpus.stores {
            let store = Store::open(store, Options::default()).unwrap();
            b += bytes_of(&store);
            add_catalog_tables(tables, &store);
        }
        before.insert(corpus.name, b);
    }
    print_per_item(&before, &tables_before);
    let mut text_pixels: Vec<Value> = Vec::new();
    // Every built-in policy as of each corpus's day after its newest item; then a stress run:
    // LoCoMo under timed-gentle when every page is Old (its conversations are from 2022–2023,
    // so as of their newest day none is older than the 730 days of the Old stage).
    let stress = jiff::civil::date(2030, 1, 1);
    let mut runs: Vec<(String, Policy, Option<jiff::civil::Date>)> = BUILTIN_POLICIES
        .iter()
        .filter(|p| picked("--policies", p))
        .map(|p| ((*p).to_owned(), Policy::builtin(p).unwrap(), None))
        .collect();
    if picked("--policies", "stress") {
        let gentle = Policy::builtin("timed-gentle").unwrap();
        runs.push((
            format!("timed-gentle as of {stress}"),
            gentle.clone(),
            Some(stress),
        ));
        // What the stress row loses, split: the Old stage's vector precision alone (pages
        // kept as they are), then its pages alone (vectors kept at full precision).
        let mut vectors_only = gentle.clone();
        let mut pages_only = gentle;
        for (v, p) in vectors_only.stages.iter_mut().zip(&mut pages_only.stages) {
            (v.quality, v.scale, v.keep_originals) = (100, 1.0, true);
            p.vectors = memdb_vectors::Precision::F32;
        }
        runs.push(("  its vectors only".to_owned(), vectors_only, Some(stress)));
        runs.push(("  its pages only".to_owned(), pages_only, Some(stress)));
    }
    for (label, policy, as_of_override) in &runs {
        let policy_name = label.as_str();
        for corpus in corpora
            .iter()
            .filter(|c| as_of_override.is_none() || c.name == "locomo")
        {
            let as_of = as_of_override.unwrap_or(corpus.as_of);
            let mut bytes = Bytes::default();
            let (mut recall_sum, mut questions) = (0.0, 0);
            let mut salient = [(0u64, 0u64); 2]; // (before, after) for plain, salient layouts
            let mut faded = 0;
            let (mut dropped, mut dropped_bytes) = (0u64, 0u64);
            let (mut pixel_pages, mut pixel_bytes) = (0, 0);
            for (i, (salient_store, plain_store)) in corpus.stores.iter().enumerate() {
                for (layout, source) in [(1, salient_store), (0, plain_store)] {
                    let copy = work.path().join("forgetting");
                    let _ = std::fs::remove_dir_all(&copy);
                    copy_dir(source, &copy);
                    let mut store = Store::open(&copy, Options::default()).unwrap();
                    let (s0, _) = incidences(&store);
                    let report = store
                        .forget(
                            policy,
                            as_of,
                            ForgetOptions {
                                dry_run: false,
                                drop_originals: true,
                                pages: PageOptions::default(),
                                progress: &mut |_, _| {},
                            },
                        )
                        .unwrap();
                    // As `memdb forget` does: the catalog pages forgetting freed go back.
                    store.shrink_catalog().unwrap();
                    let (s1, _) = incidences(&store);
                    salient[layout].0 += s0;
                    salient[layout].1 += s1;
                    if layout == 1 {
                        bytes += bytes_of(&store);
                        faded += report.stages.iter().map(|s| s.nodes_faded).sum::<u64>();
                        dropped += report.originals.len() as u64;
                        dropped_bytes += report.originals.iter().map(|o| o.bytes).sum::<u64>();
                        if corpus.name == "locomo" {
                            let (sum, n) = locomo_recall(&store, &locomo_files[i], &encoder);
                            recall_sum += sum;
                            questions += n;
                        }
                        if corpus.name != "photos"
                            && matches!(policy_name, "no-forget" | "timed-gentle")
                        {
                            let (p, b) = text_pages_as_pixels(&store);
                            pixel_pages += p;
                            pixel_bytes += b;
                        }
                    }
                }
            }
            let raw = corpus.raw_bytes;
            let saving = 1.0 - bytes.total as f64 / raw as f64;
            let recall = (questions > 0).then(|| 100.0 * recall_sum / questions as f64);
            if pixel_pages > 0 {
                text_pixels.push(json!({
                    "corpus": corpus.name, "policy": policy_name, "text_pages": pixel_pages,
                    "pixel_bytes": pixel_bytes, "store_bytes": bytes.total,
                }));
            }
            eprintln!(
                "{policy_name:>13} {:>7}: store {:>11} of raw {:>11} ({:>5.1} % saved){}",
                corpus.name,
                bytes.total,
                raw,
                100.0 * saving,
                recall.map_or(String::new(), |r| format!(", R@10 {r:.1}"))
            );
            rows.push(json!({
                "policy": policy_name, "corpus": corpus.name, "as_of": as_of.to_string(),
                "raw_bytes": raw, "store_bytes": bytes.total, "saving": saving,
                "pages": bytes.pages, "originals": bytes.originals, "vectors": bytes.vectors,
                "originals_kept": bytes.originals_kept, "originals_dropped": dropped,
                "original_bytes_dropped": dropped_bytes,
                "items": bytes.items, "catalog": bytes.catalog,
                "other": bytes.total.saturating_sub(bytes.pages + bytes.originals + bytes.vectors + bytes.items + bytes.catalog),
                "recall_at_10": recall, "questions": questions, "nodes_faded": faded,
                "salient_before_plain": salient[0].0, "salient_after_plain": salient[0].1,
                "salient_before_salient": salient[1].0, "salient_after_salient": salient[1].1,
            }));
        }
    }

    let photos = corpora.iter().find(|c| c.name == "photos");
    let peer = match photos {
        _ if skip_peer => json!({"skipped": "--skip-peer"}),
        None => json!({"skipped": "no photo corpus in --corpora"}),
        Some(photos) => reencode_vs_pillow(&photos.stores[0].0, work.path()),
    };
    print_table(&rows, &before, &text_pixels, &peer);
    let report = json!({
        "rows": rows, "text_pages_as_pixels": text_pixels, "reencode": peer,
        "before_forgetting": before.iter().map(|(k, b)| (k.to_string(), json!({"total": b.total, "pages": b.pages, "originals": b.originals}))).collect::<serde_json::Map<_, _>>(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    std::fs::write(
        out_dir.join("footprint.json"),
        serde_json::to_vec_pretty(&report).unwrap(),
    )
    .unwrap();
    plot(&rows, &out_dir);
    eprintln!("wrote {}", out_dir.display());
}

/// Re-encodes the photo store's Recent pages at timed-gentle's Old stage (scale 0.6, Q 40) in
/// memdb and in Pillow, on the same files, and compares throughput.
fn reencode_vs_pillow(store: &Path, work: &Path) -> Value {
    let dir = work.join("reencode");
    std::fs::create_dir_all(&dir).unwrap();
    let store = Store::open(store, Options::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let mut parts = Vec::new();
    for page in snap.pages().unwrap() {
        for id in page.parts {
            let bytes = snap.blob(id).unwrap().unwrap().to_vec();
            std::fs::write(dir.join(format!("{id}.jpg")), &bytes).unwrap();
            parts.push(bytes);
        }
    }
    let input: u64 = parts.iter().map(|p| p.len() as u64).sum();
    let repeat = 2;
    let started = Instant::now();
    let mut output = 0;
    for _ in 0..repeat {
        output = 0;
        for p in &parts {
            output += memdb::scrapbook::reencode_jpeg(p, 0.6, 40).unwrap().len() as u64;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let ours = input as f64 * f64::from(repeat) / seconds / 1e6;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/reencode_peer.py");
    let mut command = Command::new(peer_python());
    command
        .arg(&script)
        .args([
            "--dir",
            dir.to_str().unwrap(),
            "--scale",
            "0.6",
            "--quality",
            "40",
        ])
        .args(["--repeat", &repeat.to_string()]);
    let peer = run_peer_json(command, &script);
    let (peer_mb_s, peer_value) = match peer {
        Ok(v) => (v["mb_per_s"].as_f64(), v),
        Err(why) => (None, json!({"not_run": why})),
    };
    json!({
        "files": parts.len(), "input_bytes": input, "memdb_output_bytes": output,
        "memdb_mb_per_s": ours, "pillow": peer_value,
        "ratio_memdb_over_pillow": peer_mb_s.map(|p| ours / p),
    })
}

fn mib(b: u64) -> String {
    format!("{:.2}", b as f64 / (1 << 20) as f64)
}

/// Bytes per item before forgetting (issue 25's footprint figure), by kind, and the catalog's
/// share by table.
fn print_per_item(
    before: &BTreeMap<&str, Bytes>,
    tables: &BTreeMap<&str, BTreeMap<String, (u64, u64)>>,
) {
    println!("\nbytes per item before forgetting (pages composed, originals kept):");
    println!(
        "| corpus | items | KiB per item | vectors B | records B | catalog B | pages B | originals B | other B |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, b) in before {
        let per = |x: u64| x as f64 / b.count.max(1) as f64;
        let other = b
            .total
            .saturating_sub(b.pages + b.originals + b.vectors + b.items + b.catalog);
        println!(
            "| {name} | {} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            b.count,
            per(b.total) / 1024.0,
            per(b.vectors),
            per(b.items),
            per(b.catalog),
            per(b.pages),
            per(b.originals),
            per(other),
        );
    }
    println!("\ncatalog tables, B-tree page bytes per item (rows per item):");
    for (name, t) in tables {
        let count = before.get(name).map_or(1, |b| b.count.max(1)) as f64;
        let mut sorted: Vec<_> = t.iter().filter(|(_, v)| v.0 > 0).collect();
        sorted.sort_by_key(|t| std::cmp::Reverse(t.1.0));
        let parts: Vec<String> = sorted
            .iter()
            .map(|(table, (bytes, rows))| {
                format!(
                    "{table} {:.0} ({:.2})",
                    *bytes as f64 / count,
                    *rows as f64 / count
                )
            })
            .collect();
        println!("  {name:>7}: {}", parts.join(", "));
    }
}

fn print_table(rows: &[Value], before: &BTreeMap<&str, Bytes>, pixels: &[Value], peer: &Value) {
    println!("\nbefore forgetting (pages composed, originals kept), MiB:");
    for (name, b) in before {
        println!(
            "  {name:>7}: total {} (pages {}, originals {})",
            mib(b.total),
            mib(b.pages),
            mib(b.originals)
        );
    }
    println!(
        "\n| policy | corpus | raw MiB | store MiB | saved | pages | originals kept (MiB) | originals dropped (MiB) | vectors | items | catalog | R@10 | salient kept (plain layout) | salient kept (saliency-aware) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let u = |k: &str| r[k].as_u64().unwrap_or(0);
        println!(
            "| {} | {} | {} | {} | {:.1} % | {} | {} ({}) | {} ({}) | {} | {} | {} | {} | {}/{} | {}/{} |",
            r["policy"].as_str().unwrap_or(""),
            r["corpus"].as_str().unwrap_or(""),
            mib(u("raw_bytes")),
            mib(u("store_bytes")),
            100.0 * r["saving"].as_f64().unwrap_or(0.0),
            mib(u("pages")),
            u("originals_kept"),
            mib(u("originals")),
            u("originals_dropped"),
            mib(u("original_bytes_dropped")),
            mib(u("vectors")),
            mib(u("items")),
            mib(u("catalog")),
            r["recall_at_10"]
                .as_f64()
                .map_or("–".to_owned(), |x| format!("{x:.1}")),
            u("salient_after_plain"),
            u("salient_before_plain"),
            u("salient_after_salient"),
            u("salient_before_salient"),
        );
    }
    println!("\ntext-only pages if stored as pixels (they are rendered on demand):");
    for p in pixels {
        println!(
            "  {} {}: {} pages, {} MiB of JPEG vs the whole store's {} MiB",
            p["policy"].as_str().unwrap_or(""),
            p["corpus"].as_str().unwrap_or(""),
            p["text_pages"],
            mib(p["pixel_bytes"].as_u64().unwrap_or(0)),
            mib(p["store_bytes"].as_u64().unwrap_or(0)),
        );
    }
    println!("\nJPEG re-encode (decode, scale 0.6, encode Q 40) of the photo pages: {peer}");
}

/// One point per policy: whole-corpus store size (log axis) against LoCoMo Recall@10.
fn plot(rows: &[Value], out_dir: &Path) {
    use plotters::prelude::*;
    let mut points: Vec<(String, f64, f64)> = Vec::new();
    for policy in BUILTIN_POLICIES {
        let of_policy: Vec<&Value> = rows.iter().filter(|r| r["policy"] == policy).collect();
        let total: u64 = of_policy
            .iter()
            .map(|r| r["store_bytes"].as_u64().unwrap_or(0))
            .sum();
        let recall = of_policy
            .iter()
            .find_map(|r| r["recall_at_10"].as_f64())
            .unwrap_or(0.0);
        points.push((policy.to_owned(), total as f64 / (1 << 20) as f64, recall));
    }
    let raw: f64 = rows
        .iter()
        .filter(|r| r["policy"] == BUILTIN_POLICIES[0])
        .map(|r| r["raw_bytes"].as_u64().unwrap_or(0) as f64)
        .sum::<f64>()
        / (1 << 20) as f64;
    let lo = points.iter().map(|p| p.1).fold(f64::MAX, f64::min) * 0.7;
    let hi = raw.max(points.iter().map(|p| p.1).fold(0.0, f64::max)) * 1.4;
    let r_lo = points.iter().map(|p| p.2).fold(f64::MAX, f64::min) - 3.0;
    let r_hi = points.iter().map(|p| p.2).fold(0.0, f64::max) + 3.0;
    memdb_benches::register_plot_font();
    let svg = out_dir.join("footprint.svg");
    let png = out_dir.join("footprint.png");
    let bounds = (lo, hi, r_lo, r_hi);
    if let Err(e) = draw(
        SVGBackend::new(&svg, (900, 600)).into_drawing_area(),
        &points,
        raw,
        bounds,
    ) {
        eprintln!("svg plot: {e}");
    }
    if let Err(e) = draw(
        BitMapBackend::new(&png, (900, 600)).into_drawing_area(),
        &points,
        raw,
        bounds,
    ) {
        eprintln!("png plot: {e}");
    }
}

fn draw<DB: plotters::prelude::DrawingBackend>(
    root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    points: &[(String, f64, f64)],
    raw: f64,
    (lo, hi, r_lo, r_hi): (f64, f64, f64, f64),
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let mut chart = memdb_benches::chart_on(
        &root,
        "memdb: storage vs LoCoMo Recall@10 by forgetting policy",
    )?
    .build_cartesian_2d((lo..hi).log_scale(), r_lo..r_hi)?;
    chart
        .configure_mesh()
        .x_desc("store size, MiB (photos + mail + LoCoMo; log scale)")
        .y_desc("LoCoMo Recall@10 (%)")
        .draw()?;
    chart.draw_series(
        points
            .iter()
            .map(|(_, x, y)| Circle::new((*x, *y), 5, BLUE.filled())),
    )?;
    chart.draw_series(points.iter().enumerate().map(|(i, (name, x, y))| {
        Text::new(
            name.clone(),
            (*x, *y + 0.3 + 0.35 * i as f64),
            ("sans-serif", 13),
        )
    }))?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(raw, r_lo), (raw, r_hi)],
        RED,
    )))?;
    chart.draw_series(std::iter::once(Text::new(
        format!("raw inputs {raw:.0} MiB"),
        (raw * 0.75, r_lo + 0.5),
        ("sans-serif", 13),
    )))?;
    root.present()?;
    Ok(())
}
