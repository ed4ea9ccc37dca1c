//! The environment's variables as settings read them: a value (blank is
//! none), a flag, a positive number, a duration, a deployment key or a
//! provider's credential, and whether every AWS endpoint is on loopback
//! (development settings are refused otherwise).

use std::collections::HashMap;
use std::time::Duration;

use super::ConfigError;
use crate::deployment_key::{KeySource, MIN_KEY};
use crate::endpoints;

/// The variables a configuration is read from.
pub(super) struct Vars {
    vars: HashMap<String, String>,
    /// Every endpoint the SDK may use is on loopback (the local stack).
    pub(super) local: bool,
}

impl Vars {
    pub(super) fn new(vars: HashMap<String, String>) -> Self {
        let local = endpoints::all_on_loopback(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Vars { vars, local }
    }

    /// The variable's value, none when unset or blank.
    pub(super) fn get(&self, name: &str) -> Option<String> {
        self.vars
            .get(name)
            .filter(|v| !v.trim().is_empty())
            .cloned()
    }

    pub(super) fn flag(&self, name: &str, default: bool) -> Result<bool, ConfigError> {
        match self
            .get(name)
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None => Ok(default),
            Some("1" | "true" | "yes" | "on") => Ok(true),
            Some("0" | "false" | "no" | "off") => Ok(false),
            Some(other) => Err(ConfigError(format!(
                "{name} must be true or false, got {other:?}"
            ))),
        }
    }

    pub(super) fn number(&self, name: &str, default: u64) -> Result<u64, ConfigError> {
        match self.get(name) {
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
    }

    pub(super) fn millis(&self, name: &str, default: u64) -> Result<Duration, ConfigError> {
        self.number(name, default).map(Duration::from_millis)
    }

    /// A key from `variable`, else the secret `variable`_SECRET_ARN names,
    /// else the development key against the local stack only.
    pub(super) fn key(
        &self,
        variable: &str,
        development: &str,
    ) -> Result<Option<KeySource>, ConfigError> {
        match (
            self.get(variable),
            self.get(&format!("{variable}_SECRET_ARN")),
        ) {
            (Some(key), _) if key.len() < MIN_KEY => Err(ConfigError(format!(
                "{variable} must be at least {MIN_KEY} characters"
            ))),
            (Some(key), _) => Ok(Some(KeySource::Value(key.into_bytes()))),
            (None, Some(arn)) => Ok(Some(KeySource::Secret(arn))),
            (None, None) if self.local => {
                Ok(Some(KeySource::Value(development.as_bytes().to_vec())))
            }
            (None, None) => Ok(None),
        }
    }

    /// A provider's credential: the value, or the secret that holds it.
    pub(super) fn credential(&self, variable: &str) -> Option<KeySource> {
        match (
            self.get(variable),
            self.get(&format!("{variable}_SECRET_ARN")),
        ) {
            (Some(value), _) => Some(KeySource::Value(value.trim().as_bytes().to_vec())),
            (None, Some(arn)) => Some(KeySource::Secret(arn)),
            (None, None) => None,
        }
    }
}
