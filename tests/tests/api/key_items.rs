//! The deployment refuses every API role every write to an API key's item
//! (`ApiKeyIssuanceByOperators` in the template: Put, Update, Delete and
//! BatchWrite on `APIKEY#*`, per item, in transactions too). Here the same
//! rule is a DynamoDB client of the API's own, and every operation of the
//! description, with refusals of every kind, still answers as it should:
//! the API reads keys and writes only their counters, so a compromised
//! function could not mint, widen or un-revoke a key either.

use std::sync::{Arc, Mutex};

use api_tests::{call, harness, run};
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use http::Method;
use serde_json::Value;
use shared::auth::Scope;
use shared::store::Store;
use shared::store::engine::keys::{OPERATOR_ONLY_PK_PREFIXES, STAGED_FILE_PK_PREFIX};

use crate::isolation::{Owner, request, versioned_operations};

/// Refuses any write that names an item under one of its prefixes, as
/// IAM would, and remembers what it refused.
#[derive(Debug, Clone)]
struct Refusing {
    prefixes: &'static [&'static str],
    refused: Arc<Mutex<Vec<String>>>,
}

impl Refusing {
    /// What the API's roles may never write: keys, key indexes, the audit.
    fn operators_only() -> Self {
        Self {
            prefixes: &OPERATOR_ONLY_PK_PREFIXES,
            refused: Arc::default(),
        }
    }

    /// What the roles of functions that stage no files may not write.
    fn staged_files() -> Self {
        Self {
            prefixes: &[STAGED_FILE_PK_PREFIX],
            refused: Arc::default(),
        }
    }

    fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap().clone()
    }

    /// The API's state with a table client that refuses as this does.
    async fn state(&self) -> shared::state::AppState {
        let h = harness().await;
        let db = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&h.sdk)
                .interceptor(self.clone())
                .build(),
        );
        let mut state = h.state.clone();
        state.store = Store::new(db, h.store().table());
        state
    }
}

/// The partition keys a write request's JSON names for writing.
fn written_pks(operation: &str, body: &Value) -> Vec<String> {
    let pk = |item: &Value| item["pk"]["S"].as_str().map(str::to_owned);
    match operation {
        "PutItem" => pk(&body["Item"]).into_iter().collect(),
        "UpdateItem" | "DeleteItem" => pk(&body["Key"]).into_iter().collect(),
        "TransactWriteItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|action| {
                pk(&action["Put"]["Item"])
                    .or_else(|| pk(&action["Update"]["Key"]))
                    .or_else(|| pk(&action["Delete"]["Key"]))
            })
            .collect(),
        "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flat_map(|tables| tables.values())
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|write| {
                pk(&write["PutRequest"]["Item"]).or_else(|| pk(&write["DeleteRequest"]["Key"]))
            })
            .collect(),
        _ => Vec::new(),
    }
}

impl Intercept for Refusing {
    fn name(&self) -> &'static str {
        "Refusing"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let operation = cfg
            .load::<aws_smithy_runtime_api::client::orchestrator::Metadata>()
            .map_or("?".to_owned(), |m| m.name().to_owned());
        let body: Value = context
            .request()
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        let denied: Vec<String> = written_pks(&operation, &body)
            .into_iter()
            .filter(|pk| self.prefixes.iter().any(|prefix| pk.starts_with(prefix)))
            .collect();
        if denied.is_empty() {
            return Ok(());
        }
        let refusal = format!("{operation} on {denied:?}");
        self.refused.lock().unwrap().push(refusal.clone());
        Err(format!("AccessDeniedException: {refusal}").into())
    }
}

#[test]
fn written_pks_reads_every_write_shape() {
    let body: Value = serde_json::json!({"TransactItems": [
        {"Put": {"Item": {"pk": {"S": "APIKEY#a"}}}},
        {"Update": {"Key": {"pk": {"S": "ORG#b"}}}},
        {"ConditionCheck": {"Key": {"pk": {"S": "APIKEY#c"}}}},
    ]});
    assert_eq!(
        written_pks("TransactWriteItems", &body),
        ["APIKEY#a", "ORG#b"]
    );
    let batch: Value = serde_json::json!({"RequestItems": {"t": [
        {"DeleteRequest": {"Key": {"pk": {"S": "APIKEY#d"}}}}
    ]}});
    assert_eq!(written_pks("BatchWriteItem", &batch), ["APIKEY#d"]);
    let update: Value = serde_json::json!({"Key": {"pk": {"S": "RATE#e"}}});
    assert_eq!(written_pks("UpdateItem", &update), ["RATE#e"]);
}

#[test]
fn every_operation_works_with_every_write_to_key_items_refused() {
    run(async {
        let owner = Owner::new().await;
        let h = harness().await;
        let refused = Refusing::operators_only();
        let state = refused.state().await;
        // The rule bites: an operator's write through this client is refused.
        let key_id = api_tests::key_id(&owner.t).await;
        assert!(
            state
                .store
                .api_keys()
                .revoke(owner.t.id(), key_id)
                .await
                .is_err()
        );
        assert_eq!(refused.refused().len(), 1);
        refused.refused.lock().unwrap().clear();
        let router = shared::http::app(local::routes(), state);
        let mut failures = Vec::new();
        for (method, path, item, op) in versioned_operations() {
            let (request, target, _) = request(&owner, &method, path, item, op, None);
            let reply = request.key(&owner.t.key).send_to(&router).await;
            let unconfigured = ["geocode_not_configured", "support_not_configured"];
            if reply.status.is_server_error() && !unconfigured.contains(&reply.code()) {
                failures.push(format!(
                    "{method} {target}: {} {}",
                    reply.status, reply.text
                ));
            }
        }
        // Refusals of every kind: a key without the scope, a revoked key,
        // a key past its budget.
        let reader = api_tests::new_key(owner.t.id(), &[Scope::ReadOrgs]).await;
        call(Method::GET, "/api/v1/sites")
            .key(&reader)
            .send_to(&router)
            .await
            .expect(403, Some("insufficient_scope"));
        let revoked = api_tests::new_key(owner.t.id(), &[Scope::All]).await;
        let hash = shared::auth::key::KeyHash::of(&revoked).to_hex();
        let store = h.store();
        let id = store
            .api_keys()
            .list(owner.t.id())
            .await
            .unwrap()
            .into_iter()
            .find(|k| k.key_hash == hash)
            .unwrap()
            .key_id;
        store.api_keys().revoke(owner.t.id(), id).await.unwrap();
        call(Method::GET, "/api/v1/orgs")
            .key(&revoked)
            .send_to(&router)
            .await
            .expect(401, Some("api_key_revoked"));
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert_eq!(refused.refused(), Vec::<String>::new());
    });
}

/// Every operation works with writes under `FILE#` refused, but the
/// waybill uploads of the function that stages files
/// (`StagedFilesByTheirStagers` in the template).
#[test]
fn only_waybill_uploads_write_staged_file_items() {
    run(async {
        let owner = Owner::new().await;
        let refused = Refusing::staged_files();
        let router = shared::http::app(local::routes(), refused.state().await);
        let mut staging = Vec::new();
        for (method, path, item, op) in versioned_operations() {
            let (request, _, _) = request(&owner, &method, path, item, op, None);
            let reply = request.key(&owner.t.key).send_to(&router).await;
            let unconfigured = ["geocode_not_configured", "support_not_configured"];
            if reply.status.is_server_error() && !unconfigured.contains(&reply.code()) {
                staging.push(format!("{method} {path}"));
            }
        }
        // The confirmation of a form's upload stages too; here it has no
        // upload to confirm (404 before it writes).
        assert_eq!(staging, ["POST /api/v1/surpluses/{surplusId}/waybill"]);
        assert!(
            refused
                .refused()
                .iter()
                .all(|r| r.starts_with("TransactWriteItems on [\"FILE#waybills/")),
            "{:?}",
            refused.refused()
        );
    });
}
