//! The isolation matrix, generated from the description: every operation
//! under `/api/v1` is called with a second organization's key. Where the
//! path names a record, it names the first organization's (404, or 403 for
//! the organization itself); where a body names records, it names the
//! first organization's too. No answer carries the first organization's
//! data, and afterwards everything the first organization reads is as it
//! was. A new operation is in the matrix as soon as it is described; a new
//! path parameter or a required query parameter without an example fails
//! the test until it has a value here. It runs warm: every `GET` and
//! `PATCH` of the matrix reads beside its key's admission (`warm.rs`).

use std::collections::BTreeMap;

use api_tests::{Call, TestOrg, call, multipart, org, run, send, unique, unique_phone};
use http::Method;
use serde_json::{Value, json};

use crate::receiving_points::new_point;
use crate::sites::new_site;
use crate::surpluses::new_load;
use crate::trucks::{new_truck, plate};

/// Operations that touch no organization's records: the unauthenticated
/// ones and the two that pass a request on to a provider.
const NOT_ORGANIZATION_SCOPED: [&str; 2] = ["/api/v1/geocode", "/api/v1/support"];

/// The first organization's records, by the name the description gives
/// their id (path parameters) and by the body fields that refer to them.
pub(crate) struct Owner {
    pub(crate) t: TestOrg,
    /// A name no other organization's answer may contain.
    marker: String,
    pub(crate) by_parameter: BTreeMap<&'static str, String>,
    by_field: BTreeMap<&'static str, String>,
}

impl Owner {
    pub(crate) async fn new() -> Owner {
        let t = org().await;
        let marker = unique("Isolated");
        let site = new_site(&t, json!({"name": marker, "lat": 60.1699, "lng": 24.9384})).await;
        let point = new_point(
            &t,
            json!({"site_id": site, "name": marker, "lat": 60.1699, "lng": 24.9384}),
        )
        .await;
        let created = |path: &'static str, body: Value| {
            let t = &t;
            async move {
                let reply = send(t, Method::POST, path, Some(body)).await;
                reply.expect(201, None);
                reply.body["data"]["id"].as_str().unwrap().to_owned()
            }
        };
        let factory = created("/api/v1/factories", json!({"name": marker})).await;
        let member = created(
            "/api/v1/members",
            json!({"first_name": marker, "last_name": marker, "phone": unique_phone(), "role": "driver"}),
        )
        .await;
        let truck = new_truck(
            &t,
            json!({"orgId": t.id(), "license": plate(), "country": "fi", "driver_id": member}),
        )
        .await;
        let load = new_load(&t, &site).await;
        let hook = created(
            "/api/v1/webhooks",
            json!({"event": "surplus.delivered", "url": "https://hooks.example.com/isolated"}),
        )
        .await;
        // A grant of the first organization's, to a third one.
        let grantee = org().await.id().to_string();
        send(
            &t,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({"grantee_org_id": grantee})),
        )
        .await
        .expect(201, None);
        let own = t.id().to_string();
        let by_parameter = BTreeMap::from([
            ("orgId", own.clone()),
            ("siteId", site.clone()),
            ("rpId", point.clone()),
            ("factoryId", factory.clone()),
            ("granteeOrgId", grantee),
            ("truckId", truck.clone()),
            ("memberId", member.clone()),
            ("surplusId", load),
            ("webhookId", hook),
            // No delivery yet: its webhook is foreign already.
            ("deliveryId", uuid::Uuid::now_v7().to_string()),
        ]);
        let by_field = BTreeMap::from([
            ("orgId", own.clone()),
            ("org_id", own),
            ("site_id", site),
            ("to_receiving_point_id", point),
            ("factory_id", factory),
            ("truck_id", truck),
            ("driver_id", member.clone()),
            ("driverId", member.clone()),
            ("member_id", member),
        ]);
        Owner {
            t,
            marker,
            by_parameter,
            by_field,
        }
    }

    fn ids(&self) -> impl Iterator<Item = &String> {
        self.by_parameter.values().chain(self.by_field.values())
    }
}

/// `$ref`s of the description resolved.
fn resolve(value: &Value) -> &Value {
    match value["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            resolve(
                docs::OPENAPI
                    .pointer(pointer)
                    .expect("a reference that resolves"),
            )
        }
        None => value,
    }
}

fn parameters<'a>(item: &'a Value, op: &'a Value) -> impl Iterator<Item = &'a Value> {
    [&item["parameters"], &op["parameters"]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .map(resolve)
}

/// The path with the owner's ids, and the required query parameters with
/// their described examples.
pub(crate) fn target(owner: &Owner, path: &str, item: &Value, op: &Value) -> String {
    let mut target = path.to_owned();
    let mut query = Vec::new();
    for parameter in parameters(item, op) {
        let name = parameter["name"].as_str().unwrap();
        match parameter["in"].as_str() {
            Some("path") => {
                let id = owner
                    .by_parameter
                    .get(name)
                    .unwrap_or_else(|| panic!("no record for path parameter {name} of {path}"));
                target = target.replace(&format!("{{{name}}}"), id);
            }
            Some("query") if parameter["required"] == true => {
                let example = parameter
                    .get("example")
                    .or_else(|| parameter["schema"].get("example"))
                    .unwrap_or_else(|| panic!("required {name} of {path} has no example"));
                query.push(format!("{name}={}", example.to_string().trim_matches('"')));
            }
            _ => {}
        }
    }
    if query.is_empty() {
        target
    } else {
        format!("{target}?{}", query.join("&"))
    }
}

/// The described example body with every field that names a record set
/// to the owner's record.
pub(crate) fn body(owner: &Owner, path: &str, op: &Value) -> Option<Value> {
    let content = &resolve(&op["requestBody"])["content"]["application/json"];
    if content.is_null() {
        return None;
    }
    let mut example = content
        .get("example")
        .cloned()
        .or_else(|| {
            let examples = content["examples"].as_object()?;
            Some(resolve(examples.values().next()?)["value"].clone())
        })
        .unwrap_or_else(|| panic!("the JSON body of {path} has no example"));
    fn point_at(value: &mut Value, owner: &Owner) {
        match value {
            Value::Object(fields) => {
                for (name, field) in fields.iter_mut() {
                    match owner.by_field.get(name.as_str()) {
                        Some(id) if field.is_string() => *field = json!(id),
                        _ => point_at(field, owner),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| point_at(item, owner)),
            _ => {}
        }
    }
    point_at(&mut example, owner);
    Some(example)
}

/// The described operation as a call naming the owner's records: the
/// call (without a key), its target, and its JSON body if it has one.
/// `extra_query` is added to the target's query.
pub(crate) fn request(
    owner: &Owner,
    method: &Method,
    path: &str,
    item: &Value,
    op: &Value,
    extra_query: Option<&str>,
) -> (Call, String, Option<Value>) {
    let mut target = target(owner, path, item, op);
    if let Some(extra) = extra_query {
        let joint = if target.contains('?') { '&' } else { '?' };
        target = format!("{target}{joint}{extra}");
    }
    let sent = body(owner, path, op);
    let mut request = call(method.clone(), &target);
    if let Some(sent) = &sent {
        request = request.json(sent);
    } else if op["requestBody"]["content"]["multipart/form-data"].is_object() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        request = request.body(
            "multipart/form-data; boundary=isolation",
            multipart("isolation", &[], Some(("w.png", "image/png", png))),
        );
    }
    (request, target, sent)
}

/// Every operation of the description under `/api/v1/`: its method, path,
/// path item and operation.
pub(crate) fn versioned_operations()
-> impl Iterator<Item = (Method, &'static String, &'static Value, &'static Value)> {
    docs::OPENAPI["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.starts_with("/api/v1/"))
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .iter()
                .filter_map(move |(method, op)| {
                    let method = method.to_uppercase().parse::<Method>().ok()?;
                    op.get("responses")?;
                    Some((method, path, item, op))
                })
        })
}

/// What the owner reads through every GET of the description.
pub(crate) async fn everything_read(owner: &Owner) -> BTreeMap<String, Value> {
    let mut seen = BTreeMap::new();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        // Nearby search shows every organization's public places.
        let Some(op) = item.get("get") else { continue };
        if !path.starts_with("/api/v1/") || path == "/api/v1/places/nearby" {
            continue;
        }
        let target = target(owner, path, item, op);
        let reply = send(&owner.t, Method::GET, &target, None).await;
        let data = reply.body["data"].clone();
        seen.insert(
            target,
            json!({"status": reply.status.as_u16(), "data": data}),
        );
    }
    seen
}

/// The paths the description's examples cannot reach (their bodies name
/// the owner's site, which is refused first): the other organization,
/// having granted the owner `full` access itself (a one-sided act of its
/// own), names the owner's truck on a load of its own site, billed to the
/// truck. Each is refused with its code, and nothing of the owner's shows.
async fn truck_paths(owner: &Owner, other: &TestOrg) -> Vec<String> {
    let mut leaks = Vec::new();
    let site = new_site(other, json!({"name": "Intruder"})).await;
    let truck = &owner.by_field["truck_id"];
    let charge = json!({"site_id": site, "volume_m3": 100, "additive": true,
                        "additive_billed_to": "truck", "truck_id": truck});
    let created = send(other, Method::POST, "/api/v1/surpluses", Some(charge)).await;
    if created.status != 422 || created.code() != "truck_not_found" {
        leaks.push(format!(
            "POST /api/v1/surpluses naming the owner's truck: {} {}",
            created.status, created.text
        ));
    }
    let own = new_load(other, &site).await;
    for body in [
        json!({"additive": true, "additive_billed_to": "truck"}),
        json!({"truck_id": truck}),
        json!({"driver_id": owner.by_field["driver_id"]}),
    ] {
        let reply = send(
            other,
            Method::PATCH,
            &format!("/api/v1/surpluses/{own}"),
            Some(body.clone()),
        )
        .await;
        if reply.status == 200
            && (reply.text.contains(truck.as_str()) || reply.text.contains(&owner.marker))
        {
            leaks.push(format!(
                "PATCH {body} shows the owner's truck: {}",
                reply.text
            ));
        }
    }
    leaks
}

#[test]
fn another_organizations_key_never_sees_or_changes_a_record() {
    run(async {
        let owner = Owner::new().await;
        let other = org().await;
        // The other organization grants the owner full access: its own act,
        // which must open nothing of the owner's to it.
        send(
            &other,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({"grantee_org_id": owner.t.id(), "scope": "full"})),
        )
        .await
        .expect(201, None);
        let before = everything_read(&owner).await;
        let mut leaks = truck_paths(&owner, &other).await;
        // The other key is warm on this instance by now (its grant and the
        // truck paths): its reads and PATCHes go out beside its admission,
        // and they too see nothing of the owner's.
        let mut cold = Vec::new();
        let mut walked = 0;
        for (method, path, item, op) in versioned_operations() {
            if NOT_ORGANIZATION_SCOPED.contains(&path.as_str()) {
                continue;
            }
            walked += 1;
            let (request, target, sent) = request(&owner, &method, path, item, op, None);
            let reply = request.key(&other.key).send().await;
            let status = reply.status.as_u16();
            if matches!(method, Method::GET | Method::PATCH) && !reply.warm {
                cold.push(format!("{method} {target}"));
            }
            let names_a_record = path.contains('{');
            if names_a_record && !matches!(status, 403 | 404) {
                leaks.push(format!("{method} {target}: {status} {}", reply.text));
            }
            if status >= 500 {
                leaks.push(format!("{method} {target}: {status} {}", reply.text));
            }
            // The ids this request named may be echoed in its error;
            // nothing else of the owner's may appear.
            let asked = format!(
                "{target} {}",
                sent.map(|s| s.to_string()).unwrap_or_default()
            );
            // The other organization's own grant names the owner.
            let own_grant = path == "/api/v1/org-access-grants";
            let foreign = owner
                .ids()
                .filter(|id| !asked.contains(id.as_str()))
                .filter(|id| !(own_grant && **id == owner.t.id().to_string()))
                .find(|id| reply.text.contains(id.as_str()));
            if reply.text.contains(&owner.marker) || foreign.is_some() {
                leaks.push(format!(
                    "{method} {target} shows the owner's data: {}",
                    reply.text
                ));
            }
        }
        assert!(walked >= 50, "the matrix walked only {walked} operations");
        assert!(leaks.is_empty(), "{}", leaks.join("\n"));
        assert!(cold.is_empty(), "not warm: {}", cold.join(", "));
        let after = everything_read(&owner).await;
        for (target, seen) in &before {
            assert_eq!(seen["status"], 200, "the owner reads {target}: {seen}");
            assert_eq!(&after[target], seen, "{target} changed");
        }
    });
}
