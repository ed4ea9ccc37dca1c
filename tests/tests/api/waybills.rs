//! Waybills: the multipart upload, the direct upload to S3 with its
//! confirmation, the signed link, replacement, and the Lambda adapter.

use api_tests::{Reply, TestOrg, call, harness, http, multipart, org, run, send};
use http::Method;
use serde_json::{Value, json};

use crate::sites::new_site;
use crate::surpluses::{new_load, patch};

pub(crate) const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0";
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0";
const BOUNDARY: &str = "waybill-boundary";

pub(crate) async fn upload(t: &TestOrg, id: &str, file: Option<(&str, &str, &[u8])>) -> Reply {
    call(Method::POST, &format!("/api/v1/surpluses/{id}/waybill"))
        .key(&t.key)
        .body(
            &format!("multipart/form-data; boundary={BOUNDARY}"),
            multipart(BOUNDARY, &[("note", "from the cab")], file),
        )
        .send()
        .await
}

/// What the signed link serves.
async fn download(url: &str) -> (u16, Vec<u8>) {
    http("GET", url, &[], b"").await
}

async fn stored(path: &str) -> bool {
    let h = harness().await;
    shared::files::Files::new(&h.sdk, &h.state.config.files.bucket)
        .peek(path)
        .await
        .unwrap()
        .is_some()
}

#[test]
fn a_confirmation_copies_the_version_it_checked_not_one_written_over_it() {
    run(async {
        use shared::files::{Files, ImageKind};
        let h = harness().await;
        let files = Files::new(&h.sdk, &h.state.config.files.bucket);
        let upload = format!(
            "uploads/{}/{}/a.png",
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7()
        );
        let kept = upload.replacen("uploads/", "waybills/", 1);
        files
            .put(&upload, PNG.to_vec().into(), ImageKind::Png)
            .await
            .unwrap();
        let checked = files.peek(&upload).await.unwrap().unwrap();
        let sniffed = PNG[..shared::files::SNIFF_BYTES].to_vec();
        assert_eq!(checked.head, sniffed);
        // The form is reused between the check and the copy.
        let script = b"<script>not an image</script>".to_vec();
        files
            .put(&upload, script.into(), ImageKind::Png)
            .await
            .unwrap();
        assert_eq!(
            files
                .copy_new(
                    &upload,
                    checked.version.as_deref(),
                    checked.etag.as_deref(),
                    &kept,
                    ImageKind::Png.content_type()
                )
                .await
                .unwrap(),
            shared::files::Copied::Done
        );
        let copied = files.peek(&kept).await.unwrap().unwrap();
        assert_eq!((copied.size, copied.head), (PNG.len() as u64, sniffed));
    });
}

#[test]
fn a_multipart_upload_stores_the_image_its_bytes_say() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        // A PNG named .jpg and declared JPEG: stored as the PNG it is.
        let reply = upload(&t, &id, Some(("w.jpg", "image/jpeg", PNG))).await;
        reply.expect(200, None);
        let w = &reply.body["data"]["waybill"];
        let path = w["storage_path"].as_str().unwrap().to_owned();
        assert!(
            path.starts_with(&format!("waybills/{}/{id}/", t.id())),
            "{path}"
        );
        assert!(path.ends_with(".png"), "{path}");
        let expires: chrono::DateTime<chrono::Utc> =
            w["url_expires_at"].as_str().unwrap().parse().unwrap();
        assert!(
            ((expires - chrono::Utc::now()).num_seconds() - 86_400).abs() < 60,
            "about 24 hours"
        );
        let (status, bytes) = download(w["url"].as_str().unwrap()).await;
        assert_eq!(
            (status, bytes.as_slice()),
            (200, PNG),
            "the link downloads the bytes"
        );
        // The read signs a fresh link to the same file.
        let read = send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        assert_eq!(read.body["data"]["waybill"]["storage_path"], path);
        // Replacing it before delivery deletes the old file.
        let again = upload(&t, &id, Some(("w.jpg", "image/jpeg", JPEG))).await;
        again.expect(200, None);
        assert!(!stored(&path).await, "the replaced file is gone");
        let new_path = again.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(stored(&new_path).await);
        // Delivered: the waybill is final.
        patch(&t, &id, json!({"status": "delivered"}))
            .await
            .expect(200, None);
        upload(&t, &id, Some(("w.png", "image/png", PNG)))
            .await
            .expect(409, Some("waybill_locked"));
        assert_eq!(
            send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None)
                .await
                .body["data"]["waybill"]["storage_path"],
            new_path
        );
    });
}

#[test]
fn each_bad_upload_has_its_own_code_and_stores_nothing() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        upload(&t, &id, None)
            .await
            .expect(422, Some("file_missing"));
        upload(&t, &id, Some(("w.png", "image/png", b"")))
            .await
            .expect(422, Some("file_empty"));
        upload(
            &t,
            &id,
            Some(("w.png", "image/png", b"this is a text file, not a png")),
        )
        .await
        .expect(422, Some("unsupported_file_type"));
        let mut big = PNG.to_vec();
        big.resize(10 * 1024 * 1024 + 1, 0);
        upload(&t, &id, Some(("w.png", "image/png", &big)))
            .await
            .expect(413, Some("file_too_large"));
        call(Method::POST, &format!("/api/v1/surpluses/{id}/waybill"))
            .key(&t.key)
            .json(&json!({"file": "nope"}))
            .send()
            .await
            .expect(400, Some("invalid_multipart"));
        let read = send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        assert_eq!(read.body["data"]["waybill"], Value::Null);
        // Exactly 10 MiB is fine.
        let mut max = PNG.to_vec();
        max.resize(10 * 1024 * 1024, 0);
        upload(&t, &id, Some(("w.png", "image/png", &max)))
            .await
            .expect(200, None);
    });
}

/// Posts a presigned form to moto's S3 as a browser would.
pub(crate) async fn post_form(form: &Value, content_type: &str, bytes: &[u8]) -> u16 {
    let fields: Vec<(String, String)> = form["fields"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let fields: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = multipart(BOUNDARY, &fields, Some(("w", content_type, bytes)));
    http(
        "POST",
        form["url"].as_str().unwrap(),
        &[(
            "Content-Type",
            &format!("multipart/form-data; boundary={BOUNDARY}"),
        )],
        &body,
    )
    .await
    .0
}

#[test]
fn a_direct_upload_counts_once_confirmed() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        let grant = send(
            &t,
            Method::POST,
            &format!("/api/v1/surpluses/{id}/waybill/upload"),
            Some(json!({"content_type": "image/jpeg"})),
        )
        .await;
        grant.expect(200, None);
        let form = &grant.body["data"];
        let path = form["storage_path"].as_str().unwrap().to_owned();
        let name = path
            .strip_prefix(&format!("uploads/{}/{id}/", t.id()))
            .expect("forms write under the load's uploads prefix");
        assert_eq!(form["fields"]["key"], path);
        assert_eq!(form["fields"]["Content-Type"], "image/jpeg");
        for field in [
            "policy",
            "x-amz-signature",
            "x-amz-credential",
            "x-amz-date",
            "x-amz-algorithm",
        ] {
            assert!(form["fields"][field].is_string(), "{field}");
        }
        assert!(form["expires_at"].is_string());
        // Nothing uploaded yet.
        let confirm_path = format!("/api/v1/surpluses/{id}/waybill/confirm");
        let confirm = |storage_path: String| {
            send(
                &t,
                Method::POST,
                &confirm_path,
                Some(json!({"storage_path": storage_path})),
            )
        };
        confirm(path.clone())
            .await
            .expect(422, Some("upload_not_found"));
        let status = post_form(form, "image/jpeg", JPEG).await;
        assert!((200..300).contains(&status), "upload answered {status}");
        let done = confirm(path.clone()).await;
        done.expect(200, None);
        // Kept under a name of its own among the waybills; the upload is
        // left to the bucket's rule for uploads/ (it expires after a day).
        let kept = done.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        let kept_name = kept
            .strip_prefix(&format!("waybills/{}/{id}/", t.id()))
            .expect("kept under the load's waybills prefix");
        assert!(kept_name.ends_with(".jpg") && kept_name != name, "{kept}");
        assert!(stored(&kept).await);
        assert!(stored(&path).await, "the upload stays until it expires");
        let staged = harness().await.store().staged().get(&kept).await.unwrap();
        assert_eq!(staged, None, "in place: nothing left for the sweeper");
        let (status, bytes) = download(done.body["data"]["waybill"]["url"].as_str().unwrap()).await;
        assert_eq!((status, bytes.as_slice()), (200, JPEG));
        // A retry of the confirmation answers the same load and keeps the file.
        let again = confirm(path.clone()).await;
        again.expect(200, None);
        assert_eq!(again.body["data"]["waybill"]["storage_path"], kept);
        assert!(
            stored(&kept).await,
            "a retry never deletes the kept waybill"
        );
        // Another load's path, a kept waybill, or anything but a form's
        // `<id>.<ext>` under this load's uploads prefix is refused.
        let fresh = uuid::Uuid::now_v7();
        for other in [
            format!("uploads/{}/{fresh}/{name}", t.id()),
            kept.clone(),
            "../../etc/passwd".to_owned(),
            format!("uploads/{}/{id}/../{name}", t.id()),
            format!("uploads/{}/{id}/{fresh}.gif", t.id()),
            format!("uploads/{}/{id}/{}.jpg", t.id(), fresh.simple()),
            format!("uploads/{}/{id}/{name}/x", t.id()),
        ] {
            confirm(other).await.expect(422, Some("upload_not_found"));
        }
        send(
            &t,
            Method::POST,
            &format!("/api/v1/surpluses/{id}/waybill/upload"),
            Some(json!({"content_type": "image/gif"})),
        )
        .await
        .expect(422, Some("validation_error"));
    });
}

#[test]
fn a_direct_upload_that_is_no_image_is_deleted() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        let grant = send(
            &t,
            Method::POST,
            &format!("/api/v1/surpluses/{id}/waybill/upload"),
            Some(json!({"content_type": "image/png"})),
        )
        .await;
        let form = &grant.body["data"];
        let path = form["storage_path"].as_str().unwrap().to_owned();
        // moto checks no policy; S3 would take this type, not these bytes.
        post_form(form, "image/png", b"<html>not an image</html>").await;
        assert!(stored(&path).await);
        send(
            &t,
            Method::POST,
            &format!("/api/v1/surpluses/{id}/waybill/confirm"),
            Some(json!({"storage_path": path})),
        )
        .await
        .expect(422, Some("unsupported_file_type"));
        assert!(!stored(&path).await, "the object that failed is deleted");
        let read = send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        assert_eq!(read.body["data"]["waybill"], Value::Null);
    });
}

#[test]
fn the_api_gateway_upload_event_runs_through_the_lambda_adapter() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut event: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("events/surplus-waybill.json")).unwrap(),
        )
        .unwrap();
        // The sample's load and key are placeholders: point them at this test's.
        let path = event["rawPath"]
            .as_str()
            .unwrap()
            .replace("{surplusId}", &id);
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["path"] = event["rawPath"].clone();
        event["pathParameters"]["surplusId"] = json!(id);
        event["headers"]["authorization"] = json!(format!("Bearer {}", t.key));
        let request_id = api_tests::unique("gateway-request");
        event["requestContext"]["requestId"] = json!(request_id);
        let request =
            lambda_http::request::from_str(&event.to_string()).expect("an API Gateway v2 event");
        assert!(event["isBase64Encoded"].as_bool().unwrap());
        // The invocation's context, as `lambda_http::run` adds it.
        let mut context = lambda_http::Context::default();
        context.request_id = "c6af9ac6-7b61-11e6-9a41-93e812345678".into();
        context.xray_trace_id = Some(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1".into(),
        );
        let request = lambda_http::RequestExt::with_lambda_context(request, context);
        let router = surpluses::router(harness().await.state.clone());
        // The same service `lambda_http::run` hands the events to.
        let response = tower::ServiceExt::oneshot(router, request).await.unwrap();
        assert_eq!(response.status(), 200);
        // Its line names the gateway's request, the trace and the invocation.
        let line = api_tests::metrics::of_request(&request_id);
        assert_eq!(line["trace_id"], "1-5759e988-bd862e3fe1be46a994272793");
        assert_eq!(
            line["invocation_id"],
            "c6af9ac6-7b61-11e6-9a41-93e812345678"
        );
        // Its trace has its calls to S3 in it (the context said sampled).
        let spans = api_tests::traces::spans_of("5759e988bd862e3fe1be46a994272793");
        let names: Vec<&str> = spans.iter().filter_map(|s| s["name"].as_str()).collect();
        for call in [
            "S3.PutObject",
            "S3.CopyObject",
            "POST /api/v1/surpluses/{surplusId}/waybill",
        ] {
            assert!(names.contains(&call), "{call} in {names:?}");
        }
        let read = send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        let (_, bytes) = download(read.body["data"]["waybill"]["url"].as_str().unwrap()).await;
        assert!(shared::files::ImageKind::sniff(&bytes).is_some());
    });
}

/// A request that died between its load's commit and the copy of its file
/// (the function killed): the load names its waybill, whose link answers
/// 404 until the sweep puts the file in place. A staged file whose load
/// named another one before the sweep came is dropped, never copied.
#[test]
fn the_sweep_puts_in_place_what_a_dead_request_left_and_drops_what_was_replaced() {
    use api_tests::cuts::{Cut, Cuts};
    use api_tests::webhooks::{Stack, quick_policy};
    run(async {
        // A table of its own: the sweep reads a whole table's staged files.
        let stack = Stack::new(quick_policy(1), true, |_| {}).await;
        let t = stack.org().await;
        let cuts = Cuts::default();
        let sdk = cuts.sdk(&harness().await.sdk);
        let faulty = shared::state::AppState::new((*stack.api.config).clone(), &sdk);
        let faulty = shared::http::app(local::routes(), faulty);
        let on = |method: Method, path: String, body: Value| {
            call(method, &path)
                .key(&t.key)
                .json(&body)
                .send_to(&stack.router)
        };
        let site = on(
            Method::POST,
            "/api/v1/sites".into(),
            json!({"name": "Origin"}),
        )
        .await;
        let body = json!({"site_id": site.body["data"]["id"], "volume_m3": 2});
        let load = on(Method::POST, "/api/v1/surpluses".into(), body).await;
        let id = load.body["data"]["id"].as_str().unwrap().to_owned();
        let form = |bytes: &[u8]| multipart(BOUNDARY, &[], Some(("w.png", "image/png", bytes)));
        let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
        let upload_path = format!("/api/v1/surpluses/{id}/waybill");
        let dies_before_the_copy = async |bytes: &[u8]| {
            // Held before its copy leaves, then dropped: killed there.
            cuts.arm_first(Cut::Stall, "CopyObject");
            let sent = call(Method::POST, &upload_path)
                .key(&t.key)
                .body(&content_type, form(bytes))
                .send_to(&faulty);
            tokio::select! {
                reply = sent => panic!("the request was to die: {}", reply.text),
                () = cuts.stalled() => {}
            }
            cuts.disarm();
            let read = on(Method::GET, format!("/api/v1/surpluses/{id}"), Value::Null).await;
            read.body["data"]["waybill"].clone()
        };
        let store = &stack.state.store;

        let left = dies_before_the_copy(PNG).await;
        let path = left["storage_path"].as_str().unwrap().to_owned();
        assert_eq!(download(left["url"].as_str().unwrap()).await.0, 404);
        assert!(store.staged().get(&path).await.unwrap().is_some());
        let (_, swept) = stack.dispatcher.scheduled().await.unwrap();
        assert_eq!((swept.promoted, swept.dropped, swept.failed), (1, 0, 0));
        assert_eq!(
            download(left["url"].as_str().unwrap()).await,
            (200, PNG.to_vec())
        );
        assert_eq!(store.staged().get(&path).await.unwrap(), None);

        let replaced = dies_before_the_copy(JPEG).await;
        let replaced = replaced["storage_path"].as_str().unwrap().to_owned();
        let last = call(Method::POST, &upload_path)
            .key(&t.key)
            .body(&content_type, form(PNG))
            .send_to(&stack.router)
            .await;
        last.expect(200, None);
        let (_, swept) = stack.dispatcher.scheduled().await.unwrap();
        assert_eq!((swept.promoted, swept.dropped, swept.failed), (0, 1, 0));
        assert!(
            !stored(&replaced).await,
            "a file no record names is never copied"
        );
        let kept = last.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap();
        assert!(stored(kept).await);
        let (_, swept) = stack.dispatcher.scheduled().await.unwrap();
        assert_eq!(
            swept,
            shared::files::promote::Swept::default(),
            "nothing left"
        );
    });
}

/// An attempt paused after its commit and before its copy, thawed after
/// the load's waybill was replaced by another request: its copy checks
/// the load first and places nothing (no object under `waybills/` that no
/// record names), and its staged item is done.
#[test]
fn a_copy_thawed_after_the_waybill_was_replaced_places_nothing() {
    use api_tests::cuts::{Cut, Cuts};
    use shared::files::promote::{Promoted, promote};
    run(async {
        let h = harness().await;
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        let cuts = Cuts::default();
        let faulty = shared::state::AppState::new((*h.state.config).clone(), &cuts.sdk(&h.sdk));
        let faulty = shared::http::app(local::routes(), faulty);
        // Paused before its copy leaves (its commit made), and left there.
        cuts.arm_first(Cut::Stall, "CopyObject");
        let paused = call(Method::POST, &format!("/api/v1/surpluses/{id}/waybill"))
            .key(&t.key)
            .body(
                &format!("multipart/form-data; boundary={BOUNDARY}"),
                multipart(BOUNDARY, &[], Some(("w.png", "image/png", PNG))),
            )
            .send_to(&faulty);
        tokio::select! {
            reply = paused => panic!("the attempt was to pause: {}", reply.text),
            () = cuts.stalled() => {}
        }
        cuts.disarm();
        let read = send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        let first = read.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        let staged = h
            .store()
            .staged()
            .get(&first)
            .await
            .unwrap()
            .expect("staged");
        // Another request replaces the waybill meanwhile.
        upload(&t, &id, Some(("w.jpg", "image/jpeg", JPEG)))
            .await
            .expect(200, None);
        let read = send(&t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await;
        let kept = read.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_ne!(kept, first);
        // The paused attempt's copy, thawed.
        let files = shared::files::Files::new(&h.sdk, &h.state.config.files.bucket);
        let done = promote(&files, h.store(), &staged).await.unwrap();
        assert_eq!(done, Promoted::Replaced);
        assert!(
            !stored(&first).await,
            "nothing placed where no record points"
        );
        assert!(stored(&kept).await);
        assert_eq!(h.store().staged().get(&first).await.unwrap(), None);
    });
}
