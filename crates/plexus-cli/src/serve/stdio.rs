//! The gateway over stdio: one client, newline-delimited JSON-RPC on stdin and stdout (each
//! message at most 16 MiB); a line that is not JSON-RPC is answered with a parse error (id
//! `null`) and the session goes on. End of input ends the gateway.

use std::sync::Arc;

use bytes::BytesMut;
use plexus::jsonrpc::{ErrorCode, ErrorObject, FrameError, LineCodec, Message, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::gateway::{Gateway, SINK_CAPACITY, Session};
use crate::Outcome;

/// Serves `gateway` on stdin and stdout until stdin ends.
pub(crate) async fn serve(gateway: &Arc<Gateway>) -> Outcome {
    let (sink, mut lines) = mpsc::channel::<Vec<u8>>(SINK_CAPACITY);
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = lines.recv().await {
            line.push(b'\n');
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let session = Session::new(Some(sink.clone()));
    gateway.add_session(&session);
    let mut stdin = tokio::io::stdin();
    let mut codec = LineCodec::new();
    let mut buffer = BytesMut::with_capacity(64 * 1024);
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
        match stdin.read_buf(&mut buffer).await {
            Ok(0) => break Outcome::Ok,
            Ok(_) => {}
            Err(e) => {
                crate::terminal::say(format_args!("cannot read stdin: {e}"));
                break Outcome::Connection;
            }
        }
    };
    session.close();
    drop(sink);
    let _ = writer.await;
    outcome
}
