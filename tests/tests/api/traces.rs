//! One trace per request: a request that X-Ray sampled is a server span
//! under Lambda's segment, each of its AWS calls a client span under it,
//! sent as OTLP JSON to the collector before the answer leaves; the
//! dispatcher's invocation is a span under its own, with the webhook's
//! POST under it. Nothing is sent for a request X-Ray did not sample. The
//! run's collector is a loopback server (`api_tests::traces`); each test
//! reads back the spans of a trace of its own.

use std::time::Duration;

use api_tests::traces::{attribute, kind, new_trace, spans_of};
use api_tests::webhooks::{Receiver, Stack, quick_policy};
use api_tests::{call, org, run};
use http::Method;
use serde_json::{Value, json};
use webhook_dispatcher::Invocation;

use crate::sites::new_site;

#[test]
fn a_sampled_request_is_one_trace_with_a_span_for_each_dynamodb_call() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Traced"})).await;
        let trace = new_trace(true);
        let reply = call(Method::GET, &format!("/api/v1/sites/{site}"))
            .key(&t.key)
            .header("x-amzn-trace-id", &trace.header)
            .send()
            .await;
        assert_eq!(reply.status, 200);

        // Sent before the answer came back.
        let spans = spans_of(&trace.trace_id);
        let server: Vec<&Value> = spans.iter().filter(|s| kind(s) == "server").collect();
        assert_eq!(server.len(), 1, "one span for the request: {spans:#?}");
        let request = server[0];
        assert_eq!(request["name"], "GET /api/v1/sites/{siteId}");
        assert_eq!(
            request["parentSpanId"], trace.parent,
            "under Lambda's segment"
        );
        assert_eq!(
            attribute(request, "http.response.status_code").as_deref(),
            Some("200")
        );
        let calls: Vec<&Value> = spans.iter().filter(|s| kind(s) == "client").collect();
        assert!(!calls.is_empty(), "the request read its site: {spans:#?}");
        for span in &calls {
            assert_eq!(span["parentSpanId"], request["spanId"], "under the request");
            assert_eq!(attribute(span, "rpc.system").as_deref(), Some("aws-api"));
            assert_eq!(attribute(span, "rpc.service").as_deref(), Some("DynamoDB"));
            let method = attribute(span, "rpc.method").unwrap();
            assert_eq!(span["name"], format!("DynamoDB.{method}"));
        }
        assert_eq!(
            calls.len() as u32,
            reply.ddb_calls,
            "a span for each DynamoDB call the request counted: {:?}",
            calls.iter().map(|s| &s["name"]).collect::<Vec<_>>()
        );
        // Nothing of the key or the site's name is in a span.
        let sent = serde_json::to_string(&spans).unwrap();
        assert!(!sent.contains(&t.key) && !sent.contains("Traced"));
    });
}

#[test]
fn a_request_x_ray_did_not_sample_sends_nothing() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Unsampled"})).await;
        let path = format!("/api/v1/sites/{site}");
        let unsampled = new_trace(false);
        let reply = call(Method::GET, &path)
            .key(&t.key)
            .header("x-amzn-trace-id", &unsampled.header)
            .send()
            .await;
        assert_eq!(reply.status, 200);
        // A header that does not parse starts no trace of its own either:
        // its root is not a trace anyone asked for.
        let malformed = new_trace(true);
        let reply = call(Method::GET, &path)
            .key(&t.key)
            .header(
                "x-amzn-trace-id",
                &malformed.header.replace("Parent=", "Parent=zz"),
            )
            .send()
            .await;
        assert_eq!(reply.status, 200);
        // A sampled one after them: the collector was there to be sent to.
        let sampled = new_trace(true);
        call(Method::GET, &path)
            .key(&t.key)
            .header("x-amzn-trace-id", &sampled.header)
            .send()
            .await;
        assert!(!spans_of(&sampled.trace_id).is_empty());
        assert_eq!(spans_of(&unsampled.trace_id), Vec::<Value>::new());
        assert_eq!(spans_of(&malformed.trace_id), Vec::<Value>::new());
    });
}

#[test]
fn the_dispatchers_invocation_is_a_span_with_the_webhook_post_under_it() {
    run(async {
        let stack = Stack::new(quick_policy(3), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        crate::deliveries::webhook_and_delivered_load(&stack, &t, &receiver).await;
        let trace = new_trace(true);
        let invocation = Invocation {
            trace_header: Some(trace.header.clone()),
            request_id: Some("0e2ea8a1-0c1b-4d26-9b61-3c3b9f8f1d55".into()),
        };
        for _ in 0..100 {
            local::poller::poll_once_in(&stack.dispatcher, &stack.state.queue, invocation.clone())
                .await
                .expect("poll");
            if receiver.count() >= 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(receiver.count(), 1);
        let delivery = receiver.first_delivery();

        let spans = spans_of(&trace.trace_id);
        let posts: Vec<&Value> = spans
            .iter()
            .filter(|s| attribute(s, "http.request.method").as_deref() == Some("POST"))
            .collect();
        assert_eq!(posts.len(), 1, "one POST: {spans:#?}");
        let post = posts[0];
        assert_eq!(kind(post), "client");
        assert_eq!(post["name"], "POST 127.0.0.1");
        assert_eq!(
            attribute(post, "server.address").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            attribute(post, "http.response.status_code").as_deref(),
            Some("204"),
            "the receiver's answer"
        );
        let parent = spans
            .iter()
            .find(|s| s["spanId"] == post["parentSpanId"])
            .expect("the POST's parent was sent");
        assert_eq!(kind(parent), "consumer");
        assert_eq!(parent["name"], "webhook queue batch");
        assert_eq!(
            parent["parentSpanId"], trace.parent,
            "under Lambda's segment"
        );
        // The delivery's own reads and writes are in the same trace.
        assert!(spans.iter().any(|s| {
            s["parentSpanId"] == parent["spanId"]
                && attribute(s, "rpc.service").as_deref() == Some("DynamoDB")
        }));
        // Its attempt's line and its queue message's name the trace and
        // the invocation.
        let attempts: Vec<Value> = api_tests::metrics::lines()
            .into_iter()
            .filter(|line| {
                line["message"] == "webhook attempt" && line["delivery_id"] == delivery.as_str()
            })
            .collect();
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0]["trace_id"], trace.root);
        assert_eq!(
            attempts[0]["invocation_id"],
            "0e2ea8a1-0c1b-4d26-9b61-3c3b9f8f1d55"
        );
        let lines: Vec<Value> = api_tests::metrics::lines()
            .into_iter()
            .filter(|line| {
                line["message"] == "queue message handled"
                    && line["body"].as_str().is_some_and(|b| b.contains(&delivery))
            })
            .collect();
        assert!(!lines.is_empty());
        for line in lines {
            assert_eq!(line["trace_id"], trace.root);
            assert_eq!(
                line["invocation_id"],
                "0e2ea8a1-0c1b-4d26-9b61-3c3b9f8f1d55"
            );
        }
    });
}
