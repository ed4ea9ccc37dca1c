//! Fuzz targets: hostile inputs (`api_tests::mutate`) against the JSON
//! bodies of every write route, the query strings of every read route and
//! the waybill upload (through the router, with moto's S3), and against
//! cursors, API key headers and `Idempotency-Key` (the parsers alone).
//! The rule everywhere: no panic, no 500, and every refusal is the
//! contract's error body.
//!
//! Each target runs for `FUZZ_SECONDS` (2 by default, the smoke that every
//! `cargo test` runs; `make fuzz` gives each a minute) from the seed
//! `FUZZ_SEED` (random by default, printed). A failing input is written
//! under `tests/fuzz-regressions/<target>/`, and every file there is sent
//! again first on each run: commit it with the fix.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use api_tests::mutate::Mutator;
use api_tests::{Reply, call, harness, multipart, run};
use axum::Router;
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{Value, json};
use sha2::Digest;
use shared::auth::key;
use shared::cursor::CursorCodec;

use crate::isolation::{Owner, body, target};

fn budget() -> Duration {
    let seconds = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(seconds)
}

/// This run's seed for `target`: `FUZZ_SEED`, else random; printed so a
/// failure can be replayed.
fn seed(target: &str) -> u64 {
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("fuzz {target}: FUZZ_SEED={seed}");
    seed
}

fn regressions(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz-regressions")
        .join(target)
}

/// A request as kept for replay.
#[derive(serde::Serialize, serde::Deserialize)]
struct Case {
    method: String,
    target: String,
    content_type: String,
    /// The body, hex-encoded (it need not be UTF-8).
    body_hex: String,
}

impl Case {
    fn new(method: &Method, target: &str, content_type: &str, body: &[u8]) -> Case {
        Case {
            method: method.to_string(),
            target: target.to_owned(),
            content_type: content_type.to_owned(),
            body_hex: hex::encode(body),
        }
    }

    async fn send(&self, router: &Router, key: &str) -> Reply {
        let mut request = call(self.method.parse().unwrap(), &self.target).key(key);
        let body = hex::decode(&self.body_hex).unwrap();
        if !self.content_type.is_empty() {
            request = request.body(&self.content_type, body);
        }
        request.send_to(router).await
    }

    /// Saves a failing case; the name is its hash, so saving twice is one file.
    fn keep(&self, target: &str) -> PathBuf {
        let text = serde_json::to_string_pretty(self).unwrap();
        let name = hex::encode(&sha2::Sha256::digest(&text)[..8]);
        let dir = regressions(target);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// What is wrong with an answer, if anything: a 500, a 5xx other than a
/// provider's, or a refusal without the contract's error body.
fn problem(reply: &Reply, provider: bool) -> Option<String> {
    let status = reply.status.as_u16();
    let provider_failure = provider && matches!(status, 502..=504);
    if status >= 500 && !provider_failure {
        return Some(format!("{status}: {}", reply.text));
    }
    if status >= 400 {
        let fields = reply.body.as_object().map(|o| {
            let mut names: Vec<&str> = o.keys().map(String::as_str).collect();
            names.sort_unstable();
            names
        });
        if fields != Some(vec!["code", "error", "message"]) {
            return Some(format!("{status} without the error body: {}", reply.text));
        }
    }
    None
}

/// The routes whose answers depend on a provider's (502 to 504 allowed).
fn calls_a_provider(path: &str) -> bool {
    path.starts_with("/api/v1/geocode") || path.starts_with("/api/v1/support")
}

/// A router for fuzzing: the harness's table and settings, with a budget
/// no fuzz run reaches.
async fn router() -> Router {
    harness()
        .await
        .router_with(|config| config.http.rate_limit.limit = 1_000_000)
}

/// Sends every kept case of `target`, then `generate`d cases until the
/// budget is spent; fails with every problem found (each case kept).
async fn fuzz_router(name: &str, owner: &Owner, mut generate: impl FnMut(&mut Mutator) -> Case) {
    let router = router().await;
    let mut failures = Vec::new();
    let mut sent = 0;
    let check = |case: &Case, reply: &Reply, failures: &mut Vec<String>| {
        if let Some(problem) = problem(reply, calls_a_provider(&case.target)) {
            let kept = case.keep(name);
            failures.push(format!(
                "{} {}: {problem} (kept in {})",
                case.method,
                case.target,
                kept.display()
            ));
        }
    };
    for entry in std::fs::read_dir(regressions(name)).into_iter().flatten() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let case: Case = serde_json::from_str(&text).unwrap();
        let reply = case.send(&router, &owner.t.key).await;
        check(&case, &reply, &mut failures);
        sent += 1;
    }
    let mut mutator = Mutator::new(seed(name));
    let deadline = Instant::now() + budget();
    while Instant::now() < deadline {
        let case = generate(&mut mutator);
        let reply = case.send(&router, &owner.t.key).await;
        check(&case, &reply, &mut failures);
        sent += 1;
    }
    println!("fuzz {name}: {sent} requests, {} problems", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every JSON write of the description: (method, target, example body).
fn json_writes(owner: &Owner) -> Vec<(Method, String, Value)> {
    let mut writes = Vec::new();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            if !path.starts_with("/api/v1/") || op.get("responses").is_none() {
                continue;
            }
            if let Some(example) = body(owner, path, op) {
                writes.push((method, target(owner, path, item, op), example));
            }
        }
    }
    writes
}

#[test]
fn fuzz_json_bodies_of_every_write_route() {
    run(async {
        let owner = Owner::new().await;
        let writes = json_writes(&owner);
        assert!(writes.len() >= 20, "only {} JSON writes", writes.len());
        let mut next = 0;
        fuzz_router("json-bodies", &owner, |m| {
            let (method, target, example) = &writes[next % writes.len()];
            next += 1;
            Case::new(method, target, "application/json", &m.json(example))
        })
        .await;
    });
}

/// Every GET under `/api/v1` with its query parameters' names.
fn reads(owner: &Owner) -> Vec<(String, Vec<String>)> {
    let mut reads = Vec::new();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        let Some(op) = item.get("get") else { continue };
        if !path.starts_with("/api/v1/") {
            continue;
        }
        let names = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| match p["$ref"].as_str() {
                Some(r) => docs::OPENAPI.pointer(r.trim_start_matches('#')).unwrap(),
                None => p,
            })
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect();
        reads.push((target(owner, path, item, op), names));
    }
    reads
}

#[test]
fn fuzz_query_strings_of_every_read_route() {
    run(async {
        let owner = Owner::new().await;
        let reads = reads(&owner);
        let mut next = 0;
        fuzz_router("query-strings", &owner, |m| {
            let (target, names) = &reads[next % reads.len()];
            next += 1;
            let (path, given) = target.split_once('?').unwrap_or((target, ""));
            let mut pairs: Vec<(String, String)> = form_urlencoded::parse(given.as_bytes())
                .into_owned()
                .collect();
            for _ in 0..=m.below(4) {
                let name = if !names.is_empty() && m.chance(0.8) {
                    names[m.below(names.len())].clone()
                } else {
                    m.string()
                };
                let value = match m.below(3) {
                    0 => m.string(),
                    1 => m.below(1_000_000).to_string(),
                    _ => uuid::Uuid::new_v4().to_string(),
                };
                pairs.push((name, value));
            }
            let mut query: String = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(&pairs)
                .finish();
            if m.chance(0.2) {
                // Broken escapes and raw bytes as a client might send them.
                let raw = m.bytes(query.as_bytes());
                query = raw
                    .iter()
                    .map(|&b| {
                        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b) {
                            (b as char).to_string()
                        } else {
                            format!("%{b:02X}")
                        }
                    })
                    .collect();
            }
            // Longer request lines never reach the function (API
            // Gateway's limit is 10 KB).
            let cut = (0..=query.len().min(8000))
                .rev()
                .find(|&i| query.is_char_boundary(i))
                .unwrap_or(0);
            query.truncate(cut);
            Case::new(&Method::GET, &format!("{path}?{query}"), "", b"")
        })
        .await;
    });
}

#[test]
fn fuzz_waybill_uploads() {
    run(async {
        let owner = Owner::new().await;
        let load = owner.by_parameter["surplusId"].clone();
        let target = format!("/api/v1/surpluses/{load}/waybill");
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
        fuzz_router("waybill-uploads", &owner, |m| {
            let boundary = if m.chance(0.8) {
                "fuzz".to_owned()
            } else {
                m.string()
            };
            let valid = multipart(&boundary, &[], Some(("w.png", "image/png", png)));
            let body = m.bytes(&valid);
            let content_type = match m.below(5) {
                0 => "multipart/form-data".to_owned(),
                1 => "application/json".to_owned(),
                2 => format!("multipart/form-data; boundary=\"{boundary}\""),
                _ => format!("multipart/form-data; boundary={boundary}"),
            };
            let content_type = if HeaderValue::from_str(&content_type).is_ok() {
                content_type
            } else {
                "multipart/form-data; boundary=fuzz".to_owned()
            };
            Case::new(&Method::POST, &target, &content_type, &body)
        })
        .await;
    });
}

/// Runs `one` on generated inputs until the budget is spent; a panic fails
/// the test with the seed that made it.
fn fuzz_parser(name: &str, mut one: impl FnMut(&mut Mutator)) {
    let seed = seed(name);
    let mut mutator = Mutator::new(seed);
    let deadline = Instant::now() + budget();
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| one(&mut mutator)));
        assert!(
            outcome.is_ok(),
            "fuzz {name} panicked; replay with FUZZ_SEED={seed}"
        );
        runs += 1;
    }
    println!("fuzz {name}: {runs} inputs");
}

#[test]
fn fuzz_cursors() {
    // A rotated key: cursors name the generation that signed them.
    let keys = shared::keyring::Keys::parse(
        r#"{"keys": [{"version": 1, "key": "the fuzzing cursor key, version 1"},
                     {"version": 2, "key": "the fuzzing cursor key, version 2"}]}"#,
    )
    .unwrap();
    let codec = CursorCodec::new(std::sync::Arc::new(keys), shared::clock::now()).unwrap();
    let org = uuid::Uuid::new_v4();
    let valid = codec.encode(
        org,
        "status=active",
        &json!({"sk": "SITE#x", "created_at": 1}),
    );
    fuzz_parser("cursors", |m| {
        let token = if m.chance(0.5) {
            // A well-signed cursor of any payload: what decoding does
            // after the signature check.
            let position = m.any_value(3);
            codec.encode(org, "status=active", &position)
        } else {
            String::from_utf8_lossy(&m.bytes(valid.as_bytes())).into_owned()
        };
        for result in [
            codec.decode::<Value>(org, "status=active", &token).err(),
            codec
                .decode::<std::collections::BTreeMap<String, String>>(org, "status=active", &token)
                .err(),
        ]
        .into_iter()
        .flatten()
        {
            assert_eq!(result.code(), "invalid_cursor");
        }
    });
}

#[test]
fn fuzz_api_key_headers() {
    let prefix = "org_live_";
    let valid = key::generate(prefix).plaintext;
    fuzz_parser("api-key-headers", |m| {
        let mut headers = HeaderMap::new();
        for name in ["authorization", "x-api-key"] {
            if m.chance(0.6) {
                let mut value = m.bytes(valid.as_bytes());
                if name == "authorization" && m.chance(0.7) {
                    value.splice(0..0, b"Bearer ".iter().copied());
                }
                if let Ok(value) = HeaderValue::from_bytes(&value) {
                    headers.append(name, value);
                }
            }
        }
        if let Err(error) = key::presented(&headers, prefix) {
            assert_eq!(error.status().as_u16(), 401, "{error}");
        }
    });
}

#[test]
fn fuzz_idempotency_keys() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let cursors = shared::cursor::Cursors::new(
        &aws_config::SdkConfig::builder().build(),
        Some(shared::deployment_key::KeySource::Value(
            b"a fuzzing key of 32 bytes or so.".to_vec(),
        )),
    );
    fuzz_parser("idempotency-keys", |m| {
        let value = m.bytes(b"order-42/retry");
        let Ok(value) = HeaderValue::from_bytes(&value) else {
            return;
        };
        let body = m.json(&json!({"name": "x"}));
        let request = http::Request::builder()
            .method(Method::POST)
            .uri("/api/v1/sites")
            .header("idempotency-key", value)
            .body(axum::body::Body::from(body))
            .unwrap();
        let read = runtime.block_on(shared::http::idempotency::read(request, 1 << 20, &cursors));
        assert!(read.is_ok_and(|(_, presented)| presented.is_some()));
    });
}
