//! The chainable setters of the transports' configuration structs, written once.

/// Writes chainable setters into an `impl` block, one per field: for each documented
/// `field: Type`, a `#[must_use] pub fn field(mut self, field: Type) -> Self` that sets it; for
/// `field: impl Into<Type>`, one that takes anything convertible.
///
/// ```
/// use std::time::Duration;
///
/// #[derive(Debug, Default)]
/// pub struct Config {
///     pub name: String,
///     pub timeout: Duration,
/// }
///
/// impl Config {
///     plexus_net::setters! {
///         /// Sets the name.
///         name: impl Into<String>,
///         /// Sets the timeout.
///         timeout: Duration,
///     }
/// }
///
/// let config = Config::default().name("weather").timeout(Duration::from_secs(5));
/// assert_eq!((config.name.as_str(), config.timeout), ("weather", Duration::from_secs(5)));
/// ```
#[macro_export]
macro_rules! setters {
    () => {};
    ($(#[$attr:meta])* $field:ident: impl Into<$ty:ty> $(, $($rest:tt)*)?) => {
        $(#[$attr])*
        #[must_use]
        pub fn $field(mut self, $field: impl ::core::convert::Into<$ty>) -> Self {
            self.$field = $field.into();
            self
        }
        $($crate::setters! { $($rest)* })?
    };
    ($(#[$attr:meta])* $field:ident: $ty:ty $(, $($rest:tt)*)?) => {
        $(#[$attr])*
        #[must_use]
        pub fn $field(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
        $($crate::setters! { $($rest)* })?
    };
}

/// Writes the setters of the fields every remote transport's configuration has, into its `impl`
/// block: `header` and `headers` (which add to a `headers: Vec<(String, String)>` field) and
/// `auth` (which sets an `auth: Option<Arc<dyn AuthProvider>>` field).
///
/// ```
/// use std::sync::Arc;
/// use plexus_net::StaticHeaders;
/// use plexus_transport::AuthProvider;
///
/// #[derive(Default)]
/// pub struct Config {
///     pub headers: Vec<(String, String)>,
///     pub auth: Option<Arc<dyn AuthProvider>>,
/// }
///
/// impl Config {
///     plexus_net::header_and_auth_setters!();
/// }
///
/// let config = Config::default()
///     .header("X-Api-Key", "k")
///     .headers([("X-A", "1")])
///     .auth(Arc::new(StaticHeaders::default()));
/// assert_eq!(config.headers.len(), 2);
/// assert!(config.auth.is_some());
/// ```
#[macro_export]
macro_rules! header_and_auth_setters {
    () => {
        /// Adds a header to the configured headers (see the field `headers`).
        #[must_use]
        pub fn header(
            mut self,
            name: impl ::core::convert::Into<::std::string::String>,
            value: impl ::core::convert::Into<::std::string::String>,
        ) -> Self {
            self.headers.push((name.into(), value.into()));
            self
        }

        /// Adds headers to the configured headers (see the field `headers`).
        #[must_use]
        pub fn headers<I, N, V>(mut self, headers: I) -> Self
        where
            I: ::core::iter::IntoIterator<Item = (N, V)>,
            N: ::core::convert::Into<::std::string::String>,
            V: ::core::convert::Into<::std::string::String>,
        {
            self.headers.extend(
                headers
                    .into_iter()
                    .map(|(name, value)| (name.into(), value.into())),
            );
            self
        }

        /// Sets the authentication provider (see the field `auth`).
        #[must_use]
        pub fn auth(mut self, provider: ::std::sync::Arc<dyn ::plexus_transport::AuthProvider>) -> Self {
            self.auth = ::core::option::Option::Some(provider);
            self
        }
    };
}

/// Writes the setters of the network fields every remote transport's configuration has, into
/// its `impl` block: `ca` and `client_identity` (which set a `tls: TlsOptions` field) and `proxy`
/// (which sets a `proxy: ProxyChoice` field).
///
/// ```
/// use std::path::PathBuf;
/// use plexus_net::http::ProxyChoice;
/// use plexus_net::tls::TlsOptions;
///
/// #[derive(Default)]
/// pub struct Config {
///     pub tls: TlsOptions,
///     pub proxy: ProxyChoice,
/// }
///
/// impl Config {
///     plexus_net::tls_and_proxy_setters!();
/// }
///
/// let config = Config::default().ca(Some(PathBuf::from("corp.pem"))).proxy(ProxyChoice::Disabled);
/// assert_eq!(config.tls.ca, Some(PathBuf::from("corp.pem")));
/// assert_eq!(config.proxy, ProxyChoice::Disabled);
/// ```
#[macro_export]
macro_rules! tls_and_proxy_setters {
    () => {
        /// Trusts the CA certificates of this PEM file for the server's TLS, besides the
        /// platform's roots and `NODE_EXTRA_CA_CERTS` (see the field `tls`).
        #[must_use]
        pub fn ca(mut self, ca: ::core::option::Option<::std::path::PathBuf>) -> Self {
            self.tls.ca = ca;
            self
        }

        /// Presents this client certificate when the server asks for one (see the field `tls`).
        #[must_use]
        pub fn client_identity(mut self, identity: ::core::option::Option<$crate::tls::ClientIdentity>) -> Self {
            self.tls.client_identity = identity;
            self
        }

        /// Sets which proxy the server's requests go through (see the field `proxy`).
        #[must_use]
        pub fn proxy(mut self, proxy: $crate::http::ProxyChoice) -> Self {
            self.proxy = proxy;
            self
        }
    };
}
