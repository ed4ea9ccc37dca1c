//! API key format: `<short>_app_` + exactly 43 characters of unpadded
//! base64url (32 random bytes from the OS CSPRNG). Only the SHA-256 of the
//! whole key is ever stored.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;

const SECRET_BYTES: usize = 32;
/// base64url length of the secret part (32 bytes, unpadded).
const SECRET_CHARS: usize = 43;

/// SHA-256 of a presented key: the lookup id and the only stored form.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeyHash(pub [u8; 32]);

impl KeyHash {
    pub fn of(key: &str) -> Self {
        Self(Sha256::digest(key.as_bytes()).into())
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self(bytes))
    }

    /// Constant-time equality, for the comparison after the lookup.
    pub fn matches(&self, other: &KeyHash) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl std::fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyHash({}…)", &self.to_hex()[..8])
    }
}

/// A freshly generated key. The plaintext is shown once and then dropped.
pub struct NewKey {
    pub plaintext: String,
    pub hash: KeyHash,
}

pub fn generate(prefix: &str) -> NewKey {
    let mut secret = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut secret);
    let plaintext = format!("{prefix}{}", URL_SAFE_NO_PAD.encode(secret));
    let hash = KeyHash::of(&plaintext);
    NewKey { plaintext, hash }
}

/// True when `key` has the shape of a key of this deployment.
pub fn is_well_formed(key: &str, prefix: &str) -> bool {
    key.strip_prefix(prefix).is_some_and(|secret| {
        secret.len() == SECRET_CHARS
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// The key presented by a request: `Authorization: Bearer <key>` or
/// `X-Api-Key: <key>`, every value of both headers read. All the keys sent
/// must be one key (401 `conflicting_api_keys` otherwise). An
/// `Authorization` of another scheme (such as `Basic`, added by a proxy) is
/// not a key: it is ignored beside an `X-Api-Key`, and alone it is
/// 401 `missing_api_key`, like a missing or malformed key.
pub fn presented(headers: &HeaderMap, prefix: &str) -> Result<KeyHash, ApiError> {
    let mut keys: Vec<&str> = Vec::new();
    for value in headers.get_all(http::header::AUTHORIZATION) {
        let value = value.to_str().map_err(|_| ApiError::MissingApiKey)?.trim();
        let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
        if scheme.eq_ignore_ascii_case("bearer") {
            keys.push(token.trim());
        }
    }
    for value in headers.get_all("x-api-key") {
        keys.push(value.to_str().map_err(|_| ApiError::MissingApiKey)?.trim());
    }
    let (first, others) = keys.split_first().ok_or(ApiError::MissingApiKey)?;
    if others
        .iter()
        .any(|other| !bool::from(first.as_bytes().ct_eq(other.as_bytes())))
    {
        return Err(ApiError::ConflictingApiKeys);
    }
    if !is_well_formed(first, prefix) {
        return Err(ApiError::MissingApiKey);
    }
    Ok(KeyHash::of(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn generated_keys_are_well_formed_and_distinct() {
        let a = generate("svc_app_");
        let b = generate("svc_app_");
        assert!(a.plaintext.starts_with("svc_app_"));
        assert_eq!(a.plaintext.len(), "svc_app_".len() + 43);
        assert!(is_well_formed(&a.plaintext, "svc_app_"));
        assert_ne!(a.plaintext, b.plaintext);
        assert_eq!(a.hash, KeyHash::of(&a.plaintext));
        assert_eq!(KeyHash::from_hex(&a.hash.to_hex()), Some(a.hash));
    }

    #[test]
    fn a_hash_matches_only_itself_and_shows_only_its_first_eight_hex_digits() {
        let (a, b) = (KeyHash::of("svc_app_a"), KeyHash::of("svc_app_b"));
        assert!(a.matches(&a));
        assert!(!a.matches(&b));
        // One byte apart: the comparison reads every byte.
        let mut near = a;
        near.0[31] ^= 1;
        assert!(!a.matches(&near));
        let shown = format!("{a:?}");
        assert_eq!(shown, format!("KeyHash({}…)", &a.to_hex()[..8]));
        assert!(!shown.contains(&a.to_hex()[..9]));
    }

    #[test]
    fn bearer_and_header_are_both_accepted() {
        let key = generate("svc_app_").plaintext;
        let want = KeyHash::of(&key);
        let bearer = format!("Bearer {key}");
        assert_eq!(
            presented(&headers(&[("authorization", &bearer)]), "svc_app_").unwrap(),
            want
        );
        assert_eq!(
            presented(&headers(&[("x-api-key", &key)]), "svc_app_").unwrap(),
            want
        );
        let both = headers(&[("authorization", &bearer), ("x-api-key", &key)]);
        assert_eq!(presented(&both, "svc_app_").unwrap(), want);
    }

    #[test]
    fn two_different_keys_are_refused() {
        let a = generate("svc_app_").plaintext;
        let b = generate("svc_app_").plaintext;
        let both = headers(&[("authorization", &format!("Bearer {a}")), ("x-api-key", &b)]);
        assert!(matches!(
            presented(&both, "svc_app_"),
            Err(ApiError::ConflictingApiKeys)
        ));
    }

    #[test]
    fn every_value_of_both_headers_counts() {
        let a = generate("svc_app_").plaintext;
        let b = generate("svc_app_").plaintext;
        for sent in [
            headers(&[("x-api-key", &a), ("x-api-key", &b)]),
            headers(&[
                ("authorization", &format!("Bearer {a}")),
                ("authorization", &format!("Bearer {b}")),
            ]),
            headers(&[("x-api-key", &a), ("authorization", &format!("bearer {b}"))]),
        ] {
            assert!(
                matches!(
                    presented(&sent, "svc_app_"),
                    Err(ApiError::ConflictingApiKeys)
                ),
                "{sent:?}"
            );
        }
        let same = headers(&[("x-api-key", &a), ("x-api-key", &a)]);
        assert_eq!(presented(&same, "svc_app_").unwrap(), KeyHash::of(&a));
    }

    #[test]
    fn another_authorization_scheme_beside_x_api_key_is_ignored() {
        let key = generate("svc_app_").plaintext;
        let sent = headers(&[("authorization", "Basic dXNlcjpwYXNz"), ("x-api-key", &key)]);
        assert_eq!(presented(&sent, "svc_app_").unwrap(), KeyHash::of(&key));
    }

    #[test]
    fn keys_are_exactly_43_characters_after_the_prefix() {
        let key = generate("svc_app_").plaintext;
        assert!(is_well_formed(&key, "svc_app_"));
        assert!(!is_well_formed(&format!("{key}A"), "svc_app_"));
        assert!(!is_well_formed(&key[..key.len() - 1], "svc_app_"));
    }

    #[test]
    fn missing_or_malformed_keys_are_missing_api_key() {
        let key = generate("svc_app_").plaintext;
        for bad in [
            headers(&[]),
            headers(&[("authorization", &format!("Basic {key}"))]),
            headers(&[("authorization", "Bearer")]),
            headers(&[("authorization", "Bearer   ")]),
            headers(&[("authorization", &format!("Bearer {key}{}", "x".repeat(20)))]),
            headers(&[("x-api-key", "svc_app_short")]),
            headers(&[("x-api-key", &key.replace("svc_", "abc_"))]),
            headers(&[("x-api-key", &format!("{key}!"))]),
        ] {
            assert!(
                matches!(presented(&bad, "svc_app_"), Err(ApiError::MissingApiKey)),
                "{bad:?}"
            );
        }
    }
}
