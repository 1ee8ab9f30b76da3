//! What the gateway makes of a client's message before any backend work, for the cargo-fuzz
//! targets in `fuzz/` (compiled only under `cfg(fuzzing)`, which cargo-fuzz sets): the same
//! functions the stdio and HTTP sides use, with their crate-private types turned into plain
//! values.

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use plexus::jsonrpc::{ErrorObject, Message, RequestId};
use plexus::protocol::http_headers::ParamHeaders;
use plexus::protocol::{ClientCapabilities, Era, JsonObject, methods};

use crate::era::{Route, Stateless};
use crate::http::stateless::{Rejected, admit, check_param_headers};
use crate::session::Session;

/// What a stateless request says of itself, once its envelope (and over HTTP its headers) passed.
#[derive(Debug)]
pub struct Admitted {
    /// The capabilities of its envelope.
    pub capabilities: ClientCapabilities,
    /// `params.name` or `params.uri`, as `Mcp-Name` must carry it.
    pub named: Option<String>,
    /// A retry's `requestState`.
    pub request_state: Option<String>,
    /// A retry's `inputResponses`.
    pub input_responses: Option<JsonObject>,
}

impl From<Box<Stateless>> for Admitted {
    fn from(stateless: Box<Stateless>) -> Self {
        let Stateless {
            capabilities,
            named,
            request_state,
            input_responses,
            progress_token: _,
        } = *stateless;
        Admitted {
            capabilities,
            named,
            request_state,
            input_responses,
        }
    }
}

/// What a stdio connection makes of one line.
#[derive(Debug)]
pub enum Line {
    /// Not one JSON-RPC message: answered with a parse error.
    NotJsonRpc,
    /// A notification or a response: handled without an answer.
    NoRequest,
    /// A request of `method`, routed (or answered at once with the error), after which the
    /// connection's era is `era`.
    Request {
        /// Its method.
        method: String,
        /// How it is answered: `None` in the `initialize` era, the stateless request otherwise.
        route: Result<Option<Admitted>, ErrorObject>,
        /// The connection's era afterwards.
        era: Option<Era>,
    },
}

/// `line` from a stdio client whose connection's era is `era` (`None`: not decided yet), as the
/// stdio side routes it ([`Session::route`]).
pub fn route_line(era: Option<Era>, line: &[u8]) -> Line {
    let Ok(message) = Message::from_slice(line) else {
        return Line::NotJsonRpc;
    };
    let Message::Request(request) = message else {
        return Line::NoRequest;
    };
    let session = Session::new(None);
    if let Some(era) = era {
        session.set_era(era);
    }
    let route = session.route(&request).map(|route| match route {
        Route::Initialize => None,
        Route::Stateless(stateless) => Some(Admitted::from(stateless)),
    });
    Line::Request {
        method: request.method.to_string(),
        route,
        era: session.era(),
    }
}

/// What a stateless HTTP POST gets before any backend work.
#[derive(Debug)]
pub enum Post {
    /// The body is not one JSON-RPC message: 400.
    NotJsonRpc,
    /// A notification: 202.
    Notification,
    /// Answered at once with this error, to this id.
    Error(Option<RequestId>, ErrorObject),
    /// A request of `method`, admitted: it goes on to its backend.
    Admitted {
        /// Its method.
        method: String,
        /// What it says of itself.
        admitted: Admitted,
    },
}

/// A stateless POST with `headers` (those that are no valid header name or value are left
/// out, as hyper refuses them) and `body`, whose `tools/call` is of a tool annotated as
/// `annotated` says, as the HTTP side admits it.
pub fn admit_post(headers: &[(&[u8], &[u8])], body: &[u8], annotated: &ParamHeaders) -> Post {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            map.append(name, value);
        }
    }
    let Ok(message) = Message::from_slice(body) else {
        return Post::NotJsonRpc;
    };
    let (request, stateless) = match admit(&map, message) {
        Ok(admitted) => admitted,
        Err(Rejected::Notification) => return Post::Notification,
        Err(Rejected::Error(id, error)) => return Post::Error(id, error),
    };
    if request.method == methods::TOOLS_CALL
        && let Err(error) = check_param_headers(&map, annotated, request.params.as_deref())
    {
        return Post::Error(Some(request.id), error);
    }
    Post::Admitted {
        method: request.method.to_string(),
        admitted: Admitted::from(stateless),
    }
}
