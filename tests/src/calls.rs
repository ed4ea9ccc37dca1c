//! A request as a test sends it through a router (`call`, `Call`), and the
//! answer as a client sees it with what it cost (`Reply`).

use axum::Router;
use axum::body::Body;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use shared::store::engine::calls::{AwsCalls, DynamoCalls};
use tower::ServiceExt;

use crate::{harness, logs};

/// Queries a list of an organization's spread records makes: one a
/// partition it may be in (`keys::all_shards`: its shards and the
/// partition of the records from before the spread), read at once.
pub const SPREAD_LIST_QUERIES: u32 = shared::store::engine::keys::RECORD_SHARDS + 1;

/// A response as a client sees it, plus the DynamoDB calls it cost.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
    pub ddb_calls: u32,
    /// Sequential round trips to DynamoDB (parallel calls share one).
    pub round_trips: u32,
    /// The read and write capacity units DynamoDB reported for its calls.
    pub units: shared::store::engine::calls::Units,
    /// Its reads went out beside its key's admission (a warm request).
    pub warm: bool,
    /// Its calls to S3, SQS and Secrets Manager, by `service:Operation`.
    pub aws_calls: std::collections::BTreeMap<String, u32>,
}

impl Reply {
    /// The error `code`, for error responses.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Asserts the status and, for errors, the contract's error body.
    #[track_caller]
    pub fn expect(&self, status: u16, code: Option<&str>) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        if let Some(code) = code {
            assert_eq!(self.code(), code, "unexpected code; body: {}", self.text);
            assert!(
                self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "error message missing: {}",
                self.text
            );
            assert_eq!(
                self.body["error"].as_str(),
                self.status.canonical_reason(),
                "error title: {}",
                self.text
            );
            assert_eq!(
                self.body.as_object().map(|o| o.len()),
                Some(3),
                "error body has exactly error, message, code"
            );
        }
        self
    }
}

/// A request builder: `call(Method::GET, "/api/v1/orgs").key(&k).send(&router)`.
pub struct Call {
    request: http::request::Builder,
    body: Body,
    /// The body's size in bytes, sent as its `Content-Length` (none
    /// without a body).
    length: Option<usize>,
    /// Whether the body goes without it (`Call::chunked`).
    chunked: bool,
}

/// A request as a real client sends it: a body of known size carries its
/// `Content-Length` unless the test says otherwise (`Call::chunked`).
pub fn call(method: Method, path: &str) -> Call {
    Call {
        request: Request::builder().method(method).uri(path),
        body: Body::empty(),
        length: None,
        chunked: false,
    }
}

impl Call {
    /// A raw body with its content type.
    pub fn body(mut self, content_type: &str, body: Vec<u8>) -> Self {
        self.request = self.request.header("content-type", content_type);
        self.length = Some(body.len());
        self.body = Body::from(body);
        self
    }

    pub fn key(mut self, key: &str) -> Self {
        logs::remember(key);
        self.request = self
            .request
            .header("authorization", format!("Bearer {key}"));
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.request = self.request.header(name, value);
        self
    }

    /// A request extension, as an adapter would add (Lambda's context).
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.request = self.request.extension(value);
        self
    }

    pub fn json(mut self, body: &Value) -> Self {
        self.request = self.request.header("content-type", "application/json");
        let body = body.to_string();
        self.length = Some(body.len());
        self.body = Body::from(body);
        self
    }

    pub fn raw(mut self, body: impl Into<String>) -> Self {
        self.request = self.request.header("content-type", "application/json");
        let body: String = body.into();
        self.length = Some(body.len());
        self.body = Body::from(body);
        self
    }

    /// The body without a `Content-Length`, as a streaming client sends
    /// it (`Transfer-Encoding: chunked`).
    pub fn chunked(mut self) -> Self {
        self.chunked = true;
        self.request = self.request.header("transfer-encoding", "chunked");
        self
    }

    pub async fn send_to(self, router: &Router) -> Reply {
        let mut request = self.request.body(self.body).expect("request");
        let framed = request.headers().contains_key(http::header::CONTENT_LENGTH);
        if let Some(length) = self.length.filter(|_| !framed && !self.chunked) {
            request
                .headers_mut()
                .insert(http::header::CONTENT_LENGTH, length.into());
        }
        let response = router
            .clone()
            .oneshot(request)
            .await
            .expect("infallible router");
        let status = response.status();
        let headers = response.headers().clone();
        let cost = response
            .extensions()
            .get::<DynamoCalls>()
            .copied()
            .unwrap_or_default();
        let aws_calls = response
            .extensions()
            .get::<AwsCalls>()
            .cloned()
            .unwrap_or_default();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        logs::remember_answer(&body);
        Reply {
            status,
            headers,
            body,
            text,
            ddb_calls: cost.calls,
            round_trips: cost.round_trips,
            units: cost.units,
            warm: cost.warm,
            aws_calls: aws_calls.0,
        }
    }

    pub async fn send(self) -> Reply {
        let router = harness().await.router.clone();
        self.send_to(&router).await
    }
}
