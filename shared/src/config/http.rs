//! What the HTTP layer reads of every request: the key's prefix, the
//! deployment switch, the rate limit, warm requests, the largest body and
//! the cursor key.

use std::time::Duration;

use super::ConfigError;
use super::vars::Vars;
use crate::deployment_key::KeySource;

pub(super) const DEV_CURSOR_KEY: &str = "local-development-cursor-key-not-for-production";

/// The HTTP layer's settings.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub short_name: ShortName,
    /// Deployment switch for the versioned API (`403 public_api_disabled`).
    pub public_api_enabled: bool,
    pub rate_limit: RateLimitConfig,
    /// A request of a key this instance admitted lately reads beside its
    /// admission (`http::lifecycle`; `WARM_REQUESTS`, on by default). Off,
    /// every request waits for its admission first: `make bench`'s before.
    pub warm_requests: bool,
    /// Largest accepted JSON request body.
    pub max_body_bytes: usize,
    /// HMAC key of list cursors, the same on every instance: from Secrets
    /// Manager in AWS, a development key only against the local stack;
    /// `None` when neither is set (the API refuses to start, see
    /// `AppState::from_env`; operator tools need no cursors).
    pub cursor_key: Option<KeySource>,
}

impl HttpConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(HttpConfig {
            short_name: match vars.get("SERVICE_SHORT_NAME") {
                Some(v) => ShortName::new(v.trim())?,
                None => ShortName::default(),
            },
            public_api_enabled: vars.flag("PUBLIC_API_ENABLED", true)?,
            rate_limit: RateLimitConfig {
                enabled: vars.flag("RATE_LIMIT_ENABLED", true)?,
                limit: u32::try_from(vars.number("RATE_LIMIT_PER_WINDOW", 100)?)
                    .map_err(|_| ConfigError("RATE_LIMIT_PER_WINDOW is too large".into()))?,
                window: Duration::from_secs(vars.number("RATE_LIMIT_WINDOW_SECONDS", 60)?),
                lease: u32::try_from(vars.number("RATE_LIMIT_LEASE", 8)?.max(1))
                    .map_err(|_| ConfigError("RATE_LIMIT_LEASE is too large".into()))?,
            },
            warm_requests: vars.flag("WARM_REQUESTS", true)?,
            max_body_bytes: usize::try_from(vars.number("MAX_BODY_BYTES", 1024 * 1024)?)
                .map_err(|_| ConfigError("MAX_BODY_BYTES is too large".into()))?,
            cursor_key: vars.key("CURSOR_SIGNING_KEY", DEV_CURSOR_KEY)?,
        })
    }
}

/// The operator's short name (`svc` by default): the API key prefix is
/// `<short>_app_` and webhook headers are `x-<short>-*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShortName(String);

impl ShortName {
    pub fn new(value: &str) -> Result<Self, ConfigError> {
        let ok = !value.is_empty()
            && value.len() <= 16
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(ConfigError(format!(
                "SERVICE_SHORT_NAME must be 1 to 16 lowercase letters or digits, got {value:?}"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Prefix of every API key, e.g. `svc_app_`.
    pub fn key_prefix(&self) -> String {
        format!("{}_app_", self.0)
    }

    /// Webhook header name for a suffix, e.g. `x-svc-event`.
    pub fn header(&self, suffix: &str) -> String {
        format!("x-{}-{suffix}", self.0)
    }
}

impl Default for ShortName {
    fn default() -> Self {
        Self("svc".into())
    }
}

#[derive(Clone, Debug)]
pub struct RateLimitConfig {
    pub enabled: bool,
    /// Successful requests admitted per key in one sliding window.
    pub limit: u32,
    pub window: Duration,
    /// Slots a busy key's admission may count at once for this instance to
    /// admit its next requests from (`ratelimit::lease`; 1: none).
    pub lease: u32,
}

/// Failed requests (admitted, answered other than 2xx) a key may make in
/// one fixed window, as a multiple of `limit`: failures give their budget
/// slot back, so without a ceiling of their own they would be unlimited.
pub const FAILURES_PER_LIMIT: u32 = 5;

impl RateLimitConfig {
    /// The ceiling of failed requests per key and window.
    pub fn failure_limit(&self) -> u32 {
        self.limit.saturating_mul(FAILURES_PER_LIMIT)
    }
}
