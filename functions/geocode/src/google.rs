//! Google's Geocoding API, as documented at
//! <https://developers.google.com/maps/documentation/geocoding/requests-geocoding>:
//! `GET <url>?address=...&key=...` (plus `components=postal_code:...` for a
//! structured address and `region=...` when configured), answered with
//! `{status, results: [{formatted_address, geometry: {location: {lat, lng},
//! location_type}, partial_match}], error_message}`. `OK` has results,
//! `ZERO_RESULTS` none; any other status is the provider failing
//! (`OVER_QUERY_LIMIT`, `REQUEST_DENIED`, `INVALID_REQUEST`, ...).

use http::{HeaderMap, Method};
use serde::Deserialize;
use shared::error::codes;
use shared::model::geo::Coordinates;
use shared::model::geocode::{AddressQuery, GeocodeResult, MatchQuality};
use shared::outbound::{Call, CallError};
use shared::state::AppState;
use shared::{ApiError, ApiResult};

#[derive(Debug, Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    results: Vec<Found>,
    error_message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Found {
    formatted_address: String,
    geometry: Geometry,
    #[serde(default)]
    partial_match: bool,
}

#[derive(Debug, Deserialize)]
struct Geometry {
    location: Location,
    location_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Location {
    lat: f64,
    lng: f64,
}

fn provider_error() -> ApiError {
    codes::GEOCODE_PROVIDER_ERROR.with("the geocoding provider failed; try again later")
}

/// The request's query string (the key included: never log it).
pub fn query_string(query: &AddressQuery, key: &str, region: Option<&str>) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    out.append_pair("address", &query.line());
    if let AddressQuery::Structured { postal_code, .. } = query {
        out.append_pair("components", &format!("postal_code:{postal_code}"));
    }
    if let Some(region) = region {
        out.append_pair("region", region);
    }
    out.append_pair("key", key);
    out.finish()
}

/// The best match of `query`.
pub async fn geocode(state: &AppState, query: &AddressQuery) -> ApiResult<GeocodeResult> {
    let config = &state.config.geocode;
    let key = std::str::from_utf8(state.geocode_key.get().await?)
        .map_err(|_| ApiError::internal("the geocoding API key is not text"))?;
    let url = format!(
        "{}?{}",
        config.url,
        query_string(query, key, config.region.as_deref())
    );
    let answer = state
        .outbound
        .send(Call {
            method: Method::GET,
            url: &url,
            headers: HeaderMap::new(),
            json: None,
            timeout: config.timeout,
        })
        .await
        .map_err(|error| match error {
            CallError::Timeout(after) => {
                tracing::warn!(?after, "geocoding provider timed out");
                codes::GEOCODE_TIMEOUT
                    .with("the geocoding provider did not answer in time; try again later")
            }
            CallError::Failed(why) | CallError::Unreached(why) => {
                tracing::warn!(error = %why, "geocoding provider unreachable");
                provider_error()
            }
            CallError::Stopped(error) => error,
        })?;
    if answer.status != 200 {
        tracing::warn!(status = answer.status, "geocoding provider refused");
        return Err(provider_error());
    }
    let parsed: Answer = serde_json::from_slice(&answer.body).map_err(|e| {
        tracing::warn!(error = %e, "geocoding provider answered something else than its format");
        provider_error()
    })?;
    match parsed.status.as_str() {
        "OK" => {}
        "ZERO_RESULTS" => {
            return Err(codes::GEOCODE_NOT_FOUND.with("no place matches this address"));
        }
        status => {
            tracing::warn!(
                status,
                message = parsed.error_message.as_deref(),
                "geocoding provider failed"
            );
            return Err(provider_error());
        }
    }
    let best = parsed.results.into_iter().next().ok_or_else(|| {
        tracing::warn!("geocoding provider said OK with no result");
        provider_error()
    })?;
    let Location { lat, lng } = best.geometry.location;
    let coordinates = Coordinates::new(lat, lng).map_err(|_| {
        tracing::warn!(lat, lng, "geocoding provider gave a position out of range");
        provider_error()
    })?;
    Ok(GeocodeResult {
        coordinates,
        formatted_address: best.formatted_address,
        match_quality: quality(best.geometry.location_type.as_deref()),
        partial_match: best.partial_match,
    })
}

/// Google's `location_type` as our match quality.
fn quality(location_type: Option<&str>) -> MatchQuality {
    match location_type {
        Some("ROOFTOP") => MatchQuality::Exact,
        Some("RANGE_INTERPOLATED") => MatchQuality::Interpolated,
        Some("GEOMETRIC_CENTER") => MatchQuality::Center,
        _ => MatchQuality::Approximate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_request_form() {
        let free = AddressQuery::FreeForm("1600 Amphitheatre Parkway, Mountain View, CA".into());
        assert_eq!(
            query_string(&free, "K", None),
            "address=1600+Amphitheatre+Parkway%2C+Mountain+View%2C+CA&key=K"
        );
        let structured = AddressQuery::Structured {
            street_address: "Mannerheimintie 1".into(),
            postal_code: "00100".into(),
            city: "Helsinki".into(),
        };
        assert_eq!(
            query_string(&structured, "K", Some("fi")),
            "address=Mannerheimintie+1%2C+00100+Helsinki&components=postal_code%3A00100&region=fi&key=K"
        );
    }

    #[test]
    fn the_documented_answer_parses() {
        // The example answer of Google's documentation (abridged).
        let answer: Answer = serde_json::from_str(
            r#"{
              "results": [{
                "address_components": [{"long_name": "1600", "short_name": "1600", "types": ["street_number"]}],
                "formatted_address": "1600 Amphitheatre Pkwy, Mountain View, CA 94043, USA",
                "geometry": {
                  "location": {"lat": 37.4224764, "lng": -122.0842499},
                  "location_type": "ROOFTOP",
                  "viewport": {"northeast": {"lat": 37.4238253802915, "lng": -122.0829009197085},
                               "southwest": {"lat": 37.4211274197085, "lng": -122.0855988802915}}
                },
                "place_id": "ChIJ2eUgeAK6j4ARbn5u_wAGqWA",
                "plus_code": {"compound_code": "CWC8+W5 Mountain View, California, United States", "global_code": "849VCWC8+W5"},
                "types": ["street_address"]
              }],
              "status": "OK"
            }"#,
        )
        .unwrap();
        assert_eq!(answer.status, "OK");
        assert_eq!(answer.results[0].geometry.location.lat, 37.4224764);
        assert!(!answer.results[0].partial_match);
        assert_eq!(
            quality(answer.results[0].geometry.location_type.as_deref()),
            MatchQuality::Exact
        );
        let denied: Answer = serde_json::from_str(
            r#"{"error_message": "The provided API key is invalid.", "results": [], "status": "REQUEST_DENIED"}"#,
        )
        .unwrap();
        assert_eq!(denied.status, "REQUEST_DENIED");
    }
}
