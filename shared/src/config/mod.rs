//! Settings: read once per container from environment variables, in
//! parts, each read by the part of the platform it names (`http`: every
//! request's admission and body; `store`, `files`, `webhooks`; the
//! providers; the metrics). Every variable is listed in docs/settings.md.

use std::collections::HashMap;
use std::env;
use std::time::Duration;

mod files;
mod http;
mod metrics;
mod providers;
mod store;
mod vars;
mod webhooks;

pub use files::{DEFAULT_BUCKET, FilesConfig};
pub use http::{FAILURES_PER_LIMIT, HttpConfig, RateLimitConfig, ShortName};
pub use metrics::{DEFAULT_NAMESPACE, MetricsConfig, valid_namespace};
pub use providers::{DEFAULT_GEOCODE_URL, DEFAULT_GITHUB_API_URL, GeocodeConfig, SupportConfig};
pub use store::{DEFAULT_TABLE, StoreConfig};
use vars::Vars;
pub use webhooks::WebhooksConfig;

#[derive(Clone, Debug)]
pub struct Config {
    pub http: HttpConfig,
    pub store: StoreConfig,
    pub files: FilesConfig,
    pub webhooks: WebhooksConfig,
    /// How long and how often a call to AWS may try (`shared::aws`).
    pub sdk_limits: crate::aws::SdkLimits,
    pub geocode: GeocodeConfig,
    pub support: SupportConfig,
    pub metrics: MetricsConfig,
}

#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(pub String);

/// Why a development setting was refused.
fn development_only(setting: &str) -> ConfigError {
    ConfigError(format!(
        "{setting} is for development only: it needs AWS_ENDPOINT_URL and every \
         AWS_ENDPOINT_URL_<SERVICE> that is set on loopback"
    ))
}

impl Config {
    /// Each AWS resource this configuration names, beside the setting
    /// that names it in AWS (`TABLE_NAME`, `WEBHOOK_SEAL_KEY_SECRET_ARN`):
    /// the role check finds a call's resource in the template by it.
    pub fn named_resources(&self) -> Vec<(&'static str, String)> {
        let secret = |setting, key: &Option<crate::deployment_key::KeySource>| match key {
            Some(crate::deployment_key::KeySource::Secret(arn)) => Some((setting, arn.clone())),
            _ => None,
        };
        [
            Some(("TABLE_NAME", self.store.table.clone())),
            Some(("BUCKET_NAME", self.files.bucket.clone())),
            self.webhooks
                .queue_url
                .clone()
                .map(|url| ("WEBHOOK_QUEUE_URL", url)),
            self.webhooks
                .dlq_url
                .clone()
                .map(|url| ("WEBHOOK_DLQ_URL", url)),
            self.files
                .link_signer_secret_arn
                .clone()
                .map(|arn| ("LINK_SIGNER_SECRET_ARN", arn)),
            secret("CURSOR_SIGNING_KEY_SECRET_ARN", &self.http.cursor_key),
            secret("WEBHOOK_SEAL_KEY_SECRET_ARN", &self.webhooks.seal_key),
            secret("GEOCODE_API_KEY_SECRET_ARN", &self.geocode.api_key),
            secret("SUPPORT_GITHUB_TOKEN_SECRET_ARN", &self.support.token),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

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
        let vars = Vars::new(vars.into_iter().collect::<HashMap<_, _>>());
        Ok(Self {
            http: HttpConfig::read(&vars)?,
            store: StoreConfig::read(&vars)?,
            files: FilesConfig::read(&vars),
            webhooks: WebhooksConfig::read(&vars)?,
            sdk_limits: sdk_limits(&vars)?,
            geocode: GeocodeConfig::read(&vars)?,
            support: SupportConfig::read(&vars)?,
            metrics: MetricsConfig::read(&vars)?,
        })
    }
}

/// How long an AWS call's attempt may take. Development only: attempts
/// longer than production's, for a developer whose machine or debugger is
/// slower than AWS (no local script sets it: docs/decisions/runtime.md,
/// "Runtime").
fn sdk_limits(vars: &Vars) -> Result<crate::aws::SdkLimits, ConfigError> {
    let limits = crate::aws::SdkLimits::default();
    let Some(attempt) = vars.get("AWS_SDK_ATTEMPT_TIMEOUT_MS") else {
        return Ok(limits);
    };
    if !vars.local {
        return Err(development_only("AWS_SDK_ATTEMPT_TIMEOUT_MS"));
    }
    let attempt = attempt.parse().ok().filter(|ms| *ms > 0).ok_or_else(|| {
        ConfigError(format!(
            "AWS_SDK_ATTEMPT_TIMEOUT_MS must be a positive integer, got {attempt:?}"
        ))
    })?;
    Ok(limits.with_attempt(Duration::from_millis(attempt)))
}

#[cfg(test)]
mod tests {
    use super::http::DEV_CURSOR_KEY;
    use super::webhooks::DEV_WEBHOOK_SEAL_KEY;
    use super::*;
    use crate::deployment_key::KeySource;
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
        assert_eq!(c.store.table, DEFAULT_TABLE);
        assert_eq!(c.http.short_name.key_prefix(), "svc_app_");
        assert!(c.http.public_api_enabled);
        assert!(c.http.warm_requests);
        assert!(c.http.rate_limit.enabled);
        assert_eq!(c.http.rate_limit.limit, 100);
        assert_eq!(c.http.rate_limit.window, Duration::from_secs(60));
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
        assert_eq!(c.http.short_name.key_prefix(), "acme_app_");
        assert_eq!(c.http.short_name.header("event"), "x-acme-event");
        assert!(config(&[LOCAL, ("SERVICE_SHORT_NAME", "Bad Name")]).is_err());
    }

    #[test]
    fn public_cell_copies_are_one_to_the_copies_written() {
        assert_eq!(config(&[LOCAL]).unwrap().store.public_cell_copies, 1);
        let c = config(&[LOCAL, ("PUBLIC_CELL_COPIES", "8")]).unwrap();
        assert_eq!(c.store.public_cell_copies, 8);
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
        assert!(!c.http.rate_limit.enabled && !c.http.public_api_enabled && !c.http.warm_requests);
        assert!(config(&[LOCAL, ("WARM_REQUESTS", "sometimes")]).is_err());
    }

    #[test]
    fn the_development_cursor_key_is_only_for_a_local_emulator() {
        // In AWS (no emulator endpoint) the key must come from somewhere.
        assert!(config(&[]).unwrap().http.cursor_key.is_none());
        let aws = (
            "AWS_ENDPOINT_URL",
            "https://dynamodb.eu-north-1.amazonaws.com",
        );
        assert!(config(&[aws]).unwrap().http.cursor_key.is_none());
        let arn = "arn:aws:secretsmanager:eu-north-1:1:secret:cursor";
        let c = config(&[("CURSOR_SIGNING_KEY_SECRET_ARN", arn)]).unwrap();
        assert!(matches!(c.http.cursor_key, Some(KeySource::Secret(a)) if a == arn));
        let c = config(&[("CURSOR_SIGNING_KEY", &"k".repeat(32))]).unwrap();
        assert!(matches!(c.http.cursor_key, Some(KeySource::Value(k)) if k.len() == 32));
        for local in [
            "http://localhost:4566",
            "http://127.0.0.1:5005",
            "http://[::1]:5005",
        ] {
            let c = config(&[("AWS_ENDPOINT_URL", local)]).unwrap();
            assert!(
                matches!(c.http.cursor_key, Some(KeySource::Value(k)) if k == DEV_CURSOR_KEY.as_bytes())
            );
        }
    }

    #[test]
    fn every_development_setting_judges_every_endpoint() {
        let local = config(&[LOCAL, LOCAL_DYNAMODB]).unwrap();
        assert!(local.http.cursor_key.is_some() && local.webhooks.seal_key.is_some());
        let long = ("AWS_SDK_ATTEMPT_TIMEOUT_MS", "9000");
        let webhooks = ("WEBHOOK_ALLOW_LOOPBACK_HTTP", "true");
        let c = config(&[LOCAL, LOCAL_DYNAMODB, long, webhooks]).unwrap();
        assert!(c.webhooks.allow_loopback);
        assert_eq!(c.sdk_limits.attempt, Duration::from_secs(9));
        for vars in NOT_LOCAL {
            let c = config(vars).unwrap();
            assert!(
                c.http.cursor_key.is_none(),
                "development cursor key: {vars:?}"
            );
            assert!(
                c.webhooks.seal_key.is_none(),
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
        assert!(!config(&[LOCAL]).unwrap().webhooks.allow_loopback);
        let on = ("WEBHOOK_ALLOW_LOOPBACK_HTTP", "true");
        assert!(config(&[LOCAL, on]).unwrap().webhooks.allow_loopback);
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
        assert!(config(&[]).unwrap().webhooks.seal_key.is_none());
        let arn = "arn:aws:secretsmanager:eu-north-1:1:secret:seal";
        let c = config(&[("WEBHOOK_SEAL_KEY_SECRET_ARN", arn)]).unwrap();
        assert!(matches!(c.webhooks.seal_key, Some(KeySource::Secret(a)) if a == arn));
        assert!(config(&[("WEBHOOK_SEAL_KEY", "short")]).is_err());
        let c = config(&[LOCAL]).unwrap();
        assert!(
            matches!(c.webhooks.seal_key, Some(KeySource::Value(k)) if k == DEV_WEBHOOK_SEAL_KEY.as_bytes())
        );
    }
}
