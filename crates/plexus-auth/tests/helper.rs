//! The headers helper with real `sh` processes: what it gives, every way it fails (with the exact
//! message), its process group, and how it behaves as a connection's auth provider.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use plexus_auth::{HeadersHelper, HelperError};
use plexus_net::Credentials;
use plexus_transport::{AuthFailure, AuthProvider, Rejection, error_chain};

/// Long enough for any run on a busy machine; never the point of a test.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn helper(command: &str) -> HeadersHelper {
    HeadersHelper::new("docs", "https://docs.example.com/mcp", command).with_timeout(HANG_GUARD)
}

async fn run_err(command: &str) -> String {
    plexus_transport::error_chain(&helper(command).run().await.unwrap_err())
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
}

fn challenge(status: u16) -> Rejection {
    Rejection::new(
        "POST https://docs.example.com/mcp",
        "https://docs.example.com/mcp",
        status,
    )
}

/// Waits (bounded) until process `pid` is gone or a zombie: it was killed.
async fn assert_dies(pid: i32) {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state is the field after the parenthesised command name.
        let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
        if state.is_none() || state == Some('Z') {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "process {pid} is still alive: {stat}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn the_output_becomes_headers_and_the_environment_names_the_server() {
    let headers = helper(
        r#"printf '{"Authorization": "Bearer t", "X-Server": "%s", "X-Url": "%s"}' "$PLEXUS_MCP_SERVER_NAME" "$PLEXUS_MCP_SERVER_URL""#,
    )
    .run()
    .await
    .unwrap();
    assert_eq!(
        headers,
        pairs(&[
            ("Authorization", "Bearer t"),
            ("X-Server", "docs"),
            ("X-Url", "https://docs.example.com/mcp"),
        ])
    );
    // Whitespace around the object and an empty object are fine.
    assert_eq!(helper("printf '\\n  {}  \\n'").run().await.unwrap(), Vec::new());
}

#[tokio::test]
async fn its_headers_go_over_the_static_ones() {
    let provider = Arc::new(helper(
        r#"echo '{"authorization": "Bearer from-helper", "X-Extra": "1"}'"#,
    ));
    let configured = pairs(&[("Authorization", "Bearer static"), ("X-Static", "s")]);
    let credentials = Credentials::new(configured, Some(provider)).unwrap();
    assert_eq!(
        credentials
            .headers("GET", "http://127.0.0.1/")
            .await
            .unwrap()
            .into_owned(),
        // The helper's headers in the order it printed them.
        pairs(&[
            ("X-Static", "s"),
            ("authorization", "Bearer from-helper"),
            ("X-Extra", "1"),
        ])
    );
}

#[tokio::test]
async fn every_failure_names_the_server_and_shows_the_stderr_tail() {
    assert_eq!(
        run_err("  ").await,
        "server \"docs\": the headersHelper command is empty"
    );
    assert_eq!(
        run_err("echo 'vault is sealed' >&2; echo 'second line' >&2; exit 3").await,
        "server \"docs\": the headersHelper failed (exit code 3); its stderr ends with: vault is sealed\nsecond line"
    );
    assert_eq!(
        run_err("exit 1").await,
        "server \"docs\": the headersHelper failed (exit code 1)"
    );
    assert_eq!(
        run_err("kill -9 $$").await,
        "server \"docs\": the headersHelper failed (killed by signal 9)"
    );
    assert_eq!(
        run_err("echo 'Bearer abc'; echo 'printed plain text' >&2").await,
        "server \"docs\": the output of the headersHelper is not JSON (expected value at line 1 column 1); \
         its stderr ends with: printed plain text"
    );
    assert_eq!(
        run_err("true").await,
        "server \"docs\": the output of the headersHelper is not JSON (it printed nothing)"
    );
    assert_eq!(
        run_err(r#"echo '["Authorization", "Bearer t"]'"#).await,
        "server \"docs\": the headersHelper must print a JSON object of header names and string values, not an array"
    );
    assert_eq!(
        run_err(r#"echo '{"X-Count": 3}'"#).await,
        "server \"docs\": the headersHelper gave a number for the header \"X-Count\"; header values must be strings"
    );
    assert_eq!(
        run_err(r#"printf '%s' '{"X-Token": "a\nb"}'"#).await,
        "server \"docs\": the headersHelper gave a header that cannot be sent: the value of the header \"X-Token\" \
         contains a control character (such as a line break), which HTTP does not allow"
    );
    assert_eq!(
        run_err(r#"echo '{"Bad Name": "v"}'"#).await,
        "server \"docs\": the headersHelper gave a header that cannot be sent: the header name \"Bad Name\" is not a \
         valid HTTP header name"
    );
    assert_eq!(
        run_err("head -c 70000 /dev/zero | tr '\\0' 'a'").await,
        "server \"docs\": the headersHelper printed more than 65536 bytes"
    );
    let error = helper("exec /nonexistent/helper").run().await.unwrap_err();
    assert!(matches!(error, HelperError::Exited { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("server \"docs\": the headersHelper failed (exit code 127); its stderr ends with: ")
    );
}

#[tokio::test]
async fn the_stderr_tail_is_bounded_and_keeps_the_end() {
    let error = run_err("head -c 10000 /dev/zero | tr '\\0' 'x' >&2; echo ' the real reason' >&2; exit 2").await;
    let (head, tail) = error.split_once("its stderr ends with: ").unwrap();
    assert_eq!(head, "server \"docs\": the headersHelper failed (exit code 2); ");
    assert!(tail.starts_with('…'), "{tail}");
    assert!(tail.ends_with("x the real reason"), "{tail}");
    assert!(tail.len() <= 2 * 1024 + '…'.len_utf8(), "{}", tail.len());
}

#[tokio::test]
async fn a_helper_that_runs_too_long_is_killed_with_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    let command = format!(
        "sleep 1000 & echo $! > '{}'; echo 'asking the vault' >&2; wait",
        pidfile.display()
    );
    let helper =
        HeadersHelper::new("docs", "https://docs.example.com/mcp", command).with_timeout(Duration::from_secs(5));
    let error = tokio::time::timeout(HANG_GUARD, helper.run())
        .await
        .expect("the timeout fires")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "server \"docs\": the headersHelper did not finish within 5 s and was killed; its stderr ends with: \
         asking the vault"
    );
    // The grandchild went with the group.
    assert_dies(read_pid(&pidfile)).await;
}

#[tokio::test]
async fn what_a_helper_leaves_behind_is_killed_and_cannot_hold_its_output_open() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    // The background sleep inherits stdout: without the group kill the read would never end.
    let command = format!(
        r#"sleep 1000 & echo $! > '{}'; echo '{{"X-Key": "k"}}'"#,
        pidfile.display()
    );
    let headers = helper(&command).run().await.unwrap();
    assert_eq!(headers, pairs(&[("X-Key", "k")]));
    assert_dies(read_pid(&pidfile)).await;
}

#[tokio::test]
async fn an_abandoned_run_kills_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    let command = format!(
        "sleep 1000 > /dev/null & echo $! > '{}.tmp'; mv '{0}.tmp' '{0}'; wait",
        pidfile.display()
    );
    let helper = helper(&command);
    let mut run = Box::pin(helper.run());
    // Run the helper until its background job is up…
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while !pidfile.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the helper never started its job"
        );
        tokio::select! {
            result = &mut run => panic!("the helper cannot finish on its own: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    // …then give up on it, as a request deadline or a dropped connect does.
    drop(run);
    assert_dies(read_pid(&pidfile)).await;
}

/// A helper that counts its runs in `dir/count` and prints `Bearer t<run>`, or the same token
/// every time when `same` is set.
fn counting_helper(dir: &Path, same: bool) -> HeadersHelper {
    let count = dir.join("count");
    let token = if same { "fixed".to_owned() } else { "t$n".to_owned() };
    let command = format!(
        r#"n=$(cat '{count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{count}'; echo "{{\"Authorization\": \"Bearer {token}\"}}""#,
        count = count.display()
    );
    helper(&command)
}

fn runs(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn as_a_provider_it_runs_once_per_connection_and_once_more_after_a_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let provider = counting_helper(dir.path(), false);
    for _ in 0..3 {
        assert_eq!(
            provider.headers("GET", "http://127.0.0.1/").await.unwrap(),
            pairs(&[("Authorization", "Bearer t1")])
        );
    }
    assert_eq!(runs(dir.path()), 1);

    assert!(provider.on_rejection(&challenge(401)).await.is_retry());
    assert_eq!(runs(dir.path()), 2);
    assert_eq!(
        provider.headers("GET", "http://127.0.0.1/").await.unwrap(),
        pairs(&[("Authorization", "Bearer t2")])
    );
    assert_eq!(runs(dir.path()), 2);

    assert_eq!(
        provider.on_rejection(&challenge(403)).await.to_string(),
        "failed: server \"docs\" rejected the headers from its headersHelper (HTTP 403), also after the helper \
                     was run again"
    );
    assert_eq!(runs(dir.path()), 2, "not run a third time");
}

#[tokio::test]
async fn a_rerun_that_gives_the_same_headers_or_fails_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let provider = counting_helper(dir.path(), true);
    provider.headers("GET", "http://127.0.0.1/").await.unwrap();
    assert_eq!(
        provider.on_rejection(&challenge(401)).await.to_string(),
        "failed: server \"docs\" rejected the headers from its headersHelper (HTTP 401), and the helper gave \
                     the same headers when run again"
    );
    assert_eq!(runs(dir.path()), 2);

    // Succeeds once, then fails.
    let flag = dir.path().join("ran");
    let command = format!(
        "if [ -e '{flag}' ]; then echo 'token expired' >&2; exit 5; fi; touch '{flag}'; echo '{{}}'",
        flag = flag.display()
    );
    let provider = helper(&command);
    provider.headers("GET", "http://127.0.0.1/").await.unwrap();
    assert_eq!(
        provider.on_rejection(&challenge(401)).await.to_string(),
        "failed: server \"docs\" rejected the headers from its headersHelper (HTTP 401), and running the helper \
                     again failed: server \"docs\": the headersHelper failed (exit code 5); its stderr ends with: \
                     token expired"
    );
    // The connection keeps the headers it had; the helper is not run a third time.
    assert_eq!(provider.headers("GET", "http://127.0.0.1/").await.unwrap(), Vec::new());
}

#[tokio::test]
async fn rejections_that_arrive_together_share_one_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let provider = counting_helper(dir.path(), false);
    provider.headers("GET", "http://127.0.0.1/").await.unwrap();
    let (first, second) = tokio::join!(
        provider.on_rejection(&challenge(401)),
        provider.on_rejection(&challenge(401))
    );
    assert!(first.is_retry() && second.is_retry(), "{first}, {second}");
    assert_eq!(runs(dir.path()), 2);
    assert_eq!(
        provider.headers("GET", "http://127.0.0.1/").await.unwrap(),
        pairs(&[("Authorization", "Bearer t2")])
    );
}

#[tokio::test]
async fn a_failing_helper_fails_the_request_and_is_tried_again_on_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("ready");
    let command = format!(
        r#"if [ ! -e '{flag}' ]; then echo 'not logged in' >&2; exit 1; fi; echo '{{"X-Key": "k"}}'"#,
        flag = flag.display()
    );
    let provider = helper(&command);
    let failure = provider.headers("GET", "http://127.0.0.1/").await.unwrap_err();
    assert!(matches!(failure, AuthFailure::Failed { .. }), "{failure:?}");
    assert_eq!(
        error_chain(&failure),
        "the auth provider failed: server \"docs\": the headersHelper failed (exit code 1); its stderr ends with: \
         not logged in"
    );
    std::fs::write(&flag, "").unwrap();
    assert_eq!(
        provider.headers("GET", "http://127.0.0.1/").await.unwrap(),
        pairs(&[("X-Key", "k")])
    );
}

#[test]
fn debug_shows_neither_the_command_nor_the_headers() {
    let helper = HeadersHelper::new("docs", "https://u:p@docs.example.com/mcp?key=1", "vault read secret");
    let shown = format!("{helper:?}");
    assert_eq!(
        shown,
        "HeadersHelper { server: \"docs\", url: \"https://docs.example.com/mcp?…\", timeout: 10s, .. }"
    );
}
