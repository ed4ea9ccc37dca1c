//! Nearby places: the query of `GET /api/v1/places/nearby` and its result
//! rows. Contract: api-v1.md, "Nearby places"; the result record is ours
//! (docs/decisions/nearby-places.md, "Nearby places").

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::geo::Coordinates;
use super::validate;
use crate::error::ApiError;

/// What the geo index holds: receiving points, worksites and factories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlaceKind {
    ReceivingPoint,
    Site,
    Factory,
}

impl PlaceKind {
    pub const ALL: [PlaceKind; 3] = [Self::ReceivingPoint, Self::Site, Self::Factory];

    /// The API's name (`types` values, the result's `type`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReceivingPoint => "receiving_point",
            Self::Site => "site",
            Self::Factory => "factory",
        }
    }

    /// The sort-key tag of its index entries (`RP#<id>`, ...).
    pub fn tag(self) -> &'static str {
        match self {
            Self::ReceivingPoint => "RP",
            Self::Site => "SITE",
            Self::Factory => "FACTORY",
        }
    }

    pub fn from_tag(tag: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.tag() == tag)
    }
}

pub const DEFAULT_RADIUS_KM: f64 = 40.0;
pub const MIN_RADIUS_KM: f64 = 1.0;
pub const MAX_RADIUS_KM: f64 = 100.0;
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 50;

/// A validated nearby search.
#[derive(Clone, Debug, PartialEq)]
pub struct NearbyQuery {
    pub center: Coordinates,
    pub radius_km: f64,
    /// Distinct, in the order of `PlaceKind::ALL`.
    pub kinds: Vec<PlaceKind>,
    pub limit: usize,
}

/// A finite number, or 422 naming `name`.
fn number(name: &str, value: &str) -> Result<f64, ApiError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .ok_or_else(|| ApiError::validation(name, "must be a number"))
}

impl NearbyQuery {
    /// Reads the query string's pairs: `lat` and `lng` required, `radius_km`,
    /// `types` (comma-separated, or repeated) and `limit` optional; any
    /// other parameter, a repeated single-valued one or a bad value is 422
    /// `validation_error` naming the parameter.
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut single: [(&str, Option<&str>); 4] = [
            ("lat", None),
            ("lng", None),
            ("radius_km", None),
            ("limit", None),
        ];
        let mut kinds = Vec::new();
        for (name, value) in pairs {
            if name == "types" {
                for part in value.split(',') {
                    let kind = PlaceKind::ALL
                        .into_iter()
                        .find(|k| k.as_str() == part.trim())
                        .ok_or_else(|| {
                            ApiError::validation(
                                "types",
                                "must be receiving_point, site or factory (comma-separated or repeated)",
                            )
                        })?;
                    kinds.push(kind);
                }
                continue;
            }
            let Some(slot) = single.iter_mut().find(|(known, _)| known == name) else {
                return Err(ApiError::validation(name, "unknown parameter"));
            };
            if slot.1.replace(value).is_some() {
                return Err(ApiError::validation(name, "given more than once"));
            }
        }
        let [(_, lat), (_, lng), (_, radius), (_, limit)] = single;
        let required = |name: &str, value: Option<&str>| {
            value
                .ok_or_else(|| ApiError::validation(name, "is required"))
                .and_then(|v| number(name, v))
        };
        let center = Coordinates::new(required("lat", lat)?, required("lng", lng)?)?;
        let radius_km = match radius {
            None => DEFAULT_RADIUS_KM,
            Some(v) => validate::number(
                "radius_km",
                number("radius_km", v)?,
                MIN_RADIUS_KM,
                MAX_RADIUS_KM,
                3,
            )?,
        };
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(v) => {
                let n = number("limit", v)?;
                if n.fract() != 0.0 || !(1.0..=MAX_LIMIT as f64).contains(&n) {
                    return Err(ApiError::validation(
                        "limit",
                        format!("must be an integer from 1 to {MAX_LIMIT}"),
                    ));
                }
                n as usize
            }
        };
        if kinds.is_empty() {
            kinds.push(PlaceKind::ReceivingPoint);
        }
        kinds.sort_unstable();
        kinds.dedup();
        Ok(Self {
            center,
            radius_km,
            kinds,
            limit,
        })
    }
}

/// One result of a nearby search.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Place {
    #[serde(rename = "type")]
    pub kind: PlaceKind,
    pub id: Uuid,
    pub name: String,
    pub coordinates: Coordinates,
    /// Straight-line (great-circle) distance from the searched point, km,
    /// to the metre.
    pub distance_km: f64,
    /// True when the key's organization owns the place (a receiving point
    /// of another organization shows only when it is public).
    pub is_own: bool,
}

impl Place {
    pub fn new(
        kind: PlaceKind,
        id: Uuid,
        name: String,
        coordinates: Coordinates,
        from: Coordinates,
        own: bool,
    ) -> Self {
        let distance = from.distance_km(&coordinates);
        Self {
            kind,
            id,
            name,
            coordinates,
            distance_km: (distance * 1000.0).round() / 1000.0,
            is_own: own,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &str) -> Result<NearbyQuery, ApiError> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        NearbyQuery::from_pairs(&pairs)
    }

    fn field(query: &str) -> String {
        let e = parse(query).unwrap_err();
        assert_eq!(e.code(), "validation_error", "{query}");
        e.to_string().split(':').next().unwrap().to_owned()
    }

    #[test]
    fn defaults_and_values() {
        let q = parse("lat=60.17&lng=24.94").unwrap();
        assert_eq!(q.radius_km, 40.0);
        assert_eq!(q.kinds, vec![PlaceKind::ReceivingPoint]);
        assert_eq!(q.limit, 20);
        let q = parse("lat=60&lng=25&radius_km=1&limit=50&types=factory,site&types=site").unwrap();
        assert_eq!((q.radius_km, q.limit), (1.0, 50));
        assert_eq!(q.kinds, vec![PlaceKind::Site, PlaceKind::Factory]);
        assert_eq!(parse("lat=0&lng=0&limit=7.0").unwrap().limit, 7);
    }

    #[test]
    fn every_refusal_names_its_parameter() {
        for (query, name) in [
            ("lng=1", "lat"),
            ("lat=1", "lng"),
            ("lat=90.1&lng=0", "lat"),
            ("lat=0&lng=-180.5", "lng"),
            ("lat=abc&lng=0", "lat"),
            ("lat=NaN&lng=0", "lat"),
            ("lat=0&lng=inf", "lng"),
            ("lat=0&lng=0&radius_km=0.5", "radius_km"),
            ("lat=0&lng=0&radius_km=101", "radius_km"),
            ("lat=0&lng=0&radius_km=", "radius_km"),
            ("lat=0&lng=0&limit=0", "limit"),
            ("lat=0&lng=0&limit=51", "limit"),
            ("lat=0&lng=0&limit=2.5", "limit"),
            ("lat=0&lng=0&types=truck", "types"),
            ("lat=0&lng=0&types=", "types"),
            ("lat=0&lng=0&types=site,", "types"),
            ("lat=0&lng=0&lat=1", "lat"),
            ("lat=0&lng=0&radius=5", "radius"),
        ] {
            assert_eq!(field(query), name, "{query}");
        }
    }

    #[test]
    fn tags_round_trip() {
        for kind in PlaceKind::ALL {
            assert_eq!(PlaceKind::from_tag(kind.tag()), Some(kind));
        }
        assert_eq!(PlaceKind::from_tag("TRUCK"), None);
    }
}
