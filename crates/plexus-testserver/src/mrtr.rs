//! The tools that need the client, in the stateless era (SEP-2322, multi-round-trip requests):
//! `elicit`, `sample` and `roots` answer a call with `input_required` (one input request and a
//! request state), and the retry that carries the client's answer and echoes the state byte for
//! byte gets the tool's result. A state this server did not issue, or an answer without one, is
//! refused, so that a client that invents, alters or drops the state fails visibly.

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue};
use serde_json::{Map, Value, json};

use crate::server::{ClientRequestError, Session, lock, raw};
use crate::tools::{
    ElicitArgs, MAX_ELICIT_ROUNDS, SampleArgs, arguments, at_most, elicit_outcome, roots_outcome, sample_outcome,
    sample_params, tool_error,
};

/// The most request states one server remembers (the oldest is forgotten first).
const MAX_ISSUED_STATES: usize = 1024;

/// The key of the one input request a tool makes.
const INPUT_KEY: &str = "input";

type Outcome = Result<Box<RawValue>, ErrorObject>;

/// The request states a server issued and no retry echoed yet, oldest first.
#[derive(Debug, Default)]
pub(crate) struct IssuedStates {
    /// Each state, with the rounds left after it.
    states: std::collections::VecDeque<(String, u64)>,
    /// How many states the server issued.
    issued: u64,
}

impl Session {
    /// Whether the session speaks the stateless era.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One round of the tool `name`: without the client's answer, `input_required`; with it (and
    /// the state echoed), the tool's result. A client whose envelope (`declared`) lacks the
    /// capability the input request needs is not asked: the tool fails, as in the `initialize`
    /// era.
    pub(crate) fn input_round(
        &self,
        name: &str,
        args: Option<&RawValue>,
        declared: Option<&Map<String, Value>>,
        responses: Option<&Map<String, Value>>,
        state: Option<&str>,
    ) -> Outcome {
        let capability = match name {
            "elicit" => "elicitation",
            "sample" => "sampling",
            _ => "roots",
        };
        if !declared.is_some_and(|declared| declared.contains_key(capability)) {
            return tool_error(&ClientRequestError::NotDeclared { capability }.to_string());
        }
        let (method, params, rounds) = match name {
            "elicit" => {
                let ElicitArgs { message, rounds, .. } = arguments(name, args)?;
                let rounds = at_most(name, "rounds", u64::from(rounds.max(1)), u64::from(MAX_ELICIT_ROUNDS))?;
                ("elicitation/create", self.elicit_params(&message), rounds)
            }
            "sample" => {
                let SampleArgs { prompt, max_tokens } = arguments(name, args)?;
                ("sampling/createMessage", sample_params(&prompt, max_tokens), 1)
            }
            _ => ("roots/list", json!({}), 1),
        };
        let ask = |left: u64| {
            raw(&json!({
                "resultType": "input_required",
                "inputRequests": {INPUT_KEY: {"method": method, "params": params}},
                "requestState": self.issue_state(name, left),
            }))
        };
        let Some(answer) = responses.and_then(|responses| responses.get(INPUT_KEY)) else {
            return ask(rounds);
        };
        let refused = |message: String| Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, message));
        let left = match state {
            Some(state) => match self.take_state(state) {
                Some(left) => left,
                None => return refused(format!("requestState {state:?} is not one this server issued")),
            },
            None => {
                return refused(
                    "the retry has no requestState: echo the one the input_required result carried".to_owned(),
                );
            }
        };
        if left > 1 {
            return ask(left - 1);
        }
        let answer = RawValue::from_string(answer.to_string())
            .map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("inputResponses.{INPUT_KEY}: {e}")))?;
        match name {
            "elicit" => elicit_outcome(Ok(answer)),
            "sample" => sample_outcome(Ok(answer)),
            _ => roots_outcome(Ok(answer)),
        }
    }

    /// A new request state for a round of `tool` with `left` rounds to go, remembered until a
    /// retry echoes it.
    fn issue_state(&self, tool: &str, left: u64) -> String {
        let mut issued_states = lock(&self.server.request_states);
        issued_states.issued += 1;
        // Characters a client might be tempted to normalize, so that only a byte-exact echo passes.
        let issued = format!(
            "{{\"tool\": \"{tool}\", \"round\": {}, \"left\": {left}, \"note\": \"é \\u00e9\"}}",
            issued_states.issued
        );
        if issued_states.states.len() == MAX_ISSUED_STATES {
            issued_states.states.pop_front();
        }
        issued_states.states.push_back((issued.clone(), left));
        issued
    }

    /// The rounds left of the state `echoed`, if this server issued it (it can be used once).
    fn take_state(&self, echoed: &str) -> Option<u64> {
        let mut issued_states = lock(&self.server.request_states);
        let at = issued_states.states.iter().position(|(issued, _)| issued == echoed)?;
        issued_states.states.remove(at).map(|(_, left)| left)
    }
}
