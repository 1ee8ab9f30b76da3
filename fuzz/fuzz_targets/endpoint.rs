//! Fuzzes the legacy SSE transport's `endpoint` event: its data, straight from the server,
//! resolved against the event stream's URL.
//!
//! Checked: resolving never panics; an endpoint it accepts is on the stream's origin (the
//! configured headers and credentials may only go there); and an error quotes at most
//! `MAX_QUOTED` characters of each thing it quotes (the event, the URL, its origin).
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_net::endpoint::{MAX_QUOTED, resolve_endpoint, same_origin};
use url::Url;

fuzz_target!(|data: &[u8]| {
    let stream = Url::parse("http://127.0.0.1:9/mcp/sse?key=1").expect("a valid URL");
    match resolve_endpoint(&stream, data) {
        Ok(endpoint) => assert!(same_origin(&endpoint, &stream), "{endpoint}"),
        Err(error) => {
            let reason = error.to_string();
            assert!(reason.chars().count() < 3 * MAX_QUOTED + 200, "{reason}");
        }
    }
});
