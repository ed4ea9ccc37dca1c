//! The headers of one attempt: the event, the delivery's id, and its
//! signatures (the contract's and the Standard Webhooks' ones) or the
//! receiver's bearer token.

use http::{HeaderMap, HeaderName, HeaderValue};
use shared::model::webhook::{VerificationMode, WebhookRecord};
use uuid::Uuid;

use crate::Dispatcher;
use crate::signature;

impl Dispatcher {
    /// The headers of one attempt (a secret only ever in a signature, or
    /// as the bearer token the receiver registered): one signature, or
    /// token, for each of `secrets` (the webhook's, then the one before a
    /// roll during its overlap), space-separated.
    pub(crate) fn headers(
        &self,
        hook: &WebhookRecord,
        event: &str,
        secrets: &[String],
        id: Uuid,
        timestamp: i64,
        payload: &[u8],
    ) -> HeaderMap {
        let each = |sign: &dyn Fn(&str) -> String| {
            secrets
                .iter()
                .map(|secret| sign(secret))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let short = &self.state.config.http.short_name;
        let id_text = id.to_string();
        let mut headers = HeaderMap::new();
        let mut set = |name: String, value: String| {
            if let (Ok(name), Ok(value)) =
                (HeaderName::try_from(name), HeaderValue::try_from(value))
            {
                headers.insert(name, value);
            }
        };
        set("content-type".into(), "application/json".into());
        set(short.header("event"), event.to_owned());
        set(short.header("delivery-id"), id_text.clone());
        match hook.verification_mode {
            VerificationMode::HmacSha256 => {
                set(
                    short.header("signature"),
                    each(&|secret| signature::body_signature(secret, payload)),
                );
            }
            VerificationMode::BearerToken => {
                set(
                    short.header("delivery-token"),
                    each(&|secret| secret.to_owned()),
                );
            }
        }
        set("webhook-id".into(), id_text.clone());
        set("webhook-timestamp".into(), timestamp.to_string());
        set(
            "webhook-signature".into(),
            each(&|secret| signature::standard_signature(secret, &id_text, timestamp, payload)),
        );
        // Kept out of any debug output of the HTTP client.
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        headers
    }
}
