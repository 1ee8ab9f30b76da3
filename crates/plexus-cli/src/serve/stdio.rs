//! The gateway over stdio: one client, newline-delimited JSON-RPC on stdin and stdout (each
//! message at most 16 MiB); a line that is not JSON-RPC is answered with a parse error (id
//! `null`) and the session goes on. End of input ends the gateway, once what the client asked is
//! answered.

use std::sync::Arc;

use bytes::BytesMut;
use plexus::jsonrpc::process_stdio::{Stdin, Stdout};
use plexus::jsonrpc::{ErrorCode, ErrorObject, FrameError, LineCodec, Message, Response};
use tokio::sync::mpsc;

use super::gateway::Gateway;
use super::session::{SINK_CAPACITY, Session};
use crate::Outcome;

/// Serves `gateway` on stdin and stdout until stdin ends.
pub(crate) async fn serve(gateway: &Arc<Gateway>) -> Outcome {
    let (sink, mut lines) = mpsc::channel::<Vec<u8>>(SINK_CAPACITY);
    let writer = tokio::spawn(async move {
        let mut stdout = Stdout::open();
        let mut batch = Vec::with_capacity(64 * 1024);
        while let Some(line) = lines.recv().await {
            // Whatever else is ready goes out in the same write.
            batch.extend_from_slice(&line);
            batch.push(b'\n');
            while let Ok(line) = lines.try_recv() {
                batch.extend_from_slice(&line);
                batch.push(b'\n');
            }
            if stdout.write_all(&batch).await.is_err() {
                return;
            }
            batch.clear();
        }
    });
    let session = Session::new(Some(sink.clone()));
    gateway.add_session(&session);
    let mut stdin = Stdin::open();
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
                        _ => format!("not a JSON-RPC message: {error}"),
                    };
                    let mut line = Vec::with_capacity(128);
                    Message::Response(Response::error(None, ErrorObject::new(ErrorCode::PARSE_ERROR, reason)))
                        .encode_line(&mut line);
                    line.pop();
                    let _ = sink.send(line).await;
                }
            }
        }
        match stdin.read(&mut chunk).await {
            Ok(0) => break Outcome::Ok,
            Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            Err(e) => {
                crate::terminal::say(format_args!("cannot read stdin: {e}"));
                break Outcome::Connection;
            }
        }
    };
    if outcome == Outcome::Ok {
        drain(&session, &writer).await;
    }
    session.close();
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
/// request to it can no longer be answered: those fail at once.
async fn drain(session: &Session, writer: &tokio::task::JoinHandle<()>) {
    session.asked_no_more();
    let answered = async {
        while !session.is_idle() && !writer.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_LIMIT, answered).await;
}
