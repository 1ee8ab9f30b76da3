//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): a server's skills, each a
//! directory of files served as resources (`skill://…/SKILL.md` and its supporting files), listed
//! with `skills/list`, fetched one by one with `skills/get`, and browsed with
//! `resources/directory/read`. An entry carries the skill's front matter verbatim and a manifest of
//! its files with their SHA-256 digests and sizes, against which a host verifies what it reads.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::{CacheScope, JsonObject, Resource, ServerCapabilities};

/// The extension's identifier, the key of its entry in the server's `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The most files one skill may list that every host must accept (`SKILL.md` included).
pub const MAX_SKILL_RESOURCES: usize = 512;

/// The largest total size (the sum of its files' `size`) of a skill every host must accept:
/// 16 MiB.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// The digest of a skill file's raw bytes as the manifest gives it: `sha256:` and the SHA-256
/// hash in 64 lowercase hexadecimal digits.
pub fn file_digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    let mut digest = String::with_capacity(7 + 64);
    digest.push_str("sha256:");
    for byte in sha2::Sha256::digest(bytes) {
        let _ = write!(digest, "{byte:02x}");
    }
    digest
}

/// What a server declares of the extension, read from its capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkillsSupport {
    /// `directoryRead`: the server answers `resources/directory/read`.
    pub directory_read: bool,
}

impl SkillsSupport {
    /// The extension's settings when `capabilities.extensions` declares it (an object), else
    /// `None` (the client must not call the extension's methods then).
    pub fn of(capabilities: &ServerCapabilities) -> Option<SkillsSupport> {
        let declared = capabilities.extension(SKILLS_EXTENSION)?;
        Some(SkillsSupport {
            directory_read: declared.get("directoryRead").and_then(Value::as_bool) == Some(true),
        })
    }
}

/// One file of a skill: its URI, the SHA-256 digest of its raw bytes (`sha256:` and 64
/// lowercase hex digits) and their length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{hex}` of the file's raw bytes.
    pub digest: String,
    /// The file's length in bytes.
    pub size: u64,
}

/// A skill's files (`resources`): a complete manifest, or `"dynamic"` when its content is
/// generated and no stable digests can be given. Any other value does not decode (a host must not
/// load such an entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each once.
    Files(Vec<SkillResource>),
    /// Generated content: nothing to verify against.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Files(Vec<SkillResource>),
            Word(String),
        }
        match Wire::deserialize(deserializer) {
            Ok(Wire::Files(files)) => Ok(SkillResources::Files(files)),
            Ok(Wire::Word(word)) if word == "dynamic" => Ok(SkillResources::Dynamic),
            Ok(Wire::Word(word)) => Err(serde::de::Error::custom(format!(
                "resources is {word:?}: expected an array of files or \"dynamic\""
            ))),
            Err(_) => Err(serde::de::Error::custom(
                "resources is neither an array of files (uri, digest, size) nor \"dynamic\"",
            )),
        }
    }
}

/// The entry of one skill, as `skills/list` and `skills/get` give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` front matter, verbatim as a JSON object (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// The skill's files.
    pub resources: SkillResources,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Skill {
    /// The front matter's `name` (the skill's label; the URI identifies it).
    pub fn name(&self) -> &str {
        self.frontmatter.get("name").and_then(Value::as_str).unwrap_or_default()
    }

    /// The front matter's `description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The listed file at `uri`, if the manifest lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|file| file.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// The skill's root: its `SKILL.md` URI without the `/SKILL.md` suffix (relative references
    /// resolve against it). `None` when the URI does not end with `/SKILL.md`.
    pub fn root(&self) -> Option<&str> {
        self.uri.strip_suffix("/SKILL.md")
    }
}

paginated_result!(
    cacheable
    /// The result of `skills/list`: one page of skill entries (an entry is never split across
    /// pages).
    ListSkillsResult,
    /// The skills on this page.
    skills: Skill
);

/// The params of `skills/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetSkillRequestParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

/// The result of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The skill's entry.
    pub skill: Skill,
    /// How long the entry stays current, in milliseconds; read it through `ttl_ms()`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse the entry from a cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `resources/directory/read`: a directory resource and a page cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryRequestParams {
    /// The directory's URI (no trailing slash).
    pub uri: String,
    /// Where the previous page ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

paginated_result!(
    /// The result of `resources/directory/read`: one page of a directory's direct children (a
    /// subdirectory has the MIME type `inode/directory`).
    ReadDirectoryResult,
    /// The children on this page.
    resources: Resource
);

/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_round_trips_and_resources_are_files_or_dynamic() {
        let listed = json!({
            "resultType": "complete",
            "skills": [
                {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d", "license": "MIT"},
                 "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 3}]},
                {"uri": "skill://b/SKILL.md", "frontmatter": {"name": "b", "description": "e"}, "resources": "dynamic"}
            ],
            "ttlMs": 5, "cacheScope": "public"
        });
        let page: ListSkillsResult = serde_json::from_value(listed.clone()).unwrap();
        assert_eq!(page.skills[0].name(), "a");
        assert_eq!(page.skills[0].root(), Some("skill://a"));
        assert_eq!(page.skills[0].file("skill://a/SKILL.md").map(|f| f.size), Some(3));
        assert_eq!(page.skills[1].resources, SkillResources::Dynamic);
        assert_eq!(page.ttl_ms(), 5);
        assert_eq!(serde_json::to_value(&page).unwrap(), listed);
        for bad in [json!("static"), json!({"uri": "x"}), json!(null)] {
            let entry = json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": bad});
            assert!(serde_json::from_value::<Skill>(entry).is_err(), "{bad}");
        }
        let missing = json!({"uri": "skill://a/SKILL.md", "frontmatter": {}});
        assert!(serde_json::from_value::<Skill>(missing).is_err());
    }

    #[test]
    fn a_digest_is_sha256_in_lowercase_hex() {
        assert_eq!(
            file_digest(b"hello\n"),
            "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
    }

    #[test]
    fn support_is_read_from_the_extensions_capability() {
        let capabilities = |value: Value| -> ServerCapabilities { serde_json::from_value(value).unwrap() };
        assert_eq!(SkillsSupport::of(&capabilities(json!({"resources": {}}))), None);
        assert_eq!(
            SkillsSupport::of(&capabilities(json!({"extensions": {SKILLS_EXTENSION: {}}}))),
            Some(SkillsSupport { directory_read: false })
        );
        assert_eq!(
            SkillsSupport::of(&capabilities(
                json!({"extensions": {SKILLS_EXTENSION: {"directoryRead": true}}})
            )),
            Some(SkillsSupport { directory_read: true })
        );
    }
}
