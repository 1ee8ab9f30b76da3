//! `plexus login` and `plexus logout` end to end: the binary against the test server's OAuth
//! authorization server and protected MCP endpoint (in this process, on 127.0.0.1). The test plays
//! the browser: it reads the authorization URL the binary prints and follows the redirect to the
//! binary's loopback listener.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::Workspace;
use support::remote::Remote;

/// GETs `url` (plain http on 127.0.0.1) and returns the status and the `Location` header.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n",
        if path.is_empty() { "/" } else { path }
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let location = response.lines().take_while(|line| !line.is_empty()).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location").then(|| value.trim().to_owned())
    });
    (status, location)
}

/// Runs `plexus --config FILE login NAME`, plays the browser, and returns (exit code, stdout,
/// stderr).
fn login(ws: &Workspace, config: &str, name: &str) -> (Option<i32>, String, String) {
    let mut child = ws
        .command(ws.path(), &["--config", config, "login", name])
        .env("BROWSER", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut shown = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        shown.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http://") {
            let (status, location) = get(&format!("http://{url}"));
            assert_eq!(status, 302, "the authorization server redirects at once");
            let (status, _) = get(&location.expect("a Location"));
            assert_eq!(status, 200, "the listener answers the redirect");
        }
        line.clear();
    }
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    let status = child.wait().unwrap();
    (status.code(), stdout, shown)
}

fn servers(ws: &Workspace, config: &str) -> (Option<i32>, Value) {
    let output = ws
        .command(ws.path(), &["--config", config, "--json", "servers"])
        .output()
        .unwrap();
    let rows = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code(), rows)
}

#[test]
fn login_stores_tokens_that_connects_use_and_logout_forgets_them() {
    let remote = Remote::http(&["--oauth"]);
    let oauth = remote.server().oauth().expect("an OAuth server");
    let ws = Workspace::new();
    let config = ws.write_servers("servers.json", &json!({"docs": {"type": "http", "url": remote.url()}}));
    let config = config.to_str().unwrap();

    // Before a login: needs-auth, remembered in the home's cache.
    let (code, rows) = servers(&ws, config);
    assert_eq!(
        (code, rows[0]["status"].as_str()),
        (Some(4), Some("needs-auth")),
        "{rows}"
    );
    let cache = ws.read_json("home/mcp-needs-auth-cache.json");
    assert!(cache["docs"].is_object(), "{cache}");

    let (code, stdout, stderr) = login(&ws, config, "docs");
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(
        stdout,
        format!(
            "logged in to server \"docs\" (authorization server {})\n",
            oauth.issuer()
        )
    );
    assert!(
        stderr.starts_with("plexus: to log in to server \"docs\", open this URL in a browser:\n\n    http://"),
        "{stderr}"
    );
    assert!(
        stderr.contains("\nplexus: waiting for the browser to come back to http://127.0.0.1:"),
        "the redirect URI is the loopback IP literal: {stderr}"
    );

    // The tokens are in the store, private to the user; the cache no longer blocks the server.
    let credentials = ws.home().join("credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&credentials).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let stored = std::fs::read_to_string(&credentials).unwrap();
    assert!(stored.contains("docs"), "{stored}");
    let (code, rows) = servers(&ws, config);
    assert_eq!(
        (code, rows[0]["status"].as_str()),
        (Some(0), Some("connected")),
        "{rows}"
    );
    let call = ws.run(&[
        "--config",
        config,
        "call",
        "mcp__docs__echo",
        r#"{"text":"with a token"}"#,
    ]);
    assert!(
        call.expect(0, "connecting 1 server…\n").contains("with a token"),
        "{}",
        call.stdout
    );

    // Logout forgets them: the server needs a login again.
    let logout = ws.run(&["--config", config, "logout", "docs"]);
    assert_eq!(
        logout.ok(),
        format!("removed the tokens of server \"docs\" from {}\n", credentials.display())
    );
    let again = ws.run(&["--config", config, "logout", "docs"]);
    assert_eq!(
        again.ok(),
        format!("server \"docs\" had no stored tokens in {}\n", credentials.display())
    );
    let (code, rows) = servers(&ws, config);
    assert_eq!(
        (code, rows[0]["status"].as_str()),
        (Some(4), Some("needs-auth")),
        "{rows}"
    );
}

#[test]
fn only_oauth_servers_log_in() {
    let ws = Workspace::new();
    let config = ws.write_servers(
        "servers.json",
        &json!({
            "local": support::demo(&[]),
            "keyed": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer k"}},
        }),
    );
    let config = config.to_str().unwrap();
    ws.run(&["--config", config, "login", "local"]).expect(
        2,
        "plexus: error: server \"local\": stdio servers need no authentication, not with an OAuth login\n",
    );
    ws.run(&["--config", config, "logout", "keyed"]).expect(
        2,
        "plexus: error: server \"keyed\": http servers with a static `Authorization` header authenticate, not with an OAuth \
         login\n",
    );
    ws.run(&["--config", config, "login", "nope"]).expect(
        2,
        "plexus: error: no server named \"nope\" is configured (configured: keyed, local)\n",
    );
}

#[test]
fn a_login_whose_browser_never_comes_back_ends_after_its_timeout() {
    let remote = Remote::http(&["--oauth"]);
    let ws = Workspace::new();
    let config = ws.write_servers("servers.json", &json!({"docs": {"type": "http", "url": remote.url()}}));
    let config = config.to_str().unwrap();

    // The "browser" starts and does nothing: no redirect ever reaches the listener.
    let started = Instant::now();
    let run = ws.run_with_env(
        &["--config", config, "login", "docs", "--timeout", "1"],
        &[("BROWSER", "true")],
    );
    let elapsed = started.elapsed();
    assert_eq!((run.code, run.stdout.as_str()), (Some(3), ""), "{}", run.stderr);
    assert!(
        run.stderr.ends_with(
            "plexus: error: server \"docs\"\n  caused by: no authorization response arrived within 1 s (the login was not completed)\n"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("come back to http://127.0.0.1:"), "{}", run.stderr);
    // The limit held: not the default 300 s (a generous bound for a loaded machine).
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");

    // The timeout must be a positive number of seconds.
    for bad in ["0", "86401", "soon"] {
        let run = ws.run(&["--config", config, "login", "docs", "--timeout", bad]);
        assert_eq!(run.code, Some(2), "{bad}: {}", run.stderr);
        assert!(
            run.stderr.contains("invalid value") && run.stderr.contains("--timeout <SECONDS>"),
            "{bad}: {}",
            run.stderr
        );
    }
}
