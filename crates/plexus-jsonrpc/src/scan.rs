//! Finding the `id` of a message that is not decoded: one over the size limit (skipped as it
//! streams by, never buffered) or one in a form the transport refuses. With its id, the request it
//! answers can fail at once with the reason instead of waiting for its timeout.

use crate::RequestId;

/// What a scan tells about a message that was not decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyScan {
    /// A reply to the request with this id.
    Reply(RequestId),
    /// A JSON object that may be a reply, but whose id could not be read (cut short, too long,
    /// malformed).
    Unreadable,
    /// Not a reply: a request or notification of the server (it has a `method`), or not a JSON
    /// object at all.
    NotAReply,
}

impl ReplyScan {
    /// The id of the request the message answers, when it is a reply with a readable id.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            ReplyScan::Reply(id) => Some(id),
            _ => None,
        }
    }
}

/// The longest `id` value kept while scanning (quotes and escapes included); a longer one is not
/// recovered.
const MAX_ID_BYTES: usize = 256;

/// Where the scanner is in the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// Expecting a member name (or the closing `}`).
    ExpectKey,
    /// Inside a member name.
    InKey,
    /// After a member name, expecting `:`.
    AfterKey,
    /// After `:`, expecting the value.
    ExpectValue,
    /// Inside a member's value (a scalar, or a nested array or object).
    InValue,
    /// The scan is over: the id was found, the object ended, or the bytes are not an object.
    Done,
}

/// Finds the top-level `"id"` of a JSON-RPC message fed to it in pieces, with constant memory,
/// and whether the message is a request (it has a top-level `"method"`): it tracks strings,
/// escapes and nesting, so an `"id"` inside `result` or inside a string is never mistaken for the
/// message's own. Servers put the members in any order (the TypeScript SDK writes the id last,
/// after the result; a request's `method` may come after its id), so the scan goes on to the end
/// of the object.
///
/// ```
/// use plexus_jsonrpc::{IdScanner, ReplyScan, RequestId};
///
/// let mut scanner = IdScanner::new();
/// scanner.feed(br#"{"result":{"id":"not this","text":"a \"quoted\" }"},"jsonrpc":"2.0","#);
/// assert_eq!(scanner.id(), None);
/// scanner.feed(br#""id":42}"#);
/// assert_eq!(scanner.id(), Some(&RequestId::Number(42)));
///
/// assert_eq!(IdScanner::reply_id(br#"{"jsonrpc":"2.0","id":"a-1","result":{}}"#), Some(RequestId::from("a-1")));
/// // A request of the server is no reply, whatever its id.
/// assert_eq!(IdScanner::reply(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), ReplyScan::NotAReply);
/// assert_eq!(IdScanner::reply(b"not json"), ReplyScan::NotAReply);
/// // An object cut short before its id may have been a reply.
/// assert_eq!(IdScanner::reply(br#"{"jsonrpc":"2.0","result":{"#), ReplyScan::Unreadable);
/// ```
#[derive(Debug, Clone)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent flags of a JSON tokenizer (string, escape) and of what the scan saw"
)]
pub struct IdScanner {
    state: State,
    /// Nesting depth: 1 inside the top-level object.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The member name being read, while it may still be `id` or `method` (at most 7 bytes
    /// kept: a longer name is neither).
    key: [u8; 7],
    key_len: usize,
    /// A top-level `method` member was seen.
    request: bool,
    /// The bytes start a JSON object.
    object: bool,
    /// The value being read is the top-level `id`'s.
    capturing: bool,
    value: Vec<u8>,
    found: Option<RequestId>,
}

impl Default for IdScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl IdScanner {
    /// A scanner at the start of a message.
    pub fn new() -> Self {
        IdScanner {
            state: State::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            key: [0; 7],
            key_len: 0,
            request: false,
            object: false,
            capturing: false,
            value: Vec::new(),
            found: None,
        }
    }

    /// What a whole message held in memory is (see [`ReplyScan`]).
    pub fn reply(bytes: &[u8]) -> ReplyScan {
        let mut scanner = IdScanner::new();
        scanner.feed(bytes);
        scanner.finish_scan()
    }

    /// The id of a whole message held in memory, when it is a reply (not a request of the
    /// server) with a readable id.
    pub fn reply_id(bytes: &[u8]) -> Option<RequestId> {
        match IdScanner::reply(bytes) {
            ReplyScan::Reply(id) => Some(id),
            _ => None,
        }
    }

    /// The id found so far.
    pub fn id(&self) -> Option<&RequestId> {
        self.found.as_ref()
    }

    /// Whether a top-level `method` was seen so far: the message is a request (or a
    /// notification), not a reply.
    pub fn is_request(&self) -> bool {
        self.request
    }

    /// Ends the scan (the message ended) and returns the id of the reply: the id found, unless
    /// the message is a request. A number that runs to the end of the bytes is taken as it stands.
    pub fn finish(&mut self) -> Option<RequestId> {
        match self.finish_scan() {
            ReplyScan::Reply(id) => Some(id),
            _ => None,
        }
    }

    /// Ends the scan (the message ended) and says what the message is (see [`ReplyScan`]).
    pub fn finish_scan(&mut self) -> ReplyScan {
        if self.capturing && !self.in_string {
            self.decode_value();
        }
        self.state = State::Done;
        match &self.found {
            _ if self.request || !self.object => ReplyScan::NotAReply,
            Some(id) => ReplyScan::Reply(id.clone()),
            None => ReplyScan::Unreadable,
        }
    }

    /// Scans the next bytes of the message.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.state == State::Done {
                return;
            }
            if self.in_string {
                self.string_byte(byte);
            } else {
                self.structural_byte(byte);
            }
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let top = self.depth == 1;
        if top && self.capturing {
            self.keep(byte);
        }
        if self.escaped {
            self.escaped = false;
            if top && self.state == State::InKey {
                // An escape in a member name: not one of the plain names we look for.
                self.key[0] = 0;
            }
            return;
        }
        match byte {
            b'\\' => self.escaped = true,
            b'"' => {
                self.in_string = false;
                if top && self.state == State::InKey {
                    self.state = State::AfterKey;
                } else if top && self.capturing {
                    self.decode_value();
                }
            }
            _ if top && self.state == State::InKey => {
                if self.key_len < self.key.len() {
                    self.key[self.key_len] = byte;
                    self.key_len += 1;
                } else {
                    // Longer than any name we look for: mark it with a byte no name has.
                    self.key[0] = 0;
                }
            }
            _ => {}
        }
    }

    fn structural_byte(&mut self, byte: u8) {
        if self.depth > 1 {
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => self.depth -= 1,
                _ => {}
            }
            return;
        }
        let whitespace = matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
        match self.state {
            State::Start => match byte {
                b'{' => {
                    self.depth = 1;
                    self.object = true;
                    self.state = State::ExpectKey;
                }
                _ if whitespace => {}
                _ => self.state = State::Done,
            },
            State::ExpectKey => match byte {
                b'"' => {
                    self.in_string = true;
                    self.key_len = 0;
                    self.state = State::InKey;
                }
                _ if whitespace || byte == b',' => {}
                _ => self.state = State::Done,
            },
            State::AfterKey => match byte {
                b':' => self.state = State::ExpectValue,
                _ if whitespace => {}
                _ => self.state = State::Done,
            },
            State::ExpectValue if whitespace => {}
            State::ExpectValue => {
                self.state = State::InValue;
                let name = &self.key[..self.key_len];
                let is_id = name == b"id";
                self.request |= name == b"method";
                match byte {
                    b'"' => {
                        self.in_string = true;
                        self.begin_capture(is_id, byte);
                    }
                    b'{' | b'[' => self.depth += 1,
                    b'-' | b'0'..=b'9' => self.begin_capture(is_id, byte),
                    _ => {}
                }
            }
            State::InValue => match byte {
                b',' | b'}' => {
                    if self.capturing {
                        self.decode_value();
                    }
                    self.state = if byte == b',' { State::ExpectKey } else { State::Done };
                }
                b'{' | b'[' => self.depth += 1,
                b'"' => self.in_string = true,
                _ if self.capturing && !whitespace => self.keep(byte),
                _ => {}
            },
            State::InKey | State::Done => {}
        }
    }

    fn begin_capture(&mut self, is_id: bool, first: u8) {
        if is_id && self.found.is_none() {
            self.capturing = true;
            self.value.clear();
            self.value.push(first);
        }
    }

    fn keep(&mut self, byte: u8) {
        if self.value.len() < MAX_ID_BYTES {
            self.value.push(byte);
        } else {
            // Too long to be an id worth recovering.
            self.capturing = false;
            self.value = Vec::new();
        }
    }

    fn decode_value(&mut self) {
        self.capturing = false;
        let value = std::mem::take(&mut self.value);
        if let Ok(id) = serde_json::from_slice::<RequestId>(&value) {
            self.found = Some(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[test]
    fn ids_anywhere_in_the_top_level_object() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Some(RequestId::Number(1))),
            (
                r#"{"result":{"id":9},"jsonrpc":"2.0","id":-3}"#,
                Some(RequestId::Number(-3)),
            ),
            (
                r#" { "id" : "x\"y" , "error":{"code":1,"message":"m"}}"#,
                Some(RequestId::from("x\"y")),
            ),
            (
                r#"{"result":[{"id":1},"{\"id\":2}"],"id":3}"#,
                Some(RequestId::Number(3)),
            ),
            (r#"{"method":"ping","params":{"id":4}}"#, None),
            (r#"{"id":4,"jsonrpc":"2.0","method":"sampling/createMessage"}"#, None),
            (r#"{"id":5,"result":{"method":"x"}}"#, Some(RequestId::Number(5))),
            (r#"{"id":6,"methods":1}"#, Some(RequestId::Number(6))),
            (r#"{"id":null,"error":{}}"#, None),
            (r#"{"id":1.5}"#, None),
            (r#"{"i\u0064":7}"#, None),
            (r#"{"idx":7,"d":8}"#, None),
            ("[1,2]", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(IdScanner::reply_id(text.as_bytes()), expected, "{text}");
        }
    }

    #[test]
    fn an_id_too_long_to_keep_is_not_recovered() {
        let text = format!(r#"{{"id":"{}"}}"#, "a".repeat(MAX_ID_BYTES));
        assert_eq!(IdScanner::reply(text.as_bytes()), ReplyScan::Unreadable);
    }

    #[test]
    fn what_is_not_a_reply() {
        for text in [
            "",
            "  ",
            "x{",
            "[{\"id\":1}]",
            r#"{"method":"m","id":1}"#,
            r#"{"id":1,"method":"m"}"#,
        ] {
            assert_eq!(IdScanner::reply(text.as_bytes()), ReplyScan::NotAReply, "{text}");
        }
        for text in [
            "{",
            r#"{"jsonrpc":"2.0","result":"#,
            r#"{"id":null}"#,
            r#"{"id":{"a":1}}"#,
        ] {
            assert_eq!(IdScanner::reply(text.as_bytes()), ReplyScan::Unreadable, "{text}");
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z\"\\\\{}\\[\\],:]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("(id|method|[a-z]{1,3})", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn finds_the_top_level_id_however_the_bytes_are_split(
            before in prop::collection::btree_map("[a-hj-z][a-z]{0,2}", json_value(), 0..3),
            after in prop::collection::btree_map("[a-hj-z][a-z]{0,2}", json_value(), 0..3),
            id in prop_oneof![any::<i64>().prop_map(RequestId::Number), "[ -~]{0,12}".prop_map(RequestId::String)],
            split in any::<prop::sample::Index>(),
        ) {
            let mut text = String::from("{");
            for (key, value) in &before {
                write!(text, "{}:{},", json!(key), value).unwrap();
            }
            write!(text, "\"id\":{}", serde_json::to_string(&id).unwrap()).unwrap();
            for (key, value) in &after {
                write!(text, ",{}:{}", json!(key), value).unwrap();
            }
            text.push('}');
            let bytes = text.as_bytes();
            let at = split.index(bytes.len() + 1);
            let mut scanner = IdScanner::new();
            scanner.feed(&bytes[..at]);
            scanner.feed(&bytes[at..]);
            prop_assert_eq!(scanner.finish(), Some(id));
        }

        #[test]
        fn never_panics_and_never_invents_an_id_absent_at_the_top(value in json_value()) {
            let text = value.to_string();
            let object = value.as_object();
            let expected = object
                .filter(|object| !object.contains_key("method"))
                .and_then(|object| object.get("id"))
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            prop_assert_eq!(IdScanner::reply_id(text.as_bytes()), expected);
        }
    }
}
