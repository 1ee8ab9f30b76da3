//! The needs-auth cache file in temporary homes, with an injected clock: freshness and expiry,
//! keys, atomic writes and file mode, corrupt and oversized files, a symbolic link refused, pruning
//! and the cap, and a property test of the file round trip.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plexus_auth::needs_auth::{MAX_CACHE_ENTRIES, MAX_CACHE_FILE_SIZE, MAX_REASON_CHARS};
use plexus_auth::{
    FileProblem, FileWarnings, NEEDS_AUTH_CACHE_FILE, NEEDS_AUTH_TTL, NeedsAuthCache, NeedsAuthEntry, PrivateFile,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const URL: &str = "https://docs.example.com/mcp";
/// 2026-01-01T00:00:00Z.
const BASE_MS: u64 = 1_767_225_600_000;

/// A clock the test moves by hand.
#[derive(Clone)]
struct TestClock(Arc<AtomicU64>);

impl TestClock {
    fn new() -> TestClock {
        TestClock(Arc::new(AtomicU64::new(BASE_MS)))
    }
    fn set_ms(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn cache_in(home: &Path, clock: &TestClock) -> NeedsAuthCache {
    let clock = clock.clone();
    NeedsAuthCache::new(home).with_clock(move || UNIX_EPOCH + Duration::from_millis(clock.now_ms()))
}

fn file_json(home: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(home.join(NEEDS_AUTH_CACHE_FILE)).unwrap()).unwrap()
}

/// Writes `contents` to `path` with mode 0600 (as plexus writes it).
fn write_private(path: &Path, contents: &[u8]) {
    std::fs::write(path, contents).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn dir_listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_entry_is_fresh_for_fifteen_minutes() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    assert_eq!(cache.path(), home.path().join("mcp-needs-auth-cache.json"));
    assert_eq!(NEEDS_AUTH_TTL, Duration::from_secs(900));
    assert_eq!(cache.check("docs", URL), None);

    cache.record("docs", URL, Some("HTTP 401 from the server")).unwrap();
    let expected = NeedsAuthEntry {
        server: "docs".to_owned(),
        url: URL.to_owned(),
        recorded_at_ms: BASE_MS,
        reason: Some("HTTP 401 from the server".to_owned()),
    };
    assert_eq!(cache.check("docs", URL), Some(expected.clone()));
    assert_eq!(expected.recorded_at(), UNIX_EPOCH + Duration::from_millis(BASE_MS));
    assert_eq!(cache.expires_in(&expected), NEEDS_AUTH_TTL);

    clock.advance(NEEDS_AUTH_TTL.checked_sub(Duration::from_millis(1)).unwrap());
    assert_eq!(cache.check("docs", URL), Some(expected.clone()));
    assert_eq!(cache.expires_in(&expected), Duration::from_millis(1));
    clock.advance(Duration::from_millis(1));
    assert_eq!(cache.check("docs", URL), None);
    assert_eq!(cache.expires_in(&expected), Duration::ZERO);

    // A timestamp in the future (the clock was set back) is not fresh.
    clock.set_ms(BASE_MS - 1);
    assert_eq!(cache.check("docs", URL), None);
}

#[test]
fn entries_are_keyed_by_name_and_redacted_url() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    cache
        .record("docs", "https://user:pw@docs.example.com/mcp?api_key=secret#x", None)
        .unwrap();
    // The same server, whatever credentials its URL carries; a URL without a query is another.
    assert!(
        cache
            .check("docs", "https://docs.example.com/mcp?api_key=other")
            .is_some()
    );
    assert!(
        cache
            .check("docs", "https://other:pw@docs.example.com/mcp?a=b")
            .is_some()
    );
    assert!(cache.check("docs", URL).is_none());
    // Another name, another path, another port: other servers.
    assert!(
        cache
            .check("wiki", "https://docs.example.com/mcp?api_key=secret")
            .is_none()
    );
    assert!(
        cache
            .check("docs", "https://docs.example.com/v2/mcp?api_key=secret")
            .is_none()
    );
    assert!(
        cache
            .check("docs", "https://docs.example.com:8443/mcp?api_key=secret")
            .is_none()
    );
    let text = std::fs::read_to_string(home.path().join(NEEDS_AUTH_CACHE_FILE)).unwrap();
    assert!(!text.contains("secret") && !text.contains("pw"), "{text}");
    assert_eq!(
        file_json(home.path()),
        json!({"docs": {"https://docs.example.com/mcp?…": {"timestamp": BASE_MS}}})
    );
}

#[test]
fn the_file_is_private_and_replaced_atomically() {
    let root = tempfile::tempdir().unwrap();
    // The home does not exist yet: the first record creates it.
    let home = root.path().join("home");
    let clock = TestClock::new();
    let cache = cache_in(&home, &clock);
    cache.record("docs", URL, Some("r1")).unwrap();
    clock.advance(Duration::from_secs(1));
    cache.record("wiki", URL, None).unwrap();
    let path = home.join(NEEDS_AUTH_CACHE_FILE);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
    // No temporary file is left behind.
    assert_eq!(dir_listing(&home), [NEEDS_AUTH_CACHE_FILE]);
    assert_eq!(
        file_json(&home),
        json!({
            "docs": {URL: {"timestamp": BASE_MS, "reason": "r1"}},
            "wiki": {URL: {"timestamp": BASE_MS + 1000}}
        })
    );
    // A reader that opened the old file keeps reading the old content: the file was replaced.
    let old = std::fs::File::open(&path).unwrap();
    cache.clear("wiki", URL).unwrap();
    let old_text = std::io::read_to_string(old).unwrap();
    assert!(old_text.contains("wiki"), "{old_text}");
    assert_eq!(
        file_json(&home),
        json!({"docs": {URL: {"timestamp": BASE_MS, "reason": "r1"}}})
    );
}

#[test]
fn clear_and_clear_server() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    assert!(!cache.clear("docs", URL).unwrap());
    assert!(
        !home.path().join(NEEDS_AUTH_CACHE_FILE).exists(),
        "nothing to clear writes nothing"
    );
    cache.record("docs", URL, None).unwrap();
    cache.record("docs", "https://docs.example.com/v2", None).unwrap();
    cache.record("wiki", URL, None).unwrap();
    assert!(cache.clear("docs", URL).unwrap());
    assert!(!cache.clear("docs", URL).unwrap());
    assert_eq!(cache.clear_server("docs").unwrap(), 1);
    assert_eq!(cache.clear_server("docs").unwrap(), 0);
    assert_eq!(
        cache.entries().into_iter().map(|e| e.server).collect::<Vec<_>>(),
        ["wiki"]
    );
    // An expired entry can still be cleared (a successful connect removes it).
    clock.advance(NEEDS_AUTH_TTL);
    assert!(cache.entries().is_empty());
    assert!(cache.clear("wiki", URL).unwrap());
    assert_eq!(file_json(home.path()), json!({}));
}

#[test]
fn a_corrupt_file_is_set_aside_reported_and_replaced() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    let path = home.path().join(NEEDS_AUTH_CACHE_FILE);
    write_private(&path, b"{not json");
    assert_eq!(cache.check("docs", URL), None);
    let warnings = cache.take_warnings();
    let [warning] = &warnings[..] else {
        panic!("one warning: {warnings:?}")
    };
    let FileProblem::Unreadable {
        reason,
        set_aside: Some(aside),
    } = &warning.problem
    else {
        panic!("set aside: {warning:?}")
    };
    assert_eq!(
        reason,
        "not a needs-auth cache: key must be a string at line 1 column 2"
    );
    assert_eq!((warning.file, &warning.path), (PrivateFile::NeedsAuthCache, &path));
    let name = aside.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("mcp-needs-auth-cache.json.corrupt-"), "{name}");
    assert_eq!(std::fs::read(aside).unwrap(), b"{not json", "kept as it was");
    assert_eq!(dir_listing(home.path()), std::slice::from_ref(&name));
    assert_eq!(
        warning.to_string(),
        format!(
            "the needs-auth cache {} is unreadable ({reason}); it was moved to {} and the cache starts empty",
            path.display(),
            aside.display()
        )
    );
    // The cache works on, and the next write replaces nothing but writes anew.
    cache.record("docs", URL, None).unwrap();
    assert!(cache.check("docs", URL).is_some());
    assert!(cache.take_warnings().is_empty());
    assert_eq!(dir_listing(home.path()), [NEEDS_AUTH_CACHE_FILE.to_owned(), name]);
}

#[test]
fn a_cache_open_to_others_is_made_private_and_reported() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let shared = FileWarnings::new();
    let cache = cache_in(home.path(), &clock).with_warnings(shared.clone());
    cache.record("docs", URL, None).unwrap();
    let path = home.path().join(NEEDS_AUTH_CACHE_FILE);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
    assert!(cache.check("docs", URL).is_some(), "its entries are kept");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let warnings = shared.take();
    assert_eq!(
        warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [format!(
            "the needs-auth cache {} was readable by other users (mode 0664); made it 0600",
            path.display()
        )]
    );
    assert!(cache.check("docs", URL).is_some());
    assert!(shared.take().is_empty());
}

#[test]
fn every_kind_of_corrupt_file_is_set_aside_at_the_first_read() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    let path = home.path().join(NEEDS_AUTH_CACHE_FILE);
    let cases = [
        &b"{\"docs\": {"[..],
        &b"[]"[..],
        &b"{\"docs\": {\"https://x/\": {\"timestamp\": \"yesterday\"}}}"[..],
        &b"\xff\xfe"[..],
    ];
    for (n, garbage) in cases.into_iter().enumerate() {
        write_private(&path, garbage);
        assert!(cache.entries().is_empty());
        assert!(!path.exists(), "set aside");
        assert_eq!(cache.take_warnings().len(), 1);
        // Nothing to clear: no new file.
        assert!(!cache.clear("docs", URL).unwrap());
        assert!(!path.exists());
        let aside = dir_listing(home.path());
        assert_eq!(aside.len(), n + 1, "{aside:?}");
        assert!(
            aside
                .iter()
                .all(|name| name.starts_with("mcp-needs-auth-cache.json.corrupt-")),
            "{aside:?}"
        );
    }
    write_private(&path, b"not json");
    cache.record("docs", URL, None).unwrap();
    assert_eq!(file_json(home.path()), json!({"docs": {URL: {"timestamp": BASE_MS}}}));
    write_private(&path, b"not json");
    assert_eq!(cache.clear_server("docs").unwrap(), 0);
    assert_eq!(file_json(home.path()), json!({}), "replaced");
}

#[test]
fn an_oversized_file_is_not_read() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    let entry = format!("{{\"docs\": {{\"{URL}\": {{\"timestamp\": {BASE_MS}}}}}}}");
    let padded = format!("{entry}{}", " ".repeat(MAX_CACHE_FILE_SIZE as usize));
    std::fs::write(home.path().join(NEEDS_AUTH_CACHE_FILE), &padded).unwrap();
    assert_eq!(cache.check("docs", URL), None);
    std::fs::write(home.path().join(NEEDS_AUTH_CACHE_FILE), &entry).unwrap();
    assert!(cache.check("docs", URL).is_some());
}

#[test]
fn writes_prune_expired_entries_cap_the_count_and_cut_long_reasons() {
    let home = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let cache = cache_in(home.path(), &clock);
    cache.record("old", URL, None).unwrap();
    clock.advance(NEEDS_AUTH_TTL);
    cache.record("new", URL, None).unwrap();
    assert_eq!(
        file_json(home.path()),
        json!({"new": {URL: {"timestamp": BASE_MS + 900_000}}})
    );

    // More than the cap: the newest are kept.
    let start = clock.now_ms();
    let mut entries = BTreeMap::new();
    for i in 0..MAX_CACHE_ENTRIES + 5 {
        entries.insert(format!("s{i:04}"), json!({URL: {"timestamp": start + i as u64}}));
    }
    std::fs::write(
        home.path().join(NEEDS_AUTH_CACHE_FILE),
        serde_json::to_vec(&entries).unwrap(),
    )
    .unwrap();
    // Later than all of them.
    clock.advance(Duration::from_secs(10));
    cache
        .record("latest", URL, Some(&"r".repeat(MAX_REASON_CHARS + 10)))
        .unwrap();
    let kept = cache.entries();
    assert_eq!(kept.len(), MAX_CACHE_ENTRIES);
    assert!(kept.iter().any(|e| e.server == "latest"));
    let oldest_kept = kept.iter().map(|e| e.recorded_at_ms).min().unwrap();
    assert_eq!(oldest_kept, start + 6, "the six oldest were dropped");
    let latest = cache.check("latest", URL).unwrap();
    let reason = latest.reason.unwrap();
    assert_eq!(reason.chars().count(), MAX_REASON_CHARS);
    assert!(reason.ends_with('…'));
}

#[test]
fn clones_share_the_file_and_concurrent_records_are_all_kept() {
    let home = tempfile::tempdir().unwrap();
    let cache = NeedsAuthCache::new(home.path());
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let cache = cache.clone();
            std::thread::spawn(move || cache.record(&format!("s{i}"), URL, None).unwrap())
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(cache.entries().len(), 8);
    // The system clock: just recorded, fresh.
    let entry = cache.check("s3", URL).unwrap();
    assert!(entry.recorded_at() <= SystemTime::now());
}

#[test]
fn a_write_error_names_the_file() {
    let root = tempfile::tempdir().unwrap();
    // The "home" is a regular file: nothing can be created inside it.
    let home = root.path().join("home");
    std::fs::write(&home, "").unwrap();
    let cache = NeedsAuthCache::new(&home);
    let error = cache.record("docs", URL, None).unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "cannot write the needs-auth cache {}: File exists (os error 17)",
            home.join(NEEDS_AUTH_CACHE_FILE).display()
        )
    );
}

/// One generated entry: a server, a URL path, an offset from the base time, a reason.
fn entry_strategy() -> impl Strategy<Value = (String, String, u64, Option<String>)> {
    (
        "[a-z][a-z0-9_-]{0,12}",
        "(/[a-z0-9]{1,8}){0,3}",
        0..NEEDS_AUTH_TTL.as_millis() as u64 / 2,
        proptest::option::of("\\PC{0,40}"),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_file_round_trips(entries in proptest::collection::vec(entry_strategy(), 0..12)) {
        let home = tempfile::tempdir().unwrap();
        let clock = TestClock::new();
        let cache = cache_in(home.path(), &clock);
        // Record in time order; a later record of the same key replaces the earlier.
        let mut sorted = entries;
        sorted.sort_by_key(|(_, _, offset, _)| *offset);
        let mut expected = BTreeMap::new();
        for (server, path, offset, reason) in sorted {
            let url = format!("https://h.example{path}");
            clock.set_ms(BASE_MS + offset);
            cache.record(&server, &url, reason.as_deref()).unwrap();
            expected.insert((server.clone(), url.clone()), NeedsAuthEntry {
                server,
                url,
                recorded_at_ms: BASE_MS + offset,
                reason,
            });
        }
        clock.set_ms(BASE_MS + NEEDS_AUTH_TTL.as_millis() as u64 / 2);
        // A fresh cache value reads what the file holds.
        let reread = cache_in(home.path(), &clock);
        let listed = reread.entries();
        prop_assert_eq!(&listed, &expected.values().cloned().collect::<Vec<_>>());
        for ((server, url), entry) in &expected {
            let found = reread.check(server, url);
            prop_assert_eq!(found.as_ref(), Some(entry));
        }
    }
}

#[test]
fn a_cache_that_is_a_symbolic_link_is_neither_followed_nor_replaced() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = home.path().join("elsewhere.json");
    let target = json!({"docs": {URL: {"timestamp": 1, "reason": "planted"}}}).to_string();
    std::fs::write(&elsewhere, &target).unwrap();
    let path = home.path().join(NEEDS_AUTH_CACHE_FILE);
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    let warnings = FileWarnings::new();
    let cache = NeedsAuthCache::new(home.path()).with_warnings(warnings.clone());

    assert!(cache.check("docs", URL).is_none(), "not read through the link");
    assert!(cache.entries().is_empty());
    let err = cache.record("docs", URL, Some("HTTP 401")).unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&err),
        format!(
            "cannot write the needs-auth cache {}: it is a symbolic link, which plexus neither follows nor replaces",
            path.display()
        )
    );
    assert!(cache.clear("docs", URL).is_err());
    assert!(cache.clear_server("docs").is_err());
    assert!(
        std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(),
        "not replaced"
    );
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap(),
        target,
        "its target is untouched"
    );

    let taken = warnings.take();
    assert_eq!(taken.len(), 1, "reported once: {taken:?}");
    assert_eq!(taken[0].problem, FileProblem::Symlink);
    assert_eq!(
        taken[0].to_string(),
        format!(
            "the needs-auth cache {} is a symbolic link, which plexus neither follows nor replaces; servers are not \
             remembered as needing a login until it is a regular file",
            path.display()
        )
    );
}
