//! What a question asks for, read from its words: a fact the memories state, or an inference
//! from them.
//!
//! "Would Melanie rather visit a national park or a theme park?", "What might John's degree
//! be in?": the answer is nowhere written as asked; the evidence is what the person said they
//! like or do, in other words (camping, not "national park"). For such a question the meaning
//! of an item (the dense signal's cosine) says more than the words it shares with the
//! question, so recall weighs the dense score by its own weight
//! ([`super::RecallOptions::inference_dense_score_weight`]).
//!
//! The form is a rule on English words, not a model: a question is an inference when one of
//! its words is a modal of conjecture (would, might, could and their negations) or a word of
//! likelihood (likely, unlikely, probably). "May" is left out: in a question about memories it
//! is more often the month than the modal. Matching is on whole words, case-insensitive, with
//! typographic apostrophes read as ASCII ones; a question with no such word is a fact.

/// What a question asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum QuestionForm {
    /// A fact the memories state ("When did Caroline go to the LGBTQ support group?").
    #[default]
    Fact,
    /// An inference from what the memories state ("Would Caroline pursue writing as a
    /// career?").
    Inference,
}

/// The words that make a question an inference (lowercase, ASCII apostrophes).
const INFERENCE_WORDS: [&str; 9] = [
    "would", "wouldn't", "might", "mightn't", "could", "couldn't", "likely", "unlikely", "probably",
];

impl QuestionForm {
    /// The form of `question`.
    pub fn of(question: &str) -> QuestionForm {
        let lowered = question
            .to_lowercase()
            .replace(['\u{2019}', '\u{2018}'], "'");
        let inference = lowered
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .any(|word| INFERENCE_WORDS.contains(&word.trim_matches('\'')));
        if inference {
            QuestionForm::Inference
        } else {
            QuestionForm::Fact
        }
    }

    /// Its name, as EXPLAIN prints it.
    pub fn name(self) -> &'static str {
        match self {
            QuestionForm::Fact => "fact",
            QuestionForm::Inference => "inference",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::QuestionForm::{self, Fact, Inference};

    #[test]
    fn modals_of_conjecture_and_words_of_likelihood_make_an_inference() {
        for question in [
            "Would Melanie be more interested in going to a national park or a theme park?",
            "What might John's degree be in?",
            "What could John do after his basketball career?",
            "Which outdoor gear company likely signed up John for an endorsement deal?",
            "Is it UNLIKELY that Nate has no friends?",
            "What pets wouldn't cause any discomfort to Joanna?",
            "What pets wouldn\u{2019}t cause any discomfort to Joanna?",
            "Is Tim probably a fan of fantasy?",
            "'Would' she go?",
        ] {
            assert_eq!(QuestionForm::of(question), Inference, "{question}");
        }
    }

    #[test]
    fn a_question_without_them_is_a_fact_including_the_month_may_and_words_containing_them() {
        for question in [
            "When did Caroline go to the LGBTQ support group?",
            "What did Jon do in May 2023?",
            "Who is Anthony?",
            "What did the couldron hold?",
            "Did Nate mention shouldering the likelihood of rain?",
            "",
        ] {
            assert_eq!(QuestionForm::of(question), Fact, "{question}");
        }
    }

    #[test]
    fn names_are_what_explain_prints() {
        assert_eq!(Fact.name(), "fact");
        assert_eq!(Inference.name(), "inference");
    }
}
