//! TLS for the remote modes (`--tls-cert`, `--tls-key`, `--client-ca`): rustls with the aws-lc-rs
//! provider, ALPN `h2` and `http/1.1` (only `http/1.1` for WebSocket, whose upgrade is HTTP/1.1).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

use super::{OptionProblem, RemoteError, RemoteOptions};

/// The acceptor that `options` ask for, if they ask for TLS. `http2` offers `h2` by ALPN.
pub(crate) fn acceptor(options: &RemoteOptions, http2: bool) -> Result<Option<TlsAcceptor>, RemoteError> {
    let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key) else {
        return Ok(None);
    };
    let invalid = |option: &'static str| move |problem: OptionProblem| RemoteError::InvalidOption { option, problem };
    let chain = read_certificates(cert).map_err(invalid("tls-cert"))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|source| {
        invalid("tls-key")(OptionProblem::Pem {
            path: key.clone(),
            source,
        })
    })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("tls-cert")(OptionProblem::Tls(e)))?;
    let builder = match &options.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in read_certificates(ca).map_err(invalid("client-ca"))? {
                roots.add(certificate).map_err(|source| {
                    invalid("client-ca")(OptionProblem::TrustAnchor {
                        path: ca.clone(),
                        source,
                    })
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| invalid("client-ca")(OptionProblem::Verifier(e)))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| invalid("tls-key")(OptionProblem::KeyMismatch(e)))?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// The certificates of a PEM file (at least one).
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, OptionProblem> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|source| OptionProblem::Pem {
            path: path.to_owned(),
            source,
        })?;
    if certificates.is_empty() {
        return Err(OptionProblem::NoCertificate { path: path.to_owned() });
    }
    Ok(certificates)
}
