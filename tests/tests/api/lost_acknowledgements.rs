//! Calls that take effect while their answers are lost, every attempt the
//! SDK makes of them (`Cut::Cut` on each, retries on as deployed): what
//! the request did is recognised or given back, so the client's retry
//! goes on at once and nothing is done twice.

use api_tests::cuts::{Cut, Cuts};
use api_tests::{call, harness, org, run, unique};
use http::Method;
use serde_json::json;
use shared::model::archive::StatusFilter;
use shared::model::site::SiteRecord;

/// The claim of an `Idempotency-Key` written, every acknowledgement of it
/// lost: the attempt answers 500 and gives the key back, so the retry at
/// once runs the request (not 409 `idempotency_key_in_flight` for the
/// claim's 30 s lease), once.
#[test]
fn a_claim_whose_every_acknowledgement_was_lost_leaves_its_key_to_the_retry() {
    run(async {
        let h = harness().await;
        let t = org().await;
        let cuts = Cuts::default();
        let state =
            shared::state::AppState::new((*h.state.config).clone(), &cuts.sdk_retrying(&h.sdk));
        let faulty = shared::http::app(local::routes(), state);
        let name = unique("Lost claim");
        let site = || {
            call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", "lost-claim")
                .json(&json!({"name": name}))
        };
        // Every attempt of the claim's write (and of anything after it
        // on the key's item) takes effect unheard.
        cuts.arm_each_on(Cut::Cut, "UpdateItem", "IDEM#", 6);
        let first = site().send_to(&faulty).await;
        cuts.disarm();
        assert!(
            cuts.broken().is_some_and(|b| b.contains("UpdateItem")),
            "the claim was cut"
        );
        first.expect(500, Some("internal_error"));
        let retry = site().send().await;
        retry.expect(201, None);
        assert_ne!(retry.header("idempotent-replayed"), "true");
        let again = site().send().await;
        assert_eq!((again.status.as_u16(), &again.text), (201, &retry.text));
        assert_eq!(again.header("idempotent-replayed"), "true");
        let named = h
            .store()
            .records::<SiteRecord>()
            .list(t.id(), StatusFilter::All)
            .await
            .unwrap()
            .into_iter()
            .filter(|s| s.name == name)
            .count();
        assert_eq!(named, 1, "one site");
    });
}
