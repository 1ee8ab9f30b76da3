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
    mut output: Pin<Box<dyn AsyncWrite + Send>>,
) -> Result<(), GatewayError> {
    let (sink, mut lines) = mpsc::channel::<Vec<u8>>(SINK_CAPACITY);
    let writer = tokio::spawn(async move {
        let mut batch = Vec::with_capacity(64 * 1024);
        while let Some(line) = lines.recv().await {
            // Whatever else is ready goes out in the same write.
            batch.extend_from_slice(&line);
            batch.push(b'\n');
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
    });
    let session = Session::new(Some(sink.clone()));
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
