//! Bench `first_answer`: how long a person waits for a cold CLI `memdb recall` — a new
//! process each time, as from a shell — on a store of the shared photos and mail.
//!
//! The store is made with the CLI itself (`import photos`, `import mail`, `embed`) unless
//! `--store DIR` names one. Each question runs `--runs` times (default 7) as
//! `memdb recall STORE QUESTION -k 10 --json`; the table prints the median wall time of the
//! whole process, and from the command's own report the encoder load (its tensors and their
//! SHA-256, on two threads), the index build (the items read into the recall index, on the main
//! thread at the same time, with the gazetteer when the question may name a place), and the
//! question's encoding and search. The encoder's share is its load over the wall time. The
//! target (issue 50) is a median of at most 0.5 s.
//!
//! "Cold" is the process: nothing is cached in memory between runs but what the operating
//! system keeps of the files (the store, the model) in its page cache, as on a machine in use.
//!
//! Run: `cargo build --release -p memdb-cli -p memdb-benches && target/release/first_answer
//! [--store DIR] [--memdb PATH] [--runs N]`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use memdb_benches::{cpu_features, flag_value, shared_dir};

/// Questions of the kinds people ask a store of photos and mail: naming a place, a time, a
/// person, a thing.
const QUESTIONS: &[&str] = &[
    "photos I took in Madrid",
    "what did I do in May 2001?",
    "the photo of my handwritten notes",
    "what did Vince say about the prospective hire?",
    "pictures from Paris",
    "mail about the California energy crisis",
];

fn run(memdb: &Path, args: &[&str]) {
    let status = Command::new(memdb)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("running memdb");
    assert!(status.success(), "memdb {args:?} failed");
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let memdb = PathBuf::from(
        flag_value(&args, "--memdb").unwrap_or_else(|| "target/release/memdb".to_owned()),
    );
    let runs: usize = flag_value(&args, "--runs").map_or(7, |r| r.parse().expect("--runs N"));
    let made;
    let store = match flag_value(&args, "--store") {
        Some(dir) => PathBuf::from(dir),
        None => {
            made = tempfile::tempdir().expect("temp dir");
            let store = made.path().join("store");
            let s = store.to_str().expect("UTF-8 path");
            let data = shared_dir().join("data");
            let started = Instant::now();
            run(&memdb, &["init", s]);
            let photos = data.join("photos");
            let mail = data.join("mail");
            run(&memdb, &["import", "photos", s, photos.to_str().unwrap()]);
            run(&memdb, &["import", "mail", s, mail.to_str().unwrap()]);
            run(&memdb, &["embed", s]);
            eprintln!(
                "store of the shared photos and mail made in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            store
        }
    };
    let s = store.to_str().expect("UTF-8 path");
    println!("first_answer: cold CLI recall ({runs} runs per question, medians)");
    println!("cpu: {}", cpu_features());
    println!(
        "{:<48} {:>8} {:>12} {:>10} {:>10} {:>10} {:>9}",
        "question", "wall ms", "encoder load", "index ms", "encode ms", "search ms", "encoder %"
    );
    let mut walls = Vec::new();
    for question in QUESTIONS {
        let mut wall = Vec::new();
        let mut fields: [Vec<f64>; 4] = Default::default();
        for _ in 0..runs {
            let started = Instant::now();
            let out = Command::new(&memdb)
                .args(["recall", s, question, "-k", "10", "--json"])
                .output()
                .expect("running memdb recall");
            wall.push(started.elapsed().as_secs_f64() * 1e3);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            for (field, name) in
                fields
                    .iter_mut()
                    .zip(["encoder_load_ms", "index_ms", "encode_ms", "search_ms"])
            {
                field.push(json[name].as_f64().expect(name));
            }
        }
        let wall = median(wall);
        let [load, index, encode, search] = fields.map(median);
        walls.push(wall);
        println!(
            "{:<48} {:>8.0} {:>12.0} {:>10.0} {:>10.1} {:>10.1} {:>8.0}%",
            question,
            wall,
            load,
            index,
            encode,
            search,
            100.0 * load / wall
        );
    }
    let worst = walls.iter().copied().fold(0.0, f64::max);
    println!(
        "median of the medians {:.0} ms, slowest question {:.0} ms (target: at most 500 ms): {}",
        median(walls),
        worst,
        if worst <= 500.0 { "met" } else { "missed" }
    );
}
