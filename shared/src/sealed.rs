//! Secrets kept at rest (webhook secrets): sealed with AES-256-GCM under a
//! key derived from a deployment key, bound to the record they belong to
//! (its id is the associated data, so a sealed value copied to another
//! record does not open). Stored as `v1.<base64url(nonce ‖ ciphertext)>`.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::deployment_key::DeploymentKey;
use crate::error::ApiError;

const VERSION: &str = "v1.";
const NONCE: usize = 12;

/// Seals and opens secrets with one deployment key.
#[derive(Clone, Debug)]
pub struct Sealer(DeploymentKey);

impl Sealer {
    pub fn new(key: DeploymentKey) -> Self {
        Self(key)
    }

    async fn cipher(&self) -> Result<Aes256Gcm, ApiError> {
        let mut derived = Sha256::new();
        derived.update(b"sealed-secrets/v1\0");
        derived.update(self.0.get().await?);
        Ok(Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(
            &derived.finalize(),
        )))
    }

    /// `secret` sealed for the record `owner`.
    pub async fn seal(&self, owner: &[u8], secret: &str) -> Result<String, ApiError> {
        seal(&self.cipher().await?, owner, secret)
    }

    /// The secret `sealed` for `owner` (500 when it does not open: another
    /// key, another record, or altered).
    pub async fn open(&self, owner: &[u8], sealed: &str) -> Result<String, ApiError> {
        open(&self.cipher().await?, owner, sealed)
    }
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
    Ok(format!("{VERSION}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

fn open(cipher: &Aes256Gcm, owner: &[u8], sealed: &str) -> Result<String, ApiError> {
    let broken = || ApiError::internal("a sealed secret does not open");
    let bytes = sealed
        .strip_prefix(VERSION)
        .and_then(|b64| URL_SAFE_NO_PAD.decode(b64).ok())
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

    fn sealer(key: &str) -> Sealer {
        let sdk = aws_config::SdkConfig::builder().build();
        Sealer::new(DeploymentKey::new(
            "test key",
            &sdk,
            Some(KeySource::Value(key.as_bytes().to_vec())),
        ))
    }

    #[tokio::test]
    async fn a_sealed_secret_opens_only_for_its_record_and_key() {
        let key = "k".repeat(32);
        let s = sealer(&key);
        let sealed = s.seal(b"record-1", "whsec_top").await.unwrap();
        assert!(sealed.starts_with("v1."));
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
        assert!(s.open(b"record-1", "v1.").await.is_err());
        assert!(s.open(b"record-1", "plain").await.is_err());
    }
}
