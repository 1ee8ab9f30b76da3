//! Fuzzes `Message::from_slice`, the one-pass JSON-RPC decoder every transport uses.
//!
//! Checked: decoding never panics, and every message it accepts encodes to one line that decodes
//! again to the same id and method, and re-encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_jsonrpc::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = Message::from_slice(data) {
        plexus_fuzz::assert_round_trips(&message);
    }
});
