//! The skills scenarios (SEP-2640) as a host plays them: the skills of a server that declares the
//! extension are listed, and no file is read for that. In the scenarios that hand the client a
//! skill to verify (`sep-2640-client-verify-*`), the first listed skill is loaded, as a host loads
//! a skill its model asks for: its `SKILL.md` is read and verified against the entry (size,
//! digest, front matter), and only a skill that passes has its other files read (each verified).

use plexus::client::SkillError;
use plexus::protocol::skills::SkillResources;

use crate::scenario::ScenarioError;

/// The scenarios in which the client loads a listed skill.
const LOADING_SCENARIOS: &str = "sep-2640-client-verify";

/// Lists the server's skills when it declares the extension, and loads the first in the
/// scenarios that ask for it, adding a line per step to `transcript`. A skill that fails
/// verification is a line, not an error: refusing it is the host's part.
pub async fn skills(
    client: &plexus::Client,
    scenario: &str,
    transcript: &mut Vec<String>,
) -> Result<(), ScenarioError> {
    let failed = |what: &str| {
        let what = what.to_owned();
        move |source| ScenarioError::Skill { what, source }
    };
    if client.skills_support().is_none() {
        return Ok(());
    }
    let skills = client.list_skills().await.map_err(failed("skills/list"))?;
    transcript.push(format!(
        "skills: {}",
        skills
            .iter()
            .map(|skill| skill.uri.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let Some(skill) = skills.first().filter(|_| scenario.starts_with(LOADING_SCENARIOS)) else {
        return Ok(());
    };
    let loaded = match client.load_skill(skill).await {
        Ok(loaded) => loaded,
        Err(refused @ (SkillError::Verification { .. } | SkillError::InvalidEntry { .. })) => {
            transcript.push(format!("refused to load {}: {refused}", skill.uri));
            return Ok(());
        }
        Err(other) => return Err(failed(&format!("loading {}", skill.uri))(other)),
    };
    transcript.push(format!("loaded {} ({} bytes)", skill.uri, loaded.instructions().len()));
    if let SkillResources::Files(files) = &skill.resources {
        for file in files.iter().filter(|file| file.uri != skill.uri) {
            match loaded.read(client, &file.uri).await {
                Ok(bytes) => transcript.push(format!("read {} ({} bytes, verified)", file.uri, bytes.len())),
                Err(refused @ SkillError::Verification { .. }) => transcript.push(format!("refused {refused}")),
                Err(other) => return Err(failed(&format!("reading {}", file.uri))(other)),
            }
        }
    }
    Ok(())
}
