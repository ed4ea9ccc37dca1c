//! Secrets kept at rest (webhook secrets, sealed answers): sealed with
//! AES-256-GCM under a key derived from the deployment's seal key, bound to
//! the record they belong to (its id is the associated data, so a sealed
//! value copied to another record does not open). Stored as
//! `k<version>.<base64url(nonce ‖ ciphertext)>`, the version of the seal
//! key's generation that sealed it (`crate::keyring`); `v1.<…>`, as values
//! were sealed before the seal key rotated, is version 1.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::clock;
use crate::error::ApiError;
use crate::keyring::{Generation, Keyring};

/// How values sealed before versions were written begin (version 1).
const FIRST: &str = "v1.";
const NONCE: usize = 12;

/// Seals and opens secrets with the deployment's seal keyring.
#[derive(Clone, Debug)]
pub struct Sealer(Keyring);

impl Sealer {
    pub fn new(keys: Keyring) -> Self {
        Self(keys)
    }

    /// `secret` sealed for the record `owner`, with the generation that
    /// seals now.
    pub async fn seal(&self, owner: &[u8], secret: &str) -> Result<String, ApiError> {
        let keys = self.0.keys().await?;
        let generation = keys
            .signing(clock::now())
            .ok_or_else(|| ApiError::internal("no seal key generation seals now"))?;
        let sealed = seal(&cipher(generation), owner, secret)?;
        Ok(format!("k{}.{sealed}", generation.version))
    }

    /// The secret `sealed` for `owner` (500 when it does not open: a
    /// generation the ring no longer holds, another record, or altered).
    pub async fn open(&self, owner: &[u8], sealed: &str) -> Result<String, ApiError> {
        let broken = || ApiError::internal("a sealed secret does not open");
        let (version, sealed) = version_of(sealed).ok_or_else(broken)?;
        let keys = self.0.holding(Some(version)).await?;
        let generation = keys.held(version, clock::now()).ok_or_else(broken)?;
        open(&cipher(generation), owner, sealed)
    }

    /// The version of the generation that seals now.
    pub async fn current_version(&self) -> Result<u32, ApiError> {
        let keys = self.0.keys().await?;
        keys.signing(clock::now())
            .map(|g| g.version)
            .ok_or_else(|| ApiError::internal("no seal key generation seals now"))
    }

    /// Whether `sealed` was sealed with the generation that seals now.
    pub async fn is_current(&self, sealed: &str) -> Result<bool, ApiError> {
        let current = self.current_version().await?;
        Ok(version_of(sealed).is_some_and(|(version, _)| version == current))
    }

    /// `sealed` (for `owner`) sealed again with the generation that seals
    /// now; None when it already is (`admin reseal`).
    pub async fn reseal(&self, owner: &[u8], sealed: &str) -> Result<Option<String>, ApiError> {
        if self.is_current(sealed).await? {
            return Ok(None);
        }
        let secret = self.open(owner, sealed).await?;
        Ok(Some(self.seal(owner, &secret).await?))
    }
}

/// The version that sealed `sealed`, and the sealed bytes' text.
pub fn version_of(sealed: &str) -> Option<(u32, &str)> {
    if let Some(rest) = sealed.strip_prefix(FIRST) {
        return Some((1, rest));
    }
    let (version, rest) = sealed.strip_prefix('k')?.split_once('.')?;
    // Written as `k<version>`: no leading zero, so no version 0 either.
    if version.starts_with('0') {
        return None;
    }
    Some((version.parse().ok()?, rest))
}

fn cipher(generation: &Generation) -> Aes256Gcm {
    let mut derived = Sha256::new();
    derived.update(b"sealed-secrets/v1\0");
    derived.update(generation.key());
    Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&derived.finalize()))
}

fn seal(cipher: &Aes256Gcm, owner: &[u8], secret: &str) -> Result<String, ApiError> {
    let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
    let payload = Payload {
        msg: secret.as_bytes(),
        aad: owner,
    };
    let mut bytes = nonce.to_vec();
    bytes.extend(
        cipher
            .encrypt(&nonce, payload)
            .map_err(|_| ApiError::internal("sealing failed"))?,
    );
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

fn open(cipher: &Aes256Gcm, owner: &[u8], sealed: &str) -> Result<String, ApiError> {
    let broken = || ApiError::internal("a sealed secret does not open");
    let bytes = URL_SAFE_NO_PAD
        .decode(sealed)
        .ok()
        .filter(|bytes| bytes.len() > NONCE)
        .ok_or_else(broken)?;
    let (nonce, ciphertext) = bytes.split_at(NONCE);
    let payload = Payload {
        msg: ciphertext,
        aad: owner,
    };
    let plain = cipher
        .decrypt(Nonce::from_slice(nonce), payload)
        .map_err(|_| broken())?;
    String::from_utf8(plain).map_err(|_| broken())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment_key::KeySource;

    fn sealer(ring: &str) -> Sealer {
        let sdk = aws_config::SdkConfig::builder().build();
        Sealer::new(Keyring::new(
            "test key",
            &sdk,
            Some(KeySource::Value(ring.as_bytes().to_vec())),
        ))
    }

    /// A keyring of `(version, key, from)` generations.
    fn ring(generations: &[(u32, &str, &str)]) -> String {
        let keys: Vec<String> = generations
            .iter()
            .map(|(version, key, from)| {
                format!(r#"{{"version": {version}, "key": "{key}", "from": "{from}"}}"#)
            })
            .collect();
        format!(r#"{{"keys": [{}]}}"#, keys.join(","))
    }

    #[tokio::test]
    async fn a_sealed_secret_opens_only_for_its_record_and_key() {
        let key = "k".repeat(32);
        let s = sealer(&key);
        let sealed = s.seal(b"record-1", "whsec_top").await.unwrap();
        assert!(sealed.starts_with("k1."), "{sealed}");
        assert!(!sealed.contains("whsec_top"));
        assert_eq!(s.open(b"record-1", &sealed).await.unwrap(), "whsec_top");
        // Fresh nonce each time.
        assert_ne!(s.seal(b"record-1", "whsec_top").await.unwrap(), sealed);
        assert!(s.open(b"record-2", &sealed).await.is_err());
        assert!(
            sealer(&"j".repeat(32))
                .open(b"record-1", &sealed)
                .await
                .is_err()
        );
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert!(
            s.open(b"record-1", std::str::from_utf8(&altered).unwrap())
                .await
                .is_err()
        );
        for broken in ["plain", "k.x", "k01.", "k0.", "k2.", "v2."] {
            let sealed = sealed.replacen("k1.", broken, 1);
            assert!(s.open(b"record-1", &sealed).await.is_err(), "{sealed}");
        }
        assert!(s.open(b"record-1", "k1.").await.is_err());
    }

    #[tokio::test]
    async fn values_sealed_before_versions_were_written_are_version_1() {
        let key = "k".repeat(32);
        let s = sealer(&key);
        let sealed = s.seal(b"record-1", "whsec_old").await.unwrap();
        let unversioned = sealed.replacen("k1.", "v1.", 1);
        assert_eq!(
            s.open(b"record-1", &unversioned).await.unwrap(),
            "whsec_old"
        );
        assert_eq!(version_of(&unversioned), Some((1, &sealed[3..])));
    }

    #[tokio::test]
    async fn after_a_rotation_the_new_generation_seals_and_both_open() {
        let (old, new) = ("o".repeat(32), "n".repeat(32));
        let before = sealer(&old);
        let sealed_before = before.seal(b"record-1", "whsec_a").await.unwrap();
        let rotated = sealer(&ring(&[
            (1, &old, "2000-01-01T00:00:00Z"),
            (2, &new, "2001-01-01T00:00:00Z"),
        ]));
        let sealed_after = rotated.seal(b"record-1", "whsec_b").await.unwrap();
        assert!(sealed_after.starts_with("k2."), "{sealed_after}");
        assert_eq!(
            rotated.open(b"record-1", &sealed_before).await.unwrap(),
            "whsec_a"
        );
        assert_eq!(
            rotated.open(b"record-1", &sealed_after).await.unwrap(),
            "whsec_b"
        );
        assert!(!rotated.is_current(&sealed_before).await.unwrap());
        assert!(rotated.is_current(&sealed_after).await.unwrap());
        // Dropped: what version 1 sealed no longer opens.
        let dropped = sealer(&ring(&[(2, &new, "2001-01-01T00:00:00Z")]));
        assert!(dropped.open(b"record-1", &sealed_before).await.is_err());
        // A generation whose start is still ahead opens but does not seal.
        let pending = sealer(&ring(&[
            (1, &old, "2000-01-01T00:00:00Z"),
            (2, &new, "2999-01-01T00:00:00Z"),
        ]));
        assert!(pending.seal(b"r", "x").await.unwrap().starts_with("k1."));
        assert_eq!(
            pending.open(b"record-1", &sealed_after).await.unwrap(),
            "whsec_b"
        );
    }
}
