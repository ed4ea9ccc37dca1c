use api_tests::{call, run};
use http::Method;

#[test]
fn health_is_ok_without_auth_and_ignores_auth_headers() {
    run(async {
        for garbage in [None, Some("Bearer nonsense"), Some("Basic abc")] {
            let mut c = call(Method::GET, "/api/health");
            if let Some(value) = garbage {
                c = c
                    .header("authorization", value)
                    .header("x-api-key", "also-nonsense");
            }
            let reply = c.send().await;
            reply.expect(200, None);
            assert_eq!(reply.body, serde_json::json!({"status": "ok"}));
            assert_eq!(reply.ddb_calls, 0);
        }
    });
}

#[test]
fn unknown_routes_and_methods_answer_json() {
    run(async {
        call(Method::GET, "/nowhere")
            .send()
            .await
            .expect(404, Some("not_found"));
        let reply = call(Method::GET, "/api/v1/nowhere").send().await;
        reply.expect(404, Some("not_found"));
        assert_eq!(reply.header("x-ratelimit-limit"), "100");
        call(Method::DELETE, "/api/v1/orgs")
            .send()
            .await
            .expect(405, Some("method_not_allowed"));
        call(Method::POST, "/api/health")
            .send()
            .await
            .expect(405, Some("method_not_allowed"));
    });
}

#[test]
fn every_response_has_a_request_id() {
    run(async {
        let reply = call(Method::GET, "/api/health").send().await;
        assert!(!reply.header("x-request-id").is_empty());
        let reply = call(Method::GET, "/api/health")
            .header("x-request-id", "trace-123")
            .send()
            .await;
        assert_eq!(reply.header("x-request-id"), "trace-123");
    });
}
