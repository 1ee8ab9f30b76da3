//! Messages on their way to the peer, encoded once by the caller.

use std::borrow::Cow;

use plexus_jsonrpc::{Message, RequestId};

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
#[derive(Debug, Clone)]
pub struct OutboundMessage {
    line: Vec<u8>,
    kind: OutboundKind,
}

impl OutboundMessage {
    /// Wraps an encoded line (it must be one JSON-RPC message followed by a single `\n`, as the
    /// `plexus_jsonrpc` encoders write it).
    pub fn from_line(line: Vec<u8>, kind: OutboundKind) -> Self {
        debug_assert_eq!(line.last(), Some(&b'\n'), "an outbound line ends with a newline");
        OutboundMessage { line, kind }
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
        OutboundMessage { line, kind }
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
