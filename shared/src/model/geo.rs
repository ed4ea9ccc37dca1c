//! Coordinates and geohash cells (for the nearby index).

use serde::{Deserialize, Serialize};

use super::patch::Patch;
use super::validate;
use crate::error::ApiError;

/// Decimal places kept of a latitude or longitude (about 1 cm).
pub const DECIMALS: i32 = 7;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Coordinates {
    pub lat: f64,
    pub lng: f64,
}

impl Coordinates {
    /// Validates a `lat`/`lng` pair of a request body: both or neither.
    pub fn from_parts(lat: Option<f64>, lng: Option<f64>) -> Result<Option<Coordinates>, ApiError> {
        match (lat, lng) {
            (None, None) => Ok(None),
            (Some(lat), Some(lng)) => Self::new(lat, lng).map(Some),
            _ => Err(ApiError::Validation(
                "lat and lng: give both or neither".into(),
            )),
        }
    }

    /// Validates the `lat`/`lng` pair of a PATCH: both values, both `null`
    /// (clears) or neither.
    pub fn from_patch(
        lat: Patch<f64>,
        lng: Patch<f64>,
    ) -> Result<Option<Option<Coordinates>>, ApiError> {
        match (lat, lng) {
            (Patch::Absent, Patch::Absent) => Ok(None),
            (Patch::Null, Patch::Null) => Ok(Some(None)),
            (Patch::Value(lat), Patch::Value(lng)) => Ok(Some(Some(Self::new(lat, lng)?))),
            _ => Err(ApiError::Validation(
                "lat and lng: change both together (or set both to null)".into(),
            )),
        }
    }

    /// Validated coordinates, rounded to 7 decimal places (about 1 cm).
    pub fn new(lat: f64, lng: f64) -> Result<Coordinates, ApiError> {
        Ok(Coordinates {
            lat: validate::number("lat", lat, -90.0, 90.0, DECIMALS)?,
            lng: validate::number("lng", lng, -180.0, 180.0, DECIMALS)?,
        })
    }

    /// Geohash of `precision` characters.
    pub fn geohash(&self, precision: usize) -> String {
        const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
        let (mut lat, mut lng) = ((-90.0f64, 90.0f64), (-180.0f64, 180.0f64));
        let mut out = String::with_capacity(precision);
        let (mut bits, mut value, mut even) = (0, 0usize, true);
        while out.len() < precision {
            let (range, x) = if even {
                (&mut lng, self.lng)
            } else {
                (&mut lat, self.lat)
            };
            let mid = (range.0 + range.1) / 2.0;
            value <<= 1;
            if x >= mid {
                value |= 1;
                range.0 = mid;
            } else {
                range.1 = mid;
            }
            even = !even;
            bits += 1;
            if bits == 5 {
                out.push(ALPHABET[value] as char);
                bits = 0;
                value = 0;
            }
        }
        out
    }
}

/// Precisions at which every record with coordinates is indexed: 3 (about
/// 156 km cells) for wide searches, 4 (about 39 x 20 km) for narrow ones.
pub const INDEX_PRECISIONS: [usize; 2] = [3, 4];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_geohashes() {
        // Helsinki cathedral and a well-known reference point.
        let helsinki = Coordinates::new(60.1702, 24.9522).unwrap();
        assert_eq!(helsinki.geohash(5), "ud9wr");
        assert_eq!(
            Coordinates::new(57.64911, 10.40744).unwrap().geohash(6),
            "u4pruy"
        );
    }

    #[test]
    fn pairs_and_ranges() {
        assert_eq!(Coordinates::from_parts(None, None).unwrap(), None);
        assert!(Coordinates::from_parts(Some(60.0), None).is_err());
        assert!(
            Coordinates::from_parts(Some(91.0), Some(0.0))
                .unwrap_err()
                .to_string()
                .starts_with("lat")
        );
        assert!(
            Coordinates::from_parts(Some(0.0), Some(-181.0))
                .unwrap_err()
                .to_string()
                .starts_with("lng")
        );
    }
}
