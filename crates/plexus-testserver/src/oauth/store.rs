//! What one authorization server remembers: clients, authorization codes, access and refresh
//! tokens, each in a bounded map. Codes are single-use and short-lived; expired entries are
//! purged before a full map refuses a new one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::error::{LimitReached, StoreError};
use super::jwt::PublicKey;
use super::options::AuthMethod;
use super::wire::random_id;

/// The most clients an authorization server keeps (registered, pre-registered and fetched).
pub(crate) const MAX_CLIENTS: usize = 1024;
/// The most authorization codes waiting to be exchanged.
pub(crate) const MAX_CODES: usize = 1024;
/// The most access tokens, and separately the most refresh tokens.
pub(crate) const MAX_TOKENS: usize = 4096;
/// How long an authorization code can be exchanged.
pub(crate) const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// The most client assertion ids (`jti`) remembered against replays.
pub(crate) const MAX_ASSERTION_IDS: usize = 4096;

/// The grant types a pre-registered client may use.
pub(crate) const ALL_GRANTS: [&str; 3] = ["authorization_code", "refresh_token", "client_credentials"];

/// A client of the authorization server.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
    /// The methods it may authenticate with at the token endpoint.
    pub(crate) auth_methods: Vec<AuthMethod>,
    /// Its registered redirect URIs.
    pub(crate) redirect_uris: Vec<String>,
    /// Any loopback `http` redirect URI is accepted (pre-registered clients).
    pub(crate) any_loopback_redirect: bool,
    pub(crate) grant_types: Vec<String>,
    /// The public keys of a `private_key_jwt` client.
    pub(crate) jwks: Vec<PublicKey>,
}

impl Client {
    pub(crate) fn may_use_grant(&self, grant: &str) -> bool {
        self.grant_types.iter().any(|known| known == grant)
    }
}

/// An authorization code waiting to be exchanged.
#[derive(Debug, Clone)]
pub(crate) struct Code {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    pub(crate) challenge: String,
    pub(crate) resource: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) expires_at: Instant,
}

/// What an access or refresh token grants.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub(crate) client_id: String,
    pub(crate) scopes: Vec<String>,
    /// The RFC 8707 resource it is for.
    pub(crate) resource: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct AccessToken {
    pub(crate) grant: Grant,
    pub(crate) expires_at: Instant,
}

/// A token the store issued, as [`Store::issue`] returns it.
#[derive(Debug, Clone)]
pub(crate) struct Issued {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
}

/// One authorization server's state.
#[derive(Debug, Default)]
pub(crate) struct Store {
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    access: HashMap<String, AccessToken>,
    refresh: HashMap<String, Grant>,
    /// Client assertion ids seen (`client id`, `jti`), with the time (Unix seconds) after which
    /// the assertion is expired anyway.
    assertion_ids: HashMap<(String, String), u64>,
}

impl Store {
    pub(crate) fn client(&self, id: &str) -> Option<&Client> {
        self.clients.get(id)
    }

    /// Adds or replaces a client.
    pub(crate) fn put_client(&mut self, client: Client) -> Result<(), LimitReached> {
        if !self.clients.contains_key(&client.id) && self.clients.len() >= MAX_CLIENTS {
            return Err(LimitReached::Clients { max: MAX_CLIENTS });
        }
        self.clients.insert(client.id.clone(), client);
        Ok(())
    }

    /// Stores a new code and returns it.
    pub(crate) fn new_code(&mut self, code: Code) -> Result<String, StoreError> {
        let now = Instant::now();
        if self.codes.len() >= MAX_CODES {
            self.codes.retain(|_, code| code.expires_at > now);
        }
        if self.codes.len() >= MAX_CODES {
            return Err(LimitReached::Codes { max: MAX_CODES }.into());
        }
        let id = random_id("code")?;
        self.codes.insert(id.clone(), code);
        Ok(id)
    }

    /// Takes a code (it can be taken once), if it exists and has not expired.
    pub(crate) fn take_code(&mut self, id: &str) -> Option<Code> {
        self.codes.remove(id).filter(|code| code.expires_at > Instant::now())
    }

    /// Issues an access token for `grant`, living `lifetime`, and a refresh token when `refresh`.
    pub(crate) fn issue(&mut self, grant: &Grant, lifetime: Duration, refresh: bool) -> Result<Issued, StoreError> {
        let now = Instant::now();
        if self.access.len() >= MAX_TOKENS {
            self.access.retain(|_, token| token.expires_at > now);
        }
        if self.access.len() >= MAX_TOKENS || (refresh && self.refresh.len() >= MAX_TOKENS) {
            return Err(LimitReached::Tokens { max: MAX_TOKENS }.into());
        }
        let access_token = random_id("at")?;
        let refresh_token = if refresh { Some(random_id("rt")?) } else { None };
        self.access.insert(
            access_token.clone(),
            AccessToken {
                grant: grant.clone(),
                expires_at: now + lifetime,
            },
        );
        if let Some(token) = &refresh_token {
            self.refresh.insert(token.clone(), grant.clone());
        }
        Ok(Issued {
            access_token,
            refresh_token,
        })
    }

    /// Notes a client assertion's `jti`; an id seen before (while its assertion lives) is a
    /// replay.
    pub(crate) fn use_assertion_id(
        &mut self,
        client_id: &str,
        jti: &str,
        expires: u64,
        now: u64,
    ) -> Result<(), StoreError> {
        let key = (client_id.to_owned(), jti.to_owned());
        if self.assertion_ids.get(&key).is_some_and(|expires| *expires > now) {
            return Err(StoreError::Replayed { jti: jti.to_owned() });
        }
        if self.assertion_ids.len() >= MAX_ASSERTION_IDS {
            self.assertion_ids.retain(|_, expires| *expires > now);
        }
        if self.assertion_ids.len() >= MAX_ASSERTION_IDS {
            return Err(LimitReached::AssertionIds { max: MAX_ASSERTION_IDS }.into());
        }
        self.assertion_ids.insert(key, expires);
        Ok(())
    }

    pub(crate) fn access(&self, token: &str) -> Option<&AccessToken> {
        self.access.get(token)
    }

    pub(crate) fn refresh(&self, token: &str) -> Option<&Grant> {
        self.refresh.get(token)
    }

    pub(crate) fn drop_refresh(&mut self, token: &str) {
        self.refresh.remove(token);
    }

    /// Makes every access token expired; returns how many there were.
    pub(crate) fn expire_access(&mut self) -> usize {
        let now = Instant::now();
        for token in self.access.values_mut() {
            token.expires_at = token.expires_at.min(now);
        }
        self.access.len()
    }

    /// Forgets every access and refresh token; returns how many there were.
    pub(crate) fn revoke_all(&mut self) -> usize {
        let count = self.access.len() + self.refresh.len();
        self.access.clear();
        self.refresh.clear();
        count
    }

    /// Every token: `(token, grant, refresh?, expired?)`.
    pub(crate) fn tokens(&self) -> Vec<(String, Grant, bool, bool)> {
        let now = Instant::now();
        let access = self
            .access
            .iter()
            .map(|(token, access)| (token.clone(), access.grant.clone(), false, access.expires_at <= now));
        let refresh = self
            .refresh
            .iter()
            .map(|(token, grant)| (token.clone(), grant.clone(), true, false));
        access.chain(refresh).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> Grant {
        Grant {
            client_id: "c".into(),
            scopes: vec!["a".into()],
            resource: None,
        }
    }

    #[test]
    fn codes_are_single_use_and_expire() {
        let mut store = Store::default();
        let code = Code {
            client_id: "c".into(),
            redirect_uri: "http://127.0.0.1/cb".into(),
            challenge: "x".into(),
            resource: None,
            scopes: Vec::new(),
            expires_at: Instant::now() + CODE_LIFETIME,
        };
        let id = store.new_code(code.clone()).unwrap();
        assert!(store.take_code(&id).is_some());
        assert!(store.take_code(&id).is_none(), "a code works once");
        let stale = store
            .new_code(Code {
                expires_at: Instant::now(),
                ..code
            })
            .unwrap();
        assert!(store.take_code(&stale).is_none(), "an expired code does not work");
    }

    #[test]
    fn assertion_ids_are_used_once_while_their_assertion_lives() {
        let mut store = Store::default();
        store.use_assertion_id("c", "j", 100, 50).unwrap();
        let replayed = store.use_assertion_id("c", "j", 100, 60).unwrap_err();
        assert!(matches!(&replayed, StoreError::Replayed { jti } if jti == "j"));
        assert_eq!(
            replayed.to_string(),
            "the client assertion's jti \"j\" was used already"
        );
        store.use_assertion_id("other", "j", 150, 60).unwrap();
        store.use_assertion_id("c", "j", 200, 100).unwrap();
        for i in 0..MAX_ASSERTION_IDS - 2 {
            store.use_assertion_id("c", &i.to_string(), 300, 100).unwrap();
        }
        let full = store.use_assertion_id("c", "x", 300, 100).unwrap_err();
        assert!(matches!(
            full,
            StoreError::Full(LimitReached::AssertionIds { max: 4096 })
        ));
        assert_eq!(full.to_string(), "4096 client assertions are remembered, the limit");
        store.use_assertion_id("c", "x", 400, 300).unwrap();
    }

    #[test]
    fn tokens_expire_and_are_revoked_and_bounded() {
        let mut store = Store::default();
        let issued = store.issue(&grant(), Duration::from_secs(60), true).unwrap();
        let refresh = issued.refresh_token.unwrap();
        assert!(store.access(&issued.access_token).unwrap().expires_at > Instant::now());
        assert_eq!(store.expire_access(), 1);
        assert!(store.access(&issued.access_token).unwrap().expires_at <= Instant::now());
        assert!(store.refresh(&refresh).is_some());
        assert_eq!(store.tokens().len(), 2);
        assert_eq!(store.revoke_all(), 2);
        assert!(store.access(&issued.access_token).is_none() && store.refresh(&refresh).is_none());
        for _ in 0..MAX_TOKENS {
            store.issue(&grant(), Duration::from_secs(60), false).unwrap();
        }
        let full = store.issue(&grant(), Duration::from_secs(60), false).unwrap_err();
        assert!(matches!(full, StoreError::Full(LimitReached::Tokens { max: 4096 })));
        assert_eq!(
            full.to_string(),
            "the authorization server holds 4096 tokens, its limit"
        );
    }
}
