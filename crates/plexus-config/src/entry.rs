//! Reading one server entry from JSON into a typed [`ServerConfig`].

use serde_json::Value;
use url::Url;

use crate::ServerKind;
use crate::diagnostic::Diagnostic;
use crate::json::{describe, quote};
use crate::server::{
    ClaudeAiProxyEntry, ClientIdentityConfig, HttpEntry, NetworkConfig, OAuthConfig, OAuthGrantType, ProxySetting,
    ServerConfig, ServerOptions, SseIdeEntry, StdioEntry, WsEntry, WsIdeEntry,
};
use crate::values::{
    ANY_STRING, Fields, Report, Schemes, boolean, checked_env_name, checked_header_name, checked_header_value, no_nul,
    non_empty, port, probe_timeout, protocol_version, scopes, secure_url, string_list, string_map, timeout, url,
};

impl ServerConfig {
    /// Reads one entry (the value under a server's name in `mcpServers`).
    ///
    /// `Ok` holds the entry and its warnings (unknown fields, an ignored timeout); `Err` holds every
    /// problem found, at least one of them an error. The diagnostics name the field but no file or
    /// server; [`ConfigFile`](crate::ConfigFile) adds those.
    ///
    /// The values are taken literally: `${VAR}` references must be expanded before this is called.
    pub fn from_json(value: &Value) -> Result<(ServerConfig, Vec<Diagnostic>), Vec<Diagnostic>> {
        let mut report = Report::default();
        match read_entry(value, &mut report) {
            Some(config) if !report.failed() => Ok((config, report.diagnostics)),
            _ => Err(report.diagnostics),
        }
    }
}

fn read_entry(value: &Value, report: &mut Report) -> Option<ServerConfig> {
    let Value::Object(object) = value else {
        report.error(
            None,
            format!(
                "expected an object with the server's settings, found {}",
                describe(value)
            ),
        );
        return None;
    };
    let mut fields = Fields::new(object, "");
    let kind = read_kind(&mut fields, report)?;
    let config = match kind {
        ServerKind::Stdio => read_stdio(&mut fields, report).map(ServerConfig::Stdio),
        ServerKind::Sse => read_http(&mut fields, kind, report).map(ServerConfig::Sse),
        ServerKind::Http => read_http(&mut fields, kind, report).map(ServerConfig::Http),
        ServerKind::Ws => read_ws(&mut fields, report).map(ServerConfig::Ws),
        ServerKind::SseIde => read_sse_ide(&mut fields, report).map(ServerConfig::SseIde),
        ServerKind::WsIde => read_ws_ide(&mut fields, report).map(ServerConfig::WsIde),
        ServerKind::ClaudeAiProxy => read_claudeai_proxy(&mut fields, report).map(ServerConfig::ClaudeAiProxy),
        // `read_kind` never gives it: no file can name it.
        ServerKind::InProcess => {
            report.error(
                None,
                "an in-process server is registered by the host, not configured in a file".to_owned(),
            );
            None
        }
    };
    let timeout = fields.optional("timeout", report, timeout);
    let protocol_version = fields.optional("protocolVersion", report, protocol_version);
    let probe_timeout = fields.optional("probeTimeout", report, probe_timeout);
    let disabled = fields.optional("disabled", report, boolean).unwrap_or(false);
    let required = fields.optional("required", report, boolean).unwrap_or(false);
    let enabled_tools = fields.optional("enabledTools", report, string_list(no_nul));
    let disabled_tools = fields
        .optional("disabledTools", report, string_list(no_nul))
        .unwrap_or_default();
    let unknown_fields = fields.into_unknown(&format!("for a {} server", quote(kind.as_str())), report);
    let mut config = config?;
    *config.options_mut() = ServerOptions {
        timeout,
        protocol_version,
        probe_timeout,
        disabled,
        required,
        enabled_tools,
        disabled_tools,
        unknown_fields,
    };
    Some(config)
}

fn read_kind(fields: &mut Fields<'_>, report: &mut Report) -> Option<ServerKind> {
    match fields.get("type") {
        // Cursor's style (and `plexus import`'s reading of it): a `url` alone is a remote server,
        // WebSocket for a ws:// URL, else Streamable HTTP (which falls back to legacy SSE).
        None if fields.contains("url") => {
            let websocket = fields
                .peek("url")
                .and_then(Value::as_str)
                .is_some_and(|url| url.starts_with("ws://") || url.starts_with("wss://"));
            let kind = if websocket { ServerKind::Ws } else { ServerKind::Http };
            report.warn(
                "type",
                format!(
                    "missing; taken as {} since the entry has a \"url\" (add \"type\": \"http\" or \"sse\" to choose)",
                    quote(kind.as_str())
                ),
            );
            Some(kind)
        }
        None => Some(ServerKind::Stdio),
        Some(Value::String(type_name)) => {
            let kind = ServerKind::from_config_type(type_name);
            if kind.is_none() {
                report.error(Some("type"), unknown_type_message(type_name));
            }
            kind
        }
        Some(other) => {
            report.error(Some("type"), format!("expected a string, found {}", describe(other)));
            None
        }
    }
}

fn unknown_type_message(type_name: &str) -> String {
    if let Some(kind) = ServerKind::from_config_type(&type_name.to_ascii_lowercase()) {
        return format!(
            "unknown server type {}; did you mean {}?",
            quote(type_name),
            quote(kind.as_str())
        );
    }
    let mut known: Vec<String> = ServerKind::ALL.iter().map(|kind| quote(kind.as_str())).collect();
    known.insert(3, quote("streamable-http"));
    format!(
        "unknown server type {}; expected one of {}",
        quote(type_name),
        known.join(", ")
    )
}

fn read_stdio(fields: &mut Fields<'_>, report: &mut Report) -> Option<StdioEntry> {
    let command = fields.required("command", ServerKind::Stdio, report, non_empty(no_nul));
    let args = fields.optional("args", report, string_list(no_nul));
    let env = fields.optional("env", report, string_map(checked_env_name, no_nul));
    let cwd = fields.optional("cwd", report, non_empty(no_nul));
    Some(StdioEntry {
        command: command?,
        args: args.unwrap_or_default(),
        env: env.unwrap_or_default(),
        cwd: cwd.map(Into::into),
        options: ServerOptions::default(),
    })
}

fn read_http(fields: &mut Fields<'_>, kind: ServerKind, report: &mut Report) -> Option<HttpEntry> {
    let url = fields.required("url", kind, report, url(Schemes::Http));
    let headers = fields.optional("headers", report, string_map(checked_header_name, checked_header_value));
    let headers_helper = fields.optional("headersHelper", report, non_empty(ANY_STRING));
    let network = read_network(fields, report);
    let oauth = fields.optional("oauth", report, read_oauth);
    Some(HttpEntry {
        url: url?,
        headers: headers.unwrap_or_default(),
        headers_helper,
        network,
        oauth,
        options: ServerOptions::default(),
    })
}

/// `ca`, `clientCert`, `clientKey` and `proxy` of a remote entry.
fn read_network(fields: &mut Fields<'_>, report: &mut Report) -> NetworkConfig {
    let ca = fields.optional("ca", report, non_empty(no_nul));
    let cert = fields.optional("clientCert", report, non_empty(no_nul));
    let key = fields.optional("clientKey", report, non_empty(no_nul));
    let proxy = fields.optional("proxy", report, proxy_setting);
    let client_identity = match (cert, key) {
        (Some(cert), Some(key)) => Some(ClientIdentityConfig {
            cert: cert.into(),
            key: key.into(),
        }),
        (Some(_), None) => {
            report.error(
                Some("clientCert"),
                "a client certificate needs its private key: add \"clientKey\" (a PEM file)",
            );
            None
        }
        (None, Some(_)) => {
            report.error(
                Some("clientKey"),
                "a private key needs its certificate: add \"clientCert\" (a PEM file)",
            );
            None
        }
        (None, None) => None,
    };
    NetworkConfig {
        ca: ca.map(Into::into),
        client_identity,
        proxy,
    }
}

/// `"none"`, or an `http://` or `https://` proxy URL.
fn proxy_setting(value: &Value, path: &str, report: &mut Report) -> Option<ProxySetting> {
    let text = crate::values::string(value, path, report)?;
    if text.trim().eq_ignore_ascii_case("none") {
        return Some(ProxySetting::None);
    }
    match Url::parse(text.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Some(ProxySetting::Url(url)),
        Ok(url) => {
            report.error(
                Some(path),
                format!(
                    "expected \"none\" or an http:// or https:// proxy URL, found a {:?} URL",
                    url.scheme()
                ),
            );
            None
        }
        Err(error) => {
            report.error(
                Some(path),
                format!("expected \"none\" or an http:// or https:// proxy URL: not a valid URL ({error})"),
            );
            None
        }
    }
}

fn read_oauth(value: &Value, path: &str, report: &mut Report) -> Option<OAuthConfig> {
    let Value::Object(object) = value else {
        report.error(
            Some(path),
            format!("expected an object of OAuth settings, found {}", describe(value)),
        );
        return None;
    };
    let mut fields = Fields::new(object, path);
    let client_id = fields.optional("clientId", report, non_empty(ANY_STRING));
    let client_secret = fields.optional("clientSecret", report, non_empty(ANY_STRING));
    let callback_port = fields.optional("callbackPort", report, port);
    let auth_server_metadata_url = fields.optional("authServerMetadataUrl", report, secure_url);
    let scopes = fields.optional("scopes", report, scopes);
    let client_metadata_url = fields.optional("clientMetadataUrl", report, secure_url);
    let grant_type = fields.optional("grantType", report, grant_type);
    let private_key_file = fields.optional("privateKeyFile", report, non_empty(no_nul));
    let assertion_file = fields.optional("assertionFile", report, non_empty(no_nul));
    if grant_type == Some(OAuthGrantType::JwtBearer) && assertion_file.is_none() {
        report.error(
            Some(&format!("{path}.grantType")),
            "the \"jwt_bearer\" grant needs an \"assertionFile\" (the file holding the JWT assertion)",
        );
    }
    let unknown_fields = fields.into_unknown(&format!("in {}", quote(path)), report);
    Some(OAuthConfig {
        client_id,
        client_secret,
        callback_port,
        auth_server_metadata_url,
        scopes: scopes.unwrap_or_default(),
        client_metadata_url,
        grant_type: grant_type.unwrap_or_default(),
        private_key_file: private_key_file.map(Into::into),
        assertion_file: assertion_file.map(Into::into),
        unknown_fields,
    })
}

fn grant_type(value: &Value, path: &str, report: &mut Report) -> Option<OAuthGrantType> {
    let text = crate::values::string(value, path, report)?;
    let found = OAuthGrantType::ALL.into_iter().find(|grant| grant.as_str() == text);
    if found.is_none() {
        let known: Vec<&str> = OAuthGrantType::ALL.iter().map(|grant| grant.as_str()).collect();
        report.error(
            Some(path),
            format!(
                "unknown grant type {}; expected one of {}",
                quote(text),
                known.join(", ")
            ),
        );
    }
    found
}

fn read_ws(fields: &mut Fields<'_>, report: &mut Report) -> Option<WsEntry> {
    let url = fields.required("url", ServerKind::Ws, report, url(Schemes::WebSocket));
    let headers = fields.optional("headers", report, string_map(checked_header_name, checked_header_value));
    let headers_helper = fields.optional("headersHelper", report, non_empty(ANY_STRING));
    let network = read_network(fields, report);
    Some(WsEntry {
        url: url?,
        headers: headers.unwrap_or_default(),
        headers_helper,
        network,
        options: ServerOptions::default(),
    })
}

fn read_sse_ide(fields: &mut Fields<'_>, report: &mut Report) -> Option<SseIdeEntry> {
    let url = fields.required("url", ServerKind::SseIde, report, url(Schemes::Http));
    let ide_name = fields.required("ideName", ServerKind::SseIde, report, non_empty(ANY_STRING));
    let ide_running_in_windows = fields.optional("ideRunningInWindows", report, boolean);
    Some(SseIdeEntry {
        url: url?,
        ide_name: ide_name?,
        ide_running_in_windows: ide_running_in_windows.unwrap_or(false),
        options: ServerOptions::default(),
    })
}

fn read_ws_ide(fields: &mut Fields<'_>, report: &mut Report) -> Option<WsIdeEntry> {
    let url = fields.required("url", ServerKind::WsIde, report, url(Schemes::WebSocket));
    let ide_name = fields.required("ideName", ServerKind::WsIde, report, non_empty(ANY_STRING));
    let auth_token = fields.optional("authToken", report, non_empty(checked_header_value));
    let ide_running_in_windows = fields.optional("ideRunningInWindows", report, boolean);
    Some(WsIdeEntry {
        url: url?,
        ide_name: ide_name?,
        auth_token,
        ide_running_in_windows: ide_running_in_windows.unwrap_or(false),
        options: ServerOptions::default(),
    })
}

fn read_claudeai_proxy(fields: &mut Fields<'_>, report: &mut Report) -> Option<ClaudeAiProxyEntry> {
    let url = fields.required("url", ServerKind::ClaudeAiProxy, report, url(Schemes::Http));
    let id = fields.required("id", ServerKind::ClaudeAiProxy, report, non_empty(ANY_STRING));
    Some(ClaudeAiProxyEntry {
        url: url?,
        id: id?,
        options: ServerOptions::default(),
    })
}
