//! `plexus skills` and `plexus skill`: the skills servers serve (the skills extension), listed
//! from their entries alone, and one skill loaded, its `SKILL.md` verified against its entry
//! before it is printed.

use plexus::SkillEntry;
use plexus::protocol::skills::SkillResources;
use serde_json::json;

use crate::connect::close;
use crate::content::{Shown, column, finish_listing, started};
use crate::output::print_json;
use crate::sources::Configured;
use crate::{Outcome, terminal};

const SKILLS: Shown<SkillEntry> = Shown {
    nothing: "no skills",
    columns: &[
        column("SERVER", false),
        column("NAME", false),
        column("FILES", false),
        column("URI", true),
        column("DESCRIPTION", true),
    ],
    row: |entry| {
        let files = match &entry.skill.resources {
            SkillResources::Files(files) => {
                let bytes: u64 = files.iter().map(|file| file.size).fold(0, u64::saturating_add);
                format!("{} ({bytes} B)", files.len())
            }
            SkillResources::Dynamic => "dynamic".to_owned(),
        };
        vec![
            entry.server.clone(),
            entry.skill.name().to_owned(),
            files,
            entry.skill.uri.clone(),
            entry.skill.description().to_owned(),
        ]
    },
    json: |entry| {
        json!({
            "server": entry.server,
            "uri": entry.skill.uri,
            "name": entry.skill.name(),
            "frontmatter": entry.skill.frontmatter,
            "resources": entry.skill.resources,
        })
    },
};

/// `plexus skills [SERVER]`.
pub(crate) async fn skills_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    match started(&configured, only).await {
        Ok((hub, count)) => {
            let listed = hub.skills().await;
            finish_listing(hub, count, listed, &SKILLS, json).await
        }
        Err(outcome) => outcome,
    }
}

/// `plexus skill SERVER URI`: the verified `SKILL.md`, or why it was refused.
pub(crate) async fn skill_command(configured: Configured, server: &str, uri: &str, json: bool) -> Outcome {
    let (hub, _) = match started(&configured, Some(server)).await {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let loaded = hub.load_skill(server, uri).await;
    close(&hub).await;
    match loaded {
        Ok(skill) if json => {
            print_json(&json!({
                "server": server,
                "uri": skill.entry().uri,
                "frontmatter": skill.entry().frontmatter,
                "instructions": skill.instructions(),
            }));
            Outcome::Ok
        }
        Ok(skill) => {
            terminal::print_block(skill.instructions());
            Outcome::Ok
        }
        Err(e) => {
            terminal::say_error(&e);
            Outcome::Connection
        }
    }
}
