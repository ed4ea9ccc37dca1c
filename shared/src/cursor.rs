//! Keyset cursors for paginated lists: opaque, tamper-evident (HMAC-SHA256
//! with the deployment's cursor key) and bound to the organization and the
//! query's filters, so a cursor cannot be replayed for another organization
//! or another filter. A bad cursor is 422 `invalid_cursor`. The cursor key
//! rotates (`crate::keyring`): a cursor names the generation that signed
//! it, and pages on while the ring holds that generation.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use crate::deployment_key::KeySource;
use crate::error::ApiError;
use crate::error::codes;
use crate::keyring::{Generation, Keyring, Keys};

type HmacSha256 = Hmac<Sha256>;

const VERSION: u8 = 1;
/// Longer tokens are no cursor of ours (the description's `maxLength`):
/// room for the widest place of a list paged by size, two names of 200
/// characters that JSON escapes six bytes each (about 3.4 KB), far under
/// API Gateway's 10 KB for the request line and headers.
pub const MAX_TOKEN_LEN: usize = 4096;

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    v: u8,
    /// The cursor key's generation that signed it (cursors made before
    /// the key rotated name none: version 1).
    #[serde(default = "first")]
    k: u32,
    /// Organization the cursor was issued to.
    o: Uuid,
    /// The list's filters, as the list states them (e.g. `status=open`).
    f: String,
    /// Position: where the next page starts.
    p: T,
}

/// The generation a cursor names, read before its MAC is checked (only
/// to choose the key that checks it).
#[derive(Deserialize)]
struct Signer {
    #[serde(default = "first")]
    k: u32,
}

fn first() -> u32 {
    1
}

/// The generation `token` names, if it reads as a cursor at all (not
/// checked: only to choose the key that checks it).
fn signer_of(token: &str) -> Option<u32> {
    if token.len() > MAX_TOKEN_LEN {
        return None;
    }
    let (payload, _) = token.split_once('.')?;
    let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice::<Signer>(&payload).ok().map(|s| s.k)
}

/// The deployment's cursor keyring.
#[derive(Clone, Debug)]
pub struct Cursors(Keyring);

impl Cursors {
    pub fn new(sdk: &aws_config::SdkConfig, source: Option<KeySource>) -> Self {
        Self(Keyring::new("cursor key", sdk, source))
    }

    pub async fn codec(&self) -> Result<CursorCodec, ApiError> {
        CursorCodec::new(self.0.keys().await?, crate::clock::now())
    }

    /// The keyring itself, for another MAC of the deployment's (each with
    /// its own domain prefix: `http::idempotency`'s request fingerprints).
    pub(crate) async fn keys(&self) -> Result<Arc<Keys>, ApiError> {
        self.0.keys().await
    }

    /// The keyring, read again first when it lists no version as new as
    /// `version` (`Keyring::holding`).
    pub(crate) async fn holding(&self, version: u32) -> Result<Arc<Keys>, ApiError> {
        self.0.holding(Some(version)).await
    }
}

/// Signs cursors with the generation that signs at its time, and checks
/// them with any the ring holds then.
pub struct CursorCodec {
    keys: Arc<Keys>,
    signing: Generation,
    now: DateTime<Utc>,
}

impl CursorCodec {
    /// 500 when no generation of `keys` signs at `now`.
    pub fn new(keys: Arc<Keys>, now: DateTime<Utc>) -> Result<Self, ApiError> {
        let signing = keys
            .signing(now)
            .cloned()
            .ok_or_else(|| ApiError::internal("no cursor key generation signs now"))?;
        Ok(Self { keys, signing, now })
    }

    fn mac(key: &[u8], payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
        mac.update(b"cursor\0");
        mac.update(payload);
        mac
    }

    pub fn encode<T: Serialize>(&self, org: Uuid, filters: &str, position: &T) -> String {
        let payload = serde_json::to_vec(&Envelope {
            v: VERSION,
            k: self.signing.version,
            o: org,
            f: filters.to_owned(),
            p: position,
        })
        .expect("cursor positions serialize");
        let tag = Self::mac(self.signing.key(), &payload)
            .finalize()
            .into_bytes();
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
        let signer: Signer = serde_json::from_slice(&payload).map_err(|_| invalid())?;
        let generation = self.keys.held(signer.k, self.now).ok_or_else(invalid)?;
        // Constant-time tag check.
        Self::mac(generation.key(), &payload)
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
pub struct Listing {
    cursors: Cursors,
    codec: CursorCodec,
    org: Uuid,
    filters: String,
}

impl Cursors {
    /// The listing `filters` of organization `org`.
    pub async fn listing(
        &self,
        org: Uuid,
        filters: String,
    ) -> Result<Listing, crate::error::ApiError> {
        Ok(Listing {
            cursors: self.clone(),
            codec: self.codec().await?,
            org,
            filters,
        })
    }
}

impl Listing {
    /// Where the page of `cursor` starts (the first page without one); 422
    /// `invalid_cursor` for a cursor of another listing. A cursor signed by
    /// a generation newer than this instance's ring lists (one that began
    /// to sign at once, `admin keys rotate --now`) has the ring read again
    /// first.
    pub async fn start<T: DeserializeOwned>(
        &mut self,
        cursor: Option<&str>,
    ) -> Result<Option<T>, ApiError> {
        let Some(token) = cursor else {
            return Ok(None);
        };
        if let Some(newer) = signer_of(token).filter(|k| *k > self.codec.keys.newest()) {
            let keys = self.cursors.0.holding(Some(newer)).await?;
            self.codec = CursorCodec::new(keys, crate::clock::now())?;
        }
        self.codec.decode(self.org, &self.filters, token).map(Some)
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

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    /// A codec at `now` over the keyring `text`.
    fn codec_of(text: &str, now: &str) -> CursorCodec {
        CursorCodec::new(Arc::new(Keys::parse(text).unwrap()), at(now)).unwrap()
    }

    /// A codec over one bare key of `c`s.
    fn codec(c: char) -> CursorCodec {
        codec_of(&c.to_string().repeat(32), "2026-11-27T00:00:00Z")
    }

    /// The cursor key rotated: version 2 signs from 01:00, version 1 is
    /// refused from 02:00 on.
    const ROTATED: &str = r#"{"keys": [
        {"version": 1, "key": "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", "until": "2026-11-27T02:00:00Z"},
        {"version": 2, "key": "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", "from": "2026-11-27T01:00:00Z"}
    ]}"#;

    fn decode(
        c: &CursorCodec,
        org: Uuid,
        filters: &str,
        token: &str,
    ) -> Result<BTreeMap<String, String>, ApiError> {
        c.decode(org, filters, token)
    }

    #[test]
    fn round_trips() {
        let codec = codec('k');
        let org = Uuid::now_v7();
        let token = codec.encode(org, "status=open", &position());
        assert_eq!(
            decode(&codec, org, "status=open", &token).unwrap(),
            position()
        );
    }

    #[test]
    fn the_largest_position_fits_and_longer_tokens_are_refused() {
        let codec = codec('k');
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
        let refused = decode(&codec, org, filters, &long).unwrap_err();
        assert_eq!(refused.code(), "invalid_cursor");
    }

    /// A member list's place (last name, first name, id), both names at
    /// their 200 characters, each one JSON writes as `\u0001`.
    #[test]
    fn the_widest_place_of_a_list_paged_by_size_fits() {
        let codec = codec('k');
        let org = Uuid::new_v4();
        let name = Some("\u{1}".repeat(200));
        let place = (true, name.clone(), name, Some(Uuid::new_v4()));
        let filters = format!("sites/{}/members", Uuid::new_v4());
        let token = codec.encode(org, &filters, &place);
        assert!(token.len() > 3000, "{}", token.len());
        assert!(token.len() <= MAX_TOKEN_LEN, "{}", token.len());
        let read: (bool, Option<String>, Option<String>, Option<Uuid>) =
            codec.decode(org, &filters, &token).unwrap();
        assert_eq!(read, place);
    }

    /// The limit is on the token as sent: a genuine cursor of exactly
    /// `MAX_TOKEN_LEN` characters pages on, the next longer one is refused
    /// before anything of it is read.
    #[test]
    fn a_genuine_token_of_the_largest_length_decodes_and_a_longer_one_does_not() {
        let codec = codec('k');
        let org = Uuid::new_v4();
        let token_of = |filler: usize| {
            let position = BTreeMap::from([("pk".to_owned(), "x".repeat(filler))]);
            (codec.encode(org, "", &position), position)
        };
        let lengths = (1..4000).map(|filler| (filler, token_of(filler).0.len()));
        let (largest, longer): (Vec<_>, Vec<_>) = lengths
            .filter(|(_, len)| *len >= MAX_TOKEN_LEN)
            .partition(|(_, len)| *len == MAX_TOKEN_LEN);
        let (token, position) = token_of(largest[0].0);
        assert_eq!(token.len(), MAX_TOKEN_LEN);
        assert_eq!(decode(&codec, org, "", &token).unwrap(), position);
        let (token, _) = token_of(longer[0].0);
        assert!(token.len() > MAX_TOKEN_LEN);
        let refused = decode(&codec, org, "", &token).unwrap_err();
        assert_eq!(refused.code(), "invalid_cursor");
    }

    #[test]
    fn refuses_other_org_filters_key_and_tampering() {
        let codec = codec('k');
        let org = Uuid::now_v7();
        let token = codec.encode(org, "status=open", &position());
        assert!(decode(&codec, Uuid::now_v7(), "status=open", &token).is_err());
        assert!(decode(&codec, org, "status=all", &token).is_err());
        assert!(decode(&self::codec('o'), org, "status=open", &token).is_err());
        let (payload, tag) = token.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        bytes[5] ^= 1;
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(bytes));
        assert!(decode(&codec, org, "status=open", &forged).is_err());
        let e = decode(&codec, org, "status=open", "garbage").unwrap_err();
        assert_eq!(e.code(), "invalid_cursor");
        assert!(e.to_string().starts_with("cursor:"));
    }

    #[test]
    fn a_cursor_of_the_previous_key_pages_on_through_the_overlap_and_not_after() {
        let org = Uuid::now_v7();
        let before = codec_of(ROTATED, "2026-11-27T00:59:59Z");
        let old = before.encode(org, "", &position());
        assert!(old.starts_with(&URL_SAFE_NO_PAD.encode(br#"{"v":1,"k":1,"#)[..16]));
        let during = codec_of(ROTATED, "2026-11-27T01:59:59Z");
        assert_eq!(decode(&during, org, "", &old).unwrap(), position());
        let new = during.encode(org, "", &position());
        assert!(new.starts_with(&URL_SAFE_NO_PAD.encode(br#"{"v":1,"k":2,"#)[..16]));
        // The new generation checks what it signed before every instance
        // signed with it.
        assert_eq!(decode(&before, org, "", &new).unwrap(), position());
        let after = codec_of(ROTATED, "2026-11-27T02:00:00Z");
        assert_eq!(
            decode(&after, org, "", &old).unwrap_err().code(),
            "invalid_cursor"
        );
        assert_eq!(decode(&after, org, "", &new).unwrap(), position());
    }

    #[test]
    fn a_cursor_made_before_the_key_rotated_is_version_1() {
        let org = Uuid::now_v7();
        let payload = serde_json::to_vec(&serde_json::json!({
            "v": 1, "o": org, "f": "", "p": position(),
        }))
        .unwrap();
        let tag = CursorCodec::mac(&[b'k'; 32], &payload)
            .finalize()
            .into_bytes();
        let token = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        );
        let during = codec_of(ROTATED, "2026-11-27T01:30:00Z");
        assert_eq!(decode(&during, org, "", &token).unwrap(), position());
    }

    #[test]
    fn a_cursor_that_names_another_generation_is_refused() {
        let org = Uuid::now_v7();
        let during = codec_of(ROTATED, "2026-11-27T01:30:00Z");
        let token = during.encode(org, "", &position());
        let (payload, tag) = token.split_once('.').unwrap();
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        for k in [r#""k":1"#, r#""k":3"#, r#""k":0"#] {
            let renamed = text.replacen(r#""k":2"#, k, 1);
            let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(renamed));
            assert_eq!(
                decode(&during, org, "", &forged).unwrap_err().code(),
                "invalid_cursor"
            );
        }
    }
}
