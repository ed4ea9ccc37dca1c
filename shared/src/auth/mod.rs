//! Authentication: the key format and how a request presents a key, and
//! the scopes. The extractor that runs the checks is `http::ctx::Ctx`.

pub mod key;
pub mod password;
pub mod scope;

pub use scope::{ReadData, ReadOrgs, RequiredScope, Scope, WriteData, WriteOrgsSelf};
