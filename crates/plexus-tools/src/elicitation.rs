//! URL elicitation required (`-32042`, since 2025-11-25): a server that answers `tools/call` with
//! it needs the user at one or more URLs first (a sign-in, a payment), out of band. Each URL is
//! handed to the host's [`UrlElicitationHandler`]; once all of them completed — the server's
//! `notifications/elicitation/complete` for it, or the handler's `Accept` — the call is sent
//! again, at most [`MAX_URL_ELICITATION_ROUNDS`] times. The tool did not run when the server
//! answered `-32042`, so sending it again never runs it twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use plexus_client::ServerNotification;
use plexus_jsonrpc::ErrorObject;
use plexus_protocol::{ElicitAction, ElicitRequestParams, ElicitRequestUrlParams, UrlElicitationRequiredErrorData};
use tokio::sync::broadcast::{self, error::RecvError};

/// How many times a call is sent again after URL elicitations (the spec leaves it to the client).
pub const MAX_URL_ELICITATION_ROUNDS: usize = 3;
/// The most URL elicitations one `-32042` may ask for.
pub const MAX_ELICITATIONS_PER_ROUND: usize = 8;
/// How long one URL elicitation may take (10 minutes: a person signs in somewhere).
pub const DEFAULT_URL_ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// Sends the user to a URL a server asked for, and says when they are done.
///
/// The URL comes from the server: check it before opening it (`https`, or a loopback `http`
/// during development), show its host, and never follow it without the user's consent. The
/// message and URL may hold control characters; strip them before they reach a terminal.
#[async_trait::async_trait]
pub trait UrlElicitationHandler: Send + Sync + 'static {
    /// Shows `elicitation` (from the server named `server`) to the user and answers `Accept`
    /// when they say they finished, `Decline` when they refuse, `Cancel` when they dismiss it.
    /// The future is dropped when the server reports the elicitation complete first.
    async fn open(&self, server: &str, elicitation: &ElicitRequestUrlParams) -> ElicitAction;

    /// [`open`](Self::open) for the call the host tagged `tag` ([`CallOptions::tag`]): a host
    /// that calls for several users (a gateway) shows the URL to the one whose call got it. By
    /// default, `open`.
    ///
    /// [`CallOptions::tag`]: crate::CallOptions::tag
    async fn open_for_call(
        &self,
        server: &str,
        elicitation: &ElicitRequestUrlParams,
        tag: Option<u64>,
    ) -> ElicitAction {
        let _ = tag;
        self.open(server, elicitation).await
    }
}

/// Why the URL elicitations a server asked for did not all complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlElicitationError {
    /// No handler was given, so nobody can be sent to the URLs.
    #[error("the server needs the user to open {}, and no handler for URL elicitations is set", urls.join(", "))]
    NoHandler {
        /// The URLs the server asked for.
        urls: Vec<String>,
    },
    /// The error's `data` is not a list of URL-mode elicitations.
    #[error("the server's URL-elicitation-required error (-32042) is malformed")]
    Malformed {
        /// What did not fit.
        #[source]
        problem: MalformedElicitation,
    },
    /// The user refused to open a URL.
    #[error("the user declined to open {url}")]
    Declined {
        /// The URL.
        url: String,
    },
    /// The user dismissed a URL.
    #[error("the user dismissed {url}")]
    Cancelled {
        /// The URL.
        url: String,
    },
    /// Neither the user nor the server said a URL elicitation was done in time.
    #[error("{url} was not completed within {} s", after.as_secs())]
    TimedOut {
        /// The URL.
        url: String,
        /// The time waited.
        after: Duration,
    },
    /// The server still answered `-32042` after [`MAX_URL_ELICITATION_ROUNDS`] rounds.
    #[error("the server still required URL elicitation after {MAX_URL_ELICITATION_ROUNDS} rounds")]
    TooManyRounds,
}

/// What is wrong with the `data` of a `-32042` error (an [`UrlElicitationError::Malformed`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MalformedElicitation {
    /// The error has no `data`.
    #[error("it has no data")]
    NoData,
    /// The `data` is not the shape the spec gives it.
    #[error("its data does not parse")]
    Unparsable(#[source] Arc<serde_json::Error>),
    /// The list of elicitations is empty.
    #[error("it asks for no elicitation")]
    Empty,
    /// The list has more elicitations than one round may have.
    #[error("it asks for {count} elicitations, more than the {MAX_ELICITATIONS_PER_ROUND} allowed")]
    TooMany {
        /// How many it asks for.
        count: usize,
    },
    /// An elicitation is in form mode.
    #[error("it holds a form-mode elicitation")]
    Form,
    /// An elicitation is of a mode this client does not know.
    #[error("it holds an elicitation of an unknown mode")]
    UnknownMode,
}

/// Equal when of the same kind and text (serde_json's error has no equality of its own).
impl PartialEq for MalformedElicitation {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Unparsable(a), Self::Unparsable(b)) => a.to_string() == b.to_string(),
            _ => std::mem::discriminant(self) == std::mem::discriminant(other) && self.to_string() == other.to_string(),
        }
    }
}

impl Eq for MalformedElicitation {}

/// The URL elicitations of a `-32042` error.
pub(crate) fn requested(error: &ErrorObject) -> Result<Vec<ElicitRequestUrlParams>, UrlElicitationError> {
    let malformed = |problem: MalformedElicitation| UrlElicitationError::Malformed { problem };
    let data = error
        .data
        .as_deref()
        .ok_or_else(|| malformed(MalformedElicitation::NoData))?;
    let data: UrlElicitationRequiredErrorData =
        serde_json::from_str(data.get()).map_err(|e| malformed(MalformedElicitation::Unparsable(Arc::new(e))))?;
    if data.elicitations.is_empty() {
        return Err(malformed(MalformedElicitation::Empty));
    }
    if data.elicitations.len() > MAX_ELICITATIONS_PER_ROUND {
        return Err(malformed(MalformedElicitation::TooMany {
            count: data.elicitations.len(),
        }));
    }
    data.elicitations
        .into_iter()
        .map(|elicitation| match elicitation {
            ElicitRequestParams::Url(url) => Ok(url),
            ElicitRequestParams::Form(_) => Err(malformed(MalformedElicitation::Form)),
            ElicitRequestParams::Unknown(_) => Err(malformed(MalformedElicitation::UnknownMode)),
        })
        .collect()
}

/// Hands each of `elicitations` to `handler` and waits until it completed: the handler's
/// `Accept`, or the server's `notifications/elicitation/complete` on `completions`.
pub(crate) async fn complete(
    handler: &dyn UrlElicitationHandler,
    server: &str,
    elicitations: &[ElicitRequestUrlParams],
    completions: &mut broadcast::Receiver<ServerNotification>,
    timeout: Duration,
    tag: Option<u64>,
) -> Result<(), UrlElicitationError> {
    // Completions that arrive for an elicitation not yet shown are remembered.
    let mut completed: HashSet<String> = HashSet::new();
    let mut listening = true;
    for elicitation in elicitations {
        let id = elicitation.elicitation_id.as_deref();
        if id.is_some_and(|id| completed.contains(id)) {
            continue;
        }
        let url = || elicitation.url.clone();
        let answer = handler.open_for_call(server, elicitation, tag);
        tokio::pin!(answer);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                // The handler first: the user is always shown the URL, even when its completion
                // is already waiting.
                biased;
                action = &mut answer => match action {
                    ElicitAction::Accept => break,
                    ElicitAction::Decline => return Err(UrlElicitationError::Declined { url: url() }),
                    ElicitAction::Cancel => return Err(UrlElicitationError::Cancelled { url: url() }),
                },
                notification = completions.recv(), if listening => match notification {
                    Ok(ServerNotification::ElicitationComplete(done)) => {
                        if Some(done.elicitation_id.as_str()) == id {
                            break;
                        }
                        // Only ids of this round are kept: the set stays bounded.
                        if elicitations.iter().any(|e| e.elicitation_id.as_ref() == Some(&done.elicitation_id)) {
                            completed.insert(done.elicitation_id);
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    // The session ended: only the user can say it is done now.
                    Err(RecvError::Closed) => listening = false,
                },
                () = &mut deadline => return Err(UrlElicitationError::TimedOut { url: url(), after: timeout }),
            }
        }
    }
    Ok(())
}
