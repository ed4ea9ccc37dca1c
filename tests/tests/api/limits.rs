//! The platform's limits that the local engines do not impose, each at its
//! edge through the router (the table: docs/decisions/platform-limits.md).

use axum::extract::Path;
use axum::routing::get;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, Method};
use shared::auth::ReadData;
use shared::http::Ctx;
use shared::http::payload::{HEADERS_ADDED_AFTER, LAMBDA_RESPONSE_LIMIT, invocation_len};

use api_tests::{call, harness, org, run};

/// Lambda returns at most 6 MB: the largest answer that fits goes out
/// whole, headers and all, and one byte more is the contract's 500, never
/// the 502 API Gateway would send for an invocation that failed.
#[test]
fn the_largest_answer_lambda_returns_goes_out_and_one_byte_more_is_the_contracts_500() {
    run(async {
        let h = harness().await;
        // A quote is the costliest byte of a JSON answer: two in Lambda's
        // document, where the body is a JSON string.
        let routes = axum::Router::new().route(
            "/api/v1/sized-answer/{quotes}",
            get(
                |_ctx: Ctx<ReadData>, Path(quotes): Path<usize>| async move {
                    ([(CONTENT_TYPE, "application/json")], "\"".repeat(quotes))
                },
            ),
        );
        let router = shared::http::app(routes, h.state.clone());
        let t = org().await;
        let mut typed = HeaderMap::new();
        typed.insert(CONTENT_TYPE, "application/json".parse().unwrap());
        let most = (LAMBDA_RESPONSE_LIMIT - HEADERS_ADDED_AFTER - invocation_len(&typed, b"")) / 2;
        let sent = call(Method::GET, &format!("/api/v1/sized-answer/{most}"))
            .key(&t.key)
            .send_to(&router)
            .await;
        assert_eq!(sent.status, 200);
        assert_eq!(sent.text.len(), most);
        let carried = invocation_len(&sent.headers, sent.text.as_bytes());
        assert!(
            carried <= LAMBDA_RESPONSE_LIMIT,
            "{carried} bytes with the headers added after the answer was measured: {:?}",
            sent.headers
        );
        let over = call(Method::GET, &format!("/api/v1/sized-answer/{}", most + 1))
            .key(&t.key)
            .send_to(&router)
            .await;
        assert_eq!(
            over.status,
            500,
            "{}",
            &over.text[..over.text.len().min(200)]
        );
        assert_eq!(over.code(), "internal_error");
    });
}
