//! The stored layout of a scrapbook page (SPEC.md §5.4): which item sits where, at what pixel
//! size, and at what size each of its graph nodes is drawn — what forgetting reads to decide
//! which nodes a smaller page can no longer show. The engine's `scrapbook` composes layouts and
//! re-exports these types; this module is only their bytes.
//!
//! Coordinates and sizes are those of the page at scale 1.0; a page forgotten to scale S shows
//! everything at S times these. Decoding treats the bytes as untrusted: every length is
//! checked and a [`FormatError`] names what was wrong and where; it never panics.

use crate::FormatError;
use crate::bytes::{PutLe, Reader};

/// The version byte this build writes and reads.
const LAYOUT_VERSION: u8 = 1;
/// Flags bit 0: the page sets salient nodes again as key facts; other bits are 0.
const FLAG_SALIENT_FACTS: u8 = 1;
const WHAT: &str = "page layout";
/// The fewest bytes a block takes (item, kind, four coordinates, text size, node count), and a
/// node (id, size): a count the bytes left cannot hold at these sizes is a lie, not an
/// allocation.
const MIN_BLOCK_BYTES: u64 = 8;
const MIN_NODE_BYTES: u64 = 2;

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

impl PageLayout {
    /// The layout's bytes (SPEC.md §5.4).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_u8(LAYOUT_VERSION);
        out.put_u8(if self.salient_facts {
            FLAG_SALIENT_FACTS
        } else {
            0
        });
        out.put_varint(u64::from(self.width));
        out.put_varint(u64::from(self.height));
        out.put_varint(self.blocks.len() as u64);
        for block in &self.blocks {
            out.put_varint(block.item);
            out.put_u8(block.kind as u8);
            for v in block.rect {
                out.put_varint(u64::from(v));
            }
            out.put_u8(block.text_px);
            out.put_varint(block.nodes.len() as u64);
            for &(node, px) in &block.nodes {
                out.put_varint(node);
                out.put_u8(px);
            }
        }
        out
    }

    /// Reads a layout; any malformation is a format error naming its place.
    pub fn decode(bytes: &[u8]) -> Result<PageLayout, FormatError> {
        let mut r = Reader::new(WHAT, bytes);
        FormatError::check_version(WHAT, r.u8()?, LAYOUT_VERSION)?;
        let at = r.position();
        let salient_facts = match r.u8()? {
            0 => false,
            FLAG_SALIENT_FACTS => true,
            other => return Err(r.invalid(at, format!("unknown flags {other:#x}"))),
        };
        let width = r.varint_u32("width")?;
        let height = r.varint_u32("height")?;
        let count = r.varint_count("block count", MIN_BLOCK_BYTES)?;
        let mut blocks = Vec::with_capacity(count);
        for _ in 0..count {
            let item = r.varint()?;
            let at = r.position();
            let kind = match r.u8()? {
                1 => BlockKind::Photo,
                2 => BlockKind::Text,
                other => return Err(r.invalid(at, format!("unknown block kind {other}"))),
            };
            let rect = [
                r.varint_u32("x")?,
                r.varint_u32("y")?,
                r.varint_u32("w")?,
                r.varint_u32("h")?,
            ];
            let text_px = r.u8()?;
            let n = r.varint_count("node count", MIN_NODE_BYTES)?;
            let mut nodes = Vec::with_capacity(n);
            for _ in 0..n {
                nodes.push((r.varint()?, r.u8()?));
            }
            blocks.push(Block {
                item,
                kind,
                rect,
                text_px,
                nodes,
            });
        }
        if r.remaining() != 0 {
            let left = r.remaining();
            return Err(r.invalid(r.position(), format!("{left} trailing bytes")));
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
