//! plexus's own secret variables ([`plexus::SECRET_VARIABLES`]: the session ingress token and
//! its file, the gateway's token), taken out of the process environment when the command
//! starts: no child inherits them, and a process reading `/proc/<plexus>/environ` (the block the
//! process started with, which removing a variable leaves in place) finds their values
//! overwritten. The command reads them from the copy kept here, through [`environment`].
//!
//! On Linux the process is also made non-dumpable: no core file holds its memory, and only root
//! can read its `/proc` files (environment, memory) or attach a debugger to it.

use std::ffi::CString;
use std::sync::OnceLock;

use plexus::config::Environment;

/// The secret variables that were set, with their values, once [`take`] ran.
static TAKEN: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();

/// Moves the secret variables out of the process environment into this module, overwriting
/// their values, and makes the process non-dumpable. Must run before any other thread starts
/// (`main` calls it first).
pub(crate) fn take() {
    let mut taken = Vec::new();
    for name in plexus::SECRET_VARIABLES {
        let Some(value) = std::env::var_os(name) else { continue };
        scrub(name);
        // A value that is not Unicode counts as unset, as for every variable plexus reads.
        if let Ok(value) = value.into_string() {
            taken.push((name, value));
        }
    }
    let _ = TAKEN.set(taken);
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::debug!("could not make plexus non-dumpable: {e}");
    }
}

/// Overwrites the value of variable `name` with zero bytes where it is stored, then removes the
/// variable.
#[allow(unsafe_code)]
fn scrub(name: &str) {
    let Ok(c_name) = CString::new(name) else { return };
    // SAFETY: no other thread exists yet (`main` calls `take` before the runtime, tracing, or
    // anything else that may start one), so nothing reads or changes the environment meanwhile.
    // `getenv` gives the address of the value's bytes, NUL-terminated, in memory the process
    // owns and may write (the environment block on the initial stack, or what `setenv`
    // allocated); the bytes up to the NUL are overwritten, the NUL is kept, and no reference to
    // them exists in Rust (the value was copied out first). `remove_var` then drops the entry.
    unsafe {
        let value = libc::getenv(c_name.as_ptr());
        if !value.is_null() {
            let length = libc::strlen(value);
            std::ptr::write_bytes(value, 0, length);
        }
        std::env::remove_var(name);
    }
}

/// The value of secret variable `name`, as it was when the command started.
pub(crate) fn get(name: &str) -> Option<String> {
    TAKEN
        .get()?
        .iter()
        .find(|(taken, _)| *taken == name)
        .map(|(_, value)| value.clone())
}

/// The process environment, with the secret variables as they were when the command started.
pub(crate) fn environment() -> Environment {
    let process = Environment::process();
    Environment::from_fn(move |name| {
        if plexus::SECRET_VARIABLES.contains(&name) {
            get(name)
        } else {
            process.get(name)
        }
    })
}
