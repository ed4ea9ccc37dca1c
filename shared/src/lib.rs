//! The platform every function links: errors, authentication, rate limit,
//! HTTP extractors and envelopes, the store, the models, configuration and
//! telemetry.

pub mod auth;
pub mod aws;
pub mod aws_calls;
pub mod clock;
pub mod config;
pub mod cursor;
pub mod deployment_key;
pub mod endpoints;
pub mod error;
pub mod files;
pub mod gate;
pub mod http;
pub mod keyring;
pub mod links;
pub mod metrics;
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
pub mod tracker;
pub mod webhooks;

pub use error::{ApiError, ApiResult};

/// Every binary that links the platform allocates with mimalloc: decoding a
/// page of items is thousands of small allocations and frees, which it
/// serves about a third faster than glibc's malloc (docs/decisions/runtime.md,
/// "Runtime").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
