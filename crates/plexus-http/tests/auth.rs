//! Auth against a scripted server: the provider's headers on every request, one retry after a
//! challenge, the provider's decisions, and a 401 without a provider.

mod common;

use std::sync::{Arc, Mutex};

use common::mcp::{SESSION, handshake, initialize, request, script, transport};
use common::{Reply, TestServer, guard};
use plexus_net::RemoteConfig as _;
use plexus_net::StaticHeaders;
use plexus_net::challenge::AuthChallenge;
use plexus_transport::{
    AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, Rejection, TransportError, TransportSender,
};

/// A provider whose token changes on every challenge, and whose decision is scripted.
struct Rotating {
    state: Mutex<RotatingState>,
    decision: AuthDecision,
}

struct RotatingState {
    generation: u32,
    challenges: Vec<AuthChallenge>,
    header_calls: u32,
}

impl Rotating {
    fn new(decision: AuthDecision) -> Arc<Rotating> {
        Arc::new(Rotating {
            state: Mutex::new(RotatingState {
                generation: 0,
                challenges: Vec::new(),
                header_calls: 0,
            }),
            decision,
        })
    }

    fn challenges(&self) -> Vec<AuthChallenge> {
        self.state.lock().unwrap().challenges.clone()
    }
}

impl AuthProvider for Rotating {
    fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let mut state = self.state.lock().unwrap();
        state.header_calls += 1;
        let token = format!("Bearer token-{}", state.generation);
        Box::pin(async move { Ok(vec![("Authorization".to_owned(), token)]) })
    }

    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        let challenge = &AuthChallenge::of(rejection);
        let mut state = self.state.lock().unwrap();
        state.challenges.push(challenge.clone());
        state.generation += 1;
        let decision = self.decision.clone();
        Box::pin(async move { decision })
    }

    /// Rotating tokens are what a login renews (OAuth's way).
    fn login_fixes_rejection(&self) -> bool {
        true
    }
}

/// A provider that cannot give headers.
struct Broken(AuthFailure);

impl AuthProvider for Broken {
    fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let failure = self.0.clone();
        Box::pin(async move { Err(failure) })
    }

    fn on_rejection(&self, _: &Rejection) -> BoxFuture<'_, AuthDecision> {
        Box::pin(async { AuthDecision::Retry })
    }
}

const CHALLENGE: &str = r#"Bearer realm="mcp", error="invalid_token", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#;

/// Answers 401 (with [`CHALLENGE`]) unless the request carries `Authorization: Bearer <good>`.
fn guarded(good: &'static str) -> impl Fn(&common::Recorded) -> Reply + Send + Sync + 'static {
    script(move |r| {
        (r.header("authorization") != Some(good))
            .then(|| Reply::status(401, "log in first", &[("www-authenticate", CHALLENGE)]))
    })
}

#[tokio::test]
async fn a_challenge_refreshes_the_headers_and_retries_once() {
    let server = TestServer::start(guarded("Bearer token-1")).await;
    let provider = Rotating::new(AuthDecision::Retry);
    let (sender, mut receiver, info) = transport(&server.url, |c| c.auth(provider.clone()));
    handshake(&sender, &mut receiver).await;
    common::mcp::call(&sender, request(1, "tools/list")).await;

    let challenges = provider.challenges();
    assert_eq!(challenges.len(), 1);
    assert_eq!(challenges[0].status, 401);
    assert_eq!(challenges[0].url, server.url);
    let bearer = challenges[0].bearer().unwrap();
    assert_eq!(bearer.param("error"), Some("invalid_token"));
    assert_eq!(
        bearer.param("resource_metadata"),
        Some("http://127.0.0.1/.well-known/oauth-protected-resource")
    );
    let posts: Vec<_> = server.requests().into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts[0].header("authorization"), Some("Bearer token-0"));
    assert_eq!(posts[0].rpc_method().as_deref(), Some("initialize"));
    assert_eq!(posts[1].header("authorization"), Some("Bearer token-1"));
    assert_eq!(posts[1].rpc_method().as_deref(), Some("initialize"));
    assert!(
        posts[2..]
            .iter()
            .all(|r| r.header_all("authorization") == ["Bearer token-1"])
    );
    assert_eq!(info.session_id().as_deref(), Some(SESSION));
    sender.close().await.unwrap();
}

/// The provider is asked once: a rejection of the retry is final, quoting the challenge.
#[tokio::test]
async fn a_second_challenge_is_not_retried() {
    let server = TestServer::start(guarded("Bearer never")).await;
    let provider = Rotating::new(AuthDecision::Retry);
    let (sender, _receiver, _info) = transport(&server.url, |c| c.auth(provider.clone()));
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server needs authentication: POST {} answered HTTP 401 again after the credentials were renewed \
             (WWW-Authenticate: {CHALLENGE}): log in first",
            server.url
        )
    );
    assert_eq!(provider.challenges().len(), 1);
    assert_eq!(server.requests().len(), 2, "one request and one retry");
}

#[tokio::test]
async fn the_providers_decisions_become_errors() {
    let server = TestServer::start(guarded("Bearer never")).await;
    let cases = [
        (
            AuthDecision::NeedsAuth {
                cause: std::sync::Arc::new(std::io::Error::other("run /login")),
            },
            "the server needs authentication: run /login",
        ),
        (
            AuthDecision::Fail {
                cause: std::sync::Arc::new(std::io::Error::other("the token store is locked")),
            },
            "authentication failed: the token store is locked",
        ),
    ];
    for (decision, expected) in cases {
        let provider = Rotating::new(decision);
        let (sender, _receiver, _info) = transport(&server.url, |c| c.auth(provider.clone()));
        let error = guard(sender.send(initialize(0))).await.unwrap_err();
        assert_eq!(plexus_transport::error_chain(&error), expected);
        assert!(!sender.is_closed());
    }
    // A static credential that is refused is a failure, not a login prompt.
    let (sender, _receiver, _info) = transport(&server.url, |c| {
        c.auth(Arc::new(StaticHeaders(vec![(
            "Authorization".into(),
            "Bearer static".into(),
        )])))
    });
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "authentication failed: the server rejected the configured credentials (HTTP 401)"
    );
}

#[tokio::test]
async fn without_a_provider_a_401_needs_auth_and_a_403_is_an_auth_failure() {
    let server = TestServer::start(|r: &common::Recorded| match r.rpc_id().as_i64() {
        Some(0) => Reply::status(401, "log in first", &[("www-authenticate", CHALLENGE)]),
        _ => Reply::status(403, "forbidden origin", &[]),
    })
    .await;
    let (sender, _receiver, _info) = transport(&server.url, |c| c);
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert!(matches!(error, TransportError::NeedsAuth { .. }));
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server needs authentication: POST {} answered HTTP 401 (WWW-Authenticate: {CHALLENGE}): log in first",
            server.url
        )
    );
    let error = guard(sender.send(request(1, "ping"))).await.unwrap_err();
    assert!(matches!(error, TransportError::AuthFailed { .. }));
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "authentication failed: POST {} answered HTTP 403: forbidden origin",
            server.url
        )
    );
}

#[tokio::test]
async fn a_provider_without_headers_stops_the_request_before_it_is_sent() {
    let server = TestServer::start(script(|_| None)).await;
    let cases = [
        (
            AuthFailure::NeedsAuth {
                cause: std::sync::Arc::new(std::io::Error::other("no token yet")),
            },
            "the server needs authentication: no token yet",
        ),
        (
            AuthFailure::Failed {
                cause: std::sync::Arc::new(std::io::Error::other("headersHelper exited with status 2")),
            },
            "authentication failed: headersHelper exited with status 2",
        ),
    ];
    for (failure, expected) in cases {
        let (sender, _receiver, _info) = transport(&server.url, |c| c.auth(Arc::new(Broken(failure))));
        let error = guard(sender.send(initialize(0))).await.unwrap_err();
        assert_eq!(plexus_transport::error_chain(&error), expected);
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn provider_headers_replace_configured_ones_and_go_on_every_request() {
    let server = TestServer::start(script(|_| None)).await;
    let provider = Rotating::new(AuthDecision::Retry);
    let (sender, mut receiver, _info) = transport(&server.url, |c| {
        c.header("Authorization", "Basic configured")
            .header("X-Extra", "one")
            .header("X-Extra", "two")
            .auth(provider.clone())
    });
    handshake(&sender, &mut receiver).await;
    server.wait_for_method("GET", 1).await;
    sender.close().await.unwrap();
    let requests = server.requests();
    assert!(requests.iter().any(|r| r.method == "DELETE"));
    for r in &requests {
        assert_eq!(r.header_all("authorization"), ["Bearer token-0"], "{r:?}");
        assert_eq!(r.header_all("x-extra"), ["one", "two"], "{r:?}");
    }
    assert_eq!(provider.state.lock().unwrap().header_calls as usize, requests.len());
}

#[tokio::test]
async fn a_bad_header_from_the_provider_is_an_auth_failure() {
    struct BadHeader;
    impl AuthProvider for BadHeader {
        fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
            Box::pin(async { Ok(vec![("Authorization".to_owned(), "Bearer a\nb".to_owned())]) })
        }
        fn on_rejection(&self, _: &Rejection) -> BoxFuture<'_, AuthDecision> {
            Box::pin(async { AuthDecision::Retry })
        }
    }
    let (sender, _receiver, _info) = transport("http://127.0.0.1:9/mcp", |c| c.auth(Arc::new(BadHeader)));
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "authentication failed: the auth provider gave a bad header: the value of the header \"Authorization\" \
         contains a control character (such as a line break), which HTTP does not allow"
    );
}
