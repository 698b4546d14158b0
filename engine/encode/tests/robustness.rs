//! Arbitrary text never breaks the encoder: any string (control characters, lone combining
//! marks, mixed scripts, very long input) gives `[CLS] … [SEP]` framing within the 256-token
//! limit and one finite unit vector. Needs the installed model, like the parity test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use memdb_encode::{Encoder, EncoderOptions, MiniLm, model};
use proptest::prelude::*;

const CLS: u32 = 101;
const SEP: u32 = 102;
const MAX_TOKENS: usize = 256;

fn encoder() -> Option<&'static MiniLm> {
    static ENCODER: OnceLock<Option<MiniLm>> = OnceLock::new();
    ENCODER
        .get_or_init(|| match model::locate() {
            Ok(dir) => Some(MiniLm::load(&dir, EncoderOptions::default()).unwrap()),
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI must have the encoder model installed: {e}"
                );
                eprintln!("\n*** SKIPPED: encoder robustness test not run: {e} ***\n");
                None
            }
        })
        .as_ref()
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC{0,40}",
        // Long runs: truncation must hold for any content.
        proptest::collection::vec(any::<char>(), 200..3000).prop_map(|c| c.into_iter().collect()),
        "([a-z]{1,12} ){100,400}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_text_is_framed_truncated_and_embedded(texts in proptest::collection::vec(text(), 1..5)) {
        let Some(encoder) = encoder() else { return Ok(()) };
        for t in &texts {
            let ids = encoder.token_ids(t).unwrap();
            prop_assert!(ids.len() >= 2 && ids.len() <= MAX_TOKENS, "{} ids", ids.len());
            prop_assert_eq!(ids[0], CLS);
            prop_assert_eq!(*ids.last().unwrap(), SEP);
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = encoder.encode(&refs).unwrap();
        prop_assert_eq!(vectors.len(), texts.len());
        for v in &vectors {
            prop_assert_eq!(v.len(), encoder.dimension());
            prop_assert!(v.iter().all(|x| x.is_finite()));
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            prop_assert!((norm - 1.0).abs() < 1e-3, "norm {}", norm);
        }
    }
}

/// Weights that are not the pinned file are refused at load, before the model is used: one
/// byte changed near the end of `model.safetensors` (inside a tensor, so the file still
/// parses) gives a checksum error, not an encoder.
#[test]
fn tampered_weights_are_refused_at_load() {
    let Ok(installed) = model::locate() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no installed model under CI"
        );
        return;
    };
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(installed.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
    }
    let weights = copy.path().join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x01;
    std::fs::write(&weights, &bytes).unwrap();
    let dir = model::ModelDir::open(copy.path()).unwrap();
    match MiniLm::load(&dir, EncoderOptions::default()) {
        Err(memdb_encode::EncodeError::ChecksumMismatch { path, .. }) => assert_eq!(path, weights),
        Err(other) => panic!("expected a checksum mismatch, got {other}"),
        Ok(_) => panic!("tampered weights were loaded"),
    }
}
