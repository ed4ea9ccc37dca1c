//! Item mapping helpers over serde_dynamo.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub type Item = HashMap<String, AttributeValue>;

pub fn to_item<T: Serialize>(value: &T) -> Result<Item, ApiError> {
    serde_dynamo::to_item(value).map_err(|e| ApiError::internal(format!("item encoding: {e}")))
}

pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, ApiError> {
    serde_dynamo::from_item(item).map_err(|e| ApiError::internal(format!("item decoding: {e}")))
}

pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([
        (super::keys::PK.to_owned(), s(pk)),
        (super::keys::SK.to_owned(), s(sk)),
    ])
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
