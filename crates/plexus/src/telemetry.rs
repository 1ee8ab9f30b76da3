//! OpenTelemetry export over OTLP/HTTP (feature `otlp`): the MCP spans and histograms of every
//! session (see [`client::telemetry`](crate::client::telemetry)) sent to a collector as the
//! standard `OTEL_*` variables say ([`OtlpSettings`]).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), plexus::telemetry::TelemetryError> {
//! // Outside any async runtime (the exporter's HTTP client is a blocking one).
//! let otlp = match plexus::telemetry::OtlpSettings::from_env("my-agent")? {
//!     Some(settings) => Some(plexus::telemetry::Otlp::install(&settings)?),
//!     None => None,
//! };
//! tracing_subscriber::registry()
//!     .with(otlp.as_ref().and_then(plexus::telemetry::Otlp::layer))
//!     .init();
//! // … the host's work; dropping `otlp` flushes what is left and shuts the exporters down.
//! # Ok(()) }
//! ```

mod settings;

use std::collections::HashMap;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterFn, Filtered};
use tracing_subscriber::registry::LookupSpan;

pub use settings::{DEFAULT_EXPORT_TIMEOUT, OtlpProtocol, OtlpSettings, SignalSettings, VARIABLES};

/// What went wrong setting up the export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// A variable's value is not one the exporter takes (a header's value is never shown).
    #[error("{variable}: {reason}")]
    Invalid {
        /// The variable.
        variable: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The exporter of `signal` could not be built.
    #[error("could not set up the OTLP {signal} exporter for {endpoint}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// Where it was to export to.
        endpoint: String,
        /// Why.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// The export, installed: the tracer whose [`layer`](Self::layer) a host adds to its
/// subscriber, and the providers flushed and shut down when it is dropped (or
/// [`shutdown`](Self::shutdown)).
pub struct Otlp {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    tracer: Option<SdkTracer>,
}

impl std::fmt::Debug for Otlp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otlp")
            .field("traces", &self.tracer_provider.is_some())
            .field("metrics", &self.meter_provider.is_some())
            .finish_non_exhaustive()
    }
}

/// The tracing layer of the MCP spans: `tracing-opentelemetry`'s, with only the spans of
/// [`SPAN_TARGET`](crate::client::telemetry::SPAN_TARGET) (and what happens within them) let
/// through.
pub type McpLayer<S> =
    Filtered<tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>, FilterFn<fn(&tracing::Metadata<'_>) -> bool>, S>;

/// Whether the MCP layer records `metadata`: the MCP spans at `INFO` and above.
fn is_mcp_span(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.target() == crate::client::telemetry::SPAN_TARGET && *metadata.level() <= tracing::Level::INFO
}

impl Otlp {
    /// Builds the exporters `settings` asks for: spans through a batch processor, the MCP
    /// histograms through a periodic reader (`OTEL_METRIC_EXPORT_INTERVAL`, default 60 s),
    /// each over OTLP/HTTP. The histograms are recorded from now on
    /// ([`install_metrics`](crate::client::telemetry::install_metrics)), and the W3C trace
    /// context propagator becomes the global one. Call it outside an async runtime (the
    /// exporters' HTTP client is a blocking one).
    pub fn install(settings: &OtlpSettings) -> Result<Otlp, TelemetryError> {
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let tracer_provider = match &settings.traces {
            None => None,
            Some(traces) => {
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_endpoint(traces.endpoint.clone())
                    .with_protocol(protocol(traces.protocol))
                    .with_headers(headers(traces))
                    .with_timeout(traces.timeout)
                    .build()
                    .map_err(|source| TelemetryError::Exporter {
                        signal: "traces",
                        endpoint: traces.endpoint.clone(),
                        source,
                    })?;
                Some(
                    SdkTracerProvider::builder()
                        .with_batch_exporter(exporter)
                        .with_resource(resource.clone())
                        .build(),
                )
            }
        };
        let meter_provider = match &settings.metrics {
            None => None,
            Some(metrics) => {
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_endpoint(metrics.endpoint.clone())
                    .with_protocol(protocol(metrics.protocol))
                    .with_headers(headers(metrics))
                    .with_timeout(metrics.timeout)
                    .build()
                    .map_err(|source| TelemetryError::Exporter {
                        signal: "metrics",
                        endpoint: metrics.endpoint.clone(),
                        source,
                    })?;
                Some(
                    SdkMeterProvider::builder()
                        .with_reader(PeriodicReader::builder(exporter).build())
                        .with_resource(resource)
                        .build(),
                )
            }
        };
        Ok(Otlp::with_providers(tracer_provider, meter_provider))
    }

    /// The export through providers of the host's own (an in-memory exporter in a test, a
    /// provider with other processors): the same layer, histograms and shutdown.
    pub fn with_providers(
        tracer_provider: Option<SdkTracerProvider>,
        meter_provider: Option<SdkMeterProvider>,
    ) -> Otlp {
        use opentelemetry::metrics::MeterProvider as _;
        let tracer = tracer_provider.as_ref().map(|provider| provider.tracer("plexus"));
        if let Some(provider) = &meter_provider {
            crate::client::telemetry::install_metrics(&provider.meter("plexus"));
        }
        opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
        Otlp {
            tracer_provider,
            meter_provider,
            tracer,
        }
    }

    /// The layer that exports the MCP spans, to add to the host's subscriber (`None` when
    /// traces are not exported).
    pub fn layer<S>(&self) -> Option<McpLayer<S>>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let tracer = self.tracer.clone()?;
        let filter: FilterFn<fn(&tracing::Metadata<'_>) -> bool> = FilterFn::new(is_mcp_span);
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_target(false)
                .with_filter(filter),
        )
    }

    /// Exports what is left and shuts the exporters down (what dropping it does); the errors
    /// of each (a collector that cannot be reached), in words.
    pub fn shutdown(mut self) -> Vec<String> {
        self.shut()
    }

    fn shut(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(provider) = self.meter_provider.take() {
            crate::client::telemetry::remove_metrics();
            if let Err(e) = provider.shutdown() {
                problems.push(format!("exporting the metrics: {e}"));
            }
        }
        if let Some(provider) = self.tracer_provider.take() {
            if let Err(e) = provider.force_flush() {
                problems.push(format!("exporting the spans: {e}"));
            }
            if let Err(e) = provider.shutdown() {
                problems.push(format!("shutting the span exporter down: {e}"));
            }
        }
        problems
    }
}

impl Drop for Otlp {
    fn drop(&mut self) {
        for problem in self.shut() {
            tracing::debug!("OpenTelemetry: {problem}");
        }
    }
}

fn protocol(protocol: OtlpProtocol) -> Protocol {
    match protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
    }
}

fn headers(signal: &SignalSettings) -> HashMap<String, String> {
    signal.headers.iter().cloned().collect()
}
