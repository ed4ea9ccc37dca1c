//! Integers as JSON Schema counts them: any number with no fractional part,
//! so `40` and `40.0` are the same capacity.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Integer(pub i64);

impl<'de> Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Whole;
        impl Visitor<'_> for Whole {
            type Value = Integer;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Integer, E> {
                Ok(Integer(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Integer, E> {
                i64::try_from(v)
                    .map(Integer)
                    .map_err(|_| E::custom("integer out of range"))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Integer, E> {
                // i64::MIN is exactly representable; 2^63 is the first float past i64::MAX.
                const LIMIT: f64 = 9_223_372_036_854_775_808.0;
                if v.fract() == 0.0 && (-LIMIT..LIMIT).contains(&v) {
                    Ok(Integer(v as i64))
                } else {
                    Err(E::invalid_type(de::Unexpected::Float(v), &self))
                }
            }
        }
        deserializer.deserialize_any(Whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floats_are_integers() {
        let read = |json: &str| serde_json::from_str::<Integer>(json);
        assert_eq!(read("40").unwrap(), Integer(40));
        assert_eq!(read("40.0").unwrap(), Integer(40));
        assert_eq!(read("-3e2").unwrap(), Integer(-300));
        for bad in ["12.5", "\"40\"", "1e300", "true", "null"] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}
