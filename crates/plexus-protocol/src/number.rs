//! Serialization of `f64` fields that writes integral values as JSON integers.
//!
//! The specification types these fields as `number`, and servers send `50` as often as `0.5`. Writing
//! `50.0` back would be the same number, but not the same JSON value for a consumer that compares
//! values (and `serde_json` compares `50` and `50.0` as different), so integral values are written as
//! integers and everything else as it is.

use serde::Serializer;

/// The largest magnitude below which every integral `f64` is exactly an `i64` (2^53).
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;

/// Serializes one `f64`, integral values as integers.
#[allow(clippy::trivially_copy_pass_by_ref)] // the signature serde's `serialize_with` requires
pub(crate) fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // `-0.0` stays a float: as the integer `0` it would lose its sign.
    if value.fract() == 0.0 && value.abs() < EXACT_INTEGER_LIMIT && !(*value == 0.0 && value.is_sign_negative()) {
        #[allow(clippy::cast_possible_truncation)] // integral and within ±2^53: exact
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Serializes an optional `f64` (the field is skipped when `None`), integral values as integers.
#[allow(clippy::ref_option)] // the signature serde's `serialize_with` requires
pub(crate) fn serialize_option<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => serialize(value, serializer),
        None => serializer.serialize_none(),
    }
}
