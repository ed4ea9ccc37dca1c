//! Records decoded straight from the SDK's items: a serde `Deserializer`
//! over `aws_sdk_dynamodb::types::AttributeValue`, with the meaning
//! serde_dynamo gives each type (it still writes items, `item::to_item`).
//!
//! Why not serde_dynamo's reader: it first rebuilds every item, nested maps
//! included, as its own `AttributeValue` map (one hash and insert per
//! attribute), then decodes that. On a page of 100 loads the rebuild was
//! about a fifth of the code's own time (perf, `make bench`); this decoder
//! walks the SDK's map once and moves its strings into the record.

use std::collections::hash_map;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::value::{Error, SeqDeserializer, StringDeserializer};
use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, Error as _, IntoDeserializer,
    MapAccess, VariantAccess, Visitor,
};

/// A stored item: attribute names to values.
pub type Item = std::collections::HashMap<String, AttributeValue>;

/// `item` as a `T`.
pub fn decode<T: DeserializeOwned>(item: Item) -> Result<T, Error> {
    T::deserialize(Value(AttributeValue::M(item)))
}

/// One attribute value, consumed as it is decoded.
struct Value(AttributeValue);

/// A number attribute as the type asked for.
macro_rules! number {
    ($($method:ident => $visit:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                AttributeValue::N(n) => visitor.$visit(n.parse().map_err(|_| bad_number(&n))?),
                other => Err(unexpected(&other, "a number")),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for Value {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            AttributeValue::S(s) => visitor.visit_string(s),
            AttributeValue::N(n) => any_number(n, visitor),
            AttributeValue::Bool(b) => visitor.visit_bool(b),
            AttributeValue::Null(_) => visitor.visit_unit(),
            AttributeValue::M(m) => visitor.visit_map(Map::new(m)),
            AttributeValue::L(l) => {
                visitor.visit_seq(SeqDeserializer::new(l.into_iter().map(Value)))
            }
            AttributeValue::Ss(ss) => visitor.visit_seq(SeqDeserializer::new(ss.into_iter())),
            AttributeValue::Ns(ns) => visitor.visit_seq(SeqDeserializer::new(
                ns.into_iter().map(|n| Value(AttributeValue::N(n))),
            )),
            AttributeValue::B(b) => visitor.visit_byte_buf(b.into_inner()),
            AttributeValue::Bs(bs) => visitor.visit_seq(SeqDeserializer::new(
                bs.into_iter().map(|b| Value(AttributeValue::B(b))),
            )),
            other => Err(unexpected(&other, "a known attribute type")),
        }
    }

    number! {
        deserialize_i8 => visit_i8, deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32, deserialize_i64 => visit_i64,
        deserialize_i128 => visit_i128, deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16, deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64, deserialize_u128 => visit_u128,
        deserialize_f32 => visit_f32, deserialize_f64 => visit_f64,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            AttributeValue::Null(_) => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    /// A unit variant is a string; any other variant a one-entry map.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            AttributeValue::S(s) => visitor.visit_enum(StringDeserializer::<Error>::new(s)),
            AttributeValue::M(m) if m.len() == 1 => {
                let (variant, value) = m.into_iter().next().expect("one entry");
                visitor.visit_enum(Variant { variant, value })
            }
            other => Err(unexpected(&other, "an enum")),
        }
    }

    /// What a record does not read is not decoded at all.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

/// `N` read as the first of i64, u64 and f64 that holds it.
fn any_number<'de, V: Visitor<'de>>(n: String, visitor: V) -> Result<V::Value, Error> {
    if let Ok(i) = n.parse::<i64>() {
        visitor.visit_i64(i)
    } else if let Ok(u) = n.parse::<u64>() {
        visitor.visit_u64(u)
    } else {
        visitor.visit_f64(n.parse().map_err(|_| bad_number(&n))?)
    }
}

fn bad_number(n: &str) -> Error {
    Error::custom(format_args!(
        "number attribute {n:?} does not fit the field"
    ))
}

fn unexpected(value: &AttributeValue, wanted: &str) -> Error {
    let kind = match value {
        AttributeValue::S(_) => "a string",
        AttributeValue::N(_) => "a number",
        AttributeValue::Bool(_) => "a boolean",
        AttributeValue::Null(_) => "null",
        AttributeValue::M(_) => "a map",
        AttributeValue::L(_) => "a list",
        AttributeValue::B(_) => "binary",
        AttributeValue::Ss(_) | AttributeValue::Ns(_) | AttributeValue::Bs(_) => "a set",
        _ => "an unknown attribute type",
    };
    Error::custom(format_args!("expected {wanted}, found {kind}"))
}

/// A map attribute's entries, keys first.
struct Map {
    entries: hash_map::IntoIter<String, AttributeValue>,
    value: Option<AttributeValue>,
}

impl Map {
    fn new(map: Item) -> Self {
        Self {
            entries: map.into_iter(),
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Map {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(Key(key)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error::custom("a map value asked for before its key"))?;
        seed.deserialize(Value(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A map key: a field name, or the text of a string, number, boolean or
/// enum key.
struct Key(String);

macro_rules! parsed_key {
    ($($method:ident => $visit:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.$visit(self.0.parse().map_err(|_| Error::custom(format_args!("map key {:?} does not fit the key type", self.0)))?)
        }
    )*};
}

impl<'de> Deserializer<'de> for Key {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(self.0)
    }

    parsed_key! {
        deserialize_i8 => visit_i8, deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32, deserialize_i64 => visit_i64,
        deserialize_i128 => visit_i128, deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16, deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64, deserialize_u128 => visit_u128,
        deserialize_bool => visit_bool,
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        f32 f64 char str string bytes byte_buf option unit unit_struct seq
        tuple tuple_struct map struct identifier ignored_any
    }
}

/// A variant with data: `{variant: value}`.
struct Variant {
    variant: String,
    value: AttributeValue,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = Value;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Value), Error> {
        let name = seed.deserialize(Key(self.variant))?;
        Ok((name, Value(self.value)))
    }
}

impl<'de> VariantAccess<'de> for Value {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            AttributeValue::Null(_) => Ok(()),
            other => Err(unexpected(&other, "null")),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }
}

impl<'de> IntoDeserializer<'de, Error> for Value {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::model::Timestamp;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Counted(u32),
        Placed { lat: f64, lng: f64 },
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        tag: String,
        #[serde(default)]
        bytes: Vec<u8>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Record {
        id: uuid::Uuid,
        name: String,
        count: u64,
        delta: i32,
        ratio: f64,
        small: u8,
        on: bool,
        absent: Option<String>,
        present: Option<i64>,
        kinds: Vec<Kind>,
        inner: Inner,
        by_number: BTreeMap<u32, String>,
        labels: BTreeMap<String, String>,
        tuple: (String, u16),
        at: Timestamp,
        #[serde(rename = "renamed_field")]
        renamed: char,
    }

    fn record() -> Record {
        Record {
            id: uuid::Uuid::from_u128(7),
            name: "Bench site".into(),
            count: u64::MAX,
            delta: -12,
            ratio: 2.5,
            small: 255,
            on: true,
            absent: None,
            present: Some(-1),
            kinds: vec![
                Kind::Plain,
                Kind::Counted(3),
                Kind::Placed {
                    lat: 60.17,
                    lng: 24.94,
                },
            ],
            inner: Inner {
                tag: "t".into(),
                bytes: vec![0, 1, 255],
            },
            by_number: BTreeMap::from([(1, "one".into()), (20, "twenty".into())]),
            labels: BTreeMap::from([("notes".into(), "hi".into())]),
            tuple: ("x".into(), 9),
            at: serde_json::from_value("2026-11-23T22:40:00.123Z".into()).unwrap(),
            renamed: 'é',
        }
    }

    #[test]
    fn reads_back_what_serde_dynamo_writes() {
        let item: Item = serde_dynamo::to_item(record()).unwrap();
        assert_eq!(decode::<Record>(item).unwrap(), record());
    }

    #[test]
    fn reads_what_serde_dynamo_reads() {
        let item: Item = serde_dynamo::to_item(record()).unwrap();
        let theirs: Record = serde_dynamo::from_item(item.clone()).unwrap();
        assert_eq!(decode::<Record>(item).unwrap(), theirs);
    }

    #[test]
    fn untyped_reads_see_numbers_strings_and_sets() {
        let item: Item = HashMap::from([
            ("n".into(), AttributeValue::N("-3".into())),
            (
                "big".into(),
                AttributeValue::N("18446744073709551615".into()),
            ),
            ("f".into(), AttributeValue::N("0.5".into())),
            (
                "ss".into(),
                AttributeValue::Ss(vec!["a".into(), "b".into()]),
            ),
            ("ns".into(), AttributeValue::Ns(vec!["1".into()])),
            ("null".into(), AttributeValue::Null(true)),
        ]);
        let value: serde_json::Value = decode(item).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"n": -3, "big": 18446744073709551615u64, "f": 0.5,
                               "ss": ["a", "b"], "ns": [1], "null": null})
        );
    }

    #[test]
    fn extra_attributes_are_skipped_and_missing_ones_refused() {
        let mut item: Item = serde_dynamo::to_item(record()).unwrap();
        item.insert("pk".into(), AttributeValue::S("ORG#x".into()));
        assert_eq!(decode::<Record>(item.clone()).unwrap(), record());
        item.remove("name");
        let error = decode::<Record>(item).unwrap_err().to_string();
        assert!(error.contains("missing field `name`"), "{error}");
    }

    #[test]
    fn wrong_types_are_errors_not_panics() {
        let item: Item = HashMap::from([("count".into(), AttributeValue::S("1".into()))]);
        #[derive(Debug, Deserialize)]
        struct Count {
            #[allow(dead_code)]
            count: u64,
        }
        let error = decode::<Count>(item).unwrap_err().to_string();
        assert!(
            error.contains("expected a number, found a string"),
            "{error}"
        );
        let item: Item = HashMap::from([("count".into(), AttributeValue::N("-1".into()))]);
        assert!(decode::<Count>(item).is_err());
        let item: Item = HashMap::from([("count".into(), AttributeValue::N("1.5".into()))]);
        assert!(decode::<Count>(item).is_err());
    }
}
