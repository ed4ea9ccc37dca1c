//! The operator CLI's commands that tests reach too (`main.rs` is the CLI).

pub mod webhooks;
