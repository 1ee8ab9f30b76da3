//! TLS for the remote modes (`--tls-cert`, `--tls-key`, `--client-ca`): rustls with the aws-lc-rs
//! provider, ALPN `h2` and `http/1.1` (only `http/1.1` for WebSocket, whose upgrade is HTTP/1.1).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

use super::{RemoteError, RemoteOptions};

/// The acceptor that `options` ask for, if they ask for TLS. `http2` offers `h2` by ALPN.
pub(crate) fn acceptor(options: &RemoteOptions, http2: bool) -> Result<Option<TlsAcceptor>, RemoteError> {
    let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key) else {
        return Ok(None);
    };
    let invalid = |option: &'static str, reason: String| RemoteError::InvalidOption { option, reason };
    let chain = read_certificates(cert).map_err(|reason| invalid("tls-cert", reason))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| invalid("tls-key", format!("{}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("tls-cert", e.to_string()))?;
    let builder = match &options.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in read_certificates(ca).map_err(|reason| invalid("client-ca", reason))? {
                roots
                    .add(certificate)
                    .map_err(|e| invalid("client-ca", format!("{}: {e}", ca.display())))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| invalid("client-ca", e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| invalid("tls-key", format!("it does not go with --tls-cert: {e}")))?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// The certificates of a PEM file (at least one).
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(certificates)
}
