//! The decoding half of [`tagged_enum!`]: taking the tag out of an object and decoding one variant.

use std::borrow::Cow;

use serde::de::{DeserializeOwned, Error};
use serde_json::Value;

use crate::JsonObject;

/// Removes the tag field `key` from `object` and returns its value; `absent` is used when the field is
/// missing (an error when there is no such default). A tag that is not a string is an error.
pub(crate) fn take_tag<E: Error>(
    object: &mut JsonObject,
    key: &str,
    what: &str,
    absent: Option<&'static str>,
) -> Result<Cow<'static, str>, E> {
    match object.remove(key) {
        Some(Value::String(tag)) => Ok(Cow::Owned(tag)),
        Some(other) => Err(E::custom(format_args!(
            "{what}: `{key}` must be a string, found {other}"
        ))),
        None => absent
            .map(Cow::Borrowed)
            .ok_or_else(|| E::custom(format_args!("{what}: missing field `{key}`"))),
    }
}

/// Decodes `object` (tag already removed) as one variant; the error names `what` and the variant's `kind`.
pub(crate) fn decode<T: DeserializeOwned, E: Error>(object: JsonObject, what: &str, kind: &str) -> Result<T, E> {
    serde_json::from_value(Value::Object(object))
        .map_err(|err| E::custom(format_args!("invalid {what} ({kind}): {err}")))
}
