//! `Ctx<S>`: the authenticated caller of a `/api/v1/*` route that needs
//! scope `S`. Extracting it runs the contract's order: the key (401), the
//! key's organization (403 `org_inactive`), scope (403
//! `insufficient_scope`), entitlement (403 `feature_not_enabled`),
//! deployment switch (403 `public_api_disabled`), then the rate limit (429).
//! An accepted key's refusals show its true remaining budget; an admitted
//! request holds a budget slot that the response layer gives back unless
//! the answer is a success.

use std::marker::PhantomData;
use std::time::SystemTime;

use axum::extract::{FromRef, FromRequestParts};
use http::request::Parts;
use uuid::Uuid;

use super::scope::SharedScope;
use crate::auth::key;
use crate::auth::scope::{self, RequiredScope};
use crate::error::ApiError;
use crate::ratelimit;
use crate::state::AppState;
use crate::store::api_keys::ApiKeyRecord;

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

/// Why an accepted key may not use route `S` (403), if it may not.
fn refusal<S: RequiredScope>(record: &ApiKeyRecord, state: &AppState) -> Option<ApiError> {
    if !record.org_active {
        Some(ApiError::OrgInactive)
    } else if !scope::allows(&record.scopes, S::SCOPE) {
        Some(ApiError::InsufficientScope(S::SCOPE.as_str()))
    } else if !record.public_api {
        Some(ApiError::FeatureNotEnabled)
    } else if !state.config.public_api_enabled {
        Some(ApiError::PublicApiDisabled)
    } else {
        None
    }
}

impl<S: RequiredScope, St: Send + Sync> FromRequestParts<St> for Ctx<S>
where
    AppState: FromRef<St>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &St) -> Result<Self, ApiError> {
        let state = AppState::from_ref(state);
        let config = &state.config;
        let hash = key::presented(&parts.headers, &config.short_name.key_prefix())?;
        let record = state
            .store
            .api_keys()
            .lookup(&hash)
            .await?
            .ok_or(ApiError::InvalidApiKey)?;
        let stored = key::KeyHash::from_hex(&record.key_hash).ok_or(ApiError::InvalidApiKey)?;
        if !stored.matches(&hash) {
            return Err(ApiError::InvalidApiKey);
        }
        if record.revoked_at.is_some() {
            return Err(ApiError::ApiKeyRevoked);
        }
        if record
            .expires_at
            .is_some_and(|at| at <= crate::model::now())
        {
            return Err(ApiError::ApiKeyExpired);
        }
        // The key is accepted: from here on every answer shows its budget.
        let request_scope = parts.extensions.get::<SharedScope>().cloned();
        if let Some(s) = &request_scope {
            s.set_org(record.org_id);
        }
        let now = SystemTime::now();
        if let Some(refused) = refusal::<S>(&record, &state) {
            let budget =
                ratelimit::peek(&state.store, &config.rate_limit, record.key_id, now).await?;
            if let Some(s) = &request_scope {
                s.set_rate(budget);
            }
            return Err(refused);
        }
        let (decision, reservation) =
            ratelimit::admit(&state.store, &config.rate_limit, record.key_id, now).await?;
        if let Some(s) = &request_scope {
            s.set_rate(decision);
            if let Some(reservation) = reservation {
                s.reserve(reservation);
            }
        }
        if !decision.allowed {
            return Err(ApiError::RateLimited {
                retry_after: decision.retry_after,
            });
        }
        Ok(Ctx {
            org_id: record.org_id,
            key_id: record.key_id,
            state,
            _scope: PhantomData,
        })
    }
}
