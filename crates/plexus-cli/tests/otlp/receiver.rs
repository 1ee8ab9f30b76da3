//! The project's own OTLP/HTTP receiver, in place of an OpenTelemetry Collector: a hyper server
//! on 127.0.0.1 that takes `POST /v1/traces` and `POST /v1/metrics` (protobuf or JSON, as the
//! `Content-Type` says), decodes them into the protocol's own types and keeps them, with the
//! headers each export came with.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use tokio::net::TcpListener;

/// The largest export body taken.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// What the receiver got.
#[derive(Default)]
pub(crate) struct Received {
    pub(crate) traces: Vec<ExportTraceServiceRequest>,
    pub(crate) metrics: Vec<ExportMetricsServiceRequest>,
    /// Each export's headers (lowercase name, value) and its content type.
    pub(crate) headers: Vec<Vec<(String, String)>>,
    /// What could not be decoded, in words (a test fails on any).
    pub(crate) problems: Vec<String>,
}

/// A receiver listening on 127.0.0.1, stopped when dropped.
pub(crate) struct Receiver {
    address: SocketAddr,
    received: Arc<Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub(crate) async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Received::default()));
        let kept = Arc::clone(&received);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let kept = Arc::clone(&kept);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let kept = Arc::clone(&kept);
                        async move { Ok::<_, std::convert::Infallible>(take(request, &kept).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            address,
            received,
            task,
        }
    }

    /// The base URL to give as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Waits (at most 30 s) until `ready` says what was received is enough, and returns it.
    pub(crate) async fn wait_for(&self, ready: impl Fn(&Received) -> bool) -> std::sync::MutexGuard<'_, Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            {
                let received = self.received.lock().unwrap();
                assert!(received.problems.is_empty(), "{:?}", received.problems);
                if ready(&received) {
                    return received;
                }
            }
            assert!(Instant::now() < deadline, "the exports did not arrive within 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Takes one export: decoded and kept, answered with an empty success of its encoding.
async fn take(request: Request<Incoming>, kept: &Mutex<Received>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let json = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return answer(StatusCode::BAD_REQUEST, format!("unreadable body: {e}")),
    };
    let mut received = kept.lock().unwrap();
    received.headers.push(headers);
    let decoded = match (parts.method.as_str(), parts.uri.path()) {
        ("POST", "/v1/traces") => decode::<ExportTraceServiceRequest>(&body, json).map(|r| received.traces.push(r)),
        ("POST", "/v1/metrics") => decode::<ExportMetricsServiceRequest>(&body, json).map(|r| received.metrics.push(r)),
        (method, path) => Err(format!("unexpected {method} {path}")),
    };
    match decoded {
        Ok(()) if json => Response::builder()
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap(),
        Ok(()) => Response::builder()
            .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
            .body(Full::new(Bytes::new()))
            .unwrap(),
        Err(problem) => {
            received.problems.push(problem.clone());
            answer(StatusCode::BAD_REQUEST, problem)
        }
    }
}

fn decode<T: prost::Message + Default + serde::de::DeserializeOwned>(body: &[u8], json: bool) -> Result<T, String> {
    if json {
        serde_json::from_slice(body).map_err(|e| format!("not OTLP JSON: {e}"))
    } else {
        T::decode(body).map_err(|e| format!("not OTLP protobuf: {e}"))
    }
}

fn answer(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(text)))
        .unwrap()
}
