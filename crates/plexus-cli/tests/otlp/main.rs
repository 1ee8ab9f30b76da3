//! The `plexus` binary built with `--features otlp`, exporting to the project's own OTLP/HTTP
//! receiver ([`receiver`]) in place of a collector: a tool call's client span and the duration
//! histograms, checked field by field (protobuf); and `plexus serve` continuing the trace its
//! client started (JSON): its server span's trace and parent are the client's `traceparent`, the
//! backend call is its child, and the test server behind it sees a `traceparent` of that trace.
#![cfg(feature = "otlp")]

mod receiver;
#[path = "../support/mod.rs"]
mod support;

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use plexus_testserver::EventLogFile;
use receiver::{Received, Receiver};
use serde_json::{Value, json};
use support::{Workspace, demo};

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(n)) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(pairs: &[KeyValue]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

/// Every span received, with its resource's `service.name`.
fn spans(received: &Received) -> Vec<(String, Span)> {
    let mut all = Vec::new();
    for export in &received.traces {
        for resource in &export.resource_spans {
            let service = resource
                .resource
                .as_ref()
                .map(|r| {
                    attributes(&r.attributes)
                        .get("service.name")
                        .cloned()
                        .unwrap_or_default()
                })
                .unwrap_or_default();
            for scope in &resource.scope_spans {
                for span in &scope.spans {
                    all.push((service.clone(), span.clone()));
                }
            }
        }
    }
    all
}

/// A histogram's unit, bucket bounds and data points (attributes, count).
type Histogram = (String, Vec<f64>, Vec<(BTreeMap<String, String>, u64)>);

/// The data points (attributes, count) of histogram `name`, with its unit and bounds.
fn histogram(received: &Received, name: &str) -> Option<Histogram> {
    let mut found: Option<Histogram> = None;
    for export in &received.metrics {
        for resource in &export.resource_metrics {
            for scope in &resource.scope_metrics {
                for metric in scope.metrics.iter().filter(|metric| metric.name == name) {
                    let Some(Data::Histogram(data)) = &metric.data else {
                        panic!("{name} is not a histogram")
                    };
                    let entry = found.get_or_insert_with(|| (metric.unit.clone(), Vec::new(), Vec::new()));
                    for point in &data.data_points {
                        entry.1.clone_from(&point.explicit_bounds);
                        entry.2.push((attributes(&point.attributes), point.count));
                    }
                }
            }
        }
    }
    found
}

fn named<'a>(spans: &'a [(String, Span)], name: &str) -> &'a (String, Span) {
    spans.iter().find(|(_, span)| span.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name}: {:?}",
            spans.iter().map(|(_, s)| &s.name).collect::<Vec<_>>()
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_exports_its_span_and_histograms_over_otlp_protobuf() {
    let receiver = Receiver::start().await;
    let log = EventLogFile::new("otlp-call");
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[&log.arg()])}));
    let endpoint = receiver.endpoint();
    let run = tokio::task::spawn_blocking(move || {
        let run = ws.run_with_env(
            &["call", "mcp__demo__echo", r#"{"text":"traced"}"#],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
                ("OTEL_SERVICE_NAME", "plexus-under-test"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-token=s3cr%C3%A9t"),
            ],
        );
        (ws, run)
    })
    .await
    .unwrap();
    let (_ws, run) = run;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("traced"), "{}", run.stdout);
    assert!(
        !run.stderr.contains("s3cr"),
        "a header's value is never shown: {}",
        run.stderr
    );

    let received = receiver
        .wait_for(|received| {
            spans(received).iter().any(|(_, span)| span.name == "tools/call echo")
                && histogram(received, "mcp.client.session.duration").is_some()
        })
        .await;
    // Every export carried the configured header, and said what it is.
    for headers in &received.headers {
        assert!(headers.contains(&("x-collector-token".to_owned(), "s3cr\u{e9}t".to_owned())));
        assert!(headers.contains(&("content-type".to_owned(), "application/x-protobuf".to_owned())));
    }
    let all = spans(&received);
    let (service, call) = named(&all, "tools/call echo");
    assert_eq!(service, "plexus-under-test");
    assert_eq!(call.kind, SpanKind::Client as i32);
    let mut got = attributes(&call.attributes);
    let id = got.remove("jsonrpc.request.id").expect("the request id");
    assert_eq!(
        got,
        expected(&[
            ("mcp.method.name", "tools/call"),
            ("mcp.protocol.version", "2026-07-28"),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "pipe"),
        ])
    );
    // The demo server saw the span's context as the call's `traceparent`.
    let seen = log.matching(&json!({"event": "trace-context", "method": "tools/call"}));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["id"].to_string(), id);
    assert_eq!(
        seen[0]["traceparent"],
        json!(format!("00-{}-{}-01", hex(&call.trace_id), hex(&call.span_id)))
    );

    let (unit, bounds, points) = histogram(&received, "mcp.client.operation.duration").unwrap();
    assert_eq!(unit, "s");
    assert_eq!(
        bounds,
        [
            0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0
        ]
    );
    let call_point = expected(&[
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", "2026-07-28"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
    ]);
    assert!(points.contains(&(call_point, 1)), "{points:?}");
    let (unit, _, sessions) = histogram(&received, "mcp.client.session.duration").unwrap();
    assert_eq!(unit, "s");
    assert_eq!(
        sessions,
        [(
            expected(&[("mcp.protocol.version", "2026-07-28"), ("network.transport", "pipe")]),
            1
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plexus_serve_continues_its_clients_trace_over_otlp_json() {
    let receiver = Receiver::start().await;
    let log = EventLogFile::new("otlp-serve");
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[&log.arg()])}));
    let endpoint = receiver.endpoint();
    let (mut gateway, address) = support::gateway::serve_http(
        &ws,
        "127.0.0.1",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
        &[],
    );
    // The client's own trace: its span's context in the call's `_meta`.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_id = "00f067aa0ba902b7";
    let transport = plexus::http::HttpTransport::new(plexus::http::HttpConfig::new(plexus::net::RemoteEndpoint::new(
        format!("http://{address}/mcp"),
    )))
    .unwrap();
    let mut options = plexus::ClientOptions::new("gateway");
    options.era = plexus::client::EraChoice::Initialize;
    let client = plexus::Client::connect(Box::new(transport), options).await.unwrap();
    let params = json!({
        "name": "mcp__demo__echo",
        "arguments": {"text": "through"},
        "_meta": {"traceparent": format!("00-{trace_id}-{parent_id}-01")},
    });
    let result: Value = client
        .request("tools/call", Some(&params), &plexus::client::RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "through");
    client.close().await.unwrap();
    // SIGTERM: the gateway ends as on Ctrl-C, and flushes its exports before it exits.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(gateway.0.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let status = gateway.0.wait().unwrap();
        (gateway, status)
    })
    .await
    .unwrap()
    .1;
    assert!(status.code().is_some(), "it exited by itself: {status}");

    let received = receiver
        .wait_for(|received| {
            let all = spans(received);
            all.iter().any(|(_, span)| span.name == "tools/call mcp__demo__echo")
                && all.iter().any(|(_, span)| span.name == "tools/call echo")
        })
        .await;
    for headers in &received.headers {
        assert!(headers.contains(&("content-type".to_owned(), "application/json".to_owned())));
    }
    let all = spans(&received);
    let (_, served) = named(&all, "tools/call mcp__demo__echo");
    assert_eq!(served.kind, SpanKind::Server as i32);
    assert_eq!(hex(&served.trace_id), trace_id);
    assert_eq!(hex(&served.parent_span_id), parent_id);
    let mut got = attributes(&served.attributes);
    assert!(got.remove("jsonrpc.request.id").is_some());
    let session_id = got.remove("mcp.session.id").expect("the HTTP session's id");
    assert_eq!(session_id.len(), 32, "{session_id}");
    assert_eq!(
        got,
        expected(&[
            ("mcp.method.name", "tools/call"),
            ("mcp.protocol.version", "2025-11-25"),
            ("gen_ai.tool.name", "mcp__demo__echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "tcp"),
            ("network.protocol.name", "http"),
        ])
    );
    // The backend call is the server span's child, in the client's trace …
    let (_, backend) = named(&all, "tools/call echo");
    assert_eq!(backend.kind, SpanKind::Client as i32);
    assert_eq!(hex(&backend.trace_id), trace_id);
    assert_eq!(backend.parent_span_id, served.span_id);
    // … and the test server behind the gateway continued it.
    let seen = log.matching(&json!({"event": "trace-context", "method": "tools/call"}));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0]["traceparent"],
        json!(format!("00-{trace_id}-{}-01", hex(&backend.span_id)))
    );
    let (unit, _, points) = histogram(&received, "mcp.server.operation.duration").expect("the server histogram");
    assert_eq!(unit, "s");
    assert!(
        points.iter().any(|(attributes, count)| *count == 1
            && attributes.get("gen_ai.tool.name").map(String::as_str) == Some("mcp__demo__echo")
            && attributes.get("network.transport").map(String::as_str) == Some("tcp")),
        "{points:?}"
    );
}
