//! The commands of a store's life: `init` and `rekey` (create, change the key), `get` and `ls`
//! (read items), `stats`, `check`, `repair` and `compact`.

use std::process::ExitCode;

use memdb::{
    Options, ScanFilter, Store, maintenance::CompactOptions, maintenance::KeepEverything,
    maintenance::Victims,
};
use memdb_query::item_json;

use crate::args::{CompactArgs, GetArgs, InitArgs, LsArgs, RekeyArgs};
use crate::error::{CliError, Result};
use crate::keys;
use crate::open::{open_for_reading, open_store, repair as repair_store};
use crate::output::{self, Out, stats_json, stats_table};

pub(crate) fn init(args: InitArgs, out: &Out) -> Result<ExitCode> {
    let InitArgs {
        dir,
        encrypt,
        item_vectors,
        kdf,
    } = args;
    let mut options = Options {
        kdf_cost: kdf.cost(),
        item_vector_precision: item_vectors,
        ..Options::default()
    };
    if encrypt {
        let flags = keys::flags();
        let secret = keys::new_secret(
            keys::PASSPHRASE_ENV,
            flags.passphrase_fd,
            flags.key_file.as_deref(),
            "passphrase for the new store",
        )?;
        options.secret = Some(std::sync::Arc::new(secret));
    }
    Store::create(&dir, options)?;
    out.emit(
        serde_json::json!({ "created": dir, "encrypted": encrypt }),
        || {
            format!(
                "created {}store {}",
                if encrypt { "encrypted " } else { "" },
                dir.display()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn rekey(args: RekeyArgs, out: &Out) -> Result<ExitCode> {
    let RekeyArgs {
        dir,
        new_passphrase_fd,
        new_key_file,
        kdf,
    } = args;
    let options = Options {
        kdf_cost: kdf.cost(),
        ..keys::options_for(&dir)?
    };
    let old = options.secret.clone().ok_or_else(|| {
        CliError::store(
            &dir,
            memdb::StoreError::Key {
                path: dir.clone(),
                source: memdb::crypto::CryptoError::Unsupported(
                    "the store is not encrypted: there is no key to change".into(),
                ),
            },
        )
    })?;
    let new = keys::new_secret(
        keys::NEW_PASSPHRASE_ENV,
        new_passphrase_fd,
        new_key_file.as_deref(),
        "new passphrase",
    )?;
    Store::rekey(&dir, &old, &new, &options).map_err(|e| CliError::store(&dir, e))?;
    out.emit(serde_json::json!({ "rekeyed": dir }), || {
        format!("changed the key of store {}", dir.display())
    });
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn get(args: GetArgs, out: &Out) -> Result<ExitCode> {
    let GetArgs { dir, key, external } = args;
    let store = open_for_reading(&dir)?;
    let snap = store.snapshot()?;
    let item = if external {
        snap.get_by_external_id(&key)
    } else {
        let id: u64 = key
            .parse()
            .map_err(|_| CliError::NotAnId { key: key.clone() })?;
        snap.get(id)
    }?
    .ok_or_else(|| CliError::NoItem { key: key.clone() })?;
    let dropped = snap.dropped_blobs(item.id)?;
    let versions = snap.versions(item.id)?;
    out.emit(output::item_detail_json(&item, &dropped, &versions), || {
        output::item_detail_table(&item, &dropped, &versions)
    });
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn ls(args: LsArgs, out: &Out) -> Result<ExitCode> {
    let LsArgs { dir, window, limit } = args;
    let store = open_for_reading(&dir)?;
    let filter = ScanFilter {
        limit: Some(limit),
        ..window.parse()?
    };
    // A damaged record costs its item's line, not the listing: it is named on stderr.
    let (items, unreadable) = store.snapshot()?.scan_readable(&filter)?;
    let skipped = memdb::maintenance::Skipped {
        items: unreadable,
        vector_blocks: Vec::new(),
    };
    if let Some(warning) = skipped.describe() {
        eprintln!("memdb: warning: {warning}");
    }
    out.emit(
        serde_json::Value::Array(items.iter().map(item_json).collect()),
        || output::list_table(&items),
    );
    Ok(ExitCode::SUCCESS)
}

/// `memdb stats`.
pub(crate) fn stats(dir: &std::path::Path, out: &Out) -> Result<ExitCode> {
    let stats = open_for_reading(dir)?.stats()?;
    out.emit(stats_json(&stats), || stats_table(&stats));
    Ok(ExitCode::SUCCESS)
}

/// `memdb check`: exit status 1 when it finds problems.
pub(crate) fn check(dir: &std::path::Path, out: &Out) -> Result<ExitCode> {
    let report = open_for_reading(dir)?.check()?;
    out.emit(output::check_json(&report), || output::check_text(&report));
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `memdb repair`: exit status 1 when damage remains after an in-place repair.
pub(crate) fn repair(dir: &std::path::Path, out: &Out) -> Result<ExitCode> {
    match repair_store(dir, out)? {
        memdb::maintenance::Repaired::InPlace(report) => {
            out.emit(output::repair_json(&report), || {
                output::repair_text(&report)
            });
            if report.remaining > 0 {
                return Ok(ExitCode::from(1));
            }
        }
        memdb::maintenance::Repaired::Rebuilt(report) => {
            out.emit(output::rebuild_json(&report), || {
                output::rebuild_text(&report)
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn compact(args: CompactArgs, out: &Out) -> Result<ExitCode> {
    let CompactArgs { dir, all } = args;
    let mut store = open_store(&dir)?;
    let options = CompactOptions {
        victims: if all {
            Victims::All
        } else {
            Victims::DeadRatio(0.25)
        },
    };
    // Vector spaces first: their rebuild leaves old blocks dead, which the segment
    // compaction then reclaims.
    // A damaged vector block leaves its space as it is (for `memdb repair`), not the
    // compaction undone.
    let rebuilt = match store.compact_vectors(all) {
        Ok(rebuilt) => rebuilt,
        Err(e) if e.is_damage() => {
            eprintln!("memdb: warning: vector spaces not rebuilt ({e}): run `memdb repair`");
            Vec::new()
        }
        Err(e) => return Err(CliError::store(&dir, e)),
    };
    let report = store.compact(&options, &mut KeepEverything)?;
    let shrink = store.shrink_catalog()?;
    let mut json = output::compact_json(&report);
    json["vector_spaces_rebuilt"] = serde_json::json!(rebuilt);
    json["catalog_bytes_before"] = serde_json::json!(shrink.bytes_before);
    json["catalog_bytes_after"] = serde_json::json!(shrink.bytes_after);
    out.emit(json, || {
        let mut text = output::compact_text(&report);
        if !rebuilt.is_empty() {
            text.push_str(&format!("\nvector spaces rebuilt: {}", rebuilt.join(", ")));
        }
        text.push_str(&format!(
            "\ncatalog {} → {} bytes",
            shrink.bytes_before, shrink.bytes_after
        ));
        text
    });
    Ok(ExitCode::SUCCESS)
}
