//! A login's redirect listener under attack, against the test server's authorization server
//! (in-process, on 127.0.0.1): forged callbacks before the real redirect are refused with an
//! error page and the login still completes; a crowd of silent connections opened first does not
//! keep the real redirect out; the redirect URI is the loopback IP literal.

mod oauth_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oauth_support::{guarded, settings, start};
use plexus_auth::oauth::{AuthorizationPrompt, OAuthProvider, RedirectFollower, UserAgent, UserAgentError};
use plexus_testserver::Endpoint;
use plexus_transport::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

/// The port of a redirect URI, which must be `http://127.0.0.1:<port>/callback`.
fn loopback_port(redirect_uri: &str) -> u16 {
    redirect_uri
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/callback"))
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback IP redirect URI: {redirect_uri}"))
}

/// GETs `target` from 127.0.0.1:`port`; the status line of the answer.
async fn status_of(port: u16, target: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

/// A user agent that first delivers forged callbacks to the listener (recording the status line
/// each got), then follows the real redirect.
struct Forger {
    issuer: String,
    follower: RedirectFollower,
    answers: Mutex<Vec<(&'static str, String)>>,
}

impl UserAgent for Forger {
    fn open<'a>(&'a self, prompt: &'a AuthorizationPrompt) -> BoxFuture<'a, Result<(), UserAgentError>> {
        Box::pin(async move {
            let port = loopback_port(&prompt.redirect_uri);
            let url = Url::parse(&prompt.url).unwrap();
            let state = url
                .query_pairs()
                .find(|(name, _)| name == "state")
                .map(|(_, value)| value.into_owned())
                .unwrap();
            let query = |pairs: &[(&str, &str)]| {
                url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(pairs)
                    .finish()
            };
            let iss = self.issuer.as_str();
            let forgeries: [(&'static str, String); 4] = [
                (
                    "wrong state",
                    query(&[("code", "forged"), ("state", "forged"), ("iss", iss)]),
                ),
                (
                    "a denial with the wrong state",
                    query(&[("error", "access_denied"), ("state", "forged"), ("iss", iss)]),
                ),
                ("missing code", query(&[("state", &state), ("iss", iss)])),
                (
                    "wrong iss",
                    query(&[("code", "forged"), ("state", &state), ("iss", "https://evil.example")]),
                ),
            ];
            for (label, query) in forgeries {
                let status = status_of(port, &format!("/callback?{query}")).await;
                self.answers.lock().unwrap().push((label, status));
            }
            self.follower.open(prompt).await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_callbacks_before_the_real_redirect_are_refused_and_the_login_completes() {
    guarded(async {
        let f = start(&[]).await;
        let forger = Arc::new(Forger {
            issuer: f.oauth.issuer(),
            follower: RedirectFollower::new(Duration::from_secs(30)).unwrap(),
            answers: Mutex::default(),
        });
        let provider = OAuthProvider::new("docs", &f.url(), settings(), f.store.clone())
            .unwrap()
            .with_user_agent(Arc::clone(&forger) as Arc<dyn UserAgent>);
        let logged_in = provider.login().await.unwrap();
        assert_eq!(logged_in.issuer, f.oauth.issuer());

        let answers = forger.answers.lock().unwrap().clone();
        let expected: Vec<(&str, String)> = [
            "wrong state",
            "a denial with the wrong state",
            "missing code",
            "wrong iss",
        ]
        .into_iter()
        .map(|label| (label, "HTTP/1.1 400 Bad Request".to_owned()))
        .collect();
        assert_eq!(answers, expected);
        // Only the real code was exchanged.
        let tokens = f.requests_to(Endpoint::Token);
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].status, 200);
        assert_ne!(tokens[0].params["code"], "forged");
        assert!(
            f.store
                .get("docs", &f.oauth.issuer())
                .await
                .unwrap()
                .unwrap()
                .tokens
                .is_some()
        );
        f.server.shutdown().await;
    })
    .await;
}

/// A user agent that opens `count` silent connections to the listener (kept open), then follows
/// the real redirect.
struct Crowd {
    count: usize,
    follower: RedirectFollower,
    silent: Mutex<Vec<TcpStream>>,
    redirect_uri: Mutex<Option<String>>,
}

impl UserAgent for Crowd {
    fn open<'a>(&'a self, prompt: &'a AuthorizationPrompt) -> BoxFuture<'a, Result<(), UserAgentError>> {
        Box::pin(async move {
            *self.redirect_uri.lock().unwrap() = Some(prompt.redirect_uri.clone());
            let port = loopback_port(&prompt.redirect_uri);
            for _ in 0..self.count {
                let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                self.silent.lock().unwrap().push(stream);
            }
            self.follower.open(prompt).await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_silent_connections_do_not_keep_the_real_redirect_out() {
    guarded(async {
        let f = start(&[]).await;
        let crowd = Arc::new(Crowd {
            count: 100,
            follower: RedirectFollower::new(Duration::from_secs(30)).unwrap(),
            silent: Mutex::default(),
            redirect_uri: Mutex::default(),
        });
        let provider = OAuthProvider::new("docs", &f.url(), settings(), f.store.clone())
            .unwrap()
            .with_user_agent(Arc::clone(&crowd) as Arc<dyn UserAgent>);
        let started = Instant::now();
        // The login may wait 30 s; 100 silent connections once held it up for about a minute.
        let logged_in = provider.login().await;
        let elapsed = started.elapsed();
        assert_eq!(logged_in.unwrap().issuer, f.oauth.issuer());
        assert!(elapsed < Duration::from_secs(8), "the login took {elapsed:?}");
        assert_eq!(
            crowd.silent.lock().unwrap().len(),
            100,
            "every silent connection was made"
        );

        // The redirect URI the authorization server got is the loopback IP literal.
        let redirect_uri = crowd.redirect_uri.lock().unwrap().clone().unwrap();
        assert!(redirect_uri.starts_with("http://127.0.0.1:"), "{redirect_uri}");
        let authorize = &f.requests_to(Endpoint::Authorize)[0];
        assert_eq!(authorize.params["redirect_uri"], redirect_uri);
        assert_eq!(authorize.status, 302);
        f.server.shutdown().await;
    })
    .await;
}
