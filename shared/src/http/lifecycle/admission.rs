//! Stage 2's admission: the key presented, read and counted in one round
//! trip (or beside a warm request's handler, `beside`), judged in the
//! contract's order (401, 403, 429) and remembered for the key's next
//! request.

use http::HeaderMap;
use tokio::task::JoinHandle;
use tracing::Instrument;
use uuid::Uuid;

use crate::auth::key::{self, KeyHash};
use crate::auth::memory::Recalled;
use crate::auth::scope::RequiredScope;
use crate::error::ApiError;
use crate::error::codes;
use crate::gate::WriteGate;
use crate::ratelimit::{self, RateLimitDecision, Window};
use crate::state::AppState;
use crate::store::engine::calls::CallCounter;
use crate::store::operators::api_keys::Limits;

use super::Outcome;

/// Why admission refused, with what the answer shows, and the key's
/// organization and id when the key was found (for the request's line,
/// never the answer).
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) error: ApiError,
    pub(super) rate: Option<RateLimitDecision>,
    pub(super) org: Option<Uuid>,
    pub(super) key: Option<Uuid>,
}

impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Self {
        Refusal {
            error,
            rate: None,
            org: None,
            key: None,
        }
    }
}

impl Refusal {
    /// A refusal of the key `record` holds.
    pub(super) fn of(
        error: ApiError,
        rate: Option<RateLimitDecision>,
        record: &crate::auth::decision::ApiKeyRecord,
    ) -> Self {
        Refusal {
            error,
            rate,
            org: Some(record.org_id),
            key: Some(record.key_id),
        }
    }
}

/// The key `headers` present (401 when none, or a malformed one).
pub(super) fn presented(state: &AppState, headers: &HeaderMap) -> Result<KeyHash, Refusal> {
    Ok(key::presented(
        headers,
        &state.config.http.short_name.key_prefix(),
    )?)
}

/// The key's organization, when this instance admitted the key lately and
/// the next admission will most likely let a request that needs `S` in.
pub(super) fn recall<S: RequiredScope>(state: &AppState, hash: &KeyHash) -> Option<Recalled> {
    let config = &state.config;
    if !config.http.warm_requests {
        return None;
    }
    state.key_memory.recall(
        hash,
        S::SCOPE,
        config.http.public_api_enabled,
        crate::model::now(),
    )
}

/// A warm request's admission, in a task of its own (with the request's
/// call counter and span), so that the handler's reads go out at the same
/// time. It holds the request's writes until it ends, and lets them go
/// only if it admits the request for `remembered`, the organization the
/// handler runs for.
pub(super) fn beside<S: RequiredScope>(
    state: &AppState,
    hash: KeyHash,
    remembered: Uuid,
) -> JoinHandle<Result<Outcome, Refusal>> {
    let state = state.clone();
    let writes = WriteGate::hold();
    let admission = async move {
        let outcome = Box::pin(admission::<S>(&state, hash)).await;
        if let Some(writes) = writes {
            writes.decide(matches!(&outcome, Ok((org, ..)) if *org == remembered));
        }
        outcome
    }
    .instrument(tracing::Span::current());
    let admission = crate::clock::carried(admission);
    // The admission is what decides the gate: it runs outside it.
    #[allow(clippy::disallowed_methods)]
    match CallCounter::current() {
        Some(counter) => tokio::spawn(async move { counter.scope(admission).await }),
        None => tokio::spawn(admission),
    }
}

/// The contract's order: the key (401), its organization, scope,
/// entitlement and the deployment switch (403), then the budget (429),
/// from one round trip where the limit counts (a plain read elsewhere).
/// What it finds is remembered for the key's next request
/// (`auth::memory`), and a refused key forgotten.
pub(super) async fn admission<S: RequiredScope>(
    state: &AppState,
    hash: KeyHash,
) -> Result<Outcome, Refusal> {
    let memory = &state.key_memory;
    memory.forget(&hash);
    let needed = S::SCOPE;
    let config = &state.config;
    let (now, at) = (crate::clock::system_time(), crate::model::now());
    let limits = &config.http.rate_limit;
    let window = Window::at(now, limits.window);
    let keys = state.store.api_keys();
    let leases = &state.rate_leases;
    let counting = limits.enabled && config.http.public_api_enabled;
    // A slot this instance leased for the key in this window: the key is
    // read, not counted again (`ratelimit::lease`).
    let leased = counting.then(|| leases.take(&hash, window.index)).flatten();
    // Else it counts, and says so until what it leased is held.
    let flight = (counting && leased.is_none()).then(|| leases.counting(&hash));
    let found = if leased.is_some() {
        keys.read_leased(&hash, window.index).await
    } else if counting {
        let counted = Limits {
            window: window.index,
            cap: limits.limit,
            failure_cap: limits.failure_limit(),
            slots: leases.size(&hash, window.index, limits.lease),
        };
        Box::pin(keys.admit(&hash, needed, counted, at)).await
    } else {
        keys.read(&hash, window.index).await
    };
    let found = found.inspect_err(|_| leases.forget(&hash))?;
    // A refused key's lease goes (its slots stay spent).
    let refused = |error: ApiError| {
        leases.forget(&hash);
        error
    };
    let record = found
        .record
        .as_ref()
        .ok_or_else(|| refused(ApiError::InvalidApiKey))?;
    let stored =
        KeyHash::from_hex(&record.key_hash).ok_or_else(|| refused(ApiError::InvalidApiKey))?;
    if !stored.matches(&hash) {
        return Err(refused(ApiError::InvalidApiKey).into());
    }
    // The key is its record's: from here on its line names it.
    if let Some(rejected) = record.rejection(at) {
        return Err(Refusal::of(refused(rejected), None, record));
    }
    // The key is valid: from here on every answer shows its budget.
    if let Some(mut refused) = record.refusal(needed, config.http.public_api_enabled) {
        if !record.org_active && S::INACTIVE_ORG_IS_NOT_FOUND {
            refused = ApiError::org_not_found();
        }
        leases.forget(&hash);
        let rate = ratelimit::standing(limits, window, &found);
        return Err(Refusal::of(refused, Some(rate), record));
    }
    let (rate, slot) = match leased {
        Some(left) => ratelimit::leased(limits, hash, window, &found, left),
        None => {
            let (rate, slot, lease) = ratelimit::decide(&state.store, limits, hash, window, &found)
                .await
                .map_err(|error| Refusal::of(error, None, record))?;
            if slot.is_some() {
                leases.granted(&hash, window.index, lease + 1, rate.remaining);
            }
            // Refused by the window: a slot another request of this
            // instance leased, if one is left once they all have.
            let held = match flight {
                Some(flight) if !rate.allowed && !rate.failures => {
                    leases.take_after(flight, window.index).await
                }
                _ => None,
            };
            match held {
                Some(left) => ratelimit::leased(limits, hash, window, &found, left),
                None => (rate, slot),
            }
        }
    };
    // Remembered for the key's next request; a key at its limit is not
    // worth starting a read for.
    memory.remember(&hash, record, rate.allowed && rate.remaining > 0);
    if !rate.allowed {
        let error = if rate.failures {
            codes::RATE_LIMITED.retry_after(
                "this key made too many failed requests in this minute",
                rate.retry_after,
            )
        } else {
            ApiError::RateLimited {
                retry_after: rate.retry_after,
            }
        };
        return Err(Refusal::of(error, Some(rate), record));
    }
    Ok((record.org_id, record.key_id, rate, slot))
}
