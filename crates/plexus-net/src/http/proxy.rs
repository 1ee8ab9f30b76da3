//! Which proxy an origin's connections go through: the environment's (read as curl reads it, by
//! hyper-util's matcher), a server's own, or none.

use std::sync::Arc;

use http::HeaderValue;
use hyper_util::client::proxy::matcher::Matcher;

use super::{HttpError, OriginKey, ProxyChoice};

/// A proxy that an origin's connections go through.
#[derive(Debug)]
pub(crate) struct ProxyEndpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// An `https://` proxy: the connection to the proxy itself is TLS.
    pub(crate) tls: bool,
    /// `Proxy-Authorization` (Basic), from the credentials in the proxy's URL.
    pub(crate) authorization: Option<HeaderValue>,
    /// The proxy's URL without credentials, for errors and logs.
    pub(crate) shown: String,
}

/// The proxy rules of one client.
pub(crate) struct Proxies {
    /// `None`: no proxy at all.
    matcher: Option<Matcher>,
}

impl std::fmt::Debug for Proxies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxies")
            .field("enabled", &self.matcher.is_some())
            .finish()
    }
}

impl Proxies {
    /// The rules for `choice`. A proxy URL of a server's own must be an `http` or `https` URL.
    pub(crate) fn new(choice: &ProxyChoice) -> Result<Proxies, HttpError> {
        let matcher = match choice {
            ProxyChoice::Disabled => None,
            ProxyChoice::Environment => Some(Matcher::from_env()),
            ProxyChoice::Variables(variables) if variables.cgi => Some(Matcher::builder().build()),
            ProxyChoice::Variables(variables) => Some(
                Matcher::builder()
                    .all(variables.all.clone())
                    .http(variables.http.clone())
                    .https(variables.https.clone())
                    .no(variables.no.clone())
                    .build(),
            ),
            ProxyChoice::Url(url) => {
                let parsed = url::Url::parse(url).map_err(|source| HttpError::ProxyNotAUrl {
                    proxy: crate::redact::redact_url(url),
                    source,
                })?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(HttpError::ProxyScheme {
                        proxy: crate::redact::redact_url(url),
                    });
                }
                Some(Matcher::builder().all(url.as_str()).build())
            }
        };
        Ok(Proxies { matcher })
    }

    /// The proxy for connections to `origin`, if one applies.
    pub(crate) fn route(&self, origin: &OriginKey) -> Result<Option<Arc<ProxyEndpoint>>, HttpError> {
        let Some(matcher) = &self.matcher else { return Ok(None) };
        let scheme = if origin.tls { "https" } else { "http" };
        let host = if origin.host.contains(':') && !origin.host.starts_with('[') {
            format!("[{}]", origin.host)
        } else {
            origin.host.clone()
        };
        let Ok(destination) = http::Uri::try_from(format!("{scheme}://{host}:{}/", origin.port)) else {
            return Ok(None);
        };
        let Some(intercept) = matcher.intercept(&destination) else {
            return Ok(None);
        };
        let uri = intercept.uri();
        let shown = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority()
                .map_or("", |a| a.as_str().rsplit('@').next().unwrap_or_default())
        );
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(HttpError::Connect(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    format!("the proxy {shown} is not an http:// or https:// proxy (the only kinds plexus speaks to)"),
                )));
            }
        };
        let proxy_host = uri.host().unwrap_or_default();
        let proxy_host = proxy_host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(proxy_host)
            .to_owned();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let authorization = intercept.basic_auth().cloned().map(|mut value| {
            value.set_sensitive(true);
            value
        });
        tracing::debug!(
            "connections to {scheme}://{host}:{} go through the proxy {shown}",
            origin.port
        );
        Ok(Some(Arc::new(ProxyEndpoint {
            host: proxy_host,
            port,
            tls,
            authorization,
            shown,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(tls: bool, host: &str) -> OriginKey {
        OriginKey {
            tls,
            host: host.to_owned(),
            port: if tls { 443 } else { 80 },
        }
    }

    #[test]
    fn a_servers_own_proxy_applies_to_both_schemes_with_its_credentials_for_the_proxy_only() {
        let proxies = Proxies::new(&ProxyChoice::Url("http://me:secret@127.0.0.1:3128".to_owned())).unwrap();
        let route = proxies.route(&origin(true, "example.com")).unwrap().unwrap();
        assert_eq!((route.host.as_str(), route.port, route.tls), ("127.0.0.1", 3128, false));
        assert_eq!(route.shown, "http://127.0.0.1:3128");
        assert_eq!(route.authorization.as_ref().unwrap(), "Basic bWU6c2VjcmV0");
        assert!(route.authorization.as_ref().unwrap().is_sensitive());
        assert!(proxies.route(&origin(false, "example.com")).unwrap().is_some());
    }

    #[test]
    fn disabled_means_none_and_bad_proxies_are_named() {
        let proxies = Proxies::new(&ProxyChoice::Disabled).unwrap();
        assert!(proxies.route(&origin(true, "example.com")).unwrap().is_none());
        let error = Proxies::new(&ProxyChoice::Url("socks5://u:p@h:1080".to_owned())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the proxy socks5://h:1080 is not an http:// or https:// proxy (the only kinds plexus speaks to)"
        );
        let error = Proxies::new(&ProxyChoice::Url("not a url".to_owned())).unwrap_err();
        assert!(error.to_string().starts_with("the proxy "), "{error}");
    }
}
