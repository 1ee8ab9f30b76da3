//! Documents the test supplies: JSON served at a path of the MCP endpoint's listener
//! (`--oauth-document`, [`OAuthHandle::serve_document`](super::OAuthHandle::serve_document)), and
//! client ID metadata documents used instead of fetching (`--oauth-cimd-document`,
//! [`OAuthHandle::provide_client_metadata`](super::OAuthHandle::provide_client_metadata)).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use bytes::Bytes;
use serde_json::Value;

use super::LimitReached;
use crate::remote::{OptionProblem, RemoteError};
use crate::server::lock;

/// The most documents of each kind.
const MAX_DOCUMENTS: usize = 64;
/// The largest document, in bytes.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Reads the JSON file of `--OPTION …=FILE` (the `count`-th such document), with `{origin}`
/// replaced by `origin`.
pub(super) fn load(file: &Path, origin: &str, option: &'static str, count: usize) -> Result<Bytes, RemoteError> {
    let invalid = |problem: OptionProblem| RemoteError::InvalidOption { option, problem };
    let (text, _) = read_json(file, Some(origin)).map_err(invalid)?;
    within_limits(text.len(), count, false).map_err(|limit| invalid(limit.into()))?;
    Ok(Bytes::from(text))
}

/// Reads the JSON file `file` that an option names, with `{origin}` replaced by `origin` if
/// given: its text and its value.
pub(super) fn read_json(file: &Path, origin: Option<&str>) -> Result<(String, Value), OptionProblem> {
    let text = std::fs::read_to_string(file).map_err(|source| OptionProblem::Unreadable {
        path: file.to_owned(),
        source,
    })?;
    let text = match origin {
        Some(origin) => text.replace("{origin}", origin),
        None => text,
    };
    let value = serde_json::from_str(&text).map_err(|source| OptionProblem::NotJson {
        path: file.to_owned(),
        source,
    })?;
    Ok((text, value))
}

/// Adds (or replaces) `document` at `key`, within the limits.
pub(super) fn put(
    documents: &Mutex<BTreeMap<String, Bytes>>,
    key: String,
    document: &Value,
) -> Result<(), LimitReached> {
    let body = document.to_string();
    let mut documents = lock(documents);
    within_limits(body.len(), documents.len(), documents.contains_key(&key))?;
    documents.insert(key, Bytes::from(body));
    Ok(())
}

/// Whether a document of `size` bytes may join `held` others (or replace one of them).
fn within_limits(size: usize, held: usize, replacing: bool) -> Result<(), LimitReached> {
    if size > MAX_DOCUMENT_BYTES {
        return Err(LimitReached::DocumentSize {
            size,
            max: MAX_DOCUMENT_BYTES,
        });
    }
    if !replacing && held >= MAX_DOCUMENTS {
        return Err(LimitReached::Documents { max: MAX_DOCUMENTS });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn documents_are_bounded_and_files_checked() {
        let documents = Mutex::new(BTreeMap::new());
        let big = json!("x".repeat(MAX_DOCUMENT_BYTES));
        assert_eq!(
            put(&documents, "/a".into(), &big).unwrap_err().to_string(),
            "the document is 65538 bytes, more than 65536"
        );
        for i in 0..MAX_DOCUMENTS {
            put(&documents, format!("/{i}"), &json!({})).unwrap();
        }
        put(&documents, "/0".into(), &json!({"replaced": true})).unwrap();
        assert_eq!(
            put(&documents, "/new".into(), &json!({})).unwrap_err().to_string(),
            "64 documents are held, the limit"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.json");
        std::fs::write(&file, r#"{"client_id": "{origin}/c.json"}"#).unwrap();
        assert_eq!(
            load(&file, "http://127.0.0.1:9", "oauth-document", 0).unwrap(),
            r#"{"client_id": "http://127.0.0.1:9/c.json"}"#
        );
        std::fs::write(&file, "not json").unwrap();
        let error = load(&file, "", "oauth-document", 0).unwrap_err();
        assert!(matches!(
            &error,
            RemoteError::InvalidOption { option: "oauth-document", problem: OptionProblem::NotJson { path, .. } }
                if *path == file
        ));
        let error = plexus_jsonrpc::error_chain(&error);
        assert!(error.starts_with("invalid option --oauth-document: "), "{error}");
        assert!(error.contains("is not JSON: expected ident"), "{error}");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(
            plexus_jsonrpc::error_chain(&load(&file, "", "oauth-document", MAX_DOCUMENTS).unwrap_err()),
            "invalid option --oauth-document: 64 documents are held, the limit"
        );
    }
}
