//! One request: encoding, registration, the timer, progress and cancellation.

use std::sync::{Arc, LazyLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use plexus_jsonrpc::{RawValue, RequestId};
use plexus_protocol::methods;
use plexus_transport::{OutboundKind, OutboundMessage};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::sync::oneshot::error::TryRecvError;

use crate::ClientError;
use crate::cancel::CancelHandle;
use crate::error::ParamsProblem;
use crate::progress::{ProgressCallback, ProgressState};
use crate::session::{PendingEntry, Reply, Shared};
use crate::wire::StatelessWire;

/// How one request behaves. The default uses the session's default timeout and asks for no
/// progress.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// The timeout; `None` uses the session's default (60 s unless configured).
    pub timeout: Option<Duration>,
    /// Receives the request's progress notifications. Setting it sends a progress token.
    pub on_progress: Option<ProgressCallback>,
    /// Each progress notification restarts the timeout…
    pub reset_timeout_on_progress: bool,
    /// …but never beyond this total (default: unbounded resets, still each bounded by `timeout`).
    pub max_total_timeout: Option<Duration>,
    /// A number of the host's own, given back as [`ServerRequestContext::tag`] with each request
    /// the server makes on behalf of this one, when the transport tells which request that is
    /// (Streamable HTTP does; stdio, SSE and WebSocket cannot). A host that calls for several
    /// users through one connection (a gateway) tells by it whose call a question belongs to.
    ///
    /// [`ServerRequestContext::tag`]: crate::ServerRequestContext::tag
    pub tag: Option<u64>,
    /// Cancels the request from outside its future, with a reason (see [`CancelHandle`]).
    pub cancel: Option<CancelHandle>,
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("tag", &self.tag)
            .field("cancel", &self.cancel)
            .finish()
    }
}

impl RequestOptions {
    /// Options with this timeout.
    pub fn with_timeout(timeout: Duration) -> Self {
        RequestOptions {
            timeout: Some(timeout),
            ..Self::default()
        }
    }

    /// Adds a progress callback.
    #[must_use]
    pub fn progress(mut self, callback: ProgressCallback) -> Self {
        self.on_progress = Some(callback);
        self
    }

    /// Cancels the request when `handle` is cancelled (see [`RequestOptions::cancel`]).
    #[must_use]
    pub fn cancel_with(mut self, handle: CancelHandle) -> Self {
        self.cancel = Some(handle);
        self
    }

    /// Restarts the timeout on each progress notification, up to `max_total`.
    #[must_use]
    pub fn reset_on_progress(mut self, max_total: Option<Duration>) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_total_timeout = max_total;
        self
    }
}

/// Removes the pending entry if the request future is dropped early, and tells the server.
struct PendingGuard<'a> {
    shared: &'a Arc<Shared>,
    id: i64,
    /// The host's handle, whose reason the server is told when it cancelled the request.
    cancel: Option<&'a CancelHandle>,
    /// The request reached the transport, so the server may be working on it.
    sent: bool,
    done: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.done || !self.shared.forget(self.id) || !self.sent {
            return;
        }
        // The caller dropped the future (or cancelled its handle) while the server works on it.
        // The session owes the server a notifications/cancelled from now on: the next request
        // sends it first, if the task spawned here has not yet.
        let reason = self
            .cancel
            .and_then(CancelHandle::reason)
            .map_or_else(|| DROPPED.to_owned(), |reason| reason.to_string());
        self.shared.cancel_in_background(self.id, reason);
    }
}

/// What the server is told of a request whose future the caller dropped.
const DROPPED: &str = "the caller cancelled the request";

pub(crate) async fn send_cancelled(shared: &Shared, id: i64, reason: &str) -> Result<(), ClientError> {
    let params = serde_json::json!({ "requestId": id, "reason": reason });
    shared.notify_raw(methods::CANCELLED, &params).await
}

/// The `_meta` entries a request line gets: the stateless era's envelope (`envelope`: its
/// `_meta` entries as JSON text), a progress token (the request's id) when `progress`, and the
/// W3C trace context of the request's span (`trace`, JSON text too).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MetaEntries<'a> {
    pub(crate) progress: bool,
    pub(crate) envelope: Option<&'a str>,
    pub(crate) trace: Option<&'a str>,
}

impl MetaEntries<'_> {
    fn is_empty(&self) -> bool {
        !self.progress && self.envelope.is_none() && self.trace.is_none()
    }
}

/// The pieces of the `_meta` entries, commas between them, without a buffer of their own.
struct Pieces<'a> {
    items: [&'a [u8]; 7],
    len: usize,
}

impl<'a> Pieces<'a> {
    fn of(entries: &MetaEntries<'a>, token: Option<&'a str>) -> Pieces<'a> {
        let mut pieces = Pieces {
            items: [&[]; 7],
            len: 0,
        };
        if let Some(envelope) = entries.envelope {
            pieces.entry(&[envelope.as_bytes()]);
        }
        if let Some(token) = token {
            pieces.entry(&[b"\"progressToken\":", token.as_bytes()]);
        }
        if let Some(trace) = entries.trace {
            pieces.entry(&[trace.as_bytes()]);
        }
        pieces
    }

    fn entry(&mut self, parts: &[&'a [u8]]) {
        if self.len > 0 {
            self.items[self.len] = b",";
            self.len += 1;
        }
        for part in parts {
            self.items[self.len] = part;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[&'a [u8]] {
        &self.items[..self.len]
    }
}

/// Encodes the request line with its `_meta` entries ([`MetaEntries`]). The params are
/// serialized once, straight into the line, and the `_meta` entries are spliced in at the
/// start of their object: no parse, no second copy of the params (unless the caller's params
/// have a `_meta` of their own, which is merged as values).
///
/// With the line comes the string value of the params' member `name_key` when the params open
/// with it (what a request's own params types write first: a tool's or prompt's `name`, a
/// resource's `uri`), read before the envelope goes in, so that the `Mcp-Name` header costs no
/// second parse of the line; `None` when it is not there (the caller reads the line then) or
/// when the line carries no `_meta` entries.
fn encode<P: Serialize + ?Sized>(
    id: i64,
    method: &str,
    params: Option<&P>,
    entries: MetaEntries<'_>,
    name_key: Option<&str>,
) -> Result<(Vec<u8>, Option<String>), ClientError> {
    let line = encode_line(id, method, params, !entries.is_empty())?;
    if entries.is_empty() {
        return Ok((line, None));
    }
    add_meta(line, id, method, entries, name_key)
}

/// The request line with `params` as they are (an empty object when there are none and
/// `object`: a `_meta` needs an object to go in).
fn encode_line<P: Serialize + ?Sized>(
    id: i64,
    method: &str,
    params: Option<&P>,
    object: bool,
) -> Result<Vec<u8>, ClientError> {
    /// The params of a request that has none, when `_meta` needs an object to go in.
    #[derive(Serialize)]
    struct NoParams {}

    let mut line = Vec::with_capacity(128);
    let request_id = RequestId::Number(id);
    match (params, object) {
        (Some(params), _) => plexus_jsonrpc::encode_request(&mut line, &request_id, method, Some(params)),
        (None, true) => plexus_jsonrpc::encode_request(&mut line, &request_id, method, Some(&NoParams {})),
        (None, false) => plexus_jsonrpc::encode_request::<()>(&mut line, &request_id, method, None),
    }
    .map_err(|e| ClientError::InvalidParams {
        method: method.to_owned(),
        source: e.into(),
    })?;
    Ok(line)
}

/// Where the params object of an encoded request `line` opens, if it has one.
fn params_open(line: &[u8]) -> Option<usize> {
    // The line is `{"jsonrpc":"2.0","id":ID,"method":"METHOD","params":{…}}\n`: the first
    // `,"params":` follows the id and the method (a protocol method name), so it is the key's.
    let at = PARAMS_KEY.find(line).map(|at| at + PARAMS_KEY.needle().len());
    at.filter(|&at| line.get(at) == Some(&b'{'))
}

/// The params of an encoded request `line` as JSON text, when they are an object.
#[cfg(feature = "otel")]
fn params_text(line: &[u8]) -> Option<&str> {
    let open = params_open(line)?;
    // The params object, without the line's `}\n`.
    std::str::from_utf8(line.get(open..line.len().checked_sub(2)?)?).ok()
}

/// `line` (a request whose params are an object) with the `_meta` `entries` added; see
/// [`encode`].
fn add_meta(
    mut line: Vec<u8>,
    id: i64,
    method: &str,
    entries: MetaEntries<'_>,
    name_key: Option<&str>,
) -> Result<(Vec<u8>, Option<String>), ClientError> {
    let invalid = |e: serde_json::Error| ClientError::InvalidParams {
        method: method.to_owned(),
        source: e.into(),
    };
    let token = entries.progress.then(|| id.to_string());
    let pieces = Pieces::of(&entries, token.as_deref());
    let Some(open) = params_open(&line) else {
        return Err(ClientError::InvalidParams {
            method: method.to_owned(),
            source: ParamsProblem::NotAnObject,
        });
    };
    let body = &line[open..];
    let name = name_key.and_then(|key| leading_string(body, key));
    if META_KEY.find(body).is_some() {
        // The caller's params have a `_meta` of their own (or text that looks like one).
        let meta: Vec<u8> = pieces.as_slice().concat();
        let meta = std::str::from_utf8(&meta).unwrap_or_default();
        let end = line.len() - 2; // the params object, without the line's `}\n`
        let merged = merge_meta(&line[open..end], meta).map_err(invalid)?;
        line.truncate(open);
        line.extend_from_slice(merged.as_bytes());
        line.extend_from_slice(b"}\n");
        return Ok((line, name));
    }
    // `"_meta":{ENTRIES}` and a comma unless the params are empty, written into a gap opened
    // after the params' `{` (one move of the params' bytes, no other buffer).
    let empty = body.get(1) == Some(&b'}');
    let head: &[u8] = b"\"_meta\":{";
    let tail: &[u8] = if empty { b"}" } else { b"}," };
    let inserted = head.len() + pieces.as_slice().iter().map(|piece| piece.len()).sum::<usize>() + tail.len();
    let inside = open + 1;
    let old_len = line.len();
    line.resize(old_len + inserted, 0);
    line.copy_within(inside..old_len, inside + inserted);
    let mut at = inside;
    for piece in std::iter::once(head)
        .chain(pieces.as_slice().iter().copied())
        .chain(std::iter::once(tail))
    {
        line[at..at + piece.len()].copy_from_slice(piece);
        at += piece.len();
    }
    Ok((line, name))
}

/// Finds the params of an encoded request (built once: a finder's setup costs more than a search
/// of a short line).
static PARAMS_KEY: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b",\"params\":"));

/// Finds a `_meta` key in params.
static META_KEY: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\"_meta\""));

/// The string value of `key` when it is the first member of the JSON object that `object`
/// (valid JSON) starts with.
fn leading_string(object: &[u8], key: &str) -> Option<String> {
    let value = object
        .strip_prefix(b"{\"")?
        .strip_prefix(key.as_bytes())?
        .strip_prefix(b"\":")?;
    if !value.starts_with(b"\"") {
        return None;
    }
    // The value's own bytes when it has no escape; else serde reads the one string token.
    match memchr::memchr2(b'"', b'\\', &value[1..]) {
        Some(end) if value[1 + end] == b'"' => std::str::from_utf8(&value[1..=end]).ok().map(str::to_owned),
        _ => String::deserialize(&mut serde_json::Deserializer::from_slice(value)).ok(),
    }
}

/// `body` (a JSON object) with the `_meta` entries `meta` (JSON text without braces) added to
/// its own `_meta`.
fn merge_meta(body: &[u8], meta: &str) -> Result<String, serde_json::Error> {
    let mut value: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(body)?;
    let added: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&format!("{{{meta}}}"))?;
    let target = value
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    if let Some(target) = target.as_object_mut() {
        target.extend(added);
    }
    serde_json::to_string(&value)
}

/// [`exchange`], ended early when `cancel` is cancelled: a request not sent yet is not sent;
/// one in flight is forgotten and the server told (within 1 s) before this returns.
async fn cancellable_exchange<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    call: &Call<'_>,
    params: Option<&P>,
    cancel: &CancelHandle,
    operation: &mut OperationSlot,
) -> Result<Box<RawValue>, ClientError> {
    let cancelled = |reason: &str| ClientError::Cancelled {
        reason: reason.to_owned(),
    };
    if let Some(reason) = cancel.reason() {
        return Err(cancelled(&reason));
    }
    // The exchange's future is dropped when the select ends: its guard records the
    // notifications/cancelled the server is owed, with the handle's reason.
    let outcome = tokio::select! {
        biased;
        result = exchange(shared, call, params, operation) => Ok(result),
        reason = cancel.cancelled() => Err(reason),
    };
    match outcome {
        Ok(result) => result,
        Err(reason) => {
            let _ = tokio::time::timeout(Duration::from_secs(1), shared.send_owed_cancellations()).await;
            Err(cancelled(&reason))
        }
    }
}

/// The pending entry's reply sender was dropped without a reply (the session closed).
struct Dropped;

/// Sends a request and waits for its result (raw JSON); the session's observer, if any, is told
/// how it ended. In the stateless era, the request carries the session's envelope and headers.
pub(crate) async fn request<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    method: &'static str,
    params: Option<&P>,
    options: &RequestOptions,
    default_timeout: Duration,
    cancellable: bool,
) -> Result<Box<RawValue>, ClientError> {
    request_on(
        shared,
        shared.stateless(),
        method,
        params,
        options,
        default_timeout,
        cancellable,
    )
    .await
}

/// [`request`] carrying what `wire` says (the envelope and headers of a version being tried by
/// a probe, before the session has its own), or nothing.
pub(crate) async fn request_on<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    wire: Option<&StatelessWire>,
    method: &'static str,
    params: Option<&P>,
    options: &RequestOptions,
    default_timeout: Duration,
    cancellable: bool,
) -> Result<Box<RawValue>, ClientError> {
    let call = Call {
        id: None,
        wire,
        method,
        options,
        default_timeout,
        cancellable,
    };
    send_call(shared, &call, params).await
}

/// Sends `call` with `params` and waits for its result (raw JSON); the session's observer, if
/// any, is told how it ended.
pub(crate) async fn send_call<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    call: &Call<'_>,
    params: Option<&P>,
) -> Result<Box<RawValue>, ClientError> {
    #[allow(clippy::let_unit_value)]
    let mut operation = OperationSlot::default();
    let result = match &call.options.cancel {
        None => exchange(shared, call, params, &mut operation).await,
        Some(cancel) => cancellable_exchange(shared, call, params, cancel, &mut operation).await,
    };
    #[cfg(feature = "otel")]
    if let Some(operation) = operation {
        crate::telemetry::finish_client(operation, &result);
    }
    if let Some(observer) = &shared.observer {
        observer.request_ended(&shared.name, call.method, result.as_ref().map(drop));
    }
    result
}

/// How one request goes: what it carries, its method, its options and whether the server may
/// be told to stop working on it.
#[derive(Clone, Copy)]
pub(crate) struct Call<'a> {
    /// Its id, when the caller chose one (from [`Shared::next_id`]); else a new one.
    pub(crate) id: Option<i64>,
    /// What it carries in the stateless era.
    pub(crate) wire: Option<&'a StatelessWire>,
    pub(crate) method: &'static str,
    pub(crate) options: &'a RequestOptions,
    pub(crate) default_timeout: Duration,
    pub(crate) cancellable: bool,
}

/// Request `id` of `call` as it goes to the transport: encoded (with the envelope in the
/// stateless era, and a progress token when `wants_progress`), with its headers over HTTP in the
/// stateless era, and its reply timeout when the sender has one.
#[cfg_attr(not(feature = "otel"), allow(unused_variables, clippy::trivially_copy_pass_by_ref))]
fn outbound<P: Serialize + ?Sized>(
    shared: &Shared,
    id: i64,
    call: &Call<'_>,
    params: Option<&P>,
    wants_progress: bool,
    timeout: Duration,
    operation: &mut OperationSlot,
) -> Result<OutboundMessage, ClientError> {
    let name_key = call
        .wire
        .filter(|wire| wire.carries_headers())
        .and_then(|_| plexus_protocol::http_headers::name_param(call.method));
    #[allow(unused_mut)]
    let mut entries = MetaEntries {
        progress: wants_progress,
        envelope: call.wire.map(StatelessWire::fragment),
        trace: None,
    };
    #[cfg(not(feature = "otel"))]
    let (line, name) = encode(id, call.method, params, entries, name_key)?;
    #[cfg(feature = "otel")]
    let (line, name) = {
        // The params as they are, read for the span's target before any `_meta` goes in.
        let plain = encode_line(id, call.method, params, false)?;
        *operation = crate::telemetry::Operation::client(
            call.method,
            &RequestId::Number(id),
            || params_text(&plain),
            || shared.telemetry.connection(shared),
        );
        let trace = operation.as_ref().and_then(crate::telemetry::Operation::trace_meta);
        entries.trace = trace.as_deref();
        if entries.is_empty() {
            (plain, None)
        } else if params.is_some() {
            add_meta(plain, id, call.method, entries, name_key)?
        } else {
            encode(id, call.method, params, entries, name_key)?
        }
    };
    let headers = call
        .wire
        .map(|wire| wire.request_headers(call.method, name, &line))
        .unwrap_or_default();
    let kind = OutboundKind::Request {
        id: RequestId::Number(id),
        method: call.method.into(),
    };
    let mut message = OutboundMessage::from_line(line, kind).with_headers(headers);
    if let Some(limit) = reply_limit(call.options, timeout) {
        message = message.with_reply_timeout(limit);
    }
    Ok(message)
}

/// Where a request's telemetry lives while it is in flight (nothing without the `otel` feature).
#[cfg(feature = "otel")]
type OperationSlot = Option<crate::telemetry::Operation>;
/// Where a request's telemetry lives while it is in flight (nothing without the `otel` feature).
#[cfg(not(feature = "otel"))]
type OperationSlot = ();

async fn exchange<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    call: &Call<'_>,
    params: Option<&P>,
    operation: &mut OperationSlot,
) -> Result<Box<RawValue>, ClientError> {
    let Call {
        method,
        options,
        default_timeout,
        cancellable,
        ..
    } = *call;
    let id = call.id.unwrap_or_else(|| shared.next_id());
    let wants_progress = options.on_progress.is_some() || options.reset_timeout_on_progress;
    let timeout = options.timeout.unwrap_or(default_timeout);
    let message = outbound(shared, id, call, params, wants_progress, timeout, operation)?;
    let progress = wants_progress.then(|| Arc::new(ProgressState::new(options.on_progress.clone())));
    let (reply_tx, mut reply_rx) = oneshot::channel();
    shared.register(
        id,
        PendingEntry {
            reply: reply_tx,
            progress: progress.clone(),
            cancellable,
            tag: options.tag,
        },
    )?;
    let mut guard = PendingGuard {
        shared,
        id,
        cancel: options.cancel.as_ref(),
        sent: false,
        done: !cancellable,
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let unidentified_before = shared.unidentified_count();
    let give_up = |guard: &mut PendingGuard<'_>| {
        guard.done = true;
        gave_up(shared, id, method, timeout, cancellable, unidentified_before)
    };
    // A cancellation the session owes the server goes out before this request does.
    if shared.owes_cancellations() {
        shared.send_owed_cancellations().await;
    }
    // From here on the bytes may reach the server: a request given up on is cancelled there.
    guard.sent = true;
    // A send that cannot complete at once (the transport's queue is full, or an HTTP transport
    // reads the reply along with the send) waits within the request's deadline; the common path
    // sets up no timer for it.
    let mut send = shared.send(message);
    let sent = match std::future::poll_fn(|cx| Poll::Ready(send.as_mut().poll(cx))).await {
        Poll::Ready(sent) => sent,
        Poll::Pending => match tokio::time::timeout_at(deadline, send).await {
            Ok(sent) => sent,
            Err(_) => return Err(give_up(&mut guard)),
        },
    };
    let in_hand = match sent {
        Ok(in_hand) => in_hand,
        Err(error) => {
            guard.done = true;
            shared.forget(id);
            return Err(error.into());
        }
    };
    // A transport that read the reply along with the send (an HTTP JSON body) gives it back:
    // it completes the pending entry the way the reader would, and no other task is involved.
    if let Some(response) = in_hand {
        if tracing::enabled!(tracing::Level::DEBUG) {
            crate::trace::received(&shared.name, &plexus_jsonrpc::Message::Response(response.clone()));
        }
        shared.complete(response);
    }

    let outcome = match reply_rx.try_recv() {
        Ok(reply) => Some(Ok(reply)),
        Err(TryRecvError::Closed) => Some(Err(Dropped)),
        Err(TryRecvError::Empty) if options.reset_timeout_on_progress => wait_resetting(
            reply_rx,
            deadline,
            timeout,
            options.max_total_timeout,
            progress.as_deref(),
        )
        .await
        .map(|r| r.map_err(|_| Dropped)),
        Err(TryRecvError::Empty) => tokio::time::timeout_at(deadline, reply_rx)
            .await
            .ok()
            .map(|r| r.map_err(|_| Dropped)),
    };
    let Some(reply) = outcome else {
        return Err(give_up(&mut guard));
    };
    guard.done = true;
    match reply {
        Ok(Reply::Result(result)) => Ok(result),
        Ok(Reply::Error(error)) => Err(ClientError::Rpc {
            method: method.to_owned(),
            error,
        }),
        Ok(Reply::Failed(reason)) => Err(reason),
        Err(Dropped) => Err(shared.closed_reason().unwrap_or(ClientError::SessionClosed)),
    }
}

/// How long the caller may wait for the reply, as the transport is told (its own timers must not
/// be shorter): the timeout, or with resets on progress their cap (`None`: no cap).
fn reply_limit(options: &RequestOptions, timeout: Duration) -> Option<Duration> {
    if options.reset_timeout_on_progress {
        options.max_total_timeout.map(|cap| cap.max(timeout))
    } else {
        Some(timeout)
    }
}

/// The request timed out: it is forgotten, the server is told in the background (unless it is
/// `initialize`, which is never cancelled), and the error says what else the server sent
/// meanwhile that was dropped.
fn gave_up(
    shared: &Arc<Shared>,
    id: i64,
    method: &str,
    timeout: Duration,
    cancellable: bool,
    unidentified_before: u64,
) -> ClientError {
    shared.forget(id);
    if cancellable {
        let reason = format!("timed out after {}", crate::error::format_duration(timeout));
        // The caller hears of the timeout at once, not after the server took the notification
        // (a slow server would add its own delay): the notification is owed, sent now in the
        // background, and before the session's next request in any case.
        shared.cancel_in_background(id, reason);
    }
    ClientError::Timeout {
        method: method.to_owned(),
        after: timeout,
        unidentified: shared.unidentified_since(unidentified_before),
    }
}

/// Waits for the reply; each progress report pushes the deadline to `last report + timeout`,
/// never past `start + max_total`.
async fn wait_resetting(
    mut reply: oneshot::Receiver<Reply>,
    first_deadline: tokio::time::Instant,
    timeout: Duration,
    max_total: Option<Duration>,
    progress: Option<&ProgressState>,
) -> Option<Result<Reply, oneshot::error::RecvError>> {
    let start = Instant::now();
    let cap = max_total.map(|m| start + m);
    let mut deadline = first_deadline.into_std();
    loop {
        let bounded = cap.map_or(deadline, |c| deadline.min(c));
        match tokio::time::timeout_at(bounded.into(), &mut reply).await {
            Ok(reply) => return Some(reply),
            Err(_) => {
                let renewed = progress.and_then(ProgressState::last).map(|last| last + timeout);
                match renewed {
                    Some(next) if next > deadline && cap.is_none_or(|c| bounded < c) => deadline = next,
                    _ => return None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{MetaEntries, encode, leading_string};

    const ENVELOPE: &str =
        r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}"#;

    fn entries<'a>(progress: bool, envelope: Option<&'a str>, trace: Option<&'a str>) -> MetaEntries<'a> {
        MetaEntries {
            progress,
            envelope,
            trace,
        }
    }

    fn params_of(line: &[u8]) -> Value {
        let message: Value = serde_json::from_slice(line).unwrap();
        message["params"].clone()
    }

    #[test]
    fn the_envelope_and_the_progress_token_go_into_meta() {
        let envelope = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        let line = encode(
            7,
            "tools/call",
            Some(&json!({"name": "add"})),
            entries(true, Some(ENVELOPE), None),
            None,
        )
        .unwrap()
        .0;
        let mut meta = envelope.clone();
        meta["progressToken"] = json!(7);
        assert_eq!(params_of(&line), json!({"_meta": meta, "name": "add"}));

        let line = encode::<Value>(8, "tools/list", None, entries(false, Some(ENVELOPE), None), None)
            .unwrap()
            .0;
        assert_eq!(params_of(&line), json!({"_meta": envelope}));

        // The caller's own `_meta` keeps its entries.
        let own = json!({"name": "add", "_meta": {"trace": "t1"}});
        let line = encode(9, "tools/call", Some(&own), entries(false, Some(ENVELOPE), None), None)
            .unwrap()
            .0;
        let mut meta = envelope.clone();
        meta["trace"] = json!("t1");
        assert_eq!(params_of(&line), json!({"_meta": meta, "name": "add"}));

        // Without either, the params go as they are.
        let line = encode(
            10,
            "tools/call",
            Some(&json!({"name": "add"})),
            MetaEntries::default(),
            None,
        )
        .unwrap()
        .0;
        assert_eq!(params_of(&line), json!({"name": "add"}));
        assert!(encode(11, "x", Some(&json!([1])), entries(false, Some(ENVELOPE), None), None).is_err());
    }

    #[test]
    fn the_trace_context_goes_into_meta_with_the_other_entries() {
        const TRACE: &str = r#""traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01""#;
        let traceparent = json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        // Alone, in params that had none.
        let line = encode::<Value>(1, "ping", None, entries(false, None, Some(TRACE)), None)
            .unwrap()
            .0;
        assert_eq!(params_of(&line), json!({"_meta": {"traceparent": traceparent}}));
        // With the envelope and a progress token, in params that have members.
        let line = encode(
            2,
            "tools/call",
            Some(&json!({"name": "add", "arguments": {"a": 1}})),
            entries(true, Some(ENVELOPE), Some(TRACE)),
            None,
        )
        .unwrap()
        .0;
        let params = params_of(&line);
        assert_eq!(params["_meta"]["traceparent"], traceparent);
        assert_eq!(params["_meta"]["progressToken"], json!(2));
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/protocolVersion"],
            json!("2026-07-28")
        );
        assert_eq!(params["arguments"], json!({"a": 1}));
        // Merged into the caller's own `_meta`, whose entries stay.
        let own = json!({"name": "add", "_meta": {"user": "u1"}});
        let line = encode(3, "tools/call", Some(&own), entries(false, None, Some(TRACE)), None)
            .unwrap()
            .0;
        assert_eq!(
            params_of(&line),
            json!({"name": "add", "_meta": {"user": "u1", "traceparent": traceparent}})
        );
    }

    #[test]
    fn the_leading_name_is_read_before_the_envelope_goes_in() {
        let named = |params: Value| {
            encode(
                1,
                "tools/call",
                Some(&params),
                entries(false, Some(ENVELOPE), None),
                Some("name"),
            )
            .unwrap()
            .1
        };
        assert_eq!(named(json!({"name": "add", "arguments": {}})).as_deref(), Some("add"));
        assert_eq!(
            named(json!({"name": "a\"b\\c\u{e9}"})).as_deref(),
            Some("a\"b\\c\u{e9}")
        );
        assert_eq!(named(json!({"name": "x\ny"})).as_deref(), Some("x\ny"));
        // Not first, or not a string: the caller reads the line.
        assert_eq!(named(json!({"arguments": {}, "name": "add"})), None);
        assert_eq!(named(json!({"name": 3})), None);
        assert_eq!(named(json!({"names": "add"})), None);
        assert_eq!(
            leading_string(br#"{"uri":"file:///a"}"#, "uri").as_deref(),
            Some("file:///a")
        );
        assert_eq!(leading_string(br#"{ "uri":"file:///a"}"#, "uri"), None);
    }
}
