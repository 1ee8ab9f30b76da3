//! Spawn failures and the ways a server goes away, each with the error text a user sees.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{HANG_GUARD, notification, recv, recv_message, sh};
use plexus_stdio::{StdioConfig, StdioTransport};
use plexus_transport::{
    CloseReason, ErrorClass, ProcessExit, ServerOutput, TransportError, TransportSender, error_chain,
};

fn spawn_error(config: StdioConfig) -> String {
    let error = StdioTransport::spawn(config).unwrap_err();
    assert_eq!(error.class(), ErrorClass::Connect, "{error:?}");
    plexus_transport::error_chain(&error)
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_named() {
    assert_eq!(
        spawn_error(StdioConfig::new("nonexistent-cmd")),
        "could not connect to nonexistent-cmd: command not found: nonexistent-cmd"
    );
    assert_eq!(
        spawn_error(StdioConfig::new("/nonexistent/dir/server").arg("--stdio")),
        "could not connect to /nonexistent/dir/server --stdio: command not found: /nonexistent/dir/server"
    );
}

#[tokio::test]
async fn a_file_that_is_not_executable_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\nexec cat\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = script.to_str().unwrap();
    assert_eq!(
        spawn_error(StdioConfig::new(path)),
        format!("could not connect to {path}: permission denied: {path}")
    );
}

#[tokio::test]
async fn a_script_whose_interpreter_is_missing_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = script.to_str().unwrap();
    assert_eq!(
        spawn_error(StdioConfig::new(path)),
        format!("could not connect to {path}: {path} exists but its interpreter was not found (check its #! line)")
    );
}

#[tokio::test]
async fn a_bad_working_directory_is_named() {
    assert_eq!(
        spawn_error(StdioConfig::new("cat").cwd("/nonexistent/work/dir")),
        "could not connect to cat: the working directory /nonexistent/work/dir does not exist"
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().to_str().unwrap();
    assert_eq!(
        spawn_error(StdioConfig::new("cat").cwd(path)),
        format!("could not connect to cat: the working directory {path} is not a directory")
    );
    assert_eq!(
        spawn_error(StdioConfig::new("")),
        "could not connect to '': the command is empty"
    );
}

#[test]
fn spawning_outside_a_runtime_is_an_error_not_a_panic() {
    assert_eq!(
        spawn_error(StdioConfig::new("cat")),
        "could not connect to cat: a stdio server must be spawned from within a Tokio runtime"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_status_comes_with_the_tail_of_stderr() {
    let script =
        r#"echo '{"jsonrpc":"2.0","method":"hello"}'; echo "starting up" >&2; echo "fatal: no config" >&2; exit 3"#;
    let transport = StdioTransport::spawn(sh(script, &[])).unwrap();
    let pgid = transport.pid();
    let (sender, mut receiver) = transport.into_parts();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("hello"));
    let closed = recv(&mut receiver).await.unwrap_err();
    let TransportError::Closed { reason, stderr_tail } = &closed else {
        panic!("Closed, not {closed:?}")
    };
    assert!(
        matches!(reason, CloseReason::Exited(ProcessExit::Code(3))),
        "{reason:?}"
    );
    assert_eq!(stderr_tail.as_deref(), Some("starting up\nfatal: no config\n"));
    assert_eq!(
        closed.to_string(),
        "the connection is closed: the server exited with status 3\n--- last stderr output of the server ---\nstarting up\nfatal: no config"
    );
    // Every later poll says closed, and so does every send.
    for _ in 0..3 {
        let again = recv(&mut receiver).await.unwrap_err();
        assert!(
            matches!(&again, TransportError::Closed { reason, .. } if reason.to_string() == "the server exited with status 3"),
            "{again:?}"
        );
    }
    assert!(sender.is_closed());
    // A late send says why the server went away, stderr tail included.
    let send = sender.send(notification("late")).await.unwrap_err();
    assert_eq!(send.to_string(), closed.to_string());
    // Closing a transport whose server is gone only finishes the cleanup; twice is harmless.
    tokio::time::timeout(HANG_GUARD, sender.close()).await.unwrap().unwrap();
    tokio::time::timeout(HANG_GUARD, sender.close()).await.unwrap().unwrap();
    common::assert_group_gone(pgid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_by_a_signal_says_which() {
    let (_sender, mut receiver) = StdioTransport::spawn(sh("kill -KILL $$", &[])).unwrap().into_parts();
    let closed = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(&closed, TransportError::Closed { reason, stderr_tail: Some(tail) } if reason.to_string() == "the server was killed by signal SIGKILL" && tail.is_empty()),
        "{closed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closes_its_stdout_but_runs_on_is_reported() {
    let transport = StdioTransport::spawn(sh("exec >&-; echo 'closing stdout' >&2; exec sleep 1000", &[])).unwrap();
    let pgid = transport.pid();
    let (sender, mut receiver) = transport.into_parts();
    let closed = recv(&mut receiver).await.unwrap_err();
    let TransportError::Closed { reason, stderr_tail } = &closed else {
        panic!("Closed, not {closed:?}")
    };
    assert!(
        matches!(
            reason,
            CloseReason::EndOfOutput {
                output: ServerOutput::Stdout,
                mid_message: false
            }
        ),
        "{reason:?}"
    );
    assert_eq!(stderr_tail.as_deref(), Some("closing stdout\n"));
    assert!(sender.is_closed());
    // The server is still running until the client closes the transport.
    assert!(!common::group_is_gone(pgid));
    sender.close().await.unwrap();
    common::assert_group_gone(pgid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_stdin_fails_sends_and_the_receiver_still_gives_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    // The server closes its stdin, says so, and exits with 4 once the test has seen the failure.
    let script = r#"exec <&-; echo '{"jsonrpc":"2.0","method":"stdin-closed"}'; while [ ! -e "$1" ]; do sleep 0.01; done; exit 4"#;
    let (sender, mut receiver) = StdioTransport::spawn(sh(script, &[go.to_str().unwrap()]))
        .unwrap()
        .into_parts();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("stdin-closed"));
    // The first send is queued; the writer's EPIPE fails the sends after it.
    let failure = tokio::time::timeout(HANG_GUARD, async {
        loop {
            if let Err(e) = sender.send(notification("into the void")).await {
                return e;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(failure.class(), ErrorClass::TerminalIo, "{failure:?}");
    assert_eq!(
        error_chain(&failure),
        "writing to the server's stdin: Broken pipe (os error 32)"
    );
    assert!(sender.is_closed());
    std::fs::write(&go, "").unwrap();
    let closed = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(&closed, TransportError::Closed { reason, .. } if reason.to_string() == "the server exited with status 4"),
        "{closed:?}"
    );
}
