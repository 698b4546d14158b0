//! The op log's packed runs (SPEC.md §5, table `op_batches`): the ops one commit logged with
//! consecutive sequence numbers, packed into one catalog row instead of a row per op.
//!
//! Bytes: per op, its code (u8) then its item id as unsigned LEB128 (7 bits per byte, low
//! groups first, the high bit set on every byte but the last, at most 10 bytes). The row's key
//! is the first op's sequence number; op `i` has sequence `key + i`.
//!
//! Invariant: [`decode`] accepts exactly what [`encode`] writes for some ops — no id longer than
//! 10 bytes or above `u64::MAX`, no trailing bytes of a cut id, no redundant zero groups — so a
//! row reads back as one list of ops only.

use crate::error::FormatError;

const WHAT: &str = "op batch";

/// Appends `ops` (code, item id) to `out`.
pub fn encode(ops: impl IntoIterator<Item = (u8, u64)>, out: &mut Vec<u8>) {
    for (code, mut item) in ops {
        out.push(code);
        while item >= 0x80 {
            out.push((item as u8 & 0x7f) | 0x80);
            item >>= 7;
        }
        out.push(item as u8);
    }
}

/// The ops (code, item id) of a packed run, in order.
pub fn decode(packed: &[u8]) -> Result<Vec<(u8, u64)>, FormatError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < packed.len() {
        let code = packed[at];
        let start = at + 1;
        at = start;
        let mut item = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = packed.get(at) else {
                return Err(FormatError::Truncated {
                    what: WHAT,
                    offset: start as u64,
                    need: (at - start + 1) as u64,
                    have: (packed.len() - start) as u64,
                });
            };
            at += 1;
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may hold only the top bit of a u64.
            if shift == 63 && bits > 1 {
                return Err(invalid(start, "item id above u64::MAX"));
            }
            item |= bits << shift;
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 {
                    return Err(invalid(start, "item id with a redundant zero group"));
                }
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(invalid(start, "item id longer than 10 bytes"));
            }
        }
        out.push((code, item));
    }
    Ok(out)
}

fn invalid(offset: usize, reason: &str) -> FormatError {
    FormatError::Invalid {
        what: WHAT,
        offset: offset as u64,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_decodes_every_width() {
        let ops: Vec<(u8, u64)> = [0, 1, 127, 128, 16_383, 16_384, u64::MAX / 2, u64::MAX]
            .iter()
            .enumerate()
            .map(|(i, id)| (i as u8, *id))
            .collect();
        let mut bytes = Vec::new();
        encode(ops.iter().copied(), &mut bytes);
        assert_eq!(decode(&bytes).unwrap(), ops);
        assert_eq!(decode(&[]).unwrap(), []);
    }

    #[test]
    fn refuses_bytes_no_encoding_writes() {
        for (bytes, why) in [
            (&[1u8][..], "an op with no id"),
            (&[1, 0x80][..], "an id cut after a continued byte"),
            (&[1, 0x81, 0x00][..], "a redundant zero group"),
            (
                &[
                    1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
                ][..],
                "65 bits",
            ),
            (
                &[
                    1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
                ][..],
                "11 bytes",
            ),
        ] {
            assert!(decode(bytes).is_err(), "{why}");
        }
    }
}
