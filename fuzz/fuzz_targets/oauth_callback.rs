//! Fuzzes the OAuth login's redirect listener: the request a browser (or anyone on the machine)
//! sends to `http://127.0.0.1:<port>/callback?code=…&state=…&iss=…`, as the listener parses its
//! target and the login judges it (RFC 9207 `iss`, then `state`, then the server's `error` or a
//! code).
//!
//! Input layout: the first byte's low bit says whether the authorization server advertised
//! `iss`, its next bit picks `GET` or `POST`; the rest is the request target. Checked: nothing
//! panics; only a `GET` of `/callback` is judged; a response is accepted exactly when it carries
//! this login's `state` and one non-empty `code`, no `error`, and the issuer's `iss` (required when
//! advertised), each parameter once; the server's own error ends the login only with this
//! login's `state` and `iss`, its texts bounded; everything else is refused with a reason that
//! renders, bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_auth::OAuthError;
use plexus_auth::oauth::MAX_SERVER_TEXT_CHARS;
use plexus_auth::oauth::fuzzing::{Judged, judge_callback};

const ISSUER: &str = "http://127.0.0.1:9/as";
const STATE: &str = "st-1";

fuzz_target!(|data: &[u8]| {
    let Some((&flags, target)) = data.split_first() else {
        return;
    };
    let iss_required = flags & 1 == 1;
    let method = if flags & 2 == 0 { "GET" } else { "POST" };
    let Some(callback) = judge_callback(method, target, ISSUER, STATE, iss_required) else {
        return;
    };
    assert_eq!(method, "GET");
    let values = |name: &str| -> Vec<&str> {
        callback
            .pairs
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .collect()
    };
    let once = |name: &str| match values(name).as_slice() {
        [value] => Some(*value),
        _ => None,
    };
    let at_most_once = |name: &str| values(name).len() <= 1;
    let iss_ok = match values("iss").as_slice() {
        [] => !iss_required,
        [iss] => *iss == ISSUER,
        _ => false,
    };
    let ours = iss_ok && once("state") == Some(STATE);
    match &callback.judged {
        Judged::Accept => {
            assert!(ours, "{:?}", callback.pairs);
            assert!(values("error").is_empty(), "{:?}", callback.pairs);
            assert!(
                once("code").is_some_and(|code| !code.is_empty()),
                "{:?}",
                callback.pairs
            );
        }
        Judged::End(OAuthError::AuthorizationDenied {
            issuer,
            error,
            description,
            uri,
        }) => {
            assert!(ours, "{:?}", callback.pairs);
            assert_eq!(issuer, ISSUER);
            assert!(at_most_once("error") && at_most_once("error_description") && at_most_once("error_uri"));
            for text in [Some(error), description.as_ref(), uri.as_ref()].into_iter().flatten() {
                assert!(
                    text.chars().count() <= MAX_SERVER_TEXT_CHARS,
                    "{} chars",
                    text.chars().count()
                );
            }
        }
        Judged::End(other) => panic!("the login ended with an error that is not the server's: {other}"),
        Judged::Refuse(reason) => {
            let accepted = ours && values("error").is_empty() && once("code").is_some_and(|code| !code.is_empty());
            let denied = ours && once("error").is_some();
            let repeated = ["iss", "state", "error", "error_description", "error_uri", "code"]
                .iter()
                .any(|name| !at_most_once(name));
            assert!(
                repeated || !(accepted || denied),
                "{:?} refused: {reason}",
                callback.pairs
            );
            let shown = reason.to_string();
            assert!(shown.chars().count() < 2 * MAX_SERVER_TEXT_CHARS + 200, "{shown}");
        }
    }
});
