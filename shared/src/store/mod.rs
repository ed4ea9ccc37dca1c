//! DynamoDB access. DynamoDB types stay inside this module: functions call
//! `store.orgs().get(id)`, never the SDK. Every key shape is in
//! `engine::keys`. Four parts, each using only those before it:
//!
//! * `engine`: the table's mechanics (the handle, items and their keys,
//!   batches, queries, the call counter and its trace);
//! * `exactly_once`: what makes a change happen once (`Idempotency-Key`
//!   claims and kept answers, the transaction that carries them, staged
//!   files, the outbox and the hourly indexes their sweepers read, exact
//!   quotas, sealed values);
//! * `records`: the contract's records, one file a resource group;
//! * `operators`: what only operators' commands write (API keys, the audit
//!   trail, bulk import, an organization's deactivation).

pub mod engine;
pub mod exactly_once;
pub mod operators;
pub mod records;

pub use engine::client::Store;

use exactly_once::{idempotency, outbox, quotas, sealed_values, staged};
use operators::{api_keys, audit};
use records::{
    deliveries, grants, members, org_records, orgs, places, reports, rollups, surpluses, trucks,
    webhooks,
};

/// Each part of the store, by the resource it serves.
impl Store {
    pub fn orgs(&self) -> orgs::Orgs<'_> {
        orgs::Orgs(self)
    }

    pub fn api_keys(&self) -> api_keys::ApiKeys<'_> {
        api_keys::ApiKeys(self)
    }

    /// The values kept sealed (an operator rotating the seal key).
    pub fn sealed_values(&self) -> sealed_values::SealedValues<'_> {
        sealed_values::SealedValues(self)
    }

    pub fn members(&self) -> members::Members<'_> {
        members::Members(self)
    }

    pub fn sites(&self) -> org_records::Records<'_, crate::model::site::SiteRecord> {
        org_records::Records::new(self)
    }

    pub fn factories(&self) -> org_records::Records<'_, crate::model::factory::FactoryRecord> {
        org_records::Records::new(self)
    }

    pub fn receiving_points(
        &self,
    ) -> org_records::Records<'_, crate::model::receiving_point::ReceivingPointRecord> {
        org_records::Records::new(self)
    }

    /// Records of kind `R` in organization partitions.
    pub fn records<R: org_records::Record>(&self) -> org_records::Records<'_, R> {
        org_records::Records::new(self)
    }

    pub fn surpluses(&self) -> surpluses::Surpluses<'_> {
        surpluses::Surpluses(self)
    }

    pub fn reports(&self) -> reports::Reports<'_> {
        reports::Reports(self)
    }

    pub fn rollups(&self) -> rollups::Rollups<'_> {
        rollups::Rollups(self)
    }

    pub fn staged(&self) -> staged::Staged<'_> {
        staged::Staged(self)
    }

    pub fn outbox(&self) -> outbox::Outbox<'_> {
        outbox::Outbox(self)
    }

    pub fn deliveries(&self) -> deliveries::Deliveries<'_> {
        deliveries::Deliveries(self)
    }

    pub fn webhooks(&self) -> webhooks::Webhooks<'_> {
        webhooks::Webhooks(self)
    }

    pub fn receivers(&self) -> records::receivers::Receivers<'_> {
        records::receivers::Receivers(self)
    }

    pub fn dispatch_shares(&self) -> records::dispatch_shares::DispatchShares<'_> {
        records::dispatch_shares::DispatchShares(self)
    }

    pub fn places(&self) -> places::Places<'_> {
        places::Places(self)
    }

    pub fn quotas(&self) -> quotas::Quotas<'_> {
        quotas::Quotas(self)
    }

    pub fn trucks(&self) -> trucks::Trucks<'_> {
        trucks::Trucks(self)
    }

    pub fn grants(&self) -> grants::Grants<'_> {
        grants::Grants(self)
    }

    pub fn idempotency(&self) -> idempotency::Idempotency<'_> {
        idempotency::Idempotency(self)
    }

    pub fn audit(&self) -> audit::Audit<'_> {
        audit::Audit(self)
    }
}
