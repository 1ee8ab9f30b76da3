//! Every server-facing command of the CLI against the npm reference server
//! (`@modelcontextprotocol/server-everything`), and `plexus serve` driven by the Python SDK's
//! client (`mcp` on PyPI) and the MCP Inspector's CLI mode (`@modelcontextprotocol/inspector`),
//! over stdio and Streamable HTTP on 127.0.0.1. `cargo xtask peers` pins and installs them and
//! runs these tests with `PLEXUS_PEERS_DIR` set; without it the tests say so and pass (the peers
//! need the npm registry and PyPI).

mod support;

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::Workspace;
use support::peers::{ListeningPeer, manifest, path};

/// The node binary and the everything server's entry, from the peers' manifest.
fn everything() -> Option<(String, String)> {
    let manifest = manifest()?;
    Some((path(&manifest, "/node"), path(&manifest, "/everything/entry")))
}

/// The everything server over Streamable HTTP on a port of its own, ended when dropped.
fn everything_over_http(node: &str, entry: &str) -> ListeningPeer {
    ListeningPeer::start("the everything server", |port| {
        let mut command = Command::new(node);
        command.args([entry, "streamableHttp"]).env("PORT", port.to_string());
        command
    })
}

/// Runs every command against the server `server` names (`--stdio …` or `--url …`).
fn exercise(server: &[&str]) {
    let ws = Workspace::new();
    let run = |args: &[&str]| {
        let out = ws.run(&[args, server, &["--as", "everything"]].concat());
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
        out
    };
    let tools = run(&["--json", "tools"]).json();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    assert_eq!(
        run(&["call", "mcp__everything__get-sum", "--arg", "a=2", "--arg", "b=3"]).stdout,
        "The sum of 2 and 3 is 5.\n"
    );
    let image = run(&["call", "mcp__everything__get-tiny-image"]).stdout;
    let saved = image
        .lines()
        .find_map(|line| line.strip_prefix("[image: image/png, "))
        .and_then(|rest| rest.split_once("saved to "))
        .map_or_else(|| panic!("{image}"), |(_, path)| path.trim_end_matches(']').to_owned());
    assert_eq!(&std::fs::read(&saved).unwrap()[..4], b"\x89PNG");
    // Progress reports arrive as lines when stderr is not a terminal.
    let long = run(&[
        "call",
        "mcp__everything__trigger-long-running-operation",
        "--arg",
        "duration=1",
        "--arg",
        "steps=2",
    ]);
    assert!(
        long.stderr
            .contains("mcp__everything__trigger-long-running-operation: 1/2"),
        "{long:?}"
    );
    assert_eq!(
        long.stdout,
        "Long running operation completed. Duration: 1 seconds, Steps: 2.\n"
    );

    let resources = run(&["--json", "resources"]).json();
    let document = resources
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| {
            r["uri"]
                .as_str()
                .filter(|uri| uri.starts_with("demo://resource/static/document/"))
        })
        .unwrap_or_else(|| panic!("{resources}"))
        .to_owned();
    assert!(!run(&["read", "everything", &document]).stdout.trim().is_empty());
    let templates = run(&["--json", "templates"]).json();
    assert!(
        templates
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == "demo://resource/dynamic/text/{resourceId}"),
        "{templates}"
    );
    let prompts = run(&["--json", "prompts"]).json();
    assert!(
        prompts
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "mcp__everything__args-prompt")
    );
    assert_eq!(
        run(&["prompt", "mcp__everything__args-prompt", "city=Paris", "state=Texas"]).stdout,
        "user: What's weather in Paris, Texas?\n"
    );
    assert!(run(&["ping"]).stdout.starts_with("everything: "));

    // A tool that must run as a task (2025-11-25's experimental tasks): called as one, polled,
    // its status shown as progress and its result fetched.
    let research = run(&[
        "call",
        "mcp__everything__simulate-research-query",
        r#"{"topic":"rust"}"#,
    ]);
    assert!(research.stdout.starts_with("# Research Report: rust\n"), "{research:?}");
    assert!(
        research.stdout.contains("- Stage 4: Generating report ✓"),
        "{research:?}"
    );
    for status in ["task working: Gathering sources...", "task completed"] {
        assert!(
            research
                .stderr
                .contains(&format!("mcp__everything__simulate-research-query: {status}")),
            "{status}: {research:?}"
        );
    }
}

#[test]
fn every_command_against_the_everything_server_over_stdio() {
    let Some((node, entry)) = everything() else { return };
    exercise(&["--stdio", &format!("'{node}' '{entry}' stdio")]);
}

#[test]
fn every_command_against_the_everything_server_over_http() {
    let Some((node, entry)) = everything() else { return };
    let peer = everything_over_http(&node, &entry);
    exercise(&["--url", &format!("http://127.0.0.1:{}/mcp", peer.port)]);
}

/// A client of the Python SDK: lists, calls (with progress), reads, gets a prompt, and prints
/// what it saw as JSON.
const PYTHON_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

async def run(session):
    await session.initialize()
    tools = [t.name for t in (await session.list_tools()).tools]
    total = await session.call_tool("mcp__demo__add", {"a": 2, "b": 3})
    progress = []
    async def on_progress(value, total_, message):
        progress.append(value)
    slow = await session.call_tool("mcp__demo__slow", {"ms": 300, "steps": 2}, progress_callback=on_progress)
    resources = [str(r.uri) for r in (await session.list_resources()).resources]
    read = await session.read_resource("plexus://demo/test://static/hello.txt")
    prompts = [p.name for p in (await session.list_prompts()).prompts]
    greeting = await session.get_prompt("mcp__demo__greeting", {"name": "Ada"})
    print(json.dumps({
        "tools": tools, "sum": total.content[0].text, "slow": slow.content[0].text, "progress": progress,
        "resources": resources, "read": read.contents[0].text, "prompts": prompts,
        "greeting": greeting.messages[0].content.text,
    }))

async def main():
    if sys.argv[1] == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:], env=dict(os.environ))
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await run(session)
    else:
        async with streamable_http_client(sys.argv[2]) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await run(session)

asyncio.run(main())
"#;

/// A workspace whose user scope holds the demo server.
fn gateway_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &serde_json::json!({"demo": support::demo(&[])}));
    ws
}

/// `plexus serve --http` on a free port, ended when dropped.
struct HttpGateway {
    child: Child,
    url: String,
}

impl HttpGateway {
    fn start(ws: &Workspace) -> HttpGateway {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let address = format!("127.0.0.1:{port}");
        let child = ws
            .command(ws.path(), &["serve", "--http", &address])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&address).is_err() {
            assert!(Instant::now() < deadline, "the gateway did not listen on {address}");
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpGateway {
            child,
            url: format!("http://{address}/mcp"),
        }
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `program ARGS` with the workspace's environment (so that a `plexus serve` it starts
/// finds the workspace's config); its stdout, after asserting it succeeded.
fn run_client(ws: &Workspace, program: &str, args: &[&str]) -> String {
    let command = ws.command(ws.path(), &[]);
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = command
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
        .collect();
    let output = Command::new(program)
        .args(args)
        .envs(envs)
        .env("MCP_CATALOG_PATH", ws.join("inspector-catalog.json"))
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn check_python_view(stdout: &str) {
    let seen: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    assert!(
        seen["tools"].as_array().unwrap().iter().any(|t| t == "mcp__demo__add"),
        "{seen}"
    );
    assert_eq!(seen["sum"], "5");
    assert_eq!(seen["slow"], "slow: done after 300 ms");
    assert_eq!(seen["progress"], serde_json::json!([1.0, 2.0]));
    assert!(
        seen["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "plexus://demo/test://static/hello.txt")
    );
    assert_eq!(seen["read"], "Hello from plexus-testserver!\n");
    assert!(
        seen["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "mcp__demo__greeting")
    );
    assert_eq!(seen["greeting"], "Hello, Ada! Please greet me back.");
}

#[test]
fn the_python_sdk_client_uses_the_gateway_over_stdio_and_http() {
    let Some(manifest) = manifest() else { return };
    let python = path(&manifest, "/python/python");
    let ws = gateway_workspace();
    let script = ws.write("client.py", PYTHON_CLIENT);
    let script = script.to_str().unwrap();
    check_python_view(&run_client(&ws, &python, &[script, "stdio", support::PLEXUS, "serve"]));
    let gateway = HttpGateway::start(&ws);
    check_python_view(&run_client(&ws, &python, &[script, "http", &gateway.url]));
}

/// A client of the Python SDK that calls the everything server's task-only tool through the
/// gateway and prints the report.
const PYTHON_TASK_CLIENT: &str = r#"
import asyncio, os, sys
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            tool = tools["mcp__everything__simulate-research-query"]
            assert tool.execution is None or tool.execution.taskSupport in (None, "forbidden"), tool.execution
            result = await session.call_tool("mcp__everything__simulate-research-query", {"topic": "gateways"})
            print(result.content[0].text)

asyncio.run(main())
"#;

#[test]
fn the_everything_servers_task_only_tool_runs_through_the_gateway() {
    let Some(manifest) = manifest() else { return };
    let python = path(&manifest, "/python/python");
    let (node, entry) = (path(&manifest, "/node"), path(&manifest, "/everything/entry"));
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &serde_json::json!({"everything": {"command": node, "args": [entry, "stdio"]}}),
    );
    let script = ws.write("task_client.py", PYTHON_TASK_CLIENT);
    let report = run_client(&ws, &python, &[script.to_str().unwrap(), support::PLEXUS, "serve"]);
    assert!(report.starts_with("# Research Report: gateways\n"), "{report}");
    assert!(report.contains("- Stage 4: Generating report ✓"), "{report}");
}

/// A client of the Python SDK (`mcp.Client`) in the era its `mode` asks for (`legacy`: the
/// `initialize` handshake; `2026-07-28`: the stateless revision): calls a tool, answers the
/// backend's question (an elicitation, which a stateless client gets as an `input_required`
/// round) and prints what it saw as JSON.
const PYTHON_ERA_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import Client, StdioServerParameters, types

async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})

async def main():
    mode, target = sys.argv[1], sys.argv[2:]
    if target[0].startswith("http"):
        server = target[0]
    else:
        server = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
    async with Client(server, mode=mode, elicitation_callback=on_elicit) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        total = await client.call_tool("mcp__demo__add", {"a": 2, "b": 3})
        asked = await client.call_tool("mcp__demo__elicit", {"message": "Go?"})
        print(json.dumps({
            "version": client.protocol_version, "echo": "mcp__demo__echo" in tools,
            "sum": total.content[0].text, "asked": json.loads(asked.content[0].text),
        }))

asyncio.run(main())
"#;

#[test]
fn the_python_sdk_client_uses_the_gateway_in_both_eras() {
    let Some(manifest) = manifest() else { return };
    let python = path(&manifest, "/python/python");
    let ws = gateway_workspace();
    let script = ws.write("era_client.py", PYTHON_ERA_CLIENT);
    let script = script.to_str().unwrap();
    let gateway = HttpGateway::start(&ws);
    for (mode, version) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let stdio = [script, mode, support::PLEXUS, "serve"];
        let http = [script, mode, gateway.url.as_str()];
        for (transport, args) in [("stdio", &stdio[..]), ("http", &http[..])] {
            let out = run_client(&ws, &python, args);
            let seen: Value = serde_json::from_str(out.trim().lines().last().unwrap()).unwrap();
            assert_eq!(
                seen,
                serde_json::json!({
                    "version": version, "echo": true, "sum": "5",
                    "asked": {"action": "accept", "content": {"name": "Ada"}},
                }),
                "{mode} over {transport}"
            );
        }
    }
}

#[test]
fn the_inspector_cli_uses_the_gateway_over_stdio_and_http() {
    let Some(manifest) = manifest() else { return };
    let (node, inspector) = (path(&manifest, "/node"), path(&manifest, "/inspector/entry"));
    let ws = gateway_workspace();
    let stdio = [inspector.as_str(), "--cli", support::PLEXUS, "serve"];
    let call = |target: &[&str], method: &[&str]| -> Value {
        let args = [target, &["--method"], method].concat();
        serde_json::from_str(&run_client(&ws, &node, &args)).unwrap()
    };
    let tools = call(&stdio, &["tools/list"]);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mcp__demo__echo"),
        "{tools}"
    );
    let sum = call(
        &stdio,
        &[
            "tools/call",
            "--tool-name",
            "mcp__demo__add",
            "--tool-arg",
            "a=2",
            "b=3",
        ],
    );
    assert_eq!(sum["content"][0]["text"], "5");
    let gateway = HttpGateway::start(&ws);
    let http = [inspector.as_str(), "--cli", gateway.url.as_str()];
    let read = call(
        &http,
        &["resources/read", "--uri", "plexus://demo/test://static/hello.txt"],
    );
    assert_eq!(read["contents"][0]["text"], "Hello from plexus-testserver!\n");
    let prompt = call(
        &http,
        &[
            "prompts/get",
            "--prompt-name",
            "mcp__demo__greeting",
            "--prompt-args",
            "name=Ada",
        ],
    );
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Hello, Ada! Please greet me back."
    );
    let listed = call(&http, &["resources/templates/list"]);
    assert!(
        listed["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == "plexus://demo/test://items/{id}"),
        "{listed}"
    );
}
