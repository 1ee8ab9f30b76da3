//! The sending half. A caller writes its line straight to the server's stdin when nothing is
//! queued and at most one other request awaits its response (no task hop for a call made alone);
//! otherwise the line joins a bounded queue that one writer task drains, coalescing what is
//! queued into one write: with many calls in flight, the lines their callers send one after
//! another go out in one write (one wake of the server) rather than one each.

use std::collections::VecDeque;
use std::io;
use std::pin::pin;
use std::sync::{Arc, Mutex};

use plexus_transport::{BoxFuture, OutboundKind, OutboundMessage, Response, TransportError, TransportSender};

/// The notification with which a client gives up on a request: no response to it may come.
const CANCELLED: &str = "notifications/cancelled";

/// A request is written at once while at most this many others await their response; beyond,
/// it goes through the writer task, whose batches are then worth its hop (measured pinned to one
/// CPU: with 2 calls in flight the hop cost more than it saved, from 4 on it saved more).
const DIRECT_WHILE_AWAITING: usize = 1;
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::sync::{Notify, watch};

use crate::config::WRITE_BATCH_BYTES;
use crate::lock;
use crate::process::{ProcessGuard, Shared};

/// The server's stdin and the lines waiting for it, shared by the senders and the writer task.
///
/// Order is kept by one rule, checked under the lock: a caller writes directly only when no line
/// is queued and the writer task holds no batch; otherwise it queues.
#[derive(Debug)]
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
    /// Wakes the writer task when a line is queued.
    queued: Notify,
    /// Wakes senders waiting for room in the queue.
    room: Notify,
    /// How many lines may wait.
    capacity: usize,
}

#[derive(Debug)]
struct OutboxState {
    /// `None` once stdin is closed.
    pipe: Option<Arc<pipe::Sender>>,
    lines: VecDeque<Vec<u8>>,
    /// The writer task is writing a batch it took from `lines`.
    writing: bool,
}

/// What became of an offered line.
enum Offer {
    /// Written, or queued for the writer task.
    Taken,
    /// The queue is full: wait for room and offer again.
    Full,
    /// Stdin is closed.
    Closed,
}

impl Outbox {
    pub(crate) fn new(stdin: pipe::Sender, capacity: usize) -> Arc<Outbox> {
        Arc::new(Outbox {
            state: Mutex::new(OutboxState {
                pipe: Some(Arc::new(stdin)),
                lines: VecDeque::new(),
                writing: false,
            }),
            queued: Notify::new(),
            room: Notify::new(),
            capacity: capacity.max(1),
        })
    }

    /// Writes `line` now if the way is clear and `alone` (few other requests await their
    /// response), else queues it if there is room. Takes the line out of `line` when it is taken.
    fn offer(&self, line: &mut Option<Vec<u8>>, alone: bool) -> io::Result<Offer> {
        let mut state = lock(&self.state);
        let Some(pipe) = state.pipe.clone() else {
            return Ok(Offer::Closed);
        };
        if alone && state.lines.is_empty() && !state.writing {
            let bytes = line.as_deref().unwrap_or_default();
            let written = match pipe.try_write(bytes) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => return Err(e),
            };
            let mut rest = line.take().unwrap_or_default();
            if written == rest.len() {
                return Ok(Offer::Taken);
            }
            rest.drain(..written);
            state.lines.push_back(rest);
            self.queued.notify_one();
            return Ok(Offer::Taken);
        }
        if state.lines.len() >= self.capacity {
            return Ok(Offer::Full);
        }
        state.lines.extend(line.take());
        self.queued.notify_one();
        Ok(Offer::Taken)
    }

    /// Takes the next batch for the writer task (marking it busy), or marks it idle and returns
    /// `None` when nothing is queued.
    fn next_batch(&self, batch: &mut Vec<u8>) -> Option<Arc<pipe::Sender>> {
        let mut state = lock(&self.state);
        if state.lines.is_empty() {
            state.writing = false;
            return None;
        }
        state.writing = true;
        take_batch(&mut state.lines, batch, WRITE_BATCH_BYTES);
        let pipe = state.pipe.clone();
        drop(state);
        self.room.notify_waiters();
        pipe
    }

    /// Closes stdin (once the writer task's own handle is gone) and fails waiting senders.
    fn close(&self) {
        {
            let mut state = lock(&self.state);
            state.pipe = None;
            state.lines.clear();
        }
        self.room.notify_waiters();
    }
}

/// Moves queued lines into `batch`: always the first, then more while the batch stays within
/// `budget` bytes.
fn take_batch(lines: &mut VecDeque<Vec<u8>>, batch: &mut Vec<u8>, budget: usize) {
    batch.clear();
    while let Some(line) = lines.front() {
        if !batch.is_empty() && batch.len() + line.len() > budget {
            break;
        }
        batch.extend_from_slice(line);
        lines.pop_front();
    }
}

/// The sending half of a [`StdioTransport`](crate::StdioTransport), shared by every caller.
///
/// [`send`](TransportSender::send) writes the encoded line to stdin at once when nothing is
/// queued, else queues it (waiting while the queue is full); it fails at once once the transport
/// is closed. [`close`](TransportSender::close) runs the shutdown sequence described in the crate
/// docs.
#[derive(Debug)]
pub struct StdioSender {
    outbox: Arc<Outbox>,
    guard: Arc<ProcessGuard>,
}

impl StdioSender {
    pub(crate) fn new(outbox: Arc<Outbox>, guard: Arc<ProcessGuard>) -> Self {
        StdioSender { outbox, guard }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.guard.shared
    }
}

impl TransportSender for StdioSender {
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>> {
        Box::pin(async move {
            let shared = self.shared();
            let (request, cancellation) = match message.kind() {
                OutboundKind::Request { .. } => (true, false),
                OutboundKind::Notification { method } => (false, method == CANCELLED),
                OutboundKind::Response { .. } => (false, false),
            };
            // A request counts from here until its response is read; a cancellation settles
            // the request it names (whose response may never come).
            let alone = !request || shared.request_sent() <= DIRECT_WHILE_AWAITING;
            if cancellation {
                shared.request_settled();
            }
            let settle_unsent = || {
                if request {
                    shared.request_settled();
                }
            };
            let mut line = Some(message.into_line());
            loop {
                if shared.is_closed() {
                    settle_unsent();
                    return Err(shared.send_error().await);
                }
                // Registered before the offer, so that room made in between is not missed.
                let mut room = pin!(self.outbox.room.notified());
                room.as_mut().enable();
                match self.outbox.offer(&mut line, alone) {
                    Ok(Offer::Taken) => return Ok(None),
                    Ok(Offer::Closed) => {
                        settle_unsent();
                        return Err(shared.send_error().await);
                    }
                    Ok(Offer::Full) => room.await,
                    Err(e) => {
                        settle_unsent();
                        let error = shared.write_failure(e).await;
                        shared.mark_closed(error.clone());
                        return Err(error);
                    }
                }
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared().close().await;
            Ok(())
        })
    }

    fn is_closed(&self) -> bool {
        self.shared().is_closed()
    }

    /// Starts the shutdown sequence on its own thread, as dropping the transport does.
    fn close_now(&self) {
        let shared = self.shared();
        shared.mark_closed(TransportError::closed(plexus_transport::CloseReason::ByClient));
        shared.start_shutdown();
    }
}

/// How long a closing transport keeps writing the lines still queued (a `notifications/cancelled`
/// sent just before the close, say) before it closes stdin.
pub(crate) const FLUSH_ON_CLOSE: Duration = Duration::from_millis(100);

/// Writes queued lines to the server's stdin until the transport closes or a write fails; when
/// it closes, what is queued goes out first (within [`FLUSH_ON_CLOSE`]). On the way out it
/// closes stdin (the server sees EOF) and fails the senders waiting for room.
pub(crate) async fn write_to_stdin(outbox: Arc<Outbox>, shared: Arc<Shared>) {
    let mut stop = shared.stop_writing_signal();
    let result = drain(&outbox, &mut stop).await;
    if let Err(e) = result {
        tracing::debug!(server = %shared.name, "writing to the server's stdin failed: {e}");
        let error = shared.write_failure(e).await;
        shared.mark_closed(error);
    }
    outbox.close();
    shared.set_stdin_closed();
}

/// The loop of [`write_to_stdin`]: waits for queued lines and writes them in batches, until
/// `stop`; a batch being written is never cut (the server would get half a line), and what is
/// queued when `stop` comes is written too, within [`FLUSH_ON_CLOSE`].
async fn drain(outbox: &Outbox, stop: &mut watch::Receiver<bool>) -> io::Result<()> {
    let mut batch = Vec::new();
    loop {
        let stopping = tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => true,
            () = outbox.queued.notified() => false,
        };
        if stopping {
            let flushed = tokio::time::timeout(FLUSH_ON_CLOSE, write_queued(outbox, &mut batch)).await;
            return flushed.unwrap_or(Ok(()));
        }
        // Woken by the first line queued: the callers that are ready to run queue theirs first,
        // so that they go out in the same write. (A multi-thread runtime runs the task a caller
        // wakes next, before the other callers.)
        tokio::task::yield_now().await;
        write_queued(outbox, &mut batch).await?;
        if lock(&outbox.state).pipe.is_none() {
            return Ok(());
        }
    }
}

/// Writes every queued line, in batches.
async fn write_queued(outbox: &Outbox, batch: &mut Vec<u8>) -> io::Result<()> {
    while let Some(pipe) = outbox.next_batch(batch) {
        write_all(&pipe, batch).await?;
        if batch.capacity() > 2 * WRITE_BATCH_BYTES {
            *batch = Vec::new();
        }
    }
    Ok(())
}

async fn write_all(pipe: &pipe::Sender, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        pipe.writable().await?;
        match pipe.try_write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn lines(n: usize, len: usize) -> VecDeque<Vec<u8>> {
        (0..n).map(|_| vec![b'x'; len]).collect()
    }

    #[test]
    fn queued_lines_go_out_in_one_batch_in_order() {
        let mut queued: VecDeque<Vec<u8>> = (0..200).map(|i| format!("{{\"n\":{i}}}\n").into_bytes()).collect();
        let mut batch = Vec::new();
        take_batch(&mut queued, &mut batch, WRITE_BATCH_BYTES);
        let expected: Vec<String> = (0..200).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        assert_eq!(String::from_utf8(batch).unwrap(), expected.concat());
        assert!(queued.is_empty());
    }

    #[test]
    fn a_batch_stops_at_the_budget_but_always_takes_one_line() {
        let mut queued = lines(128, 1024);
        let mut batch = Vec::new();
        take_batch(&mut queued, &mut batch, 64 * 1024);
        assert_eq!((batch.len(), queued.len()), (64 * 1024, 64));
        let mut huge = lines(2, 100_000);
        take_batch(&mut huge, &mut batch, 64 * 1024);
        assert_eq!((batch.len(), huge.len()), (100_000, 1));
    }

    /// Sends through a real pipe that the test drains only after everything is queued: the first
    /// lines go straight to the pipe, the rest wait in the queue (bounded) and arrive in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lines_arrive_in_order_through_a_full_pipe() {
        let (sender, mut receiver) = pipe::pipe().unwrap();
        let outbox = Outbox::new(sender, 8);
        let (_stop, mut never) = watch::channel(false);
        let writer = {
            let outbox = Arc::clone(&outbox);
            tokio::spawn(async move { drain(&outbox, &mut never).await })
        };
        let line = |i: usize| format!("{i:05}{}\n", "y".repeat(4000)).into_bytes();
        let count = 100; // ~400 KB: far more than a pipe holds
        let producer = {
            let outbox = Arc::clone(&outbox);
            tokio::spawn(async move {
                for i in 0..count {
                    let mut pending = Some(line(i));
                    loop {
                        let mut room = pin!(outbox.room.notified());
                        room.as_mut().enable();
                        match outbox.offer(&mut pending, true).unwrap() {
                            Offer::Taken => break,
                            Offer::Full => room.await,
                            Offer::Closed => panic!("closed"),
                        }
                    }
                    assert!(lock(&outbox.state).lines.len() <= 8, "the queue stays bounded");
                }
            })
        };
        let mut received = Vec::new();
        let expected: Vec<u8> = (0..count).flat_map(line).collect();
        while received.len() < expected.len() {
            let mut chunk = vec![0; 65536];
            let n = tokio::time::timeout(Duration::from_secs(30), receiver.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
            received.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(received, expected);
        producer.await.unwrap();
        writer.abort();
    }

    /// Lines still queued when the transport closes (a cancellation just before Ctrl-C's close)
    /// reach the server before its stdin is closed.
    #[tokio::test]
    async fn what_is_queued_when_the_writing_stops_is_written_first() {
        let (sender, mut receiver) = pipe::pipe().unwrap();
        let outbox = Outbox::new(sender, 8);
        {
            let mut state = lock(&outbox.state);
            state.lines.push_back(b"{\"a\":1}\n".to_vec());
            state.lines.push_back(b"{\"b\":2}\n".to_vec());
        }
        let (stop, mut stopping) = watch::channel(false);
        stop.send_replace(true);
        drain(&outbox, &mut stopping).await.unwrap();
        outbox.close();
        let mut received = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), receiver.read_to_end(&mut received))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(received, b"{\"a\":1}\n{\"b\":2}\n");
    }

    #[tokio::test]
    async fn a_line_sent_while_others_await_their_answers_is_queued_for_one_write() {
        let (sender, _receiver) = pipe::pipe().unwrap();
        let outbox = Outbox::new(sender, 8);
        let pipe = lock(&outbox.state).pipe.clone().unwrap();
        pipe.writable().await.unwrap();
        let mut alone = Some(b"{\"alone\":1}\n".to_vec());
        assert!(matches!(outbox.offer(&mut alone, true).unwrap(), Offer::Taken));
        assert!(
            lock(&outbox.state).lines.is_empty(),
            "a line sent alone is written at once"
        );
        for n in 0..3 {
            let mut line = Some(format!("{{\"n\":{n}}}\n").into_bytes());
            assert!(matches!(outbox.offer(&mut line, false).unwrap(), Offer::Taken));
        }
        let mut batch = Vec::new();
        assert!(outbox.next_batch(&mut batch).is_some());
        assert_eq!(batch, b"{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n");
    }

    #[tokio::test]
    async fn closing_fails_waiting_offers() {
        let (sender, _receiver) = pipe::pipe().unwrap();
        let outbox = Outbox::new(sender, 1);
        outbox.close();
        let mut line = Some(b"x\n".to_vec());
        assert!(matches!(outbox.offer(&mut line, true).unwrap(), Offer::Closed));
    }
}
