//! Geocoding: the body of `POST /api/v1/geocode` and its answer. The
//! contract (api-v1.md, "Geocode") fixes the two forms of the body; the
//! answer is ours (docs/decisions/geocoding.md, "Geocoding").

use serde::{Deserialize, Serialize};

use super::geo::Coordinates;
use super::validate;
use crate::error::ApiError;

pub const MAX_ADDRESS: usize = 500;
pub const MAX_STREET: usize = 500;
pub const MAX_POSTAL_CODE: usize = 20;
pub const MAX_CITY: usize = 200;

/// Either `address`, or `street_address` with `postal_code` and `city`. A
/// `null` field counts as absent; unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
pub struct GeocodeRequest {
    pub address: Option<String>,
    pub street_address: Option<String>,
    pub postal_code: Option<String>,
    pub city: Option<String>,
}

/// What to look up, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressQuery {
    FreeForm(String),
    Structured {
        street_address: String,
        postal_code: String,
        city: String,
    },
}

impl AddressQuery {
    /// The address as one line (`Mannerheimintie 1, 00100 Helsinki`).
    pub fn line(&self) -> String {
        match self {
            Self::FreeForm(address) => address.clone(),
            Self::Structured {
                street_address,
                postal_code,
                city,
            } => format!("{street_address}, {postal_code} {city}"),
        }
    }
}

impl GeocodeRequest {
    pub fn validate(self) -> Result<AddressQuery, ApiError> {
        let structured = [
            ("street_address", &self.street_address, MAX_STREET),
            ("postal_code", &self.postal_code, MAX_POSTAL_CODE),
            ("city", &self.city, MAX_CITY),
        ];
        let given = structured.iter().any(|(_, value, _)| value.is_some());
        match (&self.address, given) {
            (Some(_), true) => Err(ApiError::validation(
                "address",
                "give either address, or street_address, postal_code and city, not both",
            )),
            (Some(address), false) => Ok(AddressQuery::FreeForm(validate::required_text(
                "address",
                address,
                MAX_ADDRESS,
            )?)),
            (None, false) => Err(ApiError::validation(
                "address",
                "is required (or street_address, postal_code and city)",
            )),
            (None, true) => {
                let mut parts = Vec::with_capacity(3);
                for (field, value, max) in structured {
                    let value = value.as_deref().ok_or_else(|| {
                        ApiError::validation(
                            field,
                            "is required with the other parts of a structured address",
                        )
                    })?;
                    parts.push(validate::required_text(field, value, max)?);
                }
                let [street_address, postal_code, city] = <[String; 3]>::try_from(parts)
                    .map_err(|_| ApiError::internal("three parts"))?;
                Ok(AddressQuery::Structured {
                    street_address,
                    postal_code,
                    city,
                })
            }
        }
    }
}

/// How closely the found position matches the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchQuality {
    /// A precise address point (a building entrance).
    Exact,
    /// Interpolated between two precise points (along a street).
    Interpolated,
    /// The center of a line or area (a street, a postal area).
    Center,
    /// An approximation (a town, a region).
    Approximate,
}

/// The answer of a geocoding request: the best match.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GeocodeResult {
    pub coordinates: Coordinates,
    pub formatted_address: String,
    pub match_quality: MatchQuality,
    /// True when the provider matched only part of the address.
    pub partial_match: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: serde_json::Value) -> Result<AddressQuery, ApiError> {
        serde_json::from_value::<GeocodeRequest>(json)
            .unwrap()
            .validate()
    }

    #[test]
    fn either_form_is_read() {
        use serde_json::json;
        assert_eq!(
            parse(json!({"address": "  Mannerheimintie 1, Helsinki "})).unwrap(),
            AddressQuery::FreeForm("Mannerheimintie 1, Helsinki".into())
        );
        let structured = parse(json!({
            "street_address": "Mannerheimintie 1", "postal_code": "00100", "city": "Helsinki",
            "address": null, "country": "fi"
        }))
        .unwrap();
        assert_eq!(structured.line(), "Mannerheimintie 1, 00100 Helsinki");
    }

    #[test]
    fn anything_else_names_a_field() {
        use serde_json::json;
        for (body, field) in [
            (json!({}), "address"),
            (json!({"address": null}), "address"),
            (json!({"address": "  "}), "address"),
            (json!({"address": "x".repeat(501)}), "address"),
            (json!({"address": "A 1", "city": "Oulu"}), "address"),
            (
                json!({"street_address": "A 1", "city": "Oulu"}),
                "postal_code",
            ),
            (json!({"postal_code": "90100"}), "street_address"),
            (
                json!({"street_address": "A 1", "postal_code": "1".repeat(21), "city": "Oulu"}),
                "postal_code",
            ),
            (
                json!({"street_address": "A 1", "postal_code": "90100", "city": ""}),
                "city",
            ),
        ] {
            let e = parse(body.clone()).unwrap_err();
            assert_eq!(e.code(), "validation_error");
            assert!(
                e.to_string().starts_with(&format!("{field}:")),
                "{body}: {e}"
            );
        }
    }
}
