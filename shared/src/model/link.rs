//! A stored file as answers show it: its path and a signed, time-limited
//! link to it (signed by `crate::links`).

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// `{storage_path, url, url_expires_at}` as responses show a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignedLink {
    pub storage_path: String,
    pub url: String,
    pub url_expires_at: Timestamp,
}
