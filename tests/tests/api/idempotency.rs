//! `Idempotency-Key` on POST: a retry with the same key and request gets
//! the first answer without running again; another request with the key is
//! 422 `idempotency_key_reused`; a key still in flight is 409
//! `idempotency_key_in_flight`; keys belong to one API key and last 24 h.
//! The walk over every POST of the description is `every_post_*` below.

use api_tests::{Reply, TestOrg, call, harness, new_key, org, run, send, unique};
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::http::idempotency;

use crate::isolation::{Owner, everything_read, request};

const SITES: &str = "/api/v1/sites";

async fn post(key: &str, path: &str, idempotency_key: &str, body: &Value) -> Reply {
    call(Method::POST, path)
        .key(key)
        .header("idempotency-key", idempotency_key)
        .json(body)
        .send()
        .await
}

async fn sites_named(t: &TestOrg, name: &str) -> Vec<String> {
    let reply = send(t, Method::GET, "/api/v1/sites?limit=100", None).await;
    reply.expect(200, None);
    reply.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == name)
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn key_id(t: &TestOrg, key: &str) -> uuid::Uuid {
    let store = harness().await.store();
    let hash = shared::auth::key::KeyHash::of(key);
    let keys = store.api_keys().list(t.id()).await.unwrap();
    keys.into_iter()
        .find(|k| k.key_hash == hash.to_hex())
        .expect("the key's summary")
        .key_id
}

/// The fingerprint the service takes of a JSON POST.
async fn fingerprint_of(path: &str, body: &Value) -> String {
    let (parts, ()) = http::Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/json")
        .body(())
        .unwrap()
        .into_parts();
    let cursors = &harness().await.state.cursors;
    idempotency::fingerprint_of(cursors, &parts, body.to_string().as_bytes())
        .await
        .unwrap()
}

/// The idempotency item of `idempotency_key` of API key `key_id`.
async fn kept_item(key_id: uuid::Uuid, idempotency_key: &str) -> shared::store::engine::item::Item {
    let store = harness().await.store();
    let item = store.idempotency().get(key_id, idempotency_key).await;
    item.unwrap().expect("the key's item")
}

/// A webhook registered with `idempotency_key`: the request's body, its
/// answer, and the secret the answer shows.
async fn register_hook(t: &TestOrg, idempotency_key: &str) -> (Value, Reply, String) {
    let url = format!("https://hooks.example.com/{}", uuid::Uuid::new_v4());
    let body = json!({"event": "surplus.delivered", "url": url});
    let first = post(&t.key, "/api/v1/webhooks", idempotency_key, &body).await;
    first.expect(201, None);
    let secret = first.body["data"]["secret"].as_str().unwrap().to_owned();
    (body, first, secret)
}

/// The id of the record an answer holds.
fn id(reply: &Reply) -> String {
    reply.body["data"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a record: {}", reply.text))
        .to_owned()
}

fn millis_now() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[test]
fn a_retry_with_the_same_key_and_body_answers_the_first_answer_and_creates_once() {
    run(async {
        let t = org().await;
        let name = unique("Once");
        let body = json!({"name": name});
        let key = unique("create-site");
        let first = post(&t.key, SITES, &key, &body).await;
        first.expect(201, None);
        assert_eq!(first.header("idempotent-replayed"), "");
        let again = post(&t.key, SITES, &key, &body).await;
        again.expect(201, None);
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, first.text);
        assert_eq!(again.header("location"), first.header("location"));
        assert_eq!(again.header("content-type"), "application/json");
        // Fresh rate-limit headers: the retry is a request of its own.
        assert_ne!(again.header("x-ratelimit-remaining"), "");
        assert_ne!(again.header("x-request-id"), first.header("x-request-id"));
        assert_eq!(sites_named(&t, &name).await, [id(&first)]);
    });
}

#[test]
fn a_replay_reads_nothing_but_the_key_and_its_claim() {
    run(async {
        let t = org().await;
        let body = json!({"name": unique("Cost")});
        let plain = send(&t, Method::POST, SITES, Some(body.clone())).await;
        plain.expect(201, None);
        let key = unique("cost");
        let body = json!({"name": unique("Cost")});
        let first = post(&t.key, SITES, &key, &body).await;
        first.expect(201, None);
        // The claim before the handler; the answer is kept in the
        // create's own transaction, at no further call.
        assert_eq!(first.ddb_calls, plain.ddb_calls + 1);
        assert_eq!(first.round_trips, plain.round_trips + 1);
        let again = post(&t.key, SITES, &key, &body).await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        // The key read and counted at once, then the claim.
        assert_eq!(again.ddb_calls, 3);
        assert!(
            (2..=3).contains(&again.round_trips),
            "{}",
            again.round_trips
        );
    });
}

#[test]
fn the_same_key_with_another_body_is_422_idempotency_key_reused_and_creates_nothing() {
    run(async {
        let t = org().await;
        let key = unique("reused");
        let first_name = unique("First");
        post(&t.key, SITES, &key, &json!({"name": first_name}))
            .await
            .expect(201, None);
        let other_name = unique("Other");
        let reused = post(&t.key, SITES, &key, &json!({"name": other_name})).await;
        reused.expect(422, Some("idempotency_key_reused"));
        assert!(sites_named(&t, &other_name).await.is_empty());
        // Another path with the key is another request too.
        let elsewhere = post(
            &t.key,
            "/api/v1/factories",
            &key,
            &json!({"name": first_name}),
        )
        .await;
        elsewhere.expect(422, Some("idempotency_key_reused"));
        // The first answer is still kept.
        let again = post(&t.key, SITES, &key, &json!({"name": first_name})).await;
        again.expect(201, None);
        assert_eq!(again.header("idempotent-replayed"), "true");
    });
}

/// Claims `idempotency_key` of `t`'s key straight in the store, as a
/// request creating a site with `body` at `at` would, leased until `until`.
pub(crate) async fn claim_site(
    t: &TestOrg,
    idempotency_key: &str,
    body: &Value,
    at: u64,
    until: u64,
) -> shared::store::exactly_once::idempotency::Claimed {
    harness()
        .await
        .store()
        .idempotency()
        .claim(
            key_id(t, &t.key).await,
            idempotency_key,
            &fingerprint_of(SITES, body).await.into(),
            at,
            until,
            at + 24 * 3_600_000,
        )
        .await
        .unwrap()
}

#[test]
fn a_key_still_in_flight_is_409_idempotency_key_in_flight() {
    run(async {
        let t = org().await;
        let key = unique("in-flight");
        let body = json!({"name": unique("Flight")});
        let now = millis_now();
        let claimed = claim_site(&t, &key, &body, now, now + 30_000).await;
        assert!(matches!(
            claimed,
            shared::store::exactly_once::idempotency::Claimed::Ours(_)
        ));
        let reply = post(&t.key, SITES, &key, &body).await;
        reply.expect(409, Some("idempotency_key_in_flight"));
        assert!(
            sites_named(&t, body["name"].as_str().unwrap())
                .await
                .is_empty()
        );
        // Another body with the key is still another request.
        post(&t.key, SITES, &key, &json!({"name": "x"}))
            .await
            .expect(422, Some("idempotency_key_reused"));
    });
}

#[test]
fn a_claim_whose_lease_lapsed_is_taken_over() {
    run(async {
        let t = org().await;
        let key = unique("lapsed");
        let body = json!({"name": unique("Lapsed")});
        let now = millis_now();
        claim_site(&t, &key, &body, now - 60_000, now - 30_000).await;
        let reply = post(&t.key, SITES, &key, &body).await;
        reply.expect(201, None);
        assert_eq!(reply.header("idempotent-replayed"), "");
    });
}

#[test]
fn an_answer_kept_past_24_hours_is_not_replayed() {
    run(async {
        let t = org().await;
        let key = unique("old");
        let name = unique("Old");
        let body = json!({"name": name});
        let first = post(&t.key, SITES, &key, &body).await;
        first.expect(201, None);
        // Age the kept answer: its retention ended a moment ago (TTL would
        // delete it only later, if at all; the service judges by the time).
        let key_id = key_id(&t, &t.key).await;
        let now = millis_now();
        let item = kept_item(key_id, &key).await;
        let until: u64 = item["until"].as_n().unwrap().parse().unwrap();
        assert!(until >= now + 23 * 3600 * 1000, "kept about 24 h: {until}");
        age(key_id, &key).await;
        let second = post(&t.key, SITES, &key, &body).await;
        second.expect(201, None);
        assert_eq!(second.header("idempotent-replayed"), "");
        assert_ne!(id(&second), id(&first));
        assert_eq!(sites_named(&t, &name).await.len(), 2);
    });
}

#[test]
fn answers_that_carry_secrets_are_kept_sealed_and_replayed_whole() {
    run(async {
        let t = org().await;
        let key_id = key_id(&t, &t.key).await;
        let stored_body = |item: &shared::store::engine::item::Item| {
            assert_eq!(item["sealed"].as_bool().ok(), Some(&true), "{item:?}");
            String::from_utf8(item["body"].as_b().unwrap().as_ref().to_vec()).unwrap()
        };

        // A webhook's secret, shown once: a retry of the same request gets
        // the same answer, secret included; at rest it is sealed.
        let key = unique("hook");
        let (body, first, secret) = register_hook(&t, &key).await;
        let again = post(&t.key, "/api/v1/webhooks", &key, &body).await;
        again.expect(201, None);
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, first.text);
        let item = kept_item(key_id, &key).await;
        let kept = stored_body(&item);
        assert!(kept.starts_with("k1."), "{kept}");
        assert!(!kept.contains(&secret[6..]) && !kept.contains("hooks.example.com"));

        // An upload form's signed credentials, likewise.
        let site = crate::sites::new_site(&t, json!({"name": "Origin"})).await;
        let load = crate::surpluses::new_load(&t, &site).await;
        let path = format!("/api/v1/surpluses/{load}/waybill/upload");
        let key = unique("form");
        let form_body = json!({"content_type": "image/png"});
        let form = post(&t.key, &path, &key, &form_body).await;
        form.expect(200, None);
        let signature = form.body["data"]["fields"]["x-amz-signature"]
            .as_str()
            .unwrap()
            .to_owned();
        let again = post(&t.key, &path, &key, &form_body).await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, form.text);
        let item = kept_item(key_id, &key).await;
        let kept = stored_body(&item);
        assert!(
            !kept.contains(&signature) && !kept.contains("x-amz"),
            "{kept}"
        );

        // Answers with links signed for 24 hours, likewise: a waybill's
        // upload and confirmation, a receiving point's restore with photos.
        let key = unique("waybill");
        let upload = api_tests::call(Method::POST, &format!("/api/v1/surpluses/{load}/waybill"))
            .key(&t.key)
            .header("idempotency-key", &key)
            .body(
                "multipart/form-data; boundary=b",
                api_tests::multipart("b", &[], Some(("w.png", "image/png", crate::waybills::PNG))),
            )
            .send()
            .await;
        upload.expect(200, None);
        let link = upload.body["data"]["waybill"]["url"].as_str().unwrap();
        let signature = link.split("X-Amz-Signature=").nth(1).unwrap();
        let item = kept_item(key_id, &key).await;
        let kept = stored_body(&item);
        assert!(
            !kept.contains(signature) && !kept.contains("X-Amz"),
            "{kept}"
        );
        let point = crate::receiving_points::point_with_photo(&t).await;
        let archive = format!("/api/v1/receiving-points/{point}");
        api_tests::call(Method::DELETE, &archive)
            .key(&t.key)
            .send()
            .await
            .expect(200, None);
        let key = unique("restore");
        let restored = post(&t.key, &format!("{archive}/restore"), &key, &Value::Null).await;
        restored.expect(200, None);
        assert!(
            restored.text.contains("X-Amz-Signature"),
            "{}",
            restored.text
        );
        let item = kept_item(key_id, &key).await;
        assert!(!stored_body(&item).contains("X-Amz"));

        // Answers without secrets stay as they were.
        let key = unique("site");
        post(&t.key, SITES, &key, &json!({"name": unique("Plain")}))
            .await
            .expect(201, None);
        let item = kept_item(key_id, &key).await;
        assert_eq!(item["sealed"].as_bool().ok(), Some(&false));
    });
}

#[test]
fn a_sealed_answer_copied_under_another_key_does_not_open() {
    run(async {
        let t = org().await;
        let key_id = key_id(&t, &t.key).await;
        let key = unique("hook");
        let (body, first, secret) = register_hook(&t, &key).await;

        // Someone with the table's write access copies the kept answer,
        // fingerprint and all, to another key of the same API key: the
        // answer is sealed for its own item, so it does not open there.
        let mut copy = kept_item(key_id, &key).await;
        let other = unique("copied");
        copy.insert(
            "sk".into(),
            aws_sdk_dynamodb::types::AttributeValue::S(
                shared::store::engine::keys::idempotency_sk(&other),
            ),
        );
        let h = harness().await;
        shared::store::Store::client(&h.sdk)
            .put_item()
            .table_name(&h.state.config.store.table)
            .set_item(Some(copy))
            .send()
            .await
            .unwrap();
        let moved = post(&t.key, "/api/v1/webhooks", &other, &body).await;
        moved.expect(500, Some("internal_error"));
        assert!(!moved.text.contains(&secret), "{}", moved.text);
        // Under its own key it still opens.
        let again = post(&t.key, "/api/v1/webhooks", &key, &body).await;
        again.expect(201, None);
        assert_eq!(again.text, first.text);
    });
}

/// Sets a kept answer's retention to have ended a second ago.
async fn age(key_id: uuid::Uuid, idempotency_key: &str) {
    let h = harness().await;
    let db = shared::store::Store::client(&h.sdk);
    db.update_item()
        .table_name(&h.state.config.store.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(
                shared::store::engine::keys::idempotency_pk(key_id),
            ),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S(
                shared::store::engine::keys::idempotency_sk(idempotency_key),
            ),
        )
        .update_expression("SET #until = :until")
        .expression_attribute_names("#until", "until")
        .expression_attribute_values(
            ":until",
            aws_sdk_dynamodb::types::AttributeValue::N((millis_now() - 1000).to_string()),
        )
        .send()
        .await
        .unwrap();
}

#[test]
fn keys_belong_to_one_api_key() {
    run(async {
        let t = org().await;
        let second_key = new_key(t.id(), &[Scope::All]).await;
        let key = unique("shared");
        let name = unique("PerKey");
        let body = json!({"name": name});
        let first = post(&t.key, SITES, &key, &body).await;
        first.expect(201, None);
        let other = post(&second_key, SITES, &key, &body).await;
        other.expect(201, None);
        assert_eq!(other.header("idempotent-replayed"), "");
        assert_ne!(id(&other), id(&first));
        // Another organization's key with the same key and body: its own.
        let stranger = org().await;
        let foreign = post(&stranger.key, SITES, &key, &body).await;
        foreign.expect(201, None);
        assert!(!foreign.text.contains(&id(&first)));
    });
}

#[test]
fn an_error_answer_is_kept_and_replayed() {
    run(async {
        let t = org().await;
        let key = unique("invalid");
        let body = json!({"name": ""});
        let first = post(&t.key, SITES, &key, &body).await;
        first.expect(422, Some("validation_error"));
        let again = post(&t.key, SITES, &key, &body).await;
        again.expect(422, Some("validation_error"));
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, first.text);
        // So is a conflict: a restore of a site that is not archived.
        let site = id(&send(&t, Method::POST, SITES, Some(json!({"name": unique("R")}))).await);
        let restore = format!("{SITES}/{site}/restore");
        let key = unique("restore");
        let first = call(Method::POST, &restore)
            .key(&t.key)
            .header("idempotency-key", &key)
            .send()
            .await;
        first.expect(409, Some("not_archived"));
        send(&t, Method::DELETE, &format!("{SITES}/{site}"), None)
            .await
            .expect(200, None);
        let again = call(Method::POST, &restore)
            .key(&t.key)
            .header("idempotency-key", &key)
            .send()
            .await;
        again.expect(409, Some("not_archived"));
        assert_eq!(again.header("idempotent-replayed"), "true");
        let site_now = send(&t, Method::GET, &format!("{SITES}/{site}"), None).await;
        assert_eq!(
            site_now.body["data"]["status"], "archived",
            "the replay restored nothing"
        );
    });
}

#[test]
fn a_malformed_key_is_400_invalid_idempotency_key_after_authentication() {
    run(async {
        let t = org().await;
        let name = unique("Malformed");
        for bad in ["", &"k".repeat(256), "tab\there"] {
            let reply = post(&t.key, SITES, bad, &json!({"name": name})).await;
            reply.expect(400, Some("invalid_idempotency_key"));
        }
        let longest = post(&t.key, SITES, &"k".repeat(255), &json!({"name": name})).await;
        longest.expect(201, None);
        assert_eq!(sites_named(&t, &name).await.len(), 1);
        let unauthenticated = call(Method::POST, SITES)
            .header("idempotency-key", "")
            .json(&json!({"name": name}))
            .send()
            .await;
        unauthenticated.expect(401, Some("missing_api_key"));
    });
}

#[test]
fn the_header_is_ignored_on_other_methods() {
    run(async {
        let t = org().await;
        let site = id(&send(&t, Method::POST, SITES, Some(json!({"name": unique("P")}))).await);
        let key = unique("patch");
        for name in ["One", "Two"] {
            let reply = call(Method::PATCH, &format!("{SITES}/{site}"))
                .key(&t.key)
                .header("idempotency-key", &key)
                .json(&json!({"name": name}))
                .send()
                .await;
            reply.expect(200, None);
            assert_eq!(reply.body["data"]["name"], name);
            assert_eq!(reply.header("idempotent-replayed"), "");
        }
    });
}

/// Every POST of the description, with the owner's records: it documents
/// the header, a retry gets its first answer (read back with no write),
/// and the key with another request is 422. Nothing the owner reads
/// changes through the retries.
#[test]
fn every_post_of_the_description_replays_its_first_answer() {
    run(async {
        let owner = Owner::new().await;
        let mut problems = Vec::new();
        let mut firsts = Vec::new();
        for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
            let Some(op) = item.get("post") else { continue };
            let documented = op["parameters"].as_array().is_some_and(|ps| {
                ps.iter()
                    .any(|p| p["$ref"] == "#/components/parameters/IdempotencyKey")
            });
            if !documented {
                problems.push(format!("POST {path} does not document Idempotency-Key"));
            }
            let key = unique("walk");
            let (request, target, _) = request(&owner, &Method::POST, path, item, op, None);
            let first = request
                .key(&owner.t.key)
                .header("idempotency-key", &key)
                .send()
                .await;
            firsts.push((path.clone(), item, op, target, key, first));
        }
        assert!(
            firsts.len() >= 18,
            "walked {} POST operations",
            firsts.len()
        );
        let before = everything_read(&owner).await;
        for (path, item, op, target, key, first) in &firsts {
            let again = request(&owner, &Method::POST, path, item, op, None)
                .0
                .key(&owner.t.key)
                .header("idempotency-key", key)
                .send()
                .await;
            let status = first.status.as_u16();
            if first.status.is_server_error() || status == 429 {
                // Not kept: the retry ran anew.
                if again.header("idempotent-replayed") == "true" {
                    problems.push(format!("POST {target}: a {status} was kept"));
                }
                continue;
            }
            if again.status != first.status
                || again.text != first.text
                || again.header("idempotent-replayed") != "true"
                || again.header("location") != first.header("location")
            {
                problems.push(format!(
                    "POST {target}: first {status} {}, retry {} {} (replayed: {:?})",
                    first.text,
                    again.status,
                    again.text,
                    again.header("idempotent-replayed")
                ));
            }
            // The key's admission (its read and its count at once) and the
            // claim; a refusal also gives its rate-limit slot back.
            let cost = if first.status.is_success() { 2 } else { 3 };
            if (again.ddb_calls, again.round_trips) != (cost + 1, cost) {
                problems.push(format!(
                    "POST {target}: the replay cost {} calls in {} round trips",
                    again.ddb_calls, again.round_trips
                ));
            }
            let other = request(&owner, &Method::POST, path, item, op, Some("other=1"))
                .0
                .key(&owner.t.key)
                .header("idempotency-key", key)
                .send()
                .await;
            if other.status != 422 || other.code() != "idempotency_key_reused" {
                problems.push(format!(
                    "POST {target}?other=1: {} {}",
                    other.status, other.text
                ));
            }
        }
        // The creates whose examples name nothing unique (a plate or a
        // phone another test may hold) succeed at first, so their replays
        // are of a 201.
        let statuses: Vec<String> = firsts
            .iter()
            .map(|(path, .., first)| format!("{} {path}", first.status.as_u16()))
            .collect();
        for created in [
            "/api/v1/orgs",
            "/api/v1/sites",
            "/api/v1/receiving-points",
            "/api/v1/factories",
            "/api/v1/surpluses",
            "/api/v1/webhooks",
        ] {
            assert!(
                statuses.contains(&format!("201 {created}")),
                "POST {created} did not create at first: {statuses:?}"
            );
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let after = everything_read(&owner).await;
        for (target, seen) in &before {
            assert_eq!(
                unsigned(&after[target]),
                unsigned(seen),
                "a retry changed {target}"
            );
        }
    });
}

/// `value` without what each read signs anew (presigned links and their
/// expiry).
fn unsigned(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(name, _)| name.as_str() != "url_expires_at")
                .map(|(name, field)| (name.clone(), unsigned(field)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unsigned).collect()),
        Value::String(s) if s.contains("X-Amz-Signature=") => {
            json!(s.split('?').next().unwrap_or_default())
        }
        other => other.clone(),
    }
}

/// The claim's write reached the table but its acknowledgement was lost,
/// and the SDK sent it again (as deployed: retries on): the request knows
/// its own claim by its token and runs, instead of finding "another"
/// request in flight (409) and holding its own key for the lease.
#[test]
fn a_claim_whose_acknowledgement_was_lost_is_still_the_requests_own() {
    use api_tests::cuts::{Cut, Cuts};
    run(async {
        let h = harness().await;
        let cuts = Cuts::default();
        let sdk = cuts.sdk_retrying(&h.sdk);
        let state = shared::state::AppState::new((*h.state.config).clone(), &sdk);
        let router = shared::http::app(local::routes(), state);
        let t = org().await;
        let key = unique("lost-ack");
        let body = json!({"name": unique("Acknowledged")});
        cuts.arm_on(Cut::Cut, "UpdateItem", "IDEM#");
        let reply = call(Method::POST, SITES)
            .key(&t.key)
            .header("idempotency-key", &key)
            .json(&body)
            .send_to(&router)
            .await;
        cuts.disarm();
        let broken = cuts.broken().expect("the claim's write was cut");
        assert!(broken.contains("UpdateItem"), "{broken}");
        reply.expect(201, None);
        assert_eq!(
            sites_named(&t, body["name"].as_str().unwrap()).await,
            vec![id(&reply)]
        );
        let again = post(&t.key, SITES, &key, &body).await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, reply.text);
    });
}

/// The fingerprint kept beside an answer for 24 hours (and in backups) is
/// a MAC under the deployment's key: a member's password in the body
/// cannot be tried against it, one SHA-256 a guess, by whoever reads the
/// table without the key.
#[test]
fn the_kept_fingerprint_is_keyed_never_a_plain_hash_of_the_body() {
    use sha2::Digest;
    run(async {
        let t = org().await;
        let body = json!({
            "first_name": "Dee", "last_name": "River", "phone": api_tests::unique_phone(),
            "role": "driver", "email": format!("dee.{}@example.com", uuid::Uuid::new_v4().simple()),
            "password": "correct horse battery staple",
        });
        let key = unique("member");
        post(&t.key, "/api/v1/members", &key, &body)
            .await
            .expect(201, None);
        let item = harness()
            .await
            .store()
            .idempotency()
            .get(key_id(&t, &t.key).await, &key)
            .await
            .unwrap()
            .unwrap();
        let kept = item["fp"].as_s().unwrap().clone();
        let plain = hex::encode(sha2::Sha256::digest(
            format!("POST\n/api/v1/members\n{body}").as_bytes(),
        ));
        assert_ne!(kept, plain);
        assert_eq!(kept, fingerprint_of("/api/v1/members", &body).await);
    });
}

/// A request that ran past its hold on its key answers 409
/// `idempotency_key_in_flight` (another attempt may hold the key): that
/// answer is never kept as the request's own, and the key is freed when it
/// is still the request's, so a retry runs again instead of replaying 409
/// for 24 hours.
#[test]
fn a_409_in_flight_is_never_kept_as_the_answer() {
    use axum::routing::post;
    use shared::auth::WriteData;
    use shared::http::Ctx;
    async fn past_its_hold(_ctx: Ctx<WriteData>) -> shared::ApiResult<()> {
        Err(shared::store::exactly_once::outcome::claim_lost())
    }
    run(async {
        let h = harness().await;
        let routes = axum::Router::new().route("/api/v1/held-up", post(past_its_hold));
        let router = shared::http::app(routes, h.state.clone());
        let t = org().await;
        let key = unique("held-up");
        let send = || {
            call(Method::POST, "/api/v1/held-up")
                .key(&t.key)
                .header("idempotency-key", &key)
                .json(&json!({}))
                .send_to(&router)
        };
        send().await.expect(409, Some("idempotency_key_in_flight"));
        let item = kept_item(key_id(&t, &t.key).await, &key).await;
        assert!(!item.contains_key("status"), "kept: {item:?}");
        assert_eq!(item["until"].as_n().unwrap(), "0", "freed");
        let again = send().await;
        again.expect(409, Some("idempotency_key_in_flight"));
        assert_eq!(again.header("idempotent-replayed"), "", "ran again");
    });
}

/// The HTTP layer's own claim holds the key for its lease (30 s) and no
/// longer: with the first attempt frozen after its claim, a retry a
/// millisecond before the lease ends is 409 `idempotency_key_in_flight`,
/// and one a millisecond after it runs as the request (the key taken
/// over); the thawed attempt then answers the retry's answer or 409, and
/// one site exists.
#[test]
fn a_claim_holds_its_key_for_its_lease_and_no_longer() {
    use api_tests::cuts::{Cut, Cuts};
    use std::time::Duration;
    run(async {
        let h = harness().await;
        let clock = shared::clock::Clock::frozen_at(shared::clock::now());
        let (_, mut plain) = h.instance_with(|_| {});
        plain.clock = clock.clone();
        let cuts = Cuts::default();
        let mut faulty = shared::state::AppState::new((*plain.config).clone(), &cuts.sdk(&h.sdk));
        faulty.clock = clock.clone();
        let plain = shared::http::app(local::routes(), plain);
        let faulty = shared::http::app(local::routes(), faulty);
        let t = org().await;
        let key = unique("held");
        let name = unique("Held");
        let body = json!({ "name": name });
        let send = |router: &axum::Router| {
            let (router, api_key, key, body) =
                (router.clone(), t.key.clone(), key.clone(), body.clone());
            async move {
                call(Method::POST, SITES)
                    .key(&api_key)
                    .header("idempotency-key", &key)
                    .json(&body)
                    .send_to(&router)
                    .await
            }
        };

        // Frozen right after its claim took effect, before its write.
        cuts.arm_on(Cut::Freeze, "UpdateItem", "if_not_exists(#rid, :rid)");
        let frozen = tokio::spawn(send(&faulty));
        cuts.stalled().await;
        clock.advance(idempotency::LEASE - Duration::from_millis(1));
        send(&plain)
            .await
            .expect(409, Some("idempotency_key_in_flight"));
        clock.advance(Duration::from_millis(2));
        let retry = send(&plain).await;
        retry.expect(201, None);
        assert_eq!(retry.header("idempotent-replayed"), "", "it ran");

        cuts.go();
        let thawed = frozen.await.unwrap();
        cuts.disarm();
        if thawed.status != 409 {
            assert_eq!((thawed.status, &thawed.text), (retry.status, &retry.text));
        }
        assert_eq!(sites_named(&t, &name).await, [id(&retry)], "one site");
    });
}

/// A keyed request is read whole up to the largest body any route takes
/// (a waybill's multipart form): one of exactly that size is claimed (its
/// answer, a JSON route's 413, is kept and replayed), one byte more is
/// left to the route unclaimed.
#[test]
fn a_keyed_body_of_exactly_the_largest_size_is_claimed_and_one_byte_more_is_not() {
    use shared::http::multipart::MAX_REQUEST_BYTES;
    run(async {
        let t = org().await;
        let sized = |size: usize| {
            let base = json!({"name": "Large", "info": ""}).to_string().len();
            json!({"name": "Large", "info": "x".repeat(size - base)})
        };
        let send_twice = |body: Value| {
            let key = unique("large");
            let api_key = t.key.clone();
            async move {
                let mut replies = Vec::new();
                for _ in 0..2 {
                    let reply = post(&api_key, SITES, &key, &body).await;
                    reply.expect(413, Some("payload_too_large"));
                    replies.push(reply.header("idempotent-replayed").to_owned());
                }
                replies
            }
        };
        assert_eq!(
            sized(MAX_REQUEST_BYTES).to_string().len(),
            MAX_REQUEST_BYTES
        );
        assert_eq!(send_twice(sized(MAX_REQUEST_BYTES)).await, ["", "true"]);
        assert_eq!(send_twice(sized(MAX_REQUEST_BYTES + 1)).await, ["", ""]);
    });
}

/// Answers up to 256 KiB are kept and replayed; a larger one is not kept
/// (the key is freed), so its retry runs again.
#[test]
fn answers_up_to_256_kib_are_kept_and_larger_ones_run_again() {
    use axum::routing::post;
    use shared::auth::WriteData;
    use shared::http::Ctx;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    run(async {
        let h = harness().await;
        let ran = Arc::new(AtomicUsize::new(0));
        let counted = ran.clone();
        let routes = axum::Router::new().route(
            "/api/v1/sized/{bytes}",
            post(
                move |_ctx: Ctx<WriteData>,
                      axum::extract::Path(bytes): axum::extract::Path<usize>| {
                    let counted = counted.clone();
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        "x".repeat(bytes)
                    }
                },
            ),
        );
        let router = shared::http::app(routes, h.state.clone());
        let t = org().await;
        for (bytes, kept) in [
            (idempotency::MAX_KEPT_BODY, true),
            (idempotency::MAX_KEPT_BODY + 1, false),
        ] {
            let key = unique("sized");
            let send = || {
                call(Method::POST, &format!("/api/v1/sized/{bytes}"))
                    .key(&t.key)
                    .header("idempotency-key", &key)
                    .json(&json!({}))
                    .send_to(&router)
            };
            ran.store(0, Ordering::SeqCst);
            let first = send().await;
            first.expect(200, None);
            assert_eq!(first.text.len(), bytes);
            let again = send().await;
            again.expect(200, None);
            assert_eq!(again.text.len(), bytes);
            let replayed = again.header("idempotent-replayed") == "true";
            assert_eq!(replayed, kept, "{bytes} bytes: replayed?");
            let runs = if kept { 1 } else { 2 };
            assert_eq!(ran.load(Ordering::SeqCst), runs, "{bytes} bytes: runs");
        }
        assert_eq!(idempotency::MAX_KEPT_BODY, 256 * 1024);
    });
}
