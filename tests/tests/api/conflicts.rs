//! A transaction cancelled because another transaction held one of its
//! items (`TransactionConflict`) is tried again (`store::exactly_once::tx::transact`),
//! after a pause that grows (20, 40, 60 ms), at most four times in all,
//! then a clean 500; a transaction cancelled for any other reason is not
//! tried again. The conflicts are DynamoDB's answers, injected at the wire
//! (`Cut::Cancel`): the engine makes them only by chance.

use std::time::Duration;

use api_tests::cuts::{Cut, Cuts};
use api_tests::{TestOrg, call, harness, org, run, send};
use axum::Router;
use http::Method;
use serde_json::json;

const TRANSACT: &str = "TransactWriteItems";

/// The pause before each attempt after the first.
const PAUSES: [Duration; 3] = [
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(60),
];

struct Bench {
    t: TestOrg,
    faulty: Router,
    cuts: Cuts,
}

impl Bench {
    async fn new() -> Bench {
        let h = harness().await;
        let cuts = Cuts::default();
        let state = shared::state::AppState::new((*h.state.config).clone(), &cuts.sdk(&h.sdk));
        Bench {
            t: org().await,
            faulty: shared::http::app(local::routes(), state),
            cuts,
        }
    }

    /// `POST /sites` through the faulty client, with `idempotency_key`.
    async fn create_site(&self, idempotency_key: Option<&str>) -> api_tests::Reply {
        let mut request = call(Method::POST, "/api/v1/sites").key(&self.t.key);
        if let Some(idempotency_key) = idempotency_key {
            request = request.header("idempotency-key", idempotency_key);
        }
        request
            .json(&json!({"name": "Contested yard"}))
            .send_to(&self.faulty)
            .await
    }

    async fn sites(&self) -> usize {
        let reply = send(&self.t, Method::GET, "/api/v1/sites", None).await;
        reply.expect(200, None);
        reply.body["data"].as_array().unwrap().len()
    }

    /// The transactions tried since `mark`, and that each after the first
    /// waited at least its pause.
    fn attempts(&self) -> usize {
        let made = self.cuts.made(TRANSACT);
        for (i, pair) in made.windows(2).enumerate() {
            let waited = pair[1] - pair[0];
            assert!(
                waited >= PAUSES[i],
                "attempt {} followed the one before after {waited:?}, not {:?}",
                i + 2,
                PAUSES[i]
            );
        }
        made.len()
    }
}

#[test]
fn a_transaction_cancelled_by_conflicts_is_tried_again_and_commits_once() {
    run(async {
        let b = Bench::new().await;
        b.cuts.mark();
        b.cuts
            .arm_each(Cut::Cancel("TransactionConflict"), TRANSACT, 3);
        let made = b.create_site(Some("conflicted-site")).await;
        made.expect(201, None);
        assert_eq!(b.attempts(), 4, "three conflicts, then the commit");
        assert_eq!(b.sites().await, 1);
        // The answer committed with the record is the one its key replays.
        let replay = b.create_site(Some("conflicted-site")).await;
        replay.expect(201, None);
        assert_eq!(replay.body, made.body);
        assert_eq!(b.sites().await, 1);
    });
}

#[test]
fn a_transaction_that_keeps_conflicting_is_tried_four_times_then_a_clean_500() {
    run(async {
        let b = Bench::new().await;
        b.cuts.mark();
        b.cuts
            .arm_each(Cut::Cancel("TransactionConflict"), TRANSACT, 10);
        b.create_site(None)
            .await
            .expect(500, Some("internal_error"));
        b.cuts.disarm();
        assert_eq!(b.attempts(), 4);
        assert_eq!(b.sites().await, 0);
    });
}

#[test]
fn a_transaction_cancelled_for_another_reason_is_not_tried_again() {
    run(async {
        let b = Bench::new().await;
        b.cuts.mark();
        b.cuts.arm_first(Cut::Cancel("ValidationError"), TRANSACT);
        b.create_site(None)
            .await
            .expect(500, Some("internal_error"));
        assert_eq!(b.attempts(), 1);
        assert_eq!(b.sites().await, 0);
    });
}
