//! `${VAR}` expansion in merged entries, from real files: which fields, defaults, missing variables
//! as warnings on the server, and the size limit.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::{Workspace, messages, servers};
use plexus_config::{ConfigSources, Environment, MergedConfig, ServerConfig};
use serde_json::json;

fn env() -> Environment {
    [
        ("HOME_DIR", "/home/u"),
        ("TOKEN", "t0k"),
        ("PORT", "8080"),
        ("EMPTY", ""),
    ]
    .into_iter()
    .collect()
}

fn load(ws: &Workspace, env: Environment) -> MergedConfig {
    ConfigSources::discover(&ws.options().with_env(env)).load()
}

#[test]
fn every_listed_field_is_expanded_and_nothing_else() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.user_file(),
        &servers(json!({
            "local": {
                "command": "${HOME_DIR}/bin/server",
                "args": ["--port=${PORT}", "$TOKEN", "${MISSING:-fallback}", "${EMPTY:-was-empty}"],
                "env": {"API_TOKEN": "${TOKEN}", "${TOKEN}": "key-is-not-expanded"},
                "cwd": "${HOME_DIR}/work",
                "note": "${TOKEN}"
            },
            "remote": {
                "type": "http",
                "url": "http://localhost:${PORT}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
                "headersHelper": "${HOME_DIR}/bin/headers",
                "oauth": {"clientId": "${TOKEN}"}
            },
            "socket": {"type": "ws", "url": "ws://localhost:${PORT}/", "headers": {"X-Key": "${TOKEN}"}}
        })),
    );
    let merged = load(&ws, env());
    assert!(!merged.has_errors());

    let ServerConfig::Stdio(local) = &merged.server("local").unwrap().config else {
        panic!()
    };
    assert_eq!(local.command, "/home/u/bin/server");
    assert_eq!(local.args, ["--port=8080", "$TOKEN", "fallback", "was-empty"]);
    assert_eq!(
        local.env,
        BTreeMap::from([
            ("API_TOKEN".to_owned(), "t0k".to_owned()),
            ("${TOKEN}".to_owned(), "key-is-not-expanded".to_owned()),
        ])
    );
    assert_eq!(local.cwd, Some(PathBuf::from("/home/u/work")));
    assert_eq!(local.options.unknown_fields["note"], json!("${TOKEN}"));

    let ServerConfig::Http(remote) = &merged.server("remote").unwrap().config else {
        panic!()
    };
    assert_eq!(remote.url.as_str(), "http://localhost:8080/mcp");
    assert_eq!(remote.headers["Authorization"], "Bearer t0k");
    assert_eq!(remote.headers_helper.as_deref(), Some("/home/u/bin/headers"));
    assert_eq!(remote.oauth.as_ref().unwrap().client_id.as_deref(), Some("${TOKEN}"));

    let ServerConfig::Ws(socket) = &merged.server("socket").unwrap().config else {
        panic!()
    };
    assert_eq!(socket.url.as_str(), "ws://localhost:8080/");
    assert_eq!(socket.headers["X-Key"], "t0k");
}

#[test]
fn unset_variables_are_kept_and_listed_in_one_warning_on_their_server() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.project_file(),
        &servers(json!({
            "x": {
                "command": "${BIN_DIR}/run",
                "args": ["${A}", "${B}", "${A}"],
                "env": {"K": "${C}"}
            },
            "clean": {"command": "ok"}
        })),
    );
    let merged = load(&ws, env());
    let server = merged.server("x").unwrap();
    let ServerConfig::Stdio(stdio) = &server.config else {
        panic!()
    };
    assert_eq!(stdio.command, "${BIN_DIR}/run");
    assert_eq!(stdio.args, ["${A}", "${B}", "${A}"]);
    assert_eq!(
        messages(&server.warnings),
        [format!(
            r#"{}: server "x": not set and without a default: ${{BIN_DIR}} in command, ${{A}} in args[0] and args[2], ${{B}} in args[1], ${{C}} in env.K; kept as written"#,
            ws.project_file().display()
        )]
    );
    assert!(merged.server("clean").unwrap().warnings.is_empty());
}

#[test]
fn an_expansion_over_the_limit_is_an_error_on_its_field() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.user_file(),
        &servers(json!({"big": {"command": "c", "args": ["${HUGE}${HUGE}${HUGE}"]}})),
    );
    let huge: Environment = [("HUGE", "x".repeat(400_000))].into_iter().collect();
    let merged = load(&ws, huge);
    assert!(merged.server("big").is_none());
    assert_eq!(
        messages(&merged.invalid_server("big").unwrap().errors),
        [format!(
            r#"{}: server "big": field "args[0]": expands to more than 1048576 bytes"#,
            ws.user_file().display()
        )]
    );
}

#[test]
fn a_value_that_becomes_invalid_after_expansion_is_reported_on_its_field() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.user_file(),
        &servers(json!({"r": {"type": "http", "url": "${BASE}/mcp"}})),
    );
    let base: Environment = [("BASE", "ftp://files.example.com")].into_iter().collect();
    let merged = load(&ws, base);
    assert_eq!(
        messages(&merged.invalid_server("r").unwrap().errors),
        [format!(
            r#"{}: server "r": field "url": expected an http or https URL, found a "ftp" URL"#,
            ws.user_file().display()
        )]
    );
}
