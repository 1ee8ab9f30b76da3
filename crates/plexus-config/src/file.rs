//! Reading a whole config file: its `mcpServers` object, entry by entry.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Severity};
use crate::json::describe;
use crate::{ConfigError, JsonProblem, ServerConfig, ServerName};

/// The largest config file read, in bytes (4 MiB). Real files are a few kilobytes; the limit keeps a
/// wrong path (a log, a device) from being read into memory.
pub const MAX_FILE_SIZE: u64 = 4 * 1024 * 1024;

/// The key under which a config file lists its servers.
pub const SERVERS_KEY: &str = "mcpServers";

/// The servers of one config file, with every problem found in it.
///
/// Entries with errors are left out; the rest load. Other top-level keys (a settings file has many)
/// are ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    path: PathBuf,
    servers: BTreeMap<ServerName, ServerConfig>,
    diagnostics: Vec<Diagnostic>,
}

impl ConfigFile {
    /// Reads and parses the file at `path`.
    ///
    /// Fails if the file cannot be read, is larger than [`MAX_FILE_SIZE`], is not JSON, or its top
    /// level or its `mcpServers` is not an object. A file without `mcpServers` has no servers.
    pub fn load(path: impl AsRef<Path>) -> Result<ConfigFile, ConfigError> {
        let path = path.as_ref();
        let bytes = read_bounded(path, MAX_FILE_SIZE)?;
        ConfigFile::parse_bytes(&bytes, path)
    }

    /// Parses `text` as the contents of the file at `source_path` (used in messages only).
    pub fn parse(text: &str, source_path: impl AsRef<Path>) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse_bytes(text.as_bytes(), source_path.as_ref())
    }

    fn parse_bytes(bytes: &[u8], path: &Path) -> Result<ConfigFile, ConfigError> {
        let raw = RawFile::parse_bytes(bytes, path, &[])?;
        let mut file = ConfigFile {
            path: raw.path,
            servers: BTreeMap::new(),
            diagnostics: raw.diagnostics,
        };
        for (name, value) in &raw.entries {
            let definition = read_definition(&file.path, name, value, &raw.entries);
            file.diagnostics.extend(definition.diagnostics);
            if let Some((name, config)) = definition.server {
                file.servers.insert(name, config);
            }
        }
        Ok(file)
    }

    /// The file these servers came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The servers that loaded, by name.
    pub fn servers(&self) -> &BTreeMap<ServerName, ServerConfig> {
        &self.servers
    }

    /// The server called `name`, if it loaded.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.get(name)
    }

    /// Every warning and error, in the order found: file-level ones first, then entry by entry in
    /// name order.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether any entry was skipped because of an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The servers and the diagnostics, taken apart.
    pub fn into_parts(self) -> (BTreeMap<ServerName, ServerConfig>, Vec<Diagnostic>) {
        (self.servers, self.diagnostics)
    }
}

/// A config file read down to its raw entries, before any entry is checked or expanded.
#[derive(Debug)]
pub(crate) struct RawFile {
    /// The file.
    pub(crate) path: PathBuf,
    /// Whether the file has an `mcpServers` key at all (a managed file that has one is exclusive).
    pub(crate) has_servers: bool,
    /// The entries of `mcpServers` by name, as written; the last definition of a name wins.
    pub(crate) entries: BTreeMap<String, Value>,
    /// The other top-level keys that were asked for, as written.
    pub(crate) settings: BTreeMap<String, Value>,
    /// File-level warnings (repeated keys).
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl RawFile {
    /// Reads the file at `path`, keeping `mcpServers` and the top-level keys named in `keep`.
    pub(crate) fn load(path: &Path, keep: &[&str]) -> Result<RawFile, ConfigError> {
        let bytes = read_bounded(path, MAX_FILE_SIZE)?;
        RawFile::parse_bytes(&bytes, path, keep)
    }

    /// Like [`load`](Self::load), for a file plexus keeps in its home (the local settings): a
    /// symbolic link there is refused ([`SymlinkRefused`](crate::SymlinkRefused)), never followed.
    pub(crate) fn load_own(path: &Path, keep: &[&str]) -> Result<RawFile, ConfigError> {
        crate::refuse_symlink(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        RawFile::load(path, keep)
    }

    /// Like [`load`](Self::load), for a file named on the command line: it may also be a pipe
    /// (see [`crate::pipe`]).
    pub(crate) fn load_explicit(path: &Path, keep: &[&str]) -> Result<RawFile, ConfigError> {
        let is_special = std::fs::metadata(path).is_ok_and(|metadata| !metadata.is_file() && !metadata.is_dir());
        let bytes = if is_special {
            crate::pipe::read_pipe(path, MAX_FILE_SIZE)?
        } else {
            read_bounded(path, MAX_FILE_SIZE)?
        };
        RawFile::parse_bytes(&bytes, path, keep)
    }

    /// Parses `bytes` as the contents of the file at `path`.
    pub(crate) fn parse_bytes(bytes: &[u8], path: &Path, keep: &[&str]) -> Result<RawFile, ConfigError> {
        if bytes.len() as u64 > MAX_FILE_SIZE {
            return Err(ConfigError::TooLarge {
                path: path.to_owned(),
                limit: MAX_FILE_SIZE,
            });
        }
        // Some Windows editors start UTF-8 files with a byte order mark; JSON parsers do not expect it.
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let top_level = TopLevelSeed { keep }
            .deserialize(&mut deserializer)
            .and_then(|top_level| deserializer.end().map(|()| top_level))
            .map_err(|error| syntax_error(path, error))?;

        let top_level = match top_level {
            Shape::Object(top_level) => top_level,
            Shape::Other(found) => {
                return Err(ConfigError::NotAnObject {
                    path: path.to_owned(),
                    found: describe(&found),
                });
            }
        };
        let mut file = RawFile {
            path: path.to_owned(),
            has_servers: top_level.servers.is_some(),
            entries: BTreeMap::new(),
            settings: top_level.settings,
            diagnostics: Vec::new(),
        };
        let Some(servers_value) = top_level.servers else {
            return Ok(file);
        };
        let entries = match servers_value.shape {
            Shape::Object(entries) => entries,
            Shape::Other(found) => {
                return Err(ConfigError::ServersNotAnObject {
                    path: path.to_owned(),
                    found: describe(&found),
                });
            }
        };
        if servers_value.repeated {
            file.push(
                Severity::Warning,
                None,
                Some(SERVERS_KEY),
                "appears more than once; the last one is used",
            );
        }
        for name in &entries.repeated {
            file.push(
                Severity::Warning,
                Some(name),
                None,
                "defined more than once; the last definition is used",
            );
        }
        file.entries = entries.entries;
        Ok(file)
    }

    fn push(&mut self, severity: Severity, server: Option<&str>, field: Option<&str>, message: &str) {
        self.diagnostics.push(Diagnostic {
            severity,
            file: Some(self.path.clone()),
            server: server.map(str::to_owned),
            field: field.map(str::to_owned),
            message: message.to_owned(),
        });
    }
}

/// One entry of a file, checked: the server if it loaded, and every diagnostic about it (each
/// naming the file and the server).
pub(crate) struct Definition {
    /// The server, or `None` if its name or its entry has an error.
    pub(crate) server: Option<(ServerName, ServerConfig)>,
    /// Its warnings, and its errors if it did not load.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

/// Checks the entry `value` called `name` in the file at `path` (whose entries are `entries`),
/// taking its values literally. A name with characters other clients allow (spaces, dots) is
/// read as [`ServerName::sanitize`] makes it, with a warning, unless another entry of the file
/// has that name.
pub(crate) fn read_definition(path: &Path, name: &str, value: &Value, entries: &BTreeMap<String, Value>) -> Definition {
    let located = |mut diagnostic: Diagnostic| {
        diagnostic.file = Some(path.to_owned());
        diagnostic.server = Some(name.to_owned());
        diagnostic
    };
    // A name other clients accept (spaces, dots) is read as `plexus import` reads it, with a
    // warning; only an empty one is an error.
    let mut renamed = None;
    let server_name = match ServerName::new(name) {
        Ok(server_name) => server_name,
        Err(error) => match ServerName::sanitize(name) {
            Some(sanitized) if taken(name, &sanitized, entries) => {
                let message = format!(
                    "{error}; it cannot be renamed to {}, which another entry of this file has or would take",
                    crate::json::quote(sanitized.as_str())
                );
                return Definition {
                    server: None,
                    diagnostics: vec![located(Diagnostic::new(Severity::Error, None, message))],
                };
            }
            Some(sanitized) => {
                renamed = Some(located(Diagnostic::new(
                    Severity::Warning,
                    None,
                    crate::name::renamed(&sanitized),
                )));
                sanitized
            }
            None => {
                return Definition {
                    server: None,
                    diagnostics: vec![located(Diagnostic::new(Severity::Error, None, error.to_string()))],
                };
            }
        },
    };
    let mut definition = match ServerConfig::from_json(value) {
        Ok((config, warnings)) => Definition {
            server: Some((server_name, config)),
            diagnostics: warnings.into_iter().map(located).collect(),
        },
        Err(diagnostics) => Definition {
            server: None,
            diagnostics: diagnostics.into_iter().map(located).collect(),
        },
    };
    definition.diagnostics.splice(0..0, renamed);
    definition
}

/// Whether another entry of `entries` than `name` has the name `sanitized`, or would be renamed
/// to it too (`"a.b"` and `"a b"` both become `a_b`: neither may take it).
fn taken(name: &str, sanitized: &ServerName, entries: &BTreeMap<String, Value>) -> bool {
    entries.keys().any(|other| {
        other != name && (other == sanitized.as_str() || ServerName::sanitize(other).as_ref() == Some(sanitized))
    })
}

/// Reads at most `limit` bytes of the regular file at `path`, or says why not.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ConfigError> {
    let read_error = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    // Opening a FIFO would block until a writer appears, and a device may never end.
    if !metadata.is_file() {
        let what = if metadata.is_dir() {
            "it is a directory"
        } else {
            "it is a special file"
        };
        return Err(ConfigError::NotAFile {
            path: path.to_owned(),
            what,
        });
    }
    let too_large = || ConfigError::TooLarge {
        path: path.to_owned(),
        limit,
    };
    if metadata.len() > limit {
        return Err(too_large());
    }
    let file = File::open(path).map_err(read_error)?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    // The file may have grown since its size was read.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

pub(crate) fn syntax_error(path: &Path, error: serde_json::Error) -> ConfigError {
    let (line, column, source) = JsonProblem::located(error);
    ConfigError::Syntax {
        path: path.to_owned(),
        line,
        column,
        source,
    }
}

/// A JSON value that is either the object we look for or something else. For something else only a
/// description is needed, so arrays and objects in it are skipped rather than built.
enum Shape<T> {
    Object(T),
    Other(Value),
}

/// The value of `mcpServers`, and whether the key appeared more than once.
struct ServersValue {
    shape: Shape<Entries>,
    repeated: bool,
}

/// The entries of `mcpServers`: the last definition of each name wins (as in `JSON.parse`), and
/// names defined more than once are remembered for a warning.
struct Entries {
    entries: BTreeMap<String, Value>,
    repeated: BTreeSet<String>,
}

/// The top level: `mcpServers` if present, and the other keys asked for.
struct TopLevel {
    servers: Option<ServersValue>,
    settings: BTreeMap<String, Value>,
}

/// Visits the top level, keeping `mcpServers` and the keys in `keep`; the rest is skipped unread.
struct TopLevelSeed<'k> {
    keep: &'k [&'k str],
}

/// Visits the value of `mcpServers`, keeping entries in order with their duplicates noted.
struct ServersSeed;

/// The scalar and array cases shared by both visitors: anything but an object.
macro_rules! visit_non_objects {
    ($output:ty) => {
        fn visit_bool<E>(self, flag: bool) -> Result<$output, E> {
            Ok(Shape::Other(Value::Bool(flag)))
        }
        fn visit_i64<E>(self, number: i64) -> Result<$output, E> {
            Ok(Shape::Other(Value::from(number)))
        }
        fn visit_u64<E>(self, number: u64) -> Result<$output, E> {
            Ok(Shape::Other(Value::from(number)))
        }
        fn visit_f64<E>(self, number: f64) -> Result<$output, E> {
            Ok(Shape::Other(Value::from(number)))
        }
        fn visit_str<E>(self, _: &str) -> Result<$output, E> {
            Ok(Shape::Other(Value::String(String::new())))
        }
        fn visit_unit<E>(self) -> Result<$output, E> {
            Ok(Shape::Other(Value::Null))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$output, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Shape::Other(Value::Array(Vec::new())))
        }
    };
}

impl<'de> DeserializeSeed<'de> for TopLevelSeed<'_> {
    type Value = Shape<TopLevel>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevelSeed<'_> {
    type Value = Shape<TopLevel>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON object")
    }

    visit_non_objects!(Shape<TopLevel>);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut servers: Option<ServersValue> = None;
        let mut settings = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == SERVERS_KEY {
                let shape = map.next_value_seed(ServersSeed)?;
                servers = Some(ServersValue {
                    shape,
                    repeated: servers.is_some(),
                });
            } else if self.keep.contains(&key.as_str()) {
                settings.insert(key, map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Shape::Object(TopLevel { servers, settings }))
    }
}

impl<'de> DeserializeSeed<'de> for ServersSeed {
    type Value = Shape<Entries>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ServersSeed {
    type Value = Shape<Entries>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object of server entries")
    }

    visit_non_objects!(Shape<Entries>);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Entries {
            entries: BTreeMap::new(),
            repeated: BTreeSet::new(),
        };
        while let Some((name, value)) = map.next_entry::<String, Value>()? {
            if entries.entries.contains_key(&name) {
                entries.repeated.insert(name.clone());
            }
            entries.entries.insert(name, value);
        }
        Ok(Shape::Object(entries))
    }
}
