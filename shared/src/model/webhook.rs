//! Outbound webhooks: what an organization registers (event, HTTPS URL,
//! how deliveries prove themselves) and how it is shown. The secret is
//! shown once, in the creation's answer; the record keeps it sealed.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::integer::Integer;
use super::patch::Patch;
use super::time::Timestamp;
use crate::error::ApiError;
use crate::error::codes;
use crate::net::UrlHost;

/// The one event of v1.
pub const SURPLUS_DELIVERED: &str = "surplus.delivered";
/// The event v1 no longer sends.
pub const SURPLUS_CREATED: &str = "surplus.created";
/// A ping: a signed delivery about no load, sent to one webhook when its
/// owner asks (`POST /api/v1/webhooks/{webhookId}/ping`).
pub const WEBHOOK_PING: &str = "webhook.ping";
/// Longest accepted URL, in bytes.
pub const MAX_URL: usize = 2048;
/// Webhooks an organization may have: each delivered load is one attempt
/// per webhook, so the cap bounds what one organization's announcement
/// costs everyone's dispatcher.
pub const MAX_WEBHOOKS: u32 = 20;

/// How a receiver recognises a delivery: an HMAC-SHA256 of the body keyed
/// with the secret, or the secret itself as a bearer token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerificationMode {
    #[default]
    HmacSha256,
    BearerToken,
}

/// POST /api/v1/webhooks body.
#[derive(Debug, Deserialize)]
pub struct CreateWebhook {
    pub event: String,
    pub url: String,
    pub verification_mode: Option<VerificationMode>,
}

/// A validated registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewWebhook {
    pub event: &'static str,
    pub url: String,
    pub verification_mode: VerificationMode,
}

/// The stored webhook: the secret sealed (see `crate::sealed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookRecord {
    pub id: Uuid,
    pub org_id: Uuid,
    pub event: String,
    pub url: String,
    pub verification_mode: VerificationMode,
    pub sealed_secret: String,
    /// After a roll (`RollSecret`): the secret before, sealed, which signs
    /// beside the new one until `previous_secret_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_sealed_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret_until: Option<Timestamp>,
    pub created_at: Timestamp,
}

/// A webhook as answers show it: never its secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    pub id: Uuid,
    pub event: String,
    pub url: String,
    pub verification_mode: VerificationMode,
    pub created_at: Timestamp,
}

/// A row of the webhook list: the webhook and its receiver's health.
#[derive(Debug, Serialize)]
pub struct ListedWebhook {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub receiver: super::receiver::ReceiverView,
}

/// The creation's answer: the webhook and, this once, its secret.
#[derive(Debug, Serialize)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub secret: String,
}

/// Hours the secret before a roll keeps signing, unless the roll says.
pub const DEFAULT_OVERLAP_HOURS: u32 = 24;
/// The longest overlap a roll may ask for: 7 days.
pub const MAX_OVERLAP_HOURS: u32 = 168;

/// POST /api/v1/webhooks/{webhookId}/roll-secret body.
#[derive(Debug, Deserialize)]
pub struct RollSecret {
    #[serde(default)]
    pub overlap_hours: Patch<Integer>,
}

impl RollSecret {
    /// How long the secret before keeps signing: 24 hours when not given
    /// (422 `validation_error` for `null` or outside 0 to 168).
    pub fn overlap(&self) -> Result<std::time::Duration, ApiError> {
        let hours = match &self.overlap_hours {
            Patch::Absent => i64::from(DEFAULT_OVERLAP_HOURS),
            Patch::Null => return Err(ApiError::validation("overlap_hours", "must not be null")),
            Patch::Value(Integer(hours)) => *hours,
        };
        let hours = u64::try_from(hours)
            .ok()
            .filter(|h| *h <= u64::from(MAX_OVERLAP_HOURS))
            .ok_or_else(|| {
                ApiError::validation("overlap_hours", format!("must be 0 to {MAX_OVERLAP_HOURS}"))
            })?;
        Ok(std::time::Duration::from_secs(hours * 3600))
    }
}

/// A roll's answer: the webhook, its new secret this once, and until when
/// the secret before still signs beside it.
#[derive(Debug, Serialize)]
pub struct RolledWebhook {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub secret: String,
    pub previous_secret_expires_at: Timestamp,
}

/// A new secret: 32 bytes from the operating system's CSPRNG, written
/// `whsec_<base64>` (standard alphabet, padded: 50 characters), the form
/// Standard Webhooks libraries take as is. The HMAC of `x-svc-signature`
/// is keyed with the whole string; in bearer mode it is the token.
pub fn new_secret() -> String {
    use aes_gcm::aead::OsRng;
    use aes_gcm::aead::rand_core::RngCore;
    use base64::Engine;
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

impl WebhookRecord {
    pub fn view(&self) -> Webhook {
        Webhook {
            id: self.id,
            event: self.event.clone(),
            url: self.url.clone(),
            verification_mode: self.verification_mode,
            created_at: self.created_at,
        }
    }
}

impl CreateWebhook {
    /// 422 `event_deprecated` for `surplus.created`; 422 `validation_error`
    /// for another event or a URL that is not an absolute HTTPS URL of a
    /// public host without credentials. With `allow_loopback` (a
    /// development setting) a plain `http://` URL on loopback passes too.
    pub fn validate(self, allow_loopback: bool) -> Result<NewWebhook, ApiError> {
        let event = match self.event.as_str() {
            SURPLUS_DELIVERED => SURPLUS_DELIVERED,
            SURPLUS_CREATED => {
                return Err(codes::EVENT_DEPRECATED.with("event: surplus.created is deprecated and no longer sent; register surplus.delivered"));
            }
            _ => return Err(ApiError::validation("event", "must be surplus.delivered")),
        };
        Ok(NewWebhook {
            event,
            url: match loopback_url(&self.url) {
                Some(url) if allow_loopback => url,
                _ => url(&self.url)?,
            },
            verification_mode: self.verification_mode.unwrap_or_default(),
        })
    }
}

/// The URL as registered: `https://`, a host (a name, or a public address),
/// an optional port, path and query; no credentials, no fragment. The host
/// is judged as the sender reads it (`net::url_host`), so no spelling of
/// a refused address (`0x7f.1`, `2130706433`) passes as a name.
fn url(text: &str) -> Result<String, ApiError> {
    let bad = |problem: &str| ApiError::validation("url", problem);
    if text.len() > MAX_URL {
        return Err(bad("must be at most 2048 characters"));
    }
    if !text.starts_with("https://") {
        return Err(bad("must be an absolute https:// URL"));
    }
    if text.contains('#') {
        return Err(bad("must not carry a fragment"));
    }
    if !uri_characters(text) {
        return Err(bad(
            "must be a URI: RFC 3986 characters only, and % only as %XX (hex digits)",
        ));
    }
    let parsed = url::Url::parse(text).map_err(|_| bad("must name a valid public host"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("must not carry credentials"));
    }
    match target(text) {
        Some(UrlHost::Name(name)) if host_name(&name) => Ok(text.to_owned()),
        Some(UrlHost::Address(ip)) if crate::net::is_public(ip) => Ok(text.to_owned()),
        Some(UrlHost::Address(_)) => Err(bad(
            "must not point at a loopback, private or reserved address",
        )),
        _ => Err(bad("must name a valid public host")),
    }
}

/// Whether `text` holds only what an RFC 3986 URI may (its unreserved,
/// reserved and `%XX` percent-encoded characters). HTTP clients read more
/// (a stray `%`, spaces, non-ASCII), but a registered URL is shown back as
/// a URI and sent as one.
fn uri_characters(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 3;
                continue;
            }
            b if b.is_ascii_alphanumeric() || b"-._~:/?[]@!$&'()*+,;=".contains(&b) => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// The host a delivery to `url` would reach, read as the sender reads it;
/// None for a URL without one or that does not parse. Registration and
/// every delivery judge it.
pub fn target(url: &str) -> Option<UrlHost> {
    crate::net::url_host(&url::Url::parse(url).ok()?)
}

/// The receiver `url` names, as organization `org`'s quotas on what
/// reaches it count it (the pings of `quota::WEBHOOK_PINGS`): the URL
/// without its query and fragment, its scheme and host as parsed
/// (lowercase, the default port left out). Deleting a webhook and
/// registering its URL again, or adding `?v=2`, is the same receiver; a
/// receiver is counted apart for each organization, so no organization
/// spends another's quota.
pub fn receiver(org: uuid::Uuid, url: &str) -> uuid::Uuid {
    use sha2::Digest;
    let named = match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.to_owned(),
    };
    let digest = sha2::Sha256::digest(format!("receiver {org} {named}"));
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Uuid::from_bytes(bytes)
}

/// `http(s)://` on `localhost`, a loopback address or `[::1]`, for a local
/// receiver (accepted only with the development setting).
fn loopback_url(text: &str) -> Option<String> {
    if text.len() > MAX_URL || !(text.starts_with("http://") || text.starts_with("https://")) {
        return None;
    }
    let parsed = url::Url::parse(text).ok()?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return None;
    }
    let loopback = match crate::net::url_host(&parsed)? {
        UrlHost::Name(name) => name == "localhost",
        UrlHost::Address(ip) => ip.to_canonical().is_loopback(),
    };
    loopback.then(|| text.to_owned())
}

/// A DNS name with a dot, of letters, digits and hyphens, not `localhost`.
fn host_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    host.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
        && !matches!(
            labels.last(),
            Some(&"localhost") | Some(&"local") | Some(&"internal")
        )
        && !labels
            .last()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(event: &str, url: &str) -> Result<NewWebhook, ApiError> {
        CreateWebhook {
            event: event.into(),
            url: url.into(),
            verification_mode: None,
        }
        .validate(false)
    }

    #[test]
    fn https_urls_of_public_hosts_are_accepted() {
        for url in [
            "https://hooks.example.com/concrete",
            "https://hooks.example.com:8443/a/b?c=d",
            "https://hooks.example.com/a%20b?c=%C3%A4",
            "https://93.184.215.14/hook",
            "https://[2606:4700:4700::1111]/hook",
            "https://Example.COM./x",
        ] {
            let new = create(SURPLUS_DELIVERED, url).unwrap();
            assert_eq!(new.url, url);
            assert_eq!(new.verification_mode, VerificationMode::HmacSha256);
        }
    }

    #[test]
    fn other_urls_are_refused_naming_the_field() {
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        for url in [
            "http://example.com/hook",
            "ftp://example.com/",
            "HTTPS://example.com/",
            "https://",
            "https://[/",
            "example.com/hook",
            "/relative",
            "https://user:pass@example.com/",
            "https://token@example.com/",
            "https://localhost/hook",
            "https://api.localhost/hook",
            "https://127.0.0.1/hook",
            "https://10.0.0.8/hook",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/hook",
            "https://[::ffff:192.168.0.1]/hook",
            "https://intranet/hook",
            "https://bad_host.example.com/",
            "https://example.com/#fragment",
            "https://example.com/uc%",
            "https://example.com/a%2",
            "https://example.com/a%zz",
            "https://example.com/a b",
            "https://example.com/ä",
            "https://example.com/a|b",
            "https://2130706433/",
            long.as_str(),
        ] {
            let Err(error) = create(SURPLUS_DELIVERED, url) else {
                panic!("{url} was accepted");
            };
            assert_eq!(error.code(), "validation_error", "{url}");
            assert!(error.to_string().starts_with("url"), "{url}: {error}");
        }
    }

    #[test]
    fn every_numeric_spelling_of_a_refused_address_is_refused() {
        for (host, _) in crate::net::NUMERIC_HOST_FORMS {
            for url in [
                format!("https://{host}/h"),
                format!("https://{host}:8443/x?y=1"),
            ] {
                let Err(error) = create(SURPLUS_DELIVERED, &url) else {
                    panic!("{url} was accepted");
                };
                assert_eq!(error.code(), "validation_error", "{url}");
            }
        }
    }

    #[test]
    fn the_target_is_read_as_the_sender_reads_it() {
        assert_eq!(
            target("https://0x7f.0x1/h"),
            Some(UrlHost::Address("127.0.0.1".parse().unwrap()))
        );
        assert_eq!(
            target("https://hooks.example.com/h"),
            Some(UrlHost::Name("hooks.example.com".into()))
        );
        assert_eq!(target("not a url"), None);
    }

    #[test]
    fn secrets_are_random_and_prefixed() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with("whsec_") && a.len() == 6 + 44, "{a}");
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD.decode(&a[6..]);
        assert_eq!(key.map(|k| k.len()).ok(), Some(32));
    }

    #[test]
    fn a_receiver_is_its_url_without_query_or_fragment_for_each_organization() {
        let (org, other) = (uuid::Uuid::from_u128(1), uuid::Uuid::from_u128(2));
        let hook = receiver(org, "https://hooks.example.com/in");
        for same in [
            "https://hooks.example.com/in?v=2",
            "https://HOOKS.example.com:443/in#x",
            "HTTPS://hooks.example.com/in?",
        ] {
            assert_eq!(receiver(org, same), hook, "{same}");
        }
        for apart in [
            "https://hooks.example.com/in/2",
            "https://hooks.example.com:8443/in",
            "http://hooks.example.com/in",
        ] {
            assert_ne!(receiver(org, apart), hook, "{apart}");
        }
        assert_ne!(receiver(other, "https://hooks.example.com/in"), hook);
    }

    #[test]
    fn loopback_receivers_need_the_development_setting() {
        for url in [
            "http://127.0.0.1:8000/hook",
            "http://localhost:8000/",
            "http://[::1]:9/x",
        ] {
            let body = || CreateWebhook {
                event: SURPLUS_DELIVERED.into(),
                url: url.into(),
                verification_mode: None,
            };
            assert_eq!(
                body().validate(false).unwrap_err().code(),
                "validation_error"
            );
            assert_eq!(body().validate(true).unwrap().url, url);
        }
        // The setting opens loopback only: private addresses stay refused.
        let private = CreateWebhook {
            event: SURPLUS_DELIVERED.into(),
            url: "http://10.0.0.8/hook".into(),
            verification_mode: None,
        };
        assert!(private.validate(true).is_err());
    }

    #[test]
    fn the_deprecated_event_has_its_own_code() {
        let url = "https://hooks.example.com/";
        assert_eq!(
            create(SURPLUS_CREATED, url).unwrap_err().code(),
            "event_deprecated"
        );
        for other in ["surplus.updated", "", "SURPLUS.DELIVERED"] {
            assert_eq!(create(other, url).unwrap_err().code(), "validation_error");
        }
    }
}
