//! Certificates made for a test: a CA, a server certificate it issued for `127.0.0.1`, `::1` and
//! `localhost`, and a client certificate it issued, written as PEM files for `--tls-cert`,
//! `--tls-key` and `--client-ca`, and for the client's `ca`, `clientCert` and `clientKey`.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// Why a test's certificates could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateError {
    /// A key or a certificate could not be generated.
    #[error("cannot make the {what}")]
    Generate {
        /// What was being made ("CA key", "server certificate", …).
        what: &'static str,
        /// rcgen's error.
        #[source]
        source: rcgen::Error,
    },
    /// A PEM file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The PEM files of a test's certificates.
#[derive(Debug, Clone)]
pub struct TestCertificates {
    /// The CA's certificate (what a client trusts, and what `--client-ca` takes).
    pub ca: PathBuf,
    /// The server's certificate chain and key (`--tls-cert`, `--tls-key`).
    pub server_cert: PathBuf,
    /// The server's private key.
    pub server_key: PathBuf,
    /// A client certificate the CA issued, and its key (mutual TLS).
    pub client_cert: PathBuf,
    /// The client certificate's private key.
    pub client_key: PathBuf,
}

impl TestCertificates {
    /// Makes the certificates and writes them into `dir` (which must exist).
    pub fn generate(dir: &Path) -> Result<TestCertificates, CertificateError> {
        let fail = |what: &'static str, source: rcgen::Error| CertificateError::Generate { what, source };
        let ca_key = KeyPair::generate().map_err(|e| fail("CA key", e))?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("CA", e))?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "plexus-testserver test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(|e| fail("CA", e))?;
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().map_err(|e| fail("server key", e))?;
        let mut server_params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()])
                .map_err(|e| fail("server certificate", e))?;
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = server_params
            .signed_by(&server_key, &issuer)
            .map_err(|e| fail("server certificate", e))?;

        let client_key = KeyPair::generate().map_err(|e| fail("client key", e))?;
        let mut client_params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("client certificate", e))?;
        client_params
            .distinguished_name
            .push(DnType::CommonName, "plexus test client");
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = client_params
            .signed_by(&client_key, &issuer)
            .map_err(|e| fail("client certificate", e))?;

        let write = |name: &str, pem: String| -> Result<PathBuf, CertificateError> {
            let path = dir.join(name);
            match std::fs::write(&path, pem) {
                Ok(()) => Ok(path),
                Err(source) => Err(CertificateError::Write { path, source }),
            }
        };
        Ok(TestCertificates {
            ca: write("ca.pem", ca_cert.pem())?,
            server_cert: write("server.pem", server_cert.pem())?,
            server_key: write("server-key.pem", server_key.serialize_pem())?,
            client_cert: write("client.pem", client_cert.pem())?,
            client_key: write("client-key.pem", client_key.serialize_pem())?,
        })
    }

    /// The test server's arguments for TLS with these certificates: `--tls-cert`, `--tls-key`.
    pub fn server_args(&self) -> [String; 2] {
        [
            format!("--tls-cert={}", self.server_cert.display()),
            format!("--tls-key={}", self.server_key.display()),
        ]
    }
}
