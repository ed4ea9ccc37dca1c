//! Property: after any sequence of creates, waybills, status moves, volume
//! and additive edits and archives, the daily figures equal a recount from
//! the loads themselves, and the billing index bills exactly the loads
//! that should be billed.

use std::collections::BTreeMap;

use api_tests::{TestOrg, harness, org, run};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use shared::model::surplus::{CreateSurplus, PatchSurplus, SurplusRecord, SurplusStatus};
use shared::model::volume::Litres;

use crate::sites::new_site;

const SEEDS: [u64; 3] = [7, 1_234, 99_999];
const STEPS: usize = 40;

/// The organization's loads that are not archived, every page.
async fn all_loads(t: &TestOrg) -> Vec<SurplusRecord> {
    let store = harness().await.store();
    let mut loads = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .surpluses()
            .list(t.id(), None, None, start, 100)
            .await
            .unwrap();
        loads.extend(page.rows);
        match page.next {
            Some(next) => start = Some(next),
            None => return loads,
        }
    }
}

async fn one_sequence(seed: u64) {
    let t = org().await;
    let site = new_site(&t, json!({"name": format!("Seed {seed}")})).await;
    let store = harness().await.store();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ids: Vec<uuid::Uuid> = Vec::new();
    for _ in 0..STEPS {
        let choice = if ids.is_empty() {
            0
        } else {
            rng.random_range(0..7)
        };
        let volume = f64::from(rng.random_range(1..100_000u32)) / 1000.0;
        if choice == 0 {
            let body: CreateSurplus = serde_json::from_value(json!({
                "site_id": site, "volume_m3": volume, "additive": rng.random_bool(0.5)
            }))
            .unwrap();
            let mut load = body.validate(t.id(), shared::model::now()).unwrap();
            store.surpluses().create(&mut load).await.unwrap();
            ids.push(load.id);
            continue;
        }
        let id = ids[rng.random_range(0..ids.len())];
        let change = match choice {
            1 => {
                // Refused once delivered (409) or archived (404): fine.
                let path = format!("waybills/{}/{id}/w.png", t.id());
                let _ = api_tests::store_waybill(store, t.id(), id, &path).await;
                continue;
            }
            2 => json!({"status": "delivered"}),
            3 => {
                let status = ["new", "in_progress", "rejected"][rng.random_range(0..3)];
                json!({ "status": status })
            }
            4 => json!({"volume_m3": volume}),
            5 => json!({"additive": rng.random_bool(0.5)}),
            _ => {
                // Archived loads are gone for good: 404 afterwards is fine.
                let _ = store.surpluses().archive(t.id(), id).await;
                continue;
            }
        };
        let patch: PatchSurplus = serde_json::from_value(change).unwrap();
        // Refused moves (409, 404 after an archive) change nothing.
        let _ = store
            .surpluses()
            .update(t.id(), id, &patch.validate().unwrap())
            .await;
    }

    let loads = all_loads(&t).await;
    let mut recount: BTreeMap<chrono::NaiveDate, (u64, Litres)> = BTreeMap::new();
    for load in loads
        .iter()
        .filter(|l| l.status == SurplusStatus::Delivered)
    {
        let day = recount
            .entry(load.created_at.as_datetime().date_naive())
            .or_default();
        day.0 += 1;
        day.1 += load.litres();
    }
    let today = chrono::Utc::now().date_naive();
    let from = today.pred_opt().unwrap();
    let stored: BTreeMap<_, _> = store
        .rollups()
        .days(t.id(), from, today)
        .await
        .unwrap()
        .into_iter()
        .filter(|(_, f)| f.loads > 0 || f.litres.0 > 0)
        .map(|(day, f)| (day, (f.loads, f.litres)))
        .collect();
    assert_eq!(
        stored, recount,
        "seed {seed}: daily figures drifted from the loads"
    );

    let window = shared::model::report::Window { from, to: today };
    let mut billed: Vec<_> = store
        .reports()
        .billed(t.id(), window)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, litres)| litres)
        .collect();
    let mut expected: Vec<_> = loads
        .iter()
        .filter(|l| l.billing().is_some())
        .map(SurplusRecord::litres)
        .collect();
    billed.sort();
    expected.sort();
    assert_eq!(
        billed, expected,
        "seed {seed}: billing index drifted from the loads"
    );
}

#[test]
fn daily_figures_and_billing_follow_any_sequence_of_changes() {
    run(async {
        futures::future::join_all(SEEDS.map(one_sequence)).await;
    });
}

/// A day's figures are its shards' and, from before the shards, its own
/// item's, added up; the window's last day counts with all of its shards.
#[test]
fn a_days_figures_are_its_shards_and_its_item_of_before_them() {
    run(async {
        let h = harness().await;
        let t = org().await;
        let db = aws_sdk_dynamodb::Client::new(&h.sdk);
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        let pk = shared::store::engine::keys::rollup_pk(t.id());
        let items = [
            (shared::store::engine::keys::day_rollup_sk(day), 2, 5_000),
            (
                shared::store::engine::keys::day_rollup_shard_sk(day, 0),
                1,
                1_500,
            ),
            (
                shared::store::engine::keys::day_rollup_shard_sk(day, 7),
                3,
                250,
            ),
            // The next day: outside the window.
            (
                shared::store::engine::keys::day_rollup_shard_sk(day.succ_opt().unwrap(), 1),
                9,
                9,
            ),
        ];
        for (sk, loads, litres) in items {
            db.put_item()
                .table_name(h.store().table())
                .item("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk.clone()))
                .item("sk", aws_sdk_dynamodb::types::AttributeValue::S(sk))
                .item(
                    "loads",
                    aws_sdk_dynamodb::types::AttributeValue::N(loads.to_string()),
                )
                .item(
                    "litres",
                    aws_sdk_dynamodb::types::AttributeValue::N(litres.to_string()),
                )
                .send()
                .await
                .unwrap();
        }
        let rollups = h.store().rollups();
        let from = day.pred_opt().unwrap();
        let days = rollups.days(t.id(), from, day).await.unwrap();
        assert_eq!(days.len(), 1);
        assert_eq!((days[&day].loads, days[&day].litres), (6, Litres(6_750)));
        let (total, read) = rollups.totals(t.id(), from, day).await.unwrap();
        assert_eq!((total.loads, total.litres, read), (6, Litres(6_750), 3));
    });
}
