//! The metrics on a small hand-computed case: four questions, fixed rankings and answers.
#![allow(clippy::float_cmp)]

use super::*;

fn q(id: &str, qtype: QuestionType, answer: &str, evidence: &[&str]) -> Question {
    Question {
        id: id.to_owned(),
        question: format!("Today is 2024-01-08. Question {id}?"),
        answer: answer.to_owned(),
        evidence_ids: evidence.iter().map(|s| (*s).to_owned()).collect(),
        qtype,
        pool: None,
    }
}

fn ranking(ids: &[&str]) -> Ranking {
    Ranking {
        ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        scores: (0..ids.len()).map(|i| 1.0 / (i as f64 + 1.0)).collect(),
    }
}

fn p(id: &str, answer: &str) -> Prediction {
    Prediction {
        id: id.to_owned(),
        answer: answer.to_owned(),
    }
}

struct Always(bool);

impl Judge for Always {
    fn judge(&self, _: &str, _: &str, _: &str) -> Result<(bool, String)> {
        Ok((self.0, "stub".to_owned()))
    }
}

#[test]
fn figures_equal_the_hand_computed_ones() {
    let questions = [
        // GT {a, b}: top-1 has a; top-2 has a and b. Answer correct (1).
        q("1", QuestionType::Number, "3", &["a", "b"]),
        // GT {c}: c is third. Jaccard of {x, y} and {y, z}: 1/3.
        q("2", QuestionType::ListRecall, "x, y", &["c"]),
        // No evidence: left out of retrieval; answer wrong (0).
        q("3", QuestionType::Number, "4", &[]),
        // GT {d, e}: neither retrieved. Open-ended: the judge says yes.
        q("4", QuestionType::OpenEnd, "fine", &["d", "e"]),
    ];
    let rankings = [
        ranking(&["a", "b", "z"]),
        ranking(&["y", "x", "c"]),
        ranking(&["a"]),
        ranking(&["a", "b", "c"]),
    ];
    let predictions = [
        p("1", "three"),
        p("2", "y and z"),
        p("3", "5"),
        p("4", "ok"),
    ];
    let report = evaluate(
        &questions,
        &rankings,
        Some(&predictions),
        Some(&Always(true)),
        &[1, 3],
    )
    .unwrap();
    let o = &report.overall;
    assert_eq!((o.questions, o.with_evidence, o.empty_evidence), (4, 3, 1));
    // R@1 = (1/2 + 0 + 0) / 3; R@3 = (1 + 1 + 0) / 3.
    assert_eq!(o.recall[&1], 0.5 / 3.0);
    assert_eq!(o.recall[&3], 2.0 / 3.0);
    // recall@gt: q1 k=2 → 1; q2 k=1 → 0; q4 k=2 → 0.
    assert_eq!(o.recall_at_gt, 1.0 / 3.0);
    assert_eq!(o.hit_at_1, 1.0 / 3.0);
    // QS = (1 + 1/3 + 0 + 1) / 4.
    assert_eq!(o.qs.scored, 4);
    assert!((o.qs.accuracy().unwrap() - (7.0 / 3.0) / 4.0).abs() < 1e-12);
    // Joint over q1, q2, q4 (evidence and a score).
    assert_eq!(o.joint_count, 3);
    // Paper: (1·1/2 + 1/3·0 + 1·0) / 3 at k=1; (1·1 + 1/3·1 + 0) / 3 at k=3.
    assert!((o.joint[&1] - 0.5 / 3.0).abs() < 1e-12);
    assert!((o.joint[&3] - (4.0 / 3.0) / 3.0).abs() < 1e-12);
    // Code: bool(QS) × R: (1/2 + 0 + 0) / 3; (1 + 1 + 0) / 3.
    assert!((o.joint_bool[&3] - 2.0 / 3.0).abs() < 1e-12);
    // Strict at k=3: q1 (correct, GT ⊆ top-3) and q2 (1/3 counts as correct, c in top 3).
    assert!((o.joint_strict[&3] - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(o.joint_strict[&1], 0.0);
    let number = &report.by_type["number"];
    assert_eq!((number.questions, number.qs.scored), (2, 2));
    assert_eq!(number.qs.accuracy(), Some(0.5));
}

#[test]
fn without_a_judge_open_ended_answers_are_not_scored() {
    let questions = [q("1", QuestionType::OpenEnd, "fine", &["a"])];
    let report = evaluate(
        &questions,
        &[ranking(&["a"])],
        Some(&[p("1", "ok")]),
        None,
        &[1],
    )
    .unwrap();
    assert_eq!(report.questions[0].answer, None);
    assert_eq!(report.overall.qs.scored, 0);
    assert_eq!(report.overall.qs.accuracy(), None);
    assert_eq!(report.overall.joint_count, 0);
    assert_eq!(report.overall.recall[&1], 1.0);
}

#[test]
fn verdicts_are_read_strictly() {
    assert_eq!(
        parse_verdict("Sure: {\"explanation\": \"same\", \"accuracy\": true}").unwrap(),
        (true, "same".to_owned())
    );
    assert!(!parse_verdict("{\"accuracy\": \"false\"}").unwrap().0);
    for bad in ["yes it is correct", "{\"accuracy\": 1}", "{broken", "} {"] {
        assert!(parse_verdict(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_llm_judge_asks_a_local_server_and_reads_its_verdict() {
    use memdb_endpoint_stub::{Reply, completion, serve};
    use std::time::Duration;
    let (url, seen) = serve(vec![
        Reply::ok(completion(
            "{\"explanation\": \"same day\", \"accuracy\": true}",
        )),
        Reply::ok(completion("I think it is correct")),
        Reply {
            status: 500,
            body: "overloaded".to_owned(),
            delay: Duration::ZERO,
        },
    ]);
    let judge = LlmJudge::new(&url, "judge-model", Duration::from_secs(5)).unwrap();
    assert_eq!(
        judge.judge("When?", "Monday", "On Monday").unwrap(),
        (true, "same day".to_owned())
    );
    // A reply without a verdict, and a server error: typed errors, never a guess.
    assert!(matches!(
        judge.judge("q", "a", "p"),
        Err(crate::Error::Judge(_))
    ));
    assert!(matches!(
        judge.judge("q", "a", "p"),
        Err(crate::Error::Judge(_))
    ));
    let bodies = seen.join().unwrap();
    assert!(bodies[0].contains("judge-model"), "{}", bodies[0]);
    assert!(bodies[0].contains("Ground truth: Monday"), "{}", bodies[0]);
    assert!(LlmJudge::new("http://example.com:8080", "m", Duration::from_secs(1)).is_err());
}
