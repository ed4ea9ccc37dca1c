//! What makes a change happen once: `Idempotency-Key` claims and the
//! answers kept for them, the transaction that carries a kept answer with
//! the change, files staged until their record commits, the outbox of
//! events, the hourly indexes the sweepers read, exact quotas and values
//! kept sealed.

pub(crate) mod hourly;
pub mod idempotency;
pub mod outbox;
pub mod outcome;
pub mod quotas;
pub mod sealed_values;
pub mod staged;
pub mod tx;
