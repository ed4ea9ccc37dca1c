//! Deployment keys that rotate (the seal key, the cursor key): a keyring
//! of generations, each with a version. Whatever a key signs or seals
//! names the version that did it; the newest generation in use signs and
//! seals, and every generation the ring still holds verifies and opens, so
//! values made before a rotation keep working through it.
//!
//! The secret (or the variable) holds either one bare key, which is
//! version 1 (as every deployment began), or a keyring in JSON:
//!
//! ```json
//! {"keys": [
//!   {"version": 2, "key": "…", "from": "2026-11-27T10:10:00Z"},
//!   {"version": 1, "key": "…", "until": "2026-11-28T10:10:00Z"}
//! ]}
//! ```
//!
//! `from`: the generation signs and seals only from then on (until then,
//! it only verifies and opens), so that every instance has read it before
//! any value it made reaches them: an instance reads the ring again
//! `REREAD` after it last read it, and `admin keys rotate` puts `from`
//! `ROLLOUT` ahead. `until`: the generation is refused from then on (a
//! cursor key's overlap). Times are read by the service's clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::deployment_key::{KeySource, MIN_KEY};
use crate::error::ApiError;

/// How long an instance uses the ring it read before reading it again.
pub const REREAD: Duration = Duration::from_secs(5 * 60);
/// How far ahead of its writing a new generation starts to sign: more
/// than `REREAD`, so every instance holds it by then.
pub const ROLLOUT: Duration = Duration::from_secs(10 * 60);

/// One generation of a key.
#[derive(Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Generation {
    pub version: u32,
    key: String,
    /// Signs and seals from then on (always, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<DateTime<Utc>>,
    /// Refused from then on (never, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
}

impl Generation {
    pub fn key(&self) -> &[u8] {
        self.key.as_bytes()
    }

    fn held_at(&self, now: DateTime<Utc>) -> bool {
        self.until.is_none_or(|until| now < until)
    }

    fn signs_at(&self, now: DateTime<Utc>) -> bool {
        self.held_at(now) && self.from.is_none_or(|from| from <= now)
    }
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation")
            .field("version", &self.version)
            .field("key", &"<redacted>")
            .field("from", &self.from)
            .field("until", &self.until)
            .finish()
    }
}

/// The generations of one key, the newest version first.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    keys: Vec<Generation>,
}

impl Keys {
    /// A secret's text: a bare key (version 1) or a keyring in JSON. Each
    /// key has at least `MIN_KEY` bytes; versions are distinct and above 0.
    pub fn parse(text: &str) -> Result<Keys, String> {
        let keys = if text.trim_start().starts_with('{') {
            serde_json::from_str::<Keys>(text).map_err(|e| format!("not a keyring: {e}"))?
        } else {
            Keys {
                keys: vec![Generation {
                    version: 1,
                    key: text.to_owned(),
                    from: None,
                    until: None,
                }],
            }
        };
        keys.checked()
    }

    fn checked(mut self) -> Result<Keys, String> {
        self.keys.sort_by_key(|g| std::cmp::Reverse(g.version));
        if self.keys.is_empty() {
            return Err("a keyring needs a key".into());
        }
        for pair in self.keys.windows(2) {
            if pair[0].version == pair[1].version {
                return Err(format!("version {} is given twice", pair[0].version));
            }
        }
        for generation in &self.keys {
            if generation.version == 0 {
                return Err("versions start at 1".into());
            }
            if generation.key.len() < MIN_KEY {
                return Err(format!(
                    "the key of version {} is shorter than {MIN_KEY} bytes",
                    generation.version
                ));
            }
        }
        Ok(self)
    }

    /// The generation that signs and seals at `now`: the newest one whose
    /// `from` has come and whose `until` has not.
    pub fn signing(&self, now: DateTime<Utc>) -> Option<&Generation> {
        self.keys.iter().find(|g| g.signs_at(now))
    }

    /// Generation `version`, if the ring holds it at `now`.
    pub fn held(&self, version: u32, now: DateTime<Utc>) -> Option<&Generation> {
        self.keys
            .iter()
            .find(|g| g.version == version && g.held_at(now))
    }

    /// Every generation held at `now`, the one that signs first.
    pub fn verifying(&self, now: DateTime<Utc>) -> Vec<&Generation> {
        let signing = self.signing(now).map(|g| g.version);
        let mut held: Vec<&Generation> = self.keys.iter().filter(|g| g.held_at(now)).collect();
        held.sort_by_key(|g| Some(g.version) != signing);
        held
    }

    /// The generations, newest first.
    pub fn generations(&self) -> &[Generation] {
        &self.keys
    }

    /// The versions the ring lists, newest first.
    pub fn versions(&self) -> Vec<u32> {
        self.keys.iter().map(|g| g.version).collect()
    }

    /// The ring with a new generation `key`, signing from `now` +
    /// `ROLLOUT`; the generations that sign now are refused `overlap`
    /// after that (none: kept until dropped).
    pub fn rotated(
        &self,
        key: String,
        now: DateTime<Utc>,
        overlap: Option<Duration>,
    ) -> Result<Keys, String> {
        let from = now + TimeDelta::from_std(ROLLOUT).expect("ten minutes");
        let mut keys = self.keys.clone();
        if let Some(overlap) = overlap {
            let until = from + TimeDelta::from_std(overlap).map_err(|e| e.to_string())?;
            for generation in keys.iter_mut().filter(|g| g.held_at(now)) {
                generation.until = Some(generation.until.map_or(until, |u| u.min(until)));
            }
        }
        let version = self.keys.iter().map(|g| g.version).max().unwrap_or(0) + 1;
        keys.push(Generation {
            version,
            key,
            from: Some(from),
            until: None,
        });
        Keys { keys }.checked()
    }

    /// The ring without generation `version` (never the last one, nor the
    /// one that signs at `now`).
    pub fn without(&self, version: u32, now: DateTime<Utc>) -> Result<Keys, String> {
        if !self.versions().contains(&version) {
            return Err(format!("the keyring holds no version {version}"));
        }
        if self.signing(now).is_some_and(|g| g.version == version) {
            return Err(format!("version {version} is the one that signs now"));
        }
        let keys = self
            .keys
            .iter()
            .filter(|g| g.version != version)
            .cloned()
            .collect();
        Keys { keys }.checked()
    }

    /// The ring as the secret holds it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a keyring serializes")
    }
}

/// A rotating deployment key, read when first needed and again `REREAD`
/// after each reading (a failed reading keeps the ring read before).
#[derive(Clone, Debug)]
pub struct Keyring {
    /// What the key is for, for error messages.
    what: &'static str,
    sdk: aws_config::SdkConfig,
    source: Option<KeySource>,
    read: Arc<Mutex<Option<Read>>>,
    /// One reading at a time.
    reading: Arc<tokio::sync::Mutex<()>>,
}

#[derive(Debug)]
struct Read {
    keys: Arc<Keys>,
    at: DateTime<Utc>,
}

impl Keyring {
    pub fn new(what: &'static str, sdk: &aws_config::SdkConfig, source: Option<KeySource>) -> Self {
        Self {
            what,
            sdk: sdk.clone(),
            source,
            read: Arc::default(),
            reading: Arc::default(),
        }
    }

    /// The ring as read within `REREAD` (500 `internal_error` when none is
    /// configured, or the first reading fails or finds no valid ring).
    pub async fn keys(&self) -> Result<Arc<Keys>, ApiError> {
        let fresh = |read: &Option<Read>, now: DateTime<Utc>| {
            read.as_ref()
                .filter(|r| now >= r.at && (now - r.at).to_std().is_ok_and(|age| age < REREAD))
                .map(|r| r.keys.clone())
        };
        if let Some(keys) = fresh(&self.read.lock().expect("keyring lock"), clock::now()) {
            return Ok(keys);
        }
        let _one = self.reading.lock().await;
        let now = clock::now();
        if let Some(keys) = fresh(&self.read.lock().expect("keyring lock"), now) {
            return Ok(keys);
        }
        let keys = match self.load().await {
            Ok(keys) => Arc::new(keys),
            Err(error) => {
                let mut read = self.read.lock().expect("keyring lock");
                let Some(before) = read.as_mut() else {
                    return Err(error);
                };
                tracing::warn!(%error, what = self.what, "could not read the keyring again; using the one read before");
                before.at = now;
                return Ok(before.keys.clone());
            }
        };
        *self.read.lock().expect("keyring lock") = Some(Read {
            keys: keys.clone(),
            at: now,
        });
        Ok(keys)
    }

    async fn load(&self) -> Result<Keys, ApiError> {
        let text = KeySource::read(self.source.as_ref(), self.what, &self.sdk).await?;
        let text = String::from_utf8(text)
            .map_err(|_| ApiError::internal(format!("the {} is not text", self.what)))?;
        Keys::parse(&text).map_err(|e| ApiError::internal(format!("the {}: {e}", self.what)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn key(c: char) -> String {
        c.to_string().repeat(MIN_KEY)
    }

    #[test]
    fn a_bare_key_is_version_1_and_signs_always() {
        let keys = Keys::parse(&key('a')).unwrap();
        assert_eq!(keys.versions(), [1]);
        let now = at("2026-11-27T00:00:00Z");
        assert_eq!(keys.signing(now).unwrap().key(), key('a').as_bytes());
        assert_eq!(keys.held(1, now).unwrap().version, 1);
        assert!(keys.held(2, now).is_none());
    }

    #[test]
    fn a_keyring_signs_with_its_newest_generation_from_its_start() {
        let text = format!(
            r#"{{"keys": [
                {{"version": 1, "key": "{}", "until": "2026-11-28T00:10:00Z"}},
                {{"version": 2, "key": "{}", "from": "2026-11-27T00:10:00Z"}}
            ]}}"#,
            key('a'),
            key('b')
        );
        let keys = Keys::parse(&text).unwrap();
        assert_eq!(keys.versions(), [2, 1]);
        let before = at("2026-11-27T00:09:59Z");
        let during = at("2026-11-27T00:10:00Z");
        let after = at("2026-11-28T00:10:00Z");
        assert_eq!(keys.signing(before).unwrap().version, 1);
        assert_eq!(keys.signing(during).unwrap().version, 2);
        // Before it signs, the new generation opens already.
        assert_eq!(keys.held(2, before).unwrap().version, 2);
        assert_eq!(keys.held(1, during).unwrap().version, 1);
        assert!(keys.held(1, after).is_none());
        let versions = |now| {
            keys.verifying(now)
                .iter()
                .map(|g| g.version)
                .collect::<Vec<_>>()
        };
        assert_eq!(versions(before), [1, 2]);
        assert_eq!(versions(during), [2, 1]);
        assert_eq!(versions(after), [2]);
    }

    #[test]
    fn a_keyring_that_is_not_one_is_refused() {
        let one = |v: u32, k: &str| format!(r#"{{"version": {v}, "key": "{k}"}}"#);
        let ring = |generations: &[String]| format!(r#"{{"keys": [{}]}}"#, generations.join(","));
        let refused = [
            ring(&[]),
            ring(&[one(1, &key('a')), one(1, &key('b'))]),
            ring(&[one(0, &key('a'))]),
            ring(&[one(1, "short")]),
            r#"{"keys": [], "extra": 1}"#.to_string(),
            "{ not json".to_string(),
        ];
        for text in refused {
            assert!(Keys::parse(&text).is_err(), "{text}");
        }
        assert!(Keys::parse("short").is_err());
    }

    #[test]
    fn a_rotation_adds_a_generation_after_the_rollout_and_ends_the_old_after_the_overlap() {
        let now = at("2026-11-27T00:00:00Z");
        let keys = Keys::parse(&key('a')).unwrap();
        let day = Duration::from_secs(24 * 3600);
        let rotated = keys.rotated(key('b'), now, Some(day)).unwrap();
        assert_eq!(rotated.versions(), [2, 1]);
        // Ten minutes, as operations.md promises.
        let from = now + TimeDelta::minutes(10);
        assert_eq!(rotated.held(2, now).unwrap().from, Some(from));
        assert_eq!(
            rotated.held(1, now).unwrap().until,
            Some(from + TimeDelta::days(1))
        );
        // Through the secret's text and back.
        assert_eq!(Keys::parse(&rotated.to_json()).unwrap(), rotated);
        // Kept until dropped; dropped only when it no longer signs.
        let kept = keys.rotated(key('b'), now, None).unwrap();
        assert_eq!(
            kept.held(1, now + TimeDelta::days(365)).unwrap().until,
            None
        );
        assert!(kept.without(1, now).is_err());
        assert_eq!(kept.without(1, from).unwrap().versions(), [2]);
        assert!(kept.without(3, from).is_err());
    }

    #[test]
    fn the_debug_form_hides_the_keys() {
        let keys = Keys::parse(&key('s')).unwrap();
        let shown = format!("{keys:?}");
        assert!(!shown.contains(&key('s')), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
