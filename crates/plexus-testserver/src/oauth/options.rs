//! The switches of the built-in authorization server and of the protected MCP endpoint
//! (`--oauth` and the `--oauth-*` options of `http` and `sse`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, ValueEnum, value_parser};

use crate::remote::parse_path;

/// The longest `--oauth-expires-in`, in seconds (one day).
pub(crate) const MAX_EXPIRES_IN: u64 = 86_400;
/// The default `expires_in` of access tokens, in seconds.
pub(crate) const DEFAULT_EXPIRES_IN: u64 = 3_600;

/// Protection of the MCP endpoint by bearer tokens, and the built-in OAuth 2.1 authorization
/// server that issues them. Everything is off unless `--oauth` is given; every other `--oauth-*`
/// option requires it.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "OAuth (a bearer-protected endpoint and its authorization server)")]
#[allow(clippy::struct_excessive_bools)] // one flag per command-line switch.
pub struct OAuthOptions {
    /// Protect the MCP endpoint with bearer tokens issued by the built-in authorization server:
    /// a request without a valid token gets 401 with a `WWW-Authenticate: Bearer` challenge.
    #[arg(id = "oauth", long = "oauth")]
    pub enabled: bool,

    // The protected resource.
    /// A scope every request to the MCP endpoint needs (repeatable); a token without it gets 403
    /// `error="insufficient_scope"`.
    #[arg(long = "oauth-required-scope", value_name = "SCOPE", requires = "oauth")]
    pub required_scopes: Vec<String>,
    /// `tools/call` of TOOL also needs these space-separated scopes (repeatable), e.g.
    /// `--oauth-tool-scope 'echo=tools:write'`; a token without them gets 403.
    #[arg(long = "oauth-tool-scope", value_name = "TOOL=SCOPES", requires = "oauth")]
    pub tool_scopes: Vec<ToolScope>,
    /// The 401 challenge carries `scope="SCOPES"` (without this option it carries no scope).
    #[arg(long = "oauth-challenge-scope", value_name = "SCOPES", requires = "oauth")]
    pub challenge_scope: Option<String>,
    /// The 401 and 403 challenges omit `resource_metadata`, so that clients find the protected
    /// resource metadata at the well-known URLs.
    #[arg(long = "oauth-no-resource-metadata-param", requires = "oauth")]
    pub no_resource_metadata_param: bool,
    /// Which protected resource metadata documents exist: `path`
    /// (`/.well-known/oauth-protected-resource/<mcp path>`), `root`
    /// (`/.well-known/oauth-protected-resource`), both (`path,root`), or `none`.
    #[arg(
        long = "oauth-prm",
        value_name = "WHERE",
        value_delimiter = ',',
        default_value = "path",
        requires = "oauth"
    )]
    pub prm: Vec<PrmLocation>,
    /// Fault: the protected resource metadata names this `resource` instead of the real one (the
    /// MCP URL for `path`, the origin for `root`).
    #[arg(long = "oauth-prm-resource", value_name = "URL", requires = "oauth")]
    pub prm_resource: Option<String>,
    /// `scopes_supported` of the protected resource metadata (comma-separated; omitted when not
    /// given).
    #[arg(
        long = "oauth-prm-scopes",
        value_name = "SCOPES",
        value_delimiter = ',',
        requires = "oauth"
    )]
    pub prm_scopes: Vec<String>,

    // The authorization server.
    /// The path of the issuer, e.g. `/t1` for `http://127.0.0.1:PORT/t1`; its endpoints are
    /// `<issuer>/authorize`, `<issuer>/token`, `<issuer>/register`.
    #[arg(long = "oauth-issuer-path", value_name = "PATH", value_parser = parse_issuer_path, requires = "oauth")]
    pub issuer_path: Option<String>,
    /// Serve the authorization server on its own listener on 127.0.0.1:N (0: a free port) instead
    /// of the MCP endpoint's listener, so that the issuer's origin differs from the resource's.
    #[arg(long = "oauth-as-port", value_name = "N", requires = "oauth")]
    pub as_port: Option<u16>,
    /// Which authorization server metadata documents exist (comma-separated): `oauth`
    /// (`/.well-known/oauth-authorization-server<issuer path>`), `oidc`
    /// (`/.well-known/openid-configuration<issuer path>`), `oidc-suffix`
    /// (`<issuer path>/.well-known/openid-configuration`), or `none` (a 2025-03-26 server: clients
    /// fall back to `/authorize`, `/token`, `/register` at the origin).
    #[arg(
        long = "oauth-metadata",
        value_name = "WHERE",
        value_delimiter = ',',
        default_value = "oauth",
        requires = "oauth"
    )]
    pub metadata: Vec<MetadataLocation>,
    /// Fault: the metadata document's `issuer` is this value instead of the real issuer.
    #[arg(long = "oauth-metadata-issuer", value_name = "ISSUER", requires = "oauth")]
    pub metadata_issuer: Option<String>,
    /// `code_challenge_methods_supported` (comma-separated), e.g. `plain` for a server whose
    /// metadata lacks S256. The server itself always requires S256.
    #[arg(
        long = "oauth-pkce-methods",
        value_name = "METHODS",
        value_delimiter = ',',
        default_value = "S256",
        requires = "oauth"
    )]
    pub pkce_methods: Vec<String>,
    /// Leave `code_challenge_methods_supported` out of the metadata.
    #[arg(
        long = "oauth-omit-pkce-methods",
        conflicts_with = "pkce_methods",
        requires = "oauth"
    )]
    pub omit_pkce_methods: bool,
    /// `authorization_response_iss_parameter_supported` in the metadata: `true`, `false`, or
    /// `absent`.
    #[arg(
        long = "oauth-iss-supported",
        value_name = "VALUE",
        default_value = "true",
        requires = "oauth"
    )]
    pub iss_supported: Advertised,
    /// The `iss` parameter of the authorization redirect (RFC 9207): `correct`, `missing`,
    /// `wrong` (another issuer), or `trailing-slash` (the issuer with a `/` appended).
    #[arg(
        long = "oauth-redirect-iss",
        value_name = "WHAT",
        default_value = "correct",
        requires = "oauth"
    )]
    pub redirect_iss: RedirectIss,
    /// Accept Client ID Metadata Documents: a `client_id` that is an `http://` URL is fetched and
    /// validated (advertised as `client_id_metadata_document_supported: true`).
    #[arg(long = "oauth-cimd", requires = "oauth")]
    pub cimd: bool,
    /// With --oauth-cimd: the client ID metadata document of client id URL (e.g. an `https://`
    /// one, which this server cannot fetch) is the JSON file FILE (repeatable).
    #[arg(long = "oauth-cimd-document", value_name = "URL=FILE", requires = "cimd")]
    pub cimd_documents: Vec<CimdDocumentFile>,
    /// `token_endpoint_auth_methods_supported` (comma-separated): `client_secret_basic`,
    /// `client_secret_post`, `none`, `private_key_jwt` (ES256; then
    /// `token_endpoint_auth_signing_alg_values_supported` is `["ES256"]`); the token endpoint
    /// accepts only these.
    #[arg(
        long = "oauth-auth-methods",
        value_name = "METHODS",
        value_delimiter = ',',
        default_value = "client_secret_basic,client_secret_post,none",
        requires = "oauth"
    )]
    pub auth_methods: Vec<AuthMethod>,
    /// `scopes_supported` of the authorization server (comma-separated; omitted when not given);
    /// when given, a request for any other scope gets `invalid_scope`.
    #[arg(
        long = "oauth-scopes-supported",
        value_name = "SCOPES",
        value_delimiter = ',',
        requires = "oauth"
    )]
    pub scopes_supported: Vec<String>,
    /// No dynamic client registration: no `registration_endpoint`, and `/register` is not served.
    #[arg(long = "oauth-no-registration", requires = "oauth")]
    pub no_registration: bool,
    /// A pre-registered client (repeatable): `ID` (public, `none`) or `ID:SECRET` (confidential,
    /// `client_secret_basic` or `client_secret_post`). It may use every grant type and any
    /// loopback redirect URI.
    #[arg(long = "oauth-client", value_name = "ID[:SECRET]", requires = "oauth")]
    pub clients: Vec<PreRegisteredClient>,
    /// A pre-registered `private_key_jwt` client (repeatable) whose public keys are in FILE (a
    /// JWK or a JWK Set of EC P-256 keys). It may use every grant type and any loopback redirect
    /// URI.
    #[arg(long = "oauth-jwt-client", value_name = "ID=FILE", requires = "oauth")]
    pub jwt_clients: Vec<JwtClientFile>,
    /// Accept authorization and token requests without the RFC 8707 `resource` parameter (by
    /// default it is required, and must name this server's MCP URL or origin).
    #[arg(long = "oauth-resource-optional", requires = "oauth")]
    pub resource_optional: bool,
    /// The authorization endpoint redirects with `error=CODE` (e.g. `access_denied`) instead of
    /// a code, once the request is valid.
    #[arg(long = "oauth-authorize-error", value_name = "CODE", requires = "oauth")]
    pub authorize_error: Option<String>,

    // Tokens.
    /// The lifetime of access tokens, in seconds (`expires_in`).
    #[arg(long = "oauth-expires-in", value_name = "SECONDS", default_value_t = DEFAULT_EXPIRES_IN, value_parser = value_parser!(u64).range(1..=MAX_EXPIRES_IN), requires = "oauth")]
    pub expires_in: u64,
    /// Token responses omit `expires_in` (the tokens still expire after --oauth-expires-in).
    #[arg(long = "oauth-omit-expires-in", requires = "oauth")]
    pub omit_expires_in: bool,
    /// When a refresh token is issued: `always` (to clients registered for the `refresh_token`
    /// grant), `offline-access` (only when the `offline_access` scope was granted), `never`.
    #[arg(
        long = "oauth-refresh-tokens",
        value_name = "WHEN",
        default_value = "always",
        requires = "oauth"
    )]
    pub refresh_tokens: RefreshIssuance,
    /// What a refresh does with the refresh token: `rotate` (a new one; the old one stops
    /// working), `reuse` (the same one is returned), `omit` (the response has none; the old one
    /// keeps working).
    #[arg(
        long = "oauth-refresh-rotation",
        value_name = "HOW",
        default_value = "rotate",
        requires = "oauth"
    )]
    pub refresh_rotation: RefreshRotation,
    /// The authorization server moves after N requests to the MCP endpoint were let through: the
    /// protected resource metadata then names a new authorization server (on its own listener,
    /// with its own clients), and the old one's tokens get 401.
    #[arg(long = "oauth-migrate-after", value_name = "N", value_parser = value_parser!(u64).range(1..), requires = "oauth")]
    pub migrate_after: Option<u64>,
    /// Serve the JSON file FILE at PATH on the MCP endpoint's listener (repeatable), e.g. a client
    /// ID metadata document; `{origin}` in the file is replaced by `http://127.0.0.1:PORT`.
    #[arg(long = "oauth-document", value_name = "PATH=FILE", requires = "oauth")]
    pub documents: Vec<DocumentFile>,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            enabled: false,
            required_scopes: Vec::new(),
            tool_scopes: Vec::new(),
            challenge_scope: None,
            no_resource_metadata_param: false,
            prm: vec![PrmLocation::Path],
            prm_resource: None,
            prm_scopes: Vec::new(),
            issuer_path: None,
            as_port: None,
            metadata: vec![MetadataLocation::Oauth],
            metadata_issuer: None,
            pkce_methods: vec!["S256".to_owned()],
            omit_pkce_methods: false,
            iss_supported: Advertised::True,
            redirect_iss: RedirectIss::Correct,
            cimd: false,
            cimd_documents: Vec::new(),
            auth_methods: vec![
                AuthMethod::ClientSecretBasic,
                AuthMethod::ClientSecretPost,
                AuthMethod::None,
            ],
            scopes_supported: Vec::new(),
            no_registration: false,
            clients: Vec::new(),
            jwt_clients: Vec::new(),
            resource_optional: false,
            authorize_error: None,
            expires_in: DEFAULT_EXPIRES_IN,
            omit_expires_in: false,
            refresh_tokens: RefreshIssuance::Always,
            refresh_rotation: RefreshRotation::Rotate,
            migrate_after: None,
            documents: Vec::new(),
        }
    }
}

impl OAuthOptions {
    /// The options of a protected endpoint with every other switch at its default.
    pub fn enabled() -> Self {
        OAuthOptions {
            enabled: true,
            ..OAuthOptions::default()
        }
    }

    /// Whether the protected resource metadata exists at `location`.
    pub(crate) fn has_prm(&self, location: PrmLocation) -> bool {
        self.prm.contains(&location)
    }

    /// Whether the authorization server metadata exists at `location`.
    pub(crate) fn has_metadata(&self, location: MetadataLocation) -> bool {
        self.metadata.contains(&location)
    }
}

/// Where a protected resource metadata document is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrmLocation {
    /// `/.well-known/oauth-protected-resource/<mcp path>`; its `resource` is the MCP URL.
    Path,
    /// `/.well-known/oauth-protected-resource`; its `resource` is the origin.
    Root,
    /// Neither (with others, ignored).
    None,
}

/// Where an authorization server metadata document is served, for issuer path `P`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetadataLocation {
    /// RFC 8414: `/.well-known/oauth-authorization-server` + `P`.
    Oauth,
    /// OpenID Connect with path insertion: `/.well-known/openid-configuration` + `P`.
    Oidc,
    /// OpenID Connect Discovery 1.0: `P` + `/.well-known/openid-configuration`.
    OidcSuffix,
    /// None (with others, ignored).
    None,
}

/// A boolean metadata field that may also be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Advertised {
    /// `true`.
    True,
    /// `false`.
    False,
    /// The field is absent.
    Absent,
}

/// The `iss` parameter of the authorization redirect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RedirectIss {
    /// The issuer, exactly.
    Correct,
    /// No `iss`.
    Missing,
    /// Another issuer (`https://wrong-issuer.example`).
    Wrong,
    /// The issuer with a `/` appended (equal only after normalisation, which clients must not do).
    TrailingSlash,
}

/// A client authentication method at the token endpoint (RFC 7591 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum AuthMethod {
    /// HTTP Basic with the client id and secret.
    #[value(name = "client_secret_basic")]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    #[value(name = "client_secret_post")]
    ClientSecretPost,
    /// A public client: `client_id` in the form body, no secret.
    #[value(name = "none")]
    None,
    /// An ES256-signed JWT client assertion (RFC 7523), verified with the client's registered
    /// public keys.
    #[value(name = "private_key_jwt")]
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::None => "none",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method of this RFC 7591 name.
    pub(crate) fn from_name(name: &str) -> Option<AuthMethod> {
        match name {
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            "none" => Some(AuthMethod::None),
            "private_key_jwt" => Some(AuthMethod::PrivateKeyJwt),
            _ => None,
        }
    }

    /// Whether the method authenticates with a client secret.
    pub(crate) fn uses_secret(self) -> bool {
        matches!(self, AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost)
    }
}

impl fmt::Display for AuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When refresh tokens are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RefreshIssuance {
    /// With every authorization code exchange of a client registered for `refresh_token`.
    Always,
    /// Only when the `offline_access` scope was granted.
    OfflineAccess,
    /// Never.
    Never,
}

/// What a refresh does with the refresh token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RefreshRotation {
    /// A new refresh token; the old one stops working.
    Rotate,
    /// The same refresh token is returned.
    Reuse,
    /// The response carries no refresh token; the old one keeps working.
    Omit,
}

/// `--oauth-tool-scope TOOL=SCOPES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolScope {
    /// The tool's name.
    pub tool: String,
    /// The scopes its calls need.
    pub scopes: Vec<String>,
}

impl FromStr for ToolScope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (tool, scopes) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?} is not of the form 'TOOL=SCOPES'"))?;
        let scopes: Vec<String> = scopes.split_whitespace().map(str::to_owned).collect();
        if tool.is_empty() || scopes.is_empty() {
            return Err(format!("{text:?} names no tool or no scope ('TOOL=SCOPES')"));
        }
        Ok(ToolScope {
            tool: tool.to_owned(),
            scopes,
        })
    }
}

/// `--oauth-client ID[:SECRET]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreRegisteredClient {
    /// The client id.
    pub id: String,
    /// The secret of a confidential client.
    pub secret: Option<String>,
}

impl FromStr for PreRegisteredClient {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (id, secret) = match text.split_once(':') {
            Some((id, secret)) => (id, Some(secret.to_owned())),
            None => (text, None),
        };
        if id.is_empty() || secret.as_deref() == Some("") {
            return Err(format!("{text:?} is not of the form 'ID' or 'ID:SECRET'"));
        }
        Ok(PreRegisteredClient {
            id: id.to_owned(),
            secret,
        })
    }
}

/// `--oauth-jwt-client ID=FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtClientFile {
    /// The client id.
    pub id: String,
    /// The JWK or JWK Set file.
    pub file: PathBuf,
}

impl FromStr for JwtClientFile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('=') {
            Some((id, file)) if !id.is_empty() && !file.is_empty() => Ok(JwtClientFile {
                id: id.to_owned(),
                file: PathBuf::from(file),
            }),
            _ => Err(format!("{text:?} is not of the form 'ID=FILE'")),
        }
    }
}

/// `--oauth-cimd-document URL=FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CimdDocumentFile {
    /// The client id.
    pub url: String,
    /// The JSON file.
    pub file: PathBuf,
}

impl FromStr for CimdDocumentFile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // The URL holds ':' and may hold '='; the file is after the last '='.
        match text.rsplit_once('=') {
            Some((url, file)) if (url.starts_with("https://") || url.starts_with("http://")) && !file.is_empty() => {
                Ok(CimdDocumentFile {
                    url: url.to_owned(),
                    file: PathBuf::from(file),
                })
            }
            _ => Err(format!("{text:?} is not of the form 'URL=FILE' (an http(s) URL)")),
        }
    }
}

/// `--oauth-document PATH=FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentFile {
    /// Where it is served.
    pub path: String,
    /// The JSON file.
    pub file: PathBuf,
}

impl FromStr for DocumentFile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (path, file) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?} is not of the form 'PATH=FILE'"))?;
        if file.is_empty() {
            return Err(format!("{text:?} names no file ('PATH=FILE')"));
        }
        Ok(DocumentFile {
            path: parse_path(path).map_err(|e| e.to_string())?,
            file: PathBuf::from(file),
        })
    }
}

/// Checks an issuer path: a path (see [`parse_path`]) without a trailing `/`; `/` alone means
/// no path.
pub(crate) fn parse_issuer_path(path: &str) -> Result<String, String> {
    let path = parse_path(path).map_err(|e| e.to_string())?;
    if path == "/" {
        return Ok(String::new());
    }
    if path.ends_with('/') {
        return Err(format!("{path:?} ends with '/'; an issuer path does not"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_name_what_is_wrong() {
        assert_eq!(
            "echo=a b".parse::<ToolScope>().unwrap(),
            ToolScope {
                tool: "echo".into(),
                scopes: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(
            "echo".parse::<ToolScope>().unwrap_err(),
            "\"echo\" is not of the form 'TOOL=SCOPES'"
        );
        assert_eq!(
            "echo= ".parse::<ToolScope>().unwrap_err(),
            "\"echo= \" names no tool or no scope ('TOOL=SCOPES')"
        );
        assert_eq!(
            "id:s:x".parse::<PreRegisteredClient>().unwrap(),
            PreRegisteredClient {
                id: "id".into(),
                secret: Some("s:x".into())
            }
        );
        assert_eq!("pub".parse::<PreRegisteredClient>().unwrap().secret, None);
        assert_eq!(
            "id:".parse::<PreRegisteredClient>().unwrap_err(),
            "\"id:\" is not of the form 'ID' or 'ID:SECRET'"
        );
        assert_eq!(
            "x.json=/tmp/x".parse::<DocumentFile>().unwrap_err(),
            "\"x.json\" does not start with '/'"
        );
        assert_eq!(parse_issuer_path("/t1").unwrap(), "/t1");
        assert_eq!(parse_issuer_path("/").unwrap(), "");
        assert_eq!(
            parse_issuer_path("/t1/").unwrap_err(),
            "\"/t1/\" ends with '/'; an issuer path does not"
        );
    }
}
