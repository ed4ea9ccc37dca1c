//! The platform every function links: errors, authentication, rate limit,
//! HTTP extractors and envelopes, the store, the models, configuration and
//! telemetry.

pub mod auth;
pub mod config;
pub mod cursor;
pub mod deployment_key;
pub mod error;
pub mod files;
pub mod http;
pub mod links;
pub mod model;
pub mod net;
pub mod outbound;
pub mod queue;
pub mod ratelimit;
pub mod sealed;
pub mod secrets;
pub mod state;
pub mod store;
pub mod telemetry;

pub use error::{ApiError, ApiResult};
pub use state::AppState;
