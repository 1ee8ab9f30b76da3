//! Redirects, followed within the origin only: the configured headers and credentials of a
//! server must never reach another one.

use http::header::LOCATION;
use plexus_transport::TransportError;
use url::Url;

use super::{HttpClient, HttpError, Request, Response, Target};
use crate::redact::redact_url;

/// Why following redirects failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectError {
    /// An exchange failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A `Location` that is not a URL.
    #[error("was redirected to {location:?}, which is not a URL")]
    NotAUrl {
        /// The location, cut to 200 characters.
        location: String,
        /// The URL parser's error.
        #[source]
        source: url::ParseError,
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

/// A request whose redirect could not be followed: the cause of the transport error that
/// [`RedirectError::into_transport_error`] makes.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct Redirected {
    /// The request ("GET https://…").
    pub what: String,
    /// What the redirect did.
    #[source]
    pub source: RedirectError,
}

impl RedirectError {
    /// The transport error of request `what` ("GET https://…") to the server `target` (as
    /// errors name it): a failed exchange is an I/O error, a redirect to another origin a
    /// connect error (the configured URL is wrong), another bad redirect a protocol error.
    pub fn into_transport_error(self, what: &str, target: &str) -> TransportError {
        match self {
            RedirectError::Http(e) => TransportError::from_io(what, e.into_io()),
            e @ RedirectError::CrossOrigin { .. } => TransportError::connect(
                target,
                Redirected {
                    what: what.to_owned(),
                    source: e,
                },
            ),
            e => TransportError::protocol(Redirected {
                what: what.to_owned(),
                source: e,
            }),
        }
    }
}

/// Follows `response` (to a request to `first`) if it is a redirect (a 3xx with a `Location`;
/// see [`Response::is_redirect`]), and the redirects after it: at most `max`, within `first`'s
/// origin, each sent again with the request that `build` makes (the same method, headers and
/// body). Gives the final response (a 3xx without a `Location` included) and the target it came
/// from when that is not `first` (`None`: no redirect was followed).
///
/// The caller sends the first request itself ([`HttpClient::send`]), so that the common case,
/// no redirect, costs nothing more.
pub async fn follow_redirects(
    client: &HttpClient,
    first: &Target,
    mut response: Response,
    max: usize,
    mut build: impl FnMut() -> Request,
) -> Result<(Option<Target>, Response), RedirectError> {
    if !response.is_redirect() {
        return Ok((None, response));
    }
    let mut target = first.clone();
    for _ in 0..max {
        let status = response.status.as_u16();
        let Some(location) = response.header_str(LOCATION) else {
            return Ok((Some(target), response));
        };
        let next = target.url.join(location).map_err(|source| RedirectError::NotAUrl {
            location: location.chars().take(crate::endpoint::MAX_QUOTED).collect(),
            source,
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
        if !response.is_redirect() {
            return Ok((Some(target), response));
        }
    }
    Err(RedirectError::TooMany(max))
}
