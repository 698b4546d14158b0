//! Measuring a gate on labelled texts: what it keeps of the memorable texts, what it drops of
//! the others, accuracy, weighted F1 (over the two classes, weighted by support) and time per
//! text. LoCoMo turns are labelled memorable when a question of their file cites them in its
//! evidence ([`locomo_texts`]).

use std::path::Path;
use std::time::Instant;

use memdb_formats::import::locomo;

use memdb::gate::Gum;

/// A labelled text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledText {
    /// Its text.
    pub text: String,
    /// Worth remembering.
    pub memorable: bool,
    /// Its group (the conversation of a LoCoMo file), for cross-validation.
    pub group: String,
}

/// The turns of a LoCoMo file, each memorable when some `qa` entry cites it.
pub fn locomo_texts(
    file: &Path,
    bytes: &[u8],
) -> Result<Vec<LabelledText>, memdb_formats::ImportError> {
    let report = locomo::parse(file, bytes)?;
    let qa = locomo::parse_qa(file, bytes)?;
    let cited: std::collections::HashSet<&str> = qa
        .iter()
        .flat_map(|q| q.evidence.iter().map(String::as_str))
        .collect();
    let group = locomo::conversation_id(file);
    Ok(report
        .items
        .into_iter()
        .map(|item| {
            let fields = item.draft.fields;
            let memorable = fields
                .external_id
                .as_deref()
                .is_some_and(|ext| cited.contains(ext));
            LabelledText {
                text: fields.body.unwrap_or_default(),
                memorable,
                group: group.clone(),
            }
        })
        .collect())
}

/// A gate's figures on labelled texts.
#[derive(Debug, Clone, PartialEq)]
pub struct GateEval {
    /// Texts scored.
    pub texts: usize,
    /// Memorable ones.
    pub memorable: usize,
    /// Share of the memorable texts kept.
    pub memorable_kept: f64,
    /// Share of the other texts dropped.
    pub not_memorable_dropped: f64,
    /// Share decided right.
    pub accuracy: f64,
    /// F1 of the two classes, weighted by their support.
    pub weighted_f1: f64,
    /// Mean time to decide one text, µs.
    pub us_per_text: f64,
}

/// Scores `gum` on `texts` (a text passes when it hits any scene).
pub fn evaluate(gum: &Gum, texts: &[LabelledText]) -> GateEval {
    evaluate_with(texts, |text| gum.passes(text, None))
}

/// Scores the decision `keeps` on `texts`, timing it.
pub fn evaluate_with(texts: &[LabelledText], mut keeps: impl FnMut(&str) -> bool) -> GateEval {
    let started = Instant::now();
    let decisions: Vec<(bool, bool)> = texts
        .iter()
        .map(|t| (t.memorable, keeps(&t.text)))
        .collect();
    GateEval::of(&decisions, started.elapsed().as_secs_f64() * 1e6)
}

impl GateEval {
    /// The figures of `(memorable, kept)` decisions that took `micros` in all.
    pub fn of(decisions: &[(bool, bool)], micros: f64) -> GateEval {
        let mut confusion = [[0usize; 2]; 2]; // [memorable][kept]
        for &(memorable, kept) in decisions {
            confusion[usize::from(memorable)][usize::from(kept)] += 1;
        }
        let [[tn, fp], [fneg, tp]] = confusion;
        let share = |a: usize, b: usize| {
            if a + b == 0 {
                0.0
            } else {
                a as f64 / (a + b) as f64
            }
        };
        let f1 = |tp: usize, fp: usize, fneg: usize| {
            let denom = 2 * tp + fp + fneg;
            if denom == 0 {
                0.0
            } else {
                2.0 * tp as f64 / denom as f64
            }
        };
        let n = decisions.len();
        let memorable = tp + fneg;
        // The "not memorable" class's F1 has dropped texts as its positives.
        let weighted_f1 = if n == 0 {
            0.0
        } else {
            (memorable as f64 * f1(tp, fp, fneg) + (n - memorable) as f64 * f1(tn, fneg, fp))
                / n as f64
        };
        GateEval {
            texts: n,
            memorable,
            memorable_kept: share(tp, fneg),
            not_memorable_dropped: share(tn, fp),
            accuracy: share(tp + tn, fp + fneg),
            weighted_f1,
            us_per_text: if n == 0 { 0.0 } else { micros / n as f64 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memdb::gate::Scenes;

    fn labelled(text: &str, memorable: bool) -> LabelledText {
        LabelledText {
            text: text.into(),
            memorable,
            group: "g".into(),
        }
    }

    #[test]
    fn figures_match_a_hand_count() {
        let gum = Gum::new(
            Scenes::from_toml("version = 1\n[[scene]]\nname = \"pets\"\nwords = [\"dog\"]")
                .unwrap(),
        )
        .unwrap();
        let texts = [
            labelled("my dog", true),          // kept, memorable: tp
            labelled("the dog barked", false), // kept, not: fp
            labelled("my cat", true),          // dropped, memorable: fn
            labelled("haha", false),           // dropped, not: tn
            labelled("ok", false),             // tn
        ];
        let e = evaluate(&gum, &texts);
        assert_eq!((e.texts, e.memorable), (5, 2));
        assert!((e.memorable_kept - 0.5).abs() < 1e-12);
        assert!((e.not_memorable_dropped - 2.0 / 3.0).abs() < 1e-12);
        assert!((e.accuracy - 0.6).abs() < 1e-12);
        // F1 memorable = 2·1/(2+1+1) = 0.5; F1 not = 2·2/(4+1+1) = 2/3; weighted (2·0.5 + 3·2/3)/5.
        assert!((e.weighted_f1 - 0.6).abs() < 1e-12);
    }

    #[test]
    fn locomo_turns_are_memorable_when_a_question_cites_them() {
        let file = Path::new("7.json");
        let bytes = br#"{"speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I adopted a dog"},
                          {"speaker": "B", "dia_id": "D1:2", "text": "nice!"}],
            "qa": [{"question": "What did A adopt?", "answer": "a dog", "evidence": ["D1:1"], "category": 4}]}"#;
        let texts = locomo_texts(file, bytes).unwrap();
        assert_eq!(
            texts.iter().map(|t| t.memorable).collect::<Vec<_>>(),
            [true, false]
        );
        assert_eq!(texts[0].text, "I adopted a dog");
    }
}
