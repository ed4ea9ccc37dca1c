//! What only operators' commands write: API keys and their counters, the
//! audit trail, bulk import, and an organization's deactivation.

pub mod api_keys;
pub mod audit;
pub mod deactivation;
pub mod import;
