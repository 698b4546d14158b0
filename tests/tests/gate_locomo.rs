//! The memorability gate on the LoCoMo files of ../shared/data/locomo, cross-validated across
//! conversations: a lexicon learned on all files but one (log-odds, the default threshold)
//! gates the held-out file's turns; no turn is scored by a lexicon that saw its label. Prints
//! the per-fold table; checks that each fold keeps at least 95 % of its memorable turns (the
//! issue's other target, ≥ 40 % of the others dropped, is reported, not asserted: a
//! feasibility study found no lexicon gate reaching it on these files).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::gate::Gum;
use memdb_lab::gate::{
    LabelledText, LearnOptions, evaluate, lexicons_leaving_one_out, locomo_texts,
};

#[test]
fn a_lexicon_learned_on_other_conversations_keeps_the_memorable_turns() {
    let Some(dir) = memdb_it::shared_data("locomo") else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let folds: Vec<Vec<LabelledText>> = files
        .iter()
        .map(|f| locomo_texts(f, &std::fs::read(f).unwrap()).unwrap())
        .collect();
    assert!(folds.len() >= 2, "{} LoCoMo files", folds.len());
    println!(
        "held out | turns | memorable | kept | dropped | accuracy | weighted F1 | words | µs/text"
    );
    let lexicons = lexicons_leaving_one_out(&folds, &LearnOptions::default());
    for (held_out, lexicon) in folds.iter().zip(lexicons) {
        let words = lexicon.word_count();
        let gum = Gum::new(lexicon).unwrap();
        let e = evaluate(&gum, held_out);
        println!(
            "{} | {} | {} | {:.1} % | {:.1} % | {:.3} | {:.3} | {words} | {:.2}",
            held_out[0].group,
            e.texts,
            e.memorable,
            100.0 * e.memorable_kept,
            100.0 * e.not_memorable_dropped,
            e.accuracy,
            e.weighted_f1,
            e.us_per_text
        );
        assert!(
            e.memorable_kept >= 0.95,
            "fold {}: kept {:.3}",
            held_out[0].group,
            e.memorable_kept
        );
    }
}
