//! Every limit and wait of the pool, with its default and the environment variable that sets it.

use std::time::Duration;

/// `MCP_SERVER_CONNECTION_BATCH_SIZE`: how many local (stdio) servers connect at once.
pub const LOCAL_BATCH_VAR: &str = "MCP_SERVER_CONNECTION_BATCH_SIZE";
/// `MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`: how many remote servers connect at once.
pub const REMOTE_BATCH_VAR: &str = "MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE";
/// `PLEXUS_LIST_CACHE_SERVERS`: how many servers' lists each list cache keeps.
pub const LIST_CACHE_VAR: &str = "PLEXUS_LIST_CACHE_SERVERS";
/// `PLEXUS_PING_INTERVAL`: the liveness ping's interval in milliseconds (unset: no ping).
pub const PING_INTERVAL_VAR: &str = "PLEXUS_PING_INTERVAL";

/// How a pool behaves. [`Default`] gives the documented defaults; [`from_env`](Self::from_env)
/// reads the variables above over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSettings {
    /// How many local (stdio) servers connect at once: a sliding window, 3 by default.
    pub local_connects: usize,
    /// How many remote servers connect at once: a sliding window, 20 by default.
    pub remote_connects: usize,
    /// How many servers' lists each list cache (tools, resources, resource templates, prompts)
    /// keeps, least recently used first out: 20 by default.
    pub list_cache_servers: usize,
    /// The wait after the first reconnect attempt of a remote server whose connection was lost
    /// (the first one is at once): 1 s; each further wait doubles, with jitter.
    pub reconnect_delay: Duration,
    /// The longest wait between two reconnect attempts: 30 s.
    pub max_reconnect_delay: Duration,
    /// How many attempts one reconnection makes before the server stays `failed` until asked
    /// again: 5.
    pub reconnect_attempts: u32,
    /// How many times a stdio server may die within [`crash_window`](Self::crash_window) before
    /// it is no longer restarted on demand (only by an explicit
    /// [`Pool::reconnect`](crate::Pool::reconnect)): 3.
    pub crash_limit: usize,
    /// The window of the crash-loop guard: 1 minute.
    pub crash_window: Duration,
    /// How many terminal I/O failures in a row (ECONNRESET, ETIMEDOUT, EPIPE, …) close a
    /// connection: 3. A success resets the count.
    pub terminal_failures: u32,
    /// How long a server that needs authentication is not tried again, when its connector does
    /// not say: 15 minutes (the needs-auth cache's time).
    pub needs_auth_retry: Duration,
    /// The liveness ping's interval: none by default. A connection whose ping fails or is not
    /// answered within the interval (at most the request timeout) is closed as lost.
    pub ping_interval: Option<Duration>,
    /// How many events a subscriber may fall behind before it misses the oldest: 1024.
    pub event_capacity: usize,
    /// The longest server instructions kept, in characters: 2048.
    pub max_instructions_chars: usize,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            local_connects: 3,
            remote_connects: 20,
            list_cache_servers: 20,
            reconnect_delay: Duration::from_secs(1),
            max_reconnect_delay: Duration::from_secs(30),
            reconnect_attempts: 5,
            crash_limit: 3,
            crash_window: Duration::from_secs(60),
            terminal_failures: 3,
            needs_auth_retry: Duration::from_secs(15 * 60),
            ping_interval: None,
            event_capacity: 1024,
            max_instructions_chars: crate::text::MAX_TEXT_CHARS,
        }
    }
}

impl PoolSettings {
    /// The defaults with the process environment's `MCP_SERVER_CONNECTION_BATCH_SIZE`,
    /// `MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`, `PLEXUS_LIST_CACHE_SERVERS` and
    /// `PLEXUS_PING_INTERVAL` (ms) over them.
    pub fn from_env() -> PoolSettings {
        PoolSettings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), looking variables up with `lookup`. A value that is
    /// not a positive integer is ignored with a warning.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> PoolSettings {
        let number = |name: &str| -> Option<u64> {
            let value = lookup(name)?;
            match value.trim().parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    tracing::warn!("ignoring {name}={value:?}: expected a positive integer");
                    None
                }
            }
        };
        let size = |name: &str| number(name).map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let mut settings = PoolSettings::default();
        if let Some(n) = size(LOCAL_BATCH_VAR) {
            settings.local_connects = n;
        }
        if let Some(n) = size(REMOTE_BATCH_VAR) {
            settings.remote_connects = n;
        }
        if let Some(n) = size(LIST_CACHE_VAR) {
            settings.list_cache_servers = n;
        }
        if let Some(ms) = number(PING_INTERVAL_VAR) {
            settings.ping_interval = Some(Duration::from_millis(ms));
        }
        settings
    }

    /// The wait before reconnect attempt `attempt` (1 for the first): the delay doubled per
    /// attempt, capped, then a random part of up to a quarter of it taken off, so that many
    /// clients do not come back at the same instant.
    pub fn reconnect_wait(&self, attempt: u32, random: u64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(20);
        let base = self
            .reconnect_delay
            .saturating_mul(1 << doublings)
            .min(self.max_reconnect_delay);
        let quarter = base.as_millis() as u64 / 4;
        let jitter = if quarter == 0 { 0 } else { random % (quarter + 1) };
        base.saturating_sub(Duration::from_millis(jitter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_environment_sets_the_windows_the_cache_and_the_ping() {
        let settings = PoolSettings::from_lookup(|name| match name {
            LOCAL_BATCH_VAR => Some("5".into()),
            REMOTE_BATCH_VAR => Some(" 7 ".into()),
            LIST_CACHE_VAR => Some("0".into()),
            PING_INTERVAL_VAR => Some("250".into()),
            _ => None,
        });
        assert_eq!(settings.local_connects, 5);
        assert_eq!(settings.remote_connects, 7);
        assert_eq!(settings.list_cache_servers, 20, "0 is ignored");
        assert_eq!(settings.ping_interval, Some(Duration::from_millis(250)));
        assert_eq!(PoolSettings::from_lookup(|_| None), PoolSettings::default());
    }

    #[test]
    fn reconnect_waits_double_from_one_second() {
        let settings = PoolSettings::default();
        let waits: Vec<u64> = (1..=6)
            .map(|a| settings.reconnect_wait(a, 0).as_millis() as u64)
            .collect();
        assert_eq!(waits, [1000, 2000, 4000, 8000, 16000, 30000]);
    }

    proptest! {
        #[test]
        fn jitter_takes_off_at_most_a_quarter(attempt in 1u32..40, random in any::<u64>()) {
            let settings = PoolSettings::default();
            let full = settings.reconnect_wait(attempt, 0);
            let wait = settings.reconnect_wait(attempt, random);
            prop_assert!(wait <= full && wait + full / 4 + Duration::from_millis(1) >= full);
        }
    }
}
