//! The sweeper when its own calls fail: each call a sweep makes for a
//! staged file (the look at its place, the read of its record, the copy,
//! the update that marks it done) fails once, and the next sweep finishes
//! the file: in place with the bytes its request uploaded, its item done,
//! nothing copied twice or dropped.

use api_tests::cuts::{Cut, Cuts};
use api_tests::webhooks::{Stack, quick_policy};
use api_tests::{call, harness, multipart, run};
use http::Method;
use serde_json::json;
use shared::files::promote::Swept;

use crate::waybills::PNG;

const BOUNDARY: &str = "sweep-boundary";

/// A stack with a table of its own and a load whose waybill's request died
/// between its commit and its copy: the stack and the waybill's path.
async fn a_file_left_staged() -> (Stack, String) {
    let stack = Stack::new(quick_policy(1), true, |_| {}).await;
    let t = stack.org().await;
    let send = |path: &str, body: serde_json::Value| {
        let c = call(Method::POST, path).key(&t.key).json(&body);
        let router = stack.router.clone();
        async move { c.send_to(&router).await }
    };
    let site = send("/api/v1/sites", json!({"name": "Yard"})).await;
    let load = send(
        "/api/v1/surpluses",
        json!({"site_id": site.body["data"]["id"], "volume_m3": 2}),
    )
    .await;
    let id = load.body["data"]["id"].as_str().unwrap().to_owned();
    let cuts = Cuts::default();
    let faulty =
        shared::state::AppState::new((*stack.api.config).clone(), &cuts.sdk(&harness().await.sdk));
    let faulty = shared::http::app(local::routes(), faulty);
    // Held before its copy leaves, then dropped: killed there.
    cuts.arm_first(Cut::Stall, "CopyObject");
    let dying = call(Method::POST, &format!("/api/v1/surpluses/{id}/waybill"))
        .key(&t.key)
        .body(
            &format!("multipart/form-data; boundary={BOUNDARY}"),
            multipart(BOUNDARY, &[], Some(("w.png", "image/png", PNG))),
        )
        .send_to(&faulty);
    tokio::select! {
        reply = dying => panic!("the request was to die: {}", reply.text),
        () = cuts.stalled() => {}
    }
    let read = call(Method::GET, &format!("/api/v1/surpluses/{id}"))
        .key(&t.key)
        .send_to(&stack.router)
        .await;
    let path = read.body["data"]["waybill"]["storage_path"]
        .as_str()
        .unwrap()
        .to_owned();
    (stack, path)
}

#[test]
fn a_sweep_whose_call_fails_once_is_finished_by_the_next() {
    run(async {
        // Each call of a sweep for a staged file: (its operation, a part
        // of its body when the operation is not enough, how it breaks).
        let failing: [(&str, Option<&str>, Cut); 5] = [
            // The look at the file's place (S3: method and target).
            ("HEAD http", None, Cut::Fail),
            // The read of the load that names it.
            ("DynamoDB_20120810.GetItem", Some("SURPLUS#"), Cut::Fail),
            // The copy, never made; and made, its answer lost.
            ("PUT http", None, Cut::Fail),
            ("PUT http", None, Cut::Cut),
            // The update that marks its item done.
            ("DynamoDB_20120810.UpdateItem", Some("FILE#"), Cut::Fail),
        ];
        for (operation, part, cut) in failing {
            let what = format!("{operation} {part:?} {cut:?}");
            let (stack, path) = a_file_left_staged().await;
            let bucket = stack.api.config.files.bucket.clone();
            let cuts = Cuts::default();
            let sdk = cuts.sdk(&harness().await.sdk);
            let mut state = shared::state::AppState::new((*stack.state.config).clone(), &sdk);
            state.clock = stack.state.clock.clone();
            let sweeper = webhook_dispatcher::Dispatcher::new(state, quick_policy(1));
            match part {
                Some(part) => cuts.arm_on(cut, operation, part),
                None => cuts.arm_first(cut, operation),
            }
            let (_, swept) = sweeper.scheduled().await.unwrap();
            let broken = cuts.broken();
            cuts.disarm();
            assert!(broken.is_some(), "{what}: the call was made and broken");
            assert_eq!(swept.failed, 1, "{what}: {swept:?}");
            assert!(
                stack
                    .state
                    .store
                    .staged()
                    .get(&path)
                    .await
                    .unwrap()
                    .is_some(),
                "{what}: still staged for the next sweep"
            );
            // The next sweep finishes it.
            let (_, swept) = sweeper.scheduled().await.unwrap();
            assert_eq!(
                swept,
                Swept {
                    promoted: 1,
                    ..Swept::default()
                },
                "{what}"
            );
            assert_eq!(
                api_tests::object(&bucket, &path)
                    .await
                    .map(|(bytes, _)| bytes),
                Some(PNG.to_vec()),
                "{what}"
            );
            assert_eq!(
                stack.state.store.staged().get(&path).await.unwrap(),
                None,
                "{what}"
            );
            let (_, swept) = sweeper.scheduled().await.unwrap();
            assert_eq!(swept, Swept::default(), "{what}: nothing left");
        }
    });
}
