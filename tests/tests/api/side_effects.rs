//! Every side effect of a request waits for its admission (`shared::gate`):
//! S3 copies and deletes and calls to the providers go only once the
//! request's key was let in, and never when it was not. A task the
//! handler spawns keeps the gate (`gate::spawn`; `tokio::spawn` is refused
//! in service code by clippy, `shared/clippy.toml`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use api_tests::{harness, run};
use shared::files::{Files, ImageKind};
use shared::gate::{WriteGate, spawn};
use shared::outbound::{Call, CallError};
use uuid::Uuid;

/// Runs `effect` in a request whose admission is still running, checks
/// that it waits, then lets the admission decide `go`: the effect's result.
async fn behind_admission<T: Send + 'static>(
    go: bool,
    effect: impl Future<Output = T> + Send + 'static,
    meanwhile: impl AsyncFnOnce(),
) -> T {
    WriteGate::default()
        .scope(async move {
            let opening = WriteGate::hold().expect("inside a request");
            let task = spawn(effect);
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(!task.is_finished(), "the effect waits for the admission");
            meanwhile().await;
            opening.decide(go);
            task.await.unwrap()
        })
        .await
}

async fn exists(files: &Files, key: &str) -> bool {
    files.peek(key).await.unwrap().is_some()
}

#[test]
fn s3_deletes_and_copies_wait_for_the_admission_and_never_go_when_refused() {
    run(async {
        let files = harness().await.state.files.clone();
        let key = format!("gate-test/{}.png", Uuid::now_v7());
        let copy = format!("{key}.copy");
        files
            .put(
                &key,
                bytes::Bytes::from_static(b"\x89PNG\r\n\x1a\n"),
                ImageKind::Png,
            )
            .await
            .unwrap();
        let peeked = files.peek(&key).await.unwrap().unwrap();
        for go in [false, true] {
            let (f, k) = (files.clone(), key.clone());
            let (c, p) = (copy.clone(), peeked.clone());
            let copied = behind_admission(
                go,
                async move {
                    let (version, etag) = (p.version.as_deref(), p.etag.as_deref());
                    f.copy_new(&k, version, etag, &c, "image/png").await
                },
                async || assert!(!exists(&files, &copy).await),
            )
            .await;
            assert_eq!(copied.is_ok(), go);
            assert_eq!(exists(&files, &copy).await, go);
        }
        for go in [false, true] {
            let (f, k) = (files.clone(), key.clone());
            let deleted = behind_admission(go, async move { f.delete(&k).await }, async || {
                assert!(exists(&files, &key).await)
            })
            .await;
            assert_eq!(deleted.is_ok(), go);
            assert_eq!(exists(&files, &key).await, !go);
        }
    });
}

#[test]
fn a_providers_call_waits_for_the_admission_and_is_never_made_when_refused() {
    run(async {
        // A provider that counts the connections it is offered.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/geocode", listener.local_addr().unwrap());
        let offered = Arc::new(AtomicUsize::new(0));
        let counter = offered.clone();
        let provider = spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(socket);
            }
        });
        let outbound = harness().await.state.outbound.clone();
        let call = move |outbound: shared::outbound::Outbound, url: String| async move {
            outbound
                .send(Call {
                    method: http::Method::GET,
                    url: &url,
                    headers: http::HeaderMap::new(),
                    json: None,
                    timeout: Duration::from_secs(2),
                })
                .await
        };
        let refused = behind_admission(false, call(outbound.clone(), url.clone()), async || {
            assert_eq!(offered.load(Ordering::SeqCst), 0)
        })
        .await;
        assert!(matches!(refused, Err(CallError::Stopped(_))), "{refused:?}");
        assert_eq!(offered.load(Ordering::SeqCst), 0, "no call was made");
        // Let in: the call is made (the provider hangs up: an error, made).
        let admitted = behind_admission(true, call(outbound, url), async || {}).await;
        assert!(admitted.is_err());
        assert_eq!(offered.load(Ordering::SeqCst), 1);
        provider.abort();
    });
}
