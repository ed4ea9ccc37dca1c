//! Per-key quotas of the routes that cost money or CPU whatever their
//! answer: each use is counted before the work, in a fixed window, and a
//! key past its quota is refused (429 with the quota's own code and
//! `Retry-After`) until the window ends. The rate limit bounds successes
//! and, separately, failures; these bound the expensive part itself.

use std::time::Duration;

use crate::error::{Code, codes};

/// One quota: at most `uses` per `period` per API key.
#[derive(Clone, Copy, Debug)]
pub struct KeyQuota {
    /// What it counts (part of its item's key).
    pub kind: &'static str,
    pub uses: u32,
    pub period: Duration,
    /// The 429's code.
    pub code: &'static Code,
    pub message: &'static str,
}

const HOUR: Duration = Duration::from_secs(3600);

/// Calls to the paid geocoding provider (`POST /api/v1/geocode`), found or
/// not.
pub const GEOCODING: KeyQuota = KeyQuota {
    kind: "geocode",
    uses: 200,
    period: HOUR,
    code: &codes::GEOCODE_RATE_LIMITED,
    message: "this key made 200 geocoding requests this hour",
};

/// Password hashes (argon2id, 19 MiB and tens of milliseconds each):
/// `POST /api/v1/members` with a password, created or not.
pub const PASSWORD_HASHING: KeyQuota = KeyQuota {
    kind: "password",
    uses: 100,
    period: HOUR,
    code: &codes::PASSWORD_RATE_LIMITED,
    message: "this key created 100 members with a password this hour",
};

/// Pings of one receiver (`POST /api/v1/webhooks/{webhookId}/ping`) by
/// one organization, whichever key and webhook: each is a signed POST to
/// the receiver, with its retries. The receiver is the webhook's URL less
/// its query (`webhook::receiver`), so re-registering it gives no more.
pub const WEBHOOK_PINGS: KeyQuota = KeyQuota {
    kind: "ping",
    uses: 10,
    period: HOUR,
    code: &codes::RATE_LIMITED,
    message: "this receiver was pinged 10 times this hour",
};

/// Recoveries (`POST /api/v1/webhooks/{webhookId}/recover`) of one
/// receiver by one organization, whichever key and webhook: each may queue
/// 100 signed POSTs to the receiver (each delivery at most once an hour,
/// `webhooks::RECOVERY_COOLDOWN`).
pub const WEBHOOK_RECOVERIES: KeyQuota = KeyQuota {
    kind: "recover",
    uses: 10,
    period: HOUR,
    code: &codes::RATE_LIMITED,
    message: "this receiver was recovered 10 times this hour",
};
