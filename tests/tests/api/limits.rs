//! The platform's limits that the local engines do not impose, each at its
//! edge through the router (the table: docs/decisions/platform-limits.md).

use axum::extract::Path;
use axum::routing::get;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, Method};
use shared::auth::ReadData;
use shared::http::Ctx;
use shared::http::payload::{HEADERS_ADDED_AFTER, LAMBDA_RESPONSE_LIMIT, invocation_len};

use api_tests::{call, harness, key_id, org, run, stored, unique};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};
use shared::store::engine::keys;

/// DynamoDB's largest item (400 KB).
const ITEM_LIMIT: usize = 400 * 1024;

/// An item's size as DynamoDB counts it: each attribute's name and value
/// (a string its UTF-8 bytes, a number about a byte for two digits and
/// one more, a list or map 3 bytes and 1 for each element); at most.
fn item_size(item: &std::collections::HashMap<String, AttributeValue>) -> usize {
    fn value(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) => s.len(),
            AttributeValue::N(n) => n.len().div_ceil(2) + 1,
            AttributeValue::B(b) => b.as_ref().len(),
            AttributeValue::Ss(l) => l.iter().map(String::len).sum(),
            AttributeValue::Ns(l) => l.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
            AttributeValue::L(l) => 3 + l.iter().map(|v| value(v) + 1).sum::<usize>(),
            AttributeValue::M(m) => {
                3 + m.iter().map(|(k, v)| k.len() + value(v) + 1).sum::<usize>()
            }
            _ => 1,
        }
    }
    item.iter().map(|(name, v)| name.len() + value(v)).sum()
}

/// The most a text field may hold in bytes: `n` characters of four bytes.
fn widest(n: usize) -> String {
    "😀".repeat(n)
}

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

/// The largest record the contract's bounds allow is the site: nine texts
/// of 500 characters and 50 metadata entries of 100 + 1000, each character
/// four bytes (about 238 KB). It is created with an `Idempotency-Key` (its
/// answer kept beside it, under the 256 KiB a kept answer may have),
/// replayed, changed to another such site and read back: every item it
/// makes stays under DynamoDB's 400 KB, which DynamoDB Local enforces as
/// AWS does (checked: a 409,590-byte string is refused).
#[test]
fn the_largest_site_the_contract_allows_is_stored_kept_changed_and_read() {
    run(async {
        let t = org().await;
        let metadata = |mark: &str| -> Value {
            (0..50)
                .map(|i| (format!("{mark}{i:02}{}", widest(97)), json!(widest(1000))))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let texts = [
            "street_address",
            "postal_code",
            "city",
            "construction_id",
            "external_id",
            "contact_first_name",
            "contact_last_name",
            "info",
            "type",
        ];
        let mut body = json!({"name": widest(500), "metadata": metadata("a")});
        for field in texts {
            body[field] = json!(widest(500));
        }
        let idempotency = unique("largest-site");
        let create = || {
            call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", &idempotency)
                .json(&body)
                .send()
        };
        let created = create().await;
        assert_eq!(created.status, 201, "{}", created.code());
        let id: uuid::Uuid = created.body["data"]["id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let again = create().await;
        assert_eq!(again.status, 201);
        assert_eq!(
            again.header("idempotent-replayed"),
            "true",
            "the answer was kept"
        );
        let site = stored(keys::record_pk(t.id(), id), &format!("SITE#{id}"))
            .await
            .unwrap();
        let kept = stored(
            keys::idempotency_pk(key_id(&t).await),
            &keys::idempotency_sk(&idempotency),
        )
        .await
        .unwrap();
        for (what, item) in [("the site", &site), ("its kept answer", &kept)] {
            let size = item_size(item);
            assert!(
                size > 200 * 1024 && size < ITEM_LIMIT,
                "{what}: {size} bytes"
            );
        }
        let changed = call(Method::PATCH, &format!("/api/v1/sites/{id}"))
            .key(&t.key)
            .json(&json!({"metadata": metadata("b"), "name": widest(500)}))
            .send()
            .await;
        assert_eq!(changed.status, 200, "{}", changed.code());
        let read = call(Method::GET, &format!("/api/v1/sites/{id}"))
            .key(&t.key)
            .send()
            .await;
        assert_eq!(read.status, 200);
        assert_eq!(read.body["data"]["metadata"], metadata("b"));
        assert_eq!(read.body["data"]["city"], json!(widest(500)));
    });
}

/// The largest page of loads an organization can ask for (100 rows, every
/// text at its bound in the costliest character: a control character is
/// six bytes in JSON and seven in Lambda's document) goes out whole
/// within Lambda's response, with room to spare.
#[test]
fn the_largest_page_of_loads_fits_lambdas_response() {
    run(async {
        let t = org().await;
        let site = crate::sites::new_site(&t, json!({"name": "Origin"})).await;
        let costly = |n: usize| "\u{1}".repeat(n);
        let load = json!({
            "site_id": site, "volume_m3": 1,
            "material_grade": costly(500), "manufacturer": costly(500),
            "description": costly(2000), "notes": costly(2000),
        });
        // Two keys share the writes: a key has 100 requests a minute.
        let other = api_tests::TestOrg {
            org: t.org.clone(),
            key: api_tests::new_key(t.id(), &[shared::auth::Scope::All]).await,
        };
        for writer in [&t, &other].into_iter().cycle().take(100) {
            crate::surpluses::create_load(writer, load.clone())
                .await
                .expect(201, None);
        }
        let page = call(Method::GET, "/api/v1/surpluses?limit=100")
            .key(&other.key)
            .send()
            .await;
        assert_eq!(page.status, 200, "{}", page.code());
        let rows = page.body["data"].as_array().unwrap();
        assert_eq!(rows.len(), 100);
        assert_eq!(
            rows[0]["notes"],
            json!(costly(2000)),
            "stored and shown whole"
        );
        let carried = invocation_len(&page.headers, page.text.as_bytes());
        assert!(
            carried > 3_000_000 && carried < LAMBDA_RESPONSE_LIMIT,
            "{carried} bytes in Lambda's document"
        );
    });
}

/// The largest page of the month-end report (1000 rows, every name and
/// text at its bound in control characters: about 15 MB of Lambda's
/// document as JSON, 12 MB as CSV) ends at the last row that fits, under
/// Lambda's limit, and its cursor goes on from there: every load once over
/// the pages, as JSON and as CSV.
#[test]
fn the_month_end_reports_largest_page_ends_where_lambdas_answer_is_full() {
    use shared::model::surplus::{SurplusRecord, SurplusStatus};
    run(async {
        let t = org().await;
        let costly = |n: usize| "\u{1}".repeat(n);
        let site = crate::sites::new_site(&t, json!({"name": costly(500)})).await;
        let point =
            crate::receiving_points::new_point(&t, json!({"site_id": site, "name": costly(500)}))
                .await;
        let start = chrono::DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z").unwrap();
        let loads: Vec<SurplusRecord> = (0..1000)
            .map(|i| {
                let created = (start + chrono::TimeDelta::minutes(i))
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
                let mut load =
                    crate::reports::load_at(&t, &site, &created, 1.0, SurplusStatus::Delivered);
                load.to_receiving_point_id = Some(point.parse().unwrap());
                load.to_site_id = Some(site.parse().unwrap());
                load.to_org_id = Some(t.id());
                load.material_grade = Some(costly(500));
                load.manufacturer = Some(costly(500));
                load
            })
            .collect();
        crate::reports::import(&loads).await;
        let everyone: std::collections::BTreeSet<String> =
            loads.iter().map(|load| load.id.to_string()).collect();
        let query = "/api/v1/reports/loads?from=2026-03-01&to=2026-03-31&limit=1000";

        // As JSON: pages of what fits, each nearly full, the cursor on.
        let first = call(Method::GET, query).key(&t.key).send().await;
        assert_eq!(
            first.body["data"][0]["material_grade"],
            json!(costly(500)),
            "shown whole"
        );
        let (seen, sizes) = crate::sized_lists::every_page(&t, query, "surplus_id").await;
        assert_eq!(seen.len(), 1000, "{sizes:?}");
        assert_eq!(
            seen.iter()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            everyone
        );
        assert!(sizes.len() >= 3, "{sizes:?}");
        assert!(
            sizes[0] > LAMBDA_RESPONSE_LIMIT * 9 / 10,
            "a page is filled: {sizes:?}"
        );

        // As CSV: the same, its next page in `Link`.
        let (mut seen, mut pages) = (Vec::new(), 0);
        let mut path = query.to_owned();
        loop {
            let page = call(Method::GET, &path)
                .key(&t.key)
                .header("accept", "text/csv")
                .send()
                .await;
            page.expect(200, None);
            pages += 1;
            let carried = invocation_len(&page.headers, page.text.as_bytes());
            assert!(
                carried + HEADERS_ADDED_AFTER < LAMBDA_RESPONSE_LIMIT,
                "{carried}"
            );
            let lines: Vec<&str> = page.text.split("\r\n").collect();
            seen.extend(
                lines[1..lines.len() - 1]
                    .iter()
                    .map(|line| line.split(',').next().unwrap().to_owned()),
            );
            let link = page.header("link");
            if link.is_empty() {
                break;
            }
            path = link
                .trim_start_matches('<')
                .trim_end_matches(">; rel=\"next\"")
                .to_owned();
        }
        assert_eq!(seen.len(), 1000);
        assert_eq!(
            seen.into_iter().collect::<std::collections::BTreeSet<_>>(),
            everyone
        );
        assert!(pages >= 2, "{pages} pages");
    });
}
