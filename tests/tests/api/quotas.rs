//! The fixed-window quotas of one API key (`store::quotas::WindowQuota`,
//! behind `Ctx::spend`: geocoding calls, password hashes), counted in the
//! table at times the test chooses.

use std::time::Duration;

use api_tests::{harness, run};
use shared::store::item::s;
use shared::store::quotas::{Counted, WindowQuota};

const HOUR: u64 = 3_600_000;

/// A full window is refused until the window ends, `Retry-After` the
/// seconds left (a part of one counted whole); the next window counts
/// afresh; the window's item outlives its window by a period (its TTL only
/// clears it: the count is judged by the time).
#[test]
fn a_full_window_is_refused_until_it_ends_and_its_item_outlives_it() {
    run(async {
        let h = harness().await;
        let store = h.store();
        let quota = WindowQuota {
            pk: format!("TEST#window#{}", uuid::Uuid::now_v7()),
            uses: 2,
            period: Duration::from_millis(HOUR),
        };
        let count = |now: u64| {
            let (store, quota) = (store.clone(), quota.clone());
            async move { store.quotas().count(&quota, now).await.unwrap() }
        };
        let window = 490_000;
        let start = window * HOUR;
        let now = start + 20 * 60_000 + 500;
        assert_eq!(count(now).await, Counted::Within { remaining: 1 });
        assert_eq!(count(now).await, Counted::Within { remaining: 0 });
        // 39 min 59.5 s left in the window.
        assert_eq!(count(now).await, Counted::Full { retry_after: 2_400 });
        assert_eq!(
            count(start + HOUR - 1).await,
            Counted::Full { retry_after: 1 }
        );
        assert_eq!(count(start + HOUR).await, Counted::Within { remaining: 1 });

        let item = aws_sdk_dynamodb::Client::new(&h.sdk)
            .get_item()
            .table_name(store.table())
            .key("pk", s(quota.pk.clone()))
            .key("sk", s(format!("W#{window}")))
            .send()
            .await
            .unwrap()
            .item
            .expect("the window's item");
        assert_eq!(
            item["uses"].as_n().unwrap(),
            "2",
            "refusals counted nothing"
        );
        let ttl: u64 = item["ttl"].as_n().unwrap().parse().unwrap();
        assert_eq!(
            ttl,
            (start + 2 * HOUR) / 1000,
            "kept a period past its window"
        );
    });
}
