//! W3C Trace Context in `params._meta`: the `traceparent` (and `tracestate`) of a span as the
//! `_meta` entries of an outgoing request, and a request's own read back as the parent of the
//! span that serves it.

use std::borrow::Cow;

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
use serde::Deserialize;

/// The `_meta` member holding the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` member holding the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// `context` as a W3C `traceparent`: `00-{trace id}-{span id}-{flags}`, lowercase hex.
pub fn format_traceparent(context: &SpanContext) -> String {
    let mut text = String::with_capacity(55);
    text.push_str("00-");
    push_hex(&mut text, &context.trace_id().to_bytes());
    text.push('-');
    push_hex(&mut text, &context.span_id().to_bytes());
    text.push('-');
    push_hex(&mut text, &[context.trace_flags().to_u8()]);
    text
}

fn push_hex(text: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
}

/// Reads `hex` (exactly `N * 2` lowercase hex digits) into bytes.
fn parse_hex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    let digits = hex.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let value = |digit: u8| match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0u8; N];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (value(pair[0])? << 4) | value(pair[1])?;
    }
    Some(bytes)
}

/// A W3C `traceparent` (and its `tracestate`, kept when OpenTelemetry reads it) as a remote span
/// context; `None` when it is not one (version `ff`, ids all zero, not lowercase hex, wrong
/// lengths). A version above `00` is read as `00` where its first four fields are.
pub fn parse_traceparent(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut fields = traceparent.trim().split('-');
    let version = parse_hex::<1>(fields.next()?)?[0];
    let trace_id = TraceId::from_bytes(parse_hex::<16>(fields.next()?)?);
    let span_id = SpanId::from_bytes(parse_hex::<8>(fields.next()?)?);
    let flags = parse_hex::<1>(fields.next()?)?[0];
    // Version 00 has exactly four fields; a later version may add more.
    if version == 0xff || (version == 0 && fields.next().is_some()) {
        return None;
    }
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let state = tracestate
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags & TraceFlags::SAMPLED.to_u8()),
        true,
        state,
    ))
}

/// The `_meta` entries (JSON text without braces) carrying `context`: `"traceparent":"…"`, and
/// `,"tracestate":"…"` when its state is not empty; `None` for an invalid context (no span).
pub(crate) fn meta_entries(context: &SpanContext) -> Option<String> {
    if !context.is_valid() {
        return None;
    }
    let mut entries = format!("\"{TRACEPARENT}\":\"{}\"", format_traceparent(context));
    let state = context.trace_state().header();
    if !state.is_empty() {
        entries.push_str(",\"");
        entries.push_str(TRACESTATE);
        entries.push_str("\":");
        // A string always encodes.
        entries.push_str(&serde_json::to_string(&state).unwrap_or_default());
    }
    Some(entries)
}

/// What telemetry reads of a request's params: its target (a tool's or prompt's `name`, a
/// resource's `uri`) and the trace context in its `_meta`. Members of other types are ignored.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ParamsFacts<'a> {
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub(crate) uri: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "_meta", deserialize_with = "lenient")]
    pub(crate) meta: Option<MetaFacts<'a>>,
}

/// The trace context members of a request's `_meta`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MetaFacts<'a> {
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub(crate) traceparent: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub(crate) tracestate: Option<Cow<'a, str>>,
}

/// A member of the wrong type reads as absent, not as an error.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either<T> {
        Wanted(T),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Either::<T>::deserialize(deserializer)? {
        Either::Wanted(value) => Some(value),
        Either::Other(_) => None,
    })
}

impl<'a> ParamsFacts<'a> {
    /// Reads `params` (a JSON object's text); nothing when it is not an object.
    pub(crate) fn read(params: Option<&'a str>) -> ParamsFacts<'a> {
        params
            .and_then(|params| serde_json::from_str(params).ok())
            .unwrap_or_default()
    }

    /// The remote parent its `_meta` names, if a valid one.
    pub(crate) fn parent(&self) -> Option<SpanContext> {
        let meta = self.meta.as_ref()?;
        parse_traceparent(meta.traceparent.as_deref()?, meta.tracestate.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use proptest::prelude::*;

    use super::{ParamsFacts, format_traceparent, meta_entries, parse_traceparent};

    #[test]
    fn the_w3c_examples_read_and_bad_ones_do_not() {
        let context = parse_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
        )
        .unwrap();
        assert_eq!(
            context.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
        assert_eq!(context.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
        assert!(context.is_sampled() && context.is_remote());
        assert_eq!(
            context.trace_state().header(),
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad, None).is_none(), "{bad:?}");
        }
        // A later version may have more fields.
        assert!(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", None).is_some());
        // Not sampled, and without a tracestate.
        let context = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", None).unwrap();
        assert!(!context.is_sampled());
        assert_eq!(context.trace_state().header(), "");
    }

    #[test]
    fn the_meta_entries_carry_the_state_only_when_there_is_one() {
        let state: TraceState = "k=v".parse().unwrap();
        let context = SpanContext::new(
            TraceId::from(1u128),
            SpanId::from(2u64),
            TraceFlags::SAMPLED,
            false,
            state,
        );
        assert_eq!(
            meta_entries(&context).unwrap(),
            r#""traceparent":"00-00000000000000000000000000000001-0000000000000002-01","tracestate":"k=v""#
        );
        assert_eq!(meta_entries(&SpanContext::empty_context()), None);
    }

    #[test]
    fn the_params_facts_read_what_they_can_and_skip_the_rest() {
        let facts = ParamsFacts::read(Some(
            r#"{"arguments":{"name":"inner","_meta":1},"name":"echo","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","progressToken":3}}"#,
        ));
        assert_eq!(facts.name.as_deref(), Some("echo"));
        assert!(facts.parent().is_some());
        let facts = ParamsFacts::read(Some(r#"{"name":3,"uri":"file:///a","_meta":"x"}"#));
        assert_eq!(
            (facts.name, facts.uri.as_deref(), facts.meta.is_none()),
            (None, Some("file:///a"), true)
        );
        assert!(ParamsFacts::read(Some("[1]")).name.is_none());
        assert!(ParamsFacts::read(None).parent().is_none());
    }

    proptest! {
        #[test]
        fn a_formatted_traceparent_reads_back(trace in 1u128.., span in 1u64.., sampled in any::<bool>()) {
            let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
            let context = SpanContext::new(TraceId::from(trace), SpanId::from(span), flags, false, TraceState::default());
            let text = format_traceparent(&context);
            prop_assert_eq!(text.len(), 55);
            let read = parse_traceparent(&text, None).unwrap();
            prop_assert_eq!((read.trace_id(), read.span_id(), read.is_sampled()), (context.trace_id(), context.span_id(), sampled));
        }

        #[test]
        fn any_text_reads_or_is_refused_without_panicking(text in "\\PC{0,80}", state in proptest::option::of("\\PC{0,40}")) {
            let _ = parse_traceparent(&text, state.as_deref());
            let _ = ParamsFacts::read(Some(&text));
        }
    }
}
