//! The weights file, read into the model's own buffers.
//!
//! Owns: reading `model.safetensors` — its index (parsed and validated by `memdb-formats`'
//! `safetensors`, which is fuzzed with the other parsers of outside bytes) and each tensor the
//! encoder asks for by name, read from the file straight into the buffer that keeps it.
//!
//! Why read rather than map: a tensor read lands once, in its final buffer (the kernel copies it
//! from the page cache, as a copy out of a mapping would), with no faults on a mapping, no
//! `unsafe`, and no SIGBUS should another process truncate the file mid-load. burn-store's loader,
//! which this replaced, mapped the file, copied every tensor into a module tree that was first
//! built with initial weights, and transposed every projection to burn's layout (which the 8-bit
//! layers then transposed back): 0.15 s a load, where this takes about half of that.
//!
//! Invariants:
//! - no tensor is read before the whole index has been validated against the file's length, so
//!   no read can run past the file;
//! - a tensor that is missing, not `F32`, or not of the shape asked for is an error that names it,
//!   never a random, partial or reinterpreted weight.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use memdb_formats::safetensors::{LENGTH_BYTES, TensorIndex};

use crate::error::EncodeError;

/// An open checkpoint: its validated index, and the file its tensors are read from.
pub(crate) struct Checkpoint {
    file: File,
    path: PathBuf,
    index: TensorIndex,
    /// Where the tensors' data starts: after the length and the header.
    data_start: u64,
}

impl Checkpoint {
    /// Opens the checkpoint at `path` and validates its index (module header).
    pub(crate) fn open(path: &Path) -> Result<Self, EncodeError> {
        let mut file = File::open(path).map_err(EncodeError::io("opening", path))?;
        let file_len = file
            .metadata()
            .map_err(EncodeError::io("reading the metadata of", path))?
            .len();
        let mut length = [0u8; LENGTH_BYTES as usize];
        file.read_exact(&mut length)
            .map_err(EncodeError::io("reading the header length of", path))?;
        let invalid = |e: memdb_formats::FormatError| weights_error(path, e.to_string());
        let header_len = TensorIndex::header_len(length, file_len).map_err(invalid)?;
        let mut header = vec![0u8; header_len];
        file.read_exact(&mut header)
            .map_err(EncodeError::io("reading the header of", path))?;
        let data_start = LENGTH_BYTES + header_len as u64;
        let index =
            TensorIndex::parse(&header, file_len.saturating_sub(data_start)).map_err(invalid)?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            index,
            data_start,
        })
    }

    /// Tensor `name`, which must be `F32` of `shape`: its values, row-major.
    pub(crate) fn read(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EncodeError> {
        let mut values = vec![0f32; shape.iter().product()];
        self.read_into(name, shape, &mut values)?;
        Ok(values)
    }

    /// As [`read`](Checkpoint::read), into `out` (whose length must be the shape's).
    pub(crate) fn read_into(
        &self,
        name: &str,
        shape: &[usize],
        out: &mut [f32],
    ) -> Result<(), EncodeError> {
        let fail = |reason: String| weights_error(&self.path, format!("tensor {name}: {reason}"));
        let entry = self
            .index
            .get(name)
            .ok_or_else(|| fail("not in the checkpoint".into()))?;
        if entry.dtype != "F32" {
            return Err(fail(format!("{}, where F32 is needed", entry.dtype)));
        }
        if entry.shape != shape {
            return Err(fail(format!(
                "shape {:?}, where {shape:?} is needed",
                entry.shape
            )));
        }
        if out.len() != shape.iter().product::<usize>() {
            return Err(fail(format!(
                "{} values asked for a shape of {shape:?}",
                out.len()
            )));
        }
        // The index was validated against the file's length, so this range is inside it (and
        // its length is the shape's, so `out` is filled exactly).
        let mut file = &self.file;
        file.seek(SeekFrom::Start(self.data_start + entry.data.start))
            .and_then(|_| file.read_exact(bytemuck::cast_slice_mut(out)))
            .map_err(EncodeError::io("reading a tensor of", &self.path))?;
        // The file holds little-endian values; a big-endian CPU swaps them in place.
        if cfg!(target_endian = "big") {
            for v in out.iter_mut() {
                *v = f32::from_bits(u32::from_le(v.to_bits()));
            }
        }
        Ok(())
    }
}

fn weights_error(path: &Path, reason: String) -> EncodeError {
    EncodeError::Weights {
        path: path.to_path_buf(),
        reason,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A safetensors file of `tensors` (name, dtype, shape, little-endian data), written as
    /// the format says: length, JSON header, data in header order.
    pub(crate) fn file_bytes(tensors: &[(&str, &str, &[usize], &[u8])]) -> Vec<u8> {
        let mut offset = 0;
        let mut entries = Vec::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            entries.push(format!(
                "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{offset},{}]}}",
                offset + bytes.len()
            ));
            offset += bytes.len();
            data.extend_from_slice(bytes);
        }
        let header = format!(
            "{{\"__metadata__\":{{\"format\":\"pt\"}},{}}}",
            entries.join(",")
        );
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header.as_bytes());
        file.extend_from_slice(&data);
        file
    }

    pub(crate) fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn open(bytes: &[u8]) -> (tempfile::TempDir, Result<Checkpoint, EncodeError>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, bytes).unwrap();
        let checkpoint = Checkpoint::open(&path);
        (dir, checkpoint)
    }

    #[test]
    fn tensors_are_read_by_name_with_their_values() {
        let matrix = [1.5f32, -2.0, 3.25, 0.0, f32::MIN_POSITIVE, -7.0];
        let bytes = file_bytes(&[
            ("ids", "I64", &[2], &[0; 16]),
            ("m", "F32", &[2, 3], &f32_bytes(&matrix)),
            ("v", "F32", &[1], &f32_bytes(&[9.0])),
        ]);
        let (_dir, checkpoint) = open(&bytes);
        let checkpoint = checkpoint.unwrap();
        assert_eq!(checkpoint.read("m", &[2, 3]).unwrap(), matrix);
        assert_eq!(checkpoint.read("v", &[1]).unwrap(), [9.0]);
        let mut part = [0f32; 8];
        checkpoint.read_into("m", &[2, 3], &mut part[1..7]).unwrap();
        assert_eq!(part[1..7], matrix);
        assert_eq!((part[0], part[7]), (0.0, 0.0));
    }

    /// A missing tensor, another dtype, another shape and a buffer of the wrong size are each
    /// refused, with the tensor's name in the message.
    #[test]
    fn a_tensor_that_does_not_fit_is_refused_by_name() {
        let bytes = file_bytes(&[
            ("ids", "I64", &[2], &[0; 16]),
            ("m", "F32", &[2, 3], &f32_bytes(&[0.0; 6])),
        ]);
        let (_dir, checkpoint) = open(&bytes);
        let checkpoint = checkpoint.unwrap();
        for (name, shape, len, why) in [
            ("absent", &[2usize, 3][..], 6, "not in the checkpoint"),
            ("ids", &[2][..], 2, "I64"),
            ("m", &[3, 2][..], 6, "shape [2, 3]"),
            ("m", &[6][..], 6, "shape [2, 3]"),
            ("m", &[2, 3][..], 5, "5 values"),
        ] {
            let mut out = vec![0f32; len];
            let err = checkpoint.read_into(name, shape, &mut out).unwrap_err();
            let message = err.to_string();
            assert!(matches!(err, EncodeError::Weights { .. }), "{message}");
            assert!(message.contains(&format!("tensor {name}:")), "{message}");
            assert!(message.contains(why), "{message}");
        }
    }

    /// Real ways a checkpoint is broken: cut short (a partial download), a header length past
    /// the end, a header that is not JSON or not an index, offsets that overlap or leave a
    /// gap, data after the last tensor. Each is refused at open, before any tensor is read.
    #[test]
    fn broken_files_are_refused_at_open() {
        let good = file_bytes(&[("m", "F32", &[2, 3], &f32_bytes(&[1.0; 6]))]);
        let header_len = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
        let with_header = |header: &str| {
            let mut file = (header.len() as u64).to_le_bytes().to_vec();
            file.extend_from_slice(header.as_bytes());
            file.extend_from_slice(&[0; 24]);
            file
        };
        let mut long_length = good.clone();
        long_length[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let mut trailing = good.clone();
        trailing.push(0);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("length only", good[..8].to_vec()),
            ("cut in the header", good[..8 + header_len / 2].to_vec()),
            ("cut in the data", good[..good.len() - 1].to_vec()),
            ("data after the last tensor", trailing),
            ("header length past the end", long_length),
            ("header not JSON", with_header("{not json")),
            ("header not an index", with_header("[1,2,3]")),
            (
                "a gap between tensors",
                with_header(
                    r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}"#,
                ),
            ),
            (
                "a size that is not the shape's",
                with_header(r#"{"a":{"dtype":"F32","shape":[5],"data_offsets":[0,24]}}"#),
            ),
        ];
        for (what, bytes) in cases {
            let (_dir, checkpoint) = open(&bytes);
            assert!(checkpoint.is_err(), "{what}: opened");
        }
        let (_dir, checkpoint) = open(&good);
        assert!(checkpoint.is_ok());
    }
}
