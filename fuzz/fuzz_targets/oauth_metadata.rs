//! Fuzzes the OAuth discovery documents, straight from a server: protected resource metadata
//! (RFC 9728) and authorization server metadata (RFC 8414), as `plexus_auth`'s discovery reads
//! and checks each document it fetches.
//!
//! Checked: reading never panics; a resource metadata document that is accepted names the
//! server (its `resource` matches the server's URL, so no token is ever asked for another
//! resource) and at least one authorization server; an authorization server metadata document
//! that is accepted names exactly the issuer it was fetched for, or one on its origin for a
//! 2025-03-26 server, or (a configured document) a valid `http(s)` issuer without query or
//! fragment; and every error renders, naming the metadata URL.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_auth::oauth::discovery::{ExpectedIssuer, read_auth_server_metadata, read_resource_metadata};
use plexus_auth::oauth::resource::resource_matches;
use url::Url;

const SERVER: &str = "https://mcp.example.com/tools/mcp";
const RESOURCE_METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/tools/mcp";
const ISSUER: &str = "https://auth.example.com/t1";
const METADATA_URL: &str = "https://auth.example.com/.well-known/oauth-authorization-server/t1";

fuzz_target!(|data: &[u8]| {
    let server = Url::parse(SERVER).expect("a valid URL");
    match read_resource_metadata(data, RESOURCE_METADATA_URL, &server) {
        Ok(metadata) => {
            assert!(resource_matches(&metadata.resource, &server), "{:?}", metadata.resource);
            assert!(!metadata.authorization_servers.is_empty());
        }
        Err(error) => {
            let chain = plexus_jsonrpc::error_chain(&error);
            assert!(chain.contains("mcp.example.com"), "{chain}");
        }
    }

    let expected_origin = Url::parse(ISSUER).expect("a valid URL").origin();
    for expected in [
        ExpectedIssuer::Exact(ISSUER),
        ExpectedIssuer::SameOrigin(ISSUER),
        ExpectedIssuer::Any,
    ] {
        match read_auth_server_metadata(data, "the authorization server metadata", METADATA_URL, expected) {
            Ok(metadata) => match expected {
                ExpectedIssuer::Exact(issuer) => assert_eq!(metadata.issuer, issuer),
                ExpectedIssuer::SameOrigin(_) => {
                    let found = Url::parse(&metadata.issuer).expect("an accepted issuer parses");
                    assert_eq!(found.origin(), expected_origin, "{:?}", metadata.issuer);
                }
                ExpectedIssuer::Any => {
                    let found = Url::parse(&metadata.issuer).expect("an accepted issuer parses");
                    assert!(matches!(found.scheme(), "http" | "https"), "{:?}", metadata.issuer);
                    assert!(found.has_host() && found.query().is_none() && found.fragment().is_none());
                }
            },
            Err(error) => {
                // An unusable issuer is named itself, not the document's URL.
                let chain = plexus_jsonrpc::error_chain(&error);
                assert!(
                    chain.contains("auth.example.com") || chain.starts_with("the authorization server issuer"),
                    "{chain}"
                );
            }
        }
    }
});
