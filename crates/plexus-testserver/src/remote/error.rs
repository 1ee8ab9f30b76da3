//! Why an in-process remote server could not start ([`RemoteError`]), and what is wrong with an
//! option's value ([`OptionProblem`]) or an endpoint path ([`PathProblem`]).

use std::path::PathBuf;

use super::options::MESSAGES_PATH;
use crate::oauth::{JwksProblem, LimitReached};

/// Why an in-process remote server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The event log (`--event-log`) cannot be opened.
    #[error("cannot open the event log {path}")]
    EventLog {
        /// The path given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The listener's local address cannot be read.
    #[error("cannot read the listener's local address")]
    Address(#[source] std::io::Error),
    /// The server was started outside a tokio runtime.
    #[error("a remote server must be started within a tokio runtime")]
    NoRuntime,
    /// The authorization server's own listener (`--oauth-as-port`) cannot be bound.
    #[error("cannot listen on 127.0.0.1:{port} for the authorization server")]
    Listen {
        /// The port asked for.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// An option has a value the server cannot use.
    #[error("invalid option --{option}")]
    InvalidOption {
        /// The option, as spelled on the command line.
        option: &'static str,
        /// What is wrong with its value.
        #[source]
        problem: OptionProblem,
    },
    /// The command line given to [`RemoteServer::from_args`](super::RemoteServer::from_args) cannot be parsed.
    #[error("not a remote mode's command line")]
    Arguments(#[source] clap::Error),
    /// The mode given to [`RemoteServer::from_args`](super::RemoteServer::from_args) is not a remote one (`stdio`, `proxy`).
    #[error("not a remote mode's command line: {mode} is not a remote MCP mode")]
    NotRemote {
        /// The mode given.
        mode: String,
    },
    /// No ephemeral port of 127.0.0.1 could be bound.
    #[error("cannot listen on 127.0.0.1")]
    Bind(#[source] std::io::Error),
}

/// What is wrong with an option's value ([`RemoteError::InvalidOption`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptionProblem {
    /// The value is not an endpoint path.
    #[error(transparent)]
    Path(#[from] PathProblem),
    /// The legacy SSE mode's endpoint path is where its clients POST their messages.
    #[error("{} is where clients POST their messages; choose another path", MESSAGES_PATH)]
    MessagesPath,
    /// A file cannot be read.
    #[error("cannot read {}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not JSON.
    #[error("{} is not JSON", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A file's public keys are not a usable JWK or JWK Set.
    #[error("{} holds no usable public keys", path.display())]
    Keys {
        /// The file.
        path: PathBuf,
        /// What is wrong with them.
        #[source]
        problem: JwksProblem,
    },
    /// Taking the value would go over a limit (documents, clients).
    #[error(transparent)]
    Limit(#[from] LimitReached),
    /// A PEM file cannot be read or parsed.
    #[error("cannot read the PEM file {}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// A PEM file holds no certificate.
    #[error("{} holds no PEM certificate", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// A CA certificate cannot be trusted.
    #[error("{} holds a certificate that cannot be a trust anchor", path.display())]
    TrustAnchor {
        /// The file.
        path: PathBuf,
        /// Why rustls refused it.
        #[source]
        source: rustls::Error,
    },
    /// The TLS configuration cannot be built.
    #[error("the TLS configuration cannot be built")]
    Tls(#[source] rustls::Error),
    /// The verifier of client certificates cannot be built from the CA certificates.
    #[error("the client certificate verifier cannot be built")]
    Verifier(#[source] rustls::server::VerifierBuilderError),
    /// The private key does not go with the certificate chain.
    #[error("it does not go with --tls-cert")]
    KeyMismatch(#[source] rustls::Error),
}

/// What is wrong with an endpoint path (`--path`, the path of `--oauth-document`,
/// [`OAuthHandle::serve_document`](crate::OAuthHandle::serve_document)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathProblem {
    /// It does not start with `/`.
    #[error("{path:?} does not start with '/'")]
    NotAbsolute {
        /// The path given.
        path: String,
    },
    /// It is longer than a path may be.
    #[error("the path is {len} bytes long, more than {max}")]
    TooLong {
        /// Its length, in bytes.
        len: usize,
        /// The longest path, in bytes.
        max: usize,
    },
    /// It holds a character a path cannot hold here: `?`, `#`, white space or a control
    /// character.
    #[error("{path:?} contains {character:?}, which a path cannot hold here")]
    Character {
        /// The path given.
        path: String,
        /// The first such character.
        character: char,
    },
}
