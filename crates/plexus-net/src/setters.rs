//! The chainable setters of a configuration struct's fields, written once.

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
