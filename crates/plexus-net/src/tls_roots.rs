//! The roots of a host's own environment on the Unix systems whose platform verifier reads
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` (Linux, the BSDs): loaded as that verifier loads them (with
//! `rustls-native-certs`), but from the paths of the host's environment, or else from the
//! system's usual locations (`openssl-probe`'s list), never from the process's variables; then
//! checked by rustls's WebPKI verifier, which is what the platform verifier is on these systems.

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;

use crate::tls::{CERT_DIR_VAR, CERT_FILE_VAR, PemFileProblem, TlsEnvironment, TlsError};

/// The verifier for `environment`: its roots (or the system's) and `extra`.
pub(crate) fn verifier(
    environment: &TlsEnvironment,
    extra: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    let mut store = RootCertStore::empty();
    for certificate in extra {
        store.add(certificate).map_err(TlsError::Setup)?;
    }
    let named = environment.cert_file.is_some() || !environment.cert_dirs.is_empty();
    if named {
        if let Some(file) = &environment.cert_file {
            load(&mut store, file, CERT_FILE_VAR, true)?;
        }
        for dir in &environment.cert_dirs {
            load(&mut store, dir, CERT_DIR_VAR, true)?;
        }
    } else {
        for dir in openssl_probe::candidate_cert_dirs() {
            load(&mut store, dir, "the system's certificates", false)?;
        }
    }
    if store.is_empty() {
        return Err(TlsError::NoRoots { named });
    }
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
        .build()
        .map_err(|e| TlsError::Verifier(Arc::new(e)))?;
    Ok(verifier)
}

/// Adds the certificates of the file or directory `path` (named by `origin`) to `store`. A path
/// the host named must be readable; the system's locations are read as the platform verifier
/// reads them, skipping what cannot be used.
fn load(store: &mut RootCertStore, path: &Path, origin: &str, named: bool) -> Result<(), TlsError> {
    let (file, dir) = if path.is_dir() {
        (None, Some(path))
    } else {
        (Some(path), None)
    };
    let loaded = rustls_native_certs::load_certs_from_paths(file, dir);
    if named && let Some(error) = loaded.errors.into_iter().next() {
        return Err(TlsError::CaFile {
            origin: origin.to_owned(),
            path: path.to_owned(),
            problem: PemFileProblem::Read,
            source: Some(Arc::new(error)),
        });
    }
    let (_, ignored) = store.add_parsable_certificates(loaded.certs);
    if ignored > 0 {
        tracing::debug!(
            "{ignored} certificates of {} ({origin}) were ignored as unusable",
            path.display()
        );
    }
    Ok(())
}
