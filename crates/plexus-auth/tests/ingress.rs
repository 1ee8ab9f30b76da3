//! The session ingress token from an injected environment and real files: precedence, trimming,
//! rotation, and every error with its exact message.

use std::collections::BTreeMap;
use std::path::Path;

use plexus_auth::{INGRESS_TOKEN_FILE_VAR, INGRESS_TOKEN_VAR, IngressError, IngressOrigin, IngressToken};
use plexus_transport::{AuthProvider, Rejection};

type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

fn env(pairs: &[(&str, &str)]) -> Lookup {
    let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    Box::new(move |name| map.get(name).cloned())
}

fn file_env(path: &Path) -> Lookup {
    env(&[(INGRESS_TOKEN_FILE_VAR, path.to_str().unwrap())])
}

async fn bearer(lookup: &Lookup) -> Option<String> {
    let token = IngressToken::from_env(lookup).await.unwrap()?;
    let headers = token.headers("GET", "http://127.0.0.1/").await.unwrap();
    assert_eq!(headers.len(), 1);
    assert_eq!(headers[0].0, "Authorization");
    Some(headers[0].1.clone())
}

async fn error(lookup: &Lookup) -> String {
    plexus_transport::error_chain(&IngressToken::from_env(lookup).await.unwrap_err())
}

#[tokio::test]
async fn no_variable_no_token() {
    assert_eq!(bearer(&env(&[])).await, None);
    assert_eq!(
        bearer(&env(&[(INGRESS_TOKEN_VAR, " "), (INGRESS_TOKEN_FILE_VAR, "")])).await,
        None
    );
}

#[tokio::test]
async fn the_variable_wins_over_the_file_and_both_are_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "  from-file\n").unwrap();
    assert_eq!(bearer(&file_env(&path)).await.as_deref(), Some("Bearer from-file"));
    let both = env(&[
        (INGRESS_TOKEN_VAR, "from-env\n"),
        (INGRESS_TOKEN_FILE_VAR, path.to_str().unwrap()),
    ]);
    assert_eq!(bearer(&both).await.as_deref(), Some("Bearer from-env"));
    let token = IngressToken::from_env(&both).await.unwrap().unwrap();
    assert_eq!(token.origin(), &IngressOrigin::Env);
    assert_eq!(
        format!("{token:?}"),
        "IngressToken { token: \"<redacted>\", origin: Env }"
    );
    // A blank variable falls through to the file.
    let blank = env(&[
        (INGRESS_TOKEN_VAR, ""),
        (INGRESS_TOKEN_FILE_VAR, path.to_str().unwrap()),
    ]);
    assert_eq!(bearer(&blank).await.as_deref(), Some("Bearer from-file"));
}

#[tokio::test]
async fn a_rotated_file_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    let lookup = file_env(&path);
    std::fs::write(&path, "first").unwrap();
    assert_eq!(bearer(&lookup).await.as_deref(), Some("Bearer first"));
    std::fs::write(&path, "second\n").unwrap();
    assert_eq!(bearer(&lookup).await.as_deref(), Some("Bearer second"));
}

#[tokio::test]
async fn every_bad_token_names_its_variable_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    assert_eq!(
        error(&file_env(&missing)).await,
        format!(
            "cannot read the session ingress token file {} (PLEXUS_SESSION_INGRESS_TOKEN_FILE): No such file or \
             directory (os error 2)",
            missing.display()
        )
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, " \n\t\n").unwrap();
    assert_eq!(
        error(&file_env(&empty)).await,
        format!(
            "the session ingress token file {} (PLEXUS_SESSION_INGRESS_TOKEN_FILE) is empty",
            empty.display()
        )
    );
    let large = dir.path().join("large");
    std::fs::write(&large, "a".repeat(64 * 1024 + 1)).unwrap();
    assert_eq!(
        error(&file_env(&large)).await,
        format!(
            "the session ingress token file {} (PLEXUS_SESSION_INGRESS_TOKEN_FILE) is larger than 65536 bytes",
            large.display()
        )
    );
    let two_lines = dir.path().join("two-lines");
    std::fs::write(&two_lines, "abc\ndef\n").unwrap();
    assert_eq!(
        error(&file_env(&two_lines)).await,
        format!(
            "the session ingress token from the file {} (PLEXUS_SESSION_INGRESS_TOKEN_FILE) is not a valid bearer \
             token (it has whitespace, a control character or non-ASCII text)",
            two_lines.display()
        )
    );
    let binary = dir.path().join("binary");
    std::fs::write(&binary, [0xff, 0xfe, b'a']).unwrap();
    let failure = IngressToken::from_env(&file_env(&binary)).await.unwrap_err();
    assert!(
        matches!(
            failure,
            IngressError::Invalid {
                origin: IngressOrigin::File(_)
            }
        ),
        "{failure:?}"
    );
    assert_eq!(
        error(&env(&[(INGRESS_TOKEN_VAR, "has space")])).await,
        "the session ingress token from PLEXUS_SESSION_INGRESS_TOKEN is not a valid bearer token (it has \
         whitespace, a control character or non-ASCII text)"
    );
}

#[tokio::test]
async fn a_rejected_token_is_a_failure_naming_its_origin() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "t").unwrap();
    let token = IngressToken::from_env(&file_env(&path)).await.unwrap().unwrap();
    let challenge = Rejection::new("a request", "wss://ingress.example/mcp", 403);
    assert_eq!(
        token.on_rejection(&challenge).await.to_string(),
        format!(
            "failed: the server rejected the session ingress token from the file {} (PLEXUS_SESSION_INGRESS_TOKEN_FILE) \
                 (HTTP 403)",
            path.display()
        )
    );
}
