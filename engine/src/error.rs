//! The engine's error type: every failure names what failed and where.
//!
//! The store's own failures are [`StoreError`] (crate `memdb-store`), carried whole in
//! [`Error::Store`]; the variants here are the memory model's (encoder, extractor, decider,
//! geocoder, forgetting, images). A client failure that crossed the store's commit as
//! [`StoreError::Client`] comes back as the engine's own error, not wrapped twice.

pub use memdb_store::Error as StoreError;

/// Result of engine operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store (crate `memdb-store`) failed: the disk, the catalog, a segment, a batch the
    /// store refused. [`StoreError`] says which; [`Error::store`] reads it.
    #[error(transparent)]
    Store(StoreError),
    /// An image operation of the scrapbook failed (JPEG decode or encode, resize, the embedded
    /// font).
    #[error("{op}: {reason}")]
    Image {
        /// What was being done (`JPEG encode`, `resize`, …).
        op: &'static str,
        /// What the library said.
        reason: String,
    },
    /// A forgetting policy does not hold together.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A gate lexicon version the store does not hold (`gate::use_lexicon`).
    #[error("this store has no gate lexicon version {version}")]
    NoLexicon {
        /// The version asked for.
        version: u32,
    },
    /// The encoder failed to embed texts an ingest, a graph update or a recall needed.
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    /// The node extractor (a local model server) failed or answered something unusable.
    #[error("node extractor: {0}")]
    Extractor(String),
    /// A memory-operation model (extract, update or generate, on a local model server) failed
    /// or answered something unusable: nothing was applied or shown.
    #[error("memory-operation model: {0}")]
    Decider(#[from] DeciderError),
    /// The offline geocoder refused a question (its embedded gazetteer unreadable: a build
    /// error, never an input's).
    #[error("geocoder: {0}")]
    Geo(#[from] memdb_geo::GeoError),
    /// Forgetting would drop photo originals and the caller did not consent
    /// (`ForgetOptions::drop_originals`): nothing was written.
    #[error(
        "forgetting would drop {count} photo original(s), {bytes} bytes: list them with a dry run, then consent to dropping them"
    )]
    OriginalsNeedConsent {
        /// Originals the run would drop.
        count: u64,
        /// Their bytes.
        bytes: u64,
        /// Each of them, in day order.
        originals: Vec<OriginalDrop>,
    },
    /// A forgetting plan (`Store::plan_forget`) was made from a snapshot the store has moved
    /// on from: items were written or a page changed since. Nothing was written; plan again.
    #[error("the forgetting plan is stale ({reason}): nothing was written; plan again")]
    StalePlan {
        /// What changed.
        reason: String,
    },
}

impl Error {
    /// The store's error, when this is one.
    pub fn store(&self) -> Option<&StoreError> {
        match self {
            Error::Store(e) => Some(e),
            _ => None,
        }
    }

    /// Whether stored bytes are damaged ([`StoreError::is_damage`]).
    pub fn is_damage(&self) -> bool {
        self.store().is_some_and(StoreError::is_damage)
    }

    /// Whether the catalog is damaged ([`StoreError::is_catalog_damage`]).
    pub fn is_catalog_damage(&self) -> bool {
        self.store().is_some_and(StoreError::is_catalog_damage)
    }

    /// Whether the store's files may not be written here ([`StoreError::is_no_write_access`]).
    pub fn is_no_write_access(&self) -> bool {
        self.store().is_some_and(StoreError::is_no_write_access)
    }
}

/// The name a client failure carries through the store's commit.
const ENGINE: &str = "engine";

#[cfg(feature = "render")]
impl From<memdb_render::RenderError> for Error {
    fn from(error: memdb_render::RenderError) -> Error {
        Error::Image {
            op: error.op,
            reason: error.reason,
        }
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Error {
        match error {
            StoreError::Client { client, source } if client == ENGINE => {
                match source.downcast::<Error>() {
                    Ok(engine) => *engine,
                    Err(source) => Error::Store(StoreError::Client { client, source }),
                }
            }
            other => Error::Store(other),
        }
    }
}

impl From<Error> for StoreError {
    /// An engine failure inside a store hook or derived write: a store error stays itself,
    /// anything else travels as [`StoreError::Client`] and is unwrapped again on the way out.
    fn from(error: Error) -> StoreError {
        match error {
            Error::Store(e) => e,
            other => StoreError::Client {
                client: ENGINE,
                source: Box::new(other),
            },
        }
    }
}

// Forgetting's error details live here, below every module, so the error type names no
// module of the engine (`forget` re-exports them).

/// A policy that does not hold together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The TOML does not parse or has unknown or missing fields.
    #[error("policy file: {0}")]
    Toml(String),
    /// A rule is broken.
    #[error("policy `{policy}`: {reason}")]
    Invalid {
        /// The policy's name.
        policy: String,
        /// What is wrong.
        reason: String,
    },
    /// No built-in policy has this name.
    #[error(
        "no built-in policy `{0}` (built-ins: no-forget, very-soft, softer-old, timed-gentle, boundary-365)"
    )]
    Unknown(String),
}

/// A photo original a run drops (or, in a dry run, would drop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginalDrop {
    /// The item that owns it.
    pub item: u64,
    /// The item's external id, if it has one.
    pub external_id: Option<String>,
    /// The blob.
    pub blob: u64,
    /// Its bytes.
    pub bytes: u64,
    /// The day of the page that shows it.
    pub day: String,
    /// The stage whose rule drops it.
    pub stage: String,
}

/// Why a model-backed stage's answer was not used (a memory-operation decider, fact extractor or
/// answer generator; `memdb::ops` re-exports it): nothing is applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeciderError {
    /// The model server could not be reached, timed out, or did not answer a chat completion.
    #[error(transparent)]
    Endpoint(#[from] memdb_endpoint::EndpointError),
    /// The answer is not the JSON its operation asks for (update: Mem0's `{"memory": [{"id",
    /// "text", "event"}]}`; extract: `{"facts": [...]}`; generate: `{"answer", "cited"}`).
    #[error("the answer is not {expected} ({why}): {snippet:?}")]
    Malformed {
        /// What the operation asked for.
        expected: &'static str,
        /// What is wrong.
        why: String,
        /// The start of the answer.
        snippet: String,
    },
    /// The answer updates, deletes or keeps a memory id it was not given.
    #[error("the answer names memory id {id:?}, which it was not given")]
    UnknownId {
        /// The id.
        id: String,
    },
}

/// Why an [`Embedder`](crate::Embedder) could not embed texts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The encoder itself failed (its own error kept as the source).
    #[error("the encoder failed: {0}")]
    Encoder(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An embedder without an error type of its own said why.
    #[error("{0}")]
    Message(String),
    /// The embedder returned another number of vectors than texts.
    #[error("the embedder returned {vectors} vectors for {texts} texts")]
    Count {
        /// Vectors returned.
        vectors: usize,
        /// Texts given.
        texts: usize,
    },
}

impl From<String> for EmbedError {
    fn from(message: String) -> EmbedError {
        EmbedError::Message(message)
    }
}

impl From<&str> for EmbedError {
    fn from(message: &str) -> EmbedError {
        EmbedError::Message(message.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine failure inside a store hook crosses the store as `StoreError::Client` and
    /// comes back as itself, not wrapped twice.
    #[test]
    fn an_engine_error_crosses_the_store_and_comes_back_whole() {
        let through = StoreError::from(Error::Extractor("the server said no".into()));
        assert!(
            matches!(&through, StoreError::Client { client, .. } if *client == ENGINE),
            "{through:?}"
        );
        let back = Error::from(through);
        assert!(
            matches!(&back, Error::Extractor(m) if m == "the server said no"),
            "{back:?}"
        );
    }

    /// A store error stays the store's both ways, and its questions are answered through it.
    #[test]
    fn a_store_error_is_never_wrapped_as_a_client_failure() {
        let engine = Error::from(StoreError::Inconsistent("x".into()));
        assert!(matches!(engine, Error::Store(StoreError::Inconsistent(_))));
        assert!(engine.is_catalog_damage());
        let store = StoreError::from(engine);
        assert!(matches!(store, StoreError::Inconsistent(_)), "{store:?}");
        // Another client's failure is kept as it came.
        let other = Error::from(StoreError::Client {
            client: "another",
            source: "its own words".into(),
        });
        assert!(
            matches!(
                &other,
                Error::Store(StoreError::Client {
                    client: "another",
                    ..
                })
            ),
            "{other:?}"
        );
        assert!(!other.is_damage());
    }
}
