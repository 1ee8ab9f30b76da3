//! Importing servers from the config files of other MCP clients: Claude Desktop, VS Code, Cursor
//! and Claude Code.
//!
//! Each source's entries are converted to plexus entries (variable syntax, missing `type`,
//! source-only fields), checked like any entry, and returned with a note for everything that was
//! changed or skipped. Nothing is written here: [`Import::write_to`] adds the result to a
//! [`SettingsEdit`].

mod claude_code;
mod claude_desktop;
mod convert;
mod cursor;
mod jsonc;
mod vscode;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::expand::references;
use crate::file::{read_bounded, syntax_error};
use crate::json::{describe, quote};
use crate::{ConfigError, Environment, ServerName, SettingsEdit, WriteError};

/// The largest file imported, in bytes (64 MiB): `~/.claude.json` keeps history and grows well
/// beyond a config file.
pub const MAX_IMPORT_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// A client whose config file can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportSource {
    /// Claude Desktop's `claude_desktop_config.json` (`mcpServers`).
    ClaudeDesktop,
    /// VS Code's `.vscode/mcp.json` (`servers`, `inputs`), or a user `settings.json` (`mcp`).
    VsCode,
    /// Cursor's `.cursor/mcp.json` or `~/.cursor/mcp.json` (`mcpServers`).
    Cursor,
    /// Claude Code's `~/.claude.json` (user and per-project `mcpServers`) or a `.mcp.json`.
    ClaudeCode,
}

impl ImportSource {
    /// Every source.
    pub const ALL: [ImportSource; 4] = [
        ImportSource::ClaudeDesktop,
        ImportSource::VsCode,
        ImportSource::Cursor,
        ImportSource::ClaudeCode,
    ];

    /// The name `--from` takes: `claude-desktop`, `vscode`, `cursor`, `claude-code`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImportSource::ClaudeDesktop => "claude-desktop",
            ImportSource::VsCode => "vscode",
            ImportSource::Cursor => "cursor",
            ImportSource::ClaudeCode => "claude-code",
        }
    }

    /// The files looked at when none is given, in order; the first that exists is imported.
    pub fn default_files(self, context: &ImportContext) -> Vec<PathBuf> {
        let home = &context.user_home;
        let project = &context.project_dir;
        match self {
            ImportSource::ClaudeDesktop => {
                let mut files = vec![
                    home.join("Library/Application Support/Claude/claude_desktop_config.json"),
                    home.join(".config/Claude/claude_desktop_config.json"),
                ];
                if let Some(app_data) = context.env.get("APPDATA") {
                    files.push(Path::new(&app_data).join("Claude/claude_desktop_config.json"));
                }
                files
            }
            // The workspace's file first, then the user profile's `mcp.json` (VS Code 1.102 and
            // later keep the user's servers there, in the workspace file's format).
            ImportSource::VsCode => {
                let mut files = vec![
                    project.join(".vscode/mcp.json"),
                    home.join(".config/Code/User/mcp.json"),
                    home.join("Library/Application Support/Code/User/mcp.json"),
                ];
                if let Some(app_data) = context.env.get("APPDATA") {
                    files.push(Path::new(&app_data).join("Code/User/mcp.json"));
                }
                files
            }
            ImportSource::Cursor => vec![project.join(".cursor/mcp.json"), home.join(".cursor/mcp.json")],
            ImportSource::ClaudeCode => vec![home.join(".claude.json"), project.join(".mcp.json")],
        }
    }
}

impl fmt::Display for ImportSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`ImportSource`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown import source {given:?}; expected one of \"claude-desktop\", \"vscode\", \"cursor\", \"claude-code\"")]
pub struct UnknownImportSource {
    /// What was given.
    pub given: String,
}

impl FromStr for ImportSource {
    type Err = UnknownImportSource;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ImportSource::ALL
            .into_iter()
            .find(|source| source.as_str() == name)
            .ok_or_else(|| UnknownImportSource { given: name.to_owned() })
    }
}

/// What an import needs to know about the machine: the user's real home (for default files and
/// `${userHome}`), the project (for `${workspaceFolder}` and project files), and the environment
/// (for checking entries).
#[derive(Debug, Clone)]
pub struct ImportContext {
    /// The user's home directory (not the plexus home).
    pub user_home: PathBuf,
    /// The project directory.
    pub project_dir: PathBuf,
    /// The environment entries are checked with.
    pub env: Environment,
}

/// Why nothing could be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// No file was given and none of the default files exists.
    #[error("no {from} config found; looked at {}; name the file to import", list(tried))]
    NoFile {
        /// The source.
        from: ImportSource,
        /// The files looked at.
        tried: Vec<PathBuf>,
    },
    /// The file cannot be read or is not JSON (with line and column).
    #[error(transparent)]
    Read(#[from] ConfigError),
    /// The file has no servers where the source keeps them, or they are not an object.
    #[error("{}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        problem: ShapeProblem,
    },
}

/// What is wrong with the shape of a file to import ([`ImportError::Shape`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// The top level is not a JSON object.
    #[error("the top level must be a JSON object, found {found}")]
    TopNotAnObject {
        /// What it is instead (the value, cut short).
        found: String,
    },
    /// A field on the way to the servers is not an object.
    #[error("field {}: expected an object, found {found}", quote(.field))]
    NotAnObject {
        /// The field's path.
        field: String,
        /// What it is instead.
        found: String,
    },
    /// The servers' field is not an object.
    #[error("field {}: expected an object that maps each server's name to its settings, found {found}", quote(.field))]
    ServersNotAnObject {
        /// The field's path.
        field: String,
        /// What it is instead.
        found: String,
    },
    /// The file has no servers where the source keeps them.
    #[error("no \"{key}\" object; is this {expected}?")]
    NoServers {
        /// Where the source keeps its servers (`mcpServers`, `servers`).
        key: &'static str,
        /// The file the source's servers are in (`Cursor's mcp.json`, …).
        expected: &'static str,
    },
}

fn list(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|path| path.display().to_string()).collect();
    shown.join(", ")
}

/// What happened to something during conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// It was converted to plexus's form.
    Changed,
    /// It was left out.
    Skipped,
    /// It was kept, but needs the user's attention.
    Warning,
}

impl NoteKind {
    /// `changed`, `skipped` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Changed => "changed",
            NoteKind::Skipped => "skipped",
            NoteKind::Warning => "warning",
        }
    }
}

/// One thing changed or skipped during an import. `Display`:
/// `skipped: server "x": field "envFile": plexus does not read env files; …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportNote {
    /// Changed, skipped or a warning.
    pub kind: NoteKind,
    /// The server (its name in the source file), if the note is about one.
    pub server: Option<String>,
    /// The field inside the entry, if the note is about one.
    pub field: Option<String>,
    /// What happened and why.
    pub message: String,
}

impl fmt::Display for ImportNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.kind.as_str())?;
        if let Some(server) = &self.server {
            write!(f, "server {}: ", quote(server))?;
        }
        if let Some(field) = &self.field {
            write!(f, "field {}: ", quote(field))?;
        }
        f.write_str(&self.message)
    }
}

/// A VS Code input (`${input:id}`) turned into an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportInput {
    /// The input's id in the VS Code file.
    pub id: String,
    /// The variable that replaces it: `${VARIABLE}` in the entries.
    pub variable: String,
    /// The input's description (the prompt VS Code showed).
    pub description: Option<String>,
    /// Whether VS Code hid what was typed (a secret).
    pub password: bool,
}

/// One converted server.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedServer {
    /// Its name in plexus (the source's name, with characters plexus does not allow replaced).
    pub name: ServerName,
    /// The entry to write.
    pub entry: Value,
    /// Where it was found in the source file: `mcpServers`, `servers`,
    /// `projects["/path"].mcpServers`.
    pub origin: String,
}

/// The result of converting one file.
#[derive(Debug, Clone)]
pub struct Import {
    /// The source.
    pub source: ImportSource,
    /// The file read.
    pub file: PathBuf,
    /// The servers converted, in name order.
    pub servers: Vec<ImportedServer>,
    /// Everything changed or skipped, and warnings.
    pub notes: Vec<ImportNote>,
    /// The VS Code inputs the servers use, each now a variable to set.
    pub inputs: Vec<ImportInput>,
}

/// What [`Import::write_to`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Servers added to the file.
    pub added: Vec<ServerName>,
    /// Servers whose existing entry was replaced (only when overwriting).
    pub replaced: Vec<ServerName>,
    /// Servers left out because the file already defines them.
    pub kept_existing: Vec<ServerName>,
}

impl Import {
    /// Puts `value` in place of every reference to `variable` (`${VARIABLE}` or
    /// `${VARIABLE:-default}`) in the servers' strings: the answer to an input asked for on a
    /// terminal. The value is written into the entries as plain text. Returns how many references
    /// were replaced.
    pub fn fill_input(&mut self, variable: &str, value: &str) -> usize {
        let mut replaced = 0;
        for server in &mut self.servers {
            convert::for_each_string(&mut server.entry, &mut |text| {
                let mut out = String::new();
                let mut copied = 0;
                for reference in references(text) {
                    let name = reference.body.split_once(":-").map_or(reference.body, |(n, _)| n);
                    if name == variable {
                        out.push_str(&text[copied..reference.start]);
                        out.push_str(value);
                        copied = reference.end;
                        replaced += 1;
                    }
                }
                if copied > 0 {
                    out.push_str(&text[copied..]);
                    *text = out;
                }
            });
        }
        replaced
    }

    /// Adds the servers to `edit` (not yet written: call [`SettingsEdit::commit`]). A server the
    /// file already defines is kept as it is unless `overwrite` is set.
    pub fn write_to(&self, edit: &mut SettingsEdit, overwrite: bool) -> Result<WriteOutcome, WriteError> {
        let existing = edit.servers();
        let mut outcome = WriteOutcome::default();
        for server in &self.servers {
            let exists = existing.contains_key(server.name.as_str());
            if exists && !overwrite {
                outcome.kept_existing.push(server.name.clone());
                continue;
            }
            edit.set_server(&server.name, &server.entry)?;
            if exists {
                outcome.replaced.push(server.name.clone());
            } else {
                outcome.added.push(server.name.clone());
            }
        }
        Ok(outcome)
    }
}

/// The servers one source keeps in one place of its file.
pub(crate) struct Group<'v> {
    /// Where: `mcpServers`, `servers`, `projects["/p"].mcpServers`.
    pub(crate) origin: String,
    /// The entries by name.
    pub(crate) servers: &'v Map<String, Value>,
}

/// The object under `key` of `value`: `Ok(None)` if absent, `Err` (naming the field) if
/// it is not an object. `path` is where `value` is, for the message (`""` at the top level).
pub(crate) fn object_at<'v>(
    value: &'v Value,
    path: &str,
    key: &str,
) -> Result<Option<&'v Map<String, Value>>, ShapeProblem> {
    let Value::Object(object) = value else {
        return Err(if path.is_empty() {
            ShapeProblem::TopNotAnObject { found: describe(value) }
        } else {
            ShapeProblem::NotAnObject {
                field: path.to_owned(),
                found: describe(value),
            }
        });
    };
    match object.get(key) {
        None => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(other) => Err(ShapeProblem::ServersNotAnObject {
            field: crate::json::key_path(path, key),
            found: describe(other),
        }),
    }
}

/// Reads `file` (or the first default file that exists) and converts its servers.
pub fn import_servers(
    source: ImportSource,
    file: Option<&Path>,
    context: &ImportContext,
) -> Result<Import, ImportError> {
    let path = match file {
        Some(file) => file.to_owned(),
        None => {
            let tried = source.default_files(context);
            tried
                .iter()
                .find(|path| path.is_file())
                .cloned()
                .ok_or(ImportError::NoFile { from: source, tried })?
        }
    };
    let bytes = read_bounded(&path, MAX_IMPORT_FILE_SIZE)?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    let text = std::str::from_utf8(bytes).map_or_else(|_| String::from_utf8_lossy(bytes).into_owned(), jsonc::strip);
    let top: Value = serde_json::from_str(&text).map_err(|error| syntax_error(&path, error))?;
    let shape = |problem| ImportError::Shape {
        path: path.clone(),
        problem,
    };
    let mut import = Import {
        source,
        file: path.clone(),
        servers: Vec::new(),
        notes: Vec::new(),
        inputs: Vec::new(),
    };
    let mut converter = convert::Converter::new(source, context);
    let groups = match source {
        ImportSource::ClaudeDesktop => claude_desktop::groups(&top).map_err(shape)?,
        ImportSource::Cursor => cursor::groups(&top).map_err(shape)?,
        ImportSource::ClaudeCode => claude_code::groups(&top, context).map_err(shape)?,
        ImportSource::VsCode => {
            converter.declare_inputs(vscode::inputs(&top, &mut import.notes));
            vscode::groups(&top).map_err(shape)?
        }
    };
    let mut converted: BTreeMap<ServerName, (String, ImportedServer)> = BTreeMap::new();
    for group in groups {
        for (original, entry) in group.servers {
            let Some((name, entry)) = converter.convert(original, entry, &mut import.notes) else {
                continue;
            };
            if let Some((previous_original, previous)) = converted.get(&name) {
                if previous.origin == group.origin {
                    import.notes.push(convert::note(
                        NoteKind::Skipped,
                        original,
                        None,
                        format!(
                            "its plexus name {} is taken by server {}",
                            quote(name.as_str()),
                            quote(previous_original)
                        ),
                    ));
                    continue;
                }
                import.notes.push(convert::note(
                    NoteKind::Warning,
                    original,
                    None,
                    format!(
                        "also defined in {}; the entry from {} is used",
                        previous.origin, group.origin
                    ),
                ));
            }
            let server = ImportedServer {
                name: name.clone(),
                entry,
                origin: group.origin.clone(),
            };
            converted.insert(name, (original.clone(), server));
        }
    }
    import.servers = converted.into_values().map(|(_, server)| server).collect();
    import.inputs = converter.finish(&mut import.notes);
    Ok(import)
}
