//! The byte encoding of a stored record (SPEC.md §4): the version byte, bincode 2.x of the
//! fields in a fixed order (versions 1 to 5, zstd frames for long records), and the framing
//! (length and CRC32C) a record has in a segment.

use super::*;

/// The record layout of version 1, field for field in the order SPEC.md §4.2 gives. It exists
/// so the wire order is one declaration, separate from the public types. Version 2 is this
/// followed by [`RecordV2Tail`].
///
/// Generic in how it holds text, so one declaration serves both ways: decoded, it owns its
/// strings and lists ([`RecordV1Owned`]); encoded, it borrows the item's
/// ([`RecordV1Borrowed`]), so a write copies no field before bincode writes it. bincode writes
/// a `&str` as a `String` and a slice as a `Vec`, so both are the same bytes.
#[derive(bincode::Encode, bincode::Decode)]
pub(super) struct RecordV1<S, L, B> {
    pub(crate) id: u64,
    pub(crate) ingest_time_ms: i64,
    pub(crate) external_id: Option<S>,
    pub(crate) source: u8,
    pub(crate) time_unix_ms: i64,
    pub(crate) time_offset_minutes: i16,
    pub(crate) location_name: Option<S>,
    pub(crate) geo: Option<(f64, f64)>,
    pub(crate) entities: L,
    pub(crate) tags: L,
    pub(crate) ocr: Option<S>,
    pub(crate) caption: Option<S>,
    pub(crate) summary: Option<S>,
    pub(crate) body: Option<S>,
    pub(crate) speaker: Option<S>,
    pub(crate) from: Option<S>,
    pub(crate) to: L,
    pub(crate) supersedes: Option<u64>,
    pub(crate) blobs: B,
}

pub(super) type RecordV1Owned = RecordV1<String, Vec<String>, Vec<u64>>;
pub(super) type RecordV1Borrowed<'a> = RecordV1<&'a str, &'a [String], &'a [u64]>;

/// Fields 20–24 of a version-2 record (SPEC.md §4.2), after version 1's nineteen: bincode
/// writes a struct as its fields one after another, so `(RecordV1, RecordV2Tail)` is exactly
/// the field list of the table. Generic in its text as [`RecordV1`] is.
#[derive(bincode::Encode, bincode::Decode, Default)]
pub(super) struct RecordV2Tail<S> {
    pub(crate) place: Option<PlaceWire<S>>,
    pub(crate) camera: Option<CameraWire<S>>,
    /// 0 unknown, else [`Orientation::code`].
    pub(crate) orientation: u8,
    pub(crate) short_caption: Option<S>,
    /// (model, at UTC ms).
    pub(crate) caption_provenance: Option<(S, i64)>,
}

/// Fields 25–27 of a version-4 record (SPEC.md §4.5), after version 2's twenty-four: the
/// item's scope.
#[derive(bincode::Encode, bincode::Decode, Default)]
pub(super) struct RecordV4Tail<S> {
    pub(crate) user_id: Option<S>,
    pub(crate) agent_id: Option<S>,
    pub(crate) run_id: Option<S>,
}

#[derive(bincode::Encode, bincode::Decode)]
pub(super) struct PlaceWire<S> {
    pub(crate) city: S,
    pub(crate) locality: Option<S>,
    pub(crate) region: Option<S>,
    pub(crate) country: Option<S>,
    pub(crate) country_code: Option<S>,
    pub(crate) distance_m: Option<u32>,
    pub(crate) geonames_id: Option<u32>,
}

#[derive(bincode::Encode, bincode::Decode)]
pub(super) struct CameraWire<S> {
    pub(crate) make: Option<S>,
    pub(crate) model: Option<S>,
    pub(crate) lens: Option<S>,
}

pub(super) fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_little_endian()
        .with_variable_int_encoding()
        .with_limit::<MAX_RECORD_BYTES>()
}

pub(super) const RECORD: &str = "item record";

/// Encodes `record` as a version byte followed by the bincode fields (no frame): version 2
/// ([`RECORD_VERSION`]) as they are, or version 3 ([`RECORD_VERSION_ZSTD`]) in a zstd frame
/// where they are at least [`COMPRESS_MIN_BYTES`] long and the frame saves an eighth; an item
/// with a scope likewise as version 4 or 5, its scope after the other fields.
pub fn encode_record(record: &ItemRecord) -> Result<Vec<u8>, FormatError> {
    let f = &record.fields;
    let location = f.location.as_ref();
    let head: RecordV1Borrowed<'_> = RecordV1 {
        id: record.id,
        ingest_time_ms: record.ingest_time_ms,
        external_id: f.external_id.as_deref(),
        source: f.source.code(),
        time_unix_ms: f.time.unix_ms,
        time_offset_minutes: f.time.offset_minutes,
        location_name: location.and_then(|l| l.name.as_deref()),
        geo: location.and_then(|l| l.geo).map(|g| (g.lat, g.lon)),
        entities: &f.entities,
        tags: &f.tags,
        ocr: f.ocr.as_deref(),
        caption: f.caption.as_deref(),
        summary: f.summary.as_deref(),
        body: f.body.as_deref(),
        speaker: f.speaker.as_deref(),
        from: f.from.as_deref(),
        to: &f.to,
        supersedes: record.supersedes,
        blobs: &record.blobs,
    };
    let tail: RecordV2Tail<&str> = RecordV2Tail {
        place: location.and_then(|l| l.place.as_ref()).map(|p| PlaceWire {
            city: p.city.as_str(),
            locality: p.locality.as_deref(),
            region: p.region.as_deref(),
            country: p.country.as_deref(),
            country_code: p.country_code.as_deref(),
            distance_m: p.distance_m,
            geonames_id: p.geonames_id,
        }),
        camera: f.camera.as_ref().map(|c| CameraWire {
            make: c.make.as_deref(),
            model: c.model.as_deref(),
            lens: c.lens.as_deref(),
        }),
        orientation: f.orientation.map_or(0, Orientation::code),
        short_caption: f.short_caption.as_deref(),
        caption_provenance: f
            .caption_provenance
            .as_ref()
            .map(|p| (p.model.as_str(), p.at_ms)),
    };
    let invalid = |e: bincode::error::EncodeError| FormatError::Invalid {
        what: RECORD,
        offset: 0,
        reason: e.to_string(),
    };
    // Sized once: the text, plus room for the numbers and lengths around it.
    let mut out = Vec::with_capacity(1 + 96 + text_bytes(record));
    let scoped = !f.scope.is_empty();
    out.push(if scoped {
        RECORD_VERSION_SCOPED
    } else {
        RECORD_VERSION
    });
    bincode::encode_into_std_write(&head, &mut out, bincode_config()).map_err(invalid)?;
    bincode::encode_into_std_write(&tail, &mut out, bincode_config()).map_err(invalid)?;
    if scoped {
        let scope: RecordV4Tail<&str> = RecordV4Tail {
            user_id: f.scope.user_id.as_deref(),
            agent_id: f.scope.agent_id.as_deref(),
            run_id: f.scope.run_id.as_deref(),
        };
        bincode::encode_into_std_write(&scope, &mut out, bincode_config()).map_err(invalid)?;
    }
    // `out` holds the version byte, then the fields.
    let fields_len = out.len() - 1;
    let zstd_version = if scoped {
        RECORD_VERSION_SCOPED_ZSTD
    } else {
        RECORD_VERSION_ZSTD
    };
    if fields_len >= COMPRESS_MIN_BYTES
        && let Some(compressed) = compress_fields(&out[1..], zstd_version)?
    {
        out = compressed;
    }
    if out.len() > MAX_RECORD_BYTES {
        return Err(FormatError::Invalid {
            what: RECORD,
            offset: 0,
            reason: format!(
                "record is {} bytes, more than the {MAX_RECORD_BYTES} allowed",
                out.len()
            ),
        });
    }
    Ok(out)
}

/// The bytes of `record`'s text fields, what most of its encoding is (a photo's place and
/// camera are left out: when they overflow the estimate's slack, the buffer grows once).
pub(super) fn text_bytes(record: &ItemRecord) -> usize {
    let f = &record.fields;
    let optional = [
        &f.external_id,
        &f.ocr,
        &f.caption,
        &f.summary,
        &f.body,
        &f.speaker,
        &f.from,
        &f.short_caption,
        &f.scope.user_id,
        &f.scope.agent_id,
        &f.scope.run_id,
    ];
    let lists = [&f.entities, &f.tags, &f.to];
    optional
        .iter()
        .map(|t| t.as_ref().map_or(0, String::len))
        .sum::<usize>()
        + lists
            .iter()
            .flat_map(|l| l.iter())
            .map(|t| t.len() + 2)
            .sum::<usize>()
}

/// `fields` in a compressed record of `version` (3 or 5: its version byte, then one zstd frame
/// that declares its content size), or `None` where that would not save an eighth of them.
pub(super) fn compress_fields(fields: &[u8], version: u8) -> Result<Option<Vec<u8>>, FormatError> {
    thread_local! {
        // A compression context holds about a megabyte of tables: made once per thread, not per
        // record.
        static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let failed = |e: std::io::Error| FormatError::Invalid {
        what: RECORD,
        offset: 0,
        reason: format!("zstd compression failed: {e}"),
    };
    COMPRESSOR.with_borrow_mut(|slot| {
        let compressor = match slot {
            Some(c) => c,
            None => slot.insert(zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(failed)?),
        };
        // zstd writes from the buffer's start, so the version byte goes in front afterwards.
        let mut out = compressor.compress(fields).map_err(failed)?;
        if out.len() + 1 + fields.len() / 8 > fields.len() {
            return Ok(None);
        }
        out.insert(0, version);
        Ok(Some(out))
    })
}

/// The fields inside a version-3 record's zstd frame. The frame must declare its content size
/// (at most [`MAX_RECORD_BYTES`], so no claim allocates more), be the record's last byte's
/// frame (nothing after it) and decompress to exactly the size it declares.
pub(super) fn decompress_fields(frame: &[u8]) -> Result<Vec<u8>, FormatError> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let invalid = |reason: String| FormatError::Invalid {
        what: RECORD,
        offset: 1,
        reason,
    };
    let declared = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) => n,
        Ok(None) => return Err(invalid("the zstd frame does not declare its size".into())),
        Err(_) => return Err(invalid("not a zstd frame".into())),
    };
    let len = usize::try_from(declared)
        .ok()
        .filter(|&n| n <= MAX_RECORD_BYTES)
        .ok_or_else(|| {
            invalid(format!(
                "the zstd frame declares {declared} bytes, more than the {MAX_RECORD_BYTES} allowed"
            ))
        })?;
    match zstd::zstd_safe::find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => {}
        Ok(n) => {
            return Err(invalid(format!(
                "{} bytes after the zstd frame",
                frame.len().saturating_sub(n)
            )));
        }
        Err(code) => {
            return Err(invalid(format!(
                "bad zstd frame: {}",
                zstd::zstd_safe::get_error_name(code)
            )));
        }
    }
    let mut out = Vec::with_capacity(len);
    DECOMPRESSOR.with_borrow_mut(|slot| {
        let failed = |e: std::io::Error| invalid(format!("bad zstd frame: {e}"));
        let decompressor = match slot {
            Some(d) => d,
            None => slot.insert(zstd::bulk::Decompressor::new().map_err(failed)?),
        };
        decompressor
            .decompress_to_buffer(frame, &mut out)
            .map_err(failed)
    })?;
    if out.len() != len {
        return Err(invalid(format!(
            "the zstd frame declares {len} bytes and holds {}",
            out.len()
        )));
    }
    Ok(out)
}

/// Decodes a record written by [`encode_record`]: of version 2 or 4, of version 3 or 5 (their
/// fields compressed) or of version 1 (whose fields 20–24 read as absent). Every byte must be
/// consumed.
pub fn decode_record(bytes: &[u8]) -> Result<ItemRecord, FormatError> {
    let mut reader = Reader::new(RECORD, bytes);
    let version = reader.u8()?;
    match version {
        RECORD_VERSION_1 | RECORD_VERSION | RECORD_VERSION_SCOPED => {
            decode_fields(version, &bytes[1..])
        }
        RECORD_VERSION_ZSTD => decode_fields(RECORD_VERSION, &decompress_fields(&bytes[1..])?),
        RECORD_VERSION_SCOPED_ZSTD => {
            decode_fields(RECORD_VERSION_SCOPED, &decompress_fields(&bytes[1..])?)
        }
        _ => Err(FormatError::UnsupportedVersion {
            what: RECORD,
            found: version.into(),
            supported: RECORD_VERSION_SCOPED_ZSTD.into(),
        }),
    }
}

/// The record whose fields of `version` (1, 2 or 4) are `body`.
pub(super) fn decode_fields(version: u8, body: &[u8]) -> Result<ItemRecord, FormatError> {
    let invalid = |reason: String| FormatError::Invalid {
        what: RECORD,
        offset: 0,
        reason,
    };
    let (head, mut used): (RecordV1Owned, usize) =
        bincode::decode_from_slice(body, bincode_config()).map_err(|e| invalid(e.to_string()))?;
    let tail = if version == RECORD_VERSION_1 {
        RecordV2Tail::default()
    } else {
        let rest = body.get(used..).unwrap_or_default();
        let (tail, tail_used): (RecordV2Tail<String>, usize) =
            bincode::decode_from_slice(rest, bincode_config())
                .map_err(|e| invalid(e.to_string()))?;
        used += tail_used;
        tail
    };
    let scope = if version == RECORD_VERSION_SCOPED {
        let rest = body.get(used..).unwrap_or_default();
        let (scope, scope_used): (RecordV4Tail<String>, usize) =
            bincode::decode_from_slice(rest, bincode_config())
                .map_err(|e| invalid(e.to_string()))?;
        used += scope_used;
        let scope = Scope {
            user_id: scope.user_id,
            agent_id: scope.agent_id,
            run_id: scope.run_id,
        };
        // A version-4 record is written only for a scope: an empty one is not this writer's.
        if scope.is_empty() {
            return Err(invalid("a version-4 record with an empty scope".to_owned()));
        }
        scope
    } else {
        Scope::default()
    };
    if used != body.len() {
        return Err(invalid(format!(
            "{} trailing bytes after the record",
            body.len() - used
        )));
    }
    let source = Source::from_code(head.source)
        .ok_or_else(|| invalid(format!("unknown source code {}", head.source)))?;
    let orientation = match tail.orientation {
        0 => None,
        code => Some(
            Orientation::from_code(code)
                .ok_or_else(|| invalid(format!("unknown orientation code {code}")))?,
        ),
    };
    let place = tail.place.map(|p| PlaceName {
        city: p.city,
        locality: p.locality,
        region: p.region,
        country: p.country,
        country_code: p.country_code,
        distance_m: p.distance_m,
        geonames_id: p.geonames_id,
    });
    let location = match (head.location_name, head.geo, place) {
        (None, None, None) => None,
        (name, geo, place) => Some(Location {
            name,
            geo: geo.map(|(lat, lon)| GeoPoint { lat, lon }),
            place,
        }),
    };
    let fields = ItemFields {
        external_id: head.external_id,
        source,
        time: EventTime {
            unix_ms: head.time_unix_ms,
            offset_minutes: head.time_offset_minutes,
        },
        location,
        entities: head.entities,
        tags: head.tags,
        ocr: head.ocr,
        caption: head.caption,
        summary: head.summary,
        body: head.body,
        speaker: head.speaker,
        from: head.from,
        to: head.to,
        short_caption: tail.short_caption,
        caption_provenance: tail
            .caption_provenance
            .map(|(model, at_ms)| CaptionProvenance { model, at_ms }),
        camera: tail.camera.map(|c| Camera {
            make: c.make,
            model: c.model,
            lens: c.lens,
        }),
        orientation,
        scope,
    };
    fields.validate().map_err(invalid)?;
    Ok(ItemRecord {
        id: head.id,
        ingest_time_ms: head.ingest_time_ms,
        fields,
        supersedes: head.supersedes,
        blobs: head.blobs,
    })
}

/// Appends `record` to `out` framed as `len u32 | crc32c u32 | record`.
pub fn put_framed(out: &mut Vec<u8>, record: &[u8]) -> Result<(), FormatError> {
    let len = u32::try_from(record.len()).map_err(|_| FormatError::Invalid {
        what: "record frame",
        offset: 0,
        reason: format!("record of {} bytes does not fit a u32 length", record.len()),
    })?;
    out.put_u32(len);
    out.put_u32(crc32c(record));
    out.extend_from_slice(record);
    Ok(())
}

/// Reads the framed record that starts at `bytes[0]`, verifying its checksum. Returns the
/// record bytes (without the frame).
pub fn read_framed(bytes: &[u8]) -> Result<&[u8], FormatError> {
    let mut reader = Reader::new("record frame", bytes);
    let len = reader.u32()? as usize;
    let stored = reader.u32()?;
    if len > MAX_RECORD_BYTES {
        return Err(FormatError::Invalid {
            what: "record frame",
            offset: 0,
            reason: format!("length {len} exceeds the {MAX_RECORD_BYTES} allowed"),
        });
    }
    let start = reader.position();
    let record = reader.take(len)?;
    FormatError::check_crc("item record", start as u64, stored, record)?;
    Ok(record)
}
