//! Fuzzes a tool result's content as plexus-tools hands it to the model: base64 image, audio and
//! blob data decoded, images (PNG, JPEG, GIF, WebP, straight from a server) decoded and
//! downsampled by the `image` crate within the limits.
//!
//! Input layout: the first byte's low two bits pick an image format and its third bit the mode.
//! Without it, the rest is an image of that format, fitted directly; with it, the rest is a
//! `CallToolResult` (JSON) processed whole, with a result store that cannot write (so no run
//! leaves a file behind, and every block that would be saved takes the failure path).
//!
//! Checked: nothing panics and no decode runs past the decoder's limits (a decompression bomb is
//! refused by them, not by running out of memory: the fuzzer's RSS limit would report it); a
//! fitted image is within the side and byte limits, and fitting it again leaves it alone; a
//! processed result keeps one block per content block (unless cut for size), every image it
//! hands on has valid base64 data, and it names no file. A result that passes as sent
//! ([`AsSentResult`], what the gateway forwards without decoding) decodes, is processed without
//! a cut, and its content as sent means exactly what the processed content does.
#![no_main]

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use libfuzzer_sys::fuzz_target;
use plexus_protocol::{CallToolResult, ContentBlock};
use plexus_tools::image::{ImageLimits, fit_image};
use plexus_tools::{AsSentResult, ResultSettings, ResultStore, process};
use serde_json::value::RawValue;

const FORMATS: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Small limits, so that downsampling runs often and each input stays quick.
const LIMITS: ImageLimits = ImageLimits {
    max_side: 64,
    max_bytes: 8 * 1024,
    max_pixels: 1 << 20,
    max_decode_bytes: 8 * 1024 * 1024,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 4 == 0 {
        check_fit(rest, FORMATS[usize::from(selector & 3)]);
        return;
    }
    let settings = ResultSettings {
        images: LIMITS,
        max_output_tokens: 2048,
        ..ResultSettings::default()
    };
    let as_sent = std::str::from_utf8(rest)
        .ok()
        .and_then(|text| serde_json::from_str::<&RawValue>(text).ok())
        .and_then(|raw| AsSentResult::of(raw, None, &settings));
    let Ok(result) = serde_json::from_slice::<CallToolResult>(rest) else {
        assert!(as_sent.is_none(), "a result that does not decode passed as sent");
        return;
    };
    let blocks = result.content.len();
    // `/dev/null` is no directory: every file the result would write fails, at once.
    let store = ResultStore::new(Path::new("/dev/null"), "fuzz");
    match process(result, None, &store, &settings) {
        Ok(processed) => {
            if let Some(as_sent) = &as_sent {
                let sent: serde_json::Value = serde_json::from_str(as_sent.content().get()).expect("content is JSON");
                let made = serde_json::to_value(&processed.content).expect("blocks encode");
                assert_eq!(sent, made, "the content as sent differs from the processed content");
                assert_eq!(as_sent.is_error(), processed.is_error);
                assert!(processed.structured_content.is_none());
            }
            assert!(processed.files.is_empty(), "a file was written: {:?}", processed.files);
            assert!(!processed.truncated, "output was cut without its file");
            assert_eq!(processed.content.len(), blocks);
            for block in &processed.content {
                if let ContentBlock::Image(image) = block {
                    assert!(
                        STANDARD.decode(image.data.trim()).is_ok(),
                        "an image handed on is not base64"
                    );
                }
            }
        }
        Err(error) => {
            assert!(as_sent.is_none(), "a result that passed as sent failed processing: {error}");
            let _ = plexus_jsonrpc::error_chain(&error);
        }
    }
});

/// Fits `bytes` as an image of type `mime`, and checks the fitted image.
fn check_fit(bytes: &[u8], mime: &str) {
    match fit_image(bytes, mime, &LIMITS) {
        Ok(None) => assert!(bytes.len() <= LIMITS.max_bytes),
        Ok(Some(fitted)) => {
            assert!(fitted.bytes.len() <= LIMITS.max_bytes, "{} bytes", fitted.bytes.len());
            assert!(fitted.size.0.max(fitted.size.1) <= LIMITS.max_side, "{:?}", fitted.size);
            match fit_image(&fitted.bytes, &fitted.mime_type, &LIMITS) {
                Ok(None) => {}
                other => panic!("a fitted {:?} image is not within the limits: {other:?}", fitted.size),
            }
        }
        Err(error) => {
            let _ = plexus_jsonrpc::error_chain(&error);
        }
    }
}
