//! An elicitation form as the terminal asks it: each field's prompt (title, description, choices,
//! default) and the check of each answer against the field's schema before it is taken.

use std::fmt::Write as _;

use plexus::protocol::{ElicitValue, NumberType, PrimitiveSchemaDefinition, StringFormat, TitledEnumOption};

use crate::terminal;

fn titled(options: &[TitledEnumOption]) -> Vec<(&str, &str)> {
    options
        .iter()
        .map(|option| (option.value.as_str(), option.title.as_str()))
        .collect()
}

fn plain(values: &[String]) -> Vec<(&str, &str)> {
    values.iter().map(|value| (value.as_str(), value.as_str())).collect()
}

fn pair<'a>(title: Option<&'a String>, description: Option<&'a String>) -> (Option<&'a str>, Option<&'a str>) {
    (title.map(String::as_str), description.map(String::as_str))
}

/// The choices of an enum field: each value and what is shown for it.
fn choices(schema: &PrimitiveSchemaDefinition) -> Option<Vec<(&str, &str)>> {
    Some(match schema {
        PrimitiveSchemaDefinition::UntitledSingleSelect(field) => plain(&field.choices),
        PrimitiveSchemaDefinition::TitledSingleSelect(field) => titled(&field.one_of),
        PrimitiveSchemaDefinition::LegacyTitledEnum(field) => field
            .choices
            .iter()
            .enumerate()
            .map(|(i, value)| {
                (
                    value.as_str(),
                    field.enum_names.get(i).map_or(value.as_str(), String::as_str),
                )
            })
            .collect(),
        PrimitiveSchemaDefinition::UntitledMultiSelect(field) => plain(&field.items.choices),
        PrimitiveSchemaDefinition::TitledMultiSelect(field) => titled(&field.items.any_of),
        _ => return None,
    })
}

/// The field's title and description.
fn labels(schema: &PrimitiveSchemaDefinition) -> (Option<&str>, Option<&str>) {
    match schema {
        PrimitiveSchemaDefinition::String(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::Number(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::Boolean(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::UntitledSingleSelect(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::TitledSingleSelect(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::LegacyTitledEnum(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::UntitledMultiSelect(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::TitledMultiSelect(f) => pair(f.title.as_ref(), f.description.as_ref()),
        PrimitiveSchemaDefinition::Unknown(_) => (None, None),
    }
}

/// The field's default, as the user would type it.
fn default_text(schema: &PrimitiveSchemaDefinition) -> Option<String> {
    match schema {
        PrimitiveSchemaDefinition::String(f) => f.default.clone(),
        PrimitiveSchemaDefinition::Number(f) => f.default.map(|n| n.to_string()),
        PrimitiveSchemaDefinition::Boolean(f) => f.default.map(|b| if b { "yes" } else { "no" }.to_owned()),
        PrimitiveSchemaDefinition::UntitledSingleSelect(f) => f.default.clone(),
        PrimitiveSchemaDefinition::TitledSingleSelect(f) => f.default.clone(),
        PrimitiveSchemaDefinition::LegacyTitledEnum(f) => f.default.clone(),
        PrimitiveSchemaDefinition::UntitledMultiSelect(f) => f.default.as_ref().map(|d| d.join(",")),
        PrimitiveSchemaDefinition::TitledMultiSelect(f) => f.default.as_ref().map(|d| d.join(",")),
        PrimitiveSchemaDefinition::Unknown(_) => None,
    }
}

/// What is written before the field's answer: its title (or name), description, choices,
/// default and whether it is required, every part from the server escaped.
pub(crate) fn prompt(name: &str, schema: &PrimitiveSchemaDefinition, required: bool) -> String {
    let (title, description) = labels(schema);
    let mut text = terminal::line(title.unwrap_or(name)).into_owned();
    if let Some(description) = description {
        let _ = write!(text, " ({})", terminal::line(description));
    }
    if let Some(choices) = choices(schema) {
        let listed: Vec<String> = choices
            .iter()
            .enumerate()
            .map(|(i, (_, shown))| format!("{}) {}", i + 1, terminal::line(shown)))
            .collect();
        let several = matches!(
            schema,
            PrimitiveSchemaDefinition::UntitledMultiSelect(_) | PrimitiveSchemaDefinition::TitledMultiSelect(_)
        );
        let how = if several { "; several, comma-separated" } else { "" };
        let _ = write!(text, " [{}{how}]", listed.join("  "));
    }
    if let PrimitiveSchemaDefinition::Boolean(_) = schema {
        text.push_str(" [yes/no]");
    }
    match (default_text(schema), required) {
        (Some(default), _) => {
            let _ = write!(text, " (default: {})", terminal::line(&default));
        }
        (None, true) => text.push_str(" (required)"),
        (None, false) => text.push_str(" (optional: Enter skips)"),
    }
    text.push_str(": ");
    text
}

/// Takes the answer to a field: `Ok(Some(value))` to submit, `Ok(None)` to leave the field out,
/// `Err(reason)` to ask again. An empty answer takes the default, if any.
pub(crate) fn parse(
    schema: &PrimitiveSchemaDefinition,
    required: bool,
    answer: &str,
) -> Result<Option<ElicitValue>, String> {
    let answer = answer.trim();
    let answer = match (answer.is_empty(), default_text(schema)) {
        (false, _) => answer.to_owned(),
        (true, Some(default)) => default,
        (true, None) if required => return Err("a value is required".to_owned()),
        (true, None) => return Ok(None),
    };
    parse_value(schema, &answer).map(Some)
}

fn parse_value(schema: &PrimitiveSchemaDefinition, answer: &str) -> Result<ElicitValue, String> {
    match schema {
        PrimitiveSchemaDefinition::String(field) => {
            let length = answer.chars().count() as u64;
            if let Some(min) = field.min_length.filter(|min| length < *min) {
                return Err(format!("at least {min} characters, please"));
            }
            if let Some(max) = field.max_length.filter(|max| length > *max) {
                return Err(format!("at most {max} characters, please"));
            }
            if let Some(format) = &field.format {
                check_format(format, answer)?;
            }
            Ok(ElicitValue::String(answer.to_owned()))
        }
        PrimitiveSchemaDefinition::Number(field) => {
            let value: f64 = answer.parse().map_err(|_| format!("{answer:?} is not a number"))?;
            if !value.is_finite() {
                return Err(format!("{answer:?} is not a finite number"));
            }
            if let Some(min) = field.minimum.filter(|min| value < *min) {
                return Err(format!("at least {min}, please"));
            }
            if let Some(max) = field.maximum.filter(|max| value > *max) {
                return Err(format!("at most {max}, please"));
            }
            if field.number_type == NumberType::Integer {
                return answer
                    .parse::<i64>()
                    .map(ElicitValue::Integer)
                    .map_err(|_| format!("{answer:?} is not a whole number"));
            }
            Ok(ElicitValue::Number(value))
        }
        PrimitiveSchemaDefinition::Boolean(_) => match answer.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(ElicitValue::Boolean(true)),
            "n" | "no" | "false" | "0" => Ok(ElicitValue::Boolean(false)),
            _ => Err("yes or no, please".to_owned()),
        },
        PrimitiveSchemaDefinition::UntitledMultiSelect(_) | PrimitiveSchemaDefinition::TitledMultiSelect(_) => {
            let (min, max) = match schema {
                PrimitiveSchemaDefinition::UntitledMultiSelect(f) => (f.min_items, f.max_items),
                PrimitiveSchemaDefinition::TitledMultiSelect(f) => (f.min_items, f.max_items),
                _ => (None, None),
            };
            let picked = answer
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .map(|part| choose(schema, part))
                .collect::<Result<Vec<String>, String>>()?;
            let count = picked.len() as u64;
            if let Some(min) = min.filter(|min| count < *min) {
                return Err(format!("pick at least {min}"));
            }
            if let Some(max) = max.filter(|max| count > *max) {
                return Err(format!("pick at most {max}"));
            }
            Ok(ElicitValue::StringArray(picked))
        }
        PrimitiveSchemaDefinition::Unknown(_) => Ok(ElicitValue::String(answer.to_owned())),
        _ => choose(schema, answer).map(ElicitValue::String),
    }
}

/// One choice of an enum field, by its value or its number in the list.
fn choose(schema: &PrimitiveSchemaDefinition, answer: &str) -> Result<String, String> {
    let choices = choices(schema).unwrap_or_default();
    if let Some((value, _)) = choices.iter().find(|(value, _)| *value == answer) {
        return Ok((*value).to_owned());
    }
    match answer.parse::<usize>() {
        Ok(n) if (1..=choices.len()).contains(&n) => Ok(choices[n - 1].0.to_owned()),
        _ => Err(format!("{answer:?} is not one of the choices (1 to {})", choices.len())),
    }
}

/// Checks a string field's `format`.
fn check_format(format: &StringFormat, answer: &str) -> Result<(), String> {
    if format.accepts(answer) {
        Ok(())
    } else {
        Err(format!("{}, please", format.describe()))
    }
}

#[cfg(test)]
mod tests {
    use plexus::protocol::{BooleanSchema, NumberSchema, StringSchema, TitledEnumOption, TitledSingleSelectEnumSchema};

    use super::*;

    fn string(format: Option<StringFormat>) -> PrimitiveSchemaDefinition {
        let bounded = format.is_none();
        PrimitiveSchemaDefinition::String(StringSchema {
            title: Some("Name".into()),
            description: Some("Your name\u{1b}[2J".into()),
            min_length: bounded.then_some(2),
            max_length: bounded.then_some(5),
            format,
            ..StringSchema::default()
        })
    }

    #[test]
    fn answers_are_checked_against_the_schema() {
        let name = string(None);
        assert_eq!(prompt("name", &name, true), "Name (Your name\\x1b[2J) (required): ");
        assert_eq!(parse(&name, true, ""), Err("a value is required".to_owned()));
        assert_eq!(parse(&name, true, "a"), Err("at least 2 characters, please".to_owned()));
        assert_eq!(parse(&name, true, " Ada "), Ok(Some(ElicitValue::String("Ada".into()))));
        assert_eq!(parse(&name, false, ""), Ok(None));
        let email = string(Some(StringFormat::Email));
        assert!(parse(&email, true, "ab").is_err());
        assert_eq!(
            parse(&email, true, "a@b.io"),
            Ok(Some(ElicitValue::String("a@b.io".into())))
        );
        let mut count = NumberSchema {
            number_type: NumberType::Integer,
            minimum: Some(1.0),
            maximum: Some(10.0),
            default: Some(3.0),
            ..NumberSchema::default()
        };
        let field = PrimitiveSchemaDefinition::Number(count.clone());
        assert_eq!(parse(&field, true, ""), Ok(Some(ElicitValue::Integer(3))));
        assert_eq!(parse(&field, true, "11"), Err("at most 10, please".to_owned()));
        assert_eq!(
            parse(&field, true, "2.5"),
            Err("\"2.5\" is not a whole number".to_owned())
        );
        count.number_type = NumberType::Number;
        assert_eq!(
            parse(&PrimitiveSchemaDefinition::Number(count), true, "2.5"),
            Ok(Some(ElicitValue::Number(2.5)))
        );
        let confirm = PrimitiveSchemaDefinition::Boolean(BooleanSchema {
            default: Some(false),
            ..BooleanSchema::default()
        });
        assert_eq!(parse(&confirm, true, ""), Ok(Some(ElicitValue::Boolean(false))));
        assert_eq!(parse(&confirm, true, "Y"), Ok(Some(ElicitValue::Boolean(true))));
        assert!(parse(&confirm, true, "maybe").is_err());
    }

    #[test]
    fn a_choice_is_taken_by_value_or_number() {
        let language = PrimitiveSchemaDefinition::TitledSingleSelect(TitledSingleSelectEnumSchema {
            one_of: vec![
                TitledEnumOption {
                    value: "rs".into(),
                    title: "Rust".into(),
                    ..TitledEnumOption::default()
                },
                TitledEnumOption {
                    value: "py".into(),
                    title: "Python".into(),
                    ..TitledEnumOption::default()
                },
            ],
            ..TitledSingleSelectEnumSchema::default()
        });
        assert_eq!(
            prompt("lang", &language, true),
            "lang [1) Rust  2) Python] (required): "
        );
        assert_eq!(parse(&language, true, "2"), Ok(Some(ElicitValue::String("py".into()))));
        assert_eq!(parse(&language, true, "rs"), Ok(Some(ElicitValue::String("rs".into()))));
        assert_eq!(
            parse(&language, true, "3"),
            Err("\"3\" is not one of the choices (1 to 2)".to_owned())
        );
    }

    #[test]
    fn dates_and_times_follow_rfc_3339() {
        assert!(StringFormat::Date.accepts("2026-12-02"));
        assert!(!StringFormat::Date.accepts("2026-13-02"));
        assert!(!StringFormat::Date.accepts("26-12-02"));
        assert!(check_format(&StringFormat::DateTime, "2026-12-02T10:30:00Z").is_ok());
        assert!(check_format(&StringFormat::DateTime, "2026-12-02T10:30:00.25+01:00").is_ok());
        assert!(check_format(&StringFormat::DateTime, "2026-12-02T25:30:00Z").is_err());
        assert!(check_format(&StringFormat::DateTime, "2026-12-02 10:30").is_err());
    }
}
