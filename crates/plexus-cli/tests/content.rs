//! The commands for resources, templates, prompts and ping, `call --arg`, servers given on the
//! command line (`--stdio`, `--url`), the capabilities the CLI declares (roots; elicitation on a
//! terminal, asked through a pseudo-terminal here), and shell completions — against the demo
//! server over stdio and the test server over Streamable HTTP on 127.0.0.1.

mod support;

use std::os::unix::fs::PermissionsExt as _;

use serde_json::{Value, json};
use support::remote::Remote;
use support::{PLEXUS, Workspace, demo};

/// A workspace whose user scope holds the demo server as `demo`.
fn with_demo() -> Workspace {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[])}));
    ws
}

#[test]
fn resources_templates_and_reads_over_stdio_and_http() {
    let remote = Remote::http(&[]);
    let url = remote.url();
    for (ws, extra) in [
        (with_demo(), Vec::new()),
        (Workspace::new(), vec!["--url", url.as_str(), "--as", "demo"]),
    ] {
        let run = |args: &[&str]| ws.run(&[args, &extra[..]].concat());
        let listed = run(&["--json", "resources"]).json();
        let references: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["reference"].as_str().unwrap())
            .collect();
        assert_eq!(
            references,
            [
                "@demo:test://static/hello.txt",
                "@demo:test://static/data.bin",
                "@demo:test://static/readme.md"
            ]
        );
        let table = run(&["resources"]);
        assert!(table.stdout.starts_with("REFERENCE"), "{table:?}");
        assert!(
            table.stdout.contains("@demo:test://static/hello.txt  Hello"),
            "{table:?}"
        );

        let templates = run(&["--json", "templates", "demo"]).json();
        assert_eq!(templates[0]["uriTemplate"], "test://items/{id}");
        assert_eq!(templates[0]["server"], "demo");

        let hello = run(&["read", "demo", "test://static/hello.txt"]);
        assert_eq!(
            (hello.code, hello.stdout.as_str()),
            // The text ends its line; no empty line follows.
            (Some(0), "Hello from plexus-testserver!\n")
        );
        // Binary content goes to a file of its own, readable by the user only.
        let read = run(&["--json", "read", "demo", "test://static/data.bin"]).json();
        let file = read["contents"][0]["file"].as_str().unwrap().to_owned();
        assert_eq!(read["contents"][0]["bytes"], 16);
        assert_eq!(std::path::Path::new(&file).extension(), Some("bin".as_ref()), "{file}");
        assert_eq!(std::fs::read(&file).unwrap(), (0u8..16).collect::<Vec<_>>());
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let missing = run(&["read", "demo", "test://static/nope"]);
        assert_eq!(missing.code, Some(3), "{missing:?}");
        assert!(
            missing
                .stderr
                .contains("a request to server \"demo\" failed: resources/read failed: "),
            "{missing:?}"
        );
    }
}

#[test]
fn prompts_are_listed_by_qualified_name_and_got_with_arguments() {
    let ws = with_demo();
    let listed = ws.run(&["--json", "prompts"]).json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["mcp__demo__code-review", "mcp__demo__greeting", "mcp__demo__simple"]
    );
    assert_eq!(listed[1]["prompt"], "greeting");
    let table = ws.run(&["prompts"]);
    assert!(
        table.stdout.contains("mcp__demo__code-review  language* style"),
        "{table:?}"
    );

    let greeting = ws.run(&["prompt", "mcp__demo__greeting", "name=Ada"]);
    assert_eq!(
        (greeting.code, greeting.stdout.as_str()),
        (
            Some(0),
            "The greeting prompt.\n\nuser: Hello, Ada! Please greet me back.\n"
        )
    );
    let json = ws.run(&["--json", "prompt", "mcp__demo__greeting", "name=Ada"]).json();
    assert_eq!(json["messages"][0]["role"], "user");
    let bad = ws.run(&["prompt", "mcp__demo__greeting", "name"]);
    assert_eq!(bad.code, Some(2));
    assert_eq!(
        bad.stderr,
        "plexus: error: prompt argument \"name\": expected ARG=VALUE\n"
    );
    let unknown = ws.run(&["prompt", "mcp__demo__nope"]);
    assert_eq!(unknown.code, Some(2), "{unknown:?}");
    assert!(
        unknown
            .stderr
            .ends_with("plexus: no prompt is named \"mcp__demo__nope\" (see `plexus prompts`)\n"),
        "{unknown:?}"
    );
    // A near name is suggested.
    let typo = ws.run(&["prompt", "mcp__demo__greting", "name=Ada"]);
    assert_eq!(typo.code, Some(2), "{typo:?}");
    assert!(
        typo.stderr.ends_with(
            "plexus: no prompt is named \"mcp__demo__greting\"; did you mean \"mcp__demo__greeting\"? (see `plexus prompts`)\n"
        ),
        "{typo:?}"
    );
}

#[test]
fn ping_times_each_server_and_a_dead_one_fails_the_command() {
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &json!({"demo": demo(&[]), "gone": {"command": "plexus-no-such-command"}}),
    );
    let out = ws.run(&["--json", "ping"]);
    assert_eq!(out.code, Some(3), "{out:?}");
    let pings = out.json();
    assert_eq!(pings.as_array().unwrap().len(), 1);
    assert_eq!(pings[0]["server"], "demo");
    assert!(pings[0]["ms"].as_f64().unwrap() >= 0.0);
    assert!(out.stderr.contains("plexus-no-such-command"), "{out:?}");
    let one = ws.run(&["ping", "demo"]);
    assert_eq!(one.code, Some(0), "{one:?}");
    assert!(
        one.stdout.starts_with("demo: ") && one.stdout.ends_with(" ms\n"),
        "{one:?}"
    );
}

#[test]
fn arguments_come_from_arg_flags_and_servers_from_the_command_line() {
    let ws = Workspace::new();
    let stdio = format!("'{PLEXUS}' demo-server");
    let sum = ws.run(&[
        "call",
        "mcp__adhoc__add",
        "--arg",
        "a=2",
        "-a",
        "b=3",
        "--stdio",
        &stdio,
    ]);
    assert_eq!(
        (sum.code, sum.stdout.as_str()),
        (Some(0), "5\nstructured content:\n{\n  \"sum\": 5\n}\n"),
        "{sum:?}"
    );
    // Values that are not JSON are strings.
    let echo = ws.run(&[
        "call",
        "mcp__mine__echo",
        "--arg",
        "text=hello world",
        "--stdio",
        &stdio,
        "--as",
        "mine",
    ]);
    assert_eq!(echo.stdout, "hello world\n", "{echo:?}");
    // A server on the command line replaces the configured ones, and no demo notice is given.
    let tools = ws.run(&["--json", "tools", "--stdio", &stdio]);
    assert_eq!(tools.code, Some(0), "{tools:?}");
    assert!(!tools.stderr.contains("demo"), "{tools:?}");
    assert_eq!(tools.json().as_array().unwrap().len(), 20);

    let bad: [(&[&str], &str); 4] = [
        (
            &["tools", "--stdio", "'open"],
            "plexus: --stdio \"'open\" is not a command line (empty, or a quote left open)\n",
        ),
        (
            &["tools", "--url", "ftp://x"],
            "plexus: --url: \"ftp://x\" is not a URL plexus can connect to (it takes http://, https://, ws:// or wss://); to run a command with it as its only word, say --transport stdio\n",
        ),
        (
            &["tools", "--url", "http://127.0.0.1:1/mcp", "-H", "nocolon"],
            "plexus: --url: invalid -H \"nocolon\": expected 'Name: value'\n",
        ),
        (&["tools", "--stdio", "x", "--as", "a b"], ""),
    ];
    for (args, stderr) in bad {
        let out = ws.run(args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        if !stderr.is_empty() {
            assert_eq!(out.stderr, stderr, "{args:?}");
        }
    }
    // A refused connection is said at once, with the URL.
    let refused = ws.run(&["ping", "--url", "http://127.0.0.1:1/mcp"]);
    assert_eq!(refused.code, Some(3), "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("plexus: error: server \"adhoc\"\n  caused by: POST http://127.0.0.1:1/mcp\n  caused by: could not connect\n"),
        "{refused:?}"
    );
}

#[test]
fn roots_are_declared_and_elicitation_only_on_a_terminal() {
    let ws = with_demo();
    let roots = ws.run(&["call", "mcp__demo__roots"]);
    let expected = format!("file://{}/", ws.path().display());
    assert!(roots.stdout.contains(&expected), "{roots:?}");
    // Without a terminal nothing interactive is declared: the server is told so.
    let elicit = ws.run(&["call", "mcp__demo__elicit", "--arg", "message=Who?"]);
    assert_eq!(elicit.code, Some(1), "{elicit:?}");
    assert!(
        elicit
            .stdout
            .contains("the client did not declare the elicitation capability"),
        "{elicit:?}"
    );
    let url = ws.run(&["call", "mcp__demo__url-elicit"]);
    assert_eq!(url.code, Some(3), "{url:?}");
    assert!(
        url.stderr
            .contains("needs the user to open https://auth.example.test/step/1"),
        "{url:?}"
    );
}

#[test]
fn a_form_is_asked_field_by_field_on_a_terminal() {
    let ws = with_demo();
    // Fields come in the server's order: an empty name is refused (it is required), then
    // "Ada"; Enter takes confirm's default (false); Enter sends the answers.
    let out = ws.run_on_terminal(
        &["call", "mcp__demo__elicit", "--arg", "message=Who are you?"],
        b"\nAda\n\n\n",
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let answer: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {"name": "Ada", "confirm": false}})
    );
    assert!(out.stderr.contains("server \"demo\" asks: Who are you?"), "{out:?}");
    assert!(out.stderr.contains("Confirm [yes/no] (default: no): "), "{out:?}");
    assert!(out.stderr.contains("Name (Your name) (required): "), "{out:?}");
    assert!(out.stderr.contains("  a value is required\n"), "{out:?}");
    assert!(
        out.stderr.find("Name (Your name)") < out.stderr.find("Confirm [yes/no]"),
        "{out:?}"
    );

    // "n" at the end declines; end of input cancels.
    let declined = ws.run_on_terminal(
        &["call", "mcp__demo__elicit", "--arg", "message=Who?"],
        b"Ada\nyes\nn\n",
    );
    let answer: Value = serde_json::from_str(declined.stdout.trim()).unwrap();
    assert_eq!(answer["action"], "decline", "{declined:?}");
}

#[test]
fn a_url_elicitation_is_shown_and_waited_for_on_a_terminal() {
    let ws = with_demo();
    // The browser is a command that does nothing; Enter opens it, the second Enter says done.
    let out = ws.run_on_terminal_with_env(
        &["call", "mcp__demo__url-elicit", "--arg", "notify=false"],
        b"\n\n",
        &[("BROWSER", "true")],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (Some(0), "url-elicit: done after 1 URL elicitations\n"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("asks you to open a page: Open the link to finish step 1 of 1"),
        "{out:?}"
    );
    assert!(out.stderr.contains("    https://auth.example.test/step/1\n"), "{out:?}");
    assert!(
        out.stderr.contains("open it (on auth.example.test) in the browser?"),
        "{out:?}"
    );
}

#[test]
fn the_browser_gets_the_url_that_was_checked_not_the_text_the_server_sent() {
    let ws = with_demo();
    let opened = ws.join("opened-url");
    let browser = ws.write_script(
        "browser.sh",
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > {0}.part && mv {0}.part {0}\n",
            opened.display()
        ),
    );
    // A control character and a space before the URL, a right-to-left override in its path.
    let sent = "\u{1} https://auth.example.test/pay\u{202e}gpj.exe";
    let arguments = serde_json::json!({"notify": false, "url": sent}).to_string();
    let out = ws.run_on_terminal_with_env(
        &["call", "mcp__demo__url-elicit", &arguments],
        b"\n\n",
        &[("BROWSER", browser.to_str().unwrap())],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let checked = "https://auth.example.test/pay%E2%80%AEgpj.exe";
    assert!(out.stderr.contains(&format!("    {checked}\n")), "{out:?}");
    // The browser starts in the background: wait for it (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !opened.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), checked);
}

#[test]
fn completions_are_printed_for_each_shell() {
    let ws = Workspace::new();
    for (shell, marker) in [
        ("bash", "_plexus()"),
        ("zsh", "#compdef plexus"),
        ("fish", "complete -c plexus"),
    ] {
        let out = ws.run(&["completions", shell]);
        assert_eq!(out.code, Some(0), "{shell}: {out:?}");
        assert!(out.stdout.contains(marker), "{shell}");
        assert!(out.stdout.contains("resources"), "{shell}");
    }
}
