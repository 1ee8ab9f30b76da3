//! Whether an answer to a form fits the form the server asked for: every required field there,
//! no field the form does not have, each value of its field's type, within its lengths, bounds
//! and format, and one of its choices. A client checks before it sends (a user who typed "Ada"
//! into an email field is asked again, or the answer is not sent).

use std::collections::BTreeMap;

use super::ElicitValue;
use super::schema::{PrimitiveSchemaDefinition, RequestedSchema, StringFormat, StringSchema};
use crate::NumberType;

/// Why an answer does not fit its form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// A required field has no value.
    #[error("the field {field:?} is required")]
    Missing {
        /// The field.
        field: String,
    },
    /// A value names a field the form does not have.
    #[error("the form has no field {field:?}")]
    Unknown {
        /// The field.
        field: String,
    },
    /// A value does not fit its field.
    #[error("the field {field:?} must be {expected}")]
    Invalid {
        /// The field.
        field: String,
        /// What it must be, in words (`an email address`, `at most 10 characters`).
        expected: String,
    },
}

impl StringFormat {
    /// Whether `text` is of this format (an unknown format takes any text).
    pub fn accepts(&self, text: &str) -> bool {
        match self {
            StringFormat::Email => text
                .split_once('@')
                .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !text.contains(' ')),
            StringFormat::Uri => url::Url::parse(text).is_ok(),
            StringFormat::Date => is_date(text),
            StringFormat::DateTime => text
                .split_once(['T', 't'])
                .is_some_and(|(date, time)| is_date(date) && is_time(time)),
            StringFormat::Other(_) => true,
        }
    }

    /// What a value of this format is, in words (`an email address`).
    pub fn describe(&self) -> &'static str {
        match self {
            StringFormat::Email => "an email address",
            StringFormat::Uri => "an absolute URI",
            StringFormat::Date => "a date (YYYY-MM-DD)",
            StringFormat::DateTime => "a date and time (YYYY-MM-DDTHH:MM:SSZ)",
            StringFormat::Other(_) => "a value",
        }
    }
}

/// `YYYY-MM-DD` with a month 1–12 and a day 1–31.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let number = |part: &str, len: usize| {
        (part.len() == len && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<u32>().ok())
            .flatten()
    };
    matches!(
        parts[..],
        [year, month, day] if number(year, 4).is_some()
            && number(month, 2).is_some_and(|m| (1..=12).contains(&m))
            && number(day, 2).is_some_and(|d| (1..=31).contains(&d))
    )
}

/// `HH:MM:SS`, optional fraction, then `Z` or an offset `±HH:MM` (RFC 3339).
fn is_time(text: &str) -> bool {
    let (clock, zone) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => return false,
    };
    let clock = clock.split_once('.').map_or(clock, |(whole, fraction)| {
        if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            ""
        } else {
            whole
        }
    });
    let fields = |text: &str, max: &[u32]| {
        let parts: Vec<&str> = text.split(':').collect();
        parts.len() == max.len()
            && parts.iter().zip(max).all(|(part, max)| {
                part.len() == 2
                    && part.bytes().all(|b| b.is_ascii_digit())
                    && part.parse::<u32>().is_ok_and(|n| n <= *max)
            })
    };
    let zone_ok = zone.eq_ignore_ascii_case("z") || (zone.len() == 6 && fields(&zone[1..], &[23, 59]));
    fields(clock, &[23, 59, 60]) && zone_ok
}

impl RequestedSchema {
    /// Checks an accepted form's `content` against this form (see the module docs).
    pub fn check_answer(&self, content: &BTreeMap<String, ElicitValue>) -> Result<(), AnswerError> {
        for field in self.required.iter().flatten() {
            if !content.contains_key(field) {
                return Err(AnswerError::Missing { field: field.clone() });
            }
        }
        for (field, value) in content {
            let Some(schema) = self.properties.get(field) else {
                return Err(AnswerError::Unknown { field: field.clone() });
            };
            if let Err(expected) = fits(schema, value) {
                return Err(AnswerError::Invalid {
                    field: field.clone(),
                    expected,
                });
            }
        }
        Ok(())
    }
}

/// Whether `value` fits the field `schema`; else what it must be.
fn fits(schema: &PrimitiveSchemaDefinition, value: &ElicitValue) -> Result<(), String> {
    let one_of = |choices: Vec<&str>, value: &ElicitValue| match value {
        ElicitValue::String(text) if choices.contains(&text.as_str()) => Ok(()),
        _ => Err(format!("one of {}", quoted(&choices))),
    };
    let some_of = |choices: Vec<&str>, least: Option<u64>, most: Option<u64>, value: &ElicitValue| {
        let ElicitValue::StringArray(picked) = value else {
            return Err(format!("a list of some of {}", quoted(&choices)));
        };
        if let Some(other) = picked.iter().find(|pick| !choices.contains(&pick.as_str())) {
            return Err(format!("a list of some of {}, not {other:?}", quoted(&choices)));
        }
        let count = picked.len() as u64;
        if least.is_some_and(|least| count < least) || most.is_some_and(|most| count > most) {
            return Err(format!(
                "a list of {} to {} choices",
                least.unwrap_or(0),
                most.map_or_else(|| "any number of".to_owned(), |most| most.to_string())
            ));
        }
        Ok(())
    };
    match schema {
        PrimitiveSchemaDefinition::String(field) => match value {
            ElicitValue::String(text) => fits_string(field, text),
            _ => Err("a string".to_owned()),
        },
        PrimitiveSchemaDefinition::Number(field) => {
            let number = match (value, field.number_type) {
                // Bounds are compared as numbers: an integer past 2^53 is rounded, as JSON has it.
                #[allow(clippy::cast_precision_loss)]
                (ElicitValue::Integer(n), _) => *n as f64,
                (ElicitValue::Number(n), NumberType::Number) => *n,
                (ElicitValue::Number(n), NumberType::Integer) if n.fract() == 0.0 => *n,
                (_, NumberType::Integer) => return Err("an integer".to_owned()),
                (_, NumberType::Number) => return Err("a number".to_owned()),
            };
            let low = field.minimum.is_some_and(|min| number < min);
            let high = field.maximum.is_some_and(|max| number > max);
            if low || high {
                let bound = |bound: Option<f64>| bound.map_or_else(|| "…".to_owned(), |b| b.to_string());
                return Err(format!("between {} and {}", bound(field.minimum), bound(field.maximum)));
            }
            Ok(())
        }
        PrimitiveSchemaDefinition::Boolean(_) => match value {
            ElicitValue::Boolean(_) => Ok(()),
            _ => Err("true or false".to_owned()),
        },
        PrimitiveSchemaDefinition::UntitledSingleSelect(field) => {
            one_of(field.choices.iter().map(String::as_str).collect(), value)
        }
        PrimitiveSchemaDefinition::TitledSingleSelect(field) => {
            one_of(field.one_of.iter().map(|option| option.value.as_str()).collect(), value)
        }
        PrimitiveSchemaDefinition::LegacyTitledEnum(field) => {
            one_of(field.choices.iter().map(String::as_str).collect(), value)
        }
        PrimitiveSchemaDefinition::UntitledMultiSelect(field) => some_of(
            field.items.choices.iter().map(String::as_str).collect(),
            field.min_items,
            field.max_items,
            value,
        ),
        PrimitiveSchemaDefinition::TitledMultiSelect(field) => some_of(
            field.items.any_of.iter().map(|option| option.value.as_str()).collect(),
            field.min_items,
            field.max_items,
            value,
        ),
        // A field this crate does not know: any value.
        PrimitiveSchemaDefinition::Unknown(_) => Ok(()),
    }
}

/// Whether `text` fits the string field `field`.
fn fits_string(field: &StringSchema, text: &str) -> Result<(), String> {
    let length = text.chars().count() as u64;
    if field.min_length.is_some_and(|min| length < min) || field.max_length.is_some_and(|max| length > max) {
        return Err(format!(
            "{} to {} characters long",
            field.min_length.unwrap_or(0),
            field
                .max_length
                .map_or_else(|| "any number of".to_owned(), |max| max.to_string())
        ));
    }
    match &field.format {
        Some(format) if !format.accepts(text) => Err(format.describe().to_owned()),
        _ => Ok(()),
    }
}

/// `["a", "b"]`.
fn quoted(choices: &[&str]) -> String {
    format!("{choices:?}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form() -> RequestedSchema {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email"},
                "name": {"type": "string", "minLength": 2, "maxLength": 5},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ok": {"type": "boolean"},
                "size": {"type": "string", "enum": ["s", "m"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1}
            },
            "required": ["email"]
        }))
        .unwrap()
    }

    fn answer(value: serde_json::Value) -> BTreeMap<String, ElicitValue> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_answer_that_fits_passes() {
        let content = answer(json!({"email": "ada@example.org", "name": "Ada", "age": 36, "ok": true,
            "size": "m", "tags": ["b"]}));
        assert_eq!(form().check_answer(&content), Ok(()));
    }

    #[test]
    fn each_misfit_says_which_field_and_what_it_must_be() {
        let cases = [
            (json!({}), "the field \"email\" is required"),
            (json!({"email": "Ada"}), "the field \"email\" must be an email address"),
            (json!({"email": "a@b.c", "zip": "1"}), "the form has no field \"zip\""),
            (
                json!({"email": "a@b.c", "name": "A"}),
                "the field \"name\" must be 2 to 5 characters long",
            ),
            (
                json!({"email": "a@b.c", "age": 1.5}),
                "the field \"age\" must be an integer",
            ),
            (
                json!({"email": "a@b.c", "age": 151}),
                "the field \"age\" must be between 0 and 150",
            ),
            (
                json!({"email": "a@b.c", "ok": "yes"}),
                "the field \"ok\" must be true or false",
            ),
            (
                json!({"email": "a@b.c", "size": "xl"}),
                "the field \"size\" must be one of [\"s\", \"m\"]",
            ),
            (
                json!({"email": "a@b.c", "tags": ["a", "b"]}),
                "the field \"tags\" must be a list of 0 to 1 choices",
            ),
        ];
        for (content, expected) in cases {
            let error = form().check_answer(&answer(content.clone())).unwrap_err();
            assert_eq!(error.to_string(), expected, "{content}");
        }
    }

    #[test]
    fn formats_are_recognised() {
        assert!(StringFormat::Date.accepts("2026-12-04"));
        assert!(!StringFormat::Date.accepts("2026-13-04"));
        assert!(StringFormat::DateTime.accepts("2026-12-04T22:39:32Z"));
        assert!(StringFormat::DateTime.accepts("2026-12-04T22:39:32.5+01:00"));
        assert!(!StringFormat::DateTime.accepts("2026-12-04 22:39"));
        assert!(StringFormat::Uri.accepts("https://example.org/x"));
        assert!(!StringFormat::Uri.accepts("not a uri"));
    }
}
