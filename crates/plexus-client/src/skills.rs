//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640) as a host uses it: list a
//! server's skills (entries only: no file is read ahead of need), get one by URI, browse a
//! directory, and load a skill, which reads its `SKILL.md` and verifies it against the entry
//! (its size, its SHA-256 digest, and its YAML front matter field by field) before anything uses
//! it. A loaded skill reads its supporting files only when asked, and only those its entry lists,
//! each verified the same way. A digest match proves only that the server's entry and content
//! agree, not that either is trustworthy.

use base64::Engine as _;
use plexus_protocol::skills::{
    GetSkillRequestParams, GetSkillResult, MAX_SKILL_BYTES, MAX_SKILL_RESOURCES, ReadDirectoryRequestParams,
    ReadDirectoryResult, Skill, SkillResource, SkillResources, SkillsSupport, file_digest,
};
use plexus_protocol::{ResourceContents, methods};

use crate::ClientError;
use crate::client::Client;
use crate::request::RequestOptions;

/// Why a skill could not be listed, fetched or loaded. Every verification failure leaves the
/// content unused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The server does not declare the extension (or, for a directory read, `directoryRead`).
    #[error("server {server:?} does not declare {what}")]
    NotDeclared {
        /// The server.
        server: String,
        /// What it lacks.
        what: &'static str,
    },
    /// A request failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The entry cannot be loaded as it is.
    #[error("skill {uri}: {problem}")]
    InvalidEntry {
        /// The skill's `SKILL.md` URI.
        uri: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A file is not what the entry says: the content is not used.
    #[error("skill file {uri}: {problem}; the content is not used")]
    Verification {
        /// The file.
        uri: String,
        /// How it differs.
        problem: VerificationProblem,
    },
    /// A read within a loaded skill named a file its entry does not list.
    #[error("skill {skill}: {uri} is not one of its listed files")]
    Unlisted {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The file asked for.
        uri: String,
    },
}

/// How a skill file failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerificationProblem {
    /// Its length is not the entry's `size`.
    #[error("{got} bytes where the entry says {expected}")]
    Size {
        /// The entry's size.
        expected: u64,
        /// What arrived.
        got: u64,
    },
    /// Its SHA-256 digest is not the entry's.
    #[error("its digest is {got}, not the entry's {expected}")]
    Digest {
        /// The entry's digest.
        expected: String,
        /// The content's.
        got: String,
    },
    /// The `SKILL.md` front matter differs from the entry's in this field (or cannot be read).
    #[error("its front matter differs from the entry's: {0}")]
    Frontmatter(crate::FrontMatterError),
    /// The server's answer held no content for the file, or content that cannot be decoded.
    #[error("{0}")]
    Unreadable(String),
    /// A dynamic skill's content went past the size every host must accept.
    #[error("more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
}

/// A skill loaded from its entry: its `SKILL.md`, verified, and the entry it was verified
/// against, which every later read of its files is held to.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    entry: Skill,
    instructions: String,
}

impl LoadedSkill {
    /// The entry the skill was loaded from.
    pub fn entry(&self) -> &Skill {
        &self.entry
    }

    /// The `SKILL.md` text (front matter included), verified.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// The URI that `path` names within the skill: a full URI as it is, a relative path resolved
    /// against the skill's root (the directory of its `SKILL.md`). `None` for a path that leaves
    /// the root (`..`) or is empty.
    pub fn resolve(&self, path: &str) -> Option<String> {
        if path.contains("://") {
            return Some(path.to_owned());
        }
        let relative = path.trim_start_matches("./");
        let escapes = relative.split('/').any(|segment| segment == ".." || segment.is_empty());
        if escapes {
            return None;
        }
        Some(format!("{}/{relative}", self.entry.root()?))
    }

    /// Reads one of the skill's files (`path`: a URI, or relative to the skill's root), which the
    /// entry must list, and verifies it (size and digest) before giving back its bytes. A skill
    /// whose resources are dynamic offers nothing to verify against: its files are read as they
    /// come, within [`MAX_SKILL_BYTES`].
    pub async fn read(&self, client: &Client, path: &str) -> Result<Vec<u8>, SkillError> {
        let unlisted = || SkillError::Unlisted {
            skill: self.entry.uri.clone(),
            uri: path.to_owned(),
        };
        let uri = self.resolve(path).ok_or_else(unlisted)?;
        match &self.entry.resources {
            SkillResources::Files(_) => {
                let listed = self.entry.file(&uri).ok_or_else(unlisted)?;
                let bytes = read_bytes(client, &uri).await?;
                verify(listed, &bytes)?;
                Ok(bytes)
            }
            SkillResources::Dynamic => {
                let within = self
                    .entry
                    .root()
                    .is_some_and(|root| uri.starts_with(&format!("{root}/")));
                if !within {
                    return Err(unlisted());
                }
                let bytes = read_bytes(client, &uri).await?;
                within_limit(&uri, &bytes)?;
                Ok(bytes)
            }
        }
    }
}

impl Client {
    /// What the server declares of the skills extension (`None`: it does not serve skills).
    pub fn skills_support(&self) -> Option<SkillsSupport> {
        SkillsSupport::of(&self.server().capabilities)
    }

    fn require_skills(&self) -> Result<SkillsSupport, SkillError> {
        self.skills_support().ok_or_else(|| SkillError::NotDeclared {
            server: self.name().to_owned(),
            what: "the skills extension (io.modelcontextprotocol/skills)",
        })
    }

    /// Every skill entry the server lists (`skills/list`, following `nextCursor` within the
    /// session's bounds). No file is read: a host fetches a skill's files when it loads it.
    pub async fn list_skills(&self) -> Result<Vec<Skill>, SkillError> {
        self.require_skills()?;
        Ok(self.skills_listing().await?.items)
    }

    /// The entry of the skill whose `SKILL.md` is `uri` (`skills/get`); a skill the server does
    /// not serve is its -32602 error.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, SkillError> {
        self.require_skills()?;
        let params = GetSkillRequestParams { uri: uri.to_owned() };
        let result: GetSkillResult = self
            .request(methods::SKILLS_GET, Some(&params), &RequestOptions::default())
            .await?;
        Ok(result.skill)
    }

    /// One page of the directory `uri`'s children (`resources/directory/read`), when the server
    /// declares `directoryRead`.
    pub async fn read_directory(&self, uri: &str, cursor: Option<String>) -> Result<ReadDirectoryResult, SkillError> {
        if !self.require_skills()?.directory_read {
            return Err(SkillError::NotDeclared {
                server: self.name().to_owned(),
                what: "directoryRead in the skills extension",
            });
        }
        let params = ReadDirectoryRequestParams {
            uri: uri.to_owned(),
            cursor,
        };
        Ok(self
            .request(
                methods::RESOURCES_DIRECTORY_READ,
                Some(&params),
                &RequestOptions::default(),
            )
            .await?)
    }

    /// Loads `skill`: checks the entry (its limits, its `SKILL.md` listed), reads the `SKILL.md`
    /// and verifies it against the entry (size, digest, then its front matter field by field).
    /// Nothing else is read. A skill whose resources are dynamic is loaded unverified but for its
    /// front matter.
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, SkillError> {
        let invalid = |problem: String| SkillError::InvalidEntry {
            uri: skill.uri.clone(),
            problem,
        };
        if skill.root().is_none() {
            return Err(invalid("its URI does not end with /SKILL.md".to_owned()));
        }
        let listed = match &skill.resources {
            SkillResources::Files(files) => {
                check_limits(files).map_err(invalid)?;
                Some(
                    skill
                        .file(&skill.uri)
                        .ok_or_else(|| invalid("its resources do not list its SKILL.md".to_owned()))?,
                )
            }
            SkillResources::Dynamic => None,
        };
        let bytes = read_bytes(self, &skill.uri).await?;
        match listed {
            Some(listed) => verify(listed, &bytes)?,
            None => within_limit(&skill.uri, &bytes)?,
        }
        let failed = |problem| SkillError::Verification {
            uri: skill.uri.clone(),
            problem,
        };
        let instructions = String::from_utf8(bytes).map_err(|_| {
            failed(VerificationProblem::Unreadable(
                "a SKILL.md that is not UTF-8".to_owned(),
            ))
        })?;
        crate::frontmatter::compare(&instructions, &skill.frontmatter)
            .map_err(|why| failed(VerificationProblem::Frontmatter(why)))?;
        Ok(LoadedSkill {
            entry: skill.clone(),
            instructions,
        })
    }
}

/// Whether a complete manifest is within the limits every host must accept.
fn check_limits(files: &[SkillResource]) -> Result<(), String> {
    if files.len() > MAX_SKILL_RESOURCES {
        return Err(format!(
            "it lists {} files, more than the {MAX_SKILL_RESOURCES} a host must accept",
            files.len()
        ));
    }
    let total: u64 = files.iter().map(|file| file.size).fold(0, u64::saturating_add);
    if total > MAX_SKILL_BYTES {
        return Err(format!(
            "its files add up to {total} bytes, more than the {MAX_SKILL_BYTES} a host must accept"
        ));
    }
    Ok(())
}

/// The raw bytes of the resource `uri` (its text, or its decoded blob).
async fn read_bytes(client: &Client, uri: &str) -> Result<Vec<u8>, SkillError> {
    let unreadable = |why: String| SkillError::Verification {
        uri: uri.to_owned(),
        problem: VerificationProblem::Unreadable(why),
    };
    let read = client.read_resource(uri).await?;
    let contents = read
        .contents
        .into_iter()
        .find(|contents| contents.uri() == uri)
        .ok_or_else(|| unreadable("the server's resources/read result has no contents for it".to_owned()))?;
    match contents {
        ResourceContents::Text(text) => Ok(text.text.into_bytes()),
        ResourceContents::Blob(blob) => base64::engine::general_purpose::STANDARD
            .decode(blob.blob.as_bytes())
            .map_err(|e| unreadable(format!("its blob is not base64: {e}"))),
    }
}

/// Verifies `bytes` against `listed`: the size first, then the digest.
fn verify(listed: &SkillResource, bytes: &[u8]) -> Result<(), SkillError> {
    let failed = |problem| SkillError::Verification {
        uri: listed.uri.clone(),
        problem,
    };
    let got = bytes.len() as u64;
    if got != listed.size {
        return Err(failed(VerificationProblem::Size {
            expected: listed.size,
            got,
        }));
    }
    let digest = file_digest(bytes);
    if digest != listed.digest {
        return Err(failed(VerificationProblem::Digest {
            expected: listed.digest.clone(),
            got: digest,
        }));
    }
    Ok(())
}

/// A dynamic skill's file within the total size every host must accept.
fn within_limit(uri: &str, bytes: &[u8]) -> Result<(), SkillError> {
    if bytes.len() as u64 > MAX_SKILL_BYTES {
        return Err(SkillError::Verification {
            uri: uri.to_owned(),
            problem: VerificationProblem::TooLarge { limit: MAX_SKILL_BYTES },
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_then_digests_are_checked() {
        let content = b"hello\n";
        let listed = SkillResource {
            uri: "skill://a/SKILL.md".to_owned(),
            digest: file_digest(content),
            size: 6,
        };
        assert!(verify(&listed, content).is_ok());
        let Err(SkillError::Verification { problem, .. }) = verify(&listed, b"hello!\n") else {
            panic!()
        };
        assert_eq!(problem, VerificationProblem::Size { expected: 6, got: 7 });
        let Err(SkillError::Verification { problem, .. }) = verify(&listed, b"hellO\n") else {
            panic!()
        };
        assert!(matches!(problem, VerificationProblem::Digest { .. }), "{problem}");
    }

    #[test]
    fn limits_are_checked_from_the_entry() {
        let file = |n: usize, size: u64| SkillResource {
            uri: format!("skill://a/{n}"),
            digest: String::new(),
            size,
        };
        assert!(check_limits(&(0..512).map(|n| file(n, 1)).collect::<Vec<_>>()).is_ok());
        assert!(check_limits(&(0..513).map(|n| file(n, 1)).collect::<Vec<_>>()).is_err());
        assert!(check_limits(&[file(0, MAX_SKILL_BYTES)]).is_ok());
        assert!(check_limits(&[file(0, MAX_SKILL_BYTES), file(1, 1)]).is_err());
        assert!(check_limits(&[file(0, u64::MAX), file(1, u64::MAX)]).is_err());
    }
}
