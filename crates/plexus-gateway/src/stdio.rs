//! The gateway over a byte stream (stdin and stdout, or any pair a host gives): one client,
//! newline-delimited JSON-RPC (each message at most 16 MiB); a line that is not JSON-RPC is
//! answered with a parse error (id `null`) and the session goes on. End of input ends the
//! session, once what the client asked is answered.

use std::pin::Pin;
use std::sync::Arc;

use bytes::BytesMut;
use plexus::jsonrpc::{ErrorCode, ErrorObject, FrameError, LineCodec, Message, Response};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;

use crate::GatewayError;
use crate::gateway::Gateway;
use crate::session::{SINK_CAPACITY, Session};

/// Serves `gateway` to the client that writes to `input` and reads `output`, until `input` ends.
pub(crate) async fn serve(
    gateway: &Arc<Gateway>,
    mut input: Pin<Box<dyn AsyncRead + Send>>,
    output: Pin<Box<dyn AsyncWrite + Send>>,
) -> Result<(), GatewayError> {
    let (sink, lines) = mpsc::channel::<Vec<u8>>(SINK_CAPACITY);
    let session = Session::new(Some(sink.clone()));
    let writer = tokio::spawn(write_lines(lines, output, Arc::downgrade(&session)));
    #[cfg(feature = "otel")]
    session.telemetry.over_pipe();
    gateway.add_session(&session);
    let mut codec = LineCodec::new();
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let outcome = loop {
        while let Some(decoded) = codec.decode_line(&mut buffer) {
            match decoded {
                Ok(message) => gateway.handle(&session, message, sink.clone()),
                Err(error) => {
                    let reason = match &error {
                        FrameError::TooLarge { .. } => error.to_string(),
                        _ => format!("not a JSON-RPC message: {}", plexus::transport::error_chain(&error)),
                    };
                    let mut line = Vec::with_capacity(128);
                    Message::Response(Response::error(None, ErrorObject::new(ErrorCode::PARSE_ERROR, reason)))
                        .encode_line(&mut line);
                    line.pop();
                    let _ = sink.send(line).await;
                }
            }
        }
        match input.read(&mut chunk).await {
            Ok(0) => break Ok(()),
            Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            Err(source) => break Err(GatewayError::Input { source }),
        }
    };
    if outcome.is_ok() {
        drain(&session, &writer).await;
    }
    session.close();
    // A stateless client's calls held for its retries: none comes now.
    gateway.holds.forget(&session);
    drop(sink);
    // What is still in flight was aborted with the session; what is queued goes out.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    outcome
}

/// Writes the session's lines to `output` until every sender is gone or the output fails.
///
/// Whatever else is ready goes out in the same write. While other requests of the session are
/// still being answered, the writer first yields once: their answers are often ready to run
/// (a backend's batch of responses wakes them all at once), and the task a line's sender wakes
/// runs next on tokio's scheduler, before them, so without the yield every answer would take
/// a write of its own (and a wake of the client).
async fn write_lines(
    mut lines: mpsc::Receiver<Vec<u8>>,
    mut output: Pin<Box<dyn AsyncWrite + Send>>,
    session: std::sync::Weak<Session>,
) {
    let mut batch = Vec::with_capacity(64 * 1024);
    while let Some(line) = lines.recv().await {
        batch.extend_from_slice(&line);
        batch.push(b'\n');
        if session.upgrade().is_some_and(|session| !session.is_idle()) {
            tokio::task::yield_now().await;
        }
        while let Ok(line) = lines.try_recv() {
            batch.extend_from_slice(&line);
            batch.push(b'\n');
        }
        let written = async {
            output.write_all(&batch).await?;
            output.flush().await
        };
        if written.await.is_err() {
            return;
        }
        batch.clear();
    }
}

/// The longest the gateway answers what a client asked before it closed its input.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A client that closed its input may still read (`printf '…' | plexus serve`): what it asked
/// is answered before the gateway ends, within [`DRAIN_LIMIT`] (a call's own timeout is 60 s by
/// default), unless nobody reads any more (the writer stopped on a closed stdout). A backend's
/// request to it can no longer be answered: those fail at once; and its listens (stateless era)
/// end, since it hears nothing more.
async fn drain(session: &Session, writer: &tokio::task::JoinHandle<()>) {
    session.asked_no_more();
    session.end_listens();
    let answered = async {
        while !session.is_idle() && !writer.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_LIMIT, answered).await;
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use plexus::jsonrpc::RequestId;
    use tokio::net::unix::pipe;
    use tokio::sync::Notify;

    use super::*;
    use crate::session::lock;

    /// A real pipe's writing end that counts the writes made to it, to see how lines were batched.
    struct Counted {
        pipe: pipe::Sender,
        writes: Arc<AtomicUsize>,
    }

    impl AsyncWrite for Counted {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
            let written = Pin::new(&mut self.pipe).poll_write(cx, bytes);
            if matches!(written, Poll::Ready(Ok(_))) {
                self.writes.fetch_add(1, Ordering::SeqCst);
            }
            written
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.pipe).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.pipe).poll_shutdown(cx)
        }
    }

    /// Answers woken together on a worker (as a backend's batch of responses wakes its calls)
    /// go out in one write while the session has requests in flight, although the writer the
    /// first answer wakes would run before the others.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn answers_ready_together_go_out_in_one_write() {
        let (sink, lines) = mpsc::channel::<Vec<u8>>(SINK_CAPACITY);
        let session = Session::new(Some(sink.clone()));
        let pending = tokio::spawn(std::future::pending::<()>());
        lock(&session.in_flight).insert(RequestId::Number(99), pending.abort_handle());
        let (sender, mut receiver) = pipe::pipe().unwrap();
        let writes = Arc::new(AtomicUsize::new(0));
        let output = Counted {
            pipe: sender,
            writes: Arc::clone(&writes),
        };
        let writer = tokio::spawn(write_lines(lines, Box::pin(output), Arc::downgrade(&session)));
        let ready = Arc::new(Notify::new());
        let mut answers = Vec::new();
        for n in 0..3 {
            let (ready, sink) = (Arc::clone(&ready), sink.clone());
            let waiting = ready.notified_owned();
            answers.push(tokio::spawn(async move {
                waiting.await;
                sink.send(format!("{{\"n\":{n}}}").into_bytes()).await.unwrap();
            }));
        }
        // Woken from a task on the worker, so they are queued there, as the client's read loop
        // wakes the calls it answers.
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            ready.notify_waiters();
        })
        .await
        .unwrap();
        for answer in answers {
            answer.await.unwrap();
        }
        drop(sink);
        session.close();
        writer.await.unwrap();
        let mut read = String::new();
        receiver.read_to_string(&mut read).await.unwrap();
        let mut written: Vec<&str> = read.lines().collect();
        written.sort_unstable();
        assert_eq!(written, [r#"{"n":0}"#, r#"{"n":1}"#, r#"{"n":2}"#]);
        assert_eq!(
            writes.load(Ordering::SeqCst),
            1,
            "one write for the three answers: {read:?}"
        );
    }
}
