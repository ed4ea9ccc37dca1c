//! An organization's sites, receiving points, factories and loads spread
//! over its shards (`keys::record_pk`), beside the records made before the
//! spread, which stay in the organization's partition: each is found,
//! listed in order, changed and referred to wherever it is, and another
//! organization finds neither.

use std::collections::HashMap;

use api_tests::{Reply, TestOrg, harness, org, run, send};
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use serde_json::{Value, json};
use shared::model::Timestamp;
use shared::model::site::CreateSite;
use shared::model::surplus::CreateSurplus;
use shared::store::engine::keys;
use uuid::Uuid;

use crate::sites::new_site;
use crate::surpluses::{give_waybill, new_load, patch};

/// A site of `t` as a version from before the spread wrote it: a version
/// 7 id, in the organization's partition.
async fn site_from_before(t: &TestOrg, name: &str) -> String {
    let body: CreateSite = serde_json::from_value(json!({"name": name})).unwrap();
    let mut site = body.validate(t.id(), shared::model::now()).unwrap();
    site.id = Uuid::now_v7();
    harness()
        .await
        .store()
        .sites()
        .import(&[site.clone()])
        .await
        .unwrap();
    site.id.to_string()
}

/// A load of `t` on `site` as a version from before the spread wrote it.
async fn load_from_before(t: &TestOrg, site: &str) -> String {
    let body: CreateSurplus =
        serde_json::from_value(json!({"site_id": site, "volume_m3": 3})).unwrap();
    let mut load = body
        .validate(t.id(), Timestamp::from(chrono::Utc::now()))
        .unwrap();
    load.id = Uuid::now_v7();
    let store = harness().await.store();
    store.surpluses().import(&[load.clone()]).await.unwrap();
    load.id.to_string()
}

/// The partition key of the item with sort key `sk`, read straight from
/// the table among `t`'s partitions.
async fn partition_of(t: &TestOrg, sk: &str) -> String {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    for pk in keys::all_shards().map(|shard| keys::org_shard_pk(t.id(), shard)) {
        let found = db
            .get_item()
            .table_name(h.store().table())
            .key("pk", AttributeValue::S(pk.clone()))
            .key("sk", AttributeValue::S(sk.to_owned()))
            .send()
            .await
            .unwrap();
        if found.item.is_some() {
            return pk;
        }
    }
    panic!("{sk} is in none of the organization's partitions")
}

fn ids(reply: &Reply) -> Vec<String> {
    reply.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn get(t: &TestOrg, path: &str) -> Reply {
    send(t, Method::GET, path, None).await
}

#[test]
fn new_records_are_spread_and_those_from_before_stay_where_they_were() {
    run(async {
        let t = org().await;
        let old_site = site_from_before(&t, "Old yard").await;
        let new_site_id = new_site(&t, json!({"name": "New yard"})).await;
        let new_id: Uuid = new_site_id.parse().unwrap();
        assert_eq!(new_id.get_version_num(), 8, "a new record's id is spread");
        assert_eq!(
            partition_of(&t, &format!("SITE#{old_site}")).await,
            keys::org_pk(t.id())
        );
        let shard = keys::record_shard(new_id).unwrap();
        assert!(shard < keys::RECORD_SHARDS);
        assert_eq!(
            partition_of(&t, &format!("SITE#{new_site_id}")).await,
            format!("ORG#{}#SHARD{shard}", t.id())
        );
        // A load and its log beside it, its list keys in the same shard.
        let load = new_load(&t, &new_site_id).await;
        let load_id: Uuid = load.parse().unwrap();
        let partition = partition_of(&t, &format!("SURPLUS#{load}")).await;
        assert_eq!(partition, keys::record_pk(t.id(), load_id));
        // Its first entry is kept on it; a status change's is stored.
        patch(&t, &load, json!({"status": "in_progress"}))
            .await
            .expect(200, None);
        let h = harness().await;
        let log = aws_sdk_dynamodb::Client::new(&h.sdk)
            .query()
            .table_name(h.store().table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :log)")
            .expression_attribute_values(":pk", AttributeValue::S(partition.clone()))
            .expression_attribute_values(":log", AttributeValue::S(format!("LOG#{load}#")))
            .send()
            .await
            .unwrap();
        assert_eq!(log.count, 1, "its log entry is in its partition");
        let item = aws_sdk_dynamodb::Client::new(&h.sdk)
            .get_item()
            .table_name(h.store().table())
            .key("pk", AttributeValue::S(partition))
            .key("sk", AttributeValue::S(format!("SURPLUS#{load}")))
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        let shard = keys::record_shard(load_id);
        let group = |name: &str| item[name].as_s().unwrap().clone();
        assert_eq!(
            group("gsi1pk"),
            keys::surplus_group_pk(t.id(), "open", shard)
        );
        assert_eq!(
            group("gsi2pk"),
            keys::surplus_site_pk(t.id(), new_id, shard)
        );
        let _ = old_site;
    });
}

#[test]
fn records_from_before_the_spread_are_read_listed_changed_and_referred_to() {
    run(async {
        let t = org().await;
        let other = org().await;
        let old_site = site_from_before(&t, "Old yard").await;
        let old_load = load_from_before(&t, &old_site).await;
        let new_site_id = new_site(&t, json!({"name": "New yard"})).await;
        // A new load on the old site: the site's check finds it where it is.
        let on_old_site = new_load(&t, &old_site).await;
        let on_new_site = new_load(&t, &new_site_id).await;

        // Read by id, wherever each is; another organization finds neither.
        for path in [
            format!("/api/v1/sites/{old_site}"),
            format!("/api/v1/sites/{new_site_id}"),
            format!("/api/v1/surpluses/{old_load}"),
            format!("/api/v1/surpluses/{on_new_site}"),
            format!("/api/v1/surpluses/{old_load}/log"),
        ] {
            get(&t, &path).await.expect(200, None);
            let foreign = get(&other, &path).await;
            assert_eq!(foreign.status, 404, "{path} for another organization");
        }

        // Lists merge every partition, newest first.
        let sites = get(&t, "/api/v1/sites").await;
        assert_eq!(ids(&sites), vec![new_site_id.clone(), old_site.clone()]);
        assert!(ids(&get(&other, "/api/v1/sites").await).is_empty());
        let all = vec![on_new_site.clone(), on_old_site.clone(), old_load.clone()];
        assert_eq!(ids(&get(&t, "/api/v1/surpluses").await), all);
        assert_eq!(ids(&get(&t, "/api/v1/surpluses?status=open").await), all);
        assert_eq!(
            ids(&get(&t, &format!("/api/v1/surpluses?site_id={old_site}")).await),
            vec![on_old_site.clone(), old_load.clone()]
        );
        // A page at a time, across the partitions: no gap, no repeat.
        let mut walked = Vec::new();
        let mut path = "/api/v1/surpluses?limit=1".to_owned();
        loop {
            let page = get(&t, &path).await;
            page.expect(200, None);
            walked.extend(ids(&page));
            match page.body["meta"]["next_cursor"].as_str() {
                Some(cursor) => path = format!("/api/v1/surpluses?limit=1&cursor={cursor}"),
                None => break,
            }
        }
        assert_eq!(walked, all);

        // Changed in place: a PATCH of each, an archive and restore of the
        // old site, the old load delivered (its log beside it).
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/sites/{old_site}"),
            Some(json!({"city": "Oulu"})),
        )
        .await
        .expect(200, None);
        assert_eq!(
            get(&t, &format!("/api/v1/sites/{old_site}")).await.body["data"]["city"],
            "Oulu"
        );
        patch(&t, &old_load, json!({"volume_m3": 4}))
            .await
            .expect(200, None);
        give_waybill(&t, &old_load).await;
        patch(&t, &old_load, json!({"status": "delivered"}))
            .await
            .expect(200, None);
        let log = get(&t, &format!("/api/v1/surpluses/{old_load}/log")).await;
        let moves: Vec<Value> = log.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["status_to"].clone())
            .collect();
        assert_eq!(moves, vec![json!("new"), json!("delivered")]);
        assert_eq!(
            ids(&get(&t, "/api/v1/surpluses?status=delivered").await),
            vec![old_load.clone()]
        );
        // The month-end rows name the old site (made today, or yesterday
        // when the test ran past midnight).
        let today = chrono::Utc::now().date_naive();
        let yesterday = today.pred_opt().unwrap();
        let rows = get(
            &t,
            &format!("/api/v1/reports/loads?from={yesterday}&to={today}"),
        )
        .await;
        rows.expect(200, None);
        let names: HashMap<String, String> = rows.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row["surplus_id"].as_str().unwrap().to_owned(),
                    row["site_name"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        assert_eq!(names.get(&old_load).map(String::as_str), Some("Old yard"));
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/sites/{old_site}"),
            None,
        )
        .await
        .expect(200, None);
        assert_eq!(
            ids(&get(&t, "/api/v1/sites").await),
            vec![new_site_id.clone()]
        );
        let refused = send(
            &t,
            Method::POST,
            "/api/v1/surpluses",
            Some(json!({"site_id": old_site, "volume_m3": 1})),
        )
        .await;
        refused.expect(422, Some("site_archived"));
        // Another organization changes neither.
        let foreign = send(
            &other,
            Method::PATCH,
            &format!("/api/v1/surpluses/{old_load}"),
            Some(json!({"volume_m3": 9})),
        )
        .await;
        assert_eq!(foreign.status, 404);
        let foreign = send(
            &other,
            Method::POST,
            &format!("/api/v1/sites/{old_site}/restore"),
            None,
        )
        .await;
        assert_eq!(foreign.status, 404);
    });
}

#[test]
fn a_page_whose_rows_are_all_in_one_shard_reads_it_again_until_full() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "One shard"})).await;
        // 60 loads, every one in shard 0 (ids drawn until they fall there):
        // far more than a shard's share of a page of 50.
        let mut loads = Vec::new();
        while loads.len() < 60 {
            let body: CreateSurplus =
                serde_json::from_value(json!({"site_id": site, "volume_m3": 1})).unwrap();
            let load = body
                .validate(t.id(), Timestamp::from(chrono::Utc::now()))
                .unwrap();
            if keys::record_shard(load.id) == Some(0) {
                loads.push(load);
            }
        }
        harness()
            .await
            .store()
            .surpluses()
            .import(&loads)
            .await
            .unwrap();
        let mut expected: Vec<String> = loads.iter().map(|l| l.id.to_string()).collect();
        expected.sort();
        expected.reverse();
        // A list that reads each partition once, by the same (warm) key:
        // the calls a page makes without reading a shard again. (Round
        // trips cannot show it: the key's admission may still be in flight
        // across both reads, and calls in flight together share one.)
        get(&t, "/api/v1/sites").await.expect(200, None);
        let once = get(&t, "/api/v1/sites").await;
        let first = get(&t, "/api/v1/surpluses?limit=50").await;
        first.expect(200, None);
        assert_eq!(ids(&first), expected[..50]);
        assert!(
            first.ddb_calls > once.ddb_calls,
            "the shard is read again: {} calls, {} for one read of each partition",
            first.ddb_calls,
            once.ddb_calls
        );
        let cursor = first.body["meta"]["next_cursor"].as_str().unwrap();
        let rest = get(&t, &format!("/api/v1/surpluses?limit=50&cursor={cursor}")).await;
        assert_eq!(ids(&rest), expected[50..]);
        assert!(rest.body["meta"]["next_cursor"].is_null());
        // The site's list and the status group's read the same way.
        let by_site = get(&t, &format!("/api/v1/surpluses?site_id={site}&limit=50")).await;
        assert_eq!(ids(&by_site).len(), 50);
        let open = get(&t, "/api/v1/surpluses?status=open&limit=60").await;
        assert_eq!(ids(&open).len(), 60);
    });
}
