//! GET /api/v1/reports/loads: the month-end rows (names beside the ids,
//! additive usage rounded up per load), keyset pages, and the CSV an
//! accountant opens.

use api_tests::{TestOrg, call, org, run, send};
use http::Method;
use serde_json::json;
use shared::model::surplus::{BilledTo, SurplusStatus};

use crate::receiving_points::new_point;
use crate::reports::{import, load_at};
use crate::sites::new_site;
use crate::trucks::{new_truck, plate};

const MARCH: &str = "from=2026-03-01&to=2026-03-31";

async fn rows(t: &TestOrg, query: &str) -> serde_json::Value {
    let reply = send(
        t,
        Method::GET,
        &format!("/api/v1/reports/loads?{query}"),
        None,
    )
    .await;
    reply.expect(200, None);
    reply.body.clone()
}

#[test]
fn rows_name_the_site_point_and_truck_and_round_additive_up_per_load() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "North gate"})).await;
        let point = new_point(&t, json!({"site_id": site, "name": "Crusher"})).await;
        let license = plate();
        let truck = new_truck(&t, json!({"license": license})).await;
        let mut full = load_at(
            &t,
            &site,
            "2026-03-02T07:00:00.000Z",
            1.2,
            SurplusStatus::Delivered,
        );
        full.additive = true;
        full.additive_billed_to = Some(BilledTo::Truck);
        full.to_receiving_point_id = Some(point.parse().unwrap());
        full.to_site_id = Some(site.parse().unwrap());
        full.to_org_id = Some(t.id());
        full.truck_id = Some(truck.parse().unwrap());
        full.truck_org_id = Some(t.id());
        full.material_grade = Some("C30/37".into());
        let plain = load_at(
            &t,
            &site,
            "2026-03-01T07:00:00.000Z",
            2.0,
            SurplusStatus::Delivered,
        );
        let open = load_at(
            &t,
            &site,
            "2026-03-03T07:00:00.000Z",
            2.0,
            SurplusStatus::New,
        );
        import(&[full.clone(), plain.clone(), open]).await;

        let body = rows(&t, MARCH).await;
        assert_eq!(body["meta"], json!({"count": 2, "next_cursor": null}));
        // Oldest first.
        assert_eq!(body["data"][0]["surplus_id"], plain.id.to_string());
        assert_eq!(body["data"][0]["additive_usage_m3"], 0);
        assert_eq!(body["data"][0]["receiving_point_name"], json!(null));
        assert_eq!(
            body["data"][1],
            json!({
                "surplus_id": full.id,
                "created_at": "2026-03-02T07:00:00.000Z",
                "delivered_at": "2026-03-03T07:00:00.000Z",
                "site_id": site,
                "site_name": "North gate",
                "receiving_point_id": point,
                "receiving_point_name": "Crusher",
                "volume_m3": 1.2,
                "additive": true,
                "additive_billed_to": "truck",
                "additive_usage_m3": 2,
                "material_grade": "C30/37",
                "manufacturer": null,
                "truck_id": truck,
                "truck_license": license,
            })
        );
    });
}

#[test]
fn rows_come_in_keyset_pages_bound_to_the_window() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Paged"})).await;
        let loads: Vec<_> = (0..25)
            .map(|i| {
                let created = format!("2026-03-{:02}T10:00:{i:02}.000Z", 1 + i % 30);
                load_at(&t, &site, &created, 1.0, SurplusStatus::Delivered)
            })
            .collect();
        import(&loads).await;
        let mut expected: Vec<_> = loads
            .iter()
            .map(|l| (l.created_at, l.id.to_string()))
            .collect();
        expected.sort();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = format!("{MARCH}&limit=7");
            if let Some(c) = &cursor {
                query.push_str(&format!("&cursor={c}"));
            }
            let body = rows(&t, &query).await;
            let page = body["data"].as_array().unwrap();
            assert!(page.len() == 7 || body["meta"]["next_cursor"].is_null());
            seen.extend(
                page.iter()
                    .map(|r| r["surplus_id"].as_str().unwrap().to_owned()),
            );
            match body["meta"]["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(
            seen,
            expected.into_iter().map(|(_, id)| id).collect::<Vec<_>>()
        );
        // A cursor belongs to its window; limits are checked.
        let first = rows(&t, &format!("{MARCH}&limit=3")).await;
        let cursor = first["meta"]["next_cursor"].as_str().unwrap();
        let reply = send(
            &t,
            Method::GET,
            &format!("/api/v1/reports/loads?from=2026-03-02&to=2026-03-31&cursor={cursor}"),
            None,
        )
        .await;
        reply.expect(422, Some("invalid_cursor"));
        for limit in ["0", "1001", "x"] {
            let reply = send(
                &t,
                Method::GET,
                &format!("/api/v1/reports/loads?limit={limit}"),
                None,
            )
            .await;
            reply.expect(422, Some("validation_error"));
        }
    });
}

/// A listing of the default window (the last 30 days up to today) paged
/// on past midnight keeps its first page's days: its cursor is not
/// refused as another window's, and a load of the first day, which the
/// new day's window leaves out, is still listed.
#[test]
fn a_default_window_paged_past_midnight_keeps_its_first_pages_days() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Midnight"})).await;
        let loads = [
            load_at(
                &t,
                &site,
                "2026-03-01T10:00:00.000Z",
                1.0,
                SurplusStatus::Delivered,
            ),
            load_at(
                &t,
                &site,
                "2026-03-01T10:00:01.000Z",
                1.0,
                SurplusStatus::Delivered,
            ),
        ];
        import(&loads).await;
        let (_, mut state) = api_tests::harness().await.instance_with(|_| {});
        state.clock = shared::clock::Clock::frozen_at("2026-03-31T23:59:50Z".parse().unwrap());
        let clock = state.clock.clone();
        let router = shared::http::app(local::routes(), state);
        let page = |cursor: Option<String>| {
            let path = match cursor {
                Some(c) => format!("/api/v1/reports/loads?limit=1&cursor={c}"),
                None => "/api/v1/reports/loads?limit=1".to_owned(),
            };
            call(Method::GET, &path).key(&t.key).send_to(&router)
        };
        let first = page(None).await;
        first.expect(200, None);
        assert_eq!(first.body["data"][0]["surplus_id"], loads[0].id.to_string());
        let cursor = first.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        clock.advance(std::time::Duration::from_secs(20));
        // The new day's default window starts on 2026-03-02: empty here.
        let fresh = page(None).await;
        fresh.expect(200, None);
        assert_eq!(fresh.body["data"], json!([]));
        let second = page(Some(cursor)).await;
        second.expect(200, None);
        assert_eq!(
            second.body["data"][0]["surplus_id"],
            loads[1].id.to_string()
        );
        assert!(second.body["meta"]["next_cursor"].is_null());
    });
}

#[test]
fn csv_quotes_fields_and_neutralises_formulas() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "=HYPERLINK(\"http://x\")"})).await;
        let mut load = load_at(
            &t,
            &site,
            "2026-03-05T09:30:00.000Z",
            0.25,
            SurplusStatus::Delivered,
        );
        load.manufacturer = Some("Betoni \"Oy\", Espoo".into());
        load.additive = true;
        load.additive_billed_to = Some(BilledTo::OriginSite);
        let second = load_at(
            &t,
            &site,
            "2026-03-06T09:30:00.000Z",
            1.0,
            SurplusStatus::Delivered,
        );
        import(&[load.clone(), second]).await;
        let reply = call(
            Method::GET,
            &format!("/api/v1/reports/loads?{MARCH}&limit=1"),
        )
        .key(&t.key)
        .header("accept", "text/csv")
        .send()
        .await;
        reply.expect(200, None);
        assert_eq!(reply.header("content-type"), "text/csv; charset=utf-8");
        assert_eq!(
            reply.header("content-disposition"),
            "attachment; filename=\"loads-2026-03-01-2026-03-31.csv\""
        );
        assert!(
            reply.header("link").starts_with(
                "</api/v1/reports/loads?from=2026-03-01&to=2026-03-31&limit=1&cursor="
            )
        );
        assert!(reply.header("link").ends_with(">; rel=\"next\""));
        assert!(!reply.header("x-ratelimit-limit").is_empty());
        let lines: Vec<&str> = reply.text.split("\r\n").collect();
        assert_eq!(
            lines[0],
            "surplus_id,created_at,delivered_at,site_id,site_name,receiving_point_id,receiving_point_name,volume_m3,additive,additive_billed_to,additive_usage_m3,material_grade,manufacturer,truck_id,truck_license"
        );
        assert_eq!(
            lines[1],
            format!(
                "{},2026-03-05T09:30:00.000Z,2026-03-06T09:30:00.000Z,{site},\"'=HYPERLINK(\"\"http://x\"\")\",,,0.25,true,origin_site,1,,\"Betoni \"\"Oy\"\", Espoo\",,",
                load.id
            )
        );
        assert_eq!(lines[2], "", "one row, then the final line end");
        assert_eq!(lines.len(), 3);
        // The last page has no Link.
        let link = reply
            .header("link")
            .trim_start_matches('<')
            .trim_end_matches(">; rel=\"next\"")
            .to_owned();
        let last = call(Method::GET, &link)
            .key(&t.key)
            .header("accept", "text/csv")
            .send()
            .await;
        last.expect(200, None);
        assert_eq!(last.header("link"), "");
        assert_eq!(last.text.split("\r\n").count(), 3);
    });
}
