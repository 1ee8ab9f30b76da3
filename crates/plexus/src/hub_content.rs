//! The Hub's prompts (named like tools, `mcp__<server>__<prompt>`), resources (named by
//! `@<server>:<uri>` references) and resource templates, from every connected server that
//! offers them, and a ping of one server.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use plexus_client::Client;
use plexus_pool::PoolError;
use plexus_protocol::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate};

use crate::hub::Hub;
use crate::hub_error::HubError;

/// What a listing across the servers found, and the servers whose list could not be had (`E`:
/// why, a pool's error for the lists the pool caches).
#[derive(Debug, Clone)]
pub struct Listed<T, E = PoolError> {
    /// The entries, by server.
    pub entries: Vec<T>,
    /// Why a connected server's list could not be had (its entries are missing).
    pub failures: Vec<E>,
}

impl<T, E> Default for Listed<T, E> {
    fn default() -> Self {
        Listed {
            entries: Vec::new(),
            failures: Vec::new(),
        }
    }
}

/// A resource template of one of the Hub's servers.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateEntry {
    /// The server.
    pub server: String,
    /// The template as the server lists it.
    pub template: ResourceTemplate,
}

/// A prompt of one of the Hub's servers.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEntry {
    /// `mcp__<server>__<prompt>`, named as tools are (stable, unique, resolved by the Hub).
    pub name: String,
    /// The server.
    pub server: String,
    /// The prompt as the server lists it.
    pub prompt: Prompt,
}

/// A resource of one of the Hub's servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceEntry {
    /// `@<server>:<uri>`: how a host (or its user) refers to it.
    pub reference: String,
    /// The server.
    pub server: String,
    /// The resource as the server lists it.
    pub resource: Resource,
}

/// The server and URI of a `@server:uri` reference (a server name never holds `:`).
pub fn parse_reference(reference: &str) -> Option<(&str, &str)> {
    let (server, uri) = reference.strip_prefix('@')?.split_once(':')?;
    (!server.is_empty() && !uri.is_empty()).then_some((server, uri))
}

impl Hub {
    /// Every prompt of every connected server that offers prompts, by server and name.
    pub async fn prompts(&self) -> Listed<PromptEntry> {
        let mut found = Listed::default();
        let mut listed = Vec::new();
        for server in self.offering(|caps| caps.prompts.is_some()) {
            match self.pool().prompts(&server).await {
                Ok(prompts) => listed.push((server, prompts)),
                Err(e) => found.failures.push(e),
            }
        }
        let mut index = self.prompt_names();
        for (server, prompts) in listed {
            let mut prompts: Vec<&Prompt> = prompts.iter().collect();
            prompts.sort_by(|a, b| a.name.cmp(&b.name));
            for prompt in prompts {
                found.entries.push(PromptEntry {
                    name: index.insert(&server, &prompt.name).to_owned(),
                    server: server.clone(),
                    prompt: prompt.clone(),
                });
            }
        }
        found
    }

    /// The prompt `name` (as [`prompts`](Self::prompts) names it) with `arguments`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, HubError> {
        let known = self.prompts().await.entries;
        let Some(entry) = known.iter().find(|entry| entry.name == name) else {
            return Err(HubError::UnknownPrompt {
                name: name.to_owned(),
                count: known.len(),
            });
        };
        let client = self.connected(&entry.server).await?;
        let arguments = (!arguments.is_empty()).then_some(arguments);
        client
            .get_prompt(&entry.prompt.name, arguments)
            .await
            .map_err(|source| HubError::Server {
                server: entry.server.clone(),
                source: Box::new(source.into()),
            })
    }

    /// Every resource of every connected server that offers resources, by server and the
    /// server's order.
    pub async fn resources(&self) -> Listed<ResourceEntry> {
        let mut found = Listed::default();
        for server in self.offering(|caps| caps.resources.is_some()) {
            match self.pool().resources(&server).await {
                Ok(resources) => found.entries.extend(resources.iter().map(|resource| ResourceEntry {
                    reference: format!("@{server}:{}", resource.uri),
                    server: server.clone(),
                    resource: resource.clone(),
                })),
                Err(e) => found.failures.push(e),
            }
        }
        found
    }

    /// Every resource template of every connected server that offers resources, by server and
    /// the server's order.
    pub async fn resource_templates(&self) -> Listed<TemplateEntry> {
        let mut found = Listed::default();
        for server in self.offering(|caps| caps.resources.is_some()) {
            match self.pool().resource_templates(&server).await {
                Ok(templates) => found.entries.extend(templates.iter().map(|template| TemplateEntry {
                    server: server.clone(),
                    template: template.clone(),
                })),
                Err(e) => found.failures.push(e),
            }
        }
        found
    }

    /// Reads the resource a `@server:uri` reference names (the server connected on demand).
    pub async fn read_resource(&self, reference: &str) -> Result<ReadResourceResult, HubError> {
        let Some((server, uri)) = parse_reference(reference) else {
            return Err(HubError::BadReference {
                reference: reference.to_owned(),
            });
        };
        self.read_resource_of(server, uri).await
    }

    /// Reads resource `uri` of `server` (connected on demand).
    pub async fn read_resource_of(&self, server: &str, uri: &str) -> Result<ReadResourceResult, HubError> {
        let client = self.connected(server).await?;
        client.read_resource(uri).await.map_err(|source| HubError::Server {
            server: server.to_owned(),
            source: Box::new(source.into()),
        })
    }

    /// Pings `server` (connected on demand) and says how long the answer took.
    pub async fn ping(&self, server: &str) -> Result<Duration, HubError> {
        let client = self.connected(server).await?;
        let started = Instant::now();
        client.ping().await.map_err(|source| HubError::Server {
            server: server.to_owned(),
            source: Box::new(source.into()),
        })?;
        Ok(started.elapsed())
    }

    /// The session of `server`, connected on demand.
    pub(crate) async fn connected(&self, server: &str) -> Result<Client, HubError> {
        self.pool()
            .ensure_connected(server)
            .await
            .map_err(|source| HubError::Server {
                server: server.to_owned(),
                source: Box::new(source.into()),
            })
    }

    /// The connected servers whose capabilities pass `offers`, by name.
    pub(crate) fn offering(&self, offers: impl Fn(&plexus_protocol::ServerCapabilities) -> bool) -> Vec<String> {
        let mut servers: Vec<String> = self
            .pool()
            .names()
            .into_iter()
            .filter(|name| {
                self.pool()
                    .client(name)
                    .is_some_and(|client| offers(&client.server().capabilities))
            })
            .collect();
        servers.sort();
        servers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_a_server_and_a_uri() {
        assert_eq!(
            parse_reference("@docs:file:///a/b.md"),
            Some(("docs", "file:///a/b.md"))
        );
        assert_eq!(parse_reference("docs:file:///a"), None);
        assert_eq!(parse_reference("@:x"), None);
        assert_eq!(parse_reference("@docs:"), None);
    }
}
