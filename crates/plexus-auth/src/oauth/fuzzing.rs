//! The login's judgement of a request to its redirect listener, for the cargo-fuzz targets in
//! `fuzz/` (compiled only under `cfg(fuzzing)`, which cargo-fuzz sets): the same functions the
//! listener and the login use, with their crate-private types turned into plain values.

use super::listener::Verdict;
use super::listener::callback_params;
use super::login::ExpectedResponse;
use super::{OAuthError, ResponseRefusal};

/// What the login made of a request to the callback path.
#[derive(Debug)]
pub enum Judged {
    /// The authorization response with a code: the login goes on with it.
    Accept,
    /// The authorization server's own error response: the login ends with it.
    End(OAuthError),
    /// Not this login's response: refused, and the listener keeps waiting.
    Refuse(ResponseRefusal),
}

/// A request to the callback path: its decoded query parameters, in order, and the verdict.
#[derive(Debug)]
pub struct Callback {
    /// Every query parameter, decoded.
    pub pairs: Vec<(String, String)>,
    /// What the login made of it.
    pub judged: Judged,
}

/// The request `method` to the request target `target` (as bytes of the request line), judged
/// by a login that sent `state` to `issuer` (which advertised `iss` when `iss_required`);
/// `None` when the target is not a valid URI or the request is not a `GET` of the callback path.
pub fn judge_callback(method: &str, target: &[u8], issuer: &str, state: &str, iss_required: bool) -> Option<Callback> {
    let method = hyper::Method::from_bytes(method.as_bytes()).ok()?;
    let target = hyper::Uri::try_from(target).ok()?;
    let params = callback_params(&method, &target)?;
    let expected = ExpectedResponse {
        issuer: issuer.to_owned(),
        iss_required,
        state: state.to_owned(),
    };
    let judged = match expected.check(&params) {
        Verdict::Accept => Judged::Accept,
        Verdict::End(error) => Judged::End(error),
        Verdict::Refuse(reason) => Judged::Refuse(reason),
    };
    Some(Callback {
        pairs: params.pairs().to_vec(),
        judged,
    })
}
