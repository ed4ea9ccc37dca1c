//! The table the store reads and writes, and how searches read it.

use super::ConfigError;
use super::vars::Vars;

/// Local development default; `make run` and the tests use it as it is.
pub const DEFAULT_TABLE: &str = "integration-api";

/// The table and how searches read it (`state`: the `Store`).
#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub table: String,
    /// Copies of the `PUBLIC` cells a nearby search may read
    /// (`PUBLIC_CELL_COPIES`, 1 to 8, 1 by default): raised once
    /// `admin reindex-places` filled them (docs/operations.md).
    pub public_cell_copies: u32,
}

impl StoreConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(StoreConfig {
            table: vars
                .get("TABLE_NAME")
                .unwrap_or_else(|| DEFAULT_TABLE.into()),
            public_cell_copies: u32::try_from(vars.number("PUBLIC_CELL_COPIES", 1)?)
                .ok()
                .filter(|n| *n <= crate::model::geo::PUBLIC_COPIES)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "PUBLIC_CELL_COPIES must be 1 to {}",
                        crate::model::geo::PUBLIC_COPIES
                    ))
                })?,
        })
    }
}
