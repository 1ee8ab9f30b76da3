//! Each server kind's fields, read from real files: what loads, and the full message for what does not.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use common::{entry_errors, entry_warnings};
use plexus_config::{OAuthGrantType, ProxySetting, ServerConfig, ServerKind, Url};
use serde_json::{Value, json};

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

#[test]
fn a_full_stdio_entry_loads_every_field() {
    let (config, warnings) = entry_warnings(json!({
        "command": "npx",
        "args": ["-y", "@scope/server", ""],
        "env": { "API_KEY": "k", "EMPTY": "" },
        "cwd": "/srv/project",
        "timeout": 20000,
        "disabled": true
    }));
    assert!(warnings.is_empty());
    let ServerConfig::Stdio(stdio) = &config else {
        panic!("stdio, got {config:?}")
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(stdio.args, ["-y", "@scope/server", ""]);
    assert_eq!(stdio.env, strings(&[("API_KEY", "k"), ("EMPTY", "")]));
    assert_eq!(stdio.cwd, Some(PathBuf::from("/srv/project")));
    assert_eq!(stdio.options.timeout, Some(Duration::from_secs(20)));
    assert!(stdio.options.disabled);
    assert_eq!(config.kind(), ServerKind::Stdio);
    assert_eq!(config.url(), None);
}

#[test]
fn no_type_and_type_stdio_are_the_same() {
    let (untyped, _) = entry_warnings(json!({ "command": "server" }));
    let (typed, _) = entry_warnings(json!({ "type": "stdio", "command": "server" }));
    assert_eq!(untyped, typed);
    assert_eq!(untyped.to_json(), json!({ "type": "stdio", "command": "server" }));
}

#[test]
fn stdio_command_is_required_and_must_be_a_non_empty_string() {
    assert_eq!(
        entry_errors(json!({ "args": ["x"] })),
        [r#"field "command": missing; a "stdio" server requires it"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": "  " })),
        [r#"field "command": must not be empty"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": 5 })),
        [r#"field "command": expected a string, found 5"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": ["npx", "x"] })),
        [r#"field "command": expected a string, found an array"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": "a\u{0}b" })),
        [r#"field "command": must not contain a NUL character"#]
    );
}

#[test]
fn stdio_args_must_be_an_array_of_strings_and_every_bad_element_is_named() {
    assert_eq!(
        entry_errors(json!({ "command": "uvx", "args": "--port 3000" })),
        [r#"field "args": expected an array of strings, found a string"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": "uvx", "args": ["tool", true, 3, null, "ok", {"a": 1}] })),
        [
            r#"field "args[1]": expected a string, found true"#,
            r#"field "args[2]": expected a string, found 3"#,
            r#"field "args[3]": expected a string, found null"#,
            r#"field "args[5]": expected a string, found an object"#,
        ]
    );
    assert_eq!(
        entry_errors(json!({ "command": "uvx", "args": ["a\u{0}"] })),
        [r#"field "args[0]": must not contain a NUL character"#]
    );
}

#[test]
fn stdio_env_must_map_valid_names_to_strings() {
    assert_eq!(
        entry_errors(json!({ "command": "x", "env": ["A=1"] })),
        [r#"field "env": expected an object of strings, found an array"#]
    );
    assert_eq!(
        entry_errors(
            json!({ "command": "x", "env": { "PORT": 8080, "DEBUG": false, "A=B": "1", "": "v", "OK": "1" } })
        ),
        [
            r#"field "env.PORT": expected a string, found 8080"#,
            r#"field "env.DEBUG": expected a string, found false"#,
            r#"field "env.A=B": an environment variable name must not contain "=""#,
            r#"field "env.": an environment variable name must not be empty"#,
        ]
    );
    assert_eq!(
        entry_errors(json!({ "command": "x", "env": { "V": "a\u{0}" } })),
        [r#"field "env.V": must not contain a NUL character"#]
    );
}

#[test]
fn stdio_cwd_must_be_a_non_empty_string() {
    assert_eq!(
        entry_errors(json!({ "command": "x", "cwd": "" })),
        [r#"field "cwd": must not be empty"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": "x", "cwd": 1 })),
        [r#"field "cwd": expected a string, found 1"#]
    );
}

#[test]
fn a_full_http_entry_loads_every_field_including_oauth() {
    let (config, warnings) = entry_warnings(json!({
        "type": "http",
        "url": "https://mcp.example.com/mcp?tenant=7",
        "headers": { "Authorization": "Bearer t0k\ten", "X-Api-Key": "k" },
        "headersHelper": "/usr/local/bin/make-headers --json",
        "ca": "/etc/corp/ca.pem",
        "oauth": {
            "clientId": "client-1",
            "clientSecret": "s3cret",
            "callbackPort": 8765,
            "authServerMetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server",
            "scopes": "read write  offline_access"
        }
    }));
    assert!(warnings.is_empty());
    let ServerConfig::Http(http) = &config else {
        panic!("http, got {config:?}")
    };
    assert_eq!(http.url.as_str(), "https://mcp.example.com/mcp?tenant=7");
    assert_eq!(
        http.headers,
        strings(&[("Authorization", "Bearer t0k\ten"), ("X-Api-Key", "k")])
    );
    assert_eq!(
        http.headers_helper.as_deref(),
        Some("/usr/local/bin/make-headers --json")
    );
    assert_eq!(
        http.network.ca.as_deref(),
        Some(std::path::Path::new("/etc/corp/ca.pem"))
    );
    assert_eq!(config.to_json()["ca"], "/etc/corp/ca.pem", "written back as it was");
    let oauth = http.oauth.as_ref().expect("oauth settings");
    assert_eq!(oauth.client_id.as_deref(), Some("client-1"));
    assert_eq!(oauth.client_secret.as_deref(), Some("s3cret"));
    assert_eq!(oauth.callback_port, Some(8765));
    assert_eq!(
        oauth.auth_server_metadata_url.as_ref().map(Url::as_str),
        Some("https://auth.example.com/.well-known/oauth-authorization-server")
    );
    assert_eq!(oauth.scopes, ["read", "write", "offline_access"]);
    assert_eq!(config.url(), Some(&http.url));
    // Written back with scopes as one space-separated string.
    assert_eq!(config.to_json()["oauth"]["scopes"], json!("read write offline_access"));
}

#[test]
fn oauth_grant_types_and_their_files() {
    let (config, warnings) = entry_warnings(json!({
        "type": "http",
        "url": "https://mcp.example.com/mcp",
        "oauth": {
            "grantType": "jwt_bearer",
            "assertionFile": "/var/run/secrets/token",
            "privateKeyFile": "/etc/plexus/key.pem",
            "clientMetadataUrl": "https://plexus.example.com/client.json"
        }
    }));
    assert!(warnings.is_empty(), "{warnings:?}");
    let ServerConfig::Http(http) = &config else {
        panic!("http, got {config:?}")
    };
    let oauth = http.oauth.as_ref().expect("oauth settings");
    assert_eq!(oauth.grant_type, OAuthGrantType::JwtBearer);
    assert_eq!(
        oauth.assertion_file.as_deref(),
        Some(std::path::Path::new("/var/run/secrets/token"))
    );
    assert_eq!(
        oauth.private_key_file.as_deref(),
        Some(std::path::Path::new("/etc/plexus/key.pem"))
    );
    assert_eq!(
        oauth.client_metadata_url.as_ref().map(Url::as_str),
        Some("https://plexus.example.com/client.json")
    );
    assert_eq!(config.to_json()["oauth"]["grantType"], json!("jwt_bearer"));

    let oauth_errors = |oauth: Value| entry_errors(json!({ "type": "http", "url": "https://h/mcp", "oauth": oauth }));
    assert_eq!(
        oauth_errors(json!({ "grantType": "password" })),
        [
            r#"field "oauth.grantType": unknown grant type "password"; expected one of authorization_code, client_credentials, jwt_bearer"#
        ]
    );
    assert_eq!(
        oauth_errors(json!({ "grantType": "jwt_bearer" })),
        [
            r#"field "oauth.grantType": the "jwt_bearer" grant needs an "assertionFile" (the file holding the JWT assertion)"#
        ]
    );
    assert_eq!(
        oauth_errors(json!({ "clientMetadataUrl": "http://example.com/c.json" })),
        oauth_errors(json!({ "authServerMetadataUrl": "http://example.com/c.json" }))
            .iter()
            .map(|e| e.replace("authServerMetadataUrl", "clientMetadataUrl"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn sse_and_http_share_their_fields_and_streamable_http_is_http() {
    let (sse, _) = entry_warnings(json!({ "type": "sse", "url": "http://127.0.0.1:9000/sse" }));
    assert_eq!(sse.kind(), ServerKind::Sse);
    assert_eq!(
        sse.to_json(),
        json!({ "type": "sse", "url": "http://127.0.0.1:9000/sse" })
    );
    let (alias, _) = entry_warnings(json!({ "type": "streamable-http", "url": "https://example.com/mcp" }));
    assert_eq!(alias.kind(), ServerKind::Http);
    assert_eq!(
        alias.to_json(),
        json!({ "type": "http", "url": "https://example.com/mcp" })
    );
}

#[test]
fn a_url_without_a_type_is_taken_as_cursor_takes_it() {
    let (http, warnings) = entry_warnings(json!({ "url": "https://example.com/mcp" }));
    assert_eq!(http.kind(), ServerKind::Http);
    assert_eq!(
        warnings,
        [
            r#"field "type": missing; taken as "http" since the entry has a "url" (add "type": "http" or "sse" to choose)"#
        ]
    );
    let (ws, warnings) = entry_warnings(json!({ "url": "wss://example.com/mcp" }));
    assert_eq!(ws.kind(), ServerKind::Ws);
    assert_eq!(
        warnings,
        [r#"field "type": missing; taken as "ws" since the entry has a "url" (add "type": "http" or "sse" to choose)"#]
    );
}

#[test]
fn the_type_must_name_a_known_kind() {
    assert_eq!(
        entry_errors(json!({ "type": "grpc", "url": "https://example.com" })),
        [
            r#"field "type": unknown server type "grpc"; expected one of "stdio", "sse", "http", "streamable-http", "ws", "sse-ide", "ws-ide", "claudeai-proxy""#
        ]
    );
    assert_eq!(
        entry_errors(json!({ "type": "HTTP", "url": "https://example.com" })),
        [r#"field "type": unknown server type "HTTP"; did you mean "http"?"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": 2, "command": "x" })),
        [r#"field "type": expected a string, found 2"#]
    );
}

#[test]
fn remote_urls_are_required_valid_and_of_the_right_scheme() {
    assert_eq!(
        entry_errors(json!({ "type": "http" })),
        [r#"field "url": missing; a "http" server requires it"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "http", "url": "example.com/mcp" })),
        [r#"field "url": not a valid URL: relative URL without a base"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "sse", "url": "https://exa mple.com/" })),
        [r#"field "url": not a valid URL: invalid international domain name"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "claudeai-proxy", "url": "https://e.com:99999/", "id": "i" })),
        [r#"field "url": not a valid URL: invalid port number"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "http", "url": "wss://example.com/mcp" })),
        [r#"field "url": expected an http or https URL, found a "wss" URL"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "ws", "url": "https://example.com/mcp" })),
        [r#"field "url": expected a ws or wss URL, found a "https" URL"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "http", "url": null })),
        [r#"field "url": expected a string, found null"#]
    );
}

#[test]
fn headers_must_be_valid_http_headers() {
    assert_eq!(
        entry_errors(json!({ "type": "http", "url": "https://e.com", "headers": "Authorization: Bearer x" })),
        [r#"field "headers": expected an object of strings, found a string"#]
    );
    assert_eq!(
        entry_errors(json!({
            "type": "http",
            "url": "https://e.com",
            "headers": { "X Key": "v", "X-Count": 3, "X-Line": "a\r\nInjected: 1", "": "v" }
        })),
        [
            r#"field "headers.X Key": a header name cannot contain ' '"#,
            r#"field "headers.X-Count": expected a string, found 3"#,
            r#"field "headers.X-Line": a header value cannot contain the control character '\r'"#,
            r#"field "headers.": a header name must not be empty"#,
        ]
    );
    assert_eq!(
        entry_errors(json!({ "type": "sse", "url": "https://e.com", "headersHelper": "" })),
        [r#"field "headersHelper": must not be empty"#]
    );
}

#[test]
fn oauth_fields_are_checked_one_by_one() {
    let oauth = |settings| json!({ "type": "http", "url": "https://e.com/mcp", "oauth": settings });
    assert_eq!(
        entry_errors(oauth(json!(true))),
        [r#"field "oauth": expected an object of OAuth settings, found true"#]
    );
    assert_eq!(
        entry_errors(oauth(json!({ "clientId": "", "clientSecret": 7 }))),
        [
            r#"field "oauth.clientId": must not be empty"#,
            r#"field "oauth.clientSecret": expected a string, found 7"#
        ]
    );
    for (port, found) in [
        (json!(0), "0"),
        (json!(65536), "65536"),
        (json!(-1), "-1"),
        (json!("8080"), "a string"),
        (json!(80.5), "80.5"),
    ] {
        assert_eq!(
            entry_errors(oauth(json!({ "callbackPort": port }))),
            [format!(
                r#"field "oauth.callbackPort": expected a port number from 1 to 65535, found {found}"#
            )]
        );
    }
    assert_eq!(
        entry_errors(oauth(
            json!({ "authServerMetadataUrl": "http://auth.example.com/meta" })
        )),
        [r#"field "oauth.authServerMetadataUrl": must be an https URL (plain http is allowed only for localhost)"#]
    );
    assert_eq!(
        entry_errors(oauth(json!({ "authServerMetadataUrl": "ftp://auth.example.com/meta" }))),
        [r#"field "oauth.authServerMetadataUrl": expected an http or https URL, found a "ftp" URL"#]
    );
}

#[test]
fn oauth_metadata_over_plain_http_is_allowed_on_loopback() {
    for url in [
        "http://localhost:8080/meta",
        "http://127.0.0.1:9/meta",
        "http://[::1]/meta",
    ] {
        let (config, _) = entry_warnings(json!({
            "type": "http", "url": "http://127.0.0.1/mcp", "oauth": { "authServerMetadataUrl": url }
        }));
        let ServerConfig::Http(http) = config else {
            panic!("http")
        };
        assert_eq!(http.oauth.unwrap().auth_server_metadata_url.unwrap().as_str(), url);
    }
}

#[test]
fn oauth_scopes_accept_a_string_or_an_array_and_reject_bad_tokens() {
    let scopes = |scopes| json!({ "type": "sse", "url": "https://e.com/sse", "oauth": { "scopes": scopes } });
    for written in [json!("a b:c"), json!(["a", "b:c"]), json!(" a\tb:c\n")] {
        let (config, _) = entry_warnings(scopes(written));
        let ServerConfig::Sse(sse) = config else { panic!("sse") };
        assert_eq!(sse.oauth.unwrap().scopes, ["a", "b:c"]);
    }
    assert_eq!(
        entry_errors(scopes(json!(" "))),
        [r#"field "oauth.scopes": must name at least one scope; leave "scopes" out to use the server's defaults"#]
    );
    assert_eq!(
        entry_errors(scopes(json!([]))),
        [r#"field "oauth.scopes": must name at least one scope; leave "scopes" out to use the server's defaults"#]
    );
    assert_eq!(
        entry_errors(scopes(json!(["read write", "", 4, "a\"b"]))),
        [
            r#"field "oauth.scopes[0]": contains whitespace; give each scope its own element"#,
            r#"field "oauth.scopes[1]": must not be empty"#,
            r#"field "oauth.scopes[2]": expected a string, found 4"#,
            r#"field "oauth.scopes[3]": the scope contains '"', which an OAuth scope cannot contain"#,
        ]
    );
    assert_eq!(
        entry_errors(scopes(json!("read wr\\ite"))),
        [r#"field "oauth.scopes": the scope "wr\\ite" contains '\\', which an OAuth scope cannot contain"#]
    );
    assert_eq!(
        entry_errors(scopes(json!({ "read": true }))),
        [r#"field "oauth.scopes": expected a space-separated string or an array of strings, found an object"#]
    );
}

#[test]
fn ws_entries_take_a_ws_url_and_headers() {
    let (config, warnings) = entry_warnings(json!({
        "type": "ws", "url": "wss://example.com/mcp", "headers": { "Authorization": "Bearer t" }, "headersHelper": "h",
        "ca": "ca.pem"
    }));
    assert!(warnings.is_empty());
    let ServerConfig::Ws(ws) = &config else {
        panic!("ws, got {config:?}")
    };
    assert_eq!(ws.url.as_str(), "wss://example.com/mcp");
    assert_eq!(ws.headers, strings(&[("Authorization", "Bearer t")]));
    assert_eq!(ws.headers_helper.as_deref(), Some("h"));
    assert_eq!(ws.network.ca.as_deref(), Some(std::path::Path::new("ca.pem")));
    assert_eq!(
        entry_errors(json!({ "type": "ws", "url": "wss://h/", "ca": "" })),
        [r#"field "ca": must not be empty"#]
    );
    assert_eq!(
        entry_errors(json!({ "type": "ws" })),
        [r#"field "url": missing; a "ws" server requires it"#]
    );
}

#[test]
fn sse_ide_entries_need_a_url_and_an_ide_name() {
    let (config, _) = entry_warnings(json!({
        "type": "sse-ide", "url": "http://127.0.0.1:41000/sse", "ideName": "VS Code", "ideRunningInWindows": true
    }));
    let ServerConfig::SseIde(ide) = &config else {
        panic!("sse-ide, got {config:?}")
    };
    assert_eq!(ide.url.as_str(), "http://127.0.0.1:41000/sse");
    assert_eq!(ide.ide_name, "VS Code");
    assert!(ide.ide_running_in_windows);
    assert_eq!(
        entry_errors(json!({ "type": "sse-ide", "url": "ws://127.0.0.1:1", "ideRunningInWindows": "yes" })),
        [
            r#"field "url": expected an http or https URL, found a "ws" URL"#,
            r#"field "ideName": missing; a "sse-ide" server requires it"#,
            r#"field "ideRunningInWindows": expected true or false, found a string"#,
        ]
    );
}

#[test]
fn ws_ide_entries_take_an_auth_token() {
    let (config, _) = entry_warnings(json!({
        "type": "ws-ide", "url": "ws://127.0.0.1:41001", "ideName": "JetBrains", "authToken": "0f3c-token"
    }));
    let ServerConfig::WsIde(ide) = &config else {
        panic!("ws-ide, got {config:?}")
    };
    assert_eq!(ide.url.as_str(), "ws://127.0.0.1:41001/");
    assert_eq!(ide.ide_name, "JetBrains");
    assert_eq!(ide.auth_token.as_deref(), Some("0f3c-token"));
    assert!(!ide.ide_running_in_windows);
    assert_eq!(
        entry_errors(json!({ "type": "ws-ide", "url": "ws://127.0.0.1:1", "ideName": "", "authToken": "a\nb" })),
        [
            r#"field "ideName": must not be empty"#,
            r#"field "authToken": a header value cannot contain the control character '\n'"#,
        ]
    );
}

#[test]
fn claudeai_proxy_entries_need_a_url_and_an_id() {
    let (config, _) =
        entry_warnings(json!({ "type": "claudeai-proxy", "url": "https://claude.ai/proxy/x", "id": "conn_1" }));
    let ServerConfig::ClaudeAiProxy(proxy) = &config else {
        panic!("claudeai-proxy, got {config:?}")
    };
    assert_eq!(proxy.url.as_str(), "https://claude.ai/proxy/x");
    assert_eq!(proxy.id, "conn_1");
    assert_eq!(
        entry_errors(json!({ "type": "claudeai-proxy", "url": "https://claude.ai/proxy/x" })),
        [r#"field "id": missing; a "claudeai-proxy" server requires it"#]
    );
}

#[test]
fn a_short_timeout_is_ignored_with_a_warning_and_a_bad_one_is_an_error() {
    let (config, warnings) = entry_warnings(json!({ "command": "x", "timeout": 500 }));
    assert_eq!(config.options().timeout, None);
    assert_eq!(
        warnings,
        [r#"field "timeout": 500 ms is below the 1000 ms minimum; ignored, the default applies"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": "x", "timeout": "30s" })),
        [r#"field "timeout": expected a number of milliseconds, found a string"#]
    );
    assert_eq!(
        entry_errors(json!({ "command": "x", "timeout": 2500.5 })),
        [r#"field "timeout": expected a whole number of milliseconds, found 2500.5"#]
    );
    let (config, warnings) = entry_warnings(json!({ "type": "ws", "url": "ws://h/", "timeout": 1000 }));
    assert_eq!(config.options().timeout, Some(Duration::from_secs(1)));
    assert!(warnings.is_empty());
}

#[test]
fn disabled_must_be_a_boolean() {
    let (config, _) = entry_warnings(json!({ "type": "sse", "url": "https://e.com/sse", "disabled": true }));
    assert!(config.options().disabled);
    assert_eq!(
        entry_errors(json!({ "command": "x", "disabled": "no" })),
        [r#"field "disabled": expected true or false, found a string"#]
    );
}

#[test]
fn unknown_fields_are_warnings_and_are_written_back() {
    let (config, warnings) = entry_warnings(json!({
        "command": "x",
        "headers": { "A": "b" },
        "alwaysAllow": ["read"],
        "oauth": { "clientId": "c" }
    }));
    assert_eq!(
        warnings,
        [
            r#"field "headers": unknown field for a "stdio" server; kept as written but not used"#,
            r#"field "alwaysAllow": unknown field for a "stdio" server; kept as written but not used"#,
            r#"field "oauth": unknown field for a "stdio" server; kept as written but not used"#,
        ]
    );
    assert_eq!(
        config.to_json(),
        json!({
            "type": "stdio", "command": "x", "headers": { "A": "b" }, "alwaysAllow": ["read"], "oauth": { "clientId": "c" }
        })
    );

    let (config, warnings) = entry_warnings(json!({
        "type": "http", "url": "https://e.com/", "oauth": { "clientId": "c", "xaa": true }
    }));
    assert_eq!(
        warnings,
        [r#"field "oauth.xaa": unknown field in "oauth"; kept as written but not used"#]
    );
    assert_eq!(
        config.to_json(),
        json!({ "type": "http", "url": "https://e.com/", "oauth": { "clientId": "c", "xaa": true } })
    );
}

#[test]
fn an_entry_that_is_not_an_object_is_named() {
    assert_eq!(
        entry_errors(json!("npx server")),
        ["expected an object with the server's settings, found a string"]
    );
    assert_eq!(
        entry_errors(json!(null)),
        ["expected an object with the server's settings, found null"]
    );
}

#[test]
fn from_json_reports_without_file_or_server_and_serde_uses_it() {
    let errors = ServerConfig::from_json(&json!({ "command": 1, "args": [2] })).unwrap_err();
    assert_eq!(
        common::messages(&errors),
        [
            r#"field "command": expected a string, found 1"#,
            r#"field "args[0]": expected a string, found 2"#
        ]
    );
    let error = serde_json::from_value::<ServerConfig>(json!({ "command": 1, "args": [2] })).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"field "command": expected a string, found 1; field "args[0]": expected a string, found 2"#
    );

    let config: ServerConfig =
        serde_json::from_value(json!({ "type": "ws", "url": "ws://h:1/x", "extra": 1 })).unwrap();
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({ "type": "ws", "url": "ws://h:1/x", "extra": 1 })
    );
}

#[test]
fn remote_entries_take_a_client_certificate_and_a_proxy_and_write_them_back() {
    for kind in ["http", "sse", "ws"] {
        let url = if kind == "ws" {
            "wss://mcp.example.com/ws"
        } else {
            "https://mcp.example.com/mcp"
        };
        let entry = json!({
            "type": kind,
            "url": url,
            "clientCert": "/etc/me/cert.pem",
            "clientKey": "/etc/me/key.pem",
            "proxy": "http://me:secret@proxy.corp:3128"
        });
        let (config, warnings) = entry_warnings(entry.clone());
        assert!(warnings.is_empty(), "{warnings:?}");
        let network = match &config {
            ServerConfig::Http(http) | ServerConfig::Sse(http) => &http.network,
            ServerConfig::Ws(ws) => &ws.network,
            other => panic!("{kind}: {other:?}"),
        };
        let identity = network.client_identity.as_ref().expect("a client identity");
        assert_eq!(identity.cert, std::path::Path::new("/etc/me/cert.pem"));
        assert_eq!(identity.key, std::path::Path::new("/etc/me/key.pem"));
        let Some(ProxySetting::Url(proxy)) = &network.proxy else {
            panic!("{kind}: a proxy URL, got {:?}", network.proxy)
        };
        assert_eq!(proxy.as_str(), "http://me:secret@proxy.corp:3128/");
        assert!(
            !format!("{network:?}").contains("secret"),
            "Debug hides the proxy's password"
        );
        let written = config.to_json();
        assert_eq!(written["clientCert"], "/etc/me/cert.pem");
        assert_eq!(written["clientKey"], "/etc/me/key.pem");
        assert_eq!(written["proxy"], "http://me:secret@proxy.corp:3128/");
    }
    let (config, _) = entry_warnings(json!({"type": "http", "url": "http://127.0.0.1:9/mcp", "proxy": "none"}));
    assert_eq!(config.to_json()["proxy"], "none");
}

#[test]
fn a_certificate_needs_its_key_and_a_proxy_must_be_http() {
    assert_eq!(
        entry_errors(json!({"type": "http", "url": "https://h/mcp", "clientCert": "cert.pem"})),
        [r#"field "clientCert": a client certificate needs its private key: add "clientKey" (a PEM file)"#]
    );
    assert_eq!(
        entry_errors(json!({"type": "ws", "url": "wss://h/ws", "clientKey": "key.pem"})),
        [r#"field "clientKey": a private key needs its certificate: add "clientCert" (a PEM file)"#]
    );
    assert_eq!(
        entry_errors(json!({"type": "sse", "url": "https://h/sse", "proxy": "socks5://h:1080"})),
        [r#"field "proxy": expected "none" or an http:// or https:// proxy URL, found a "socks5" URL"#]
    );
    assert_eq!(
        entry_errors(json!({"type": "http", "url": "https://h/mcp", "proxy": "proxy.corp:3128"})),
        [r#"field "proxy": expected "none" or an http:// or https:// proxy URL, found a "proxy.corp" URL"#]
    );
}
