//! The sweeper decides from what no function can write: a staged-file
//! item (`FILE#<path>` / `STAGED`) is a request's word, and every API role
//! may write items of the table (the template denies `FILE#` to all but
//! the functions that stage files; this is the defence behind it). Items
//! planted as a compromised function could plant them, each in turn, and
//! a sweep after each: the item is refused unless its path is a new file
//! of its owner's, typed as its kind, its upload under its owner's own
//! uploads, and its record names it; and even then nothing is written
//! over an object. Nothing changes: the delivered load's waybill keeps its
//! bytes and its type, and no object appears where a record could point.

use api_tests::webhooks::{Stack, quick_policy};
use api_tests::*;
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use serde_json::{Value, json};
use shared::files::paths::{self, Area};
use shared::files::promote::Swept;
use shared::files::{Files, ImageKind};
use shared::model::Timestamp;
use shared::store::engine::keys;
use shared::store::exactly_once::staged::{Owner, StagedFile};
use uuid::Uuid;

use crate::waybills::PNG;

const BOUNDARY: &str = "forged-boundary";
/// What a forger would have served as a waybill.
const PAGE: &[u8] = b"<html><script>steal()</script></html>";

/// Plants `file` as its item, as a function role could write it.
async fn plant(table: &str, file: &StagedFile) {
    let h = harness().await;
    let mut item = shared::store::engine::item::to_item(file).unwrap();
    let s = |v: String| AttributeValue::S(v);
    item.insert("pk".into(), s(keys::staged_file_pk(&file.path)));
    item.insert("sk".into(), s(keys::STAGED_SK.into()));
    // Under the hour's partition of before the shards: the sweeper reads
    // it still.
    item.insert(
        "gsi1pk".into(),
        s(keys::staged_hour_pk(file.created_at.as_datetime(), None)),
    );
    item.insert(
        "gsi1sk".into(),
        s(format!("{}#{}", file.created_at, file.path)),
    );
    shared::store::Store::client(&h.sdk)
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .expect("a function may write under FILE#");
}

#[test]
fn forged_staged_items_copy_nothing_and_write_over_nothing() {
    run(async {
        // A table of its own: the sweep reads a whole table's staged files.
        let stack = Stack::new(quick_policy(1), true, |_| {}).await;
        let config = stack.api.config.clone();
        let (table, bucket) = (config.store.table.clone(), config.files.bucket.clone());
        let files = Files::new(&harness().await.sdk, &bucket);
        let (victim, forger) = (stack.org().await, stack.org().await);
        let send = |t: &TestOrg, method: Method, path: String, body: Value| {
            let c = call(method, &path).key(&t.key).json(&body);
            let router = stack.router.clone();
            async move { c.send_to(&router).await }
        };
        let load_of = async |t: &TestOrg| -> Uuid {
            let site = send(
                t,
                Method::POST,
                "/api/v1/sites".into(),
                json!({"name": "Yard"}),
            )
            .await;
            let body = json!({"site_id": site.body["data"]["id"], "volume_m3": 2});
            let load = send(t, Method::POST, "/api/v1/surpluses".into(), body).await;
            load.body["data"]["id"].as_str().unwrap().parse().unwrap()
        };
        // The victim's load, its waybill in place, delivered (locked).
        let load = load_of(&victim).await;
        let uploaded = call(Method::POST, &format!("/api/v1/surpluses/{load}/waybill"))
            .key(&victim.key)
            .body(
                &format!("multipart/form-data; boundary={BOUNDARY}"),
                multipart(BOUNDARY, &[], Some(("w.png", "image/png", PNG))),
            )
            .send_to(&stack.router)
            .await;
        uploaded.expect(200, None);
        let kept = uploaded.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        send(
            &victim,
            Method::PATCH,
            format!("/api/v1/surpluses/{load}"),
            json!({"status": "delivered"}),
        )
        .await
        .expect(200, None);
        let original = Some((PNG.to_vec(), "image/png".to_owned()));
        assert_eq!(object(&bucket, &kept).await, original);
        let site = send(
            &victim,
            Method::POST,
            "/api/v1/sites".into(),
            json!({"name": "Gate"}),
        )
        .await;
        let body = json!({"site_id": site.body["data"]["id"], "name": "Gate"});
        let point = send(
            &victim,
            Method::POST,
            "/api/v1/receiving-points".into(),
            body,
        )
        .await;
        point.expect(201, None);
        let point: Uuid = point.body["data"]["id"].as_str().unwrap().parse().unwrap();

        // The forger's bytes, under the victim's uploads and its own.
        let forger_load = load_of(&forger).await;
        let put = async |org: Uuid, owner: Uuid| {
            let path = paths::new(Area::Uploads, org, owner, ImageKind::Png);
            files.put(&path, PAGE.into(), ImageKind::Png).await.unwrap();
            path
        };
        let in_victims = put(victim.id(), load).await;
        let in_forgers = put(forger.id(), forger_load).await;
        let photo_upload = put(victim.id(), point).await;

        let waybill = |path: &str, upload: &str, content_type: &str| StagedFile {
            path: path.to_owned(),
            upload: upload.to_owned(),
            version: None,
            etag: None,
            content_type: content_type.to_owned(),
            owner: Owner::Surplus {
                org_id: victim.id(),
                id: load,
            },
            created_at: Timestamp::now(),
        };
        let unnamed_photo = paths::new(Area::ReceivingPoints, victim.id(), point, ImageKind::Png);
        let forgeries = [
            // Everything as a request would stage it, over the kept file:
            // in place already, nothing written over it.
            (
                "over the kept file",
                waybill(&kept, &in_victims, "image/png"),
                (1, 0, 0),
            ),
            (
                "typed as a page",
                waybill(&kept, &in_victims, "text/html"),
                (0, 0, 1),
            ),
            (
                "from the forger's uploads",
                waybill(&kept, &in_forgers, "image/png"),
                (0, 0, 1),
            ),
            (
                "at a path of another shape",
                waybill(
                    &format!("waybills/{}/{load}/index.html", victim.id()),
                    &in_victims,
                    "text/html",
                ),
                (0, 0, 1),
            ),
            (
                "for another owner",
                StagedFile {
                    owner: Owner::Surplus {
                        org_id: forger.id(),
                        id: forger_load,
                    },
                    ..waybill(&kept, &in_forgers, "image/png")
                },
                (0, 0, 1),
            ),
            (
                "as a photo its point does not name",
                StagedFile {
                    owner: Owner::ReceivingPoint {
                        org_id: victim.id(),
                        id: point,
                    },
                    ..waybill(&unnamed_photo, &photo_upload, "image/png")
                },
                (0, 1, 0),
            ),
        ];
        for (what, forged, (promoted, dropped, refused)) in forgeries {
            plant(&table, &forged).await;
            let (_, swept) = stack.dispatcher.scheduled().await.unwrap();
            assert_eq!(
                swept,
                Swept {
                    promoted,
                    dropped,
                    refused,
                    failed: 0
                },
                "{what}"
            );
            assert_eq!(
                object(&bucket, &kept).await,
                original,
                "{what}: the kept file"
            );
            assert_eq!(
                object(&bucket, &forged.path).await.map(|(b, _)| b == PNG),
                (forged.path == kept).then_some(true),
                "{what}: {}",
                forged.path
            );
            // Its item is out of the sweeper's way: nothing is tried again.
            assert_eq!(
                stack.state.store.staged().get(&forged.path).await.unwrap(),
                None,
                "{what}"
            );
        }
        // The link still serves the victim's bytes.
        let read = send(
            &victim,
            Method::GET,
            format!("/api/v1/surpluses/{load}"),
            Value::Null,
        )
        .await;
        let url = read.body["data"]["waybill"]["url"].as_str().unwrap();
        assert_eq!(http("GET", url, &[], b"").await, (200, PNG.to_vec()));
    });
}
