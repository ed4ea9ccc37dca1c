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

async fn grant(granter: &TestOrg, grantee: &TestOrg, scope: &str) {
    let reply = send(
        granter,
        Method::POST,
        "/api/v1/org-access-grants",
        Some(json!({"grantee_org_id": grantee.id(), "scope": scope})),
    )
    .await;
    assert!(reply.status.is_success(), "{}", reply.text);
}

async fn billed_rows(t: &TestOrg, query: &str) -> Vec<Value> {
    let reply = send(
        t,
        Method::GET,
        &format!("/api/v1/billing/additive-usage/loads?{query}"),
        None,
    )
    .await;
    reply.expect(200, None);
    assert_eq!(
        reply.body["meta"]["count"].as_u64().unwrap() as usize,
        reply.body["data"].as_array().unwrap().len()
    );
    reply.body["data"].as_array().unwrap().clone()
}

/// Today's window, with the day far from its end: the test's loads are
/// made and read on one day (and in one month).
async fn today() -> String {
    let today = api_tests::a_day_clear_of_midnight().await;
    format!("from={today}&to={today}")
}

#[test]
fn truck_billing_goes_to_the_trucks_organization_which_sees_the_rows() {
    run(async {
        let day = api_tests::a_day_clear_of_midnight().await;
        let (window, this_month) = (
            format!("from={day}&to={day}"),
            day.format("%Y-%m").to_string(),
        );
        let origin = org().await;
        let haulier = org().await;
        let site = new_site(&origin, json!({"name": "Origin"})).await;
        let truck = new_truck(&haulier, json!({"license": plate()})).await;
        // The haulier's own act: it lets the origin operate with its fleet.
        grant(&haulier, &origin, "full").await;
        let body = |billed_to: &str, truck: Option<&str>| -> Value {
            json!({"site_id": site, "volume_m3": 2.5, "additive": true,
                   "additive_billed_to": billed_to, "truck_id": truck})
        };
        let mut ids = Vec::new();
        for b in [
            body("truck", Some(&truck)),
            body("origin_site", Some(&truck)),
            body("truck", None),
        ] {
            let reply = create_load(&origin, b).await;
            reply.expect(201, None);
            ids.push(reply.body["data"]["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(
            months(&usage(&haulier, &window).await),
            [(this_month.clone(), 1, 3)]
        );
        // The origin pays for its own choice and for the load without a truck.
        assert_eq!(months(&usage(&origin, &window).await), [(this_month, 2, 6)]);
        // The haulier sees the row it is billed for, and only what checking
        // the charge needs; nothing else of the origin's loads.
        let rows = billed_rows(&haulier, &window).await;
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row["surplus_id"], ids[0]);
        assert_eq!(row["org_id"], origin.id().to_string());
        assert_eq!(row["truck_id"], truck);
        assert_eq!(row["additive_billed_to"], "truck");
        assert_eq!(
            (row["volume_m3"].as_f64(), row["additive_usage_m3"].as_u64()),
            (Some(2.5), Some(3))
        );
        assert_eq!(row["status"], "new");
        assert!(row.get("site_id").is_none() && !row.to_string().contains(&site));
        let own: Vec<Value> = billed_rows(&origin, &window)
            .await
            .iter()
            .map(|r| r["surplus_id"].clone())
            .collect();
        assert_eq!(own, [json!(ids[1]), json!(ids[2])]);
        let report = send(&haulier, Method::GET, "/api/v1/reports/loads", None).await;
        assert_eq!(report.body["meta"]["count"], 0);
    });
}

#[test]
fn only_the_trucks_organizations_full_grant_lets_another_name_its_truck_or_bill_it() {
    run(async {
        let origin = org().await;
        let haulier = org().await;
        let site = new_site(&origin, json!({"name": "Origin"})).await;
        let truck = new_truck(&haulier, json!({"license": plate()})).await;
        let charge = json!({"site_id": site, "volume_m3": 100, "additive": true,
                            "additive_billed_to": "truck", "truck_id": truck});
        // What the review reproduced: the origin's own grants to the
        // haulier (read, then full) open nothing of the haulier's.
        grant(&origin, &haulier, "read").await;
        create_load(&origin, charge.clone())
            .await
            .expect(422, Some("truck_not_found"));
        grant(&origin, &haulier, "full").await;
        create_load(&origin, charge.clone())
            .await
            .expect(422, Some("truck_not_found"));
        // The haulier's read grant lets the origin read its sites, no more.
        grant(&haulier, &origin, "read").await;
        create_load(&origin, charge.clone())
            .await
            .expect(422, Some("truck_not_found"));
        let window = today().await;
        assert_eq!(
            usage(&haulier, &window).await.body["data"]["total_loads_count"],
            0
        );
        assert!(billed_rows(&haulier, &window).await.is_empty());

        // The haulier's full grant: the truck may be named and billed.
        grant(&haulier, &origin, "full").await;
        let created = create_load(&origin, charge.clone()).await;
        created.expect(201, None);
        let load = created.body["data"]["id"].as_str().unwrap().to_owned();
        let own_billed = create_load(
            &origin,
            json!({"site_id": site, "volume_m3": 4, "additive": true, "truck_id": truck}),
        )
        .await;
        let own_billed = own_billed.body["data"]["id"].as_str().unwrap().to_owned();
        let total = |r: &Reply| r.body["data"]["total_additive_usage_m3"].as_u64().unwrap();
        assert_eq!(total(&usage(&haulier, &window).await), 100);

        // The haulier revokes: no new charge, and none raised.
        let revoke = format!("/api/v1/org-access-grants/{}", origin.id());
        send(&haulier, Method::DELETE, &revoke, None)
            .await
            .expect(204, None);
        create_load(&origin, charge.clone())
            .await
            .expect(422, Some("truck_not_found"));
        patch(&origin, &load, json!({"volume_m3": 100}))
            .await
            .expect(200, None);
        patch(&origin, &own_billed, json!({"additive_billed_to": "truck"}))
            .await
            .expect(422, Some("truck_not_granted"));
        // A lower charge, a rejection or notes need no consent.
        patch(
            &origin,
            &load,
            json!({"volume_m3": 60, "notes": "corrected"}),
        )
        .await
        .expect(200, None);
        assert_eq!(total(&usage(&haulier, &window).await), 60);
        grant(&haulier, &origin, "read").await;
        patch(&origin, &load, json!({"volume_m3": 99}))
            .await
            .expect(422, Some("truck_not_granted"));
        assert_eq!(total(&usage(&haulier, &window).await), 60);
        assert_eq!(billed_rows(&haulier, &window).await.len(), 1);
        patch(&origin, &load, json!({"status": "rejected"}))
            .await
            .expect(200, None);
        assert_eq!(total(&usage(&haulier, &window).await), 0);
    });
}

#[test]
fn a_deactivated_organizations_trucks_cannot_be_named() {
    run(async {
        let origin = org().await;
        let haulier = org().await;
        let site = new_site(&origin, json!({"name": "Origin"})).await;
        let truck = new_truck(&haulier, json!({"license": plate()})).await;
        grant(&haulier, &origin, "full").await;
        api_tests::harness()
            .await
            .store()
            .orgs()
            .deactivate(haulier.id())
            .await
            .unwrap();
        create_load(
            &origin,
            json!({"site_id": site, "volume_m3": 1, "truck_id": truck}),
        )
        .await
        .expect(422, Some("truck_not_found"));
    });
}

#[test]
fn a_rejection_or_an_edit_moves_the_bill_in_the_same_write() {
    run(async {
        let window = today().await;
        let t = org().await;
        let site = new_site(&t, json!({"name": "Edits"})).await;
        let reply = create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1.5, "additive": true}),
        )
        .await;
        let id = reply.body["data"]["id"].as_str().unwrap().to_owned();
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
