//! The operator CLI (`main.rs` parses and prints): its commands, their
//! audit trail, webhooks as a superadmin manages them, and the rotation of
//! the deployment's keys.

pub mod audit;
pub mod cli;
pub mod files;
pub mod identity;
pub mod keys;
pub mod reseal;
pub mod seed;
pub mod tickets;
pub mod webhooks;
