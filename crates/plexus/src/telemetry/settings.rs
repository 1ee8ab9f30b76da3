//! The exporter's settings, read from the standard `OTEL_*` variables.

use std::time::Duration;

use super::TelemetryError;

/// How the OTLP exporter encodes what it sends (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// `http/protobuf` (the default).
    #[default]
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

/// Where and how one signal (traces or metrics) is exported.
#[derive(Clone, PartialEq, Eq)]
pub struct SignalSettings {
    /// The full URL it is POSTed to (`…/v1/traces`, `…/v1/metrics`).
    pub endpoint: String,
    /// The headers sent with each export (their values are never shown).
    pub headers: Vec<(String, String)>,
    /// Its encoding.
    pub protocol: OtlpProtocol,
    /// How long one export may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for SignalSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("SignalSettings")
            .field("endpoint", &self.endpoint)
            .field("headers", &names)
            .field("protocol", &self.protocol)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What the OTLP exporter is set up with: the standard variables' values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// Traces (none: spans are not exported).
    pub traces: Option<SignalSettings>,
    /// Metrics (none: the histograms are not recorded).
    pub metrics: Option<SignalSettings>,
    /// `service.name` of the resource.
    pub service_name: String,
}

/// The variables read, in the order of precedence of each setting.
pub const VARIABLES: [&str; 13] = [
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_METRIC_EXPORT_INTERVAL",
];

/// The default timeout of one export (the specification's 10 s).
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

impl OtlpSettings {
    /// The settings the process's environment gives, with `default_service` as `service.name`
    /// unless `OTEL_SERVICE_NAME` names one; `None` when nothing is to be exported (no endpoint
    /// is set, or `OTEL_SDK_DISABLED=true`).
    pub fn from_env(default_service: &str) -> Result<Option<OtlpSettings>, TelemetryError> {
        OtlpSettings::from_lookup(default_service, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) with the variables looked up by `lookup`.
    ///
    /// A signal is exported when `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT` (used as it is)
    /// or `OTEL_EXPORTER_OTLP_ENDPOINT` (with `/v1/traces` or `/v1/metrics` appended) is set;
    /// its headers are `OTEL_EXPORTER_OTLP_HEADERS` with the signal's own
    /// (`…_{TRACES,METRICS}_HEADERS`) over them; its protocol is the signal's, else
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`; `OTEL_EXPORTER_OTLP_TIMEOUT` is in
    /// milliseconds (default 10 s).
    pub fn from_lookup(
        default_service: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpSettings>, TelemetryError> {
        let set = |name: &str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let timeout = match set("OTEL_EXPORTER_OTLP_TIMEOUT") {
            None => DEFAULT_EXPORT_TIMEOUT,
            Some(value) => match value.parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => {
                    return Err(TelemetryError::Invalid {
                        variable: "OTEL_EXPORTER_OTLP_TIMEOUT",
                        reason: format!("{value:?} is not a positive number of milliseconds"),
                    });
                }
            },
        };
        let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
        let general_headers = parse_headers_var("OTEL_EXPORTER_OTLP_HEADERS", set("OTEL_EXPORTER_OTLP_HEADERS"))?;
        let general_protocol = parse_protocol(
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            set("OTEL_EXPORTER_OTLP_PROTOCOL").as_deref(),
        )?;
        let signal = |kind: &'static str, path: &str| -> Result<Option<SignalSettings>, TelemetryError> {
            let endpoint = match (set(&format!("OTEL_EXPORTER_OTLP_{kind}_ENDPOINT")), &base) {
                (Some(endpoint), _) => endpoint,
                (None, Some(base)) => format!("{}/{path}", base.trim_end_matches('/')),
                (None, None) => return Ok(None),
            };
            let headers_var = match kind {
                "TRACES" => "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                _ => "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            };
            let protocol_var = match kind {
                "TRACES" => "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                _ => "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
            };
            let mut headers = general_headers.clone();
            for (name, value) in parse_headers_var(headers_var, set(headers_var))? {
                headers.retain(|(known, _)| !known.eq_ignore_ascii_case(&name));
                headers.push((name, value));
            }
            let protocol = parse_protocol(protocol_var, set(protocol_var).as_deref())?.or(general_protocol);
            Ok(Some(SignalSettings {
                endpoint,
                headers,
                protocol: protocol.unwrap_or_default(),
                timeout,
            }))
        };
        let traces = signal("TRACES", "v1/traces")?;
        let metrics = signal("METRICS", "v1/metrics")?;
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        Ok(Some(OtlpSettings {
            traces,
            metrics,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| default_service.to_owned()),
        }))
    }
}

fn parse_protocol(variable: &'static str, value: Option<&str>) -> Result<Option<OtlpProtocol>, TelemetryError> {
    match value {
        None => Ok(None),
        Some("http/protobuf") => Ok(Some(OtlpProtocol::HttpProtobuf)),
        Some("http/json") => Ok(Some(OtlpProtocol::HttpJson)),
        Some(other) => Err(TelemetryError::Invalid {
            variable,
            reason: format!("{other:?} is not supported (http/protobuf or http/json)"),
        }),
    }
}

fn parse_headers_var(variable: &'static str, value: Option<String>) -> Result<Vec<(String, String)>, TelemetryError> {
    value.map_or(Ok(Vec::new()), |value| {
        parse_headers(&value).map_err(|reason| TelemetryError::Invalid { variable, reason })
    })
}

/// `name=value` pairs separated by commas, values percent-encoded (the W3C Baggage form that
/// `OTEL_EXPORTER_OTLP_HEADERS` uses); an empty member is skipped. The error names the pair's
/// position and never shows a value (they hold secrets).
pub(crate) fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for (index, member) in text.split(',').enumerate() {
        let member = member.trim();
        if member.is_empty() {
            continue;
        }
        let Some((name, value)) = member.split_once('=') else {
            return Err(format!("member {} has no `=`", index + 1));
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(format!("member {} has no valid header name", index + 1));
        }
        let Some(value) = percent_decode(value.trim()) else {
            return Err(format!("the value of header {name} is not valid percent-encoded UTF-8"));
        };
        if value.chars().any(char::is_control) {
            return Err(format!("the value of header {name} holds control characters"));
        }
        headers.push((name.to_owned(), value));
    }
    Ok(headers)
}

/// A byte of an HTTP header name (an RFC 9110 token).
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// `text` with its `%XX` escapes decoded; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<OtlpSettings>, TelemetryError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        OtlpSettings::from_lookup("plexus", |name| vars.get(name).cloned())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint_or_when_disabled() {
        assert_eq!(settings(&[]).unwrap(), None);
        assert_eq!(settings(&[("OTEL_SERVICE_NAME", "x")]).unwrap(), None);
        assert_eq!(
            settings(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "TRUE")
            ])
            .unwrap(),
            None
        );
    }

    #[test]
    fn the_signals_endpoints_headers_and_protocols_follow_the_specification() {
        let got = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m.example:9/custom"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-tenant = t1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Tenant=t2"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_SERVICE_NAME", "agent"),
        ])
        .unwrap()
        .unwrap();
        let traces = got.traces.unwrap();
        assert_eq!(traces.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(
            traces.headers,
            [
                ("api-key".to_owned(), "s=cret".to_owned()),
                ("X-Tenant".to_owned(), "t2".to_owned())
            ]
        );
        assert_eq!(traces.protocol, OtlpProtocol::HttpJson);
        assert_eq!(traces.timeout, Duration::from_millis(2500));
        let metrics = got.metrics.unwrap();
        assert_eq!(metrics.endpoint, "http://m.example:9/custom");
        assert_eq!(metrics.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(got.service_name, "agent");
        // A header's value never shows in the settings' debug text.
        assert!(!format!("{traces:?}").contains("s=cret"));
    }

    #[test]
    fn bad_values_name_their_variable_and_never_a_header_value() {
        let error = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "OTEL_EXPORTER_OTLP_PROTOCOL: \"grpc\" is not supported (http/protobuf or http/json)"
        );
        let error = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "token=%zzsecret"),
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "OTEL_EXPORTER_OTLP_HEADERS: the value of header token is not valid percent-encoded UTF-8"
        );
        assert!(parse_headers("a=1,novalue").unwrap_err().contains("member 2"));
        assert!(parse_headers("bad name=1").is_err());
        let error = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ])
        .unwrap_err();
        assert!(error.to_string().starts_with("OTEL_EXPORTER_OTLP_TIMEOUT: "));
    }

    proptest! {
        #[test]
        fn headers_round_trip_through_their_percent_encoding(
            pairs in proptest::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,15}", "[ -~\u{e9}\u{4e2d}]{0,20}"), 0..5)
        ) {
            let text: Vec<String> = pairs
                .iter()
                .map(|(name, value)| {
                    let encoded: String = value
                        .bytes()
                        .map(|b| if b.is_ascii_alphanumeric() { char::from(b).to_string() } else { format!("%{b:02X}") })
                        .collect();
                    format!("{name}={encoded}")
                })
                .collect();
            let parsed = parse_headers(&text.join(",")).unwrap();
            let expected: Vec<(String, String)> = pairs.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
            prop_assert_eq!(parsed, expected);
        }

        #[test]
        fn any_text_parses_or_fails_without_panicking(text in "\\PC{0,64}") {
            let _ = parse_headers(&text);
        }
    }
}
