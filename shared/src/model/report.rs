//! Reports: the window of UTC calendar days they cover, the summary of
//! delivered loads with its coefficients, the month-end rows and the
//! monthly additive usage. The coefficients live here and nowhere else.

use std::collections::BTreeMap;

use chrono::{Datelike, Days, NaiveDate};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Timestamp;
use super::surplus::{BilledTo, SurplusRecord, SurplusStatus};
use super::volume::Litres;
use crate::error::ApiError;

/// Heavy-vehicle kilometres saved per m³ delivered, in thousandths (0.175).
pub const KM_PER_M3_MILLI: u64 = 175;
/// CO₂ uptake potential per m³, in grams (72 kg).
pub const UPTAKE_G_CO2_PER_M3: u64 = 72_000;
/// The CO₂ model these figures follow.
pub const CO2_MODEL_VERSION: &str = "uptake-72kg-2026.1";
/// Days in the default window: `from` is this many days before `to`.
pub const DEFAULT_WINDOW_DAYS: u64 = 30;
/// The longest window, in days (both ends counted): a leap year.
pub const MAX_WINDOW_DAYS: u64 = 366;

/// UTC calendar days, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

/// `from` and `to` of a report query (`YYYY-MM-DD`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WindowQuery {
    pub from: Option<String>,
    pub to: Option<String>,
}

impl WindowQuery {
    /// The window asked for, or the last 30 days up to today (UTC); 422
    /// `validation_error` for a date that is not `YYYY-MM-DD`, a day that
    /// does not exist, `from` after `to`, or more than 366 days.
    pub fn window(&self) -> Result<Window, ApiError> {
        self.window_on(crate::clock::now().date_naive())
    }

    pub fn window_on(&self, today: NaiveDate) -> Result<Window, ApiError> {
        let from = self.from.as_deref().map(|d| date("from", d)).transpose()?;
        let to = self.to.as_deref().map(|d| date("to", d)).transpose()?;
        let before = |day: NaiveDate| day.checked_sub_days(Days::new(DEFAULT_WINDOW_DAYS));
        let (from, to) = match (from, to) {
            (Some(from), Some(to)) => (from, to),
            (Some(from), None) => (from, today.max(from)),
            (None, Some(to)) => (before(to).unwrap_or(NaiveDate::MIN), to),
            (None, None) => (before(today).unwrap_or(NaiveDate::MIN), today),
        };
        if from > to {
            return Err(ApiError::validation("from", "must not be after to"));
        }
        if (to - from).num_days() + 1 > MAX_WINDOW_DAYS as i64 {
            return Err(ApiError::validation(
                "to",
                format!("the window is at most {MAX_WINDOW_DAYS} days, both ends included"),
            ));
        }
        Ok(Window { from, to })
    }
}

impl Window {
    /// The days as a filter string a cursor is bound to.
    pub fn filters(&self) -> String {
        format!("from={}&to={}", self.from, self.to)
    }

    /// Sort-key bounds of timestamps within the window: the first
    /// millisecond of `from` and past the last of `to`.
    pub fn bounds(&self) -> (String, String) {
        (self.from.to_string(), format!("{}T~", self.to))
    }

    /// The months the window touches, oldest first (`YYYY-MM`).
    pub fn months(&self) -> Vec<String> {
        let mut months = Vec::new();
        let mut day = self.from.with_day(1).unwrap_or(self.from);
        while day <= self.to {
            months.push(day.format("%Y-%m").to_string());
            day = day
                .checked_add_months(chrono::Months::new(1))
                .unwrap_or(NaiveDate::MAX);
        }
        months
    }
}

fn date(field: &str, text: &str) -> Result<NaiveDate, ApiError> {
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    shaped
        .then(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
        .flatten()
        .ok_or_else(|| ApiError::validation(field, "must be a calendar day YYYY-MM-DD"))
}

/// `data` of GET /api/v1/reports/summary.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub period: Period,
    pub loads_count: u64,
    pub volume_m3: f64,
    pub heavy_vehicle_km_saved: f64,
    pub methodology: KmMethodology,
    pub co2: Co2,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Period {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub basis: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct KmMethodology {
    pub status: String,
    pub km_per_m3: f64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Co2 {
    pub uptake_potential_kg_co2: f64,
    pub net_savings_kg_co2e: Option<f64>,
    pub net_savings_unavailable_reason: String,
    pub virgin_included: bool,
    pub mixer_powertrain: String,
    pub methodology: Co2Methodology,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Co2Methodology {
    pub status: String,
    pub model_version: String,
}

impl Summary {
    /// The summary of `loads` delivered loads holding `litres`, exact:
    /// kilometres and kilograms are the volume times the coefficients,
    /// computed in integers and never rounded.
    pub fn new(window: Window, loads: u64, litres: Litres) -> Self {
        Summary {
            period: Period {
                from: window.from,
                to: window.to,
                basis: "created_at".into(),
            },
            loads_count: loads,
            volume_m3: litres.m3(),
            heavy_vehicle_km_saved: litres.times_milli(KM_PER_M3_MILLI),
            methodology: KmMethodology {
                status: "estimated".into(),
                km_per_m3: KM_PER_M3_MILLI as f64 / 1000.0,
            },
            co2: Co2 {
                uptake_potential_kg_co2: litres.times_milli(UPTAKE_G_CO2_PER_M3),
                net_savings_kg_co2e: None,
                net_savings_unavailable_reason: "missing_distance_source".into(),
                virgin_included: false,
                mixer_powertrain: "diesel".into(),
                methodology: Co2Methodology {
                    status: "estimated".into(),
                    model_version: CO2_MODEL_VERSION.into(),
                },
            },
        }
    }
}

/// One row of the month-end report: a delivered load with the names an
/// accountant needs beside the ids.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadRow {
    pub surplus_id: Uuid,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub site_id: Uuid,
    pub site_name: Option<String>,
    pub receiving_point_id: Option<Uuid>,
    pub receiving_point_name: Option<String>,
    pub volume_m3: f64,
    pub additive: bool,
    pub additive_billed_to: Option<BilledTo>,
    pub additive_usage_m3: u64,
    pub material_grade: Option<String>,
    pub manufacturer: Option<String>,
    pub truck_id: Option<Uuid>,
    pub truck_license: Option<String>,
}

/// The names of a row's site, receiving point and truck (looked up per
/// page).
#[derive(Default)]
pub struct RowNames<'a> {
    pub site: Option<&'a str>,
    pub receiving_point: Option<&'a str>,
    pub truck_license: Option<&'a str>,
}

impl LoadRow {
    pub fn new(load: &SurplusRecord, names: RowNames<'_>) -> Self {
        LoadRow {
            surplus_id: load.id,
            created_at: load.created_at,
            delivered_at: load.delivered_at,
            site_id: load.site_id,
            site_name: names.site.map(Into::into),
            receiving_point_id: load.to_receiving_point_id,
            receiving_point_name: names.receiving_point.map(Into::into),
            volume_m3: load.volume_m3,
            additive: load.additive,
            additive_billed_to: load.additive_billed_to,
            additive_usage_m3: additive_usage(load).whole_m3_up(),
            material_grade: load.material_grade.clone(),
            manufacturer: load.manufacturer.clone(),
            truck_id: load.truck_id,
            truck_license: names.truck_license.map(Into::into),
        }
    }
}

/// One row of `GET /api/v1/billing/additive-usage/loads`: a load whose
/// additive this organization is billed for, from its own loads or
/// another organization's that named its truck under its `full` grant.
/// What the billed organization needs to check a charge, and nothing of
/// the other organization's sites or people.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BilledLoad {
    pub surplus_id: Uuid,
    /// The load's organization: this one, or the partner that named its
    /// truck.
    pub org_id: Uuid,
    /// The billing time: `delivered_at`, else `created_at`.
    pub billed_at: Timestamp,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub status: SurplusStatus,
    pub additive_billed_to: Option<BilledTo>,
    pub volume_m3: f64,
    /// The volume rounded up to a whole m³, as the monthly figures count it.
    pub additive_usage_m3: u64,
    pub truck_id: Option<Uuid>,
}

impl BilledLoad {
    /// The row of `load`, which bills someone (`billing()` is Some).
    pub fn new(load: &SurplusRecord) -> Self {
        BilledLoad {
            surplus_id: load.id,
            org_id: load.org_id,
            billed_at: load.delivered_at.unwrap_or(load.created_at),
            created_at: load.created_at,
            delivered_at: load.delivered_at,
            status: load.status,
            additive_billed_to: load.additive_billed_to,
            volume_m3: load.volume_m3,
            additive_usage_m3: additive_usage(load).whole_m3_up(),
            truck_id: load.truck_id,
        }
    }
}

/// The additive volume of a load: all of it when it carries an additive.
pub fn additive_usage(load: &SurplusRecord) -> Litres {
    if load.additive {
        load.litres()
    } else {
        Litres(0)
    }
}

/// `data` of GET /api/v1/billing/additive-usage.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct AdditiveUsage {
    pub period: Period,
    pub months: Vec<MonthUsage>,
    pub total_loads_count: u64,
    pub total_additive_usage_m3: u64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct MonthUsage {
    /// `YYYY-MM`.
    pub month: String,
    pub loads_count: u64,
    /// Whole m³: each load rounded up, then summed.
    pub additive_usage_m3: u64,
}

impl AdditiveUsage {
    /// Every month of the window, oldest first, from billed loads given as
    /// (billing time, litres).
    pub fn new(window: Window, billed: impl IntoIterator<Item = (Timestamp, Litres)>) -> Self {
        let mut months: BTreeMap<String, MonthUsage> = window
            .months()
            .into_iter()
            .map(|month| {
                let usage = MonthUsage {
                    month: month.clone(),
                    loads_count: 0,
                    additive_usage_m3: 0,
                };
                (month, usage)
            })
            .collect();
        for (at, litres) in billed {
            let month = at.as_datetime().format("%Y-%m").to_string();
            if let Some(usage) = months.get_mut(&month) {
                usage.loads_count += 1;
                usage.additive_usage_m3 += litres.whole_m3_up();
            }
        }
        let months: Vec<MonthUsage> = months.into_values().collect();
        AdditiveUsage {
            period: Period {
                from: window.from,
                to: window.to,
                basis: "delivered_at, else created_at".into(),
            },
            total_loads_count: months.iter().map(|m| m.loads_count).sum(),
            total_additive_usage_m3: months.iter().map(|m| m.additive_usage_m3).sum(),
            months,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
    }

    fn query(from: Option<&str>, to: Option<&str>) -> WindowQuery {
        WindowQuery {
            from: from.map(Into::into),
            to: to.map(Into::into),
        }
    }

    #[test]
    fn the_default_window_is_the_last_thirty_days() {
        let w = query(None, None).window_on(day("2026-11-22")).unwrap();
        assert_eq!((w.from, w.to), (day("2026-10-23"), day("2026-11-22")));
        let w = query(None, Some("2026-03-01"))
            .window_on(day("2026-11-22"))
            .unwrap();
        assert_eq!(w.from, day("2026-01-30"));
        let w = query(Some("2026-11-01"), None)
            .window_on(day("2026-11-22"))
            .unwrap();
        assert_eq!(w.to, day("2026-11-22"));
    }

    #[test]
    fn bad_days_and_windows_are_refused() {
        let today = day("2026-11-22");
        for (from, to, field) in [
            (Some("2026-02-30"), None, "from"),
            (Some("2026-2-3"), None, "from"),
            (None, Some("26-02-03"), "to"),
            (None, Some("2026-02-03T00:00"), "to"),
            (Some("2026-05-02"), Some("2026-05-01"), "from"),
            (Some("2025-01-01"), Some("2026-01-02"), "to"),
            (Some("٢٠٢٦-01-01"), None, "from"),
        ] {
            let error = query(from, to).window_on(today).unwrap_err();
            assert_eq!(error.code(), "validation_error");
            assert!(
                error.to_string().starts_with(field),
                "{from:?} {to:?}: {error}"
            );
        }
        // 366 days, both ends counted, is the longest window.
        assert!(
            query(Some("2024-01-01"), Some("2024-12-31"))
                .window_on(today)
                .is_ok()
        );
    }

    #[test]
    fn bounds_hold_the_last_millisecond_of_to() {
        let w = query(Some("2026-03-01"), Some("2026-03-31"))
            .window_on(day("2026-11-22"))
            .unwrap();
        let (low, high) = w.bounds();
        assert!("2026-03-31T23:59:59.999Z#id" < high.as_str());
        assert!("2026-04-01T00:00:00.000Z#id" > high.as_str());
        assert!("2026-03-01T00:00:00.000Z#id" >= low.as_str());
        assert!("2026-02-28T23:59:59.999Z#id" < low.as_str());
        assert_eq!(w.months(), ["2026-03"]);
    }

    #[test]
    fn summary_figures_follow_the_coefficients_exactly() {
        let w = query(Some("2026-03-01"), Some("2026-03-31"))
            .window_on(day("2026-11-22"))
            .unwrap();
        let s = Summary::new(w, 3, Litres(12_345));
        assert_eq!(s.volume_m3, 12.345);
        assert_eq!(s.heavy_vehicle_km_saved, 2.160375);
        assert_eq!(s.co2.uptake_potential_kg_co2, 888.84);
        assert_eq!(s.methodology.km_per_m3, 0.175);
    }

    #[test]
    fn usage_rounds_each_load_up_and_lists_every_month() {
        let w = query(Some("2026-01-15"), Some("2026-03-02"))
            .window_on(day("2026-11-22"))
            .unwrap();
        let at = |t: &str| serde_json::from_value::<Timestamp>(serde_json::json!(t)).unwrap();
        let usage = AdditiveUsage::new(
            w,
            [
                (at("2026-01-31T23:59:59.999Z"), Litres(1_100)),
                (at("2026-01-20T00:00:00.000Z"), Litres(100)),
                (at("2026-03-01T00:00:00.000Z"), Litres(3_000)),
            ],
        );
        let months: Vec<_> = usage
            .months
            .iter()
            .map(|m| (m.month.as_str(), m.loads_count, m.additive_usage_m3))
            .collect();
        assert_eq!(
            months,
            [("2026-01", 2, 3), ("2026-02", 0, 0), ("2026-03", 1, 3)]
        );
        assert_eq!(
            (usage.total_loads_count, usage.total_additive_usage_m3),
            (3, 6)
        );
    }
}
