//! What one request learns on its way through (its organization, its
//! rate-limit decision, its DynamoDB calls), shared between the extractors
//! and the middleware that logs it and writes the headers.

use std::sync::{Arc, Mutex, OnceLock};

use uuid::Uuid;

use super::idempotency::Presented;
use crate::ratelimit::{RateLimitDecision, Reservation};
use crate::store::calls::CallCounter;
use crate::store::idempotency::Claim;

#[derive(Debug, Default)]
pub struct RequestScope {
    pub calls: CallCounter,
    org_id: OnceLock<Uuid>,
    rate: Mutex<Option<RateLimitDecision>>,
    reservation: Mutex<Option<Reservation>>,
    idempotency: Mutex<Option<Presented>>,
    claim: Mutex<Option<Claim>>,
}

pub type SharedScope = Arc<RequestScope>;

impl RequestScope {
    pub fn set_org(&self, org: Uuid) {
        let _ = self.org_id.set(org);
    }

    pub fn org(&self) -> Option<Uuid> {
        self.org_id.get().copied()
    }

    pub fn set_rate(&self, decision: RateLimitDecision) {
        *lock(&self.rate) = Some(decision);
    }

    pub fn rate(&self) -> Option<RateLimitDecision> {
        *lock(&self.rate)
    }

    /// The budget slot this request holds, given back unless it succeeds.
    pub fn reserve(&self, reservation: Reservation) {
        *lock(&self.reservation) = Some(reservation);
    }

    pub fn take_reservation(&self) -> Option<Reservation> {
        lock(&self.reservation).take()
    }

    /// The `Idempotency-Key` the request came with (see `idempotency`).
    pub fn present_idempotency(&self, presented: Presented) {
        *lock(&self.idempotency) = Some(presented);
    }

    pub fn take_idempotency(&self) -> Option<Presented> {
        lock(&self.idempotency).take()
    }

    /// The claim this request holds on its `Idempotency-Key`, settled when
    /// it is answered.
    pub fn hold_claim(&self, claim: Claim) {
        *lock(&self.claim) = Some(claim);
    }

    pub fn take_claim(&self) -> Option<Claim> {
        lock(&self.claim).take()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
