//! The YAML front matter of a skill's `SKILL.md` (between `---` lines at its start), read as
//! JSON and compared field by field with the skill's entry. The text comes from a server, so the
//! reading is bounded: at most [`MAX_FRONTMATTER_BYTES`] of YAML, nested at most
//! [`MAX_FRONTMATTER_DEPTH`] deep, with no anchors or aliases (whose expansion is exponential).

use plexus_protocol::JsonObject;
use serde_json::Value;

/// The largest front matter read (the Agent Skills format's fields take a few KiB at most).
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The deepest nesting of collections (mappings and sequences, the front matter's own mapping
/// included) a front matter may have.
pub const MAX_FRONTMATTER_DEPTH: usize = 64;

/// Why a `SKILL.md`'s front matter cannot be read, or does not match its entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontMatterError {
    /// The text does not start with a `---` line.
    #[error("the SKILL.md does not open with a --- front matter line")]
    NotOpened,
    /// No `---` line ends the front matter.
    #[error("the SKILL.md front matter has no closing --- line")]
    NotClosed,
    /// The front matter is longer than [`MAX_FRONTMATTER_BYTES`].
    #[error("the SKILL.md front matter is longer than {limit} bytes")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// The front matter nests deeper than [`MAX_FRONTMATTER_DEPTH`].
    #[error("the SKILL.md front matter nests deeper than {limit} levels")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// The YAML does not parse.
    #[error("the SKILL.md front matter is not YAML: {0}")]
    NotYaml(String),
    /// The YAML is not a mapping.
    #[error("the SKILL.md front matter is not a mapping")]
    NotAMapping,
    /// A mapping key is not a string.
    #[error("the front matter key {0} is not a string")]
    KeyNotAString(String),
    /// A number with no JSON form (infinite, not a number).
    #[error("the front matter number {0} has no JSON form")]
    NumberWithoutJson(String),
    /// An anchor (`&name`), an alias (`*name`) or a value the YAML parser could not make sense of.
    #[error("the front matter holds an anchor, an alias or an invalid value")]
    AliasOrInvalid,
    /// The entry has a field the `SKILL.md` lacks.
    #[error("the entry has {0:?}, the SKILL.md does not")]
    MissingInFile(String),
    /// The `SKILL.md` has a field the entry lacks.
    #[error("the SKILL.md has {0:?}, the entry does not")]
    MissingInEntry(String),
    /// A field differs.
    #[error("{key:?} is {in_file} in the SKILL.md but {in_entry} in the entry")]
    Differs {
        /// The field.
        key: String,
        /// Its value in the file, as JSON.
        in_file: String,
        /// Its value in the entry, as JSON.
        in_entry: String,
    },
}

/// Compares the front matter of `markdown` with the entry's `frontmatter`, field by field: the
/// first difference, or why the front matter cannot be read.
pub(crate) fn compare(markdown: &str, frontmatter: &JsonObject) -> Result<(), FrontMatterError> {
    let parsed = parse_frontmatter(markdown)?;
    for (key, value) in frontmatter {
        match parsed.get(key) {
            None => return Err(FrontMatterError::MissingInFile(key.clone())),
            Some(found) if found != value => {
                return Err(FrontMatterError::Differs {
                    key: key.clone(),
                    in_file: found.to_string(),
                    in_entry: value.to_string(),
                });
            }
            Some(_) => {}
        }
    }
    if let Some(key) = parsed.keys().find(|key| !frontmatter.contains_key(*key)) {
        return Err(FrontMatterError::MissingInEntry(key.clone()));
    }
    Ok(())
}

/// The YAML front matter that opens `markdown` (between `---` lines; a leading byte order mark
/// is skipped), as a JSON object.
///
/// ```
/// let fields = plexus_client::parse_frontmatter("---\nname: pdf\nmetadata: {n: 3}\n---\nBody\n").unwrap();
/// assert_eq!(fields["name"], "pdf");
/// assert_eq!(fields["metadata"]["n"], 3);
/// assert!(plexus_client::parse_frontmatter("name: pdf\n").is_err());
/// ```
pub fn parse_frontmatter(markdown: &str) -> Result<JsonObject, FrontMatterError> {
    let text = markdown.strip_prefix('\u{feff}').unwrap_or(markdown);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(FrontMatterError::NotOpened);
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if yaml.len() + line.len() > MAX_FRONTMATTER_BYTES {
            return Err(FrontMatterError::TooLong {
                limit: MAX_FRONTMATTER_BYTES,
            });
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(FrontMatterError::NotClosed);
    }
    check_shape(&yaml)?;
    let documents =
        yaml_rust2::YamlLoader::load_from_str(&yaml).map_err(|e| FrontMatterError::NotYaml(e.to_string()))?;
    match documents.into_iter().next().map(json_of) {
        Some(Ok(Value::Object(object))) => Ok(object),
        Some(Ok(_)) | None => Err(FrontMatterError::NotAMapping),
        Some(Err(e)) => Err(e),
    }
}

/// Reads `yaml`'s events (the parser's stream, before any value is built) and refuses it when it
/// nests collections deeper than [`MAX_FRONTMATTER_DEPTH`] or has an anchor or an alias: the
/// loader copies an anchored value for each alias, so a few lines of aliases of aliases grow
/// into gigabytes, and no skill's front matter needs them.
fn check_shape(yaml: &str) -> Result<(), FrontMatterError> {
    use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
    use yaml_rust2::scanner::Marker;

    #[derive(Default)]
    struct Shape {
        depth: usize,
        problem: Option<FrontMatterError>,
    }
    impl MarkedEventReceiver for Shape {
        fn on_event(&mut self, event: Event, _mark: Marker) {
            if self.problem.is_some() {
                return;
            }
            match event {
                Event::Alias(_)
                | Event::Scalar(_, _, 1.., _)
                | Event::SequenceStart(1.., _)
                | Event::MappingStart(1.., _) => self.problem = Some(FrontMatterError::AliasOrInvalid),
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    self.depth += 1;
                    if self.depth > MAX_FRONTMATTER_DEPTH {
                        self.problem = Some(FrontMatterError::TooDeep {
                            limit: MAX_FRONTMATTER_DEPTH,
                        });
                    }
                }
                Event::SequenceEnd | Event::MappingEnd => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    let mut shape = Shape::default();
    Parser::new_from_str(yaml)
        .load(&mut shape, true)
        .map_err(|e| FrontMatterError::NotYaml(e.to_string()))?;
    shape.problem.map_or(Ok(()), Err)
}

/// A YAML value as JSON: mappings need string keys; invalid values are refused. (Its depth was
/// checked: the recursion is bounded.)
fn json_of(yaml: yaml_rust2::Yaml) -> Result<Value, FrontMatterError> {
    use yaml_rust2::Yaml;
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(value) => Value::Bool(value),
        Yaml::Integer(value) => Value::from(value),
        Yaml::Real(text) => {
            let number = text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .ok_or(FrontMatterError::NumberWithoutJson(text))?;
            Value::Number(number)
        }
        Yaml::String(text) => Value::String(text),
        Yaml::Array(items) => Value::Array(items.into_iter().map(json_of).collect::<Result<_, _>>()?),
        Yaml::Hash(entries) => {
            let mut object = JsonObject::new();
            for (key, value) in entries {
                let Yaml::String(key) = key else {
                    return Err(FrontMatterError::KeyNotAString(format!("{key:?}")));
                };
                object.insert(key, json_of(value)?);
            }
            Value::Object(object)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err(FrontMatterError::AliasOrInvalid),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn front_matter_is_yaml_compared_field_by_field() {
        let markdown = "---\nname: pdf-processing\ndescription: Extract PDFs\nmetadata:\n  version: \"2.1\"\n  n: 3\n---\n\nBody.\n";
        let entry =
            json!({"name": "pdf-processing", "description": "Extract PDFs", "metadata": {"version": "2.1", "n": 3}});
        let entry = entry.as_object().unwrap();
        assert_eq!(compare(markdown, entry), Ok(()));
        let changed = markdown.replace("Extract PDFs", "Exfiltrate credentials");
        assert_eq!(
            compare(&changed, entry).unwrap_err().to_string(),
            r#""description" is "Exfiltrate credentials" in the SKILL.md but "Extract PDFs" in the entry"#
        );
        let extra = markdown.replace("name: pdf", "license: MIT\nname: pdf");
        assert_eq!(
            compare(&extra, entry),
            Err(FrontMatterError::MissingInEntry("license".to_owned()))
        );
        for (bad, expected) in [
            ("no front matter", FrontMatterError::NotOpened),
            ("---\nname: a\n", FrontMatterError::NotClosed),
            ("---\n- a\n---\n", FrontMatterError::NotAMapping),
            ("---\na: &x 1\nb: *x\n---\n", FrontMatterError::AliasOrInvalid),
        ] {
            assert_eq!(compare(bad, entry), Err(expected), "{bad:?}");
        }
        assert!(matches!(
            compare("---\n[: x\n---\n", entry),
            Err(FrontMatterError::NotYaml(_))
        ));
    }

    #[test]
    fn the_reading_is_bounded() {
        let deep = format!("---\na: {}1{}\n---\n", "[".repeat(65), "]".repeat(65));
        assert_eq!(
            parse_frontmatter(&deep),
            Err(FrontMatterError::TooDeep {
                limit: MAX_FRONTMATTER_DEPTH
            })
        );
        // Within the size limit, as deep as it goes: refused by depth, without a panic.
        let brackets = MAX_FRONTMATTER_BYTES - 8;
        assert!(matches!(
            parse_frontmatter(&format!("---\na: {}\n---\n", "[".repeat(brackets))),
            Err(FrontMatterError::TooDeep { .. } | FrontMatterError::NotYaml(_))
        ));
        let nested_block: String = (0..70)
            .map(|level| " ".repeat(level) + &format!("k{level}:\n"))
            .collect();
        assert_eq!(
            parse_frontmatter(&format!("---\n{nested_block}{}v: 1\n---\n", " ".repeat(70))),
            Err(FrontMatterError::TooDeep {
                limit: MAX_FRONTMATTER_DEPTH
            })
        );
        let long = format!("---\nd: \"{}\"\n---\n", "x".repeat(MAX_FRONTMATTER_BYTES));
        assert_eq!(
            parse_frontmatter(&long),
            Err(FrontMatterError::TooLong {
                limit: MAX_FRONTMATTER_BYTES
            })
        );
        assert!(parse_frontmatter(&format!("---\na: {}1{}\n---\n", "[".repeat(63), "]".repeat(63))).is_ok());
        // Aliases of aliases would grow exponentially: anchors are refused before anything is built.
        let laughs: Vec<String> = (1..30)
            .map(|n| format!("l{n}: &l{n} [*l{m}, *l{m}, *l{m}]", m = n - 1))
            .collect();
        let laughs = laughs.join("\n") + "\n";
        assert_eq!(
            parse_frontmatter(&format!("---\nl0: &l0 x\n{laughs}---\n")),
            Err(FrontMatterError::AliasOrInvalid)
        );
    }
}
