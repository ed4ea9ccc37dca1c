//! GET /api/v1/billing/additive-usage: which loads are billed, to whom, in
//! which month, each rounded up to a whole m³.

use api_tests::{Reply, TestOrg, org, run, send};
use http::Method;
use serde_json::{Value, json};
use shared::model::surplus::{BilledTo, SurplusRecord, SurplusStatus};

use crate::reports::{import, load_at};
use crate::sites::new_site;
use crate::surpluses::{create_load, give_waybill, patch};
use crate::trucks::{new_truck, plate};

async fn usage(t: &TestOrg, query: &str) -> Reply {
    let reply = send(
        t,
        Method::GET,
        &format!("/api/v1/billing/additive-usage?{query}"),
        None,
    )
    .await;
    reply.expect(200, None);
    reply
}

/// (month, loads, m³) of each month.
fn months(reply: &Reply) -> Vec<(String, u64, u64)> {
    reply.body["data"]["months"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["month"].as_str().unwrap().to_owned(),
                m["loads_count"].as_u64().unwrap(),
                m["additive_usage_m3"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn additive(mut load: SurplusRecord, billed_to: BilledTo) -> SurplusRecord {
    load.additive = true;
    load.additive_billed_to = Some(billed_to);
    load
}

#[test]
fn each_load_rounds_up_and_counts_in_the_month_of_delivery_else_creation() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Billing"})).await;
        use SurplusStatus::*;
        let origin = BilledTo::OriginSite;
        // Created 31 January, delivered 1 February: February.
        let crossing = additive(
            load_at(&t, &site, "2026-01-31T12:00:00.000Z", 1.1, Delivered),
            origin,
        );
        import(&[
            crossing,
            // Open loads: the month of creation.
            additive(
                load_at(&t, &site, "2026-01-05T00:00:00.000Z", 0.2, New),
                origin,
            ),
            additive(
                load_at(&t, &site, "2026-01-31T23:59:59.999Z", 2.0, InProgress),
                origin,
            ),
            // Rejected, or without an additive: never billed.
            additive(
                load_at(&t, &site, "2026-01-10T00:00:00.000Z", 5.0, Rejected),
                origin,
            ),
            load_at(&t, &site, "2026-01-10T00:00:00.000Z", 5.0, New),
            // Outside the window.
            additive(
                load_at(&t, &site, "2026-04-01T00:00:00.000Z", 3.0, New),
                origin,
            ),
        ])
        .await;
        let reply = usage(&t, "from=2026-01-01&to=2026-03-31").await;
        assert_eq!(
            months(&reply),
            [
                ("2026-01".to_owned(), 2, 3), // 0.2 -> 1, 2.0 -> 2
                ("2026-02".to_owned(), 1, 2), // 1.1 -> 2
                ("2026-03".to_owned(), 0, 0),
            ]
        );
        let data = &reply.body["data"];
        assert_eq!(data["total_loads_count"], 3);
        assert_eq!(data["total_additive_usage_m3"], 5);
        assert_eq!(
            data["period"],
            json!({"from": "2026-01-01", "to": "2026-03-31", "basis": "delivered_at, else created_at"})
        );
        // The window is on days: 1 February alone holds the delivery.
        let day = usage(&t, "from=2026-02-01&to=2026-02-01").await;
        assert_eq!(months(&day), [("2026-02".to_owned(), 1, 2)]);
    });
}

#[test]
fn truck_billing_goes_to_the_trucks_organization_and_nothing_else_shows() {
    run(async {
        let origin = org().await;
        let haulier = org().await;
        let site = new_site(&origin, json!({"name": "Origin"})).await;
        let truck = new_truck(&haulier, json!({"license": plate()})).await;
        send(
            &origin,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({"grantee_org_id": haulier.id()})),
        )
        .await
        .expect(201, None);
        let body = |billed_to: &str, truck: Option<&str>| -> Value {
            json!({"site_id": site, "volume_m3": 2.5, "additive": true,
                   "additive_billed_to": billed_to, "truck_id": truck})
        };
        for b in [
            body("truck", Some(&truck)),
            body("origin_site", Some(&truck)),
            body("truck", None),
        ] {
            create_load(&origin, b).await.expect(201, None);
        }
        let this_month = chrono::Utc::now().format("%Y-%m").to_string();
        let today = chrono::Utc::now().date_naive();
        let window = format!("from={today}&to={today}");
        assert_eq!(
            months(&usage(&haulier, &window).await),
            [(this_month.clone(), 1, 3)]
        );
        // The origin pays for its own choice and for the load without a truck.
        assert_eq!(months(&usage(&origin, &window).await), [(this_month, 2, 6)]);
        // The haulier sees nothing else of the origin's loads.
        let rows = send(&haulier, Method::GET, "/api/v1/reports/loads", None).await;
        assert_eq!(rows.body["meta"]["count"], 0);
    });
}

#[test]
fn a_rejection_or_an_edit_moves_the_bill_in_the_same_write() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Edits"})).await;
        let reply = create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1.5, "additive": true}),
        )
        .await;
        let id = reply.body["data"]["id"].as_str().unwrap().to_owned();
        let today = chrono::Utc::now().date_naive();
        let window = format!("from={today}&to={today}");
        let total = |r: &Reply| r.body["data"]["total_additive_usage_m3"].as_u64().unwrap();
        assert_eq!(total(&usage(&t, &window).await), 2);
        patch(&t, &id, json!({"volume_m3": 3.01}))
            .await
            .expect(200, None);
        assert_eq!(total(&usage(&t, &window).await), 4);
        patch(&t, &id, json!({"additive": false}))
            .await
            .expect(200, None);
        assert_eq!(total(&usage(&t, &window).await), 0);
        patch(&t, &id, json!({"additive": true}))
            .await
            .expect(200, None);
        give_waybill(&t, &id).await;
        patch(&t, &id, json!({"status": "delivered"}))
            .await
            .expect(200, None);
        assert_eq!(total(&usage(&t, &window).await), 4);
        let other = create_load(
            &t,
            json!({"site_id": site, "volume_m3": 9, "additive": true}),
        )
        .await;
        let other = other.body["data"]["id"].as_str().unwrap().to_owned();
        assert_eq!(total(&usage(&t, &window).await), 13);
        patch(&t, &other, json!({"status": "rejected"}))
            .await
            .expect(200, None);
        assert_eq!(total(&usage(&t, &window).await), 4);
        // Another organization is billed nothing of this.
        let stranger = org().await;
        assert_eq!(total(&usage(&stranger, &window).await), 0);
    });
}
