//! Lexicons as versioned artefacts of the store (issue 21 item 1): the scene catalogue a
//! store's gate uses, kept in the store's `settings` table (SPEC.md §5, §8.7) so that a
//! decision can name the lexicon that made it and an older lexicon can be read back.
//!
//! Keys: `gate_lexicon.<n>` holds version `n` (1, 2, …) as a JSON document `{"format": 1,
//! "created_ms", "origin", "words", "scenes"}` (`scenes`: the catalogue's TOML);
//! `gate_lexicon.current` and `gate_lexicon.latest` hold version numbers (decimal).
//!
//! Invariants:
//! - a version, once written, is never rewritten: installing writes `latest + 1` and points
//!   `current` at it, in one commit (the version is chosen inside the commit's transaction, so
//!   two installs never share a number);
//! - a stored document is untrusted on the way back: a damaged one is a typed error naming
//!   its key, never a panic and never a half-read catalogue.

use crate::error::StoreError;
use crate::handle::{Snapshot, Store};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use memdb_gate::{SceneError, Scenes};
use memdb_store::derived::{DerivedCommit, DerivedWrite};

const CURRENT: &str = "gate_lexicon.current";
const LATEST: &str = "gate_lexicon.latest";
/// The version of the stored document's shape.
const DOCUMENT_FORMAT: u32 = 1;

fn version_key(version: u32) -> String {
    format!("gate_lexicon.{version}")
}

/// A lexicon as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLexicon {
    /// Its version in this store (1, 2, …).
    pub version: u32,
    /// When it was installed (Unix ms).
    pub created_ms: i64,
    /// Where it came from, as the installer said (a file, `learned from …`).
    pub origin: String,
    /// The catalogue.
    pub scenes: Scenes,
}

impl StoredLexicon {
    /// The name a decision records: `v<version>`.
    pub fn label(&self) -> String {
        format!("v{}", self.version)
    }
}

#[derive(Serialize, Deserialize)]
struct Document {
    format: u32,
    created_ms: i64,
    origin: String,
    words: usize,
    scenes: String,
}

/// Why a stored lexicon cannot be read.
fn damaged(key: &str, why: impl std::fmt::Display) -> Error {
    StoreError::bad_row("settings", key, why).into()
}

fn parse_version(key: &str, text: &str) -> Result<u32> {
    text.parse::<u32>()
        .map_err(|_| damaged(key, format!("`{text}` is not a version number")))
}

struct Install {
    document: Document,
    version: Option<u32>,
    chosen: std::sync::Arc<std::sync::Mutex<Option<u32>>>,
}

impl DerivedWrite for Install {
    fn apply(self: Box<Self>, commit: &mut DerivedCommit<'_, '_>) -> memdb_store::Result<()> {
        use memdb_store::CatalogResult;
        use redb::ReadableTable;
        let mut settings = commit
            .txn()
            .open_table(memdb_store::catalog::SETTINGS)
            .ctx("open settings")?;
        let latest = match settings.get(LATEST).ctx("read settings")? {
            Some(v) => parse_version(LATEST, v.value())?,
            None => 0,
        };
        let version = latest
            .checked_add(1)
            .ok_or_else(|| damaged(LATEST, "no version number left"))?;
        if self.version.is_some_and(|v| v != version) {
            return Err(damaged(LATEST, "changed while the lexicon was installed").into());
        }
        let document =
            serde_json::to_string(&self.document).map_err(|e| damaged(&version_key(version), e))?;
        let number = version.to_string();
        settings
            .insert(version_key(version).as_str(), document.as_str())
            .ctx("write settings")?;
        settings
            .insert(LATEST, number.as_str())
            .ctx("write settings")?;
        settings
            .insert(CURRENT, number.as_str())
            .ctx("write settings")?;
        if let Ok(mut chosen) = self.chosen.lock() {
            *chosen = Some(version);
        }
        Ok(())
    }
}

/// Installs `scenes` as the store's next lexicon version and makes it current, in one durable
/// commit; returns the version.
pub fn install_lexicon(store: &Store, scenes: &Scenes, origin: &str) -> Result<u32> {
    let chosen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let mut batch = store.batch();
    batch.derived(Install {
        document: Document {
            format: DOCUMENT_FORMAT,
            created_ms: memdb_store::now_ms(),
            origin: origin.to_owned(),
            words: scenes.word_count(),
            scenes: scenes.to_toml(),
        },
        version: None,
        chosen: chosen.clone(),
    });
    batch.commit()?;
    let version = chosen
        .lock()
        .map_err(|_| StoreError::WriterPoisoned("a lexicon install panicked".into()))?
        .ok_or_else(|| damaged(LATEST, "the install commit chose no version"))?;
    Ok(version)
}

/// Makes the stored `version` current again (a roll-back or roll-forward); the versions
/// themselves do not change.
pub fn use_lexicon(store: &Store, version: u32) -> Result<()> {
    if stored_lexicon(&store.snapshot()?, Some(version))?.is_none() {
        return Err(Error::NoLexicon { version });
    }
    let mut batch = store.batch();
    batch.set_setting(CURRENT, version.to_string());
    batch.commit()?;
    Ok(())
}

/// Lexicon `version` (the current one when `None`) as of `snapshot`; `None` when the store
/// has none (or no such version).
pub fn stored_lexicon(snapshot: &Snapshot, version: Option<u32>) -> Result<Option<StoredLexicon>> {
    let version = match version {
        Some(v) => v,
        None => match snapshot.setting(CURRENT)? {
            Some(text) => parse_version(CURRENT, &text)?,
            None => return Ok(None),
        },
    };
    let key = version_key(version);
    let Some(text) = snapshot.setting(&key)? else {
        return Ok(None);
    };
    let document: Document = serde_json::from_str(&text).map_err(|e| damaged(&key, e))?;
    if document.format != DOCUMENT_FORMAT {
        return Err(damaged(
            &key,
            format!(
                "document format {}; this memdb reads {DOCUMENT_FORMAT}",
                document.format
            ),
        ));
    }
    let scenes = Scenes::from_toml(&document.scenes)
        .map_err(|e: SceneError| damaged(&key, format!("its scenes: {e}")))?;
    Ok(Some(StoredLexicon {
        version,
        created_ms: document.created_ms,
        origin: document.origin,
        scenes,
    }))
}

/// Every stored lexicon version, oldest first, and the current one's number. Found by a scan
/// of the `gate_lexicon.` keys, so a damaged `latest` cannot make it probe billions of keys.
pub fn stored_lexicons(snapshot: &Snapshot) -> Result<(Vec<StoredLexicon>, Option<u32>)> {
    use memdb_store::CatalogResult;
    let current = snapshot
        .setting(CURRENT)?
        .map(|text| parse_version(CURRENT, &text))
        .transpose()?;
    let mut versions: Vec<u32> = Vec::new();
    {
        let settings = snapshot
            .txn()
            .open_table(memdb_store::catalog::SETTINGS)
            .ctx("open settings")?;
        for row in settings
            .range::<&str>("gate_lexicon."..)
            .ctx("read settings")?
        {
            let (key, _) = row.ctx("read settings")?;
            let Some(rest) = key.value().strip_prefix("gate_lexicon.") else {
                break;
            };
            if let Ok(version) = rest.parse::<u32>() {
                versions.push(version);
            }
        }
    }
    versions.sort_unstable();
    let mut all = Vec::new();
    for version in versions {
        if let Some(lexicon) = stored_lexicon(snapshot, Some(version))? {
            all.push(lexicon);
        }
    }
    Ok((all, current))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    fn catalogue(word: &str) -> Scenes {
        Scenes::from_toml(&format!(
            "version = 1\n[[scene]]\nname = \"s\"\nwords = [\"{word}\"]\n"
        ))
        .unwrap()
    }

    #[test]
    fn installs_are_new_versions_and_the_old_ones_stay_readable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
        assert_eq!(
            stored_lexicon(&store.snapshot().unwrap(), None).unwrap(),
            None
        );
        assert_eq!(
            install_lexicon(&store, &catalogue("dentist"), "a.toml").unwrap(),
            1
        );
        assert_eq!(
            install_lexicon(&store, &catalogue("wedding"), "b.toml").unwrap(),
            2
        );
        let snap = store.snapshot().unwrap();
        let current = stored_lexicon(&snap, None).unwrap().unwrap();
        assert_eq!((current.version, current.origin.as_str()), (2, "b.toml"));
        assert_eq!(current.scenes, catalogue("wedding"));
        let first = stored_lexicon(&snap, Some(1)).unwrap().unwrap();
        assert_eq!(first.scenes, catalogue("dentist"));
        drop(snap);
        use_lexicon(&store, 1).unwrap();
        assert!(matches!(
            use_lexicon(&store, 7),
            Err(Error::NoLexicon { version: 7 })
        ));
        drop(store);
        // Durable: a reopened store has both versions, version 1 current.
        let store = Store::open(dir.path().join("s"), Options::default()).unwrap();
        let (all, current) = stored_lexicons(&store.snapshot().unwrap()).unwrap();
        assert_eq!(all.iter().map(|l| l.version).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(current, Some(1));
        // The next install is version 3, whatever is current.
        assert_eq!(install_lexicon(&store, &catalogue("x"), "c").unwrap(), 3);
        // Versions list in number order past 9 (keys sort as text).
        for n in 4..=11 {
            assert_eq!(install_lexicon(&store, &catalogue("x"), "d").unwrap(), n);
        }
        let (all, current) = stored_lexicons(&store.snapshot().unwrap()).unwrap();
        assert_eq!(
            all.iter().map(|l| l.version).collect::<Vec<_>>(),
            (1..=11).collect::<Vec<_>>()
        );
        assert_eq!(current, Some(11));
    }

    #[test]
    fn a_damaged_stored_lexicon_is_a_typed_error_naming_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path().join("s"), Options::default()).unwrap();
        install_lexicon(&store, &catalogue("dentist"), "a").unwrap();
        for bad in [
            "not json",
            r#"{"format": 2, "created_ms": 0, "origin": "", "words": 1, "scenes": ""}"#,
            r#"{"format": 1, "created_ms": 0, "origin": "", "words": 1, "scenes": "version = 1\n[[scene]]\nname = \"x\"\nwords = []\n"}"#,
        ] {
            let mut batch = store.batch();
            batch.set_setting("gate_lexicon.1", bad.to_owned());
            batch.commit().unwrap();
            let err = stored_lexicon(&store.snapshot().unwrap(), None).unwrap_err();
            assert!(err.to_string().contains("gate_lexicon.1"), "{err}");
        }
        let mut batch = store.batch();
        batch.set_setting(CURRENT, "one".to_owned());
        batch.commit().unwrap();
        let err = stored_lexicon(&store.snapshot().unwrap(), None).unwrap_err();
        assert!(err.to_string().contains("gate_lexicon.current"), "{err}");
    }
}
