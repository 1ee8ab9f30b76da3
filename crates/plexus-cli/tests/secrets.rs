//! plexus's own secrets (the session ingress token and its file, the gateway's token) reach no
//! child that was not given them: not a stdio server, not a `headersHelper` command, and not
//! through plexus's own `/proc/PID/environ` either (plexus takes them out of its environment).

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
    let parent_env = ws.join("parent-env");
    ws.write_servers(
        "home/settings.json",
        &json!({
            "local": {
                "command": "sh",
                "args": ["-c", format!(
                    "env > {} && tr '\\0' '\\n' < /proc/$PPID/environ > {} && exec {PLEXUS} demo-server",
                    server_env.display(),
                    parent_env.display()
                )]
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
    for file in [&server_env, &helper_env, &parent_env] {
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

/// `command`, run as the user `nobody` when the test runs as root (root reads any process's
/// files, so the check needs two processes of one ordinary user).
fn as_one_user(command: &str, root: bool) -> std::process::Command {
    if root {
        let mut setpriv = std::process::Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", command]);
        setpriv
    } else {
        std::process::Command::new(command)
    }
}

#[test]
fn another_process_of_the_same_user_cannot_read_plexuss_environment() {
    use std::io::{BufRead, Write};
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut gateway = as_one_user(PLEXUS, root)
        .arg("serve")
        .env("HOME", home.path())
        .env("PLEXUS_HOME", home.path().join(".plexus"))
        .env("PLEXUS_GATEWAY_TOKEN", "gateway-secret-3")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Once the gateway answers, its `main` has long been through its start.
    let mut stdin = gateway.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut answer = String::new();
    std::io::BufReader::new(gateway.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains(r#""id":1"#), "{answer}");
    let environ = format!("/proc/{}/environ", gateway.id());
    let read = as_one_user("cat", root).arg(&environ).output().unwrap();
    drop(stdin);
    let status = gateway.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!read.status.success(), "{environ} was readable: {read:?}");
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("Permission denied"),
        "{read:?}"
    );
}
