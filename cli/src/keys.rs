//! Where the CLI finds what unlocks an encrypted store, never on the command line itself: the
//! environment variable `MEMDB_PASSPHRASE` when it is set, else the first line read from
//! `--passphrase-fd N`, else the 32 bytes of `--key-file FILE`, else a prompt on the terminal
//! (input hidden). A new passphrase (`init --encrypt`, `rekey`) comes from
//! `MEMDB_NEW_PASSPHRASE` (rekey only; `init` takes `MEMDB_PASSPHRASE`), `--new-passphrase-fd`,
//! `--new-key-file`, or the prompt, typed twice.
//!
//! A store that is not encrypted is opened without asking anything. The secret is asked once per
//! process and kept (zeroized when dropped) for every open that follows.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use memdb::crypto::Secret;
use memdb::{Options, Store};

use crate::error::{CliError, Result};

/// The environment variable a passphrase is read from (exactly this name: scripts use it).
pub(crate) const PASSPHRASE_ENV: &str = "MEMDB_PASSPHRASE";
/// The environment variable `memdb rekey` reads the new passphrase from.
pub(crate) const NEW_PASSPHRASE_ENV: &str = "MEMDB_NEW_PASSPHRASE";

/// Where a secret may come from besides the environment and the prompt.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecretFlags {
    /// Read the passphrase's first line from this open descriptor.
    pub(crate) passphrase_fd: Option<u32>,
    /// A 32-byte key file.
    pub(crate) key_file: Option<PathBuf>,
}

static FLAGS: OnceLock<SecretFlags> = OnceLock::new();
static UNLOCKED: Mutex<Option<Arc<Secret>>> = Mutex::new(None);

/// Records the global `--passphrase-fd` / `--key-file` flags (once, at start).
pub(crate) fn set_flags(flags: SecretFlags) {
    let _ = FLAGS.set(flags);
}

/// The global flags as recorded.
pub(crate) fn flags() -> SecretFlags {
    FLAGS.get().cloned().unwrap_or_default()
}

fn secret_error(reason: impl std::fmt::Display) -> CliError {
    CliError::Secret(reason.to_string())
}

/// The options to open the store at `dir` with: for an encrypted store, with its secret.
pub(crate) fn options_for(dir: &Path) -> Result<Options> {
    let mut options = Options::default();
    if Store::is_encrypted_at(dir) {
        options.secret = Some(unlock_secret(dir)?);
    }
    Ok(options)
}

/// The secret that unlocks the store at `dir`, asked once per process.
fn unlock_secret(dir: &Path) -> Result<Arc<Secret>> {
    let mut unlocked = UNLOCKED
        .lock()
        .map_err(|_| secret_error("the passphrase cache is unusable"))?;
    if let Some(secret) = unlocked.as_ref() {
        return Ok(Arc::clone(secret));
    }
    let flags = flags();
    let secret = Arc::new(find_secret(
        PASSPHRASE_ENV,
        flags.passphrase_fd,
        flags.key_file.as_deref(),
        &format!("passphrase for {}: ", dir.display()),
        false,
    )?);
    *unlocked = Some(Arc::clone(&secret));
    Ok(secret)
}

/// The secret for a new key: from `env`, `fd`, `key_file` or the prompt (typed twice).
pub(crate) fn new_secret(
    env: &str,
    fd: Option<u32>,
    key_file: Option<&Path>,
    what: &str,
) -> Result<Secret> {
    find_secret(env, fd, key_file, &format!("{what}: "), true)
}

fn find_secret(
    env: &str,
    fd: Option<u32>,
    key_file: Option<&Path>,
    prompt: &str,
    confirm: bool,
) -> Result<Secret> {
    if let Ok(passphrase) = std::env::var(env) {
        return Secret::passphrase(&zeroizing(passphrase)).map_err(secret_error);
    }
    if let Some(fd) = fd {
        // /dev/fd/N opens the descriptor the caller passed without taking ownership of it.
        let path = PathBuf::from(format!("/dev/fd/{fd}"));
        let text = zeroizing(
            std::fs::read_to_string(&path)
                .map_err(|e| secret_error(format!("--passphrase-fd {fd}: {e}")))?,
        );
        let line = text.lines().next().unwrap_or("");
        return Secret::passphrase(line).map_err(secret_error);
    }
    if let Some(file) = key_file {
        let bytes = zeroize::Zeroizing::new(
            std::fs::read(file).map_err(|e| CliError::io("read key file", file, e))?,
        );
        return Secret::key_file(&bytes).map_err(secret_error);
    }
    let typed = zeroizing(rpassword::prompt_password(prompt).map_err(|e| {
        secret_error(format!(
            "the store is encrypted and no terminal could ask for its passphrase ({e}): set {PASSPHRASE_ENV} or pass --passphrase-fd N or --key-file FILE"
        ))
    })?);
    if confirm {
        let again = zeroizing(
            rpassword::prompt_password("again: ").map_err(|e| secret_error(e.to_string()))?,
        );
        if *again != *typed {
            return Err(secret_error(
                "the two passphrases differ: nothing was changed",
            ));
        }
    }
    Secret::passphrase(&typed).map_err(secret_error)
}

fn zeroizing(text: String) -> zeroize::Zeroizing<String> {
    zeroize::Zeroizing::new(text)
}
