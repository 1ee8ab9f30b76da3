//! Client ID metadata documents: a `client_id` that is a URL names the client's metadata, which
//! the authorization server fetches (plain HTTP, one GET, no redirects, 5 s and 64 KiB at most;
//! or takes from the documents the test provided, for `https://` ids) and checks: its
//! `client_id` must be its URL, it must name its redirect URIs, and it cannot use a shared
//! secret.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, LengthLimitError, Limited};
use hyper::Request;
use hyper::header;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use url::{Position, Url};

use super::OAuth;
use super::authority::Authority;
use super::options::AuthMethod;
use super::record::{Endpoint, OAuthRequest};
use super::register::parse_metadata;
use super::store::Client;

/// How long fetching a document may take, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document accepted, in bytes.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Fetches and checks the document `client_id` names, records the fetch, and stores the client.
pub(super) async fn fetch_client(oauth: &OAuth, authority: &Authority, client_id: &str) -> Result<Client, String> {
    let mut entry = OAuthRequest::new(Endpoint::ClientMetadataFetch, Some(authority.index), "GET", client_id);
    entry.client_id = Some(client_id.to_owned());
    entry.status = 0;
    let provided = crate::server::lock(&oauth.client_documents).get(client_id).cloned();
    if provided.is_some() {
        entry.params.insert("source".to_owned(), "provided".to_owned());
    }
    let result = fetch_and_check(oauth, client_id, provided, &mut entry.status).await;
    if let Err(e) = &result {
        entry.error = Some("invalid_client".to_owned());
        entry.error_description = Some(e.clone());
    }
    oauth.push_record(entry);
    let client = result?;
    authority
        .with_store(|store| store.put_client(client.clone()))
        .map_err(|e| e.to_string())?;
    Ok(client)
}

/// Fetches (or takes the `provided` body of) the document and checks it.
async fn fetch_and_check(
    oauth: &OAuth,
    client_id: &str,
    provided: Option<Bytes>,
    status: &mut u16,
) -> Result<Client, String> {
    let url = check_url(client_id)?;
    let (code, body) = match provided {
        Some(body) => (200, body),
        None if url.scheme() == "https" => {
            return Err(format!(
                "cannot fetch {client_id}: this test server fetches client ID metadata documents over plain http only (provide https ones with --oauth-cimd-document)"
            ));
        }
        None => tokio::time::timeout(FETCH_TIMEOUT, get(&url))
            .await
            .map_err(|_| {
                format!(
                    "fetching the client ID metadata document {client_id} took more than {} s",
                    FETCH_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("cannot fetch the client ID metadata document {client_id}: {e}"))?,
    };
    *status = code;
    if code != 200 {
        return Err(format!(
            "fetching the client ID metadata document {client_id} got HTTP {code}"
        ));
    }
    let document = serde_json::from_slice::<Value>(&body)
        .map_err(|e| format!("the client ID metadata document {client_id} is not JSON: {e}"))?;
    let Value::Object(document) = document else {
        return Err(format!(
            "the client ID metadata document {client_id} is not a JSON object"
        ));
    };
    match document.get("client_id") {
        Some(Value::String(id)) if id == client_id => {}
        Some(other) => {
            return Err(format!(
                "the client ID metadata document at {client_id} names the client_id {other}, not its own URL"
            ));
        }
        None => {
            return Err(format!(
                "the client ID metadata document at {client_id} has no client_id"
            ));
        }
    }
    for secret in ["client_secret", "client_secret_expires_at"] {
        if document.contains_key(secret) {
            return Err(format!(
                "the client ID metadata document {client_id} holds {secret}, which such a document must not"
            ));
        }
    }
    if let Some(Value::String(method)) = document.get("token_endpoint_auth_method") {
        if method.starts_with("client_secret_") {
            return Err(format!(
                "the client ID metadata document {client_id} uses {method}, but such a client has no shared secret"
            ));
        }
    }
    let metadata = parse_metadata(&document, &oauth.options.auth_methods, AuthMethod::None)
        .map_err(|(_, description)| format!("the client ID metadata document {client_id}: {description}"))?;
    Ok(Client {
        id: client_id.to_owned(),
        secret: None,
        auth_methods: vec![metadata.auth_method],
        redirect_uris: metadata.redirect_uris,
        any_loopback_redirect: false,
        grant_types: metadata.grant_types,
        jwks: metadata.jwks,
    })
}

/// Checks a client id URL: `http` or `https`, with a path, without credentials or fragment.
fn check_url(client_id: &str) -> Result<Url, String> {
    let url = Url::parse(client_id).map_err(|e| format!("client_id {client_id:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("client_id {client_id:?} is not an http(s) URL"));
    }
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "client_id {client_id:?} must not hold a fragment or credentials"
        ));
    }
    if url.path() == "/" {
        return Err(format!("client_id {client_id:?} has no path"));
    }
    Ok(url)
}

/// Aborts the HTTP connection's task when the fetch ends (or times out).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One GET over HTTP/1.1: the status and the body (at most [`MAX_DOCUMENT_BYTES`]).
async fn get(url: &Url) -> Result<(u16, Bytes), String> {
    let authority = &url[Position::BeforeHost..Position::AfterPort];
    let address = format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(80)
    );
    let stream = TcpStream::connect(&address)
        .await
        .map_err(|e| format!("cannot connect to {address}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake with {address} failed: {e}"))?;
    let _connection = AbortOnDrop(tokio::spawn(connection).abort_handle());
    let request = Request::get(&url[Position::BeforePath..Position::AfterQuery])
        .header(header::HOST, authority)
        .header(header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<LengthLimitError>().is_some() {
                format!("the document is larger than {MAX_DOCUMENT_BYTES} bytes")
            } else {
                format!("cannot read the body: {e}")
            }
        })?
        .to_bytes();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_id_urls_are_checked() {
        assert!(check_url("http://127.0.0.1:1/client.json").is_ok());
        assert!(check_url("https://app.example/client.json").is_ok());
        assert_eq!(
            check_url("ftp://app.example/client.json").unwrap_err(),
            "client_id \"ftp://app.example/client.json\" is not an http(s) URL"
        );
        assert_eq!(
            check_url("http://127.0.0.1:1/").unwrap_err(),
            "client_id \"http://127.0.0.1:1/\" has no path"
        );
        assert_eq!(
            check_url("http://u:p@127.0.0.1/c").unwrap_err(),
            "client_id \"http://u:p@127.0.0.1/c\" must not hold a fragment or credentials"
        );
    }
}
