//! Backends that cannot serve, made visible to the gateway's clients: a log message when one
//! fails or needs a login (error and warning level, the server's name as the logger), once per
//! failure to each client that has initialized, and the answer to a call of a tool that such a
//! server would hold, instead of "no tool".

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use plexus::pool::{ServerState, ServerStatus};
use plexus::protocol::LoggingLevel;
use plexus::protocol::methods;
use serde_json::json;

use crate::gateway::Gateway;
use crate::session::{Session, lock, notification};

/// The most characters of one server's failure that a client is sent (its error may carry the
/// server's stderr).
const MAX_REASON_CHARS: usize = plexus::pool::text::MAX_TEXT_CHARS;

/// A backend that is down, as the clients are told.
#[derive(Debug, Clone)]
struct Down {
    /// This failure's number: a server that comes back and fails again is told anew.
    failure: u64,
    level: LoggingLevel,
    /// What the clients are told (see [`unavailable`]).
    text: String,
}

/// The backends that are down now.
#[derive(Debug, Default)]
pub(super) struct Health {
    down: Mutex<BTreeMap<String, Down>>,
    /// The number of the next failure.
    next: AtomicU64,
}

impl Health {
    /// Takes in the servers' states; whether a server went down that was not before. A server
    /// stays down from its failure until it connects (a reconnect that fails again, as the
    /// gateway's retries do, is the same failure, with its newest reason).
    fn update(&self, states: &[(String, ServerState)]) -> bool {
        let mut new = false;
        for (server, state) in states {
            new |= self.update_one(server, state);
        }
        // A server that left the pool is no one's concern.
        lock(&self.down).retain(|server, _| states.iter().any(|(name, _)| name == server));
        new
    }

    /// Takes in one server's state (as an event told it: the server may be up again by now);
    /// whether it went down and was not before.
    fn update_one(&self, server: &str, state: &ServerState) -> bool {
        let mut down = lock(&self.down);
        match state.status {
            ServerStatus::Failed | ServerStatus::NeedsAuth => {
                let Some((level, text)) = unavailable(server, state) else {
                    return false;
                };
                match down.get_mut(server) {
                    // The same kind of failure: its reason may be newer.
                    Some(known) if known.level == level => {
                        known.text = text;
                        false
                    }
                    _ => {
                        let failure = self.next.fetch_add(1, Ordering::Relaxed);
                        down.insert(server.to_owned(), Down { failure, level, text });
                        true
                    }
                }
            }
            ServerStatus::Connected => {
                down.remove(server);
                false
            }
            // Starting again, or turned off: what was told still holds.
            ServerStatus::Pending | ServerStatus::Connecting | ServerStatus::Disabled => false,
        }
    }
}

/// What a client is told of `server` in `state` (at what level), or `None` when it serves or is
/// still starting: the server's error (its control characters escaped, at most
/// [`MAX_REASON_CHARS`] characters), or why it is not started.
pub(super) fn unavailable(server: &str, state: &ServerState) -> Option<(LoggingLevel, String)> {
    let why = || {
        let why = match (&state.error, &state.reason) {
            (Some(error), _) => plexus::pool::text::without_server(server, &error.to_string()).to_owned(),
            (None, Some(reason)) => reason.clone(),
            (None, None) => "no reason was given".to_owned(),
        };
        let why = plexus::tools::text::escape_block(&why).into_owned();
        plexus::pool::text::truncate_chars(&why, MAX_REASON_CHARS).into_owned()
    };
    let (level, what) = match state.status {
        ServerStatus::Failed => (LoggingLevel::Error, "is unavailable"),
        ServerStatus::NeedsAuth => (LoggingLevel::Warning, "is unavailable"),
        // Waiting for approval, refused by policy, or turned off.
        ServerStatus::Disabled => (LoggingLevel::Warning, "is not started"),
        ServerStatus::Pending if state.reason.is_some() => (LoggingLevel::Warning, "is not started"),
        ServerStatus::Pending | ServerStatus::Connecting | ServerStatus::Connected => return None,
    };
    Some((level, format!("server {server:?} {what}: {}", why())))
}

impl Gateway {
    /// Takes in the pool's states, and tells every client of a server that went down.
    pub(super) fn follow_health(&self) {
        if self.health.update(&self.hub.pool().states()) {
            self.tell_everyone_down();
        }
    }

    /// Takes in one server's state as an event told it (it may be up again by now: a failure
    /// is told even when the server was started again at once), and tells every client of a
    /// server that went down.
    pub(super) fn follow_state(&self, server: &str, state: &ServerState) {
        if self.health.update_one(server, state) {
            self.tell_everyone_down();
        }
    }

    fn tell_everyone_down(&self) {
        for session in self.live_sessions() {
            self.tell_down(&session);
        }
    }

    /// Tells `session` of each server that is down and that it was not told of yet, once it has
    /// initialized and has its own stream, at a level it wants.
    pub(super) fn tell_down(&self, session: &Session) {
        // A listen asks for no log messages.
        if !session.is_initialized() || session.listen.is_some() {
            return;
        }
        let Some(out) = lock(&session.out).clone() else {
            return;
        };
        let down = lock(&self.health.down).clone();
        let wanted = *lock(&session.log_level);
        // Held while sending: a failure is told once even when two callers get here at once.
        let mut told = lock(&session.told_down);
        for (server, down) in down {
            if told.get(&server) == Some(&down.failure) {
                continue;
            }
            if wanted.is_none_or(|level| down.level >= level) {
                let params = json!({"level": down.level, "logger": server, "data": down.text});
                // A client too slow to take it misses it, as other log messages.
                let _ = out.try_send(notification(methods::LOGGING_MESSAGE, Some(&params)));
            }
            told.insert(server, down.failure);
        }
    }

    /// Why a call of `name` finds no tool although a server could hold it: each such server
    /// that is down or not started, and why; `None` when no server that could hold it is.
    pub(super) fn why_unavailable(&self, name: &str) -> Option<String> {
        let reasons: Vec<String> = self
            .hub
            .pool()
            .states()
            .iter()
            .filter(|(server, _)| plexus::tools::naming::may_belong_to(server, name))
            .filter_map(|(server, state)| unavailable(server, state).map(|(_, text)| text))
            .collect();
        (!reasons.is_empty()).then(|| reasons.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: ServerStatus, error: Option<&str>) -> ServerState {
        ServerState {
            status,
            reason: None,
            error: error.map(|text| plexus::pool::ConnectFailure::failed(std::io::Error::other(text.to_owned()))),
            changed_at: std::time::SystemTime::now(),
            connect_time: None,
            note: None,
            reconnect_attempt: 0,
        }
    }

    fn told(health: &Health) -> Vec<(String, u64, String)> {
        lock(&health.down)
            .iter()
            .map(|(server, down)| (server.clone(), down.failure, down.text.clone()))
            .collect()
    }

    #[test]
    fn a_failure_is_new_once_until_the_server_connects() {
        let health = Health::default();
        let failed = |why| vec![("s".to_owned(), state(ServerStatus::Failed, Some(why)))];
        assert!(health.update(&failed("server \"s\": refused")));
        assert_eq!(
            told(&health),
            [("s".to_owned(), 0, "server \"s\" is unavailable: refused".to_owned())]
        );
        // Tried again and failed again: the same failure, with its newest reason.
        assert!(!health.update(&[("s".to_owned(), state(ServerStatus::Connecting, None))]));
        assert!(!health.update(&failed("reset")));
        assert_eq!(
            told(&health),
            [("s".to_owned(), 0, "server \"s\" is unavailable: reset".to_owned())]
        );
        // Back, then down again: a new failure.
        assert!(!health.update(&[("s".to_owned(), state(ServerStatus::Connected, None))]));
        assert!(told(&health).is_empty());
        assert!(health.update(&failed("gone")));
        assert_eq!(told(&health)[0].1, 1);
        // A server no longer in the pool is forgotten.
        assert!(!health.update(&[]));
        assert!(told(&health).is_empty());
    }

    #[test]
    fn what_a_client_is_told_is_inert_and_bounded() {
        let hostile = format!("\u{1b}]0;pwned\u{7}{}", "x".repeat(5000));
        let (level, text) = unavailable("s", &state(ServerStatus::Failed, Some(&hostile))).unwrap();
        assert_eq!(level, LoggingLevel::Error);
        assert!(
            text.starts_with("server \"s\" is unavailable: \\x1b]0;pwned\\x07xxx"),
            "{text}"
        );
        assert!(text.chars().count() <= MAX_REASON_CHARS + 40, "{}", text.len());
        let (level, text) = unavailable("s", &state(ServerStatus::NeedsAuth, None)).unwrap();
        assert_eq!(
            (level, text.as_str()),
            (
                LoggingLevel::Warning,
                "server \"s\" is unavailable: no reason was given"
            )
        );
        let mut pending = state(ServerStatus::Pending, None);
        assert_eq!(unavailable("s", &pending), None);
        pending.reason = Some("waiting for approval".to_owned());
        assert_eq!(
            unavailable("s", &pending).unwrap().1,
            "server \"s\" is not started: waiting for approval"
        );
        assert_eq!(unavailable("s", &state(ServerStatus::Connected, None)), None);
    }
}
