//! The providers outside AWS: the geocoding provider and the issue
//! tracker of support tickets.

use std::time::Duration;

use super::ConfigError;
use super::vars::Vars;
use crate::deployment_key::KeySource;

pub const DEFAULT_GEOCODE_URL: &str = "https://maps.googleapis.com/maps/api/geocode/json";
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";

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

impl GeocodeConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(GeocodeConfig {
            api_key: vars.credential("GEOCODE_API_KEY"),
            url: vars
                .get("GEOCODE_URL")
                .unwrap_or_else(|| DEFAULT_GEOCODE_URL.into()),
            region: vars
                .get("GEOCODE_REGION")
                .map(|r| r.trim().to_ascii_lowercase()),
            timeout: vars.millis("GEOCODE_TIMEOUT_MS", 5000)?,
        })
    }
}

impl SupportConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let repository = vars
            .get("SUPPORT_GITHUB_REPOSITORY")
            .map(|r| r.trim().to_owned());
        if let Some(r) = &repository {
            let parts: Vec<&str> = r.split('/').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Err(ConfigError(format!(
                    "SUPPORT_GITHUB_REPOSITORY must be owner/name, got {r:?}"
                )));
            }
        }
        Ok(SupportConfig {
            repository,
            token: vars.credential("SUPPORT_GITHUB_TOKEN"),
            api_url: vars
                .get("SUPPORT_GITHUB_API_URL")
                .unwrap_or_else(|| DEFAULT_GITHUB_API_URL.into())
                .trim_end_matches('/')
                .to_owned(),
            labels: vars
                .get("SUPPORT_LABELS")
                .unwrap_or_else(|| "support".into())
                .split(',')
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            timeout: vars.millis("SUPPORT_TIMEOUT_MS", 10_000)?,
        })
    }
}
