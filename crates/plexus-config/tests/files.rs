//! Whole files: reading, size limit, JSON syntax, the shape of the top level, names, duplicates, and
//! bad entries skipped while the rest loads.

mod common;

use common::{Fixture, messages};
use plexus_config::{ConfigError, ConfigFile, MAX_FILE_SIZE, ServerConfig, ServerKind, ServerName, Severity};
use serde_json::json;

/// The names of the servers that loaded.
fn names(file: &ConfigFile) -> Vec<&str> {
    file.servers().keys().map(ServerName::as_str).collect()
}

#[test]
fn a_missing_file_names_the_path_and_the_os_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.json");
    let error = ConfigFile::load(&path).unwrap_err();
    assert!(error.is_not_found());
    assert_eq!(error.path(), path);
    assert_eq!(
        plexus_jsonrpc::error_chain(&error),
        format!("cannot read {}: No such file or directory (os error 2)", path.display())
    );
}

#[test]
fn a_directory_or_special_file_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let error = ConfigFile::load(dir.path()).unwrap_err();
    assert!(!error.is_not_found());
    assert_eq!(
        error.to_string(),
        format!(
            "cannot read {}: it is a directory, not a regular file",
            dir.path().display()
        )
    );

    // A socket (like a FIFO) would block or never end if it were opened and read.
    let socket = dir.path().join("config.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert_eq!(
        ConfigFile::load(&socket).unwrap_err().to_string(),
        format!(
            "cannot read {}: it is a special file, not a regular file",
            socket.display()
        )
    );
    assert_eq!(
        ConfigFile::load("/dev/zero").unwrap_err().to_string(),
        "cannot read /dev/zero: it is a special file, not a regular file"
    );
}

#[test]
fn a_file_up_to_the_size_limit_loads_and_one_byte_more_does_not() {
    let body = r#"{"mcpServers":{"x":{"command":"c"}}}"#;
    let limit = usize::try_from(MAX_FILE_SIZE).unwrap();
    let at_limit = format!("{body}{}", " ".repeat(limit - body.len()));
    assert_eq!(at_limit.len(), limit);
    let fixture = Fixture::new(&at_limit);
    assert_eq!(fixture.load().servers().len(), 1);

    let fixture = Fixture::new(format!("{at_limit} "));
    assert_eq!(
        fixture.load_error(),
        format!(
            "{}: the file is larger than the 4194304-byte limit for a config file",
            fixture.shown()
        )
    );
    assert_eq!(
        ConfigFile::parse(&format!("{at_limit} "), "/etc/plexus/managed-mcp.json")
            .unwrap_err()
            .to_string(),
        "/etc/plexus/managed-mcp.json: the file is larger than the 4194304-byte limit for a config file"
    );
}

#[test]
fn invalid_json_names_the_line_and_column() {
    let fixture = Fixture::new("{\n  \"mcpServers\": {\n    \"x\": { \"command\": \"a\", }\n  }\n}\n");
    let error = ConfigFile::load(&fixture.path).unwrap_err();
    let ConfigError::Syntax { line, column, .. } = &error else {
        panic!("a syntax error, got {error:?}")
    };
    assert_eq!((*line, *column), (3, 28));
    assert_eq!(
        plexus_jsonrpc::error_chain(&error),
        format!("{}:3:28: invalid JSON: trailing comma", fixture.shown())
    );

    let fixture = Fixture::new(r#"{"mcpServers": {"a": {"command": "x"} "b": {}}}"#);
    assert_eq!(
        fixture.load_error(),
        format!("{}:1:39: invalid JSON: expected `,` or `}}`", fixture.shown())
    );

    let fixture = Fixture::new("{} x");
    assert_eq!(
        fixture.load_error(),
        format!("{}:1:4: invalid JSON: trailing characters", fixture.shown())
    );

    let fixture = Fixture::new("");
    assert_eq!(
        fixture.load_error(),
        format!("{}:1:0: invalid JSON: EOF while parsing a value", fixture.shown())
    );

    let fixture = Fixture::new(b"{\"mcpServers\": {\"x\": {\"command\": \"\xff\"}}}");
    assert_eq!(
        fixture.load_error(),
        format!("{}:1:35: invalid JSON: invalid unicode code point", fixture.shown())
    );
}

#[test]
fn deep_nesting_is_skipped_outside_mcp_servers_and_an_error_inside_never_a_crash() {
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let text = format!(r#"{{"other": {nested}, "mcpServers": {{}}}}"#);
    assert!(
        ConfigFile::parse(&text, "/p/settings.json")
            .unwrap()
            .servers()
            .is_empty()
    );

    // The entry starts at column 22; the parser stops at its 128th level of nesting: the two
    // objects around the entry and 126 arrays, the last of which is at column 22 + 125.
    let text = format!(r#"{{"mcpServers": {{"x": {nested}}}}}"#);
    let error = ConfigFile::parse(&text, "/p/settings.json").unwrap_err();
    assert_eq!(
        plexus_jsonrpc::error_chain(&error),
        "/p/settings.json:1:147: invalid JSON: recursion limit exceeded"
    );
}

#[test]
fn a_leading_byte_order_mark_is_accepted() {
    let fixture = Fixture::new(b"\xEF\xBB\xBF{\"mcpServers\": {\"x\": {\"command\": \"c\"}}}");
    assert_eq!(
        fixture.load().server("x").map(ServerConfig::kind),
        Some(ServerKind::Stdio)
    );
}

#[test]
fn the_top_level_must_be_an_object() {
    for (text, found) in [
        ("[]", "an array"),
        ("null", "null"),
        ("3", "3"),
        ("\"mcpServers\"", "a string"),
        ("true", "true"),
    ] {
        let fixture = Fixture::new(text);
        assert_eq!(
            fixture.load_error(),
            format!(
                "{}: the top level must be a JSON object, found {found}",
                fixture.shown()
            )
        );
    }
}

#[test]
fn a_file_without_mcp_servers_has_no_servers_and_no_diagnostics() {
    let fixture = Fixture::new(r#"{"permissions": {"allow": ["Bash"]}, "theme": "dark", "model": null}"#);
    let file = fixture.load();
    assert!(file.servers().is_empty());
    assert!(file.diagnostics().is_empty());
    assert_eq!(file.path(), fixture.path);
}

#[test]
fn mcp_servers_must_be_an_object() {
    for (value, found) in [("[]", "an array"), ("null", "null"), ("\"x\"", "a string"), ("0", "0")] {
        let fixture = Fixture::new(format!(r#"{{"mcpServers": {value}}}"#));
        assert_eq!(
            fixture.load_error(),
            format!(
                "{}: field \"mcpServers\": expected an object that maps each server's name to its settings, found {found}",
                fixture.shown()
            )
        );
    }
}

#[test]
fn other_settings_are_ignored_and_mcp_servers_is_read_among_them() {
    let fixture = Fixture::new(
        r#"{
  "env": {"A": 1},
  "mcpServers": {"docs": {"type": "http", "url": "https://docs.example.com/mcp"}},
  "hooks": [{"deep": [[[{"x": null}]]]}]
}"#,
    );
    let file = fixture.load();
    assert!(file.diagnostics().is_empty());
    assert_eq!(names(&file), ["docs"]);
}

#[test]
fn a_bad_entry_is_skipped_and_named_and_the_rest_loads() {
    let fixture = Fixture::new(
        json!({
            "mcpServers": {
                "good": { "command": "npx", "args": ["-y", "pkg"] },
                "bad": { "command": "uvx", "args": ["a", "b", 3] },
                "remote": { "type": "sse", "url": "https://e.com/sse", "timeout": 10 },
                "my server": { "command": "x" },
                "urlonly": { "url": "https://e.com/mcp" }
            }
        })
        .to_string(),
    );
    let file = fixture.load();
    let shown = fixture.shown();
    assert_eq!(names(&file), ["good", "my_server", "remote", "urlonly"]);
    assert!(file.has_errors());
    assert_eq!(
        messages(file.diagnostics()),
        [
            format!(r#"{shown}: server "bad": field "args[2]": expected a string, found 3"#),
            format!(
                r#"{shown}: server "my server": renamed to "my_server" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)"#
            ),
            format!(
                r#"{shown}: server "remote": field "timeout": 10 ms is below the 1000 ms minimum; ignored, the default applies"#
            ),
            format!(
                r#"{shown}: server "urlonly": field "type": missing; taken as "http" since the entry has a "url" (add "type": "http" or "sse" to choose)"#
            ),
        ]
    );
    let severities: Vec<Severity> = file
        .diagnostics()
        .iter()
        .map(|diagnostic| diagnostic.severity)
        .collect();
    assert_eq!(
        severities,
        [Severity::Error, Severity::Warning, Severity::Warning, Severity::Warning]
    );
    let first = &file.diagnostics()[0];
    assert_eq!(first.file.as_deref(), Some(fixture.path.as_path()));
    assert_eq!(first.server.as_deref(), Some("bad"));
    assert_eq!(first.field.as_deref(), Some("args[2]"));
    assert_eq!(first.message, "expected a string, found 3");
}

#[test]
fn names_other_clients_allow_are_renamed_unless_the_new_name_is_taken() {
    let long = "n".repeat(65);
    let fixture = Fixture::new(
        json!({ "mcpServers": {
            "": { "command": "x" },
            "a.b": { "command": "x" },
            "a_b": { "command": "y" },
            "c.d": { "command": "x" },
            "c d": { "command": "x" },
            "my server": { "command": "x" },
            long.clone(): { "command": "x" }
        } })
        .to_string(),
    );
    let file = fixture.load();
    let shown = fixture.shown();
    let sixty_four = "n".repeat(64);
    assert_eq!(names(&file), ["a_b", "my_server", sixty_four.as_str()]);
    // The entry that has the name keeps it.
    assert_eq!(file.server("a_b").unwrap().to_json()["command"], "y");
    assert_eq!(
        messages(file.diagnostics()),
        [
            format!(
                r#"{shown}: server "": invalid server name: it is empty; use 1 to 64 characters from A-Z, a-z, 0-9, "_" and "-""#
            ),
            format!(
                r#"{shown}: server "a.b": invalid server name: the character '.' is not allowed; use only A-Z, a-z, 0-9, "_" and "-"; it cannot be renamed to "a_b", which another entry of this file has or would take"#
            ),
            format!(
                r#"{shown}: server "c d": invalid server name: the character ' ' is not allowed; use only A-Z, a-z, 0-9, "_" and "-"; it cannot be renamed to "c_d", which another entry of this file has or would take"#
            ),
            format!(
                r#"{shown}: server "c.d": invalid server name: the character '.' is not allowed; use only A-Z, a-z, 0-9, "_" and "-"; it cannot be renamed to "c_d", which another entry of this file has or would take"#
            ),
            format!(
                r#"{shown}: server "my server": renamed to "my_server" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)"#
            ),
            format!(
                r#"{shown}: server "{sixty_four}…": renamed to "{sixty_four}" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)"#
            ),
        ]
    );
    // The diagnostic keeps the whole name; only its display is shortened.
    assert_eq!(file.diagnostics()[5].server.as_deref(), Some(long.as_str()));
}

#[test]
fn a_name_with_quotes_is_escaped_in_messages() {
    let file = ConfigFile::parse(r#"{"mcpServers": {"a\"b\n": {"command": "x"}}}"#, "/p/.mcp.json").unwrap();
    assert_eq!(
        messages(file.diagnostics()),
        [
            r#"/p/.mcp.json: server "a\"b\n": renamed to "a_b_" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)"#
        ]
    );
}

#[test]
fn a_server_defined_twice_warns_and_the_last_definition_wins() {
    let fixture = Fixture::new(
        r#"{"mcpServers": {"x": {"command": "first"}, "y": {"command": "y"}, "x": {"command": "last"}, "x": {"command": "final"}}}"#,
    );
    let file = fixture.load();
    assert_eq!(
        messages(file.diagnostics()),
        [format!(
            r#"{}: server "x": defined more than once; the last definition is used"#,
            fixture.shown()
        )]
    );
    assert_eq!(file.diagnostics()[0].severity, Severity::Warning);
    let Some(ServerConfig::Stdio(stdio)) = file.server("x") else {
        panic!("x loads")
    };
    assert_eq!(stdio.command, "final");
}

#[test]
fn mcp_servers_given_twice_warns_and_the_last_is_used() {
    let fixture = Fixture::new(r#"{"mcpServers": {"a": {"command": "a"}}, "mcpServers": {"b": {"command": "b"}}}"#);
    let file = fixture.load();
    assert_eq!(
        messages(file.diagnostics()),
        [format!(
            r#"{}: field "mcpServers": appears more than once; the last one is used"#,
            fixture.shown()
        )]
    );
    assert_eq!(names(&file), ["b"]);
}

#[test]
fn parse_and_load_agree() {
    let text = json!({ "mcpServers": { "a": { "command": "a", "extra": 1 }, "b": { "type": "ws" } } }).to_string();
    let fixture = Fixture::new(&text);
    assert_eq!(ConfigFile::parse(&text, &fixture.path).unwrap(), fixture.load());
    let (servers, diagnostics) = fixture.load().into_parts();
    assert_eq!(servers.len(), 1);
    assert_eq!(
        messages(&diagnostics),
        [
            format!(
                r#"{}: server "a": field "extra": unknown field for a "stdio" server; kept as written but not used"#,
                fixture.shown()
            ),
            format!(
                r#"{}: server "b": field "url": missing; a "ws" server requires it"#,
                fixture.shown()
            ),
        ]
    );
}
