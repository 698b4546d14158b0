//! What a file is, from its first bytes: the importers' answer to "why was this file not
//! taken?" (`PNG image: memdb imports JPEG photos`) rather than a bare "not a JPEG".
//!
//! [`sniff`] looks only at signatures at fixed offsets (the "magic numbers" of each format), so
//! it reads at most the first 1,024 bytes whatever the input's length, never fails, and never
//! guesses from a file name. Anything without a known signature is [`FileKind::Text`] when its
//! start is printable UTF-8, else [`FileKind::Unknown`].

use std::fmt;

/// The kind of a file, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// No bytes at all.
    Empty,
    /// JPEG: the start-of-image marker `FF D8` (normally followed by `FF`; fuzzed and damaged
    /// files may have stray bytes there, which the JPEG header parser judges).
    Jpeg,
    /// PNG (`89 50 4E 47 0D 0A 1A 0A`).
    Png,
    /// GIF (`GIF87a` / `GIF89a`).
    Gif,
    /// WebP (`RIFF`, a length, `WEBP`).
    WebP,
    /// TIFF, and the camera raw formats built on it (`II*\0` / `MM\0*`).
    Tiff,
    /// Windows bitmap (`BM`).
    Bmp,
    /// HEIC: an ISO media file (`ftyp` box) with a HEVC image brand (`heic`, `heix`, `heim`,
    /// `heis`, `hevc`, `hevx`, `hevm`, `hevs`).
    Heic,
    /// HEIF with the generic image brands (`mif1`, `msf1`) and no AVIF brand.
    Heif,
    /// AVIF (`ftyp` brand `avif` / `avis`, major or compatible).
    Avif,
    /// Any other ISO base media file (`ftyp`): MP4, QuickTime, 3GP video.
    Video,
    /// PDF (`%PDF-`).
    Pdf,
    /// A ZIP archive (`PK\3\4`), including office documents.
    Zip,
    /// Printable UTF-8 text (no known signature; no NUL or other control bytes but tab, line
    /// feed, carriage return, form feed and escape).
    Text,
    /// None of the above.
    Unknown,
}

impl FileKind {
    /// Whether this is a still-image format.
    pub fn is_image(self) -> bool {
        matches!(
            self,
            FileKind::Jpeg
                | FileKind::Png
                | FileKind::Gif
                | FileKind::WebP
                | FileKind::Tiff
                | FileKind::Bmp
                | FileKind::Heic
                | FileKind::Heif
                | FileKind::Avif
        )
    }

    /// A short name for messages: `JPEG image`, `HEIC image`, `text`, `empty file`.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Empty => "empty file",
            FileKind::Jpeg => "JPEG image",
            FileKind::Png => "PNG image",
            FileKind::Gif => "GIF image",
            FileKind::WebP => "WebP image",
            FileKind::Tiff => "TIFF image",
            FileKind::Bmp => "BMP image",
            FileKind::Heic => "HEIC image",
            FileKind::Heif => "HEIF image",
            FileKind::Avif => "AVIF image",
            FileKind::Video => "MP4/QuickTime video",
            FileKind::Pdf => "PDF document",
            FileKind::Zip => "ZIP archive",
            FileKind::Text => "text",
            FileKind::Unknown => "unknown binary data",
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes looked at by [`sniff`].
const SNIFF_BYTES: usize = 1024;

/// The kind of file `bytes` hold, from their signature (see the module header).
pub fn sniff(bytes: &[u8]) -> FileKind {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    let at = |offset: usize, signature: &[u8]| {
        head.get(offset..offset + signature.len()) == Some(signature)
    };
    if head.is_empty() {
        FileKind::Empty
    } else if at(0, &[0xFF, 0xD8]) {
        FileKind::Jpeg
    } else if at(0, b"\x89PNG\r\n\x1a\n") {
        FileKind::Png
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        FileKind::Gif
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        FileKind::WebP
    } else if at(0, b"II*\0") || at(0, b"MM\0*") {
        FileKind::Tiff
    } else if at(0, b"BM") && head.len() >= 14 {
        FileKind::Bmp
    } else if at(4, b"ftyp") {
        iso_media(head)
    } else if at(0, b"%PDF-") {
        FileKind::Pdf
    } else if at(0, b"PK\x03\x04") {
        FileKind::Zip
    } else if is_text(head, bytes.len() > head.len()) {
        FileKind::Text
    } else {
        FileKind::Unknown
    }
}

/// An ISO base media file by its `ftyp` brands: the major brand at 8..12, compatible brands
/// from 16 to the end of the box.
fn iso_media(head: &[u8]) -> FileKind {
    let box_len = head.get(..4).map_or(0, |b| {
        b.iter().fold(0usize, |n, &x| (n << 8) | usize::from(x))
    });
    // Not `clamp(12, len)`: a head shorter than 12 bytes would make min > max and panic.
    let end = box_len.min(head.len());
    let major = head.get(8..12).unwrap_or_default();
    let compatible = head.get(16..end).unwrap_or_default();
    let mut brands = std::iter::once(major).chain(compatible.chunks_exact(4));
    const HEIC: [&[u8]; 8] = [
        b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs",
    ];
    if HEIC.contains(&major) {
        FileKind::Heic
    } else if brands.any(|b| b == b"avif" || b == b"avis") {
        FileKind::Avif
    } else if major == b"mif1" || major == b"msf1" {
        FileKind::Heif
    } else {
        FileKind::Video
    }
}

/// Printable UTF-8: valid (a character cut at the end of a prefix is allowed when `cut`), and
/// no control bytes but `\t \n \r \x0c \x1b`.
fn is_text(head: &[u8], cut: bool) -> bool {
    let valid = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => cut && e.error_len().is_none(),
    };
    valid
        && head
            .iter()
            .all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_name_the_format() {
        let ftyp = |brands: &[u8]| {
            let mut b = vec![0, 0, 0, 8 + brands.len() as u8];
            b.extend_from_slice(b"ftyp");
            b.extend_from_slice(brands);
            b
        };
        let cases: Vec<(Vec<u8>, FileKind)> = vec![
            (vec![], FileKind::Empty),
            (vec![0xFF, 0xD8, 0xFF, 0xE0], FileKind::Jpeg),
            (vec![0xFF, 0xD8, 0xFE, 0xE0], FileKind::Jpeg),
            (vec![0xFF, 0x00, 0x00], FileKind::Unknown),
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(), FileKind::Png),
            (b"GIF89a\x01\0".to_vec(), FileKind::Gif),
            (b"RIFF\x24\0\0\0WEBPVP8 ".to_vec(), FileKind::WebP),
            (b"II*\0\x08\0\0\0".to_vec(), FileKind::Tiff),
            (b"MM\0*\0\0\0\x08".to_vec(), FileKind::Tiff),
            (b"BM\x36\0\0\0\0\0\0\0\x36\0\0\0".to_vec(), FileKind::Bmp),
            (ftyp(b"heic\0\0\0\0mif1heic"), FileKind::Heic),
            (ftyp(b"mif1\0\0\0\0mif1heix"), FileKind::Heif),
            (ftyp(b"avif\0\0\0\0avifmif1"), FileKind::Avif),
            (ftyp(b"mif1\0\0\0\0mif1avif"), FileKind::Avif),
            (ftyp(b"qt  \0\0\0\0qt  "), FileKind::Video),
            // Cut short inside the box (the fuzzer's find: a 10-byte head once panicked).
            (b"\0\0\0\x18ftypic".to_vec(), FileKind::Video),
            (b"\0\0\0\x18ftyp".to_vec(), FileKind::Video),
            (b"\0\0\0\x18ftypheic\0\0".to_vec(), FileKind::Heic),
            (b"\0\0\0\x02ftypmif1\0\0\0\0avif".to_vec(), FileKind::Heif),
            (b"%PDF-1.7\n".to_vec(), FileKind::Pdf),
            (b"PK\x03\x04\x14\0".to_vec(), FileKind::Zip),
            (
                "Subject: héllo\r\n\tfolded\n".as_bytes().to_vec(),
                FileKind::Text,
            ),
            (b"BM".to_vec(), FileKind::Text),
            (b"\0\x01\x02binary".to_vec(), FileKind::Unknown),
            (b"\xff\xfe\x00t\x00e".to_vec(), FileKind::Unknown),
        ];
        for (bytes, want) in cases {
            assert_eq!(sniff(&bytes), want, "{bytes:?}");
        }
        assert_eq!(FileKind::Heic.to_string(), "HEIC image");
        assert!(FileKind::Heic.is_image() && !FileKind::Text.is_image());
    }

    #[test]
    fn text_may_be_cut_inside_a_character_only_at_the_prefix_end() {
        // 1 + 2 × 1,024 bytes: the 1,024-byte prefix ends inside an `é`.
        let long = format!("a{}", "é".repeat(SNIFF_BYTES)).into_bytes();
        assert_eq!(sniff(&long), FileKind::Text);
        // A file that itself ends inside a character is not text.
        let mut short = "aé".as_bytes().to_vec();
        short.pop();
        assert_eq!(sniff(&short), FileKind::Unknown);
    }
}
