//! The refresh of a provider's access token, safe across processes: the token store's lock is
//! held from reading the refresh token to saving the new tokens, so that two processes (or two
//! providers of one process) sharing a store never spend one rotating refresh token twice.
//!
//! Under the lock, the store is read again first. When it holds other tokens than the provider
//! (another process refreshed meanwhile) that do not expire within [`REFRESH_MARGIN`], they are
//! used and the token endpoint is not called; otherwise the refresh uses the newest refresh token
//! (the store's, else the provider's own). A refresh token the authorization server rejects
//! (`invalid_grant`, or another 400 or 401 of its token endpoint) is never tried again: the tokens
//! are removed from the store while the lock is still held, and the error
//! ([`OAuthError::RefreshRejected`]) says which issuer rejected it.

use std::sync::Arc;

use plexus_transport::error_chain;

use super::{OAuthProvider, REFRESH_MARGIN, State};
use crate::oauth::OAuthError;
use crate::oauth::grant::{Grant, TokenRequest, TokenResponse, request_token};
use crate::oauth::resource::resource_matches;
use crate::store::{LockedStore, Secret, StoredCredential, StoredTokens, TokenStoreError};

/// Whether the token endpoint's refusal means the refresh token itself is dead.
fn is_rejection(error: &OAuthError) -> bool {
    matches!(error, OAuthError::TokenRefused { status: 400 | 401, .. })
}

impl OAuthProvider {
    /// Refreshes the current credential's access token (see the [module docs](self)); nothing to
    /// do without tokens or a refresh token.
    pub(super) async fn refresh(&self, state: &mut State) -> Result<(), OAuthError> {
        let Some((issuer, held)) = state.current.clone() else {
            return Ok(());
        };
        let Some(held_access) = held
            .tokens
            .as_ref()
            .filter(|t| t.refresh_token.is_some())
            .map(|t| t.access_token.clone())
        else {
            return Ok(());
        };
        let locked = self.lock_store().await?;
        let stored = match &locked {
            Some(locked) => locked
                .get(&self.server, &issuer)
                .await?
                .filter(|c| c.tokens.is_some() && resource_matches(&c.resource, &self.server_url)),
            None => None,
        };
        let credential = match stored {
            Some(stored) => {
                let renewed_elsewhere = stored
                    .tokens
                    .as_ref()
                    .is_some_and(|t| t.access_token != held_access && !t.expires_within(REFRESH_MARGIN));
                if renewed_elsewhere {
                    tracing::debug!(server = %self.server, "the OAuth tokens were refreshed by another process; using them");
                    state.current = Some((issuer, stored));
                    return Ok(());
                }
                stored
            }
            None => held,
        };
        let Some(refresh_token) = credential.tokens.as_ref().and_then(|t| t.refresh_token.clone()) else {
            // Tokens of another process without a refresh token: nothing to refresh them with.
            state.current = Some((issuer, credential));
            return Ok(());
        };
        let outcome = self.request_refresh(&issuer, &credential, refresh_token).await;
        let mut credential = credential;
        let result = match outcome {
            Ok(tokens) => {
                credential.tokens = Some(tokens);
                Ok(())
            }
            Err(e) if is_rejection(&e) => {
                // Never tried again: neither by this provider nor by any other process.
                credential.tokens = None;
                let rejected = Arc::new(e);
                state.refresh_rejected = Some((issuer.clone(), rejected.clone()));
                Err(self.refresh_rejected(&issuer, rejected))
            }
            // A server error or a network failure keeps the refresh token for the next try.
            Err(e) => {
                state.current = Some((issuer, credential));
                return Err(e);
            }
        };
        if let Some(locked) = &locked
            && let Err(e) = locked.put(&self.server, &issuer, credential.clone()).await
        {
            tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth tokens could not be saved");
        }
        state.current = Some((issuer, credential));
        result
    }

    /// The error of a refresh token that `issuer` rejected with `source`.
    pub(super) fn refresh_rejected(&self, issuer: &str, source: Arc<OAuthError>) -> OAuthError {
        OAuthError::RefreshRejected {
            issuer: issuer.to_owned(),
            server: self.server.clone(),
            source,
        }
    }

    /// One refresh request with `credential`'s refresh token; the new tokens (bound to the same
    /// DPoP key as the old ones, and keeping the old refresh token when no new one came).
    async fn request_refresh(
        &self,
        issuer: &str,
        credential: &StoredCredential,
        refresh_token: Secret,
    ) -> Result<StoredTokens, OAuthError> {
        // Bound tokens are refreshed with a proof of the same key.
        let binding = match credential.tokens.as_ref().and_then(|t| t.dpop_key.as_ref()) {
            Some(encoded) => Some((encoded.clone(), self.dpop.key_of(encoded)?)),
            None => None,
        };
        let client = self.client_credentials(credential);
        let response: TokenResponse = request_token(
            &self.http,
            TokenRequest {
                endpoint: &credential.token_endpoint,
                client: &client,
                grant: Grant::RefreshToken {
                    refresh_token: &refresh_token,
                },
                resource: Some(&credential.resource),
                scope: None,
                issuer,
                dpop: binding.as_ref().map(|(_, key)| self.binding(key)),
            },
        )
        .await?;
        Ok(Self::bound(response.into_tokens(Some(refresh_token)), binding))
    }

    /// The store's lock for a change that must not race another process's. A store that is a
    /// symbolic link, or whose lock is held too long, fails; one whose lock file cannot be made
    /// at all (a read-only home) is logged and the change goes on in memory, as when the store
    /// cannot be written.
    pub(super) async fn lock_store(&self) -> Result<Option<LockedStore>, OAuthError> {
        match self.store.lock().await {
            Ok(locked) => Ok(Some(locked)),
            Err(e @ (TokenStoreError::Symlink { .. } | TokenStoreError::LockTimeout { .. })) => Err(e.into()),
            Err(e) => {
                tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth token store cannot be locked; going on without it");
                Ok(None)
            }
        }
    }
}
