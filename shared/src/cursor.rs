//! Keyset cursors for paginated lists: opaque, tamper-evident (HMAC-SHA256
//! with a deployment key) and bound to the organization and the query's
//! filters, so a cursor cannot be replayed for another organization or
//! another filter. A bad cursor is 422 `invalid_cursor`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use crate::deployment_key::{DeploymentKey, KeySource};
use crate::error::ApiError;
use crate::error::codes;

type HmacSha256 = Hmac<Sha256>;

const VERSION: u8 = 1;
/// Longer tokens are no cursor of ours (the description's `maxLength`).
pub const MAX_TOKEN_LEN: usize = 2048;

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    v: u8,
    /// Organization the cursor was issued to.
    o: Uuid,
    /// The list's filters, as the list states them (e.g. `status=open`).
    f: String,
    /// Position: where the next page starts.
    p: T,
}

/// The deployment's cursor key.
#[derive(Clone, Debug)]
pub struct Cursors(DeploymentKey);

impl Cursors {
    pub fn new(sdk: &aws_config::SdkConfig, source: Option<KeySource>) -> Self {
        Self(DeploymentKey::new("cursor key", sdk, source))
    }

    pub async fn codec(&self) -> Result<CursorCodec<'_>, crate::error::ApiError> {
        Ok(CursorCodec::new(self.0.get().await?))
    }

    /// The deployment key itself, for another MAC of the deployment's
    /// (each with its own domain prefix: `http::idempotency`'s request
    /// fingerprints).
    pub(crate) async fn key(&self) -> Result<&[u8], crate::error::ApiError> {
        self.0.get().await
    }
}

pub struct CursorCodec<'a> {
    key: &'a [u8],
}

impl<'a> CursorCodec<'a> {
    pub fn new(key: &'a [u8]) -> Self {
        Self { key }
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(self.key).expect("HMAC accepts any key length");
        mac.update(b"cursor\0");
        mac.update(payload);
        mac
    }

    pub fn encode<T: Serialize>(&self, org: Uuid, filters: &str, position: &T) -> String {
        let payload = serde_json::to_vec(&Envelope {
            v: VERSION,
            o: org,
            f: filters.to_owned(),
            p: position,
        })
        .expect("cursor positions serialize");
        let tag = self.mac(&payload).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    pub fn decode<T: DeserializeOwned>(
        &self,
        org: Uuid,
        filters: &str,
        token: &str,
    ) -> Result<T, ApiError> {
        let invalid = || {
            codes::INVALID_CURSOR.with("cursor: is not a cursor of this list (same organization and filters); pass meta.next_cursor unchanged")
        };
        if token.len() > MAX_TOKEN_LEN {
            return Err(invalid());
        }
        let (payload, tag) = token.split_once('.').ok_or_else(invalid)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        // Constant-time tag check.
        self.mac(&payload)
            .verify_slice(&tag)
            .map_err(|_| invalid())?;
        let envelope: Envelope<T> = serde_json::from_slice(&payload).map_err(|_| invalid())?;
        if envelope.v != VERSION || envelope.o != org || envelope.f != filters {
            return Err(invalid());
        }
        Ok(envelope.p)
    }
}

/// One keyset listing of an organization's (a list and its filters): where
/// the page a client asks for starts, and the cursor of the page after it.
pub struct Listing<'a> {
    codec: CursorCodec<'a>,
    org: Uuid,
    filters: String,
}

impl Cursors {
    /// The listing `filters` of organization `org`.
    pub async fn listing(
        &self,
        org: Uuid,
        filters: String,
    ) -> Result<Listing<'_>, crate::error::ApiError> {
        Ok(Listing {
            codec: self.codec().await?,
            org,
            filters,
        })
    }
}

impl Listing<'_> {
    /// Where the page of `cursor` starts (the first page without one); 422
    /// `invalid_cursor` for a cursor of another listing.
    pub fn start<T: DeserializeOwned>(&self, cursor: Option<&str>) -> Result<Option<T>, ApiError> {
        cursor
            .map(|token| self.codec.decode(self.org, &self.filters, token))
            .transpose()
    }

    /// The cursor of the page starting at `next` (None: the last page).
    pub fn next<T: Serialize>(&self, next: Option<T>) -> Option<String> {
        next.map(|position| self.codec.encode(self.org, &self.filters, &position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn position() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("pk".into(), "ORG#1".into()),
            ("sk".into(), "SURPLUS#2".into()),
        ])
    }

    #[test]
    fn round_trips() {
        let codec = CursorCodec::new(b"k");
        let org = Uuid::now_v7();
        let token = codec.encode(org, "status=open", &position());
        assert_eq!(
            codec
                .decode::<BTreeMap<String, String>>(org, "status=open", &token)
                .unwrap(),
            position()
        );
    }

    #[test]
    fn the_largest_position_fits_and_longer_tokens_are_refused() {
        let codec = CursorCodec::new(b"k");
        let org = Uuid::new_v4();
        // Four key attributes of 120 characters: more than any index's.
        let position: BTreeMap<String, String> = ["pk", "sk", "gsi1pk", "gsi1sk"]
            .iter()
            .map(|name| (name.to_string(), "x".repeat(120)))
            .collect();
        let filters = "report=loads&from=2026-01-01&to=2026-12-31&status=delivered";
        let token = codec.encode(org, filters, &position);
        assert!(token.len() <= MAX_TOKEN_LEN, "{}", token.len());
        let long = format!("{token}{}", "A".repeat(MAX_TOKEN_LEN));
        let refused = codec
            .decode::<BTreeMap<String, String>>(org, filters, &long)
            .unwrap_err();
        assert_eq!(refused.code(), "invalid_cursor");
    }

    #[test]
    fn refuses_other_org_filters_key_and_tampering() {
        let codec = CursorCodec::new(b"k");
        let org = Uuid::now_v7();
        let token = codec.encode(org, "status=open", &position());
        let decode =
            |c: &CursorCodec, o, f: &str, t: &str| c.decode::<BTreeMap<String, String>>(o, f, t);
        assert!(decode(&codec, Uuid::now_v7(), "status=open", &token).is_err());
        assert!(decode(&codec, org, "status=all", &token).is_err());
        assert!(decode(&CursorCodec::new(b"other"), org, "status=open", &token).is_err());
        let (payload, tag) = token.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        bytes[5] ^= 1;
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(bytes));
        assert!(decode(&codec, org, "status=open", &forged).is_err());
        let e = decode(&codec, org, "status=open", "garbage").unwrap_err();
        assert_eq!(e.code(), "invalid_cursor");
        assert!(e.to_string().starts_with("cursor:"));
    }
}
