//! The stateless scenarios' look at a server's resources and prompts: each listed resource is
//! read and each listed prompt is got (its required arguments filled with
//! [`PLACEHOLDER_TEXT`](crate::PLACEHOLDER_TEXT)), so that the suite sees the `Mcp-Method` and
//! `Mcp-Name` headers of `resources/list`, `resources/read`, `prompts/list` and `prompts/get`.

use std::collections::BTreeMap;

use crate::fill::PLACEHOLDER_TEXT;
use crate::scenario::ScenarioError;

/// The most resources read and prompts got (each), whatever the server lists.
pub const MAX_BROWSED: usize = 8;

/// Lists, reads and gets what the server declares (resources, prompts), adding a line per step to
/// `transcript`.
pub async fn browse(client: &plexus::Client, transcript: &mut Vec<String>) -> Result<(), ScenarioError> {
    let failed = |what: String| move |source| ScenarioError::Request { what, source };
    let capabilities = &client.server().capabilities;
    if capabilities.resources.is_some() {
        let resources = client
            .list_resources()
            .await
            .map_err(failed("resources/list".to_owned()))?;
        for resource in resources.iter().take(MAX_BROWSED) {
            let read = client
                .read_resource(&resource.uri)
                .await
                .map_err(failed(format!("resources/read {}", resource.uri)))?;
            transcript.push(format!("read {}: {} part(s)", resource.uri, read.contents.len()));
        }
    }
    if capabilities.prompts.is_some() {
        let prompts = client.list_prompts().await.map_err(failed("prompts/list".to_owned()))?;
        for prompt in prompts.iter().take(MAX_BROWSED) {
            let arguments: BTreeMap<String, String> = prompt
                .arguments
                .iter()
                .flatten()
                .filter(|argument| argument.required == Some(true))
                .map(|argument| (argument.name.clone(), PLACEHOLDER_TEXT.to_owned()))
                .collect();
            let got = client
                .get_prompt(&prompt.name, (!arguments.is_empty()).then_some(arguments))
                .await
                .map_err(failed(format!("prompts/get {}", prompt.name)))?;
            transcript.push(format!("got prompt {}: {} message(s)", prompt.name, got.messages.len()));
        }
    }
    Ok(())
}
