//! Quick throughput probe: `cargo run -p memdb-encode --example throughput -- <n> <batch> <threads>`.
//! Encodes `n` synthetic chat-like texts (or the texts of a JSON list given as a 4th argument)
//! and prints sentences/s (for profiling; the real bench is
//! benches/src/bin/encode.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use memdb_encode::{Encoder, EncoderOptions, MiniLm, model};

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<usize> = raw.iter().take(3).map(|a| a.parse().unwrap()).collect();
    let from_file: Option<Vec<String>> = raw
        .get(3)
        .map(|path| serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap());
    let (n, batch_size, threads) = (args[0], args[1], args[2]);
    let words = [
        "lisbon",
        "hotel",
        "booked",
        "dinner",
        "with",
        "ana",
        "the",
        "tram",
        "photo",
        "receipt",
        "birthday",
        "microscope",
        "running",
        "park",
        "meeting",
        "train",
        "coffee",
    ];
    let texts: Vec<String> = (0..n)
        .map(|i| {
            let len = 12 + (i * 7919) % 40;
            let body: Vec<&str> = (0..len)
                .map(|j| words[(i * 31 + j * 17) % words.len()])
                .collect();
            format!("[1:56 pm on 8 May, 2023] Caroline: {}", body.join(" "))
        })
        .collect();
    let texts = match from_file {
        Some(file_texts) => file_texts.into_iter().cycle().take(n).collect(),
        None => texts,
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let options = EncoderOptions {
        threads: Some(threads),
        batch_size,
        ..EncoderOptions::default()
    };
    let encoder = MiniLm::load(&model::locate().unwrap(), options).unwrap();
    eprintln!("load {:.2}s", t.elapsed().as_secs_f64());
    encoder.encode(&refs[..batch_size.min(n)]).unwrap();
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let v = encoder.encode(&refs).unwrap();
    let s = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    eprintln!(
        "{} texts in {s:.2}s: {:.1} sentences/s; {cpu:.2} CPU-s, {:.1} sentences per CPU-s x {threads}",
        v.len(),
        n as f64 / s,
        n as f64 / cpu * threads as f64
    );
}

/// utime + stime of this process, from /proc/self/stat (clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}
