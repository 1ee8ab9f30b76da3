//! Why an exchange failed, in words that say how far the request got.

use std::io;
use std::time::Duration;

/// What an error says when the whole request was written and no answer came.
pub(crate) const OUTCOME_UNKNOWN: &str = "the request was sent; whether the server acted on it is unknown";

/// An HTTP exchange that failed before a response head arrived (or a client that could not be
/// made).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The client's settings are unusable.
    #[error("{reason}")]
    Settings {
        /// What is wrong.
        reason: String,
    },
    /// A URL that cannot be sent to.
    #[error("{url} cannot be used: {reason}")]
    Url {
        /// The URL, redacted.
        url: String,
        /// Why.
        reason: String,
    },
    /// A new connection could not be opened (DNS, TCP, the proxy's tunnel, TLS); the kind of
    /// the socket error is kept.
    #[error("could not connect: {0}")]
    Connect(io::Error),
    /// Opening a new connection took longer than the connect timeout.
    #[error("could not connect within {0:?} (the connect timeout)")]
    ConnectTimeout(Duration),
    /// The connection failed while the request was written or the response head read; the text
    /// says whether the request may have reached the server.
    #[error("{0}")]
    Exchange(io::Error),
    /// The client was closed.
    #[error("the transport was closed")]
    Closed,
}

impl HttpError {
    /// The error's text for a connect error that already says "could not connect" (a
    /// transport's `TransportError::Connect`): the socket error itself for a connection that
    /// could not be opened.
    pub fn reason(&self) -> String {
        match self {
            HttpError::Connect(e) => e.to_string(),
            other => other.to_string(),
        }
    }

    /// The error as an I/O error of the same kind and text, for a transport's
    /// `TransportError::from_io` (which classifies it by kind).
    pub fn into_io(self) -> io::Error {
        match self {
            HttpError::Connect(e) => io::Error::new(e.kind(), format!("could not connect: {e}")),
            HttpError::ConnectTimeout(_) => io::Error::new(io::ErrorKind::TimedOut, self.to_string()),
            HttpError::Exchange(e) => e,
            HttpError::Closed => io::Error::new(io::ErrorKind::NotConnected, self.to_string()),
            HttpError::Settings { .. } | HttpError::Url { .. } => {
                io::Error::new(io::ErrorKind::InvalidInput, self.to_string())
            }
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
