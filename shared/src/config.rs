//! Settings: one struct, read once per container from environment variables.
//! Every variable is listed in docs/settings.md.

use std::collections::HashMap;
use std::env;
use std::time::Duration;

use crate::deployment_key::{KeySource, MIN_KEY};
use crate::endpoints;

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

/// Where the metrics go: on or off, and their namespace (settings
/// `METRICS_ENABLED`, `METRICS_NAMESPACE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsConfig {
    pub enabled: bool,
    pub namespace: String,
}

/// The namespace when none is set.
pub const DEFAULT_NAMESPACE: &str = "IntegrationApi";

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            enabled: true,
            namespace: DEFAULT_NAMESPACE.into(),
        }
    }
}

/// Whether `namespace` is one CloudWatch takes: 1 to 255 characters of
/// letters, digits and `. - _ / # :` or space, not starting with `AWS/`.
pub fn valid_namespace(namespace: &str) -> bool {
    (1..=255).contains(&namespace.len())
        && !namespace.starts_with("AWS/")
        && namespace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_/#: ".contains(&b))
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

/// The geocoding provider (Google's Geocoding API): configured when a key
/// is given.
#[derive(Clone, Debug)]
pub struct GeocodeConfig {
    /// `GEOCODE_API_KEY`, or the secret `GEOCODE_API_KEY_SECRET_ARN` names.
    pub api_key: Option<KeySource>,
    /// The provider's JSON endpoint (`GEOCODE_URL`).
    pub url: String,
    /// Region bias, a ccTLD such as `fi` (`GEOCODE_REGION`).
    pub region: Option<String>,
    /// Whole call to the provider (`GEOCODE_TIMEOUT_MS`).
    pub timeout: Duration,
}

/// The issue tracker of support tickets (GitHub Issues): configured when a
/// repository and a token are given.
#[derive(Clone, Debug)]
pub struct SupportConfig {
    /// `owner/name` (`SUPPORT_GITHUB_REPOSITORY`).
    pub repository: Option<String>,
    /// `SUPPORT_GITHUB_TOKEN`, or the secret
    /// `SUPPORT_GITHUB_TOKEN_SECRET_ARN` names.
    pub token: Option<KeySource>,
    /// The REST API's base URL (`SUPPORT_GITHUB_API_URL`).
    pub api_url: String,
    /// Labels of new issues (`SUPPORT_LABELS`, comma-separated).
    pub labels: Vec<String>,
    /// Whole call to the tracker (`SUPPORT_TIMEOUT_MS`).
    pub timeout: Duration,
}

impl SupportConfig {
    pub fn is_configured(&self) -> bool {
        self.repository.is_some() && self.token.is_some()
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub table_name: String,
    pub bucket_name: String,
    pub webhook_queue_url: Option<String>,
    /// Where the dispatcher moves deliveries whose attempts ran out.
    pub webhook_dlq_url: Option<String>,
    /// Development only (refused unless every AWS endpoint is on loopback,
    /// `endpoints`): webhooks may be plain `http://` on loopback and the
    /// dispatcher may connect to loopback, for a local receiver.
    pub webhook_allow_loopback: bool,
    /// `adminUrl` of webhook payloads: `{surplusId}` is replaced.
    pub admin_url_template: Option<String>,
    /// Secrets Manager secret with the access key that signs file links.
    pub link_signer_secret_arn: Option<String>,
    pub short_name: ShortName,
    /// Deployment switch for the versioned API (`403 public_api_disabled`).
    pub public_api_enabled: bool,
    pub rate_limit: RateLimitConfig,
    /// HMAC key of list cursors, the same on every instance: from Secrets
    /// Manager in AWS, a development key only against the local stack;
    /// `None` when neither is set (the API refuses to start, see
    /// `AppState::from_env`; operator tools need no cursors).
    pub cursor_key: Option<KeySource>,
    /// Key that seals webhook secrets at rest, chosen the same way
    /// (`WEBHOOK_SEAL_KEY`, `WEBHOOK_SEAL_KEY_SECRET_ARN`).
    pub webhook_seal_key: Option<KeySource>,
    /// Largest accepted JSON request body.
    pub max_body_bytes: usize,
    /// Copies of the `PUBLIC` cells a nearby search may read
    /// (`PUBLIC_CELL_COPIES`, 1 to 8, 1 by default): raised once
    /// `admin reindex-places` filled them (docs/operations.md).
    pub public_cell_copies: u32,
    /// A request of a key this instance admitted lately reads beside its
    /// admission (`http::lifecycle`; `WARM_REQUESTS`, on by default). Off,
    /// every request waits for its admission first: `make bench`'s before.
    pub warm_requests: bool,
    /// How long and how often a call to AWS may try (`shared::aws`).
    pub sdk_limits: crate::aws::SdkLimits,
    pub geocode: GeocodeConfig,
    pub support: SupportConfig,
    pub metrics: MetricsConfig,
}

#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(pub String);

/// Local development defaults; `make run` and the tests use them as they are.
pub const DEFAULT_TABLE: &str = "integration-api";
pub const DEFAULT_BUCKET: &str = "integration-api-files";
pub const DEFAULT_GEOCODE_URL: &str = "https://maps.googleapis.com/maps/api/geocode/json";
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";
const DEV_CURSOR_KEY: &str = "local-development-cursor-key-not-for-production";
const DEV_WEBHOOK_SEAL_KEY: &str = "local-development-webhook-seal-key-not-for-production";

/// Why a development setting was refused.
fn development_only(setting: &str) -> ConfigError {
    ConfigError(format!(
        "{setting} is for development only: it needs AWS_ENDPOINT_URL and every \
         AWS_ENDPOINT_URL_<SERVICE> that is set on loopback"
    ))
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        // Variables that are not UTF-8 are none of ours (nor the SDK's).
        Self::from_vars(env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        }))
    }

    /// Reads settings from `vars` (name, value), so tests can pass theirs.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let vars: HashMap<String, String> = vars.into_iter().collect();
        let get = |name: &str| vars.get(name).filter(|v| !v.trim().is_empty()).cloned();
        let flag = |name: &str, default: bool| -> Result<bool, ConfigError> {
            match get(name).as_deref().map(str::to_ascii_lowercase).as_deref() {
                None => Ok(default),
                Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                Some(other) => Err(ConfigError(format!(
                    "{name} must be true or false, got {other:?}"
                ))),
            }
        };
        let number = |name: &str, default: u64| -> Result<u64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        ConfigError(format!("{name} must be a positive integer, got {v:?}"))
                    }),
            }
        };
        // Every endpoint the SDK may use is on loopback (the local stack).
        let local = endpoints::all_on_loopback(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        // A key from `variable`, else the secret `variable`_SECRET_ARN names,
        // else the development key against the local stack only.
        let key = |variable: &str, development: &str| -> Result<Option<KeySource>, ConfigError> {
            match (get(variable), get(&format!("{variable}_SECRET_ARN"))) {
                (Some(key), _) if key.len() < MIN_KEY => Err(ConfigError(format!(
                    "{variable} must be at least {MIN_KEY} characters"
                ))),
                (Some(key), _) => Ok(Some(KeySource::Value(key.into_bytes()))),
                (None, Some(arn)) => Ok(Some(KeySource::Secret(arn))),
                (None, None) if local => {
                    Ok(Some(KeySource::Value(development.as_bytes().to_vec())))
                }
                (None, None) => Ok(None),
            }
        };
        // A provider's credential: the value, or the secret that holds it.
        let credential =
            |variable: &str| match (get(variable), get(&format!("{variable}_SECRET_ARN"))) {
                (Some(value), _) => Some(KeySource::Value(value.trim().as_bytes().to_vec())),
                (None, Some(arn)) => Some(KeySource::Secret(arn)),
                (None, None) => None,
            };
        let millis = |name: &str, default: u64| number(name, default).map(Duration::from_millis);
        let repository = get("SUPPORT_GITHUB_REPOSITORY").map(|r| r.trim().to_owned());
        if let Some(r) = &repository {
            let parts: Vec<&str> = r.split('/').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Err(ConfigError(format!(
                    "SUPPORT_GITHUB_REPOSITORY must be owner/name, got {r:?}"
                )));
            }
        }
        let webhook_allow_loopback = flag("WEBHOOK_ALLOW_LOOPBACK_HTTP", false)?;
        if webhook_allow_loopback && !local {
            return Err(development_only("WEBHOOK_ALLOW_LOOPBACK_HTTP"));
        }
        // Development only: attempts longer than production's, for a
        // developer whose machine or debugger is slower than AWS (no local
        // script sets it: docs/decisions/runtime.md, "Runtime").
        let mut sdk_limits = crate::aws::SdkLimits::default();
        if let Some(attempt) = get("AWS_SDK_ATTEMPT_TIMEOUT_MS") {
            if !local {
                return Err(development_only("AWS_SDK_ATTEMPT_TIMEOUT_MS"));
            }
            let attempt = attempt.parse().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                ConfigError(format!(
                    "AWS_SDK_ATTEMPT_TIMEOUT_MS must be a positive integer, got {attempt:?}"
                ))
            })?;
            sdk_limits = sdk_limits.with_attempt(Duration::from_millis(attempt));
        }
        let namespace = get("METRICS_NAMESPACE")
            .map(|n| n.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        if !valid_namespace(&namespace) {
            return Err(ConfigError(format!(
                "METRICS_NAMESPACE must be 1 to 255 letters, digits or . - _ / # : and spaces, not starting with AWS/, got {namespace:?}"
            )));
        }
        let metrics = MetricsConfig {
            enabled: flag("METRICS_ENABLED", true)?,
            namespace,
        };
        let cursor_key = key("CURSOR_SIGNING_KEY", DEV_CURSOR_KEY)?;
        let webhook_seal_key = key("WEBHOOK_SEAL_KEY", DEV_WEBHOOK_SEAL_KEY)?;
        Ok(Self {
            table_name: get("TABLE_NAME").unwrap_or_else(|| DEFAULT_TABLE.into()),
            bucket_name: get("BUCKET_NAME").unwrap_or_else(|| DEFAULT_BUCKET.into()),
            webhook_queue_url: get("WEBHOOK_QUEUE_URL"),
            webhook_dlq_url: get("WEBHOOK_DLQ_URL"),
            webhook_allow_loopback,
            admin_url_template: get("ADMIN_URL_TEMPLATE"),
            link_signer_secret_arn: get("LINK_SIGNER_SECRET_ARN"),
            short_name: match get("SERVICE_SHORT_NAME") {
                Some(v) => ShortName::new(v.trim())?,
                None => ShortName::default(),
            },
            public_api_enabled: flag("PUBLIC_API_ENABLED", true)?,
            rate_limit: RateLimitConfig {
                enabled: flag("RATE_LIMIT_ENABLED", true)?,
                limit: u32::try_from(number("RATE_LIMIT_PER_WINDOW", 100)?)
                    .map_err(|_| ConfigError("RATE_LIMIT_PER_WINDOW is too large".into()))?,
                window: Duration::from_secs(number("RATE_LIMIT_WINDOW_SECONDS", 60)?),
                lease: u32::try_from(number("RATE_LIMIT_LEASE", 8)?.max(1))
                    .map_err(|_| ConfigError("RATE_LIMIT_LEASE is too large".into()))?,
            },
            cursor_key,
            webhook_seal_key,
            max_body_bytes: usize::try_from(number("MAX_BODY_BYTES", 1024 * 1024)?)
                .map_err(|_| ConfigError("MAX_BODY_BYTES is too large".into()))?,
            public_cell_copies: u32::try_from(number("PUBLIC_CELL_COPIES", 1)?)
                .ok()
                .filter(|n| *n <= crate::model::geo::PUBLIC_COPIES)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "PUBLIC_CELL_COPIES must be 1 to {}",
                        crate::model::geo::PUBLIC_COPIES
                    ))
                })?,
            warm_requests: flag("WARM_REQUESTS", true)?,
            metrics,
            sdk_limits,
            geocode: GeocodeConfig {
                api_key: credential("GEOCODE_API_KEY"),
                url: get("GEOCODE_URL").unwrap_or_else(|| DEFAULT_GEOCODE_URL.into()),
                region: get("GEOCODE_REGION").map(|r| r.trim().to_ascii_lowercase()),
                timeout: millis("GEOCODE_TIMEOUT_MS", 5000)?,
            },
            support: SupportConfig {
                repository,
                token: credential("SUPPORT_GITHUB_TOKEN"),
                api_url: get("SUPPORT_GITHUB_API_URL")
                    .unwrap_or_else(|| DEFAULT_GITHUB_API_URL.into())
                    .trim_end_matches('/')
                    .to_owned(),
                labels: get("SUPPORT_LABELS")
                    .unwrap_or_else(|| "support".into())
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
                timeout: millis("SUPPORT_TIMEOUT_MS", 10_000)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_vars(map)
    }

    const LOCAL: (&str, &str) = ("AWS_ENDPOINT_URL", "http://127.0.0.1:5005");
    const LOCAL_DYNAMODB: (&str, &str) = ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8005");

    /// Environments where some AWS call would leave this machine, though
    /// an endpoint variable is on loopback.
    const NOT_LOCAL: [&[(&str, &str)]; 5] = [
        &[LOCAL_DYNAMODB],
        &[
            ("AWS_ENDPOINT_URL", "https://sqs.eu-north-1.amazonaws.com"),
            LOCAL_DYNAMODB,
        ],
        &[
            LOCAL,
            (
                "AWS_ENDPOINT_URL_DYNAMODB",
                "https://dynamodb.eu-north-1.amazonaws.com",
            ),
        ],
        &[
            LOCAL,
            LOCAL_DYNAMODB,
            (
                "AWS_ENDPOINT_URL_SECRETS_MANAGER",
                "https://secretsmanager.eu-north-1.amazonaws.com",
            ),
        ],
        &[
            LOCAL,
            LOCAL_DYNAMODB,
            ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"),
        ],
    ];

    #[test]
    fn defaults_suit_the_local_stack() {
        let c = config(&[LOCAL]).unwrap();
        assert_eq!(c.table_name, DEFAULT_TABLE);
        assert_eq!(c.short_name.key_prefix(), "svc_app_");
        assert!(c.public_api_enabled);
        assert!(c.warm_requests);
        assert!(c.rate_limit.enabled);
        assert_eq!(c.rate_limit.limit, 100);
        assert_eq!(c.rate_limit.window, Duration::from_secs(60));
    }

    #[test]
    fn metrics_are_on_in_a_namespace_cloudwatch_takes() {
        let c = config(&[LOCAL]).unwrap();
        assert_eq!(c.metrics, MetricsConfig::default());
        assert_eq!(
            (c.metrics.enabled, c.metrics.namespace.as_str()),
            (true, "IntegrationApi")
        );
        let c = config(&[
            LOCAL,
            ("METRICS_ENABLED", "false"),
            ("METRICS_NAMESPACE", " IntegrationApi/prod-eu "),
        ])
        .unwrap();
        assert_eq!(
            (c.metrics.enabled, c.metrics.namespace.as_str()),
            (false, "IntegrationApi/prod-eu")
        );
        for bad in ["AWS/Lambda", "api$", &"a".repeat(256)] {
            let refused = config(&[LOCAL, ("METRICS_NAMESPACE", bad)]).unwrap_err();
            assert!(refused.0.starts_with("METRICS_NAMESPACE must be"), "{bad}");
        }
        assert!(valid_namespace(&"a".repeat(255)) && valid_namespace("a #:._-/b"));
        assert!(config(&[LOCAL, ("METRICS_ENABLED", "sometimes")]).is_err());
    }

    #[test]
    fn short_name_shapes_prefix_and_headers() {
        let c = config(&[LOCAL, ("SERVICE_SHORT_NAME", "acme")]).unwrap();
        assert_eq!(c.short_name.key_prefix(), "acme_app_");
        assert_eq!(c.short_name.header("event"), "x-acme-event");
        assert!(config(&[LOCAL, ("SERVICE_SHORT_NAME", "Bad Name")]).is_err());
    }

    #[test]
    fn public_cell_copies_are_one_to_the_copies_written() {
        assert_eq!(config(&[LOCAL]).unwrap().public_cell_copies, 1);
        let c = config(&[LOCAL, ("PUBLIC_CELL_COPIES", "8")]).unwrap();
        assert_eq!(c.public_cell_copies, 8);
        for bad in ["0", "9", "-1", "all"] {
            assert!(
                config(&[LOCAL, ("PUBLIC_CELL_COPIES", bad)]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(config(&[LOCAL, ("RATE_LIMIT_ENABLED", "maybe")]).is_err());
        assert!(config(&[LOCAL, ("RATE_LIMIT_PER_WINDOW", "0")]).is_err());
        assert!(config(&[LOCAL, ("CURSOR_SIGNING_KEY", "short")]).is_err());
        let c = config(&[
            LOCAL,
            ("RATE_LIMIT_ENABLED", "false"),
            ("PUBLIC_API_ENABLED", "0"),
            ("WARM_REQUESTS", "off"),
        ])
        .unwrap();
        assert!(!c.rate_limit.enabled && !c.public_api_enabled && !c.warm_requests);
        assert!(config(&[LOCAL, ("WARM_REQUESTS", "sometimes")]).is_err());
    }

    #[test]
    fn the_development_cursor_key_is_only_for_a_local_emulator() {
        // In AWS (no emulator endpoint) the key must come from somewhere.
        assert!(config(&[]).unwrap().cursor_key.is_none());
        let aws = (
            "AWS_ENDPOINT_URL",
            "https://dynamodb.eu-north-1.amazonaws.com",
        );
        assert!(config(&[aws]).unwrap().cursor_key.is_none());
        let arn = "arn:aws:secretsmanager:eu-north-1:1:secret:cursor";
        let c = config(&[("CURSOR_SIGNING_KEY_SECRET_ARN", arn)]).unwrap();
        assert!(matches!(c.cursor_key, Some(KeySource::Secret(a)) if a == arn));
        let c = config(&[("CURSOR_SIGNING_KEY", &"k".repeat(32))]).unwrap();
        assert!(matches!(c.cursor_key, Some(KeySource::Value(k)) if k.len() == 32));
        for local in [
            "http://localhost:4566",
            "http://127.0.0.1:5005",
            "http://[::1]:5005",
        ] {
            let c = config(&[("AWS_ENDPOINT_URL", local)]).unwrap();
            assert!(
                matches!(c.cursor_key, Some(KeySource::Value(k)) if k == DEV_CURSOR_KEY.as_bytes())
            );
        }
    }

    #[test]
    fn every_development_setting_judges_every_endpoint() {
        let local = config(&[LOCAL, LOCAL_DYNAMODB]).unwrap();
        assert!(local.cursor_key.is_some() && local.webhook_seal_key.is_some());
        let long = ("AWS_SDK_ATTEMPT_TIMEOUT_MS", "9000");
        let webhooks = ("WEBHOOK_ALLOW_LOOPBACK_HTTP", "true");
        let c = config(&[LOCAL, LOCAL_DYNAMODB, long, webhooks]).unwrap();
        assert!(c.webhook_allow_loopback);
        assert_eq!(c.sdk_limits.attempt, Duration::from_secs(9));
        for vars in NOT_LOCAL {
            let c = config(vars).unwrap();
            assert!(c.cursor_key.is_none(), "development cursor key: {vars:?}");
            assert!(
                c.webhook_seal_key.is_none(),
                "development seal key: {vars:?}"
            );
            let refused = |setting| {
                let error = config(&[vars, &[setting]].concat()).unwrap_err();
                assert!(error.0.contains(setting.0), "{error}");
            };
            refused(long);
            refused(webhooks);
        }
    }

    #[test]
    fn longer_aws_calls_are_for_a_local_emulator_only() {
        let limits = config(&[LOCAL]).unwrap().sdk_limits;
        assert_eq!(limits, crate::aws::SdkLimits::default());
        let long = ("AWS_SDK_ATTEMPT_TIMEOUT_MS", "120000");
        let limits = config(&[LOCAL, long]).unwrap().sdk_limits;
        assert_eq!(limits.attempt, Duration::from_secs(120));
        assert!(limits.operation > limits.attempt * limits.max_attempts);
        assert!(config(&[long]).is_err());
        assert!(config(&[LOCAL, ("AWS_SDK_ATTEMPT_TIMEOUT_MS", "0")]).is_err());
    }

    #[test]
    fn loopback_webhooks_are_for_a_local_emulator_only() {
        assert!(!config(&[LOCAL]).unwrap().webhook_allow_loopback);
        let on = ("WEBHOOK_ALLOW_LOOPBACK_HTTP", "true");
        assert!(config(&[LOCAL, on]).unwrap().webhook_allow_loopback);
        assert!(config(&[on]).is_err());
        let aws = ("AWS_ENDPOINT_URL", "https://sqs.eu-north-1.amazonaws.com");
        assert!(config(&[aws, on]).is_err());
    }

    #[test]
    fn providers_are_configured_by_their_credentials() {
        let c = config(&[LOCAL]).unwrap();
        assert!(c.geocode.api_key.is_none() && !c.support.is_configured());
        assert_eq!(c.geocode.url, DEFAULT_GEOCODE_URL);
        assert_eq!(c.geocode.timeout, Duration::from_secs(5));
        assert_eq!(c.support.labels, vec!["support"]);
        let c = config(&[
            ("GEOCODE_API_KEY_SECRET_ARN", "arn:geo"),
            ("SUPPORT_GITHUB_REPOSITORY", "acme/support"),
            ("SUPPORT_GITHUB_TOKEN", "ghp_x"),
            ("SUPPORT_GITHUB_API_URL", "http://127.0.0.1:9/"),
            ("SUPPORT_LABELS", "api, support ,"),
            ("SUPPORT_TIMEOUT_MS", "250"),
        ])
        .unwrap();
        assert!(matches!(c.geocode.api_key, Some(KeySource::Secret(a)) if a == "arn:geo"));
        assert!(c.support.is_configured());
        assert_eq!(c.support.api_url, "http://127.0.0.1:9");
        assert_eq!(c.support.labels, vec!["api", "support"]);
        assert_eq!(c.support.timeout, Duration::from_millis(250));
        assert!(config(&[("SUPPORT_GITHUB_REPOSITORY", "no-slash")]).is_err());
        assert!(config(&[("GEOCODE_TIMEOUT_MS", "0")]).is_err());
    }

    #[test]
    fn the_webhook_seal_key_is_chosen_like_the_cursor_key() {
        assert!(config(&[]).unwrap().webhook_seal_key.is_none());
        let arn = "arn:aws:secretsmanager:eu-north-1:1:secret:seal";
        let c = config(&[("WEBHOOK_SEAL_KEY_SECRET_ARN", arn)]).unwrap();
        assert!(matches!(c.webhook_seal_key, Some(KeySource::Secret(a)) if a == arn));
        assert!(config(&[("WEBHOOK_SEAL_KEY", "short")]).is_err());
        let c = config(&[LOCAL]).unwrap();
        assert!(
            matches!(c.webhook_seal_key, Some(KeySource::Value(k)) if k == DEV_WEBHOOK_SEAL_KEY.as_bytes())
        );
    }
}
