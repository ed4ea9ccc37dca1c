//! Response envelopes: `{data}` and `{data, meta: {count}}`; a creation's
//! 201 with its `Location`.

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// `{data: T}`.
pub struct Data<T>(pub T);

impl<T: Serialize> Serialize for Data<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Data", 1)?;
        s.serialize_field("data", &self.0)?;
        s.end()
    }
}

/// 201 `{data: T}` with `Location: <path>`: a record created at `path`.
pub struct Created<T> {
    pub path: String,
    pub data: T,
}

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        (
            StatusCode::CREATED,
            [(header::LOCATION, self.path)],
            super::Json(Data(self.data)),
        )
            .into_response()
    }
}

/// `{data: [T], meta: {count}}`.
pub struct List<T>(pub Vec<T>);

#[derive(Serialize)]
struct Meta {
    count: usize,
}

impl<T: Serialize> Serialize for List<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("List", 2)?;
        s.serialize_field("data", &self.0)?;
        s.serialize_field(
            "meta",
            &Meta {
                count: self.0.len(),
            },
        )?;
        s.end()
    }
}

/// `{data: [T], meta: {count, next_cursor}}` for keyset-paginated lists.
pub struct Page<T> {
    pub rows: Vec<T>,
    pub next_cursor: Option<String>,
}

#[derive(Serialize)]
struct PageMeta<'a> {
    count: usize,
    next_cursor: Option<&'a str>,
}

impl<T: Serialize> Serialize for Page<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Page", 2)?;
        s.serialize_field("data", &self.rows)?;
        s.serialize_field(
            "meta",
            &PageMeta {
                count: self.rows.len(),
                next_cursor: self.next_cursor.as_deref(),
            },
        )?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelopes() {
        assert_eq!(serde_json::to_value(Data(1)).unwrap(), json!({"data": 1}));
        assert_eq!(
            serde_json::to_value(List(vec![1, 2])).unwrap(),
            json!({"data": [1, 2], "meta": {"count": 2}})
        );
        let page = Page {
            rows: vec!["a"],
            next_cursor: None,
        };
        assert_eq!(
            serde_json::to_value(page).unwrap(),
            json!({"data": ["a"], "meta": {"count": 1, "next_cursor": null}})
        );
    }
}
