//! The era verdicts of a plexus home, `<home>/mcp-era-verdicts.json`: the protocol version a
//! `server/discover` probe of each server settled on, so that the next start of the same server
//! costs no probe ([`EraChoice::Remembered`](plexus_client::EraChoice::Remembered)); a verdict the
//! server contradicts is corrected on the spot and the new one recorded.
//!
//! A verdict is keyed like the pool's connection cache (the server's name and its expanded entry,
//! [`plexus_config::cache_key`]), hashed (SHA-256), so that a changed entry is probed again and
//! no header or environment value of an entry reaches the file. The file holds at most
//! [`MAX_VERDICTS`] verdicts (the oldest go first) and is read up to [`MAX_FILE_SIZE`] bytes; a
//! file that cannot be read or parsed counts as empty (with a warning) and is replaced on the next
//! write, which is atomic. A symbolic link in the file's place is neither read nor replaced
//! ([`plexus_config::SymlinkRefused`]): it counts as empty, with a warning, and recording fails.
//!
//! ```
//! use plexus::EraVerdicts;
//! use plexus::config::ServerConfig;
//! use plexus::protocol::ProtocolVersion;
//!
//! let home = tempfile::tempdir().unwrap();
//! let verdicts = EraVerdicts::new(home.path());
//! let (config, _) = ServerConfig::from_json(&serde_json::json!({"command": "srv"})).unwrap();
//! assert_eq!(verdicts.get("srv", &config), None);
//! verdicts.record("srv", &config, ProtocolVersion::V2025_11_25).unwrap();
//! assert_eq!(verdicts.get("srv", &config), Some(ProtocolVersion::V2025_11_25));
//! ```

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use plexus_config::ServerConfig;
use plexus_protocol::ProtocolVersion;
use serde::{Deserialize, Serialize};

/// The file's name in the plexus home.
pub const ERA_VERDICTS_FILE: &str = "mcp-era-verdicts.json";

/// The most verdicts the file keeps.
pub const MAX_VERDICTS: usize = 1024;

/// The largest file read, in bytes.
pub const MAX_FILE_SIZE: u64 = 1024 * 1024;

/// Why a verdict could not be recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EraVerdictError {
    /// Writing the file failed.
    #[error("cannot write the era verdicts")]
    Write(#[source] plexus_config::WriteError),
}

/// The era verdicts file of one plexus home (see the [module documentation](self)). Clones share
/// the file and its in-process lock.
#[derive(Debug, Clone)]
pub struct EraVerdicts {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// One verdict as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Verdict {
    /// The version the probe settled on.
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
    /// When, in milliseconds since the Unix epoch.
    at: u64,
}

/// The file's content: hashed key → verdict.
#[derive(Debug, Default, Serialize, Deserialize)]
struct VerdictFile {
    verdicts: BTreeMap<String, Verdict>,
}

impl EraVerdicts {
    /// The verdicts of the plexus home `home`.
    pub fn new(home: &Path) -> EraVerdicts {
        EraVerdicts::at(home.join(ERA_VERDICTS_FILE))
    }

    /// The verdicts kept in the file `path`.
    pub fn at(path: impl Into<PathBuf>) -> EraVerdicts {
        EraVerdicts {
            path: path.into(),
            lock: Arc::default(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The version a probe of server `name` configured as `config` settled on, if one was
    /// recorded (and is a version this build speaks).
    pub fn get(&self, name: &str, config: &ServerConfig) -> Option<ProtocolVersion> {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let file = self.load();
        file.verdicts.get(&key(name, config))?.protocol_version.parse().ok()
    }

    /// Records that a probe of server `name` configured as `config` settled on `version`.
    pub fn record(&self, name: &str, config: &ServerConfig, version: ProtocolVersion) -> Result<(), EraVerdictError> {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut file = self.load();
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
        file.verdicts.insert(
            key(name, config),
            Verdict {
                protocol_version: version.as_str().to_owned(),
                at,
            },
        );
        while file.verdicts.len() > MAX_VERDICTS {
            let oldest = file
                .verdicts
                .iter()
                .min_by_key(|(_, verdict)| verdict.at)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(oldest) => file.verdicts.remove(&oldest),
                None => break,
            };
        }
        // Serializing a map of strings and numbers cannot fail.
        let text = serde_json::to_string_pretty(&file).unwrap_or_default();
        plexus_config::write_atomically(&self.path, text.as_bytes(), 0o600).map_err(EraVerdictError::Write)
    }

    /// The file's verdicts; none when it is missing, too large, or not what this module writes.
    fn load(&self) -> VerdictFile {
        let mut text = Vec::new();
        let read = plexus_config::open_no_follow(std::fs::OpenOptions::new().read(true), &self.path)
            .and_then(|file| file.take(MAX_FILE_SIZE + 1).read_to_end(&mut text));
        match read {
            Ok(_) if text.len() as u64 > MAX_FILE_SIZE => {
                tracing::warn!(file = %self.path.display(), "the era verdicts file is over {MAX_FILE_SIZE} bytes; it is ignored and will be replaced");
                VerdictFile::default()
            }
            Ok(_) => serde_json::from_slice(&text).unwrap_or_else(|e| {
                tracing::warn!(file = %self.path.display(), "the era verdicts file is unreadable ({e}); it is ignored and will be replaced");
                VerdictFile::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => VerdictFile::default(),
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "cannot read the era verdicts file: {e}");
                VerdictFile::default()
            }
        }
    }
}

/// The hashed key of server `name` configured as `config`.
fn key(name: &str, config: &ServerConfig) -> String {
    plexus_config::sha256_hex(plexus_config::cache_key(name, config).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(command: &str) -> ServerConfig {
        ServerConfig::from_json(&serde_json::json!({"command": command, "env": {"TOKEN": "secret-value"}}))
            .unwrap()
            .0
    }

    #[test]
    fn verdicts_are_kept_per_entry_without_its_values() {
        let home = tempfile::tempdir().unwrap();
        let verdicts = EraVerdicts::new(home.path());
        verdicts
            .record("a", &config("one"), ProtocolVersion::V2026_07_28)
            .unwrap();
        verdicts
            .record("a", &config("two"), ProtocolVersion::V2025_06_18)
            .unwrap();
        assert_eq!(verdicts.get("a", &config("one")), Some(ProtocolVersion::V2026_07_28));
        assert_eq!(verdicts.get("a", &config("two")), Some(ProtocolVersion::V2025_06_18));
        assert_eq!(verdicts.get("b", &config("one")), None);
        let text = std::fs::read_to_string(verdicts.path()).unwrap();
        assert!(!text.contains("secret-value") && !text.contains("one"), "{text}");
    }

    #[test]
    fn a_link_in_the_files_place_is_neither_read_nor_replaced() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let other = EraVerdicts::new(elsewhere.path());
        other.record("a", &config("one"), ProtocolVersion::V2025_06_18).unwrap();
        let before = std::fs::read_to_string(other.path()).unwrap();
        let verdicts = EraVerdicts::new(home.path());
        std::os::unix::fs::symlink(other.path(), verdicts.path()).unwrap();
        assert_eq!(verdicts.get("a", &config("one")), None);
        let error = verdicts
            .record("a", &config("one"), ProtocolVersion::V2025_11_25)
            .unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&error),
            format!(
                "cannot write the era verdicts: cannot write {}: it is a symbolic link, and plexus neither follows nor \
                 replaces a link where it keeps its own files; remove the link",
                verdicts.path().display()
            )
        );
        assert_eq!(std::fs::read_to_string(other.path()).unwrap(), before);
        assert!(
            std::fs::symlink_metadata(verdicts.path())
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_broken_file_counts_as_empty_and_is_replaced() {
        let home = tempfile::tempdir().unwrap();
        let verdicts = EraVerdicts::new(home.path());
        std::fs::write(verdicts.path(), "{not json").unwrap();
        assert_eq!(verdicts.get("a", &config("one")), None);
        verdicts
            .record("a", &config("one"), ProtocolVersion::V2025_11_25)
            .unwrap();
        assert_eq!(verdicts.get("a", &config("one")), Some(ProtocolVersion::V2025_11_25));
    }
}
