//! The stored layout of a page (SPEC.md §5.4): which item sits where, at what pixel size, and
//! at what size each of its graph nodes is drawn — what forgetting reads to decide which nodes
//! a smaller page can no longer show.
//!
//! Coordinates and sizes are those of the page at scale 1.0; a page forgotten to scale S shows
//! everything at S times these. Decoding treats the bytes as untrusted: every length is
//! checked and an error names what was wrong; it never panics.

use memdb_formats::FormatError;

/// Layout bytes are a format of their own (SPEC.md §5.4): their errors are format errors.
type Result<T> = std::result::Result<T, FormatError>;

const LAYOUT_VERSION: u8 = 1;

/// What a block of a page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// A photo, at `rect`'s size.
    Photo = 1,
    /// A record's text: headline, key facts and body.
    Text = 2,
}

/// One item's place on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The item shown.
    pub item: u64,
    /// Photo or text.
    pub kind: BlockKind,
    /// Left, top, width, height in pixels at scale 1.0.
    pub rect: [u32; 4],
    /// The smallest text size in the block (its body text), in pixels; 0 for a photo.
    pub text_px: u8,
    /// The item's graph nodes and the size each is drawn at (the largest, where it appears
    /// more than once).
    pub nodes: Vec<(u64, u8)>,
}

/// The layout of one page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PageLayout {
    /// Width in pixels at scale 1.0.
    pub width: u32,
    /// Height in pixels at scale 1.0 (all parts together).
    pub height: u32,
    /// Whether the page sets salient nodes again as key facts (`PageOptions::salient_facts`).
    pub salient_facts: bool,
    /// The blocks, top to bottom.
    pub blocks: Vec<Block>,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn fail(&self, what: &str) -> FormatError {
        FormatError::Invalid {
            what: "page layout",
            offset: self.at as u64,
            reason: what.to_owned(),
        }
    }

    fn byte(&mut self, what: &str) -> Result<u8> {
        let b = *self.bytes.get(self.at).ok_or_else(|| self.fail(what))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self, what: &str) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte(what)?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if shift == 63 && b > 1 {
                    return Err(self.fail(&format!("{what} overflows 64 bits")));
                }
                return Ok(v);
            }
        }
        Err(self.fail(&format!("{what} is longer than 10 bytes")))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| self.fail(&format!("{what} {v} is over 32 bits")))
    }
}

impl PageLayout {
    /// The layout's bytes (SPEC.md §5.4).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![LAYOUT_VERSION, u8::from(self.salient_facts)];
        put_varint(&mut out, u64::from(self.width));
        put_varint(&mut out, u64::from(self.height));
        put_varint(&mut out, self.blocks.len() as u64);
        for block in &self.blocks {
            put_varint(&mut out, block.item);
            out.push(block.kind as u8);
            for v in block.rect {
                put_varint(&mut out, u64::from(v));
            }
            out.push(block.text_px);
            put_varint(&mut out, block.nodes.len() as u64);
            for &(node, px) in &block.nodes {
                put_varint(&mut out, node);
                out.push(px);
            }
        }
        out
    }

    /// Reads a layout; any malformation is a format error naming its place.
    pub fn decode(bytes: &[u8]) -> Result<PageLayout> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.byte("version")?;
        if version != LAYOUT_VERSION {
            return Err(r.fail(&format!("unknown version {version}")));
        }
        let salient_facts = match r.byte("flags")? {
            0 => false,
            1 => true,
            other => return Err(r.fail(&format!("unknown flags {other:#x}"))),
        };
        let width = r.u32("width")?;
        let height = r.u32("height")?;
        let count = r.varint("block count")?;
        // Every block takes at least 8 bytes: a count beyond that is a lie, not an allocation.
        if count > (bytes.len() as u64) / 8 {
            return Err(r.fail(&format!("block count {count} exceeds the bytes")));
        }
        let mut blocks = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let item = r.varint("item")?;
            let kind = match r.byte("block kind")? {
                1 => BlockKind::Photo,
                2 => BlockKind::Text,
                other => return Err(r.fail(&format!("unknown block kind {other}"))),
            };
            let rect = [r.u32("x")?, r.u32("y")?, r.u32("w")?, r.u32("h")?];
            let text_px = r.byte("text size")?;
            let n = r.varint("node count")?;
            if n > (bytes.len() as u64) / 2 {
                return Err(r.fail(&format!("node count {n} exceeds the bytes")));
            }
            let mut nodes = Vec::with_capacity(n as usize);
            for _ in 0..n {
                nodes.push((r.varint("node")?, r.byte("node size")?));
            }
            blocks.push(Block {
                item,
                kind,
                rect,
                text_px,
                nodes,
            });
        }
        if r.at != bytes.len() {
            return Err(r.fail("trailing bytes"));
        }
        Ok(PageLayout {
            width,
            height,
            salient_facts,
            blocks,
        })
    }

    /// The items on the page, in block order, each once.
    pub fn items(&self) -> Vec<u64> {
        let mut items: Vec<u64> = Vec::new();
        for b in &self.blocks {
            if !items.contains(&b.item) {
                items.push(b.item);
            }
        }
        items
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sample() -> PageLayout {
        PageLayout {
            width: 2096,
            height: 3000,
            salient_facts: true,
            blocks: vec![
                Block {
                    item: 7,
                    kind: BlockKind::Photo,
                    rect: [24, 80, 1024, 768],
                    text_px: 0,
                    nodes: vec![],
                },
                Block {
                    item: u64::MAX,
                    kind: BlockKind::Text,
                    rect: [24, 900, 2048, 120],
                    text_px: 14,
                    nodes: vec![(1, 22), (300, 14), (u64::MAX, 14)],
                },
            ],
        }
    }

    /// Golden bytes: the layout encoding of SPEC.md §5.4 must never drift silently.
    #[test]
    fn encoding_is_golden_and_round_trips() {
        let bytes = sample().encode();
        let golden = "0101b010b8170207011850800880060000\
                      ffffffffffffffffff01021884078010780e030116ac020effffffffffffffffff010e";
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, golden);
        assert_eq!(PageLayout::decode(&bytes).unwrap(), sample());
    }

    #[test]
    fn malformed_layouts_are_errors() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(PageLayout::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(PageLayout::decode(&extra).is_err());
        assert!(PageLayout::decode(&[2]).is_err());
        assert!(PageLayout::decode(&[1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(PageLayout::decode(&[1, 2, 1, 1, 0]).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = PageLayout::decode(&bytes);
        }

        #[test]
        fn layouts_round_trip(
            width in any::<u32>(),
            height in any::<u32>(),
            salient_facts in any::<bool>(),
            blocks in proptest::collection::vec(
                (any::<u64>(), any::<bool>(), any::<[u32; 4]>(), any::<u8>(),
                 proptest::collection::vec((any::<u64>(), any::<u8>()), 0..5)),
                0..6),
        ) {
            let layout = PageLayout {
                width,
                height,
                salient_facts,
                blocks: blocks.into_iter().map(|(item, photo, rect, text_px, nodes)| Block {
                    item,
                    kind: if photo { BlockKind::Photo } else { BlockKind::Text },
                    rect,
                    text_px,
                    nodes,
                }).collect(),
            };
            prop_assert_eq!(PageLayout::decode(&layout.encode()).unwrap(), layout);
        }
    }
}
