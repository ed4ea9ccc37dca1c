//! Opening hours of a receiving point: Monday to Sunday, each
//! `{closed, from, to}` with `HH:MM` times (`to` may be `24:00`; a `to` not
//! later than `from` runs past midnight).

use serde::{Deserialize, Serialize};

use crate::error::ApiError;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayHours {
    pub closed: bool,
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenHours {
    pub monday: DayHours,
    pub tuesday: DayHours,
    pub wednesday: DayHours,
    pub thursday: DayHours,
    pub friday: DayHours,
    pub saturday: DayHours,
    pub sunday: DayHours,
}

/// Minutes after midnight of `HH:MM` (00:00 to 23:59, or 24:00 when `end`).
fn minutes(text: &str, end: bool) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    if h.len() != 2 || m.len() != 2 || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match (h, m) {
        (24, 0) if end => Some(24 * 60),
        (0..=23, 0..=59) => Some(h * 60 + m),
        _ => None,
    }
}

impl DayHours {
    /// An open day runs from `from` to `to`; when `to` is not later than
    /// `from` it runs past midnight into the next day (`22:00`-`06:00`), so
    /// `from` equal to `to` is open around the clock. A closed day keeps no
    /// times, but times that are sent must be well-formed either way.
    fn validate(self, day: &str) -> Result<DayHours, ApiError> {
        let field = |name: &str| format!("open_hours.{day}.{name}");
        let check = |value: &Option<String>, name: &str, end: bool, shape: &str| match value
            .as_deref()
            .map(|v| minutes(v, end))
        {
            Some(None) => Err(ApiError::validation(&field(name), shape)),
            _ => Ok(()),
        };
        check(&self.from, "from", false, "must be HH:MM (00:00 to 23:59)")?;
        check(&self.to, "to", true, "must be HH:MM (00:00 to 24:00)")?;
        if self.closed {
            return Ok(DayHours {
                closed: true,
                from: None,
                to: None,
            });
        }
        let required =
            |name: &str| ApiError::validation(&field(name), "is required when the day is open");
        Ok(DayHours {
            closed: false,
            from: Some(self.from.ok_or_else(|| required("from"))?),
            to: Some(self.to.ok_or_else(|| required("to"))?),
        })
    }
}

impl OpenHours {
    pub fn validate(self) -> Result<OpenHours, ApiError> {
        Ok(OpenHours {
            monday: self.monday.validate("monday")?,
            tuesday: self.tuesday.validate("tuesday")?,
            wednesday: self.wednesday.validate("wednesday")?,
            thursday: self.thursday.validate("thursday")?,
            friday: self.friday.validate("friday")?,
            saturday: self.saturday.validate("saturday")?,
            sunday: self.sunday.validate("sunday")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn week(day: serde_json::Value) -> serde_json::Value {
        let mut week = serde_json::Map::new();
        for name in [
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
        ] {
            week.insert(
                name.into(),
                json!({"closed": false, "from": "07:00", "to": "16:00"}),
            );
        }
        week.insert("sunday".into(), day);
        week.into()
    }

    fn parse(value: serde_json::Value) -> Result<OpenHours, ApiError> {
        crate::http::body::parse::<OpenHours>(value.to_string().as_bytes())?.validate()
    }

    #[test]
    fn times_are_checked() {
        assert!(parse(week(json!({"closed": true}))).is_ok());
        assert!(
            parse(week(
                json!({"closed": false, "from": "00:00", "to": "24:00"})
            ))
            .is_ok()
        );
        for bad in [
            json!({"closed": false, "from": "7:00", "to": "16:00"}),
            json!({"closed": false, "from": "07:00", "to": "25:00"}),
            json!({"closed": false, "from": "07:60", "to": "16:00"}),
            json!({"closed": false, "from": "24:00", "to": "16:00"}),
            json!({"closed": false, "from": "07:00"}),
            json!({"closed": false, "from": "07:00", "to": null}),
            json!({"closed": true, "from": "7:00"}),
        ] {
            let e = parse(week(bad.clone())).unwrap_err();
            assert!(
                e.to_string().starts_with("open_hours.sunday."),
                "{bad}: {e}"
            );
        }
        let closed = parse(week(
            json!({"closed": true, "from": "07:00", "to": "08:00"}),
        ))
        .unwrap();
        assert_eq!(
            closed.sunday,
            DayHours {
                closed: true,
                from: None,
                to: None
            }
        );
    }

    #[test]
    fn open_days_may_run_past_midnight() {
        for (from, to) in [("22:00", "06:00"), ("07:00", "07:00"), ("00:00", "00:00")] {
            let hours = parse(week(json!({"closed": false, "from": from, "to": to}))).unwrap();
            assert_eq!(hours.sunday.to.as_deref(), Some(to));
        }
    }

    #[test]
    fn all_seven_days_and_no_others() {
        let mut partial = week(json!({"closed": true}));
        partial.as_object_mut().unwrap().remove("monday");
        assert!(parse(partial).is_err());
        let mut extra = week(json!({"closed": true}));
        extra
            .as_object_mut()
            .unwrap()
            .insert("funday".into(), json!({"closed": true}));
        assert!(parse(extra).is_err());
    }
}
