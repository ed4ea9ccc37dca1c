//! Authentication: the key format and how a request presents a key, the
//! stored key and the decision over it, and the scopes. The extractor that
//! runs the checks is `http::ctx::Ctx`.

pub mod decision;
pub mod key;
pub mod memory;
pub mod password;
pub mod scope;

pub use scope::{ReadData, ReadOrgs, ReadOwnOrg, RequiredScope, Scope, WriteData, WriteOrgsSelf};
