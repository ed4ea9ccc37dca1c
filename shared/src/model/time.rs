//! Timestamps as the API shows and stores them: UTC, RFC 3339 with exactly
//! three fractional digits (`2026-11-21T05:00:38.000Z`). A fixed width keeps
//! text order equal to time order, which sort keys rely on.

use std::fmt;

use chrono::{DateTime, DurationRound, SecondsFormat, TimeDelta, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// Now, to the millisecond.
    pub fn now() -> Self {
        Self::from(Utc::now())
    }

    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Unix seconds.
    pub fn unix(&self) -> i64 {
        self.0.timestamp()
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

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The fixed RFC 3339 writer: no format string to interpret.
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
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
}
