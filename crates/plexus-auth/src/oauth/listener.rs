//! The loopback redirect listener of a login: an HTTP/1.1 listener (hyper's server connection)
//! on 127.0.0.1 (a random port, or
//! the configured one) whose redirect URI is `http://127.0.0.1:<port>/callback` (RFC 8252 §8.3:
//! the loopback IP literal that is bound, not `localhost`, which may resolve elsewhere).
//!
//! It waits, bounded, for this login's authorization response. Every request to `/callback` is
//! judged by the login's check ([`Verdict`]): the authorization server's response gets a success
//! page (or, for its own error response, an error page) and ends the wait; anything else
//! (a forged or stale response, one without a code) gets an error page and the listener keeps
//! waiting, counting it for the timeout's message. Other paths (a browser's favicon) get a 404.
//!
//! Everything is bounded: at most [`MAX_CONNECTIONS`] connections are served at once (when all
//! are taken, a new connection evicts the oldest one that has sent nothing, else the oldest),
//! a connection that sends no byte for [`FIRST_BYTE_TIMEOUT`] is dropped, a request head may take
//! [`HEAD_TIMEOUT`] and [`MAX_HEAD_BYTES`], an answer [`WRITE_TIMEOUT`]. Connections are served
//! on their own tasks, so that neither silent connections nor a slow reader hold up the real
//! redirect by more than a moment.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, Id, JoinSet};
use tokio::time::Instant;

use super::{ListenerProblem, OAuthError, ResponseRefusal};

/// The path of the redirect URI.
pub(crate) const CALLBACK_PATH: &str = "/callback";
/// The most bytes of a request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a new connection may stay silent before it is dropped (a browser sends its request
/// at once).
pub(crate) const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long one connection may take to send its whole request head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(3);
/// How long writing an answer may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long the listener waits after a failed accept.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

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

    /// Every parameter, decoded, in the order given.
    #[cfg(fuzzing)]
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The parameter `name`; a parameter given twice is refused (RFC 6749 §3.1), with the reason.
    pub(crate) fn get(&self, name: &str) -> Result<Option<&str>, ResponseRefusal> {
        let mut values = self.pairs.iter().filter(|(key, _)| key == name);
        let first = values.next().map(|(_, value)| value.as_str());
        if values.next().is_some() {
            return Err(ResponseRefusal::RepeatedParameter { name: name.to_owned() });
        }
        Ok(first)
    }
}

/// What the login makes of one request to the callback path.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The authorization server's response with a code: the wait is over.
    Accept,
    /// The authorization server's own answer that ends the login (an error response with this
    /// login's `state` and the right `iss`): the wait is over, with this error.
    End(OAuthError),
    /// Not this login's response (forged, stale, malformed, without a code): an error page with
    /// the reason, and the listener keeps waiting.
    Refuse(ResponseRefusal),
}

/// The login's judgement of a request to the callback path.
type Check = dyn Fn(&CallbackParams) -> Verdict + Send + Sync;

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
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| OAuthError::Listener(ListenerProblem::Bind { address, source }))?;
        let bound = listener
            .local_addr()
            .map_err(|e| OAuthError::Listener(ListenerProblem::Address(e)))?;
        Ok(CallbackListener {
            listener,
            redirect_uri: format!("http://{bound}{CALLBACK_PATH}"),
        })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub(crate) fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits up to `timeout` for a request to the callback path that `check` accepts or that
    /// ends the login, answering every request on the way (see the module documentation), and
    /// closes; returns the accepted parameters, the error that ended the login, or the timeout
    /// (with the number of refused callbacks and the last reason).
    pub(crate) async fn receive(
        self,
        timeout: Duration,
        check: impl Fn(&CallbackParams) -> Verdict + Send + Sync + 'static,
    ) -> Result<CallbackParams, OAuthError> {
        let check: Arc<Check> = Arc::new(check);
        let deadline = deadline_after(timeout);
        let mut serving: JoinSet<Served> = JoinSet::new();
        let mut slots = Slots::default();
        let mut refused = 0usize;
        let mut last_refusal = None;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    return Err(OAuthError::LoginTimedOut { after: timeout, refused, last_refusal });
                }
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        slots.make_room();
                        let spoke = Arc::new(AtomicBool::new(false));
                        let abort = serving.spawn(serve(stream, Arc::clone(&spoke), Arc::clone(&check)));
                        slots.push(abort, spoke);
                    }
                    Err(e) => {
                        // Out of file descriptors, say: not a reason to spin.
                        tracing::debug!(error = %e, "the OAuth redirect listener could not accept a connection");
                        tokio::time::sleep(ACCEPT_RETRY).await;
                    }
                },
                Some(done) = serving.join_next_with_id(), if !serving.is_empty() => {
                    let (id, served) = match done {
                        Ok(done) => done,
                        Err(e) => {
                            slots.remove(e.id());
                            continue;
                        }
                    };
                    slots.remove(id);
                    match served {
                        Served::Other => {}
                        Served::Callback(Verdict::Accept, params) => return Ok(params),
                        Served::Callback(Verdict::End(e), _) => return Err(e),
                        Served::Callback(Verdict::Refuse(reason), _) => {
                            refused += 1;
                            tracing::info!(%reason, "the OAuth redirect listener refused a callback; still waiting");
                            last_refusal = Some(reason);
                        }
                    }
                }
            }
        }
    }
}

/// `timeout` from now (a timeout too large for the clock waits for a century).
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Slots {
    slots: VecDeque<Slot>,
}

struct Slot {
    task: AbortHandle,
    /// Whether the connection has sent a byte.
    spoke: Arc<AtomicBool>,
}

impl Slots {
    /// When every slot is taken, drops the oldest connection that has sent nothing (else the
    /// oldest), so that a new connection is always served.
    fn make_room(&mut self) {
        if self.slots.len() < MAX_CONNECTIONS {
            return;
        }
        let victim = self
            .slots
            .iter()
            .position(|slot| !slot.spoke.load(Ordering::Relaxed))
            .unwrap_or(0);
        if let Some(slot) = self.slots.remove(victim) {
            slot.task.abort();
        }
    }

    fn push(&mut self, task: AbortHandle, spoke: Arc<AtomicBool>) {
        self.slots.push_back(Slot { task, spoke });
    }

    fn remove(&mut self, id: Id) {
        self.slots.retain(|slot| slot.task.id() != id);
    }
}

/// What serving one connection came to.
enum Served {
    /// Not a request to the callback path (answered 404), or no request at all.
    Other,
    /// A request to the callback path, answered according to the verdict.
    Callback(Verdict, CallbackParams),
}

/// Serves one connection with hyper: its request (one: the connection closes after the answer)
/// is answered, and what it was is said. A connection silent for [`FIRST_BYTE_TIMEOUT`] is
/// dropped; its request head may take [`HEAD_TIMEOUT`] and [`MAX_HEAD_BYTES`]; the whole
/// exchange, [`HEAD_TIMEOUT`] and [`WRITE_TIMEOUT`]. `spoke` is set at the first byte.
async fn serve(stream: TcpStream, spoke: Arc<AtomicBool>, check: Arc<Check>) -> Served {
    let mut first = [0u8; 1];
    match tokio::time::timeout(FIRST_BYTE_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(read)) if read > 0 => spoke.store(true, Ordering::Relaxed),
        _ => return Served::Other,
    }
    let served: Arc<Mutex<Option<Served>>> = Arc::default();
    let service = {
        let served = Arc::clone(&served);
        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let (response, outcome) = answer(&request, &*check);
            *served.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outcome);
            std::future::ready(Ok::<_, std::convert::Infallible>(response))
        })
    };
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(false)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    match tokio::time::timeout(HEAD_TIMEOUT + WRITE_TIMEOUT, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "the OAuth redirect listener's connection failed"),
        Err(_) => tracing::debug!("the OAuth redirect listener gave up a connection that took too long"),
    }
    served
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .unwrap_or(Served::Other)
}

/// The query parameters of a request with `method` to `target` when it is a `GET` of the
/// callback path (whatever its query); `None` for any other request.
pub(crate) fn callback_params(method: &hyper::Method, target: &hyper::Uri) -> Option<CallbackParams> {
    (method == hyper::Method::GET && target.path() == CALLBACK_PATH)
        .then(|| CallbackParams::from_query(target.query().unwrap_or_default()))
}

/// The answer to one request, and what it was.
fn answer(request: &hyper::Request<hyper::body::Incoming>, check: &Check) -> (hyper::Response<Full<Bytes>>, Served) {
    let Some(params) = callback_params(request.method(), request.uri()) else {
        let page = page(
            hyper::StatusCode::NOT_FOUND,
            "Not found",
            "This is plexus's OAuth redirect listener.",
        );
        return (page, Served::Other);
    };
    let verdict = check(&params);
    let page = match &verdict {
        Verdict::Accept => page(
            hyper::StatusCode::OK,
            "Authorized",
            "plexus received the authorization. You can close this window.",
        ),
        Verdict::End(e) => page(
            hyper::StatusCode::BAD_REQUEST,
            "Authorization failed",
            &plexus_transport::error_chain(&e),
        ),
        Verdict::Refuse(reason) => page(
            hyper::StatusCode::BAD_REQUEST,
            "Authorization response refused",
            &format!(
                "The authorization response was refused: {reason}. plexus is still waiting for the authorization \
                 server's response to this login."
            ),
        ),
    };
    (page, Served::Callback(verdict, params))
}

/// An HTML page with `title` and `message` (escaped), never cached, running nothing.
fn page(status: hyper::StatusCode, title: &str, message: &str) -> hyper::Response<Full<Bytes>> {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>{}</p></body></html>",
        escape_html(message)
    );
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        hyper::header::CONTENT_SECURITY_POLICY,
        hyper::header::HeaderValue::from_static("default-src 'none'"),
    );
    response
}

/// `text` safe inside an HTML element or a quoted attribute.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
            "the parameter \"code\" appears more than once"
        );
        assert_eq!(
            escape_html("<a href=\"x\" title='y'>&"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;"
        );
    }

    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    fn port_of(listener: &CallbackListener) -> u16 {
        let uri = listener.redirect_uri();
        let port = uri
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix(CALLBACK_PATH))
            .unwrap_or_else(|| panic!("a loopback IP redirect URI: {uri}"));
        port.parse().unwrap()
    }

    /// Accepts state `good`; `denied` ends the login; anything else is refused.
    fn by_state(params: &CallbackParams) -> Verdict {
        match params.get("state") {
            Ok(Some("good")) => Verdict::Accept,
            Ok(Some("denied")) => Verdict::End(OAuthError::AuthorizationDenied {
                issuer: "http://as".to_owned(),
                error: "access_denied".to_owned(),
                description: Some("<b>no</b>".to_owned()),
                uri: None,
            }),
            _ => Verdict::Refuse(ResponseRefusal::WrongIssuer {
                given: "<bad>".to_owned(),
                expected: "http://as".to_owned(),
            }),
        }
    }

    #[tokio::test]
    async fn the_redirect_uri_names_the_bound_loopback_address() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = port_of(&listener);
        assert_eq!(
            listener.listener.local_addr().unwrap(),
            SocketAddr::from(([127, 0, 0, 1], port))
        );
        assert_eq!(listener.redirect_uri(), format!("http://127.0.0.1:{port}/callback"));
    }

    #[tokio::test]
    async fn answers_the_callback_once_after_ignoring_other_requests() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = port_of(&listener);
        let waiting = tokio::spawn(listener.receive(Duration::from_secs(60), by_state));
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
    async fn a_refused_callback_gets_an_error_page_and_the_wait_goes_on() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = port_of(&listener);
        let waiting = tokio::spawn(listener.receive(Duration::from_secs(60), by_state));
        for forged in ["/callback?state=evil", "/callback", "/callback?state=good&state=good"] {
            let answer = get(port, forged).await;
            assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{forged}: {answer}");
            assert!(
                answer.contains(
                    "refused: its issuer (iss) &quot;&lt;bad&gt;&quot; is not the authorization server&#39;s \
                     &quot;http://as&quot;. plexus is still waiting"
                ),
                "{forged}: {answer}"
            );
        }
        assert!(!waiting.is_finished(), "a forged callback does not end the login");
        let answer = get(port, "/callback?code=c&state=good").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert_eq!(waiting.await.unwrap().unwrap().get("code").unwrap(), Some("c"));
    }

    #[tokio::test]
    async fn the_authorization_servers_own_error_ends_the_wait_on_an_escaped_page() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = port_of(&listener);
        let waiting = tokio::spawn(listener.receive(Duration::from_secs(60), by_state));
        let answer = get(port, "/callback?state=denied").await;
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{answer}");
        assert!(
            answer.contains("refused the authorization: access_denied (&lt;b&gt;no&lt;/b&gt;)"),
            "{answer}"
        );
        let err = waiting.await.unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the authorization server http://as refused the authorization: access_denied (<b>no</b>)",
            "carried verbatim"
        );
    }

    #[tokio::test]
    async fn the_wait_is_bounded_and_its_error_counts_the_refused_callbacks() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let err = listener
            .receive(Duration::from_millis(50), |_| Verdict::Accept)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                OAuthError::LoginTimedOut {
                    refused: 0,
                    last_refusal: None,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "no authorization response arrived within 50 ms (the login was not completed)"
        );

        let listener = CallbackListener::bind(None).await.unwrap();
        let port = port_of(&listener);
        let waiting = tokio::spawn(listener.receive(Duration::from_secs(2), by_state));
        get(port, "/callback?state=evil").await;
        get(port, "/callback?state=other").await;
        assert_eq!(
            waiting.await.unwrap().unwrap_err().to_string(),
            "no authorization response arrived within 2 s (the login was not completed); 2 callbacks to the \
             redirect listener were refused as not this login's authorization response (the last: its issuer (iss) \"<bad>\" is not the authorization server's \"http://as\")"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn silent_connections_beyond_the_bound_cannot_keep_the_callback_out() {
        let listener = CallbackListener::bind(None).await.unwrap();
        let port = port_of(&listener);
        let waiting = tokio::spawn(listener.receive(Duration::from_secs(60), by_state));
        // Three times as many silent connections as there are slots, and one that trickles.
        let mut silent = Vec::new();
        for _ in 0..3 * MAX_CONNECTIONS {
            silent.push(TcpStream::connect(("127.0.0.1", port)).await.unwrap());
        }
        let mut trickler = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        trickler.write_all(b"G").await.unwrap();
        let answer = get(port, "/callback?code=c&state=good").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert_eq!(waiting.await.unwrap().unwrap().get("code").unwrap(), Some("c"));
        drop((silent, trickler));
    }

    #[test]
    fn a_full_table_evicts_the_oldest_silent_connection_first() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let mut tasks = JoinSet::new();
            let mut slots = Slots::default();
            let mut ids = Vec::new();
            for n in 0..MAX_CONNECTIONS {
                // The first two have spoken.
                let task = tasks.spawn(std::future::pending::<()>());
                ids.push(task.id());
                slots.push(task, Arc::new(AtomicBool::new(n < 2)));
            }
            let held = |slots: &Slots| slots.slots.iter().map(|s| s.task.id()).collect::<Vec<Id>>();
            slots.make_room();
            let mut expected = ids.clone();
            expected.remove(2);
            assert_eq!(
                held(&slots),
                expected,
                "the oldest silent one goes; those that spoke stay"
            );
            // Everyone has spoken: the oldest goes.
            for slot in &slots.slots {
                slot.spoke.store(true, Ordering::Relaxed);
            }
            let extra = tasks.spawn(std::future::pending::<()>());
            slots.push(extra, Arc::new(AtomicBool::new(true)));
            slots.make_room();
            assert_eq!(held(&slots)[0], ids[1]);
            assert_eq!(held(&slots).len(), MAX_CONNECTIONS - 1);
            tasks.abort_all();
        });
    }
}
