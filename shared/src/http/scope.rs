//! What one request learns on its way through (its organization, its
//! rate-limit decision, its DynamoDB calls), shared between the extractors
//! and the middleware that logs it and writes the headers.

use std::sync::{Arc, Mutex, OnceLock};

use uuid::Uuid;

use crate::ratelimit::{RateLimitDecision, Reservation};
use crate::store::calls::CallCounter;

#[derive(Debug, Default)]
pub struct RequestScope {
    pub calls: CallCounter,
    org_id: OnceLock<Uuid>,
    rate: Mutex<Option<RateLimitDecision>>,
    reservation: Mutex<Option<Reservation>>,
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
        *self.rate.lock().unwrap_or_else(|e| e.into_inner()) = Some(decision);
    }

    pub fn rate(&self) -> Option<RateLimitDecision> {
        *self.rate.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The budget slot this request holds, given back unless it succeeds.
    pub fn reserve(&self, reservation: Reservation) {
        *self.reservation.lock().unwrap_or_else(|e| e.into_inner()) = Some(reservation);
    }

    pub fn take_reservation(&self) -> Option<Reservation> {
        self.reservation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
