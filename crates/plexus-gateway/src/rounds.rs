//! Multi round-trip requests for the gateway's clients of the stateless era: the gateway sends
//! such a client no request, so a backend's question during its `tools/call`, `prompts/get` or
//! `resources/read` (an elicitation, a sampling request, the client's roots: whatever
//! [`Gateway::ask`] would forward, in whichever era the backend speaks) ends the client's request
//! with `{"resultType":"input_required","inputRequests":{KEY: {"method", "params"}},
//! "requestState": STATE}` while the backend's call is held where it waits. The client sends the
//! request again (a new id) with its answers as `inputResponses` and that `requestState`; the
//! gateway hands the answers to the waiting backend and answers the retry with the call's
//! outcome, or with the next question.
//!
//! A request state is 128 random bits, good for one retry, and names a held call of this gateway
//! process only: a retry must reach the replica that answered `input_required` (the only state
//! the stateless era keeps between a client's requests). A held call waits for its retry at most
//! [`ASK_TIMEOUT`] (as long as a question forwarded to a client of the `initialize` era waits), and
//! at most [`MAX_HELD`] are held at once; then it is dropped, which cancels it on its backend. An
//! unknown or expired state, a retry of another request, or one without the answers asked for is
//! refused with -32602 (the call stays held for a proper retry). While a round runs, the call's
//! progress (when its first request asked for it) goes to that round's stream, under that
//! round's progress token (none: no progress); cancelling the round (closing its stream, or
//! `notifications/cancelled`) cancels the call.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};

use plexus::jsonrpc::{ErrorCode, ErrorObject, RawValue, Request};
use plexus::protocol::{ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, JsonObject, methods};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::era::Stateless;
use crate::forward::{ASK_TIMEOUT, not_answered, went_away};
use crate::gateway::{Gateway, invalid_params, params_of};
use crate::session::{Answer, Session, Sink, lock, notification, random_id};
use crate::tools::RunsOn;

/// The most calls held at once, waiting for their clients' retries.
pub(crate) const MAX_HELD: usize = 256;

/// The most questions one `input_required` result asks (more wait for the next round).
const MAX_QUESTIONS: usize = 16;

/// How many progress notifications of a held call wait for its next round (more are dropped).
const RELAY_CAPACITY: usize = 64;

/// A stateless request's outcome: its result (with its `resultType`), or its error.
pub(crate) type Outcome = Result<Box<RawValue>, ErrorObject>;

/// The work a stateless request does.
type Operation = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// A backend's question to a stateless client, and where its answer goes.
struct Question {
    method: String,
    params: Value,
    answer: oneshot::Sender<Answer>,
}

/// What a stateless request's work tells the request's rounds.
enum Event {
    /// The backend asks the client.
    Asked(Question),
    /// The work is done (a held call's: the one that ran on its own task).
    Done(Outcome),
}

/// Where the questions of a stateless request's backend go: to the round of the request that
/// is being answered.
#[derive(Clone)]
pub(crate) struct Asker(mpsc::Sender<Event>);

impl Asker {
    /// Asks the client `method` with `params` in the request's result, and waits for the
    /// answer its retry brings (at most [`ASK_TIMEOUT`]).
    pub(crate) async fn ask(&self, method: &str, params: &Value) -> Answer {
        let (answer, answered) = oneshot::channel();
        let question = Question {
            method: method.to_owned(),
            params: params.clone(),
            answer,
        };
        self.0.send(Event::Asked(question)).await.map_err(|_| went_away())?;
        match tokio::time::timeout(ASK_TIMEOUT, answered).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(went_away()),
            Err(_) => Err(not_answered(method)),
        }
    }
}

/// The request a held call answers: its method and what it names (a retry repeats both).
#[derive(PartialEq, Eq)]
struct Named {
    method: String,
    named: Option<String>,
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.named {
            Some(named) => write!(f, "{} of {named:?}", self.method),
            None => f.write_str(&self.method),
        }
    }
}

/// A stateless request's work and what it tells its rounds.
struct Held {
    named: Named,
    /// The session its backend's questions come from (its capabilities are each round's).
    session: Arc<Session>,
    asker: Asker,
    /// The work, while the request's own task runs it (until its first question).
    work: Option<Operation>,
    /// The task that runs the work from its first question on (aborted when the call is
    /// dropped).
    driver: Option<tokio::task::AbortHandle>,
    events: mpsc::Receiver<Event>,
    /// The work's progress notifications.
    relay: mpsc::Receiver<Vec<u8>>,
    /// The questions of the last round, by key, with the method each asks.
    waiting: Vec<(String, String, oneshot::Sender<Answer>)>,
    /// The number of the last question's key.
    asked: u64,
    /// The session it came from: a stdio connection's calls are dropped when it ends
    /// ([`Holds::forget`]); an HTTP request's session ends with it, and any request may retry.
    connection: Weak<Session>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(driver) = &self.driver {
            driver.abort();
        }
    }
}

impl Held {
    /// The input requests of `questions`, each under a key of its own; a question that is no
    /// input request of the stateless era is answered with an error at once.
    fn questions(&mut self, questions: Vec<Question>) -> InputRequests {
        let mut requests = InputRequests::new();
        for question in questions {
            let request = json!({"method": question.method, "params": question.params});
            match serde_json::from_value::<InputRequest>(request) {
                Ok(request) => {
                    self.asked += 1;
                    let key = format!("input-{}", self.asked);
                    requests.insert(key.clone(), request);
                    self.waiting.push((key, question.method, question.answer));
                }
                Err(e) => {
                    let refused = ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!(
                            "{} cannot be asked of a client of the stateless era: {e}",
                            question.method
                        ),
                    );
                    let _ = question.answer.send(Err(refused));
                }
            }
        }
        requests
    }

    /// Moves the work onto a task of its own (the request's task is about to end), which
    /// tells its outcome to the next round.
    fn run_apart(&mut self) {
        let Some(work) = self.work.take() else { return };
        let done = self.asker.0.clone();
        let task = tokio::spawn(async move {
            let outcome = work.await;
            let _ = done.send(Event::Done(outcome)).await;
        });
        self.driver = Some(task.abort_handle());
    }
}

/// How a round passes on its work's progress.
enum Progress {
    /// As the work sends it: the round is the first, whose token the work has.
    AsSent,
    /// Under this token (a retry's own), or not at all.
    Retoken(Option<Value>),
}

impl Progress {
    /// `line` (a message of the work's) as the round's client gets it, if at all.
    fn line(&self, line: Vec<u8>) -> Option<Vec<u8>> {
        let Progress::Retoken(token) = self else {
            return Some(line);
        };
        let mut message: Value = serde_json::from_slice(&line).ok()?;
        if message["method"] != methods::PROGRESS {
            return Some(line);
        }
        message["params"]["progressToken"] = token.clone()?;
        Some(notification(methods::PROGRESS, message.get("params")))
    }
}

/// Runs `work` while the request's task holds it; never, once a task of its own does.
async fn run(work: &mut Option<Operation>) -> Outcome {
    match work {
        Some(work) => work.await,
        None => std::future::pending().await,
    }
}

/// A held call, by its request state, and its expiry.
struct Stored {
    held: Held,
    expiry: tokio::task::AbortHandle,
}

/// The calls held between rounds.
#[derive(Default)]
pub(crate) struct Holds {
    /// Shared with each call's expiry task.
    by_state: Arc<Mutex<HashMap<String, Stored>>>,
}

impl Holds {
    /// Drops the calls held for the stdio connection `connection` (it ended: no retry comes).
    pub(crate) fn forget(&self, connection: &Session) {
        let forgotten: Vec<Stored> = {
            let mut by_state = lock(&self.by_state);
            let states: Vec<String> = by_state
                .iter()
                .filter(|(_, stored)| std::ptr::eq(stored.held.connection.as_ptr(), connection))
                .map(|(state, _)| state.clone())
                .collect();
            states.iter().filter_map(|state| by_state.remove(state)).collect()
        };
        for stored in forgotten {
            stored.expiry.abort();
        }
    }

    /// Takes the call held under `state` for the retry `named`, handing it the retry's
    /// `responses`; the retry's `capabilities` are its client's from now on.
    fn resume(
        &self,
        state: &str,
        named: &Named,
        responses: Option<&JsonObject>,
        capabilities: ClientCapabilities,
    ) -> Result<Held, ErrorObject> {
        let refuse = |why: String| invalid_params(&named.method, why);
        let stored = {
            let mut by_state = lock(&self.by_state);
            let Some(stored) = by_state.get(state) else {
                return Err(refuse(format!(
                    "requestState is unknown or has expired: the gateway that answered input_required holds its \
                     call for {} s, and only that gateway (replica) knows it",
                    ASK_TIMEOUT.as_secs()
                )));
            };
            if stored.held.named != *named {
                return Err(refuse(format!(
                    "requestState belongs to {}, not to {named}",
                    stored.held.named
                )));
            }
            let missing = stored
                .held
                .waiting
                .iter()
                .find(|(key, ..)| !responses.is_some_and(|responses| responses.contains_key(key)));
            if let Some((key, method, _)) = missing {
                return Err(refuse(format!(
                    "inputResponses has no {key:?} (the answer to {method} the input_required result asked for)"
                )));
            }
            by_state.remove(state).expect("found above")
        };
        stored.expiry.abort();
        let mut held = stored.held;
        for (key, _, answer) in held.waiting.drain(..) {
            let value = responses
                .and_then(|responses| responses.get(&key))
                .unwrap_or(&Value::Null);
            let _ = answer.send(serde_json::value::to_raw_value(value).map_err(|e| refuse(e.to_string())));
        }
        *lock(&held.session.capabilities) = Some(capabilities);
        Ok(held)
    }

    /// Holds `held` under a new request state until a retry takes it, or it expires; the state.
    fn hold(&self, held: Held) -> Result<String, ErrorObject> {
        let state = random_id()
            .ok_or_else(|| ErrorObject::new(ErrorCode::INTERNAL_ERROR, "no randomness for a request state"))?;
        let mut by_state = lock(&self.by_state);
        if by_state.len() >= MAX_HELD {
            return Err(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the gateway holds {MAX_HELD} calls waiting for their clients' input already; try again later"),
            ));
        }
        let (expiring, holds) = (state.clone(), Arc::downgrade(&self.by_state));
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(ASK_TIMEOUT).await;
            if let Some(holds) = holds.upgrade() {
                let expired = lock(&holds).remove(&expiring);
                drop(expired);
            }
        });
        by_state.insert(
            state.clone(),
            Stored {
                held,
                expiry: expiry.abort_handle(),
            },
        );
        Ok(state)
    }
}

impl Gateway {
    /// Answers a stateless `tools/call`, `prompts/get` or `resources/read` of `connection`'s
    /// client: a first request starts its work, a retry resumes the held one; either is answered
    /// with the work's outcome or its backend's next questions.
    pub(crate) async fn answer_with_input(
        self: &Arc<Self>,
        connection: &Arc<Session>,
        request: &Request,
        stateless: Stateless,
        sink: &Sink,
    ) -> Outcome {
        let named = Named {
            method: request.method.clone().into_owned(),
            named: stateless.named,
        };
        let (held, progress) = match &stateless.request_state {
            Some(state) => {
                let held = self.holds.resume(
                    state,
                    &named,
                    stateless.input_responses.as_ref(),
                    stateless.capabilities,
                )?;
                (held, Progress::Retoken(stateless.progress_token))
            }
            None if stateless.input_responses.is_some() => {
                return Err(invalid_params(
                    &named.method,
                    "inputResponses without the requestState of the input_required result they answer",
                ));
            }
            None => (
                self.start_work(connection, request, named, stateless.capabilities),
                Progress::AsSent,
            ),
        };
        self.play(held, &progress, sink).await
    }

    /// The work of a first request, not started yet.
    fn start_work(
        self: &Arc<Self>,
        connection: &Arc<Session>,
        request: &Request,
        named: Named,
        capabilities: ClientCapabilities,
    ) -> Held {
        let (asks, events) = mpsc::channel(MAX_QUESTIONS);
        let (relay_sink, relay) = mpsc::channel(RELAY_CAPACITY);
        let asker = Asker(asks);
        let session = Session::asking(capabilities, asker.clone());
        let work = self.work(&session, request, relay_sink);
        Held {
            named,
            session,
            asker,
            work: Some(work),
            driver: None,
            events,
            relay,
            waiting: Vec::new(),
            asked: 0,
            connection: Arc::downgrade(connection),
        }
    }

    /// What `request` does, for `session`, its progress sent to `sink`: a tool call, or (noted
    /// as running on the server it reads from, so that its backend's questions find it) a
    /// prompt or a resource.
    fn work(self: &Arc<Self>, session: &Arc<Session>, request: &Request, sink: Sink) -> Operation {
        let (gateway, session, request) = (Arc::clone(self), Arc::clone(session), request.clone());
        Box::pin(async move {
            let method = request.method.as_ref();
            if method == methods::TOOLS_CALL {
                let mut result = gateway.call(&session, &request, &sink).await?;
                result.result_type = Some(plexus::protocol::ResultType::Complete);
                return serde_json::value::to_raw_value(&result).map_err(|e| crate::stateless::encode_failed(&e));
            }
            gateway.wait_ready().await;
            let params = params_of(&request)?;
            let server = gateway.server_of(method, &params).await;
            let _running = server.map(|server| gateway.start_running(RunsOn::Server(server), &session, &sink));
            let result = gateway.content(method, &params).await?;
            crate::stateless::complete(result, crate::stateless::caching(method))
        })
    }

    /// The server a `prompts/get` or `resources/read` with `params` goes to, if any has it.
    async fn server_of(&self, method: &str, params: &serde_json::Map<String, Value>) -> Option<String> {
        if method == methods::RESOURCES_READ {
            let uri = params.get("uri")?.as_str()?;
            return crate::uri::owner(uri).ok().map(|(server, _)| server.to_owned());
        }
        let name = params.get("name")?.as_str()?;
        let prompts = self.hub.prompts().await;
        prompts
            .entries
            .into_iter()
            .find(|entry| entry.name == name)
            .map(|entry| entry.server)
    }

    /// One round of `held`: its progress goes to `sink` until its work is done or its backend
    /// asks the client something (then it is held, and the round is answered with the
    /// questions).
    async fn play(self: &Arc<Self>, mut held: Held, progress: &Progress, sink: &Sink) -> Outcome {
        loop {
            let event = tokio::select! {
                biased;
                Some(line) = held.relay.recv() => {
                    if let Some(line) = progress.line(line) {
                        let _ = sink.try_send(line);
                    }
                    continue;
                }
                event = held.events.recv() => event,
                outcome = run(&mut held.work) => return outcome,
            };
            let first = match event {
                Some(Event::Done(outcome)) => return outcome,
                Some(Event::Asked(question)) => question,
                None => {
                    return Err(ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("{} ended without an outcome", held.named),
                    ));
                }
            };
            // This question, and those already waiting behind it.
            let mut questions = vec![first];
            while questions.len() < MAX_QUESTIONS {
                match held.events.try_recv() {
                    Ok(Event::Asked(question)) => questions.push(question),
                    Ok(Event::Done(outcome)) => return outcome,
                    Err(_) => break,
                }
            }
            // Those whose backend stopped waiting are not asked.
            questions.retain(|question| !question.answer.is_closed());
            let requests = held.questions(questions);
            if requests.is_empty() {
                continue;
            }
            held.run_apart();
            let state = self.holds.hold(held)?;
            let input = InputRequiredResult {
                input_requests: Some(requests),
                request_state: Some(state),
                meta: None,
                extra: JsonObject::new(),
            };
            return serde_json::value::to_raw_value(&input).map_err(|e| {
                ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("cannot encode the input_required result: {e}"),
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A held call of `tools/call` of "t" from `connection`, asked one question whose answer
    /// comes out of the receiver; its driver a task that waits forever.
    fn held(connection: &Arc<Session>) -> (Held, oneshot::Receiver<Answer>, tokio::task::JoinHandle<()>) {
        let (asks, events) = mpsc::channel(MAX_QUESTIONS);
        let (_, relay) = mpsc::channel(1);
        let asker = Asker(asks);
        let (answer, answered) = oneshot::channel();
        let driver = tokio::spawn(std::future::pending());
        let held = Held {
            named: Named {
                method: "tools/call".to_owned(),
                named: Some("t".to_owned()),
            },
            session: Session::asking(ClientCapabilities::default(), asker.clone()),
            asker,
            work: None,
            driver: Some(driver.abort_handle()),
            events,
            relay,
            waiting: vec![("input-1".to_owned(), "elicitation/create".to_owned(), answer)],
            asked: 1,
            connection: Arc::downgrade(connection),
        };
        (held, answered, driver)
    }

    fn call_of(tool: &str) -> Named {
        Named {
            method: "tools/call".to_owned(),
            named: Some(tool.to_owned()),
        }
    }

    #[tokio::test]
    async fn a_retry_must_repeat_its_request_and_answer_every_question() {
        let holds = Holds::default();
        let connection = Session::new(None);
        let (held, answered, _driver) = held(&connection);
        let state = holds.hold(held).unwrap();
        assert!(
            state.len() == 32 && state.bytes().all(|b| b.is_ascii_hexdigit()),
            "{state}"
        );
        let refused = |named: &Named, responses: Option<&JsonObject>| {
            holds
                .resume(&state, named, responses, ClientCapabilities::default())
                .err()
                .unwrap()
                .message
        };
        assert_eq!(
            refused(&call_of("u"), None),
            "invalid tools/call params: requestState belongs to tools/call of \"t\", not to tools/call of \"u\""
        );
        assert_eq!(
            refused(&call_of("t"), Some(&JsonObject::new())),
            "invalid tools/call params: inputResponses has no \"input-1\" (the answer to elicitation/create the \
             input_required result asked for)"
        );
        // Refusals keep the call held; the right retry takes it, and its answer goes on.
        let responses: JsonObject = [("input-1".to_owned(), json!({"action": "decline"}))]
            .into_iter()
            .collect();
        let resumed = holds
            .resume(&state, &call_of("t"), Some(&responses), ClientCapabilities::default())
            .unwrap();
        assert_eq!(answered.await.unwrap().unwrap().get(), r#"{"action":"decline"}"#);
        assert!(resumed.waiting.is_empty());
        // Once.
        assert!(refused(&call_of("t"), Some(&responses)).contains("requestState is unknown or has expired"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_call_expires_and_is_dropped_with_its_work() {
        let holds = Holds::default();
        let connection = Session::new(None);
        let (held, answered, driver) = held(&connection);
        let state = holds.hold(held).unwrap();
        tokio::time::sleep(ASK_TIMEOUT + Duration::from_secs(1)).await;
        assert!(lock(&holds.by_state).is_empty());
        assert!(driver.await.unwrap_err().is_cancelled());
        // Its question is never answered, and a retry is told why.
        assert!(answered.await.is_err());
        let error = holds
            .resume(&state, &call_of("t"), None, ClientCapabilities::default())
            .err()
            .unwrap();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }

    #[tokio::test]
    async fn the_calls_held_for_a_stdio_connection_go_with_it() {
        let holds = Holds::default();
        let (gone, stays) = (Session::new(None), Session::new(None));
        let (first, _, first_driver) = held(&gone);
        let (second, _, _second_driver) = held(&stays);
        holds.hold(first).unwrap();
        let kept = holds.hold(second).unwrap();
        holds.forget(&gone);
        assert!(first_driver.await.unwrap_err().is_cancelled());
        assert_eq!(lock(&holds.by_state).keys().collect::<Vec<_>>(), [&kept]);
    }

    #[tokio::test]
    async fn calls_held_are_bounded() {
        let holds = Holds::default();
        let connection = Session::new(None);
        for _ in 0..MAX_HELD {
            holds.hold(held(&connection).0).unwrap();
        }
        let (one_more, _, driver) = held(&connection);
        let error = holds.hold(one_more).err().unwrap();
        assert_eq!(
            error.message,
            format!("the gateway holds {MAX_HELD} calls waiting for their clients' input already; try again later")
        );
        assert!(driver.await.unwrap_err().is_cancelled());
    }

    fn line(message: &Value) -> Vec<u8> {
        serde_json::to_vec(message).unwrap()
    }

    #[test]
    fn a_retry_gets_the_calls_progress_under_its_own_token_or_none() {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "first", "progress": 1, "total": 2}});
        let other = json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
            "params": {"elicitationId": "e"}});
        assert_eq!(Progress::AsSent.line(line(&progress)), Some(line(&progress)));
        let retried = Progress::Retoken(Some(json!(7))).line(line(&progress)).unwrap();
        let retried: Value = serde_json::from_slice(&retried).unwrap();
        assert_eq!(
            retried["params"],
            json!({"progressToken": 7, "progress": 1, "total": 2})
        );
        assert_eq!(Progress::Retoken(None).line(line(&progress)), None);
        assert_eq!(Progress::Retoken(None).line(line(&other)), Some(line(&other)));
    }
}
