//! Small synchronisation helpers.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering from poisoning (no invariant of the pool spans a panic).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A random number for jitter (0 when the system has none to give).
pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => 0,
    }
}
