//! The item text of every source but images is what it was before images became SGM text
//! (recipe 1): the LoCoMo figures were measured on it. The texts of a LoCoMo conversation and of
//! the shared test-suite mail, sorted, hash to the values pinned from the build before the change
//! (`memdb --json ls` of main 5db3f4a over the same imports, FNV-1a 64 of the sorted texts joined
//! by newlines).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;

use memdb::{Item, ItemDraft, recall::item_text};
use memdb_formats::import::{locomo, mail};
use memdb_it::{files_under, shared_data};

/// FNV-1a 64 of the texts, sorted, joined by `\n`.
fn fingerprint(drafts: &[ItemDraft]) -> (usize, String) {
    let mut texts: Vec<String> = drafts
        .iter()
        .map(|d| {
            item_text(&Item {
                id: 0,
                ingest_time_ms: 0,
                fields: d.fields.clone(),
                supersedes: None,
                blobs: Vec::new(),
            })
        })
        .collect();
    texts.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in texts.join("\n").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (texts.len(), format!("{h:016x}"))
}

#[test]
fn locomo_and_mail_texts_are_unchanged() {
    let (Some(locomo_dir), Some(mail_dir)) = (shared_data("locomo"), shared_data("mail")) else {
        return;
    };
    let file = locomo_dir.join("26.json");
    let parsed = locomo::parse(&file, &std::fs::read(&file).unwrap()).unwrap();
    assert!(parsed.errors.is_empty());
    let chats: Vec<ItemDraft> = parsed.items.into_iter().map(|i| i.draft).collect();
    assert_eq!(
        fingerprint(&chats),
        (419, "39bba70812652288".to_owned()),
        "LoCoMo 26.json"
    );

    let suites = mail_dir.join("testsuites");
    let mut mails = Vec::new();
    for path in files_under(&suites) {
        let name = path.strip_prefix(&suites).unwrap().display().to_string();
        let report = mail::parse_eml(Path::new(&name), &name, &std::fs::read(&path).unwrap());
        mails.extend(report.items.into_iter().map(|i| i.draft));
    }
    assert_eq!(
        fingerprint(&mails),
        (180, "1d39bc0db7c92fd1".to_owned()),
        "mail test suites"
    );
}
