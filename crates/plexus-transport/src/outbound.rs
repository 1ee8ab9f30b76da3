//! Messages on their way to the peer, encoded once by the caller.

use std::borrow::Cow;
use std::time::Duration;

use plexus_jsonrpc::{Message, RequestId};

/// How much longer than a request's [reply timeout](OutboundMessage::reply_timeout) a
/// transport's own timer for its exchange runs: 1 s, so that the sender's timeout, which cancels
/// the request on the server, fires first.
pub const REPLY_TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// What an outbound message is: HTTP transports need to know whether a reply is expected and
/// which request is the `initialize`; stream transports only write the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboundKind {
    /// A request, which the peer will answer.
    Request {
        /// Its id.
        id: RequestId,
        /// Its method.
        method: Cow<'static, str>,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: Cow<'static, str>,
    },
    /// A response to a request of the peer.
    Response {
        /// The id of the peer's request.
        id: Option<RequestId>,
    },
}

/// One message, encoded as a line of compact JSON ending in `\n` (exactly what a newline-framed
/// transport writes; other transports use [`json`](Self::json), without the newline).
///
/// A request may say how long its sender waits for the reply ([`reply_timeout`](Self::reply_timeout)):
/// a transport that times an exchange itself (an HTTP response) derives its timer from it and
/// never gives up sooner, so that the sender's timeout, which cancels the request on the server,
/// is the one that fires.
#[derive(Debug, Clone)]
pub struct OutboundMessage {
    line: Vec<u8>,
    kind: OutboundKind,
    reply_timeout: Option<Duration>,
    headers: Vec<MessageHeader>,
}

/// One HTTP header of a message (see [`OutboundMessage::with_headers`]): its name and its value,
/// which must be a valid header value (visible ASCII, spaces and tabs; the 2026-07-28
/// revision's encoding makes any text one). Both are borrowed when they are constants (a name,
/// a protocol version, a method), so that most headers of a message cost no allocation.
pub type MessageHeader = (Cow<'static, str>, Cow<'static, str>);

/// The name of the header carrying a message's protocol version (every request and notification
/// of the 2026-07-28 revision over HTTP carries it; it must equal the version in the request's
/// `_meta`).
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";

impl OutboundMessage {
    /// Wraps an encoded line (it must be one JSON-RPC message followed by a single `\n`, as the
    /// `plexus_jsonrpc` encoders write it).
    pub fn from_line(line: Vec<u8>, kind: OutboundKind) -> Self {
        debug_assert_eq!(line.last(), Some(&b'\n'), "an outbound line ends with a newline");
        OutboundMessage {
            line,
            kind,
            reply_timeout: None,
            headers: Vec::new(),
        }
    }

    /// Encodes a [`Message`].
    pub fn from_message(message: &Message) -> Self {
        let kind = match message {
            Message::Request(r) => OutboundKind::Request {
                id: r.id.clone(),
                method: r.method.clone(),
            },
            Message::Notification(n) => OutboundKind::Notification {
                method: n.method.clone(),
            },
            Message::Response(r) => OutboundKind::Response { id: r.id.clone() },
        };
        let mut line = Vec::with_capacity(128);
        message.encode_line(&mut line);
        OutboundMessage {
            line,
            kind,
            reply_timeout: None,
            headers: Vec::new(),
        }
    }

    /// Gives the message HTTP headers of its own: the 2026-07-28 revision's `MCP-Protocol-Version`
    /// ([`PROTOCOL_VERSION_HEADER`]), `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`. A transport that
    /// [carries headers](crate::TransportSender::carries_headers) (Streamable HTTP) sends them
    /// with the message, and a message with a protocol version of its own is one of the
    /// stateless revision: it belongs to no session. Other transports ignore them, and a session
    /// attaches them only for a transport that carries them.
    #[must_use]
    pub fn with_headers(mut self, headers: Vec<MessageHeader>) -> Self {
        self.headers = headers;
        self
    }

    /// The message's own HTTP headers (see [`with_headers`](Self::with_headers)).
    pub fn headers(&self) -> &[MessageHeader] {
        &self.headers
    }

    /// Takes the message's own HTTP headers, leaving none.
    pub fn take_headers(&mut self) -> Vec<MessageHeader> {
        std::mem::take(&mut self.headers)
    }

    /// The protocol version among the message's own headers: set for a message of the stateless
    /// revision.
    pub fn protocol_version(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(PROTOCOL_VERSION_HEADER))
            .map(|(_, value)| &**value)
    }

    /// Says that the sender waits at most `timeout` for this request's reply (from the moment it
    /// is sent). Without it, the sender sets no limit known in advance (its timer may restart on
    /// progress): a transport must then not end the exchange by a timer of its own, only when the
    /// request is cancelled (`notifications/cancelled`) or the transport closes.
    #[must_use]
    pub fn with_reply_timeout(mut self, timeout: Duration) -> Self {
        self.reply_timeout = Some(timeout);
        self
    }

    /// How long the sender waits for this request's reply, when it said so (see
    /// [`with_reply_timeout`](Self::with_reply_timeout)).
    pub fn reply_timeout(&self) -> Option<Duration> {
        self.reply_timeout
    }

    /// How long a transport's own timer for this message's exchange may run: its reply timeout
    /// plus [`REPLY_TIMEOUT_GRACE`] when it has one, else `default` (the transport's setting, which
    /// bounds notifications, responses and requests without a reply timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use plexus_transport::{Message, OutboundMessage};
    ///
    /// let ping = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
    /// let untimed = OutboundMessage::from_message(&ping);
    /// assert_eq!(untimed.exchange_timeout(Duration::from_secs(60)), Duration::from_secs(60));
    /// let timed = untimed.with_reply_timeout(Duration::from_secs(120));
    /// assert_eq!(timed.exchange_timeout(Duration::from_secs(60)), Duration::from_secs(121));
    /// ```
    pub fn exchange_timeout(&self, default: Duration) -> Duration {
        self.reply_timeout
            .map_or(default, |timeout| timeout.saturating_add(REPLY_TIMEOUT_GRACE))
    }

    /// What the message is.
    pub fn kind(&self) -> &OutboundKind {
        &self.kind
    }

    /// The encoded line, newline included.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// The JSON text without the newline.
    pub fn json(&self) -> &[u8] {
        &self.line[..self.line.len() - 1]
    }

    /// Takes the encoded line, newline included.
    pub fn into_line(self) -> Vec<u8> {
        self.line
    }

    /// Takes the JSON text, without the newline (what message-framed transports send: an HTTP
    /// body, a WebSocket text frame).
    pub fn into_json(self) -> Vec<u8> {
        let mut json = self.line;
        json.pop();
        json
    }
}
