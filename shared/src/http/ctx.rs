//! `Ctx<S>`: the authenticated caller of a `/api/v1/*` route that needs
//! scope `S`. Extracting it takes the request through stages 2 and 3 of
//! its lifecycle (`lifecycle`): the key admitted and counted in one
//! round trip (401, 403, 429 in the contract's order), then its
//! `Idempotency-Key` claimed (or the first answer replayed). A read's own
//! record is then its second and last round trip; on an instance that
//! admitted the key lately, the read's query starts with the admission and
//! the layer awaits the admission before the answer leaves (one round
//! trip: `lifecycle`).

use std::marker::PhantomData;

use axum::extract::{FromRef, FromRequestParts};
use http::request::Parts;
use uuid::Uuid;

use super::idempotency::NotRun;
use super::lifecycle::Arrived;
use crate::auth::scope::RequiredScope;
use crate::error::ApiError;
use crate::state::AppState;
use crate::store::engine::keys;

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
        let arrived = Arrived::take(&mut parts.extensions)
            .ok_or_else(|| ApiError::internal("the request did not pass the API layer"))?;
        let admitted = arrived.admit::<S>(&state, &parts.headers).await?;
        let (org_id, key_id) = admitted.claim(&state).await?;
        Ok(Ctx {
            org_id,
            key_id,
            state,
            _scope: PhantomData,
        })
    }
}

impl<S> Ctx<S> {
    /// Runs `write` and answers what `render` makes of the value it
    /// returns; with an `Idempotency-Key`, that answer commits in the
    /// write's own transaction (`idempotency::commit`). Every write of a
    /// `POST` route goes through it.
    pub async fn commit<T, A, Fut>(
        &self,
        write: impl Future<Output = Result<T, ApiError>>,
        render: impl Fn(AppState, T) -> Fut + Send + Sync + 'static,
    ) -> Result<axum::response::Response, ApiError>
    where
        T: std::any::Any + Clone + Send + Sync,
        Fut: Future<Output = Result<A, ApiError>> + Send + 'static,
        A: axum::response::IntoResponse,
    {
        super::idempotency::commit(&self.state, write, render).await
    }

    /// Spends one use of `quota` for this request's key: 429 with the
    /// quota's code (and `Retry-After`) when the key has none left in the
    /// current window. Call it just before the work the quota bounds.
    pub async fn spend(&self, quota: &crate::model::quota::KeyQuota) -> Result<u32, ApiError> {
        self.spend_for(quota, self.key_id).await
    }

    /// Spends one use of `quota` of `subject` (a key, or what the request
    /// acts on: a webhook), as `spend` does.
    pub async fn spend_for(
        &self,
        quota: &crate::model::quota::KeyQuota,
        subject: uuid::Uuid,
    ) -> Result<u32, ApiError> {
        use crate::store::exactly_once::quotas::{Counted, WindowQuota};
        let counted = self
            .state
            .store
            .quotas()
            .count(
                &WindowQuota {
                    pk: keys::key_quota_pk(quota.kind, subject),
                    uses: quota.uses,
                    period: quota.period,
                },
                crate::model::now().unix_millis(),
            )
            .await?;
        match counted {
            Counted::Within { remaining } => Ok(remaining),
            Counted::Full { retry_after } => {
                Err(quota.code.retry_after(quota.message, retry_after))
            }
        }
    }
}
