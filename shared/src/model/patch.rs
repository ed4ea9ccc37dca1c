//! A PATCH field: absent, explicitly `null`, or a value.

use serde::{Deserialize, Deserializer};

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
