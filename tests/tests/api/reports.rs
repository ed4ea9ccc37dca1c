//! GET /api/v1/reports/summary: which loads count, the window's edges and
//! default, exact figures, that deliveries, volume edits and archives move
//! the figures at once, the cost, and isolation.

use api_tests::{Reply, TestOrg, harness, org, run, send};
use http::Method;
use serde_json::json;
use shared::model::Timestamp;
use shared::model::surplus::{CreateSurplus, StoredWaybill, SurplusRecord, SurplusStatus};

use crate::sites::new_site;
use crate::surpluses::{give_waybill, new_load, patch};

/// A load of `t` from `site` created at `created` (RFC 3339), `m3` big,
/// with `status` (a delivered one with its waybill, delivered a day later).
pub fn load_at(
    t: &TestOrg,
    site: &str,
    created: &str,
    m3: f64,
    status: SurplusStatus,
) -> SurplusRecord {
    let body: CreateSurplus =
        serde_json::from_value(json!({"site_id": site, "volume_m3": m3})).unwrap();
    let at: Timestamp = serde_json::from_value(json!(created)).unwrap();
    let mut load = body.validate(t.id(), at).unwrap();
    load.status = status;
    if status == SurplusStatus::Delivered {
        load.delivered_at = Some(at + chrono::TimeDelta::days(1));
        load.waybill = Some(StoredWaybill {
            storage_path: format!("waybills/{}/{}/w.png", t.id(), load.id),
            content_type: "image/png".into(),
            size: 12,
            uploaded_at: at,
            source: None,
        });
    }
    load
}

/// Stores loads in bulk, as the store writes them.
pub async fn import(loads: &[SurplusRecord]) {
    harness()
        .await
        .store()
        .surpluses()
        .import(loads)
        .await
        .unwrap();
}

pub async fn summary(t: &TestOrg, query: &str) -> Reply {
    send(
        t,
        Method::GET,
        &format!("/api/v1/reports/summary?{query}"),
        None,
    )
    .await
}

/// (loads_count, volume_m3) of a 200 summary.
fn figures(reply: &Reply) -> (u64, f64) {
    reply.expect(200, None);
    let data = &reply.body["data"];
    (
        data["loads_count"].as_u64().unwrap(),
        data["volume_m3"].as_f64().unwrap(),
    )
}

#[test]
fn the_window_counts_delivered_loads_by_created_day_both_ends_included() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Edge"})).await;
        use SurplusStatus::*;
        import(&[
            load_at(&t, &site, "2026-03-01T00:00:00.000Z", 1.0, Delivered),
            load_at(&t, &site, "2026-03-31T23:59:59.999Z", 2.5, Delivered),
            load_at(&t, &site, "2026-04-01T00:00:00.000Z", 4.0, Delivered),
            load_at(&t, &site, "2026-02-28T23:59:59.999Z", 8.0, Delivered),
            // Not delivered: never counted.
            load_at(&t, &site, "2026-03-10T12:00:00.000Z", 16.0, New),
            load_at(&t, &site, "2026-03-10T12:00:00.000Z", 32.0, InProgress),
            load_at(&t, &site, "2026-03-10T12:00:00.000Z", 64.0, Rejected),
        ])
        .await;
        let reply = summary(&t, "from=2026-03-01&to=2026-03-31").await;
        assert_eq!(figures(&reply), (2, 3.5));
        let data = &reply.body["data"];
        assert_eq!(
            data["period"],
            json!({"from": "2026-03-01", "to": "2026-03-31", "basis": "created_at"})
        );
        assert_eq!(data["heavy_vehicle_km_saved"], json!(0.6125));
        assert_eq!(
            data["methodology"],
            json!({"status": "estimated", "km_per_m3": 0.175})
        );
        assert_eq!(
            data["co2"],
            json!({
                "uptake_potential_kg_co2": 252.0,
                "net_savings_kg_co2e": null,
                "net_savings_unavailable_reason": "missing_distance_source",
                "virgin_included": false,
                "mixer_powertrain": "diesel",
                "methodology": {"status": "estimated", "model_version": "uptake-72kg-2026.1"}
            })
        );
        assert!(data.get("co2_savings_kg").is_none());
        // One day each side.
        assert_eq!(
            figures(&summary(&t, "from=2026-04-01&to=2026-04-01").await),
            (1, 4.0)
        );
        assert_eq!(
            figures(&summary(&t, "from=2026-02-28&to=2026-02-28").await),
            (1, 8.0)
        );
        assert_eq!(
            figures(&summary(&t, "from=2026-02-01&to=2026-04-30").await),
            (4, 15.5)
        );
    });
}

#[test]
fn the_default_window_is_the_last_thirty_days() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Recent"})).await;
        let today = api_tests::a_day_clear_of_midnight().await;
        let day = |days_ago: u64| {
            let d = today.checked_sub_days(chrono::Days::new(days_ago)).unwrap();
            format!("{d}T12:00:00.000Z")
        };
        import(&[
            load_at(&t, &site, &day(0), 1.0, SurplusStatus::Delivered),
            load_at(&t, &site, &day(30), 2.0, SurplusStatus::Delivered),
            load_at(&t, &site, &day(31), 4.0, SurplusStatus::Delivered),
        ])
        .await;
        let reply = summary(&t, "").await;
        assert_eq!(figures(&reply), (2, 3.0));
        let from = today.checked_sub_days(chrono::Days::new(30)).unwrap();
        assert_eq!(
            reply.body["data"]["period"],
            json!({"from": from.to_string(), "to": today.to_string(), "basis": "created_at"})
        );
    });
}

#[test]
fn bad_windows_are_422_naming_the_parameter() {
    run(async {
        let t = org().await;
        for (query, field) in [
            ("from=2026-02-30", "from"),
            ("to=2026-13-01", "to"),
            ("from=yesterday", "from"),
            ("from=2026-1-5", "from"),
            ("from=2026-05-02&to=2026-05-01", "from"),
            ("from=2025-01-01&to=2026-01-02", "to"),
        ] {
            for path in [
                "/api/v1/reports/summary",
                "/api/v1/reports/loads",
                "/api/v1/billing/additive-usage",
            ] {
                let reply = send(&t, Method::GET, &format!("{path}?{query}"), None).await;
                reply.expect(422, Some("validation_error"));
                let message = reply.body["message"].as_str().unwrap();
                assert!(message.starts_with(field), "{path}?{query}: {message}");
            }
        }
        // 366 days, both ends counted, is allowed.
        figures(&summary(&t, "from=2024-01-01&to=2024-12-31").await);
    });
}

#[test]
fn deliveries_volume_edits_and_archives_move_the_figures_at_once() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Live"})).await;
        let id = new_load(&t, &site).await; // 6.5 m³
        assert_eq!(figures(&summary(&t, "").await), (0, 0.0));
        give_waybill(&t, &id).await;
        patch(&t, &id, json!({"status": "delivered"}))
            .await
            .expect(200, None);
        assert_eq!(figures(&summary(&t, "").await), (1, 6.5));
        // Only a real move counts: delivered again changes nothing.
        patch(&t, &id, json!({"status": "delivered"}))
            .await
            .expect(200, None);
        patch(&t, &id, json!({"volume_m3": 7.125}))
            .await
            .expect(200, None);
        assert_eq!(figures(&summary(&t, "").await), (1, 7.125));
        let other = new_load(&t, &site).await;
        patch(&t, &other, json!({"status": "rejected"}))
            .await
            .expect(200, None);
        patch(&t, &other, json!({"volume_m3": 50}))
            .await
            .expect(200, None);
        assert_eq!(figures(&summary(&t, "").await), (1, 7.125));
        harness()
            .await
            .store()
            .surpluses()
            .archive(t.id(), id.parse().unwrap())
            .await
            .unwrap();
        assert_eq!(figures(&summary(&t, "").await), (0, 0.0));
    });
}

#[test]
fn a_summary_reads_one_query_whatever_the_number_of_loads() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Busy"})).await;
        let loads: Vec<_> = (0..300)
            .map(|i| {
                let day = 1 + i % 28;
                let created = format!("2026-02-{day:02}T08:00:00.000Z");
                load_at(&t, &site, &created, 0.1, SurplusStatus::Delivered)
            })
            .collect();
        import(&loads).await;
        let reply = summary(&t, "from=2026-01-01&to=2026-12-31").await;
        // 300 × 0.1 m³, exactly.
        assert_eq!(figures(&reply), (300, 30.0));
        assert!(reply.ddb_calls <= 3, "{} calls", reply.ddb_calls);
    });
}

#[test]
fn another_organizations_loads_never_count() {
    run(async {
        let t = org().await;
        let other = org().await;
        let site = new_site(&t, json!({"name": "Mine"})).await;
        import(&[load_at(
            &t,
            &site,
            "2026-06-01T10:00:00.000Z",
            3.0,
            SurplusStatus::Delivered,
        )])
        .await;
        let window = "from=2026-06-01&to=2026-06-30";
        assert_eq!(figures(&summary(&t, window).await), (1, 3.0));
        assert_eq!(figures(&summary(&other, window).await), (0, 0.0));
        let rows = send(
            &other,
            Method::GET,
            &format!("/api/v1/reports/loads?{window}"),
            None,
        )
        .await;
        rows.expect(200, None);
        assert_eq!(rows.body["meta"]["count"], 0);
    });
}
