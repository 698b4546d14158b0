//! Arbitrary text as a memory-operation model's reply, read by each of the three experts'
//! strict parsers (`memdb::ops`): the update decider's `parse_update_reply` (Mem0's `{"memory":
//! [...]}` over 0–7 candidates), the extractor's `parse_facts_reply` and the answerer's
//! `parse_answer_reply`. None panics, and what each accepts keeps its invariants: a decision's
//! target is one of the candidates it was shown (ADD has none); at most `MAX_FACTS` non-empty
//! facts of at most `MAX_FACT_CHARS` characters; an answer cites only the ids it was given.
//! The first byte picks the candidate count and the given ids; the rest is the reply.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb::ops::{
    MAX_FACT_CHARS, MAX_FACTS, Operation, parse_answer_reply, parse_facts_reply, parse_update_reply,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, reply)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(reply);

    let candidates = usize::from(selector % 8);
    if let Ok(decision) = parse_update_reply(&text, candidates) {
        match decision.op {
            Operation::Add => assert_eq!(decision.target, None),
            _ => assert!(decision.target.is_some_and(|t| t < candidates)),
        }
        assert_eq!(parse_update_reply(&text, candidates).ok(), Some(decision));
    }

    if let Ok(facts) = parse_facts_reply(&text) {
        assert!(facts.len() <= MAX_FACTS);
        for fact in &facts {
            assert!(!fact.is_empty() && fact.chars().count() <= MAX_FACT_CHARS);
        }
    }

    let given: Vec<u64> = (0..u64::from(selector >> 4)).map(|i| i * 3).collect();
    if let Ok(answer) = parse_answer_reply(&text, &given) {
        assert!(answer.cited.iter().all(|id| given.contains(id)));
    }
});
