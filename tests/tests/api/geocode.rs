//! Geocoding through Google's Geocoding API, run here as a loopback
//! stand-in speaking its documented format: the request sent, the answer
//! read, every code (404, 422, 502, 503, 504), and the key kept secret.

use std::time::Duration;

use api_tests::providers::{
    Canned, GEOCODE_PATH, StandIn, google_denied, google_found, google_zero_results,
};
use api_tests::{Reply, TestOrg, call, harness, new_key, org, run};
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::deployment_key::KeySource;

const KEY: &str = "AIzaSyTEST-geocode-key-0123456789abcdef";

/// The API with geocoding configured against `provider`.
pub(crate) async fn configured(provider: &StandIn, timeout: Duration) -> Router {
    let url = format!("{}{GEOCODE_PATH}", provider.base);
    harness().await.router_with(|c| {
        c.geocode.api_key = Some(KeySource::Value(KEY.as_bytes().to_vec()));
        c.geocode.url = url;
        c.geocode.region = Some("fi".into());
        c.geocode.timeout = timeout;
    })
}

pub(crate) async fn geocode(router: &Router, t: &TestOrg, body: Value) -> Reply {
    call(Method::POST, "/api/v1/geocode")
        .key(&t.key)
        .json(&body)
        .send_to(router)
        .await
}

#[test]
fn an_address_is_resolved_through_the_provider() {
    run(async {
        let provider = StandIn::start(|_, _| {
            google_found(
                "Mannerheimintie 1, 00100 Helsinki, Finland",
                60.1687209,
                24.9410591,
                "ROOFTOP",
                false,
            )
        })
        .await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;

        let reply = geocode(
            &api,
            &t,
            json!({"address": " Mannerheimintie 1, Helsinki "}),
        )
        .await;

        reply.expect(200, None);
        assert_eq!(
            reply.body,
            json!({"data": {
                "coordinates": {"lat": 60.1687209, "lng": 24.9410591},
                "formatted_address": "Mannerheimintie 1, 00100 Helsinki, Finland",
                "match_quality": "exact",
                "partial_match": false
            }})
        );
        // The documented request: GET with the address, the region and the key.
        let sent = &provider.requests()[0];
        assert_eq!(sent.method, Method::GET);
        assert_eq!(sent.uri.path(), GEOCODE_PATH);
        assert_eq!(
            sent.param("address").as_deref(),
            Some("Mannerheimintie 1, Helsinki")
        );
        assert_eq!(sent.param("region").as_deref(), Some("fi"));
        assert_eq!(sent.param("key").as_deref(), Some(KEY));
        assert_eq!(sent.param("components"), None);
        assert!(!reply.text.contains(KEY));
    });
}

#[test]
fn a_structured_address_is_sent_as_one_line_with_its_postal_code() {
    run(async {
        let provider = StandIn::start(|_, _| {
            google_found(
                "Kauppatori, 00170 Helsinki, Finland",
                60.1675,
                24.9525,
                "GEOMETRIC_CENTER",
                true,
            )
        })
        .await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;
        let reply = geocode(
            &api,
            &t,
            json!({"street_address": "Kauppatori", "postal_code": "00170", "city": "Helsinki", "address": null}),
        )
        .await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["match_quality"], "center");
        assert_eq!(reply.body["data"]["partial_match"], true);
        let sent = &provider.requests()[0];
        assert_eq!(
            sent.param("address").as_deref(),
            Some("Kauppatori, 00170 Helsinki")
        );
        assert_eq!(
            sent.param("components").as_deref(),
            Some("postal_code:00170")
        );
    });
}

#[test]
fn every_location_type_has_a_match_quality() {
    run(async {
        let types = [
            "ROOFTOP",
            "RANGE_INTERPOLATED",
            "GEOMETRIC_CENTER",
            "APPROXIMATE",
        ];
        let provider =
            StandIn::start(move |_, n| google_found("Somewhere", 60.0, 25.0, types[n % 4], false))
                .await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;
        let mut qualities = Vec::new();
        for _ in types {
            let reply = geocode(&api, &t, json!({"address": "Somewhere"})).await;
            qualities.push(
                reply.body["data"]["match_quality"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        assert_eq!(
            qualities,
            ["exact", "interpolated", "center", "approximate"]
        );
    });
}

#[test]
fn nothing_found_is_404_geocode_not_found() {
    run(async {
        let provider = StandIn::start(|_, _| google_zero_results()).await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;
        geocode(&api, &t, json!({"address": "Nowhere 404, Atlantis"}))
            .await
            .expect(404, Some("geocode_not_found"));
    });
}

#[test]
fn a_failing_provider_is_502_and_a_slow_one_504() {
    run(async {
        let t = org().await;
        for (answer, name) in [
            (google_denied(), "request denied"),
            (
                Canned::json(200, json!({"results": [], "status": "OVER_QUERY_LIMIT"})),
                "over the limit",
            ),
            (Canned::json(500, json!({"error": "boom"})), "HTTP 500"),
            (
                Canned {
                    status: 200,
                    body: "<html>not json</html>".into(),
                    delay: Duration::ZERO,
                    gate: None,
                },
                "not its format",
            ),
            (
                Canned::json(200, json!({"results": [], "status": "OK"})),
                "OK without a result",
            ),
        ] {
            let provider = StandIn::start(move |_, _| answer.clone()).await;
            let api = configured(&provider, Duration::from_secs(5)).await;
            let reply = geocode(&api, &t, json!({"address": "Mannerheimintie 1"})).await;
            reply.expect(502, Some("geocode_provider_error"));
            assert!(!reply.text.contains(KEY), "{name}");
        }
        // Nobody listening.
        let unreachable = harness().await.router_with(|c| {
            c.geocode.api_key = Some(KeySource::Value(KEY.as_bytes().to_vec()));
            c.geocode.url = "http://127.0.0.1:9/maps/api/geocode/json".into();
        });
        geocode(&unreachable, &t, json!({"address": "Mannerheimintie 1"}))
            .await
            .expect(502, Some("geocode_provider_error"));
        // An answer later than the timeout (held until after it).
        let slow = StandIn::start(|_, _| {
            google_zero_results().held(&api_tests::providers::Gate::default())
        })
        .await;
        let api = configured(&slow, Duration::from_millis(300)).await;
        geocode(&api, &t, json!({"address": "Mannerheimintie 1"}))
            .await
            .expect(504, Some("geocode_timeout"));
        // The key is never logged, whatever happened.
        assert!(!api_tests::webhooks::logs().contains(KEY));
    });
}

#[test]
fn without_a_key_geocoding_is_503_geocode_not_configured() {
    run(async {
        let t = org().await;
        assert!(harness().await.state.config.geocode.api_key.is_none());
        let reply = call(Method::POST, "/api/v1/geocode")
            .key(&t.key)
            .json(&json!({"address": "Mannerheimintie 1"}))
            .send()
            .await;
        reply.expect(503, Some("geocode_not_configured"));
    });
}

#[test]
fn a_body_of_neither_form_is_422_naming_the_field_and_nothing_is_sent() {
    run(async {
        let provider = StandIn::start(|_, _| google_zero_results()).await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;
        for (body, field) in [
            (json!({}), "address"),
            (json!({"address": ""}), "address"),
            (json!({"address": "x".repeat(501)}), "address"),
            (json!({"address": 7}), "address"),
            (json!({"address": "A 1", "postal_code": "00100"}), "address"),
            (
                json!({"street_address": "A 1", "postal_code": "00100"}),
                "city",
            ),
            (
                json!({"street_address": "A 1", "city": "Oulu"}),
                "postal_code",
            ),
            (
                json!({"postal_code": "00100", "city": "Oulu"}),
                "street_address",
            ),
            (
                json!({"street_address": "A 1", "postal_code": "0".repeat(21), "city": "Oulu"}),
                "postal_code",
            ),
        ] {
            let reply = geocode(&api, &t, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            let message = reply.body["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("{field}:")),
                "{body}: {message}"
            );
        }
        let reply = call(Method::POST, "/api/v1/geocode")
            .key(&t.key)
            .raw("{")
            .send_to(&api)
            .await;
        reply.expect(400, Some("invalid_json"));
        assert_eq!(provider.count(), 0);
    });
}

#[test]
fn geocoding_needs_read_data() {
    run(async {
        let provider = StandIn::start(|_, _| google_zero_results()).await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;
        let write_only = new_key(t.id(), &[Scope::WriteData]).await;
        call(Method::POST, "/api/v1/geocode")
            .key(&write_only)
            .json(&json!({"address": "Mannerheimintie 1"}))
            .send_to(&api)
            .await
            .expect(403, Some("insufficient_scope"));
        assert_eq!(provider.count(), 0);
    });
}

#[test]
fn a_key_makes_at_most_200_geocoding_calls_an_hour_found_or_not() {
    run(async {
        let provider = StandIn::start(|_, _| google_zero_results()).await;
        let api = configured(&provider, Duration::from_secs(5)).await;
        let t = org().await;
        let body = json!({"address": "Nowhere 1"});
        api_tests::use_quota(&t, &shared::model::quota::GEOCODING, 198).await;
        for _ in 0..2 {
            geocode(&api, &t, body.clone())
                .await
                .expect(404, Some("geocode_not_found"));
        }
        let refused = geocode(&api, &t, body.clone()).await;
        refused.expect(429, Some("geocode_rate_limited"));
        let wait: u64 = refused.header("retry-after").parse().unwrap();
        assert!((1..=3600).contains(&wait), "{wait}");
        assert_eq!(provider.count(), 2, "the refused call reached no provider");
        // Another key of the organization has its own quota.
        let other = TestOrg {
            key: new_key(t.id(), &[Scope::ReadData]).await,
            org: t.org.clone(),
        };
        geocode(&api, &other, body)
            .await
            .expect(404, Some("geocode_not_found"));
    });
}
