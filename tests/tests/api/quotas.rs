//! The quotas of one subject, counted in the table at times the test
//! chooses: the fixed-window ones of an API key (`WindowQuota`, behind
//! `Ctx::spend`: geocoding calls, password hashes) and the sliding ones
//! with a slot per use (`Quota`: support tickets).

use std::time::Duration;

use api_tests::cuts::{Cut, Cuts};
use api_tests::{harness, run, stored};
use shared::store::exactly_once::quotas::{Counted, Quota, Reserved, WindowQuota};

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
            let quota = &quota;
            async move { store.quotas().count(quota, now).await.unwrap() }
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

        let item = stored(quota.pk.clone(), &format!("W#{window}"))
            .await
            .unwrap();
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

/// A slot's write whose answer was lost is sent again by the SDK and
/// refused (the slot is no longer free): it is the use's own slot, and the
/// use holds that one, not a second. The item is kept a period past the
/// use (its TTL only clears it).
#[test]
fn a_slot_whose_write_was_answered_late_is_the_uses_one_slot() {
    run(async {
        let h = harness().await;
        let cuts = Cuts::default();
        let state =
            shared::state::AppState::new((*h.state.config).clone(), &cuts.sdk_retrying(&h.sdk));
        let quota = Quota {
            pk: format!("TEST#slots#{}", uuid::Uuid::now_v7()),
            uses: 3,
            period: Duration::from_millis(HOUR),
        };
        let now = 490_000 * HOUR + 1_234;
        cuts.arm_on(Cut::Cut, "UpdateItem", "TEST#slots#");
        let reserved = state
            .store
            .quotas()
            .reserve(&quota, now, None)
            .await
            .unwrap();
        cuts.disarm();
        assert!(cuts.broken().is_some(), "the slot's answer was lost");
        let Reserved::Held(slot) = reserved else {
            panic!("{reserved:?}");
        };
        assert_eq!(slot.remaining, 2);
        let item = stored(quota.pk.clone(), shared::store::engine::keys::QUOTA_SK)
            .await
            .unwrap();
        assert_eq!(item["s0"].as_n().unwrap(), &now.to_string());
        assert!(!item.contains_key("s1"), "one slot: {item:?}");
        let ttl: u64 = item["ttl"].as_n().unwrap().parse().unwrap();
        assert_eq!(
            ttl,
            now.div_ceil(1000) + 3_600,
            "kept a period past the use"
        );
    });
}
