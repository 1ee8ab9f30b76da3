//! The loopback redirect listener of a login: an HTTP/1.1 listener on 127.0.0.1 (a random port, or
//! the configured one) that waits, bounded, for one request to `/callback`, answers it with a
//! small page saying whether the login worked, and closes. Other requests (a browser's favicon)
//! get a 404; connections that send nothing are dropped after a few seconds; at most
//! [`MAX_CONNECTIONS`] are read at once.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::OAuthError;

/// The path of the redirect URI.
pub(crate) const CALLBACK_PATH: &str = "/callback";
/// The most bytes of a request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long one connection may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections read at once.
pub(crate) const MAX_CONNECTIONS: usize = 16;

/// The query parameters of the authorization response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallbackParams {
    pairs: Vec<(String, String)>,
}

impl CallbackParams {
    pub(crate) fn from_query(query: &str) -> Self {
        CallbackParams {
            pairs: url::form_urlencoded::parse(query.as_bytes()).into_owned().collect(),
        }
    }

    /// The parameter `name`; a parameter given twice is an error (RFC 6749 §3.1).
    pub(crate) fn get(&self, name: &str) -> Result<Option<&str>, OAuthError> {
        let mut values = self.pairs.iter().filter(|(key, _)| key == name);
        let first = values.next().map(|(_, value)| value.as_str());
        if values.next().is_some() {
            return Err(OAuthError::AuthorizationResponse {
                reason: format!("the parameter {name:?} appears more than once"),
            });
        }
        Ok(first)
    }
}

/// A bound listener, not yet answering.
#[derive(Debug)]
pub(crate) struct CallbackListener {
    listener: TcpListener,
    redirect_uri: String,
}

impl CallbackListener {
    /// Binds 127.0.0.1 on `port` (random when `None`).
    pub(crate) async fn bind(port: Option<u16>) -> Result<Self, OAuthError> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port.unwrap_or(0)));
        let listener = TcpListener::bind(address).await.map_err(|e| OAuthError::Listener {
            reason: format!("cannot listen on {address}: {e}"),
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| OAuthError::Listener {
                reason: format!("cannot read the listening address: {e}"),
            })?
            .port();
        Ok(CallbackListener {
            listener,
            redirect_uri: format!("http://localhost:{port}{CALLBACK_PATH}"),
        })
    }

    /// `http://localhost:<port>/callback`.
    pub(crate) fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits up to `timeout` for the request to the callback path, answers it with the verdict of
    /// `check` (a success page, or an error page with the reason) and closes; returns the
    /// parameters when `check` accepted them, else its error.
    pub(crate) async fn receive(
        self,
        timeout: Duration,
        check: impl Fn(&CallbackParams) -> Result<(), OAuthError>,
    ) -> Result<CallbackParams, OAuthError> {
        let deadline = Instant::now() + timeout;
        let mut reading: JoinSet<Option<(TcpStream, String)>> = JoinSet::new();
        loop {
            let accepting = reading.len() < MAX_CONNECTIONS;
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    return Err(OAuthError::LoginTimedOut { after: timeout });
                }
                accepted = self.listener.accept(), if accepting => {
                    match accepted {
                        Ok((stream, _)) => {
                            reading.spawn(read_head(stream));
                        }
                        Err(e) => tracing::debug!(error = %e, "the OAuth redirect listener could not accept a connection"),
                    }
                }
                Some(done) = reading.join_next(), if !reading.is_empty() => {
                    let Ok(Some((stream, target))) = done else { continue };
                    if let Some(params) = answer(stream, &target, &check).await {
                        return params;
                    }
                }
            }
        }
    }
}

/// Reads a request head (bounded in size and time); `None` for a connection that sent none.
async fn read_head(mut stream: TcpStream) -> Option<(TcpStream, String)> {
    let read = async {
        let mut head = Vec::with_capacity(1024);
        let mut buffer = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buffer).await.ok()?;
            if n == 0 || head.len() + n > MAX_HEAD_BYTES {
                return None;
            }
            head.extend_from_slice(&buffer[..n]);
        }
        let line = head.split(|b| *b == b'\n').next()?;
        let line = String::from_utf8_lossy(line).trim().to_owned();
        Some(line)
    };
    let line = tokio::time::timeout(HEAD_TIMEOUT, read).await.ok()??;
    Some((stream, line))
}

/// Answers one request: `None` when it was not the callback (a 404, keep waiting), else the
/// verdict on its parameters.
async fn answer(
    mut stream: TcpStream,
    request_line: &str,
    check: &impl Fn(&CallbackParams) -> Result<(), OAuthError>,
) -> Option<Result<CallbackParams, OAuthError>> {
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != CALLBACK_PATH {
        respond(
            &mut stream,
            "404 Not Found",
            "Not found",
            "This is plexus's OAuth redirect listener.",
        )
        .await;
        return None;
    }
    let params = CallbackParams::from_query(query);
    let verdict = check(&params);
    match &verdict {
        Ok(()) => {
            respond(
                &mut stream,
                "200 OK",
                "Authorized",
                "plexus received the authorization. You can close this window.",
            )
            .await;
        }
        Err(e) => respond(&mut stream, "400 Bad Request", "Authorization failed", &e.to_string()).await,
    }
    Some(verdict.map(|()| params))
}

async fn respond(stream: &mut TcpStream, status: &str, title: &str, message: &str) {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>{}</p></body></html>",
        escape_html(message)
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    };
    if let Err(e) = tokio::time::timeout(HEAD_TIMEOUT, write).await.unwrap_or(Ok(())) {
        tracing::debug!(error = %e, "the OAuth redirect listener could not answer");
    }
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_decoded_and_duplicates_refused() {
        let params = CallbackParams::from_query("code=a%2Bb&state=s+1&iss=http%3A%2F%2Fh");
        assert_eq!(params.get("code").unwrap(), Some("a+b"));
        assert_eq!(params.get("state").unwrap(), Some("s 1"));
        assert_eq!(params.get("iss").unwrap(), Some("http://h"));
        assert_eq!(params.get("error").unwrap(), None);
        let twice = CallbackParams::from_query("code=a&code=b");
        assert_eq!(
            twice.get("code").unwrap_err().to_string(),
            "the authorization response was refused: the parameter \"code\" appears more than once"
        );
        assert_eq!(escape_html("<a href=\"x\">&"), "&lt;a href=&quot;x&quot;&gt;&amp;");
    }

    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn answers_the_callback_once_after_ignoring_other_requests() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port: u16 = listener
            .redirect_uri()
            .trim_start_matches("http://localhost:")
            .trim_end_matches(CALLBACK_PATH)
            .parse()
            .unwrap();
        let waiting = tokio::spawn(
            listener.receive(Duration::from_secs(60), |params| match params.get("state")? {
                Some("good") => Ok(()),
                _ => Err(OAuthError::AuthorizationResponse {
                    reason: "<bad> state".to_owned(),
                }),
            }),
        );
        // A silent connection does not hold the listener up.
        let _silent = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let favicon = get(port, "/favicon.ico").await;
        assert!(favicon.starts_with("HTTP/1.1 404 Not Found\r\n"), "{favicon}");
        let answer = get(port, "/callback?code=c&state=good").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        let params = waiting.await.unwrap().unwrap();
        assert_eq!(params.get("code").unwrap(), Some("c"));
        // Closed after the one answer.
        assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
    }

    #[tokio::test]
    async fn a_refused_response_gets_an_error_page_and_the_reason() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port: u16 = listener.redirect_uri()[17..listener.redirect_uri().len() - CALLBACK_PATH.len()]
            .parse()
            .unwrap();
        let waiting = tokio::spawn(listener.receive(Duration::from_secs(60), |_| {
            Err(OAuthError::AuthorizationResponse {
                reason: "<bad> state".to_owned(),
            })
        }));
        let answer = get(port, "/callback?state=evil").await;
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{answer}");
        assert!(answer.contains("&lt;bad&gt; state"), "{answer}");
        assert_eq!(
            waiting.await.unwrap().unwrap_err().to_string(),
            "the authorization response was refused: <bad> state"
        );
    }

    #[tokio::test]
    async fn the_wait_is_bounded() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let err = listener
            .receive(Duration::from_millis(50), |_| Ok(()))
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::LoginTimedOut { .. }), "{err}");
    }
}
