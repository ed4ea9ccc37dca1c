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

    /// Geohash of `precision` characters (1 to 12).
    pub fn geohash(&self, precision: usize) -> String {
        // Validated coordinates are always inside the geohash ranges.
        geohash::encode(
            geohash::Coord {
                x: self.lng,
                y: self.lat,
            },
            precision,
        )
        .unwrap_or_default()
    }

    /// Great-circle distance in kilometres (haversine, on the sphere of
    /// `EARTH_RADIUS_KM`).
    pub fn distance_km(&self, other: &Coordinates) -> f64 {
        let (lat1, lat2) = (self.lat.to_radians(), other.lat.to_radians());
        let dlat = lat2 - lat1;
        let dlng = (other.lng - self.lng).to_radians();
        let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlng / 2.0).sin().powi(2);
        2.0 * EARTH_RADIUS_KM * h.sqrt().min(1.0).asin()
    }

    /// The point `distance_km` away on initial bearing `bearing` (degrees
    /// clockwise from north), along a great circle; longitude brought back
    /// into -180..180. Not rounded.
    pub fn moved(&self, bearing: f64, distance_km: f64) -> Coordinates {
        let (lat1, lng1) = (self.lat.to_radians(), self.lng.to_radians());
        let (theta, delta) = (bearing.to_radians(), distance_km / EARTH_RADIUS_KM);
        let lat2 = (lat1.sin() * delta.cos() + lat1.cos() * delta.sin() * theta.cos()).asin();
        let lng2 = lng1
            + (theta.sin() * delta.sin() * lat1.cos()).atan2(delta.cos() - lat1.sin() * lat2.sin());
        Coordinates {
            lat: lat2.to_degrees(),
            lng: (lng2.to_degrees() + 540.0).rem_euclid(360.0) - 180.0,
        }
    }
}

/// Copies of each `PUBLIC` cell: every public entry is written into each,
/// and a search reads one at random (as many as the deployment's
/// `PUBLIC_CELL_COPIES` says are filled), so that every organization's
/// searches of one place spread over this many partitions instead of
/// heating one (docs/decisions/nearby-places.md, "Nearby places").
pub const PUBLIC_COPIES: u32 = 8;

/// Geohash precision of the sort keys in the `PUBLIC` cells (cells of
/// about 4.8 m): a crowded cell is read by ever finer parts of it, nearest
/// first (`store::records::places`).
pub const PUBLIC_SORT_PRECISION: usize = 9;

impl Coordinates {
    /// A distance in kilometres that no point of geohash cell `hash` is
    /// nearer than (0 inside it): the larger of the latitude difference to
    /// the cell's band and, beside the band of longitudes, the distance to
    /// the nearer edge meridian's great circle. Never more than the true
    /// nearest distance, so a search that skips cells by it misses nothing.
    pub fn min_km_to_cell(&self, hash: &str) -> f64 {
        let Ok(cell) = geohash::decode_bbox(hash) else {
            return 0.0;
        };
        let (south, north) = (cell.min().y, cell.max().y);
        let (west, east) = (cell.min().x, cell.max().x);
        let lat_gap = if self.lat < south {
            south - self.lat
        } else if self.lat > north {
            self.lat - north
        } else {
            0.0
        };
        let by_lat = lat_gap.to_radians() * EARTH_RADIUS_KM;
        // Longitude difference to each edge, either way round the globe.
        let gap = |edge: f64| {
            let d = (self.lng - edge).rem_euclid(360.0);
            d.min(360.0 - d)
        };
        let inside = if west <= east {
            (west..=east).contains(&self.lng)
        } else {
            self.lng >= west || self.lng <= east
        };
        let by_lng = if inside {
            0.0
        } else {
            let dlng = gap(west).min(gap(east));
            if dlng >= 90.0 {
                // Beyond a quarter turn: only the latitude gap is sure.
                0.0
            } else {
                let cross = self.lat.to_radians().cos() * dlng.to_radians().sin();
                cross.clamp(-1.0, 1.0).asin() * EARTH_RADIUS_KM
            }
        };
        by_lat.max(by_lng)
    }
}

/// Mean Earth radius (IUGG), km: distances and search bounds use the same
/// sphere, so a point the bounds leave out is never within the radius.
pub const EARTH_RADIUS_KM: f64 = 6371.0088;

/// Precisions at which every record with coordinates is indexed: 4 (cells
/// of about 39 x 20 km at the equator) for narrow searches, 3 (about 156
/// km) for wide ones, 2 (about 1250 x 625 km) where the finer ones would
/// need too many cells (near the poles, where cells are narrow).
pub const INDEX_PRECISIONS: [usize; 3] = [2, 3, 4];

/// Most cells a search reads at one precision before it takes a coarser one.
pub const MAX_CELLS: usize = 32;

/// The index cells a search reads: every cell of one precision that may
/// hold a point within the radius.
#[derive(Clone, Debug, PartialEq)]
pub struct Cover {
    pub precision: usize,
    pub cells: Vec<String>,
}

/// A latitude band and the longitude ranges (one, or two across the
/// antimeridian) that hold every point within the radius.
#[derive(Debug)]
struct Bounds {
    lat: (f64, f64),
    lng: Vec<(f64, f64)>,
}

/// Margin (degrees) added to the bounds against rounding at cell edges: a
/// cell more may be read, never one less.
const MARGIN: f64 = 1e-9;

fn bounds(center: Coordinates, radius_km: f64) -> Bounds {
    let angle = radius_km / EARTH_RADIUS_KM;
    let dlat = angle.to_degrees() + MARGIN;
    let (south, north) = (center.lat - dlat, center.lat + dlat);
    let lat = (south.max(-90.0), north.min(90.0));
    let whole = vec![(-180.0, 180.0)];
    // A circle around a pole covers every longitude.
    if south <= -90.0 || north >= 90.0 {
        return Bounds { lat, lng: whole };
    }
    // The widest longitude difference of the circle's points (where the
    // tangent meridians touch it): asin(sin(angle) / cos(lat)).
    let ratio = angle.sin() / center.lat.to_radians().cos();
    if ratio >= 1.0 {
        return Bounds { lat, lng: whole };
    }
    let dlng = ratio.asin().to_degrees() + MARGIN;
    let (west, east) = (center.lng - dlng, center.lng + dlng);
    let lng = if west < -180.0 {
        vec![(west + 360.0, 180.0), (-180.0, east)]
    } else if east > 180.0 {
        vec![(west, 180.0), (-180.0, east - 360.0)]
    } else {
        vec![(west, east)]
    };
    Bounds { lat, lng }
}

/// Rows and columns of geohash cells at `precision` (longitude takes the
/// first of each character's 5 bits, so it gets the odd bit).
fn grid(precision: usize) -> (u32, u32) {
    let bits = 5 * precision as u32;
    (1 << (bits / 2), 1 << bits.div_ceil(2))
}

/// The cells at `precision` that intersect `bounds`.
fn cells(bounds: &Bounds, precision: usize) -> Vec<String> {
    let (rows, cols) = grid(precision);
    let (height, width) = (180.0 / f64::from(rows), 360.0 / f64::from(cols));
    let index = |value: f64, origin: f64, size: f64, count: u32| -> u32 {
        (((value - origin) / size).floor().max(0.0) as u32).min(count - 1)
    };
    let (south, north) = bounds.lat;
    let mut found = std::collections::BTreeSet::new();
    for row in index(south, -90.0, height, rows)..=index(north, -90.0, height, rows) {
        for &(west, east) in &bounds.lng {
            for col in index(west, -180.0, width, cols)..=index(east, -180.0, width, cols) {
                let middle = Coordinates {
                    lat: -90.0 + (f64::from(row) + 0.5) * height,
                    lng: -180.0 + (f64::from(col) + 0.5) * width,
                };
                found.insert(middle.geohash(precision));
            }
        }
    }
    found.into_iter().collect()
}

/// The cells to read for a search of `radius_km` around `center`: at the
/// finest index precision whose cover has at most `MAX_CELLS` cells (else
/// the coarsest), so the work grows with the area searched, never with the
/// number of records.
pub fn cover(center: Coordinates, radius_km: f64) -> Cover {
    let bounds = bounds(center, radius_km);
    let mut precisions = INDEX_PRECISIONS;
    precisions.sort_unstable_by(|a, b| b.cmp(a));
    let mut chosen = Cover {
        precision: 0,
        cells: Vec::new(),
    };
    for precision in precisions {
        chosen = Cover {
            precision,
            cells: cells(&bounds, precision),
        };
        if chosen.cells.len() <= MAX_CELLS {
            break;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_point_of_a_cell_is_nearer_than_its_bound() {
        let center = Coordinates::new(60.1702, 24.9522).unwrap();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 1_000_000) as f64 / 1_000_000.0
        };
        for _ in 0..2000 {
            let point = Coordinates {
                lat: center.lat + (next() - 0.5) * 4.0,
                lng: center.lng + (next() - 0.5) * 8.0,
            };
            for precision in [3, 4, 5, 6, 7] {
                let hash = point.geohash(precision);
                let bound = center.min_km_to_cell(&hash);
                let real = center.distance_km(&point);
                assert!(bound <= real + 1e-9, "{hash}: {bound} > {real}");
            }
        }
        // Inside its own cell: 0; a cell far to the north: about its gap.
        assert_eq!(center.min_km_to_cell(&center.geohash(6)), 0.0);
        let north = center.moved(0.0, 50.0);
        let bound = center.min_km_to_cell(&north.geohash(6));
        assert!((48.0..=50.0).contains(&bound), "{bound}");
    }

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

    #[test]
    fn a_degree_of_latitude_is_111_km() {
        let a = Coordinates::new(60.0, 25.0).unwrap();
        let b = Coordinates::new(61.0, 25.0).unwrap();
        assert!((a.distance_km(&b) - 111.195).abs() < 0.001);
        // Across the antimeridian and across a pole, the short way.
        let east = Coordinates::new(0.0, 179.95).unwrap();
        let west = Coordinates::new(0.0, -179.95).unwrap();
        assert!((east.distance_km(&west) - 11.1195).abs() < 0.001);
        let here = Coordinates::new(89.95, 0.0).unwrap();
        let there = Coordinates::new(89.95, 180.0).unwrap();
        assert!((here.distance_km(&there) - 11.1195).abs() < 0.001);
    }

    #[test]
    fn every_point_within_the_radius_lies_in_a_covered_cell() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut centers = vec![
            (60.17, 24.94),
            (0.0, 179.99),
            (0.0, -179.99),
            (-33.9, 180.0),
            (89.99, 10.0),
            (-89.5, -170.0),
            (88.0, 179.9),
            (0.0, 0.0),
        ];
        for _ in 0..200 {
            centers.push((
                rng.random_range(-90.0..=90.0),
                rng.random_range(-180.0..=180.0),
            ));
        }
        for (lat, lng) in centers {
            let center = Coordinates { lat, lng };
            for radius in [1.0, 7.5, 20.0, 40.0, 100.0] {
                let cover = cover(center, radius);
                assert!(
                    cover.cells.len() <= MAX_CELLS,
                    "{} cells at {center:?}, {radius} km",
                    cover.cells.len()
                );
                for _ in 0..60 {
                    let bearing = rng.random_range(0.0..360.0);
                    // Mostly at the edge, where a missing cell would show.
                    let distance = radius * rng.random_range(0.9..=1.0f64).min(1.0);
                    let point = center.moved(bearing, distance);
                    assert!(
                        cover.cells.contains(&point.geohash(cover.precision)),
                        "{point:?} ({distance} km from {center:?}) outside the cover {cover:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn narrow_searches_read_fine_cells_and_wide_ones_coarse_cells() {
        let helsinki = Coordinates::new(60.17, 24.94).unwrap();
        let default = cover(helsinki, 40.0);
        assert_eq!(default.precision, 4);
        assert!(default.cells.len() <= MAX_CELLS);
        assert_eq!(cover(helsinki, 100.0).precision, 3);
        assert!(cover(helsinki, 100.0).cells.len() <= 12);
        // Around a pole every longitude is near: one row of the coarse cells.
        let pole = cover(Coordinates::new(90.0, 0.0).unwrap(), 100.0);
        assert_eq!((pole.precision, pole.cells.len()), (2, 32));
        // Across the antimeridian: cells on both sides.
        let fiji = cover(Coordinates::new(-17.0, 179.99).unwrap(), 10.0);
        assert!(fiji.cells.iter().any(|c| c.starts_with('r')));
        assert!(fiji.cells.iter().any(|c| c.starts_with('2')));
    }
}
