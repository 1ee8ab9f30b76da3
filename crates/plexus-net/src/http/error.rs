//! Why an exchange failed, in words that say how far the request got.

use std::io;
use std::time::Duration;

use plexus_transport::TransportError;

/// What an error says when the whole request was written and no answer came.
pub(crate) const OUTCOME_UNKNOWN: &str = "the request was sent; whether the server acted on it is unknown";

/// An HTTP exchange that failed before a response head arrived (or a client that could not be
/// made).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The user agent of the settings cannot be sent as a header.
    #[error("the user agent {user_agent:?} cannot be sent as a header")]
    UserAgent {
        /// The user agent given.
        user_agent: String,
    },
    /// The proxy of the settings is not a URL.
    #[error("the proxy {proxy} is not a URL")]
    ProxyNotAUrl {
        /// The proxy, redacted.
        proxy: String,
        /// The URL parser's error.
        #[source]
        source: url::ParseError,
    },
    /// The proxy of the settings is neither an `http://` nor an `https://` proxy.
    #[error("the proxy {proxy} is not an http:// or https:// proxy (the only kinds plexus speaks to)")]
    ProxyScheme {
        /// The proxy, redacted.
        proxy: String,
    },
    /// A URL that cannot be sent to.
    #[error("{url} cannot be used")]
    Url {
        /// The URL, redacted.
        url: String,
        /// What is wrong with it.
        #[source]
        problem: UrlProblem,
    },
    /// A new connection could not be opened (DNS, TCP, the proxy's tunnel, TLS); the kind of
    /// the socket error is kept.
    #[error("could not connect")]
    Connect(#[source] io::Error),
    /// The HTTP handshake on a new connection failed.
    #[error("could not connect")]
    Handshake(#[source] hyper::Error),
    /// Opening a new connection took longer than the connect timeout.
    #[error("could not connect within {0:?} (the connect timeout)")]
    ConnectTimeout(Duration),
    /// The connection failed while the request was written or the response head read; the text
    /// says whether the request may have reached the server.
    #[error(transparent)]
    Exchange(io::Error),
    /// The client was closed.
    #[error("the transport was closed")]
    Closed,
}

/// What is wrong with a URL of an [`HttpError::Url`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UrlProblem {
    /// The scheme is not one a client of this crate speaks.
    #[error("the scheme is not http, https, ws or wss")]
    Scheme,
    /// The URL has no host.
    #[error("the URL has no host")]
    NoHost,
    /// The URL has no port, and its scheme no default one.
    #[error("the URL has no port")]
    NoPort,
    /// Its path and query cannot be sent as a request target.
    #[error("its path cannot be sent")]
    Path(#[source] http::uri::InvalidUri),
    /// It cannot be sent as an absolute request target (to a proxy).
    #[error("it cannot be sent")]
    Uri(#[source] http::uri::InvalidUri),
    /// Its host (and port) cannot be sent as the `Host` header.
    #[error("its host cannot be sent")]
    Host,
}

impl HttpError {
    /// The [`TransportError::Connect`] to `url` that this error makes; as that error already
    /// says "could not connect", a connection that could not be opened gives the socket's (or
    /// the handshake's) error itself as its cause.
    pub fn into_connect_error(self, url: &str) -> TransportError {
        match self {
            HttpError::Connect(e) => crate::connect_error(url, e),
            HttpError::Handshake(e) => crate::connect_error(url, e),
            other => crate::connect_error(url, other),
        }
    }

    /// The error as an I/O error of the same kind, keeping the error as its cause, for a
    /// transport's `TransportError::from_io` (which classifies it by kind).
    pub fn into_io(self) -> io::Error {
        let kind = match &self {
            HttpError::Exchange(e) | HttpError::Connect(e) => e.kind(),
            HttpError::Handshake(e) => io_source(e).map_or(io::ErrorKind::Other, io::Error::kind),
            HttpError::ConnectTimeout(_) => io::ErrorKind::TimedOut,
            HttpError::Closed => io::ErrorKind::NotConnected,
            HttpError::UserAgent { .. }
            | HttpError::ProxyNotAUrl { .. }
            | HttpError::ProxyScheme { .. }
            | HttpError::Url { .. } => io::ErrorKind::InvalidInput,
        };
        match self {
            HttpError::Exchange(e) => e,
            other => io::Error::new(kind, other),
        }
    }
}

/// The first I/O error in an error's chain.
pub(crate) fn io_source<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a io::Error> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return Some(io);
        }
        source = e.source();
    }
    None
}

/// A TLS alert the server sent in place of an answer (TLS 1.3 checks a client certificate after
/// the client's side of the handshake ended, so the refusal comes with the first answer): the
/// server refused the connection, the request never reached the application. The text says what
/// to configure.
pub(crate) fn tls_refusal(error: &hyper::Error) -> Option<io::Error> {
    let io = io_source(error)?;
    // rustls reports a received alert as an InvalidData I/O error with this text (a plain
    // message, not a typed rustls error, on the reading side).
    let text = io.get_ref()?.to_string();
    let alert = text.strip_prefix("received fatal alert: ")?;
    let hint = match alert {
        "CertificateRequired" => "; the server requires a client certificate (an entry's clientCert and clientKey)",
        "BadCertificate" | "UnknownCA" | "CertificateUnknown" | "CertificateExpired" | "CertificateRevoked"
        | "AccessDenied" => "; the server did not accept the client certificate",
        _ => "",
    };
    Some(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("TLS: the server ended the handshake ({text}){hint}"),
    ))
}

/// An exchange that hyper failed before the response head: what the error means for the
/// request (it was written: whether the server acted on it is unknown).
pub(crate) fn exchange_failed(error: &hyper::Error) -> io::Error {
    if error.is_parse() || error.is_parse_status() {
        return io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the server's response is not valid HTTP: {}", cause(error)),
        );
    }
    if error.is_incomplete_message() {
        return io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the server closed the connection before answering ({OUTCOME_UNKNOWN})"),
        );
    }
    match io_source(error) {
        Some(io) => io::Error::new(
            io.kind(),
            format!("{io} before the server answered ({OUTCOME_UNKNOWN})"),
        ),
        None => io::Error::other(format!("{} ({OUTCOME_UNKNOWN})", cause(error))),
    }
}

/// A hyper error's text with its causes (hyper's own message is terse).
pub(crate) fn cause(error: &hyper::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}
