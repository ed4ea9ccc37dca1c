//! What one request learns on its way through (its organization, its
//! rate-limit decision, its DynamoDB calls), shared between the extractors
//! and the middleware that logs it and writes the headers.

use std::sync::{Arc, Mutex, OnceLock};

use uuid::Uuid;

use crate::ratelimit::RateLimitDecision;
use crate::store::calls::CallCounter;

#[derive(Debug, Default)]
pub struct RequestScope {
    pub calls: CallCounter,
    org_id: OnceLock<Uuid>,
    rate: Mutex<Option<RateLimitDecision>>,
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
}
