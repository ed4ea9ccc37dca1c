//! Faults of the store: DynamoDB gone (connection refused), silent (a
//! connection that never answers) or throttling. Every operation of the
//! description under `/api/v1` answers a clean 500 `internal_error` within
//! the SDK's bounds (`shared::aws`), and a throttled call is tried exactly
//! as often as the retry policy says. Shorter limits than production's
//! keep the test quick; the mechanism is the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use api_tests::{TestOrg, call, harness, org, run};
use axum::Router;
use http::{Method, StatusCode};
use shared::aws::SdkLimits;

const LIMITS: SdkLimits = SdkLimits {
    connect: Duration::from_millis(200),
    attempt: Duration::from_millis(300),
    operation: Duration::from_millis(1500),
    max_attempts: 3,
    initial_backoff: Duration::from_millis(10),
    max_backoff: Duration::from_millis(40),
};

/// The whole API with every AWS call sent to `endpoint` under `LIMITS`.
async fn api_against(endpoint: &str) -> Router {
    let h = harness().await;
    // Built by hand: the environment's endpoints (AWS_ENDPOINT_URL and
    // AWS_ENDPOINT_URL_DYNAMODB, the local engines) would take precedence
    // over another endpoint.
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("eu-north-1"))
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new("test", "test", None, None, "faults"),
            ),
        )
        .endpoint_url(endpoint)
        .timeout_config(LIMITS.timeouts())
        .retry_config(LIMITS.retries())
        .build();
    let state = shared::state::AppState::new((*h.state.config).clone(), &sdk);
    shared::http::app(local::routes(), state)
}

/// Every operation under `/api/v1`, with made-up ids.
fn operations() -> Vec<(Method, String)> {
    let mut operations = Vec::new();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/") {
            continue;
        }
        let mut concrete = path.clone();
        while let (Some(start), Some(end)) = (concrete.find('{'), concrete.find('}')) {
            concrete.replace_range(start..=end, &uuid::Uuid::now_v7().to_string());
        }
        for method in item.as_object().unwrap().keys() {
            if let Ok(method) = method.to_uppercase().parse::<Method>()
                && item[method.as_str().to_lowercase()]
                    .get("responses")
                    .is_some()
            {
                operations.push((method, concrete.clone()));
            }
        }
    }
    assert!(operations.len() >= 50, "{} operations", operations.len());
    operations
}

/// Each operation answers 500 `internal_error` within the SDK's bound.
async fn every_operation_fails_cleanly(api: &Router, t: &TestOrg, fault: &str) {
    // The operation timeout, plus the time a debug build needs around it
    // on a starved machine (what is judged is that a bound holds at all:
    // a call without one would wait for ever on a silent endpoint).
    let bound = LIMITS.operation + Duration::from_secs(4);
    for (method, path) in operations() {
        let started = Instant::now();
        let reply = call(method.clone(), &path)
            .key(&t.key)
            .json(&serde_json::json!({}))
            .send_to(api)
            .await;
        let took = started.elapsed();
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::INTERNAL_SERVER_ERROR, "internal_error"),
            "{fault}: {method} {path}: {}",
            reply.text
        );
        assert_eq!(reply.body["error"], "Internal Server Error");
        assert!(took < bound, "{fault}: {method} {path} took {took:?}");
    }
}

#[test]
fn with_dynamodb_gone_every_operation_is_a_clean_500() {
    run(async {
        let t = org().await;
        // A port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let api = api_against(&format!("http://127.0.0.1:{port}")).await;
        every_operation_fails_cleanly(&api, &t, "refused").await;
    });
}

/// An endpoint that takes connections and never answers (abort the task
/// to close it).
async fn silent_endpoint() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (endpoint, silent)
}

#[test]
fn with_dynamodb_silent_every_operation_is_a_clean_500_in_time() {
    run(async {
        let t = org().await;
        let (endpoint, silent) = silent_endpoint().await;
        let api = api_against(&endpoint).await;
        every_operation_fails_cleanly(&api, &t, "silent").await;
        silent.abort();
    });
}

/// In Lambda, a request answers before the invocation's deadline, even
/// when the store's own bounds would take longer: a clean 500 with the
/// rate-limit headers, not API Gateway's bodiless 503 after the function
/// was cut off.
#[test]
fn a_request_answers_a_clean_500_before_the_lambda_deadline() {
    run(async {
        let t = org().await;
        let (endpoint, silent) = silent_endpoint().await;
        let api = api_against(&endpoint).await;
        // 700 ms left of the invocation: less than one call's bound, so
        // that only the deadline can end the request this early.
        let left = Duration::from_millis(700);
        assert!(left + Duration::from_millis(500) < LIMITS.operation);
        let mut context = lambda_http::Context::default();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        context.deadline = u64::try_from((now + left).as_millis()).unwrap();
        let started = Instant::now();
        let reply = call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .extension(context)
            .json(&serde_json::json!({"name": "Late"}))
            .send_to(&api)
            .await;
        let took = started.elapsed();
        reply.expect(500, Some("internal_error"));
        // The service answers a reserve (250 ms) before the deadline; the
        // half second after the deadline is the test's own latency on a
        // starved machine, short of the operation's 1.5 s that a request
        // ignoring the deadline would take.
        assert!(
            took < left + Duration::from_millis(500),
            "answered after {took:?}"
        );
        assert!(
            took >= left - Duration::from_millis(400),
            "cut off early: {took:?}"
        );
        assert_ne!(reply.header("x-ratelimit-limit"), "");
        assert_ne!(reply.header("x-request-id"), "");
        // Its time counts in the latency objective, as every 5xx's does: a
        // slow outage looks slow (only a 4xx's is left out).
        let line = api_tests::metrics::of_request(reply.header("x-request-id"));
        assert_eq!(
            (&line["StatusClass"], &line["Code"]),
            (
                &serde_json::json!("5xx"),
                &serde_json::json!("internal_error")
            )
        );
        let latency = line["Latency"].as_f64().unwrap();
        let least = (left - Duration::from_millis(400)).as_secs_f64() * 1000.0;
        assert!(
            latency >= least && latency <= took.as_secs_f64() * 1000.0,
            "{latency} ms of {took:?}"
        );
        assert_eq!(
            crate::metrics::sets_of(&line, "Latency"),
            [
                vec!["Service".to_owned()],
                vec!["Service".to_owned(), "Route".to_owned()]
            ]
        );
        silent.abort();
    });
}

#[test]
fn a_throttled_call_is_tried_max_attempts_times_then_a_clean_500() {
    run(async {
        let t = org().await;
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let throttling = Router::new().fallback(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                (
                    StatusCode::BAD_REQUEST,
                    [("content-type", "application/x-amz-json-1.0")],
                    r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#,
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, throttling).await });
        let api = api_against(&endpoint).await;
        for path in ["/api/v1/orgs", "/api/v1/sites", "/api/v1/surpluses"] {
            let before = seen.load(Ordering::SeqCst);
            let reply = call(Method::GET, path).key(&t.key).send_to(&api).await;
            reply.expect(500, Some("internal_error"));
            // Authentication is the first round trip (the key's read and
            // its count at once, each tried `max_attempts` times, the other
            // dropped when one fails); nothing follows its failure.
            let calls = seen.load(Ordering::SeqCst) - before;
            let attempts = LIMITS.max_attempts as usize;
            assert!(
                (attempts..=2 * attempts).contains(&calls),
                "{path}: {calls} calls"
            );
        }
    });
}

/// `cargo lambda watch` gives every invocation the deadline 600000 (ten
/// minutes after 1970): a deadline already past on arrival is no Lambda's,
/// and the request runs as it would without one.
#[test]
fn a_deadline_already_past_on_arrival_is_ignored() {
    run(async {
        let t = org().await;
        let mut context = lambda_http::Context::default();
        context.deadline = 600_000;
        let reply = call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .extension(context)
            .json(&serde_json::json!({"name": "Watched"}))
            .send()
            .await;
        reply.expect(201, None);
    });
}

#[test]
fn a_500_logs_the_store_call_that_failed_without_a_value() {
    run(async {
        let t = org().await;
        // A table that does not exist: every call fails at DynamoDB itself.
        let h = harness().await;
        let mut config = (*h.state.config).clone();
        config.store.table = format!("missing-{}", uuid::Uuid::new_v4());
        let state = shared::state::AppState::new(config, &h.sdk);
        let api = shared::http::app(local::routes(), state);
        let reply = call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&api)
            .await;
        reply.expect(500, Some("internal_error"));
        let id = reply.header("x-request-id").to_owned();
        let logs = api_tests::webhooks::logs();
        let line = logs
            .lines()
            .find(|line| line.contains(&id) && line.contains("internal error"))
            .unwrap_or_else(|| panic!("no internal error line for {id}"));
        assert!(
            line.contains("store_operation=") && line.contains("key_shape="),
            "{line}"
        );
        assert!(
            line.contains("APIKEY#*") || line.contains("RATE#*"),
            "{line}"
        );
        // The shape, never the key's hash.
        let hash = shared::auth::key::KeyHash::of(&t.key).to_hex();
        assert!(!line.contains(&hash), "{line}");
        // One such line, logged by the layer.
        assert_eq!(
            logs.lines()
                .filter(|line| line.contains(&id) && line.contains("internal error"))
                .count(),
            1
        );
    });
}
