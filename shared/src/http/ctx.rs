//! `Ctx<S>`: the authenticated caller of a `/api/v1/*` route that needs
//! scope `S`. Extracting it runs the contract's order: the key (401), the
//! key's organization (403 `org_inactive`), scope (403
//! `insufficient_scope`), entitlement (403 `feature_not_enabled`),
//! deployment switch (403 `public_api_disabled`), then the rate limit (429),
//! in one DynamoDB round trip (`ApiKeys::admit`), so a read's own record is
//! its second and last. A valid key's refusals show its true remaining
//! budget; an admitted request holds a budget slot that the response layer
//! gives back unless the answer is a success. An admitted POST with an
//! `Idempotency-Key` then claims it (`idempotency::claim`): it runs, or
//! gets the first answer to the same request again.

use std::marker::PhantomData;
use std::time::SystemTime;

use axum::extract::{FromRef, FromRequestParts};
use http::request::Parts;
use uuid::Uuid;

use super::idempotency::{self, NotRun};
use super::scope::SharedScope;
use crate::auth::key;
use crate::auth::scope::RequiredScope;
use crate::error::ApiError;
use crate::ratelimit;
use crate::state::AppState;

pub struct Ctx<S> {
    /// The key's organization.
    pub org_id: Uuid,
    pub key_id: Uuid,
    pub state: AppState,
    _scope: PhantomData<S>,
}

impl<S> std::ops::Deref for Ctx<S> {
    type Target = AppState;
    fn deref(&self) -> &AppState {
        &self.state
    }
}

impl<S: RequiredScope, St: Send + Sync> FromRequestParts<St> for Ctx<S>
where
    AppState: FromRef<St>,
{
    type Rejection = NotRun;

    async fn from_request_parts(parts: &mut Parts, state: &St) -> Result<Self, NotRun> {
        let state = AppState::from_ref(state);
        let config = &state.config;
        let hash = key::presented(&parts.headers, &config.short_name.key_prefix())?;
        let (now, at) = (SystemTime::now(), crate::model::now());
        let limits = &config.rate_limit;
        let window = ratelimit::Window::at(now, limits.window);
        // One round trip: the write that authenticates, authorizes and
        // counts the request at once; a plain read where nothing may count.
        let keys = state.store.api_keys();
        let found = if limits.enabled && config.public_api_enabled {
            let failures = limits.failure_limit();
            keys.admit(&hash, S::SCOPE, window.index, limits.limit, failures, at)
                .await?
        } else {
            keys.read(&hash, window.index).await?
        };
        let record = found.record.as_ref().ok_or(ApiError::InvalidApiKey)?;
        let stored = key::KeyHash::from_hex(&record.key_hash).ok_or(ApiError::InvalidApiKey)?;
        if !stored.matches(&hash) {
            return Err(ApiError::InvalidApiKey.into());
        }
        if let Some(rejected) = record.rejection(at) {
            return Err(rejected.into());
        }
        // The key is valid: from here on every answer shows its budget.
        let request_scope = parts.extensions.get::<SharedScope>().cloned();
        if let Some(s) = &request_scope {
            s.set_org(record.org_id);
        }
        if let Some(refused) = record.refusal(S::SCOPE, config.public_api_enabled) {
            if let Some(s) = &request_scope {
                s.set_rate(ratelimit::standing(limits, window, &found));
            }
            return Err(refused.into());
        }
        let (decision, reservation) =
            ratelimit::settle(&state.store, limits, hash, window, &found).await?;
        if let Some(s) = &request_scope {
            s.set_rate(decision);
            if let Some(reservation) = reservation {
                s.reserve(reservation);
            }
        }
        if decision.failures {
            return Err(ApiError::QuotaExceeded {
                code: "rate_limited",
                message: "this key made too many failed requests in this minute",
                retry_after: decision.retry_after,
            }
            .into());
        }
        if !decision.allowed {
            return Err(ApiError::RateLimited {
                retry_after: decision.retry_after,
            }
            .into());
        }
        if let Some(s) = &request_scope {
            idempotency::claim(&state.store, &state.sealer, s, record.key_id).await?;
        }
        Ok(Ctx {
            org_id: record.org_id,
            key_id: record.key_id,
            state,
            _scope: PhantomData,
        })
    }
}

impl<S> Ctx<S> {
    /// Spends one use of `quota` for this request's key: 429 with the
    /// quota's code (and `Retry-After`) when the key has none left in the
    /// current window. Call it just before the work the quota bounds.
    pub async fn spend(&self, quota: &crate::model::quota::KeyQuota) -> Result<u32, ApiError> {
        use crate::store::quotas::{Counted, WindowQuota};
        let counted = self
            .state
            .store
            .quotas()
            .count(
                &WindowQuota {
                    pk: crate::store::keys::key_quota_pk(quota.kind, self.key_id),
                    uses: quota.uses,
                    period: quota.period,
                },
                crate::model::now().unix_millis(),
            )
            .await?;
        match counted {
            Counted::Within { remaining } => Ok(remaining),
            Counted::Full { retry_after } => Err(ApiError::QuotaExceeded {
                code: quota.code,
                message: quota.message,
                retry_after,
            }),
        }
    }
}
