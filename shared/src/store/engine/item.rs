//! Item mapping helpers: serde_dynamo writes items, `decode` reads them.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

use crate::store::engine::decode;
pub use crate::store::engine::decode::Item;
use crate::store::engine::keys;

/// `value` as an item. Absent values (`None`) are left out instead of
/// stored as NULL: items stay small, reads decode less, and
/// `attribute_not_exists(x)` means "x is absent".
pub fn to_item<T: Serialize>(value: &T) -> Result<Item, ApiError> {
    let mut item: Item = serde_dynamo::to_item(value)
        .map_err(|e| ApiError::internal(format!("item encoding: {e}")))?;
    item.retain(|_, value| !value.is_null());
    Ok(item)
}

/// `item` as a `T` (`decode`: serde_dynamo's meaning, without its copy).
pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, ApiError> {
    decode::decode(item).map_err(|e| ApiError::internal(format!("item decoding: {e}")))
}

/// The attributes `from_item::<T>` reads: the field names of `T`'s derived
/// `Deserialize`, renames applied, as serde declares them. `None` when `T`
/// declares none (a map, a struct with a flattened field): a read of it
/// then needs every attribute.
pub fn attributes<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut fields = None;
    let _ = T::deserialize(FieldNames(&mut fields));
    fields
}

/// A deserializer that decodes nothing: it notes the fields a struct asks
/// for and stops.
struct FieldNames<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(serde::de::Error::custom("field names only"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([(keys::PK.to_owned(), s(pk)), (keys::SK.to_owned(), s(sk))])
}

/// A string attribute of an item, if present.
pub fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

/// A numeric attribute of an item, if present and integral.
pub fn get_u64(item: &Item, name: &str) -> Option<u64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
}

/// A numeric attribute of an item, if present and an integer (negative
/// included).
pub fn get_i64(item: &Item, name: &str) -> Option<i64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Record {
        name: String,
        city: Option<String>,
        note: Option<String>,
    }

    #[test]
    fn absent_values_are_left_out_and_read_back_as_absent() {
        let record = Record {
            name: "Yard".into(),
            city: None,
            note: Some("gate 2".into()),
        };
        let item = to_item(&record).unwrap();
        let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["name", "note"]);
        assert_eq!(from_item::<Record>(item).unwrap(), record);
        // Items written before, with NULL attributes, still read.
        let mut old = to_item(&record).unwrap();
        old.insert("city".into(), AttributeValue::Null(true));
        assert_eq!(from_item::<Record>(old).unwrap(), record);
    }

    #[test]
    fn a_records_attributes_are_its_fields_as_serde_names_them() {
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct Renamed {
            id: String,
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            version: u64,
        }
        assert_eq!(attributes::<Record>(), Some(&["name", "city", "note"][..]));
        assert_eq!(
            attributes::<Renamed>(),
            Some(&["id", "type", "version"][..])
        );
    }

    #[test]
    fn a_map_or_a_flattened_struct_needs_every_attribute() {
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct Open {
            id: String,
            #[serde(flatten)]
            rest: HashMap<String, String>,
        }
        assert_eq!(attributes::<Open>(), None);
        assert_eq!(attributes::<HashMap<String, String>>(), None);
    }
}
