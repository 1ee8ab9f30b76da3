//! Typed server entries: one variant per server kind, and their JSON form as users write it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use url::Url;

use crate::ServerKind;

/// One `mcpServers` entry, typed by its kind.
///
/// Parse one with [`ServerConfig::from_json`] (or as part of a file with
/// [`ConfigFile`](crate::ConfigFile)); write it back with [`ServerConfig::to_json`], which gives the
/// camelCase form users write and keeps fields this crate does not know.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerConfig {
    /// `"type": "stdio"` or no `type`: a local child process.
    Stdio(StdioEntry),
    /// `"type": "sse"`: legacy HTTP+SSE.
    Sse(HttpEntry),
    /// `"type": "http"` or `"streamable-http"`: Streamable HTTP.
    Http(HttpEntry),
    /// `"type": "ws"`: WebSocket.
    Ws(WsEntry),
    /// `"type": "sse-ide"`: an IDE extension's server on legacy HTTP+SSE.
    SseIde(SseIdeEntry),
    /// `"type": "ws-ide"`: an IDE extension's server over WebSocket.
    WsIde(WsIdeEntry),
    /// `"type": "claudeai-proxy"`: a server behind the claude.ai connector proxy.
    ClaudeAiProxy(ClaudeAiProxyEntry),
    /// A server in the host's own process, which the host registered by this entry's name
    /// (never read from a file).
    InProcess(InProcessEntry),
}

/// Fields every kind of entry has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerOptions {
    /// `timeout`: the connect timeout for this server, written in milliseconds; `None` means the
    /// default. Values below [`MIN_TIMEOUT`](crate::MIN_TIMEOUT) are ignored when parsing.
    pub timeout: Option<Duration>,
    /// `protocolVersion`: `"auto"` (the client probes the server with `server/discover` and
    /// speaks the era it answers in) or the protocol revision to speak (`"2026-07-28"` pins the
    /// stateless era, an earlier one the `initialize` handshake offering it); `None`: the host's
    /// default.
    pub protocol_version: Option<String>,
    /// `probeTimeout`: how long a `server/discover` probe of this server waits for its answer
    /// before the server is taken for one of the `initialize` era, written in milliseconds;
    /// `None` means the default (about a second). Values below
    /// [`MIN_PROBE_TIMEOUT`](crate::MIN_PROBE_TIMEOUT) are ignored when parsing.
    pub probe_timeout: Option<Duration>,
    /// `disabled`: the server is configured but not connected.
    pub disabled: bool,
    /// `required`: a host that waits for its servers to be ready fails when this one cannot
    /// connect (see plexus-pool's readiness wait).
    pub required: bool,
    /// `enabledTools`: glob patterns (`*`, `?`) of the only tools of this server the host's tool
    /// pool gets; `None` means every tool.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabledTools`: glob patterns of tools left out of the pool (they win over
    /// `enabledTools`).
    pub disabled_tools: Vec<String>,
    /// Fields of the entry this crate does not use, kept as written so that writing the entry back
    /// loses nothing.
    pub unknown_fields: Map<String, Value>,
}

/// A local server run as a child process (`stdio`).
#[derive(Debug, Clone, PartialEq)]
pub struct StdioEntry {
    /// `command`: the program to run, a path or a name looked up in `PATH`. Never empty.
    pub command: String,
    /// `args`: its arguments.
    pub args: Vec<String>,
    /// `env`: variables added to its environment.
    pub env: BTreeMap<String, String>,
    /// `cwd`: its working directory; `None` means the host's.
    pub cwd: Option<PathBuf>,
    /// Fields every kind has.
    pub options: ServerOptions,
}

/// A remote server over HTTP: the settings of both `sse` and `http` entries.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpEntry {
    /// `url`: the endpoint, `http` or `https`.
    pub url: Url,
    /// `headers`: sent with every request.
    pub headers: BTreeMap<String, String>,
    /// `headersHelper`: a shell command whose output (JSON object of headers) is added to every
    /// connection's headers.
    pub headers_helper: Option<String>,
    /// `ca`, `clientCert`, `clientKey`, `proxy`: how this server is reached.
    pub network: NetworkConfig,
    /// `oauth`: settings for the OAuth sign-in.
    pub oauth: Option<OAuthConfig>,
    /// Fields every kind has.
    pub options: ServerOptions,
}

/// How a remote server (`http`, `sse`, `ws`) is reached: its TLS trust and client certificate,
/// and its proxy. Relative paths are resolved from the working directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetworkConfig {
    /// `ca`: a PEM file of CA certificates trusted for this server's TLS, besides the platform's
    /// (and `NODE_EXTRA_CA_CERTS`).
    pub ca: Option<PathBuf>,
    /// `clientCert` and `clientKey`: a PEM certificate chain and its private key, presented
    /// when the server asks for a client certificate (mutual TLS). Both or neither.
    pub client_identity: Option<ClientIdentityConfig>,
    /// `proxy`: this server's proxy, replacing the environment's (`HTTPS_PROXY`, …); absent: the
    /// environment's.
    pub proxy: Option<ProxySetting>,
}

/// `clientCert` and `clientKey`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentityConfig {
    /// `clientCert`: the PEM certificate chain.
    pub cert: PathBuf,
    /// `clientKey`: the PEM private key.
    pub key: PathBuf,
}

/// An entry's `proxy`.
#[derive(Clone, PartialEq, Eq)]
pub enum ProxySetting {
    /// `"none"`: no proxy, whatever the environment says.
    None,
    /// An `http://` or `https://` proxy (credentials in the URL go to the proxy as
    /// `Proxy-Authorization`); `Debug` shows it without them.
    Url(Url),
}

impl std::fmt::Debug for ProxySetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxySetting::None => f.write_str("None"),
            ProxySetting::Url(url) => {
                let mut shown = url.clone();
                let _ = shown.set_password(None);
                let _ = shown.set_username("");
                f.debug_tuple("Url").field(&shown.as_str()).finish()
            }
        }
    }
}

impl NetworkConfig {
    /// Writes the fields that are set into an entry's JSON object.
    fn insert_into(&self, object: &mut Map<String, Value>) {
        insert_path(object, "ca", self.ca.as_deref());
        if let Some(identity) = &self.client_identity {
            insert_path(object, "clientCert", Some(&identity.cert));
            insert_path(object, "clientKey", Some(&identity.key));
        }
        match &self.proxy {
            Some(ProxySetting::None) => {
                object.insert("proxy".into(), "none".into());
            }
            Some(ProxySetting::Url(url)) => {
                object.insert("proxy".into(), url.as_str().into());
            }
            None => {}
        }
    }
}

/// The `oauth` object of an `sse` or `http` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthConfig {
    /// `clientId`: a pre-registered client id, for servers without dynamic client registration.
    pub client_id: Option<String>,
    /// `clientSecret`: the secret of a pre-registered confidential client.
    pub client_secret: Option<String>,
    /// `callbackPort`: a fixed port for the `http://localhost:<port>/callback` redirect.
    pub callback_port: Option<u16>,
    /// `authServerMetadataUrl`: the authorization server's metadata, skipping discovery. `https`,
    /// or `http` on a loopback host.
    pub auth_server_metadata_url: Option<Url>,
    /// `scopes`: the scopes to request. Written as one space-separated string (the form the
    /// reference CLI reads); an array of strings is accepted too.
    pub scopes: Vec<String>,
    /// `grantType`: how tokens are obtained: `authorization_code` (a user logs in; the default),
    /// `client_credentials` (the client acts for itself, with `clientId` and `clientSecret` or
    /// `privateKeyFile`), `jwt_bearer` (a workload's token from `assertionFile`).
    pub grant_type: OAuthGrantType,
    /// `privateKeyFile`: the client's ES256 private key (PEM, PKCS#8 or SEC 1), for
    /// `private_key_jwt` client authentication. A relative path is resolved from the working
    /// directory.
    pub private_key_file: Option<PathBuf>,
    /// `assertionFile`: the file holding the JWT assertion of the `jwt_bearer` grant (read again
    /// for every token request: platforms rotate such files in place).
    pub assertion_file: Option<PathBuf>,
    /// `clientMetadataUrl`: the URL of plexus's Client ID Metadata Document, used as the client id
    /// with authorization servers that support such documents. `https`, or `http` on a loopback
    /// host.
    pub client_metadata_url: Option<Url>,
    /// Fields of the `oauth` object this crate does not use, kept as written.
    pub unknown_fields: Map<String, Value>,
}

/// How an `oauth` entry obtains its tokens (its `grantType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OAuthGrantType {
    /// `authorization_code`: a user logs in in a browser (`plexus login`).
    #[default]
    AuthorizationCode,
    /// `client_credentials`: the client acts for itself.
    ClientCredentials,
    /// `jwt_bearer`: a JWT assertion (workload identity federation) is exchanged for tokens.
    JwtBearer,
}

impl OAuthGrantType {
    /// Every grant type, as written in config.
    pub const ALL: [OAuthGrantType; 3] = [
        OAuthGrantType::AuthorizationCode,
        OAuthGrantType::ClientCredentials,
        OAuthGrantType::JwtBearer,
    ];

    /// The name written in config.
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthGrantType::AuthorizationCode => "authorization_code",
            OAuthGrantType::ClientCredentials => "client_credentials",
            OAuthGrantType::JwtBearer => "jwt_bearer",
        }
    }
}

/// A remote server over WebSocket (`ws`).
#[derive(Debug, Clone, PartialEq)]
pub struct WsEntry {
    /// `url`: the endpoint, `ws` or `wss`.
    pub url: Url,
    /// `headers`: sent with the opening handshake.
    pub headers: BTreeMap<String, String>,
    /// `headersHelper`: a shell command whose output (JSON object of headers) is added to the
    /// handshake's headers.
    pub headers_helper: Option<String>,
    /// `ca`, `clientCert`, `clientKey`, `proxy`: how this server is reached.
    pub network: NetworkConfig,
    /// Fields every kind has.
    pub options: ServerOptions,
}

/// An IDE extension's server on legacy HTTP+SSE (`sse-ide`).
#[derive(Debug, Clone, PartialEq)]
pub struct SseIdeEntry {
    /// `url`: the endpoint, `http` or `https`.
    pub url: Url,
    /// `ideName`: the IDE's display name.
    pub ide_name: String,
    /// `ideRunningInWindows`: the IDE runs on Windows while the host runs elsewhere (WSL).
    pub ide_running_in_windows: bool,
    /// Fields every kind has.
    pub options: ServerOptions,
}

/// An IDE extension's server over WebSocket (`ws-ide`).
#[derive(Debug, Clone, PartialEq)]
pub struct WsIdeEntry {
    /// `url`: the endpoint, `ws` or `wss`.
    pub url: Url,
    /// `ideName`: the IDE's display name.
    pub ide_name: String,
    /// `authToken`: the token from the IDE's lockfile, sent as `X-Claude-Code-Ide-Authorization`.
    pub auth_token: Option<String>,
    /// `ideRunningInWindows`: the IDE runs on Windows while the host runs elsewhere (WSL).
    pub ide_running_in_windows: bool,
    /// Fields every kind has.
    pub options: ServerOptions,
}

/// A server behind the claude.ai connector proxy (`claudeai-proxy`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeAiProxyEntry {
    /// `url`: the proxy endpoint, `http` or `https`.
    pub url: Url,
    /// `id`: the connector's id at claude.ai.
    pub id: String,
    /// Fields every kind has.
    pub options: ServerOptions,
}

/// A server in the host's own process: the host registered it with its connector under the
/// entry's name; only the fields every kind has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InProcessEntry {
    /// Fields every kind has.
    pub options: ServerOptions,
}

impl ServerConfig {
    /// The kind of server this entry describes.
    pub fn kind(&self) -> ServerKind {
        match self {
            ServerConfig::Stdio(_) => ServerKind::Stdio,
            ServerConfig::Sse(_) => ServerKind::Sse,
            ServerConfig::Http(_) => ServerKind::Http,
            ServerConfig::Ws(_) => ServerKind::Ws,
            ServerConfig::SseIde(_) => ServerKind::SseIde,
            ServerConfig::WsIde(_) => ServerKind::WsIde,
            ServerConfig::ClaudeAiProxy(_) => ServerKind::ClaudeAiProxy,
            ServerConfig::InProcess(_) => ServerKind::InProcess,
        }
    }

    /// The fields every kind has.
    pub fn options(&self) -> &ServerOptions {
        match self {
            ServerConfig::Stdio(config) => &config.options,
            ServerConfig::Sse(config) | ServerConfig::Http(config) => &config.options,
            ServerConfig::Ws(config) => &config.options,
            ServerConfig::SseIde(config) => &config.options,
            ServerConfig::WsIde(config) => &config.options,
            ServerConfig::ClaudeAiProxy(config) => &config.options,
            ServerConfig::InProcess(config) => &config.options,
        }
    }

    /// The fields every kind has, to change.
    pub fn options_mut(&mut self) -> &mut ServerOptions {
        match self {
            ServerConfig::Stdio(config) => &mut config.options,
            ServerConfig::Sse(config) | ServerConfig::Http(config) => &mut config.options,
            ServerConfig::Ws(config) => &mut config.options,
            ServerConfig::SseIde(config) => &mut config.options,
            ServerConfig::WsIde(config) => &mut config.options,
            ServerConfig::ClaudeAiProxy(config) => &mut config.options,
            ServerConfig::InProcess(config) => &mut config.options,
        }
    }

    /// The remote endpoint, for every kind but `stdio` and `in-process`.
    pub fn url(&self) -> Option<&Url> {
        match self {
            ServerConfig::Stdio(_) | ServerConfig::InProcess(_) => None,
            ServerConfig::Sse(config) | ServerConfig::Http(config) => Some(&config.url),
            ServerConfig::Ws(config) => Some(&config.url),
            ServerConfig::SseIde(config) => Some(&config.url),
            ServerConfig::WsIde(config) => Some(&config.url),
            ServerConfig::ClaudeAiProxy(config) => Some(&config.url),
        }
    }

    /// The entry as users write it: camelCase fields, `type` always present, empty and default
    /// fields left out, timeouts in whole milliseconds, unknown fields kept.
    ///
    /// A known field wins over an unknown field of the same name.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("type".into(), self.kind().as_str().into());
        match self {
            ServerConfig::Stdio(config) => {
                object.insert("command".into(), config.command.clone().into());
                if !config.args.is_empty() {
                    object.insert("args".into(), config.args.clone().into());
                }
                insert_string_map(&mut object, "env", &config.env);
                if let Some(cwd) = &config.cwd {
                    object.insert("cwd".into(), cwd.to_string_lossy().into_owned().into());
                }
            }
            ServerConfig::Sse(config) | ServerConfig::Http(config) => {
                object.insert("url".into(), config.url.as_str().into());
                insert_string_map(&mut object, "headers", &config.headers);
                insert_string(&mut object, "headersHelper", config.headers_helper.as_deref());
                config.network.insert_into(&mut object);
                if let Some(oauth) = &config.oauth {
                    object.insert("oauth".into(), oauth.to_json());
                }
            }
            ServerConfig::Ws(config) => {
                object.insert("url".into(), config.url.as_str().into());
                insert_string_map(&mut object, "headers", &config.headers);
                insert_string(&mut object, "headersHelper", config.headers_helper.as_deref());
                config.network.insert_into(&mut object);
            }
            ServerConfig::SseIde(config) => {
                object.insert("url".into(), config.url.as_str().into());
                object.insert("ideName".into(), config.ide_name.clone().into());
                insert_flag(&mut object, "ideRunningInWindows", config.ide_running_in_windows);
            }
            ServerConfig::WsIde(config) => {
                object.insert("url".into(), config.url.as_str().into());
                object.insert("ideName".into(), config.ide_name.clone().into());
                insert_string(&mut object, "authToken", config.auth_token.as_deref());
                insert_flag(&mut object, "ideRunningInWindows", config.ide_running_in_windows);
            }
            ServerConfig::ClaudeAiProxy(config) => {
                object.insert("url".into(), config.url.as_str().into());
                object.insert("id".into(), config.id.clone().into());
            }
            ServerConfig::InProcess(_) => {}
        }
        let options = self.options();
        if let Some(timeout) = options.timeout {
            // Durations parsed from a file come from a u64 of milliseconds, so this does not truncate.
            object.insert("timeout".into(), (timeout.as_millis() as u64).into());
        }
        if let Some(version) = &options.protocol_version {
            object.insert("protocolVersion".into(), version.clone().into());
        }
        if let Some(probe_timeout) = options.probe_timeout {
            // As `timeout`: parsed from a u64 of milliseconds.
            object.insert("probeTimeout".into(), (probe_timeout.as_millis() as u64).into());
        }
        insert_flag(&mut object, "disabled", options.disabled);
        insert_flag(&mut object, "required", options.required);
        if let Some(enabled) = &options.enabled_tools {
            object.insert("enabledTools".into(), enabled.clone().into());
        }
        if !options.disabled_tools.is_empty() {
            object.insert("disabledTools".into(), options.disabled_tools.clone().into());
        }
        insert_unknown(&mut object, &options.unknown_fields);
        Value::Object(object)
    }
}

impl OAuthConfig {
    /// The `oauth` object as users write it, with `scopes` as one space-separated string and unknown
    /// fields kept.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        insert_string(&mut object, "clientId", self.client_id.as_deref());
        insert_string(&mut object, "clientSecret", self.client_secret.as_deref());
        if let Some(port) = self.callback_port {
            object.insert("callbackPort".into(), port.into());
        }
        insert_string(
            &mut object,
            "authServerMetadataUrl",
            self.auth_server_metadata_url.as_ref().map(Url::as_str),
        );
        if !self.scopes.is_empty() {
            object.insert("scopes".into(), self.scopes.join(" ").into());
        }
        insert_string(
            &mut object,
            "clientMetadataUrl",
            self.client_metadata_url.as_ref().map(Url::as_str),
        );
        if self.grant_type != OAuthGrantType::default() {
            object.insert("grantType".into(), self.grant_type.as_str().into());
        }
        insert_path(&mut object, "privateKeyFile", self.private_key_file.as_deref());
        insert_path(&mut object, "assertionFile", self.assertion_file.as_deref());
        insert_unknown(&mut object, &self.unknown_fields);
        Value::Object(object)
    }
}

fn insert_string(object: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        object.insert(key.into(), value.into());
    }
}

fn insert_path(object: &mut Map<String, Value>, key: &str, value: Option<&Path>) {
    if let Some(value) = value {
        object.insert(key.into(), value.to_string_lossy().into_owned().into());
    }
}

fn insert_string_map(object: &mut Map<String, Value>, key: &str, map: &BTreeMap<String, String>) {
    if !map.is_empty() {
        let entries = map
            .iter()
            .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
            .collect();
        object.insert(key.into(), Value::Object(entries));
    }
}

fn insert_flag(object: &mut Map<String, Value>, key: &str, flag: bool) {
    if flag {
        object.insert(key.into(), true.into());
    }
}

fn insert_unknown(object: &mut Map<String, Value>, unknown: &Map<String, Value>) {
    for (key, value) in unknown {
        if !object.contains_key(key) {
            object.insert(key.clone(), value.clone());
        }
    }
}

/// Serializes as [`ServerConfig::to_json`].
impl Serialize for ServerConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// Deserializes with [`ServerConfig::from_json`]; warnings are dropped, and the errors of an invalid
/// entry become one message.
impl<'de> Deserialize<'de> for ServerConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        ServerConfig::from_json(&value)
            .map(|(config, _warnings)| config)
            .map_err(|diagnostics| {
                let errors: Vec<String> = diagnostics
                    .iter()
                    .filter(|diagnostic| diagnostic.is_error())
                    .map(ToString::to_string)
                    .collect();
                serde::de::Error::custom(errors.join("; "))
            })
    }
}
