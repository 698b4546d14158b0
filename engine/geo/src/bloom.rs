//! The name screen's Bloom filters: whether a folded key may be a place name the mention rule
//! takes, answered without decoding the gazetteer.
//!
//! Built by `build.rs` from the same data and the same rule thresholds (this file is compiled
//! into the build script too, so both sides hash alike), embedded in the binary, read in place.
//! A filter never answers "no" for a key that was put in it; it answers "yes" for a key that was
//! not with the probability its bits per key set (see [`SCREEN_FILTERS`]). A "yes" only costs
//! decoding the gazetteer, so the screen is exact where it matters: a text it clears holds no
//! place name.

/// Population a one-word name needs to be taken without a cue.
pub(crate) const UNCUED_ONE_WORD: u64 = 100_000;
/// Population a longer name needs to be taken without a cue.
pub(crate) const UNCUED_LONGER: u64 = 15_000;

/// The three filters, in file order, with their bits per key and hash count: names a cue may
/// take (every name and alternate that is not also a common English word), common English
/// words that are a place's one-word name (taken when cued and capitalised), and the names taken
/// without a cue (a place's own name, large enough). The uncued filter is asked of every run of
/// words of a question, so it is the tightest.
pub(crate) const SCREEN_FILTERS: [(&str, u32, u32); 3] =
    [("cued", 15, 10), ("common", 15, 10), ("uncued", 20, 14)];

/// One filter over the bytes of the embedded screen.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bloom<'a> {
    bits: &'a [u8],
    hashes: u32,
}

impl<'a> Bloom<'a> {
    /// Whether `key` may have been put in the filter (never `false` for one that was).
    pub(crate) fn contains(&self, key: &str) -> bool {
        let bits = self.bits.len() as u64 * 8;
        if bits == 0 {
            return false;
        }
        let (h1, h2) = hash_pair(key);
        (0..u64::from(self.hashes)).all(|i| {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) % bits;
            self.bits
                .get((bit / 8) as usize)
                .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
        })
    }

    /// The filters of a screen file (`SCREEN_FILTERS`' order): per filter a little-endian u32
    /// hash count, a u32 byte length, then the bits. `None` when the bytes are not that shape.
    pub(crate) fn read_all(mut bytes: &'a [u8]) -> Option<Vec<Bloom<'a>>> {
        let mut out = Vec::new();
        let word = |bytes: &mut &'a [u8]| -> Option<u32> {
            let (head, rest) = bytes.split_first_chunk::<4>()?;
            *bytes = rest;
            Some(u32::from_le_bytes(*head))
        };
        for _ in SCREEN_FILTERS {
            let hashes = word(&mut bytes)?;
            let len = usize::try_from(word(&mut bytes)?).ok()?;
            let (bits, rest) = bytes.split_at_checked(len)?;
            bytes = rest;
            out.push(Bloom { bits, hashes });
        }
        bytes.is_empty().then_some(out)
    }
}

/// The filter bytes of `keys` at `bits_per_key` with `hashes` hashes, in [`Bloom::read_all`]'s
/// layout (hash count, length, bits).
#[allow(dead_code)] // The build script's half.
pub(crate) fn write(keys: &[String], bits_per_key: u32, hashes: u32, out: &mut Vec<u8>) {
    let len = (keys.len() * bits_per_key as usize).div_ceil(8).max(1);
    let mut bits = vec![0u8; len];
    let total = len as u64 * 8;
    for key in keys {
        let (h1, h2) = hash_pair(key);
        for i in 0..u64::from(hashes) {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) % total;
            bits[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    out.extend_from_slice(&hashes.to_le_bytes());
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&bits);
}

/// Two independent 64-bit hashes of `key` (FNV-1a, then two SplitMix64 finalisers), the second
/// odd, for double hashing. Fixed here, never `std`'s randomised hasher: the filter is built at
/// compile time and read at run time.
fn hash_pair(key: &str) -> (u64, u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (mix(h), mix(h ^ 0x9e37_79b9_7f4a_7c15) | 1)
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
