//! The segment file format: fixed-size pages holding checksummed entries (SPEC.md §3).
//!
//! ```text
//! SEGMENT := HEADER_PAGE ENTRY* [FOOTER_ENTRY TRAILER_PAGE]      (the bracket: sealed only)
//! ENTRY   := ENTRY_HEADER(64 B) PAYLOAD ZERO_PAD-to-page-boundary
//! ```
//! Every entry starts on a page boundary, so a page belongs to exactly one structure and every
//! byte of the file is covered by a CRC32C: the header page by its own, an entry's header by its
//! header CRC and its payload by the payload CRC, the footer like any entry, the trailer by its
//! own. This module encodes and decodes those structures from byte slices; the engine owns the
//! files, the fsync order and the mmap.
//!
//! Invariants: all integers are little-endian; decoders never panic and report the offset of
//! the first byte that is wrong; a writer never emits a structure its decoder rejects.

use crate::FormatError;
use crate::bytes::{PutLe, Reader, crc32c};

/// Magic at byte 0 of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"MEMDBSEG";
/// Magic at byte 0 of every entry header.
pub const ENTRY_MAGIC: [u8; 4] = *b"MDBE";
/// Magic at byte 0 of the trailer page of a sealed segment.
pub const TRAILER_MAGIC: [u8; 8] = *b"MEMDBEND";
/// Segment format version this build writes. Version 2 (store format 20) adds what a blob entry
/// belongs to (its id, kind and owning item) and, in an encrypted store, the segment's key salt
/// on its header page, so a store can be rebuilt from its segments alone; version 1 is still
/// read (its entries carry no tag).
pub const FORMAT_VERSION: u32 = 2;
/// The oldest segment format this build reads.
pub const OLDEST_FORMAT_VERSION: u32 = 1;
/// Where an encrypted segment's key salt sits on its header page (format 2), right after the
/// 64 header bytes; covered by the page's tag (SPEC.md §3.7), zero in a plain segment.
pub const KEY_SALT_OFFSET: usize = SEGMENT_HEADER_BYTES;
/// Bytes of a segment's key salt.
pub const KEY_SALT_BYTES: usize = 32;
/// Page size of format version 1. Every structure starts on a page boundary.
pub const PAGE_SIZE: u32 = 4096;
/// `PAGE_SIZE` as a usize, for slicing.
pub const PAGE: usize = PAGE_SIZE as usize;

/// Bytes of the segment header proper (the rest of page 0 is zero).
pub const SEGMENT_HEADER_BYTES: usize = 64;
/// Bytes of an entry header; the payload follows immediately, so it is 64-byte aligned.
pub const ENTRY_HEADER_BYTES: usize = 64;
/// Bytes of the trailer proper (the rest of the trailer page is zero).
pub const TRAILER_BYTES: usize = 64;
/// Bytes of one footer index record.
pub const FOOTER_RECORD_BYTES: usize = 24;

// Segment header field offsets (SPEC.md §3.2), each built from the one before.
const SH_MAGIC: usize = 0;
const SH_VERSION: usize = SH_MAGIC + 8;
const SH_PAGE_SIZE: usize = SH_VERSION + 4;
const SH_SEGMENT_ID: usize = SH_PAGE_SIZE + 4;
const SH_CREATED: usize = SH_SEGMENT_ID + 8;
const SH_PAGE_RESERVE: usize = SH_CREATED + 8;
const SH_CIPHER: usize = SH_PAGE_RESERVE + 2;
const SH_FLAGS: usize = SH_CIPHER + 1;
const SH_RESERVED: usize = SH_FLAGS + 1;
const SH_CRC: usize = SEGMENT_HEADER_BYTES - 4;

// Entry header field offsets (SPEC.md §3.3).
const EH_MAGIC: usize = 0;
const EH_KIND: usize = EH_MAGIC + 4;
// Format 2: a blob entry's kind (the `blobs` table's code); `flags`, always 0, in format 1.
const EH_BLOB_KIND: usize = EH_KIND + 1;
const EH_RESERVED0: usize = EH_BLOB_KIND + 1;
const EH_PAYLOAD_LEN: usize = EH_RESERVED0 + 2;
const EH_PAYLOAD_CRC: usize = EH_PAYLOAD_LEN + 8;
const EH_RESERVED1: usize = EH_PAYLOAD_CRC + 4;
const EH_SEGMENT_ID: usize = EH_RESERVED1 + 4;
// Format 2: a blob entry's id and owning item (0: none) open what was `reserved2`.
const EH_BLOB_ID: usize = EH_SEGMENT_ID + 8;
const EH_BLOB_OWNER: usize = EH_BLOB_ID + 8;
const EH_RESERVED2: usize = EH_BLOB_OWNER + 8;
const EH_CRC: usize = ENTRY_HEADER_BYTES - 4;

// Trailer field offsets (SPEC.md §3.5).
const TR_MAGIC: usize = 0;
const TR_SEGMENT_ID: usize = TR_MAGIC + 8;
const TR_FOOTER_PAGE: usize = TR_SEGMENT_ID + 8;
const TR_TOTAL_PAGES: usize = TR_FOOTER_PAGE + 8;
const TR_ENTRY_COUNT: usize = TR_TOTAL_PAGES + 8;
const TR_RESERVED: usize = TR_ENTRY_COUNT + 4;
const TR_CRC: usize = TRAILER_BYTES - 4;

/// What an entry holds. The byte values are part of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EntryKind {
    /// Framed item records (SPEC.md §4.1).
    ItemBlock = 1,
    /// One opaque blob (an original photo, a page image, an attachment).
    Blob = 2,
    /// The index of a sealed segment (SPEC.md §3.4).
    Footer = 255,
}

impl EntryKind {
    /// The kind stored as `code`, if this version knows it.
    pub fn from_code(code: u8) -> Option<EntryKind> {
        match code {
            1 => Some(EntryKind::ItemBlock),
            2 => Some(EntryKind::Blob),
            255 => Some(EntryKind::Footer),
            _ => None,
        }
    }

    /// Lowercase name for reports.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::ItemBlock => "item block",
            EntryKind::Blob => "blob",
            EntryKind::Footer => "footer",
        }
    }
}

/// Page 0 of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The segment's id; the file is named `<id as 16 hex digits>.seg`.
    pub segment_id: u64,
    /// When the segment was created (UTC ms).
    pub created_unix_ms: i64,
    /// Whether the file's pages are sealed (SPEC.md §3.7: cipher 1, XChaCha20-Poly1305, with
    /// a 40-byte tail after every page) rather than stored as they are (cipher 0).
    pub sealed: bool,
    /// The salt the segment's key derives from (SPEC.md §3.7), on the header page of an
    /// encrypted segment of format 2; `None` in a plain segment and in one of format 1.
    pub key_salt: Option<[u8; KEY_SALT_BYTES]>,
}

/// The bytes after every page of a sealed segment: the nonce (24) and tag (16).
pub const SEALED_PAGE_TAIL: u16 = 40;

impl SegmentHeader {
    /// The whole header page.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PAGE);
        out.extend_from_slice(&SEGMENT_MAGIC);
        out.put_u32(FORMAT_VERSION);
        out.put_u32(PAGE_SIZE);
        out.put_u64(self.segment_id);
        out.put_i64(self.created_unix_ms);
        // page_reserve and cipher: 40 and 1 (XChaCha20-Poly1305) when sealed, else 0 and 0.
        out.put_u16(if self.sealed { SEALED_PAGE_TAIL } else { 0 });
        out.put_u8(u8::from(self.sealed));
        out.put_u8(0); // flags
        out.resize(SH_CRC, 0);
        let crc = crc32c(&out[..SH_CRC]);
        out.put_u32(crc);
        if self.sealed
            && let Some(salt) = &self.key_salt
        {
            out.extend_from_slice(salt);
        }
        out.resize(PAGE, 0);
        out
    }

    /// Decodes page 0: its first 64 bytes, and in a sealed segment of format 2 the key salt
    /// after them (when `bytes` holds it; an all-zero salt reads as none). The rest of the
    /// page's padding is the caller's to check ([`SegmentHeader::padding_start`]).
    pub fn decode(bytes: &[u8]) -> Result<SegmentHeader, FormatError> {
        const WHAT: &str = "segment header";
        let mut r = Reader::new(WHAT, bytes);
        let head = r.take(SEGMENT_HEADER_BYTES)?;
        if head[SH_MAGIC..SH_VERSION] != SEGMENT_MAGIC {
            return Err(FormatError::BadMagic {
                what: WHAT,
                offset: 0,
                found: head[..8].to_vec(),
            });
        }
        check_crc(WHAT, head, SH_CRC, 0)?;
        let mut f = Reader::new(WHAT, &head[SH_VERSION..]);
        let version = f.u32()?;
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            FormatError::check_version(WHAT, version, FORMAT_VERSION)?;
        }
        let page_size = f.u32()?;
        let segment_id = f.u64()?;
        let created_unix_ms = f.i64()?;
        let page_reserve = f.u16()?;
        let cipher = f.u8()?;
        let flags = f.u8()?;
        let invalid = |offset: usize, reason: String| FormatError::Invalid {
            what: WHAT,
            offset: offset as u64,
            reason,
        };
        if page_size != PAGE_SIZE {
            return Err(invalid(
                SH_PAGE_SIZE,
                format!("page size {page_size}, version 1 uses {PAGE_SIZE}"),
            ));
        }
        let sealed = match (page_reserve, cipher) {
            (0, 0) => false,
            (SEALED_PAGE_TAIL, 1) => true,
            _ => {
                return Err(invalid(
                    SH_PAGE_RESERVE,
                    format!(
                        "page reserve {page_reserve} / cipher {cipher}: this build knows 0 / 0 (plain) and 40 / 1 (XChaCha20-Poly1305)"
                    ),
                ));
            }
        };
        if flags != 0 || head[SH_RESERVED..SH_CRC].iter().any(|&b| b != 0) {
            return Err(invalid(
                SH_FLAGS,
                "unknown flags or non-zero reserved bytes".into(),
            ));
        }
        let key_salt = if sealed && version >= 2 {
            bytes
                .get(KEY_SALT_OFFSET..KEY_SALT_OFFSET + KEY_SALT_BYTES)
                .and_then(|salt| <[u8; KEY_SALT_BYTES]>::try_from(salt).ok())
                .filter(|salt| salt.iter().any(|&b| b != 0))
        } else {
            None
        };
        Ok(SegmentHeader {
            segment_id,
            created_unix_ms,
            sealed,
            key_salt,
        })
    }

    /// Where the zero padding of the header page starts: after the key salt when the header
    /// carries one, else right after the 64 header bytes.
    pub fn padding_start(&self) -> usize {
        if self.key_salt.is_some() {
            KEY_SALT_OFFSET + KEY_SALT_BYTES
        } else {
            SEGMENT_HEADER_BYTES
        }
    }
}

/// What a blob entry of segment format 2 says it is: enough to file it again, and tie it to its
/// item, with no catalog (a rebuild).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobTag {
    /// The blob's id (never 0: blob ids start at 1; a header with id 0 carries no tag).
    pub id: u64,
    /// The blob's kind, as the catalog's `blobs` table codes it.
    pub kind: u8,
    /// The item that owns the blob, or 0 (a page part, a vector block, an op note).
    pub owner: u64,
}

/// The 64-byte header at the start of every entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// What the payload holds.
    pub kind: EntryKind,
    /// Payload length in bytes (the entry spans `pages_for(payload_len)` pages).
    pub payload_len: u64,
    /// CRC32C of the payload.
    pub payload_crc: u32,
    /// Id of the segment the entry was written into (catches misplaced pages).
    pub segment_id: u64,
    /// A blob entry's id, kind and owner (format 2); `None` for other entries and for blob
    /// entries written by format 1.
    pub blob: Option<BlobTag>,
}

impl EntryHeader {
    /// Header for `payload` of `kind` in segment `segment_id`.
    pub fn for_payload(kind: EntryKind, segment_id: u64, payload: &[u8]) -> EntryHeader {
        EntryHeader {
            kind,
            payload_len: payload.len() as u64,
            payload_crc: crc32c(payload),
            segment_id,
            blob: None,
        }
    }

    /// Header for the payload of blob `tag` in segment `segment_id`.
    pub fn for_blob(segment_id: u64, tag: BlobTag, payload: &[u8]) -> EntryHeader {
        EntryHeader {
            blob: Some(tag),
            ..EntryHeader::for_payload(EntryKind::Blob, segment_id, payload)
        }
    }

    /// The 64 header bytes.
    pub fn encode(&self) -> [u8; ENTRY_HEADER_BYTES] {
        let mut out = Vec::with_capacity(ENTRY_HEADER_BYTES);
        // Only a blob entry carries a tag: a writer never emits what its decoder rejects.
        let tag = self.blob.filter(|_| self.kind == EntryKind::Blob);
        out.extend_from_slice(&ENTRY_MAGIC);
        out.put_u8(self.kind as u8);
        out.put_u8(tag.map_or(0, |t| t.kind));
        out.put_u16(0);
        out.put_u64(self.payload_len);
        out.put_u32(self.payload_crc);
        out.put_u32(0);
        out.put_u64(self.segment_id);
        out.put_u64(tag.map_or(0, |t| t.id));
        out.put_u64(tag.map_or(0, |t| t.owner));
        out.resize(EH_CRC, 0);
        let crc = crc32c(&out);
        out.put_u32(crc);
        let mut header = [0u8; ENTRY_HEADER_BYTES];
        header.copy_from_slice(&out);
        header
    }

    /// Decodes and checks an entry header; `offset` is its file offset, used in errors.
    pub fn decode(bytes: &[u8], offset: u64) -> Result<EntryHeader, FormatError> {
        const WHAT: &str = "entry header";
        let head = Reader::new(WHAT, bytes)
            .take(ENTRY_HEADER_BYTES)
            .map_err(|e| at(e, offset))?;
        if head[..4] != ENTRY_MAGIC {
            return Err(FormatError::BadMagic {
                what: WHAT,
                offset,
                found: head[..4].to_vec(),
            });
        }
        check_crc(WHAT, head, EH_CRC, offset)?;
        let mut f = Reader::new(WHAT, &head[EH_KIND..]);
        let kind_code = f.u8()?;
        let blob_kind = f.u8()?;
        let reserved0 = f.u16()?;
        let payload_len = f.u64()?;
        let payload_crc = f.u32()?;
        let reserved1 = f.u32()?;
        let segment_id = f.u64()?;
        let blob_id = f.u64()?;
        let blob_owner = f.u64()?;
        let invalid = |field: usize, reason: String| FormatError::Invalid {
            what: WHAT,
            offset: offset.saturating_add(field as u64),
            reason,
        };
        let kind = EntryKind::from_code(kind_code)
            .ok_or_else(|| invalid(EH_KIND, format!("unknown entry kind {kind_code}")))?;
        if reserved0 != 0 || reserved1 != 0 || head[EH_RESERVED2..EH_CRC].iter().any(|&b| b != 0) {
            return Err(invalid(EH_RESERVED0, "non-zero reserved bytes".into()));
        }
        let blob = match kind {
            EntryKind::Blob if blob_id != 0 => Some(BlobTag {
                id: blob_id,
                kind: blob_kind,
                owner: blob_owner,
            }),
            _ if blob_kind != 0 || blob_id != 0 || blob_owner != 0 => {
                return Err(invalid(
                    EH_BLOB_KIND,
                    format!("a {} entry with a blob's tag", kind.name()),
                ));
            }
            _ => None,
        };
        Ok(EntryHeader {
            kind,
            payload_len,
            payload_crc,
            segment_id,
            blob,
        })
    }

    /// Pages the whole entry (header, payload, padding) occupies.
    pub fn pages(&self) -> u64 {
        pages_for(self.payload_len)
    }

    /// Checks `payload` against the stored length and CRC; `offset` is the payload's file
    /// offset, used in errors.
    pub fn verify_payload(&self, payload: &[u8], offset: u64) -> Result<(), FormatError> {
        if payload.len() as u64 != self.payload_len {
            return Err(FormatError::Truncated {
                what: "entry payload",
                offset,
                need: self.payload_len,
                have: payload.len() as u64,
            });
        }
        FormatError::check_crc("entry payload", offset, self.payload_crc, payload)?;
        Ok(())
    }
}

/// Pages an entry with a payload of `payload_len` bytes occupies.
pub fn pages_for(payload_len: u64) -> u64 {
    (ENTRY_HEADER_BYTES as u64)
        .saturating_add(payload_len)
        .div_ceil(u64::from(PAGE_SIZE))
}

/// The complete bytes of one entry: header, payload, zero padding to a page boundary.
pub fn encode_entry(kind: EntryKind, segment_id: u64, payload: &[u8]) -> Vec<u8> {
    let header = EntryHeader::for_payload(kind, segment_id, payload);
    let total = header.pages() as usize * PAGE;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(payload);
    out.resize(total, 0);
    out
}

/// One row of a sealed segment's footer index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FooterRecord {
    /// First page of the entry.
    pub page: u64,
    /// Its payload length.
    pub payload_len: u64,
    /// Its payload CRC32C (the same as in its header).
    pub payload_crc: u32,
    /// Its kind.
    pub kind: EntryKind,
}

/// Encodes the footer payload: `count u32` then one 24-byte record per entry.
pub fn encode_footer(records: &[FooterRecord]) -> Result<Vec<u8>, FormatError> {
    let count = u32::try_from(records.len()).map_err(|_| FormatError::Invalid {
        what: "footer",
        offset: 0,
        reason: format!("{} entries exceed the u32 count", records.len()),
    })?;
    let mut out = Vec::with_capacity(4 + records.len() * FOOTER_RECORD_BYTES);
    out.put_u32(count);
    for r in records {
        out.put_u64(r.page);
        out.put_u64(r.payload_len);
        out.put_u32(r.payload_crc);
        out.put_u8(r.kind as u8);
        out.put_u8(0);
        out.put_u16(0);
    }
    Ok(out)
}

/// Decodes a footer payload (already CRC-checked as an entry).
pub fn decode_footer(payload: &[u8]) -> Result<Vec<FooterRecord>, FormatError> {
    const WHAT: &str = "footer";
    let mut r = Reader::new(WHAT, payload);
    let count = r.u32()? as usize;
    let expected = 4 + count.saturating_mul(FOOTER_RECORD_BYTES);
    if payload.len() != expected {
        return Err(FormatError::Invalid {
            what: WHAT,
            offset: 0,
            reason: format!(
                "{count} records need {expected} bytes, payload has {}",
                payload.len()
            ),
        });
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let at_record = (4 + i * FOOTER_RECORD_BYTES) as u64;
        let page = r.u64()?;
        let payload_len = r.u64()?;
        let payload_crc = r.u32()?;
        let code = r.u8()?;
        let pad = (r.u8()?, r.u16()?);
        let kind = EntryKind::from_code(code)
            .filter(|k| *k != EntryKind::Footer)
            .ok_or_else(|| FormatError::Invalid {
                what: WHAT,
                offset: at_record + 20,
                reason: format!("record {i}: bad entry kind {code}"),
            })?;
        if pad != (0, 0) {
            return Err(FormatError::Invalid {
                what: WHAT,
                offset: at_record + 21,
                reason: format!("record {i}: non-zero padding"),
            });
        }
        out.push(FooterRecord {
            page,
            payload_len,
            payload_crc,
            kind,
        });
    }
    Ok(out)
}

/// The last page of a sealed segment: where its footer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// The segment's id (as in its header).
    pub segment_id: u64,
    /// First page of the footer entry.
    pub footer_page: u64,
    /// Pages in the whole file, trailer included: the file is exactly this long.
    pub total_pages: u64,
    /// Entries listed in the footer.
    pub entry_count: u32,
}

impl Trailer {
    /// The whole trailer page.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PAGE);
        out.extend_from_slice(&TRAILER_MAGIC);
        out.put_u64(self.segment_id);
        out.put_u64(self.footer_page);
        out.put_u64(self.total_pages);
        out.put_u32(self.entry_count);
        out.resize(TR_CRC, 0);
        let crc = crc32c(&out);
        out.put_u32(crc);
        out.resize(PAGE, 0);
        out
    }

    /// Decodes a trailer page; `offset` is its file offset, used in errors.
    pub fn decode(bytes: &[u8], offset: u64) -> Result<Trailer, FormatError> {
        const WHAT: &str = "trailer";
        let head = Reader::new(WHAT, bytes)
            .take(TRAILER_BYTES)
            .map_err(|e| at(e, offset))?;
        if head[..8] != TRAILER_MAGIC {
            return Err(FormatError::BadMagic {
                what: WHAT,
                offset,
                found: head[..8].to_vec(),
            });
        }
        check_crc(WHAT, head, TR_CRC, offset)?;
        let mut f = Reader::new(WHAT, &head[TR_SEGMENT_ID..]);
        let trailer = Trailer {
            segment_id: f.u64()?,
            footer_page: f.u64()?,
            total_pages: f.u64()?,
            entry_count: f.u32()?,
        };
        if head[TR_RESERVED..TR_CRC].iter().any(|&b| b != 0) {
            return Err(FormatError::Invalid {
                what: WHAT,
                offset: offset.saturating_add(TR_RESERVED as u64),
                reason: "non-zero reserved bytes".into(),
            });
        }
        let _ = (TR_FOOTER_PAGE, TR_TOTAL_PAGES, TR_ENTRY_COUNT);
        Ok(trailer)
    }
}

fn check_crc(
    what: &'static str,
    head: &[u8],
    crc_at: usize,
    offset: u64,
) -> Result<(), FormatError> {
    let stored = u32::from_le_bytes([
        head[crc_at],
        head[crc_at + 1],
        head[crc_at + 2],
        head[crc_at + 3],
    ]);
    FormatError::check_crc(what, offset, stored, &head[..crc_at])
}

fn at(err: FormatError, base: u64) -> FormatError {
    match err {
        FormatError::Truncated {
            what,
            offset,
            need,
            have,
        } => FormatError::Truncated {
            what,
            offset: offset.saturating_add(base),
            need,
            have,
        },
        other => other,
    }
}

/// Offsets of the header fields, for the SPEC.md offset test.
#[doc(hidden)]
pub const SEGMENT_HEADER_OFFSETS: [(&str, usize); 10] = [
    ("magic", SH_MAGIC),
    ("format_version", SH_VERSION),
    ("page_size", SH_PAGE_SIZE),
    ("segment_id", SH_SEGMENT_ID),
    ("created_unix_ms", SH_CREATED),
    ("page_reserve", SH_PAGE_RESERVE),
    ("cipher", SH_CIPHER),
    ("flags", SH_FLAGS),
    ("reserved", SH_RESERVED),
    ("header_crc32c", SH_CRC),
];

/// Offsets of the entry header fields, for the SPEC.md offset test.
#[doc(hidden)]
pub const ENTRY_HEADER_OFFSETS: [(&str, usize); 12] = [
    ("magic", EH_MAGIC),
    ("kind", EH_KIND),
    ("blob_kind", EH_BLOB_KIND),
    ("reserved0", EH_RESERVED0),
    ("payload_len", EH_PAYLOAD_LEN),
    ("payload_crc32c", EH_PAYLOAD_CRC),
    ("reserved1", EH_RESERVED1),
    ("segment_id", EH_SEGMENT_ID),
    ("blob_id", EH_BLOB_ID),
    ("blob_owner", EH_BLOB_OWNER),
    ("reserved2", EH_RESERVED2),
    ("header_crc32c", EH_CRC),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_round_trip() {
        let h = SegmentHeader {
            segment_id: 42,
            created_unix_ms: -5,
            sealed: false,
            key_salt: None,
        };
        let page = h.encode();
        assert_eq!(page.len(), PAGE);
        assert_eq!(SegmentHeader::decode(&page).unwrap(), h);

        let entry = encode_entry(EntryKind::Blob, 42, b"hello");
        assert_eq!(entry.len(), PAGE);
        let eh = EntryHeader::decode(&entry, 4096).unwrap();
        assert_eq!(eh.payload_len, 5);
        eh.verify_payload(&entry[64..69], 4096 + 64).unwrap();

        let recs = vec![FooterRecord {
            page: 1,
            payload_len: 5,
            payload_crc: eh.payload_crc,
            kind: EntryKind::Blob,
        }];
        assert_eq!(decode_footer(&encode_footer(&recs).unwrap()).unwrap(), recs);

        let t = Trailer {
            segment_id: 42,
            footer_page: 2,
            total_pages: 4,
            entry_count: 1,
        };
        assert_eq!(Trailer::decode(&t.encode(), 12288).unwrap(), t);
    }

    #[test]
    fn a_blob_entry_names_its_blob_and_owner_and_only_a_blob_entry_may() {
        let tag = BlobTag {
            id: 77,
            kind: 1,
            owner: u64::MAX,
        };
        let header = EntryHeader::for_blob(3, tag, b"jpeg");
        let decoded = EntryHeader::decode(&header.encode(), 0).unwrap();
        assert_eq!(decoded, header);
        assert_eq!(decoded.blob, Some(tag));
        // The same tag on an item block is refused (and never written).
        let mut block = EntryHeader::for_payload(EntryKind::ItemBlock, 3, b"x");
        block.blob = Some(tag);
        assert_eq!(EntryHeader::decode(&block.encode(), 0).unwrap().blob, None);
        let mut forged = EntryHeader::for_payload(EntryKind::ItemBlock, 3, b"x").encode();
        forged[EH_BLOB_ID] = 1;
        let crc = crc32c(&forged[..EH_CRC]);
        forged[EH_CRC..].copy_from_slice(&crc.to_le_bytes());
        assert!(EntryHeader::decode(&forged, 0).is_err());
    }

    #[test]
    fn an_encrypted_segments_header_page_carries_its_key_salt_and_format_1_still_reads() {
        let h = SegmentHeader {
            segment_id: 5,
            created_unix_ms: 9,
            sealed: true,
            key_salt: Some([7; KEY_SALT_BYTES]),
        };
        let page = h.encode();
        assert_eq!(
            &page[KEY_SALT_OFFSET..KEY_SALT_OFFSET + KEY_SALT_BYTES],
            &[7; 32]
        );
        assert_eq!(SegmentHeader::decode(&page).unwrap(), h);
        assert_eq!(h.padding_start(), KEY_SALT_OFFSET + KEY_SALT_BYTES);
        // A plain header never carries one.
        let plain = SegmentHeader { sealed: false, ..h };
        assert!(plain.encode()[KEY_SALT_OFFSET..].iter().all(|&b| b == 0));
        // A format-1 header (version 1, no salt) still decodes.
        let mut old = SegmentHeader {
            key_salt: None,
            ..h
        }
        .encode();
        old[SH_VERSION..SH_VERSION + 4].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32c(&old[..SH_CRC]);
        old[SH_CRC..SH_CRC + 4].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(SegmentHeader::decode(&old).unwrap().key_salt, None);
        // Version 3 is not this build's.
        old[SH_VERSION..SH_VERSION + 4].copy_from_slice(&3u32.to_le_bytes());
        let crc = crc32c(&old[..SH_CRC]);
        old[SH_CRC..SH_CRC + 4].copy_from_slice(&crc.to_le_bytes());
        assert!(SegmentHeader::decode(&old).is_err());
    }

    #[test]
    fn every_bit_flip_in_headers_is_detected() {
        let page = SegmentHeader {
            segment_id: 9,
            created_unix_ms: 1,
            sealed: false,
            key_salt: None,
        }
        .encode();
        let entry = encode_entry(EntryKind::ItemBlock, 9, b"abc");
        let trailer = Trailer {
            segment_id: 9,
            footer_page: 1,
            total_pages: 3,
            entry_count: 0,
        }
        .encode();
        for bit in 0..64 * 8 {
            let flip = |b: &[u8]| {
                let mut b = b.to_vec();
                b[bit / 8] ^= 1 << (bit % 8);
                b
            };
            assert!(
                SegmentHeader::decode(&flip(&page)).is_err(),
                "header bit {bit}"
            );
            assert!(
                EntryHeader::decode(&flip(&entry), 0).is_err(),
                "entry bit {bit}"
            );
            assert!(
                Trailer::decode(&flip(&trailer), 0).is_err(),
                "trailer bit {bit}"
            );
        }
    }

    #[test]
    fn pages_cover_header_and_payload() {
        assert_eq!(pages_for(0), 1);
        assert_eq!(pages_for(4096 - 64), 1);
        assert_eq!(pages_for(4096 - 63), 2);
        assert_eq!(pages_for(u64::MAX), u64::MAX / 4096 + 1);
    }

    proptest::proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = SegmentHeader::decode(&bytes);
            let _ = EntryHeader::decode(&bytes, 0);
            let _ = Trailer::decode(&bytes, 0);
            let _ = decode_footer(&bytes);
        }
    }
}
