//! IDE lockfiles read from real files: every field, every way a lockfile can be wrong (with the
//! exact message naming the file), the lock directory from the environment, and the provider.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plexus_auth::ide::{MAX_LOCKFILE_SIZE, lockfile_path};
use plexus_auth::{IDE_AUTH_HEADER, IdeError, IdeLockfile, IdeToken, default_ide_lock_dir};
use plexus_transport::{AuthProvider, Rejection};
use proptest::prelude::*;
use serde_json::json;

fn write_lock(dir: &Path, port: u16, content: &str) -> PathBuf {
    let path = lockfile_path(dir, port);
    std::fs::write(&path, content).unwrap();
    path
}

async fn lock_err(dir: &Path, port: u16) -> String {
    plexus_transport::error_chain(&IdeToken::from_lockfile(dir, port).await.unwrap_err())
}

#[tokio::test]
async fn a_full_lockfile_is_read_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let content = json!({
        "authToken": "2f1c-token",
        "port": 41234,
        "pid": 4242,
        "workspaceFolders": ["/home/me/project", "/home/me/other"],
        "ideName": "Visual Studio Code",
        "transport": "ws",
        "runningInWindows": true,
        "somethingNew": {"ignored": true}
    });
    let path = write_lock(dir.path(), 41234, &content.to_string());
    assert_eq!(path, dir.path().join("41234.lock"));
    let lockfile = IdeLockfile::read(&path).await.unwrap();
    assert_eq!(
        lockfile,
        IdeLockfile {
            auth_token: "2f1c-token".to_owned(),
            port: Some(41234),
            pid: Some(4242),
            workspace_folders: vec!["/home/me/project".to_owned(), "/home/me/other".to_owned()],
            ide_name: Some("Visual Studio Code".to_owned()),
            transport: Some("ws".to_owned()),
            running_in_windows: true,
        }
    );
    assert!(!format!("{lockfile:?}").contains("2f1c-token"));
    let minimal = write_lock(dir.path(), 1, r#"{"authToken": "t"}"#);
    let minimal = IdeLockfile::read(&minimal).await.unwrap();
    assert_eq!((minimal.port, minimal.running_in_windows), (None, false));
    assert!(minimal.workspace_folders.is_empty());
}

#[tokio::test]
async fn every_bad_lockfile_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let shown = |port: u16| dir.path().join(format!("{port}.lock")).display().to_string();

    assert_eq!(
        lock_err(dir.path(), 1).await,
        format!(
            "no IDE lockfile at {} (is the IDE running, with its extension?)",
            shown(1)
        )
    );
    write_lock(dir.path(), 2, "{\"authToken\": ");
    assert_eq!(
        lock_err(dir.path(), 2).await,
        format!(
            "the IDE lockfile {} is malformed: EOF while parsing a value at line 1 column 14",
            shown(2)
        )
    );
    write_lock(dir.path(), 3, "[1, 2]");
    assert_eq!(
        lock_err(dir.path(), 3).await,
        format!("the IDE lockfile {} is malformed: it is not a JSON object", shown(3))
    );
    write_lock(dir.path(), 4, r#"{"port": 4, "ideName": "code"}"#);
    assert_eq!(
        lock_err(dir.path(), 4).await,
        format!("the IDE lockfile {} has no \"authToken\"", shown(4))
    );
    write_lock(dir.path(), 5, r#"{"authToken": ""}"#);
    assert_eq!(
        lock_err(dir.path(), 5).await,
        format!("the IDE lockfile {} has no \"authToken\"", shown(5))
    );
    write_lock(dir.path(), 6, r#"{"authToken": 42}"#);
    assert_eq!(
        lock_err(dir.path(), 6).await,
        format!(
            "the IDE lockfile {} is malformed: invalid type: integer `42`, expected a string",
            shown(6)
        )
    );
    let padding = " ".repeat(MAX_LOCKFILE_SIZE as usize);
    write_lock(dir.path(), 7, &format!("{{\"authToken\": \"t\"}}{padding}"));
    assert_eq!(
        lock_err(dir.path(), 7).await,
        format!("the IDE lockfile {} is larger than 65536 bytes", shown(7))
    );
    std::fs::create_dir(lockfile_path(dir.path(), 8)).unwrap();
    let error = IdeToken::from_lockfile(dir.path(), 8).await.unwrap_err();
    assert!(matches!(error, IdeError::Unreadable { .. }), "{error:?}");
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "cannot read the IDE lockfile {}: Is a directory (os error 21)",
            shown(8)
        )
    );
}

#[test]
fn the_lock_directory_comes_from_the_environment() {
    let env = |pairs: &[(&str, &str)]| {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name: &str| map.get(name).cloned()
    };
    assert_eq!(
        default_ide_lock_dir(&env(&[("PLEXUS_IDE_LOCK_DIR", "/run/ide"), ("HOME", "/home/me")])),
        Some(PathBuf::from("/run/ide"))
    );
    assert_eq!(
        default_ide_lock_dir(&env(&[("PLEXUS_IDE_LOCK_DIR", ""), ("HOME", "/home/me")])),
        Some(PathBuf::from("/home/me/.claude/ide"))
    );
    assert_eq!(default_ide_lock_dir(&env(&[])), None);
    assert_eq!(
        IdeError::NoLockDir.to_string(),
        "cannot find the IDE lock directory: set PLEXUS_IDE_LOCK_DIR (or HOME)"
    );
}

#[tokio::test]
async fn the_token_goes_in_the_ide_header_and_a_rejection_says_where_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_lock(dir.path(), 3000, r#"{"authToken": "from-lock"}"#);
    let token = IdeToken::from_lockfile(dir.path(), 3000).await.unwrap();
    assert_eq!(IDE_AUTH_HEADER, "X-Claude-Code-Ide-Authorization");
    assert_eq!(
        token.headers("GET", "http://127.0.0.1/").await.unwrap(),
        [(IDE_AUTH_HEADER.to_owned(), "from-lock".to_owned())]
    );
    let challenge = Rejection::new("a request", "ws://127.0.0.1:3000/", 401);
    assert_eq!(
        token.on_rejection(&challenge).await.to_string(),
        format!(
            "failed: the IDE rejected the token from the IDE lockfile {} (HTTP 401)",
            path.display()
        )
    );
    let configured = IdeToken::from_config("from-config");
    assert_eq!(
        configured.headers("GET", "http://127.0.0.1/").await.unwrap(),
        [(IDE_AUTH_HEADER.to_owned(), "from-config".to_owned())]
    );
    assert_eq!(
        configured.on_rejection(&challenge).await.to_string(),
        "failed: the IDE rejected the token from the entry's authToken (HTTP 401)"
    );
    assert_eq!(
        format!("{configured:?}"),
        "IdeToken { token: \"<redacted>\", origin: \"the entry's authToken\" }"
    );
}

proptest! {
    #[test]
    fn any_lockfile_round_trips(
        token in "[ -~]{1,64}",
        port in proptest::option::of(any::<u16>()),
        pid in proptest::option::of(any::<u32>()),
        folders in proptest::collection::vec("\\PC{0,20}", 0..4),
        ide_name in proptest::option::of("\\PC{0,20}"),
        transport in proptest::option::of(prop_oneof![Just("ws".to_owned()), Just("sse".to_owned())]),
        windows in any::<bool>(),
    ) {
        let expected = IdeLockfile {
            auth_token: token,
            port,
            pid,
            workspace_folders: folders,
            ide_name,
            transport,
            running_in_windows: windows,
        };
        let mut object = json!({
            "authToken": expected.auth_token,
            "workspaceFolders": expected.workspace_folders,
            "runningInWindows": expected.running_in_windows,
        });
        for (key, value) in [
            ("port", expected.port.map(|p| json!(p))),
            ("pid", expected.pid.map(|p| json!(p))),
            ("ideName", expected.ide_name.clone().map(|n| json!(n))),
            ("transport", expected.transport.clone().map(|t| json!(t))),
        ] {
            if let Some(value) = value {
                object[key] = value;
            }
        }
        let text = serde_json::to_vec_pretty(&object).unwrap();
        let parsed = IdeLockfile::parse(&text, Path::new("/x/1.lock")).unwrap();
        prop_assert_eq!(parsed, expected);
    }

    #[test]
    fn garbage_is_an_error_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = IdeLockfile::parse(&bytes, Path::new("/x/1.lock"));
    }
}
