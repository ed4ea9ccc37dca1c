//! The operator CLI (`main.rs` parses and prints): its commands, their
//! audit trail, and webhooks as a superadmin manages them.

pub mod audit;
pub mod cli;
pub mod identity;
pub mod webhooks;
