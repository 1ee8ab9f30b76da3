//! Declarative helpers shared by the schema modules: open string enums and tag-dispatched enums.

/// An enum of known string values that keeps any other value in `Other(String)`, for fields the
/// specification may extend (a newer server must not make decoding fail).
macro_rules! open_string_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $( $(#[$vattr:meta])* $variant:ident = $wire:literal, )+
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vattr])* $variant, )+
            /// A value this crate does not know (from a newer revision or an extension), kept verbatim.
            Other(String),
        }

        impl $name {
            /// The value as spelled on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $wire, )+
                    Self::Other(other) => other,
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $wire => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match value.as_str() {
                    $( $wire => Self::$variant, )+
                    _ => Self::Other(value),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct WireVisitor;

                impl ::serde::de::Visitor<'_> for WireVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a string (", stringify!($name), ")"))
                    }

                    fn visit_str<E: ::serde::de::Error>(self, value: &str) -> Result<$name, E> {
                        Ok($name::from(value))
                    }

                    fn visit_string<E: ::serde::de::Error>(self, value: String) -> Result<$name, E> {
                        Ok($name::from(value))
                    }
                }

                deserializer.deserialize_str(WireVisitor)
            }
        }
    };
}

/// An enum over JSON objects whose kind is named by one field (`type` or `mode`).
///
/// Decoding reads the object once and decodes the one variant the tag names (it never tries several
/// types in turn, so a malformed known block is an error that names it, not a silent fallback). When
/// the tag is the object's first field, the variant decodes straight from the rest of the input, and
/// a second tag field is an error; otherwise the object is read whole and the tag taken out of it. An object with a tag this crate does not know becomes `Unknown`, kept verbatim. An
/// optional `absent` tag names the variant an object without the tag field belongs to.
/// Encoding writes the tag first, then the variant's fields.
macro_rules! tagged_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            what: $what:literal,
            tag: $key:literal $(, absent: $absent:literal)?;
            $( $(#[$vattr:meta])* $variant:ident($ty:ty) = $tag:literal, )+
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize)]
        #[serde(tag = $key)]
        pub enum $name {
            $( $(#[$vattr])* #[serde(rename = $tag)] $variant($ty), )+
            /// An object whose tag this crate does not know (from a newer revision or an extension),
            /// kept verbatim, tag included.
            #[serde(untagged)]
            Unknown($crate::JsonObject),
        }

        impl $name {
            /// The tag that names this variant on the wire (for `Unknown`, the tag it arrived with).
            pub fn tag(&self) -> &str {
                match self {
                    $( Self::$variant(_) => $tag, )+
                    Self::Unknown(object) => object.get($key).and_then(::serde_json::Value::as_str).unwrap_or(""),
                }
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct TaggedVisitor;

                impl<'de> ::serde::de::Visitor<'de> for TaggedVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("a map")
                    }

                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        const ABSENT: Option<&str> = tagged_enum!(@absent $($absent)?);
                        match $crate::tagged::read_tag_first(&mut map, $key, $what)? {
                            // The common case: the tag first, and the variant decoded from the
                            // rest of the input (no intermediate object).
                            $crate::tagged::Start::Tag(tag) => match tag.as_str() {
                                $( $tag => $crate::tagged::decode_rest(&mut map, $key, $what, concat!($key, " `", $tag, "`")).map($name::$variant), )+
                                _ => $crate::tagged::unknown_rest(&mut map, $key, $what, tag.into_owned()).map($name::Unknown),
                            },
                            $crate::tagged::Start::Object(mut object) => {
                                let tag = $crate::tagged::take_tag::<A::Error>(&mut object, $key, $what, ABSENT)?;
                                match tag.as_ref() {
                                    $( $tag => $crate::tagged::decode(object, $what, concat!($key, " `", $tag, "`")).map($name::$variant), )+
                                    _ => {
                                        object.insert($key.to_owned(), ::serde_json::Value::String(tag.into_owned()));
                                        Ok($name::Unknown(object))
                                    }
                                }
                            }
                        }
                    }
                }

                deserializer.deserialize_map(TaggedVisitor)
            }
        }
    };
    (@absent) => { None };
    (@absent $absent:literal) => { Some($absent) };
}

/// One page of a paginated list result (`tools/list`, `resources/list`, …): the items under
/// their own key, `nextCursor`, `_meta`, and unknown fields kept verbatim. With `cacheable`, also the
/// stateless era's caching hints `ttlMs` and `cacheScope` (optional, not written when absent).
macro_rules! paginated_result {
    (cacheable $(#[$attr:meta])* $name:ident, $(#[$field_attr:meta])* $field:ident: $item:ty) => {
        paginated_result!(@struct $(#[$attr])* $name, $(#[$field_attr])* $field: $item;
            /// How long this page stays fresh, in milliseconds (2026-07-28); read it through the
            /// `ttl_ms()` method, which treats an absent or negative value as 0.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<i64>,
            /// Who may reuse this page from a cache (2026-07-28).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<$crate::CacheScope>,
        );
    };
    ($(#[$attr:meta])* $name:ident, $(#[$field_attr:meta])* $field:ident: $item:ty) => {
        paginated_result!(@struct $(#[$attr])* $name, $(#[$field_attr])* $field: $item;);
    };
    (@struct $(#[$attr:meta])* $name:ident, $(#[$field_attr:meta])* $field:ident: $item:ty; $($more:tt)*) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $(#[$field_attr])*
            pub $field: Vec<$item>,
            /// The cursor of the next page; absent on the last page.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            $($more)*
            /// Metadata, kept verbatim.
            #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
            pub meta: Option<JsonObject>,
            /// Fields this crate does not know, kept verbatim.
            #[serde(flatten)]
            pub extra: JsonObject,
        }
    };
}
