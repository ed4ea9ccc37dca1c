//! Rules the description keeps about itself, each catching a kind of slip
//! that once shipped: a list answer without `meta`, a code listed on a
//! method that cannot answer it, a route that takes a body without its 413,
//! and the document misnaming its own OpenAPI version.

use serde_json::Value;
use std::collections::BTreeSet;

/// `$ref`s of the description resolved.
fn resolve(value: &Value) -> &Value {
    match value["$ref"].as_str() {
        Some(reference) => resolve(
            docs::OPENAPI
                .pointer(reference.trim_start_matches('#'))
                .expect("a reference that resolves"),
        ),
        None => value,
    }
}

/// Every operation: method (lowercase), path, the operation.
fn operations() -> Vec<(String, String, &'static Value)> {
    let mut out = Vec::new();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("responses").is_some() {
                out.push((method.clone(), path.clone(), op));
            }
        }
    }
    out
}

/// The JSON schemas of a response (resolved), one per media type.
fn schemas(response: &Value) -> impl Iterator<Item = &Value> {
    resolve(response)["content"]
        .as_object()
        .into_iter()
        .flat_map(|content| content.values())
        .map(|media| resolve(&media["schema"]))
}

/// The codes a response lists: `code` enums of its schema, of the schemas
/// it composes, and an `x-error-codes` list if it has one.
fn codes(response: &Value) -> BTreeSet<String> {
    fn collect(schema: &Value, out: &mut BTreeSet<String>) {
        let schema = resolve(schema);
        if let Some(list) = schema["properties"]["code"]["enum"].as_array() {
            out.extend(list.iter().filter_map(|c| c.as_str().map(str::to_owned)));
        }
        for part in ["allOf", "anyOf", "oneOf"] {
            for sub in schema[part].as_array().into_iter().flatten() {
                collect(sub, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    for schema in schemas(response) {
        collect(schema, &mut out);
    }
    let listed = resolve(response)["x-error-codes"]
        .as_array()
        .into_iter()
        .flatten();
    out.extend(listed.filter_map(|c| c.as_str().map(str::to_owned)));
    out
}

/// What every response of an operation may answer, by status.
fn codes_by_status(op: &Value) -> Vec<(String, BTreeSet<String>)> {
    op["responses"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(status, response)| (status.clone(), codes(response)))
        .collect()
}

#[test]
fn every_list_answer_carries_meta_with_its_count() {
    let mut found = Vec::new();
    for (method, path, op) in operations() {
        for (status, response) in op["responses"].as_object().unwrap() {
            for schema in schemas(response) {
                let is_list = resolve(&schema["properties"]["data"])["type"] == "array";
                let required = |field: &str| {
                    schema["required"]
                        .as_array()
                        .is_some_and(|r| r.iter().any(|f| f == field))
                };
                let meta = resolve(&schema["properties"]["meta"]);
                if is_list
                    && !(required("meta")
                        && (meta["properties"].get("count").is_some()
                            || meta["properties"].get("next_cursor").is_some()))
                {
                    found.push(format!("{method} {path} {status}: a list without meta"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Codes only some methods can answer, and the rule that says which.
const IDEMPOTENCY_CODES: [&str; 3] = [
    "invalid_idempotency_key",
    "idempotency_key_reused",
    "idempotency_key_in_flight",
];
const BODY_CODES: [&str; 3] = ["invalid_json", "invalid_multipart", "payload_too_large"];

#[test]
fn a_code_is_listed_only_on_methods_that_can_answer_it() {
    let mut found = Vec::new();
    for (method, path, op) in operations() {
        let takes_body = op.get("requestBody").is_some();
        for (status, codes) in codes_by_status(op) {
            for code in codes {
                let idempotency = IDEMPOTENCY_CODES.contains(&code.as_str()) && method != "post";
                let body = BODY_CODES.contains(&code.as_str()) && !takes_body;
                if idempotency || body {
                    found.push(format!(
                        "{method} {path} {status} lists {code}, which it cannot answer"
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_route_that_takes_a_body_declares_its_413() {
    let mut found = Vec::new();
    for (method, path, op) in operations() {
        if op.get("requestBody").is_none() {
            continue;
        }
        let too_large = codes_by_status(op)
            .into_iter()
            .find(|(status, _)| status == "413")
            .map(|(_, codes)| codes);
        match too_large {
            Some(codes)
                if codes.contains("payload_too_large") || codes.contains("file_too_large") => {}
            _ => found.push(format!("{method} {path} takes a body but declares no 413")),
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_description_names_its_own_openapi_version() {
    let version = docs::OPENAPI["openapi"].as_str().unwrap();
    let text = docs::OPENAPI_YAML;
    let mut named = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("OpenAPI 3.") {
        let tail = &rest[at + "OpenAPI ".len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        named.push(tail[..end].trim_end_matches('.').to_owned());
        rest = &tail[end..];
    }
    assert!(
        !named.is_empty(),
        "the description names no OpenAPI version"
    );
    for name in named {
        assert!(
            version.starts_with(&name),
            "the description says OpenAPI {name}, the file is {version}"
        );
    }
}

/// The 413 every body route declares is what it answers: a JSON body over
/// the 1 MiB limit, to every operation whose body is JSON (with made-up
/// ids: the size is judged before the path's record is looked up).
#[test]
fn every_route_that_takes_a_json_body_answers_413_to_one_over_the_limit() {
    api_tests::run(async {
        let t = api_tests::org().await;
        let huge = serde_json::json!({"name": "x".repeat(1_100_000)});
        let mut checked = 0;
        for (method, path, op) in operations() {
            if op["requestBody"]["content"]
                .get("application/json")
                .is_none()
            {
                continue;
            }
            let mut concrete = path.clone();
            while let (Some(start), Some(end)) = (concrete.find('{'), concrete.find('}')) {
                concrete.replace_range(start..=end, &uuid::Uuid::now_v7().to_string());
            }
            let method: http::Method = method.to_uppercase().parse().unwrap();
            let reply = api_tests::call(method.clone(), &concrete)
                .key(&t.key)
                .json(&huge)
                .send()
                .await;
            assert_eq!(
                (reply.status.as_u16(), reply.code()),
                (413, "payload_too_large"),
                "{method} {path}: {}",
                reply.text
            );
            checked += 1;
        }
        assert!(checked >= 20, "{checked} routes with JSON bodies");
    });
}
