//! What reaches the user's terminal: text from servers and config files with its control
//! characters escaped, `plexus: …` messages on stderr, and the width tables must fit in.
//!
//! Server text (tool names, titles, descriptions, server info, errors, HTTP bodies, stderr tails)
//! and the content of config files a repository ships are untrusted: an ESC, OSC or BEL in them
//! could rewrite the terminal's title, clear the screen or hide text. Everything the CLI writes
//! for a person goes through [`line()`] (one-line fields: table cells, names) or [`block()`]
//! (multi-line text: messages, tool output), which keep it visible and inert; `--json` output is
//! left to JSON's own escaping.

use std::fmt::Display;
use std::io::{self, BufRead, IsTerminal, Read, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use nix::sys::termios::{LocalFlags, SetArg, Termios, tcgetattr, tcsetattr};

pub(crate) use plexus::tools::text::{escape_block as block, escape_line as line};

pub(crate) use plexus::transport::error_chain as chain;

/// Prints `error` on stderr as a `plexus: error: …` line, then each of its causes on a
/// `  caused by: …` line of its own (a cause the one before repeats is said once).
pub(crate) fn say_error(error: &dyn std::error::Error) {
    let mut causes = plexus::transport::error_causes(error).into_iter();
    let first = causes.next().unwrap_or_default();
    eprint!("{}", error_report(&first, causes));
}

/// Prints a `plexus: error: WHAT` line on stderr, then `cause` and its own causes on
/// `  caused by: …` lines: for an error whose own text says less than the command knows (a
/// call's qualified tool name).
pub(crate) fn say_failure(what: impl Display, cause: &dyn std::error::Error) {
    eprint!(
        "{}",
        error_report(&what.to_string(), plexus::transport::error_causes(cause))
    );
}

/// The lines of an error report, each escaped as a [`block`].
fn error_report(first: &str, causes: impl IntoIterator<Item = String>) -> String {
    let mut report = format!("plexus: error: {}\n", block(first));
    for cause in causes {
        report.push_str("  caused by: ");
        report.push_str(&block(&cause));
        report.push('\n');
    }
    report
}

/// Prints `message` on stderr as a `plexus: …` line, escaped as a [`block`].
pub(crate) fn say(message: impl Display) {
    eprintln!("plexus: {}", block(&message.to_string()));
}

/// Prints `text` on stdout, escaped as a [`block`], ending in one newline (its own, if it has
/// one: a resource's text that ends a line is not followed by an empty one).
pub(crate) fn print_block(text: &str) {
    match text.strip_suffix('\n') {
        Some(line) => outln!("{}", block(line)),
        None => outln!("{}", block(text)),
    }
}

/// `--quiet`: no progress (connect lines, spinners, bars) and no notes, only results, warnings
/// and errors.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Turns `--quiet` on for the rest of the command.
pub(crate) fn set_quiet() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Whether `--quiet` is on.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Prints `message` like [`say`], unless `--quiet` is on: for notes a script does not need.
pub(crate) fn note(message: impl Display) {
    if !quiet() {
        say(message);
    }
}

/// What became of stdout: [`STDOUT_OPEN`], [`STDOUT_CLOSED`] or [`STDOUT_FAILED`].
static STDOUT: AtomicU8 = AtomicU8::new(STDOUT_OPEN);
/// Every write so far reached stdout.
const STDOUT_OPEN: u8 = 0;
/// Its reader went away (a closed pipe: `plexus tools | head -1`): the rest is dropped quietly.
const STDOUT_CLOSED: u8 = 1;
/// A write failed for another reason (a full disk), which was said on stderr.
const STDOUT_FAILED: u8 = 2;

/// Writes `text` on stdout, then a newline when `newline`. Nothing on stdout ever panics: when
/// its reader has gone (a broken pipe) the rest of the output is dropped quietly and the command
/// ends as it would have; any other failure is said once on stderr and the command fails (see
/// [`stdout_failed`]). Used through [`outln!`] and [`out!`].
pub(crate) fn write_out(text: std::fmt::Arguments<'_>, newline: bool) {
    if STDOUT.load(Ordering::Relaxed) != STDOUT_OPEN {
        return;
    }
    let mut stdout = io::stdout().lock();
    let written = stdout
        .write_fmt(text)
        .and_then(|()| if newline { stdout.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| if newline { Ok(()) } else { stdout.flush() });
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => STDOUT.store(STDOUT_CLOSED, Ordering::Relaxed),
        Err(e) => {
            STDOUT.store(STDOUT_FAILED, Ordering::Relaxed);
            drop(stdout);
            say(format_args!("cannot write the output: {e}"));
        }
    }
}

/// Whether writing stdout failed for another reason than its reader going away (said already).
pub(crate) fn stdout_failed() -> bool {
    STDOUT.load(Ordering::Relaxed) == STDOUT_FAILED
}

/// `println!` for the command's output: see [`write_out`].
macro_rules! outln {
    () => {
        $crate::terminal::write_out(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::terminal::write_out(format_args!($($arg)*), true)
    };
}

/// `print!` for the command's output: see [`write_out`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::terminal::write_out(format_args!($($arg)*), false)
    };
}

pub(crate) use {out, outln};

/// The width tables must fit in: the terminal's when stdout is one, else `$COLUMNS` when set,
/// else none.
pub(crate) fn width() -> Option<usize> {
    if std::io::stdout().is_terminal()
        && let Some((terminal_size::Width(columns), _)) = terminal_size::terminal_size()
    {
        return Some(usize::from(columns));
    }
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&n: &usize| n > 0)
}

/// The longest answer read for one input (64 KiB).
const MAX_ANSWER: u64 = 64 * 1024;

/// One line from the terminal, without its line ending; `None` at end of input.
pub(crate) fn read_answer(hidden: bool) -> io::Result<Option<String>> {
    let echo_off = if hidden { EchoOff::start() } else { None };
    let mut line = String::new();
    let read = io::stdin().lock().take(MAX_ANSWER).read_line(&mut line);
    if echo_off.is_some() {
        drop(echo_off);
        // The user's Enter was not echoed either.
        eprintln!();
    }
    if read? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
}

/// The terminal's echo turned off until this is dropped.
struct EchoOff {
    saved: Termios,
}

impl EchoOff {
    /// `None` if the terminal's settings cannot be changed (the answer is then echoed).
    fn start() -> Option<EchoOff> {
        let saved = tcgetattr(io::stdin()).ok()?;
        let mut quiet = saved.clone();
        quiet.local_flags.remove(LocalFlags::ECHO);
        tcsetattr(io::stdin(), SetArg::TCSANOW, &quiet).ok()?;
        Some(EchoOff { saved })
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        let _ = tcsetattr(io::stdin(), SetArg::TCSANOW, &self.saved);
    }
}
