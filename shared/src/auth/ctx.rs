//! `Ctx<S>`: the authenticated caller of a `/api/v1/*` route that needs
//! scope `S`. Extracting it runs the contract's order: key (401), scope
//! (403 `insufficient_scope`), entitlement (403 `feature_not_enabled`),
//! deployment switch (403 `public_api_disabled`), then the rate limit (429).

use std::marker::PhantomData;
use std::time::SystemTime;

use axum::extract::{FromRef, FromRequestParts};
use http::request::Parts;
use uuid::Uuid;

use super::key;
use super::scope::{self, Scope};
use crate::error::ApiError;
use crate::http::scope::SharedScope;
use crate::ratelimit;
use crate::state::AppState;

/// A scope a route requires.
pub trait RequiredScope {
    const SCOPE: Scope;
}

macro_rules! scopes {
    ($($name:ident => $scope:expr;)*) => {
        $(
            pub struct $name;
            impl RequiredScope for $name {
                const SCOPE: Scope = $scope;
            }
        )*
    };
}

scopes! {
    ReadOrgs => Scope::ReadOrgs;
    ReadData => Scope::ReadData;
    WriteOrgsSelf => Scope::WriteOrgsSelf;
    WriteData => Scope::WriteData;
}

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
        if !scope::allows(&record.scopes, S::SCOPE) {
            return Err(ApiError::InsufficientScope(S::SCOPE.as_str()));
        }
        if !record.public_api {
            return Err(ApiError::FeatureNotEnabled);
        }
        if !config.public_api_enabled {
            return Err(ApiError::PublicApiDisabled);
        }
        let request_scope = parts.extensions.get::<SharedScope>().cloned();
        if let Some(s) = &request_scope {
            s.set_org(record.org_id);
        }
        let now = SystemTime::now();
        let decision =
            ratelimit::check(&state.store, &config.rate_limit, record.key_id, now).await?;
        if let Some(s) = &request_scope {
            s.set_rate(decision);
        }
        if !decision.allowed {
            return Err(ApiError::RateLimited {
                retry_after: decision.retry_after(now),
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
