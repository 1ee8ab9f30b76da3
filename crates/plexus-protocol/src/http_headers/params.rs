//! `Mcp-Param-{Name}` headers: the `x-mcp-header` annotations of a tool's input schema, checked
//! once per listing ([`ParamHeaders::from_input_schema`]), and the headers of one call's
//! arguments.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Number, Value};

use super::{
    MAX_SAFE_INTEGER, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, MCP_PARAM_HEADER_PREFIX, X_MCP_HEADER, encode_header_value,
};

/// How many characters of an odd `type` value an error quotes.
const MAX_QUOTED_TYPE: usize = 100;

/// The `Mcp-Param-{Name}` headers of one tool, read from the `x-mcp-header` annotations of its
/// input schema, in the schema's order.
///
/// Built by [`from_input_schema`](Self::from_input_schema), which also checks the annotations
/// (SPEC `server/tools` §x-mcp-header): a tool whose schema has an invalid one must be left out of
/// the tool list on HTTP. A schema without annotations gives an empty `ParamHeaders` without
/// allocating.
///
/// ```
/// use plexus_protocol::http_headers::ParamHeaders;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "scope": {"type": "object", "properties": {
///         "tenant": {"type": "integer", "x-mcp-header": "Tenant"},
///         "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"}
///     }}
/// }});
/// let headers = ParamHeaders::from_input_schema(&schema).unwrap();
/// assert_eq!(headers.len(), 2);
/// assert_eq!(headers.iter().next().unwrap().path(), ["scope", "tenant"]);
///
/// let arguments = json!({"scope": {"tenant": 42, "dry_run": null}});
/// assert_eq!(
///     headers.headers(arguments.as_object().unwrap()),
///     [("Mcp-Param-Tenant".to_owned(), "42".to_owned())]
/// );
///
/// let invalid = json!({"properties": {"hosts": {"type": "array", "x-mcp-header": "Hosts"}}});
/// let error = ParamHeaders::from_input_schema(&invalid).unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "the `x-mcp-header` annotation \"Hosts\" at /properties/hosts is on a property whose `type` is \"array\"; \
///      only string, integer and boolean properties can be mirrored into a header"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamHeaders {
    params: Vec<ParamHeader>,
}

/// One annotated tool parameter: its header, where its value is in the arguments, and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// `Mcp-Param-{Name}`.
    header_name: String,
    /// The `properties` keys from the root to the property.
    path: Vec<String>,
    param_type: ParamType,
}

/// The type of an annotated parameter: the three types `x-mcp-header` is allowed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParamType {
    /// `"type": "string"`: the value is sent as it is (encoded when needed).
    String,
    /// `"type": "integer"`: the value is sent in decimal.
    Integer,
    /// `"type": "boolean"`: `true` or `false`.
    Boolean,
}

impl ParamType {
    /// The JSON Schema type name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
        }
    }

    fn from_schema_type(name: &str) -> Option<Self> {
        match name {
            "string" => Some(Self::String),
            "integer" => Some(Self::Integer),
            "boolean" => Some(Self::Boolean),
            _ => None,
        }
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ParamHeaders {
    /// Reads and checks the `x-mcp-header` annotations of a tool's input schema.
    ///
    /// Every annotation must be a non-empty string that is an HTTP token (RFC 9110 `1*tchar`),
    /// unique within the schema ignoring ASCII case, on a property whose `type` is exactly
    /// `"string"`, `"integer"` or `"boolean"`, and statically reachable: the path from the root to
    /// it is made of `properties` members only (`properties.a.properties.b` is fine; an annotation
    /// under `items`, `anyOf`, `additionalProperties`, `$defs`, ..., or on the root itself, is
    /// not). The walk looks at every subschema position of JSON Schema 2020-12 (and draft-07's
    /// `definitions`, `dependencies` and `additionalItems`); it does not look into instance data
    /// (`default`, `examples`, `const`, `enum`) or unknown keywords, and does not follow `$ref`.
    /// It gives up on a schema more than [`MAX_SCHEMA_DEPTH`] subschemas deep or with more than
    /// [`MAX_SCHEMA_NODES`] of them.
    ///
    /// The first problem found is returned: problems of single annotations in the schema's order,
    /// then duplicates. A schema that is not a JSON object (`true`) has no annotations.
    pub fn from_input_schema(schema: &Value) -> Result<Self, InvalidHeaderAnnotation> {
        match schema {
            Value::Object(object) => Self::from_schema_object(object),
            _ => Ok(Self::default()),
        }
    }

    /// [`from_input_schema`](Self::from_input_schema) for a schema held as a JSON object, as
    /// [`Tool::input_schema`](crate::Tool::input_schema) is.
    pub fn from_schema_object(schema: &Map<String, Value>) -> Result<Self, InvalidHeaderAnnotation> {
        let mut walk = Walk::default();
        walk.visit(schema, &ROOT)?;
        let params = walk.params;
        if let Some((repeat, first)) = first_duplicate(&params) {
            let (repeat, first) = (&params[repeat], &params[first]);
            return Err(InvalidHeaderAnnotation::Duplicate {
                pointer: repeat.pointer(),
                name: repeat.name().to_owned(),
                other_pointer: first.pointer(),
                other_name: first.name().to_owned(),
            });
        }
        Ok(Self { params })
    }

    /// The annotated parameters, in the schema's order.
    pub fn iter(&self) -> std::slice::Iter<'_, ParamHeader> {
        self.params.iter()
    }

    /// How many parameters are annotated.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Whether no parameter is annotated (the tool sends no `Mcp-Param-*` header).
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The `(header name, encoded value)` pairs to send with a `tools/call` of these arguments,
    /// in the schema's order: one for each annotated parameter whose value is there, rendered by
    /// [`ParamHeader::value`].
    pub fn headers(&self, arguments: &Map<String, Value>) -> Vec<(String, String)> {
        self.params
            .iter()
            .filter_map(|param| Some((param.header_name.clone(), param.value(arguments)?.into_owned())))
            .collect()
    }
}

impl<'a> IntoIterator for &'a ParamHeaders {
    type Item = &'a ParamHeader;
    type IntoIter = std::slice::Iter<'a, ParamHeader>;

    fn into_iter(self) -> Self::IntoIter {
        self.params.iter()
    }
}

impl ParamHeader {
    /// The full header name, `Mcp-Param-{Name}`, with the annotation's spelling.
    pub fn header_name(&self) -> &str {
        &self.header_name
    }

    /// The annotation: the `{Name}` of `Mcp-Param-{Name}`.
    pub fn name(&self) -> &str {
        &self.header_name[MCP_PARAM_HEADER_PREFIX.len()..]
    }

    /// The property's path from the schema root (the `properties` keys), which is also where its
    /// value is in the arguments: `["region"]`, or `["scope", "tenant"]` for a nested property.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The property's declared type.
    pub fn param_type(&self) -> ParamType {
        self.param_type
    }

    /// The encoded header value for these arguments, or `None` when no header is sent.
    ///
    /// The value at [`path`](Self::path) is rendered by its JSON type (whatever the declared one):
    /// a string as it is, a boolean as `true` or `false`, an integer in decimal when within
    /// ±[`MAX_SAFE_INTEGER`] (an integral float such as `42.0` is the integer `42`, as in JSON
    /// Schema), then encoded by [`encode_header_value`]. No header is sent when the value is
    /// absent or `null` (as the specification requires), or when it has no rendering: a fraction,
    /// an integer beyond the safe range, an array or an object. Such arguments do not match the
    /// schema, which the server reports when it checks them; a missing header cannot be mistaken
    /// for a value, where an invented rendering could.
    pub fn value<'v>(&self, arguments: &'v Map<String, Value>) -> Option<Cow<'v, str>> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments.get(first)?;
        for key in rest {
            value = value.as_object()?.get(key)?;
        }
        match value {
            Value::String(text) => Some(encode_header_value(text)),
            Value::Bool(true) => Some(Cow::Borrowed("true")),
            Value::Bool(false) => Some(Cow::Borrowed("false")),
            Value::Number(number) => safe_integer(number).map(|integer| Cow::Owned(integer.to_string())),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// The JSON Pointer of the property's schema (`/properties/scope/properties/tenant`).
    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for key in &self.path {
            pointer.push_str("/properties/");
            push_pointer_token(&mut pointer, key);
        }
        pointer
    }
}

/// An integer within ±(2^53 − 1), also when written as an integral float.
fn safe_integer(number: &Number) -> Option<i64> {
    if let Some(integer) = number.as_i64() {
        return (integer.unsigned_abs() <= MAX_SAFE_INTEGER).then_some(integer);
    }
    if number.is_u64() {
        return None; // beyond i64, so beyond the safe range
    }
    let float = number.as_f64()?;
    // `MAX_SAFE_INTEGER` (2^53 − 1) is exact as an f64.
    #[allow(clippy::cast_precision_loss)]
    let limit = MAX_SAFE_INTEGER as f64;
    if float.fract() == 0.0 && float.abs() <= limit {
        #[allow(clippy::cast_possible_truncation)] // integral and within ±2^53: exact
        Some(float as i64)
    } else {
        None
    }
}

/// The first annotation, in the schema's order, whose name repeats an earlier one ignoring ASCII
/// case: `(its index, the earlier one's index)`.
fn first_duplicate(params: &[ParamHeader]) -> Option<(usize, usize)> {
    if params.len() < 2 {
        return None;
    }
    let folded = move |i: usize| params[i].name().bytes().map(|b| b.to_ascii_lowercase());
    // A stable sort: within a group of equal names, the indices stay in the schema's order.
    let mut order: Vec<usize> = (0..params.len()).collect();
    order.sort_by(|&a, &b| folded(a).cmp(folded(b)));
    let mut found: Option<(usize, usize)> = None;
    let mut group_first = order[0];
    for pair in order.windows(2) {
        if folded(pair[0]).eq(folded(pair[1])) {
            if found.is_none_or(|(repeat, _)| pair[1] < repeat) {
                found = Some((pair[1], group_first));
            }
        } else {
            group_first = pair[1];
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why a tool's `x-mcp-header` annotations are invalid, which makes the whole tool invalid.
///
/// Each variant says where: `pointer` is the JSON Pointer (RFC 6901) of the annotated schema
/// within the input schema, e.g. `/properties/region` or `/properties/tags/items`. The tool's
/// name is the caller's to add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidHeaderAnnotation {
    /// The annotation is on the input schema itself rather than on a property.
    #[error("the `x-mcp-header` annotation is on the input schema's root, not on a property")]
    AtRoot,
    /// The annotation is not statically reachable: the path to it goes through a keyword other
    /// than `properties`.
    #[error(
        "the `x-mcp-header` annotation at {pointer} is not statically reachable: its path goes through `{keyword}` \
         (only a chain of `properties` may lead to an annotated property)"
    )]
    Unreachable {
        /// Where the annotation is.
        pointer: String,
        /// The first keyword on the path that is not `properties` (`items`, `anyOf`, `$defs`, ...).
        keyword: &'static str,
    },
    /// The annotation's value is not a string.
    #[error("the `x-mcp-header` annotation at {pointer} is a JSON {found}, not a string")]
    NotAString {
        /// Where the annotation is.
        pointer: String,
        /// The JSON type found: `number`, `boolean`, `null`, `array` or `object`.
        found: &'static str,
    },
    /// The annotation is the empty string.
    #[error("the `x-mcp-header` annotation at {pointer} is empty")]
    Empty {
        /// Where the annotation is.
        pointer: String,
    },
    /// The annotation is not an HTTP token (RFC 9110 `1*tchar`: letters, digits and
    /// ``!#$%&'*+-.^_`|~``): it has a space, a colon, a control or non-ASCII character, ...
    #[error(
        "the `x-mcp-header` annotation {name:?} at {pointer} is not an HTTP header name: it contains {character:?}"
    )]
    NotAToken {
        /// Where the annotation is.
        pointer: String,
        /// The annotation.
        name: String,
        /// Its first character that a token cannot have.
        character: char,
    },
    /// The annotated property's `type` is not exactly `"string"`, `"integer"` or `"boolean"`.
    #[error(
        "the `x-mcp-header` annotation {name:?} at {pointer} is on a property whose `type` is {found}; \
         only string, integer and boolean properties can be mirrored into a header"
    )]
    WrongType {
        /// Where the annotation is.
        pointer: String,
        /// The annotation.
        name: String,
        /// The property's `type`.
        found: FoundType,
    },
    /// Two annotations are the same name ignoring ASCII case (header names are case-insensitive).
    #[error(
        "the `x-mcp-header` annotation {name:?} at {pointer} repeats {other_name:?} at {other_pointer} \
         (header names are case-insensitive)"
    )]
    Duplicate {
        /// Where the later annotation is.
        pointer: String,
        /// The later annotation.
        name: String,
        /// Where the earlier annotation is.
        other_pointer: String,
        /// The earlier annotation, in its spelling.
        other_name: String,
    },
    /// The schema nests subschemas more than [`MAX_SCHEMA_DEPTH`] deep.
    #[error(
        "the input schema nests subschemas more than {limit} deep (at {pointer}); its `x-mcp-header` annotations cannot be checked"
    )]
    TooDeep {
        /// The first subschema beyond the limit.
        pointer: String,
        /// [`MAX_SCHEMA_DEPTH`].
        limit: usize,
    },
    /// The schema has more than [`MAX_SCHEMA_NODES`] subschemas.
    #[error("the input schema has more than {limit} subschemas; its `x-mcp-header` annotations cannot be checked")]
    TooLarge {
        /// [`MAX_SCHEMA_NODES`].
        limit: usize,
    },
}

/// The `type` of a property that `x-mcp-header` is not allowed on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FoundType {
    /// The property has no `type`.
    Missing,
    /// One type name other than the allowed three: `number`, `object`, `array`, `null`, or a name
    /// JSON Schema does not have.
    Named(String),
    /// Anything else, such as a list of types (`["string", "null"]`): its JSON text, cut at 100
    /// characters.
    Other(String),
}

impl fmt::Display for FoundType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("missing"),
            Self::Named(name) => write!(f, "{name:?}"),
            Self::Other(json) => f.write_str(json),
        }
    }
}

impl FoundType {
    fn of(type_value: Option<&Value>) -> Self {
        match type_value {
            None => Self::Missing,
            Some(Value::String(name)) => Self::Named(name.clone()),
            Some(other) => {
                let json = other.to_string();
                Self::Other(match json.char_indices().nth(MAX_QUOTED_TYPE) {
                    Some((cut, _)) => format!("{}…", &json[..cut]),
                    None => json,
                })
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The schema walk
// ---------------------------------------------------------------------------------------------

/// How a keyword holds subschemas.
#[derive(Clone, Copy)]
enum Shape {
    /// One schema (`items` may also be a list, as in draft-07).
    One,
    /// A list of schemas.
    List,
    /// An object whose member values are schemas.
    Map,
}

/// The keywords other than `properties` whose values hold subschemas (JSON Schema 2020-12's
/// applicators, `$defs`, `contentSchema`, and draft-07's `definitions`, `dependencies` and
/// `additionalItems`), as static strings for [`InvalidHeaderAnnotation::Unreachable`].
fn applicator(keyword: &str) -> Option<(&'static str, Shape)> {
    let found = match keyword {
        "items" => ("items", Shape::One),
        "additionalItems" => ("additionalItems", Shape::One),
        "unevaluatedItems" => ("unevaluatedItems", Shape::One),
        "contains" => ("contains", Shape::One),
        "additionalProperties" => ("additionalProperties", Shape::One),
        "unevaluatedProperties" => ("unevaluatedProperties", Shape::One),
        "propertyNames" => ("propertyNames", Shape::One),
        "not" => ("not", Shape::One),
        "if" => ("if", Shape::One),
        "then" => ("then", Shape::One),
        "else" => ("else", Shape::One),
        "contentSchema" => ("contentSchema", Shape::One),
        "prefixItems" => ("prefixItems", Shape::List),
        "allOf" => ("allOf", Shape::List),
        "anyOf" => ("anyOf", Shape::List),
        "oneOf" => ("oneOf", Shape::List),
        "patternProperties" => ("patternProperties", Shape::Map),
        "dependentSchemas" => ("dependentSchemas", Shape::Map),
        "$defs" => ("$defs", Shape::Map),
        "definitions" => ("definitions", Shape::Map),
        "dependencies" => ("dependencies", Shape::Map),
        _ => return None,
    };
    Some(found)
}

/// One step from a schema to a subschema.
#[derive(Clone, Copy)]
enum Step<'v> {
    /// `properties/{name}`.
    Property(&'v str),
    /// `{keyword}`.
    Keyword(&'static str),
    /// `{keyword}/{index}`.
    Index(&'static str, usize),
    /// `{keyword}/{key}`.
    Key(&'static str, &'v str),
}

/// The input schema itself.
const ROOT: Location<'static, 'static> = Location {
    parent: None,
    step: None,
    depth: 0,
    through: None,
};

/// Where a subschema is: a chain of steps kept on the walk's stack (nothing is allocated unless an
/// annotation or an error needs its path).
struct Location<'v, 'p> {
    parent: Option<&'p Location<'v, 'p>>,
    step: Option<Step<'v>>,
    depth: usize,
    /// The first keyword other than `properties` on the path, if any.
    through: Option<&'static str>,
}

impl<'v> Location<'v, '_> {
    fn child<'p>(&'p self, step: Step<'v>) -> Location<'v, 'p> {
        let through = match step {
            Step::Property(_) => self.through,
            Step::Keyword(keyword) | Step::Index(keyword, _) | Step::Key(keyword, _) => self.through.or(Some(keyword)),
        };
        Location {
            parent: Some(self),
            step: Some(step),
            depth: self.depth + 1,
            through,
        }
    }

    fn steps(&self) -> Vec<Step<'v>> {
        let mut steps = Vec::with_capacity(self.depth);
        let mut at = Some(self);
        while let Some(location) = at {
            steps.extend(location.step);
            at = location.parent;
        }
        steps.reverse();
        steps
    }

    /// The JSON Pointer of this subschema.
    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for step in self.steps() {
            match step {
                Step::Property(name) => {
                    pointer.push_str("/properties/");
                    push_pointer_token(&mut pointer, name);
                }
                Step::Keyword(keyword) => {
                    pointer.push('/');
                    push_pointer_token(&mut pointer, keyword);
                }
                Step::Index(keyword, index) => {
                    pointer.push('/');
                    push_pointer_token(&mut pointer, keyword);
                    pointer.push('/');
                    pointer.push_str(&index.to_string());
                }
                Step::Key(keyword, key) => {
                    pointer.push('/');
                    push_pointer_token(&mut pointer, keyword);
                    pointer.push('/');
                    push_pointer_token(&mut pointer, key);
                }
            }
        }
        pointer
    }

    /// The `properties` keys from the root (only called when every step is one).
    fn property_path(&self) -> Vec<String> {
        self.steps()
            .into_iter()
            .filter_map(|step| match step {
                Step::Property(name) => Some(name.to_owned()),
                _ => None,
            })
            .collect()
    }
}

/// Appends a JSON Pointer reference token, `~` as `~0` and `/` as `~1`.
fn push_pointer_token(pointer: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Whether `c` is an RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Default)]
struct Walk {
    nodes: usize,
    params: Vec<ParamHeader>,
}

impl Walk {
    fn visit<'v>(
        &mut self,
        schema: &'v Map<String, Value>,
        at: &Location<'v, '_>,
    ) -> Result<(), InvalidHeaderAnnotation> {
        self.nodes += 1;
        if self.nodes > MAX_SCHEMA_NODES {
            return Err(InvalidHeaderAnnotation::TooLarge {
                limit: MAX_SCHEMA_NODES,
            });
        }
        if at.depth > MAX_SCHEMA_DEPTH {
            return Err(InvalidHeaderAnnotation::TooDeep {
                pointer: at.pointer(),
                limit: MAX_SCHEMA_DEPTH,
            });
        }
        if let Some(annotation) = schema.get(X_MCP_HEADER) {
            self.annotation(schema, annotation, at)?;
        }
        for (keyword, value) in schema {
            if keyword == "properties" {
                // Boolean schemas (`"a": true`) hold no annotation.
                for (name, sub) in value.as_object().into_iter().flatten() {
                    if let Value::Object(sub) = sub {
                        self.visit(sub, &at.child(Step::Property(name)))?;
                    }
                }
                continue;
            }
            let Some((keyword, shape)) = applicator(keyword) else {
                continue;
            };
            match (shape, value) {
                (Shape::One, Value::Object(sub)) => {
                    self.visit(sub, &at.child(Step::Keyword(keyword)))?;
                }
                (Shape::Map, Value::Object(members)) => {
                    for (key, sub) in members {
                        if let Value::Object(sub) = sub {
                            self.visit(sub, &at.child(Step::Key(keyword, key)))?;
                        }
                    }
                }
                // `List`, and draft-07's array form of `items`.
                (Shape::List | Shape::One, Value::Array(items)) => {
                    for (index, sub) in items.iter().enumerate() {
                        if let Value::Object(sub) = sub {
                            self.visit(sub, &at.child(Step::Index(keyword, index)))?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn annotation(
        &mut self,
        schema: &Map<String, Value>,
        annotation: &Value,
        at: &Location<'_, '_>,
    ) -> Result<(), InvalidHeaderAnnotation> {
        if at.depth == 0 {
            return Err(InvalidHeaderAnnotation::AtRoot);
        }
        if let Some(keyword) = at.through {
            return Err(InvalidHeaderAnnotation::Unreachable {
                pointer: at.pointer(),
                keyword,
            });
        }
        let Value::String(name) = annotation else {
            return Err(InvalidHeaderAnnotation::NotAString {
                pointer: at.pointer(),
                found: json_type_name(annotation),
            });
        };
        if name.is_empty() {
            return Err(InvalidHeaderAnnotation::Empty { pointer: at.pointer() });
        }
        if let Some(character) = name.chars().find(|&c| !is_tchar(c)) {
            return Err(InvalidHeaderAnnotation::NotAToken {
                pointer: at.pointer(),
                name: name.clone(),
                character,
            });
        }
        let type_value = schema.get("type");
        let Some(param_type) = type_value.and_then(Value::as_str).and_then(ParamType::from_schema_type) else {
            return Err(InvalidHeaderAnnotation::WrongType {
                pointer: at.pointer(),
                name: name.clone(),
                found: FoundType::of(type_value),
            });
        };
        let mut header_name = String::with_capacity(MCP_PARAM_HEADER_PREFIX.len() + name.len());
        header_name.push_str(MCP_PARAM_HEADER_PREFIX);
        header_name.push_str(name);
        self.params.push(ParamHeader {
            header_name,
            path: at.property_path(),
            param_type,
        });
        Ok(())
    }
}
