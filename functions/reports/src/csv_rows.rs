//! The month-end rows as CSV (RFC 4180, a header row) for an accountant's
//! spreadsheet: a text cell that a spreadsheet would read as a formula
//! (leading `=`, `+`, `-`, `@`, tab or carriage return) is prefixed with
//! `'`, so it shows as the text it is.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use shared::model::report::{LoadRow, Window};
use shared::{ApiError, ApiResult};

const COLUMNS: [&str; 15] = [
    "surplus_id",
    "created_at",
    "delivered_at",
    "site_id",
    "site_name",
    "receiving_point_id",
    "receiving_point_name",
    "volume_m3",
    "additive",
    "additive_billed_to",
    "additive_usage_m3",
    "material_grade",
    "manufacturer",
    "truck_id",
    "truck_license",
];

/// Whether the client asked for CSV: `text/csv` accepted (q above 0) and
/// preferred at least as much as `application/json`.
pub fn wanted(headers: &HeaderMap) -> bool {
    let (mut csv, mut json) = (0.0_f32, 0.0_f32);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                "text/csv" => csv = csv.max(q),
                "application/json" => json = json.max(q),
                _ => {}
            }
        }
    }
    csv > 0.0 && csv >= json
}

/// Text that a spreadsheet will not take for a formula.
fn cell(text: &str) -> String {
    match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_owned(),
    }
}

fn optional<T: ToString>(value: Option<T>) -> String {
    value.map(|v| cell(&v.to_string())).unwrap_or_default()
}

fn record(row: &LoadRow) -> [String; 15] {
    [
        row.surplus_id.to_string(),
        row.created_at.to_string(),
        optional(row.delivered_at),
        row.site_id.to_string(),
        optional(row.site_name.as_deref()),
        optional(row.receiving_point_id),
        optional(row.receiving_point_name.as_deref()),
        row.volume_m3.to_string(),
        row.additive.to_string(),
        optional(row.additive_billed_to.map(|b| b.as_str())),
        row.additive_usage_m3.to_string(),
        optional(row.material_grade.as_deref()),
        optional(row.manufacturer.as_deref()),
        optional(row.truck_id),
        optional(row.truck_license.as_deref()),
    ]
}

/// The CSV text of `rows`, header first.
pub fn text(rows: &[LoadRow]) -> ApiResult<Vec<u8>> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    writer.write_record(COLUMNS).map_err(ApiError::internal)?;
    for row in rows {
        writer
            .write_record(record(row))
            .map_err(ApiError::internal)?;
    }
    writer.into_inner().map_err(ApiError::internal)
}

/// How many of `rows`, in order, one CSV answer holds within Lambda's
/// response limit (`payload::fitting`: each line as the invocation's
/// document holds it).
pub fn fitting(rows: &[LoadRow]) -> usize {
    shared::http::payload::fitting(rows.iter().map(|row| {
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .from_writer(Vec::new());
        let line = writer
            .write_record(record(row))
            .ok()
            .and_then(|()| writer.into_inner().ok())
            .unwrap_or_default();
        shared::http::payload::text_cost(&line)
    }))
}

/// 200 `text/csv` with the rows, a file name for the download and, when
/// there is more, the next page in `Link`.
pub fn response(window: Window, rows: &[LoadRow], next: Option<&str>) -> ApiResult<Response> {
    let mut response = text(rows)?.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    let name = format!(
        "attachment; filename=\"loads-{}-{}.csv\"",
        window.from, window.to
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&name).map_err(ApiError::internal)?,
    );
    if let Some(next) = next {
        let link = format!("<{next}>; rel=\"next\"");
        headers.insert(
            header::LINK,
            HeaderValue::from_str(&link).map_err(ApiError::internal)?,
        );
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn csv_is_served_when_preferred() {
        assert!(wanted(&accept("text/csv")));
        assert!(wanted(&accept("application/json;q=0.5, text/csv")));
        assert!(wanted(&accept("TEXT/CSV; charset=utf-8")));
        assert!(!wanted(&accept("text/csv;q=0")));
        assert!(!wanted(&accept("application/json, text/csv;q=0.9")));
        assert!(!wanted(&accept("*/*")));
        assert!(!wanted(&HeaderMap::new()));
    }

    #[test]
    fn formula_cells_are_neutralised() {
        assert_eq!(cell("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-2"), "'-2");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("\tx"), "'\tx");
        assert_eq!(cell("Site 1"), "Site 1");
    }
}
