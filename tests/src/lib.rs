//! Helpers shared by memdb's integration tests: a seeded generator and the deterministic
//! workload of the crash tests, so the writer child and the verifying parent derive the same
//! bytes from a batch id.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use memdb::{BlobKind, EventTime, ItemDraft, ItemFields, Source};

/// SplitMix64: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo).max(1)
    }
}

/// One item of the crash workload: everything about it follows from `(batch, index)`.
pub fn crash_item(batch: u64, index: u64) -> (ItemDraft, Vec<(BlobKind, Vec<u8>)>) {
    let mut rng = Rng::new(batch.wrapping_mul(1_000_003) ^ index);
    let source = Source::ALL[(rng.next_u64() % 5) as usize];
    let mut fields = ItemFields::new(
        source,
        EventTime::utc(1_600_000_000_000 + (rng.next_u64() % 100_000_000_000) as i64),
    );
    fields.external_id = Some(crash_external_id(batch, index));
    let len = rng.range(0, 3000) as usize;
    fields.body = Some(
        (0..len)
            .map(|_| (b'a' + (rng.next_u64() % 26) as u8) as char)
            .collect(),
    );
    fields.tags = vec![format!("batch-{batch}")];
    let blobs = if rng.next_u64().is_multiple_of(4) {
        let n = rng.range(1, 40_000) as usize;
        vec![(
            BlobKind::Original,
            (0..n).map(|_| rng.next_u64() as u8).collect(),
        )]
    } else {
        Vec::new()
    };
    (
        ItemDraft {
            fields,
            supersedes: None,
        },
        blobs,
    )
}

pub fn crash_external_id(batch: u64, index: u64) -> String {
    format!("b{batch}-i{index}")
}

/// Items in crash batch `batch`.
pub fn crash_batch_len(batch: u64) -> u64 {
    Rng::new(batch ^ 0xABCD).range(1, 40)
}

/// Rewrites every segment of `store` (keeping every live entry): the compaction after which
/// nothing deleted may remain on disk.
pub fn compact_everything(store: &memdb::Store) -> memdb::CompactReport {
    store
        .compact(
            &memdb::CompactOptions {
                victims: memdb::Victims::All,
            },
            &mut memdb::KeepEverything,
        )
        .expect("compaction of every segment")
}
