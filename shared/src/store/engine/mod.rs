//! The table's mechanics: the store's handle and its calls, items and
//! their keys, the schema, batches, queries, DynamoDB's failures, and the
//! call counter with its trace. Nothing here knows a record.

pub mod batch;
pub mod calls;
pub mod client;
mod decode;
pub mod errors;
pub mod iam;
pub mod item;
pub mod keys;
pub mod query;
pub mod schema;
pub mod trace;
mod transact_units;
