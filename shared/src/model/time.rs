//! Timestamps as the API shows and stores them: UTC, RFC 3339 with exactly
//! three fractional digits (`2026-11-21T05:00:38.000Z`). A fixed width keeps
//! text order equal to time order, which sort keys rely on.

use std::fmt;

use chrono::{DateTime, Datelike, DurationRound, SecondsFormat, TimeDelta, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// Now by the request's clock (`crate::clock`), to the millisecond.
    pub fn now() -> Self {
        Self::from(crate::clock::now())
    }

    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Unix seconds.
    pub fn unix(&self) -> i64 {
        self.0.timestamp()
    }

    /// Unix milliseconds (0 before 1970).
    pub fn unix_millis(&self) -> u64 {
        u64::try_from(self.0.timestamp_millis()).unwrap_or(0)
    }

    /// The time of Unix milliseconds `ms`, if it is one.
    pub fn from_unix_millis(ms: i64) -> Option<Self> {
        DateTime::from_timestamp_millis(ms).map(Self)
    }
}

impl From<DateTime<Utc>> for Timestamp {
    /// Truncates to the millisecond.
    fn from(at: DateTime<Utc>) -> Self {
        Self(at.duration_trunc(TimeDelta::milliseconds(1)).unwrap_or(at))
    }
}

impl std::ops::Add<TimeDelta> for Timestamp {
    type Output = Timestamp;
    fn add(self, delta: TimeDelta) -> Timestamp {
        Timestamp(self.0 + delta)
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`: the width of every stored and shown time.
const WIDTH: usize = 24;

impl Timestamp {
    /// The text, written digit by digit into `out` (pages show thousands
    /// of times: no allocation, no format machinery). `None` outside years
    /// 0 to 9999, which have no fixed-width form.
    fn fixed_width(&self, out: &mut [u8; WIDTH]) -> Option<()> {
        // Each accessor of a `DateTime` would recompute its local time.
        let at = self.0.naive_utc();
        let year = u32::try_from(at.year()).ok().filter(|y| *y <= 9999)?;
        let fields = [
            (0, 4, year),
            (5, 2, at.month()),
            (8, 2, at.day()),
            (11, 2, at.hour()),
            (14, 2, at.minute()),
            (17, 2, at.second()),
            (20, 3, (at.nanosecond() / 1_000_000).min(999)),
        ];
        *out = *b"0000-00-00T00:00:00.000Z";
        for (start, digits, mut value) in fields {
            for place in (start..start + digits).rev() {
                out[place] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        Some(())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0; WIDTH];
        match self.fixed_width(&mut text) {
            Some(()) => f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?),
            None => f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true)),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut text = [0; WIDTH];
        match self.fixed_width(&mut text) {
            Some(()) => serializer
                .serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?),
            None => serializer.collect_str(self),
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|at| Timestamp::from(at.with_timezone(&Utc)))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_three_fractional_digits() {
        let whole: DateTime<Utc> = "2026-11-21T05:00:38Z".parse().unwrap();
        assert_eq!(
            Timestamp::from(whole).to_string(),
            "2026-11-21T05:00:38.000Z"
        );
        let fine: DateTime<Utc> = "2026-11-21T05:00:38.123987Z".parse().unwrap();
        assert_eq!(
            Timestamp::from(fine).to_string(),
            "2026-11-21T05:00:38.123Z"
        );
        assert_eq!(
            serde_json::to_value(Timestamp::from(whole)).unwrap(),
            "2026-11-21T05:00:38.000Z"
        );
    }

    #[test]
    fn reads_any_rfc3339_and_orders_as_text() {
        let a: Timestamp = serde_json::from_str("\"2026-11-21T05:00:38Z\"").unwrap();
        let b: Timestamp = serde_json::from_str("\"2026-11-21T07:00:38.5+02:00\"").unwrap();
        assert!(a < b);
        assert!(a.to_string() < b.to_string());
        assert_eq!(b.to_string(), "2026-11-21T05:00:38.500Z");
    }

    #[test]
    fn fixed_width_text_matches_chrono() {
        for text in [
            "2026-11-21T05:00:38.123Z",
            "0001-01-01T00:00:00.000Z",
            "9999-12-31T23:59:59.999Z",
            "2024-02-29T12:34:56.007Z",
        ] {
            let at: Timestamp = serde_json::from_value(text.into()).unwrap();
            let chrono = at.0.to_rfc3339_opts(SecondsFormat::Millis, true);
            assert_eq!(
                (at.to_string(), serde_json::to_value(at).unwrap()),
                (chrono.clone(), chrono.into())
            );
        }
        // Beyond year 9999 there is no fixed width: chrono's form is kept.
        let far = Timestamp(DateTime::from_timestamp(253_402_300_800, 0).unwrap());
        assert_eq!(far.to_string(), "+10000-01-01T00:00:00.000Z");
    }
}
