//! Documents the test supplies: JSON served at a path of the MCP endpoint's listener
//! (`--oauth-document`, [`OAuthHandle::serve_document`](super::OAuthHandle::serve_document)), and
//! client ID metadata documents used instead of fetching (`--oauth-cimd-document`,
//! [`OAuthHandle::provide_client_metadata`](super::OAuthHandle::provide_client_metadata)).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use bytes::Bytes;
use serde_json::Value;

use super::OAuthError;
use crate::remote::RemoteError;
use crate::server::lock;

/// The most documents of each kind.
const MAX_DOCUMENTS: usize = 64;
/// The largest document, in bytes.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Reads the JSON file of `--OPTION …=FILE` (the `count`-th such document), with `{origin}`
/// replaced by `origin`.
pub(super) fn load(file: &Path, origin: &str, option: &'static str, count: usize) -> Result<Bytes, RemoteError> {
    let invalid = |reason: String| RemoteError::InvalidOption { option, reason };
    let text = std::fs::read_to_string(file).map_err(|e| invalid(format!("cannot read {}: {e}", file.display())))?;
    let text = text.replace("{origin}", origin);
    serde_json::from_str::<Value>(&text).map_err(|e| invalid(format!("{} is not JSON: {e}", file.display())))?;
    if text.len() > MAX_DOCUMENT_BYTES || count >= MAX_DOCUMENTS {
        return Err(invalid(format!(
            "at most {MAX_DOCUMENTS} documents of {MAX_DOCUMENT_BYTES} bytes each"
        )));
    }
    Ok(Bytes::from(text))
}

/// Adds (or replaces) `document` at `key`, within the limits.
pub(super) fn put(documents: &Mutex<BTreeMap<String, Bytes>>, key: String, document: &Value) -> Result<(), OAuthError> {
    let body = document.to_string();
    if body.len() > MAX_DOCUMENT_BYTES {
        return Err(OAuthError::Limit(format!(
            "the document is {} bytes, more than {MAX_DOCUMENT_BYTES}",
            body.len()
        )));
    }
    let mut documents = lock(documents);
    if !documents.contains_key(&key) && documents.len() >= MAX_DOCUMENTS {
        return Err(OAuthError::Limit(format!(
            "{MAX_DOCUMENTS} documents are held, the limit"
        )));
    }
    documents.insert(key, Bytes::from(body));
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
        let error = load(&file, "", "oauth-document", 0).unwrap_err().to_string();
        assert!(error.starts_with("invalid option --oauth-document: "), "{error}");
        assert!(error.contains("is not JSON"), "{error}");
    }
}
