//! The contract's records, one file a resource group: organizations,
//! members, sites, receiving points and factories (`org_records`, with
//! `archivable`), trucks, grants, surplus loads with their daily rollups
//! and reports, places and their geo entries, webhooks and deliveries, receivers'
//! health and organizations' shares of the dispatcher.

pub mod archivable;
pub mod deliveries;
pub mod dispatch_shares;
pub mod geo;
pub mod grants;
pub mod members;
pub mod org_records;
pub mod orgs;
pub mod places;
pub mod receivers;
pub mod reports;
pub mod rollups;
pub mod surpluses;
pub mod trucks;
pub mod webhooks;
