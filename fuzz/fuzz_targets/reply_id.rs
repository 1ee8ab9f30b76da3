//! Fuzzes `IdScanner`, which reads the id of a server message that is not decoded (one over the
//! size limit, skipped as it streams by, or one in a form the transport refuses), so that the
//! request it answers fails at once.
//!
//! Input layout: the first byte picks where the message is cut in two (`byte * len / 256`); the
//! rest is the message. Checked: the scan never panics; its result does not depend on the cut; and
//! where serde_json reads the bytes as an object (with one `"id"` and no escapes, which the scanner
//! deliberately does not decode in names), the scanner finds exactly its top-level id, unless the
//! object has a top-level `method` (a request of the server is no reply).
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_jsonrpc::{IdScanner, RequestId};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, message)) = data.split_first() else {
        return;
    };
    let at = usize::from(cut) * message.len() / 256;
    let whole = IdScanner::reply_id(message);
    let mut split = IdScanner::new();
    split.feed(&message[..at]);
    split.feed(&message[at..]);
    assert_eq!(split.finish(), whole, "cutting the message at {at} changed its id");

    let plain = !message.contains(&b'\\') && message.windows(4).filter(|w| w == b"\"id\"").count() == 1;
    if let (true, Ok(serde_json::Value::Object(object))) = (plain, serde_json::from_slice(message)) {
        let expected = object
            .get("id")
            .filter(|_| !object.contains_key("method"))
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
        assert_eq!(whole, expected, "the scanner disagrees with serde_json");
    }
});
