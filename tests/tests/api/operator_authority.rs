//! An operator's command decides from items no API role can write: the
//! keys' own items and the organizations' key indexes (`KEYS#<org>`, as
//! denied to every function as `APIKEY#`). What a compromised function
//! can do (write anything under `ORG#`, here: plant key summaries where
//! they were kept before the index) never steers a revocation, a
//! deactivation or an entitlement switch.

use api_tests::{TestOrg, call, harness, org, run};
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use uuid::Uuid;

use crate::audit::admin;

/// A key summary as a function could write one in `ORG#<org>`: the key
/// `key_id`, naming `hash` and marked revoked when `revoked`.
async fn plant_summary(org: Uuid, key_id: Uuid, hash: &str, revoked: bool) {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let s = |v: String| AttributeValue::S(v);
    let mut put = db
        .put_item()
        .table_name(h.store().table())
        .item("pk", s(format!("ORG#{org}")))
        .item("sk", s(format!("APIKEY#{key_id}")))
        .item("key_id", s(key_id.to_string()))
        .item("org_id", s(org.to_string()))
        .item("key_hash", s(hash.to_owned()))
        .item("scopes", AttributeValue::L(vec![s("*".into())]))
        .item("public_api", AttributeValue::Bool(true))
        .item("org_active", AttributeValue::Bool(true))
        .item("created_at", s("2026-11-21T00:00:00.000Z".into()));
    if revoked {
        put = put.item("revoked_at", s("2026-11-21T00:00:00.000Z".into()));
    }
    put.send().await.expect("a function may write under ORG#");
}

async fn status(t: &TestOrg, path: &str) -> u16 {
    call(Method::GET, path)
        .key(&t.key)
        .send()
        .await
        .status
        .as_u16()
}

fn hash(t: &TestOrg) -> String {
    shared::auth::key::KeyHash::of(&t.key).to_hex()
}

#[test]
fn a_revocation_revokes_the_key_it_names_whatever_the_summaries_say() {
    run(async {
        let (a, b) = (org().await, org().await);
        let a_key = api_tests::key_id(&a).await;
        // A summary of A's key naming B's key.
        plant_summary(a.id(), a_key, &hash(&b), false).await;
        let done = admin(&[
            "revoke-key",
            "--org",
            &a.id().to_string(),
            "--key-id",
            &a_key.to_string(),
        ])
        .await
        .unwrap();
        assert_eq!(done.lines[0]["key_id"], a_key.to_string());
        assert_eq!(status(&a, "/api/v1/orgs").await, 401, "A's key is revoked");
        assert_eq!(status(&b, "/api/v1/orgs").await, 200, "B's key is not");
        // Another organization's key id is not A's to revoke.
        let b_key = api_tests::key_id(&b).await;
        plant_summary(a.id(), b_key, &hash(&b), false).await;
        let refused = admin(&[
            "revoke-key",
            "--org",
            &a.id().to_string(),
            "--key-id",
            &b_key.to_string(),
        ])
        .await;
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(status(&b, "/api/v1/orgs").await, 200);
    });
}

#[test]
fn a_deactivation_refuses_every_key_even_one_a_summary_says_is_revoked() {
    run(async {
        let a = org().await;
        let key = api_tests::key_id(&a).await;
        plant_summary(a.id(), key, &hash(&a), true).await;
        admin(&["deactivate-org", "--org", &a.id().to_string()])
            .await
            .unwrap();
        let reply = call(Method::GET, "/api/v1/sites").key(&a.key).send().await;
        reply.expect(403, Some("org_inactive"));
    });
}

#[test]
fn an_entitlement_switched_off_reaches_every_key_even_one_a_summary_says_is_revoked() {
    run(async {
        let a = org().await;
        let key = api_tests::key_id(&a).await;
        plant_summary(a.id(), key, &hash(&a), true).await;
        admin(&[
            "entitlement",
            "--org",
            &a.id().to_string(),
            "--enabled",
            "false",
        ])
        .await
        .unwrap();
        let reply = call(Method::GET, "/api/v1/orgs").key(&a.key).send().await;
        assert_eq!(reply.status.as_u16(), 403, "{}", reply.text);
    });
}

#[test]
fn the_key_index_of_a_table_from_before_it_is_built_from_the_keys_own_items() {
    run(async {
        let a = org().await;
        let key = api_tests::key_id(&a).await;
        let h = harness().await;
        let db = aws_sdk_dynamodb::Client::new(&h.sdk);
        let index = |pk: String, sk: String| {
            db.delete_item()
                .table_name(h.store().table())
                .key("pk", AttributeValue::S(pk))
                .key("sk", AttributeValue::S(sk))
        };
        // As a table from before the index holds it.
        index(format!("KEYS#{}", a.id()), format!("KEY#{key}"))
            .send()
            .await
            .unwrap();
        assert!(h.store().api_keys().list(a.id()).await.unwrap().is_empty());
        let done = admin(&["index-keys"]).await.unwrap();
        assert!(done.lines[0]["indexed"].as_u64().unwrap() >= 1);
        let listed = h.store().api_keys().list(a.id()).await.unwrap();
        assert_eq!(
            listed.iter().map(|k| k.key_id).collect::<Vec<_>>(),
            vec![key]
        );
        // Again: nothing more to write for it.
        admin(&["index-keys"]).await.unwrap();
        assert_eq!(h.store().api_keys().list(a.id()).await.unwrap().len(), 1);
    });
}

/// A revocation read back as operators read keys (`admin list-keys`, from
/// the key index): the key it named revoked at the time it answered, the
/// organization's other key untouched; a second revocation is refused and
/// moves nothing.
#[test]
fn a_revocation_reads_back_from_the_key_index_and_a_second_moves_nothing() {
    run(async {
        let t = org().await;
        let other = api_tests::new_key(t.id(), &[shared::auth::Scope::All]).await;
        let org_id = t.id().to_string();
        let key_id = api_tests::key_id(&t).await.to_string();
        let listed = || async {
            let done = admin(&["list-keys", "--org", &org_id]).await.unwrap();
            let mut keys: Vec<(String, serde_json::Value)> = done
                .lines
                .iter()
                .map(|k| {
                    (
                        k["key_id"].as_str().unwrap().to_owned(),
                        k["revoked_at"].clone(),
                    )
                })
                .collect();
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            keys
        };
        let before = listed().await;
        assert_eq!(before.len(), 2);
        assert!(before.iter().all(|(_, revoked)| revoked.is_null()));
        let revoked = admin(&["revoke-key", "--org", &org_id, "--key-id", &key_id])
            .await
            .unwrap();
        let at = revoked.lines[0]["revoked_at"].clone();
        assert!(at.is_string(), "{:?}", revoked.lines);
        let after = listed().await;
        for ((id, was), (same, now)) in before.iter().zip(&after) {
            assert_eq!(id, same);
            if *id == key_id {
                assert_eq!(now, &at, "the key it named, revoked when it answered");
            } else {
                assert_eq!(now, was, "the other key untouched");
            }
        }
        assert_eq!(status(&t, "/api/v1/orgs").await, 401);
        let other = TestOrg {
            org: t.org.clone(),
            key: other,
        };
        assert_eq!(status(&other, "/api/v1/orgs").await, 200);
        // Again: refused, and the time it was revoked stays.
        let again = admin(&["revoke-key", "--org", &org_id, "--key-id", &key_id]).await;
        assert!(again.is_err());
        assert_eq!(listed().await, after);
    });
}
