//! The store's error type: every failure of the substrate names what failed and where.
//!
//! It names no client: a client's failure inside a commit travels as [`Error::Client`] with
//! the client's own error as its source.

use std::io;
use std::path::PathBuf;

use memdb_formats::FormatError;

/// Result of store operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another process holds the store's write lock.
    #[error("store {} is locked by another process: close it there first", path.display())]
    Locked {
        /// The store directory.
        path: PathBuf,
    },
    /// A write was attempted through a handle opened with `Store::open_read_only`.
    #[error("store {} is open read-only here: open it as its writer to change it", path.display())]
    ReadOnly {
        /// The store directory.
        path: PathBuf,
    },
    /// `create` found a store (or other files) already in the directory.
    #[error("{} already holds a store (or is not empty)", path.display())]
    AlreadyExists {
        /// The store directory.
        path: PathBuf,
    },
    /// The store is encrypted and was opened without its passphrase or key file.
    #[error("store {} is encrypted: give its passphrase (MEMDB_PASSPHRASE, --passphrase-fd or the prompt) or its key file", path.display())]
    Encrypted {
        /// The store directory.
        path: PathBuf,
    },
    /// The store's key could not be made, read, unwrapped or changed: a wrong passphrase is
    /// `source` [`CryptoError::WrongKey`](crate::crypto::CryptoError::WrongKey).
    #[error("key of store {}: {source}", path.display())]
    Key {
        /// The store directory.
        path: PathBuf,
        /// What failed.
        #[source]
        source: crate::crypto::CryptoError,
    },
    /// `open` found no store in the directory.
    #[error("no memdb store at {} (create one with `memdb init`)", path.display())]
    NoStore {
        /// The directory given.
        path: PathBuf,
    },
    /// The store was written by an incompatible version of memdb.
    #[error("store format version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion {
        /// Version recorded in the store.
        found: u64,
        /// Version this build reads.
        supported: u64,
    },
    /// An operating-system I/O call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done (`write`, `fsync`, `open`, …).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The catalog database failed.
    #[error("catalog ({op}): {source}")]
    Catalog {
        /// What was being done.
        op: &'static str,
        /// redb's error.
        #[source]
        source: Box<redb::Error>,
    },
    /// The catalog library gave up on damaged bytes of `catalog.redb` (it panicked while
    /// reading them; memdb caught it). `memdb repair` rebuilds the store from its segments.
    #[error("catalog ({op}): its file is damaged ({message}); run `memdb repair`")]
    CatalogDamaged {
        /// What was being done.
        op: &'static str,
        /// What the catalog library said.
        message: String,
    },
    /// Bytes read back from a segment failed their checksum or do not decode.
    #[error("corruption in segment {segment:016x} at page {page} (file offset {offset}): {source}")]
    Corruption {
        /// Segment id.
        segment: u64,
        /// Page number within the segment file.
        page: u64,
        /// Byte offset within the segment file.
        offset: u64,
        /// What the decoder found.
        #[source]
        source: FormatError,
    },
    /// A segment the catalog references cannot be used (missing, wrong header, short).
    #[error("segment {segment:016x} is unavailable: {reason}")]
    SegmentUnavailable {
        /// Segment id.
        segment: u64,
        /// Why.
        reason: String,
    },
    /// A catalog row does not decode, or contradicts another row (an unknown kind code, an
    /// index naming an item the items table lacks, a page naming a missing part).
    #[error("catalog table `{table}`, row {row}: {reason}")]
    BadRow {
        /// The catalog table.
        table: &'static str,
        /// The row's key, as text.
        row: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A thread of the engine panicked or went away while holding shared state (a lock, a
    /// work queue); the operation cannot be trusted. Reopen the store.
    #[error("{0}: a thread of the engine panicked; close and reopen the store")]
    ThreadFailed(&'static str),
    /// A read-only handle could not open the segments of the writer's latest commit: the
    /// writer committed (and dropped segments) again each time it tried. Try again.
    #[error(
        "the writer committed {attempts} times while this reader opened its segments; try again"
    )]
    ReaderOutpaced {
        /// Attempts made.
        attempts: usize,
    },
    /// A count or id outgrew its stored width.
    #[error("{what} {value} exceeds its stored width")]
    Overflow {
        /// What overflowed.
        what: &'static str,
        /// Its value.
        value: String,
    },
    /// A broken invariant of the engine itself, never expected from any input or any damage
    /// (a bug: please report it).
    #[error("internal invariant broken: {0}")]
    Inconsistent(String),
    /// A memory operation named a memory that is not current: it does not exist, or it was
    /// deleted or purged. Nothing of its call was applied.
    #[error("memory operation #{index} ({op}) names memory {id}, which is not a current memory")]
    NoMemory {
        /// Its position in the call.
        index: usize,
        /// `update`, `delete` or `none`.
        op: &'static str,
        /// The id it named.
        id: u64,
    },
    /// A batch recorded its operations under a client's key that an earlier commit recorded
    /// already (an idempotency key used twice): nothing of the batch was applied.
    #[error("the key {key:?} already names an earlier call's operations: nothing was applied")]
    KeyUsed {
        /// The key.
        key: String,
    },
    /// An item given to a write batch is not acceptable.
    #[error("item #{index} of the batch is invalid: {reason}")]
    InvalidItem {
        /// Position of the item in the batch.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A write failed earlier in this process in a way that leaves the writer's view of the
    /// files uncertain; reopen the store.
    #[error("an earlier write failed ({0}); close and reopen the store to continue writing")]
    WriterPoisoned(String),
    /// The store's vectors were made by another encoder model; mixing them would make every
    /// similarity meaningless.
    #[error(
        "this store's vectors were made by model `{stored}`, not `{given}`; re-encode into a new store or use that model"
    )]
    ModelMismatch {
        /// Model recorded in the store.
        stored: String,
        /// Model offered now.
        given: String,
    },
    /// The operation needs the store to itself, and other handles (clones of the `Store`) or
    /// snapshots are still alive.
    #[error("{0}: close the store's other handles and snapshots first")]
    InUse(String),
    /// A compaction hook refused to continue.
    #[error("compaction hook failed: {0}")]
    Hook(String),
    /// A vector given to a batch or a search does not fit its vector space (wrong dimension,
    /// a non-finite value, a reserved name).
    #[error("vector space `{space}`: {reason}")]
    InvalidVector {
        /// The space.
        space: String,
        /// What is wrong, with the key or position concerned.
        reason: String,
    },
    /// A stored vector block or its catalog row could not be used.
    #[error("vector space `{space}`, block {block}: {source}")]
    VectorBlock {
        /// The space.
        space: String,
        /// Blob id of the block.
        block: u64,
        /// What is wrong with it.
        #[source]
        source: memdb_vectors::VectorError,
    },
    /// A client's derived data (a `DerivedData` or `DerivedWrite` of the engine: the graph,
    /// the pages) failed inside the store's commit; nothing of the commit was applied. The
    /// client's own error is the source.
    #[error("{client}: {source}")]
    Client {
        /// The client's name.
        client: &'static str,
        /// Its error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Runs `f`, turning a panic of the catalog library on damaged catalog bytes (redb panics on
/// some malformed allocator states instead of returning an error) into
/// [`Error::CatalogDamaged`]: damaged files never take the process down.
pub(crate) fn catch_catalog_panic<T>(op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "unknown failure".to_owned());
        Err(Error::CatalogDamaged { op, message })
    })
}

impl Error {
    /// A catalog row of `table` keyed `row` that does not decode or contradicts another.
    pub fn bad_row(
        table: &'static str,
        row: impl std::fmt::Display,
        reason: impl std::fmt::Display,
    ) -> Error {
        Error::BadRow {
            table,
            row: row.to_string(),
            reason: reason.to_string(),
        }
    }

    /// An I/O error of `op` on `path`, as [`Error::Io`].
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }

    /// Whether this is an I/O error saying a file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// Whether this I/O error says a file is missing or shorter than it must be: damage that
    /// persists, unlike a failed read.
    pub fn is_missing_bytes(&self) -> bool {
        matches!(self, Error::Io { source, .. }
            if matches!(source.kind(), io::ErrorKind::NotFound | io::ErrorKind::UnexpectedEof))
    }

    /// Whether this error says stored bytes are damaged (a checksum or tag that fails, a
    /// segment that is missing or unusable): what a search skips and names, and `repair`
    /// mends, rather than a reason to fail the whole answer.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            Error::Corruption { .. } | Error::SegmentUnavailable { .. }
        ) || self.is_missing_bytes()
    }

    /// Whether this error says the catalog is damaged — its file does not read (redb's own
    /// checks, an encrypted page whose tag fails, a panic of the catalog library caught), or a
    /// row is not what the format allows — rather than that the disk or the system failed
    /// (an I/O error such as a full disk, a lock, a secret): what `repair` answers with a
    /// rebuild from the segments.
    pub fn is_catalog_damage(&self) -> bool {
        match self {
            Error::CatalogDamaged { .. } | Error::BadRow { .. } | Error::Inconsistent(_) => true,
            Error::Catalog { source, .. } => match source.as_ref() {
                redb::Error::Io(e) => matches!(
                    e.kind(),
                    io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
                ),
                _ => true,
            },
            _ => false,
        }
    }

    /// Whether this error says the store's files may not be written here: no permission, a
    /// read-only file system, or another process holding the write lock. A reader can still
    /// open the store read-only.
    pub fn is_no_write_access(&self) -> bool {
        let denied = |kind: io::ErrorKind| {
            matches!(
                kind,
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            )
        };
        match self {
            Error::Locked { .. } | Error::ReadOnly { .. } => true,
            Error::Io { source, .. } => denied(source.kind()),
            Error::Catalog { source, .. } => match source.as_ref() {
                redb::Error::Io(e) => denied(e.kind()),
                _ => false,
            },
            _ => false,
        }
    }

    pub(crate) fn catalog(op: &'static str) -> impl FnOnce(redb::Error) -> Error {
        move |e| Error::Catalog {
            op,
            source: Box::new(e),
        }
    }

    /// A corruption located by the file offset of the first bad byte.
    pub(crate) fn corruption(segment: u64, offset: u64, source: FormatError) -> Error {
        Error::Corruption {
            segment,
            page: offset / u64::from(memdb_formats::segment::PAGE_SIZE),
            offset,
            source,
        }
    }
}

/// Converts any redb error type into [`Error::Catalog`] with the operation name.
pub trait CatalogResult<T> {
    /// The error as [`Error::Catalog`], naming the operation `op`.
    fn ctx(self, op: &'static str) -> Result<T>;
}

impl<T, E: Into<redb::Error>> CatalogResult<T> for std::result::Result<T, E> {
    fn ctx(self, op: &'static str) -> Result<T> {
        self.map_err(|e| Error::catalog(op)(e.into()))
    }
}
