//! The `plexus` binary end to end: real config files in temp dirs, real server processes (the
//! binary's own demo server), exact output and exit codes.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const PLEXUS: &str = env!("CARGO_BIN_EXE_plexus");

/// Runs `plexus ARGS` in `dir` with `dir/home` as the plexus home (never the real one).
fn plexus(dir: &Path, args: &[&str]) -> Output {
    plexus_with_stdin(dir, args, None)
}

fn plexus_with_stdin(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(PLEXUS)
        .args(args)
        .current_dir(dir)
        .env("PLEXUS_HOME", dir.join("home"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut pipe = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// A temp dir that is its own repository root, so no `.mcp.json` above it is found.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

/// Writes a config file with these servers and returns its path.
fn config(dir: &Path, servers: &Value) -> String {
    let path = dir.join("servers.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

fn demo(extra: &[&str]) -> Value {
    let mut args = vec!["demo-server"];
    args.extend_from_slice(extra);
    json!({ "command": PLEXUS, "args": args })
}

#[test]
fn with_no_config_the_demo_server_is_used() {
    let dir = workspace();
    let output = plexus(dir.path(), &["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("NAME "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("mcp__demo__echo ") && l.contains("read-only")),
        "{text}"
    );
    assert_eq!(stderr(&output), "connecting 1 server…\n");
}

#[test]
fn tools_json_is_the_documented_shape() {
    let dir = workspace();
    let output = plexus(dir.path(), &["--json", "tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let echo = tools.iter().find(|t| t["name"] == "mcp__demo__echo").unwrap();
    let mut keys: Vec<_> = echo.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "concurrencySafe",
            "description",
            "destructive",
            "idempotent",
            "inputSchema",
            "name",
            "openWorld",
            "readOnly",
            "server",
            "title",
            "tool"
        ]
    );
    assert_eq!(echo["server"], "demo");
    assert_eq!(echo["tool"], "echo");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["readOnly"], true);
    assert_eq!(echo["concurrencySafe"], true);
    assert_eq!(echo["destructive"], false);
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    let crash = tools.iter().find(|t| t["name"] == "mcp__demo__crash").unwrap();
    assert_eq!(
        (crash["readOnly"].clone(), crash["destructive"].clone()),
        (json!(false), json!(true))
    );
}

#[test]
fn servers_json_reports_each_status() {
    let dir = workspace();
    let path = config(
        dir.path(),
        &json!({
            "demo": demo(&[]),
            "gone": {"command": "plexus-no-such-command"},
            "off": {"command": "true", "disabled": true},
            "remote": {"type": "http", "url": "https://example.invalid/mcp"},
        }),
    );
    let output = plexus(dir.path(), &["--config", &path, "--json", "servers"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rows: Value = serde_json::from_slice(&output.stdout).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        rows,
        json!([
            {"name": "demo", "kind": "stdio", "status": "connected", "protocolVersion": "2025-11-25", "serverInfo": {"name": "plexus-testserver", "version": version}, "toolCount": 19, "error": null},
            {"name": "gone", "kind": "stdio", "status": "failed", "protocolVersion": null, "serverInfo": null, "toolCount": null, "error": "server \"gone\": could not connect to plexus-no-such-command: command not found: plexus-no-such-command"},
            {"name": "off", "kind": "stdio", "status": "disabled", "protocolVersion": null, "serverInfo": null, "toolCount": null, "error": null},
            {"name": "remote", "kind": "http", "status": "failed", "protocolVersion": null, "serverInfo": null, "toolCount": null, "error": "server \"remote\": http servers are not supported by this build of plexus (only stdio servers are supported so far; remote transports are planned)"},
        ])
    );
}

#[test]
fn servers_table_is_tidy() {
    let dir = workspace();
    let output = plexus(dir.path(), &["servers"]);
    assert_eq!(output.status.code(), Some(0));
    let version = env!("CARGO_PKG_VERSION");
    let expected = format!(
        "NAME  KIND   STATUS     PROTOCOL    SERVER{pad}TOOLS  ERROR\ndemo  stdio  connected  2025-11-25  plexus-testserver {version}  19\n",
        pad = " ".repeat(format!("plexus-testserver {version}").len() - "SERVER".len() + 2)
    );
    assert_eq!(stdout(&output), expected);
}

#[test]
fn call_prints_the_result_and_sets_the_exit_code() {
    let dir = workspace();
    let output = plexus(dir.path(), &["call", "mcp__demo__echo", r#"{"text":"hello there"}"#]);
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), "hello there\n".to_owned())
    );

    let output = plexus(dir.path(), &["--json", "call", "mcp__demo__add", r#"{"a":2,"b":40}"#]);
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        result,
        json!({"isError": false, "content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42}})
    );

    let output = plexus(dir.path(), &["--json", "call", "mcp__demo__error"]);
    assert_eq!(output.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"], Value::Null);

    let output = plexus_with_stdin(
        dir.path(),
        &["call", "mcp__demo__echo", "-"],
        Some(r#"{"text":"from stdin"}"#),
    );
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), "from stdin\n".to_owned())
    );

    let output = plexus(dir.path(), &["call", "mcp__demo__image"]);
    assert_eq!(
        stdout(&output),
        "[image: image/png, 96 bytes of base64]\na 1×1 PNG image\n"
    );
}

#[test]
fn usage_errors_exit_2_with_the_reason() {
    let dir = workspace();
    let cases: [(&[&str], &str); 4] = [
        (
            &["call", "mcp__demo__echo", "[1]"],
            "plexus: the arguments must be a JSON object, not an array\n",
        ),
        (
            &["call", "mcp__demo__nope"],
            "connecting 1 server…\nplexus: no tool is named \"mcp__demo__nope\" (see `plexus tools`)\n",
        ),
        (
            &["call", "mcp__other__echo"],
            "plexus: \"mcp__other__echo\" names no tool of a configured server (tool names look like mcp__<server>__<tool>; servers: demo)\n",
        ),
        (
            &["tools", "elsewhere"],
            "plexus: no server named \"elsewhere\" is configured (configured: demo)\n",
        ),
    ];
    for (args, message) in cases {
        let output = plexus(dir.path(), args);
        assert_eq!(
            (output.status.code(), stderr(&output)),
            (Some(2), message.to_owned()),
            "{args:?}"
        );
    }
    let missing = dir.path().join("missing.json");
    let output = plexus(dir.path(), &["--config", missing.to_str().unwrap(), "tools"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "plexus: cannot read {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    let output = plexus(dir.path(), &["frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_failing_server_does_not_hide_the_others_tools_and_exits_3() {
    let dir = workspace();
    let path = config(
        dir.path(),
        &json!({"demo": demo(&[]), "broken": demo(&["--exit-at-start", "5"])}),
    );
    let output = plexus(dir.path(), &["--config", &path, "--json", "tools"]);
    assert_eq!(output.status.code(), Some(3));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(tools.len(), 19);
    assert!(tools.iter().all(|t| t["server"] == "demo"));
    let errors = stderr(&output);
    assert!(errors.contains("plexus: server \"broken\": the connection is closed: the server exited with status 5\n--- last stderr output of the server ---\n"), "{errors}");
}

#[test]
fn a_server_dying_mid_call_exits_3_with_its_stderr() {
    let dir = workspace();
    let output = plexus(dir.path(), &["call", "mcp__demo__crash", r#"{"code": 9}"#]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).ends_with("plexus: calling mcp__demo__crash: the connection is closed: the server exited with status 9\n--- last stderr output of the server ---\nplexus-testserver: crashing as asked\n"), "{}", stderr(&output));
}

#[test]
fn the_project_file_is_found_from_a_subdirectory_and_bad_entries_are_reported() {
    let dir = workspace();
    let servers = json!({"mcpServers": {"proj": demo(&[]), "bad name!": {"command": "x"}}});
    std::fs::write(dir.path().join(".mcp.json"), servers.to_string()).unwrap();
    let sub = dir.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let output = plexus(&sub, &["--json", "tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(tools.iter().all(|t| t["server"] == "proj") && !tools.is_empty());
    let errors = stderr(&output);
    assert!(
        errors.starts_with(&format!(
            "plexus: {}: server \"bad name!\": ",
            dir.path().join(".mcp.json").display()
        )),
        "{errors}"
    );
}

#[test]
fn later_config_files_win_whole_entries() {
    let dir = workspace();
    let first = dir.path().join("a.json");
    let second = dir.path().join("b.json");
    std::fs::write(
        &first,
        json!({"mcpServers": {"s": {"command": "plexus-no-such-command"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(&second, json!({"mcpServers": {"s": demo(&[])}}).to_string()).unwrap();
    let output = plexus(
        dir.path(),
        &[
            "--config",
            first.to_str().unwrap(),
            "--config",
            second.to_str().unwrap(),
            "call",
            "mcp__s__echo",
            r#"{"text":"b wins"}"#,
        ],
    );
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), "b wins\n".to_owned()),
        "{}",
        stderr(&output)
    );
}
