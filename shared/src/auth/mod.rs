//! Authentication: key format and lookup, scopes, the `Ctx` extractor.

pub mod ctx;
pub mod key;
pub mod scope;

pub use ctx::{Ctx, ReadData, ReadOrgs, RequiredScope, WriteData, WriteOrgsSelf};
pub use scope::Scope;
