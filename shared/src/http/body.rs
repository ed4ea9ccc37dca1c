//! JSON request bodies: 413 past the size limit, 400 `invalid_json` when not
//! JSON, 422 `validation_error` naming the field when the shape is wrong.
//! The Content-Type header is not required (documented in the OpenAPI).

use std::borrow::Cow;

use axum::extract::{FromRef, FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

pub struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let limit = AppState::from_ref(state).config.http.max_body_bytes;
        let bytes = at_most(request.into_body(), limit).await?;
        parse(&bytes).map(JsonBody)
    }
}

/// A body read whole: at most `limit` bytes, 413 `payload_too_large` when
/// it brings more.
pub(crate) async fn at_most(
    body: axum::body::Body,
    limit: usize,
) -> Result<bytes::Bytes, ApiError> {
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))
}

/// The body's length as the request declares it (`Content-Length`).
pub(crate) fn declared_length(request: &Request) -> Option<usize> {
    request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
}

/// Parses a JSON object body into `T`.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::InvalidJson(
            "the request body is empty; send a JSON object".into(),
        ));
    }
    if nests_deeper_than(bytes, MAX_DEPTH) {
        return Err(ApiError::InvalidJson(format!(
            "the request body nests arrays and objects more than {MAX_DEPTH} levels deep"
        )));
    }
    let bytes = replace_lone_surrogates(bytes);
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidJson(format!("the request body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::Validation(
            "the request body must be a JSON object".into(),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner().to_string();
        // serde says "missing field `x`" of the object at `path`: name `x`.
        if let Some(field) = problem
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            let full = if path == "." {
                field.to_owned()
            } else {
                format!("{path}.{field}")
            };
            return ApiError::validation(&full, "is required");
        }
        if path == "." {
            ApiError::Validation(problem)
        } else {
            ApiError::validation(&path, problem)
        }
    })
}

/// The deepest nesting of arrays and objects a body may have (the body
/// itself is the first level; no request schema goes past 4).
pub const MAX_DEPTH: usize = 32;

/// Whether JSON text nests arrays and objects more than `max` deep
/// (brackets inside strings do not count). A linear pass before parsing,
/// so no parser recurses past it.
fn nests_deeper_than(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// JSON may escape a lone UTF-16 surrogate (`"\ud86d"`), which is no
/// character and which serde_json refuses. Like a browser turning text into
/// a USVString, the body is read with each lone surrogate replaced by U+FFFD;
/// a proper pair (`"\ud83d\ude00"`) stays as it is.
fn replace_lone_surrogates(bytes: &[u8]) -> Cow<'_, [u8]> {
    // The surrogate escaped at `at` (`\uD800` to `\uDFFF`), if any.
    let surrogate = |at: usize| -> Option<u16> {
        let hex = bytes.get(at + 2..at + 6)?;
        let code = u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
        (bytes[at + 1] == b'u' && (0xD800..=0xDFFF).contains(&code)).then_some(code)
    };
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match surrogate(i) {
            // A high surrogate followed by a low one: a proper pair.
            Some(0xD800..=0xDBFF) if surrogate(i + 6).is_some_and(|low| low >= 0xDC00) => {
                i += 12;
            }
            Some(_) => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
                out.extend_from_slice(&bytes[copied..i]);
                out.extend_from_slice(b"\\ufffd");
                i += 6;
                copied = i;
            }
            // Any other escape: skip it whole (so `\\` is not read as a start).
            None => i += 2,
        }
    }
    match out {
        None => Cow::Borrowed(bytes),
        Some(mut out) => {
            out.extend_from_slice(&bytes[copied..]);
            Cow::Owned(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[allow(dead_code)]
        name: String,
    }

    #[test]
    fn json_nests_at_most_32_levels() {
        // The object itself is the first level.
        let nested = |levels: usize| {
            format!(
                "{{\"name\": \"x\", \"extra\": {}{}}}",
                "[".repeat(levels - 1),
                "]".repeat(levels - 1)
            )
        };
        assert!(parse::<Body>(nested(MAX_DEPTH).as_bytes()).is_ok());
        let error = parse::<Body>(nested(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert_eq!(error.code(), "invalid_json");
        // Brackets inside strings are text, not nesting.
        let text = format!("{{\"name\": \"{}\"}}", "[{".repeat(100));
        assert!(parse::<Body>(text.as_bytes()).is_ok());
        let escaped = format!("{{\"name\": \"\\\"{}\"}}", "[".repeat(100));
        assert!(parse::<Body>(escaped.as_bytes()).is_ok());
    }

    #[test]
    fn not_json_is_invalid_json() {
        for bad in [&b""[..], b"  ", b"{", b"name=x", b"{\"name\": }"] {
            assert_eq!(parse::<Body>(bad).unwrap_err().code(), "invalid_json");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let read = |json: &str| parse::<Body>(json.as_bytes()).map(|b| b.name);
        assert_eq!(read(r#"{"name": "a\ud86db"}"#).unwrap(), "a\u{fffd}b");
        assert_eq!(
            read(r#"{"name": "\udc00\ud800"}"#).unwrap(),
            "\u{fffd}\u{fffd}"
        );
        assert_eq!(read(r#"{"name": "\ud83d\ude00"}"#).unwrap(), "\u{1f600}");
        assert_eq!(read(r#"{"name": "\\ud800"}"#).unwrap(), "\\ud800");
        assert_eq!(read(r#"{"name": "x\ud800"}"#).unwrap(), "x\u{fffd}");
        assert_eq!(read(r#"{"name": "\ud800\u0041"}"#).unwrap(), "\u{fffd}A");
        assert!(matches!(
            replace_lone_surrogates(br#"{"name": "plain \n"}"#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn wrong_shapes_name_the_field() {
        let e = parse::<Body>(br#"{"name": 5}"#).unwrap_err();
        assert_eq!(e.code(), "validation_error");
        assert!(e.to_string().starts_with("name: invalid type"), "{e}");
        let e = parse::<Body>(br#"{}"#).unwrap_err();
        assert_eq!(e.to_string(), "name: is required");
        assert_eq!(
            parse::<Body>(b"[1]").unwrap_err().code(),
            "validation_error"
        );
    }
}
