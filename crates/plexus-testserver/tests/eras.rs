//! Both protocol eras over real pipes: a dual-era server lets the first request decide; a
//! modern-only server refuses `initialize` with -32022; a legacy-only server answers the
//! `server/discover` probe as `--probe-answer` says (an error, silence, or its exit).

mod common;

use common::Server;
use serde_json::{Value, json};

/// `params` with the 2026-07-28 envelope in `_meta`, asking for `version`.
fn enveloped(version: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "eras-test", "version": "1"},
    });
    params
}

fn modern(params: Value) -> Value {
    enveloped("2026-07-28", params)
}

#[test]
fn a_dual_server_speaks_the_modern_era_to_a_modern_first_request() {
    let mut server = Server::start(&[]);
    let discovered = server.result("server/discover", modern(json!({})));
    assert_eq!(discovered["resultType"], "complete");
    assert_eq!(discovered["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(discovered["capabilities"]["tools"], json!({"listChanged": true}));
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "plexus-testserver"
    );
    assert_eq!(
        (discovered["ttlMs"].as_u64(), discovered["cacheScope"].as_str()),
        (Some(0), Some("public"))
    );

    let tools = server.result("tools/list", modern(json!({})));
    assert_eq!(tools["resultType"], "complete");
    assert_eq!(
        (tools["ttlMs"].as_u64(), tools["cacheScope"].as_str()),
        (Some(0), Some("public"))
    );
    assert_eq!(tools["tools"].as_array().unwrap().len(), 20);
    let sum = server.result(
        "tools/call",
        modern(json!({"name": "add", "arguments": {"a": 2, "b": 3}})),
    );
    assert_eq!(sum["resultType"], "complete");
    assert_eq!(sum["structuredContent"], json!({"sum": 5}));

    // What the stateless revision removed, and a request without the envelope.
    assert_eq!(server.error("ping", modern(json!({})))["code"], -32601);
    let bare = server.error("tools/list", json!({}));
    assert_eq!(bare["code"], -32602);
    assert!(
        bare["message"]
            .as_str()
            .unwrap()
            .contains("io.modelcontextprotocol/protocolVersion"),
        "{bare}"
    );
    // initialize on a modern connection: -32022 naming the version served.
    let refused = server.error(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    );
    assert_eq!(refused["code"], -32022);
    assert_eq!(
        refused["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
}

#[test]
fn a_dual_server_stays_legacy_after_initialize() {
    let mut server = Server::start(&[]);
    assert_eq!(server.initialize()["protocolVersion"], "2025-11-25");
    let tools = server.result("tools/list", json!({}));
    assert_eq!(tools.get("resultType"), None, "a legacy result has no resultType");
    assert_eq!(server.error("server/discover", modern(json!({})))["code"], -32601);
}

#[test]
fn a_modern_server_refuses_other_versions_and_can_refuse_the_first_request_once() {
    let mut server = Server::start(&["--era", "modern"]);
    let refused = server.error("server/discover", enveloped("2025-11-25", json!({})));
    assert_eq!(refused["code"], -32022);
    assert_eq!(
        refused["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
    assert_eq!(
        server.result("server/discover", modern(json!({})))["resultType"],
        "complete"
    );

    let mut server = Server::start(&["--reject-first-modern-request"]);
    let refused = server.error("server/discover", modern(json!({})));
    assert_eq!(
        refused["data"],
        json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})
    );
    assert_eq!(
        server.result("server/discover", modern(json!({})))["resultType"],
        "complete"
    );
}

#[test]
fn a_legacy_server_answers_the_probe_as_asked() {
    for (answer, code) in [("method-not-found", -32601), ("invalid-params", -32602)] {
        let mut server = Server::start(&["--era", "legacy", "--probe-answer", answer]);
        assert_eq!(
            server.error("server/discover", modern(json!({})))["code"],
            code,
            "{answer}"
        );
        // Then it speaks its own era.
        assert_eq!(server.initialize()["protocolVersion"], "2025-11-25");
        let tools = server.result("tools/list", modern(json!({})));
        assert_eq!(tools.get("resultType"), None);
    }

    let mut silent = Server::start(&["--era", "legacy", "--probe-answer", "silence"]);
    silent.request("server/discover", modern(json!({})));
    assert_eq!(
        silent.initialize()["protocolVersion"],
        "2025-11-25",
        "the probe got no answer"
    );

    let mut dying = Server::start(&["--era", "legacy", "--probe-answer", "exit"]);
    dying.request("server/discover", modern(json!({})));
    assert_eq!(dying.wait().code(), Some(1));
    assert!(
        dying.stderr_text().contains("--probe-answer exit"),
        "{}",
        dying.stderr_text()
    );
}

#[test]
fn the_header_tools_see_no_headers_on_stdio() {
    let mut server = Server::start(&["--header-tools"]);
    let tools = server.result("tools/list", modern(json!({})));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[20..], ["headers_echo", "bad_header_tool"]);
    let echoed = server.result(
        "tools/call",
        modern(json!({"name": "headers_echo", "arguments": {"region": "eu"}})),
    );
    assert_eq!(echoed["content"][0]["text"], "{}");
    let bad = server.result(
        "tools/call",
        modern(json!({"name": "bad_header_tool", "arguments": {"region": "eu"}})),
    );
    assert_eq!(bad["content"][0]["text"], r#"{"region":"eu"}"#);
}
