//! `examples/embed.rs`, the README's embedding example, run as a user runs it: its own process,
//! a plexus home whose user settings name the test server (Streamable HTTP on 127.0.0.1, in the
//! test's process), the tool pool printed and one tool called; and `examples/in_process.rs`, a
//! server in the host's own process and a cancelled call.

use std::path::PathBuf;

use plexus_testserver::RemoteServer;
use serde_json::json;

/// An example's binary, which `cargo test` builds next to the test binaries.
fn example_named(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    dir.join("examples").join(name)
}

fn example() -> PathBuf {
    example_named("embed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedding_example_lists_the_tool_pool_and_calls_a_tool() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join(".plexus").join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"mcpServers": {"demo": {"type": "http", "url": server.url()}}}).to_string(),
    )
    .unwrap();
    assert!(
        example().exists(),
        "{} is not built: `cargo test -p plexus` builds it (or `cargo build --example embed -p plexus`)",
        example().display()
    );
    let output = tokio::process::Command::new(example())
        .args(["mcp__demo__echo", r#"{"text": "embedded"}"#])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env_remove("PLEXUS_HOME")
        .output()
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", example().display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.contains(&"mcp__demo__echo"), "{stdout}");
    assert_eq!(
        lines.last(),
        Some(&r#"[{"type":"text","text":"embedded"}]"#),
        "{stdout}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_example_calls_its_own_server_and_cancels_a_call() {
    let example = example_named("in_process");
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(&example)
        .current_dir(home.path())
        .env("HOME", home.path())
        .env_remove("PLEXUS_HOME")
        .output()
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", example.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "hello from inside", "{stdout}");
    assert!(
        lines[1].starts_with("cancelled: ") && lines[1].ends_with("the user pressed stop"),
        "{stdout}"
    );
    assert_eq!(lines.len(), 2, "{stdout}");
}
