//! Redirects, followed within the origin only: the configured headers and credentials of a
//! server must never reach another one.

use http::header::LOCATION;
use url::Url;

use super::{HttpClient, HttpError, Request, Response, Target};
use crate::redact::redact_url;

/// Why following redirects failed.
#[derive(Debug, thiserror::Error)]
pub enum RedirectError {
    /// An exchange failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A `Location` that is not a URL.
    #[error("was redirected to {location:?}, which is not a URL: {reason}")]
    NotAUrl {
        /// The location, cut to 200 characters.
        location: String,
        /// Why.
        reason: String,
    },
    /// A redirect to another origin, which is not followed.
    #[error(
        "was redirected (HTTP {status}) to {}, another origin; redirects are followed only within the same origin, so \
         that credentials and custom headers never reach another server (configure the new URL if it is right)",
        redact_url(to.as_str())
    )]
    CrossOrigin {
        /// The redirect's status.
        status: u16,
        /// Where it pointed.
        to: Url,
    },
    /// Too many redirects in a row.
    #[error("was redirected more than {0} times")]
    TooMany(usize),
}

/// Sends the request that `build` makes, following at most `max` redirects (3xx with a
/// `Location`) within `first`'s origin, with the same method, headers and body. Gives the final
/// response (a 3xx without a `Location` included) and the target it came from when that is not
/// `first` (`None`: no redirect was followed).
pub async fn follow_redirects(
    client: &HttpClient,
    first: &Target,
    max: usize,
    mut build: impl FnMut() -> Request,
) -> Result<(Option<Target>, Response), RedirectError> {
    let response = client.send(first, build()).await?;
    if !is_redirect(&response) {
        return Ok((None, response));
    }
    // Redirects are rare: their loop is boxed, so that the future of every request stays small.
    Box::pin(follow(client, first.clone(), response, max, build)).await
}

/// Whether a response is a redirect to follow: a 3xx with a `Location`.
fn is_redirect(response: &Response) -> bool {
    response.status.is_redirection() && response.headers.contains_key(LOCATION)
}

/// Follows the redirect `response` from `target` and those after it.
async fn follow(
    client: &HttpClient,
    mut target: Target,
    mut response: Response,
    max: usize,
    mut build: impl FnMut() -> Request,
) -> Result<(Option<Target>, Response), RedirectError> {
    for _ in 0..max {
        let status = response.status.as_u16();
        let Some(location) = response.header_str(LOCATION) else {
            return Ok((Some(target), response));
        };
        let next = target.url.join(location).map_err(|e| RedirectError::NotAUrl {
            location: location.chars().take(crate::endpoint::MAX_QUOTED).collect(),
            reason: e.to_string(),
        })?;
        if !crate::endpoint::same_origin(&next, &target.url) {
            return Err(RedirectError::CrossOrigin { status, to: next });
        }
        tracing::debug!("redirected (HTTP {status}) to {}", redact_url(next.as_str()));
        // The redirect's body is not read: dropping it closes its connection unless it had
        // already ended.
        drop(response);
        target = client.target(&next)?;
        response = client.send(&target, build()).await?;
        if !is_redirect(&response) {
            return Ok((Some(target), response));
        }
    }
    Err(RedirectError::TooMany(max))
}
