//! Properties: valid names round-trip, no input panics the parser, and `to_json` then `from_json`
//! gives back the same entry for every kind.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use plexus_config::{
    ClaudeAiProxyEntry, ClientIdentityConfig, ConfigFile, HttpEntry, NetworkConfig, OAuthConfig, OAuthGrantType,
    ProxySetting, ServerConfig, ServerName, ServerOptions, Severity, SseIdeEntry, StdioEntry, Url, WsEntry, WsIdeEntry,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

proptest! {
    #[test]
    fn any_valid_server_name_round_trips(name in "[A-Za-z0-9_-]{1,64}") {
        let parsed = ServerName::new(name.clone()).unwrap();
        prop_assert_eq!(parsed.as_str(), name.as_str());
        prop_assert_eq!(parsed.to_string(), name.clone());

        let fixture = common::Fixture::new(json!({ "mcpServers": { name.clone(): { "command": "c" } } }).to_string());
        let file = fixture.load();
        prop_assert!(file.diagnostics().is_empty());
        prop_assert_eq!(file.servers().keys().next().map(ServerName::as_str), Some(name.as_str()));
    }

    #[test]
    fn names_outside_the_alphabet_or_too_long_are_rejected(
        prefix in "[A-Za-z0-9_-]{0,10}",
        bad in any::<char>().prop_filter("outside the alphabet", |c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')),
        suffix in "[A-Za-z0-9_-]{0,10}",
        long in "[A-Za-z0-9_-]{65,100}",
    ) {
        let name = format!("{prefix}{bad}{suffix}");
        prop_assert!(ServerName::new(name).is_err());
        prop_assert!(ServerName::new(long).is_err());
    }

    #[test]
    fn arbitrary_json_never_panics_the_parser(value in json_value()) {
        check_never_panics(&value);
    }

    #[test]
    fn config_shaped_json_never_panics_the_parser(value in config_shaped()) {
        check_never_panics(&value);
    }

    #[test]
    fn arbitrary_text_never_panics_the_parser(text in ".{0,200}", bytes in vec(any::<u8>(), 0..200)) {
        let _ = ConfigFile::parse(&text, "/p/.mcp.json");
        let _ = ConfigFile::parse(&String::from_utf8_lossy(&bytes), "/p/.mcp.json");
    }

    #[test]
    fn to_json_then_from_json_gives_the_same_entry(config in server_config()) {
        let json = config.to_json();
        let (parsed, warnings) = ServerConfig::from_json(&json).unwrap_or_else(|errors| panic!("{json} parses: {errors:?}"));
        prop_assert_eq!(&parsed, &config);
        // The only warnings are for the unknown fields, which are kept.
        let unknown = config.options().unknown_fields.len()
            + match &config {
                ServerConfig::Sse(http) | ServerConfig::Http(http) => http.oauth.as_ref().map_or(0, |oauth| oauth.unknown_fields.len()),
                _ => 0,
            };
        prop_assert_eq!(warnings.len(), unknown);
        // And through a real file, by way of serde.
        let fixture = common::Fixture::new(json!({ "mcpServers": { "s": config } }).to_string());
        let file = fixture.load();
        prop_assert_eq!(file.server("s"), Some(&config));
    }
}

/// Every parser entry point on `value`: as the whole file, as `mcpServers`, and as one entry.
fn check_never_panics(value: &Value) {
    let _ = ConfigFile::parse(&value.to_string(), "/p/.mcp.json");
    let _ = ConfigFile::parse(&json!({ "mcpServers": value }).to_string(), "/p/.mcp.json");
    if let Ok(file) = ConfigFile::parse(&json!({ "mcpServers": { "x": value } }).to_string(), "/p/.mcp.json") {
        // An entry loads exactly when none of its diagnostics is an error.
        assert_eq!(file.server("x").is_some(), !file.has_errors());
        for diagnostic in file.diagnostics() {
            let _ = diagnostic.to_string();
        }
    }
    match ServerConfig::from_json(value) {
        Ok((config, warnings)) => {
            assert!(warnings.iter().all(|warning| warning.severity == Severity::Warning));
            let _ = config.to_json();
        }
        Err(diagnostics) => assert!(
            diagnostics
                .iter()
                .any(|diagnostic| diagnostic.severity == Severity::Error)
        ),
    }
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![exact_json_leaf(), any::<f64>().prop_map(Value::from)]
}

/// Leaves that survive a trip through JSON text unchanged (serde_json's default float parsing can
/// be off in the last bit, so floats are left out).
fn exact_json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            "https?://[a-z.]{1,10}(:[0-9]{1,6})?/[a-z]{0,5}",
            "wss?://[a-z]{1,8}/",
            "[a-z ]{0,8}"
        ]
        .prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(".{0,8}", inner, 0..6).prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Objects whose keys are mostly the ones entries use, with values of any shape, so that every
/// field reader sees every kind of wrong value.
fn config_shaped() -> impl Strategy<Value = Value> {
    const KEYS: [&str; 22] = [
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "headersHelper",
        "oauth",
        "clientId",
        "clientSecret",
        "callbackPort",
        "authServerMetadataUrl",
        "scopes",
        "ideName",
        "ideRunningInWindows",
        "authToken",
        "id",
        "timeout",
        "disabled",
        "mcpServers",
        "x",
    ];
    let kind = prop_oneof![
        Just(json!("stdio")),
        Just(json!("sse")),
        Just(json!("http")),
        Just(json!("streamable-http")),
        Just(json!("ws")),
        Just(json!("sse-ide")),
        Just(json!("ws-ide")),
        Just(json!("claudeai-proxy")),
        json_leaf(),
    ];
    let key = proptest::sample::select(&KEYS[..]).prop_map(str::to_owned);
    let shaped = json_value().prop_recursive(2, 32, 8, move |inner| {
        btree_map(key.clone(), inner, 0..10).prop_map(|map| Value::Object(map.into_iter().collect()))
    });
    (shaped, option::of(kind)).prop_map(|(mut value, kind)| {
        if let (Value::Object(object), Some(kind)) = (&mut value, kind) {
            object.insert("type".into(), kind);
        }
        value
    })
}

fn url(schemes: &'static [&'static str]) -> impl Strategy<Value = Url> {
    (
        proptest::sample::select(schemes),
        prop_oneof![
            "[a-z][a-z0-9]{0,8}(\\.[a-z]{2,4}){0,2}",
            Just("127.0.0.1".to_owned()),
            Just("[::1]".to_owned())
        ],
        option::of(1u16..),
        "(/[A-Za-z0-9_.~-]{0,6}){0,3}",
        option::of("[a-z]{1,4}=[a-z0-9]{0,4}"),
    )
        .prop_filter_map("a parsable URL", |(scheme, host, port, path, query)| {
            let port = port.map(|port| format!(":{port}")).unwrap_or_default();
            let query = query.map(|query| format!("?{query}")).unwrap_or_default();
            Url::parse(&format!("{scheme}://{host}{port}{path}{query}")).ok()
        })
}

/// A string that is not blank and has no NUL.
fn text() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._/@-][^\u{0}]{0,16}"
}

fn headers() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map("[A-Za-z][A-Za-z0-9-]{0,12}", "[ -~]{0,16}", 0..4)
}

fn options() -> impl Strategy<Value = ServerOptions> {
    let unknown = btree_map(
        "x_[a-z]{1,6}",
        prop_oneof![exact_json_leaf(), Just(json!({"nested": [1, "two"]}))],
        0..3,
    );
    let patterns = || proptest::collection::vec("[a-z*?_]{1,6}", 0..3);
    (
        option::of(1000u64..100_000_000),
        any::<bool>(),
        any::<bool>(),
        option::of(patterns()),
        patterns(),
        unknown,
        option::of(prop_oneof![Just("auto".to_owned()), "20[0-9]{2}-[01][0-9]-[0-3][0-9]"]),
        option::of(100u64..100_000),
    )
        .prop_map(
            |(timeout, disabled, required, enabled_tools, disabled_tools, unknown, protocol_version, probe_timeout)| {
                ServerOptions {
                    timeout: timeout.map(Duration::from_millis),
                    protocol_version,
                    probe_timeout: probe_timeout.map(Duration::from_millis),
                    disabled,
                    required,
                    enabled_tools,
                    disabled_tools,
                    unknown_fields: unknown.into_iter().collect::<Map<String, Value>>(),
                }
            },
        )
}

fn oauth() -> impl Strategy<Value = OAuthConfig> {
    let grant = (
        0..OAuthGrantType::ALL.len(),
        option::of("/[a-z]{1,8}/key\\.pem"),
        "/[a-z]{1,8}/token",
    )
        .prop_map(|(index, private_key_file, assertion)| {
            let grant_type = OAuthGrantType::ALL[index];
            // The jwt_bearer grant needs its assertion file; the others may have none.
            let assertion_file = (grant_type == OAuthGrantType::JwtBearer).then(|| assertion.into());
            (grant_type, private_key_file.map(Into::into), assertion_file)
        });
    (
        option::of(text()),
        option::of(text()),
        option::of(1u16..),
        option::of(url(&["https"])),
        vec("[a-z:._/-]{1,10}", 0..4),
        option::of(url(&["https"])),
        grant,
        btree_map("x_[a-z]{1,6}", exact_json_leaf(), 0..2),
    )
        .prop_map(
            |(
                client_id,
                client_secret,
                callback_port,
                auth_server_metadata_url,
                scopes,
                client_metadata_url,
                (grant_type, private_key_file, assertion_file),
                unknown,
            )| {
                OAuthConfig {
                    client_id,
                    client_secret,
                    callback_port,
                    auth_server_metadata_url,
                    scopes,
                    client_metadata_url,
                    grant_type,
                    private_key_file,
                    assertion_file,
                    unknown_fields: unknown.into_iter().collect(),
                }
            },
        )
}

/// `ca`, `clientCert` with `clientKey`, and `proxy` (`"none"` or an http(s) URL).
fn network() -> BoxedStrategy<NetworkConfig> {
    let proxy_schemes: &'static [&'static str] = &["http", "https"];
    (
        option::of(text()),
        option::of((text(), text())),
        option::of(prop_oneof![
            Just(ProxySetting::None),
            url(proxy_schemes).prop_map(ProxySetting::Url)
        ]),
    )
        .prop_map(|(ca, identity, proxy)| NetworkConfig {
            ca: ca.map(PathBuf::from),
            client_identity: identity.map(|(cert, key)| ClientIdentityConfig {
                cert: cert.into(),
                key: key.into(),
            }),
            proxy,
        })
        .boxed()
}

fn server_config() -> impl Strategy<Value = ServerConfig> {
    let http_schemes: &'static [&'static str] = &["http", "https"];
    let ws_schemes: &'static [&'static str] = &["ws", "wss"];
    let http = || {
        (
            url(http_schemes),
            headers(),
            option::of(text()),
            network(),
            option::of(oauth()),
            options(),
        )
            .prop_map(|(url, headers, headers_helper, network, oauth, options)| HttpEntry {
                url,
                headers,
                headers_helper,
                network,
                oauth,
                options,
            })
            .boxed()
    };
    prop_oneof![
        (
            text(),
            vec("[^\u{0}]{0,10}", 0..5),
            btree_map("[A-Z_][A-Z0-9_]{0,8}", "[^\u{0}]{0,10}", 0..4),
            option::of(text()),
            options()
        )
            .prop_map(|(command, args, env, cwd, options)| ServerConfig::Stdio(StdioEntry {
                command,
                args,
                env,
                cwd: cwd.map(PathBuf::from),
                options
            })),
        http().prop_map(ServerConfig::Sse),
        http().prop_map(ServerConfig::Http),
        (url(ws_schemes), headers(), option::of(text()), network(), options()).prop_map(
            |(url, headers, headers_helper, network, options)| {
                ServerConfig::Ws(WsEntry {
                    url,
                    headers,
                    headers_helper,
                    network,
                    options,
                })
            }
        ),
        (url(http_schemes), text(), any::<bool>(), options()).prop_map(
            |(url, ide_name, ide_running_in_windows, options)| {
                ServerConfig::SseIde(SseIdeEntry {
                    url,
                    ide_name,
                    ide_running_in_windows,
                    options,
                })
            }
        ),
        (
            url(ws_schemes),
            text(),
            option::of("[!-~]{1,24}"),
            any::<bool>(),
            options()
        )
            .prop_map(|(url, ide_name, auth_token, ide_running_in_windows, options)| {
                ServerConfig::WsIde(WsIdeEntry {
                    url,
                    ide_name,
                    auth_token,
                    ide_running_in_windows,
                    options,
                })
            }),
        (url(http_schemes), text(), options())
            .prop_map(|(url, id, options)| { ServerConfig::ClaudeAiProxy(ClaudeAiProxyEntry { url, id, options }) }),
    ]
}
