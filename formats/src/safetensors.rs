//! The index of a safetensors file (Hugging Face's checkpoint format, the encoder's
//! `model.safetensors`): the JSON header after the file's 8-byte length, naming each tensor's
//! dtype, shape and byte range in the data that follows.
//!
//! Owns: parsing that header (by the `safetensors` crate's own `Metadata`, the reference
//! parser) and the one check it cannot make from the header alone, that the data ends where
//! the file does. Reading the tensors is the encoder's (`memdb-encode`'s `checkpoint`).
//!
//! Invariant: an index that parses describes only bytes inside the data: its ranges are
//! contiguous from 0, each as long as its shape times its dtype's size, and the last ends at
//! exactly `data_len`. So a reader that trusts it never reads past the file.

use std::collections::HashMap;
use std::ops::Range;

use ::safetensors::tensor::Metadata;

use crate::FormatError;

/// Bytes of the little-endian header length that starts a safetensors file.
pub const LENGTH_BYTES: u64 = 8;

/// The largest header accepted (the `safetensors` crate's own limit): a longer one is not a
/// checkpoint, and is refused before anything is allocated for it.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// One tensor of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorEntry {
    /// The element type as the format spells it (`F32`, `I64`, `BF16`, …).
    pub dtype: String,
    /// Size of each dimension, outermost first.
    pub shape: Vec<usize>,
    /// Where its bytes are, relative to the start of the data (after the header).
    pub data: Range<u64>,
}

/// The tensors of a safetensors file, by name.
#[derive(Debug, Clone)]
pub struct TensorIndex {
    tensors: HashMap<String, TensorEntry>,
}

impl TensorIndex {
    /// The index in `header` (the JSON between the length and the data) of a file whose data
    /// is `data_len` bytes.
    pub fn parse(header: &[u8], data_len: u64) -> Result<Self, FormatError> {
        let invalid = |reason: String| FormatError::Invalid {
            what: "safetensors header",
            offset: LENGTH_BYTES,
            reason,
        };
        let metadata: Metadata = serde_json::from_slice(header)
            .map_err(|e| invalid(format!("not a tensor index: {e}")))?;
        // `Metadata` has checked that the ranges are contiguous from 0 and match the shapes;
        // the last must end where the file does.
        let tensors: HashMap<String, TensorEntry> = metadata
            .tensors()
            .into_iter()
            .map(|(name, info)| {
                let entry = TensorEntry {
                    dtype: info.dtype.to_string(),
                    shape: info.shape.clone(),
                    data: info.data_offsets.0 as u64..info.data_offsets.1 as u64,
                };
                (name, entry)
            })
            .collect();
        let end = tensors.values().map(|t| t.data.end).max().unwrap_or(0);
        if end != data_len {
            return Err(invalid(format!(
                "the index describes {end} bytes of tensors, the file holds {data_len}"
            )));
        }
        Ok(Self { tensors })
    }

    /// The header's length from the 8 bytes that start a file of `file_len` bytes: refused
    /// where the header would not fit in the file or is longer than [`MAX_HEADER_BYTES`].
    pub fn header_len(prefix: [u8; 8], file_len: u64) -> Result<usize, FormatError> {
        let len = u64::from_le_bytes(prefix);
        usize::try_from(len)
            .ok()
            .filter(|_| len <= MAX_HEADER_BYTES.min(file_len.saturating_sub(LENGTH_BYTES)))
            .ok_or_else(|| FormatError::Invalid {
                what: "safetensors header length",
                offset: 0,
                reason: format!("a header of {len} bytes in a file of {file_len}"),
            })
    }

    /// The tensor named `name`.
    pub fn get(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.get(name)
    }

    /// Every tensor, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &TensorEntry)> {
        self.tensors
            .iter()
            .map(|(name, entry)| (name.as_str(), entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Real ways a header is broken: not JSON, not an index, a gap between tensors, a size
    /// that is not the shape's, overlapping tensors, an unknown dtype, and data longer or
    /// shorter than the index says.
    #[test]
    fn broken_headers_are_refused() {
        let good = r#"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I64","shape":[1,2],"data_offsets":[8,24]}}"#;
        let index = TensorIndex::parse(good.as_bytes(), 24).unwrap();
        assert_eq!(
            index.get("b"),
            Some(&TensorEntry {
                dtype: "I64".into(),
                shape: vec![1, 2],
                data: 8..24
            })
        );
        assert_eq!(index.entries().count(), 2);
        for (what, header, data_len) in [
            ("data longer than the index", good, 25),
            ("data shorter than the index", good, 23),
            ("not JSON", "{not json", 0),
            ("not an index", "[1,2,3]", 0),
            (
                "a gap",
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}"#,
                24,
            ),
            (
                "a size that is not the shape's",
                r#"{"a":{"dtype":"F32","shape":[5],"data_offsets":[0,24]}}"#,
                24,
            ),
            (
                "overlapping tensors",
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
                12,
            ),
            (
                "an unknown dtype",
                r#"{"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}}"#,
                8,
            ),
        ] {
            assert!(
                TensorIndex::parse(header.as_bytes(), data_len).is_err(),
                "{what}: parsed"
            );
        }
    }

    #[test]
    fn header_lengths_past_the_file_or_the_limit_are_refused() {
        assert_eq!(
            TensorIndex::header_len(10u64.to_le_bytes(), 18).unwrap(),
            10
        );
        assert!(TensorIndex::header_len(11u64.to_le_bytes(), 18).is_err());
        assert!(TensorIndex::header_len(0u64.to_le_bytes(), 4).is_ok());
        assert!(TensorIndex::header_len(u64::MAX.to_le_bytes(), u64::MAX).is_err());
        assert!(TensorIndex::header_len((MAX_HEADER_BYTES + 1).to_le_bytes(), u64::MAX).is_err());
    }

    proptest! {
        /// Any bytes: an error, or an index whose every range lies inside the data.
        #[test]
        fn any_header_is_refused_or_stays_inside_the_data(
            header in proptest::collection::vec(any::<u8>(), 0..200),
            data_len in 0u64..64,
        ) {
            if let Ok(index) = TensorIndex::parse(&header, data_len) {
                for (_, entry) in index.entries() {
                    prop_assert!(entry.data.start <= entry.data.end && entry.data.end <= data_len);
                }
            }
        }
    }
}
