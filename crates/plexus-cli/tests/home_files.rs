//! The plexus home's private files as the binary meets them: a corrupt `credentials.json` or
//! needs-auth cache is set aside and reported on stderr without `-v`, once; one readable by other
//! users is made 0600 and reported. The commands go on as before. The servers are the test
//! server's Streamable HTTP endpoint (in this process, on 127.0.0.1).
#![cfg(unix)]

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use support::Workspace;
use support::remote::Remote;

/// Writes `contents` to `path` with permission bits `mode`.
fn write_with_mode(path: &Path, contents: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The files `<name>.corrupt-*` next to `path`.
fn set_aside(path: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.corrupt-", path.file_name().unwrap().to_string_lossy());
    let mut found: Vec<PathBuf> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect();
    found.sort();
    found
}

/// A workspace whose config has one `http` server, `docs`, on a running test server.
fn with_docs(remote: &Remote) -> (Workspace, String) {
    let ws = Workspace::new();
    let config = ws.write_servers("servers.json", &json!({"docs": {"type": "http", "url": remote.url()}}));
    let config = config.to_str().unwrap().to_owned();
    (ws, config)
}

#[test]
fn a_corrupt_credentials_file_is_reported_once_and_set_aside_and_the_command_goes_on() {
    let remote = Remote::http(&[]);
    let (ws, config) = with_docs(&remote);
    let credentials = ws.home().join("credentials.json");
    write_with_mode(&credentials, "{not json", 0o600);

    let run = ws.run(&["--config", &config, "--json", "servers"]);
    let [aside] = &set_aside(&credentials)[..] else {
        panic!("one file set aside; stderr: {}", run.stderr)
    };
    let rows = run.json();
    run.expect(
        0,
        &format!(
            "connecting 1 server…\nplexus: the credentials file {} is unreadable (not a credentials file: key must be \
             a string at line 1 column 2); it was moved to {} and the store starts empty\n",
            credentials.display(),
            aside.display()
        ),
    );
    assert_eq!(rows[0]["status"], "connected", "{rows}");
    assert_eq!(fs::read_to_string(aside).unwrap(), "{not json", "kept as it was");

    // Set aside: the next command has nothing to report.
    ws.run(&["--config", &config, "servers"])
        .expect(0, "connecting 1 server…\n");

    // Another command that reads the store reports it too.
    write_with_mode(&credentials, "[]", 0o600);
    let logout = ws.run(&["--config", &config, "logout", "docs"]);
    let asides = set_aside(&credentials);
    assert_eq!(asides.len(), 2, "{asides:?}");
    let aside = asides
        .into_iter()
        .find(|path| fs::read_to_string(path).unwrap() == "[]")
        .unwrap();
    let stdout = logout.expect(
        0,
        &format!(
            "plexus: the credentials file {} is unreadable (not a credentials file: invalid length 0, expected struct \
             StoreFile with 2 elements at line 1 column 2); it was moved to {} and the store starts empty\n",
            credentials.display(),
            aside.display()
        ),
    );
    assert_eq!(
        stdout,
        format!("server \"docs\" had no stored tokens in {}\n", credentials.display())
    );
}

#[test]
fn a_credentials_file_readable_by_others_is_made_private_and_reported() {
    let remote = Remote::http(&[]);
    let (ws, config) = with_docs(&remote);
    let credentials = ws.home().join("credentials.json");
    write_with_mode(&credentials, r#"{"version": 1, "servers": {}}"#, 0o644);

    ws.run(&["--config", &config, "servers"]).expect(
        0,
        &format!(
            "connecting 1 server…\nplexus: the credentials file {} was readable by other users (mode 0644); made it \
             0600\n",
            credentials.display()
        ),
    );
    assert_eq!(mode_of(&credentials), 0o600);
    assert_eq!(
        fs::read_to_string(&credentials).unwrap(),
        r#"{"version": 1, "servers": {}}"#,
        "its contents are kept"
    );
    ws.run(&["--config", &config, "servers"])
        .expect(0, "connecting 1 server…\n");
}

#[test]
fn a_corrupt_needs_auth_cache_is_set_aside_and_reported() {
    let remote = Remote::http(&[]);
    let (ws, config) = with_docs(&remote);
    let cache = ws.home().join("mcp-needs-auth-cache.json");
    write_with_mode(&cache, "{\"docs\": 7", 0o600);

    let run = ws.run(&["--config", &config, "servers"]);
    let [aside] = &set_aside(&cache)[..] else {
        panic!("one file set aside; stderr: {}", run.stderr)
    };
    run.expect(
        0,
        &format!(
            "connecting 1 server…\nplexus: the needs-auth cache {} is unreadable (not a needs-auth cache: invalid \
             type: integer `7`, expected a map at line 1 column 10); it was moved to {} and the cache starts empty\n",
            cache.display(),
            aside.display()
        ),
    );
    assert_eq!(fs::read_to_string(aside).unwrap(), "{\"docs\": 7");
    ws.run(&["--config", &config, "servers"])
        .expect(0, "connecting 1 server…\n");
}

#[test]
fn a_needs_auth_cache_readable_by_others_is_made_private_and_reported() {
    let remote = Remote::http(&[]);
    let (ws, config) = with_docs(&remote);
    let cache = ws.home().join("mcp-needs-auth-cache.json");
    write_with_mode(&cache, "{}", 0o644);

    ws.run(&["--config", &config, "servers"]).expect(
        0,
        &format!(
            "connecting 1 server…\nplexus: the needs-auth cache {} was readable by other users (mode 0644); made it \
             0600\n",
            cache.display()
        ),
    );
    assert_eq!(mode_of(&cache), 0o600);
}

#[test]
fn a_login_reports_the_store_before_it_waits_for_the_browser() {
    let remote = Remote::http(&["--oauth"]);
    let (ws, config) = with_docs(&remote);
    let credentials = ws.home().join("credentials.json");
    write_with_mode(&credentials, r#"{"version": 1, "servers": {}}"#, 0o640);

    // The browser never comes back: the login ends after its one second.
    let run = ws.run_with_env(
        &["--config", &config, "login", "docs", "--timeout", "1"],
        &[("BROWSER", "true")],
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines[..2],
        [
            format!(
                "plexus: the credentials file {} was readable by other users (mode 0640); made it 0600",
                credentials.display()
            )
            .as_str(),
            "plexus: to log in to server \"docs\", open this URL in a browser:"
        ],
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("readable by other users").count(),
        1,
        "reported once: {}",
        run.stderr
    );
    assert_eq!(mode_of(&credentials), 0o600);
}
