//! `admin keys ...`: the deployment's rotating keys (`shared::keyring`),
//! the seal key and the cursor key, as their Secrets Manager secrets hold
//! them: show their generations (never a key), rotate one (a new
//! generation that signs after `ROLLOUT`, or at once for a leaked key),
//! drop an old one. No flags and no order of these commands can leave a
//! sealed value unopenable, a kept answer unrecognised, or a time with
//! no generation that signs: what would is refused, saying what to do
//! instead. Rotating and dropping are audited (`crate::audit`), naming
//! versions and times only.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use clap::{Subcommand, ValueEnum};
use rand::Rng;
use serde_json::{Value, json};
use shared::config::Config;
use shared::deployment_key::KeySource;
use shared::keyring::Keys;
use shared::secrets;

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

    /// How long after a generation last signs what it made may still be
    /// asked for: the cursor key's fingerprints of keyed requests, for a
    /// kept answer's retention. The seal key's values are resealed before
    /// its generations go (`admin reseal`), so nothing waits for them.
    fn keep(self) -> Duration {
        match self {
            Which::Seal => Duration::ZERO,
            Which::Cursor => shared::http::idempotency::RETENTION,
        }
    }

    /// The secret that holds it, from the configuration.
    fn secret(self, config: &Config) -> Result<&str> {
        let (source, variable) = match self {
            Which::Seal => (&config.webhooks.seal_key, "WEBHOOK_SEAL_KEY_SECRET_ARN"),
            Which::Cursor => (&config.http.cursor_key, "CURSOR_SIGNING_KEY_SECRET_ARN"),
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
    /// then), or at once with `--now`. The cursor key's generations in use
    /// now stop verifying cursors after `--overlap-hours` (24 by default);
    /// the seal key's old generations stay until `admin keys drop`, after
    /// `admin reseal`.
    Rotate {
        #[arg(long, value_enum)]
        key: Which,
        /// Cursor key only: hours the generations in use now go on
        /// verifying cursors after the new one starts (default 24; 0 if
        /// it leaked). Keyed requests are recognised until it is dropped.
        #[arg(long)]
        overlap_hours: Option<u32>,
        /// A leaked key: the new generation signs and seals at once, and
        /// (cursor key, with no `--overlap-hours`) the ones before stop
        /// verifying cursors at once. Instances that read the keyring
        /// before switch when they meet the new version or read it again
        /// (within 5 minutes).
        #[arg(long)]
        now: bool,
    },
    /// Remove an old generation: refused while an instance may still sign
    /// with it (10 minutes after a newer one took over), while what it
    /// signed may be retried (the cursor key: 24 hours more), while a
    /// value is sealed with it (the seal key: `admin reseal` first), and
    /// when nothing would sign after it (`admin keys show` says from when
    /// each can go).
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
            KeysCommand::Rotate {
                key,
                overlap_hours,
                now,
            } => Some(Action::new(
                "keys rotate",
                None,
                json!({"key": key.name(), "overlap_hours": overlap_hours, "now": now}),
            )),
            KeysCommand::Drop { key, version } => Some(Action::new(
                "keys drop",
                None,
                json!({"key": key.name(), "version": version}),
            )),
        }
    }
}

/// The generations as the output shows them (never a key), with the
/// first time each may be dropped (null while it signs for good).
fn shown(keys: &Keys, key: Which, now: DateTime<Utc>) -> Vec<Value> {
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
                "droppable_from": keys.droppable_from(g.version, key.keep()).map(|t| t.max(now)),
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

/// The keyring the secret holds, and the version it was read at.
async fn read(sdk: &aws_config::SdkConfig, arn: &str) -> Result<(Keys, secrets::Read)> {
    let read = secrets::read(sdk, arn).await?;
    let keys = Keys::parse(&read.text)
        .map_err(anyhow::Error::msg)
        .context("the secret holds no keyring")?;
    Ok((keys, read))
}

/// Writes `keys` over the ring as `read`: refused, with nothing written,
/// when another command changed the ring meanwhile (two `admin keys` at
/// once: one wins, the other is told to run again, and no rotation is
/// lost).
async fn write(
    sdk: &aws_config::SdkConfig,
    arn: &str,
    read: &secrets::Read,
    keys: &Keys,
) -> Result<()> {
    match secrets::replace(sdk, arn, read, &keys.to_json()).await? {
        secrets::Replaced::Written => Ok(()),
        secrets::Replaced::Raced => bail!(
            "another command changed the keyring while this one ran: nothing was written; run it again"
        ),
    }
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
            let (keys, _) = read(sdk, key.secret(config)?).await?;
            lines.push(json!({"key": key.name(), "generations": shown(&keys, key, now)}));
        }
        KeysCommand::Rotate {
            key,
            overlap_hours,
            now: at_once,
        } => {
            let arn = key.secret(config)?;
            let hours = |h: u32| Duration::from_secs(u64::from(h) * 3600);
            let overlap = match (key, overlap_hours, at_once) {
                (Which::Seal, Some(_), _) => bail!(shared::ApiError::validation(
                    "overlap_hours",
                    "the seal key takes no overlap: a generation refused while values are sealed with it would lose them. \
                     Rotate without it, run `admin reseal` once the new generation seals, then `admin keys drop --key seal --version <old>` \
                     (refused while any value needs it); for a leaked seal key, rotate with --now"
                )),
                (Which::Seal, None, _) => None,
                (Which::Cursor, Some(h), _) => Some(hours(h)),
                (Which::Cursor, None, true) => Some(Duration::ZERO),
                (Which::Cursor, None, false) => Some(hours(24)),
            };
            let (keys, version) = read(sdk, arn).await?;
            let rotated = keys
                .rotated(new_key(), now, overlap, at_once)
                .map_err(anyhow::Error::msg)?;
            write(sdk, arn, &version, &rotated).await?;
            let version = rotated.newest();
            made = Some(json!({"key": key.name(), "version": version}));
            lines.push(json!({"key": key.name(), "generations": shown(&rotated, key, now)}));
        }
        KeysCommand::Drop { key, version } => {
            let arn = key.secret(config)?;
            let (keys, read_at) = read(sdk, arn).await?;
            let dropped = keys
                .without(version, now, key.keep())
                .map_err(|e| shared::ApiError::validation("version", e))?;
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
            write(sdk, arn, &read_at, &dropped).await?;
            lines.push(json!({"key": key.name(), "generations": shown(&dropped, key, now)}));
        }
    }
    Ok(Done {
        lines,
        org: None,
        made,
    })
}
