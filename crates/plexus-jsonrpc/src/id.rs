//! Request ids: a string or an integer, never null.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The id of a JSON-RPC request: an integer or a string. MCP forbids `null` ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id, as plexus sends them.
    Number(i64),
    /// A string id, as some servers send them.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = RequestId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request id (string or integer)")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
        i64::try_from(v)
            .map(RequestId::Number)
            .map_err(|_| E::custom(format!("request id {v} does not fit in a 64-bit signed integer")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
        Err(E::custom(format!("request id {v} is not an integer")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
        Ok(RequestId::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<RequestId, E> {
        Err(E::custom("request id is null (MCP forbids null ids)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_numbers_and_strings() {
        for (text, id) in [
            ("7", RequestId::Number(7)),
            ("-3", RequestId::Number(-3)),
            (r#""a\nb""#, RequestId::from("a\nb")),
        ] {
            let parsed: RequestId = serde_json::from_str(text).unwrap();
            assert_eq!(parsed, id);
            assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
        }
    }

    #[test]
    fn refuses_null_float_and_huge() {
        let null = serde_json::from_str::<RequestId>("null").unwrap_err().to_string();
        assert!(null.contains("MCP forbids null ids"), "{null}");
        assert!(
            serde_json::from_str::<RequestId>("1.5")
                .unwrap_err()
                .to_string()
                .contains("not an integer")
        );
        assert!(
            serde_json::from_str::<RequestId>("18446744073709551615")
                .unwrap_err()
                .to_string()
                .contains("does not fit")
        );
    }
}
