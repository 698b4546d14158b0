//! Error types of the formats crate: one for our own on-disk bytes, one for outside data.

use std::path::PathBuf;

/// A structure of memdb's own on-disk format did not decode.
///
/// `what` names the structure ("segment header", "entry header", "item record", …) and
/// `offset` is the byte offset of the problem inside the buffer that was given to the decoder
/// (callers add the file offset of that buffer when they report it).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The buffer ends before the structure does.
    #[error("{what}: truncated at offset {offset}: need {need} bytes, have {have}")]
    Truncated {
        /// Structure being decoded.
        what: &'static str,
        /// Where the missing bytes start.
        offset: u64,
        /// Bytes the structure needs from `offset`.
        need: u64,
        /// Bytes available from `offset`.
        have: u64,
    },
    /// A magic number does not match.
    #[error("{what}: bad magic at offset {offset}: found {found:02x?}")]
    BadMagic {
        /// Structure being decoded.
        what: &'static str,
        /// Offset of the magic.
        offset: u64,
        /// The bytes found there.
        found: Vec<u8>,
    },
    /// A stored CRC32C does not match the bytes it covers.
    #[error(
        "{what}: checksum mismatch at offset {offset}: stored {stored:#010x}, computed {computed:#010x}"
    )]
    Checksum {
        /// Structure being decoded.
        what: &'static str,
        /// Offset of the first byte the checksum covers.
        offset: u64,
        /// Checksum stored on disk.
        stored: u32,
        /// Checksum of the bytes as read.
        computed: u32,
    },
    /// The data was written by a format version this build cannot read.
    #[error("{what}: unsupported version {found} (this build reads version {supported})")]
    UnsupportedVersion {
        /// Structure being decoded.
        what: &'static str,
        /// Version found on disk.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// A field holds a value the format does not allow.
    #[error("{what}: invalid value at offset {offset}: {reason}")]
    Invalid {
        /// Structure being decoded.
        what: &'static str,
        /// Offset of the structure (or field) that is invalid.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

impl FormatError {
    /// `Ok` when `bytes` have the CRC-32C `stored`, else [`FormatError::Checksum`] for
    /// `what` at `offset`: every checksummed structure checks its bytes so.
    pub(crate) fn check_crc(
        what: &'static str,
        offset: u64,
        stored: u32,
        bytes: &[u8],
    ) -> Result<(), FormatError> {
        let computed = crate::crc32c(bytes);
        if stored == computed {
            Ok(())
        } else {
            Err(FormatError::Checksum {
                what,
                offset,
                stored,
                computed,
            })
        }
    }

    /// `Ok` when `found` is the version this build reads (`supported`), else
    /// [`FormatError::UnsupportedVersion`]: every versioned structure checks its version so.
    pub(crate) fn check_version(
        what: &'static str,
        found: impl Into<u32>,
        supported: impl Into<u32>,
    ) -> Result<(), FormatError> {
        let (found, supported) = (found.into(), supported.into());
        if found == supported {
            Ok(())
        } else {
            Err(FormatError::UnsupportedVersion {
                what,
                found,
                supported,
            })
        }
    }
}

/// Why one record of an outside file could not be imported.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ImportErrorKind {
    /// The bytes are not valid UTF-8 / JSON / the expected syntax.
    #[error("syntax: {0}")]
    Syntax(String),
    /// A required field is absent.
    #[error("missing field `{0}`")]
    MissingField(String),
    /// A required field is absent, with what to write when its value is unknown.
    #[error("missing field `{field}` ({hint})")]
    MissingFieldHint {
        /// Field name.
        field: String,
        /// What to write instead of leaving it out (`null for an undated item`).
        hint: String,
    },
    /// The bytes are another kind of file than this importer takes (`PNG image`, `HEIC image`,
    /// `not an image`): what they are, and what the importer takes instead.
    #[error("{found}: {expected}")]
    Unsupported {
        /// What the bytes are, as [`FileKind`](crate::import::FileKind) names it.
        found: String,
        /// What this importer takes (`memdb imports JPEG photos`).
        expected: String,
    },
    /// A field is present but its value is not acceptable.
    #[error("field `{field}`: {reason}")]
    InvalidField {
        /// Field name (JSON path style, e.g. `location.lat`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// An error in an outside file, with enough context to find it: the file, and the line (for
/// line-oriented formats) or the JSON path of the record.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error("{}{}: {kind}", file.display(), location.as_deref().map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ImportError {
    /// The file being imported.
    pub file: PathBuf,
    /// Where in the file: `line 12`, `session_3[4]`, … (`None` for whole-file errors).
    pub location: Option<String>,
    /// What is wrong.
    pub kind: ImportErrorKind,
}
