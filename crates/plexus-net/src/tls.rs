//! The one TLS client configuration of every remote transport: rustls with the aws-lc-rs
//! provider chosen explicitly (no process-wide default is needed) and the platform's certificate
//! verifier, with the ALPN protocols the transport speaks.

use std::sync::{Arc, OnceLock};

use rustls::ClientConfig;
use rustls_platform_verifier::BuilderVerifierExt;

/// The application protocols a TLS connection offers (ALPN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `http/1.1` only (an HTTP/1.1 client).
    Http1,
    /// None offered (a WebSocket upgrade, which is HTTP/1.1 whatever ALPN says).
    Unspecified,
}

/// TLS could not be set up (the platform's roots could not be loaded).
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not set up TLS: {reason}")]
pub struct TlsError {
    reason: String,
}

/// The TLS client configuration for connections that offer `alpn`, built once. A failure is not
/// remembered: the next connection tries again.
pub fn client_config(alpn: Alpn) -> Result<Arc<ClientConfig>, TlsError> {
    static HTTP1: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    static UNSPECIFIED: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let cell = match alpn {
        Alpn::Http1 => &HTTP1,
        Alpn::Unspecified => &UNSPECIFIED,
    };
    if let Some(config) = cell.get() {
        return Ok(Arc::clone(config));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(BuilderVerifierExt::with_platform_verifier)
        .map_err(|e| TlsError { reason: e.to_string() })?
        .with_no_client_auth();
    if alpn == Alpn::Http1 {
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
    }
    Ok(Arc::clone(cell.get_or_init(|| Arc::new(config))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_configuration_per_protocol_set() {
        let http1 = client_config(Alpn::Http1).unwrap();
        assert_eq!(http1.alpn_protocols, [b"http/1.1".to_vec()]);
        assert!(Arc::ptr_eq(&http1, &client_config(Alpn::Http1).unwrap()));
        assert!(client_config(Alpn::Unspecified).unwrap().alpn_protocols.is_empty());
    }
}
