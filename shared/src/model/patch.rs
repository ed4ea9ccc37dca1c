//! A PATCH field: absent, explicitly `null`, or a value.

use serde::{Deserialize, Deserializer};

use super::validate;
use crate::error::ApiError;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<T> Patch<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }

    pub fn as_ref(&self) -> Patch<&T> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Value(v) => Patch::Value(v),
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Value(v) => Patch::Value(f(v)),
        }
    }
}

/// A required text field of a PATCH: `null` is refused, a value trimmed
/// and checked (1 to `max` characters).
pub fn required_text(
    field: &str,
    value: Patch<String>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    match value {
        Patch::Absent => Ok(None),
        Patch::Null => Err(ApiError::validation(field, "must not be null")),
        Patch::Value(v) => validate::required_text(field, &v, max).map(Some),
    }
}

/// An optional text field of a PATCH: `null` (or blank) clears it, a value
/// is trimmed and at most `max` characters.
pub fn optional_text(
    field: &str,
    value: Patch<String>,
    max: usize,
) -> Result<Option<Option<String>>, ApiError> {
    match value {
        Patch::Absent => Ok(None),
        Patch::Null => Ok(Some(None)),
        Patch::Value(v) => validate::optional_text(field, Some(&v), max).map(Some),
    }
}

/// Sets `target` to the new value of a validated change, if there is one.
pub fn assign<T: Clone>(target: &mut T, change: &Option<T>) {
    if let Some(value) = change {
        *target = value.clone();
    }
}

/// Use with `#[serde(default)]` so a missing field stays `Absent`.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        a: Patch<String>,
        #[serde(default)]
        b: Patch<String>,
        #[serde(default)]
        c: Patch<String>,
    }

    #[test]
    fn absent_null_and_value_are_distinct() {
        let body: Body = serde_json::from_str(r#"{"b": null, "c": "x"}"#).unwrap();
        assert_eq!(body.a, Patch::Absent);
        assert_eq!(body.b, Patch::Null);
        assert_eq!(body.c, Patch::Value("x".into()));
    }
}
