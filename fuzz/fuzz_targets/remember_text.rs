//! Arbitrary text as what a person tells `memdb remember`, and the memories stored beside it
//! (`memdb::ops`): the first line is the message, each later line (at most six) a stored
//! memory. The on-device extractor splits the message into sentences and facts and accounts
//! for every sentence; the rule decider and the learned decider (its shipped weights) decide
//! each fact against the memories. None panics; every sentence gives facts or a reason, never
//! both or neither; a fact is never empty; a decision names its target (and every memory it
//! closes) among the memories it was shown, and an ADD none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb::ops::{
    Candidate, Decider, FactExtractor, LearnedDecider, Message, Operation, RuleDecider,
    RuleThresholds, SentenceExtractor, learned,
};

/// Unit vectors of the encoder's dimension from the texts' words (hashed), so texts that share
/// words are similar, as the encoder's are.
#[derive(Debug)]
struct WordHash;

impl memdb::Embedder for WordHash {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; learned::EMBEDDING];
                for w in t.split_whitespace() {
                    let h = w
                        .to_lowercase()
                        .bytes()
                        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
                    v[(h % learned::EMBEDDING as u64) as usize] += 1.0;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect())
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let said = lines.next().unwrap_or_default().to_owned();
    let candidates: Vec<Candidate> = lines
        .take(6)
        .map(|l| Candidate { text: l.to_owned() })
        .collect();
    let extracted = SentenceExtractor
        .extract(&[Message {
            speaker: None,
            text: said,
        }])
        .unwrap_or_default();
    let rules = RuleDecider::new(WordHash, RuleThresholds::default());
    let model = LearnedDecider::new(
        RuleDecider::new(WordHash, RuleThresholds::default()),
        learned::SHIPPED,
    );
    for e in &extracted {
        assert!(e.facts.is_empty() != e.skipped.is_none(), "{e:?}");
        for fact in &e.facts {
            assert!(!fact.trim().is_empty());
            for decider in [&rules as &dyn Decider, &model] {
                let Ok(d) = decider.decide(fact, &candidates) else {
                    continue;
                };
                match d.op {
                    Operation::Add => assert_eq!(d.target, None),
                    _ => assert!(d.target.is_some_and(|t| t < candidates.len())),
                }
                assert!(d.closes.iter().all(|(c, _)| *c < candidates.len() && Some(*c) != d.target));
            }
        }
    }
});
