//! Protocol versions: parsing, ordering, negotiation and its errors; property tests of the codecs.

use plexus_protocol::{
    ContentBlock, LoggingLevel, NegotiationError, ParseVersionError, ProgressNotificationParams, ProgressToken,
    ProtocolVersion,
};
use proptest::prelude::*;
use serde_json::{Value, json};

#[test]
fn supported_is_newest_first_and_starts_with_latest() {
    assert_eq!(ProtocolVersion::SUPPORTED[0], ProtocolVersion::LATEST);
    assert_eq!(ProtocolVersion::LATEST.as_str(), "2025-11-25");
    let strings: Vec<&str> = ProtocolVersion::SUPPORTED.iter().map(|v| v.as_str()).collect();
    assert_eq!(strings, ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]);
    assert!(ProtocolVersion::SUPPORTED.windows(2).all(|pair| pair[0] > pair[1]));
}

#[test]
fn negotiation_accepts_every_supported_answer() {
    for version in ProtocolVersion::SUPPORTED {
        assert_eq!(ProtocolVersion::negotiate(version.as_str()), Ok(version));
    }
}

#[test]
fn negotiation_rejects_an_unsupported_answer_naming_both_sides() {
    let err = ProtocolVersion::negotiate("2026-07-28").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server answered initialize with protocol version \"2026-07-28\", which this client does not support \
         (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"
    );
    let NegotiationError::UnsupportedVersion {
        server_version,
        supported,
    } = err
    else {
        unreachable!()
    };
    assert_eq!(server_version, "2026-07-28");
    assert_eq!(supported, ProtocolVersion::SUPPORTED);
}

#[test]
fn negotiation_among_a_pinned_set() {
    let pinned = [ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_03_26];
    assert_eq!(
        ProtocolVersion::negotiate_among(&pinned, "2025-03-26"),
        Ok(ProtocolVersion::V2025_03_26)
    );
    assert_eq!(
        ProtocolVersion::negotiate_among(&pinned, "2024-11-05")
            .unwrap_err()
            .to_string(),
        "the server answered initialize with protocol version \"2024-11-05\", which this client does not support \
         (supported: 2025-06-18, 2025-03-26)"
    );
}

#[test]
fn parse_errors_and_serde() {
    assert_eq!(
        "2025-13-01".parse::<ProtocolVersion>(),
        Err(ParseVersionError {
            version: "2025-13-01".to_owned()
        })
    );
    assert_eq!(
        "".parse::<ProtocolVersion>().unwrap_err().to_string(),
        "unknown MCP protocol version \"\" (known: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"
    );
    assert_eq!(
        serde_json::to_value(ProtocolVersion::V2025_03_26).unwrap(),
        json!("2025-03-26")
    );
    assert_eq!(
        serde_json::from_value::<ProtocolVersion>(json!("2024-11-05")).unwrap(),
        ProtocolVersion::V2024_11_05
    );
    assert_eq!(
        serde_json::from_value::<ProtocolVersion>(json!("1.0"))
            .unwrap_err()
            .to_string(),
        "unknown MCP protocol version \"1.0\" (known: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"
    );
}

#[test]
fn features_by_version() {
    use ProtocolVersion as V;
    let table: Vec<(V, [bool; 5])> = ProtocolVersion::SUPPORTED
        .iter()
        .map(|&v| {
            (
                v,
                [
                    v.has_tool_annotations(),
                    v.has_structured_content(),
                    v.has_elicitation(),
                    v.has_protocol_version_header(),
                    v.has_url_elicitation(),
                ],
            )
        })
        .collect();
    assert_eq!(
        table,
        [
            (V::V2025_11_25, [true, true, true, true, true]),
            (V::V2025_06_18, [true, true, true, true, false]),
            (V::V2025_03_26, [true, false, false, false, false]),
            (V::V2024_11_05, [false, false, false, false, false]),
        ]
    );
    assert!(V::V2025_03_26.has_json_rpc_batching() && !V::V2025_06_18.has_json_rpc_batching());
    assert!(!V::V2024_11_05.has_streamable_http() && V::V2025_03_26.has_streamable_http());
}

#[test]
fn logging_levels_parse_and_order() {
    for level in LoggingLevel::ALL {
        assert_eq!(level.as_str().parse::<LoggingLevel>(), Ok(level));
        assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
    }
    assert!(LoggingLevel::ALL.windows(2).all(|pair| pair[0] < pair[1]));
    assert_eq!(
        "verbose".parse::<LoggingLevel>().unwrap_err().to_string(),
        "unknown logging level \"verbose\" (expected one of debug, info, notice, warning, error, critical, alert, emergency)"
    );
}

fn any_version() -> impl Strategy<Value = ProtocolVersion> {
    prop::sample::select(ProtocolVersion::ALL.to_vec())
}

proptest! {
    #[test]
    fn version_parse_round_trips(version in any_version()) {
        prop_assert_eq!(version.as_str().parse::<ProtocolVersion>(), Ok(version));
        prop_assert_eq!(version.to_string(), version.as_str());
        let json = serde_json::to_string(&version).unwrap();
        prop_assert_eq!(serde_json::from_str::<ProtocolVersion>(&json).unwrap(), version);
    }

    #[test]
    fn other_strings_are_not_versions(text in "\\PC{0,16}") {
        prop_assume!(!ProtocolVersion::ALL.iter().any(|v| v.as_str() == text));
        prop_assert_eq!(text.parse::<ProtocolVersion>(), Err(ParseVersionError { version: text.clone() }));
        let err = ProtocolVersion::negotiate(&text).unwrap_err();
        prop_assert!(err.to_string().contains(&format!("{text:?}")), "{}", err);
    }

    #[test]
    fn date_like_strings_parse_only_when_supported(y in 2024u32..2027, m in 1u32..13, d in 1u32..32) {
        let text = format!("{y}-{m:02}-{d:02}");
        let parsed = text.parse::<ProtocolVersion>();
        // Parsing knows both eras' revisions (negotiation only the initialize era's).
        let known = ProtocolVersion::ALL.iter().find(|v| v.as_str() == text).copied();
        prop_assert_eq!(parsed.ok(), known);
    }

    #[test]
    fn progress_tokens_round_trip(token in prop_oneof![any::<i64>().prop_map(ProgressToken::Number), ".*".prop_map(ProgressToken::String)]) {
        let json = serde_json::to_string(&token).unwrap();
        prop_assert_eq!(serde_json::from_str::<ProgressToken>(&json).unwrap(), token);
    }

    /// Progress numbers survive encoding exactly, and integral ones are written as integers.
    #[test]
    fn progress_numbers_round_trip(progress in prop::num::f64::NORMAL | prop::num::f64::ZERO, whole in -1_000_000i32..1_000_000) {
        for value in [progress, f64::from(whole)] {
            let params = ProgressNotificationParams::new("t", value, None);
            let json = serde_json::to_value(&params).unwrap();
            let back: ProgressNotificationParams = serde_json::from_value(json.clone()).unwrap();
            prop_assert_eq!(back.progress.to_bits(), value.to_bits(), "{} came back as {}", value, back.progress);
            if value.fract() == 0.0 && value.abs() < 9.0e15 && value.is_sign_positive() {
                prop_assert!(json["progress"].is_i64(), "{} written as {}", value, json["progress"]);
            }
        }
    }

    /// A content block of a type this crate does not know survives decoding and encoding unchanged.
    #[test]
    fn unknown_content_blocks_are_kept(tag in "[a-z_/-]{1,12}", fields in prop::collection::btree_map("[a-zA-Z]{1,8}", ".{0,8}", 0..4)) {
        prop_assume!(!["text", "image", "audio", "resource_link", "resource"].contains(&tag.as_str()));
        let mut value = json!({ "type": tag });
        for (key, text) in &fields {
            if key != "type" {
                value[key] = Value::String(text.clone());
            }
        }
        let block: ContentBlock = serde_json::from_value(value.clone()).unwrap();
        prop_assert!(matches!(block, ContentBlock::Unknown(_)));
        prop_assert_eq!(block.tag(), tag.as_str());
        prop_assert_eq!(serde_json::to_value(&block).unwrap(), value);
    }
}

#[test]
fn a_server_answers_the_version_asked_for_when_it_speaks_it_else_the_newest() {
    for version in ProtocolVersion::SUPPORTED {
        assert_eq!(ProtocolVersion::answer(version.as_str()), version);
    }
    for other in ["2099-01-01", "", "2025-11-25 ", "DRAFT-2026-v1"] {
        assert_eq!(ProtocolVersion::answer(other), ProtocolVersion::LATEST, "{other:?}");
    }
}
