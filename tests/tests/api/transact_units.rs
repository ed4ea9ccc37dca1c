//! What a transaction is charged, as a request reports it (`WriteUnits`,
//! what `make cost` prices): 2 write units for each item it writes or
//! checks and 2 for each index entry it writes, an entry that moves
//! being two (a delete and a put). DynamoDB Local reports less; the call
//! counter raises its report part by part (`transact_units.rs`).

use api_tests::{Reply, org, run};
use serde_json::json;

use crate::sites::new_site;
use crate::surpluses::{create_load, give_waybill, patch};

/// A request's write units without the rate limit's counting write (one
/// unit, on the requests that count their key's slots).
fn transaction_units(reply: &Reply) -> f64 {
    let units = reply.units.write;
    assert!(units.fract() == 0.0, "whole units: {units}");
    if units % 2.0 == 1.0 {
        units - 1.0
    } else {
        units
    }
}

#[test]
fn a_delivery_is_charged_its_load_entry_leaving_one_list_for_another() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Charged"})).await;
        let created = create_load(&t, json!({"site_id": site, "volume_m3": 2})).await;
        created.expect(201, None);
        // The load, its two list entries and its site's check.
        assert_eq!(transaction_units(&created), 8.0);
        let id = created.body["data"]["id"].as_str().unwrap().to_owned();
        give_waybill(&t, &id).await;

        let delivered = patch(&t, &id, json!({"status": "delivered"})).await;
        delivered.expect(200, None);
        // The table: the load, its log entry, the outbox record and the
        // day's rollup (8). gsi1: the load's entry leaves the open list
        // and enters the delivered one (4), the outbox record's (2).
        // gsi2: the load's entry in its site's list, rewritten (2).
        assert_eq!(transaction_units(&delivered), 16.0);
    });
}
