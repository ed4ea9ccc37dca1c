//! The issue tracker support tickets open issues in (GitHub Issues,
//! `github`), and the undoing of the issues it holds twice for one
//! request (`duplicates`): used by the support function, the
//! dispatcher's schedule and the operators' CLI.

pub mod duplicates;
pub mod github;
