//! One authorization server: its issuer, where its metadata and endpoints are, its metadata
//! document, and its state.

use std::sync::Mutex;

use serde_json::{Map, Value, json};

use super::error::LimitReached;
use super::jwt::PublicKey;
use super::options::AuthMethod;
use super::options::{Advertised, MetadataLocation, OAuthOptions};
use super::record::Endpoint;
use super::store::{ALL_GRANTS, Client, Store};
use super::wire::random_id;
use crate::server::lock;

/// What a path of an authorization server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AsPath {
    /// A metadata URL; `served` says whether the document exists there, `openid` whether it is
    /// an OpenID form.
    Metadata {
        served: bool,
        openid: bool,
    },
    Authorize,
    Token,
    Register,
    Jwks,
}

impl AsPath {
    pub(crate) fn endpoint(self) -> Endpoint {
        match self {
            AsPath::Metadata { .. } => Endpoint::AuthorizationServerMetadata,
            AsPath::Authorize => Endpoint::Authorize,
            AsPath::Token => Endpoint::Token,
            AsPath::Register => Endpoint::Register,
            AsPath::Jwks => Endpoint::Jwks,
        }
    }
}

/// One authorization server.
#[derive(Debug)]
pub(crate) struct Authority {
    /// 0 for the first, then one more for each migration.
    pub(crate) index: usize,
    /// The issuer's path (`""` or e.g. `/t1`).
    pub(crate) path: String,
    /// `origin` + `path`.
    pub(crate) issuer: String,
    /// Whether it has a listener of its own (else it shares the MCP endpoint's).
    pub(crate) own_listener: bool,
    pub(crate) store: Mutex<Store>,
}

impl Authority {
    /// A new authorization server knowing the pre-registered clients of `options` and the
    /// `private_key_jwt` clients `jwt_clients` (id and keys).
    pub(crate) fn new(
        index: usize,
        origin: &str,
        own_listener: bool,
        options: &OAuthOptions,
        jwt_clients: &[(String, Vec<PublicKey>)],
    ) -> Result<Self, LimitReached> {
        let path = options.issuer_path.clone().unwrap_or_default();
        let mut store = Store::default();
        for client in &options.clients {
            let auth_methods = if client.secret.is_some() {
                vec![AuthMethod::ClientSecretBasic, AuthMethod::ClientSecretPost]
            } else {
                vec![AuthMethod::None]
            };
            store.put_client(pre_registered(
                &client.id,
                client.secret.clone(),
                auth_methods,
                Vec::new(),
            ))?;
        }
        for (id, keys) in jwt_clients {
            store.put_client(pre_registered(id, None, vec![AuthMethod::PrivateKeyJwt], keys.clone()))?;
        }
        Ok(Authority {
            index,
            issuer: format!("{origin}{path}"),
            path,
            own_listener,
            store: Mutex::new(store),
        })
    }

    /// What `path` is on this authorization server, if anything.
    pub(crate) fn classify(&self, path: &str, options: &OAuthOptions) -> Option<AsPath> {
        let forms = [
            (
                format!("/.well-known/oauth-authorization-server{}", self.path),
                MetadataLocation::Oauth,
            ),
            (
                format!("/.well-known/openid-configuration{}", self.path),
                MetadataLocation::Oidc,
            ),
            (
                format!("{}/.well-known/openid-configuration", self.path),
                MetadataLocation::OidcSuffix,
            ),
        ];
        let mut matched = false;
        let mut served = None;
        for (form, location) in &forms {
            if form == path {
                matched = true;
                if options.has_metadata(*location) {
                    served = Some(*location != MetadataLocation::Oauth);
                }
            }
        }
        if matched {
            return Some(AsPath::Metadata {
                served: served.is_some(),
                openid: served.unwrap_or(false),
            });
        }
        let endpoint = path.strip_prefix(self.path.as_str())?;
        match endpoint {
            "/authorize" => Some(AsPath::Authorize),
            "/token" => Some(AsPath::Token),
            "/register" => Some(AsPath::Register),
            "/jwks.json" => Some(AsPath::Jwks),
            _ => None,
        }
    }

    /// The metadata document (RFC 8414; with `openid`, the fields OpenID Connect Discovery
    /// requires too).
    pub(crate) fn metadata(&self, options: &OAuthOptions, openid: bool) -> Value {
        let issuer = &self.issuer;
        let mut document = Map::new();
        let mut put = |name: &str, value: Value| {
            document.insert(name.to_owned(), value);
        };
        put("issuer", json!(options.metadata_issuer.as_deref().unwrap_or(issuer)));
        put("authorization_endpoint", json!(format!("{issuer}/authorize")));
        put("token_endpoint", json!(format!("{issuer}/token")));
        if !options.no_registration {
            put("registration_endpoint", json!(format!("{issuer}/register")));
        }
        put("response_types_supported", json!(["code"]));
        put("response_modes_supported", json!(["query"]));
        put("grant_types_supported", json!(ALL_GRANTS));
        let methods: Vec<&str> = options.auth_methods.iter().map(|method| method.as_str()).collect();
        put("token_endpoint_auth_methods_supported", json!(methods));
        if options.auth_methods.contains(&AuthMethod::PrivateKeyJwt) {
            put("token_endpoint_auth_signing_alg_values_supported", json!(["ES256"]));
        }
        if !options.omit_pkce_methods {
            put("code_challenge_methods_supported", json!(options.pkce_methods));
        }
        if !options.scopes_supported.is_empty() {
            put("scopes_supported", json!(options.scopes_supported));
        }
        match options.iss_supported {
            Advertised::True => put("authorization_response_iss_parameter_supported", json!(true)),
            Advertised::False => put("authorization_response_iss_parameter_supported", json!(false)),
            Advertised::Absent => {}
        }
        if options.cimd {
            put("client_id_metadata_document_supported", json!(true));
        }
        if openid {
            put("jwks_uri", json!(format!("{issuer}/jwks.json")));
            put("subject_types_supported", json!(["public"]));
            put("id_token_signing_alg_values_supported", json!(["ES256"]));
        }
        Value::Object(document)
    }

    /// A new client id for dynamic registration.
    pub(crate) fn new_client_id(&self) -> Result<String, getrandom::Error> {
        random_id(&format!("as{}-client", self.index))
    }

    /// Runs `f` on the store.
    pub(crate) fn with_store<T>(&self, f: impl FnOnce(&mut Store) -> T) -> T {
        f(&mut lock(&self.store))
    }
}

/// A pre-registered client: any loopback redirect URI, every grant type.
pub(crate) fn pre_registered(
    id: &str,
    secret: Option<String>,
    auth_methods: Vec<AuthMethod>,
    jwks: Vec<PublicKey>,
) -> Client {
    Client {
        id: id.to_owned(),
        secret,
        auth_methods,
        redirect_uris: Vec::new(),
        any_loopback_redirect: true,
        grant_types: ALL_GRANTS.iter().map(|grant| (*grant).to_owned()).collect(),
        jwks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::options::MetadataLocation;

    #[test]
    fn metadata_paths_follow_the_issuer_path_and_the_switches() {
        let options = OAuthOptions {
            issuer_path: Some("/t1".into()),
            metadata: vec![MetadataLocation::Oidc],
            ..OAuthOptions::enabled()
        };
        let authority = Authority::new(0, "http://127.0.0.1:1", false, &options, &[]).unwrap();
        assert_eq!(authority.issuer, "http://127.0.0.1:1/t1");
        assert_eq!(
            authority.classify("/.well-known/oauth-authorization-server/t1", &options),
            Some(AsPath::Metadata {
                served: false,
                openid: false
            })
        );
        assert_eq!(
            authority.classify("/.well-known/openid-configuration/t1", &options),
            Some(AsPath::Metadata {
                served: true,
                openid: true
            })
        );
        assert_eq!(
            authority.classify("/t1/.well-known/openid-configuration", &options),
            Some(AsPath::Metadata {
                served: false,
                openid: false
            })
        );
        assert_eq!(authority.classify("/t1/token", &options), Some(AsPath::Token));
        assert_eq!(authority.classify("/token", &options), None);
        let document = authority.metadata(&options, true);
        assert_eq!(document["issuer"], "http://127.0.0.1:1/t1");
        assert_eq!(document["authorization_endpoint"], "http://127.0.0.1:1/t1/authorize");
        assert_eq!(document["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(document["authorization_response_iss_parameter_supported"], true);
        assert_eq!(document["jwks_uri"], "http://127.0.0.1:1/t1/jwks.json");
        assert!(document.get("scopes_supported").is_none());
    }

    #[test]
    fn an_issuer_without_a_path_has_both_openid_forms_at_one_url() {
        let options = OAuthOptions {
            metadata: vec![MetadataLocation::OidcSuffix],
            no_registration: true,
            ..OAuthOptions::enabled()
        };
        let authority = Authority::new(0, "http://127.0.0.1:1", false, &options, &[]).unwrap();
        assert_eq!(
            authority.classify("/.well-known/openid-configuration", &options),
            Some(AsPath::Metadata {
                served: true,
                openid: true
            })
        );
        assert_eq!(authority.classify("/register", &options), Some(AsPath::Register));
        assert!(
            authority
                .metadata(&options, false)
                .get("registration_endpoint")
                .is_none()
        );
    }
}
