//! The lab's errors: the engine's, plus the judge of ATM-Bench's open-ended answers.

/// Why a lab run failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store or the engine failed.
    #[error(transparent)]
    Engine(#[from] memdb::Error),
    /// The judge of open-ended answers (ATM-Bench's QS) failed: its server, or a reply without
    /// a verdict.
    #[error("answer judge: {0}")]
    Judge(#[source] memdb_endpoint::EndpointError),
    /// A scorer's own pattern is broken (a defect of the lab, never of the data).
    #[error("answer scorer: {0}")]
    Scorer(String),
}

/// The lab's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<memdb::StoreError> for Error {
    fn from(error: memdb::StoreError) -> Error {
        Error::Engine(error.into())
    }
}
