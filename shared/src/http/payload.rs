//! Lambda's response payload limit, kept in one place. A function's answer
//! travels as the invocation's response: the JSON document `lambda_http`
//! writes for API Gateway (status, headers, and the body as a JSON string,
//! or base64 when its type is not text), at most 6 MB. An answer that
//! would not fit is not sent by Lambda at all, and API Gateway answers 502
//! with a body of its own. Here such an answer becomes the contract's
//! 500 `internal_error`, logged with its size, before anything else of the
//! request (its settlement, its metrics) sees it.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};

use crate::error::ApiError;

/// Lambda's largest synchronous response payload (6 MB).
pub const LAMBDA_RESPONSE_LIMIT: usize = 6 * 1024 * 1024;

/// The invocation's document around a body and its headers: the status,
/// the field names, `cookies`, `isBase64Encoded` (generously).
const ENVELOPE: usize = 256;

/// Room for the headers the request's settlement and the layer around it
/// add after the answer is measured (`X-RateLimit-*`, `x-request-id`,
/// `Idempotent-Replayed`: about 200 bytes).
pub const HEADERS_ADDED_AFTER: usize = 1024;

/// Whether `lambda_http` sends a body of this type as text (else base64),
/// by its own rule: `text/*`, JSON, JavaScript, XML and YAML, and the
/// `+json`, `+xml` and `+yaml` suffixes, unless the body is encoded.
fn sent_as_text(headers: &HeaderMap) -> bool {
    if headers.contains_key(CONTENT_ENCODING) {
        return false;
    }
    let Some(content_type) = headers.get(CONTENT_TYPE) else {
        return true;
    };
    let content_type = content_type.to_str().unwrap_or_default();
    let mime = content_type.split(';').next().unwrap_or_default().trim();
    [
        "text",
        "application/json",
        "application/javascript",
        "application/xml",
        "application/yaml",
    ]
    .iter()
    .any(|prefix| content_type.starts_with(prefix))
        || ["+xml", "+yaml", "+json"]
            .iter()
            .any(|suffix| mime.ends_with(suffix))
}

/// Bytes a JSON string holding `text` takes, quotes included.
fn json_string_len(text: &[u8]) -> usize {
    2 + text
        .iter()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// Room an answer of a page leaves beside its rows: its headers (a CSV's
/// `Link` and file name included), the body's opening and `meta`, the
/// invocation's document, and the headers added after it.
const PAGE_ROOM: usize = 64 * 1024 + HEADERS_ADDED_AFTER;

/// Bytes `text` takes within a body sent as text (the invocation's JSON
/// string escapes it), quotes left out.
pub fn text_cost(text: &[u8]) -> usize {
    json_string_len(text) - 2
}

/// How many rows, in order, one answer holds within Lambda's response
/// limit, given what each takes of the body (`text_cost` of its text and
/// separator): a listing's page that would not fit ends early, and its
/// cursor goes on from the last row it holds. At least one (a row is far
/// smaller than the limit).
pub fn fitting(costs: impl IntoIterator<Item = usize>) -> usize {
    let budget = LAMBDA_RESPONSE_LIMIT - PAGE_ROOM;
    let mut used = 0;
    let fit = costs
        .into_iter()
        .take_while(|cost| {
            used += cost;
            used <= budget
        })
        .count();
    fit.max(1)
}

/// `fitting` for rows answered as a JSON array: each row's JSON and its
/// comma.
pub fn fitting_json<T: serde::Serialize>(rows: &[T]) -> usize {
    fitting(
        rows.iter()
            .map(|row| serde_json::to_vec(row).map_or(0, |json| text_cost(&json)) + 1),
    )
}

/// What an answer with these headers and body takes in the invocation's
/// response, at most (a header is `"name":"value",`).
pub fn invocation_len(headers: &HeaderMap, body: &[u8]) -> usize {
    let body = if sent_as_text(headers) {
        json_string_len(body)
    } else {
        2 + body.len().div_ceil(3) * 4
    };
    let headers: usize = headers
        .iter()
        .map(|(name, value)| {
            json_string_len(name.as_str().as_bytes()) + json_string_len(value.as_bytes()) + 2
        })
        .sum();
    ENVELOPE + headers + body
}

/// The answer, or the contract's 500 when Lambda could not return it.
pub async fn within_limit(response: Response) -> Response {
    let (parts, body) = response.into_parts();
    // The answers are whole in memory already (Lambda's are buffered).
    let bytes = match axum::body::to_bytes(body, LAMBDA_RESPONSE_LIMIT + 1).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return too_large(
                &parts,
                format!("a body over {LAMBDA_RESPONSE_LIMIT} bytes ({error})"),
            );
        }
    };
    let len = invocation_len(&parts.headers, &bytes) + HEADERS_ADDED_AFTER;
    if len > LAMBDA_RESPONSE_LIMIT {
        return too_large(&parts, format!("{len} bytes"));
    }
    Response::from_parts(parts, Body::from(bytes))
}

fn too_large(parts: &http::response::Parts, size: String) -> Response {
    ApiError::internal(format!(
        "the answer ({} {size}) exceeds Lambda's {LAMBDA_RESPONSE_LIMIT}-byte response payload",
        parts.status
    ))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest page of billed loads (1000 rows, every field set, the
    /// widest numbers) takes well under a tenth of Lambda's 6 MB response:
    /// a billed load carries no text, so its page needs no cut by size.
    #[test]
    fn the_largest_page_of_billed_loads_is_far_under_lambdas_limit() {
        use crate::http::envelope::Page;
        use crate::model::report::BilledLoad;
        use crate::model::surplus::{BilledTo, SurplusStatus};
        use uuid::Uuid;
        let now = crate::model::now();
        let row = BilledLoad {
            surplus_id: Uuid::now_v7(),
            org_id: Uuid::now_v7(),
            billed_at: now,
            created_at: now,
            delivered_at: Some(now),
            status: SurplusStatus::Delivered,
            additive_billed_to: Some(BilledTo::OriginSite),
            volume_m3: 99.999,
            additive_usage_m3: 100,
            truck_id: Some(Uuid::now_v7()),
        };
        let page = Page {
            rows: vec![row; 1000],
            next_cursor: Some("c".repeat(crate::cursor::MAX_TOKEN_LEN)),
        };
        let cost = text_cost(&serde_json::to_vec(&page).unwrap());
        assert!(cost < LAMBDA_RESPONSE_LIMIT / 10, "{cost}");
    }

    #[test]
    fn a_page_holds_the_rows_that_fit_and_at_least_one() {
        let budget = LAMBDA_RESPONSE_LIMIT - PAGE_ROOM;
        assert_eq!(fitting([budget / 2, budget / 2, 1]), 2);
        assert_eq!(fitting([budget / 2, budget / 2 + 1]), 1);
        assert_eq!(fitting([budget + 1, 1]), 1);
        assert_eq!(fitting(std::iter::repeat_n(10, 3)), 3);
        // A control character takes six bytes of the document, a quote two.
        assert_eq!(text_cost(b"a\x01\""), 1 + 6 + 2);
        let row = serde_json::json!({"name": "\u{1}"});
        let cost = text_cost(&serde_json::to_vec(&row).unwrap()) + 1;
        assert_eq!(cost, 23);
        assert_eq!(fitting_json(&vec![row; budget / cost + 1]), budget / cost);
    }
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
    use lambda_http::aws_lambda_events::encodings::Body as LambdaBody;

    /// The document `lambda_http` sends for an answer (its own types).
    fn sent(headers: &HeaderMap, body: &[u8]) -> usize {
        let mut response = ApiGatewayV2httpResponse::default();
        response.status_code = 500;
        response.headers = headers.clone();
        response.is_base64_encoded = !sent_as_text(headers);
        response.body = Some(if response.is_base64_encoded {
            LambdaBody::Binary(body.to_vec())
        } else {
            LambdaBody::Text(String::from_utf8(body.to_vec()).unwrap())
        });
        serde_json::to_vec(&response).unwrap().len()
    }

    fn typed(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, content_type.parse().unwrap());
        headers.insert(
            "x-request-id",
            "0e2ea8a1-0c1b-4d26-9b61-3c3b9f8f1d55".parse().unwrap(),
        );
        headers
    }

    #[test]
    fn the_size_counted_is_never_under_what_lambda_sends_and_close_to_it() {
        let worst: String = (0u8..0x20)
            .map(char::from)
            .chain("\"\\é€😀a".chars())
            .collect();
        let cases: Vec<(HeaderMap, Vec<u8>)> = vec![
            (
                typed("application/json"),
                br#"{"data":[{"name":"x"}],"meta":{"count":1}}"#.to_vec(),
            ),
            (
                typed("application/json"),
                serde_json::to_vec(&worst.repeat(50)).unwrap(),
            ),
            (
                typed("text/csv; charset=utf-8"),
                worst.repeat(50).into_bytes(),
            ),
            (typed("application/problem+json"), b"{}".to_vec()),
            (typed("image/png"), vec![0xff; 1000]),
            (typed("image/png"), vec![0xff; 1001]),
            (HeaderMap::new(), Vec::new()),
        ];
        for (headers, body) in cases {
            let (counted, sent) = (invocation_len(&headers, &body), sent(&headers, &body));
            assert!(counted >= sent, "{counted} < {sent} for {headers:?}");
            assert!(
                counted <= sent + ENVELOPE,
                "{counted} far over {sent} for {headers:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_answer_lambda_could_not_return_is_the_contracts_500() {
        let answer = |body: Vec<u8>| {
            let mut response = Response::new(Body::from(body));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, "application/json".parse().unwrap());
            response
        };
        // Each quote is two bytes in the invocation's document.
        let headers = answer(Vec::new()).into_parts().0.headers;
        let fits =
            (LAMBDA_RESPONSE_LIMIT - HEADERS_ADDED_AFTER - invocation_len(&headers, b"")) / 2;
        let kept = within_limit(answer(vec![b'"'; fits])).await;
        assert_eq!(kept.status(), 200);
        assert_eq!(
            axum::body::to_bytes(kept.into_body(), usize::MAX)
                .await
                .unwrap()
                .len(),
            fits
        );
        for over in [vec![b'"'; fits + 1], vec![b'x'; LAMBDA_RESPONSE_LIMIT + 10]] {
            let refused = within_limit(answer(over)).await;
            assert_eq!(refused.status(), 500);
            let body = axum::body::to_bytes(refused.into_body(), usize::MAX)
                .await
                .unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["code"], "internal_error", "{body}");
        }
    }
}
