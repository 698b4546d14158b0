//! Arbitrary bytes as a JSONL file. Checks, beyond "never panics": every draft validates; an
//! `original` file is a relative path without `..` and a lowercase SHA-256;
//! outcomes come in line order; the streaming `Reader` agrees with `parse` whatever its buffer
//! size; and with a small line limit every line still yields exactly one outcome.
#![no_main]

use std::io::BufReader;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb_formats::import::ImportReport;
use memdb_formats::import::jsonl::{self, Reader};

fn line_number(location: &str) -> u64 {
    location
        .strip_prefix("line ")
        .and_then(|n| n.parse().ok())
        .expect("location is `line N`")
}

fn streamed(
    reader: impl Iterator<
        Item = std::io::Result<Result<memdb_formats::import::Imported, memdb_formats::ImportError>>,
    >,
) -> ImportReport {
    let mut report = ImportReport::default();
    for outcome in reader {
        match outcome.expect("reading a slice cannot fail") {
            Ok(item) => report.items.push(item),
            Err(err) => report.errors.push(err),
        }
    }
    report
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    let lines = data.split(|&b| b == b'\n').count() as u64;
    let whole = jsonl::parse(path, data);

    let mut at: Vec<u64> = whole
        .items
        .iter()
        .map(|i| line_number(&i.location))
        .collect();
    for item in &whole.items {
        item.draft
            .fields
            .validate()
            .expect("an imported draft validates");
        // An original file named by a line stays inside the JSONL file's folder.
        if let Some(original) = &item.original {
            assert!(!original.file.is_empty() && !original.file.starts_with('/'));
            assert!(original.file.split('/').all(|part| part != ".."));
            assert!(!original.file.contains('\\'));
            assert_eq!(original.sha256.len(), 64);
            assert!(
                original
                    .sha256
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            );
        }
    }
    assert!(at.windows(2).all(|w| w[0] < w[1]));
    at.extend(
        whole
            .errors
            .iter()
            .map(|e| line_number(e.location.as_deref().unwrap_or(""))),
    );
    at.sort_unstable();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "two outcomes for one line"
    );
    assert!(at.iter().all(|n| (1..=lines).contains(n)));

    // Buffer sizes from 1 byte: lines, CRLFs and the BOM get split across reads.
    let capacity = 1 + usize::from(data.first().copied().unwrap_or(0) % 32);
    let stream = streamed(Reader::new(path, BufReader::with_capacity(capacity, data)));
    assert_eq!(stream, whole);

    // With a 24-byte limit, each line is an outcome when it is too long or not blank.
    const LIMIT: usize = 24;
    let expected = data
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(i, line)| {
            let line = if *i == 0 && line.len() <= LIMIT {
                line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
            } else {
                line
            };
            line.len() > LIMIT || !line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
        })
        .count();
    let limited = streamed(Reader::new(path, data).max_line_bytes(LIMIT));
    assert_eq!(limited.items.len() + limited.errors.len(), expected);
});
