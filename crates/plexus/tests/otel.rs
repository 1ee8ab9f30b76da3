//! OpenTelemetry in the MCP semantic conventions (feature `otlp`), exported to the SDK's
//! in-memory exporters: every request's client span (name, kind, parent, status and each
//! attribute's exact value), the era rule of `mcp.session.id`, `tool_error`, the W3C
//! `traceparent` the test server sees in `_meta` (and none without an OpenTelemetry layer, and
//! the caller's own kept), and the duration histograms' names, units, buckets and attributes.
#![cfg(feature = "otlp")]

use std::collections::BTreeMap;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use plexus::client::EraChoice;
use plexus::client::telemetry::DURATION_BUCKETS;
use plexus::protocol::ProtocolVersion;
use plexus::telemetry::Otlp;
use plexus::{Client, ClientOptions};
use plexus_testserver::EventLogFile;
use plexus_testserver::RemoteServer;
use plexus_testserver::child_test::testserver_binary;
use serde_json::{Value, json};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// The export to memory, installed as this thread's subscriber while it lives.
struct Recorded {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meter_provider: SdkMeterProvider,
    _otlp: Otlp,
    _subscriber: tracing::subscriber::DefaultGuard,
}

fn record() -> Recorded {
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let metrics = InMemoryMetricExporter::default();
    let meter_provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics.clone()).build())
        .build();
    let otlp = Otlp::with_providers(Some(tracer_provider), Some(meter_provider.clone()));
    // The host's own spans go through a layer of their own (the MCP layer takes only the MCP
    // spans), on the same tracer.
    let host_layer = tracing_opentelemetry::layer()
        .with_tracer(opentelemetry::trace::TracerProvider::tracer(
            &SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build(),
            "host",
        ))
        .with_filter(tracing_subscriber::filter::filter_fn(|metadata| {
            metadata.target() == "host"
        }));
    let subscriber = tracing_subscriber::registry().with(otlp.layer()).with(host_layer);
    let guard = tracing::subscriber::set_default(subscriber);
    Recorded {
        spans,
        metrics,
        meter_provider,
        _otlp: otlp,
        _subscriber: guard,
    }
}

use tracing_subscriber::Layer as _;

/// A span's attributes by key, as text (an integer as its digits).
fn attributes(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .map(|kv| {
            let value = match &kv.value {
                OtelValue::String(s) => s.to_string(),
                OtelValue::I64(n) => n.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.to_string(), value)
        })
        .collect()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|span| span.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name:?} in {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

/// The MCP attributes of `span` (the ones this crate writes; the layer adds none with location and
/// threads off).
fn mcp_attributes(span: &SpanData) -> BTreeMap<String, String> {
    attributes(&span.attributes)
}

async fn stdio_client(log: &EventLogFile, era: EraChoice) -> Client {
    let config = plexus::stdio::StdioConfig::new(testserver_binary())
        .arg("stdio")
        .arg(log.arg());
    let transport = plexus::stdio::StdioTransport::spawn(config).unwrap();
    let mut options = ClientOptions::new("demo");
    options.era = era;
    Client::connect(Box::new(transport), options).await.unwrap()
}

/// A histogram's unit, bucket bounds and data points (attributes, count).
type Histogram = (String, Vec<f64>, Vec<(BTreeMap<String, String>, u64)>);

/// The histogram `name`'s data points: (attributes, count), and its unit and bounds.
fn histogram(metrics: &InMemoryMetricExporter, name: &str) -> Histogram {
    let exported = metrics.get_finished_metrics().unwrap();
    let last = exported.last().expect("metrics were exported");
    for scope in last.scope_metrics() {
        for metric in scope.metrics() {
            if metric.name() != name {
                continue;
            }
            let AggregatedMetrics::F64(MetricData::Histogram(data)) = metric.data() else {
                panic!("{name} is not an f64 histogram");
            };
            let mut bounds = Vec::new();
            let points = data
                .data_points()
                .map(|point| {
                    bounds = point.bounds().collect();
                    let pairs: Vec<KeyValue> = point.attributes().cloned().collect();
                    (attributes(&pairs), point.count())
                })
                .collect();
            return (metric.unit().to_owned(), bounds, points);
        }
    }
    panic!("no metric {name}");
}

#[tokio::test(flavor = "current_thread")]
async fn every_request_of_a_stdio_session_has_its_span_and_its_duration_in_the_conventions() {
    let recorded = record();
    let log = EventLogFile::new("otel-stdio");
    let client = stdio_client(&log, EraChoice::Initialize).await;
    let host = tracing::info_span!(target: "host", "agent turn");
    let host_context = host.context().span().span_context().clone();
    async {
        client
            .call_tool("echo", json!({"text": "hi"}).as_object().cloned())
            .await
            .unwrap();
        let failed = client.call_tool("error", None).await.unwrap();
        assert_eq!(failed.is_error, Some(true));
        client.call_tool("fail", None).await.unwrap_err();
        client.get_prompt("simple", None).await.unwrap();
        client.read_resource("test://static/hello.txt").await.unwrap();
    }
    .instrument(host.clone())
    .await;
    drop(host);
    client.close().await.unwrap();

    let spans = recorded.spans.get_finished_spans().unwrap();
    let version = ProtocolVersion::V2025_11_25.as_str();
    let echo = span(&spans, "tools/call echo");
    assert_eq!(echo.span_kind, SpanKind::Client);
    assert_eq!(echo.status, Status::Unset);
    assert_eq!(echo.span_context.trace_id(), host_context.trace_id());
    assert_eq!(echo.parent_span_id, host_context.span_id());
    let echo_id = mcp_attributes(echo)["jsonrpc.request.id"].clone();
    assert_eq!(
        mcp_attributes(echo),
        expected(&[
            ("mcp.method.name", "tools/call"),
            ("mcp.protocol.version", version),
            ("jsonrpc.request.id", &echo_id),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "pipe"),
        ])
    );
    let error = span(&spans, "tools/call error");
    assert_eq!(mcp_attributes(error)["error.type"], "tool_error");
    assert!(matches!(error.status, Status::Error { .. }));
    let fail = span(&spans, "tools/call fail");
    let fail_attributes = mcp_attributes(fail);
    assert_eq!(fail_attributes["error.type"], "-32603");
    assert_eq!(fail_attributes["rpc.response.status_code"], "-32603");
    assert_eq!(
        fail.status,
        Status::error("the fail tool answers with a JSON-RPC error as asked")
    );
    let prompt = span(&spans, "prompts/get simple");
    assert_eq!(mcp_attributes(prompt)["gen_ai.prompt.name"], "simple");
    assert!(!mcp_attributes(prompt).contains_key("gen_ai.operation.name"));
    let read = span(&spans, "resources/read");
    assert_eq!(mcp_attributes(read)["mcp.resource.uri"], "test://static/hello.txt");
    // The handshake has its span too; a stdio session has no session id.
    let initialize = span(&spans, "initialize");
    assert_eq!(mcp_attributes(initialize)["mcp.method.name"], "initialize");
    assert!(
        spans
            .iter()
            .all(|span| !mcp_attributes(span).contains_key("mcp.session.id"))
    );

    // The server saw each client span's context as the request's `traceparent`.
    let seen = log.matching(&json!({"event": "trace-context", "method": "tools/call"}));
    let echo_seen = seen
        .iter()
        .find(|event| event["id"].as_i64().map(|id| id.to_string()).as_deref() == Some(echo_id.as_str()))
        .expect("the echo call carried its trace context");
    assert_eq!(
        echo_seen["traceparent"],
        json!(format!(
            "00-{}-{}-01",
            echo.span_context.trace_id(),
            echo.span_context.span_id()
        ))
    );
    assert_eq!(echo_seen["tracestate"], Value::Null);

    check_stdio_histograms(&recorded, version);
}

/// The histograms of the stdio session of the test above.
fn check_stdio_histograms(recorded: &Recorded, version: &str) {
    recorded.meter_provider.force_flush().unwrap();
    let (unit, bounds, points) = histogram(&recorded.metrics, "mcp.client.operation.duration");
    assert_eq!(unit, "s");
    assert_eq!(bounds, DURATION_BUCKETS);
    let echo_point = expected(&[
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", version),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
    ]);
    assert!(points.contains(&(echo_point, 1)), "{points:?}");
    let fail_point = expected(&[
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", version),
        ("gen_ai.tool.name", "fail"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
        ("error.type", "-32603"),
        ("rpc.response.status_code", "-32603"),
    ]);
    assert!(points.contains(&(fail_point, 1)), "{points:?}");
    let (unit, _, sessions) = histogram(&recorded.metrics, "mcp.client.session.duration");
    assert_eq!(unit, "s");
    assert_eq!(
        sessions,
        [(
            expected(&[("mcp.protocol.version", version), ("network.transport", "pipe")]),
            1
        )]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_session_id_is_an_initialize_era_attribute_only_and_remote_peers_are_named() {
    let recorded = record();
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let port = server.local_addr().port().to_string();
    for era in [
        EraChoice::Initialize,
        EraChoice::Stateless(ProtocolVersion::V2026_07_28),
    ] {
        let transport = plexus::http::HttpTransport::new(plexus::http::HttpConfig::new(
            plexus::net::RemoteEndpoint::new(server.url()),
        ))
        .unwrap();
        let info = transport.info();
        let mut options = ClientOptions::new("demo");
        options.era = era;
        let client = Client::connect(Box::new(transport), options).await.unwrap();
        client.list_tools().await.unwrap();
        let session_id = info.session_id();
        client.close().await.unwrap();
        let spans = recorded.spans.get_finished_spans().unwrap();
        let listed = spans.iter().rev().find(|span| span.name == "tools/list").unwrap();
        let mut attributes = mcp_attributes(listed);
        attributes.remove("jsonrpc.request.id").unwrap();
        let mut wanted = expected(&[
            ("mcp.method.name", "tools/list"),
            ("network.transport", "tcp"),
            ("network.protocol.name", "http"),
            ("server.address", "127.0.0.1"),
            ("server.port", &port),
        ]);
        if era == EraChoice::Initialize {
            wanted.insert(
                "mcp.protocol.version".into(),
                ProtocolVersion::V2025_11_25.as_str().into(),
            );
            wanted.insert(
                "mcp.session.id".into(),
                session_id.expect("an initialize-era session id"),
            );
        } else {
            wanted.insert("mcp.protocol.version".into(), "2026-07-28".into());
        }
        assert_eq!(attributes, wanted, "{era:?}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn no_traceparent_goes_out_without_an_opentelemetry_layer_and_a_callers_own_is_kept() {
    let log = EventLogFile::new("otel-none");
    let client = stdio_client(&log, EraChoice::Initialize).await;
    // No subscriber at all: no span, so no trace context.
    client
        .call_tool("echo", json!({"text": "a"}).as_object().cloned())
        .await
        .unwrap();
    assert!(log.matching(&json!({"event": "trace-context"})).is_empty());
    client.close().await.unwrap();

    let _recorded = record();
    let log = EventLogFile::new("otel-own");
    let client = stdio_client(&log, EraChoice::Initialize).await;
    let own = "00-11111111111111111111111111111111-2222222222222222-01";
    let params =
        json!({"name": "echo", "arguments": {"text": "b"}, "_meta": {"traceparent": own, "tracestate": "k=v"}});
    client
        .request_raw("tools/call", Some(&params), &plexus::client::RequestOptions::default())
        .await
        .unwrap();
    let seen = log.matching(&json!({"event": "trace-context", "method": "tools/call"}));
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["traceparent"], json!(own));
    assert_eq!(seen[0]["tracestate"], json!("k=v"));
    client.close().await.unwrap();
}
