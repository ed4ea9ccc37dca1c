//! Resource records as the contract shows them (snake_case JSON), and the
//! validation of their inputs.

pub mod archive;
pub mod delivery;
pub mod factory;
pub mod geo;
pub mod geocode;
pub mod grant;
pub mod id;
pub mod integer;
pub mod link;
pub mod member;
pub mod open_hours;
pub mod org;
pub mod patch;
pub mod place;
pub mod quota;
pub mod receiver;
pub mod receiving_point;
pub mod report;
pub mod site;
pub mod support;
pub mod surplus;
pub mod time;
pub mod truck;
pub mod validate;
pub mod volume;
pub mod webhook;

pub use time::Timestamp;

/// Current time at millisecond precision (`2026-11-21T05:00:00.123Z`).
pub fn now() -> Timestamp {
    Timestamp::now()
}
