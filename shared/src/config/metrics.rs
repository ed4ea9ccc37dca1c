//! Where the metrics go.

use super::ConfigError;
use super::vars::Vars;

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

impl MetricsConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let namespace = vars
            .get("METRICS_NAMESPACE")
            .map(|n| n.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        if !valid_namespace(&namespace) {
            return Err(ConfigError(format!(
                "METRICS_NAMESPACE must be 1 to 255 letters, digits or . - _ / # : and spaces, not starting with AWS/, got {namespace:?}"
            )));
        }
        Ok(MetricsConfig {
            enabled: vars.flag("METRICS_ENABLED", true)?,
            namespace,
        })
    }
}
