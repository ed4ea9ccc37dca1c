//! The scopes matrix, generated from the description: every operation
//! under `/api/v1` names in its security requirements the one scope its
//! key needs (the requirement's role, docs/compatibility.md), and the code
//! agrees. A key with no scope is refused with 403 `insufficient_scope`
//! naming that scope; a key with that scope alone is not refused for its
//! scope. The compatibility gate (tools/compat/rules.py) compares these
//! roles with the released baseline's, so an operation cannot start to
//! need another scope unnoticed, and this test keeps the roles true to the
//! code's `ReadData`/`WriteData`/... extractors.

use api_tests::{new_key, run};
use serde_json::{Value, json};
use shared::auth::Scope;

use crate::isolation::{Owner, request, versioned_operations};

/// The one scope an operation's security requirements name.
fn role(method: &http::Method, path: &str, op: &Value) -> String {
    let requirements = op["security"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path} has no security requirements"));
    let mut roles: Vec<String> = requirements
        .iter()
        .flat_map(|requirement| requirement.as_object().unwrap().values())
        .flat_map(|roles| roles.as_array().unwrap())
        .map(|role| role.as_str().unwrap().to_owned())
        .collect();
    roles.sort();
    roles.dedup();
    assert_eq!(
        roles.len(),
        1,
        "{method} {path}: each requirement names the one scope it needs"
    );
    roles.remove(0)
}

#[test]
fn every_operation_names_the_scope_its_code_needs() {
    run(async {
        let owner = Owner::new().await;
        let scopeless = new_key(owner.t.id(), &[]).await;
        let mut wrong = Vec::new();
        let mut by_role = Vec::new();
        // Refusals first: they change nothing.
        for (method, path, item, op) in versioned_operations() {
            let role = role(&method, path, op);
            let (call, target, _) = request(&owner, &method, path, item, op, None);
            let reply = call.key(&scopeless).send().await;
            let named = format!("this route needs the `{role}` scope");
            if reply.status != 403
                || reply.code() != "insufficient_scope"
                || reply.body["message"] != json!(named)
            {
                wrong.push(format!(
                    "{method} {target} without a scope: {} {} (the description: {role})",
                    reply.status, reply.text
                ));
            }
            by_role.push((method, path, item, op, role));
        }
        for (method, path, item, op, role) in by_role {
            let scope: Scope = serde_json::from_value(json!(role))
                .unwrap_or_else(|_| panic!("{method} {path}: {role} is not a scope"));
            let key = new_key(owner.t.id(), &[scope]).await;
            let (call, target, _) = request(&owner, &method, path, item, op, None);
            let reply = call.key(&key).send().await;
            if reply.code() == "insufficient_scope" {
                wrong.push(format!(
                    "{method} {target} with {role} alone: {} {}",
                    reply.status, reply.text
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    });
}
