//! `admin keys ...`: the deployment's rotating keys (`shared::keyring`),
//! the seal key and the cursor key, as their Secrets Manager secrets hold
//! them: show their generations (never a key), rotate one (a new
//! generation that signs after `ROLLOUT`), drop an old one. Rotating and
//! dropping are audited (`crate::audit`), naming versions and times only.

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use clap::{Subcommand, ValueEnum};
use rand::Rng;
use serde_json::{Value, json};
use shared::config::Config;
use shared::deployment_key::KeySource;
use shared::keyring::Keys;

use crate::audit::{Action, Done};

/// Which rotating key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// The key that seals webhook secrets and sealed answers at rest.
    Seal,
    /// The key that signs list cursors and request fingerprints.
    Cursor,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Seal => "seal",
            Which::Cursor => "cursor",
        }
    }

    /// The secret that holds it, from the configuration.
    fn secret(self, config: &Config) -> Result<&str> {
        let (source, variable) = match self {
            Which::Seal => (&config.webhook_seal_key, "WEBHOOK_SEAL_KEY_SECRET_ARN"),
            Which::Cursor => (&config.cursor_key, "CURSOR_SIGNING_KEY_SECRET_ARN"),
        };
        match source {
            Some(KeySource::Secret(arn)) => Ok(arn),
            _ => bail!(
                "the {} key is not in Secrets Manager here: set {variable} to the secret's ARN",
                self.name()
            ),
        }
    }
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// The key's generations: version, from when it signs, until when it
    /// is held (never the keys themselves).
    Show {
        #[arg(long, value_enum)]
        key: Which,
    },
    /// Add a new generation of the key: it opens and verifies at once and
    /// signs and seals from 10 minutes on (every instance has read it by
    /// then). With `--overlap-hours`, the generations in use now are
    /// refused that long after (the cursor key: 24 by default); the seal
    /// key's old generations stay until `admin keys drop`.
    Rotate {
        #[arg(long, value_enum)]
        key: Which,
        /// Hours the generations in use now stay valid after the new one
        /// starts (cursor key: default 24; seal key: none, drop them after
        /// `admin reseal --check` reports 0).
        #[arg(long)]
        overlap_hours: Option<u32>,
    },
    /// Remove an old generation (never the one that signs now). The seal
    /// key's is removed only when `admin reseal --check` finds no value
    /// sealed with it.
    Drop {
        #[arg(long, value_enum)]
        key: Which,
        #[arg(long)]
        version: u32,
    },
}

impl KeysCommand {
    /// What the command changes, for its audit; `None` when it only reads.
    pub fn action(&self) -> Option<Action> {
        match self {
            KeysCommand::Show { .. } => None,
            KeysCommand::Rotate { key, overlap_hours } => Some(Action::new(
                "keys rotate",
                None,
                json!({"key": key.name(), "overlap_hours": overlap_hours}),
            )),
            KeysCommand::Drop { key, version } => Some(Action::new(
                "keys drop",
                None,
                json!({"key": key.name(), "version": version}),
            )),
        }
    }
}

/// The generations as the output shows them (never a key).
fn shown(keys: &Keys, now: DateTime<Utc>) -> Vec<Value> {
    let signing = keys.signing(now).map(|g| g.version);
    keys.generations()
        .iter()
        .map(|g| {
            json!({
                "version": g.version,
                "signs": Some(g.version) == signing,
                "held": keys.held(g.version, now).is_some(),
                "from": g.from,
                "until": g.until,
            })
        })
        .collect()
}

/// A new key: 48 characters from a CSPRNG (about 285 bits).
fn new_key() -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(48)
        .map(char::from)
        .collect()
}

async fn read(sdk: &aws_config::SdkConfig, arn: &str) -> Result<Keys> {
    let text = shared::secrets::fetch(sdk, arn).await?;
    Keys::parse(&text)
        .map_err(anyhow::Error::msg)
        .context("the secret holds no keyring")
}

/// Runs `command` on the secrets `config` names.
pub async fn run(
    config: &Config,
    sdk: &aws_config::SdkConfig,
    command: KeysCommand,
) -> Result<Done> {
    let now = shared::clock::now();
    let mut lines = Vec::new();
    let mut made = None;
    match command {
        KeysCommand::Show { key } => {
            let keys = read(sdk, key.secret(config)?).await?;
            lines.push(json!({"key": key.name(), "generations": shown(&keys, now)}));
        }
        KeysCommand::Rotate { key, overlap_hours } => {
            let arn = key.secret(config)?;
            let overlap = match (key, overlap_hours) {
                (_, Some(hours)) => Some(std::time::Duration::from_secs(u64::from(hours) * 3600)),
                (Which::Cursor, None) => Some(std::time::Duration::from_secs(24 * 3600)),
                (Which::Seal, None) => None,
            };
            let rotated = read(sdk, arn)
                .await?
                .rotated(new_key(), now, overlap)
                .map_err(anyhow::Error::msg)?;
            shared::secrets::put(sdk, arn, &rotated.to_json()).await?;
            let version = rotated.versions()[0];
            made = Some(json!({"key": key.name(), "version": version}));
            lines.push(json!({"key": key.name(), "generations": shown(&rotated, now)}));
        }
        KeysCommand::Drop { key, version } => {
            let arn = key.secret(config)?;
            if key == Which::Seal {
                let left = crate::reseal::count(config, sdk, version).await?;
                if left > 0 {
                    bail!(shared::ApiError::validation(
                        "version",
                        format!(
                            "{left} values are still sealed with version {version}: run admin reseal first"
                        ),
                    ));
                }
            }
            let dropped = read(sdk, arn)
                .await?
                .without(version, now)
                .map_err(anyhow::Error::msg)?;
            shared::secrets::put(sdk, arn, &dropped.to_json()).await?;
            lines.push(json!({"key": key.name(), "generations": shown(&dropped, now)}));
        }
    }
    Ok(Done {
        lines,
        org: None,
        made,
    })
}
