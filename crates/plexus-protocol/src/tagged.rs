//! The decoding half of [`tagged_enum!`]: taking the tag out of an object and decoding one variant.

use std::borrow::Cow;

use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, SeqAccessDeserializer, StringDeserializer};
use serde::de::{Deserialize, DeserializeOwned, DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
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

/// A key of a tagged object as the fast path reads it: the tag's key, or another (borrowed from
/// the input where the deserializer can lend it).
pub(crate) enum Key<'de> {
    /// The tag's key.
    Tag,
    /// Another key.
    Other(Text<'de>),
}

/// Text read from the input: borrowed where the deserializer lends it, else owned.
pub(crate) enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Text<'_> {
    /// The text, owned.
    pub(crate) fn into_owned(self) -> String {
        match self {
            Text::Borrowed(text) => text.to_owned(),
            Text::Owned(text) => text,
        }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Text::Borrowed(text) => text,
            Text::Owned(text) => text,
        }
    }
}

/// Reads one key, telling the tag's key (`self.0`) apart without allocating for it (where the
/// deserializer lends the key).
pub(crate) struct KeySeed(pub(crate) &'static str);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key<'de>, D::Error> {
        match deserializer.deserialize_str(TextOrValueSeed)? {
            TextOrValue::Text(key) if key.as_str() == self.0 => Ok(Key::Tag),
            TextOrValue::Text(key) => Ok(Key::Other(key)),
            TextOrValue::Other(other) => Err(D::Error::custom(format_args!("a key must be a string, found {other}"))),
        }
    }
}

/// Reads a value: its text when it is a string (borrowed where the deserializer lends it, so a
/// block's tag or key costs no allocation), else the value itself, for the error that shows it.
struct TextOrValueSeed;

/// What [`TextOrValueSeed`] read.
enum TextOrValue<'de> {
    /// A string.
    Text(Text<'de>),
    /// Anything else.
    Other(Value),
}

impl<'de> DeserializeSeed<'de> for TextOrValueSeed {
    type Value = TextOrValue<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<TextOrValue<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextOrValueSeed {
    type Value = TextOrValue<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: Error>(self, text: &'de str) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Text(Text::Borrowed(text)))
    }

    fn visit_str<E: Error>(self, text: &str) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Text(Text::Owned(text.to_owned())))
    }

    fn visit_string<E: Error>(self, text: String) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Text(Text::Owned(text)))
    }

    fn visit_bool<E: Error>(self, value: bool) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Other(Value::Bool(value)))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Other(Value::from(value)))
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Other(Value::from(value)))
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Other(Value::from(value)))
    }

    fn visit_unit<E: Error>(self) -> Result<TextOrValue<'de>, E> {
        Ok(TextOrValue::Other(Value::Null))
    }

    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<TextOrValue<'de>, S::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(TextOrValue::Other)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<TextOrValue<'de>, M::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(TextOrValue::Other)
    }
}

/// What [`read_tag_first`] found at the start of an object.
pub(crate) enum Start<'de> {
    /// The tag came first, with this value: the rest of the object is still to be read.
    Tag(Text<'de>),
    /// The object, read whole, because its first key was not the tag (or it was empty).
    Object(JsonObject),
}

/// Reads the first entry of a tagged object. When it is the tag (as the specification's examples
/// and most servers write it), only its value is read, so that the variant decodes straight from
/// the rest of the input; otherwise the whole object is read, for [`take_tag`]'s path.
pub(crate) fn read_tag_first<'de, A: MapAccess<'de>>(
    map: &mut A,
    key: &'static str,
    what: &str,
) -> Result<Start<'de>, A::Error> {
    match map.next_key_seed(KeySeed(key))? {
        Some(Key::Tag) => match map.next_value_seed(TextOrValueSeed)? {
            TextOrValue::Text(tag) => Ok(Start::Tag(tag)),
            TextOrValue::Other(other) => Err(A::Error::custom(format_args!(
                "{what}: `{key}` must be a string, found {other}"
            ))),
        },
        Some(Key::Other(first)) => {
            let mut object = JsonObject::new();
            object.insert(first.into_owned(), map.next_value()?);
            while let Some((name, value)) = map.next_entry::<String, Value>()? {
                object.insert(name, value);
            }
            Ok(Start::Object(object))
        }
        None => Ok(Start::Object(JsonObject::new())),
    }
}

/// The rest of a tagged object after its tag, as a map that refuses the tag a second time (an
/// object that names two kinds is malformed, and the variant's unknown fields must not keep the
/// second).
pub(crate) struct Rest<'a, A> {
    map: &'a mut A,
    key: &'static str,
}

impl<'a, A> Rest<'a, A> {
    /// The rest of `map`, whose tag `key` was read.
    pub(crate) fn new(map: &'a mut A, key: &'static str) -> Self {
        Rest { map, key }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Rest<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        match self.map.next_key_seed(KeySeed(self.key))? {
            None => Ok(None),
            Some(Key::Tag) => Err(A::Error::custom(format_args!("duplicate field `{}`", self.key))),
            Some(Key::Other(Text::Borrowed(name))) => seed.deserialize(BorrowedStrDeserializer::new(name)).map(Some),
            Some(Key::Other(Text::Owned(name))) => seed.deserialize(StringDeserializer::new(name)).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// Decodes one variant from the rest of a tagged object (its tag read); the error names `what`
/// and the variant's `kind`, as [`decode`]'s does.
pub(crate) fn decode_rest<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    map: &mut A,
    key: &'static str,
    what: &'static str,
    kind: &str,
) -> Result<T, A::Error> {
    T::deserialize(MapAccessDeserializer::new(Rest::new(map, key)))
        .map_err(|err| A::Error::custom(format_args!("invalid {what} ({kind}): {err}")))
}

/// The rest of a tagged object whose tag this crate does not know, as an object with the tag
/// first (where it came).
pub(crate) fn unknown_rest<'de, A: MapAccess<'de>>(
    map: &mut A,
    key: &'static str,
    what: &'static str,
    tag: String,
) -> Result<JsonObject, A::Error> {
    let mut object = JsonObject::new();
    object.insert(key.to_owned(), Value::String(tag));
    let mut rest = Rest::new(map, key);
    while let Some((name, value)) = rest
        .next_entry::<String, Value>()
        .map_err(|err| A::Error::custom(format_args!("{what}: {err}")))?
    {
        object.insert(name, value);
    }
    Ok(object)
}
