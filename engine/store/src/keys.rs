//! An encrypted store's keys on disk: the `KEY` file (SPEC.md §3.7) and the `segment_keys`
//! catalog table, and turning them into the [`SealedIo`] the store's files go through.
//!
//! The KEY file is written once when the store is made, owner-only and fsync'd before the
//! catalog exists; `rekey` replaces it whole (a new file, fsync'd, renamed over the old, the
//! directory fsync'd), so a crash leaves the old or the new wrap, never a torn one. A store is
//! encrypted exactly when it has a KEY file. Each segment's salt is a row of `segment_keys`,
//! written in the commit that first records the segment and removed in the commit that drops
//! it: with the row goes the only way to derive the segment's key again.

use std::path::PathBuf;
use std::sync::Arc;

use memdb_formats::key_header::{KEY_HEADER_BYTES, KeyHeader};

use super::catalog::{SEGMENT_KEYS, open_optional};
use super::dir::{self, StorePaths};
use super::io::{OpenMode, StorageIo};
use super::sealed::SealedIo;
use crate::crypto::{self, CryptoError, DataKey, KdfCost, Secret};
use crate::error::{CatalogResult, Error, Result};

/// The key file's name in the store directory.
pub(crate) const KEY_FILE: &str = "KEY";

fn key_path(paths: &StorePaths) -> PathBuf {
    paths.root.join(KEY_FILE)
}

fn key_error(paths: &StorePaths) -> impl FnOnce(CryptoError) -> Error + '_ {
    move |source| Error::Key {
        path: paths.root.clone(),
        source,
    }
}

/// Whether the store at `paths` is encrypted (has a KEY file).
pub(crate) fn is_encrypted(paths: &StorePaths) -> bool {
    key_path(paths).exists()
}

/// Makes a new store's data key, wrapped under `secret`, and writes the KEY file durably.
pub(crate) fn create_key_file(
    io: &dyn StorageIo,
    paths: &StorePaths,
    secret: &Secret,
    cost: KdfCost,
) -> Result<DataKey> {
    let (header, key) = crypto::create_key(secret, cost).map_err(key_error(paths))?;
    write_key_file(io, &key_path(paths), &header, KEY_COPIES)?;
    Ok(key)
}

/// Copies of the key header a KEY file holds (store format 20): one damaged byte costs one
/// copy, never the store.
const KEY_COPIES: usize = 2;

fn write_key_file(
    io: &dyn StorageIo,
    path: &std::path::Path,
    header: &KeyHeader,
    copies: usize,
) -> Result<()> {
    let file = io
        .open_file(path, OpenMode::CreateNew)
        .map_err(Error::io("create key file", path))?;
    io.write_at(path, &file, &header.encode().repeat(copies), 0)
        .map_err(Error::io("write key file", path))?;
    io.sync_data(path, &file)
        .map_err(Error::io("fdatasync", path))
}

/// Reads the KEY file.
pub(crate) fn read_key_header(io: &dyn StorageIo, paths: &StorePaths) -> Result<KeyHeader> {
    let path = key_path(paths);
    let file = io
        .open_file(&path, OpenMode::ReadOnly)
        .map_err(Error::io("open key file", &path))?;
    let len = io.len(&path, &file).map_err(Error::io("stat", &path))?;
    // Longer than its copies is damage too; read one byte more to see it.
    let mut bytes = vec![0u8; (len as usize).min(KEY_COPIES * KEY_HEADER_BYTES + 1)];
    io.read_at(&path, &file, &mut bytes, 0)
        .map_err(Error::io("read key file", &path))?;
    decode_key_file(&bytes).map_err(|e| key_error(paths)(CryptoError::Header(e)))
}

/// The key header of a KEY file's bytes: the first of its copies that decodes (a file of one
/// header, before format 20, is read too). The error is the first copy's.
fn decode_key_file(bytes: &[u8]) -> std::result::Result<KeyHeader, memdb_formats::FormatError> {
    if bytes.len() != KEY_COPIES * KEY_HEADER_BYTES {
        return KeyHeader::decode(bytes);
    }
    let mut first_error = None;
    for copy in bytes.chunks_exact(KEY_HEADER_BYTES) {
        match KeyHeader::decode(copy) {
            Ok(header) => return Ok(header),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or(memdb_formats::FormatError::Invalid {
        what: "key file",
        offset: 0,
        reason: "no copy of the key header".into(),
    }))
}

/// For an encrypted store, unlocks its data key with `options.secret` and puts a [`SealedIo`]
/// in front of `options.io`; a store without a KEY file is returned as it is. A missing or
/// wrong secret fails here, before any file is opened for writing.
pub(crate) fn seal_if_encrypted(
    paths: &StorePaths,
    mut options: super::Options,
) -> Result<(super::Options, Option<Arc<SealedIo>>)> {
    if !is_encrypted(paths) {
        return Ok((options, None));
    }
    let header = read_key_header(options.io.as_ref(), paths)?;
    let secret = options.secret.as_deref().ok_or_else(|| Error::Encrypted {
        path: paths.root.clone(),
    })?;
    let key = crypto::unlock(&header, secret).map_err(key_error(paths))?;
    let sealed = Arc::new(
        SealedIo::new(Arc::clone(&options.io), key, &paths.catalog).map_err(key_error(paths))?,
    );
    options.io = Arc::clone(&sealed) as Arc<dyn StorageIo>;
    Ok((options, Some(sealed)))
}

/// A [`SealedIo`] for a store being created with `key`.
pub(crate) fn sealed_io(
    paths: &StorePaths,
    inner: Arc<dyn StorageIo>,
    key: DataKey,
) -> Result<Arc<SealedIo>> {
    Ok(Arc::new(
        SealedIo::new(inner, key, &paths.catalog).map_err(key_error(paths))?,
    ))
}

/// Registers the keys of segments `ids` from the catalog's `segment_keys` (those already
/// registered are derived again: cheap, and a salt never changes).
pub(crate) fn register_segments(
    sealed: &SealedIo,
    paths: &StorePaths,
    txn: &redb::ReadTransaction,
    ids: impl IntoIterator<Item = u64>,
) -> Result<()> {
    let Some(table) = open_optional(txn, SEGMENT_KEYS)? else {
        return Err(Error::bad_row(
            "segment_keys",
            "(table)",
            "an encrypted store's catalog has no segment_keys table",
        ));
    };
    for id in ids {
        let Some(salt) = table.get(id).ctx("read segment_keys")? else {
            // Left unregistered: the segment's reads fail, naming it, as for a lost file.
            continue;
        };
        let salt: [u8; 32] = salt
            .value()
            .try_into()
            .map_err(|_| Error::bad_row("segment_keys", id, "a salt is 32 bytes"))?;
        sealed
            .register_segment(&paths.segment(id), id, &salt)
            .map_err(key_error(paths))?;
    }
    Ok(())
}

/// A new segment's salt: registered with `sealed` and recorded in `segment_keys` in the
/// commit that records the segment; returned for the segment's header page (segment format 2),
/// where a rebuild finds it when the catalog cannot be read.
pub(crate) fn new_segment_key(
    sealed: &SealedIo,
    paths: &StorePaths,
    table: &mut redb::Table<'_, u64, &'static [u8]>,
    id: u64,
) -> Result<[u8; 32]> {
    let salt: [u8; 32] = crypto::random().map_err(key_error(paths))?;
    sealed
        .register_segment(&paths.segment(id), id, &salt)
        .map_err(key_error(paths))?;
    table
        .insert(id, salt.as_slice())
        .ctx("write segment_keys")?;
    Ok(salt)
}

/// Changes what unlocks the store at `paths` from `old` to `new`: only the KEY file changes
/// (the data key is wrapped again), atomically. The store must not be open elsewhere.
pub(crate) fn rekey(
    io: &dyn StorageIo,
    paths: &StorePaths,
    old: &Secret,
    new: &Secret,
    cost: KdfCost,
) -> Result<()> {
    let header = read_key_header(io, paths)?;
    let rewrapped = crypto::rewrap(&header, old, new, cost).map_err(key_error(paths))?;
    let path = key_path(paths);
    // As many copies as the file had: a store of format 19 or older keeps the one copy a
    // build that reads it expects (two would read as damage there).
    let copies = match std::fs::metadata(&path) {
        Ok(m) if m.len() < (KEY_COPIES * KEY_HEADER_BYTES) as u64 => 1,
        _ => KEY_COPIES,
    };
    let staged = paths.root.join(format!("{KEY_FILE}.new"));
    // A KEY.new left by an interrupted rekey was never made current: replace it.
    match io.remove_file(&staged) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("remove", &staged)(e)),
    }
    write_key_file(io, &staged, &rewrapped, copies)?;
    io.rename(&staged, &path)
        .map_err(Error::io("rename key file", &path))?;
    dir::sync_dir(io, &paths.root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_one_damaged_byte_of_a_key_file_leaves_a_copy_that_reads() {
        let header = KeyHeader {
            kdf: memdb_formats::key_header::Kdf::KeyFile,
            store_key_id: [1; 16],
            salt: [2; 32],
            wrap_nonce: [3; 24],
            wrapped_key: [4; 32],
            wrap_tag: [5; 16],
        };
        let file = header.encode().repeat(KEY_COPIES);
        for at in 0..file.len() {
            let mut damaged = file.clone();
            damaged[at] ^= 0x5a;
            assert_eq!(decode_key_file(&damaged).unwrap(), header, "byte {at}");
        }
        // Both copies damaged: a typed error, not a guess.
        let mut both = file.clone();
        both[40] ^= 1;
        both[KEY_HEADER_BYTES + 40] ^= 1;
        assert!(decode_key_file(&both).is_err());
        // A one-copy file (format 19 and before) still reads.
        assert_eq!(decode_key_file(&header.encode()).unwrap(), header);
        assert!(decode_key_file(&file[..KEY_HEADER_BYTES + 1]).is_err());
    }
}
