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
//! `ROLLOUT` ahead (or at once, for a leaked key: instances that meet a
//! version newer than any they hold read the ring again at once). `until`:
//! the generation's cursors are refused from then on (a cursor key's
//! overlap). Times are read by the service's clock.
//!
//! What no command may do (`rotated`, `without`): leave a time from now on
//! at which no generation signs, or drop a generation some instance may
//! still sign with (its ring is at most `HELD_FOR` old: one that cannot be
//! read again for that long fails closed), or whose values may still be
//! asked for (`keep`: a kept answer's retention, for the cursor key's
//! fingerprints; the seal key's values are resealed first, `admin
//! reseal`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::deployment_key::{KeySource, MIN_KEY};
use crate::error::ApiError;

/// How long an instance uses the ring it read before reading it again.
pub const REREAD: Duration = Duration::from_secs(5 * 60);
/// The longest an instance uses a ring it read: when the secret cannot be
/// read again for this long, every use of the key fails closed (500)
/// until it can. Less than `ROLLOUT` by more than the longest function's
/// timeout, so that a value made with a ring that old is written before
/// a generation it does not list begins to sign.
pub const HELD_FOR: Duration = Duration::from_secs(8 * 60);
/// How far ahead of its writing a new generation starts to sign: more
/// than `HELD_FOR`, so every instance holds it by then.
pub const ROLLOUT: Duration = Duration::from_secs(10 * 60);
/// After a reading failed, the ring read before is used this long before
/// the next try (not one try per request), while it may be used at all.
const RETRY: Duration = Duration::from_secs(10);
/// A version newer than any the ring lists (a generation that began to
/// sign at once, on an instance that read the ring since) has the ring
/// read again at once, and again at most this often until the next
/// reading that is due anyway.
const NEWER: Duration = Duration::from_secs(1);

/// A time as the commands print it.
fn stamp(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `duration` as a `TimeDelta` (every one of this module's fits).
fn delta(duration: Duration) -> TimeDelta {
    TimeDelta::from_std(duration).expect("a duration of minutes or hours")
}

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

    /// The newest version the ring lists.
    pub fn newest(&self) -> u32 {
        self.keys.iter().map(|g| g.version).max().unwrap_or(0)
    }

    /// The ring with a new generation `key`, signing from `now` +
    /// `ROLLOUT`, or from `now` when `at_once` (a leaked key: instances
    /// that read the ring before go on signing with the one before until
    /// they read it again, at most `HELD_FOR`); the generations held now
    /// are refused `overlap` after it starts (none: kept until dropped).
    pub fn rotated(
        &self,
        key: String,
        now: DateTime<Utc>,
        overlap: Option<Duration>,
        at_once: bool,
    ) -> Result<Keys, String> {
        let from = if at_once { now } else { now + delta(ROLLOUT) };
        let mut keys = self.keys.clone();
        if let Some(overlap) = overlap {
            let until = from + TimeDelta::from_std(overlap).map_err(|e| e.to_string())?;
            for generation in keys.iter_mut().filter(|g| g.held_at(now)) {
                generation.until = Some(generation.until.map_or(until, |u| u.min(until)));
            }
        }
        keys.push(Generation {
            version: self.newest() + 1,
            key,
            from: Some(from),
            until: None,
        });
        let rotated = Keys { keys }.checked()?;
        rotated.signs_on(now)?;
        Ok(rotated)
    }

    /// The ring without generation `version`: refused for the newest (a
    /// version number is never given twice), while some instance may sign
    /// with it (it signs, or signed within `ROLLOUT`, or begins
    /// within `HELD_FOR`), while what it made may still be asked for
    /// (`keep` after it last signed), and when no generation would sign
    /// at some time from `now` on.
    pub fn without(
        &self,
        version: u32,
        now: DateTime<Utc>,
        keep: Duration,
    ) -> Result<Keys, String> {
        if !self.versions().contains(&version) {
            return Err(format!("the keyring holds no version {version}"));
        }
        // So that no version number is ever given to two keys (an
        // instance holding the one before would take the other's values
        // for its own).
        if version == self.newest() {
            return Err(format!(
                "version {version} is the newest: it is never dropped (rotate to replace it)"
            ));
        }
        let since = now - delta(ROLLOUT) - delta(keep);
        if self.signing_between(version, since, now + delta(HELD_FOR)) {
            return Err(match self.droppable_from(version, keep) {
                Some(when) => format!(
                    "version {version} may still sign, or what it signed be asked for: drop it from {} on",
                    stamp(when)
                ),
                None => format!(
                    "version {version} signs from now on: rotate first (admin keys rotate), then drop it once the new generation signs"
                ),
            });
        }
        let keys = Keys {
            keys: self
                .keys
                .iter()
                .filter(|g| g.version != version)
                .cloned()
                .collect(),
        }
        .checked()?;
        keys.signs_on(now)?;
        Ok(keys)
    }

    /// The first time from which `version` may be dropped (`without`):
    /// `ROLLOUT` and `keep` after it last signs; None while it signs for
    /// good.
    pub fn droppable_from(&self, version: u32, keep: Duration) -> Option<DateTime<Utc>> {
        let spans = self.spans();
        let mut last = DateTime::<Utc>::MIN_UTC;
        for (i, (_, signer)) in spans.iter().enumerate() {
            if *signer == Some(version) {
                last = spans.get(i + 1).map(|(next, _)| *next)?;
            }
        }
        Some(
            last.checked_add_signed(delta(ROLLOUT) + delta(keep))
                .unwrap_or(last),
        )
    }

    /// Whether `version` signs at some time after `a` and before `b`.
    fn signing_between(&self, version: u32, a: DateTime<Utc>, b: DateTime<Utc>) -> bool {
        let spans = self.spans();
        spans.iter().enumerate().any(|(i, (start, signer))| {
            let end = spans.get(i + 1).map(|(next, _)| *next);
            *signer == Some(version) && *start < b && end.is_none_or(|end| end > a)
        })
    }

    /// Err when some time from `now` on has no generation that signs.
    fn signs_on(&self, now: DateTime<Utc>) -> Result<(), String> {
        if self.signing(now).is_none() {
            return Err("no generation would sign now".into());
        }
        match self
            .spans()
            .into_iter()
            .find(|(start, signer)| signer.is_none() && *start > now)
        {
            Some((at, _)) => Err(format!("no generation would sign from {} on", stamp(at))),
            None => Ok(()),
        }
    }

    /// The times at which the signing generation changes, each with the
    /// one that signs from then (None: none), in order; the first starts
    /// at the beginning of time.
    fn spans(&self) -> Vec<(DateTime<Utc>, Option<u32>)> {
        let mut times: Vec<DateTime<Utc>> = self
            .keys
            .iter()
            .flat_map(|g| [g.from, g.until])
            .flatten()
            .collect();
        times.push(DateTime::<Utc>::MIN_UTC);
        times.sort();
        times.dedup();
        let mut spans: Vec<(DateTime<Utc>, Option<u32>)> = Vec::new();
        for time in times {
            let signer = self.signing(time).map(|g| g.version);
            if spans.last().is_none_or(|(_, last)| *last != signer) {
                spans.push((time, signer));
            }
        }
        spans
    }

    /// The ring as the secret holds it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a keyring serializes")
    }
}

/// A rotating deployment key, read when first needed and again `REREAD`
/// after each reading. A reading that fails keeps the ring read before
/// (tried again `RETRY` later) for at most `HELD_FOR` after it was read;
/// past that, the key fails closed, each use trying a reading, until one
/// succeeds.
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
    /// When it was read.
    at: DateTime<Utc>,
    /// When a reading was last tried (`at`, or a failure since).
    tried: DateTime<Utc>,
    /// When it was read for a version newer than the ring before listed,
    /// if it was: the next such reading waits `NEWER` (a client names the
    /// version of its cursor, and must not make a reading per request).
    forced: Option<DateTime<Utc>>,
}

impl Read {
    fn age(&self, now: DateTime<Utc>) -> Option<Duration> {
        (now - self.at).to_std().ok()
    }

    /// Whether to read the secret again before using the ring at `now`,
    /// for a value of generation `wanted`.
    fn due(&self, now: DateTime<Utc>, wanted: Option<u32>) -> bool {
        let since = |then: DateTime<Utc>| (now - then).to_std().ok();
        let unknown = wanted.is_some_and(|v| v > self.keys.newest())
            && self
                .forced
                .is_none_or(|forced| since(forced).is_none_or(|s| s >= NEWER));
        match (self.age(now), since(self.tried)) {
            // The clock went back: read again.
            (None, _) | (_, None) => true,
            // Too old to use: nothing is served until a reading succeeds,
            // so every use tries one (recovering at the first that can).
            (Some(age), _) if age >= HELD_FOR => true,
            (Some(age), Some(since_try)) => unknown || (age >= REREAD && since_try >= RETRY),
        }
    }

    /// The ring, while it may be used at `now`.
    fn usable(&self, now: DateTime<Utc>) -> Option<Arc<Keys>> {
        self.age(now)
            .is_some_and(|age| age < HELD_FOR)
            .then(|| self.keys.clone())
    }
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
    /// configured, or no reading succeeded within `HELD_FOR`, or the
    /// secret holds no valid ring).
    pub async fn keys(&self) -> Result<Arc<Keys>, ApiError> {
        self.holding(None).await
    }

    /// The ring, read again first when it lists no version as new as
    /// `wanted` (a value made by a generation that began to sign at once,
    /// on an instance that has read the ring since this one did).
    pub async fn holding(&self, wanted: Option<u32>) -> Result<Arc<Keys>, ApiError> {
        let without_reading = |now: DateTime<Utc>| {
            let read = self.read.lock().expect("keyring lock");
            let read = read.as_ref()?;
            (!read.due(now, wanted)).then(|| read.usable(now).ok_or_else(|| self.stale()))
        };
        if let Some(keys) = without_reading(clock::now()) {
            return keys;
        }
        let _one = self.reading.lock().await;
        let now = clock::now();
        if let Some(keys) = without_reading(now) {
            return keys;
        }
        let loaded = self.load().await;
        let mut read = self.read.lock().expect("keyring lock");
        let forced = read.as_ref().and_then(|before| {
            let newer = wanted.is_some_and(|v| v > before.keys.newest());
            let stale = before.age(now).is_none_or(|age| age >= REREAD);
            (newer && !stale).then_some(now)
        });
        match (loaded, read.as_mut()) {
            (Ok(keys), _) => {
                let keys = Arc::new(keys);
                *read = Some(Read {
                    keys: keys.clone(),
                    at: now,
                    tried: now,
                    forced,
                });
                Ok(keys)
            }
            (Err(error), None) => Err(error),
            (Err(error), Some(before)) => {
                before.tried = now;
                let kept = before.usable(now);
                tracing::warn!(%error, what = self.what, kept = kept.is_some(), "could not read the keyring again");
                kept.ok_or_else(|| self.stale())
            }
        }
    }

    fn stale(&self) -> ApiError {
        ApiError::internal(format!(
            "the {} could not be read for {} minutes: refused until it can",
            self.what,
            HELD_FOR.as_secs() / 60
        ))
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

    const DAY: Duration = Duration::from_secs(24 * 3600);
    const NONE: Duration = Duration::ZERO;

    fn minutes(n: i64) -> TimeDelta {
        TimeDelta::minutes(n)
    }

    #[test]
    fn a_rotation_adds_a_generation_after_the_rollout_and_ends_the_old_after_the_overlap() {
        let now = at("2026-11-27T00:00:00Z");
        let keys = Keys::parse(&key('a')).unwrap();
        let rotated = keys.rotated(key('b'), now, Some(DAY), false).unwrap();
        assert_eq!(rotated.versions(), [2, 1]);
        // Ten minutes, as operations.md promises.
        let from = now + minutes(10);
        assert_eq!(rotated.held(2, now).unwrap().from, Some(from));
        assert_eq!(
            rotated.held(1, now).unwrap().until,
            Some(from + TimeDelta::days(1))
        );
        // Through the secret's text and back.
        assert_eq!(Keys::parse(&rotated.to_json()).unwrap(), rotated);
        // Kept until dropped; dropped only once no instance signs with it.
        let kept = keys.rotated(key('b'), now, None, false).unwrap();
        assert_eq!(
            kept.held(1, now + TimeDelta::days(365)).unwrap().until,
            None
        );
        assert!(kept.without(1, now, NONE).is_err());
        assert!(kept.without(3, from, NONE).is_err());
    }

    #[test]
    fn a_generation_goes_only_once_no_instance_signs_with_it_and_its_values_are_past_keeping() {
        let now = at("2026-11-27T00:00:00Z");
        let kept = Keys::parse(&key('a'))
            .unwrap()
            .rotated(key('b'), now, None, false)
            .unwrap();
        let from = now + minutes(10);
        // Version 1 signs until 00:10; instances that read the ring before
        // the rotation may sign with it until then; another ten minutes
        // for what they made to be written.
        let free = from + minutes(10);
        assert_eq!(kept.droppable_from(1, NONE), Some(free));
        assert!(kept.without(1, from, NONE).is_err(), "it just stopped");
        let refused = kept.without(1, free - TimeDelta::seconds(1), NONE);
        assert!(refused.unwrap_err().contains("2026-11-27T00:20:00Z"));
        assert_eq!(kept.without(1, free, NONE).unwrap().versions(), [2]);
        // What it fingerprinted may be retried for a day more.
        assert_eq!(kept.droppable_from(1, DAY), Some(free + TimeDelta::days(1)));
        assert!(kept.without(1, free, DAY).is_err());
        assert!(kept.without(1, free + TimeDelta::days(1), DAY).is_ok());
        // The one that signs for good never goes.
        assert_eq!(kept.droppable_from(2, NONE), None);
        let never = kept.without(2, free + TimeDelta::days(400), NONE);
        assert!(never.unwrap_err().contains("newest"));
    }

    #[test]
    fn a_generation_not_yet_signing_goes_only_while_no_instance_can_begin_with_it() {
        let now = at("2026-11-27T00:00:00Z");
        let once = Keys::parse(&key('a'))
            .unwrap()
            .rotated(key('b'), now, None, false)
            .unwrap();
        // The newest never goes, even before it signs: its version would
        // be given again.
        assert!(once.without(2, now, NONE).unwrap_err().contains("newest"));
        // Version 2 signs from 00:10 to 00:11 (3 follows): a ring read now
        // is used up to 00:08 at most.
        let twice = once
            .rotated(key('c'), now + minutes(1), None, false)
            .unwrap();
        assert_eq!(twice.without(2, now, NONE).unwrap().versions(), [3, 1]);
        assert!(twice.without(2, now + minutes(2), NONE).is_ok());
        let late = now + minutes(2) + TimeDelta::seconds(1);
        assert!(twice.without(2, late, NONE).is_err());
        // Dropped, the next rotation takes a version never given.
        let dropped = twice.without(2, now, NONE).unwrap();
        let again = dropped.rotated(key('d'), now, None, false).unwrap();
        assert_eq!(again.versions(), [4, 3, 1]);
    }

    #[test]
    fn no_command_leaves_a_time_with_nothing_that_signs() {
        let now = at("2026-11-27T00:00:00Z");
        // The cursor key rotated with no overlap: version 1 ends as 2 begins.
        let ring = Keys::parse(&key('a'))
            .unwrap()
            .rotated(key('b'), now, Some(NONE), false)
            .unwrap();
        let later = now + TimeDelta::days(3);
        assert_eq!(ring.signing(later).unwrap().version, 2);
        // Dropping version 2 would leave nothing from 00:10 on (version 1's
        // until), whenever it is asked.
        for when in [now, now + minutes(5), later] {
            assert!(ring.without(2, when, NONE).is_err(), "{when}");
        }
        assert_eq!(ring.without(1, later, NONE).unwrap().versions(), [2]);
        // A ring with nothing that signs now or later is refused too.
        let text = format!(
            r#"{{"keys": [{{"version": 1, "key": "{}", "until": "2026-11-27T01:00:00Z"}}]}}"#,
            key('a')
        );
        let ending = Keys::parse(&text).unwrap();
        assert!(ending.signs_on(now).unwrap_err().contains("01:00:00"));
        assert!(ending.signs_on(at("2026-11-27T02:00:00Z")).is_err());
        // Rotating it mends it: the new generation signs for good.
        let mended = ending.rotated(key('b'), now, None, false).unwrap();
        assert_eq!(mended.signing(later).unwrap().version, 2);
        // A ring edited by hand where version 1 fills a gap between 2 and 3
        // a day from now: dropping it is refused, though it signs nowhere
        // near now.
        let text = format!(
            r#"{{"keys": [
                {{"version": 1, "key": "{}"}},
                {{"version": 2, "key": "{}", "from": "2026-11-26T00:00:00Z", "until": "2026-11-28T00:00:00Z"}},
                {{"version": 3, "key": "{}", "from": "2026-11-29T00:00:00Z"}}
            ]}}"#,
            key('a'),
            key('b'),
            key('c')
        );
        let patched = Keys::parse(&text).unwrap();
        assert_eq!(
            patched.signing(at("2026-11-28T12:00:00Z")).unwrap().version,
            1
        );
        let refused = patched.without(1, now, NONE).unwrap_err();
        assert!(
            refused.contains("from 2026-11-28T00:00:00Z on"),
            "{refused}"
        );
    }

    #[test]
    fn a_second_rotation_keeps_every_generation_before_it_and_each_overlap_where_it_was() {
        let t = at("2026-11-27T00:00:00Z");
        let once = Keys::parse(&key('a'))
            .unwrap()
            .rotated(key('b'), t, Some(DAY), false)
            .unwrap();
        // A minute later, again: version 2 has not signed yet.
        let twice = once
            .rotated(key('c'), t + minutes(1), Some(DAY), false)
            .unwrap();
        assert_eq!(twice.versions(), [3, 2, 1]);
        let g = |v: u32| {
            twice
                .generations()
                .iter()
                .find(|g| g.version == v)
                .unwrap()
                .clone()
        };
        // Version 1's overlap stays where the first rotation put it (the
        // earlier of the two ends), version 2's ends a day after 3 starts.
        assert_eq!(g(1).until, Some(t + minutes(10) + TimeDelta::days(1)));
        assert_eq!(g(2).from, Some(t + minutes(10)));
        assert_eq!(g(2).until, Some(t + minutes(11) + TimeDelta::days(1)));
        assert_eq!(g(3).from, Some(t + minutes(11)));
        assert_eq!(g(3).until, None);
        // Who signs when: 1, then 2 for a minute, then 3 for good.
        let signer = |when| twice.signing(when).unwrap().version;
        assert_eq!(signer(t + minutes(9)), 1);
        assert_eq!(signer(t + minutes(10)), 2);
        assert_eq!(signer(t + minutes(11)), 3);
        assert_eq!(signer(t + TimeDelta::days(30)), 3);
        // Version 2 signed for one minute: it goes ten minutes after that.
        assert_eq!(twice.droppable_from(2, NONE), Some(t + minutes(21)));
    }

    #[test]
    fn a_rotation_at_once_signs_now_and_ends_the_overlap_now() {
        let now = at("2026-11-27T00:00:00Z");
        let ring = Keys::parse(&key('a'))
            .unwrap()
            .rotated(key('b'), now, Some(NONE), true)
            .unwrap();
        assert_eq!(ring.signing(now).unwrap().version, 2);
        assert!(ring.held(1, now).is_none(), "refused at once");
        assert_eq!(ring.newest(), 2);
        // Still refused to drop while instances that read the ring before
        // may sign with it.
        assert!(ring.without(1, now + minutes(9), NONE).is_err());
        assert!(ring.without(1, now + minutes(10), NONE).is_ok());
        // The seal key's: the old generation stays, opening.
        let seal = Keys::parse(&key('a'))
            .unwrap()
            .rotated(key('b'), now, None, true)
            .unwrap();
        assert_eq!(seal.signing(now).unwrap().version, 2);
        assert!(seal.held(1, now + TimeDelta::days(400)).is_some());
    }

    #[test]
    fn the_debug_form_hides_the_keys() {
        let keys = Keys::parse(&key('s')).unwrap();
        let shown = format!("{keys:?}");
        assert!(!shown.contains(&key('s')), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
