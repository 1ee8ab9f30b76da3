//! The one TLS client configuration of every remote transport and of OAuth's requests: rustls
//! with the aws-lc-rs provider chosen explicitly (no process-wide default is needed) and the
//! platform's certificate verifier (which on Linux also reads `SSL_CERT_FILE` and
//! `SSL_CERT_DIR`), trusting as well the certificates of the PEM file that
//! `NODE_EXTRA_CA_CERTS` names: many users of Node-based MCP clients set it for a corporate CA,
//! and plexus works where those clients do. A server's entry may add its own CA file (`ca`) and
//! a client certificate with its key (`clientCert`, `clientKey`: mutual TLS).
//!
//! A host with an environment of its own (not the process's) gives it as a [`TlsEnvironment`]:
//! its `NODE_EXTRA_CA_CERTS`, and on Linux and the other Unix systems whose verifier reads them,
//! its `SSL_CERT_FILE` and `SSL_CERT_DIR` (there the roots are loaded as the platform verifier
//! loads them, with `rustls-native-certs`, from the host's paths or else the system's usual
//! locations, and checked by rustls's WebPKI verifier, which is what the platform verifier
//! does there).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls_platform_verifier::Verifier;

/// rustls's client configuration, which [`client_config`] gives (for an HTTP client that takes
/// one, such as reqwest's `use_preconfigured_tls`).
pub use rustls::ClientConfig;

/// The environment variable naming a PEM file of CA certificates to trust besides the platform's.
pub const EXTRA_CA_CERTS_VAR: &str = "NODE_EXTRA_CA_CERTS";

/// The most certificates one CA file may hold.
pub const MAX_CA_CERTIFICATES: usize = 1000;

/// The application protocols a TLS connection offers (ALPN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `http/1.1` only (an HTTP/1.1 client; a WebSocket upgrade).
    Http1,
    /// `h2`, then `http/1.1`: the server chooses HTTP/2 if it speaks it.
    Http2OrHttp1,
    /// None offered (a WebSocket upgrade, which is HTTP/1.1 whatever ALPN says; a client that
    /// chooses for itself).
    Unspecified,
}

/// TLS could not be set up.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The platform's roots or the verifier could not be loaded.
    #[error("could not set up TLS")]
    Setup(#[source] rustls::Error),
    /// The client certificate and its key do not go together.
    #[error("could not set up TLS: the client certificate and key do not go together")]
    IdentityMismatch(#[source] rustls::Error),
    /// The client certificate or its key is unusable.
    #[error("could not set up TLS: the client {what} {} (the entry's `{field}`) {problem}", path.display())]
    ClientIdentity {
        /// "certificate" or "key".
        what: &'static str,
        /// The config field that named it (`clientCert`, `clientKey`).
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: PemFileProblem,
        /// The error under it, when there is one.
        #[source]
        source: Option<FileCause>,
    },
    /// No root certificate was found: not in the host's `SSL_CERT_FILE` / `SSL_CERT_DIR` when
    /// `named`, else not in the system's usual locations.
    #[error(
        "could not set up TLS: no CA certificates were found {}",
        if *.named { "in SSL_CERT_FILE or SSL_CERT_DIR" } else { "in the system's usual locations" }
    )]
    NoRoots {
        /// Whether the host's environment named where to look.
        named: bool,
    },
    /// rustls refused the verifier built for a host's own roots.
    #[error("could not set up TLS: the certificate verifier could not be built")]
    Verifier(#[source] Arc<rustls::client::VerifierBuilderError>),
    /// A file of extra CA certificates is unusable.
    #[error("could not set up TLS: the CA file {} ({origin}) {problem}", path.display())]
    CaFile {
        /// Where the file was named (`NODE_EXTRA_CA_CERTS`).
        origin: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: PemFileProblem,
        /// The error under it, when there is one.
        #[source]
        source: Option<FileCause>,
    },
}

/// What is wrong with a PEM file of certificates or of a key (the words after its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PemFileProblem {
    /// It cannot be read (the error's source says why).
    #[error("cannot be read")]
    Read,
    /// It is not valid PEM (the error's source says why).
    #[error("is not valid PEM")]
    Pem,
    /// It holds no certificate.
    #[error("holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")")]
    NoCertificate,
    /// It holds more than [`MAX_CA_CERTIFICATES`] certificates.
    #[error("holds more than {MAX_CA_CERTIFICATES} certificates")]
    TooManyCertificates,
    /// It holds no private key.
    #[error("holds no PEM private key (\"-----BEGIN PRIVATE KEY-----\")")]
    NoKey,
    /// Its private key is unusable (the error's source says why).
    #[error("is not a usable PEM private key")]
    Key,
}

/// The error under a [`TlsError`] about a file: the I/O or PEM parser's error.
pub type FileCause = Arc<dyn std::error::Error + Send + Sync>;

type Problem = (PemFileProblem, Option<FileCause>);

fn read_problem(error: std::io::Error) -> Problem {
    (PemFileProblem::Read, Some(Arc::new(error)))
}

fn pem_problem(error: rustls::pki_types::pem::Error) -> Problem {
    (PemFileProblem::Pem, Some(Arc::new(error)))
}

/// What one server's connections trust and present besides the defaults: the entry's `ca`, and
/// its client certificate and key (mutual TLS).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TlsOptions {
    /// A PEM file of CA certificates trusted besides the platform's roots.
    pub ca: Option<PathBuf>,
    /// The client certificate to present, if the server asks for one.
    pub client_identity: Option<ClientIdentity>,
    /// What a host's own environment says of trust; `None`: the process's variables.
    pub environment: Option<TlsEnvironment>,
}

/// The environment variable naming a PEM file of roots used instead of the system's (Unix).
pub const CERT_FILE_VAR: &str = "SSL_CERT_FILE";

/// The environment variable naming directories of roots used instead of the system's (Unix;
/// separated by `:`).
pub const CERT_DIR_VAR: &str = "SSL_CERT_DIR";

/// What a host's own environment says of trust: its `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` (each unset when empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TlsEnvironment {
    /// `NODE_EXTRA_CA_CERTS`: CA certificates trusted besides the roots.
    pub extra_ca: Option<PathBuf>,
    /// `SSL_CERT_FILE`: roots used instead of the system's.
    pub cert_file: Option<PathBuf>,
    /// `SSL_CERT_DIR`: directories of roots used instead of the system's.
    pub cert_dirs: Vec<PathBuf>,
}

impl TlsEnvironment {
    /// What the environment `get` looks variables up in says.
    ///
    /// ```
    /// use plexus_net::tls::TlsEnvironment;
    ///
    /// let env = TlsEnvironment::from_lookup(|name| match name {
    ///     "SSL_CERT_DIR" => Some("/etc/a::/etc/b".to_owned()),
    ///     "NODE_EXTRA_CA_CERTS" => Some(String::new()),
    ///     _ => None,
    /// });
    /// assert_eq!(env.cert_dirs, ["/etc/a", "/etc/b"].map(std::path::PathBuf::from));
    /// assert_eq!((env.extra_ca, env.cert_file), (None, None));
    /// ```
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> TlsEnvironment {
        let path = |name: &str| get(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        TlsEnvironment {
            extra_ca: path(EXTRA_CA_CERTS_VAR),
            cert_file: path(CERT_FILE_VAR),
            cert_dirs: get(CERT_DIR_VAR)
                .map(|dirs| {
                    std::env::split_paths(&dirs)
                        .filter(|dir| !dir.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A client certificate chain and its private key, both PEM files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientIdentity {
    /// The certificate chain (leaf first).
    pub cert: PathBuf,
    /// The private key (PKCS #8, PKCS #1 or SEC1).
    pub key: PathBuf,
}

impl TlsOptions {
    /// No options: the platform's roots and the process's `NODE_EXTRA_CA_CERTS` only, no client
    /// certificate.
    pub fn is_default(&self) -> bool {
        self.ca.is_none() && self.client_identity.is_none() && self.environment.is_none()
    }
}

/// The TLS client configuration for connections that offer `alpn`, built once per process (a
/// failure is not remembered: the next connection tries again, and says why again).
pub fn client_config(alpn: Alpn) -> Result<Arc<ClientConfig>, TlsError> {
    static HTTP1: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    static HTTP2: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    static UNSPECIFIED: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let cell = match alpn {
        Alpn::Http1 => &HTTP1,
        Alpn::Http2OrHttp1 => &HTTP2,
        Alpn::Unspecified => &UNSPECIFIED,
    };
    if let Some(config) = cell.get() {
        return Ok(Arc::clone(config));
    }
    let config = build(alpn, environment_roots()?, None, None)?;
    Ok(Arc::clone(cell.get_or_init(|| config)))
}

/// The TLS client configuration for one server's connections: [`client_config`]'s, trusting as
/// well the CA certificates of `options.ca` and presenting `options.client_identity`. Built once
/// per set of options and protocols for the life of the process (a file that changes on disk is
/// read again by the next process).
pub fn server_config(alpn: Alpn, options: &TlsOptions) -> Result<Arc<ClientConfig>, TlsError> {
    type Built = Vec<(Alpn, TlsOptions, Arc<ClientConfig>)>;
    static BUILT: Mutex<Built> = Mutex::new(Vec::new());
    if options.is_default() {
        return client_config(alpn);
    }
    let built = BUILT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find_map(|(a, o, config)| (*a == alpn && o == options).then(|| Arc::clone(config)));
    if let Some(config) = built {
        return Ok(config);
    }
    let (roots, identity) = named_files(options)?;
    let config = build(alpn, roots, identity, options.environment.as_ref())?;
    BUILT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((alpn, options.clone(), Arc::clone(&config)));
    Ok(config)
}

/// A client certificate chain and its key.
type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// Reads the files `options` names (`NODE_EXTRA_CA_CERTS`, the entry's CA file, its client
/// certificate and key) as [`server_config`] does, without loading the platform's roots or
/// building a configuration: how a client reports an unusable file before its first request,
/// at no cost when no file is named (the roots are loaded by the first TLS connection, if one is
/// ever made). The system's roots, or those of `SSL_CERT_FILE` and `SSL_CERT_DIR`, are checked
/// there. A set of options whose files were read once is not read again, as [`server_config`]
/// builds once per set (a failure is not remembered: the next check reads them again).
pub fn check_files(options: &TlsOptions) -> Result<(), TlsError> {
    static CHECKED: Mutex<Vec<TlsOptions>> = Mutex::new(Vec::new());
    let mut checked = CHECKED.lock().unwrap_or_else(PoisonError::into_inner);
    if checked.contains(options) {
        return Ok(());
    }
    named_files(options)?;
    checked.push(options.clone());
    Ok(())
}

/// The certificates and the identity read from the files `options` names.
fn named_files(options: &TlsOptions) -> Result<(Vec<CertificateDer<'static>>, Option<Identity>), TlsError> {
    let mut roots = match options.environment.as_ref().map(|env| env.extra_ca.as_ref()) {
        None => environment_roots()?,
        Some(Some(path)) => read_ca_file(path, EXTRA_CA_CERTS_VAR)?,
        Some(None) => Vec::new(),
    };
    if let Some(ca) = &options.ca {
        roots.extend(read_ca_file(ca, "the entry's `ca`")?);
    }
    let identity = options.client_identity.as_ref().map(read_identity).transpose()?;
    Ok((roots, identity))
}

/// The certificate chain and key of a client identity.
fn read_identity(identity: &ClientIdentity) -> Result<Identity, TlsError> {
    let fail =
        |what: &'static str, field: &'static str, path: &Path, (problem, source): Problem| TlsError::ClientIdentity {
            what,
            field,
            path: path.to_owned(),
            problem,
            source,
        };
    let cert_fail = |problem: Problem| fail("certificate", "clientCert", &identity.cert, problem);
    let pem = std::fs::read(&identity.cert).map_err(|e| cert_fail(read_problem(e)))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .take(MAX_CA_CERTIFICATES + 1)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_fail(pem_problem(e)))?;
    if chain.is_empty() {
        return Err(cert_fail((PemFileProblem::NoCertificate, None)));
    }
    let key_fail = |problem: Problem| fail("key", "clientKey", &identity.key, problem);
    let pem = std::fs::read(&identity.key).map_err(|e| key_fail(read_problem(e)))?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        key_fail(match e {
            rustls::pki_types::pem::Error::NoItemsFound => (PemFileProblem::NoKey, None),
            other => (PemFileProblem::Key, Some(Arc::new(other))),
        })
    })?;
    Ok((chain, key))
}

/// The certificates of the file `NODE_EXTRA_CA_CERTS` names, if it names one.
fn environment_roots() -> Result<Vec<CertificateDer<'static>>, TlsError> {
    match std::env::var_os(EXTRA_CA_CERTS_VAR).filter(|path| !path.is_empty()) {
        Some(path) => read_ca_file(Path::new(&path), EXTRA_CA_CERTS_VAR),
        None => Ok(Vec::new()),
    }
}

/// A configuration trusting the platform's roots and `extra`, presenting `identity` if given.
fn build(
    alpn: Alpn,
    extra: Vec<CertificateDer<'static>>,
    identity: Option<Identity>,
    environment: Option<&TlsEnvironment>,
) -> Result<Arc<ClientConfig>, TlsError> {
    let setup = TlsError::Setup;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match environment {
        #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
        Some(environment) => crate::tls_roots::verifier(environment, extra, Arc::clone(&provider))?,
        _ => Arc::new(Verifier::new_with_extra_roots(extra, Arc::clone(&provider)).map_err(setup)?),
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(setup)?
        // The platform's verifier (or, for a host's own environment, the one it is on this
        // system) with more roots: the way rustls-platform-verifier documents.
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(TlsError::IdentityMismatch)?,
    };
    config.alpn_protocols = match alpn {
        Alpn::Http1 => vec![b"http/1.1".to_vec()],
        Alpn::Http2OrHttp1 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Alpn::Unspecified => Vec::new(),
    };
    Ok(Arc::new(config))
}

/// The certificates of a PEM file named by `origin`: at least one, at most
/// [`MAX_CA_CERTIFICATES`].
pub fn read_ca_file(path: &Path, origin: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let fail = |(problem, source): Problem| TlsError::CaFile {
        origin: origin.to_owned(),
        path: path.to_owned(),
        problem,
        source,
    };
    let pem = std::fs::read(path).map_err(|e| fail(read_problem(e)))?;
    let mut certificates = Vec::new();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate = certificate.map_err(|e| fail(pem_problem(e)))?;
        if certificates.len() == MAX_CA_CERTIFICATES {
            return Err(fail((PemFileProblem::TooManyCertificates, None)));
        }
        certificates.push(certificate);
    }
    if certificates.is_empty() {
        return Err(fail((PemFileProblem::NoCertificate, None)));
    }
    Ok(certificates)
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

    /// (Where a host's `SSL_CERT_FILE` is read: the Unix systems of [`crate::tls_roots`].)
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    #[test]
    fn checking_the_named_files_reads_no_roots() {
        let dir = std::env::temp_dir().join(format!("plexus-net-tls-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing_roots = dir.join("roots.pem");
        let environment = TlsEnvironment {
            cert_file: Some(missing_roots.clone()),
            ..TlsEnvironment::default()
        };
        // The roots are the first connection's to load: an SSL_CERT_FILE that cannot be read
        // is not read here, where building the configuration reads it and fails.
        let options = TlsOptions {
            environment: Some(environment.clone()),
            ..TlsOptions::default()
        };
        check_files(&options).unwrap();
        let error = plexus_transport::error_chain(&server_config(Alpn::Http1, &options).unwrap_err());
        assert!(error.contains(&missing_roots.display().to_string()), "{error}");
        // A file named for this server is read, and its problem named.
        let missing_ca = dir.join("ca.pem");
        let options = TlsOptions {
            ca: Some(missing_ca.clone()),
            environment: Some(environment),
            ..TlsOptions::default()
        };
        let error = plexus_transport::error_chain(&check_files(&options).unwrap_err());
        assert!(
            error.starts_with(&format!(
                "could not set up TLS: the CA file {} (the entry's `ca`) cannot be read: ",
                missing_ca.display()
            )),
            "{error}"
        );
        // Once read, a set of files is not read again (each HTTP server's connect checks them).
        std::fs::write(
            &missing_ca,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        check_files(&options).unwrap();
        std::fs::remove_file(&missing_ca).unwrap();
        check_files(&options).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_ca_file_is_named_with_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("plexus-net-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let error = plexus_transport::error_chain(&read_ca_file(&missing, EXTRA_CA_CERTS_VAR).unwrap_err());
        assert!(
            error.starts_with(&format!(
                "could not set up TLS: the CA file {} (NODE_EXTRA_CA_CERTS) cannot be read: ",
                missing.display()
            )),
            "{error}"
        );
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        assert_eq!(
            plexus_transport::error_chain(&read_ca_file(&empty, "the entry's `ca`").unwrap_err()),
            format!(
                "could not set up TLS: the CA file {} (the entry's `ca`) holds no PEM certificate \
                 (\"-----BEGIN CERTIFICATE-----\")",
                empty.display()
            )
        );
        let bad = dir.join("bad.pem");
        std::fs::write(&bad, "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n").unwrap();
        let error = plexus_transport::error_chain(&read_ca_file(&bad, EXTRA_CA_CERTS_VAR).unwrap_err());
        assert!(error.contains(") is not valid PEM: "), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
