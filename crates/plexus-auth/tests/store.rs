//! The token store on a real file system: private mode (and a file open to others made private),
//! atomic replacement, serialized writers, unreadable files set aside, warnings shared with the
//! host, symbolic links refused, the lock file bounding every wait.

use std::fs;
use std::path::Path;

use plexus_auth::store::{
    ClientSource, MAX_STORE_BYTES, Secret, StoredClient, StoredCredential, StoredTokens, TokenStore, TokenStoreError,
};
use plexus_auth::{FileProblem, FileWarning, FileWarnings, PrivateFile};

fn credential(access: &str) -> StoredCredential {
    let tokens = StoredTokens::new(
        Secret::new(access),
        Some(Secret::new(format!("{access}-refresh"))),
        Some(60),
        None,
    );
    StoredCredential::new("http://127.0.0.1:1/mcp", "http://127.0.0.1:2/token")
        .with_tokens(tokens)
        .with_client(StoredClient {
            source: ClientSource::Dynamic,
            client_id: "client-1".to_owned(),
            client_secret: Some(Secret::new("client-secret-1")),
            auth_method: "client_secret_basic".to_owned(),
            redirect_uri: Some("http://localhost:5555/callback".to_owned()),
        })
}

/// Writes `contents` to `path`, private to the user (as plexus writes it).
fn write_private(path: &Path, contents: &[u8]) {
    fs::write(path, contents).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn entries_are_kept_by_server_and_issuer_in_a_private_file() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("nested").join("credentials.json");
    let store = TokenStore::new(&path);
    assert!(
        store.server("docs").await.unwrap().is_empty(),
        "a missing file is an empty store"
    );

    store.put("docs", "http://as-1", credential("at-1")).await.unwrap();
    store.put("docs", "http://as-2", credential("at-2")).await.unwrap();
    store.put("wiki", "http://as-1", credential("at-3")).await.unwrap();

    let docs = store.server("docs").await.unwrap();
    assert_eq!(docs.keys().collect::<Vec<_>>(), ["http://as-1", "http://as-2"]);
    let first = &docs["http://as-1"];
    assert_eq!(first.tokens.as_ref().unwrap().access_token.expose(), "at-1");
    assert_eq!(
        first.tokens.as_ref().unwrap().refresh_token.as_ref().unwrap().expose(),
        "at-1-refresh"
    );
    assert!(first.updated_at > 0);
    assert_eq!(store.servers().await.unwrap(), ["docs", "wiki"]);

    let written: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["version"], 1);
    assert_eq!(
        written["servers"]["docs"]["http://as-2"]["tokens"]["access_token"],
        "at-2"
    );
    assert_eq!(written["servers"]["wiki"]["http://as-1"]["client"]["source"], "dynamic");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777,
            0o700,
            "a directory the store creates is private too"
        );
    }

    assert!(store.remove("docs", "http://as-1").await.unwrap());
    assert!(!store.remove("docs", "http://as-1").await.unwrap());
    assert!(store.remove_server("docs").await.unwrap());
    assert!(!store.remove_server("docs").await.unwrap());
    assert_eq!(store.servers().await.unwrap(), ["wiki"]);
}

#[tokio::test]
async fn secrets_never_show_in_debug() {
    let home = tempfile::tempdir().unwrap();
    let store = TokenStore::new(home.path().join("credentials.json"));
    store
        .put("docs", "http://as", credential("at-secret-value"))
        .await
        .unwrap();
    let shown = format!("{:?} {store:?}", store.server("docs").await.unwrap());
    for secret in ["at-secret-value", "client-secret-1"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(shown.contains("<redacted>"));
}

#[cfg(unix)]
#[tokio::test]
async fn every_write_replaces_the_file_atomically_and_leaves_no_temporary_file() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("credentials.json");
    fs::write(&path, r#"{"version": 1, "servers": {}}"#).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let before = fs::metadata(&path).unwrap().ino();

    let store = TokenStore::new(&path);
    store.put("docs", "http://as", credential("at-1")).await.unwrap();
    let after = fs::metadata(&path).unwrap();
    assert_ne!(
        after.ino(),
        before,
        "a new file was renamed into place, not the old one rewritten"
    );
    assert_eq!(
        after.permissions().mode() & 0o777,
        0o600,
        "a file that was readable by others is replaced by a private one"
    );
    assert_eq!(names_in(home.path()), ["credentials.json", "credentials.json.lock"]);
}

#[tokio::test]
async fn concurrent_writers_in_one_process_lose_no_update() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("credentials.json");
    // Two stores of the same path share one lock, as clones do.
    let stores = [
        TokenStore::new(&path),
        TokenStore::new(home.path().join(".").join("credentials.json")),
    ];
    let mut writers = Vec::new();
    for n in 0..40 {
        let store = stores[n % 2].clone();
        writers.push(tokio::spawn(async move {
            store
                .put("docs", &format!("http://as-{n}"), credential(&format!("at-{n}")))
                .await
        }));
    }
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    let docs = stores[0].server("docs").await.unwrap();
    assert_eq!(docs.len(), 40);
    for n in 0..40 {
        assert_eq!(
            docs[&format!("http://as-{n}")]
                .tokens
                .as_ref()
                .unwrap()
                .access_token
                .expose(),
            format!("at-{n}")
        );
    }
    assert_eq!(names_in(home.path()), ["credentials.json", "credentials.json.lock"]);
}

#[tokio::test]
async fn an_unreadable_file_is_set_aside_with_a_warning_and_the_store_starts_empty() {
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "garbage",
            b"{not json".to_vec(),
            "not a credentials file: key must be a string at line 1 column 2",
        ),
        (
            "shape",
            br#"{"version": 1, "servers": {"docs": 7}}"#.to_vec(),
            "not a credentials file: invalid type: integer `7`, expected a map at line 1 column 36",
        ),
        (
            "version",
            br#"{"version": 9, "servers": {}}"#.to_vec(),
            "it is version 9, this plexus reads version 1",
        ),
        (
            "size",
            vec![b' '; usize::try_from(MAX_STORE_BYTES).unwrap() + 1],
            "it is larger than 4194304 bytes",
        ),
    ];
    for (label, contents, reason) in cases {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("credentials.json");
        write_private(&path, &contents);
        let store = TokenStore::new(&path);

        assert!(store.server("docs").await.unwrap().is_empty(), "{label}");
        let warnings = store.take_warnings();
        assert_eq!(warnings.len(), 1, "{label}");
        let warning = &warnings[0];
        assert_eq!(
            (warning.file, &warning.path),
            (PrivateFile::Credentials, &path),
            "{label}"
        );
        let FileProblem::Unreadable {
            reason: found,
            set_aside: Some(aside),
        } = &warning.problem
        else {
            panic!("{label}: moved aside: {warning:?}");
        };
        assert_eq!(found, reason, "{label}");
        assert!(
            aside
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("credentials.json.corrupt-"),
            "{label}: {aside:?}"
        );
        assert_eq!(fs::read(aside).unwrap(), contents, "{label}: kept as it was");
        assert!(!path.exists(), "{label}");
        assert!(
            warning.to_string().starts_with(&format!(
                "the credentials file {} is unreadable ({reason}); it was moved to ",
                path.display()
            )),
            "{label}: {warning}"
        );

        // The store works on.
        store.put("docs", "http://as", credential("at-1")).await.unwrap();
        assert_eq!(store.server("docs").await.unwrap().len(), 1, "{label}");
        assert!(store.take_warnings().is_empty(), "{label}");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_store_that_cannot_be_written_says_where_and_why() {
    let home = tempfile::tempdir().unwrap();
    // A file where the store's directory should be.
    let blocker = home.path().join("home");
    fs::write(&blocker, "").unwrap();
    let path = blocker.join("credentials.json");
    let store = TokenStore::new(&path);
    let err = store.put("docs", "http://as", credential("at")).await.unwrap_err();
    assert!(matches!(err, TokenStoreError::Io { .. }), "{err:?}");
    assert_eq!(
        plexus_transport::error_chain(&err),
        format!(
            "token store {}.lock: cannot create the directory: File exists (os error 17)",
            path.display()
        )
    );
}

#[tokio::test]
async fn warnings_go_to_a_shared_collection_once() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("credentials.json");
    write_private(&path, b"{not json");
    let shared = FileWarnings::new();
    // Two stores of the same file (two servers' providers) report into one collection.
    let first = TokenStore::new(&path).with_warnings(shared.clone());
    let second = TokenStore::new(&path).with_warnings(shared.clone());
    assert!(first.servers().await.unwrap().is_empty());
    assert!(second.servers().await.unwrap().is_empty());
    let warnings = shared.take();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(first.take_warnings().is_empty(), "taken from the shared collection");
    assert!(
        warnings[0].to_string().starts_with(&format!(
            "the credentials file {} is unreadable (not a credentials file: ",
            path.display()
        )),
        "{}",
        warnings[0]
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_store_open_to_others_is_made_private_at_its_first_read_and_reported() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("credentials.json");
    let writer = TokenStore::new(&path);
    writer.put("docs", "http://as", credential("at-1")).await.unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();

    let store = TokenStore::new(&path);
    assert_eq!(store.server("docs").await.unwrap().len(), 1, "its contents are kept");
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let warnings = store.take_warnings();
    assert_eq!(
        warnings,
        [FileWarning {
            file: PrivateFile::Credentials,
            path: path.clone(),
            problem: FileProblem::OpenToOthers {
                mode: 0o644,
                repair_failed: None
            },
        }]
    );
    assert_eq!(
        warnings[0].to_string(),
        format!(
            "the credentials file {} was readable by other users (mode 0644); made it 0600",
            path.display()
        )
    );
    store.server("docs").await.unwrap();
    assert!(
        store.take_warnings().is_empty(),
        "reported once: the file is private now"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_store_or_lock_file_that_is_a_symbolic_link_is_refused_never_followed_or_replaced() {
    use std::os::unix::fs::symlink;

    let home = tempfile::tempdir().unwrap();
    let elsewhere = home.path().join("elsewhere.json");
    let original = br#"{"version": 1, "servers": {}}"#;
    write_private(&elsewhere, original);
    let path = home.path().join("credentials.json");
    symlink(&elsewhere, &path).unwrap();
    let store = TokenStore::new(&path);
    let refused = format!(
        "token store {}: it is a symbolic link, which plexus neither follows nor replaces (make it a regular file)",
        path.display()
    );
    let err = store.server("docs").await.unwrap_err();
    assert!(
        matches!(&err, TokenStoreError::Symlink { path: link } if *link == path),
        "{err:?}"
    );
    assert_eq!(err.to_string(), refused);
    let err = store.put("docs", "http://as", credential("at-1")).await.unwrap_err();
    assert_eq!(err.to_string(), refused);
    assert!(
        fs::symlink_metadata(&path).unwrap().file_type().is_symlink(),
        "not replaced"
    );
    assert_eq!(fs::read(&elsewhere).unwrap(), original, "its target is untouched");
    assert!(store.take_warnings().is_empty(), "not set aside either");

    // A lock file that is a symbolic link is refused too: no lock is taken through it.
    fs::remove_file(&path).unwrap();
    let lock = home.path().join("credentials.json.lock");
    fs::remove_file(&lock).unwrap();
    symlink(&elsewhere, &lock).unwrap();
    let err = store.put("docs", "http://as", credential("at-1")).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "token store {}: it is a symbolic link, which plexus neither follows nor replaces (make it a regular file)",
            lock.display()
        )
    );
    assert!(!path.exists(), "nothing was written");
    assert_eq!(fs::read(&elsewhere).unwrap(), original);
}

#[tokio::test]
async fn a_lock_held_elsewhere_bounds_the_wait_and_names_the_lock_file() {
    use std::time::Duration;

    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("credentials.json");
    let store = TokenStore::new(&path).with_lock_timeout(Duration::from_millis(300));
    let held = store.lock().await.unwrap();
    // The holder reads and writes through its guard.
    held.put("docs", "http://as", credential("at-1")).await.unwrap();
    let err = store.get("docs", "http://as").await.unwrap_err();
    assert!(matches!(err, TokenStoreError::LockTimeout { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "token store {}: timed out after 300 ms waiting for the lock (another plexus process or task holds it)",
            store.lock_path().display()
        )
    );
    drop(held);
    let stored = store.get("docs", "http://as").await.unwrap().unwrap();
    assert_eq!(stored.tokens.unwrap().access_token.expose(), "at-1");
}
