//! Integration tests: every router, through HTTP as a client sees it,
//! against the local engines (DynamoDB Local; moto for S3, SQS and Secrets
//! Manager) with the real SDK clients.

mod audit;
mod auth;
mod billing;
mod conformance;
mod contract;
mod deliveries;
mod description_rules;
mod exactly_once;
mod factories;
mod faults;
mod function_list;
mod fuzz;
mod geocode;
mod grants;
mod health;
mod idempotency;
mod isolation;
mod key_items;
mod layers;
mod members;
mod model;
mod operator_authority;
mod org_lifecycle;
mod orgs;
mod partial_writes;
mod places;
mod rate_limit;
mod receiving_points;
mod report_rows;
mod reports;
mod reused_keys;
mod rollups;
mod round_trips;
mod scopes;
mod side_effects;
mod site_people;
mod sites;
mod support;
mod surplus_pages;
mod surpluses;
mod trucks;
mod warm;
mod waybills;
mod webhooks;
