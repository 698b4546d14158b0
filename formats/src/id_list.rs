//! Id lists of the graph's catalog rows (SPEC.md §5.3: `graph.paths`, `graph.node_paths`,
//! `graph.items`): a path's nodes and items, a node's paths, an item's nodes.
//!
//! Bytes: the count as unsigned LEB128, then each id's difference from the id before it (the
//! first id's from 0), taken modulo 2⁶⁴ as a signed 64-bit value, zigzag-mapped
//! (`(d << 1) ^ (d >> 63)`) and written as unsigned LEB128 (7 bits per byte, low groups first,
//! the high bit set on every byte but the last). Ids are handed out in increasing order, so a
//! list in order of first mention or a sorted set takes one or two bytes per id where the fixed
//! 8-byte lists of format 12 took eight.
//!
//! Invariant: [`decode`] accepts exactly what [`encode`] writes for some list — no varint longer
//! than 10 bytes or above `u64::MAX`, no redundant zero groups, no count the bytes cannot hold
//! (refused before anything is allocated), nothing after the last id — so every row reads back
//! as one list only and re-encodes to its own bytes.

use crate::error::FormatError;

/// Appends `ids` to `out`.
pub fn encode(ids: &[u64], out: &mut Vec<u8>) {
    put_varint(out, ids.len() as u64);
    let mut previous = 0u64;
    for &id in ids {
        let delta = id.wrapping_sub(previous) as i64;
        put_varint(out, ((delta << 1) ^ (delta >> 63)) as u64);
        previous = id;
    }
}

/// `ids` encoded (see [`encode`]).
pub fn to_bytes(ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + ids.len() * 2);
    encode(ids, &mut out);
    out
}

/// The ids of a list written by [`encode`]; `what` names the row's column in errors.
pub fn decode(what: &'static str, bytes: &[u8]) -> Result<Vec<u64>, FormatError> {
    let mut at = 0usize;
    let count = varint(what, bytes, &mut at)?;
    // Every id takes at least one byte.
    let left = (bytes.len() - at) as u64;
    if count > left {
        return Err(FormatError::Invalid {
            what,
            offset: 0,
            reason: format!("{count} ids in {left} bytes"),
        });
    }
    let mut ids = Vec::with_capacity(count as usize);
    let mut previous = 0u64;
    for _ in 0..count {
        let zigzag = varint(what, bytes, &mut at)?;
        let delta = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
        previous = previous.wrapping_add(delta as u64);
        ids.push(previous);
    }
    if at != bytes.len() {
        return Err(FormatError::Invalid {
            what,
            offset: at as u64,
            reason: format!("{} bytes after the last id", bytes.len() - at),
        });
    }
    Ok(ids)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One canonical LEB128 varint at `*at`, advancing it.
fn varint(what: &'static str, bytes: &[u8], at: &mut usize) -> Result<u64, FormatError> {
    let start = *at;
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = bytes.get(*at) else {
            return Err(FormatError::Truncated {
                what,
                offset: *at as u64,
                need: 1,
                have: 0,
            });
        };
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            let reason = if shift == 63 && byte > 1 {
                "varint overflows 64 bits"
            } else if byte == 0 && shift > 0 {
                "varint has a redundant zero group"
            } else {
                return Ok(value);
            };
            return Err(FormatError::Invalid {
                what,
                offset: start as u64,
                reason: reason.to_owned(),
            });
        }
    }
    Err(FormatError::Invalid {
        what,
        offset: start as u64,
        reason: "varint is longer than 10 bytes".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip_in_any_order() {
        let lists: [&[u64]; 6] = [
            &[],
            &[0],
            &[5, 6, 9, 4000],
            &[9, 2, 7, 1],
            &[u64::MAX, 0, u64::MAX, 1 << 63],
            &[3, 3, 3],
        ];
        for ids in lists {
            let bytes = to_bytes(ids);
            assert_eq!(decode("t", &bytes).unwrap(), ids, "{bytes:02x?}");
        }
    }

    #[test]
    fn small_increasing_ids_take_a_byte_each() {
        // Count 4, then zigzag deltas 2·5, 2·1, 2·3, 2·61.
        assert_eq!(to_bytes(&[5, 6, 9, 70]), [4, 10, 2, 6, 122]);
        // A step back is odd: 9 → 7 is −2 → 3.
        assert_eq!(to_bytes(&[9, 7]), [2, 18, 3]);
        // 64 is the first delta of two bytes (zigzag 128).
        assert_eq!(to_bytes(&[64]), [1, 0x80, 0x01]);
    }

    #[test]
    fn bad_bytes_are_typed_errors() {
        let bad: [&[u8]; 8] = [
            &[],                 // no count
            &[2, 10],            // one id of two
            &[1, 10, 0],         // a byte after the last id
            &[1, 0x80],          // a cut varint
            &[1, 0x80, 0x00],    // a redundant zero group
            &[0x80, 0x00],       // a redundant zero group in the count
            &[0xff, 0xff, 0x03], // a count the bytes cannot hold
            &[
                1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
            ], // over 64 bits
        ];
        for bytes in bad {
            assert!(decode("t", bytes).is_err(), "{bytes:02x?}");
        }
        let eleven = [0x80u8; 11];
        assert!(decode("t", &eleven).is_err());
        // The largest value is ten bytes, the last holding bit 63 only.
        let mut max = vec![1u8];
        max.extend([0xff; 9]);
        max.push(0x01);
        // Zigzag 2⁶⁴ − 1 is the delta −2⁶³: the id 2⁶³.
        assert_eq!(decode("t", &max).unwrap(), [1u64 << 63]);
    }
}
