//! Calls to the providers an operator configures (the geocoding provider,
//! the issue tracker): one HTTP client per container, built when first
//! used (nothing at cold start), rustls, no proxy, at most 3 redirects;
//! each call bounded as a whole by its timeout and its answer by
//! `MAX_ANSWER` bytes. Webhook deliveries have a client of their own (the
//! dispatcher's, which refuses non-public addresses): these URLs come from
//! the deployment's settings, not from integrators.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::store::exactly_once::outcome;
use bytes::Bytes;
use http::{HeaderMap, Method};
use tracing::Instrument;

/// Largest answer read from a provider.
pub const MAX_ANSWER: usize = 1024 * 1024;

#[derive(Clone, Debug, Default)]
pub struct Outbound {
    client: Arc<OnceLock<reqwest::Client>>,
}

/// A provider's answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Why a call brought no answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The exchange failed after a connection was made: the request may
    /// have reached the provider.
    #[error("{0}")]
    Failed(String),
    /// No connection was made (refused, DNS, TLS handshake): nothing of
    /// the request was sent.
    #[error("{0}")]
    Unreached(String),
    /// Not made: the request may cause no effect (its admission refused
    /// it, or its `Idempotency-Key` claim is another attempt's now). Its
    /// error answers.
    #[error("not made: {0}")]
    Stopped(crate::ApiError),
}

/// One call: method, URL, headers, an optional JSON body.
pub struct Call<'a> {
    pub method: Method,
    pub url: &'a str,
    pub headers: HeaderMap,
    pub json: Option<serde_json::Value>,
    pub timeout: Duration,
}

impl Outbound {
    fn client(&self) -> Result<&reqwest::Client, CallError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(concat!("integration-api/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CallError::Failed(format!("HTTP client: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    /// Makes `call` and reads its answer, all within its timeout, once the
    /// request's admission let it in (`gate`) and while its claim on its
    /// `Idempotency-Key` is its own (`outcome::fence`): a provider's call
    /// costs, and a ticket is a write. Within that claim's hold, too: a
    /// call not answered before the hold ends is given up, so it cannot
    /// land after another attempt took the key.
    pub async fn send(&self, call: Call<'_>) -> Result<Answer, CallError> {
        let deadline = outcome::effect_may_go(call.timeout)
            .await
            .map_err(CallError::Stopped)?;
        let timeout = match deadline {
            Some(deadline) => {
                let left = Duration::from_millis(deadline.saturating_sub(crate::clock::unix_ms()));
                if left.is_zero() {
                    // Paused past its hold since the fence.
                    return Err(CallError::Stopped(outcome::claim_lost()));
                }
                call.timeout.min(left)
            }
            None => call.timeout,
        };
        let span = crate::telemetry::http_spans::outbound(&call.method, call.url);
        let mut request = self
            .client()?
            .request(call.method, call.url)
            .headers(call.headers);
        if let Some(json) = &call.json {
            request = request
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(json.to_string());
        }
        let exchange = async {
            let mut response = request.send().await.map_err(failed)?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(failed)? {
                if body.len() + chunk.len() > MAX_ANSWER {
                    return Err(CallError::Failed(format!(
                        "answer larger than {MAX_ANSWER} bytes"
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Answer {
                status,
                headers,
                body: body.into(),
            })
        };
        let answer = tokio::time::timeout(timeout, exchange)
            .instrument(span.clone())
            .await
            .map_err(|_| CallError::Timeout(timeout))
            .and_then(|answer| answer);
        crate::telemetry::http_spans::answered(&span, answer.as_ref().ok().map(|a| a.status));
        answer
    }
}

/// A transport error, described without the URL (which may carry a key).
fn failed(error: reqwest::Error) -> CallError {
    let unreached = error.is_connect();
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    if unreached {
        CallError::Unreached(text)
    } else {
        CallError::Failed(text)
    }
}
