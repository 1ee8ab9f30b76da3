//! The Hub's skills (the skills extension, SEP-2640): every connected server's skill entries,
//! each known by its server and its URI (two servers may serve the same URI, and names are
//! labels, not identities), and the loading of one skill, verified against its current entry.

use plexus_client::{LoadedSkill, SkillError};
use plexus_protocol::skills::{Skill, SkillsSupport};

use crate::hub::Hub;
use crate::hub_content::Listed;
use crate::hub_error::HubError;

/// A skill of one of the Hub's servers.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// The server that serves it (half of its identity; the entry's URI is the other).
    pub server: String,
    /// Its entry, as the server lists it.
    pub skill: Skill,
}

impl Hub {
    /// The skill entries of every connected server that declares the skills extension, by
    /// server, then in the server's order. No skill file is read.
    pub async fn skills(&self) -> Listed<SkillEntry, HubError> {
        let mut found = Listed::default();
        for server in self.offering(|capabilities| SkillsSupport::of(capabilities).is_some()) {
            let listed = match self.connected(&server).await {
                Ok(client) => client.list_skills().await.map_err(|source| HubError::Skill {
                    server: server.clone(),
                    source,
                }),
                Err(e) => Err(e),
            };
            match listed {
                Ok(skills) => found.entries.extend(skills.into_iter().map(|skill| SkillEntry {
                    server: server.clone(),
                    skill,
                })),
                Err(e) => found.failures.push(e),
            }
        }
        found
    }

    /// Loads the skill whose `SKILL.md` is `uri` on `server`: its current entry (`skills/get`),
    /// then its `SKILL.md`, verified against the entry (size, digest, front matter). A skill that
    /// fails verification is an error, and its content is not given.
    pub async fn load_skill(&self, server: &str, uri: &str) -> Result<LoadedSkill, HubError> {
        let client = self.connected(server).await?;
        let failed = |source: SkillError| HubError::Skill {
            server: server.to_owned(),
            source,
        };
        let entry = client.get_skill(uri).await.map_err(failed)?;
        client.load_skill(&entry).await.map_err(failed)
    }
}
