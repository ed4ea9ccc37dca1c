//! Keyset pages of surplus loads over 260 loads (written with the bulk
//! import, so it is tested too): every filter and limit,
//! stable while loads are created, cursors bound to organization and
//! filters.

use api_tests::{Reply, TestOrg, harness, org, run, send};
use http::Method;
use serde_json::json;
use shared::model::Timestamp;
use shared::model::surplus::{CreateSurplus, StoredWaybill, SurplusStatus};
use tokio::sync::OnceCell;

use crate::sites::new_site;

const LOADS: usize = 260;

/// An organization with 260 loads on two sites in every status, and what
/// each load is.
struct Seeded {
    t: TestOrg,
    sites: [String; 2],
    /// Load id -> (site, status), in creation order.
    loads: Vec<(String, String, SurplusStatus)>,
}

static SEEDED: OnceCell<Seeded> = OnceCell::const_new();

async fn seeded() -> &'static Seeded {
    SEEDED
        .get_or_init(|| async {
            let t = org().await;
            let sites = [
                new_site(&t, json!({"name": "North"})).await,
                new_site(&t, json!({"name": "South"})).await,
            ];
            // Written in bulk, as the store writes them: one millisecond
            // apart, in every status (a delivered load with its waybill).
            let statuses = [
                SurplusStatus::New,
                SurplusStatus::InProgress,
                SurplusStatus::Delivered,
                SurplusStatus::Rejected,
                SurplusStatus::New,
            ];
            let start = chrono::Utc::now() - chrono::Duration::hours(1);
            let mut records = Vec::new();
            let mut loads = Vec::new();
            for i in 0..LOADS {
                let site = &sites[i % 3 % 2];
                let body: CreateSurplus =
                    serde_json::from_value(json!({"site_id": site, "volume_m3": 1 + i % 9}))
                        .unwrap();
                let at = Timestamp::from(start + chrono::Duration::milliseconds(i as i64));
                let mut load = body.validate(t.id(), at).unwrap();
                let status = statuses[i % statuses.len()];
                load.status = status;
                if status == SurplusStatus::Delivered {
                    load.delivered_at = Some(at);
                    load.waybill = Some(StoredWaybill {
                        storage_path: format!("waybills/{}/{}/w.png", t.id(), load.id),
                        content_type: "image/png".into(),
                        size: 12,
                        uploaded_at: at,
                        source: None,
                    });
                }
                loads.push((load.id.to_string(), site.clone(), status));
                records.push(load);
            }
            harness()
                .await
                .store()
                .surpluses()
                .import(&records)
                .await
                .unwrap();
            Seeded { t, sites, loads }
        })
        .await
}

fn group(status: SurplusStatus) -> &'static str {
    status.group().as_str()
}

/// The routers without a rate limit: walking every listing is more than
/// a minute's budget.
static UNLIMITED: OnceCell<axum::Router> = OnceCell::const_new();

async fn page(t: &TestOrg, query: &str) -> Reply {
    let router = UNLIMITED
        .get_or_init(|| async {
            harness()
                .await
                .router_with(|c| c.http.rate_limit.enabled = false)
        })
        .await;
    let reply = api_tests::call(Method::GET, &format!("/api/v1/surpluses?{query}"))
        .key(&t.key)
        .send_to(router)
        .await;
    reply.expect(200, None);
    reply
}

/// Every page of a listing: the ids in order and the pages' sizes.
async fn walk(t: &TestOrg, filters: &str, limit: usize) -> (Vec<String>, Vec<usize>) {
    let mut ids = Vec::new();
    let mut sizes = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = format!("{filters}&limit={limit}");
        if let Some(c) = &cursor {
            query.push_str(&format!("&cursor={}", c));
        }
        let reply = page(t, &query).await;
        let rows = reply.body["data"].as_array().unwrap();
        assert_eq!(reply.body["meta"]["count"], rows.len());
        ids.extend(rows.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
        sizes.push(rows.len());
        match reply.body["meta"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    (ids, sizes)
}

#[test]
fn pages_hold_every_load_once_for_every_filter_and_limit() {
    run(async {
        let s = seeded().await;
        for status in ["all", "open", "delivered", "expired"] {
            for site in [None, Some(&s.sites[0]), Some(&s.sites[1])] {
                let expected: Vec<String> = s
                    .loads
                    .iter()
                    .rev()
                    .filter(|(_, load_site, load_status)| {
                        (status == "all" || group(*load_status) == status)
                            && site.is_none_or(|site| site == load_site)
                    })
                    .map(|(id, _, _)| id.clone())
                    .collect();
                let filters = match site {
                    Some(site) => format!("status={status}&site_id={site}"),
                    None => format!("status={status}"),
                };
                for limit in [1usize, 37, 50, 100] {
                    if limit == 1 && expected.len() > 60 {
                        continue; // one load per page: kept to the smaller listings
                    }
                    let (ids, sizes) = walk(&s.t, &filters, limit).await;
                    assert_eq!(
                        ids, expected,
                        "{filters} limit {limit}: newest first, no gap, no duplicate"
                    );
                    let (last, full) = sizes.split_last().unwrap();
                    assert!(
                        full.iter().all(|n| *n == limit),
                        "{filters} limit {limit}: full pages {sizes:?}"
                    );
                    assert!(
                        *last <= limit && (*last > 0 || sizes.len() == 1),
                        "{filters}: {sizes:?}"
                    );
                }
            }
        }
        // The default page is 50, and `all` is the default status.
        let first = page(&s.t, "").await;
        assert_eq!(first.body["meta"]["count"], 50);
        assert_eq!(first.body["data"][0]["id"], s.loads.last().unwrap().0);
    });
}

#[test]
fn a_page_costs_a_query_a_partition_and_at_most_one_more_of_each_shard() {
    run(async {
        let s = seeded().await;
        page(&s.t, "limit=1").await.expect(200, None); // the key, warm
        for query in ["limit=100", "status=open&limit=100", "status=all&limit=10"] {
            let reply = page(&s.t, query).await;
            // The key's admission, one query a partition, and a second of
            // a shard that held more than its share and margin (about one
            // page of 100 in 25, as the seeded ids fall: spread.rs forces
            // it).
            let most =
                2 + api_tests::SPREAD_LIST_QUERIES + shared::store::engine::keys::RECORD_SHARDS;
            assert!(
                reply.ddb_calls <= most,
                "{query} cost {} calls",
                reply.ddb_calls
            );
            // Its partitions at once, beside the (warm) key's admission,
            // and at most once more.
            assert!(
                reply.round_trips <= 2,
                "{query}: {} round trips",
                reply.round_trips
            );
        }
    });
}

#[test]
fn pages_stay_stable_while_loads_are_created() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Busy"})).await;
        let mut before = Vec::new();
        for _ in 0..12 {
            before.push(crate::surpluses::new_load(&t, &site).await);
        }
        let first = page(&t, "limit=5").await;
        let mut seen: Vec<String> = first.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect();
        let mut cursor = first.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        // New loads arrive between pages.
        for _ in 0..3 {
            crate::surpluses::new_load(&t, &site).await;
        }
        loop {
            let reply = page(&t, &format!("limit=5&cursor={cursor}")).await;
            seen.extend(
                reply.body["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["id"].as_str().unwrap().to_owned()),
            );
            match reply.body["meta"]["next_cursor"].as_str() {
                Some(next) => cursor = next.to_owned(),
                None => break,
            }
        }
        before.reverse();
        assert_eq!(seen, before, "the listing that started goes on unchanged");
    });
}

#[test]
fn cursors_are_bound_to_the_organization_and_the_filters() {
    run(async {
        let s = seeded().await;
        let first = page(&s.t, "status=open&limit=3").await;
        let cursor = first.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        // Another limit keeps the cursor; another filter does not.
        page(&s.t, &format!("status=open&limit=7&cursor={cursor}")).await;
        let other = org().await;
        let mut tampered = cursor.clone().into_bytes();
        tampered[4] = if tampered[4] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        for (who, query) in [
            (&s.t, format!("status=delivered&limit=3&cursor={cursor}")),
            (
                &s.t,
                format!("status=open&site_id={}&limit=3&cursor={cursor}", s.sites[0]),
            ),
            (&s.t, format!("status=open&limit=3&cursor={tampered}")),
            (&s.t, "cursor=garbage".to_owned()),
            (&other, format!("status=open&limit=3&cursor={cursor}")),
        ] {
            let reply = send(
                who,
                Method::GET,
                &format!("/api/v1/surpluses?{query}"),
                None,
            )
            .await;
            reply.expect(422, Some("invalid_cursor"));
            assert!(
                reply.body["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("cursor"),
                "{query}"
            );
        }
    });
}

#[test]
fn list_parameters_are_checked() {
    run(async {
        let t = org().await;
        for (query, field) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("limit=ten", "limit"),
            ("status=lost", "status"),
            ("site_id=nope", "site_id"),
        ] {
            let reply = send(&t, Method::GET, &format!("/api/v1/surpluses?{query}"), None).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with(field),
                "{query}: {}",
                reply.text
            );
        }
        let empty = page(&t, "status=open").await;
        assert_eq!(empty.body["meta"], json!({"count": 0, "next_cursor": null}));
    });
}

#[test]
fn imported_loads_read_like_created_ones() {
    run(async {
        let s = seeded().await;
        let (id, site, status) = &s.loads[2];
        let reply = send(&s.t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["site_id"], *site);
        assert_eq!(reply.body["data"]["status"], status.as_str());
        assert!(reply.body["data"]["waybill"]["url"].is_string());
        let log = send(
            &s.t,
            Method::GET,
            &format!("/api/v1/surpluses/{id}/log"),
            None,
        )
        .await;
        log.expect(200, None);
        assert_eq!(
            log.body["data"].as_array().unwrap().len(),
            1,
            "{}",
            log.text
        );
        assert_eq!(log.body["data"][0]["status_to"], status.as_str());
    });
}

#[test]
fn archived_loads_never_shorten_a_page() {
    run(async {
        // Given 12 loads, of which an operator archived 5 (among them the
        // two newest and three in a row)
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let mut ids = Vec::new();
        for _ in 0..12 {
            ids.push(crate::surpluses::new_load(&t, &site).await);
        }
        let store = harness().await.store();
        for i in [11, 10, 6, 5, 4] {
            store
                .surpluses()
                .archive(t.id(), ids[i].parse().unwrap())
                .await
                .unwrap();
        }
        // When the loads are listed three to a page
        let (listed, sizes) = walk(&t, "status=all", 3).await;
        // Then every page is full but the last, newest first, none archived
        let expected: Vec<String> = [9, 8, 7, 3, 2, 1, 0]
            .iter()
            .map(|i| ids[*i].clone())
            .collect();
        assert_eq!(listed, expected);
        assert_eq!(sizes, [3, 3, 1]);
    });
}
