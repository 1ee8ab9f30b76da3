//! plexus's own secrets (the session ingress token and its file, the gateway's token) reach no
//! child that was not given them: not a stdio server, not a `headersHelper` command.

mod support;

use serde_json::json;
use support::{PLEXUS, Workspace};

/// The secret variables, each with a value a test can look for.
const SECRETS: [(&str, &str); 3] = [
    ("PLEXUS_SESSION_INGRESS_TOKEN", "ingress-secret-1"),
    ("PLEXUS_SESSION_INGRESS_TOKEN_FILE", "/ingress-secret-file-2"),
    ("PLEXUS_GATEWAY_TOKEN", "gateway-secret-3"),
];

#[test]
fn a_stdio_server_and_a_headers_helper_get_none_of_plexuss_secrets() {
    let ws = Workspace::new();
    let server_env = ws.join("server-env");
    let helper_env = ws.join("helper-env");
    ws.write_servers(
        "home/settings.json",
        &json!({
            "local": {
                "command": "sh",
                "args": ["-c", format!("env > {} && exec {PLEXUS} demo-server", server_env.display())]
            },
            "remote": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headersHelper": format!("env > {}; echo '{{}}'", helper_env.display())
            }
        }),
    );
    let out = ws.run_with_env(&["-q", "servers"], &SECRETS);
    // The remote server is not there (port 9), after its helper ran; `servers` still lists both.
    assert_eq!(out.code, Some(0), "{out:?}");
    for file in [&server_env, &helper_env] {
        let env = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            env.contains("PLEXUS_HOME="),
            "{}: the rest of the environment is there",
            file.display()
        );
        for (name, value) in SECRETS {
            assert!(!env.contains(value), "{} holds {name}", file.display());
        }
    }
}
